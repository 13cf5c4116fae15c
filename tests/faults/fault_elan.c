// SPDX-License-Identifier: GPL-2.0
/*
 * fault_elan: libelan traffic for the fault-injection stage
 * (tests/faults/check), in three roles that meet through files in a
 * directory every node sees (DIR, on the repository share):
 *
 *   fault_elan target DIR NAME
 *	Attaches, fills an 8 MiB source region with a pattern, zeroes a
 *	8 MiB destination region, writes DIR/NAME.info (NIC address,
 *	regions, pid) and waits, passively, until an initiator's "check"
 *	message: then it verifies that its destination holds the
 *	initiator's pattern and its source is untouched, and exits 0 (1 if
 *	not).  Exits 3 when its context fails (the NIC went down).
 *
 *   fault_elan initiator DIR NAME [-t SECS] [-l KIND] [-b] [-v]
 *	Keeps 8 operations of 1 MiB in flight against NAME (puts into its
 *	destination, gets from its source, each get checked byte for byte
 *	with guard pages around it) and prints "round N ok" every 8.
 *	Without -l: every operation must succeed for SECS seconds (or until
 *	DIR/NAME.stop exists); then a last put of the whole destination and
 *	the check message.  With -l KIND the target is to be lost (the test
 *	kills it) within SECS: KIND "target" (its process killed: each op in
 *	flight ends in TARGET_GONE, NO_CONTEXT or REMOTE_FAULT), "node" (its
 *	node killed: NODE_DOWN) or "nic" (our own NIC killed: no more events,
 *	the context fails with NODE_DOWN, posting and elan_open fail).
 *	The first error is printed at once ("first error: STATUS"), the
 *	moment a stage times the loss by.  Every op in flight must end, in
 *	a named error, within 60 s of the first error; a get that ended
 *	early must hold the source's bytes up to the length the event
 *	reports and nothing after them; later ops
 *	to the lost target must fail the same way.  -b: then meet a
 *	bystander on the lost target's node (below), posting puts to the
 *	dead process's addresses while it fills its memory.  -v: print
 *	every completion.
 *
 *   fault_elan bystander DIR NAME [-m MIB]
 *	Waits for DIR/NAME.lost, then fills 256 MiB, or MIB (0: all of
 *	MemAvailable but 64 MiB), in small pages, a thread per CPU (the
 *	killed target's pages are free again: this process likely gets
 *	some of them),
 *	writes DIR/NAME.filled, waits for DIR/NAME.done and checks that
 *	nothing changed its memory: a NIC that still wrote through the dead
 *	process's translations would show here.
 *
 * FAULTS_BROKEN in the environment breaks a role on purpose, to show
 * the checks fail: "corrupt" flips a byte of the target's source (the
 * initiator's data check must fail) and of the bystander's memory;
 * "leak" makes the target fork a child that keeps its /dev/elan0 file
 * open (a context that outlives the process) and pins 1 MiB with
 * io_uring registered buffers (the test's leak checks must fail; the
 * child's pid is in the info file so the test can end it).
 *
 * Every role prints one last line "NAME ROLE: ok ..." or "NAME ROLE:
 * FAIL ..." and exits 0 only on success.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/io_uring.h>

#include "elan_testlib.h"

#define REGION		(8 * MiB)	/* target source and destination */
#define OPSZ		(1 * MiB)
#define DEPTH		8		/* operations in flight */
#define GUARD		4096UL
#define PREFILL		0x5a		/* get buffers before the NIC writes */
#define GUARD_BYTE	0xa5
#define LOSS_BOUND	60.0		/* s from the first error to the last */
#define PUT_SEED	0x1234567ULL

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)	__attribute__((format(printf, a, b)))

enum { TAG_CHECK = 0xfa17 };

struct info {
	uint32_t addr;
	uint64_t src, dst, seed;
	int pid, child;
};

struct check_msg {
	uint64_t seed, len;
};

static const char *g_name = "?", *g_role = "?";

static int broken(const char *what)
{
	const char *b = getenv("FAULTS_BROKEN");

	return b && !strcmp(b, what);
}

/* The last line of every role. */
static int verdict(int ok, const char *fmt, ...)
	__printf(2, 3);
static int verdict(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s: %s ", g_name, g_role, ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return ok ? 0 : 1;
}

/*
 * A job key of its own per NAME: a later target in the same slot never
 * receives what was meant for an earlier one.
 */
