/* osu_bw and osu_bibw: streaming bandwidth between ranks 0 and 1 with a
 * window of nonblocking sends in flight, MB/s (10^6 bytes).  osu_bw:
 * rank 0 sends, rank 1 acknowledges each window.  osu_bibw (built with
 * -DBIDIR): both send a window to each other at once. */
#include "osu.h"

#include <stdlib.h>

/* One window: rank 1 (and rank 0 for bibw) posts the receives, rank 0 (and
 * rank 1) the sends; then rank 1 acknowledges. */
static void window(size_t size, int window, int bidir, char *sbuf, char *rbuf, MPI_Request *req)
{
	int peer = 1 - mt_rank, k = 0;
	char ack;

	if (mt_rank == 1 || bidir)
		for (int j = 0; j < window; j++)
			MPI_Irecv(rbuf, size, MPI_CHAR, peer, 10, MPI_COMM_WORLD, &req[k++]);
	if (mt_rank == 0 || bidir)
		for (int j = 0; j < window; j++)
			MPI_Isend(sbuf, size, MPI_CHAR, peer, 10, MPI_COMM_WORLD, &req[k++]);
	MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
	if (mt_rank == 0)
		MPI_Recv(&ack, 1, MPI_CHAR, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else
		MPI_Send(&ack, 1, MPI_CHAR, peer, 11, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
#ifdef BIDIR
	struct osu o = { .title = "OSU MPI Bi-Directional Bandwidth Test", .column = "Bandwidth (MB/s)",
			 .min = 1, .max = 4 << 20, .iters = 20, .warmup = 2, .window = 64, .min_ms = 100 };
	const int bidir = 1;
#else
	struct osu o = { .title = "OSU MPI Bandwidth Test", .column = "Bandwidth (MB/s)",
			 .min = 1, .max = 4 << 20, .iters = 20, .warmup = 2, .window = 64, .min_ms = 100 };
	const int bidir = 0;
#endif
	char *sbuf, *rbuf;
	MPI_Request *req;

	osu_init(&o, &argc, &argv, 2);
	sbuf = osu_buffer(&o);
	rbuf = osu_buffer(&o);
	req = mt_alloc(2 * o.window * sizeof(*req));
	OSU_SIZES(&o, size) {
		int n = osu_window_iters(&o, size), w = osu_warmup(&o, size);
		double t0;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; mt_rank < 2 && i < w; i++)
			window(size, o.window, bidir, sbuf, rbuf, req);
		n = osu_rounds(&o, n, MPI_Wtime() - t0, w);
		t0 = MPI_Wtime();
		for (int i = 0; mt_rank < 2 && i < n; i++)
			window(size, o.window, bidir, sbuf, rbuf, req);
		if (mt_rank == 0)
			osu_row(size, (bidir ? 2.0 : 1.0) * size * o.window * n / (MPI_Wtime() - t0) / 1e6);
	}
	free(req);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
