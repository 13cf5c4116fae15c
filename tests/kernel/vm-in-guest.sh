#!/usr/bin/env bash
# The kernel's own mm selftests with the pretend NIC watching, inside the
# QEMU guest, as root, from the repository.
#
#   tests/kernel/vm-in-guest.sh DIR [MODULE.ko]
#
# DIR holds the static mm selftest programs kernel/build.sh built (from
# tools/testing/selftests/vm on 6.1, selftests/mm on 6.12; a program the
# kernel has not got is reported as not built).  Each runs twice: alone, then under ioproc_follow, which gives it
# and every process it starts a NIC context that preloads every PTE they
# establish and checks every entry against the page tables every 200 ms.  A
# program passes if both runs end the same way (pass, skip or fail; a
# difference is run again, up to 3 times, as some cases are timing-bound
# under TCG) and no followed run left a stale or over-permissive entry.  Last, with skip_hooks=1 (invalidations
# ignored) a followed run must be caught.  Ends with "N passed, M failed".
set -u

here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: vm-in-guest.sh DIR [MODULE.ko]}
ko=$(readlink -f "${2:-$here/ioproc_test.ko}")
dir=$(readlink -f "$dir")
follow=$here/ioproc_follow
skip=/sys/module/ioproc_test/parameters/skip_hooks
blocks_param=/sys/module/ioproc_test/parameters/assume_blocks
pass=0 fail=0 checked=0 blocks=0

say() { echo "vm-in-guest: $*"; }
ok() { echo "ok $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }

[ "$(id -u)" = 0 ] || { say "must run as root (in the guest)"; exit 2; }
if [ ! -x "$follow" ] || [ "$here/ioproc_follow.c" -nt "$follow" ] ||
	[ "$here/ioproc_test.h" -nt "$follow" ]; then
	gcc -std=gnu11 -O2 -Wall -static -o "$follow" "$here/ioproc_follow.c" ||
		{ say "cannot build ioproc_follow"; exit 1; }
fi

# What run_vmtests.sh sets up, as far as these programs need it.
echo 5000 > /sys/kernel/mm/ksm/pages_to_scan
echo 10 > /sys/kernel/mm/ksm/sleep_millisecs
thp=/sys/kernel/mm/transparent_hugepage
grep -q '\[never\]' $thp/enabled && echo madvise > $thp/enabled
echo 100 > $thp/khugepaged/scan_sleep_millisecs
echo 100 > $thp/khugepaged/alloc_sleep_millisecs
major=$(awk '$2 == "HMM_DMIRROR" { print $1 }' /proc/devices)
if [ -n "$major" ]; then
	for m in 0 1; do
		[ -e /dev/hmm_dmirror$m ] || mknod /dev/hmm_dmirror$m c "$major" $m
	done
fi
mkdir -p /tmp/vmtest
cd /tmp/vmtest || exit 1

grep -q '^ioproc_test ' /proc/modules || insmod "$ko" ||
	{ say "insmod $ko failed"; exit 1; }
for _ in $(seq 50); do [ -c /dev/ioproc_test ] && break; sleep 0.1; done

# name, then the command (run from DIR); short arguments, as TCG is slow.
tests=(
	"mremap_test|mremap_test"
	"mremap_dontunmap|mremap_dontunmap"
	"map_fixed_noreplace|map_fixed_noreplace"
	"madv_populate|madv_populate"
	"soft-dirty|soft-dirty"
	"mlock2-tests|mlock2-tests"
	"split_huge_page_test|split_huge_page_test"
	"khugepaged madvise|khugepaged madvise:anon"
	"khugepaged khugepaged|khugepaged khugepaged:anon"
	"ksm_tests -M|ksm_tests -M -p 10"
	"ksm_tests -U|ksm_tests -U"
	"ksm_tests -Z|ksm_tests -Z -p 10 -z 1"
	"userfaultfd anon|userfaultfd anon 4 4"
	"userfaultfd shmem|userfaultfd shmem 4 4"
	"uffd-stress anon|uffd-stress anon 4 4"
	"uffd-stress shmem|uffd-stress shmem 4 4"
	"uffd-unit-tests -f move|uffd-unit-tests -f move"
	"cow|cow"
	"mkdirty|mkdirty"
	"pagemap_ioctl|pagemap_ioctl"
	"ksm_functional_tests|ksm_functional_tests"
	"migration|migration"
	"hmm-tests|hmm-tests -f hmm"
)


# kselftest exit codes: 0 pass, 4 skip, anything else a failure (some
# programs exit with their number of failed cases, which timing-bound
# cases under TCG make vary from run to run).
verdict() {
	case $1 in 0) echo pass ;; 4) echo skip ;; *) echo fail ;; esac
}

