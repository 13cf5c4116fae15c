// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the fabric's peer protocol (nic/nicd_remote.h):
 * nodes 0 and 1 are ours, node 2 belongs to host 1, a hostile peer.
 * Fuzzed bytes become host 1's messages, delivered as the transport
 * would (nicd_remote_rx): requests at our nodes with forged targets,
 * capabilities, generations, lengths and data (up to a whole 256 KiB
 * chunk and past it); replies to the requests our ops really sent (the
 * last ones, small or big, recorded by a fake transport) with fuzzed
 * status, chunk, length, bytes written and data, and replies to
 * nothing; STATE
 * with any nodes up; the link going down; a busy link.  Between them
 * engine steps, our own ops to node 2 (whose replies the peer makes up),
 * and checked rounds of put, get, fetch-add and send among
 * honest contexts (a capability the peer never sees):
 *
 *  - every honest op ends OK with the data right, and no honest byte
 *    changes otherwise (the peer may not reach them);
 *  - our ops to node 2 write only their own destination bytes, and each
 *    ends in exactly one event once the link is down;
 *  - the guard bytes around every node's RAM are intact, no bracket is
 *    left open, and nothing crashes (ASan, UBSan).
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

#define PEER_CAP	0x77ull		/* a job the peer's nodes share */
#define RC_CAP		0x99ull		/* our initiator's job */
#define PEER		1u		/* host index of node 2's owner */

static const struct honest_spec honest[] = { { 0, 1 }, { 1, 4 } };
#define NHONEST 2
static void step(void);
static void die(const char *what);
static struct honest h = { .t = &t, .step = step, .die = die };
static struct th_ctx *shared, *rc;
static uint8_t rc_expect[HLEN];		/* rc's memory outside its op */
static uint32_t rc_posted, rc_events;
static uint64_t rc_lo, rc_hi;		/* bytes rc's ops may write */

/* The fake transport: what our side sent, the last ones kept. */
#define NSENT 16
static struct nicd_fmsg sent[NSENT];
static uint32_t nsent;
static int link_mode;			/* 0 up, 1 busy, 2 down */

static void die(const char *what)
{
	fprintf(stderr, "peer protocol: %s (round %u)\n", what, h.round);
	if (t.loglen)
		fprintf(stderr, "nicd log:\n%s", t.log);
	abort();
}

static int fake_send(void *arg, uint32_t host, const struct nicd_fmsg *m,
		     const struct iovec *iov, int iovcnt)
{
	(void)arg;
	if (host != PEER)
		die("a message to a host that does not exist");
	if (iovcnt > 1 || (iovcnt && iov[0].iov_len != m->len))
		die("a message whose data is not its len");
	if (link_mode == 1)
		return NICD_PENDING;
	if (link_mode == 2)
		return ELAN_E_NODE_DOWN;
	sent[nsent++ % NSENT] = *m;
	return 0;
}

/* A big message: the buffer is the transport's from the call on. */
static int fake_send_buf(void *arg, uint32_t host, struct nicd_fbuf *b)
{
	(void)arg;
	if (host != PEER)
		die("a message to a host that does not exist");
	if (b->m.len > NICD_FAB_CHUNK)
		die("a message bigger than a chunk");
	if (link_mode == 1)
		return NICD_PENDING;	/* too much queued: b stays the caller's */
	if (link_mode == 2) {
		free(b);
		return ELAN_E_NODE_DOWN;
	}
	sent[nsent++ % NSENT] = b->m;
	free(b);
	return 0;
}

static const struct nicd_fabric_ops fake_ops = {
	.send = fake_send, .send_buf = fake_send_buf,
};

/* The peer says node 2 is up (epoch 5) or not. */
static void peer_state(int up, uint32_t epoch)
{
	uint32_t epochs[ELAN_MAX_NODES] = { 0 };
	struct nicd_fmsg m = { 0 };

	epochs[2] = epoch;
	m.type = NICD_FM_STATE;
	m.a = up ? 1ull << 2 : 0;
	m.len = sizeof(epochs);
	nicd_remote_rx(&t.n, &t.e, PEER, &m, epochs, sizeof(epochs));
}

static void reset(void)
{
	uint32_t i;

	t.loglen = 0;
	t.log[0] = 0;
	nicd_remote_host_down(&t.n, PEER);
	for (i = 0; i < t.nnodes; i++) {
		t.node[i].fault_mode = TH_FAULT_SERVE;
		th_node_reconnect(&t, i);
	}
	honest_attach(&h, honest, NHONEST);
	shared = th_attach(&t, 1, 7, PEER_CAP, HPAGES);
	rc = th_attach(&t, 0, 2, RC_CAP, HPAGES);
	if (!shared || !rc)
		die("cannot attach");
	for (i = 0; i < HLEN; i++)
		rc_expect[i] = (uint8_t)(i * 3 + 1);
	th_write_mem(rc, th_va(rc, 0), rc_expect, HLEN);
	rc_posted = rc_events = 0;
	rc_lo = rc_hi = 0;
	nsent = 0;
	link_mode = 0;
	peer_state(1, 5);
}

