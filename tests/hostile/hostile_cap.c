// SPDX-License-Identifier: GPL-2.0
/*
 * hostile_cap: a process that guesses the victims' capability and NIC
 * addresses (attack 3 of the hostile stage).
 *
 *   hostile_cap DIR GUESSES SEED TARGET...
 *
 * It knows the victims' addresses (DIR/TARGET.info) but not their job
 * key.  For each of GUESSES wrong capabilities (near misses of the real
 * one: every single-bit flip, +-1, 0, ~0, and random keys) it attaches a
 * context with that key and aims a put, a get, a fetch-add, a
 * compare-swap, a send and a put with a remote event at each victim's
 * window, counters and bait: every one must end in ELAN_E_CAPABILITY.
 * Then ops to random context ids on every node must end in NO_CONTEXT,
 * CAPABILITY or NODE_DOWN.  Nothing may succeed; the victims check that
 * not a byte changed.
 *
 * HOSTILE_LEAK=1 is the broken variant: the real key is among the
 * guesses, so the puts land in the victims' bait pages and this program
 * and the victims must report failures.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "hostile.h"

#define MAXT 8
static struct vinfo tgt[MAXT];
static int ntgt;
static uint64_t n_ops, n_status[ELAN_STATUS_MAX + 1];

static void tally(int r)
{
	if (r < 0) {		/* -ETIMEDOUT, -EPIPE: nobody answers */
		printf("cap: FAIL an op ended in %s: giving up\n0 passed, 1 failed\n",
		       t_st(r));
		exit(1);
	}
	n_ops++;
	n_status[r >= 0 && r < ELAN_STATUS_MAX ? r : ELAN_STATUS_MAX]++;
}

/* Every kind of op on one victim with context c; each must be refused. */
static void attack(elan_ctx_t *c, const struct vinfo *v, uint64_t guess,
		   uint8_t *buf)
{
	uint64_t fetch = 0, targets[3] = {
		v->arena + WIN_OFF, v->arena + CNT_OFF, v->arena + BAIT_OFF,
	};
	int r, k;

	for (k = 0; k < 3; k++) {
		uint64_t ra = targets[k];

		h_fill_rand(buf, 4096);
		r = t_put(c, v->addr, buf, ra, 4096);
		tally(r);
		T_CHECK(r == ELAN_E_CAPABILITY, "key %#" PRIx64 ": put to %#x: %s",
			guess, v->addr, t_st(r));
		r = t_get(c, v->addr, buf, ra, 4096);
		tally(r);
		T_CHECK(r == ELAN_E_CAPABILITY, "key %#" PRIx64 ": get from %#x: %s",
			guess, v->addr, t_st(r));
		r = t_atomic(c, v->addr, ra & ~7ULL, ELAN_AOP_ADD, 1, 0, &fetch,
			     NULL);
		tally(r);
		T_CHECK(r == ELAN_E_CAPABILITY, "key %#" PRIx64 ": fetch-add on %#x: %s",
			guess, v->addr, t_st(r));
		r = t_atomic(c, v->addr, ra & ~7ULL, ELAN_AOP_CSWAP, 7, 0, NULL,
			     NULL);
		tally(r);
		T_CHECK(r == ELAN_E_CAPABILITY, "key %#" PRIx64 ": cswap on %#x: %s",
			guess, v->addr, t_st(r));
		r = T_DO(c, NULL, elan_send(c, v->addr, 0xbad, buf, 100, CK, 0));
		tally(r);
		T_CHECK(r == ELAN_E_CAPABILITY, "key %#" PRIx64 ": send to %#x: %s",
			guess, v->addr, t_st(r));
		r = T_DO(c, NULL, elan_put(c, v->addr, buf, ra, 64, CK,
					   ELAN_CMDF_REMOTE_EVENT));
		tally(r);
		T_CHECK(r == ELAN_E_CAPABILITY,
			"key %#" PRIx64 ": put with remote event to %#x: %s",
			guess, v->addr, t_st(r));
	}
}

int main(int argc, char **argv)
{
	uint64_t real, guess, seed, n_guess;
	uint8_t *buf;
	elan_ctx_t *c;
	unsigned int g, i;
	int r, leak = getenv("HOSTILE_LEAK") && atoi(getenv("HOSTILE_LEAK"));

	if (argc < 5) {
		fprintf(stderr, "usage: hostile_cap DIR GUESSES SEED TARGET...\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_name = "cap";
	t_op_timeout = 60;
	n_guess = strtoull(argv[2], NULL, 0);
	seed = strtoull(argv[3], NULL, 0);
	h_seed(seed);
	real = h_read_cap(argv[1]);
	for (i = 4; i < (unsigned int)argc && ntgt < MAXT; i++)
		if (h_read_info(argv[1], argv[i], &tgt[ntgt], 60) == 0)
			ntgt++;
		else
			T_FAIL("no info of victim %s", argv[i]);
	buf = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!real || !ntgt || buf == MAP_FAILED) {
		printf("cap: no key, victims or memory\n0 passed, 1 failed\n");
		return 1;
	}
	printf("cap: %" PRIu64 " wrong keys against %d victims, seed %#" PRIx64
	       "%s\n", n_guess, ntgt, seed, leak ? " (HOSTILE_LEAK: the real key too)" : "");
	for (g = 0; g < n_guess; g++) {
		if (g < 64)
			guess = real ^ (1ULL << g);
		else if (g == 64)
			guess = real + 1;
		else if (g == 65)
			guess = real - 1;
		else if (g == 66)
			guess = 0;
		else if (g == 67)
			guess = ~0ULL;
		else
			guess = h_rand();
		if (leak && g == 0)
			guess = real;
		else if (guess == real)
			continue;
		r = elan_open(guess, &c);
		if (r) {
			T_FAIL("attach with key %#" PRIx64 ": %s", guess,
			       strerror(-r));
			break;
		}
		for (i = 0; i < (unsigned int)ntgt; i++)
			attack(c, &tgt[i], guess, buf);
		elan_close(c);
		t_stash_clear();
	}

	/* Random NIC addresses: nobody of our job is there. */
	r = elan_open(h_rand(), &c);
	T_CHECK(r == 0, "attach: %s", strerror(-r));
	for (g = 0; r == 0 && g < 400; g++) {
		uint32_t dst = g < 200 ? ELAN_ADDR(h_rand() % 3, h_rand() % 64) :
			       (uint32_t)h_rand();

		if (dst == elan_addr(c))
			continue;
		r = t_put(c, dst, buf, tgt[g % ntgt].arena + BAIT_OFF, 64);
		tally(r);
		T_CHECK(r == ELAN_E_NO_CONTEXT || r == ELAN_E_CAPABILITY ||
			r == ELAN_E_NODE_DOWN, "put to %#x: %s", dst, t_st(r));
		r = 0;
	}
	if (c)
		elan_close(c);
	printf("cap: %" PRIu64 " ops:", n_ops);
	for (i = 0; i <= ELAN_STATUS_MAX; i++)
		if (n_status[i])
			printf(" %s=%" PRIu64, i < ELAN_STATUS_MAX ?
			       elan_strerror((int)i) : "other", n_status[i]);
	printf("\n%s cap\n", t_failed ? "FAIL" : "ok  ");
	printf("%d passed, %d failed\n", t_failed ? 0 : 1, t_failed ? 1 : 0);
	return t_failed ? 1 : 0;
}
