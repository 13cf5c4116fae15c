/* The accumulate family on datatypes beyond the basic ones, subtests of
 * mpi_suite, on MPI_Win_create'd windows (whose peers' memory is never
 * local to osc rdma, so its network paths run even on one node):
 *
 * rma/gacc-derived/{fence,lock,pscw}: MPI_Get_accumulate SUM with a
 * derived datatype (two of every three elements: a resized vector) of
 * long, int and double, counts 5 and 1000, around the ring: every
 * fetched element, every target element and the elements in between
 * (which nothing may touch) checked.
 *
 * rma/pair/{fence,lock}: MPI_Fetch_and_op and MPI_Get_accumulate (count
 * 7, and count 1 of a contiguous type of 7) with MAXLOC, MINLOC, REPLACE
 * and NO_OP on every pair type
 * (MPI_SHORT_INT, MPI_2INT, MPI_LONG_INT, MPI_DOUBLE_INT, MPI_FLOAT_INT,
 * MPI_LONG_DOUBLE_INT) around the ring, every field checked; then MAXLOC
 * from every rank into rank 0 at once, the winner checked. */
#include "suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tsync { T_FENCE, T_LOCK, T_PSCW };

static int ring_next(void) { return (mt_rank + 1) % mt_size; }
static int ring_prev(void) { return (mt_rank + mt_size - 1) % mt_size; }

static void t_open(MPI_Win win, enum tsync s, int target)
{
	MPI_Group world, g;
	int prev = ring_prev();

	switch (s) {
	case T_FENCE:
		MT_MPI(MPI_Win_fence(0, win));
		break;
	case T_LOCK:
		MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
		break;
	case T_PSCW:
		MPI_Comm_group(MPI_COMM_WORLD, &world);
		MPI_Group_incl(world, 1, &prev, &g);
		MT_MPI(MPI_Win_post(g, 0, win));
		MPI_Group_free(&g);
		MPI_Group_incl(world, 1, &target, &g);
		MT_MPI(MPI_Win_start(g, 0, win));
		MPI_Group_free(&g);
		MPI_Group_free(&world);
		break;
	}
}

