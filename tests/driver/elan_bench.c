// SPDX-License-Identifier: GPL-2.0
/*
 * elan_bench: libelan microbenchmarks in one guest, beside memcpy.
 *
 * The context puts and gets into its own memory (dst = its own address),
 * so the whole path runs: command queue, nicd's translation walk and copy
 * between guest RAM, completion event.  Printed, not checked for speed:
 * the machine is shared and the guest CPU emulated; memcpy of the same
 * sizes in the same run is the reference.
 *
 *   elan_bench [iterations]
 *
 * Sizes stop at 1 MiB: with source and destination in one context, a
 * 16 MiB put fails with a fault error (both sides compete for one NIC MMU
 * and evict each other; see the issue notes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../../driver/libelan/elan.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wait for the event of @cookie; exit on an error status. */
static void wait_done(elan_ctx_t *c, uint64_t cookie)
{
	struct elan_event ev;
	int r;

	for (;;) {
		r = elan_poll_event(c, &ev);
		if (r < 0) {
			fprintf(stderr, "elan_bench: context failed\n");
			exit(1);
		}
		if (r == 0)
			continue;
		if (ev.status) {
			fprintf(stderr, "elan_bench: %s\n",
				elan_strerror(ev.status));
			exit(1);
		}
		if (ev.cookie == cookie)
			return;
	}
}

static uint64_t cookie;

/* One put (or get) of @len and its completion: seconds. */
static double xfer(elan_ctx_t *c, int put, char *a, char *b, size_t len)
{
	double t = now();
	int r;

	cookie++;
	do {
		r = put ? elan_put(c, elan_addr(c), a, (uintptr_t)b, len,
				   cookie, 0) :
			  elan_get(c, elan_addr(c), a, (uintptr_t)b, len,
				   cookie, 0);
	} while (r == -EAGAIN);
	if (r) {
		fprintf(stderr, "elan_bench: post: %s\n", strerror(-r));
		exit(1);
	}
	wait_done(c, cookie);
	return now() - t;
}

static char *map(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20;
	static const size_t sizes[] = { 8, 4096, 65536, 1 << 20 };
	size_t max = 1 << 20, len, k;
	double t, best_put, best_get, best_cpy, cold;
	elan_ctx_t *c;
	char *a, *b;
	int i, r;

	r = elan_open(0xbe4c4ULL ^ (uint64_t)now(), &c);
	if (r) {
		fprintf(stderr, "elan_bench: elan_open: %s\n", strerror(-r));
		return 1;
	}
	/* Room for the unaligned offsets past the largest size. */
	a = map(max + 4096);
	b = map(max + 4096);

	/* First touch: NIC faults on pages the CPU never touched. */
	t = xfer(c, 1, a, b, max);
	cold = t * 1e6 / (max / 4096);

	printf("libelan in one guest (own context), best of %d\n", iters);
	printf("%-10s %12s %12s %12s %10s %10s\n", "bytes", "put MB/s",
	       "get MB/s", "memcpy MB/s", "put us", "get us");
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		len = sizes[k];
		best_put = best_get = best_cpy = 1e9;
		for (i = 0; i < iters; i++) {
			t = xfer(c, 1, a + 1, b + 3, len);
			if (t < best_put)
				best_put = t;
			t = xfer(c, 0, a + 5, b + 7, len);
			if (t < best_get)
				best_get = t;
			t = now();
			memcpy(b + 3, a + 1, len);
			__asm__ volatile("" : : "r"(b) : "memory");
			t = now() - t;
			if (t < best_cpy)
				best_cpy = t;
		}
		if (memcmp(a + 5, b + 7, len)) {
			fprintf(stderr, "elan_bench: get data differs\n");
			return 1;
		}
		printf("%-10zu %12.2f %12.2f %12.2f %10.1f %10.1f\n", len,
		       len / best_put / 1e6, len / best_get / 1e6,
		       len / (best_cpy > 0 ? best_cpy : 1e-9) / 1e6,
		       best_put * 1e6, best_get * 1e6);
	}
	printf("first-touch put: %.1f us per 4 KiB page (NIC faults)\n", cold);
	elan_close(c);
	return 0;
}
