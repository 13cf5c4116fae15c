#!/bin/bash
# Build the guest kernel: Debian's linux-source-6.1 + the IOPROC series in
# kernel/series + a config fragment, unpacked and built outside the
# repository.  The result is cached under a key made of the source version,
# the series, the config fragments and this script, so it is rebuilt only
# when one of those changes.
#
#   kernel/build.sh [--flavour guest|debug] [--print-dir]
#
# Prints the artifact directory (bzImage, System.map, config, build-dir
# link for out-of-tree modules, vm-selftests/: the tree's mm selftests,
# static) on its last line.  ELAN_CACHE (default
# ~/.cache/elan) says where the tree, the build and the artifacts live.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
flavour=guest
while [ $# -gt 0 ]; do
	case "$1" in
	--flavour) flavour=$2; shift 2 ;;
	--flavour=*) flavour=${1#*=}; shift ;;
	-h|--help) sed -n '2,14p' "$0"; exit 0 ;;
	*) echo "build.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
case "$flavour" in
guest) fragments="$here/config/guest.config" ;;
debug) fragments="$here/config/guest.config $here/config/debug.config" ;;
*) echo "build.sh: flavour must be guest or debug" >&2; exit 2 ;;
esac

cache=${ELAN_CACHE:-$HOME/.cache/elan}
tarball=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
say() { echo "kernel: $*" >&2; }

if [ ! -r "$tarball" ]; then
	say "no kernel source at $tarball"
	say "install it with: apt-get install linux-source-6.1"
	exit 1
fi

# The key names exactly what goes into the image.
patches=()
while read -r p; do
	p=${p%%#*}
	p=$(echo "$p" | xargs)
	[ -n "$p" ] && patches+=("$here/patches/$p")
done < "$here/series"
key=$( (stat -c '%s %Y' "$tarball"; cat "$here/series" "${patches[@]}" \
	$fragments "$0") | sha256sum | cut -c1-16)
art="$cache/artifacts/$flavour-$key"
# Out-of-tree modules build against $art/build: its config must still be
# the image's, or they are built for another struct layout.
if [ -f "$art/bzImage" ] && cmp -s "$art/config" "$art/build/.config"; then
	say "$flavour kernel up to date ($art)"
	echo "$art"
	exit 0
fi
[ -f "$art/bzImage" ] &&
	say "$flavour build directory was reconfigured since $art was built: rebuilding"

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

# One unpacked tree; the series applied to it is recorded so a new series
# is swapped in by reversing the old one (only the touched files change,
# so the build stays incremental).
src="$cache/linux-source-6.1"
applied="$src/.elan-applied"
unpack() {
	say "unpacking $tarball"
	rm -rf "$src"
	tar -C "$cache" -xf "$tarball"
	mkdir -p "$applied"
}
[ -d "$applied" ] || unpack
ver=$(make -s -C "$src" kernelversion)
case "$ver" in
6.1.*) say "source is Linux $ver" ;;
*) say "expected a 6.1 kernel source, found $ver"; exit 1 ;;
esac

same=1
if [ "$(ls "$applied" | sort)" != "$(cd "$here/patches" && for p in "${patches[@]}"; do basename "$p"; done | sort)" ]; then
	same=0
else
	for p in "${patches[@]}"; do
		cmp -s "$p" "$applied/$(basename "$p")" || same=0
	done