static void step(void)
{
	struct elan_event ev;
	uint32_t i;

	nicd_step(&t.n, &t.e);
	th_service_faults(&t);
	while (th_poll_ev(rc, &ev))
		rc_events++;
	for (i = 0; i < t.nnodes; i++)
		if (t.n.node[i].up && t.n.node[i].br_depth[0])
			die("a bracket left open after a step");
}

/* ------------------------------------------------------------ the peer */

static uint64_t vbase_of(uint32_t node, uint32_t ctx)
{
	if (node < t.nnodes && ctx < ELAN_MAX_CTX)
		return t.node[node].ctx[ctx].vbase;
	return 0;
}

static uint32_t pick_ctx(struct in *in, uint32_t *node)
{
	uint8_t b = (uint8_t)take(in, 1);

	switch (b % 4) {
	case 0: *node = 1; return 7;		/* the shared context */
	case 1: *node = honest[b / 4 % NHONEST].node;
		return honest[b / 4 % NHONEST].idx;
	case 2: *node = 0; return 2;		/* our initiator */
	default: *node = (uint32_t)take(in, 1); return (uint32_t)take(in, 1);
	}
}

/* A request from the peer at one of our nodes. */
static void peer_request(struct in *in)
{
	uint8_t data[NICD_FAB_CHUNK + 16];
	struct nicd_fmsg m = { 0 };
	struct nicd_ctx *c;
	uint32_t node, dlen, i;
	uint8_t how;

	m.type = (uint8_t)(NICD_FM_RESOLVE + take(in, 1) % 8);
	m.ctx = pick_ctx(in, &node);
	m.node = node;
	how = (uint8_t)take(in, 1);
	c = node < t.n.nodes && m.ctx < ELAN_MAX_CTX ? &t.n.node[node].ctx[m.ctx] : NULL;
	/* right generation and epoch, or forged */
	m.gen = c && (how & 1) ? c->gen : (uint32_t)take(in, 1);
	m.epoch = node < t.n.nodes && (how & 2) ? t.n.node[node].epoch :
		  (uint32_t)take(in, 1);
	/* the job the peer shares, or a guess (never the honest key) */
	m.cap = how & 4 ? PEER_CAP : take(in, 8);
	if (m.cap == HONEST_CAP)
		m.cap++;
	m.src = ELAN_ADDR(2, take(in, 1) % ELAN_MAX_CTX);
	m.tag = (uint32_t)take(in, 2);
	m.chunk = (uint32_t)take(in, 2);
	m.aop = (uint8_t)take(in, 1);
	m.addr = how & 8 ? vbase_of(node, m.ctx) + take(in, 2) % (HLEN + 8192) :
		 take(in, 8);
	if (m.type == NICD_FM_ATOMIC && (how & 16))
		m.addr &= ~7ull;
	m.a = take(in, 8);
	m.b = take(in, 8);
	/* up to a whole chunk and past it: big PUTs, their lengths forged */
	dlen = (uint32_t)take(in, 3) % (sizeof(data) + 1);
	m.len = how & 32 ? dlen : (uint32_t)take(in, 4);
	if (m.type == NICD_FM_GET && (how & 64))
		dlen = 0;
	for (i = 0; i < dlen; i++)
		data[i] = (uint8_t)(0xc0 ^ i);
	nicd_remote_rx(&t.n, &t.e, PEER, &m, data, dlen);
}

/* A reply: to one of the requests our side sent, or to nothing. */
static void peer_reply(struct in *in)
{
	uint8_t data[NICD_FAB_CHUNK + 16];
	struct nicd_fmsg m = { 0 };
	uint8_t how = (uint8_t)take(in, 1);
	uint32_t dlen, i;

	if (nsent && !(how & 1)) {
		const struct nicd_fmsg *rq = &sent[(nsent - 1 - take(in, 1) % NSENT) % NSENT];

		m.src = rq->src;
		m.tag = rq->tag;
		m.chunk = how & 2 ? rq->chunk : (uint32_t)take(in, 2);
		m.aop = how & 4 ? rq->type : (uint8_t)take(in, 1);
		dlen = how & 8 ? rq->len : (uint32_t)take(in, 3);
	} else {
		m.src = (uint32_t)take(in, 4);
		m.tag = (uint32_t)take(in, 4);
		m.chunk = (uint32_t)take(in, 2);
		m.aop = (uint8_t)take(in, 1);
		dlen = (uint32_t)take(in, 3);
	}
	if (dlen > sizeof(data))
		dlen = sizeof(data);
	m.type = NICD_FM_REPLY;
	m.status = how & 16 ? 0 : (uint8_t)take(in, 1);
	m.len = how & 32 ? dlen : (uint32_t)take(in, 3);
	m.gen = (uint32_t)take(in, 1);
	m.epoch = (uint32_t)take(in, 1);
	/* a failed PUT's bytes written: within its chunk, or forged */
	m.a = how & 64 ? take(in, 3) : take(in, 8);
	for (i = 0; i < dlen; i++)
		data[i] = (uint8_t)(0x3c + i);
	nicd_remote_rx(&t.n, &t.e, PEER, &m, data, dlen);
}

