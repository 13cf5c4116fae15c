#!/bin/bash
# Install what building and testing the project needs, from Debian's
# packages only.  Installs only what is missing; safe to run again.
set -euo pipefail

pkgs=(
	# build
	build-essential autoconf automake libtool pkg-config
	# the nicd fuzzer (tests/nic): clang with libFuzzer and the sanitizers
	clang libclang-rt-14-dev
	# guest kernel (kernel/build.sh)
	linux-source-6.1 linux-source-6.12 flex bison bc libelf-dev libssl-dev cpio xz-utils
	kmod rsync dwarves
	# guests (cluster/)
	qemu-system-x86 qemu-utils busybox-static util-linux
	# Debian's own packaged kernel, booted only in guests (tests/distro,
	# scripts/distro-kernel), and its headers to build elan.ko against
	# (make modules, driver/build-ko).  Installing them puts files under
	# /boot and /lib/modules and changes nothing that runs on this host;
	# they bring initramfs-tools (and udev, whose service the policy below
	# keeps from starting).  See INITRD below.
	linux-image-amd64 linux-headers-amd64
	# MPI, cluster network and reports (cluster/elan-cluster: the guests
	# run the host's sshd)
	libopenmpi-dev openmpi-bin vde2 openssh-client openssh-server
	procps
	# osc dynwin (btl_elan/osc_dynwin): apt-get source of Open MPI unpacks
	# with dpkg-source, and the series goes on with patch
	dpkg-dev patch
	# cluster/qmp: the JSON of QEMU's monitor (QMP)
	libjansson-dev
	# the fabric between elan-nicd instances on several hosts (nic/:
	# UCP over whatever UCX finds, tcp on loopback here), and ucx_info /
	# ucx_perftest for the transport's own figures
	libucx-dev ucx-utils
	# MPICH (ch4:ucx, over uct_elan's UCX in the guests: tests/ucx),
	# beside Open MPI, whose generic names (mpicc, mpirun) stay
	mpich libmpich-dev
	gnuplot-nox
	# real MPI applications for tests/apps and the main job, run in the
	# guests from the shared /usr (Debian 12 sizes, download / installed):
	# lammps (lmp; with liblammps0, lammps-data, libfftw3-double3,
	# libkim-api2 and libvoro++1: 14 MB / 71 MB),
	# lammps-examples (the melt input: 32 MB / 142 MB), hpcc (HPC
	# Challenge, over libblas3: 0.5 MB / 1.3 MB) and
	# netpipe-openmpi (NPopenmpi: 0.1 MB / 0.2 MB); 47 MB / 214 MB in all
	lammps lammps-examples hpcc netpipe-openmpi
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
# openssh-server is installed for its sshd binary, which only the guests
# run: keep its package scripts from starting an sshd on this host.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# written by install-deps.sh while it runs\nexit 101\n' > "$policy"
	chmod 0755 "$policy"
	own_policy=1
	trap 'rm -f "$policy"' EXIT
fi
# INITRD=No: the kernel package's hook (/etc/kernel/postinst.d/
# initramfs-tools) makes no initrd in /boot: the guests boot with our
# initramfs (cluster/mkinitramfs), and this host never boots that kernel.
# No boot loader is configured either: the grub hook runs only where
# /boot/grub/grub.cfg exists, never in a container.
INITRD=No apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# MPICH's alternatives must not take mpicc and mpirun from Open MPI (the
# build and the tests use the generic names for Open MPI)
for a in mpi mpirun; do
	cur=$(update-alternatives --query "$a" 2>/dev/null | sed -n 's/^Value: //p')
	case "$cur" in
	*openmpi*) ;;
	*)	alt=$(update-alternatives --list "$a" 2>/dev/null | grep openmpi | head -1)
		[ -z "$alt" ] || update-alternatives --quiet --set "$a" "$alt" ;;
	esac
done
[ "$own_policy" = 0 ] || rm -f "$policy"
echo "deps: done" >&2
