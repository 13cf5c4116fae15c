#!/bin/bash
# UCX with the Elan transport inside: Debian's UCX source with
# uct_elan/src/uct/elan added, built and installed into the cache.
#
#   uct_elan/build.sh            builds if needed; prints the install prefix
#   uct_elan/build.sh --cached   prints it only if built (else exit 1)
#   uct_elan/build.sh --fetch-only   fetches the source; prints its tree
#
# Debian's UCX (1.13.1) loads only the transport modules named when it was
# configured (ucs_load_modules), so a transport reaches the distribution's
# Open MPI and MPICH as a UCX built with it; the sonames match, so putting
# this build first on the library path is all they need.
#
# The source comes once with apt-get source (the version of the installed
# libucx-dev) into $ELAN_CACHE/ucx-source (default ~/.cache/elan), by
# scripts/debian-source.sh (as for btl_elan/osc_dynwin/prepare.sh); the
# machine's apt configuration stays as it is.  The build goes to
# $ELAN_CACHE/ucx-<key>, keyed by the source version, the transport's
# sources and this script; a cached build returns at once, and one build
# of a key runs at a time (a lock: a second caller waits, then finds it
# built).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
cachetop=${ELAN_CACHE:-$HOME/.cache/elan}
cache=$cachetop/ucx-source
say() { echo "ucx: $*" >&2; }

version=$(dpkg-query -W -f='${source:Version}' libucx-dev 2>/dev/null) || {
	say "libucx-dev is not installed: run scripts/install-deps.sh"
	exit 1
}
# Debian's source, fetched once (scripts/debian-source.sh prints its tree)
fetch() {
	tree=$("$top/scripts/debian-source.sh" ucx "$version" "$cache")
	[ -d "$tree/src/uct/sm" ] || {
		say "no src/uct in $tree after apt-get source"
		exit 1
	}
}

# The key: the source version, the transport's sources, libelan (compiled
# into the module) and this script.
inputs=("$here/build.sh" "$top/driver/libelan/elan.c" "$top/driver/libelan/libelan.h"
	"$top/include/elan/elan_uapi.h")
while IFS= read -r f; do inputs+=("$f"); done < <(find "$here/src" -type f | LC_ALL=C sort)
key=$( { echo "$version"; for f in "${inputs[@]}"; do echo "${f#"$top"/}"; cat "$f"; done; } |
	sha256sum | cut -c1-16)
prefix=$cachetop/ucx-$key
case "${1:-}" in
--cached)	# the prefix if it is built, else nothing (exit 1)
	[ -f "$prefix/.elan-built" ] || exit 1
	echo "$prefix"
	exit 0 ;;
--fetch-only)
	fetch
	echo "$tree"
	exit 0 ;;
esac
# one build of a key at a time (the cache is shared): a second waits,
# then finds it built
mkdir -p "$cachetop"
exec 9>"$cachetop/.lock-ucx-$key"
flock 9
if [ -f "$prefix/.elan-built" ]; then
	echo "$prefix"
	exit 0
fi
fetch

build=$cachetop/ucx-build-$key
log=$build/build.log
t0=$(date +%s)
rm -rf "$build" "$prefix"
mkdir -p "$build"
say "building UCX $version with the elan transport into $prefix (log: $log)"
cp -a "$tree" "$build/src"
src=$build/src
cp -a "$here/src/uct/elan" "$src/src/uct/elan"
mkdir -p "$src/src/uct/elan/libelan/elan"
cp "$top/driver/libelan/elan.c" "$top/driver/libelan/libelan.h" "$src/src/uct/elan/libelan/"
cp "$top/include/elan/elan_uapi.h" "$src/src/uct/elan/libelan/elan/"
# Wire it into UCX's configure and make: the module list (uct_modules, for
# ucs_load_modules) is filled by src/uct/elan/configure.m4.
sed -i 's|^m4_include(\[src/uct/ugni/configure.m4\])|&\nm4_include([src/uct/elan/configure.m4])|' \
	"$src/src/uct/configure.m4"
sed -i 's|^SUBDIRS = \. cuda ib rocm sm ugni$|& elan|' "$src/src/uct/Makefile.am"
grep -q 'elan/configure.m4' "$src/src/uct/configure.m4" &&
	grep -q '^SUBDIRS = .* elan$' "$src/src/uct/Makefile.am" || {
	say "could not add the elan transport to UCX $version's src/uct (configure.m4, Makefile.am)"
	exit 1
}

step() { # name command...
	local t=$(date +%s) name=$1
	shift
	say "$name"
	if ! ( cd "$src" && "$@" ) >>"$log" 2>&1; then
		say "$name failed: see $log"
		tail -n 25 "$log" | sed 's/^/  ! /' >&2
		exit 1
	fi
	echo "ucx: $name: $(( $(date +%s) - t ))s" >>"$log"
}
jobs=$(nproc 2>/dev/null || echo 2)
# Debian's own options (debian/rules) but InfiniBand, Java and the docs:
# only what Open MPI, MPICH and the tests need here.
step "autogen" ./autogen.sh
step "configure" ./configure --prefix="$prefix" --enable-mt \
	--disable-backtrace-detail --disable-logging --enable-devel-headers \
	--enable-cma --with-elan --without-verbs --without-rdmacm --without-java \
	--without-go --without-cuda --without-rocm --without-knem --without-xpmem \
	--without-ugni --disable-doxygen-doc --disable-examples
grep -q 'uct_MODULES.*elan' "$src/config.h" || {
	say "configure did not take the elan module: see $log"
	exit 1
}
step "make ($jobs jobs)" make -j"$jobs"
step "make install" make install
# The transport broken on purpose, for the tests only (tests/ucx/check),
# in two variants: PREFIX/lib-broken, the fetch of an atomic dropped
# (-DUCT_ELAN_BROKEN_FETCH), and PREFIX/lib-broken-order, a new op of an
# ep no longer waiting behind its pending requests (-DUCT_ELAN_BROKEN_ORDER).
# UCX looks for its modules beside the libucs it loaded (dladdr), so each
# variant's folder, links to every library of PREFIX/lib and to every
# module but libuct_elan, which is built again with the variant's flag, is
# chosen with LD_LIBRARY_PATH.
broken() { # folder cppflags
	local dir=$prefix/$1 f
	step "the broken transport $1 (tests only)" sh -c \
		'make -C src/uct/elan clean && make -C src/uct/elan CPPFLAGS="$1"' sh "$2"
	mkdir -p "$dir/ucx"
	for f in "$prefix"/lib/*.so*; do ln -s "../lib/${f##*/}" "$dir/"; done
	for f in "$prefix"/lib/ucx/*.so*; do
		case ${f##*/} in libuct_elan.*) ;; *) ln -s "../../lib/ucx/${f##*/}" "$dir/ucx/" ;; esac
	done
	cp "$src/src/uct/elan/.libs/libuct_elan.so.0.0.0" "$dir/ucx/"
	ln -s libuct_elan.so.0.0.0 "$dir/ucx/libuct_elan.so.0"
	ln -s libuct_elan.so.0.0.0 "$dir/ucx/libuct_elan.so"
}
broken lib-broken -DUCT_ELAN_BROKEN_FETCH
broken lib-broken-order -DUCT_ELAN_BROKEN_ORDER
touch "$prefix/.elan-built"
say "built in $(( $(date +%s) - t0 ))s: $prefix"
echo "$prefix"
