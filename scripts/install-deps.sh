#!/bin/bash
# Install what building and testing the project needs, from Debian's
# packages only.  Installs only what is missing; safe to run again.
set -euo pipefail

pkgs=(
	# build
	build-essential autoconf automake libtool pkg-config
	# guest kernel (kernel/build.sh)
	linux-source-6.1 flex bison bc libelf-dev libssl-dev cpio xz-utils
	kmod rsync dwarves
	# guests (cluster/)
	qemu-system-x86 qemu-utils busybox-static util-linux
	# MPI, cluster network and reports (later stages)
	libopenmpi-dev openmpi-bin vde2 openssh-client openssh-server
	gnuplot-nox
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#pkgs[@]} packages present" >&2
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing ${missing[*]}; run this as root (or sudo)" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done" >&2
