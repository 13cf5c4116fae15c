/* Working-set sweep: bandwidth of MPI_Put, MPI_Get and two-sided
 * MPI_Isend/Irecv with many operations in flight to distinct offsets, as
 * the working set grows past what a NIC's translation cache holds.
 *
 *   ws_sweep [-m MIN:MAX] [-w MAXWS] [-W N] [-T MS] [-R REPS] [-o OPS] [-p PAGES]
 *
 *   -m MIN:MAX  message sizes, powers of 4 from MIN (default 4K:16M)
 *   -w MAXWS    largest working set on each side (default 512M); working
 *               sets are 1M, 4M, 16M, ... and MAXWS, each at least N x size
 *   -W N        operations in flight (default 32)
 *   -T MS       time each point for at least MS milliseconds (default 200)
 *   -R REPS     time each point REPS times and give the median (default 1)
 *   -o OPS      put,get,send (default all three), or memcpy: the
 *               same pattern copied by the host CPU in one process, the
 *               baseline the main job divides by (one rank, no MPI
 *               traffic; how the host's caches shape the curve)
 *   -p PAGES    4k, thp or 4k,thp (default): the buffers with
 *               MADV_NOHUGEPAGE or MADV_HUGEPAGE
 *
 * Rank 0 is the origin (and sender), rank 1 the target.  Each round posts
 * N operations of one size at offsets that walk the whole working set on
 * both sides (origin and target offsets differ), then completes them
 * (MPI_Win_flush; MPI_Waitall).  A point first touches its working set
 * once untimed, then runs rounds covering it at least twice.
 *
 * One row per point: op pages size ws MB/s, and the NIC faults and NIC
 * MMU evictions per MiB moved on both nodes (from elan.ko's counters in
 * debugfs; "-" where there is none, e.g. on the host).  For each op,
 * page kind and size, the smallest point over the working sets is given
 * as a fraction of that size's best: a cliff as the working set grows
 * shows as a small fraction ("ratio" rows; 0.5 is the target).  The buffers
 * are checked after each op: the last round's data must have landed.
 */
#include "mpitest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

enum { OP_PUT, OP_GET, OP_SEND, OP_MEMCPY, NOPS };
static const char *const op_names[NOPS] = { "put", "get", "send", "memcpy" };

/* elan.ko's faults and evictions on this node; -1 without its debugfs. */
static void nic_counters(double c[2])
{
	FILE *f = fopen("/sys/kernel/debug/elan/counters", "r");
	char name[64];
	unsigned long long v;

	c[0] = c[1] = -1;
	if (!f)
		return;
	while (fscanf(f, "%63s %llu", name, &v) == 2) {
		if (!strcmp(name, "faults"))
			c[0] = (double)v;
		else if (!strcmp(name, "evictions"))
			c[1] = (double)v;
	}
	fclose(f);
}