for t in "${tests[@]}"; do
	name=${t%%|*} cmd=(${t#*|})
	prog=$dir/${cmd[0]}
	if [ ! -x "$prog" ]; then
		echo "skip $name: not built"
		continue
	fi
	log=/tmp/vmtest/${cmd[0]}
	# Timing-bound cases of these programs flap under TCG on their own
	# (hmm anon_write_prot, ksm -U): a verdict that differs is run again,
	# both ways, up to 3 times; one stale entry fails at once.
	for attempt in 1 2 3; do
		t0=$(date +%s)
		timeout 300 "$prog" "${cmd[@]:1}" > "$log.plain" 2>&1 < /dev/null
		rc0=$?
		t1=$(date +%s)
		timeout 300 "$follow" -i 200 -- "$prog" "${cmd[@]:1}" > "$log.nic" 2>&1 < /dev/null
		rc1=$?
		t2=$(date +%s)
		counts=$(grep '^# follow:' "$log.nic" | tail -1)
		n=$(echo "$counts" | sed -n 's/.* \([0-9]*\) entries checked.*/\1/p')
		checked=$((checked + ${n:-0}))
		n=$(echo "$counts" | sed -n 's/.*(\([0-9]*\) THP blocks held whole).*/\1/p')
		blocks=$((blocks + ${n:-0}))
		echo "# $name: alone exit $rc0 in $((t1 - t0)) s; followed, in $((t2 - t1)) s: ${counts#\# follow: }"
		# A program that fails on its own here is compared all the same.
		[ $rc0 = 0 ] || grep -v '^#' "$log.plain" | tail -n 3 | sed "s/^/#   $name alone: /"
		[ -n "$counts" ] && [ $rc1 != 125 ] &&
			[ "$(verdict $rc1)" != "$(verdict $rc0)" ] || break
		echo "# $name: exit $rc0 alone but $rc1 with the NIC following (attempt $attempt of 3)"
		grep -hE '^not ok|FAIL' "$log.plain" "$log.nic" | head -n 10 | sed 's/^/#   /'
	done
	if [ -z "$counts" ]; then
		bad "$name" "ioproc_follow printed no counts (exit $rc1)"
		# seen once under a host load of 10: an empty log after 214 s
		echo "# $name: its log has $(wc -c < "$log.nic") bytes; the guest's memory and /tmp:"
		grep -E '^(MemFree|MemAvailable|Shmem):' /proc/meminfo | sed 's/^/#   /'
		df -k /tmp | sed 's/^/#   /'
		tail -n 5 "$log.nic" | sed 's/^/  | /'
	elif [ $rc1 = 125 ]; then
		bad "$name" "stale or over-permissive NIC entries"
	elif [ "$(verdict $rc1)" != "$(verdict $rc0)" ]; then
		bad "$name" "exit $rc0 alone but $rc1 with the NIC following, 3 times"
		tail -n 3 "$log.nic" | sed 's/^/  | /'
	else
		if [ $attempt = 1 ]; then ok "$name"
		else ok "$name (the same on attempt $attempt)"; fi
	fi
done
echo "# translations checked against the page tables: $checked ($blocks THP blocks held whole)"
[ "$checked" -gt 0 ] || bad "checked" "no translation was checked"

# Broken NIC: invalidations ignored.  A program that unmaps what it
# touched must leave stale entries, and the follower must say so.
echo 1 > $skip
timeout 300 "$follow" -- "$dir/mremap_test" > /tmp/vmtest/broken.log 2>&1
rc=$?
echo 0 > $skip
grep '^# follow:' /tmp/vmtest/broken.log | sed 's/^# follow:/# broken (skip_hooks=1):/'
if [ $rc = 125 ]; then
	ok "broken: a NIC that ignores invalidations is caught"
else
	bad "broken" "with skip_hooks=1 ioproc_follow exited $rc, not 125"
fi

# Broken NIC: every translation held as a 2 MiB block, as if the kernel
# said so for small pages: the frames of a block it made up are not the
# page tables'.
echo Y > $blocks_param
timeout 300 "$follow" -- "$dir/mremap_test" > /tmp/vmtest/broken-blocks.log 2>&1
rc=$?
echo N > $blocks_param
grep '^# follow:' /tmp/vmtest/broken-blocks.log | sed 's/^# follow:/# broken (assume_blocks=1):/'
if [ $rc = 125 ]; then
	ok "broken: a NIC that holds small pages as blocks is caught"
else
	bad "broken-blocks" "with assume_blocks=1 ioproc_follow exited $rc, not 125"
fi

dmesg | grep -E 'BUG|WARNING|Oops|general protection|soft lockup|KASAN|Bad page' |
	grep -v 'ioproc_test: ' | head -n 20 > /tmp/vmtest/klog
if [ -s /tmp/vmtest/klog ]; then
	sed 's/^/  | /' /tmp/vmtest/klog
	bad "kernel log" "BUG/WARNING/Oops lines"
fi
rmmod ioproc_test || bad "rmmod" "ioproc_test would not unload"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
