#!/bin/bash
# Build the guest kernel: Debian's linux-source-VERSION + the IOPROC series
# in kernel/VERSION/series + a config fragment, unpacked and built outside
# the repository.  The result is cached under a key made of the source
# version, the series, the config fragments and this script, so it is
# rebuilt only when one of those changes.
#
#   kernel/build.sh [--kernel 6.1|6.12] [--flavour guest|debug] [--mm-only]
#   kernel/build.sh [--kernel V] --print-kernel
#
# --kernel (default: $ELAN_KERNEL, else the default guest kernel below)
# picks the series.  Prints the artifact directory (bzImage, System.map,
# config, build-dir link for out-of-tree modules, vm-selftests/: the tree's
# mm selftests, static) on its last line; it is linked as
# $ELAN_CACHE/FLAVOUR-VERSION, and as $ELAN_CACHE/FLAVOUR for the default
# kernel.  The tools of a checkout (cluster/, tests/, make modules) take
# FLAVOUR-VERSION, the version from --print-kernel (prints the version
# this would build, and nothing else): the cache is shared by checkouts
# whose defaults may differ, so the unversioned link is only for the
# installed tools and for people.  --mm-only applies the series,
# configures and builds mm/ only (the cheap check that a series still
# applies and compiles): no artifacts.
# ELAN_CACHE (default ~/.cache/elan) says where the trees, the builds and
# the artifacts live; ELAN_KERNEL_JOBS (default: the number of CPUs) how
# many compilers make runs at once.
set -euo pipefail

# The kernel the guests boot unless told otherwise (cluster/, tests/).
default_kernel=6.1

here=$(cd "$(dirname "$0")" && pwd)
flavour=guest
kver=${ELAN_KERNEL:-$default_kernel}
mm_only=0
print_kernel=0
while [ $# -gt 0 ]; do
	case "$1" in
	--flavour) flavour=$2; shift 2 ;;
	--flavour=*) flavour=${1#*=}; shift ;;
	--kernel) kver=$2; shift 2 ;;
	--kernel=*) kver=${1#*=}; shift ;;
	--mm-only) mm_only=1; shift ;;
	--print-kernel) print_kernel=1; shift ;;
	-h|--help) sed -n '2,25p' "$0"; exit 0 ;;
	*) echo "build.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ -f "$here/$kver/series" ] || {
	echo "build.sh: no IOPROC series for Linux '$kver' (kernel/*/series)" >&2
	exit 2
}
[ $print_kernel = 0 ] || { echo "$kver"; exit 0; }
case "$flavour" in
guest) fragments="$here/config/guest.config" ;;
debug) fragments="$here/config/guest.config $here/config/debug.config" ;;
*) echo "build.sh: flavour must be guest or debug" >&2; exit 2 ;;
esac

cache=${ELAN_CACHE:-$HOME/.cache/elan}
tarball=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-$kver.tar.xz}
say() { echo "kernel: $*" >&2; }

if [ ! -r "$tarball" ]; then
	say "no kernel source at $tarball"
	say "install it with: apt-get install linux-source-$kver"
	exit 1
fi

# The key names exactly what goes into the image: this script too, but
# not which kernel is the default (flipping it rebuilds nothing).
patches=()
while read -r p; do
	p=${p%%#*}
	p=$(echo "$p" | xargs)
	[ -n "$p" ] && patches+=("$here/$kver/patches/$p")
done < "$here/$kver/series"
key=$( (stat -c '%s %Y' "$tarball"; cat "$here/$kver/series" "${patches[@]}" \
	$fragments; sed '/^default_kernel=/d' "$0") | sha256sum | cut -c1-16)
art="$cache/artifacts/$flavour-$kver-$key"
# Out-of-tree modules build against $art/build: its config must still be
# the image's, or they are built for another struct layout.
if [ $mm_only = 0 ] && [ -f "$art/bzImage" ] &&
	cmp -s "$art/config" "$art/build/.config"; then
	say "$flavour kernel up to date ($art)"
	# (another checkout, of another default, may have moved it)
	[ "$kver" != "$default_kernel" ] || ln -sfn "$art" "$cache/$flavour"
	echo "$art"
	exit 0
fi
[ $mm_only = 0 ] && [ -f "$art/bzImage" ] &&
	say "$flavour build directory was reconfigured since $art was built: rebuilding"

# One build per kernel version at a time; the versions share no tree,
# build directory or artifact.
mkdir -p "$cache"
exec 9>"$cache/.lock-$kver"
flock 9

# One unpacked tree; the series applied to it is recorded so a new series
# is swapped in by reversing the old one (only the touched files change,
# so the build stays incremental).
src="$cache/linux-source-$kver"
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
"$kver".*) say "source is Linux $ver" ;;
*) say "expected a $kver kernel source, found $ver"; exit 1 ;;
esac

