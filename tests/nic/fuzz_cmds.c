// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the nicd engine: fuzzed bytes become a script of
 * guest writes (commands into queue slots, raw slots, ctl heads, hw ctl
 * fields, MMU entries, fault acks and fault_head, attach/detach, node
 * down/up) interleaved with engine steps and honest fault service.  After
 * each input: no bracket left open, guard bytes around both guests' RAM
 * intact (the region and RAM also sit between inaccessible pages, and the
 * library is built with ASan and UBSan).
 *
 *   clang -fsanitize=fuzzer,address,undefined tests/nic/fuzz_cmds.c \
 *         tests/nic/harness.c nic/nicd_*.c -o fuzz_cmds
 */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "fuzz_input.h"

static struct th t;

static const struct { uint32_t node, idx; uint64_t cap; } ctxs[] = {
	{ 0, 0, 1 }, { 1, 1, 1 }, { 0, 2, 2 }, { 1, 31, 1 },
};
#define NCTX (sizeof(ctxs) / sizeof(ctxs[0]))

static struct th_ctx *ctx_of(int k)
{
	struct th_ctx *c = &t.node[ctxs[k].node].ctx[ctxs[k].idx];

	return c->pt ? c : NULL;
}

static void attach(int k)
{
	th_attach(&t, ctxs[k].node, ctxs[k].idx, ctxs[k].cap, 32);
}

static void reset(void)
{
	uint32_t i;
	size_t k;

	for (i = 0; i < t.nnodes; i++) {
		t.node[i].fault_mode = TH_FAULT_SERVE;
		th_node_reconnect(&t, i);
	}
	for (k = 0; k < NCTX; k++)
		attach((int)k);
}

static void drain(void)
{
	struct elan_event ev;
	struct elan_recv_hdr h;
	uint8_t buf[ELAN_RECV_SLOT];
	size_t k;

	for (k = 0; k < NCTX; k++) {
		struct th_ctx *c = ctx_of((int)k);
		int i;

		if (!c)
			continue;
		for (i = 0; i < 1024 && th_poll_ev(c, &ev); i++)
			;
		for (i = 0; i < 64 && th_poll_recv(c, &h, buf); i++)
			;
	}
}

static uint64_t pick_addr(struct in *in, struct th_ctx *c)
{
	uint8_t how = (uint8_t)take(in, 1);

	if (how < 200 && c)
		return th_va(c, take(in, 2) % (40 * 4096));
	return take(in, 8);
}

static uint32_t pick_dst(struct in *in)
{
	uint8_t b = (uint8_t)take(in, 1);

	if (b < 240)
		return ELAN_ADDR(ctxs[b % NCTX].node, ctxs[b % NCTX].idx);
	return (uint32_t)take(in, 4);
}

