/* Point-to-point subtests of mpi_suite. */
#include "suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A receive area with guard bytes on both sides. */
struct guarded {
	uint8_t *base;
	size_t cap;
};

static void guarded_alloc(struct guarded *g, size_t cap)
{
	g->cap = cap;
	g->base = mt_alloc(cap + 2 * GUARD + 64);
}

/* The area of LEN bytes at offset OFF (< 64) inside, guards set around it. */
static uint8_t *guarded_area(struct guarded *g, size_t off, size_t len)
{
	uint8_t *p = g->base + GUARD + off;

	memset(p - GUARD, GUARD_BYTE, GUARD);
	memset(p + len, GUARD_BYTE, GUARD);
	return p;
}

static void guarded_check(const uint8_t *p, size_t len, const char *what)
{
	char w[160];

	snprintf(w, sizeof(w), "%s: guard before the receive area", what);
	mt_check_const(p - GUARD, GUARD, GUARD_BYTE, w);
	snprintf(w, sizeof(w), "%s: guard after the receive area", what);
	mt_check_const(p + len, GUARD, GUARD_BYTE, w);
}

static void check_count(const MPI_Status *st, MPI_Datatype t, int expect, const char *what)
{
	int n;

	MPI_Get_count(st, t, &n);
	MT_CHECK(n == expect, "%s: received count %d, expected %d", what, n, expect);
}

/* 0, powers of two from 1 B to 4 MiB with odd sizes between them, and
 * MAX itself (64 MiB by default; the sizes between 4 MiB and MAX would
 * only cost minutes under TCG). */
#define SWEEP_TOP (4u << 20)

static size_t pingpong_sizes(size_t max, size_t *out, size_t cap)
{
	size_t n = 0, p;

	out[n++] = 0;
	for (p = 1; p <= max && p <= SWEEP_TOP && n + 3 <= cap; p *= 2) {
		out[n++] = p;
		if (p >= 4 && p * 3 / 2 + 1 <= max && p < SWEEP_TOP)
			out[n++] = p * 3 / 2 + 1;
	}
	if (max > SWEEP_TOP)
		out[n++] = max;
	return n;
}

void p2p_pingpong(void)
{
	size_t sizes[80], nsizes = pingpong_sizes(suite_opt.max_size, sizes, 80), k;
	int peer = pair_peer(), rep;
	uint8_t *sbuf;
	struct guarded rbuf;
	double big_t = 0;
	size_t big = 0;

	if (peer < 0)
		return;
	sbuf = mt_alloc(suite_opt.max_size + 64);
	guarded_alloc(&rbuf, suite_opt.max_size);
	for (k = 0; k < nsizes; k++) {
		size_t n = sizes[k];
		size_t soff = k % 7 + 1, roff = (k * 5 + 3) % 13;  /* unaligned, unequal */
		int reps = n <= 65536 ? 3 : 1;
		char what[96];

		for (rep = 0; rep < reps; rep++) {
			uint32_t seed = 100 + k * 8 + rep;
			uint8_t *r = guarded_area(&rbuf, roff, n);
			MPI_Status st;
			double t = MPI_Wtime();

			snprintf(what, sizeof(what), "%zu-byte message (send offset %zu, receive offset %zu)",
				 n, soff, roff);
			if (mt_rank < peer) {
				mt_fill(sbuf + soff, n, seed);
				MT_MPI(MPI_Send(sbuf + soff, n, MPI_BYTE, peer, k, MPI_COMM_WORLD));
				MT_MPI(MPI_Recv(r, n, MPI_BYTE, peer, k, MPI_COMM_WORLD, &st));
				strcat(what, ", echoed back");
			} else {
				MT_MPI(MPI_Recv(r, n, MPI_BYTE, peer, k, MPI_COMM_WORLD, &st));
			}
			check_count(&st, MPI_BYTE, n, what);
			mt_check(r, n, seed, what);
			guarded_check(r, n, what);
			if (mt_rank > peer)     /* echo what arrived, from where it arrived */
				MT_MPI(MPI_Send(r, n, MPI_BYTE, peer, k, MPI_COMM_WORLD));
			if (n == suite_opt.max_size) {
				big = n;
				big_t = MPI_Wtime() - t;
			}
		}
	}
	free(sbuf);
	free(rbuf.base);
	suite_note("%zu sizes 0..%zu B; largest round trip incl. checks %.2fs", nsizes, big, big_t);
}

