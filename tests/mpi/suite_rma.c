/* One-sided subtests of mpi_suite: every RMA operation (put, get,
 * accumulate SUM and REPLACE, get_accumulate SUM and NO_OP,
 * fetch_and_op, compare_and_swap) under each synchronisation: fence,
 * post/start/complete/wait, lock/unlock and lock_all/flush.  Fence and
 * lock use MPI_Win_allocate'd windows, PSCW and lock_all MPI_Win_create
 * on malloc'd memory, so both kinds of window memory are covered.  The
 * rma/dynamic/ subtests run the same under each synchronisation on a
 * dynamic window (MPI_Win_create_dynamic) with two malloc'd regions
 * attached, displacements being addresses, and detach them at the end;
 * there a put to memory never attached must be refused with
 * MPI_ERR_RMA_RANGE and write nothing (where the osc checks addresses).
 *
 * Each operation is one epoch with one of two patterns: RING (each rank
 * targets the next, data moves around the ring) or TO_ZERO (every rank
 * targets rank 0 at once: contention, which the atomic operations must
 * survive).  After the epoch and a barrier, targets check their window
 * and origins their result buffers. */
#include "suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

enum sync { FENCE, PSCW, LOCK, LOCK_ALL };
enum pattern { RING, TO_ZERO };

#define WIN_BYTES (256 << 10)          /* disp_unit 1: displacements in bytes */
#define SMALL 1001
#define LARGE 65537
#define SMALL_AT 3                  /* unaligned offsets in the window */
#define LARGE_AT 4101

struct rma {
	enum sync sync;
	MPI_Win win;
	uint8_t *mem;                   /* my window memory */
	void *own;                      /* malloc'd memory of MPI_Win_create */
	int exclusive;                  /* LOCK mode: lock type of this epoch */
	MPI_Aint *base;                 /* dynamic: every rank's mem address */
	uint8_t *extra;                 /* dynamic: a second attached region */
	MPI_Aint *extra_base;           /* dynamic: every rank's extra address */
};

#define EXTRA_BYTES (12 << 10)
#define EXTRA_AT 5

/* The displacement of byte OFF of rank T's window memory. */
static MPI_Aint disp(const struct rma *w, int t, MPI_Aint off) { return w->base ? w->base[t] + off : off; }

/* Every rank's address of its P (dynamic windows address by it). */
static MPI_Aint *all_addresses(void *p)
{
	MPI_Aint a, *all = mt_alloc(mt_size * sizeof(*all));

	MT_MPI(MPI_Get_address(p, &a));
	MT_MPI(MPI_Allgather(&a, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD));
	return all;
}

static int target_of(enum pattern p) { return p == RING ? (mt_rank + 1) % mt_size : 0; }
static int prev_rank(void) { return (mt_rank + mt_size - 1) % mt_size; }

static void rma_create(struct rma *w, enum sync s, int dynamic)
{
	w->sync = s;
	w->own = NULL;
	w->base = w->extra_base = NULL;
	w->extra = NULL;
	if (dynamic) {
		w->own = mt_alloc(WIN_BYTES);
		w->mem = w->own;
		w->extra = mt_alloc(EXTRA_BYTES);
		MT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
		MT_MPI(MPI_Win_attach(w->win, w->mem, WIN_BYTES));
		MT_MPI(MPI_Win_attach(w->win, w->extra, EXTRA_BYTES));
		/* (the allgathers also order the attaches before any access) */
		w->base = all_addresses(w->mem);
		w->extra_base = all_addresses(w->extra);
	} else if (s == PSCW || s == LOCK_ALL) {
		w->own = mt_alloc(WIN_BYTES);
		w->mem = w->own;
		MT_MPI(MPI_Win_create(w->mem, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
	} else {
		MT_MPI(MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem, &w->win));
	}
	MT_MPI(MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN));
}

static void rma_destroy(struct rma *w)
{
	if (w->base) {
		MPI_Barrier(MPI_COMM_WORLD);    /* nobody accesses them any more */
		MT_MPI(MPI_Win_detach(w->win, w->extra));
		MT_MPI(MPI_Win_detach(w->win, w->mem));
	}
	MT_MPI(MPI_Win_free(&w->win));
	free(w->own);
	free(w->extra);
	free(w->base);
	free(w->extra_base);
}

