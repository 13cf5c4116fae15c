/* MPI hello for the cluster tests: every rank names its host, then the
 * ranks pass a token around a ring and sum their ranks, so that data
 * really crosses the nodes through the chosen BTL. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, len, token, sum;
	char host[MPI_MAX_PROCESSOR_NAME];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	printf("hello from rank %d of %d on %s\n", rank, size, host);
	fflush(stdout);

	/* Ring: rank 0 sends 1, each rank adds one and passes it on. */
	if (size > 1) {
		if (rank == 0) {
			token = 1;
			MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			token++;
			MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
		}
	} else {
		token = 1;
	}
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("ring token %d (expected %d), rank sum %d (expected %d)\n",
		       token, size, sum, size * (size - 1) / 2);
	MPI_Finalize();
	return 0;
}