fi
if [ $same = 0 ]; then
	# Remember what the files both series touch hold now, so the ones
	# that end up the same keep their timestamps (no needless rebuild).
	stash="$cache/.mtimes"
	: > "$stash"
	for f in $(cat "$applied"/* "${patches[@]}" 2>/dev/null |
		   sed -n 's|^+++ b/||p' | sort -u); do
		[ -f "$src/$f" ] &&
			echo "$(sha1sum < "$src/$f" | cut -c1-40) $(stat -c %Y "$src/$f") $f" >> "$stash"
	done
	for p in $(ls "$applied" | sort -r); do
		say "reverting $p"
		if ! patch -s -R -p1 -d "$src" < "$applied/$p"; then
			say "could not revert $p: unpacking a fresh tree"
			unpack
			break
		fi
		rm "$applied/$p"
	done
	for p in "${patches[@]}"; do
		say "applying $(basename "$p")"
		if ! patch -s -N -p1 -d "$src" --no-backup-if-mismatch < "$p"; then
			say "patch $(basename "$p") does not apply to Linux $ver"
			exit 1
		fi
		cp "$p" "$applied/"
	done
	while read -r sum mtime f; do
		[ -f "$src/$f" ] &&
			[ "$(sha1sum < "$src/$f" | cut -c1-40)" = "$sum" ] &&
			touch -d "@$mtime" "$src/$f"
	done < "$stash"
fi

out="$cache/build-$flavour"
mkdir -p "$out"
allconfig="$out/fragment.config"
cat $fragments > "$allconfig"
say "configuring ($flavour: allnoconfig + $(echo $fragments | xargs -n1 basename | xargs))"
make -s -C "$src" O="$out" KCONFIG_ALLCONFIG="$allconfig" allnoconfig >/dev/null
# A symbol the fragment asks for but Kconfig dropped is a config bug.
missing=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=n) sym=${line%=n}
		grep -q "^$sym=" "$out/.config" && { say "$sym still set"; missing=1; } ;;
	CONFIG_*=*) grep -qxF "$line" "$out/.config" || { say "$line did not take"; missing=1; } ;;
	esac
done < "$allconfig"
[ $missing = 0 ] || { say "config fragment not satisfied"; exit 1; }

jobs=$(nproc)
kind=incremental
[ -f "$out/vmlinux" ] || kind=from-scratch
log="$out/build.log"
say "building bzImage and modules with $jobs jobs (log: $log)"
start=$(date +%s)
set +e
make -C "$src" O="$out" -j"$jobs" bzImage modules 2>&1 | tee "$log" |
	awk -v t0="$start" '
	/^  [A-Z]+ / { n++ }
	/error:|Error [0-9]/ { print "kernel: " $0 > "/dev/stderr"; fflush("/dev/stderr") }
	{ now = systime(); if (now - last >= 30) { last = now;
	  printf "kernel: %d steps, %d s\n", n, now - t0 > "/dev/stderr"
	  fflush("/dev/stderr") } }'
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" != 0 ]; then
	say "build failed; last lines of $log:"
	tail -30 "$log" >&2
	exit 1
fi
secs=$(( $(date +%s) - start ))
say "built in ${secs}s ($kind)"

mkdir -p "$art.tmp"
cp "$out/arch/x86/boot/bzImage" "$out/System.map" "$art.tmp/"

# The tree's own mm selftests that fit a guest, static, for the kernel
# stage to run with the pretend NIC following them (tests/kernel).  One
# that does not build is left out, not fatal.
vm=$src/tools/testing/selftests/vm
make -s -C "$src" O="$out" headers_install INSTALL_HDR_PATH="$out/usr" >/dev/null
mkdir -p "$art.tmp/vm-selftests"
for t in mremap_test mremap_dontunmap map_fixed_noreplace madv_populate \
	soft-dirty mlock2-tests khugepaged split_huge_page_test ksm_tests \
	userfaultfd migration hmm-tests; do
	extra=() libs=(-lrt -lpthread)
	case $t in
	khugepaged | madv_populate | soft-dirty | split_huge_page_test | userfaultfd)
		extra=("$vm/vm_util.c") ;;
	ksm_tests | migration) libs+=(-lnuma) ;;
	esac
	gcc -static -O2 -I "$src" -isystem "$out/usr/include" \
		-o "$art.tmp/vm-selftests/$t" "$vm/$t.c" "${extra[@]}" "${libs[@]}" \
		>/dev/null 2>&1 || say "selftests/vm/$t did not build: left out"
done
cp "$out/.config" "$art.tmp/config"
ln -sfn "$out" "$art.tmp/build"
echo "$key" > "$out/.elan-key"
echo "$secs $kind" > "$art.tmp/build-seconds"
[ $kind = incremental ] || echo "$secs" > "$cache/$flavour-from-scratch-seconds"
echo "$ver" > "$art.tmp/version"
rm -rf "$art"
mv "$art.tmp" "$art"
ln -sfn "$art" "$cache/$flavour"
# Older builds of this flavour point at the same build directory: stale.
for old in "$cache/artifacts/$flavour"-*; do
	[ "$old" = "$art" ] || rm -rf "$old"
done
echo "$art"
