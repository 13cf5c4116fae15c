#!/bin/sh
# The end of a debug guest's life (in the guest, as root): optionally run
# a command first, unload the modules under test (what they fail to free
# on unload only leaks once they are gone), let kmemleak scan and save its
# report where the host's scanner (tests/debug/scan-logs) reads it.
#
#   tests/debug/kmemleak-scan.sh [--rmmod MODULE]... OUTFILE [-- CMD ARGS...]
#
# Exit status: CMD's when it failed, else 1 when a module would not unload
# or kmemleak is missing, else 0.  Leaks do not change the status: a scan
# also prints "kmemleak: N new suspected memory leaks" in the kernel log,
# and the scanner judges both.
set -u
say() { echo "kmemleak-scan: $*"; }
mods=''
while [ $# -gt 0 ]; do
	case "$1" in
	--rmmod) mods="$mods $2"; shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { say "usage: $0 [--rmmod MODULE]... OUTFILE [-- CMD ARGS...]"; exit 2; }
out=$1
shift
rc=0
if [ "${1:-}" = -- ]; then
	shift
	"$@"
	rc=$?
fi
status=0
for m in $mods; do
	grep -q "^$m " /proc/modules || continue
	rmmod "$m" || { say "FAILED: rmmod $m"; status=1; }
done
km=/sys/kernel/debug/kmemleak
if [ ! -w $km ]; then
	say "FAILED: no $km (needs CONFIG_DEBUG_KMEMLEAK and debugfs; kmemleak=off on the command line?)"
	: > "$out"
	[ "$rc" = 0 ] && rc=1
	exit "$rc"
fi
# kmemleak reports no object younger than 5 s, nor one whose contents
# changed since the scan before (its checksum): a leak shows on the
# second of two scans 5 s apart.
t0=$(cut -d' ' -f1 /proc/uptime)
echo scan > $km
sleep 5
echo scan > $km
cat $km > "$out"
t1=$(cut -d' ' -f1 /proc/uptime)
say "$(grep -c '^unreferenced object' "$out") unreferenced object(s) after two scans ($t0 s to $t1 s of uptime)"
# Lockdep turns itself off after its first report, after a KASAN report
# (a taint), or when it runs out of room (a "BUG: MAX_LOCKDEP..." line):
# a silent stop would leave the rest of the run unchecked.
locks=$(awk '/debug_locks:/ { print $2 }' /proc/lockdep_stats 2>/dev/null)
if [ "$locks" = 1 ]; then
	say "lockdep still on (debug_locks 1)"
else
	say "FAILED: lockdep is off (debug_locks ${locks:-unknown}): see the kernel log"
	status=1
fi
[ "$rc" = 0 ] && rc=$status
exit "$rc"
