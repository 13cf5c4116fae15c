/*
 * memcpy_bw: host memcpy bandwidth, the reference for the MPI bandwidth
 * figures of the main job, printed in the OSU format ("size value").
 *
 *   memcpy_bw [-m MIN:MAX]
 *
 * One thread copies between two warm buffers of each size (powers of two
 * from MIN to MAX, default 1:4194304); each size is timed over at least
 * 64 MiB or 20 copies, whichever is more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	unsigned long min = 1, max = 4UL << 20, size, last = 0;
	char *src, *dst;
	int opt;

	while ((opt = getopt(argc, argv, "m:")) != -1) {
		if (opt != 'm' || sscanf(optarg, "%lu:%lu", &min, &max) != 2 ||
		    min == 0 || min > max) {
			fprintf(stderr, "usage: %s [-m MIN:MAX]\n", argv[0]);
			return 2;
		}
	}
	src = malloc(max);
	dst = malloc(max);
	if (!src || !dst) {
		fprintf(stderr, "memcpy_bw: cannot allocate 2 x %lu bytes\n", max);
		return 1;
	}
	memset(src, 0x5a, max);
	memset(dst, 0, max);

	printf("# memcpy bandwidth (one thread, warm buffers)\n");
	printf("# %-10s%20s\n", "Size", "Bandwidth (MB/s)");
	for (size = min; size <= max; size *= 2) {
		unsigned long reps = (64UL << 20) / size, i;
		double t;

		if (reps < 20)
			reps = 20;
		memcpy(dst, src, size);
		t = now();
		for (i = 0; i < reps; i++) {
			memcpy(dst, src, size);
			/* Keep the compiler from merging the copies. */
			__asm__ __volatile__("" : : "r"(dst) : "memory");
		}
		t = now() - t;
		printf("%-12lu%20.2f\n", size, size * reps / t / 1e6);
		last = size;
	}
	if (memcmp(dst, src, last) != 0) {
		fprintf(stderr, "memcpy_bw: the copy differs from its source\n");
		return 1;
	}
	free(src);
	free(dst);
	return 0;
}
