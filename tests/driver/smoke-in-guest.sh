#!/bin/bash
# Inside one guest: load and unload elan.ko and check what it binds.
#
#   tests/driver/smoke-in-guest.sh none|plain|fake|nic
#
# none   no ivshmem device: loads, no /dev/elan0, unloads
# plain  a plain ivshmem device: left alone, quietly (no driver bound, no
#        log line), no /dev/elan0
# fake   an ivshmem-plain whose memory carries the Elan magic but has no
#        MSI-X: probe fails cleanly (one error line), no /dev/elan0
# nic    an Elan NIC (elan-nicd): /dev/elan0 appears, counters readable,
#        pages_referenced 0, unloads
# Every mode: load, unload, load again, unload; no kernel warnings.  The
# module is loaded with /etc/elan/insmod.args (elanvm.driver_mode=, from
# ELAN_DRIVER_MODE on the host) and must then run in that mode.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# elan.ko: for a kernel built apart (driver/build-ko) the one of its release
ko=${ELAN_KO:-$here/../../driver/kbuild/$(uname -r)/elan.ko}
[ -f "$ko" ] || ko=$here/../../driver/elan.ko
args=$(cat /etc/elan/insmod.args 2>/dev/null)
mode=${1:-none}
fail=0
say() { echo "smoke[$mode]: $*"; }
bad() { say "FAILED: $*"; fail=1; }

ivshmem_devs() {
	local d
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ] &&
			echo "$d"
	done
}

# elan-cluster up --nic loads the driver itself: start from scratch.
if grep -q '^elan ' /proc/modules; then
	rmmod elan || bad "rmmod of the module loaded before"
fi
dmesg -c >/dev/null 2>&1 || true
for round in 1 2; do
	# shellcheck disable=SC2086 # the module's arguments, split
	insmod "$ko" $args || { bad "insmod $args (round $round)"; break; }
	sleep 0.5
	drvmode=$(cat /sys/module/elan/parameters/mode)
	[ "$round" = 1 ] && say "elan.ko in $drvmode mode"
	case "$args" in mode=*) [ "mode=$drvmode" = "$args" ] || bad "asked for $args, runs in $drvmode mode" ;; esac
	devs=$(ivshmem_devs)
	case "$mode" in
	none)
		[ -z "$devs" ] || bad "unexpected ivshmem device $devs"
		[ ! -e /dev/elan0 ] || bad "/dev/elan0 without a device" ;;
	plain|fake)
		[ -n "$devs" ] || bad "no ivshmem device in the guest"
		for d in $devs; do
			[ ! -e "$d/driver" ] || bad "$d bound to $(basename "$(readlink "$d/driver")")"
		done
		[ ! -e /dev/elan0 ] || bad "/dev/elan0 for a $mode device" ;;
	nic)
		[ -e /dev/elan0 ] || bad "no /dev/elan0"
		[ "$(stat -c %a /dev/elan0 2>/dev/null)" = 666 ] || bad "/dev/elan0 mode $(stat -c %a /dev/elan0 2>/dev/null)"
		grep -q '^pages_referenced 0$' /sys/kernel/debug/elan/counters ||
			bad "counters: $(cat /sys/kernel/debug/elan/counters 2>&1 | tr '\n' ' ')" ;;
	esac
	log=$(dmesg | grep -i -E 'elan|ivshmem' | grep -v -E 'taints kernel|tainting kernel' || true)
	case "$mode" in
	none|plain) [ -z "$log" ] || bad "log lines: $log" ;;
	fake) echo "$log" | grep -q 'MSI-X' || bad "no MSI-X error line: $log" ;;
	nic) echo "$log" | grep -q '/dev/elan0' || bad "no probe line: $log" ;;
	esac
	[ -n "$log" ] && say "log: $log"
	rmmod elan || bad "rmmod (round $round)"
	[ ! -e /dev/elan0 ] || bad "/dev/elan0 after rmmod"
	[ ! -e /sys/kernel/debug/elan ] || bad "debugfs dir left after rmmod"
	dmesg -c >/dev/null 2>&1 || true
done
if dmesg | grep -E 'WARNING|BUG|Oops|INFO:|leak' ; then
	bad "kernel problems"
fi
[ $fail = 0 ] && say "ok"
exit $fail
