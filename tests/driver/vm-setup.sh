#!/bin/bash
# Inside a guest: what the VM-event tests and benchmarks need: swap on
# zram (for MADV_PAGEOUT; zram is a module in a packaged kernel) and THP
# on madvise at least.  Sourced by run-in-guest.sh and bench-modes.sh;
# says what it could not set up.
setv() { [ -w "$1" ] && echo "$2" > "$1" 2>/dev/null; }
[ -e /sys/block/zram0 ] || modprobe zram 2>/dev/null
if ! grep -q '^/dev/zram0 ' /proc/swaps && [ -e /sys/block/zram0/disksize ]; then
	[ "$(cat /sys/block/zram0/disksize)" = 0 ] && setv /sys/block/zram0/disksize 256M
	{ mkswap /dev/zram0 >/dev/null 2>&1 && swapon /dev/zram0 2>/dev/null; } ||
		echo "vm-setup: no swap on zram: MADV_PAGEOUT will do nothing"
fi
thp=/sys/kernel/mm/transparent_hugepage
if [ -d $thp ]; then
	grep -q '\[never\]' $thp/enabled && setv $thp/enabled madvise
	grep -q '\[never\]' $thp/defrag && setv $thp/defrag madvise
fi
