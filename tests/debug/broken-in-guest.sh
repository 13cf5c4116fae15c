#!/bin/sh
# The deliberately broken variant of the debug stage, at the end of a
# guest's life (in the guest, as root, after its clean kmemleak scan):
# marks the kernel log, loads debug_broken.ko with every bug switched on
# (a lockdep report, a KASAN report, a leak) and scans for leaks again.
# The stage splits the console log at the mark: what comes before must be
# clean, what comes after must hold all three reports.
#
#   tests/debug/broken-in-guest.sh DEBUG_BROKEN.ko KMEMLEAK-OUTFILE
here=$(cd "$(dirname "$0")" && pwd)
[ $# = 2 ] || { echo "usage: $0 DEBUG_BROKEN.ko KMEMLEAK-OUTFILE"; exit 2; }
echo "ELAN-DEBUG-BROKEN: the deliberate kernel bugs start here" > /dev/kmsg
insmod "$1" lockdep=1 leak=1 oob=1 || { echo "broken-in-guest: insmod $1 failed"; exit 1; }
# (lockdep is off after its report: kmemleak-scan.sh fails on that)
"$here/kmemleak-scan.sh" --rmmod debug_broken "$2"
exit 0