static uint64_t cap_of(const char *name)
{
	uint64_t h = 0xfa17000000000000ULL;

	while (*name)
		h = (h ^ (uint8_t)*name++) * 0x100000001b3ULL;
	return h;
}

static void path_of(char *buf, size_t n, const char *dir, const char *name,
		    const char *ext)
{
	snprintf(buf, n, "%s/%s.%s", dir, name, ext);
}

static void touch(const char *dir, const char *name, const char *ext)
{
	char p[4096];
	int fd;

	path_of(p, sizeof(p), dir, name, ext);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
}

static int exists(const char *dir, const char *name, const char *ext)
{
	char p[4096];

	path_of(p, sizeof(p), dir, name, ext);
	return access(p, F_OK) == 0;
}

/* Wait up to @secs for DIR/NAME.EXT; 1 when it is there. */
static int wait_file(const char *dir, const char *name, const char *ext,
		     double secs)
{
	double end = t_now() + secs;

	while (!exists(dir, name, ext)) {
		if (t_now() > end)
			return 0;
		usleep(50000);
	}
	return 1;
}

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		verdict(0, "mmap of %zu bytes: %s", len, strerror(errno));
		exit(1);
	}
	return p;
}

/* ------------------------------------------------------------ target */

/* FAULTS_BROKEN=leak: a child that holds our context and pinned pages. */
static int leak_child(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct io_uring_params p = { 0 };
		struct iovec iov = { .iov_len = MiB };
		int fd = (int)syscall(__NR_io_uring_setup, 4, &p);

		iov.iov_base = map_anon(MiB);
		memset(iov.iov_base, 1, MiB);
		if (fd < 0 || syscall(__NR_io_uring_register, fd,
				      IORING_REGISTER_BUFFERS, &iov, 1) < 0)
			printf("FAULTS_BROKEN=leak: io_uring buffers: %s\n",
			       strerror(errno));
		for (;;)
			pause();
	}
	printf("FAULTS_BROKEN=leak: child %d keeps the context and pins 1 MiB\n",
	       (int)pid);
	return (int)pid;
}

static int write_info(const char *dir, const char *name, const struct info *in)
{
	char p[4096], tmp[4096];
	FILE *f;

	path_of(p, sizeof(p), dir, name, "info");
	path_of(tmp, sizeof(tmp), dir, name, "info.tmp");
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%u %" PRIx64 " %" PRIx64 " %" PRIx64 " %d %d\n", in->addr,
		in->src, in->dst, in->seed, in->pid, in->child);
	if (fclose(f) || rename(tmp, p))
		return -errno;
	return 0;
}

static int read_info(const char *dir, const char *name, struct info *in)
{
	char p[4096];
	FILE *f;
	int n;

	path_of(p, sizeof(p), dir, name, "info");
	f = fopen(p, "r");
	if (!f)
		return -errno;
	n = fscanf(f, "%u %" SCNx64 " %" SCNx64 " %" SCNx64 " %d %d", &in->addr,
		   &in->src, &in->dst, &in->seed, &in->pid, &in->child);
	fclose(f);
	return n == 6 ? 0 : -EINVAL;
}

/* memcmp first, bytes only to name the first difference: TCG is slow. */
static int64_t first_diff(const uint8_t *got, const uint8_t *want, size_t len)
{
	size_t i;

	if (!memcmp(got, want, len))
		return -1;
	for (i = 0; got[i] == want[i]; i++)
		;
	return (int64_t)i;
}

static int64_t first_not(const uint8_t *p, size_t len, uint8_t c)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != c)
			return (int64_t)i;
	return -1;
}

static int target_check(elan_ctx_t *c, const uint8_t *src, const uint8_t *dst,
			const struct info *in, const struct check_msg *m)
{
	uint8_t *want = map_anon(REGION);
	int64_t bad_dst, bad_src;

	(void)c;
	t_fill(want, REGION, m->seed);
	bad_dst = first_diff(dst, want, m->len < REGION ? m->len : REGION);
	t_fill(want, REGION, in->seed);
	bad_src = first_diff(src, want, REGION);
	if (bad_dst >= 0 || bad_src >= 0)
		return verdict(0, "destination differs from the initiator's pattern at %" PRId64
			       ", source changed at %" PRId64 " (-1: no difference)",
			       bad_dst, bad_src);
	return verdict(1, "destination holds the %" PRIu64 " bytes put, source untouched",
		       m->len);
}

