# shellcheck shell=bash
# The library every stage's check sources (tests/STAGE/check), and
# tests/run-tests too: results in TAP, the stage's scratch directory and
# clean-up, clusters, mpirun in the guests, what the driver holds, "is it
# built".  In the spirit of the kernel's selftests
# (tools/testing/selftests/net/forwarding/lib.sh): sourcing it defines
# and sets, it runs nothing; a stage calls stage_init first.
#
# Results (TAP, https://testanything.org):
#   ok 1 - NAME
#   not ok 2 - NAME
#   #   a diagnostic line
#   1..2                   (the plan, at the end: finish prints it)
#   1 passed, 1 failed     (for people, and the exit status follows it)
# tests/run-tests reads a stage's log with tap_count: the results
# counted, the plan checked.  A line of another program that a stage shows
# is shown as a diagnostic ("# ..."), or taken as results with tap_import,
# never left at the start of a line where it could pass for a result.

# shellcheck disable=SC2034 # the variables are the stages'
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ec=$repo/cluster/elan-cluster

# ------------------------------------------------------------ results

tap_n=0 passed=0 failed=0
# A file whose last lines not_ok shows (a stage's stderr capture).
tap_stderr=

ok() { # name
	tap_n=$((tap_n + 1)) passed=$((passed + 1))
	echo "ok $tap_n - $1"
}

# not_ok NAME [DETAIL...]: each line of each detail a diagnostic; then
# the last 25 lines of $tap_stderr when it is set and not empty.
not_ok() {
	local l
	tap_n=$((tap_n + 1)) failed=$((failed + 1))
	echo "not ok $tap_n - $1"
	shift
	for l in "$@"; do
		if [ -n "$l" ]; then sed 's/^/#   /' <<<"$l"; fi
	done
	if [ -n "$tap_stderr" ] && [ -s "$tap_stderr" ]; then
		sed 's/^/#   stderr: /' "$tap_stderr" | tail -25
	fi
	return 0
}

# result NAME RC [DETAIL...]: ok when RC is 0, else not ok, the exit
# status named.
result() {
	local name=$1 rc=$2
	shift 2
	if [ "$rc" = 0 ]; then
		ok "$name"
	else
		not_ok "$name (exit $rc)" "$@"
	fi
}

# diag CMD...: run CMD, its output (stdout and stderr) shown as
# diagnostics; its exit status returned.
diag() {
	"$@" 2>&1 | sed 's/^/# /'
	return "${PIPESTATUS[0]}"
}

# The plan, the summary line, and the stage's exit: 0 when nothing failed.
finish() {
	echo "# ${stage:-stage}: ${SECONDS}s"
	echo "1..$tap_n"
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
	exit
}

