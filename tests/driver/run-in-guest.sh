#!/bin/bash
# Inside a guest with an Elan NIC: set up swap on zram, KSM and THP, load
# elan.ko (fresh), run elan_vmtest, and check afterwards that the driver
# holds no page (debugfs pages_referenced, /proc/vmstat FOLL_PIN counts)
# and that the kernel logged no problem.
#
#   tests/driver/run-in-guest.sh [--keep-module] [ELAN_VMTEST ARGS...]
#
# Prints elan_vmtest's lines and ends with "N passed, M failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# elan.ko: for a kernel built apart (driver/build-ko) the one of its release
ko=${ELAN_KO:-$repo/driver/kbuild/$(uname -r)/elan.ko}
[ -f "$ko" ] || ko=$repo/driver/elan.ko
keep=0
[ "${1:-}" = --keep-module ] && { keep=1; shift; }
say() { echo "run-in-guest: $*"; }
extra_fail=0
problem() { say "FAILED: $*"; extra_fail=$((extra_fail + 1)); }
vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }

# swap on zram, THP
# shellcheck source=tests/driver/vm-setup.sh
. "$here/vm-setup.sh"

if grep -q '^elan ' /proc/modules; then
	[ $keep = 1 ] || { rmmod elan || problem "rmmod of the old module"; }
fi
# the mode the guest was booted for (elanvm.driver_mode=, guest-init)
args=$(cat /etc/elan/insmod.args 2>/dev/null)
# shellcheck disable=SC2086 # the module's arguments, split
grep -q '^elan ' /proc/modules || insmod "$ko" $args || { problem "insmod $ko $args"; echo "0 passed, 1 failed"; exit 1; }
drvmode=$(cat /sys/module/elan/parameters/mode)
say "elan.ko in $drvmode mode"
case "$args" in mode=*) [ "mode=$drvmode" = "$args" ] || problem "asked for $args, runs in $drvmode mode" ;; esac
[ -e /dev/elan0 ] || { problem "no /dev/elan0 (is elan-nicd serving this guest?)"; echo "0 passed, 1 failed"; exit 1; }
dmesg -c >/dev/null 2>&1
pin0=$(vmstat nr_foll_pin_acquired) rel0=$(vmstat nr_foll_pin_released)

cd "$repo" || exit 1
out=$(mktemp)
"$here/elan_vmtest" -d "$repo" "$@" | tee "$out"
rc=${PIPESTATUS[0]}

pin1=$(vmstat nr_foll_pin_acquired) rel1=$(vmstat nr_foll_pin_released)
say "FOLL_PIN acquired $((pin1 - pin0)), released $((rel1 - rel0)) during the run"
[ "$((pin1 - pin0))" = "$((rel1 - rel0))" ] || problem "pages still pinned"
refs=$(awk '$1 == "pages_referenced" { print $2 }' /sys/kernel/debug/elan/counters)
[ "$refs" = 0 ] || problem "debugfs pages_referenced $refs"
say "driver counters: $(tr '\n' ' ' < /sys/kernel/debug/elan/counters)"
if dmesg | grep -E 'WARNING|BUG|Oops|INFO:|lockdep|circular|NIC declared dead'; then
	problem "kernel log"
fi
if [ $keep = 0 ]; then
	rmmod elan || problem "rmmod after the tests"
fi
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -1)
rm -f "$out"
pass=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
fail=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
pass=${pass:-0} fail=${fail:-1}
[ "$rc" != 0 ] && [ "$fail" = 0 ] && fail=1
echo "$pass passed, $((fail + extra_fail)) failed"
[ $((fail + extra_fail)) = 0 ]
