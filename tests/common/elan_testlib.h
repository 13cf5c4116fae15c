/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the libelan tests: results, completion waiting and
 * the driver's counters.  Header-only so that each test is one program.
 */
#ifndef ELAN_TESTLIB_H
#define ELAN_TESTLIB_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libelan.h"

static int t_verbose __attribute__((unused));	/* -v; not every program has one */
static int t_failed;		/* failures in the current test */
static const char *t_name = "";

#define MiB (1024UL * 1024)

static inline void t_msg(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline void t_msg(const char *fmt, ...)
{
	va_list ap;

	printf("  %s: ", t_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#define T_FAIL(...) do { t_failed++; t_msg("FAIL " __VA_ARGS__); } while (0)
#define T_INFO(...) do { if (t_verbose) t_msg(__VA_ARGS__); } while (0)
#define T_CHECK(cond, ...) do { if (!(cond)) T_FAIL(__VA_ARGS__); } while (0)
/* A check whose failure makes the rest of the test meaningless. */
#define T_REQUIRE(cond, ...) \
	do { if (!(cond)) { T_FAIL(__VA_ARGS__); return; } } while (0)

static inline double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Timeout for one operation to complete (TCG guests are slow). */
static double t_op_timeout = 120.0;

/* Stash of events that arrived while waiting for another cookie. */
#define T_STASH 1024
static struct elan_event t_stash[T_STASH];
static int t_nstash;

/*
 * Wait for the completion of @cookie on @ctx (ELAN_EV_DONE); other events
 * are kept for later.  Returns the event's status, or -ETIMEDOUT / -EPIPE.
 */
/*
 * Called while an op is waited for (if set): a process that waits for its
 * own send to land in a peer's full ring must keep taking its own
 * messages, or two such processes wait for each other for ever (as MPI
 * progresses receives while it waits).
 */
static void (*t_while_waiting)(elan_ctx_t *ctx);

static inline int t_wait_cookie(elan_ctx_t *ctx, uint64_t cookie,
				struct elan_event *out)
{
	double end = t_now() + t_op_timeout;
	struct elan_event ev;
	int i, r;

	for (i = 0; i < t_nstash; i++) {
		if (t_stash[i].type == ELAN_EV_DONE &&
		    t_stash[i].cookie == cookie) {
			ev = t_stash[i];
			t_stash[i] = t_stash[--t_nstash];
			if (out)
				*out = ev;
			return ev.status;
		}
	}
	for (;;) {
		r = elan_poll_event(ctx, &ev);
		if (r < 0)
			return r;
		if (r == 1) {
			if (ev.type == ELAN_EV_DONE && ev.cookie == cookie) {
				if (out)
					*out = ev;
				return ev.status;
			}
			if (t_nstash < T_STASH)
				t_stash[t_nstash++] = ev;
			continue;
		}
		if (t_now() > end)
			return -ETIMEDOUT;
		if (t_while_waiting)
			t_while_waiting(ctx);
		r = elan_wait(ctx, 1000);
		if (r < 0 && r != -EINTR)
			return r;
	}
}

/* Drop stashed events (between tests). */
static inline void t_stash_clear(void)
{
	t_nstash = 0;
}

static uint64_t t_cookie = 1;

/* Post (retrying while the queue is full) and wait; returns the status. */
#define T_DO(ctx, evp, call) ({						\
	uint64_t _ck = t_cookie++;					\
	int _r;								\
	double _end = t_now() + t_op_timeout;				\
	while ((_r = (call)) == -EAGAIN && t_now() < _end) {		\
		struct elan_event _e;					\
		if (elan_poll_event((ctx), &_e) == 1 && t_nstash < T_STASH) \
			t_stash[t_nstash++] = _e;			\
		else if (t_while_waiting)				\
			t_while_waiting(ctx);				\
		else							\
			usleep(100);					\
	}								\
	_r == 0 ? t_wait_cookie((ctx), _ck, (evp)) : _r;		\
})
/* The cookie the call inside T_DO must use. */
#define CK (_ck)

static inline int t_put(elan_ctx_t *c, uint32_t dst, const void *src,
			uint64_t raddr, uint64_t len)
{
	return T_DO(c, NULL, elan_put(c, dst, src, raddr, len, CK, 0));
}

static inline int t_get(elan_ctx_t *c, uint32_t dst, void *buf,
			uint64_t raddr, uint64_t len)
{
	return T_DO(c, NULL, elan_get(c, dst, buf, raddr, len, CK, 0));
}

static inline int t_atomic(elan_ctx_t *c, uint32_t dst, uint64_t raddr,
			   enum elan_atomic_op op, uint64_t operand,
			   uint64_t compare, uint64_t *fetch, uint64_t *old)
{
	struct elan_event ev;
	int r = T_DO(c, &ev, elan_atomic(c, dst, raddr, op, operand, compare,
					 fetch, CK, 0));

	if (r == 0 && old)
		*old = ev.value;
	return r;
}

static inline const char *t_st(int st)
{
	static char buf[8][96];
	static int n;
	char *b = buf[n++ % 8];

	snprintf(b, 96, "%d (%s)", st, elan_strerror(st));
	return b;
}

/* A counter of the driver's debugfs file (e.g. "doorbells"), or -1. */
static inline long long t_debugfs_counter(const char *which)
{
	FILE *f = fopen("/sys/kernel/debug/elan/counters", "r");
	char name[64];
	long long v, r = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", name, &v) == 2)
		if (!strcmp(name, which))
			r = v;
	fclose(f);
	return r;
}

/* The driver's counters, or all zero (and a failure) if unreadable. */
static inline struct elan_counters t_counters(void)
{
	struct elan_counters k;
	int r = elan_counters(NULL, &k);

	if (r) {
		memset(&k, 0, sizeof(k));
		T_FAIL("elan_counters: %s", strerror(-r));
	}
	return k;
}

/* Deterministic pattern: byte i of stream seed. */
static inline uint8_t t_pat(uint64_t seed, uint64_t i)
{
	uint64_t x = (seed + i / 8) * 0x9E3779B97F4A7C15ULL;

	x ^= x >> 29;
	return (uint8_t)(x >> ((i % 8) * 8));
}

static inline void t_fill(void *p, uint64_t len, uint64_t seed)
{
	uint8_t *b = p;
	uint64_t i;

	for (i = 0; i < len; i++)
		b[i] = t_pat(seed, i);
}

/* Index of the first byte that differs from the pattern, or -1. */
static inline int64_t t_verify(const void *p, uint64_t len, uint64_t seed)
{
	const uint8_t *b = p;
	uint64_t i;

	for (i = 0; i < len; i++)
		if (b[i] != t_pat(seed, i))
			return (int64_t)i;
	return -1;
}

#endif /* ELAN_TESTLIB_H */