# tap_count FILE: the results in a TAP stream: tap_pass and tap_fail (the
# "ok N" and "not ok N" lines), tap_plan (the N of "1..N", or empty when
# there is none).  The one reader of results: tests/run-tests uses it on
# each stage's log, tap_import on a program's output.
tap_count() {
	read -r tap_pass tap_fail tap_plan < <(awk '
		/^ok [0-9]+( |$)/ { p++ }
		/^not ok [0-9]+( |$)/ { f++ }
		/^1\.\.[0-9]+[ \t]*$/ { plan = substr($1, 4) + 0 }
		END { print p + 0, f + 0, (plan == "" ? "-" : plan) }' "$1")
	[ "$tap_plan" != - ] || tap_plan=
}

# tap_import NAME RC FILE: the output of test program NAME (in FILE, its
# exit status RC) taken as results of the stage: each "ok ..." line (TAP,
# or "ok NAME" as ioproc_selftest prints) one ok, each "not ok ..." or
# "FAIL ..." line one not ok, renumbered and prefixed with NAME; the rest
# shown as diagnostics.  A program that failed without a failed result
# is one failure more.
tap_import() {
	local name=$1 rc=$2 file=$3 line f0=$failed
	while IFS= read -r line; do
		if [[ "$line" =~ ^ok\ +([0-9]+\ +-\ +)?(.*)$ ]]; then
			ok "$name: ${BASH_REMATCH[2]}"
		elif [[ "$line" =~ ^not\ ok\ +([0-9]+\ +-\ +)?(.*)$ ]] ||
			[[ "$line" =~ ^FAIL\ +(.*)$ ]]; then
			not_ok "$name: ${BASH_REMATCH[-1]}"
		else
			echo "# $line"
		fi
	done <"$file"
	if [ "$rc" != 0 ] && [ "$failed" = "$f0" ]; then
		not_ok "$name exited $rc without a failed result"
	fi
	return 0
}

# ------------------------------------------------------------ the stage

# stage_init NAME: the stage's scratch directory $tmp (removed at exit),
# the clean-up at exit (stage_cleanup, if the stage defines it, after the
# clusters are down and the background jobs killed), INT and TERM ending
# the stage with 130 and 143.
stage_init() {
	stage=$1
	tmp=$(mktemp -d "/tmp/elan-$1-check.XXXXXX")
	trap lib_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# Background jobs (bg_track PID, and the stage's current one, $bgpid)
# are killed at exit; clusters (cluster_track NAME) taken down.
bg_pids=() clusters=()
bg_track() { bg_pids+=("$1"); }
cluster_track() { clusters+=("$1"); }

lib_cleanup() {
	local p n
	set +e	# (the stages with set -e: every step of the clean-up runs)
	for p in "${bg_pids[@]}" ${bgpid:-}; do kill -KILL "$p" 2>/dev/null; done
	for n in "${clusters[@]}"; do
		[ -d "${ELAN_RUN:-/tmp}/elan-cluster-$n" ] &&
			"$ec" down --name "$n" --allow-kernel-warnings >/dev/null 2>&1
	done
	if declare -F stage_cleanup >/dev/null; then stage_cleanup || true; fi
	[ -z "${tmp:-}" ] || rm -rf "$tmp"
	return 0
}

# require HINT FILE...: every FILE exists, or one failed result naming
# those missing (and HINT: how to build them), and the stage ends.
require() {
	local hint=$1 f absent=()
	shift
	for f in "$@"; do [ -e "$f" ] || absent+=("$f"); done
	[ ${#absent[@]} = 0 ] && return 0
	not_ok "built: $*" "missing: ${absent[*]} ($hint)"
	finish
}

# guest_artifact: the guest kernel's build (kernel/build.sh), by version:
# ELAN_KERNEL's, else this checkout's default.
guest_artifact() {
	echo "${ELAN_CACHE:-$HOME/.cache/elan}/guest-$("$repo/kernel/build.sh" --print-kernel)"
}

# guest_kernel [--kernel BZIMAGE|DIR]: the stages that boot guests take
# that option; the kernel in $kernel, the option for the harness in
# kargs.  No kernel: a failed result, the stage ends.
guest_kernel() {
	kargs=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel) kargs=(--kernel "$2"); shift 2 ;;
		*) echo "$stage tests: unknown argument '$1'" >&2; exit 2 ;;
		esac
	done
	kernel=$(guest_artifact)/bzImage
	[ ${#kargs[@]} = 0 ] || kernel=${kargs[1]}
	[ -d "$kernel" ] && kernel=$kernel/bzImage
	require "run kernel/build.sh first" "$kernel"
	echo "# kernel: $(readlink -f "$kernel")"
}

# ------------------------------------------------------------ clusters
# The current cluster is $name (elan-cluster's --name).

# cluster_up NODES NAME [up args...]: a cluster with the Elan NIC, tracked
# (taken down at exit), the current one; its stderr in $tmp/up.
cluster_up() {
	local nodes=$1
	name=$2
	shift 2
	cluster_track "$name"
	"$ec" up --name "$name" -n "$nodes" --nic "$@" >/dev/null 2>"$tmp/up"
}

# on NODE CMD...: run in a guest of the current cluster.
on() {
	local node=$1
	shift
	"$ec" run --name "$name" --node "$node" -- "$@"
}

# mpirun_in [--cwd DIR] SECONDS BTLS NP ARGS...: mpirun in the current
# cluster over the BTLs BTLS (the cluster's mca-params.conf gives ob1, and
# osc dynwin, osc rdma's patched copy, over an RDMA-capable BTL); output
# in $tmp/out, status in $rc,
# seconds in $secs.  A job that outlives SECONDS is killed and fails.
mpirun_in() {
	local cwd=() limit btls np t0=$EPOCHREALTIME
	if [ "$1" = --cwd ]; then cwd=(--cwd "$2"); shift 2; fi
	limit=$1 btls=$2 np=$3
	shift 3
	# (in the background: wait lets INT/TERM reach the trap at once)
	timeout -k 10 "$limit" "$ec" run --name "$name" "${cwd[@]}" -- \
		mpirun --allow-run-as-root -np "$np" --mca btl "$btls" "$@" >"$tmp/out" 2>&1 &
	wait $!
	rc=$?
	secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	[ "$rc" = 124 ] && echo "TIMEOUT after ${limit}s" >>"$tmp/out"
	return 0
}

# ------------------------------------------------------------ waits
# For stages that run guest programs in the background and time faults
# (faults, hosts).

now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
# bg OUT node cmd...: a guest command in the background; its pid in $bgpid
bg() {
	local out=$1
	shift
	# emptied here, not by the background job's redirection: a wait_out
	# right after must not find the last run's lines in it
	: >"$out"
	on "$@" >"$out" 2>&1 &
	bgpid=$!
	bg_track "$bgpid"
}
# wait_out FILE REGEX SECS: until FILE has a line matching REGEX
wait_out() {
	local t0=$SECONDS
	until grep -qE "$2" "$1" 2>/dev/null; do
		[ $((SECONDS - t0)) -ge "$3" ] && return 1
		sleep 0.3
	done
}
# reap PID SECS: its exit status in $rc, or rc=hung (and killed) after SECS
reap() {
	local t0=$SECONDS
	while kill -0 "$1" 2>/dev/null; do
		if [ $((SECONDS - t0)) -ge "$2" ]; then
			kill -KILL "$1" 2>/dev/null
			wait "$1" 2>/dev/null
			rc=hung
			return
		fi
		sleep 0.3
	done
	wait "$1"
	rc=$?
}
last() { tail -1 "$1" 2>/dev/null; }
# info_field NAME FIELD: a field of the .info file tests/faults/fault_elan
# writes into the rendezvous dir $rdv
info_field() { awk -v f="$2" '{ print $f }' "$rdv/$1.info" 2>/dev/null; }

# ------------------------------------------------------------ holdings
# What the driver and the kernel hold on a node, one line of
# tests/driver/holdings: "attached N referenced N pinned N translations N
# dead N quarantined N".

# holdings NODE: that line, from a guest of the current cluster.
holdings() {
	on "$1" tests/driver/holdings 2>&1
}

# holds_nothing LINE: the line says nothing is held: no context attached,
# no page referenced by the driver or pinned, none quarantined (unless
# $nicd_gone=1: a nicd killed inside a chunk never ends it, so its pages
# stay kept, driver/README.md); with $strict=1 also no valid NIC MMU
# entry and the NIC alive.
holds_nothing() {
	if [ "${strict:-0}" = 1 ]; then
		[ "$1" = "attached 0 referenced 0 pinned 0 translations 0 dead 0 quarantined 0" ]
		return
	fi
	[[ "$1" == "attached 0 referenced 0 pinned 0 "* ]] || return 1
	[ "${nicd_gone:-0}" = 1 ] || [[ "$1" == *" quarantined 0" ]]
}

# nothing_held NODE...: true when no node holds anything (holds_nothing)
# within $settle seconds (15: a killed process's files are closed a moment
# after it dies); what each holds in $held.
nothing_held() {
	local t0=$SECONDS i h all
	while :; do
		all=1 held=''
		for i in "$@"; do
			h=$(holdings "$i")
			held="${held}node$i: $h; "
			holds_nothing "$h" || all=0
		done
		[ "$all" = 1 ] && return 0
		[ $((SECONDS - t0)) -ge "${settle:-15}" ] && return 1
		sleep 1
	done
}

# check_nothing_held LABEL NODE...: nothing_held as a result.
check_nothing_held() {
	local label=$1
	shift
	if nothing_held "$@"; then
		ok "$label: no context left, no page referenced by the driver or pinned (${held%; })"
	else
		not_ok "$label: something is still held" "$held"
	fi
}
