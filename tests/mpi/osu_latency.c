/* osu_latency and osu_multi_lat: ping-pong latency, half the round trip.
 * osu_latency: ranks 0 and 1 (others idle).  osu_multi_lat (built with
 * -DMULTI): every rank i < n/2 pairs with i + n/2, all pairs at once;
 * the row is the average over the pairs. */
#include "osu.h"

#include <stdlib.h>

int main(int argc, char **argv)
{
#ifdef MULTI
	struct osu o = { .title = "OSU MPI Multi Latency Test", .column = "Latency (us)",
			 .min = 0, .max = 4 << 20, .iters = 200, .warmup = 20 };
	int half, peer, active;
#else
	struct osu o = { .title = "OSU MPI Latency Test", .column = "Latency (us)",
			 .min = 0, .max = 4 << 20, .iters = 200, .warmup = 20 };
	int peer, active;
#endif
	char *sbuf, *rbuf;

	osu_init(&o, &argc, &argv, 2);
#ifdef MULTI
	half = mt_size / 2;
	peer = mt_rank < half ? mt_rank + half : mt_rank - half;
	active = mt_rank < 2 * half;
#else
	peer = 1 - mt_rank;
	active = mt_rank < 2;
#endif
	sbuf = osu_buffer(&o);
	rbuf = osu_buffer(&o);
	OSU_SIZES(&o, size) {
		int n = osu_iters(&o, size), w = osu_warmup(&o, size);
		double t0 = 0, lat = 0, sum = 0;

		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; active && i < n + w; i++) {
			if (i == w)
				t0 = MPI_Wtime();
			if (mt_rank < peer) {
				MPI_Send(sbuf, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
				MPI_Recv(rbuf, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(rbuf, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(sbuf, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
			}
		}
		if (active)
			lat = (MPI_Wtime() - t0) * 1e6 / (2.0 * n);
#ifdef MULTI
		MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
		lat = sum / (2 * half);
#else
		(void)sum;
#endif
		osu_row(size, lat);
	}
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