static int run_target(const char *dir, const char *name)
{
	struct info in = { .seed = 0xfa1700ULL + (uint8_t)name[0], .pid = getpid() };
	double end = t_now() + 900;
	struct elan_recv_hdr h;
	struct elan_event ev;
	struct check_msg m;
	elan_ctx_t *c;
	uint8_t *src, *dst;
	const void *p;
	int r;

	r = elan_open(cap_of(name), &c);
	if (r)
		return verdict(0, "elan_open: %s", elan_strerror(r));
	src = map_anon(2 * REGION);
	dst = src + REGION;
	t_fill(src, REGION, in.seed);
	memset(dst, 0, REGION);
	if (broken("corrupt")) {
		src[REGION / 3] ^= 0x5a;
		printf("FAULTS_BROKEN=corrupt: flipped source byte %lu\n", REGION / 3);
	}
	in.addr = elan_addr(c);
	in.src = (uintptr_t)src;
	in.dst = (uintptr_t)dst;
	in.child = broken("leak") ? leak_child() : 0;
	r = write_info(dir, name, &in);
	if (r)
		return verdict(0, "writing the info file: %s", strerror(-r));
	printf("%s target: ready at %u:%u, pid %d\n", name,
	       ELAN_ADDR_NODE(in.addr), ELAN_ADDR_CTX(in.addr), in.pid);
	fflush(stdout);

	while (t_now() < end) {
		while (elan_poll_event(c, &ev) == 1)
			;	/* none expected: a passive target posts nothing */
		if (elan_recv(c, &h, &p) == 1) {
			if (h.tag == TAG_CHECK && h.len == sizeof(m)) {
				memcpy(&m, p, sizeof(m));
				elan_recv_release(c);
				r = target_check(c, src, dst, &in, &m);
				elan_close(c);
				return r;
			}
			elan_recv_release(c);
		}
		r = elan_wait(c, 1000);
		if (r < 0 && r != -EINTR) {
			verdict(0, "context %s (elan_wait: %s)",
				elan_state_text(c), elan_strerror(r));
			return 3;
		}
	}
	return verdict(0, "no check message within 900 s");
}

/* ------------------------------------------------------------ initiator */

struct op {
	int busy, is_get;
	uint64_t off;			/* in the target's region */
	uint8_t *buf;			/* get: its buffer, GUARD inside */
	int64_t len;			/* get: bytes the event said landed */
};

struct init_state {
	elan_ctx_t *c;
	struct info in;
	uint8_t *lput, *ref;		/* put source, the target's source */
	struct op op[DEPTH];
	unsigned int outstanding;
	uint64_t posted, done, errors, next, nputs, ngets;
	unsigned int err_count[ELAN_STATUS_MAX + 1];
	const char *lose;		/* NULL: the target must stay */
	int failed;
};

static const char *status_name(int st)
{
	static const char *const n[] = {
		"OK", "BADCMD", "LOCAL_FAULT", "LOCAL_PROT", "REMOTE_FAULT",
		"REMOTE_PROT", "NO_CONTEXT", "CAPABILITY", "TARGET_GONE",
		"NODE_DOWN", "QUEUE",
	};

	return st >= 0 && st < (int)ARRAY_SIZE(n) ? n[st] : "?";
}

/* The named errors an op to a lost target may end in, per kind. */
static int expected_loss(const char *kind, int st)
{
	if (!strcmp(kind, "target"))
		return st == ELAN_E_TARGET_GONE || st == ELAN_E_NO_CONTEXT ||
		       st == ELAN_E_REMOTE_FAULT;
	/* node: the NIC says so; nic: what it ended on its way down */
	return st == ELAN_E_NODE_DOWN;
}

static void fail(struct init_state *s, const char *fmt, ...)
	__printf(2, 3);
