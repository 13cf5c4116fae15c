#!/bin/bash
# A git tree for working on the IOPROC series.
#
#   kernel/devtree.sh init [DIR]     unpack linux-source-6.1 into DIR, commit
#                                    it as "pristine" and git-am the series
#   kernel/devtree.sh export [DIR]   write pristine..HEAD back as
#                                    kernel/patches and kernel/series
#   kernel/devtree.sh check [DIR]    checkpatch --strict every patch, then
#                                    sites
#   kernel/devtree.sh sites [DIR]    the functions that call an IOPROC hook
#                                    must be the ones ioproc.rst lists
#
# DIR defaults to $ELAN_CACHE/dev/linux-source-6.1 (ELAN_CACHE: ~/.cache/elan).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-}
dir=${2:-${ELAN_CACHE:-$HOME/.cache/elan}/dev/linux-source-6.1}
tarball=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}

case "$cmd" in
init)
	[ -e "$dir" ] && { echo "devtree: $dir exists" >&2; exit 1; }
	mkdir -p "$(dirname "$dir")"
	tar -C "$(dirname "$dir")" -xf "$tarball"
	cd "$dir"
	git init -q
	# Debian's .gitignore ignores the whole top level: track everything.
	git add -f -A . >/dev/null
	git commit -q -m "Linux $(make -s kernelversion) (Debian linux-source-6.1)"
	git tag pristine
	grep -v '^#' "$here/series" | grep . | sed "s|^|$here/patches/|" |
		xargs git am -q
	git log --oneline pristine..HEAD
	;;
export)
	cd "$dir"
	rm -f "$here"/patches/*.patch
	git format-patch -q --zero-commit --no-signature pristine..HEAD \
		-o "$here/patches"
	{
		sed -n '/^#/p' "$here/series"
		(cd "$here/patches" && ls ./*.patch | sed 's|^\./||')
	} > "$here/series.new"
	mv "$here/series.new" "$here/series"
	cat "$here/series"
	;;
check)
	for p in "$here"/patches/*.patch; do
		echo "== $(basename "$p")"
		"$dir/scripts/checkpatch.pl" --strict --no-tree -q "$p" || true
	done
	exec "$0" sites "$dir"
	;;
sites)
	# Hook calls by enclosing function (git grep -p, with C function
	# headers so that labels are not taken for functions) against the
	# functions in the first column of the call-site tables and in the
	# "called from" sentences of Documentation/mm/ioproc.rst.
	cd "$dir"
	grep -qs 'diff=cpp' .git/info/attributes ||
		printf '*.c diff=cpp\n*.h diff=cpp\n' >> .git/info/attributes
	hooks='\bioproc_(invalidate_(range|page)|update_(range|page)|change_protection|write_protect_range|sync_(range|page)|release)\('
	git grep -p -n -E "$hooks" -- mm fs kernel arch ':!mm/ioproc.c' |
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
	rm -f /tmp/ioproc-sites.code.$$ /tmp/ioproc-sites.doc.$$
	echo "== call sites: $ncode functions call a hook"
	[ -z "$undoc" ] || echo "hooked but not in ioproc.rst:" $undoc
	[ -z "$unhooked" ] || echo "in ioproc.rst but no hook call:" $unhooked
	[ -z "$undoc$unhooked" ]
	;;
*)
	sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