static void t_close(MPI_Win win, enum tsync s, int target)
{
	switch (s) {
	case T_FENCE:
		MT_MPI(MPI_Win_fence(0, win));
		break;
	case T_LOCK:
		MT_MPI(MPI_Win_unlock(target, win));
		break;
	case T_PSCW:
		MT_MPI(MPI_Win_complete(win));
		MT_MPI(MPI_Win_wait(win));
		break;
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

/* ------------------------------------------------ derived datatypes */

#define DCOUNT_MAX 1000
#define DSLOTS (3 * DCOUNT_MAX)     /* a datatype element spans 3 slots */

enum dkind { D_LONG, D_INT, D_DOUBLE };
static const char *const dkind_name[] = { "long", "int", "double" };

/* Slot I of rank R's window before the epoch, and what rank R adds:
 * small integers, exact in every type. */
static long dinit(int r, int i) { return 1000 * (r + 1) + i % 997; }
static long dadd(int r, int i) { return 7 * (r + 1) + i % 13; }

static void dset(void *buf, enum dkind k, int i, long v)
{
	switch (k) {
	case D_LONG: ((long *)buf)[i] = v; break;
	case D_INT: ((int *)buf)[i] = (int)v; break;
	case D_DOUBLE: ((double *)buf)[i] = (double)v; break;
	}
}

static long dget(const void *buf, enum dkind k, int i)
{
	switch (k) {
	case D_LONG: return ((const long *)buf)[i];
	case D_INT: return ((const int *)buf)[i];
	default: return (long)((const double *)buf)[i];
	}
}

/* slot I is in the datatype: slots 0 and 2 of every 3 */
static int din(int i) { return i % 3 != 1; }

/* One window, an area of DSLOTS elements per type; each epoch does the
 * three types at once (fewer epochs: each costs barriers). */
static void gacc_derived(enum tsync s)
{
	static const MPI_Datatype base[] = { MPI_LONG, MPI_INT, MPI_DOUBLE };
	static const int counts[] = { 5, DCOUNT_MAX };
	size_t esz = sizeof(long) > sizeof(double) ? sizeof(long) : sizeof(double), area = DSLOTS * esz;
	uint8_t *mem = mt_alloc(3 * area), *org = mt_alloc(3 * area), *res = mt_alloc(3 * area);
	int next = ring_next(), prev = ring_prev(), checked = 0;
	MPI_Datatype dt[3];
	MPI_Win win;

	MT_MPI(MPI_Win_create(mem, 3 * area, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	for (int k = D_LONG; k <= D_DOUBLE; k++) {
		MPI_Datatype vec;
		MPI_Aint lb, ext;

		MPI_Type_get_extent(base[k], &lb, &ext);
		MT_MPI(MPI_Type_vector(2, 1, 2, base[k], &vec));
		MT_MPI(MPI_Type_create_resized(vec, 0, 3 * ext, &dt[k]));
		MT_MPI(MPI_Type_commit(&dt[k]));
		MPI_Type_free(&vec);
	}
	for (int c = 0; c < 2; c++) {
		int n = counts[c], slots = 3 * n;

		if (s == T_LOCK)
			MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, win));
		for (int k = D_LONG; k <= D_DOUBLE; k++)
			for (int i = 0; i < DSLOTS; i++)
				dset(mem + k * area, (enum dkind)k, i, dinit(mt_rank, i));
		if (s == T_LOCK)
			MT_MPI(MPI_Win_unlock(mt_rank, win));
		for (int k = D_LONG; k <= D_DOUBLE; k++) {
			for (int i = 0; i < DSLOTS; i++) {
				dset(org + k * area, (enum dkind)k, i, din(i) ? dadd(mt_rank, i) : -55);
				dset(res + k * area, (enum dkind)k, i, -77);
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
		t_open(win, s, next);
		for (int k = D_LONG; k <= D_DOUBLE; k++)
			MT_MPI(MPI_Get_accumulate(org + k * area, n, dt[k], res + k * area, n, dt[k], next, k * area, n, dt[k],
						  MPI_SUM, win));
		t_close(win, s, next);
		for (int k = D_LONG; k <= D_DOUBLE; k++) {
			for (int i = 0; i < DSLOTS; i++) {
				long want = din(i) && i < slots ? dinit(next, i) : -77;
				long got = dget(res + k * area, (enum dkind)k, i);

				MT_CHECK(got == want,
					 "MPI_Get_accumulate SUM of %d derived %s (2 of 3) from rank %d: result slot %d is %ld, expected %ld%s",
					 n, dkind_name[k], next, i, got, want,
					 din(i) && i < slots ? "" : " (not in the datatype: untouched)");
			}
		}
		if (s == T_LOCK)
			MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, win));
		for (int k = D_LONG; k <= D_DOUBLE; k++) {
			for (int i = 0; i < DSLOTS; i++) {
				long want = dinit(mt_rank, i) + (din(i) && i < slots ? dadd(prev, i) : 0);
				long got = dget(mem + k * area, (enum dkind)k, i);

				MT_CHECK(got == want,
					 "MPI_Get_accumulate SUM of %d derived %s from rank %d: window slot %d is %ld, expected %ld",
					 n, dkind_name[k], prev, i, got, want);
			}
		}
		if (s == T_LOCK)
			MT_MPI(MPI_Win_unlock(mt_rank, win));
		MPI_Barrier(MPI_COMM_WORLD);
		checked += 3 * 2 * DSLOTS;
	}
	for (int k = D_LONG; k <= D_DOUBLE; k++)
		MPI_Type_free(&dt[k]);
	MT_MPI(MPI_Win_free(&win));
	suite_note("long int double, counts 5 and 1000: %d slots checked", checked);
	free(mem);
	free(org);
	free(res);
}

void rma_gacc_derived_fence(void) { gacc_derived(T_FENCE); }
void rma_gacc_derived_lock(void) { gacc_derived(T_LOCK); }
void rma_gacc_derived_pscw(void) { gacc_derived(T_PSCW); }

/* ------------------------------------------------------- pair types */

struct short_int { short v; int i; };
struct two_int { int v; int i; };
struct long_int { long v; int i; };
struct double_int { double v; int i; };
struct float_int { float v; int i; };
struct long_double_int { long double v; int i; };

static const struct pair_type {
	const char *name;
	size_t size;            /* the C struct's */
	size_t vsize;           /* of its value */
} pair_types[] = {
	{ "MPI_SHORT_INT", sizeof(struct short_int), sizeof(short) },
	{ "MPI_2INT", sizeof(struct two_int), sizeof(int) },
	{ "MPI_LONG_INT", sizeof(struct long_int), sizeof(long) },
	{ "MPI_DOUBLE_INT", sizeof(struct double_int), sizeof(double) },
	{ "MPI_FLOAT_INT", sizeof(struct float_int), sizeof(float) },
	{ "MPI_LONG_DOUBLE_INT", sizeof(struct long_double_int), sizeof(long double) },
};
#define NPAIR (int)(sizeof(pair_types) / sizeof(pair_types[0]))

static MPI_Datatype pair_dt(int t)
{
	switch (t) {
	case 0: return MPI_SHORT_INT;
	case 1: return MPI_2INT;
	case 2: return MPI_LONG_INT;
	case 3: return MPI_DOUBLE_INT;
	case 4: return MPI_FLOAT_INT;
	default: return MPI_LONG_DOUBLE_INT;
	}
}

/* The value and index of element J of a pair array of type T (the index
 * is always the struct's last int, at the same offset in every layout). */
static void pset(int t, void *buf, int j, long v, int idx)
{
	char *e = (char *)buf + j * pair_types[t].size;

	memset(e, 0, pair_types[t].size);
	switch (t) {
	case 0: ((struct short_int *)e)->v = (short)v; ((struct short_int *)e)->i = idx; break;
	case 1: ((struct two_int *)e)->v = (int)v; ((struct two_int *)e)->i = idx; break;
	case 2: ((struct long_int *)e)->v = v; ((struct long_int *)e)->i = idx; break;
	case 3: ((struct double_int *)e)->v = (double)v; ((struct double_int *)e)->i = idx; break;
	case 4: ((struct float_int *)e)->v = (float)v; ((struct float_int *)e)->i = idx; break;
	default: ((struct long_double_int *)e)->v = (long double)v; ((struct long_double_int *)e)->i = idx; break;
	}
}

static void pget(int t, const void *buf, int j, long *v, int *idx)
{
	const char *e = (const char *)buf + j * pair_types[t].size;

	switch (t) {
	case 0: *v = ((const struct short_int *)e)->v; *idx = ((const struct short_int *)e)->i; break;
	case 1: *v = ((const struct two_int *)e)->v; *idx = ((const struct two_int *)e)->i; break;
	case 2: *v = ((const struct long_int *)e)->v; *idx = ((const struct long_int *)e)->i; break;
	case 3: *v = (long)((const struct double_int *)e)->v; *idx = ((const struct double_int *)e)->i; break;
	case 4: *v = (long)((const struct float_int *)e)->v; *idx = ((const struct float_int *)e)->i; break;
	default: *v = (long)((const struct long_double_int *)e)->v; *idx = ((const struct long_double_int *)e)->i; break;
	}
}

#define PCOUNT 7
#define PAIR_MAX sizeof(struct long_double_int)
enum pop { P_MAXLOC, P_MINLOC, P_REPLACE, P_NO_OP, P_NOPS };
static const char *const pop_name[] = { "MPI_MAXLOC", "MPI_MINLOC", "MPI_REPLACE", "MPI_NO_OP" };
static const char *const how_name[] = { "MPI_Fetch_and_op", "MPI_Get_accumulate of 7",
					 "MPI_Get_accumulate of a contiguous type of 7" };
static MPI_Op pop_op(int o)
{
	return o == P_MAXLOC ? MPI_MAXLOC : o == P_MINLOC ? MPI_MINLOC : o == P_REPLACE ? MPI_REPLACE : MPI_NO_OP;
}

/* Target element J of rank R before the epoch, and origin element J of
 * rank R: values that make MAXLOC and MINLOC pick each side in turn
 * (and tie on the value at j % 5 == 0: the lower index wins). */
static void pinit(int r, int j, long *v, int *idx) { *v = 100 + (j * 37 + r * 11) % 50; *idx = 1000 * r + j; }
static void porig(int r, int j, long *v, int *idx)
{
	long tv;
	int ti;

	pinit((r + 1) % mt_size, j, &tv, &ti);     /* rank R's target's */
	*v = j % 5 == 0 ? tv : j % 2 ? tv + 3 + r : tv - 3 - r;
	*idx = 500 + 1000 * r + j;
}

/* What the target element becomes under op O. */
static void papply(int o, long tv, int ti, long ov, int oi, long *v, int *idx)
{
	*v = tv;
	*idx = ti;
	if (o == P_REPLACE || (o == P_MAXLOC && (ov > tv || (ov == tv && oi < ti))) ||
	    (o == P_MINLOC && (ov < tv || (ov == tv && oi < ti)))) {
		*v = ov;
		*idx = oi;
	}
}

/* One window, an area of PCOUNT elements per pair type; each epoch does
 * the six types at once. */
static void pair_run(enum tsync s)
{
	size_t area = PCOUNT * PAIR_MAX;
	uint8_t *mem = mt_alloc(NPAIR * area), *org = mt_alloc(NPAIR * area), *res = mt_alloc(NPAIR * area);
	int next = ring_next(), prev = ring_prev(), checked = 0;
	long v, best = -1;
	int idx, besti = -1;
	MPI_Win win;

	MT_MPI(MPI_Win_create(mem, NPAIR * area, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	for (int t = 0; t < NPAIR; t++) {
		MPI_Aint lb, ext;

		MPI_Type_get_extent(pair_dt(t), &lb, &ext);
		MT_CHECK((size_t)ext == pair_types[t].size, "%s: extent %ld, the C struct's %zu", pair_types[t].name,
			 (long)ext, pair_types[t].size);
	}
	for (int o = 0; o < P_NOPS; o++) {
		/* MPI_Fetch_and_op; MPI_Get_accumulate of PCOUNT; of one
		 * contiguous datatype of PCOUNT (a derived type with holes) */
		for (int how = 0; how < 3; how++) {
			int n = how == 0 ? 1 : PCOUNT;
			MPI_Datatype contig[NPAIR];

			if (s == T_LOCK)
				MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, win));
			for (int t = 0; t < NPAIR; t++) {
				for (int j = 0; j < PCOUNT; j++) {
					pinit(mt_rank, j, &v, &idx);
					pset(t, mem + t * area, j, v, idx);
				}
			}
			if (s == T_LOCK)
				MT_MPI(MPI_Win_unlock(mt_rank, win));
			for (int t = 0; t < NPAIR; t++) {
				for (int j = 0; j < PCOUNT; j++) {
					porig(mt_rank, j, &v, &idx);
					pset(t, org + t * area, j, v, idx);
					pset(t, res + t * area, j, -9, -9);
				}
			}
			MPI_Barrier(MPI_COMM_WORLD);
			t_open(win, s, next);
			for (int t = 0; t < NPAIR; t++) {
				MPI_Datatype dt = pair_dt(t);

				if (how == 0) {
					MT_MPI(MPI_Fetch_and_op(org + t * area, res + t * area, dt, next, t * area, pop_op(o),
								win));
				} else if (how == 1) {
					MT_MPI(MPI_Get_accumulate(org + t * area, n, dt, res + t * area, n, dt, next, t * area,
								  n, dt, pop_op(o), win));
				} else {
					MT_MPI(MPI_Type_contiguous(PCOUNT, dt, &contig[t]));
					MT_MPI(MPI_Type_commit(&contig[t]));
					MT_MPI(MPI_Get_accumulate(org + t * area, 1, contig[t], res + t * area, 1, contig[t], next,
								  t * area, 1, contig[t], pop_op(o), win));
				}
			}
			t_close(win, s, next);
			for (int t = 0; t < NPAIR && how == 2; t++)
				MPI_Type_free(&contig[t]);
			for (int t = 0; t < NPAIR; t++) {
				for (int j = 0; j < PCOUNT; j++) {
					long ev;
					int ei;

					pget(t, res + t * area, j, &v, &idx);
					if (j < n)
						pinit(next, j, &ev, &ei);
					else
						ev = ei = -9;
					MT_CHECK(v == ev && idx == ei,
						 "%s %s on %s from rank %d: fetched element %d is (%ld, %d), expected (%ld, %d)",
						 how_name[how], pop_name[o], pair_types[t].name, next, j, v, idx, ev, ei);
				}
			}
			if (s == T_LOCK)
				MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, win));
			for (int t = 0; t < NPAIR; t++) {
				for (int j = 0; j < PCOUNT; j++) {
					long tv, ov, ev;
					int ti, oi, ei;

					pinit(mt_rank, j, &tv, &ti);
					porig(prev, j, &ov, &oi);
					if (j < n && o != P_NO_OP)
						papply(o, tv, ti, ov, oi, &ev, &ei);
					else
						ev = tv, ei = ti;
					pget(t, mem + t * area, j, &v, &idx);
					MT_CHECK(v == ev && idx == ei,
						 "%s %s on %s from rank %d: window element %d is (%ld, %d), expected (%ld, %d)",
						 how_name[how], pop_name[o], pair_types[t].name, prev, j, v, idx, ev, ei);
				}
			}
			if (s == T_LOCK)
				MT_MPI(MPI_Win_unlock(mt_rank, win));
			MPI_Barrier(MPI_COMM_WORLD);
			checked += 2 * NPAIR * PCOUNT;
		}
	}

	/* MAXLOC from every rank at once into rank 0's element 0 of each type */
	if (s == T_LOCK)
		MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, win));
	for (int t = 0; t < NPAIR; t++)
		pset(t, mem + t * area, 0, 10, 99999);
	if (s == T_LOCK)
		MT_MPI(MPI_Win_unlock(mt_rank, win));
	for (int t = 0; t < NPAIR; t++)
		pset(t, org + t * area, 0, 20 + (mt_rank * 7) % 5, mt_rank);
	MPI_Barrier(MPI_COMM_WORLD);
	if (s == T_FENCE)
		MT_MPI(MPI_Win_fence(0, win));
	else
		MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
	for (int t = 0; t < NPAIR; t++)
		MT_MPI(MPI_Fetch_and_op(org + t * area, res + t * area, pair_dt(t), 0, t * area, MPI_MAXLOC, win));
	if (s == T_FENCE)
		MT_MPI(MPI_Win_fence(0, win));
	else
		MT_MPI(MPI_Win_unlock(0, win));
	MPI_Barrier(MPI_COMM_WORLD);
	for (int r = 0; r < mt_size; r++)
		if (20 + (r * 7) % 5 > best)
			best = 20 + (r * 7) % 5, besti = r;
	if (s == T_LOCK)
		MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, win));
	for (int t = 0; t < NPAIR; t++) {
		if (mt_rank == 0) {
			pget(t, mem + t * area, 0, &v, &idx);
			MT_CHECK(v == best && idx == besti,
				 "MPI_Fetch_and_op MPI_MAXLOC on %s from all %d ranks at once: (%ld, %d), expected (%ld, %d)",
				 pair_types[t].name, mt_size, v, idx, best, besti);
		}
		pget(t, res + t * area, 0, &v, &idx);
		MT_CHECK((v == 10 && idx == 99999) || (idx >= 0 && idx < mt_size && v == 20 + (idx * 7) % 5),
			 "MPI_Fetch_and_op MPI_MAXLOC on %s from all ranks at once fetched (%ld, %d): neither the start nor a rank's",
			 pair_types[t].name, v, idx);
	}
	if (s == T_LOCK)
		MT_MPI(MPI_Win_unlock(mt_rank, win));
	MPI_Barrier(MPI_COMM_WORLD);
	MT_MPI(MPI_Win_free(&win));
	suite_note("6 pair types x MAXLOC MINLOC REPLACE NO_OP x fetch_and_op, get_accumulate of 7 and of a contiguous type: %d elements checked",
		   checked);
	free(mem);
	free(org);
	free(res);
}

void rma_pair_fence(void) { pair_run(T_FENCE); }
void rma_pair_lock(void) { pair_run(T_LOCK); }
