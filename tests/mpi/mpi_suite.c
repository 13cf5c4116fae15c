/* MPI correctness suite: point-to-point, collectives, one-sided and
 * buffer churn, every transfer checked.  Rank 0 prints "ok NAME ..." per
 * subtest; the first difference aborts the job with "FAIL NAME ...".
 *
 *   mpi_suite [-s MAXSIZE] [-c MAXCOUNT] [-r REGIONS] [-t PREFIX[,PREFIX...]] [-x PREFIX[,...]] [-l]
 *
 * -s  largest ping-pong message (default 64M)
 * -c  largest collective count in ints (default 40000)
 * -r  regions per rank of rma/regions (default 1000)
 * -t  run only the subtests whose names start with one of the prefixes
 *     (e.g. -t coll/ or -t p2p/truncate,rma/)
 * -x  leave out the subtests whose names start with one of the prefixes
 * -l  list the subtests (no MPI needed) and exit
 *
 * MPITEST_CORRUPT=SUBSTRING in the environment breaks the subtests whose
 * names contain it (see mpitest.h): they must fail. */
#include "suite.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct suite_opts suite_opt = { .max_size = 64 << 20, .coll_counts_max = 40000, .regions = 1000 };

static const struct {
	const char *name;
	void (*run)(void);
} subtests[] = {
	{ "p2p/pingpong", p2p_pingpong },
	{ "p2p/wildcard", p2p_wildcard },
	{ "p2p/many-outstanding", p2p_many },
	{ "p2p/truncate", p2p_truncate },
	{ "p2p/datatypes", p2p_datatypes },
	{ "coll/bcast", coll_bcast },
	{ "coll/reduce", coll_reduce },
	{ "coll/allreduce", coll_allreduce },
	{ "coll/gather", coll_gather },
	{ "coll/scatter", coll_scatter },
	{ "coll/allgather", coll_allgather },
	{ "coll/alltoall", coll_alltoall },
	{ "coll/reduce_scatter", coll_reduce_scatter },
	{ "coll/scan", coll_scan },
	{ "coll/barrier", coll_barrier },
	{ "rma/fence", rma_fence },
	{ "rma/pscw", rma_pscw },
	{ "rma/lock", rma_lock },
	{ "rma/lock_all", rma_lock_all },
	{ "rma/dynamic/fence", rma_dyn_fence },
	{ "rma/dynamic/pscw", rma_dyn_pscw },
	{ "rma/dynamic/lock", rma_dyn_lock },
	{ "rma/dynamic/lock_all", rma_dyn_lock_all },
	{ "rma/dynamic/linked-list", rma_dyn_linked_list },
	{ "rma/regions", rma_regions },
	{ "rma/gacc-derived/fence", rma_gacc_derived_fence },
	{ "rma/gacc-derived/lock", rma_gacc_derived_lock },
	{ "rma/gacc-derived/pscw", rma_gacc_derived_pscw },
	{ "rma/pair/fence", rma_pair_fence },
	{ "rma/pair/lock", rma_pair_lock },
	{ "churn/malloc", churn_malloc },
	{ "churn/mmap", churn_mmap },
	{ "churn/fork", churn_fork },
	{ "churn/mprotect", churn_mprotect },
	{ "churn/dontneed", churn_dontneed },
};

static char note[256];

void suite_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(note, sizeof(note), fmt, ap);
	va_end(ap);
}

static int matches(const char *name, const char *prefixes)
{
	char buf[512], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", prefixes);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (strncmp(name, tok, strlen(tok)) == 0)
			return 1;
	return 0;
}

static int selected(const char *name, const char *only, const char *except)
{
	return (!only || matches(name, only)) && !(except && matches(name, except));
}

int main(int argc, char **argv)
{
	const char *only = NULL, *except = NULL;
	size_t i;
	int c, list = 0;

	while ((c = getopt(argc, argv, "s:c:r:t:x:l")) != -1) {
		switch (c) {
		case 's': suite_opt.max_size = mt_parse_size(optarg); break;
		case 'c': suite_opt.coll_counts_max = atoi(optarg); break;
		case 'r': suite_opt.regions = atoi(optarg); break;
		case 't': only = optarg; break;
		case 'x': except = optarg; break;
		case 'l': list = 1; break;
		default:
			fprintf(stderr, "usage: mpi_suite [-s MAXSIZE] [-c MAXCOUNT] [-r REGIONS] [-t PREFIXES] [-x PREFIXES] [-l]\n");
			return 2;
		}
	}
	if (list) {
		for (i = 0; i < sizeof(subtests) / sizeof(subtests[0]); i++)
			if (selected(subtests[i].name, only, except))
				printf("%s\n", subtests[i].name);
		return 0;
	}

	mt_init(&argc, &argv);
	if (mt_rank == 0)
		printf("# mpi_suite: %d ranks, ping-pong up to %zu B, collectives up to %d ints\n",
		       mt_size, suite_opt.max_size, suite_opt.coll_counts_max);
	for (i = 0; i < sizeof(subtests) / sizeof(subtests[0]); i++) {
		double t;

		if (!selected(subtests[i].name, only, except))
			continue;
		mt_begin(subtests[i].name);
		note[0] = 0;
		MPI_Barrier(MPI_COMM_WORLD);
		t = MPI_Wtime();
		subtests[i].run();
		MPI_Barrier(MPI_COMM_WORLD);
		if (mt_rank == 0)
			printf("ok %s (%.2fs)%s%s\n", subtests[i].name, MPI_Wtime() - t, note[0] ? " " : "", note);
	}
	mt_begin("finalize");
	MPI_Finalize();
	return 0;
}