static void structured_cmd(struct in *in)
{
	int k = (int)(take(in, 1) % NCTX);
	struct th_ctx *c = ctx_of(k), *tc;
	struct elan_cmd cmd;
	uint8_t b;

	if (!c)
		return;
	memset(&cmd, 0, sizeof(cmd));
	b = (uint8_t)take(in, 1);
	cmd.op = b < 250 ? b % 6 : b;
	b = (uint8_t)take(in, 1);
	cmd.aop = b < 250 ? b % 6 : b;
	b = (uint8_t)take(in, 1);
	cmd.flags = b < 250 ? b % 4 : (uint16_t)take(in, 2);
	cmd.dst = pick_dst(in);
	tc = NULL;
	if (ELAN_ADDR_NODE(cmd.dst) < t.nnodes && ELAN_ADDR_CTX(cmd.dst) < ELAN_MAX_CTX) {
		tc = &t.node[ELAN_ADDR_NODE(cmd.dst)].ctx[ELAN_ADDR_CTX(cmd.dst)];
		if (!tc->pt)
			tc = NULL;
	}
	cmd.laddr = pick_addr(in, c);
	cmd.raddr = pick_addr(in, tc);
	b = (uint8_t)take(in, 1);
	if (b < 100)
		cmd.len = b;
	else if (b < 200)
		cmd.len = take(in, 2) % (48 * 4096);
	else if (b < 250)
		cmd.len = 8;
	else
		cmd.len = take(in, 8);
	if (cmd.op == ELAN_OP_ATOMIC && b < 250) {
		/* 8- or 4-byte atomics, aligned (b odd: 4 bytes) */
		cmd.len = (b & 1) ? 4 : 8;
		cmd.raddr &= ~(cmd.len - 1);
		cmd.laddr &= ~(cmd.len - 1);
	}
	cmd.operand = take(in, 2);
	cmd.compare = take(in, 1);
	cmd.cookie = take(in, 2);
	cmd.tag = (uint32_t)take(in, 1);
	/* sometimes a flood (with steps between, no draining): the event and
	 * receive rings fill up and the back-pressure paths run */
	b = (uint8_t)take(in, 1);
	if (b >= 240) {
		int i, reps = (b - 239) * 60;

		for (i = 0; i < reps; i++) {
			if (th_post(c, &cmd) < 0)
				nicd_step(&t.n, &t.e);
			if (i % 16 == 0) {
				nicd_step(&t.n, &t.e);
				th_service_faults(&t);
			}
		}
		(void)nicd_next_timeout(&t.n);
		return;
	}
	th_post(c, &cmd);
}

static void raw_slot(struct in *in)
{
	struct th_ctx *c = ctx_of((int)(take(in, 1) % NCTX));
	struct elan_cmd *s;
	uint8_t raw[64];
	int i, good;

	if (!c)
		return;
	good = (int)(take(in, 1) & 1);
	for (i = 0; i < 64; i++)
		raw[i] = (uint8_t)take(in, 1);
	s = elan_cmdq_slot(c->map.cmdq, c->cmd_pos);
	memcpy(s, raw, 64);
	if (good) {
		__atomic_store_n(&s->seq, elan_ring_seq(c->cmd_pos), __ATOMIC_RELEASE);
		c->cmd_pos++;
	}
}

static void ctl_write(struct in *in)
{
	struct th_ctx *c = ctx_of((int)(take(in, 1) % NCTX));
	uint8_t which = (uint8_t)take(in, 1);
	uint32_t v = (uint32_t)take(in, 4);

	if (!c)
		return;
	if (which & 0x80)
		v = (which & 1 ? c->recv_pos : c->ev_pos) + (uint32_t)(int8_t)v;
	if (which & 1)
		c->map.uctl->recv_head = v;
	else
		c->map.uctl->ev_head = v;
}

static void hw_ctl_write(struct in *in)
{
	struct th_ctx *c = ctx_of((int)(take(in, 1) % NCTX));
	uint8_t which = (uint8_t)take(in, 1);
	uint64_t v = take(in, 8);

	if (!c)
		return;
	switch (which % 5) {
	case 0: c->map.ctl->state = (uint32_t)v % 4; break;
	case 1: c->map.ctl->generation = (uint32_t)v; break;
	case 2: c->map.ctl->capability = v % 3; break;
	case 3: c->map.ctl->armed = (uint32_t)v; break;
	default: c->map.ctl->state = (uint32_t)v; break;
	}
	nicd_doorbell(&t.n, c->tn->id, ELAN_DB_CTX);
}

static void mmu_write(struct in *in)
{
	struct th_ctx *c = ctx_of((int)(take(in, 1) % NCTX));
	uint8_t how = (uint8_t)take(in, 1);
	uint64_t tag, pfn, va;
	uint32_t set, way;

	if (!c)
		return;
	va = th_va(c, (take(in, 1) % 40) * 4096);
	if (how & 1)
		tag = take(in, 8);
	else
		tag = va | (take(in, 1) & 3);
	if (how & 2)
		pfn = take(in, 8);
	else
		pfn = take(in, 2) % (c->tn->ram_size / 4096 + 8);
	if (how & 8) {
		/* the table's size and directory: taken up at the next attach */
		if (how & 16)
			c->map.ctl->mmu_sets = (uint32_t)take(in, 4);
		else
			c->map.mmu_dir[take(in, 2) % ELAN_MMU_DIR_ENTRIES] = pfn;
		return;
	}
	set = (how & 4) ? (uint32_t)take(in, 2) % TH_MMU_SETS : elan_mmu_set(va, TH_MMU_SETS);
	way = (uint32_t)take(in, 1) % ELAN_MMU_WAYS;
	th_mmu_ways(c, set)[way].pfn = pfn;
	__atomic_store_n(&th_mmu_ways(c, set)[way].tag, tag, __ATOMIC_RELEASE);
}

