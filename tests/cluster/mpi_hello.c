/* MPI hello for the cluster tests: every rank names its host, then the
 * ranks pass a token around a ring and sum their ranks, so that data
 * really crosses the nodes through the chosen BTL.
 *
 *   mpi_hello [SECONDS]
 *
 * With SECONDS, the token keeps going round for that long (rank 0 prints
 * "laps N" now and then), so that a node can be killed during the job. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* One lap of the ring; returns the token rank 0 got back.  A token of -1
 * tells everyone to stop after passing it on. */
static int lap(int rank, int size, int token)
{
	if (rank == 0) {
		MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
		MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (token >= 0)
			token++;
		MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
	}
	return token;
}

int main(int argc, char **argv)
{
	int rank, size, len, token = 1, sum;
	char host[MPI_MAX_PROCESSOR_NAME];
	double seconds = argc > 1 ? atof(argv[1]) : 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	printf("hello from rank %d of %d on %s\n", rank, size, host);
	fflush(stdout);

	if (size > 1) {
		token = lap(rank, size, 1);
		if (seconds > 0) {
			double end = MPI_Wtime() + seconds, next = 0;
			long laps = 1;
			int go = 1;

			while (go) {
				if (rank == 0) {
					go = MPI_Wtime() < end;
					if (MPI_Wtime() >= next) {
						printf("laps %ld\n", laps);
						fflush(stdout);
						next = MPI_Wtime() + 1;
					}
				}
				if (lap(rank, size, go ? 1 : -1) < 0)
					break;
				laps++;
			}
		}
	}
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("ring token %d (expected %d), rank sum %d (expected %d)\n",
		       token, size, sum, size * (size - 1) / 2);
	MPI_Finalize();
	return 0;
}
