/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared pieces of the hostile stage's programs (tests/hostile/check):
 * the victim's memory layout, the rendezvous files in DIR and a small
 * random number generator.  Header-only, like tests/common/elan_testlib.h.
 */
#ifndef HOSTILE_H
#define HOSTILE_H

#include <fcntl.h>
#include <sys/stat.h>

#include "elan_testlib.h"

#define PG		4096UL

/*
 * A victim's arena: one mapping of ARENA_PAGES pages, all of it filled
 * with the victim's guard pattern except the counters.  The first and
 * the last page are guard pages (PROT_NONE after the fill; read back at
 * the end).  Legitimate peers write only their own window slot and their
 * own counter words; everything else must keep the pattern for ever.
 * Attackers aim at the window, the counters and the bait pages.
 */
#define ARENA_PAGES	24
#define ARENA_LEN	(ARENA_PAGES * PG)
#define NSLOTS		4		/* victims of one run: v0 v1 v1b v0r */
#define SLOT_LEN	9000UL		/* spans three pages, unaligned */
#define WIN_OFF		(3 * PG + 123)
#define CNT_OFF		((WIN_OFF + NSLOTS * SLOT_LEN + 200) & ~7UL)
#define CNT_FADD(s)	(CNT_OFF + 8 * (s))		/* fetch-add words */
#define CNT_CSWAP(s)	(CNT_OFF + 8 * (NSLOTS + (s)))	/* compare-swap words */
#define CNT_LEN		(16 * NSLOTS)
#define BAIT_OFF	(16 * PG)
#define BAIT_LEN	(7 * PG)

/* What a victim publishes in DIR/NAME.info. */
struct vinfo {
	uint32_t addr;		/* NIC address */
	uint32_t slot;		/* its window slot in its peers' arenas */
	uint64_t arena;		/* virtual address of the arena */
	uint64_t seed;		/* guard pattern seed */
	uint64_t bait_pfn;	/* guest pfn of its first bait page */
};

/* -v of the driver tests: these programs print their details always. */
static inline int h_verbose(void)
{
	return t_verbose;
}

static inline uint64_t h_u(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* xorshift64*: reproducible garbage from a printed seed. */
static uint64_t h_rng_state = 88172645463325252ULL;

static inline uint64_t h_rand(void)
{
	uint64_t x = h_rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	h_rng_state = x;
	return x * 2685821657736338717ULL;
}

static inline void h_seed(uint64_t s)
{
	h_rng_state = s ? s : 1;
}

static inline void h_fill_rand(void *p, size_t len)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v = h_rand();

		memcpy(b + i, &v, 8);
	}
	for (; i < len; i++)
		b[i] = (uint8_t)h_rand();
}

static inline int h_file_exists(const char *dir, const char *name)
{
	char path[1024];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

/* Write DIR/NAME atomically (tmp + rename). */
static inline int h_write_file(const char *dir, const char *name,
			       const char *text)
{
	char path[1024], tmp[1100];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	if (fputs(text, f) < 0 || fclose(f) || rename(tmp, path))
		return -1;
	return 0;
}

/* The job capability of the victims (DIR/cap), 0 if none. */
static inline uint64_t h_read_cap(const char *dir)
{
	char path[1024];
	uint64_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cap", dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%" SCNx64, &cap) != 1)
		cap = 0;
	fclose(f);
	return cap;
}

/* Read DIR/NAME.info; waits up to @wait seconds.  0 or -1. */
static inline int h_read_info(const char *dir, const char *name,
			      struct vinfo *vi, double wait)
{
	double end = t_now() + wait;
	char path[1024];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/%s.info", dir, name);
	for (;;) {
		f = fopen(path, "r");
		if (f)
			break;
		if (t_now() >= end)
			return -1;
		usleep(100000);
	}
	n = fscanf(f, "%x %u %" SCNx64 " %" SCNx64 " %" SCNx64, &vi->addr,
		   &vi->slot, &vi->arena, &vi->seed, &vi->bait_pfn);
	fclose(f);
	return n == 5 ? 0 : -1;
}

/* Guest pfn of the page at @p (root only; 0 if unknown). */
static inline uint64_t h_pfn(const void *p)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &e, 8, (off_t)(h_u(p) / PG * 8)) != 8)
		e = 0;
	close(fd);
	return (e >> 63) ? (e & ((1ULL << 55) - 1)) : 0;
}

#endif /* HOSTILE_H */
