/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The honest traffic of the isolation fuzzers (fuzz_isolation: a hostile
 * node; fuzz_peer: a hostile host of the fabric): contexts whose key the
 * attacker never sees run checked rounds of put, get, fetch-add and send
 * among themselves, between the attacker's actions.  After each round
 *
 *  - every honest op ended OK within HONEST_STEPS steps, with its data
 *    right (the attacker may slow the NIC, never stop it);
 *  - every honest byte is as the honest ops left it (guard patterns) and
 *    every honest context is still ACTIVE as the NIC sees it;
 *  - the guard bytes around every node's RAM are intact.
 *
 * A violation calls the fuzzer's die(), which names it and aborts.
 */
#ifndef NIC_FUZZ_HONEST_H
#define NIC_FUZZ_HONEST_H

#include <stdio.h>
#include <string.h>
#include "harness.h"

#define HONEST_CAP	0x5eed5eed5eedull
#define HONEST_MAX	4
#define HPAGES		8		/* pages of memory per honest context */
#define HLEN		(HPAGES * 4096u)
#define HONEST_STEPS	200000		/* steps an honest op may take */

struct honest_spec {
	uint32_t node, idx;
};

struct honest {
	struct th *t;
	uint32_t n;
	struct th_ctx *c[HONEST_MAX];
	uint8_t expect[HONEST_MAX][HLEN];	/* what their memory holds */
	uint32_t round;
	void (*step)(void);	/* one engine step and the fault service */
	void (*die)(const char *what);
};

/* Attach the honest contexts, each with its own guard pattern. */
static inline void honest_attach(struct honest *h, const struct honest_spec *spec,
				 uint32_t n)
{
	uint32_t k, i;

	h->n = n;
	for (k = 0; k < n; k++) {
		h->c[k] = th_attach(h->t, spec[k].node, spec[k].idx, HONEST_CAP,
				    HPAGES);
		if (!h->c[k])
			h->die("cannot attach an honest context");
		for (i = 0; i < HLEN; i++)
			h->expect[k][i] = (uint8_t)(0x40 + k * 31 + i * 7);
		th_write_mem(h->c[k], th_va(h->c[k], 0), h->expect[k], HLEN);
	}
}

static inline void honest_op(struct honest *h, uint32_t k, struct elan_cmd *cmd,
			     const char *what)
{
	struct elan_event ev;
	char msg[160];
	long i;

	cmd->cookie = ++h->round;
	if (th_post(h->c[k], cmd) < 0) {
		snprintf(msg, sizeof(msg), "%s: command queue full", what);
		h->die(msg);
	}
	for (i = 0; i < HONEST_STEPS && !th_poll_ev(h->c[k], &ev); i++)
		h->step();
	if (i == HONEST_STEPS) {
		snprintf(msg, sizeof(msg), "%s: no completion in %d steps",
			 what, HONEST_STEPS);
		h->die(msg);
	}
	if (ev.status != ELAN_OK || ev.cookie != cmd->cookie) {
		snprintf(msg, sizeof(msg), "%s: ended in %s (cookie %llu of %llu)",
			 what, nicd_status_name(ev.status),
			 (unsigned long long)ev.cookie,
			 (unsigned long long)cmd->cookie);
		h->die(msg);
	}
}

/* One checked round between two honest contexts chosen by salt. */
static inline void honest_round(struct honest *h, uint32_t salt)
{
	uint32_t a = salt % h->n, b = (salt + 1) % h->n;
	uint32_t off = (salt * 4093) % (HLEN / 2), len = 1 + salt % (HLEN / 2);
	struct th_ctx *ca = h->c[a], *cb = h->c[b];
	struct elan_recv_hdr rh;
	uint8_t buf[ELAN_RECV_SLOT];
	struct elan_cmd cmd;
	struct elan_event ev;
	uint64_t old;
	uint32_t k, i;
	long s;

	/* put a -> b, then get it back into a's other half */
	cmd = th_cmd(ELAN_OP_PUT, th_addr(cb), th_va(ca, off), th_va(cb, off),
		     len);
	honest_op(h, a, &cmd, "honest put");
	memcpy(&h->expect[b][off], &h->expect[a][off], len);
	cmd = th_cmd(ELAN_OP_GET, th_addr(cb), th_va(ca, HLEN / 2),
		     th_va(cb, off), len / 2 + 1);
	honest_op(h, a, &cmd, "honest get");
	memcpy(&h->expect[a][HLEN / 2], &h->expect[b][off], len / 2 + 1);
	/* a fetch-add on b's first word */
	cmd = th_cmd(ELAN_OP_ATOMIC, th_addr(cb), th_va(ca, 8), th_va(cb, 0), 8);
	cmd.aop = ELAN_AOP_ADD;
	cmd.flags = ELAN_CMDF_FETCH;
	cmd.operand = salt | 1;
	honest_op(h, a, &cmd, "honest fetch-add");
	memcpy(&old, &h->expect[b][0], 8);
	memcpy(&h->expect[a][8], &old, 8);
	old += salt | 1;
	memcpy(&h->expect[b][0], &old, 8);
	/* a send a -> b, received whole */
	cmd = th_cmd(ELAN_OP_SEND, th_addr(cb), th_va(ca, 16), 0,
		     salt % (ELAN_SEND_MAX + 1));
	cmd.tag = salt;
	honest_op(h, a, &cmd, "honest send");
	for (s = 0; s < HONEST_STEPS && !th_poll_recv(cb, &rh, buf); s++)
		h->step();
	if (s == HONEST_STEPS)
		h->die("honest send: not received");
	if (rh.tag != salt || rh.len != cmd.len || rh.src != th_addr(ca) ||
	    memcmp(buf, &h->expect[a][16], rh.len))
		h->die("honest send: wrong message");
	while (th_poll_ev(cb, &ev))
		;
	/* every honest byte as the honest ops left it */
	for (k = 0; k < h->n; k++) {
		struct th_ctx *c = h->c[k];

		if (th_cmp_mem(c, th_va(c, 0), h->expect[k], HLEN))
			h->die("honest memory changed");
		if (h->t->n.node[c->tn->id].ctx[c->idx].state != ELAN_CTX_ACTIVE)
			h->die("an honest context is no longer active");
	}
	for (i = 0; i < h->t->nnodes; i++)
		if (!th_guards_ok(h->t, i))
			h->die("a write outside guest RAM");
}

#endif
