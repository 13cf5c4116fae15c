/*
 * The cost of ucp_mem_map (and ucp_mem_unmap) of a buffer, with the
 * transports UCX_TLS names: on elan it registers nothing; beside it the
 * same call with the shared-memory transports (cma, posix).
 *
 *   UCX_TLS=elan ucp_map_cost [MiB [repeats]]     (default 1024 MiB, 7)
 *
 * The buffer is mapped once (anonymous, not touched: registration must
 * not depend on it being populated); each repeat maps and unmaps it.
 * Prints "map_us median min max" and "unmap_us median min max", and the
 * memory domains the context registered with.
 */
#include <ucp/api/ucp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 1024;
	int reps = argc > 2 ? atoi(argv[2]) : 7, i;
	size_t len = mib << 20;
	ucp_params_t params = { .field_mask = UCP_PARAM_FIELD_FEATURES,
				.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 };
	ucp_context_h ctx;
	ucp_mem_h memh;
	ucs_status_t st;
	double *map, *unmap, t;
	void *buf;

	if (reps < 1)
		reps = 1;
	map = calloc(reps, sizeof(*map));
	unmap = calloc(reps, sizeof(*unmap));
	st = ucp_init(&params, NULL, &ctx);
	if (st != UCS_OK) {
		fprintf(stderr, "ucp_init: %s\n", ucs_status_string(st));
		return 1;
	}
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		   -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (i = 0; i < reps; i++) {
		ucp_mem_map_params_t mp = {
			.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
			.address = buf, .length = len,
		};

		t = now_us();
		st = ucp_mem_map(ctx, &mp, &memh);
		map[i] = now_us() - t;
		if (st != UCS_OK) {
			fprintf(stderr, "ucp_mem_map of %zu MiB: %s\n", mib, ucs_status_string(st));
			return 1;
		}
		t = now_us();
		ucp_mem_unmap(ctx, memh);
		unmap[i] = now_us() - t;
	}
	qsort(map, reps, sizeof(*map), cmp);
	qsort(unmap, reps, sizeof(*unmap), cmp);
	printf("tls %s mib %zu repeats %d\n", getenv("UCX_TLS") ? getenv("UCX_TLS") : "all", mib, reps);
	printf("map_us %.1f %.1f %.1f\n", map[reps / 2], map[0], map[reps - 1]);
	printf("unmap_us %.1f %.1f %.1f\n", unmap[reps / 2], unmap[0], unmap[reps - 1]);
	munmap(buf, len);
	ucp_cleanup(ctx);
	return 0;
}
