/*
 * OpenSHMEM across nodes, byte for byte: puts and gets of 1 B .. 1 MiB
 * between neighbours, 32- and 64-bit atomics (fetch-add from every PE
 * onto PE 0, compare-swap, swap, and, or, xor), barriers between the
 * phases.  Run with oshrun (Open MPI's spml ucx: over the Elan transport
 * with UCX_TLS=elan,self).
 *
 *   oshrun -np N shmem_test
 *
 * PE 0 prints "ok N - name" / "not ok N - name: why" and "N passed, M
 * failed"; a failing PE's reason comes through a symmetric flag.  Exit
 * status 0 only when all passed.
 */
#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (1 << 20)
#define ADDS 200

static unsigned char src[BIG], dst[BIG];
static long long c64;
static int c32;
static unsigned long long bits64;
static unsigned int bits32;
static int bad;			/* symmetric: the PEs that saw a difference */
static char why[256];

static int me, npes, tap_n, tap_fail;

static unsigned char pat(int pe, size_t i, int round)
{
	return (unsigned char)(pe * 31 + i * 7 + round * 13 + (i >> 12));
}

/* Every PE reports into PE 0's flag; PE 0 prints the result. */
static void result(const char *name, int mine)
{
	int any;

	if (mine)
		shmem_int_atomic_add(&bad, 1, 0);
	shmem_barrier_all();
	any = shmem_int_atomic_fetch(&bad, 0);
	shmem_barrier_all();
	tap_n++;
	if (me == 0) {
		if (any) {
			tap_fail++;
			printf("not ok %d - %s: %d PE(s) failed%s%s\n", tap_n, name, any,
			       mine ? ", PE 0: " : "", mine ? why : "");
		} else {
			printf("ok %d - %s\n", tap_n, name);
		}
		fflush(stdout);
	} else if (any) {
		tap_fail++;
		if (mine)
			fprintf(stderr, "PE %d: %s: %s\n", me, name, why);
	}
	if (me == 0)
		bad = 0;
	shmem_barrier_all();
}

static int t_put(size_t len, int round)
{
	int right = (me + 1) % npes, left = (me + npes - 1) % npes;
	size_t i;

	for (i = 0; i < len; i++)
		src[i] = pat(me, i, round);
	memset(dst, 0, BIG);
	shmem_barrier_all();
	shmem_putmem(dst, src, len, right);
	shmem_quiet();
	shmem_barrier_all();
	for (i = 0; i < len; i++)
		if (dst[i] != pat(left, i, round)) {
			snprintf(why, sizeof(why), "put %zu B: byte %zu is %#x, want %#x", len, i,
				 dst[i], pat(left, i, round));
			return 1;
		}
	if (len < BIG && dst[len] != 0) {
		snprintf(why, sizeof(why), "put %zu B: the byte after it changed", len);
		return 1;
	}
	return 0;
}

static int t_get(size_t len, int round)
{
	int right = (me + 1) % npes;
	size_t i;

	for (i = 0; i < len; i++)
		src[i] = pat(me, i, round);
	memset(dst, 0, BIG);
	shmem_barrier_all();
	shmem_getmem(dst, src, len, right);
	for (i = 0; i < len; i++)
		if (dst[i] != pat(right, i, round)) {
			snprintf(why, sizeof(why), "get %zu B: byte %zu is %#x, want %#x", len, i,
				 dst[i], pat(right, i, round));
			break;
		}
	/* the neighbour keeps its source until every PE has read */
	shmem_barrier_all();
	return i < len;
}

/* Every PE adds 1 ADDS times to PE 0's counters, fetching: every old
 * value is seen once in all (the sum of what each PE fetched is checked
 * by PE 0 through the final value), and the final value is exact. */
