/* Collective subtests of mpi_suite.  Every rank's contribution is a
 * pattern of its rank, so each rank computes what it must receive by
 * itself; roots rotate; counts go from 1 int to suite_opt.coll_counts_max;
 * v-variants use unequal counts and gaps that must keep their sentinels. */
#include "suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL 0x7eadbeef

/* The counts each collective runs at. */
static int ncounts(void) { return 4; }
static int count_at(int k)
{
	static const int small[] = { 1, 7, 1000 };

	return k < 3 ? small[k] : suite_opt.coll_counts_max;
}
static int root_at(int k) { return (k * (mt_size / 2 + 1)) % mt_size; }

/* Rank R's contribution to collective call K (C: which call). */
static uint32_t seed_of(int c, int k, int r) { return 100000u + c * 4096 + k * 256 + r; }

static int *ints(size_t n) { return mt_alloc((n ? n : 1) * sizeof(int)); }
static void sentinels(int *p, size_t n) { for (size_t i = 0; i < n; i++) p[i] = SENTINEL; }

static void what_is(char *w, size_t len, const char *op, int count, int root)
{
	if (root >= 0)
		snprintf(w, len, "%s of %d ints, root %d", op, count, root);
	else
		snprintf(w, len, "%s of %d ints", op, count);
}

void coll_bcast(void)
{
	char w[96];

	for (int k = 0; k < ncounts(); k++) {
		size_t n = (size_t)count_at(k) * 4 + 3;  /* bytes: odd sizes */
		int root = root_at(k);
		uint8_t *buf = mt_alloc(n);

		if (mt_rank == root)
			mt_fill(buf, n, seed_of(0, k, root));
		else
			memset(buf, 0, n);
		MT_MPI(MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD));
		snprintf(w, sizeof(w), "MPI_Bcast of %zu bytes, root %d", n, root);
		mt_check(buf, n, seed_of(0, k, root), w);
		free(buf);
	}
}

/* Expected SUM (or MAX) over ranks LO..HI-1 of seed_of(c, k, r) at index i. */
static void expect_reduce(int *out, size_t n, size_t first, int c, int k, int lo, int hi, MPI_Op op)
{
	for (size_t i = 0; i < n; i++) {
		int v = op == MPI_SUM ? 0 : -1001;

		for (int r = lo; r < hi; r++) {
			int x = mt_ival(seed_of(c, k, r), first + i);

			v = op == MPI_SUM ? v + x : (x > v ? x : v);
		}
		out[i] = v;
	}
}

void coll_reduce(void)
{
	MPI_Op ops[2] = { MPI_SUM, MPI_MAX };
	char w[96];

	for (int o = 0; o < 2; o++)
		for (int k = 0; k < ncounts(); k++) {
			int n = count_at(k), root = root_at(k + o);
			int *in = ints(n), *out = ints(n), *expect = ints(n);

			mt_fill_ints(in, n, seed_of(1 + o, k, mt_rank));
			sentinels(out, n);
			MT_MPI(MPI_Reduce(in, out, n, MPI_INT, ops[o], root, MPI_COMM_WORLD));
			if (mt_rank == root) {
				expect_reduce(expect, n, 0, 1 + o, k, 0, mt_size, ops[o]);
				what_is(w, sizeof(w), o ? "MPI_Reduce MAX" : "MPI_Reduce SUM", n, root);
				mt_check_ints(out, expect, n, w);
			}
			free(in); free(out); free(expect);
		}
}