same=1
if [ "$(ls "$applied" | sort)" != "$(for p in "${patches[@]}"; do basename "$p"; done | sort)" ]; then
	same=0
else
	for p in "${patches[@]}"; do
		cmp -s "$p" "$applied/$(basename "$p")" || same=0
	done
fi
if [ $same = 0 ]; then
	# Remember what the files both series touch hold now, so the ones
	# that end up the same keep their timestamps (no needless rebuild).
	stash="$cache/.mtimes-$kver"
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

out="$cache/build-$kver-$flavour"
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

jobs=${ELAN_KERNEL_JOBS:-$(nproc)}
kind=incremental
[ -f "$out/vmlinux" ] || kind=from-scratch
targets=(bzImage modules)
what="bzImage and modules"
if [ $mm_only = 1 ]; then
	targets=(mm/)
	what="mm/"
	[ -f "$out/mm/built-in.a" ] || kind=from-scratch
fi
log="$out/build.log"
[ $mm_only = 0 ] || log="$out/build-mm.log"
say "building $what of Linux $ver with $jobs jobs (log: $log)"
start=$(date +%s)
set +e
make -C "$src" O="$out" -j"$jobs" "${targets[@]}" 2>&1 | tee "$log" |
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
if [ $mm_only = 1 ]; then
	say "the $kver series applies and mm/ builds ($flavour config)"
	exit 0
fi

mkdir -p "$art.tmp"
cp "$out/arch/x86/boot/bzImage" "$out/System.map" "$art.tmp/"

# The tree's own mm selftests that fit a guest, static, for the kernel
# stage to run with the pretend NIC following them (tests/kernel).  One
# that does not build is left out, not fatal.  6.1 keeps them in
# selftests/vm; 6.12 in selftests/mm, with vm_util.c and thp_settings.c
# linked into each and userfaultfd split into uffd-stress and
# uffd-unit-tests.
make -s -C "$src" O="$out" headers_install INSTALL_HDR_PATH="$out/usr" >/dev/null
mkdir -p "$art.tmp/vm-selftests"
progs=(mremap_test mremap_dontunmap map_fixed_noreplace madv_populate
	soft-dirty mlock2-tests khugepaged split_huge_page_test ksm_tests
	migration hmm-tests)
vm=$src/tools/testing/selftests/vm
cflags=()
if [ -d "$src/tools/testing/selftests/mm" ]; then
	vm=$src/tools/testing/selftests/mm
	progs+=(uffd-stress uffd-unit-tests cow mkdirty pagemap_ioctl
		ksm_functional_tests)
	# What the selftests' Makefile would give them: local_config.h from
	# check_config.sh (no liburing here, so cow leaves its io_uring cases
	# out) and kselftest.h, which 6.12's khugepaged.c uses unincluded.
	mkdir -p "$out/selftests-mm"
	: > "$out/selftests-mm/local_config.h"
	cflags=(-I "$out/selftests-mm")
else
	progs+=(userfaultfd)
fi
for t in "${progs[@]}"; do
	extra=() libs=(-lrt -lpthread -lm)
	if [ -f "$vm/thp_settings.c" ]; then
		extra=("$vm/vm_util.c" "$vm/thp_settings.c")
	else
		case $t in
		khugepaged | madv_populate | soft-dirty | split_huge_page_test | userfaultfd)
			extra=("$vm/vm_util.c") ;;
		esac
	fi
	include=()
	case $t in
	khugepaged) [ "$vm" = "${vm%/mm}" ] || include=(-include "$vm/../kselftest.h") ;;
	uffd-*) extra+=("$vm/uffd-common.c") ;;
	ksm_* | migration) libs+=(-lnuma) ;;
	esac
	gcc -static -O2 "${cflags[@]}" "${include[@]}" -I "$src" -isystem "$out/usr/include" \
		-o "$art.tmp/vm-selftests/$t" "$vm/$t.c" "${extra[@]}" "${libs[@]}" \
		>/dev/null 2>&1 || say "$(basename "$vm")/$t did not build: left out"
done
cp "$out/.config" "$art.tmp/config"
ln -sfn "$out" "$art.tmp/build"
echo "$key" > "$out/.elan-key"
echo "$secs $kind" > "$art.tmp/build-seconds"
[ $kind = incremental ] || echo "$secs" > "$cache/$flavour-$kver-from-scratch-seconds"
echo "$ver" > "$art.tmp/version"
rm -rf "$art"
mv "$art.tmp" "$art"
ln -sfn "$art" "$cache/$flavour-$kver"
[ "$kver" != "$default_kernel" ] || ln -sfn "$art" "$cache/$flavour"
# Older builds of this flavour and kernel point at the same build
# directory: stale.
for old in "$cache/artifacts/$flavour-$kver"-*; do
	[ "$old" = "$art" ] || rm -rf "$old"
done
echo "$art"
