/* The soak program (tests/soak/soak): its buffers, VM events and the
 * node's counters.  See soak.c for what it does. */
#ifndef SOAK_H
#define SOAK_H

#include "mpitest.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* splitmix64: the ranks draw the same sequence from the same seed, so
 * they agree on every operation without talking. */
static inline uint64_t soak_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline size_t soak_range(uint64_t *s, size_t lo, size_t hi) /* [lo, hi] */
{
	return lo + soak_rand(s) % (hi - lo + 1);
}

/* The next of N kinds from a shuffled deck (DECK holds N + 1 ints, zero
 * at first): every kind comes once in each N draws, so that even a
 * short run covers them all. */
static inline int soak_deal(uint64_t *s, int *deck, int n)
{
	int i, j, t;

	if (deck[n] == 0) {     /* deck[n]: how many are left */
		for (i = 0; i < n; i++)
			deck[i] = i;
		for (i = n - 1; i > 0; i--) {
			j = soak_rand(s) % (i + 1);
			t = deck[i];
			deck[i] = deck[j];
			deck[j] = t;
		}
		deck[n] = n;
	}
	return deck[--deck[n]];
}

/* A buffer whose memory the VM events replace under the same name. */
struct sbuf {
	const char *name;
	uint8_t *p;
	size_t len;             /* usable bytes */
	size_t maplen;          /* page-rounded, for mmap'd ones */
	int is_malloc;
	int readonly;           /* mprotect'd read-only until soak_restore */
};

enum soak_event {
	EV_MALLOC,              /* free + malloc (mmap'd buffers become malloc'd) */
	EV_MMAP,                /* munmap + mmap MAP_FIXED at the same address */
	EV_FORK,                /* a child writes half the pages, lives on through the next operation */
	EV_MPROTECT,            /* PROT_NONE and back; sources stay read-only during the operation */
	EV_PAGEOUT,             /* MADV_PAGEOUT: to zram swap, the NIC brings it back */
	EV_DONTNEED,            /* MADV_DONTNEED: zero pages, refilled */
	EV_KINDS
};
extern const char *const soak_event_name[EV_KINDS];

/* Per-rank tallies of what happened to the buffers. */
struct soak_vmstats {
	unsigned long events[EV_KINDS];
	unsigned long pages_out;        /* pages MADV_PAGEOUT left non-resident */
};
extern struct soak_vmstats soak_vm;

void soak_buf_init(struct sbuf *b, const char *name, size_t len, int use_malloc);
void soak_buf_free(struct sbuf *b);

/* Does event EV change what BUF holds (it must be filled again)? */
int soak_event_clobbers(enum soak_event ev);
/* Apply EV to BUF (not EV_FORK: see soak_fork).  SOURCE: BUF is only
 * read by the next operation (mprotect leaves it read-only then). */
void soak_event(struct sbuf *b, enum soak_event ev, int source);
/* Undo what an event left for the operation's duration (read-only). */
void soak_restore(struct sbuf *b);

/* Fork a child that snapshots BUFS, writes every other page of each,
 * waits until soak_fork_end and then checks that its copy holds its
 * own writes and the snapshot, nothing the parent's NIC wrote since. */
void soak_fork(struct sbuf **bufs, int n);
void soak_fork_end(void);

/* The node's counters: /proc/vmstat entries and the driver's debugfs
 * counters (0 for a name that is not there). */
long long soak_vmstat(const char *name);
long long soak_driver_counter(const char *name);
/* One line of the driver's counters, for the report. */
void soak_driver_line(char *out, size_t len);

/* The bandwidth run under memory pressure (soak -P: soak_pressure.c). */
void soak_pressure(size_t size, int rounds);

#endif
