# shellcheck shell=bash disable=SC2034,SC2054
# Shared pieces of the Elan guest harness: sourced (not run) by
# cluster/guest-run, cluster/kvm-probe and later cluster/elan-cluster.
#
# It provides:
#   elan_say / elan_die          progress and errors on stderr
#   ELAN_CACHE, ELAN_REPO        cache dir (ELAN_CACHE, default ~/.cache/elan), repo root
#                                (empty when run from an install: see below)
#   ELAN_DEFAULT_KERNEL          the guest kernel used without --kernel
#   elan_resolve_kernel K        bzImage path from a file or directory
#   elan_initramfs KERNEL        build/look up the initramfs for KERNEL, print its path
#   elan_kernel_modules KERNEL   the modules dir of a packaged kernel, or nothing
#   elan_cleanup_*               a registry of pids, files and dirs the
#                                EXIT/INT/TERM/HUP trap removes
#   elan_shm_path NAME           a unique /dev/shm file for guest RAM
#   elan_temp_rundir             make a temporary run dir, print its path
#   elan_sweep_stale             remove RAM files and temporary run dirs of
#                                harnesses that died
#   elan_write_cmd DIR ARGS...   write DIR/cmd, a sh script that runs ARGS
#   elan_rundir_init DIR         lay out a guest's run dir
#   elan_qemu_args               fill the array ELAN_QEMU for one guest
#   elan_stream FILE FD PID      copy a growing file to an fd while PID runs
#   elan_qemu_start LOG          start "${ELAN_QEMU[@]}" in the background
#   elan_wait_guest PID LOG T    wait for the marker / exit / timeout
#   elan_kernel_problems LOG     print kernel panic/oops/BUG/WARNING/lockdep lines
#   elan_keep_log FILE LABEL     copy a log to the bounded log store, print its path
#   elan_accel MODE KERNEL       tcg|kvm|auto -> tcg or kvm
#   elan_check_guest_path WHAT P die unless P may be shared at the same path
#   elan_qemu_start_detached D   start "${ELAN_QEMU[@]}" in its own session,
#                                outliving us (cluster nodes), pid in D/qemu.pid
#   elan_pid_is PID STRING       PID runs and its command line contains STRING
#   elan_stop_pids GRACE PID...  TERM them all, KILL what is left after GRACE s
#   elan_qmp SOCK CMD [JSON]     one QMP command, prints the JSON "return"
#
# Exit codes of guest-run (set by elan_wait_guest via ELAN_RESULT):
#   N    the command's status, from the ELAN-EXIT=N marker
#   123  the command exited 0 but the guest kernel reported problems
#        (WARNING, BUG, Oops, KASAN, lockdep, "INFO: ..."; see
#        elan_kernel_problems) and --allow-kernel-warnings was not given
#   124  timeout (QEMU killed)
#   125  the kernel panicked / oopsed / hit a BUG and no marker came
#   126  QEMU exited (or failed to start) without a marker and no panic seen

ELAN_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ELAN_CACHE=${ELAN_CACHE:-$HOME/.cache/elan}
# From a checkout, everything is found in the repository (ELAN_REPO).  From
# an install (make install), install.env beside this file says where the
# rest went: ELAN_PREFIX, ELAN_BINDIR (elan-nicd), ELAN_PKGLIBDIR (elan.ko
# and guest/bzImage, when they were built at install time) and
# ELAN_COMPONENT_DIR (btl elan); ELAN_REPO is then empty.
ELAN_INSTALLED=0 ELAN_PREFIX='' ELAN_BINDIR='' ELAN_PKGLIBDIR='' ELAN_COMPONENT_DIR=''
if [ -r "$ELAN_LIB_DIR/install.env" ]; then
	# shellcheck disable=SC1091 # written by make install
	. "$ELAN_LIB_DIR/install.env"
	ELAN_INSTALLED=1
	ELAN_REPO=
else
	ELAN_REPO=$(cd "$ELAN_LIB_DIR/.." && pwd)
