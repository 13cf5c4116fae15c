/* Soak: a bounded run of mixed MPI traffic with buffer churn, every byte
 * checked.
 *
 *   soak [-t SECONDS] [-r SEED] [-b BYTES] [-e PERCENT] [-v]
 *   soak -P BYTES [-n ROUNDS]            (the run under memory pressure)
 *   -g CGROUP: join /sys/fs/cgroup/CGROUP first (before MPI_Init)
 *
 * Each iteration the ranks draw the same operation from the seed: point
 * to point (eager or rendezvous sizes, several messages in flight to a
 * random shift of the ring), a collective (bcast, allreduce, allgather,
 * alltoall) or a one-sided operation on a window of MPI_Win_create'd
 * mmap memory (put and get under fence or lock, accumulate,
 * fetch-and-op, compare-and-swap under a shared lock).  Before it, each
 * rank applies, with probability -e percent (default 60), a VM event of
 * its own choosing to its send buffer, receive buffer or window memory:
 * free+malloc, munmap+mmap at the same address, fork (the child writes
 * half the pages and lives on through the operation, then checks its
 * copy), mprotect (none and back; sources stay read-only through the
 * operation), MADV_PAGEOUT, MADV_DONTNEED.  Every received byte, window
 * and atomic result is checked.  Runs -t seconds (default
 * $ELAN_SOAK_SECS, else 60), then rank 0 prints the operations, bytes
 * and VM events per kind summed over the ranks, and each rank its
 * node's driver counters.
 *
 * A failure aborts the job with "FAIL <op> [rank ...]: iteration I of
 * seed S, ... what differed"; soak -r S reproduces the sequence of
 * operations (the VM events too, timing aside).  MPITEST_CORRUPT=OP
 * (see tests/common/mpitest.h) flips one byte that the first operation named
 * OP moves (a source, a window, the atomic counter), which must then
 * fail; MPITEST_CORRUPT=fork flips a byte in a forked child's copy, which
 * its check must report.  -P: see soak_pressure.c. */
#include "soak.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum op {
	OP_P2P_EAGER, OP_P2P_RNDV, OP_BCAST, OP_ALLREDUCE, OP_ALLGATHER, OP_ALLTOALL,
	OP_PUT, OP_GET, OP_ACC, OP_FOP, OP_CSWAP, OP_KINDS
};
static const char *const op_name[OP_KINDS] = {
	"p2p/eager", "p2p/rndv", "coll/bcast", "coll/allreduce", "coll/allgather",
	"coll/alltoall", "rma/put", "rma/get", "rma/accumulate", "rma/fetch_and_op",
	"rma/compare_and_swap",
};

#define EAGER_MAX 4000          /* below btl elan's eager limit (4064) */
#define SLOT (128 << 10)        /* window bytes per origin rank */
#define MAX_MSGS 4
#define TAG 77
#define GUARD_BYTE 0xee         /* receive buffers and put slots before the data */

static struct {
	int secs;
	uint64_t seed;
	size_t buflen;
	int event_pct;
	int verbose;
} opt = { .secs = 60, .seed = 1, .buflen = 2 << 20, .event_pct = 60 };

static struct sbuf sendb, recvb, winb;
static MPI_Win win;
static unsigned long ops[OP_KINDS];
static unsigned long long bytes[OP_KINDS];

/* Where we are, for failure messages. */
static unsigned long iter;
static char events_now[128];

