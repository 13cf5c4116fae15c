/* Shared parts of the OSU-style microbenchmarks in tests/mpi: options,
 * iteration counts, the size sweep and OSU's output format (header lines
 * starting with "#", then "size value" rows).  Written here, not taken
 * from the OSU suite; the options and output follow it so that results
 * can be read the same way.
 *
 *   -m [MIN:]MAX  message sizes (powers of two from MIN, default per test)
 *   -i N          iterations for sizes up to 8 KiB; larger sizes get
 *                 N * 8 KiB / size, at least a few (TCG guests are slow)
 *   -x N          warmup iterations (scaled the same way)
 *   -W N          window: messages or operations in flight (bw tests)
 *   -T MS         bw tests: time each size for at least MS milliseconds
 *                 (more windows than -i gives when they are quick; 0: off)
 *   -s SYNC       one-sided synchronisation: flush, lock, fence, pscw
 *   -w WIN        one-sided window: allocate, create, dynamic
 *   -R N          -w dynamic: N regions attached per rank (the one the
 *                 operations go to and N - 1 of 4000 B), default 1
 *   -M            bw tests: the buffers re-mapped between iterations
 *                 (windows): munmap, mmap at the same address, written
 *                 by the CPU again, as a buffer freed to the kernel and
 *                 allocated anew; timed with the transfers (what a NIC
 *                 that follows the page tables pays; a registration
 *                 cache would go stale)
 *   -h            help */
#ifndef OSU_H
#define OSU_H

#include "mpitest.h"

struct osu {
	const char *title;      /* "OSU MPI Latency Test" */
	const char *column;     /* "Latency (us)" */
	size_t min, max;
	int iters, warmup, window;
	int min_ms;             /* -T (bw tests; 0: -i alone decides) */
	const char *sync;       /* RMA tests only (NULL: no -s) */
	const char *win;        /* RMA tests only: -w allocate (default), create or dynamic */
	int regions;            /* -w dynamic: regions attached per rank (-R) */
	int remap;              /* -M: buffers re-mapped between iterations */
};

/* Parse the options (everyone), print the header (rank 0); exits on -h
 * or a bad option.  MIN_RANKS: the test needs at least that many. */
void osu_init(struct osu *o, int *argc, char ***argv, int min_ranks);
/* Iterations and warmup for SIZE. */
int osu_iters(const struct osu *o, size_t size);
int osu_warmup(const struct osu *o, size_t size);
/* Windows (of o->window messages) for SIZE: a quarter of the iterations
 * above 8 KiB, where a window is costly under TCG (-T adds rounds). */
int osu_window_iters(const struct osu *o, size_t size);
/* Timed rounds for a size: at least N, and as many more (up to 64 N) as
 * fill o->min_ms at the pace of the warmup (WARM_SECS for WARM rounds).
 * Rank 0 decides for everyone: all ranks call it. */
int osu_rounds(const struct osu *o, int n, double warm_secs, int warm);
/* One result row (rank 0 prints). */
void osu_row(size_t size, double value);
/* Sizes MIN..MAX: 0 then powers of two. */
#define OSU_SIZES(o, s) for (size_t s = (o)->min; s <= (o)->max; s = s ? s * 2 : 1)
/* A buffer of MAX bytes (at least 8), page aligned, touched; mapped
 * apart with -M.  osu_free gives it back. */
void *osu_buffer(const struct osu *o);
void osu_free(const struct osu *o, void *p);
/* -M: P unmapped and mapped again at the same address, touched as new
 * (nothing without -M). */
void osu_remap(const struct osu *o, void *p);

#endif
