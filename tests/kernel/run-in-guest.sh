#!/usr/bin/env bash
# Run the IOPROC selftest inside the QEMU guest, as root, from the repository.
#
#   tests/kernel/run-in-guest.sh [MODULE.ko|none] [SELFTEST ARGS...]
#
# e.g. from the host:
#   cluster/guest-run --timeout 900 -- tests/kernel/run-in-guest.sh
#
# Sets up zram swap, KSM, THP (madvise) and khugepaged tuning, loads the
# test module (default tests/kernel/ioproc_test.ko), runs every default
# scenario of ioproc_selftest, then the broken scenario on its own, checks
# the kernel log for BUG/WARNING/Oops lines and unloads the module.  Exits
# non-zero if anything failed.  With "none" instead of a module it only
# checks the guest set-up: the selftest runs with --nodev and the broken
# scenario is left out.  Extra arguments go to the main selftest run (for
# instance -v or -t 30).  The selftest binary is built with the guest's gcc
# (the host's /usr) when it is missing or older than its source.
set -u

here=$(cd "$(dirname "$0")" && pwd)
ko=${1:-$here/ioproc_test.ko}
[ $# -gt 0 ] && shift
selftest=$here/ioproc_selftest
modname=ioproc_test
fail=0

say() { echo "run-in-guest: $*"; }
problem() { say "FAILED: $*"; fail=1; }

# A tool from /usr/sbin (util-linux, kmod) or else busybox's applet.
tool() {
	local t
	for t in "/usr/sbin/$1" "/sbin/$1" "/usr/bin/$1"; do
		[ -x "$t" ] && { echo "$t"; return; }
	done
	for t in /busybox/bin/busybox /usr/bin/busybox; do
		[ -x "$t" ] && { echo "$t $1"; return; }
	done
	echo "$1"
}

setv() { # file value: write a tunable if it exists, say what it became
	[ -e "$1" ] || { say "no $1"; return 1; }
	if ! echo "$2" > "$1" 2>/dev/null; then
		say "cannot write $2 to $1"
		return 1
	fi
}

[ "$(id -u)" = 0 ] || { say "must run as root (in the guest)"; exit 2; }
say "kernel $(uname -r) on $(uname -n); $(nproc) CPUs; $(grep -c '^processor' /proc/cpuinfo) online"

# ------------------------------------------------------------ the selftest
if [ ! -x "$selftest" ] || [ "$here/ioproc_selftest.c" -nt "$selftest" ] ||
	[ "$here/ioproc_test.h" -nt "$selftest" ]; then
	say "building $selftest"
	if ! gcc -std=gnu11 -O2 -Wall -Wextra -static -pthread \
		-o "$selftest" "$here/ioproc_selftest.c"; then
		say "cannot build the selftest"
		exit 1
	fi
fi

# ------------------------------------------------------------ swap on zram
if grep -q '^/dev/zram0 ' /proc/swaps; then
	say "zram swap already on"
elif [ -e /sys/block/zram0/disksize ]; then
	if [ "$(cat /sys/block/zram0/disksize)" = 0 ]; then
		setv /sys/block/zram0/disksize 256M
	fi
	if $(tool mkswap) /dev/zram0 >/dev/null && $(tool swapon) /dev/zram0; then
		say "swap: $(tail -n +2 /proc/swaps | tr -s ' \t' ' ')"
	else
		problem "could not set up swap on /dev/zram0"
	fi
else
	say "no /sys/block/zram0 (CONFIG_ZRAM?): no swap, pageout will skip"
fi

# ------------------------------------------------------------ KSM, THP, NUMA
if [ -d /sys/kernel/mm/ksm ]; then
	setv /sys/kernel/mm/ksm/pages_to_scan 5000
	setv /sys/kernel/mm/ksm/sleep_millisecs 10
	setv /sys/kernel/mm/ksm/run 1
	say "ksm: run $(cat /sys/kernel/mm/ksm/run), pages_to_scan $(cat /sys/kernel/mm/ksm/pages_to_scan), sleep_millisecs $(cat /sys/kernel/mm/ksm/sleep_millisecs)"
else
	say "no KSM"
fi
thp=/sys/kernel/mm/transparent_hugepage
if [ -d $thp ]; then
	grep -q '\[never\]' $thp/enabled && setv $thp/enabled madvise
	grep -q '\[never\]' $thp/defrag && setv $thp/defrag madvise
	setv $thp/khugepaged/scan_sleep_millisecs 100
	setv $thp/khugepaged/alloc_sleep_millisecs 100
	setv $thp/khugepaged/pages_to_scan 4096
	say "thp: enabled '$(cat $thp/enabled)', defrag '$(cat $thp/defrag)'"
else
	say "no transparent huge pages"
fi
nodes=$(find /sys/devices/system/node -maxdepth 1 -name "node[0-9]*" 2>/dev/null | wc -l)
say "$nodes NUMA node(s)"

# ------------------------------------------------------------ the module
dmesg_tool=$(tool dmesg)
klog_before=$($dmesg_tool | wc -l)
loaded=0
nodev=
if [ "$ko" = none ]; then
	say "no module: the selftest runs with --nodev (set-up check only)"
	nodev=--nodev
else
	if [ ! -f "$ko" ]; then
		say "no module $ko"
		exit 1
	fi
	if grep -q "^$modname " /proc/modules; then
		say "$modname is already loaded; unloading it first"
		$(tool rmmod) $modname || problem "rmmod of the old $modname"
	fi
	if ! $(tool insmod) "$ko"; then
		say "insmod $ko failed"
		$dmesg_tool | tail -n 20
		exit 1
	fi
	loaded=1
	for _ in $(seq 50); do
		[ -c /dev/ioproc_test ] && break
		sleep 0.1
	done
	[ -c /dev/ioproc_test ] || problem "/dev/ioproc_test did not appear"
	skip=/sys/module/$modname/parameters/skip_hooks
	[ -e $skip ] && say "skip_hooks is $(cat $skip)"
fi

# ------------------------------------------------------------ run
fsdir=$here	# the work share: a file system with writeback, for msync
say "selftest $nodev $* (writeback dir $fsdir)"
results=$(mktemp)
"$selftest" $nodev -d "$fsdir" "$@" | tee -a "$results"
rc=${PIPESTATUS[0]}
[ $rc = 0 ] || problem "selftest exited with $rc"

if [ -z "$nodev" ]; then
	say "selftest broken (the checker must see a NIC that ignores hooks)"
	"$selftest" broken | tee -a "$results"
	rc=${PIPESTATUS[0]}
	[ $rc = 0 ] || problem "selftest broken exited with $rc"
	[ -e "$skip" ] && [ "$(cat "$skip")" != 0 ] && {
		problem "skip_hooks left at $(cat "$skip")"
		echo 0 > "$skip"
	}
fi

# ------------------------------------------------------------ kernel log
pattern='BUG|WARNING|Oops|general protection|Call Trace|soft lockup|hard LOCKUP|detected stall|blocked for more than|suspected memory leak|KASAN|UBSAN|Bad page|corruption'
bad=$($dmesg_tool | grep -E "$pattern")
if [ -n "$bad" ]; then
	when="all from before the module was loaded"
	$dmesg_tool | tail -n +$((klog_before + 1)) | grep -qE "$pattern" &&
		when="some or all during the test"
	say "kernel log lines matching BUG/WARNING/Oops ($when):"
	echo "$bad" | head -n 60 | sed 's/^/  | /'
	problem "the kernel log has BUG/WARNING/Oops lines"
	echo "FAIL kernel log: BUG/WARNING/Oops lines ($when)"
else
	say "kernel log: no BUG/WARNING/Oops lines"
	echo "ok kernel log: no BUG/WARNING/Oops lines"
fi

# ------------------------------------------------------------ unload
if [ $loaded = 1 ]; then
	if $(tool rmmod) $modname; then
		say "$modname unloaded"
	else
		problem "rmmod $modname"
	fi
	after=$($dmesg_tool | grep -E "$pattern")
	if [ "$after" != "$bad" ]; then
		echo "$after" | head -n 60 | sed 's/^/  | /'
		problem "the kernel logged problems when the module was unloaded"
	fi
fi

if [ $loaded = 1 ]; then
	if [ -d /sys/module/$modname ]; then echo "FAIL $modname unloaded"; else echo "ok $modname unloaded"; fi
fi

# One result line for the whole run: the selftests' scenarios plus the
# kernel log and unload checks (each has its "ok" or "FAIL" line above).
passed=$(sed -n 's/^\([0-9]*\) passed, [0-9]* failed.*/\1/p' "$results" | awk '{s += $1} END {print s + 0}')
failed=$(sed -n 's/^[0-9]* passed, \([0-9]*\) failed.*/\1/p' "$results" | awk '{s += $1} END {print s + 0}')
rm -f "$results"
if [ -n "$bad" ]; then failed=$((failed + 1)); else passed=$((passed + 1)); fi
if [ $loaded = 1 ]; then
	if [ -d /sys/module/$modname ]; then failed=$((failed + 1)); else passed=$((passed + 1)); fi
fi
if [ $fail = 0 ]; then
	say "PASS"
else
	say "FAIL"
	[ "$failed" = 0 ] && failed=1
fi
echo "$passed passed, $failed failed"
exit $fail
