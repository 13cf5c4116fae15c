#!/bin/bash
# Inside a guest with an Elan NIC: elan_bench events (NIC faults and
# microseconds per page after first touch, fork + CPU write, swap-in,
# migration and KSM unmerge) with elan.ko in each mode, side by side.
#
#   tests/driver/bench-modes.sh [RUNS] [MODES] [FAULT_AROUND]
#       (defaults: 3, "ioproc notifier", the module's: 64)
#
# FAULT_AROUND=1 makes every page the NIC needs a fault of its own, so
# that faults/page counts the pages the event left untranslated; with 64
# one fault loads 64 pages.  Each mode: the module loaded afresh with
# mode=M (and fault_around); a mode the kernel
# lacks (ioproc on a kernel without the series) is named and skipped.
# Prints both tables, then one with the medians side by side, and every
# figure as CSV lines (elan_bench's).  Leaves elan.ko loaded as it was
# booted for (/etc/elan/insmod.args).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
runs=${1:-3}
modes=${2:-ioproc notifier}
fa=${3:-}
ko=${ELAN_KO:-$repo/driver/kbuild/$(uname -r)/elan.ko}
[ -f "$ko" ] || ko=$repo/driver/elan.ko
# shellcheck source=tests/driver/vm-setup.sh
. "$here/vm-setup.sh"
out=$(mktemp -d)
rc=0
for m in $modes; do
	rmmod elan 2>/dev/null
	if ! insmod "$ko" "mode=$m" ${fa:+"fault_around=$fa"} 2>"$out/insmod"; then
		echo "bench-modes: no $m mode on this kernel ($(cat "$out/insmod"))"
		continue
	fi
	echo "bench-modes: mode=$m fault_around=$(cat /sys/module/elan/parameters/fault_around)"
	"$here/elan_bench" -r "$runs" events | tee "$out/$m" || rc=1
done
rmmod elan 2>/dev/null
# shellcheck disable=SC2046 # the module's arguments, split
insmod "$ko" $(cat /etc/elan/insmod.args 2>/dev/null)
# side by side: faults/page and us/page, medians, one column pair a mode
awk -F, '
	/^CSV,events_/ {
		split($2, p, "_"); m = p[2]
		k = $2; sub("^events_" m "_", "", k); sub("_(faults|us)$", "", k)
		unit = $2 ~ /_faults$/ ? "f" : "u"
		v[m, k, unit] = $4
		if (!(m in seen)) { seen[m] = 1; mode[++nm] = m }
		if (!(k in seenk)) { seenk[k] = 1; key[++nk] = k }
	}
	END {
		if (!nm) exit
		printf "%-12s", "event"
		for (i = 1; i <= nm; i++) printf " %12s %10s", mode[i] " f/pg", "us/pg"
		printf "\n"
		for (j = 1; j <= nk; j++) {
			printf "%-12s", key[j]
			for (i = 1; i <= nm; i++)
				if ((mode[i], key[j], "f") in v)
					printf " %12.3f %10.1f", v[mode[i], key[j], "f"], v[mode[i], key[j], "u"]
				else
					printf " %12s %10s", "-", "-"
			printf "\n"
		}
	}' "$out"/* 2>/dev/null
rm -rf "$out"
exit $rc