void coll_allreduce(void)
{
	char w[96];

	for (int inplace = 0; inplace < 2; inplace++)
		for (int k = 0; k < ncounts(); k++) {
			int n = count_at(k), *in = ints(n), *out = ints(n), *expect = ints(n);

			if (inplace) {
				mt_fill_ints(out, n, seed_of(3, k, mt_rank));
				MT_MPI(MPI_Allreduce(MPI_IN_PLACE, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
			} else {
				mt_fill_ints(in, n, seed_of(4, k, mt_rank));
				sentinels(out, n);
				MT_MPI(MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
			}
			expect_reduce(expect, n, 0, inplace ? 3 : 4, k, 0, mt_size, MPI_SUM);
			what_is(w, sizeof(w), inplace ? "MPI_Allreduce SUM in place" : "MPI_Allreduce SUM", n, -1);
			mt_check_ints(out, expect, n, w);
			free(in); free(out); free(expect);
		}
}

/* The v-layout: rank r has n/2 + r ints at displacement r * (n/2 + size + 3),
 * so there are gaps between the blocks. */
static int vcount(int n, int r) { return n / 2 + r; }
static int vdispl(int n, int r) { return r * (n / 2 + mt_size + 3); }
static int vspan(int n) { return vdispl(n, mt_size); }

/* What a gathered buffer must hold: block r = pattern (c, k, r) of its
 * length, everything else sentinels. */
static void expect_gathered(int *e, int n, int c, int k, int v)
{
	int span = v ? vspan(n) : n * mt_size;

	sentinels(e, span);
	for (int r = 0; r < mt_size; r++) {
		int cnt = v ? vcount(n, r) : n, at = v ? vdispl(n, r) : r * n;

		for (int i = 0; i < cnt; i++)
			e[at + i] = mt_ival(seed_of(c, k, r), i);
	}
}

static void gather_common(int all)
{
	int *counts = ints(mt_size), *displs = ints(mt_size);
	char w[96];

	for (int v = 0; v < 2; v++)
		for (int k = 0; k < ncounts(); k++) {
			int n = count_at(k), root = all ? -1 : root_at(k + v), c = 5 + all * 2 + v;
			int cnt = v ? vcount(n, mt_rank) : n, span = v ? vspan(n) : n * mt_size;
			int *in = ints(cnt), *out = ints(span), *expect = ints(span);

			for (int r = 0; r < mt_size; r++) {
				counts[r] = vcount(n, r);
				displs[r] = vdispl(n, r);
			}
			mt_fill_ints(in, cnt, seed_of(c, k, mt_rank));
			sentinels(out, span);
			if (all && v)
				MT_MPI(MPI_Allgatherv(in, cnt, MPI_INT, out, counts, displs, MPI_INT, MPI_COMM_WORLD));
			else if (all)
				MT_MPI(MPI_Allgather(in, n, MPI_INT, out, n, MPI_INT, MPI_COMM_WORLD));
			else if (v)
				MT_MPI(MPI_Gatherv(in, cnt, MPI_INT, out, counts, displs, MPI_INT, root, MPI_COMM_WORLD));
			else
				MT_MPI(MPI_Gather(in, n, MPI_INT, out, n, MPI_INT, root, MPI_COMM_WORLD));
			if (all || mt_rank == root) {
				expect_gathered(expect, n, c, k, v);
				what_is(w, sizeof(w), all ? (v ? "MPI_Allgatherv" : "MPI_Allgather") :
					(v ? "MPI_Gatherv" : "MPI_Gather"), n, root);
				mt_check_ints(out, expect, span, w);
			}
			free(in); free(out); free(expect);
		}
	free(counts); free(displs);
}

void coll_gather(void) { gather_common(0); }
void coll_allgather(void) { gather_common(1); }

void coll_scatter(void)
{
	int *counts = ints(mt_size), *displs = ints(mt_size);
	char w[96];

	for (int v = 0; v < 2; v++)
		for (int k = 0; k < ncounts(); k++) {
			int n = count_at(k), root = root_at(k + v + 1), c = 9 + v;
			int cnt = v ? vcount(n, mt_rank) : n, span = v ? vspan(n) : n * mt_size;
			int *in = ints(span), *out = ints(cnt + 1), *expect = ints(cnt + 1);

			for (int r = 0; r < mt_size; r++) {
				counts[r] = vcount(n, r);
				displs[r] = vdispl(n, r);
			}
			/* the root's buffer: block r = pattern of r, as for gather */
			if (mt_rank == root) {
				expect_gathered(in, n, c, k, v);
				mt_corrupt(in, span * sizeof(int));
			}
			sentinels(out, cnt + 1);
			if (v)
				MT_MPI(MPI_Scatterv(in, counts, displs, MPI_INT, out, cnt, MPI_INT, root, MPI_COMM_WORLD));
			else
				MT_MPI(MPI_Scatter(in, n, MPI_INT, out, n, MPI_INT, root, MPI_COMM_WORLD));
			for (int i = 0; i < cnt; i++)
				expect[i] = mt_ival(seed_of(c, k, mt_rank), i);
			expect[cnt] = SENTINEL;         /* nothing past the block */
			what_is(w, sizeof(w), v ? "MPI_Scatterv" : "MPI_Scatter", n, root);
			mt_check_ints(out, expect, cnt + 1, w);
			free(in); free(out); free(expect);
		}
	free(counts); free(displs);
}

/* Alltoall: the block from rank s to rank d is pattern (c, k, s * 64 + d).
 * In the v-variant it has n/2 + (s + 2d) % 3 ints, packed with a gap of
 * one int on the send side and two on the receive side. */
static int a2a_count(int n, int v, int s, int d) { return v ? n / 2 + (s + 2 * d) % 3 : n; }

void coll_alltoall(void)
{
	int *sc = ints(mt_size), *sd = ints(mt_size), *rc = ints(mt_size), *rd = ints(mt_size);
	char w[96];

	for (int v = 0; v < 2; v++)
		for (int k = 0; k < ncounts(); k++) {
			int n = count_at(k), c = 11 + v, stot = 0, rtot = 0;

			for (int j = 0; j < mt_size; j++) {
				sc[j] = a2a_count(n, v, mt_rank, j);
				sd[j] = stot;
				stot += sc[j] + v;
				rc[j] = a2a_count(n, v, j, mt_rank);
				rd[j] = rtot;
				rtot += rc[j] + 2 * v;
			}
			int *in = ints(stot), *out = ints(rtot), *expect = ints(rtot);

			sentinels(in, stot);
			for (int j = 0; j < mt_size; j++)
				mt_fill_ints(in + sd[j], sc[j], seed_of(c, k, mt_rank * 64 + j));
			sentinels(out, rtot);
			sentinels(expect, rtot);
			for (int j = 0; j < mt_size; j++)
				for (int i = 0; i < rc[j]; i++)
					expect[rd[j] + i] = mt_ival(seed_of(c, k, j * 64 + mt_rank), i);
			if (v)
				MT_MPI(MPI_Alltoallv(in, sc, sd, MPI_INT, out, rc, rd, MPI_INT, MPI_COMM_WORLD));
			else
				MT_MPI(MPI_Alltoall(in, n, MPI_INT, out, n, MPI_INT, MPI_COMM_WORLD));
			what_is(w, sizeof(w), v ? "MPI_Alltoallv" : "MPI_Alltoall", n, -1);
			mt_check_ints(out, expect, rtot, w);
			free(in); free(out); free(expect);
		}
	free(sc); free(sd); free(rc); free(rd);
}

/* Reduce_scatter with unequal blocks (rank r gets n/2 + r ints) and
 * Reduce_scatter_block (n each). */
void coll_reduce_scatter(void)
{
	int *counts = ints(mt_size);
	char w[96];

	for (int blk = 0; blk < 2; blk++)
		for (int k = 0; k < ncounts(); k++) {
			int n = count_at(k), c = 13 + blk, total = 0, first = 0;

			for (int r = 0; r < mt_size; r++) {
				counts[r] = blk ? n : vcount(n, r);
				if (r < mt_rank)
					first += counts[r];
				total += counts[r];
			}
			int mine = counts[mt_rank], *in = ints(total), *out = ints(mine + 1), *expect = ints(mine + 1);

			mt_fill_ints(in, total, seed_of(c, k, mt_rank));
			sentinels(out, mine + 1);
			if (blk)
				MT_MPI(MPI_Reduce_scatter_block(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
			else
				MT_MPI(MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
			expect_reduce(expect, mine, first, c, k, 0, mt_size, MPI_SUM);
			expect[mine] = SENTINEL;
			what_is(w, sizeof(w), blk ? "MPI_Reduce_scatter_block SUM" : "MPI_Reduce_scatter SUM", n, -1);
			mt_check_ints(out, expect, mine + 1, w);
			free(in); free(out); free(expect);
		}
	free(counts);
}

void coll_scan(void)
{
	char w[96];

	for (int ex = 0; ex < 2; ex++)
		for (int k = 0; k < ncounts(); k++) {
			int n = count_at(k), c = 15 + ex, *in = ints(n), *out = ints(n), *expect = ints(n);

			mt_fill_ints(in, n, seed_of(c, k, mt_rank));
			sentinels(out, n);
			if (ex)
				MT_MPI(MPI_Exscan(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
			else
				MT_MPI(MPI_Scan(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
			if (!ex || mt_rank > 0) {   /* Exscan leaves rank 0's undefined */
				expect_reduce(expect, n, 0, c, k, 0, ex ? mt_rank : mt_rank + 1, MPI_SUM);
				what_is(w, sizeof(w), ex ? "MPI_Exscan SUM" : "MPI_Scan SUM", n, -1);
				mt_check_ints(out, expect, n, w);
			}
			free(in); free(out); free(expect);
		}
}

/* No rank may leave a barrier before every rank has entered it.  The
 * late rank spends 0.3 s polling for the "I left" messages the others
 * send right after their barrier returns, before it enters the barrier
 * itself: any such message means the barrier let someone through. */
void coll_barrier(void)
{
	int lates[2] = { 0, mt_size - 1 }, flag, dummy = 0;

	for (int t = 0; t < 2; t++) {
		int late = lates[t];

		MPI_Barrier(MPI_COMM_WORLD);
		if (mt_rank == late) {
			double end = MPI_Wtime() + 0.3;
			MPI_Status st;

			while (MPI_Wtime() < end) {
				MT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, &st));
				MT_CHECK(!flag, "rank %d left MPI_Barrier before rank %d entered it", st.MPI_SOURCE, late);
			}
			MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
			for (int r = 0; r < mt_size - 1; r++)
				MT_MPI(MPI_Recv(&dummy, 1, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		} else {
			if (!mt_broken())       /* broken: a barrier that does not wait */
				MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
			MT_MPI(MPI_Send(&dummy, 1, MPI_INT, late, 77, MPI_COMM_WORLD));
		}
	}
	suite_note("late rank 0 and %d: nobody left early", mt_size - 1);
}
