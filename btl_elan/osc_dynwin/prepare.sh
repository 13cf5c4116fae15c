#!/bin/bash
# The sources of osc dynwin: osc rdma of Debian's source of the installed
# Open MPI, with the patches of btl_elan/osc_dynwin/series.
#
#   btl_elan/osc_dynwin/prepare.sh OUTDIR
#
# Fetches Debian's source with apt-get source (the version of the
# installed libopenmpi-dev, Debian's own patches applied) once into
# $ELAN_CACHE/ompi-source (default ~/.cache/elan), by
# scripts/debian-source.sh, which leaves the machine's apt configuration
# as it is.  Then copies
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
tree=$("$here/../../scripts/debian-source.sh" openmpi "$version" "$cache")
[ -d "$tree/ompi/mca/osc/rdma" ] || {
	say "no osc rdma in $tree after apt-get source"
	exit 1
}

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