fi
# The guest kernel: the one installed with the tools if there is one,
# else the build cache's (kernel/build.sh): its default kernel, or with
# ELAN_KERNEL=6.1|6.12 that version's (kernel/build.sh --kernel).  From a
# checkout, by version: the default is the checkout's own, whatever
# another checkout sharing the cache last linked as $ELAN_CACHE/guest.
ELAN_DEFAULT_KERNEL=$ELAN_CACHE/guest${ELAN_KERNEL:+-$ELAN_KERNEL}
if [ -n "$ELAN_REPO" ]; then
	ELAN_DEFAULT_KERNEL=$ELAN_CACHE/guest-$("$ELAN_REPO/kernel/build.sh" --print-kernel) ||
		exit 2
fi
if [ -z "${ELAN_KERNEL:-}" ] && [ "$ELAN_INSTALLED" = 1 ] &&
	[ -f "$ELAN_PKGLIBDIR/guest/bzImage" ]; then
	ELAN_DEFAULT_KERNEL=$ELAN_PKGLIBDIR/guest
fi
ELAN_PROG=${ELAN_PROG:-$(basename "$0")}
ELAN_QEMU_BIN=${ELAN_QEMU_BIN:-qemu-system-x86_64}

elan_say() { echo "$ELAN_PROG: $*" >&2; }
elan_die() { echo "$ELAN_PROG: error: $*" >&2; exit 2; }
# Time in microseconds, without a fork (the poll loops run beside a TCG
# guest on a small machine).
elan_now() { local t=${EPOCHREALTIME//[.,]/}; echo "$t"; }
elan_now_us() { ELAN_NOW=${EPOCHREALTIME//[.,]/}; }
# elapsed START [END]: seconds since START (from elan_now), one decimal
elan_elapsed() {
	local d=$(( ${2:-${EPOCHREALTIME//[.,]/}} - $1 ))
	printf '%d.%d' $((d / 1000000)) $((d % 1000000 / 100000))
}

elan_need() { # command package
	command -v "$1" >/dev/null 2>&1 ||
		elan_die "'$1' not found; install it with: apt-get install $2"
}

# ---------------------------------------------------------------- cleanup
ELAN_CLEANUP_PIDS=()
ELAN_CLEANUP_FILES=()
ELAN_CLEANUP_DIRS=()
ELAN_CLEANING=0

elan_cleanup_pid() { ELAN_CLEANUP_PIDS+=("$1"); }
elan_cleanup_file() { ELAN_CLEANUP_FILES+=("$1"); }
elan_cleanup_dir() { ELAN_CLEANUP_DIRS+=("$1"); }

# Stop a process we started: TERM, then KILL after a grace period.
elan_stop_pid() { # pid [grace seconds]
	local pid=$1 grace=${2:-3} i
	kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < grace * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

elan_cleanup() {
	[ "$ELAN_CLEANING" = 1 ] && return 0
	ELAN_CLEANING=1
	local p
	for p in "${ELAN_CLEANUP_PIDS[@]}"; do elan_stop_pid "$p"; done
	for p in "${ELAN_CLEANUP_FILES[@]}"; do rm -f -- "$p"; done
	for p in "${ELAN_CLEANUP_DIRS[@]}"; do rm -rf -- "$p"; done
	return 0
}

# The EXIT trap does the work; a signal exits with 128+n so it runs.
elan_install_traps() {
	trap 'elan_cleanup' EXIT
	trap 'elan_say "interrupted"; exit 130' INT
	trap 'elan_say "terminated"; exit 143' TERM
	trap 'exit 129' HUP
}

# ---------------------------------------------------------------- inputs
elan_resolve_kernel() { # file-or-dir -> bzImage path
	local k=$1
	[ -d "$k" ] && k=$k/bzImage
	if [ ! -f "$k" ]; then
		elan_say "no guest kernel at $k"
		elan_say "build it with kernel/build.sh (artifacts land in $ELAN_CACHE/guest), or pass --kernel"
		[ "$ELAN_INSTALLED" = 0 ] || elan_say "(make install copies it to $ELAN_PKGLIBDIR/guest when it is built)"
		exit 2
	fi
	readlink -f "$k"
}

# The modules of a kernel that needs some to boot a guest: $ELAN_KERNEL_MODULES,
# else for a packaged kernel /boot/vmlinuz-VERSION its /lib/modules/VERSION
# (Debian's linux-image-amd64: virtio, 9p and the network are modules);
# nothing for ours (built in).
elan_kernel_modules() { # kernel
	local v
	if [ -n "${ELAN_KERNEL_MODULES:-}" ]; then
		echo "$ELAN_KERNEL_MODULES"
		return
	fi
	v=$(basename "$1")
	case "$v" in vmlinuz-*) ;; *) return 0 ;; esac
	v=/lib/modules/${v#vmlinuz-}
	[ -r "$v/modules.dep" ] && echo "$v"
	return 0
}

elan_initramfs() { # kernel
	local m
	m=$(elan_kernel_modules "$1")
	"$ELAN_LIB_DIR/mkinitramfs" ${m:+--modules "$m"} | tail -1
}

# ---------------------------------------------------------------- guest RAM
# Files are named elan-<harness pid>-<name>-<random>; the pid lets a later
# run remove the file of a harness that was SIGKILLed (no trap ran).
elan_shm_path() { # name
	local dir=${ELAN_SHM_DIR:-/dev/shm}
	{ [ -d "$dir" ] && [ -w "$dir" ]; } || elan_die "$dir is not a writable directory (guest RAM is a file there)"
	echo "$dir/elan-$$-$1-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
}

# Temporary run dirs are named the same way: elan-run-<harness pid>-XXXXXX.
elan_temp_rundir() {
	mktemp -d "${TMPDIR:-/tmp}/elan-run-$$-XXXXXX"
}

elan_sweep_stale() {
	local f pid
	for f in "${ELAN_SHM_DIR:-/dev/shm}"/elan-* "${TMPDIR:-/tmp}"/elan-run-*; do
		[ -e "$f" ] || continue
		pid=${f##*/elan-}
		pid=${pid#run-}
		pid=${pid%%-*}
		case "$pid" in '' | *[!0-9]*) continue ;; esac
		kill -0 "$pid" 2>/dev/null && continue
		if [ -d "$f" ]; then
			elan_say "removing stale run dir $f (its harness, pid $pid, is gone)"
			rm -rf -- "$f"
		else
			elan_say "removing stale guest RAM file $f (its harness, pid $pid, is gone)"
			rm -f -- "$f"
		fi
	done
}

# ---------------------------------------------------------------- command
elan_quote() { # arg -> single-quoted for sh
	local s=$1
	printf "'%s'" "${s//\'/\'\\\'\'}"
}

# elan_write_cmd DIR [--env NAME=VALUE]... -- ARGS...
elan_write_cmd() {
	local dir=$1
	shift
	{
		echo '# written by cluster/guest-run; run by the guest'"'"'s /init with cwd = workdir'
		while [ $# -gt 0 ] && [ "$1" != -- ]; do
			echo "export $(elan_quote "$1")"
			shift
		done
		[ "${1:-}" = -- ] && shift
		printf 'exec'
		local a
		for a in "$@"; do printf ' %s' "$(elan_quote "$a")"; done
		echo
	} > "$dir/cmd"
}

# ---------------------------------------------------------------- QEMU
# A run dir (host side) holds console.log, qemu.stderr, qmp.sock, the
# command's stdout and stderr, and share/, which the guest mounts at
# /run/elan (tag "run"): cmd, exit-status and whatever the command leaves.
elan_rundir_init() { # dir
	mkdir -p "$1/share"
	rm -f "$1/share/cmd" "$1/share/exit-status" "$1/qmp.sock"
	: > "$1/stdout"
	: > "$1/stderr"
	: > "$1/qemu.stderr"
}

# elan_qemu_args: set the variables below, call it, then append devices to
# ELAN_QEMU (the cluster adds its network and ivshmem devices that way).
#   G_NAME G_MEM G_SMP G_ACCEL G_KERNEL G_INITRD G_MEMFILE G_RUNDIR
#   G_WORKDIR (may be empty) G_APPEND (extra kernel args)
#   G_CONSOLE  "file:PATH" (batch) or "stdio:LOGPATH" (interactive)
#   G_OUTPUT   "split": the command's stdout/stderr go to virtio consoles
#              hvc0/hvc1 = G_RUNDIR/stdout and G_RUNDIR/stderr;
#              "console": they go to the serial console with the kernel's
#              messages
elan_qemu_args() {
	# no_timer_check: a busy host (several TCG guests on few cores) can
	# make the boot-time IO-APIC timer check fail and panic the guest.
	# rcu_cpu_stall_timeout=60 (21 s by default): on such a host a vCPU
	# thread can wait that long for a core (a stall seen in clear_page
	# during a fault, host load 13 on 2 cores); longer stalls are still
	# reported, and fail the stages.
	local append="console=ttyS0 panic=-1 oops=panic numa=fake=2 no_timer_check rcupdate.rcu_cpu_stall_timeout=60 elanvm.hostname=$G_NAME"
	[ -n "$G_WORKDIR" ] && append+=" elanvm.workdir=$G_WORKDIR"
	[ "$G_OUTPUT" = console ] && append+=" elanvm.output=console"
	[ -n "$G_APPEND" ] && append+=" $G_APPEND"
	# elan.ko's mode in the guests (guest-init: /etc/elan/insmod.args)
	[ -n "${ELAN_DRIVER_MODE:-}" ] && append+=" elanvm.driver_mode=$ELAN_DRIVER_MODE"
	# more kernel parameters for every guest (tests/debug: kasan_multi_shot)
	[ -n "${ELAN_GUEST_APPEND:-}" ] && append+=" $ELAN_GUEST_APPEND"
	local accel
	case "$G_ACCEL" in
	tcg) accel="tcg,thread=multi" ;;
	kvm) accel=kvm ;;
	*) elan_die "accelerator must be tcg or kvm, not '$G_ACCEL'" ;;
	esac
	ELAN_QEMU=(
		"$ELAN_QEMU_BIN"
		-name "$G_NAME,debug-threads=on"
		-machine q35,memory-backend=ram
		-accel "$accel"
		-cpu max
		-smp "$G_SMP"
		-m "$G_MEM"
		-object "memory-backend-file,id=ram,size=$G_MEM,mem-path=$G_MEMFILE,share=on"
		-nographic -nodefaults -no-reboot
		-kernel "$G_KERNEL" -initrd "$G_INITRD"
		-append "$append"
		-device virtio-rng-pci
		-fsdev "local,id=fs_hostusr,path=/usr,security_model=none,readonly=on,multidevs=remap"
		-device virtio-9p-pci,fsdev=fs_hostusr,mount_tag=hostusr
		-fsdev "local,id=fs_hostetc,path=/etc,security_model=none,readonly=on,multidevs=remap"
		-device virtio-9p-pci,fsdev=fs_hostetc,mount_tag=hostetc
		-fsdev "local,id=fs_run,path=$G_RUNDIR/share,security_model=none,multidevs=remap"
		-device virtio-9p-pci,fsdev=fs_run,mount_tag=run
	)
	# A QMP socket for whoever needs to drive QEMU (sun_path is 108 bytes).
	if [ ${#G_RUNDIR} -lt 96 ]; then
		ELAN_QEMU+=(-qmp "unix:$G_RUNDIR/qmp.sock,server=on,wait=off")
	fi
	if [ -n "$G_WORKDIR" ]; then
		ELAN_QEMU+=(
			-fsdev "local,id=fs_work,path=$G_WORKDIR,security_model=none,multidevs=remap"
			-device virtio-9p-pci,fsdev=fs_work,mount_tag=work
		)
	fi
	case "$G_CONSOLE" in
	file:*)
		ELAN_QEMU+=(-chardev "file,id=con,path=${G_CONSOLE#file:}" -serial chardev:con) ;;
	stdio:*)
		ELAN_QEMU+=(-chardev "stdio,id=con,mux=on,signal=off,logfile=${G_CONSOLE#stdio:}"
			-serial chardev:con -mon chardev=con,mode=readline) ;;
	*) elan_die "bad console spec '$G_CONSOLE'" ;;
	esac
	if [ "$G_OUTPUT" = split ]; then
		ELAN_QEMU+=(
			-device virtio-serial-pci,id=vser
			-chardev "file,id=out,path=$G_RUNDIR/stdout"
			-device virtconsole,bus=vser.0,chardev=out,nr=0
			-chardev "file,id=err,path=$G_RUNDIR/stderr"
			-device virtconsole,bus=vser.0,chardev=err,nr=1
		)
	fi
}

# Copy a file QEMU writes to one of our fds while QEMU runs, then to its
# end.  Returns at once; elan_stream_wait waits for all copies to finish.
ELAN_STREAM_PIDS=()
elan_stream() { # file fd qemu-pid
	# shellcheck disable=SC2261 # stdout to fd $2, tail's own errors dropped
	tail -n +1 -s 0.1 -f --pid="$3" "$1" >&"$2" 2>/dev/null &
	ELAN_STREAM_PIDS+=($!)
	elan_cleanup_pid $!
}
elan_stream_wait() {
	local p
	for p in "${ELAN_STREAM_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}

# QEMU dies with the harness even on SIGKILL (parent-death signal); the
# trap stops it otherwise.  Sets ELAN_QEMU_PID.
elan_qemu_start() { # stderr-file
	setpriv --pdeathsig KILL -- "${ELAN_QEMU[@]}" </dev/null >>"$1" 2>&1 &
	ELAN_QEMU_PID=$!
	elan_cleanup_pid "$ELAN_QEMU_PID"
}

# A cluster node outlives the command that started it: its own session
# (no terminal signals), no parent-death signal.  setsid does not fork
# here (we are not a process group leader), so $! is QEMU's pid.  Sets
# ELAN_QEMU_PID and writes it to RUNDIR/qemu.pid; QEMU's own output goes
# to RUNDIR/qemu.stderr.
elan_qemu_start_detached() { # rundir
	setsid -- "${ELAN_QEMU[@]}" </dev/null >>"$1/qemu.stderr" 2>&1 &
	ELAN_QEMU_PID=$!
	echo "$ELAN_QEMU_PID" > "$1/qemu.pid"
}

# Does PID run a command whose command line contains STRING?  (Guards
# pid files against reuse of the pid by an unrelated process.)
elan_pid_is() { # pid string
	local -a argv
	[[ "$1" =~ ^[1-9][0-9]*$ ]] || return 1
	mapfile -d '' -t argv 2>/dev/null < "/proc/$1/cmdline" || return 1
	[[ "${argv[*]}" == *"$2"* ]]
}

# TERM all, wait up to GRACE seconds for all, KILL the rest.
elan_stop_pids() { # grace pid...
	local grace=$1 p i alive
	shift
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null || true
	for ((i = 0; i < grace * 10; i++)); do
		alive=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && break
		sleep 0.1
	done
	kill -KILL "$@" 2>/dev/null || true
	for p in "$@"; do
		for ((i = 0; i < 50; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		wait "$p" 2>/dev/null || true
	done
}

# One QMP command on a QEMU's control socket (cluster/qmp, built from
# cluster/qmp.c by make).
elan_qmp() { # socket command [json-arguments]
	"$ELAN_LIB_DIR/qmp" "$@"
}

# Kernel trouble in a console log, each line with the printk time stamp
# so that program output cannot fake it: panics, oopses, BUGs (KASAN's
# "BUG: KASAN: ..." too), WARNINGs (lockdep's "WARNING: possible circular
# locking dependency detected" and friends), lockdep's and the hung-task
# and RCU-stall "INFO: ..." reports, UBSAN and kmemleak.
ELAN_KERNEL_PROBLEM_RE='^\[ *[0-9]+\.[0-9]+\] (Kernel panic|BUG:|kernel BUG|Oops|WARNING:|general protection fault|Unable to handle|RIP:|watchdog: BUG|INFO: |rcu: INFO: |UBSAN: |kmemleak: [0-9]+ new suspected|possible circular locking|possible recursive locking)'
elan_kernel_problems() { # log
	grep -a -E "$ELAN_KERNEL_PROBLEM_RE" "$1" 2>/dev/null | tr -d '\r' || true
}

# Logs worth keeping after their run dir goes (failed runs) land in
# ELAN_LOG_DIR (default $ELAN_CACHE/logs); only the newest ELAN_KEEP_LOGS
# (default 30) stay.
elan_keep_log() { # file label -> kept path
	local dir=${ELAN_LOG_DIR:-$ELAN_CACHE/logs} keep=${ELAN_KEEP_LOGS:-30} dest
	mkdir -p "$dir"
	dest=$dir/$2-$(date +%Y%m%d-%H%M%S)-$$-$RANDOM.log
	cp -- "$1" "$dest" 2>/dev/null || : > "$dest"
	# Newest first; names carry no white space (labels are node names).
	find "$dir" -maxdepth 1 -type f -name '*.log' -printf '%T@ %p\n' |
		sort -rn | tail -n +"$((keep + 1))" | cut -d' ' -f2- |
		while read -r old; do rm -f -- "$old"; done
	echo "$dest"
}

elan_marker() { # log -> status or nothing
	grep -a -m1 -E '^ELAN-EXIT=[0-9]+' "$1" 2>/dev/null | tr -dc '0-9=' | cut -d= -f2 || true
}

# elan_wait_guest PID LOG TIMEOUT [STATUSFILE]
# Waits until QEMU exits, the timeout passes, or the marker appeared and
# QEMU did not power off within 15 s.  Sets ELAN_RESULT (exit code, see
# the top), ELAN_REASON (one line) and ELAN_MARKER_SECS (time to the
# marker since the call, empty if none).
elan_wait_guest() {
	local pid=$1 log=$2 timeout=$3 statusfile=${4:-} t0 marker='' marker_at=0 rc
	t0=$(elan_now)
	ELAN_MARKER_SECS=
	while kill -0 "$pid" 2>/dev/null; do
		elan_now_us
		if [ -z "$marker" ] && grep -a -q -m1 '^ELAN-EXIT=' "$log" 2>/dev/null; then
			marker=$(elan_marker "$log")
			marker_at=$ELAN_NOW
			ELAN_MARKER_SECS=$(elan_elapsed "$t0" "$ELAN_NOW")
		fi
		if [ -n "$marker" ] && (( ELAN_NOW - marker_at > 15000000 )); then
			elan_say "guest did not power off 15 s after its marker; stopping QEMU"
			elan_stop_pid "$pid"
			break
		fi
		if [ "$timeout" != 0 ] && (( ELAN_NOW - t0 > timeout * 1000000 )); then
			elan_stop_pid "$pid"
			ELAN_RESULT=124
			ELAN_REASON="timed out after ${timeout}s; QEMU killed"
			return 0
		fi
		sleep 0.1
	done
	wait "$pid" 2>/dev/null && rc=0 || rc=$?
	if [ -z "$marker" ]; then
		marker=$(elan_marker "$log")
		[ -n "$marker" ] && ELAN_MARKER_SECS=$(elan_elapsed "$t0")
	fi
	if [ -n "$marker" ]; then
		ELAN_RESULT=$marker
		ELAN_REASON="command exited with status $marker"
	elif [ -n "$(elan_kernel_problems "$log")" ]; then
		ELAN_RESULT=125
		ELAN_REASON="guest kernel crashed before the command finished: $(elan_kernel_problems "$log" | head -1)"
	elif [ -n "$statusfile" ] && [ -s "$statusfile" ]; then
		ELAN_RESULT=$(tr -dc 0-9 < "$statusfile")
		ELAN_REASON="command exited with status $ELAN_RESULT (marker missing from the console; status from the run share)"
	else
		ELAN_RESULT=126
		ELAN_REASON="QEMU exited with status $rc and the guest printed no ELAN-EXIT marker"
	fi
}

# ---------------------------------------------------------------- paths
# A host directory the guest mounts at the same path must be absolute,
# free of white space (it goes on the kernel command line or into sh
# files) and must not hide anything the guest needs.
elan_check_guest_path() { # what path
	[[ "$2" =~ ^/[^[:space:]]*$ ]] || elan_die "$1 '$2' must be an absolute path without white space"
	case "$2" in
	/ | /usr | /usr/* | /etc | /etc/* | /host* | /proc | /proc/* | /sys | /sys/* | /dev | /dev/* | /run | /run/elan | /run/elan/* | /run/elan-ssh* | /run/sshd* | /root | /busybox*)
		elan_die "$1 $2 would hide a directory the guest needs" ;;
	esac
}

# ---------------------------------------------------------------- accel
elan_accel() { # tcg|kvm|auto kernel
	case "$1" in
	tcg | kvm) echo "$1" ;;
	auto) "$ELAN_LIB_DIR/kvm-probe" --kernel "$2" | tail -1 ;;
	*) elan_die "--accel must be tcg, kvm or auto, not '$1'" ;;
	esac
}