static void fail(struct init_state *s, const char *fmt, ...)
{
	va_list ap;

	s->failed++;
	printf("%s initiator: ", g_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Post op @i: every 4th a get, the others puts, over the whole region. */
static int post_op(struct init_state *s, unsigned int i)
{
	struct op *o = &s->op[i];
	uint64_t n = s->next++;
	int r;

	o->is_get = n % 4 == 3;
	/* gets and puts each go round the whole region */
	o->off = ((o->is_get ? s->ngets++ : s->nputs++) % (REGION / OPSZ)) * OPSZ;
	if (o->is_get) {
		memset(o->buf, PREFILL, OPSZ);
		r = elan_get(s->c, s->in.addr, o->buf, s->in.src + o->off, OPSZ,
			     i, 0);
	} else {
		r = elan_put(s->c, s->in.addr, s->lput + o->off,
			     s->in.dst + o->off, OPSZ, i, 0);
	}
	if (r == 0) {
		o->busy = 1;
		s->outstanding++;
		s->posted++;
	}
	return r;
}

/*
 * A get's buffer: the source's bytes up to len, the prefill after them,
 * guards intact.
 */
static void check_get(struct init_state *s, struct op *o, uint64_t len)
{
	int64_t bad;

	if (len > OPSZ) {
		fail(s, "get event len %" PRIu64 " > %lu", len, OPSZ);
		return;
	}
	bad = first_diff(o->buf, s->ref + o->off, len);
	if (bad >= 0)
		fail(s, "get at %#" PRIx64 ": byte %" PRId64 " of %" PRIu64
		     " landed differs from the target's source (got %#x, want %#x)",
		     o->off, bad, len, o->buf[bad], s->ref[o->off + bad]);
	bad = first_not(o->buf + len, OPSZ - len, PREFILL);
	if (bad >= 0)
		fail(s, "get at %#" PRIx64 ": byte %" PRIu64
		     " beyond the %" PRIu64 " bytes reported was written",
		     o->off, len + bad, len);
	if (first_not(o->buf - GUARD, GUARD, GUARD_BYTE) >= 0 ||
	    first_not(o->buf + OPSZ, GUARD, GUARD_BYTE) >= 0)
		fail(s, "get at %#" PRIx64 ": a guard page around the buffer was written",
		     o->off);
}

static void complete(struct init_state *s, const struct elan_event *ev)
{
	struct op *o;

	if (ev->type != ELAN_EV_DONE || ev->cookie >= DEPTH ||
	    !s->op[ev->cookie].busy) {
		fail(s, "unexpected event type %u cookie %llu", ev->type,
		     (unsigned long long)ev->cookie);
		return;
	}
	o = &s->op[ev->cookie];
	T_INFO("%s at %#" PRIx64 ": %s, %llu bytes", o->is_get ? "get" : "put",
	       o->off, status_name(ev->status), (unsigned long long)ev->len);
	o->busy = 0;
	s->outstanding--;
	s->done++;
	if (o->is_get)
		check_get(s, o, ev->status == ELAN_OK ? OPSZ : ev->len);
	if (ev->status == ELAN_OK)
		return;
	s->errors++;
	s->err_count[ev->status < ELAN_STATUS_MAX ? ev->status : ELAN_STATUS_MAX]++;
	/* at once: a stage times the loss by this line (tests/hosts) */
	if (s->errors == 1 && s->lose) {
		printf("%s initiator: first error: %s after %" PRIu64 " ops\n",
		       g_name, status_name(ev->status), s->done);
		fflush(stdout);
	}
	if (!s->lose || !expected_loss(s->lose, ev->status))
		fail(s, "%s at %#" PRIx64 " ended in %s (%s)",
		     o->is_get ? "get" : "put", o->off, status_name(ev->status),
		     elan_strerror(ev->status));
}

static void err_summary(const struct init_state *s, char *buf, size_t n)
{
	size_t k = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i <= ELAN_STATUS_MAX && k < n; i++)
		if (s->err_count[i])
			k += snprintf(buf + k, n - k, "%s%s x%u", k ? ", " : "",
				      status_name(i), s->err_count[i]);
	if (!k)
		snprintf(buf, n, "none");
}

/*
 * Take events until @until returns true or @secs pass.  Returns 0, or
 * -EPIPE when the context failed.
 */
static int pump(struct init_state *s, int refill, double secs,
		int (*until)(struct init_state *))
{
	double end = t_now() + secs;
	struct elan_event ev;
	unsigned int i;
	int r;

	while (!until(s) && t_now() < end) {
		for (i = 0; refill && i < DEPTH; i++)
			if (!s->op[i].busy) {
				r = post_op(s, i);
				if (r == -EPIPE)
					return r;
				if (r)
					break;	/* -EAGAIN: take events first */
			}
		r = elan_poll_event(s->c, &ev);
		if (r == 1) {
			uint64_t before = s->done / DEPTH;

			complete(s, &ev);
			if (!s->errors && s->done / DEPTH != before) {
				printf("%s initiator: round %" PRIu64 " ok\n",
				       g_name, s->done / DEPTH);
				fflush(stdout);
			}
			if (s->errors && !s->lose)
				return 0;
			if (s->errors)
				refill = 0;
			continue;
		}
		if (r < 0)
			return r;
		r = elan_wait(s->c, 200);
		if (r < 0 && r != -EINTR)
			return r;
	}
	return 0;
}

static int until_error(struct init_state *s)
{
	return s->errors > 0 || s->failed > 0;
}

static int until_idle(struct init_state *s)
{
	return s->outstanding == 0;
}

/* Wait up to @secs for the context to fail: -EPIPE, or 0 if it did not. */
static int wait_failed(struct init_state *s, double secs)
{
	double end = t_now() + secs;
	int r;

	while (t_now() < end) {
		r = elan_wait(s->c, 200);
		if (r < 0 && r != -EINTR)
			return r;
	}
	return 0;
}

/* Ops posted to a lost target now: each ends at once in a named error. */
static void probe_lost(struct init_state *s, int n, char *summary, size_t len)
{
	unsigned int before[ELAN_STATUS_MAX + 1];
	uint64_t errors = s->errors;
	unsigned int i;

	memcpy(before, s->err_count, sizeof(before));
	for (i = 0; i < DEPTH && (int)i < n; i++) {
		int r = post_op(s, i);

		if (r)
			fail(s, "posting to the lost target: %s", elan_strerror(r));
	}
	if (pump(s, 0, LOSS_BOUND, until_idle) < 0 || s->outstanding)
		fail(s, "%u ops to the lost target did not end within %.0f s",
		     s->outstanding, LOSS_BOUND);
	if (s->errors - errors != (uint64_t)n)
		fail(s, "%" PRIu64 " of %d ops to the lost target succeeded",
		     n - (s->errors - errors), n);
	for (i = 0; i <= ELAN_STATUS_MAX; i++)
		s->err_count[i] -= before[i];
	err_summary(s, summary, len);
	for (i = 0; i <= ELAN_STATUS_MAX; i++)
		s->err_count[i] += before[i];
}

/*
 * The last word of a run whose target stays: the whole destination, then
 * the check message the target waits for.
 */
static void finish_survivor(struct init_state *s)
{
	struct check_msg m = { .seed = PUT_SEED, .len = REGION };
	int r;

	r = T_DO(s->c, NULL, elan_put(s->c, s->in.addr, s->lput, s->in.dst,
				       REGION, CK, 0));
	if (r)
		fail(s, "the last put: %s", t_st(r));
	r = T_DO(s->c, NULL, elan_send(s->c, s->in.addr, TAG_CHECK, &m,
					sizeof(m), CK, 0));
	if (r)
		fail(s, "the check message: %s", t_st(r));
}

/* Our own NIC died: the context fails; nothing can be posted or opened. */
static void nic_lost(struct init_state *s, char *what, size_t len)
{
	elan_ctx_t *c2 = NULL;
	uint32_t err = 0;
	int st = elan_state(s->c, &err), r, r2;

	if (st != ELAN_CTX_FAILED || err != ELAN_E_NODE_DOWN)
		fail(s, "context state %d error %s after the NIC died: want FAILED, NODE_DOWN",
		     st, status_name((int)err));
	r = elan_nop(s->c, 1);
	if (r != -EPIPE)
		fail(s, "posting after the NIC died: %s, want EPIPE", elan_strerror(r));
	r2 = elan_open(cap_of(g_name), &c2);
	if (r2 == 0) {
		fail(s, "elan_open succeeded on a dead NIC");
		elan_close(c2);
	}
	snprintf(what, len, "context %s, %u ops in flight abandoned, post: %s, elan_open: %s",
		 elan_state_text(s->c), s->outstanding, elan_strerror(r),
		 elan_strerror(r2));
}

static int run_initiator(const char *dir, const char *name, double secs,
			 const char *lose, int bystander)
{
	struct init_state s = { .lose = lose };
	char errs[256], later[256], what[512];
	double t_loss = 0, t0;
	unsigned int i;
	int r;

	if (!wait_file(dir, name, "info", 120) || read_info(dir, name, &s.in))
		return verdict(0, "no target info %s/%s.info", dir, name);
	r = elan_open(cap_of(name), &s.c);
	if (r)
		return verdict(0, "elan_open: %s", elan_strerror(r));
	s.lput = map_anon(REGION);
	s.ref = map_anon(REGION);
	t_fill(s.lput, REGION, PUT_SEED);
	t_fill(s.ref, REGION, s.in.seed);
	for (i = 0; i < DEPTH; i++) {
		uint8_t *b = map_anon(OPSZ + 2 * GUARD);

		memset(b, GUARD_BYTE, OPSZ + 2 * GUARD);
		s.op[i].buf = b + GUARD;
	}
	printf("%s initiator: %u:%u -> %u:%u, %d ops of %lu bytes in flight\n",
	       name, ELAN_ADDR_NODE(elan_addr(s.c)), ELAN_ADDR_CTX(elan_addr(s.c)),
	       ELAN_ADDR_NODE(s.in.addr), ELAN_ADDR_CTX(s.in.addr), DEPTH, OPSZ);
	fflush(stdout);

	t0 = t_now();
	if (!lose) {
		char stop[4096];

		path_of(stop, sizeof(stop), dir, name, "stop");
		while (t_now() - t0 < secs && access(stop, F_OK) && !s.failed) {
			r = pump(&s, 1, 1.0, until_error);
			if (r < 0 || s.errors) {
				fail(&s, "traffic to a target that stays: %s",
				     r < 0 ? elan_strerror(r) : "an op failed");
				break;
			}
		}
		if (!s.failed && pump(&s, 0, LOSS_BOUND, until_idle) == 0 &&
		    s.outstanding == 0)
			finish_survivor(&s);
		else if (!s.failed)
			fail(&s, "%u ops did not complete", s.outstanding);
		elan_close(s.c);
		return verdict(!s.failed, "%" PRIu64 " ops (%" PRIu64 " MiB) in %.1f s, all completed, every get checked",
			       s.done, s.done * (OPSZ / MiB), t_now() - t0);
	}

	/* The target is to be lost: traffic until the first error. */
	r = pump(&s, 1, secs, until_error);
	t_loss = t_now();
	if (!strcmp(lose, "nic") && (r == -EPIPE || (r == 0 && s.errors && !s.failed))) {
		/* ops the NIC ended on its way down, then the failure */
		if (r == 0)
			r = pump(&s, 0, LOSS_BOUND, until_idle);
		if (r == 0)
			r = wait_failed(&s, LOSS_BOUND);
		if (r != -EPIPE)
			return verdict(0, "the context did not fail within %.0f s of the first error (%s)",
				       LOSS_BOUND, elan_strerror(r));
		nic_lost(&s, what, sizeof(what));
		elan_close(s.c);
		return verdict(!s.failed, "NIC lost after %" PRIu64 " ops: %s", s.done, what);
	}
	if (r < 0)
		return verdict(0, "%s after %" PRIu64 " ops (context %s)",
			       elan_strerror(r), s.done, elan_state_text(s.c));
	if (!s.errors)
		return verdict(0, "the target was not lost within %.0f s", secs);
	if (s.failed)
		return verdict(0, "the loss was not clean (see above)");
	i = s.outstanding;
	r = pump(&s, 0, LOSS_BOUND, until_idle);
	if (r < 0 || s.outstanding)
		return verdict(0, "%u of the ops in flight did not end within %.0f s of the first error (%s)",
			       s.outstanding, LOSS_BOUND, r < 0 ? elan_strerror(r) : "hang");
	err_summary(&s, errs, sizeof(errs));
	snprintf(what, sizeof(what), "%u more ops in flight after the first error ended in %.2f s",
		 i, t_now() - t_loss);
	probe_lost(&s, 4, later, sizeof(later));

	if (bystander && !s.failed) {
		double end;

		touch(dir, name, "lost");
		if (!wait_file(dir, name, "filled", 300)) {
			fail(&s, "the bystander did not fill its memory within 300 s");
		} else {
			/*
			 * puts at the dead process's addresses while the
			 * bystander holds its pages
			 */
			end = t_now() + 3;
			while (t_now() < end && !s.failed)
				probe_lost(&s, DEPTH, later, sizeof(later));
		}
		touch(dir, name, "done");
	}
	elan_close(s.c);
	return verdict(!s.failed, "target lost after %" PRIu64 " ops (%" PRIu64 " rounds): errors %s; %s; ops posted after: %s",
		       s.done - s.errors, (s.done - s.errors) / DEPTH, errs, what, later);
}

/* ------------------------------------------------------------ bystander */

struct fill_part {
	uint8_t *mem;
	const uint8_t *want;
	size_t len;
	int cpu;
};

/* One part of the fill, on its own CPU: the pages on that CPU's free
 * lists (a process that just died left some there) go to us too. */
static void *fill_part(void *arg)
{
	struct fill_part *f = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(f->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	for (size_t o = 0; o < f->len; o += OPSZ)
		memcpy(f->mem + o, f->want, OPSZ);
	return NULL;
}

/* MemAvailable from /proc/meminfo, in bytes (0 if unreadable). */
static size_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long kb = 0;
	char line[128];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (size_t)kb * 1024;
}

static int run_bystander(const char *dir, const char *name, size_t size)
{
	struct fill_part part[64];
	pthread_t th[64];
	uint8_t *mem, *want;
	int64_t bad;
	int ncpu, i, started[64];

	if (!wait_file(dir, name, "lost", 600))
		return verdict(0, "%s/%s.lost never appeared", dir, name);
	if (!size) {	/* all we can take without the OOM killer */
		size = mem_available();
		size = size > 128 * MiB ? size - 64 * MiB : 64 * MiB;
	}
	size = size / OPSZ * OPSZ;
	mem = map_anon(size);
	/* small pages, so that we take free 4 KiB pages too */
	madvise(mem, size, MADV_NOHUGEPAGE);
	want = map_anon(OPSZ);
	t_fill(want, OPSZ, 0xb157ULL);
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	ncpu = ncpu < 1 ? 1 : ncpu > 64 ? 64 : ncpu;
	for (i = 0; i < ncpu; i++) {
		size_t a = size / OPSZ * i / ncpu, b = size / OPSZ * (i + 1) / ncpu;

		part[i] = (struct fill_part){ mem + a * OPSZ, want, (b - a) * OPSZ, i };
		started[i] = !pthread_create(&th[i], NULL, fill_part, &part[i]);
		if (!started[i])
			fill_part(&part[i]);
	}
	for (i = 0; i < ncpu; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	if (broken("corrupt")) {
		mem[size / 2 + 7] ^= 0x5a;
		printf("FAULTS_BROKEN=corrupt: flipped byte %zu\n", size / 2 + 7);
	}
	touch(dir, name, "filled");
	if (!wait_file(dir, name, "done", 300))
		return verdict(0, "%s/%s.done never appeared", dir, name);
	for (size_t o = 0; o < size; o += OPSZ) {
		bad = first_diff(mem + o, want, OPSZ);
		if (bad >= 0)
			return verdict(0, "byte %zu of its %zu MiB changed while puts went to the dead process",
				       o + (size_t)bad, size / MiB);
	}
	return verdict(1, "%zu MiB untouched while puts went to the dead process",
		       size / MiB);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fault_elan target DIR NAME\n"
		"       fault_elan initiator DIR NAME [-t SECS] [-l target|node|nic] [-b] [-v]\n"
		"       fault_elan bystander DIR NAME [-m MIB]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *lose = NULL;
	double secs = 30;
	int c, bystander = 0;
	size_t fill = 256 * MiB;

	if (argc < 4)
		usage();
	g_role = argv[1];
	g_name = argv[3];
	t_name = g_name;
	setvbuf(stdout, NULL, _IOLBF, 0);
	optind = 4;
	while ((c = getopt(argc, argv, "t:l:bvm:")) != -1) {
		switch (c) {
		case 'v':
			t_verbose = 1;
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'l':
			lose = optarg;
			break;
		case 'b':
			bystander = 1;
			break;
		case 'm':
			fill = (size_t)atol(optarg) * MiB;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (lose && strcmp(lose, "target") && strcmp(lose, "node") &&
	    strcmp(lose, "nic"))
		usage();
	t_op_timeout = LOSS_BOUND;
	t_cookie = 1000;	/* T_DO's cookies: above the ops' slot numbers */
	if (!strcmp(g_role, "target"))
		return run_target(argv[2], argv[3]);
	if (!strcmp(g_role, "initiator"))
		return run_initiator(argv[2], argv[3], secs, lose, bystander);
	if (!strcmp(g_role, "bystander"))
		return run_bystander(argv[2], argv[3], fill);
	usage();
	return 2;
}