/* Both nodes' counters, summed (each rank reads its own node's). */
static void all_counters(double c[2])
{
	double mine[2];

	nic_counters(mine);
	MPI_Allreduce(mine, c, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	if (mine[0] < 0)		/* some rank has none: say so */
		c[0] = c[1] = -1;
}

static void *ws_buffer(size_t len, int thp)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		mt_fail("mmap of %zu bytes failed", len);
	madvise(p, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	memset(p, 0, len);
	return p;
}

#define MAX_REPS	15

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct point {
	size_t size, ws;
	int win, rounds;
	double moved;
};

/* Offsets of operation k: the origin walks forwards, the target from
 * the other end, so the two sides never pair the same pages twice. */
static size_t off_origin(const struct point *p, long k)
{
	return ((size_t)k * p->size) % (p->ws - p->ws % p->size);
}

static size_t off_target(const struct point *p, long k)
{
	size_t slots = p->ws / p->size;

	return (slots - 1 - (size_t)k % slots) * p->size;
}

/* ROUNDS rounds of p->win operations from operation FIRST on; memcpy
 * copies from mine (the origin side) to peer (the target side). */
static void rounds(int op, struct point *p, char *mine, char *peer,
		   MPI_Win win, long first, int n)
{
	MPI_Request *req = malloc(sizeof(*req) * (size_t)p->win);
	long k = first;
	int r, i;

	for (r = 0; r < n; r++) {
		for (i = 0; i < p->win; i++, k++) {
			size_t lo = off_origin(p, k), ro = off_target(p, k);

			switch (op) {
			case OP_PUT:
				if (mt_rank == 0)
					MPI_Put(mine + lo, (int)p->size, MPI_CHAR, 1,
						(MPI_Aint)ro, (int)p->size, MPI_CHAR, win);
				break;
			case OP_GET:
				if (mt_rank == 0)
					MPI_Get(mine + lo, (int)p->size, MPI_CHAR, 1,
						(MPI_Aint)ro, (int)p->size, MPI_CHAR, win);
				break;
			case OP_MEMCPY:
				memcpy(peer + ro, mine + lo, p->size);
				break;
			default:
				if (mt_rank == 0)
					MPI_Isend(mine + lo, (int)p->size, MPI_CHAR, 1,
						  i, MPI_COMM_WORLD, &req[i]);
				else
					MPI_Irecv(mine + ro, (int)p->size, MPI_CHAR, 0,
						  i, MPI_COMM_WORLD, &req[i]);
				break;
			}
		}
		if (op == OP_SEND)
			MPI_Waitall(p->win, req, MPI_STATUSES_IGNORE);
		else if (win != MPI_WIN_NULL && mt_rank == 0)
			MPI_Win_flush(1, win);
	}
	free(req);
}

/* The last round's data where it must be: the origin's source pages
 * were filled with the point's seed, the other side's hold them now. */
static void check_last(int op, const struct point *p, char *mine,
		       char *peer, MPI_Win win, long last, uint32_t seed)
{
	int i;

	if (win != MPI_WIN_NULL)
		MPI_Win_flush_all(win);
	MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < p->win; i++) {
		long k = last + i;
		size_t lo = off_origin(p, k), ro = off_target(p, k);
		int writer_side = op == OP_GET ? 0 : 1;

		/* the data source: rank 0's origin buffer (put, send) or
		 * rank 1's target buffer (get), filled with the seed */
		if (op == OP_MEMCPY)
			mt_check(peer + ro, p->size > 4096 ? 4096 : p->size,
				 seed, op_names[op]);
		else if (mt_rank == writer_side)
			mt_check(mine + (op == OP_GET ? lo : ro),
				 p->size > 4096 ? 4096 : p->size, seed,
				 op_names[op]);
	}
	MPI_Barrier(MPI_COMM_WORLD);	/* the next point writes there */
}

static void sweep(int op, int thp, size_t minsz, size_t maxsz, size_t maxws,
		  int inflight, int min_ms, int reps)
{
	size_t ws, size;
	char *mine, *peer = NULL;
	MPI_Win win = MPI_WIN_NULL;
	double worst[64], best[64];
	int si, nsz = 0;

	mine = ws_buffer(maxws, thp);
	if (op == OP_MEMCPY)
		peer = ws_buffer(maxws, thp);
	else if (op != OP_SEND)
		MPI_Win_create(mine, (MPI_Aint)maxws, 1, MPI_INFO_NULL,
			       MPI_COMM_WORLD, &win);
	if (win != MPI_WIN_NULL)
		MPI_Win_lock_all(0, win);
	for (size = minsz; size <= maxsz; size *= 4)
		nsz++;
	for (si = 0; si < nsz; si++)
		worst[si] = best[si] = 0;
	for (ws = 1 << 20; ws <= maxws; ws = ws < maxws && ws * 4 > maxws ? maxws : ws * 4) {
		for (size = minsz, si = 0; size <= maxsz; size *= 4, si++) {
			struct point p = { .size = size, .ws = ws, .win = inflight };
			double c0[2], c1[2], t0, mbs, rate[MAX_REPS];
			uint32_t seed = (uint32_t)(ws / 4096 + size + (size_t)op * 7 + (size_t)thp);
			long per_pass, k0;
			int n, go, r;

			if ((size_t)inflight * size > ws)
				continue;
			/* the source side's pages carry the seed: the last
			 * round's data is checked against it */
			if (op == OP_MEMCPY || (op == OP_GET) == (mt_rank == 1))
				for (size_t o = 0; o + size <= ws; o += size)
					mt_fill(mine + o, size > 4096 ? 4096 : size, seed);
			per_pass = (long)(ws / size / (size_t)inflight);
			if (per_pass < 1)
				per_pass = 1;
			/* first touch, untimed: every page once */
			rounds(op, &p, mine, peer, win, 0, (int)per_pass);
			MPI_Barrier(MPI_COMM_WORLD);
			all_counters(c0);
			k0 = per_pass * inflight;
			p.moved = 0;
			/* reps timed passes, the median of their rates: one
			 * short pass on a shared host can be off by 2x */
			for (r = 0; r < reps; r++) {
				t0 = MPI_Wtime();
				n = 0;
				do {
					rounds(op, &p, mine, peer, win,
					       k0 + (long)n * inflight, (int)per_pass);
					n += (int)per_pass;
					go = n < 2 * per_pass ||
					     (MPI_Wtime() - t0) * 1000 < min_ms;
					MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
				} while (go);
				MPI_Barrier(MPI_COMM_WORLD);
				rate[r] = (double)n * inflight * (double)size /
					  (MPI_Wtime() - t0) / 1e6;
				p.moved += (double)n * inflight * (double)size;
				k0 += (long)n * inflight;
			}
			all_counters(c1);
			check_last(op, &p, mine, peer, win, k0 - inflight, seed);
			mbs = median(rate, reps);
			if (mt_rank == 0) {
				double mib = p.moved / (1 << 20);

				if (c0[0] >= 0)
					printf("%-6s %-3s %9zu %10zu %10.1f %10.3f %10.3f\n",
					       op_names[op], thp ? "thp" : "4k", size, ws,
					       mbs, (c1[0] - c0[0]) / mib,
					       (c1[1] - c0[1]) / mib);
				else
					printf("%-6s %-3s %9zu %10zu %10.1f %10s %10s\n",
					       op_names[op], thp ? "thp" : "4k", size, ws,
					       mbs, "-", "-");
				fflush(stdout);
			}
			if (mbs > best[si])
				best[si] = mbs;
			if (worst[si] == 0 || mbs < worst[si])
				worst[si] = mbs;
		}
	}
	if (mt_rank == 0)
		for (size = minsz, si = 0; size <= maxsz; size *= 4, si++)
			if (best[si] > 0)
				printf("ratio %s %s %zu: worst/best over working sets %.2f (%.1f / %.1f MB/s)\n",
				       op_names[op], thp ? "thp" : "4k", size,
				       worst[si] / best[si], worst[si], best[si]);
	if (win != MPI_WIN_NULL) {
		MPI_Win_unlock_all(win);
		MPI_Win_free(&win);
	}
	munmap(mine, maxws);
	if (peer)
		munmap(peer, maxws);
}

