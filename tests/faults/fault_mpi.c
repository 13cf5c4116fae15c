/* fault_mpi: MPI traffic for the fault-injection stage (tests/faults/check):
 * large transfers with every byte checked, lap after lap, so that a rank,
 * a node or the NIC can be killed in the middle of one.
 *
 *   fault_mpi [-s SIZE] [-n LAPS] [-p DIR]
 *
 * Each lap, rank r (ranks in a ring):
 *  - MPI_Sendrecv of SIZE bytes to r+1 from r-1 (over btl elan: ob1's
 *    RGET, the NIC reads the sender's memory);
 *  - under one MPI_Win_lock_all epoch (osc rdma: the NIC's put and get):
 *    MPI_Put of SIZE bytes into r+1's window and MPI_Get of SIZE bytes
 *    from the other half of r-1's window, which r-1 refilled this lap;
 * every received byte checked (mt_check).  Rank 0 prints "lap N" after
 * each lap (the test times its kill by it) and "fault_mpi: N laps of SIZE
 * bytes ok" at the end.  -n 0: until killed.  -p DIR: each rank writes
 * DIR/rankR.pid ("PID HOST") before the first lap, for the test to kill it.
 * MPITEST_CORRUPT=lap flips a byte of the first buffer sent: must fail. */
#include "mpitest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Seed of what rank @r sends in @lap for @what (0 sendrecv, 1 put, 2 get). */
static uint32_t seed_of(long lap, int r, int what)
{
	return (uint32_t)(lap * 1000003 + r * 17 + what);
}

static void write_pidfile(const char *dir)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/rank%d.pid", dir, mt_rank);
	f = fopen(path, "w");
	MT_CHECK(f, "cannot write %s", path);
	fprintf(f, "%d %s\n", (int)getpid(), mt_host);
	fclose(f);
}

int main(int argc, char **argv)
{
	size_t size = 1 << 20;
	long laps = 10, lap;
	const char *piddir = NULL;
	uint8_t *sbuf, *rbuf, *pbuf, *gbuf, *win_mem;
	int c, next, prev;
	MPI_Win win;

	while ((c = getopt(argc, argv, "s:n:p:")) != -1) {
		switch (c) {
		case 's': size = mt_parse_size(optarg); break;
		case 'n': laps = atol(optarg); break;
		case 'p': piddir = optarg; break;
		default:
			fprintf(stderr, "usage: fault_mpi [-s SIZE] [-n LAPS] [-p DIR]\n");
			return 2;
		}
	}
	mt_init(&argc, &argv);
	mt_begin("setup");
	next = (mt_rank + 1) % mt_size;
	prev = (mt_rank + mt_size - 1) % mt_size;
	sbuf = mt_alloc(size);
	rbuf = mt_alloc(size);
	pbuf = mt_alloc(size);
	gbuf = mt_alloc(size);
	/* [0, size): puts from prev land here; [size, 2 size): next gets it */
	MT_MPI(MPI_Win_allocate(2 * size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem, &win));
	MT_MPI(MPI_Win_lock_all(0, win));
	if (piddir)
		write_pidfile(piddir);
	if (mt_rank == 0)
		printf("# fault_mpi: %d ranks, %zu B per transfer, %ld laps\n", mt_size, size, laps);

	for (lap = 1; laps == 0 || lap <= laps; lap++) {
		mt_begin("lap");
		mt_fill(sbuf, size, seed_of(lap, mt_rank, 0));
		MT_MPI(MPI_Sendrecv(sbuf, (int)size, MPI_BYTE, next, 1, rbuf, (int)size, MPI_BYTE,
				    prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		mt_check(rbuf, size, seed_of(lap, prev, 0), "MPI_Sendrecv data");

		/* my half that next reads; everyone has checked the last lap's
		 * put half before the barrier, so the puts may come */
		mt_fill(win_mem + size, size, seed_of(lap, mt_rank, 2));
		mt_fill(pbuf, size, seed_of(lap, mt_rank, 1));
		MT_MPI(MPI_Win_sync(win));
		MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
		MT_MPI(MPI_Put(pbuf, (int)size, MPI_BYTE, next, 0, (int)size, MPI_BYTE, win));
		MT_MPI(MPI_Get(gbuf, (int)size, MPI_BYTE, prev, size, (int)size, MPI_BYTE, win));
		MT_MPI(MPI_Win_flush_all(win));
		MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
		MT_MPI(MPI_Win_sync(win));
		mt_check(win_mem, size, seed_of(lap, prev, 1), "MPI_Put data in the window");
		mt_check(gbuf, size, seed_of(lap, prev, 2), "MPI_Get data");
		if (mt_rank == 0)
			printf("lap %ld\n", lap);
	}
	mt_begin("finalize");
	MT_MPI(MPI_Win_unlock_all(win));
	MT_MPI(MPI_Win_free(&win));
	if (mt_rank == 0)
		printf("fault_mpi: %ld laps of %zu B ok\n", lap - 1, size);
	MPI_Finalize();
	return 0;
}
