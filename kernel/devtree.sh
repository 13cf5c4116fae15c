#!/bin/bash
# A git tree for working on an IOPROC series.
#
#   kernel/devtree.sh [--kernel V] init [DIR]    unpack linux-source-V into
#                           DIR, commit it as "pristine", git-am the series
#   kernel/devtree.sh [--kernel V] export [DIR]  write pristine..HEAD back as
#                           kernel/V/patches and kernel/V/series
#   kernel/devtree.sh [--kernel V] check [DIR]   checkpatch --strict every
#                           patch of kernel/V, then sites
#   kernel/devtree.sh [--kernel V] sites [DIR]   the functions that call an
#                           IOPROC hook must be the ones ioproc.rst lists
#
# V: 6.1 or 6.12 (default: $ELAN_KERNEL, else build.sh's default kernel).
# DIR defaults to $ELAN_CACHE/dev/linux-source-V (ELAN_CACHE: ~/.cache/elan).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kver=${ELAN_KERNEL:-$(sed -n 's/^default_kernel=//p' "$here/build.sh")}
case "${1:-}" in
--kernel) kver=${2:?--kernel needs a version}; shift 2 ;;
--kernel=*) kver=${1#*=}; shift ;;
esac
[ -f "$here/$kver/series" ] || {
	echo "devtree: no IOPROC series for Linux '$kver' (kernel/*/series)" >&2
	exit 2
}
series=$here/$kver
cmd=${1:-}
dir=${2:-${ELAN_CACHE:-$HOME/.cache/elan}/dev/linux-source-$kver}
tarball=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-$kver.tar.xz}

case "$cmd" in
init)
	[ -e "$dir" ] && { echo "devtree: $dir exists" >&2; exit 1; }
	mkdir -p "$(dirname "$dir")"
	tar -C "$(dirname "$dir")" -xf "$tarball"
	cd "$dir"
	git init -q
	# Debian's .gitignore ignores the whole top level: track everything.
	git add -f -A . >/dev/null
	git commit -q -m "Linux $(make -s kernelversion) (Debian linux-source-$kver)"
	git tag pristine
	grep -v '^#' "$series/series" | grep . | sed "s|^|$series/patches/|" |
		xargs git am -q
	git log --oneline pristine..HEAD
	;;
export)
	cd "$dir"
	rm -f "$series"/patches/*.patch
	git format-patch -q --zero-commit --no-signature pristine..HEAD \
		-o "$series/patches"
	{
		sed -n '/^#/p' "$series/series"
		(cd "$series/patches" && ls ./*.patch | sed 's|^\./||')
	} > "$series/series.new"
	mv "$series/series.new" "$series/series"
	cat "$series/series"
	;;
check)
	# Any error, warning or check of checkpatch --strict fails the check.
	dirty=0
	for p in "$series"/patches/*.patch; do
		echo "== $(basename "$p")"
		"$dir/scripts/checkpatch.pl" --strict --no-tree -q "$p" > /tmp/ioproc-cp.$$ || true
		[ -s /tmp/ioproc-cp.$$ ] && { cat /tmp/ioproc-cp.$$; dirty=1; }
	done
	rm -f /tmp/ioproc-cp.$$
	rc=0
	"$0" --kernel "$kver" sites "$dir" || rc=1
	[ $dirty = 0 ] || { echo "checkpatch --strict: not clean"; rc=1; }
	exit $rc
	;;
sites)
	# Hook calls by enclosing function (git grep -p, with C function
	# headers so that labels are not taken for functions) against the
	# functions in the first column of the call-site tables and in the
	# "called from" sentences of Documentation/mm/ioproc.rst.  DIR is any
	# tree with the series applied (a devtree, or build.sh's tree: no git
	# needed).
	cd "$dir"
	printf '*.c diff=cpp\n*.h diff=cpp\n' > /tmp/ioproc-sites.attr.$$
	hooks='\bioproc_(invalidate_(range|page)|update_(range|page)|change_protection|write_protect_range|sync_(range|page)|release)\('
	paths=()
	for p in mm fs kernel arch; do [ -e "$p" ] && paths+=("$p"); done
	git -c core.attributesFile=/tmp/ioproc-sites.attr.$$ grep --no-index \
		-p -n -E "$hooks" -- "${paths[@]}" ':!mm/ioproc.c' |
		sed -n -E 's/^[^=]+=[0-9]+=//p' |
		sed -E 's/^SYSCALL_DEFINE[0-9]\(([a-z_0-9]+).*/\1/;
			s/^([^(]*[^a-zA-Z_0-9(])?([a-zA-Z_][a-zA-Z_0-9]*)\(.*/\2/' |
		sort -u > /tmp/ioproc-sites.code.$$
	sed -n '/^Call sites$/,/^Sites that need no hook/p' \
		Documentation/mm/ioproc.rst |
		awk '/^=+  +=/ { rule++; w = index($0, "  "); next }
		     rule % 3 == 2 { print substr($0, 1, w); next }
		     { while (match($0, /called from ``[a-zA-Z_0-9]+\(\)``/)) {
			     print substr($0, RSTART + 12, RLENGTH - 12)
			     $0 = substr($0, RSTART + RLENGTH) } }' |
		grep -oE '``[a-zA-Z_0-9]+\(\)``' | tr -d '`()' |
		sort -u > /tmp/ioproc-sites.doc.$$
	ncode=$(wc -l < /tmp/ioproc-sites.code.$$)
	undoc=$(comm -23 /tmp/ioproc-sites.code.$$ /tmp/ioproc-sites.doc.$$)
	unhooked=$(comm -13 /tmp/ioproc-sites.code.$$ /tmp/ioproc-sites.doc.$$)
	rm -f /tmp/ioproc-sites.code.$$ /tmp/ioproc-sites.doc.$$ \
		/tmp/ioproc-sites.attr.$$
	echo "== call sites: $ncode functions call a hook"
	[ -z "$undoc" ] || echo "hooked but not in ioproc.rst:" $undoc
	[ -z "$unhooked" ] || echo "in ioproc.rst but no hook call:" $unhooked
	[ -z "$undoc$unhooked" ]
	;;
*)
	sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
