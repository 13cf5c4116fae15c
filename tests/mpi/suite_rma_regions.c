/* Dynamic-window subtests of mpi_suite that a user's program meets at
 * scale:
 *
 * rma/regions: every rank attaches suite_opt.regions regions (-r, default
 * 1000) of 4000 B from MPI_Alloc_mem to one dynamic window, puts a pattern
 * into each region of the next rank and gets each region of the rank after
 * back, every byte checked, then detaches them in another order than they
 * were attached (a stride through the list) and frees them.
 *
 * rma/dynamic/linked-list: the classic lock-free linked list under
 * MPI_Win_lock_all: each rank appends NLIST elements to one shared list,
 * each element attached to the window as it is made (from two arenas, so
 * that attaches insert regions in the middle of the table); the tail's next
 * pointer, in an element some rank may have attached a moment ago, is
 * taken with MPI_Compare_and_swap, the displacement written with
 * MPI_Accumulate REPLACE and read with MPI_Fetch_and_op NO_OP and
 * MPI_Get_accumulate NO_OP.  Then rank 0 walks the list: every element
 * once, each rank's in the order it appended them. */
#include "suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REGION_BYTES 4000

/* The pattern seed of region I of rank R. */
static uint32_t region_seed(int r, int i) { return 70000u + (uint32_t)r * 100003u + (uint32_t)i; }

void rma_regions(void)
{
	int n = suite_opt.regions, next = (mt_rank + 1) % mt_size, prev = (mt_rank + mt_size - 1) % mt_size;
	int after = (mt_rank + 2) % mt_size, stride, len;
	uint8_t **reg = mt_alloc(n * sizeof(*reg)), *src = mt_alloc(REGION_BYTES), *dst = mt_alloc(REGION_BYTES);
	MPI_Aint *mine = mt_alloc(n * sizeof(*mine)), *theirs = mt_alloc(n * sizeof(*theirs));
	MPI_Aint *after_addr = mt_alloc(n * sizeof(*after_addr));
	char what[128], name[MPI_MAX_OBJECT_NAME];
	MPI_Win win;
	double t;

	MT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	MT_MPI(MPI_Win_get_name(win, name, &len));
	t = MPI_Wtime();
	for (int i = 0; i < n; i++) {
		MT_MPI(MPI_Alloc_mem(REGION_BYTES, MPI_INFO_NULL, &reg[i]));
		memset(reg[i], GUARD_BYTE, REGION_BYTES);
		snprintf(what, sizeof(what), "MPI_Win_attach of region %d of %d (4000 B each)", i + 1, n);
		{
			int rc = MPI_Win_attach(win, reg[i], REGION_BYTES);

			MT_CHECK(rc == MPI_SUCCESS, "%s on '%s' returned %s", what, name, mt_errstr(rc));
		}
		MT_MPI(MPI_Get_address(reg[i], &mine[i]));
	}
	t = MPI_Wtime() - t;
	/* the sendrecvs also order every attach before any access */
	MT_MPI(MPI_Sendrecv(mine, n, MPI_AINT, prev, 0, theirs, n, MPI_AINT, next, 0, MPI_COMM_WORLD,
			    MPI_STATUS_IGNORE));
	MT_MPI(MPI_Sendrecv(mine, n, MPI_AINT, (mt_rank + mt_size - 2) % mt_size, 1, after_addr, n, MPI_AINT, after, 1,
			    MPI_COMM_WORLD, MPI_STATUS_IGNORE));

	/* a put of 4000 B into each region of the next rank */
	MT_MPI(MPI_Win_lock_all(0, win));
	for (int i = 0; i < n; i++) {
		mt_fill(src, REGION_BYTES, region_seed(next, i));
		MT_MPI(MPI_Put(src, REGION_BYTES, MPI_BYTE, next, theirs[i], REGION_BYTES, MPI_BYTE, win));
		MT_MPI(MPI_Win_flush(next, win));
	}
	MT_MPI(MPI_Win_unlock_all(win));
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < n; i++) {
		snprintf(what, sizeof(what), "region %d of %d after the put from rank %d", i, n, prev);
		mt_check(reg[i], REGION_BYTES, region_seed(mt_rank, i), what);
	}
	MPI_Barrier(MPI_COMM_WORLD);

	/* a get of each region of the rank after the next one */
	MT_MPI(MPI_Win_lock_all(0, win));
	for (int i = 0; i < n; i++) {
		memset(dst, 0, REGION_BYTES);
		MT_MPI(MPI_Get(dst, REGION_BYTES, MPI_BYTE, after, after_addr[i], REGION_BYTES, MPI_BYTE, win));
		MT_MPI(MPI_Win_flush(after, win));
		snprintf(what, sizeof(what), "MPI_Get of region %d of %d of rank %d", i, n, after);
		mt_check(dst, REGION_BYTES, region_seed(after, i), what);
	}
	MT_MPI(MPI_Win_unlock_all(win));
	MPI_Barrier(MPI_COMM_WORLD);

	/* detach in another order: a stride prime to n through the list */
	for (stride = n / 3 + 1; stride > 1; stride++) {
		int a = n, b = stride;

		while (b) {
			int c = a % b;

			a = b;
			b = c;
		}
		if (a == 1)
			break;
	}
	for (int k = 0, i = 0; k < n; k++, i = (i + stride) % n) {
		int rc = MPI_Win_detach(win, reg[i]);

		MT_CHECK(rc == MPI_SUCCESS, "MPI_Win_detach of region %d (the %d-th detached) returned %s", i, k,
			 mt_errstr(rc));
		MT_MPI(MPI_Free_mem(reg[i]));
		reg[i] = NULL;
	}
	for (int i = 0; i < n; i++)
		MT_CHECK(!reg[i], "region %d was never detached (stride %d)", i, stride);
	MT_MPI(MPI_Win_free(&win));
	suite_note("%d regions of 4000 B per rank attached (%.2fs), put and got back, detached with stride %d on '%s'",
		   n, t, stride, name);
	free(reg);
	free(src);
	free(dst);
	free(mine);
	free(theirs);
	free(after_addr);
}