static void fault_write(struct in *in)
{
	struct th_node *tn = &t.node[take(in, 1) % t.nnodes];
	struct elan_hw_header *h = tn->region;
	uint8_t how = (uint8_t)take(in, 1);
	struct elan_hw_fault *f;

	if (how & 0x80) {	/* the driver's fault_head */
		uint32_t v = (uint32_t)take(in, 4);

		if (how & 1)
			v = tn->fault_head + (uint32_t)(int8_t)v;
		h->fault_head = v;
		return;
	}
	f = &h->faultq[take(in, 1) % ELAN_FAULTQ_ENTRIES];
	f->status = (uint32_t)take(in, 1);
	f->ack_seq = (how & 1) ? f->req_seq : (uint32_t)take(in, 4);
	if (how & 2)
		tn->fault_mode = (int)(take(in, 1) % 3);
}

static void node_bounce(struct in *in)
{
	uint32_t i = (uint32_t)(take(in, 1) % t.nnodes);
	size_t k;

	th_node_reconnect(&t, i);
	for (k = 0; k < NCTX; k++)
		if (ctxs[k].node == i)
			attach((int)k);
}

static void attach_detach(struct in *in)
{
	int k = (int)(take(in, 1) % NCTX);
	struct th_ctx *c = ctx_of(k);

	if (c && c->attached)
		th_detach(&t, c);
	else
		attach(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int inited;
	struct in in = { data, size };
	int actions = 0, i;
	uint32_t n, e;

	if (!inited) {
		if (th_init(&t, 2, 8u << 20) < 0)
			abort();
		t.n.log_level = -1;	/* quiet */
		t.n.now = fake_now;
		t.n.fault_timeout_ns = 20000000;	/* 200 clock readings */
		inited = 1;
	}
	reset();
	while (in.n && actions++ < 300) {
		switch (take(&in, 1) % 12) {
		case 0: case 1: structured_cmd(&in); break;
		case 2: raw_slot(&in); break;
		case 3: ctl_write(&in); break;
		case 4: mmu_write(&in); break;
		case 5: fault_write(&in); break;
		case 6: th_service_faults(&t); break;
		case 7:
			for (i = (int)(take(&in, 1) % 16); i >= 0; i--)
				nicd_step(&t.n, &t.e);
			(void)nicd_next_timeout(&t.n);
			break;
		case 8: hw_ctl_write(&in); break;
		case 9: drain(); break;
		case 10:
			if (take(&in, 1) < 16)
				node_bounce(&in);
			else
				attach_detach(&in);
			break;
		default: {
			struct th_ctx *c = ctx_of((int)(take(&in, 1) % NCTX));

			if (c)
				th_mmu_clear(c);	/* a shootdown of all */
			break;
		}
		}
	}
	for (i = 0; i < 400; i++) {
		nicd_step(&t.n, &t.e);
		th_service_faults(&t);
		drain();
	}
	/* invariants */
	for (n = 0; n < t.nnodes; n++) {
		struct elan_hw_header *h = t.node[n].region;

		for (e = 0; e < ELAN_MAX_ENGINES; e++)
			if ((h->engine[e].seq & 1) || t.n.node[n].br_depth[e])
				__builtin_trap();	/* bracket left open */
		if (!th_guards_ok(&t, n))
			__builtin_trap();		/* wrote outside guest RAM */
	}
	return 0;
}
