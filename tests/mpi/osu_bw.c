/* osu_bw, osu_bibw and osu_mbw_mr: streaming bandwidth with a window of
 * nonblocking sends in flight, MB/s (10^6 bytes).  osu_bw: rank 0 sends,
 * rank 1 acknowledges each window.  osu_bibw (built with -DBIDIR): both
 * send a window to each other at once.  osu_mbw_mr (built with -DMBW_MR):
 * the message rate, as OSU's: the first half of the ranks send to the
 * second half (rank i to i + np/2), each pair as osu_bw; its rows are
 * "size MB/s messages/s" over all pairs (one pair: osu_bw counted in
 * messages). */
#include "osu.h"

#include <stdio.h>
#include <stdlib.h>

/* One window: the receiver (and the sender for bibw) posts the receives,
 * the sender (and the receiver) the sends; then the receiver
 * acknowledges. */
static void window(size_t size, int window, int bidir, int sender, int peer,
		   char *sbuf, char *rbuf, MPI_Request *req)
{
	int k = 0;
	char ack;

	if (!sender || bidir)
		for (int j = 0; j < window; j++)
			MPI_Irecv(rbuf, size, MPI_CHAR, peer, 10, MPI_COMM_WORLD, &req[k++]);
	if (sender || bidir)
		for (int j = 0; j < window; j++)
			MPI_Isend(sbuf, size, MPI_CHAR, peer, 10, MPI_COMM_WORLD, &req[k++]);
	MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
	if (sender)
		MPI_Recv(&ack, 1, MPI_CHAR, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else
		MPI_Send(&ack, 1, MPI_CHAR, peer, 11, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
#if defined(BIDIR)
	struct osu o = { .title = "OSU MPI Bi-Directional Bandwidth Test", .column = "Bandwidth (MB/s)",
			 .min = 1, .max = 4 << 20, .iters = 20, .warmup = 2, .window = 64, .min_ms = 100 };
	const int bidir = 1;
#elif defined(MBW_MR)
	struct osu o = { .title = "OSU MPI Multiple Bandwidth / Message Rate Test",
			 .column = "MB/s        Messages/s",
			 .min = 1, .max = 4 << 20, .iters = 20, .warmup = 2, .window = 64, .min_ms = 100 };
	const int bidir = 0;
#else
	struct osu o = { .title = "OSU MPI Bandwidth Test", .column = "Bandwidth (MB/s)",
			 .min = 1, .max = 4 << 20, .iters = 20, .warmup = 2, .window = 64, .min_ms = 100 };
	const int bidir = 0;
#endif
	char *sbuf, *rbuf;
	MPI_Request *req;
	int pairs, sender, peer, active;

	osu_init(&o, &argc, &argv, 2);
#ifdef MBW_MR
	pairs = mt_size / 2;
#else
	pairs = 1;
#endif
	active = mt_rank < 2 * pairs;
	sender = mt_rank < pairs;
	peer = sender ? mt_rank + pairs : mt_rank - pairs;
	sbuf = osu_buffer(&o);
	rbuf = osu_buffer(&o);
	req = mt_alloc(2 * o.window * sizeof(*req));
	OSU_SIZES(&o, size) {
		int n = osu_window_iters(&o, size), w = osu_warmup(&o, size);
		double t0, secs;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; active && i < w; i++) {
			window(size, o.window, bidir, sender, peer, sbuf, rbuf, req);
			osu_remap(&o, sbuf);
			osu_remap(&o, rbuf);
		}
		n = osu_rounds(&o, n, MPI_Wtime() - t0, w);
		/* every pair starts together: the rate is theirs at once */
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; active && i < n; i++) {
			window(size, o.window, bidir, sender, peer, sbuf, rbuf, req);
			osu_remap(&o, sbuf);
			osu_remap(&o, rbuf);
		}
#ifdef MBW_MR
		/* the slowest pair's time: every message counted is done */
		MPI_Barrier(MPI_COMM_WORLD);
#endif
		secs = MPI_Wtime() - t0;
#ifdef MBW_MR
		if (mt_rank == 0) {
			double rate = (double)pairs * o.window * n / secs;

			printf("%-10zu%20.2f%20.2f\n", size, rate * size / 1e6, rate);
		}
#else
		if (mt_rank == 0)
			osu_row(size, (bidir ? 2.0 : 1.0) * size * o.window * n / secs / 1e6);
#endif
	}
	free(req);
	osu_free(&o, sbuf);
	osu_free(&o, rbuf);
	MPI_Finalize();
	return 0;
}
