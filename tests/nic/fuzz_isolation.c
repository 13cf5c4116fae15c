// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for isolation (promise 5 of docs/design.md): node 0 is
 * hostile, nodes 1 and 2 are honest.  Fuzzed bytes become node 0's writes
 * anywhere in its NIC region and its RAM (where its NIC MMU tables are),
 * its doorbells (rescan, reset), its fault acks and its commands to the
 * honest contexts (with wrong capabilities), interleaved with engine steps.
 * Between those, and after each input, the honest contexts run a checked
 * round of puts, gets, sends and atomics among themselves:
 *
 *  - every honest op ends OK within a bounded number of steps, with the
 *    data right (node 0's garbage may slow the NIC, never stop it);
 *  - the honest contexts stay ACTIVE as the NIC sees them, and no honest
 *    byte changes other than by the honest ops (guard patterns);
 *  - the guard bytes around every node's RAM are intact.
 *
 * A violation aborts with a message naming it (the input is kept).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "fuzz_input.h"

static struct th t;

#define HONEST_CAP	0x5eed5eed5eedull
#define HPAGES		8		/* pages of memory per honest context */
#define HLEN		(HPAGES * 4096u)
#define ROUND_STEPS	200000		/* steps an honest op may take */

/* The honest contexts: two on node 1, one on node 2. */
static const struct { uint32_t node, idx; } honest[] = {
	{ 1, 0 }, { 1, 5 }, { 2, 31 },
};
#define NHONEST (sizeof(honest) / sizeof(honest[0]))
static struct th_ctx *hc[NHONEST];
/* What each honest context's memory must hold. */
static uint8_t expect[NHONEST][HLEN];
static uint32_t round_no;

static void die(const char *what)
{
	fprintf(stderr, "isolation broken: %s (round %u)\n", what, round_no);
	if (t.loglen)
		fprintf(stderr, "nicd log:\n%s", t.log);
	abort();
}

static void pattern(uint32_t k)
{
	uint32_t i;

	for (i = 0; i < HLEN; i++)
		expect[k][i] = (uint8_t)(0x40 + k * 31 + i * 7);
	th_write_mem(hc[k], th_va(hc[k], 0), expect[k], HLEN);
}

/* Node 0's contexts: attached honestly at first, with other keys. */
#define NHOSTILE 4

static void reset(void)
{
	uint32_t i, k;

	t.loglen = 0;
	t.log[0] = 0;
	for (i = 0; i < t.nnodes; i++) {
		t.node[i].fault_mode = i == 0 ? TH_FAULT_IGNORE : TH_FAULT_SERVE;
		th_node_reconnect(&t, i);
	}
	for (k = 0; k < NHONEST; k++) {
		hc[k] = th_attach(&t, honest[k].node, honest[k].idx, HONEST_CAP,
				  HPAGES);
		if (!hc[k])
			die("cannot attach an honest context");
		pattern(k);
	}
	for (i = 0; i < NHOSTILE; i++)
		th_attach(&t, 0, 31 - i, HONEST_CAP ^ (1ull << i), 4);
}

/* Run until c has an event; node 0 is never served here. */
static int wait_ev(struct th_ctx *c, struct elan_event *ev)
{
	long i;

	for (i = 0; i < ROUND_STEPS; i++) {
		if (th_poll_ev(c, ev))
			return 1;
		nicd_step(&t.n, &t.e);
		th_service_faults(&t);
	}
	return th_poll_ev(c, ev);
}

static void honest_op(uint32_t k, struct elan_cmd *cmd, const char *what)
{
	struct elan_event ev;
	char msg[160];

	cmd->cookie = ++round_no;
	if (th_post(hc[k], cmd) < 0) {
		snprintf(msg, sizeof(msg), "%s: command queue full", what);
		die(msg);
	}
	if (!wait_ev(hc[k], &ev)) {
		snprintf(msg, sizeof(msg), "%s: no completion in %d steps",
			 what, ROUND_STEPS);
		die(msg);
	}
	if (ev.status != ELAN_OK || ev.cookie != cmd->cookie) {
		snprintf(msg, sizeof(msg), "%s: ended in %s (cookie %llu of %llu)",
			 what, nicd_status_name(ev.status),
			 (unsigned long long)ev.cookie,
			 (unsigned long long)cmd->cookie);
		die(msg);
	}
}

/* One checked round among the honest contexts. */
static void honest_round(uint32_t salt)
{
	uint32_t a = salt % NHONEST, b = (salt + 1) % NHONEST;
	uint32_t off = (salt * 4093) % (HLEN / 2), len = 1 + salt % (HLEN / 2);
	struct elan_recv_hdr h;
	uint8_t buf[ELAN_RECV_SLOT];
	struct elan_cmd cmd;
	struct elan_event ev;
	uint64_t old;
	uint32_t k, i;
	long s;

	/* put a -> b, then get it back into a's other half */
	cmd = th_cmd(ELAN_OP_PUT, th_addr(hc[b]), th_va(hc[a], off),
		     th_va(hc[b], off), len);
	honest_op(a, &cmd, "honest put");
	memcpy(&expect[b][off], &expect[a][off], len);
	cmd = th_cmd(ELAN_OP_GET, th_addr(hc[b]), th_va(hc[a], HLEN / 2),
		     th_va(hc[b], off), len / 2 + 1);
	honest_op(a, &cmd, "honest get");
	memcpy(&expect[a][HLEN / 2], &expect[b][off], len / 2 + 1);
	/* a fetch-add on b's first word */
	cmd = th_cmd(ELAN_OP_ATOMIC, th_addr(hc[b]), th_va(hc[a], 8),
		     th_va(hc[b], 0), 8);
	cmd.aop = ELAN_AOP_ADD;
	cmd.flags = ELAN_CMDF_FETCH;
	cmd.operand = salt | 1;
	honest_op(a, &cmd, "honest fetch-add");
	memcpy(&old, &expect[b][0], 8);
	memcpy(&expect[a][8], &old, 8);
	old += salt | 1;
	memcpy(&expect[b][0], &old, 8);
	/* a send a -> b, received whole */
	cmd = th_cmd(ELAN_OP_SEND, th_addr(hc[b]), th_va(hc[a], 16), 0,
		     salt % (ELAN_SEND_MAX + 1));
	cmd.tag = salt;
	honest_op(a, &cmd, "honest send");
	for (s = 0; s < ROUND_STEPS && !th_poll_recv(hc[b], &h, buf); s++) {
		nicd_step(&t.n, &t.e);
		th_service_faults(&t);
	}
	if (s == ROUND_STEPS)
		die("honest send: not received");
	if (h.tag != salt || h.len != cmd.len || h.src != th_addr(hc[a]) ||
	    memcmp(buf, &expect[a][16], h.len))
		die("honest send: wrong message");
	while (th_poll_ev(hc[b], &ev))
		;
	/* every honest byte as the honest ops left it */
	for (k = 0; k < NHONEST; k++) {
		if (th_cmp_mem(hc[k], th_va(hc[k], 0), expect[k], HLEN))
			die("honest memory changed");
		if (hc[k]->tn->id && t.n.node[hc[k]->tn->id].ctx[hc[k]->idx].state !=
		    ELAN_CTX_ACTIVE)
			die("an honest context is no longer active");
	}
	for (i = 0; i < t.nnodes; i++)
		if (!th_guards_ok(&t, i))
			die("a write outside guest RAM");
}

/* ------------------------------------------------------------ node 0 */

/* len bytes of the input at an offset of node 0's region. */
static void region_write(struct in *in)
{
	uint8_t *r = t.node[0].region;
	uint8_t how = (uint8_t)take(in, 1);
	uint64_t off;
	uint32_t len = 1 + (uint32_t)take(in, 1) % 16, i;

	switch (how % 4) {
	case 0:		/* the header and fault queue */
		off = take(in, 2) % ELAN_REGION_OFF_CTX;
		break;
	case 1:		/* a context's first bytes (ctl, user ctl) */
		off = ELAN_REGION_OFF_CTX +
		      (take(in, 1) % ELAN_MAX_CTX) * (uint64_t)ELAN_CTX_STRIDE +
		      take(in, 1) * 8;
		break;
	default:	/* anywhere */
		off = take(in, 3) % ELAN_REGION_SIZE;
		break;
	}
	for (i = 0; i < len && off + i < ELAN_REGION_SIZE; i++)
		r[off + i] = (uint8_t)take(in, 1);
	if (how & 0x10)
		nicd_doorbell(&t.n, 0, ELAN_DB_CTX);
}

/* Node 0's RAM, where its NIC MMU tables and pages are. */
static void ram_write(struct in *in)
{
	struct th_node *tn = &t.node[0];
	uint8_t how = (uint8_t)take(in, 1);
	uint64_t off;
	uint32_t len = 1 + (uint32_t)take(in, 1) % 16, i;

	if (how & 1)
		off = (uint64_t)tn->mmu_pfn * 4096 +
		      take(in, 3) % (tn->ram_size - (uint64_t)tn->mmu_pfn * 4096);
	else
		off = take(in, 4) % tn->ram_size;
	for (i = 0; i < len && off + i < tn->ram_size; i++)
		tn->ram[off + i] = (uint8_t)take(in, 1);
}

/* A command from a node 0 context: at the honest ones, or anywhere. */
static void hostile_cmd(struct in *in)
{
	struct th_ctx *c = &t.node[0].ctx[31 - take(in, 1) % NHOSTILE];
	uint8_t b = (uint8_t)take(in, 1);
	struct elan_cmd cmd;
	uint32_t reps, i;

	if (!c->pt)
		return;
	memset(&cmd, 0, sizeof(cmd));
	cmd.op = (uint8_t)(1 + b % 4);
	cmd.aop = (uint8_t)(take(in, 1) % 6);
	cmd.flags = (uint16_t)(take(in, 1) % 4);
	b = (uint8_t)take(in, 1);
	cmd.dst = b < 200 ? th_addr(hc[b % NHONEST]) : (uint32_t)take(in, 4);
	cmd.laddr = th_va(c, take(in, 2) % (4 * 4096));
	cmd.raddr = b < 200 ? th_va(hc[b % NHONEST], take(in, 2) % HLEN) :
			      take(in, 8);
	cmd.len = cmd.op == ELAN_OP_ATOMIC ? 8 : take(in, 2);
	if (cmd.op == ELAN_OP_ATOMIC) {
		cmd.raddr &= ~7ull;
		cmd.laddr &= ~7ull;
	}
	cmd.cookie = take(in, 2);
	reps = 1 + (uint32_t)take(in, 1) % 64;
	for (i = 0; i < reps; i++)
		if (th_post(c, &cmd) < 0)
			break;
}

/* Node 0's driver answering faults as it likes. */
static void fault_ack(struct in *in)
{
	struct elan_hw_header *h = t.node[0].region;
	struct elan_hw_fault *f = &h->faultq[take(in, 1) % ELAN_FAULTQ_ENTRIES];
	uint8_t how = (uint8_t)take(in, 1);

	f->status = (uint32_t)take(in, 1);
	f->ack_seq = (how & 1) ? f->req_seq : (uint32_t)take(in, 4);
	if (how & 2)
		h->fault_head = (how & 4) ? (uint32_t)take(in, 4) :
			f->req_seq;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int inited;
	struct in in = { data, size };
	int actions = 0, i;

	if (!inited) {
		if (th_init(&t, 3, 4u << 20) < 0)
			abort();
		t.n.log_level = NICD_LOG_WARN;
		t.n.now = fake_now;
		/* node 0's waiting ops read the clock many times a step:
		 * 20000 readings keep an honest fault, answered at the
		 * next step, from timing out */
		t.n.fault_timeout_ns = 2000000000;
		inited = 1;
	}
	reset();
	honest_round(0);
	while (in.n && actions++ < 200) {
		switch (take(&in, 1) % 8) {
		case 0: case 1: region_write(&in); break;
		case 2: ram_write(&in); break;
		case 3: hostile_cmd(&in); break;
		case 4: fault_ack(&in); break;
		case 5:
			for (i = (int)(take(&in, 1) % 32); i >= 0; i--) {
				nicd_step(&t.n, &t.e);
				th_service_faults(&t);
			}
			break;
		case 6:
			if (take(&in, 1) < 8)
				nicd_doorbell(&t.n, 0, ELAN_DB_RESET);
			else
				nicd_doorbell(&t.n, 0, ELAN_DB_CTX);
			break;
		default:
			honest_round((uint32_t)take(&in, 2));
			break;
		}
	}
	honest_round(round_no);
	return 0;
}