static void usage(void)
{
	if (mt_rank == 0)
		fprintf(stderr, "usage: ws_sweep [-m MIN:MAX] [-w MAXWS] [-W N] [-T MS] [-R REPS] [-o put,get,send|memcpy] [-p 4k,thp]\n");
	MPI_Finalize();
	exit(2);
}

int main(int argc, char **argv)
{
	size_t minsz = 4096, maxsz = 16 << 20, maxws = (size_t)512 << 20;
	const char *ops = "put,get,send", *pages = "4k,thp";
	int inflight = 32, min_ms = 200, reps = 1, c, op;
	char *colon;

	mt_init(&argc, &argv);
	while ((c = getopt(argc, argv, "m:w:W:T:R:o:p:h")) != -1) {
		switch (c) {
		case 'm':
			colon = strchr(optarg, ':');
			if (colon) {
				*colon = 0;
				minsz = mt_parse_size(optarg);
				maxsz = mt_parse_size(colon + 1);
			} else {
				maxsz = mt_parse_size(optarg);
			}
			break;
		case 'w': maxws = mt_parse_size(optarg); break;
		case 'W': inflight = atoi(optarg); break;
		case 'T': min_ms = atoi(optarg); break;
		case 'R': reps = atoi(optarg); break;
		case 'o': ops = optarg; break;
		case 'p': pages = optarg; break;
		default: usage();
		}
	}
	/* memcpy alone runs in one process, the MPI ops in two */
	if (mt_size != (strcmp(ops, "memcpy") ? 2 : 1) || minsz < 1 || maxsz < minsz || inflight < 1 || reps < 1 || reps > MAX_REPS ||
	    maxws < (1 << 20))
		usage();
	if (mt_rank == 0) {
		printf("# Working-set sweep: %d operations in flight to distinct offsets, sizes %zu..%zu, working sets 1M..%zu on each side, MB/s the median of %d timed passes\n",
		       inflight, minsz, maxsz, maxws, reps);
		printf("# %-5s %-3s %9s %10s %10s %10s %10s\n", "op", "pg", "size",
		       "ws", "MB/s", "faults/MiB", "evict/MiB");
	}
	for (op = 0; op < NOPS; op++) {
		if (!strstr(ops, op_names[op]))
			continue;
		if (strstr(pages, "4k"))
			sweep(op, 0, minsz, maxsz, maxws, inflight, min_ms, reps);
		if (strstr(pages, "thp"))
			sweep(op, 1, minsz, maxsz, maxws, inflight, min_ms, reps);
	}
	MPI_Finalize();
	return 0;
}
