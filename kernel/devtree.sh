#!/bin/bash
# A git tree for working on the IOPROC series.
#
#   kernel/devtree.sh init [DIR]     unpack linux-source-6.1 into DIR, commit
#                                    it as "pristine" and git-am the series
#   kernel/devtree.sh export [DIR]   write pristine..HEAD back as
#                                    kernel/patches and kernel/series
#   kernel/devtree.sh check [DIR]    checkpatch --strict every patch
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
	;;
*)
	sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
