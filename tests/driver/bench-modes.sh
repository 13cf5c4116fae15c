#!/bin/bash
# Inside a guest with an Elan NIC: elan.ko in each mode, side by side:
# elan_bench events (NIC faults and microseconds per page after first
# touch, fork + CPU write, mprotect read-only, swap-in, migration and
# KSM unmerge) and
# elan_bench vmcost (CPU time per page of mprotect, fork, the COW write
# fault and munmap + mmap with the NIC holding translations, none, and
# no context).
#
#   tests/driver/bench-modes.sh [RUNS] [MODES] [FAULT_AROUND]
#       (defaults: 3, "ioproc notifier notifier-update", the module's: 64)
#   tests/driver/bench-modes.sh --load MODE [FAULT_AROUND]
#       only reload elan.ko in MODE (the main job, on each node)
#   tests/driver/bench-modes.sh --restore
#       reload elan.ko as the guest was booted for (/etc/elan/insmod.args)
#
# FAULT_AROUND=1 makes every page the NIC needs a fault of its own, so
# that faults/page counts the pages the event left untranslated; with 64
# one fault loads 64 pages.  Each mode: the module loaded afresh with
# mode=M (and fault_around); notifier-update is mode=notifier update=1
# (the kernel's optional mmu_notifier update op, kernel/6.12 patch 7),
# and notifier is mode=notifier update=0 where the kernel has that op.  A
# mode the kernel lacks (ioproc without the series, notifier-update
# without the op) is named and skipped.
# Prints each mode's tables, then the medians side by side
# (tests/driver/modes-table), and every figure as CSV lines (one a run).
# Leaves elan.ko loaded as it was booted for.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
ko=${ELAN_KO:-$repo/driver/kbuild/$(uname -r)/elan.ko}
[ -f "$ko" ] || ko=$repo/driver/elan.ko

# load MODE [FAULT_AROUND]: elan.ko afresh in MODE; 1 if the kernel lacks it
load() {
	local err args=("mode=$1") fa=${2:+fault_around=$2}
	case $1 in
	notifier-update) args=(mode=notifier update=1) ;;
	esac
	rmmod elan 2>/dev/null
	if [ "$1" = notifier ]; then
		# without the update op where the kernel has it (no such
		# parameter where it has not)
		if insmod "$ko" mode=notifier update=0 ${fa:+"$fa"} 2>/dev/null; then
			args=()
		fi
	fi
	if [ ${#args[@]} -gt 0 ] && ! err=$(insmod "$ko" "${args[@]}" ${fa:+"$fa"} 2>&1); then
		echo "bench-modes: no $1 mode on this kernel ($err)"
		return 1
	fi
	echo "bench-modes: mode=$1 fault_around=$(cat /sys/module/elan/parameters/fault_around)"
}
restore() {
	rmmod elan 2>/dev/null
	# shellcheck disable=SC2046 # the module's arguments, split
	insmod "$ko" $(cat /etc/elan/insmod.args 2>/dev/null)
}
case "${1:-}" in
--load) load "${2:?mode}" "${3:-}"; exit ;;
--restore) restore; exit ;;
esac
runs=${1:-3}
modes=${2:-ioproc notifier notifier-update}
fa=${3:-}
# shellcheck source=tests/driver/vm-setup.sh
. "$here/vm-setup.sh"
out=$(mktemp -d)
rc=0
for m in $modes; do
	load "$m" "$fa" || continue
	"$here/elan_bench" -r "$runs" events | tee "$out/$m" || rc=1
	"$here/elan_bench" -r "$runs" vmcost | tee -a "$out/$m" || rc=1
done
restore
"$here/modes-table" "$out"/* 2>/dev/null
rm -rf "$out"
exit $rc
