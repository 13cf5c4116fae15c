/* osu_allreduce: average latency of MPI_Allreduce (MPI_FLOAT, SUM) over
 * all ranks, sizes in bytes (size / 4 floats). */
#include "osu.h"

#include <stdlib.h>

int main(int argc, char **argv)
{
	struct osu o = { .title = "OSU MPI Allreduce Latency Test", .column = "Avg Latency(us)",
			 .min = 4, .max = 1 << 20, .iters = 100, .warmup = 10 };
	float *in, *out;

	osu_init(&o, &argc, &argv, 2);
	in = osu_buffer(&o);
	out = osu_buffer(&o);
	for (size_t i = 0; i < o.max / sizeof(float); i++)
		in[i] = 1.0f;
	OSU_SIZES(&o, size) {
		int count = size / sizeof(float), n = osu_iters(&o, size), w = osu_warmup(&o, size);
		double t0 = 0, lat, sum;

		if (count == 0)
			continue;
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; i < n + w; i++) {
			if (i == w)
				t0 = MPI_Wtime();
			MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		}
		lat = (MPI_Wtime() - t0) * 1e6 / n;
		MT_CHECK(out[count - 1] == (float)mt_size, "MPI_Allreduce of ones gave %g, expected %d",
			 out[count - 1], mt_size);
		MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
		osu_row(size, sum / mt_size);
	}
	free(in);
	free(out);
	MPI_Finalize();
	return 0;
}