/* ------------------------------------------------------------ the list */

#define NLIST 32
#define NIL_RANK (-1)

struct elem {
	int64_t next_rank;      /* NIL_RANK: the tail */
	int64_t next_disp;      /* 0 until written after the CAS */
	int64_t value;
};

struct ptr {
	int64_t rank;
	MPI_Aint disp;
};

/* Element I lives at the start of a page of one of two arenas (even I in
 * the first, odd in the second, ascending in each): every attach makes a
 * region of its own, and half of them go in the middle of the sorted
 * region table, moving the regions above them (the table a peer reads). */
static struct elem *new_elem(MPI_Win win, uint8_t *arenas, int i, int64_t value, struct ptr *p)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct elem *e = (struct elem *)(arenas + ((size_t)(i % 2) * (NLIST + 1) + (size_t)i / 2) * page);

	e->next_rank = NIL_RANK;
	e->next_disp = 0;
	e->value = value;
	MT_MPI(MPI_Win_attach(win, e, sizeof(*e)));
	p->rank = mt_rank;
	MT_MPI(MPI_Get_address(e, &p->disp));
	return e;
}

void rma_dyn_linked_list(void)
{
	struct elem **mine = mt_alloc((NLIST + 1) * sizeof(*mine));
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *arenas;
	int64_t nil = NIL_RANK, total = (int64_t)NLIST * mt_size, *seen = NULL, *last = NULL;
	struct ptr head, tail, fresh;
	int nmine = 0, len, cas_tries = 0;
	char name[MPI_MAX_OBJECT_NAME];
	MPI_Win win;

	MT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	MT_MPI(MPI_Win_get_name(win, name, &len));
	MT_MPI(MPI_Alloc_mem(2 * (NLIST + 1) * page, MPI_INFO_NULL, &arenas));
	if (mt_rank == 0)
		mine[nmine++] = new_elem(win, arenas, 2 * NLIST + 1, -1, &head);
	MT_MPI(MPI_Bcast(&head, sizeof(head), MPI_BYTE, 0, MPI_COMM_WORLD));
	tail = head;

	MT_MPI(MPI_Win_lock_all(0, win));
	for (int i = 0; i < NLIST; i++) {
		int64_t got;

		mine[nmine++] = new_elem(win, arenas, i, (int64_t)mt_rank + (int64_t)mt_size * i, &fresh);
		for (;;) {
			MT_MPI(MPI_Compare_and_swap(&fresh.rank, &nil, &got, MPI_INT64_T, (int)tail.rank,
						    tail.disp + offsetof(struct elem, next_rank), win));
			MT_MPI(MPI_Win_flush((int)tail.rank, win));
			MT_CHECK(++cas_tries < 100000, "linked list: no progress after %d CAS", cas_tries);
			if (got == NIL_RANK) {
				int64_t d = fresh.disp;

				MT_MPI(MPI_Accumulate(&d, 1, MPI_INT64_T, (int)tail.rank,
						      tail.disp + offsetof(struct elem, next_disp), 1, MPI_INT64_T,
						      MPI_REPLACE, win));
				MT_MPI(MPI_Win_flush((int)tail.rank, win));
				tail = fresh;
				break;
			}
			/* another rank appended: follow it once its displacement is there */
			{
				int64_t d = 0, d2 = 0;
				struct ptr was = tail;

				do {
					MT_MPI(MPI_Fetch_and_op(NULL, &d, MPI_INT64_T, (int)was.rank,
								was.disp + offsetof(struct elem, next_disp), MPI_NO_OP, win));
					MT_MPI(MPI_Get_accumulate(NULL, 0, MPI_INT64_T, &d2, 1, MPI_INT64_T, (int)was.rank,
								  was.disp + offsetof(struct elem, next_disp), 1,
								  MPI_INT64_T, MPI_NO_OP, win));
					MT_MPI(MPI_Win_flush((int)was.rank, win));
					MT_CHECK(++cas_tries < 100000, "linked list: next displacement never written");
				} while (d == 0 || d2 == 0);
				MT_CHECK(d == d2, "linked list: MPI_Fetch_and_op fetched %lld, MPI_Get_accumulate %lld",
					 (long long)d, (long long)d2);
				tail.rank = got;
				tail.disp = (MPI_Aint)d;
			}
		}
	}
	MT_MPI(MPI_Win_unlock_all(win));
	MPI_Barrier(MPI_COMM_WORLD);

	/* rank 0 walks the list */
	if (mt_rank == 0) {
		struct ptr at = head;
		struct elem e;
		int64_t count = 0;

		seen = calloc(total, sizeof(*seen));
		last = mt_alloc(mt_size * sizeof(*last));
		MT_CHECK(seen, "calloc");
		for (int r = 0; r < mt_size; r++)
			last[r] = -1;
		MT_MPI(MPI_Win_lock_all(0, win));
		for (;;) {
			MT_MPI(MPI_Get(&e, sizeof(e), MPI_BYTE, (int)at.rank, at.disp, sizeof(e), MPI_BYTE, win));
			MT_MPI(MPI_Win_flush((int)at.rank, win));
			if (count > 0) {
				int64_t v = e.value;
				int r = (int)(v % mt_size);

				MT_CHECK(v >= 0 && v < total && !seen[v],
					 "linked list: element %lld holds %lld (seen before, or not a value appended)",
					 (long long)count, (long long)v);
				MT_CHECK(v > last[r], "linked list: rank %d's %lld after its %lld", r, (long long)v,
					 (long long)last[r]);
				seen[v] = 1;
				last[r] = v;
			} else {
				MT_CHECK(e.value == -1, "linked list: head holds %lld", (long long)e.value);
			}
			if (e.next_rank == NIL_RANK)
				break;
			MT_CHECK(++count <= total, "linked list: more than %lld elements", (long long)total);
			at.rank = e.next_rank;
			at.disp = (MPI_Aint)e.next_disp;
		}
		MT_MPI(MPI_Win_unlock_all(win));
		MT_CHECK(count == total, "linked list: %lld elements, expected %lld", (long long)count, (long long)total);
		free(seen);
		free(last);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = nmine - 1; i >= 0; i--)
		MT_MPI(MPI_Win_detach(win, mine[i]));
	MT_MPI(MPI_Win_free(&win));
	MT_MPI(MPI_Free_mem(arenas));
	suite_note("%d ranks appended %d elements each with MPI_Compare_and_swap under lock_all (%d CAS), walked on '%s'",
		   mt_size, NLIST, cas_tries, name);
	free(mine);
}
