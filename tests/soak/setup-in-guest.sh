#!/bin/bash
# Inside a guest: swap on zram (so that reclaim and MADV_PAGEOUT can page
# anonymous memory out), and optionally a cgroup v2 group with a memory
# limit for tests/soak/soak to join (-g NAME).
#
#   tests/soak/setup-in-guest.sh [ZRAM_SIZE [CGROUP MEMORY_MAX SWAP_MAX]]
#   tests/soak/setup-in-guest.sh --counters     (print the node's counters)
#
# ZRAM_SIZE defaults to 512M.  Idempotent: swap already on stays on, an
# existing group gets the new limits.  Prints what it set up; exits
# non-zero naming what it could not set up.
#
# --counters prints "name value" lines: the driver's debugfs counters
# (prefixed drv_), the /proc/vmstat swap counts, SwapTotal, and a
# "holdings ..." line (tests/driver/holdings: what the driver holds).
set -u
say() { echo "setup-in-guest: $*"; }
die() { say "FAILED: $*"; exit 1; }

if [ "${1:-}" = --counters ]; then
	sed 's/^/drv_/' /sys/kernel/debug/elan/counters 2>/dev/null
	echo "holdings $("$(dirname "$0")/../driver/holdings")"
	awk '$1 ~ /^(pswpin|pswpout)$/' /proc/vmstat
	awk '$1 == "SwapTotal:" { print "swap_total_kb", $2 }' /proc/meminfo
	exit 0
fi

zram=${1:-512M} cg=${2:-} max=${3:-} swapmax=${4:-max}

if grep -q '^/dev/zram0 ' /proc/swaps; then
	say "swap on zram already on"
else
	[ -e /sys/block/zram0/disksize ] || die "no /sys/block/zram0 (CONFIG_ZRAM)"
	if [ "$(cat /sys/block/zram0/disksize)" = 0 ]; then
		echo "$zram" > /sys/block/zram0/disksize || die "zram0 disksize $zram"
	fi
	mkswap /dev/zram0 >/dev/null 2>&1 || die "mkswap /dev/zram0"
	swapon /dev/zram0 || die "swapon /dev/zram0"
	say "swap on zram0: $(awk '$1 == "/dev/zram0" { print $3 " KiB" }' /proc/swaps)"
fi

[ -n "$cg" ] || exit 0
root=/sys/fs/cgroup
grep -q "^cgroup2 $root " /proc/mounts || mount -t cgroup2 cgroup2 $root || die "mount cgroup2 at $root"
grep -qw memory $root/cgroup.controllers || die "no memory controller in $root/cgroup.controllers (CONFIG_MEMCG)"
grep -qw memory $root/cgroup.subtree_control ||
	echo +memory > $root/cgroup.subtree_control || die "enable the memory controller for children"
mkdir -p "$root/$cg" || die "mkdir $root/$cg"
echo "$max" > "$root/$cg/memory.max" || die "memory.max $max"
[ -e "$root/$cg/memory.swap.max" ] || die "no memory.swap.max (swap accounting off?)"
echo "$swapmax" > "$root/$cg/memory.swap.max" || die "memory.swap.max $swapmax"
say "cgroup $cg: memory.max $(cat "$root/$cg/memory.max"), memory.swap.max $(cat "$root/$cg/memory.swap.max")"