static int t_fetch_add(void)
{
	long long old64, prev64 = -1;
	int old32, prev32 = -1, k, fail = 0;

	if (me == 0) {
		c64 = 0;
		c32 = 0;
	}
	shmem_barrier_all();
	for (k = 0; k < ADDS; k++) {
		old64 = shmem_longlong_atomic_fetch_add(&c64, 1, 0);
		old32 = shmem_int_atomic_fetch_add(&c32, 1, 0);
		if (old64 <= prev64 || old64 >= (long long)ADDS * npes ||
		    old32 <= prev32 || old32 >= ADDS * npes) {
			snprintf(why, sizeof(why), "fetch-add: fetched %lld / %d after %lld / %d",
				 old64, old32, prev64, prev32);
			fail = 1;
		}
		prev64 = old64;
		prev32 = old32;
	}
	shmem_barrier_all();
	if (me == 0 && (c64 != (long long)ADDS * npes || c32 != ADDS * npes)) {
		snprintf(why, sizeof(why), "fetch-add: sums %lld and %d, want %d", c64, c32,
			 ADDS * npes);
		fail = 1;
	}
	return fail;
}

/* compare-swap: a ticket each in turn; swap; and, or, xor on PE 0.
 * Every PE goes through every barrier, whatever it found. */
static int t_cswap_bitwise(void)
{
	long long want = 0, got;
	unsigned long long mask = 1ull << (me % 64), b64;
	unsigned int mask32 = 1u << (me % 32), b32;
	int tries = 0, fail = 0;

	if (me == 0) {
		c64 = 0;
		bits64 = 0;
		bits32 = 0;
	}
	shmem_barrier_all();
	/* every PE takes one ticket by compare-swap */
	for (;;) {
		got = shmem_longlong_atomic_compare_swap(&c64, want, want + 1, 0);
		if (got == want)
			break;
		want = got;
		if (++tries > 100000) {
			snprintf(why, sizeof(why), "compare-swap never succeeded");
			fail = 1;
			break;
		}
	}
	shmem_ulonglong_atomic_or(&bits64, mask, 0);
	shmem_uint_atomic_fetch_or(&bits32, mask32, 0);
	shmem_barrier_all();
	if (me == 0) {
		unsigned long long all = 0;
		unsigned int all32 = 0;
		int i;

		for (i = 0; i < npes; i++) {
			all |= 1ull << (i % 64);
			all32 |= 1u << (i % 32);
		}
		if (c64 != npes || bits64 != all || bits32 != all32) {
			snprintf(why, sizeof(why), "tickets %lld (want %d), or-ed bits %#llx / %#x",
				 c64, npes, bits64, bits32);
			fail = 1;
		}
	}
	shmem_barrier_all();
	/* and, xor, swap: on PE 0, by the last PE */
	if (me == npes - 1) {
		b64 = shmem_ulonglong_atomic_fetch_and(&bits64, ~1ull, 0);
		b32 = shmem_uint_atomic_fetch_xor(&bits32, 0xffffffffu, 0);
		got = shmem_longlong_atomic_swap(&c64, 4242, 0);
		if (got != npes || (b64 & 1) != 1 || (b32 & 1) != 1) {
			snprintf(why, sizeof(why), "fetch-and %#llx, fetch-xor %#x, swap %lld", b64,
				 b32, got);
			fail = 1;
		}
	}
	shmem_barrier_all();
	if (me == 0 && (c64 != 4242 || (bits64 & 1) || (bits32 & 1))) {
		snprintf(why, sizeof(why), "after and/xor/swap: %lld, %#llx, %#x", c64, bits64, bits32);
		fail = 1;
	}
	return fail;
}

int main(void)
{
	static const size_t lens[] = { 1, 8, 4000, 65536, BIG };
	char name[64];
	unsigned k;

	shmem_init();
	me = shmem_my_pe();
	npes = shmem_n_pes();
	if (me == 0)
		printf("# %d PEs\n", npes);
	for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		snprintf(name, sizeof(name), "put %zu B to the right neighbour", lens[k]);
		result(name, t_put(lens[k], (int)k));
		snprintf(name, sizeof(name), "get %zu B from the right neighbour", lens[k]);
		result(name, t_get(lens[k], (int)k + 100));
	}
	result("fetch-add, 32 and 64 bits, every PE onto PE 0", t_fetch_add());
	result("compare-swap tickets, or, fetch-or, fetch-and, fetch-xor, swap", t_cswap_bitwise());
	if (me == 0)
		printf("%d passed, %d failed\n", tap_n - tap_fail, tap_fail);
	shmem_finalize();
	return tap_fail ? 1 : 0;
}
