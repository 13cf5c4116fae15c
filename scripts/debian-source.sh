#!/bin/bash
# Debian's own source of a package, fetched once with apt-get source.
#
#   scripts/debian-source.sh SOURCE VERSION CACHEDIR
#
# Prints the unpacked tree, CACHEDIR/SOURCE-VERSION/SOURCE-UPSTREAM
# (Debian's patches applied); a tree already fetched is printed at once.
# apt runs in CACHEDIR on a state of its own, with deb-src lines made from
# the machine's enabled deb lines (both formats), so the machine's apt
# configuration stays as it is.  Used by uct_elan/build.sh (ucx) and
# btl_elan/osc_dynwin/prepare.sh (openmpi).
set -euo pipefail

source=${1:?usage: scripts/debian-source.sh SOURCE VERSION CACHEDIR}
version=${2:?usage: scripts/debian-source.sh SOURCE VERSION CACHEDIR}
cache=${3:?usage: scripts/debian-source.sh SOURCE VERSION CACHEDIR}
say() { echo "debian-source: $*" >&2; }

upstream=${version#*:}
upstream=${upstream%-*}
tree=$cache/$source-$version/$source-$upstream
if [ -f "$tree/.elan-unpacked" ]; then
	echo "$tree"
	exit 0
fi

src=$cache/apt/sources.list.d
apt=(apt-get -q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$src"
	-o "Dir::State::Lists=$cache/apt/lists" -o "Dir::Cache=$cache/apt/cache"
	-o APT::Sandbox::User=root)

mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache" "$src"
rm -f "$src"/*
# deb-src twins of the machine's enabled deb entries, both formats
if [ -r /etc/apt/sources.list ]; then
	sed -n 's/^deb[[:space:]]/deb-src /p' /etc/apt/sources.list >"$src/machine.list"
fi
for f in /etc/apt/sources.list.d/*.sources; do
	[ -r "$f" ] || continue
	sed 's/^Types:[[:space:]]*deb[[:space:]]*$/Types: deb-src/' "$f" >"$src/$(basename "$f")"
done
for f in /etc/apt/sources.list.d/*.list; do
	[ -r "$f" ] || continue
	sed -n 's/^deb[[:space:]]/deb-src /p' "$f" >"$src/$(basename "$f")"
done
say "fetching Debian's $source $version source (apt-get source, into $cache)"
"${apt[@]}" update >"$cache/apt/update.log" 2>&1 || {
	say "apt-get update of the deb-src lists failed: see $cache/apt/update.log"
	exit 1
}
rm -rf "${cache:?}/$source-$version"
mkdir -p "$cache/$source-$version"
(cd "$cache/$source-$version" && "${apt[@]}" source "$source=$version") \
	>"$cache/apt/source.log" 2>&1 || {
	say "apt-get source $source=$version failed: see $cache/apt/source.log"
	exit 1
}
[ -d "$tree" ] || {
	say "no $tree after apt-get source: see $cache/apt/source.log"
	exit 1
}
touch "$tree/.elan-unpacked"
echo "$tree"
