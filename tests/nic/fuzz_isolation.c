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
#include "fuzz_honest.h"

static struct th t;

static void step(void)
{
	nicd_step(&t.n, &t.e);
	th_service_faults(&t);
}

static void die(const char *what);

/* The honest contexts: two on node 1, one on node 2. */
static const struct honest_spec honest[] = {
	{ 1, 0 }, { 1, 5 }, { 2, 31 },
};
#define NHONEST (sizeof(honest) / sizeof(honest[0]))
static struct honest h = { .t = &t, .step = step, .die = die };

static void die(const char *what)
{
	fprintf(stderr, "isolation broken: %s (round %u)\n", what, h.round);
	if (t.loglen)
		fprintf(stderr, "nicd log:\n%s", t.log);
	abort();
}

/* Node 0's contexts: attached honestly at first, with other keys. */
#define NHOSTILE 4

static void reset(void)
{
	uint32_t i;

	t.loglen = 0;
	t.log[0] = 0;
	for (i = 0; i < t.nnodes; i++) {
		t.node[i].fault_mode = i == 0 ? TH_FAULT_IGNORE : TH_FAULT_SERVE;
		th_node_reconnect(&t, i);
	}
	honest_attach(&h, honest, NHONEST);
	for (i = 0; i < NHOSTILE; i++)
		th_attach(&t, 0, 31 - i, HONEST_CAP ^ (1ull << i), 4);
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
	cmd.dst = b < 200 ? th_addr(h.c[b % NHONEST]) : (uint32_t)take(in, 4);
	cmd.laddr = th_va(c, take(in, 2) % (4 * 4096));
	cmd.raddr = b < 200 ? th_va(h.c[b % NHONEST], take(in, 2) % HLEN) :
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
	honest_round(&h, 0);
	while (in.n && actions++ < 200) {
		switch (take(&in, 1) % 8) {
		case 0: case 1: region_write(&in); break;
		case 2: ram_write(&in); break;
		case 3: hostile_cmd(&in); break;
		case 4: fault_ack(&in); break;
		case 5:
			for (i = (int)(take(&in, 1) % 32); i >= 0; i--)
				step();
			break;
		case 6:
			if (take(&in, 1) < 8)
				nicd_doorbell(&t.n, 0, ELAN_DB_RESET);
			else
				nicd_doorbell(&t.n, 0, ELAN_DB_CTX);
			break;
		default:
			honest_round(&h, (uint32_t)take(&in, 2));
			break;
		}
	}
	honest_round(&h, h.round);
	return 0;
}
