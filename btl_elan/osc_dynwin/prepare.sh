#!/bin/bash
# The sources of osc dynwin: osc rdma of Debian's source of the installed
# Open MPI, with the patches of btl_elan/osc_dynwin/series.
#
#   btl_elan/osc_dynwin/prepare.sh OUTDIR
#
# Fetches Debian's source with apt-get source (the version of the
# installed libopenmpi-dev, Debian's own patches applied) once into
# $ELAN_CACHE/ompi-source (default ~/.cache/elan); apt runs there on a
# state of its own, with deb-src lines made from the machine's deb lines,
# and leaves the machine's apt configuration as it is.  Then copies
# ompi/mca/osc/rdma and the one header libopenmpi-dev lacks
# (ompi/mpi/fortran/base/fint_2_int.h) into OUTDIR, over what is there
# (the build's dependency files stay), and applies the series.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: btl_elan/osc_dynwin/prepare.sh OUTDIR}
cache=${ELAN_CACHE:-$HOME/.cache/elan}/ompi-source
say() { echo "osc dynwin: $*" >&2; }

version=$(dpkg-query -W -f='${source:Version}' libopenmpi-dev 2>/dev/null) || {
	say "libopenmpi-dev is not installed: run scripts/install-deps.sh"
	exit 1
}
upstream=${version#*:}
upstream=${upstream%-*}
tree=$cache/openmpi-$version/openmpi-$upstream

fetch() {
	local src=$cache/apt/sources.list.d f
	local apt=(apt-get -q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$src"
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
	say "fetching Debian's openmpi $version source (apt-get source, into $cache)"
	"${apt[@]}" update >"$cache/apt/update.log" 2>&1 || {
		say "apt-get update of the deb-src lists failed: see $cache/apt/update.log"
		exit 1
	}
	rm -rf "$cache/openmpi-$version"
	mkdir -p "$cache/openmpi-$version"
	(cd "$cache/openmpi-$version" && "${apt[@]}" source "openmpi=$version") \
		>"$cache/apt/source.log" 2>&1 || {
		say "apt-get source openmpi=$version failed: see $cache/apt/source.log"
		exit 1
	}
	[ -d "$tree/ompi/mca/osc/rdma" ] || {
		say "no osc rdma in $tree after apt-get source"
		exit 1
	}
	touch "$tree/.elan-unpacked"
}

[ -f "$tree/.elan-unpacked" ] || fetch

mkdir -p "$out/ompi/mca/osc/rdma" "$out/ompi/mpi/fortran/base"
cp -f "$tree"/ompi/mca/osc/rdma/*.[ch] "$out/ompi/mca/osc/rdma/"
cp -f "$tree/ompi/mpi/fortran/base/fint_2_int.h" "$out/ompi/mpi/fortran/base/"
sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/series" | while read -r p; do
	patch -s -f -p1 -d "$out" --no-backup-if-mismatch <"$here/$p" || {
		say "$p does not apply to osc rdma of openmpi $version"
		exit 1
	}
done
say "osc rdma of openmpi $version with $(grep -c '^0' "$here/series") patches in $out"
