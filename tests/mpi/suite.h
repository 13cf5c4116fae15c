/* The MPI correctness suite (mpi_suite): its subtests and options. */
#ifndef SUITE_H
#define SUITE_H

#include "mpitest.h"

struct suite_opts {
	size_t max_size;        /* largest ping-pong message (-s) */
	int coll_counts_max;    /* largest collective count in ints (-c) */
	int regions;            /* regions per rank of rma/regions (-r) */
};
extern struct suite_opts suite_opt;

/* A subtest may leave a short note for its "ok" line (rank 0's). */
void suite_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Guard bytes around receive areas: nothing may be written outside. */
#define GUARD 64
#define GUARD_BYTE 0xee

/* Ranks pair up as (0,1), (2,3), ...; with mpirun's --map-by node on two
 * nodes each pair spans both nodes.  -1: no peer (odd rank count). */
static inline int pair_peer(void)
{
	int p = mt_rank ^ 1;

	return p < mt_size ? p : -1;
}

void p2p_pingpong(void);
void p2p_wildcard(void);
void p2p_many(void);
void p2p_truncate(void);
void p2p_datatypes(void);

void coll_bcast(void);
void coll_reduce(void);
void coll_allreduce(void);
void coll_gather(void);
void coll_scatter(void);
void coll_allgather(void);
void coll_alltoall(void);
void coll_reduce_scatter(void);
void coll_scan(void);
void coll_barrier(void);

void rma_fence(void);
void rma_pscw(void);
void rma_lock(void);
void rma_lock_all(void);
void rma_dyn_fence(void);
void rma_dyn_pscw(void);
void rma_dyn_lock(void);
void rma_dyn_lock_all(void);
void rma_dyn_linked_list(void);
void rma_regions(void);
void rma_gacc_derived_fence(void);
void rma_gacc_derived_lock(void);
void rma_gacc_derived_pscw(void);
void rma_pair_fence(void);
void rma_pair_lock(void);

void churn_malloc(void);
void churn_mmap(void);
void churn_fork(void);
void churn_mprotect(void);
void churn_dontneed(void);

#endif