/* Our context rc (cap 0x77) starts an op at node 2. */
static void our_op(struct in *in)
{
	struct elan_cmd cmd;
	uint64_t off = take(in, 2) % (HLEN / 2);
	uint32_t len;

	memset(&cmd, 0, sizeof(cmd));
	cmd.op = (uint8_t)(1 + take(in, 1) % 4);
	cmd.dst = ELAN_ADDR(2, take(in, 1) % 4);
	cmd.flags = (uint16_t)(take(in, 1) % 2 ? ELAN_CMDF_REMOTE_EVENT : 0);
	len = cmd.op == ELAN_OP_ATOMIC ? 8 :
	      cmd.op == ELAN_OP_SEND ? (uint32_t)take(in, 2) % (ELAN_SEND_MAX + 1) :
	      (uint32_t)take(in, 2) % (HLEN / 2);
	cmd.len = len;
	cmd.laddr = th_va(rc, off);
	cmd.raddr = take(in, 4) << 3;
	if (cmd.op == ELAN_OP_ATOMIC) {
		cmd.laddr &= ~7ull;
		cmd.flags |= ELAN_CMDF_FETCH;
		off &= ~7ull;
	}
	if (cmd.op == ELAN_OP_SEND)
		cmd.flags = 0;
	if (th_post(rc, &cmd) < 0)
		return;
	rc_posted++;
	/* what its ops may write in rc's memory */
	if (cmd.op == ELAN_OP_GET || cmd.op == ELAN_OP_ATOMIC) {
		if (!rc_hi || off < rc_lo)
			rc_lo = off;
		if (off + len > rc_hi)
			rc_hi = off + len;
	}
}

/* rc's memory outside what its gets and atomics may write: unchanged. */
static void rc_check(void)
{
	uint8_t got[HLEN];

	th_read_mem(rc, th_va(rc, 0), got, HLEN);
	if (rc_hi) {
		memcpy(rc_expect + rc_lo, got + rc_lo, rc_hi - rc_lo);
		if (memcmp(got, rc_expect, HLEN))
			die("an op to node 2 wrote outside its destination");
		th_write_mem(rc, th_va(rc, 0), got, HLEN);
	} else if (memcmp(got, rc_expect, HLEN)) {
		die("rc's memory changed without a get or atomic");
	}
}

/* The link goes: every op to node 2 ends, once each. */
static void link_down_check(void)
{
	long i;

	nicd_remote_host_down(&t.n, PEER);
	for (i = 0; i < 1000 && rc_events < rc_posted; i++)
		step();
	if (rc_events != rc_posted) {
		char msg[120];

		snprintf(msg, sizeof(msg), "%u ops to node 2, %u events after the link went down",
			 rc_posted, rc_events);
		die(msg);
	}
	rc_check();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int inited;
	struct in in = { data, size };
	int actions = 0, i;

	if (!inited) {
		if (th_init(&t, 2, 4u << 20) < 0)
			abort();
		/* node 2 is the peer's: the fabric has three nodes */
		t.n.nodes = 3;
		if (nicd_node_remote(&t.n, 2, PEER))
			abort();
		t.n.fabric = &fake_ops;
		t.n.log_level = NICD_LOG_WARN;
		t.n.now = fake_now;
		t.n.fault_timeout_ns = 2000000000;
		inited = 1;
	}
	reset();
	honest_round(&h, 0);
	while (in.n && actions++ < 200) {
		switch (take(&in, 1) % 10) {
		case 0: case 1: case 2: peer_request(&in); break;
		case 3: case 4: peer_reply(&in); break;
		case 5: our_op(&in); break;
		case 6:
			for (i = (int)(take(&in, 1) % 32); i >= 0; i--)
				step();
			break;
		case 7:
			i = (int)take(&in, 1);
			if (i < 16)
				link_down_check();
			else if (i < 64)
				peer_state(i & 1, (uint32_t)take(&in, 1));
			else
				link_mode = i % 3 == 0;	/* busy or not */
			break;
		case 8:
			rc_check();
			break;
		default:
			honest_round(&h, (uint32_t)take(&in, 2));
			break;
		}
	}
	link_mode = 0;
	link_down_check();
	honest_round(&h, h.round);
	return 0;
}