/* Wildcard receives: every rank sends NMSG messages to every other one;
 * each rank posts all its receives with MPI_ANY_SOURCE and MPI_ANY_TAG
 * up front and completes them in any order (MPI_Waitany).  The status
 * must name the sender and tag, the count and data must match, no
 * message may come twice, and per sender the messages must match the
 * receives in the order sent (MPI's non-overtaking rule). */
enum { NMSG = 6 };

static size_t wild_len(int src, int dst, int k)
{
	static const size_t base[NMSG] = { 0, 1, 1000, 70000, 17, 300001 };

	return base[k] + (k >= 2 ? (size_t)(3 * src + dst) : 0);
}

static uint32_t wild_seed(int src, int dst, int k) { return 5000 + (src * 16 + dst) * 16 + k; }
static int wild_tag(int k) { return 10 + 3 * k; }

void p2p_wildcard(void)
{
	int n = (mt_size - 1) * NMSG, i, j, src, k, dst, idx;
	MPI_Request *rreq = mt_alloc(n * sizeof(*rreq)), *sreq = mt_alloc(n * sizeof(*sreq));
	uint8_t **rbuf = mt_alloc(n * sizeof(*rbuf)), **sbuf = mt_alloc(n * sizeof(*sbuf));
	int *req_src = mt_alloc(n * sizeof(int)), *req_k = mt_alloc(n * sizeof(int));
	int *seen = calloc(mt_size * NMSG, sizeof(int));
	size_t cap = wild_len(mt_size, mt_size, NMSG - 1) + 1;
	char what[128];

	for (i = 0; i < n; i++) {
		rbuf[i] = mt_alloc(cap);
		MT_MPI(MPI_Irecv(rbuf[i], cap, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rreq[i]));
	}
	MPI_Barrier(MPI_COMM_WORLD);    /* all receives posted before any send */
	i = 0;
	for (k = 0; k < NMSG; k++)
		for (j = 1; j < mt_size; j++, i++) {
			dst = (mt_rank + j) % mt_size;
			sbuf[i] = mt_alloc(wild_len(mt_rank, dst, k) + 1);
			mt_fill(sbuf[i], wild_len(mt_rank, dst, k), wild_seed(mt_rank, dst, k));
			MT_MPI(MPI_Isend(sbuf[i], wild_len(mt_rank, dst, k), MPI_BYTE, dst, wild_tag(k),
					 MPI_COMM_WORLD, &sreq[i]));
		}
	for (j = 0; j < n; j++) {
		MPI_Status st;

		MT_MPI(MPI_Waitany(n, rreq, &idx, &st));
		src = st.MPI_SOURCE;
		k = (st.MPI_TAG - 10) / 3;
		MT_CHECK(src >= 0 && src < mt_size && src != mt_rank, "wildcard receive: status names source %d", src);
		MT_CHECK(st.MPI_TAG == wild_tag(k) && k >= 0 && k < NMSG, "wildcard receive from %d: tag %d was never sent",
			 src, st.MPI_TAG);
		MT_CHECK(!seen[src * NMSG + k]++, "wildcard receive: message %d from rank %d arrived twice", k, src);
		snprintf(what, sizeof(what), "wildcard receive of message %d (tag %d) from rank %d", k, st.MPI_TAG, src);
		check_count(&st, MPI_BYTE, wild_len(src, mt_rank, k), what);
		mt_check(rbuf[idx], wild_len(src, mt_rank, k), wild_seed(src, mt_rank, k), what);
		req_src[idx] = src;
		req_k[idx] = k;
	}
	/* Non-overtaking: per sender, later receives got later messages. */
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			MT_CHECK(req_src[i] != req_src[j] || req_k[i] < req_k[j],
				 "receive %d got message %d of rank %d but the later receive %d got its earlier message %d",
				 i, req_k[i], req_src[i], j, req_k[j]);
	MT_MPI(MPI_Waitall(n, sreq, MPI_STATUSES_IGNORE));
	/* Every rank's wildcard receives are matched before anyone sends the
	 * probe's message, which a receive still posted would take. */
	MPI_Barrier(MPI_COMM_WORLD);

	/* MPI_Probe with wildcards, then a receive of the probed size. */
	{
		int right = (mt_rank + 1) % mt_size, len = 12345 + mt_rank, count;
		uint8_t *s = mt_alloc(len), *r;
		MPI_Status st;
		MPI_Request q;

		mt_fill(s, len, 7000 + mt_rank);
		MT_MPI(MPI_Isend(s, len, MPI_BYTE, right, 99, MPI_COMM_WORLD, &q));
		MT_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
		MPI_Get_count(&st, MPI_BYTE, &count);
		src = (mt_rank + mt_size - 1) % mt_size;
		MT_CHECK(st.MPI_SOURCE == src && st.MPI_TAG == 99 && count == 12345 + src,
			 "MPI_Probe: source %d tag %d count %d, expected %d, 99, %d", st.MPI_SOURCE, st.MPI_TAG,
			 count, src, 12345 + src);
		r = mt_alloc(count);
		MT_MPI(MPI_Recv(r, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		mt_check(r, count, 7000 + src, "message received after MPI_Probe");
		MT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
		free(s);
		free(r);
	}
	for (i = 0; i < n; i++) {
		free(rbuf[i]);
		free(sbuf[i]);
	}
	free(rreq); free(sreq); free(rbuf); free(sbuf); free(req_src); free(req_k); free(seen);
	suite_note("%d wildcard receives per rank, sizes 0..%zu B, then MPI_Probe", n, cap - 1);
}

/* Hundreds of messages in flight both ways between the pair at once,
 * eager and rendezvous sizes mixed, receives posted in reverse order. */
enum { NMANY = 400 };

static size_t many_len(int i) { return i % 5 == 0 ? (size_t)(32768 + i) : (size_t)(i * 37) % 2000; }

void p2p_many(void)
{
	int peer = pair_peer(), i;
	MPI_Request req[2 * NMANY];
	MPI_Status st[2 * NMANY];
	uint8_t *sbuf[NMANY], *rbuf[NMANY];
	char what[96];

	if (peer < 0)
		return;
	for (i = NMANY - 1; i >= 0; i--) {
		rbuf[i] = mt_alloc(many_len(i));
		MT_MPI(MPI_Irecv(rbuf[i], many_len(i), MPI_BYTE, peer, i, MPI_COMM_WORLD, &req[NMANY + i]));
	}
	for (i = 0; i < NMANY; i++) {
		sbuf[i] = mt_alloc(many_len(i));
		mt_fill(sbuf[i], many_len(i), 20000 + mt_rank * 1000 + i);
		MT_MPI(MPI_Isend(sbuf[i], many_len(i), MPI_BYTE, peer, i, MPI_COMM_WORLD, &req[i]));
	}
	MT_MPI(MPI_Waitall(2 * NMANY, req, st));
	for (i = 0; i < NMANY; i++) {
		snprintf(what, sizeof(what), "message %d of %d in flight (%zu bytes)", i, NMANY, many_len(i));
		check_count(&st[NMANY + i], MPI_BYTE, many_len(i), what);
		mt_check(rbuf[i], many_len(i), 20000 + peer * 1000 + i, what);
		free(rbuf[i]);
		free(sbuf[i]);
	}
	suite_note("%d Isend + %d Irecv in flight per rank", NMANY, NMANY);
}

/* A message longer than the receive buffer must end in MPI_ERR_TRUNCATE
 * (the communicator returns errors instead of aborting) and leave the
 * stream usable: a following message arrives intact.  Eager and
 * rendezvous sizes, blocking and nonblocking receives.  An eager one
 * must not write past the buffer.  Open MPI 4.1's ob1 does write the
 * whole of a truncated rendezvous message (with btl tcp and vader alike:
 * seen on the host), so there the buffer has room for all of it and the
 * overrun is only counted in the note.  Broken variant: the receive is
 * big enough, so no error comes and the subtest must say so. */
void p2p_truncate(void)
{
	static const size_t lens[] = { 100, 1 << 20 | 1 };
	int peer = pair_peer(), nonblocking;
	MPI_Comm comm;
	size_t i, overrun = 0;

	if (peer < 0)
		return;
	mt_broken_by_test();
	MT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
	MT_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (nonblocking = 0; nonblocking < 2; nonblocking++) {
			size_t len = lens[i], room = mt_broken() ? len : len - 1;
			uint8_t *buf = mt_alloc(len + GUARD), small[8];  /* room for an overrun */
			uint32_t seed = 300 + i * 2 + nonblocking;
			char what[128];

			snprintf(what, sizeof(what), "%zu-byte message into a %zu-byte %s receive", len, room,
				 nonblocking ? "nonblocking" : "blocking");
			if (mt_rank < peer) {
				mt_fill(buf, len, seed);
				MT_MPI(MPI_Send(buf, len, MPI_BYTE, peer, 1, comm));
				mt_fill(small, sizeof(small), seed + 1000);
				MT_MPI(MPI_Send(small, sizeof(small), MPI_BYTE, peer, 2, comm));
			} else {
				MPI_Status st;
				MPI_Request q;
				int rc, cls;

				memset(buf + room, GUARD_BYTE, len + GUARD - room);
				if (nonblocking) {
					MT_MPI(MPI_Irecv(buf, room, MPI_BYTE, peer, 1, comm, &q));
					rc = MPI_Wait(&q, &st);
				} else {
					rc = MPI_Recv(buf, room, MPI_BYTE, peer, 1, comm, &st);
				}
				MPI_Error_class(rc, &cls);
				MT_CHECK(cls == MPI_ERR_TRUNCATE, "%s: expected MPI_ERR_TRUNCATE, got %s", what,
					 rc == MPI_SUCCESS ? "MPI_SUCCESS" : mt_errstr(rc));
				if (len <= 4096)
					mt_check_const(buf + room, GUARD, GUARD_BYTE, what);
				else
					for (size_t b = room; b < len + GUARD; b++)
						overrun += buf[b] != GUARD_BYTE;
				MT_MPI(MPI_Recv(small, sizeof(small), MPI_BYTE, peer, 2, comm, &st));
				mt_check(small, sizeof(small), seed + 1000, "the message after a truncated one");
			}
			free(buf);
		}
	MPI_Comm_free(&comm);
	if (mt_rank == 0)   /* the note is rank 0's: get rank 1's count */
		MPI_Recv(&overrun, 1, MPI_UNSIGNED_LONG, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else if (mt_rank == 1)
		MPI_Send(&overrun, 1, MPI_UNSIGNED_LONG, 0, 3, MPI_COMM_WORLD);
	suite_note("MPI_ERR_TRUNCATE for 100 B and 1 MiB+1, blocking and nonblocking; 100 B: nothing written past; "
		   "1 MiB+1: %zu bytes written past (ob1)", overrun);
}

/* Derived datatypes: a layout (its int positions, in type order) sent
 * with the type and received contiguous, then sent back contiguous and
 * received with the type into a buffer of sentinels: the positions must
 * hold the data and the gaps keep their sentinels. */
struct layout {
	const char *name;
	MPI_Datatype type;
	int *pos;       /* positions of the type's ints, in order */
	int n;          /* how many */
	int span;       /* ints from the first to past the last */
};

static void layout_vector(struct layout *l, int blocks, int blocklen, int stride)
{
	int b, j;

	l->n = blocks * blocklen;
	l->pos = mt_alloc(l->n * sizeof(int));
	for (b = 0; b < blocks; b++)
		for (j = 0; j < blocklen; j++)
			l->pos[b * blocklen + j] = b * stride + j;
	l->span = (blocks - 1) * stride + blocklen;
	MT_MPI(MPI_Type_vector(blocks, blocklen, stride, MPI_INT, &l->type));
	MT_MPI(MPI_Type_commit(&l->type));
}

static void layout_indexed(struct layout *l, int blocks)
{
	int *len = mt_alloc(blocks * sizeof(int)), *disp = mt_alloc(blocks * sizeof(int));
	int b, j, at = 0, n = 0;

	for (b = 0; b < blocks; b++) {
		len[b] = 1 + (b * 7) % 5;
		disp[b] = at + (b * 3) % 4;     /* gaps of 0..3 ints */
		at = disp[b] + len[b];
		n += len[b];
	}
	l->n = n;
	l->span = at;
	l->pos = mt_alloc(n * sizeof(int));
	for (n = 0, b = 0; b < blocks; b++)
		for (j = 0; j < len[b]; j++)
			l->pos[n++] = disp[b] + j;
	MT_MPI(MPI_Type_indexed(blocks, len, disp, MPI_INT, &l->type));
	MT_MPI(MPI_Type_commit(&l->type));
	free(len);
	free(disp);
}

static void layout_exchange(struct layout *l, int peer, uint32_t seed)
{
	int *typed = mt_alloc(l->span * sizeof(int)), *contig = mt_alloc(l->n * sizeof(int));
	int *expect = mt_alloc(l->span * sizeof(int)), i;
	char what[128];
	const int sentinel = 0x7eadbeef;

	if (mt_rank < peer) {
		mt_fill_ints(typed, l->span, seed);
		MT_MPI(MPI_Send(typed, 1, l->type, peer, 5, MPI_COMM_WORLD));
		/* back: contiguous into the type, gaps untouched */
		for (i = 0; i < l->span; i++)
			typed[i] = expect[i] = sentinel;
		for (i = 0; i < l->n; i++)
			expect[l->pos[i]] = mt_ival(seed + 1, i);
		MT_MPI(MPI_Recv(typed, 1, l->type, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		snprintf(what, sizeof(what), "%s (%d ints) received with the type", l->name, l->n);
		mt_check_ints(typed, expect, l->span, what);
	} else {
		MT_MPI(MPI_Recv(contig, l->n, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		for (i = 0; i < l->n; i++)
			expect[i] = mt_ival(seed, l->pos[i]);
		snprintf(what, sizeof(what), "%s (%d ints) sent with the type, received contiguous", l->name, l->n);
		mt_check_ints(contig, expect, l->n, what);
		mt_fill_ints(contig, l->n, seed + 1);
		MT_MPI(MPI_Send(contig, l->n, MPI_INT, peer, 6, MPI_COMM_WORLD));
	}
	free(typed);
	free(contig);
	free(expect);
}

void p2p_datatypes(void)
{
	struct layout l[4] = {
		{ .name = "vector 1000 x 3 stride 7" },
		{ .name = "vector 50000 x 3 stride 7" },
		{ .name = "indexed 777 blocks" },
		{ .name = "indexed 40000 blocks" },
	};
	int peer = pair_peer(), i;

	if (peer < 0)
		return;
	layout_vector(&l[0], 1000, 3, 7);
	layout_vector(&l[1], 50000, 3, 7);
	layout_indexed(&l[2], 777);
	layout_indexed(&l[3], 40000);
	for (i = 0; i < 4; i++) {
		layout_exchange(&l[i], peer, 400 + 2 * i);
		MPI_Type_free(&l[i].type);
		free(l[i].pos);
	}
	suite_note("vector and indexed, small and rendezvous-sized, both directions");
}