/* Local access to my own window memory (setting it up, checking it):
 * under a lock on myself in the passive modes, plain otherwise (the
 * fences, post/wait and barriers around separate it from remote access). */
static void local_begin(struct rma *w)
{
	if (w->sync == LOCK || w->sync == LOCK_ALL)
		MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, w->win));
}

static void local_end(struct rma *w)
{
	if (w->sync == LOCK || w->sync == LOCK_ALL) {
		MT_MPI(MPI_Win_sync(w->win));
		MT_MPI(MPI_Win_unlock(mt_rank, w->win));
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

static MPI_Group group_of(const int *ranks, int n)
{
	MPI_Group world, g;

	MPI_Comm_group(MPI_COMM_WORLD, &world);
	MPI_Group_incl(world, n, ranks, &g);
	MPI_Group_free(&world);
	return g;
}

/* Who targets me under pattern P: for post. */
static int exposed_to(enum pattern p, int *ranks)
{
	if (p == RING) {
		ranks[0] = prev_rank();
		return 1;
	}
	if (mt_rank != 0)
		return 0;
	for (int r = 0; r < mt_size; r++)
		ranks[r] = r;
	return mt_size;
}

static void epoch_open(struct rma *w, enum pattern p, int atomic)
{
	int target = target_of(p), *ranks, n;
	MPI_Group g;

	switch (w->sync) {
	case FENCE:
		MT_MPI(MPI_Win_fence(0, w->win));
		break;
	case PSCW:
		ranks = mt_alloc(mt_size * sizeof(int));
		n = exposed_to(p, ranks);
		if (n) {
			g = group_of(ranks, n);
			MT_MPI(MPI_Win_post(g, 0, w->win));
			MPI_Group_free(&g);
		}
		g = group_of(&target, 1);
		MT_MPI(MPI_Win_start(g, 0, w->win));
		MPI_Group_free(&g);
		free(ranks);
		break;
	case LOCK:
		/* atomics may share the target; plain puts and gets take it alone */
		MT_MPI(MPI_Win_lock(atomic ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE, target, 0, w->win));
		break;
	case LOCK_ALL:
		MT_MPI(MPI_Win_lock_all(0, w->win));
		break;
	}
}

static void epoch_close(struct rma *w, enum pattern p)
{
	int target = target_of(p);

	switch (w->sync) {
	case FENCE:
		MT_MPI(MPI_Win_fence(0, w->win));
		break;
	case PSCW:
		MT_MPI(MPI_Win_complete(w->win));
		if (p == RING || mt_rank == 0)  /* those that posted */
			MT_MPI(MPI_Win_wait(w->win));
		break;
	case LOCK:
		MT_MPI(MPI_Win_unlock(target, w->win));
		break;
	case LOCK_ALL:
		MT_MPI(MPI_Win_flush(target, w->win));
		MT_MPI(MPI_Win_unlock_all(w->win));
		break;
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

static void op_put(struct rma *w)
{
	int t = target_of(RING), src = prev_rank();
	uint8_t *s = mt_alloc(SMALL + LARGE);

	local_begin(w);
	memset(w->mem, GUARD_BYTE, WIN_BYTES);
	local_end(w);
	mt_fill(s, SMALL, 1000 + mt_rank);
	mt_fill(s + SMALL, LARGE, 2000 + mt_rank);
	epoch_open(w, RING, 0);
	MT_MPI(MPI_Put(s, SMALL, MPI_BYTE, t, disp(w, t, SMALL_AT), SMALL, MPI_BYTE, w->win));
	MT_MPI(MPI_Put(s + SMALL, LARGE, MPI_BYTE, t, disp(w, t, LARGE_AT), LARGE, MPI_BYTE, w->win));
	epoch_close(w, RING);
	local_begin(w);
	mt_check(w->mem + SMALL_AT, SMALL, 1000 + src, "MPI_Put of 1001 bytes at offset 3");
	mt_check(w->mem + LARGE_AT, LARGE, 2000 + src, "MPI_Put of 65537 bytes at offset 4101");
	mt_check_const(w->mem, SMALL_AT, GUARD_BYTE, "window bytes before the first MPI_Put");
	mt_check_const(w->mem + SMALL_AT + SMALL, LARGE_AT - SMALL_AT - SMALL, GUARD_BYTE,
		       "window bytes between the MPI_Puts");
	mt_check_const(w->mem + LARGE_AT + LARGE, WIN_BYTES - LARGE_AT - LARGE, GUARD_BYTE,
		       "window bytes after the MPI_Puts");
	local_end(w);
	free(s);
}

static void op_get(struct rma *w)
{
	int t = target_of(RING);
	uint8_t *r = mt_alloc(SMALL + LARGE);

	local_begin(w);
	mt_fill(w->mem, WIN_BYTES, 3000 + mt_rank);
	local_end(w);
	epoch_open(w, RING, 0);
	MT_MPI(MPI_Get(r, SMALL, MPI_BYTE, t, disp(w, t, SMALL_AT), SMALL, MPI_BYTE, w->win));
	MT_MPI(MPI_Get(r + SMALL, LARGE, MPI_BYTE, t, disp(w, t, LARGE_AT), LARGE, MPI_BYTE, w->win));
	epoch_close(w, RING);
	mt_check_from(r, SMALL, 3000 + t, SMALL_AT, "MPI_Get of 1001 bytes at offset 3");
	mt_check_from(r + SMALL, LARGE, 3000 + t, LARGE_AT, "MPI_Get of 65537 bytes at offset 4101");
	free(r);
}

#define NACC 1000
#define NACC_BIG 16384

/* Accumulate SUM from every rank into rank 0 at once, small and large. */
static void op_acc_sum(struct rma *w)
{
	int *win = (int *)w->mem, *mine = mt_alloc(NACC_BIG * sizeof(int));
	int *expect = mt_alloc(NACC_BIG * sizeof(int));
	static const int counts[2] = { NACC, NACC_BIG };
	char what[96];

	local_begin(w);
	for (int i = 0; i < NACC_BIG; i++)
		win[i] = mt_ival(4000 + mt_rank, i);
	local_end(w);
	for (int c = 0; c < 2; c++) {
		int n = counts[c];

		mt_fill_ints(mine, n, 4100 + c * 64 + mt_rank);
		epoch_open(w, TO_ZERO, 1);
		MT_MPI(MPI_Accumulate(mine, n, MPI_INT, 0, disp(w, 0, 0), n, MPI_INT, MPI_SUM, w->win));
		epoch_close(w, TO_ZERO);
	}
	if (mt_rank == 0) {
		for (int i = 0; i < NACC_BIG; i++) {
			expect[i] = mt_ival(4000, i);
			for (int c = 0; c < 2; c++)
				for (int r = 0; r < mt_size && i < counts[c]; r++)
					expect[i] += mt_ival(4100 + c * 64 + r, i);
		}
		local_begin(w);
		snprintf(what, sizeof(what), "MPI_Accumulate SUM of %d and %d ints from all %d ranks", NACC,
			 NACC_BIG, mt_size);
		mt_check_ints(win, expect, NACC_BIG, what);
		local_end(w);
	} else {
		local_begin(w);
		local_end(w);
	}
	free(mine);
	free(expect);
}

static void op_acc_replace(struct rma *w)
{
	int *win = (int *)w->mem, *mine = mt_alloc(NACC * sizeof(int)), *expect = mt_alloc((NACC + 1) * sizeof(int));

	local_begin(w);
	for (int i = 0; i <= NACC; i++)
		win[i] = -7;
	local_end(w);
	mt_fill_ints(mine, NACC, 4200 + mt_rank);
	epoch_open(w, RING, 1);
	MT_MPI(MPI_Accumulate(mine, NACC, MPI_INT, target_of(RING), disp(w, target_of(RING), 0), NACC, MPI_INT, MPI_REPLACE, w->win));
	epoch_close(w, RING);
	for (int i = 0; i < NACC; i++)
		expect[i] = mt_ival(4200 + prev_rank(), i);
	expect[NACC] = -7;
	local_begin(w);
	mt_check_ints(win, expect, NACC + 1, "MPI_Accumulate REPLACE of 1000 ints");
	local_end(w);
	free(mine);
	free(expect);
}

/* Get_accumulate SUM returns the old values and adds; NO_OP (on the
 * second half of the window's ints) only fetches. */
static void op_get_acc(struct rma *w)
{
	int *win = (int *)w->mem, t = target_of(RING);
	int *mine = mt_alloc(NACC * sizeof(int)), *res = mt_alloc(2 * NACC * sizeof(int));
	int *expect = mt_alloc(2 * NACC * sizeof(int));

	local_begin(w);
	for (int i = 0; i < 2 * NACC; i++)
		win[i] = mt_ival(4300 + mt_rank, i);
	local_end(w);
	mt_fill_ints(mine, NACC, 4400 + mt_rank);
	epoch_open(w, RING, 1);
	MT_MPI(MPI_Get_accumulate(mine, NACC, MPI_INT, res, NACC, MPI_INT, t, disp(w, t, 0), NACC, MPI_INT, MPI_SUM, w->win));
	MT_MPI(MPI_Get_accumulate(NULL, 0, MPI_INT, res + NACC, NACC, MPI_INT, t, disp(w, t, NACC * sizeof(int)), NACC, MPI_INT,
				  MPI_NO_OP, w->win));
	epoch_close(w, RING);
	for (int i = 0; i < 2 * NACC; i++)
		expect[i] = mt_ival(4300 + t, i);
	mt_check_ints(res, expect, 2 * NACC, "MPI_Get_accumulate (SUM, then NO_OP): fetched values");
	for (int i = 0; i < 2 * NACC; i++)
		expect[i] = mt_ival(4300 + mt_rank, i) + (i < NACC ? mt_ival(4400 + prev_rank(), i) : 0);
	local_begin(w);
	mt_check_ints(win, expect, 2 * NACC, "MPI_Get_accumulate (SUM, then NO_OP): target window");
	local_end(w);
	free(mine);
	free(res);
	free(expect);
}

/* Everyone fetch-and-adds 1 to rank 0's counter NFOP times at once: the
 * fetched values, over all ranks, are each of start..start+n-1 once. */
#define NFOP 8
#define FOP_START 1000

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void op_fetch_and_op(struct rma *w)
{
	int64_t *ctr = (int64_t *)w->mem, one = mt_broken() ? 2 : 1, got[NFOP], *all = NULL;
	int n = NFOP * mt_size;

	local_begin(w);
	ctr[0] = FOP_START;
	local_end(w);
	epoch_open(w, TO_ZERO, 1);
	for (int i = 0; i < NFOP; i++)
		MT_MPI(MPI_Fetch_and_op(&one, &got[i], MPI_INT64_T, 0, disp(w, 0, 0), MPI_SUM, w->win));
	epoch_close(w, TO_ZERO);
	if (mt_rank == 0)
		all = mt_alloc(n * sizeof(int64_t));
	MPI_Gather(got, NFOP, MPI_INT64_T, all, NFOP, MPI_INT64_T, 0, MPI_COMM_WORLD);
	local_begin(w);
	if (mt_rank == 0) {
		qsort(all, n, sizeof(int64_t), cmp64);
		for (int i = 0; i < n; i++)
			MT_CHECK(all[i] == FOP_START + i,
				 "MPI_Fetch_and_op SUM 1, %d times from each of %d ranks: the %d-th smallest fetched value is %lld, expected %d",
				 NFOP, mt_size, i, (long long)all[i], FOP_START + i);
		MT_CHECK(ctr[0] == FOP_START + n, "MPI_Fetch_and_op: counter %lld, expected %d", (long long)ctr[0],
			 FOP_START + n);
	}
	local_end(w);
	free(all);
}

/* Everyone compares-and-swaps rank 0's slot from -1 to its own rank at
 * once: exactly one wins, the others fetch the winner's rank, the slot
 * ends with it.  A swap that cannot match leaves its slot alone. */
static void op_cas(struct rma *w)
{
	int64_t *slot = (int64_t *)w->mem, mine = mt_rank, cmp = -1, never = -2, got, got2, *all = NULL;

	local_begin(w);
	slot[0] = -1;
	slot[1] = 77;
	local_end(w);
	epoch_open(w, TO_ZERO, 1);
	MT_MPI(MPI_Compare_and_swap(&mine, &cmp, &got, MPI_INT64_T, 0, disp(w, 0, 0), w->win));
	MT_MPI(MPI_Compare_and_swap(&mine, &never, &got2, MPI_INT64_T, 0, disp(w, 0, sizeof(int64_t)), w->win));
	epoch_close(w, TO_ZERO);
	MT_CHECK(got2 == 77, "MPI_Compare_and_swap that cannot match fetched %lld, expected 77", (long long)got2);
	if (mt_rank == 0)
		all = mt_alloc(mt_size * sizeof(int64_t));
	MPI_Gather(&got, 1, MPI_INT64_T, all, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
	local_begin(w);
	if (mt_rank == 0) {
		int winners = 0;
		int64_t winner = slot[0];

		for (int r = 0; r < mt_size; r++) {
			if (all[r] == -1)
				winners++;
			else
				MT_CHECK(all[r] == winner, "MPI_Compare_and_swap: rank %d fetched %lld, neither -1 nor the winner %lld",
					 r, (long long)all[r], (long long)winner);
		}
		MT_CHECK(winners == 1 && winner >= 0 && winner < mt_size && all[winner] == -1,
			 "MPI_Compare_and_swap -1 -> rank from %d ranks at once: %d saw -1, slot holds %lld",
			 mt_size, winners, (long long)winner);
		MT_CHECK(slot[1] == 77, "MPI_Compare_and_swap that cannot match changed the slot to %lld",
			 (long long)slot[1]);
	}
	local_end(w);
	free(all);
}

/* lock_all only: the classic lock-free increment, each CAS flushed
 * before the next try, and flush-ordered fetch-and-adds per rank. */
#define NINC 5

static void op_cas_loop(struct rma *w)
{
	int64_t *ctr = (int64_t *)w->mem, seen = 0, want, got, one = 1, last = -1, f;
	int tries = 0;

	local_begin(w);
	ctr[0] = 0;
	ctr[1] = 0;
	local_end(w);
	MT_MPI(MPI_Win_lock_all(0, w->win));
	for (int i = 0; i < NINC; i++) {
		do {
			want = seen + 1;
			MT_MPI(MPI_Compare_and_swap(&want, &seen, &got, MPI_INT64_T, 0, disp(w, 0, 0), w->win));
			MT_MPI(MPI_Win_flush(0, w->win));
			MT_CHECK(++tries < 100000, "CAS increment loop: no progress after %d tries", tries);
			if (got == seen)
				break;
			seen = got;
		} while (1);
		seen = want;
		MT_MPI(MPI_Fetch_and_op(&one, &f, MPI_INT64_T, 0, disp(w, 0, 8), MPI_SUM, w->win));
		MT_MPI(MPI_Win_flush(0, w->win));
		MT_CHECK(f > last, "MPI_Fetch_and_op after flush fetched %lld after %lld: not increasing",
			 (long long)f, (long long)last);
		last = f;
	}
	MT_MPI(MPI_Win_unlock_all(w->win));
	MPI_Barrier(MPI_COMM_WORLD);
	local_begin(w);
	if (mt_rank == 0) {
		MT_CHECK(ctr[0] == NINC * mt_size, "CAS increment loop: counter %lld, expected %d", (long long)ctr[0],
			 NINC * mt_size);
		MT_CHECK(ctr[1] == NINC * mt_size, "flushed MPI_Fetch_and_op: counter %lld, expected %d",
			 (long long)ctr[1], NINC * mt_size);
	}
	local_end(w);
}

/* Dynamic windows: a put into the second attached region lands there. */
static void op_put_extra(struct rma *w)
{
	int t = target_of(RING), src = prev_rank();
	uint8_t *s = mt_alloc(SMALL);

	local_begin(w);
	memset(w->extra, GUARD_BYTE, EXTRA_BYTES);
	local_end(w);
	mt_fill(s, SMALL, 5000 + mt_rank);
	epoch_open(w, RING, 0);
	MT_MPI(MPI_Put(s, SMALL, MPI_BYTE, t, w->extra_base[t] + EXTRA_AT, SMALL, MPI_BYTE, w->win));
	epoch_close(w, RING);
	local_begin(w);
	mt_check(w->extra + EXTRA_AT, SMALL, 5000 + src, "MPI_Put of 1001 bytes into the second attached region");
	mt_check_const(w->extra, EXTRA_AT, GUARD_BYTE, "second region's bytes before the MPI_Put");
	mt_check_const(w->extra + EXTRA_AT + SMALL, EXTRA_BYTES - EXTRA_AT - SMALL, GUARD_BYTE,
		       "second region's bytes after the MPI_Put");
	local_end(w);
	free(s);
}

/* Dynamic windows: a put to memory the target never attached is refused
 * with MPI_ERR_RMA_RANGE and writes nothing, where the osc component
 * checks addresses (osc rdma and osc dynwin, by the window's NAME);
 * osc pt2pt does not (an erroneous program's outcome is undefined), so
 * it is not asked there.  osc rdma attaches whole pages, so the memory
 * is a mapping of its own: malloc'd, it could share a page with an
 * attached region.  1 if the put was made. */
static int op_put_unattached(struct rma *w, const char *name)
{
	int t = target_of(RING), checks = !strncmp(name, "rdma ", 5) || !strncmp(name, "dynwin ", 7);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *mine = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *s = mt_alloc(SMALL);
	MPI_Aint *addr;
	int rc, cls;

	MT_CHECK(mine != MAP_FAILED, "mmap of a page failed");
	memset(mine, GUARD_BYTE, SMALL);
	addr = all_addresses(mine);     /* (the allgather orders the memset before the put) */
	if (checks) {
		mt_fill(s, SMALL, 6000 + mt_rank);
		epoch_open(w, RING, 0);
		rc = MPI_Put(s, SMALL, MPI_BYTE, t, addr[t], SMALL, MPI_BYTE, w->win);
		epoch_close(w, RING);
		MT_MPI(MPI_Error_class(rc, &cls));
		MT_CHECK(cls == MPI_ERR_RMA_RANGE, "MPI_Put to memory rank %d never attached returned %s, not MPI_ERR_RMA_RANGE",
			 t, mt_errstr(rc));
	}
	MPI_Barrier(MPI_COMM_WORLD);
	mt_check_const(mine, SMALL, GUARD_BYTE, "memory never attached, after a put to it");
	munmap(mine, page);
	free(s);
	free(addr);
	return checks;
}

static void rma_run(enum sync s, int dynamic)
{
	struct rma w;
	const char *what[] = { "put", "get", "acc-sum", "acc-replace", "get-acc", "fetch-and-op", "cas", "cas-loop" };
	void (*ops[])(struct rma *) = { op_put, op_get, op_acc_sum, op_acc_replace, op_get_acc,
					op_fetch_and_op, op_cas, op_cas_loop };
	int n = s == LOCK_ALL ? 8 : 7, len, unattached = 0;
	char name[MPI_MAX_OBJECT_NAME];

	rma_create(&w, s, dynamic);
	/* the osc component names its windows ("rdma window 3") */
	MT_MPI(MPI_Win_get_name(w.win, name, &len));
	for (int i = 0; i < n; i++)
		ops[i](&w);
	if (dynamic) {
		op_put_extra(&w);
		unattached = op_put_unattached(&w, name);
	}
	rma_destroy(&w);
	suite_note("%s %s %s %s %s %s %s%s%s%s%s on '%s'", what[0], what[1], what[2], what[3], what[4], what[5],
		   what[6], n > 7 ? " " : "", n > 7 ? what[7] : "", dynamic ? " put-2nd-region detach" : "",
		   !dynamic ? "" : unattached ? " put-unattached-refused" : " put-unattached-unchecked",
		   name);
}

void rma_fence(void) { rma_run(FENCE, 0); }
void rma_pscw(void) { rma_run(PSCW, 0); }
void rma_lock(void) { rma_run(LOCK, 0); }
void rma_lock_all(void) { rma_run(LOCK_ALL, 0); }
void rma_dyn_fence(void) { rma_run(FENCE, 1); }
void rma_dyn_pscw(void) { rma_run(PSCW, 1); }
void rma_dyn_lock(void) { rma_run(LOCK, 1); }
void rma_dyn_lock_all(void) { rma_run(LOCK_ALL, 1); }