/* What one transfer must have delivered, named for the failure message. */
static const char *what(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *what(const char *fmt, ...)
{
	static char s[512];
	va_list ap;
	int n;

	n = snprintf(s, sizeof(s), "iteration %lu of seed %llu (events here: %s): ", iter,
		     (unsigned long long)opt.seed, events_now[0] ? events_now : "none");
	va_start(ap, fmt);
	vsnprintf(s + n, sizeof(s) - n, fmt, ap);
	va_end(ap);
	return s;
}

/* Pattern seeds: distinct per iteration, rank and use. */
static uint32_t pseed(int rank, int use) { return (uint32_t)(iter * 1000003u + rank * 31u + use); }

/* ---------------------------------------------------------------- the plan */

/* One iteration's operation, the same on every rank. */
struct plan {
	enum op op;
	int shift;              /* peer = rank + shift (ring), 1..size-1 */
	int root;               /* bcast root, atomic and accumulate target */
	int nmsg;
	int ssend;              /* p2p: synchronous sends */
	size_t len[MAX_MSGS];   /* per message, or len[0] for one transfer */
	size_t off[64];         /* per origin rank: offset in its window slot */
	size_t rlen[64];        /* per origin rank: RMA length */
	int lock;               /* put/get/acc: passive target instead of fence */
	int count;              /* atomics per rank */
	uint64_t base;          /* atomic counter's start value */
};

static int op_deck[OP_KINDS + 1], ev_deck[EV_KINDS + 1];

static void draw_plan(uint64_t *rs, struct plan *p)
{
	int r;

	memset(p, 0, sizeof(*p));
	p->op = soak_deal(rs, op_deck, OP_KINDS);
	p->shift = mt_size > 1 ? (int)soak_range(rs, 1, mt_size - 1) : 0;
	p->root = soak_rand(rs) % mt_size;
	p->nmsg = soak_range(rs, 1, MAX_MSGS);
	p->ssend = soak_rand(rs) & 1;
	for (r = 0; r < MAX_MSGS; r++)
		p->len[r] = p->op == OP_P2P_EAGER ? soak_range(rs, 1, EAGER_MAX)
			: soak_range(rs, EAGER_MAX + 100, opt.buflen / MAX_MSGS);
	if (p->op == OP_BCAST)
		p->len[0] = soak_range(rs, 1, opt.buflen);
	else if (p->op == OP_ALLREDUCE)
		p->len[0] = soak_range(rs, 1, opt.buflen / sizeof(int) / 4);
	else if (p->op == OP_ALLGATHER || p->op == OP_ALLTOALL)
		p->len[0] = soak_range(rs, 1, opt.buflen / mt_size);
	else if (p->op == OP_ACC)
		p->len[0] = soak_range(rs, 1, SLOT / sizeof(int));
	for (r = 0; r < mt_size; r++) {
		p->rlen[r] = soak_range(rs, 1, SLOT);
		p->off[r] = soak_range(rs, 0, SLOT - p->rlen[r]);
	}
	p->lock = soak_rand(rs) & 1;
	p->count = soak_range(rs, 1, 8);
	p->base = soak_rand(rs) >> 8;
}

static int peer_to(const struct plan *p) { return (mt_rank + p->shift) % mt_size; }
static int peer_from(const struct plan *p) { return (mt_rank - p->shift + mt_size) % mt_size; }

/* Does the operation write my window (else it is only read: a get)? */
static int writes_win(const struct plan *p) { return p->op != OP_GET; }

/* ---------------------------------------------------------------- filling */

/* The content each buffer holds before the operation: filled again by
 * soak_event's clobbering events too. */
static void prepare(const struct plan *p, struct sbuf *b)
{
	size_t i;

	if (b == &recvb) {
		memset(b->p, GUARD_BYTE, b->len);
		return;
	}
	if (b == &sendb) {
		if (p->op == OP_ALLREDUCE || p->op == OP_ACC)
			mt_fill_ints((int *)b->p, p->len[0], pseed(mt_rank, 1));
		else
			mt_fill(b->p, b->len, pseed(mt_rank, 1));
		return;
	}
	/* the window memory: touched locally only between epochs */
	switch (p->op) {
	case OP_PUT:
		memset(b->p, GUARD_BYTE, (size_t)mt_size * SLOT);
		break;
	case OP_GET:
		mt_fill(b->p, (size_t)mt_size * SLOT, pseed(mt_rank, 2));
		break;
	case OP_ACC:
		if (mt_rank == p->root)
			for (i = 0; i < p->len[0]; i++)
				((int *)b->p)[i] = mt_ival(pseed(mt_rank, 3), i);
		break;
	case OP_FOP:
	case OP_CSWAP:
		memcpy(b->p + (size_t)mt_size * SLOT, &p->base, sizeof(p->base));
		break;
	default:
		break;
	}
}

/* ---------------------------------------------------------------- the operations */

static void op_p2p(const struct plan *p)
{
	MPI_Request req[2 * MAX_MSGS];
	size_t at = 0, i;
	int n = 0;
	char w[64];

	for (i = 0; i < (size_t)p->nmsg; i++) {
		MT_MPI(MPI_Irecv(recvb.p + at, p->len[i], MPI_BYTE, peer_from(p), TAG + i,
				 MPI_COMM_WORLD, &req[n++]));
		at += p->len[i];
	}
	at = 0;
	for (i = 0; i < (size_t)p->nmsg; i++) {
		if (p->ssend)
			MT_MPI(MPI_Issend(sendb.p + at, p->len[i], MPI_BYTE, peer_to(p), TAG + i,
					  MPI_COMM_WORLD, &req[n++]));
		else
			MT_MPI(MPI_Isend(sendb.p + at, p->len[i], MPI_BYTE, peer_to(p), TAG + i,
					 MPI_COMM_WORLD, &req[n++]));
		at += p->len[i];
	}
	MT_MPI(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
	at = 0;
	for (i = 0; i < (size_t)p->nmsg; i++) {
		snprintf(w, sizeof(w), "message %zu of %d", i, p->nmsg);
		mt_check_from(recvb.p + at, p->len[i], pseed(peer_from(p), 1), at,
			      what("%s, %zu bytes from rank %d", w, p->len[i], peer_from(p)));
		at += p->len[i];
	}
	mt_check_const(recvb.p + at, recvb.len - at < 64 ? recvb.len - at : 64, GUARD_BYTE,
		       what("the guard after %d received messages", p->nmsg));
	bytes[p->op] += at;
}

static void op_bcast(const struct plan *p)
{
	/* the root's buffer is only read: it may be read-only */
	uint8_t *buf = mt_rank == p->root ? sendb.p : recvb.p;

	MT_MPI(MPI_Bcast(buf, p->len[0], MPI_BYTE, p->root, MPI_COMM_WORLD));
	mt_check(buf, p->len[0], pseed(p->root, 1), what("bcast of %zu bytes from root %d", p->len[0], p->root));
	bytes[p->op] += p->len[0];
}

static void op_allreduce(const struct plan *p)
{
	size_t n = p->len[0], i;
	int *expect = mt_alloc(n * sizeof(int)), r;

	MT_MPI(MPI_Allreduce(sendb.p, recvb.p, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	for (i = 0; i < n; i++) {
		expect[i] = 0;
		for (r = 0; r < mt_size; r++)
			expect[i] += mt_ival(pseed(r, 1), i);
	}
	mt_check_ints((int *)recvb.p, expect, n, what("allreduce SUM of %zu ints", n));
	free(expect);
	bytes[p->op] += n * sizeof(int);
}

static void op_allgather_alltoall(const struct plan *p)
{
	size_t blk = p->len[0];
	int r;

	if (p->op == OP_ALLGATHER)
		MT_MPI(MPI_Allgather(sendb.p, blk, MPI_BYTE, recvb.p, blk, MPI_BYTE, MPI_COMM_WORLD));
	else
		MT_MPI(MPI_Alltoall(sendb.p, blk, MPI_BYTE, recvb.p, blk, MPI_BYTE, MPI_COMM_WORLD));
	for (r = 0; r < mt_size; r++)
		/* alltoall: rank r's block number mt_rank */
		mt_check_from(recvb.p + r * blk, blk, pseed(r, 1), p->op == OP_ALLGATHER ? 0 : mt_rank * blk,
			      what("%s block of %zu bytes from rank %d", op_name[p->op], blk, r));
	bytes[p->op] += blk * mt_size;
}

static void epoch_begin(const struct plan *p, int target, int lock_type)
{
	if (p->lock)
		MT_MPI(MPI_Win_lock(lock_type, target, 0, win));
	else
		MT_MPI(MPI_Win_fence(0, win));
}

static void epoch_end(const struct plan *p, int target)
{
	if (p->lock) {
		MT_MPI(MPI_Win_unlock(target, win));
		MPI_Barrier(MPI_COMM_WORLD);
	} else {
		MT_MPI(MPI_Win_fence(0, win));
	}
}

static void op_put_get(const struct plan *p)
{
	int to = peer_to(p), from = peer_from(p);
	size_t len = p->rlen[mt_rank], off = p->off[mt_rank];
	MPI_Aint disp = (MPI_Aint)mt_rank * SLOT + off;
	const char *sync = p->lock ? "lock" : "fence";

	epoch_begin(p, to, MPI_LOCK_EXCLUSIVE);
	if (p->op == OP_PUT)
		MT_MPI(MPI_Put(sendb.p + off, len, MPI_BYTE, to, disp, len, MPI_BYTE, win));
	else
		MT_MPI(MPI_Get(recvb.p, len, MPI_BYTE, to, disp, len, MPI_BYTE, win));
	epoch_end(p, to);
	if (p->op == OP_GET) {
		mt_check_from(recvb.p, len, pseed(to, 2), disp,
			      what("get (%s) of %zu bytes at %zu from rank %d's window", sync, len,
				   (size_t)disp, to));
	} else {
		/* my window's slot of the origin FROM: its bytes, guards around */
		uint8_t *slot = winb.p + (size_t)from * SLOT;
		size_t flen = p->rlen[from], foff = p->off[from];

		mt_check_const(slot, foff, GUARD_BYTE, what("window bytes before a put (%s) from rank %d", sync, from));
		mt_check_from(slot + foff, flen, pseed(from, 1), foff,
			      what("put (%s) of %zu bytes at %zu from rank %d", sync, flen, foff, from));
		mt_check_const(slot + foff + flen, SLOT - foff - flen, GUARD_BYTE,
			       what("window bytes after a put (%s) from rank %d", sync, from));
	}
	bytes[p->op] += len;
}

/* Everyone accumulates its ints into the root's window. */
static void op_acc(const struct plan *p)
{
	size_t n = p->len[0], i;
	int *expect, r;

	epoch_begin(p, p->root, MPI_LOCK_SHARED);
	MT_MPI(MPI_Accumulate(sendb.p, n, MPI_INT, p->root, 0, n, MPI_INT, MPI_SUM, win));
	epoch_end(p, p->root);
	if (mt_rank == p->root) {
		expect = mt_alloc(n * sizeof(int));
		for (i = 0; i < n; i++) {
			expect[i] = mt_ival(pseed(mt_rank, 3), i);
			for (r = 0; r < mt_size; r++)
				expect[i] += mt_ival(pseed(r, 1), i);
		}
		mt_check_ints((int *)winb.p, expect, n,
			      what("accumulate SUM (%s) of %zu ints from %d ranks", p->lock ? "lock" : "fence", n,
				   mt_size));
		free(expect);
	}
	bytes[p->op] += n * sizeof(int);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Each rank adds 1 to the root's counter COUNT times (fetch_and_op, or a
 * compare_and_swap loop); the values it saw before its adds must be,
 * over all ranks, exactly base .. base + size*count - 1. */
static void op_atomic(const struct plan *p)
{
	MPI_Aint at = (MPI_Aint)mt_size * SLOT;
	uint64_t one = 1, old, seen[8], *all = NULL, want, got, cur;
	int i, n = mt_size * p->count;

	MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, p->root, 0, win));
	for (i = 0; i < p->count; i++) {
		if (p->op == OP_FOP) {
			MT_MPI(MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, p->root, at, MPI_SUM, win));
			MT_MPI(MPI_Win_flush(p->root, win));
		} else {
			MT_MPI(MPI_Fetch_and_op(NULL, &cur, MPI_UINT64_T, p->root, at, MPI_NO_OP, win));
			MT_MPI(MPI_Win_flush(p->root, win));
			for (;;) {
				uint64_t next = cur + 1;

				MT_MPI(MPI_Compare_and_swap(&next, &cur, &old, MPI_UINT64_T, p->root, at, win));
				MT_MPI(MPI_Win_flush(p->root, win));
				if (old == cur)
					break;
				cur = old;
			}
		}
		seen[i] = old;
	}
	MT_MPI(MPI_Win_unlock(p->root, win));
	if (mt_rank == p->root)
		all = mt_alloc(n * sizeof(uint64_t));
	MT_MPI(MPI_Gather(seen, p->count, MPI_UINT64_T, all, p->count, MPI_UINT64_T, p->root, MPI_COMM_WORLD));
	MPI_Barrier(MPI_COMM_WORLD);
	if (mt_rank == p->root) {
		qsort(all, n, sizeof(uint64_t), cmp_u64);
		for (i = 0; i < n; i++)
			MT_CHECK(all[i] == p->base + i,
				 "%s", what("%s: the %d values fetched, sorted, hold %llu at %d where %llu belongs",
					    op_name[p->op], n, (unsigned long long)all[i], i,
					    (unsigned long long)(p->base + i)));
		memcpy(&got, winb.p + at, sizeof(got));
		want = p->base + n;
		MT_CHECK(got == want, "%s", what("%s: counter %llu after %d adds to %llu, expected %llu",
						 op_name[p->op], (unsigned long long)got, n,
						 (unsigned long long)p->base, (unsigned long long)want));
		free(all);
	}
	bytes[p->op] += 8ull * p->count;
}

static void run_op(const struct plan *p)
{
	switch (p->op) {
	case OP_P2P_EAGER:
	case OP_P2P_RNDV:
		op_p2p(p);
		break;
	case OP_BCAST:
		op_bcast(p);
		break;
	case OP_ALLREDUCE:
		op_allreduce(p);
		break;
	case OP_ALLGATHER:
	case OP_ALLTOALL:
		op_allgather_alltoall(p);
		break;
	case OP_PUT:
	case OP_GET:
		op_put_get(p);
		break;
	case OP_ACC:
		op_acc(p);
		break;
	case OP_FOP:
	case OP_CSWAP:
		op_atomic(p);
		break;
	case OP_KINDS:
		break;
	}
	ops[p->op]++;
}

/* ---------------------------------------------------------------- broken */

/* The broken variant (MPITEST_CORRUPT=OP): flip one byte that this
 * rank's part of the operation surely moves (mt_fill's own flip lands in
 * the middle of a buffer, often beyond what is moved).  Once per process;
 * later when the byte is in a read-only buffer now, or the rank moves
 * nothing of its own in this operation (a bcast it does not root). */
static void corrupt_source(const struct plan *p)
{
	static int done;
	struct sbuf *b = &sendb;
	size_t at = 0;

	if (done || !mt_broken())
		return;
	switch (p->op) {
	case OP_BCAST:
	case OP_FOP:
	case OP_CSWAP:
		if (mt_rank != p->root)
			return;
		if (p->op != OP_BCAST) {
			b = &winb;
			at = (size_t)mt_size * SLOT;    /* the counter */
		}
		break;
	case OP_PUT:
		at = p->off[mt_rank];
		break;
	case OP_GET:
		b = &winb;
		at = (size_t)peer_from(p) * SLOT + p->off[peer_from(p)];
		break;
	default:
		break;
	}
	if (b->readonly)
		return;
	done = 1;
	b->p[at] ^= 0x5a;
	fprintf(stderr, "MPITEST_CORRUPT: %s [rank %d]: flipped byte %zu of the %s\n", op_name[p->op],
		mt_rank, at, b->name);
}

/* ---------------------------------------------------------------- churn */

/* This rank's VM event before the operation, on one buffer or (fork)
 * all of them; written into events_now for the failure messages. */
static void churn(uint64_t *ls, const struct plan *p)
{
	struct sbuf *all[3] = { &sendb, &recvb, &winb }, *b;
	enum soak_event ev;

	events_now[0] = 0;
	if ((int)soak_range(ls, 0, 99) >= opt.event_pct)
		return;
	ev = soak_deal(ls, ev_deck, EV_KINDS);
	if (ev == EV_FORK) {
		soak_fork(all, 3);
		snprintf(events_now, sizeof(events_now), "fork, child alive");
		return;
	}
	b = all[soak_rand(ls) % 3];
	if (b == &winb && ev == EV_MALLOC)
		ev = EV_MMAP;   /* window memory keeps its address */
	/* the send buffer is only read; the window by a get */
	soak_event(b, ev, b == &sendb || (b == &winb && !writes_win(p)));
	if (soak_event_clobbers(ev))
		prepare(p, b);
	snprintf(events_now, sizeof(events_now), "%s of the %s", soak_event_name[ev], b->name);
}

/* ---------------------------------------------------------------- main */

/* Move this process into a cgroup v2 group (its limits apply from here). */
static void join_cgroup(const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cgroup.procs", name);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0) {
		fprintf(stderr, "soak: cannot join the cgroup %s (%s)\n", name, path);
		exit(2);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: soak [-t SECONDS] [-r SEED] [-b BYTES] [-e PERCENT] [-v]\n"
		"       soak -P BYTES [-n ROUNDS]\n"
		"       -g CGROUP: run in the cgroup v2 /sys/fs/cgroup/CGROUP\n");
	exit(2);
}

static void report(void)
{
	unsigned long tops[OP_KINDS], tev[EV_KINDS], tout, total_ops = 0;
	unsigned long long tbytes[OP_KINDS], total_bytes = 0;
	char line[1024];
	int i;

	MPI_Reduce(ops, tops, OP_KINDS, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(bytes, tbytes, OP_KINDS, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(soak_vm.events, tev, EV_KINDS, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&soak_vm.pages_out, &tout, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (mt_rank == 0) {
		for (i = 0; i < OP_KINDS; i++) {
			printf("soak: op %-22s %8lu ops %14llu bytes\n", op_name[i], tops[i] / mt_size,
			       tbytes[i]);
			total_ops += tops[i] / mt_size;
			total_bytes += tbytes[i];
		}
		for (i = 0; i < EV_KINDS; i++)
			printf("soak: vm %-22s %8lu events\n", soak_event_name[i], tev[i]);
		printf("soak: pages made non-resident by MADV_PAGEOUT: %lu\n", tout);
		printf("soak: total %lu iterations, %lu operations, %llu bytes checked, seed %llu, %d ranks\n",
		       iter, total_ops, total_bytes, (unsigned long long)opt.seed, mt_size);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	soak_driver_line(line, sizeof(line));
	printf("soak: rank %d on %s: driver %s\n", mt_rank, mt_host, line);
}

int main(int argc, char **argv)
{
	const char *env = getenv("ELAN_SOAK_SECS");
	size_t pressure = 0;
	int c, rounds = 2, go = 1;
	uint64_t rs, ls;
	double t0;
	struct plan p;

	if (env && *env)
		opt.secs = atoi(env);
	while ((c = getopt(argc, argv, "t:r:b:e:P:n:g:v")) != -1) {
		switch (c) {
		case 't': opt.secs = atoi(optarg); break;
		case 'r': opt.seed = strtoull(optarg, NULL, 0); break;
		case 'b': opt.buflen = mt_parse_size(optarg); break;
		case 'e': opt.event_pct = atoi(optarg); break;
		case 'P': pressure = mt_parse_size(optarg); break;
		case 'n': rounds = atoi(optarg); break;
		case 'g': join_cgroup(optarg); break;
		case 'v': opt.verbose = 1; break;
		default: usage();
		}
	}
	if (optind != argc || opt.buflen < (size_t)MAX_MSGS * (EAGER_MAX + 200))
		usage();
	mt_init(&argc, &argv);
	if (pressure) {
		soak_pressure(pressure, rounds);
		MPI_Finalize();
		return 0;
	}
	MT_CHECK(mt_size <= 64, "at most 64 ranks");
	MT_CHECK(opt.buflen >= (size_t)mt_size * 4, "-b too small for %d ranks", mt_size);
	if (mt_rank == 0)
		printf("soak: %d ranks, %d s, seed %llu, buffers %zu bytes, VM event before %d%% of the operations\n",
		       mt_size, opt.secs, (unsigned long long)opt.seed, opt.buflen, opt.event_pct);

	soak_buf_init(&sendb, "send buffer", opt.buflen, 0);
	soak_buf_init(&recvb, "receive buffer", opt.buflen, 1);
	/* the slots of the origins, then the atomic counter */
	soak_buf_init(&winb, "window memory", (size_t)mt_size * SLOT + 64, 0);
	MT_MPI(MPI_Win_create(winb.p, winb.len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

	rs = opt.seed;
	ls = opt.seed ^ (0x5851f42d4c957f2dull * (mt_rank + 1));
	t0 = MPI_Wtime();
	while (go) {
		draw_plan(&rs, &p);
		mt_begin(op_name[p.op]);
		if (mt_broken())
			mt_broken_by_test();    /* corrupt_source flips instead of mt_fill */
		prepare(&p, &sendb);
		prepare(&p, &recvb);
		prepare(&p, &winb);
		churn(&ls, &p);
		corrupt_source(&p);
		if (opt.verbose)
			printf("soak: rank %d iteration %lu: %s, events here: %s\n", mt_rank, iter,
			       op_name[p.op], events_now[0] ? events_now : "none");
		/* no remote access to a window while its owner churns it */
		MPI_Barrier(MPI_COMM_WORLD);
		run_op(&p);
		soak_fork_end();
		soak_restore(&sendb);
		soak_restore(&winb);
		iter++;
		go = MPI_Wtime() - t0 < opt.secs;
		MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
	mt_begin("report");
	MT_MPI(MPI_Win_free(&win));
	report();
	soak_buf_free(&sendb);
	soak_buf_free(&recvb);
	soak_buf_free(&winb);
	MPI_Finalize();
	return 0;
}
