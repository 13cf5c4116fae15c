// SPDX-License-Identifier: GPL-2.0
/*
 * Ops on nodes of another host (see nicd_remote.h and nic/README.md, "The
 * fabric").  Two halves, no transport code:
 *
 *  - the initiator's: an op whose target is remote runs here instead of
 *    in the engine's op_*(): its target is resolved by a RESOLVE request,
 *    put/get go as chunks of up to NICD_FAB_CHUNK, NICD_RWIN in flight,
 *    read from (put) or written to (get) the initiator's RAM under its
 *    own brackets; atomics, sends and event credits are one request
 *    each.  Replies find their op by (src, tag, chunk).
 *  - the owner's: a request runs the target half through the same
 *    nicd_rna_*() calls a local op uses (resolve, capability, generation,
 *    epoch, bracket, translate, copy, event credits); one that must wait
 *    (a fault at our node, ring space) is parked and retried each step.
 *
 * Everything runs on the engine's thread: the transport calls
 * nicd_remote_rx() between steps, the engine calls nicd_remote_op() and
 * nicd_remote_poll() inside them.  Peer messages are untrusted: every
 * field is range checked before use, and a reply is taken only from the
 * host that owns the op's target, for the op still waiting for it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "nicd.h"

static const char *const fm_names[NICD_FM_MAX] = {
	[NICD_FM_RESOLVE] = "resolve", [NICD_FM_PUT] = "put",
	[NICD_FM_GET] = "get", [NICD_FM_ATOMIC] = "atomic",
	[NICD_FM_SEND] = "send", [NICD_FM_EVRES] = "event-reserve",
	[NICD_FM_EVPOST] = "event-post", [NICD_FM_EVREL] = "event-release",
	[NICD_FM_REPLY] = "reply", [NICD_FM_STATE] = "state",
};

const char *nicd_fmsg_name(int type)
{
	return type > 0 && type < NICD_FM_MAX ? fm_names[type] : "?";
}

int nicd_node_remote(struct nicd *n, uint32_t node, uint32_t host)
{
	struct nicd_node *nd;

	if (node >= n->nodes || n->node[node].configured)
		return -1;
	nd = &n->node[node];
	nd->configured = 1;
	nd->remote = 1;
	nd->host = (uint16_t)host;
	return 0;
}

int nicd_addr_remote(const struct nicd *n, uint32_t dst)
{
	uint32_t node = ELAN_ADDR_NODE(dst);

	return node < n->nodes && n->node[node].remote;
}

/* Send through the transport, counting; a busy link is retried later. */
static int fsend(struct nicd *n, uint32_t host, const struct nicd_fmsg *m,
		 const struct iovec *iov, int cnt)
{
	int r;

	if (!n->fabric)
		return ELAN_E_NODE_DOWN;
	r = n->fabric->send(n->fabric_arg, host, m, iov, cnt);
	if (r == NICD_PENDING)
		n->remote_busy = 1;
	else if (r == 0)
		n->rstat_tx++;
	nicd_trace(n, 'T', host, m->type, m->aop, r ? 0xffffffffu : m->len);
	return r;
}

/* Send b, which is not ours after (nicd_fabric_ops.send_buf); a link
 * with too much queued is retried later (the data read again). */
static int fsend_buf(struct nicd *n, uint32_t host, struct nicd_fbuf *b)
{
	/* for the trace: b is not ours after the send */
	uint32_t type = b->m.type, aop = b->m.aop, len = b->m.len;
	int r;

	if (!n->fabric) {
		free(b);
		return ELAN_E_NODE_DOWN;
	}
	r = n->fabric->send_buf(n->fabric_arg, host, b);
	if (r == NICD_PENDING) {
		free(b);
		n->remote_busy = 1;
	} else if (r == 0) {
		n->rstat_tx++;
	}
	nicd_trace(n, 'T', host, type, aop, r ? 0xffffffffu : len);
	return r;
}

/* A peer's message was invalid: counted, logged (the first ones, then
 * now and then: a peer must not flood the log), dropped. */
static int bad(struct nicd *n, uint32_t host, const struct nicd_fmsg *m,
	       const char *why)
{
	n->rstat_bad++;
	if (n->rstat_bad <= 10 || n->rstat_bad % 1000 == 0)
		nicd_logf(n, NICD_LOG_WARN,
			  "fabric: host %u: %s message dropped (%s; %" PRIu64 " so far)",
			  host, nicd_fmsg_name(m->type), why, n->rstat_bad);
	return -1;
}

/* ------------------------------------------------------------ initiator */

/*
 * Chunks: an op is cut every NICD_FAB_CHUNK bytes from its start.  Data
 * is copied between guest RAM and a message under brackets of its own
 * on each side, so a chunk may span any pages of either (see
 * nicd_remote.h, NICD_FAB_CHUNK).
 */
static uint64_t chunk_start(uint32_t k)
{
	return (uint64_t)k * NICD_FAB_CHUNK;
}

/* The bytes the op moves: all, or up to a page of ours that faulted
 * with an error (as a local op, the bytes before it land). */
static uint64_t rw_len(const struct nicd_op *op)
{
	return op->rend_err ? op->rend : op->cmd.len;
}

static uint32_t chunk_count(const struct nicd_op *op)
{
	return (uint32_t)((rw_len(op) + NICD_FAB_CHUNK - 1) / NICD_FAB_CHUNK);
}

static uint32_t chunk_len(const struct nicd_op *op, uint32_t k)
{
	uint64_t end = chunk_start(k + 1);

	if (end > rw_len(op))
		end = rw_len(op);
	return end > chunk_start(k) ? (uint32_t)(end - chunk_start(k)) : 0;
}

/* Bytes from va to the end of its page. */
static uint32_t page_rest(uint64_t va)
{
	return NICD_PAGE - (uint32_t)(va & (NICD_PAGE - 1));
}

static void req_init(struct nicd_fmsg *m, int type, const struct nicd_ctx *c)
{
	const struct nicd_op *op = &c->op;

	memset(m, 0, sizeof(*m));
	m->type = (uint8_t)type;
	m->src = nicd_ctx_addr(c);
	m->tag = op->rtag;
	m->node = op->t.node;
	m->ctx = op->t.ctx;
	m->gen = op->t.gen;
	m->epoch = op->t.epoch;
	m->cap = op->t.cap;
}

static uint32_t host_of(const struct nicd *n, const struct nicd_op *op)
{
	return n->node[ELAN_ADDR_NODE(op->cmd.dst)].host;
}

/* One request whose reply the op waits for (rwait). */
static int request(struct nicd *n, struct nicd_ctx *c, struct nicd_fmsg *m,
		   const struct iovec *iov, int cnt)
{
	int r = fsend(n, host_of(n, &c->op), m, iov, cnt);

	if (r)
		return r;
	c->op.rwait = m->type;
	c->op.w.kind = NICD_W_REMOTE;
	return NICD_PENDING;
}

/*
 * Inside c's open bracket: translate the initiator's bytes [va, va+len)
 * (len <= a page, so at most two pieces; one for a chunk).  0 with iov filled, NICD_PENDING
 * with w set (a fault), or LOCAL_FAULT.
 */
static int local_pieces(struct nicd *n, struct nicd_ctx *c, uint64_t va,
			uint32_t len, uint64_t span, int write,
			struct iovec *iov, int *cnt, struct nicd_wait *w)
{
	uint32_t n0 = NICD_PAGE - (uint32_t)(va & (NICD_PAGE - 1));
	uint8_t *p;
	int r;

	*cnt = 0;
	if (!len)
		return 0;
	if (n0 > len)
		n0 = len;
	r = nicd_xlate(n, c->nd, c->idx, va, span, write, 0, &p, w);
	if (r)
		return r;
	iov[0].iov_base = p;
	iov[0].iov_len = n0;
	*cnt = 1;
	if (len > n0) {
		r = nicd_xlate(n, c->nd, c->idx, va + n0, span - n0, write, 0,
			       &p, w);
		if (r)
			return r;
		iov[1].iov_base = p;
		iov[1].iov_len = len - n0;
		*cnt = 2;
	}
	return 0;
}

/*
 * Copy len bytes between buf and c's RAM at va (to_guest: into it), one
 * bracket per run of contiguous pages, as nicd_rna_rw does on the target
 * side; buf NULL: only translate (a get's destination, so that its
 * faults are served before the data comes).  *done: bytes copied.  0,
 * NICD_PENDING with w set (a fault), or LOCAL_FAULT.
 */
static int local_copy(struct nicd *n, struct nicd_engine *e,
		      struct nicd_ctx *c, uint64_t va, uint64_t span,
		      uint8_t *buf, uint32_t len, int to_guest, uint32_t *done,
		      struct nicd_wait *w)
{
	uint32_t off = 0, run;
	uint8_t *p;
	int r = 0;

	while (off < len) {
		nicd_bracket_open(c->nd, e->idx, c->idx);
		r = nicd_xlate(n, c->nd, c->idx, va + off, span - off, to_guest,
			       0, &p, w);
		if (r == 0) {
			run = len - off < NICD_RUN_MAX ? len - off : NICD_RUN_MAX;
			run = nicd_xlate_run(c->nd, c->idx, va + off, p, run,
					     to_guest);
			if (buf && to_guest)
				memcpy(p, buf + off, run);
			else if (buf)
				memcpy(buf + off, p, run);
			off += run;
		}
		nicd_bracket_close(c->nd, e->idx);
		if (r)
			break;
	}
	*done = off;
	return r;
}

/*
 * A page of ours at vpage faulted with error st: the op moves the bytes
 * before it and ends with st.  Chunks past the cut still in flight are
 * dropped when they answer (rx_reply).
 */
static void rw_cut(struct nicd_op *op, uint64_t vpage, int st)
{
	uint64_t at = vpage > op->cmd.laddr ? vpage - op->cmd.laddr : 0;

	if (at < op->done)	/* not a page of what is left: at once */
		at = op->done;
	if (at < rw_len(op)) {
		op->rend = at;
		op->rend_err = (uint8_t)st;
	}
}

/* The first error of a put/get, at the lowest chunk it hit, after part
 * bytes of that chunk were done. */
static void rw_fail(struct nicd_op *op, uint32_t k, int st, uint32_t part)
{
	if (!op->rerr || k < op->rerr_chunk) {
		op->rerr = (uint8_t)st;
		op->rerr_chunk = k;
		op->rerr_part = part;
	}
}

/*
 * The op used a cached target and the owner says it is not that any
 * more (detached and attached again, its node back as a new node): if
 * nothing of the op happened yet, forget the entry and start it again
 * with a RESOLVE, as a local op would have resolved afresh.  1 if so.
 */
static int restart_stale(struct nicd_ctx *c, int st)
{
	struct nicd_op *op = &c->op;

	if (!op->rcached || op->rbase || op->racked || op->rsent ||
	    op->atomic_done || op->done || op->rwait ||
	    (st != ELAN_E_TARGET_GONE && st != ELAN_E_NODE_DOWN &&
	     st != ELAN_E_NO_CONTEXT && st != ELAN_E_CAPABILITY))
		return 0;
	c->rcache_ok = 0;
	op->rcached = 0;
	op->started = 0;
	op->rgot = 0;
	op->rerr = 0;
	op->rerr_chunk = 0;
	op->rerr_part = 0;
	op->rend_err = 0;
	op->tev_reserved = 0;
	op->w.kind = NICD_W_NONE;
	return 1;
}

/* The op ends with its first error: the bytes of the chunk that failed
 * done before the error count, if every chunk before it is done. */
static int rw_end(struct nicd_ctx *c)
{
	struct nicd_op *op = &c->op;
	uint64_t part = op->rerr_part;

	if (restart_stale(c, op->rerr))
		return NICD_PENDING;
	if (op->rbase == op->rerr_chunk && part &&
	    op->done + part <= op->cmd.len) {
		op->done += part;
		c->nbytes += part;
	}
	return op->rerr;
}

/*
 * Issue chunk k.  A small put chunk in one page of ours goes straight
 * from guest RAM under our bracket (read before fsend returns); a bigger
 * one is copied out under our brackets into a buffer the transport takes
 * over.  A get translates its destination first, so that its faults are
 * served before the data comes (the reply translates it again).
 */
static int rw_issue(struct nicd *n, struct nicd_engine *e, struct nicd_ctx *c,
		    uint32_t k)
{
	struct nicd_op *op = &c->op;
	int get = op->cmd.op == ELAN_OP_GET, r;
	uint64_t off = chunk_start(k), va = op->cmd.laddr + off;
	uint32_t len = chunk_len(op, k), done;
	struct nicd_fbuf *b;
	struct iovec iov;
	struct nicd_fmsg m;
	uint8_t *p;

	req_init(&m, get ? NICD_FM_GET : NICD_FM_PUT, c);
	m.chunk = k;
	m.addr = op->cmd.raddr + off;
	m.len = len;
	if (get) {
		/* an error is not waited for: the data placed meets it
		 * again and counts the bytes that landed before it */
		r = local_copy(n, e, c, va, op->cmd.len - off, NULL, len, 1,
			       &done, &op->w);
		if (r == NICD_PENDING)
			return r;
		return fsend(n, host_of(n, op), &m, NULL, 0);
	}
	if (len <= page_rest(va)) {
		nicd_bracket_open(c->nd, e->idx, c->idx);
		r = nicd_xlate(n, c->nd, c->idx, va, op->cmd.len - off, 0, 0,
			       &p, &op->w);
		if (r == 0) {
			iov.iov_base = p;
			iov.iov_len = len;
			r = fsend(n, host_of(n, op), &m, &iov, 1);
		}
		nicd_bracket_close(c->nd, e->idx);
		return r;
	}
	b = malloc(sizeof(*b) + len);
	if (!b)
		return NICD_PENDING;	/* w NONE: tried again next step */
	r = local_copy(n, e, c, va, op->cmd.len - off, b->data, len, 0, &done,
		       &op->w);
	if (r) {
		free(b);
		return r;
	}
	b->m = m;
	return fsend_buf(n, host_of(n, op), b);
}

/* Post the REMOTE event at the target, if the op holds a credit there. */
static int remote_evpost(struct nicd *n, struct nicd_ctx *c)
{
	struct nicd_op *op = &c->op;
	struct nicd_fmsg m;
	int r;

	if (!op->tev_reserved)
		return 0;
	req_init(&m, NICD_FM_EVPOST, c);
	m.aop = op->cmd.op;
	m.a = op->cmd.cookie;
	m.b = op->cmd.raddr;
	m.chunk = (uint32_t)op->cmd.len;
	r = fsend(n, host_of(n, op), &m, NULL, 0);
	if (r)
		return r;
	op->tev_reserved = 0;
	return 0;
}

static int remote_rw(struct nicd *n, struct nicd_engine *e, struct nicd_ctx *c,
		     uint32_t *budget)
{
	struct nicd_op *op = &c->op;
	uint32_t total = chunk_count(op), i, bit;
	uint64_t done;
	int r = 0;

	while (op->racked & 1) {
		op->racked >>= 1;
		op->rsent >>= 1;
		op->rbase++;
	}
	done = chunk_start(op->rbase);
	if (done > rw_len(op))
		done = rw_len(op);
	c->nbytes += done - op->done;
	op->done = done;
	if (op->rerr || op->rbase >= total) {
		if (op->rsent) {	/* chunks in flight: their replies */
			op->w.kind = NICD_W_REMOTE;
			return NICD_PENDING;
		}
		if (op->rerr)
			return rw_end(c);
		if (op->rend_err)
			return op->rend_err;
		return remote_evpost(n, c);
	}
	for (i = 0; i < NICD_RWIN && op->rbase + i < total; i++) {
		bit = 1u << i;
		if ((op->rsent | op->racked) & bit)
			continue;
		if (!nicd_budget_left(n, budget))
			break;
		r = rw_issue(n, e, c, op->rbase + i);
		if (r == NICD_PENDING)
			break;		/* our fault (w set) or a busy link */
		if (r) {
			rw_fail(op, op->rbase + i, r, 0);
			break;
		}
		op->rsent |= bit;
		/* its pages: a big chunk costs the turn what it copies */
		nicd_budget_use(n, budget, (chunk_len(op, op->rbase + i) +
					    NICD_PAGE - 1) / NICD_PAGE);
	}
	if (r != NICD_PENDING)
		op->w.kind = NICD_W_REMOTE;
	if (op->rerr && !op->rsent)
		return rw_end(c);
	return NICD_PENDING;
}

static int remote_atomic(struct nicd *n, struct nicd_engine *e,
			 struct nicd_ctx *c, uint32_t *budget)
{
	struct nicd_op *op = &c->op;
	int fetch = !!(op->cmd.flags & ELAN_CMDF_FETCH), r = 0;
	uint32_t size = (uint32_t)op->cmd.len;	/* 8 or 4: validated */
	struct nicd_fmsg m;
	uint8_t *lp = NULL;

	if (!op->atomic_done && op->rgot) {
		op->rgot = 0;
		if (op->rstatus)
			return restart_stale(c, op->rstatus) ? NICD_PENDING :
			       op->rstatus;
		op->atomic_done = 1;
		op->done = size;
	}
	if (fetch && !op->fetch_stored) {
		/* translated before the atomic runs (so a fault is served
		 * first), and again to store what it fetched */
		nicd_bracket_open(c->nd, e->idx, c->idx);
		r = nicd_xlate(n, c->nd, c->idx, op->cmd.laddr, size, 1, 0,
			       &lp, &op->w);
		if (r == 0 && op->atomic_done) {
			nicd_atomic_store_fetched(lp, size, op->old);
			op->fetch_stored = 1;
		}
		nicd_bracket_close(c->nd, e->idx);
		if (r)
			return r;
	}
	if (!op->atomic_done) {
		req_init(&m, NICD_FM_ATOMIC, c);
		m.addr = op->cmd.raddr;
		m.aop = op->cmd.aop;
		m.chunk = size;
		m.a = op->cmd.operand;
		m.b = op->cmd.compare;
		return request(n, c, &m, NULL, 0);
	}
	r = remote_evpost(n, c);
	if (r)
		return r;
	nicd_budget_use(n, budget, 1);
	return 0;
}

static int remote_send(struct nicd *n, struct nicd_engine *e,
		       struct nicd_ctx *c, uint32_t *budget)
{
	struct nicd_op *op = &c->op;
	uint32_t len = (uint32_t)op->cmd.len;
	uint8_t msg[ELAN_SEND_MAX];
	struct iovec iov[2];
	struct nicd_fmsg m;
	int cnt, r;

	if (op->rgot) {
		op->rgot = 0;
		if (op->rstatus)
			return restart_stale(c, op->rstatus) ? NICD_PENDING :
			       op->rstatus;
		op->done = len;
		c->nbytes += len;
		nicd_budget_use(n, budget, 1);
		return 0;
	}
	nicd_bracket_open(c->nd, e->idx, c->idx);
	r = local_pieces(n, c, op->cmd.laddr, len, len, 0, iov, &cnt, &op->w);
	if (r == 0 && cnt == 2) {
		/* a message across a page boundary: the transport takes one
		 * piece, so it is gathered here (at most ELAN_SEND_MAX) */
		memcpy(msg, iov[0].iov_base, iov[0].iov_len);
		memcpy(msg + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
		iov[0].iov_base = msg;
		iov[0].iov_len = len;
		cnt = 1;
	}
	if (r == 0) {
		req_init(&m, NICD_FM_SEND, c);
		m.a = op->cmd.tag;
		m.len = len;
		r = request(n, c, &m, iov, cnt);
	}
	nicd_bracket_close(c->nd, e->idx);
	return r;
}

/* A wait of the op on its own node (a fault): 0 go on, else as op;
 * *vpage: the page it was for (0: none). */
static int local_wait(struct nicd *n, struct nicd_ctx *c, uint64_t *vpage)
{
	struct nicd_op *op = &c->op;
	struct nicd_wait w = op->w;
	int r;

	*vpage = w.kind == NICD_W_FAULT ? w.vpage : 0;
	if (w.kind != NICD_W_FAULT && w.kind != NICD_W_FAULTQ)
		return 0;
	r = nicd_wait_poll(n, &op->w);
	if (r)
		return r;
	if (w.kind == NICD_W_FAULT) {
		op->w.kind = NICD_W_NONE;
		return nicd_fault_acked(n, c, &w);
	}
	return 0;
}

int nicd_remote_op(struct nicd *n, struct nicd_engine *e, struct nicd_ctx *c,
		   uint32_t *budget)
{
	struct nicd_op *op = &c->op;
	struct nicd_node *nd = &n->node[ELAN_ADDR_NODE(op->cmd.dst)];
	struct nicd_fmsg m;
	uint64_t vpage;
	int r;

	if (!op->rtag) {
		if (!++n->rtag_next)
			n->rtag_next = 1;
		op->rtag = n->rtag_next;
		op->rlink = nd->rlink;
		if (c->rcache_ok && c->rcache_dst == op->cmd.dst &&
		    c->rcache_link == nd->rlink && c->rcache.cap == c->cap) {
			op->t = c->rcache;
			op->started = 1;
			op->rcached = 1;
		}
	}
	/* a link lost: nothing in flight will come back */
	if (!nd->rup || nd->rlink != op->rlink)
		return ELAN_E_NODE_DOWN;
	r = local_wait(n, c, &vpage);
	if (r == NICD_PENDING)
		return r;
	if (r) {
		if (op->cmd.op != ELAN_OP_PUT && op->cmd.op != ELAN_OP_GET)
			return r;
		rw_cut(op, vpage, r);
	}
	if (op->rwait)
		return NICD_PENDING;	/* its reply is awaited */
	if (!op->started) {
		if (!op->rgot) {
			memset(&m, 0, sizeof(m));
			m.type = NICD_FM_RESOLVE;
			m.src = nicd_ctx_addr(c);
			m.tag = op->rtag;
			m.node = ELAN_ADDR_NODE(op->cmd.dst);
			m.ctx = ELAN_ADDR_CTX(op->cmd.dst);
			m.cap = c->cap;
			return request(n, c, &m, NULL, 0);
		}
		op->rgot = 0;
		if (op->rstatus)
			return op->rstatus;
		op->started = 1;
		c->rcache = op->t;
		c->rcache_dst = op->cmd.dst;
		c->rcache_link = op->rlink;
		c->rcache_ok = 1;
	}
	if ((op->cmd.flags & ELAN_CMDF_REMOTE_EVENT) && !op->tev_reserved) {
		if (!op->rgot) {
			req_init(&m, NICD_FM_EVRES, c);
			return request(n, c, &m, NULL, 0);
		}
		op->rgot = 0;
		if (op->rstatus)
			return restart_stale(c, op->rstatus) ? NICD_PENDING :
			       op->rstatus;
		op->tev_reserved = 1;
	}
	switch (op->cmd.op) {
	case ELAN_OP_PUT:
	case ELAN_OP_GET:
		return remote_rw(n, e, c, budget);
	case ELAN_OP_ATOMIC:
		return remote_atomic(n, e, c, budget);
	default:
		return remote_send(n, e, c, budget);
	}
}

void nicd_remote_evrel(struct nicd *n, const struct nicd_target *t)
{
	struct nicd_fmsg m;

	memset(&m, 0, sizeof(m));
	m.type = NICD_FM_EVREL;
	m.node = t->node;
	m.ctx = t->ctx;
	m.gen = t->gen;
	m.epoch = t->epoch;
	m.cap = t->cap;
	if (fsend(n, n->node[t->node].host, &m, NULL, 0))
		nicd_logf(n, NICD_LOG_DEBUG,
			  "fabric: an event credit at node %u ctx %u not given back (link busy or down)",
			  t->node, t->ctx);
}

/* GET data for chunk k of c's op: place it under our brackets. */
static void get_place(struct nicd *n, struct nicd_engine *e, struct nicd_ctx *c,
		      uint32_t k, const void *data)
{
	struct nicd_op *op = &c->op;
	uint64_t off = chunk_start(k);
	uint32_t len = chunk_len(op, k), bit = 1u << (k - op->rbase), done;
	struct nicd_wait w = { 0 };
	int r;

	r = local_copy(n, e, c, op->cmd.laddr + off, op->cmd.len - off,
		       (uint8_t *)data, len, 1, &done, &w);
	op->rsent &= ~bit;
	if (r == 0)
		op->racked |= bit;
	else if (r == NICD_PENDING) {
		/* a page went since the request: asked again once the
		 * fault is served */
		if (op->w.kind == NICD_W_NONE || op->w.kind == NICD_W_REMOTE)
			op->w = w;
	} else {
		rw_fail(op, k, r, done);
	}
}

/* A reply for the op of (m->src, m->tag), from host. */
static int rx_reply(struct nicd *n, struct nicd_engine *e, uint32_t host,
		    const struct nicd_fmsg *m, const void *data, size_t len)
{
	uint32_t node = ELAN_ADDR_NODE(m->src), ctx = ELAN_ADDR_CTX(m->src);
	struct nicd_node *nd;
	struct nicd_ctx *c;
	struct nicd_op *op;
	uint32_t k;

	if (node >= n->nodes || ctx >= ELAN_MAX_CTX)
		return bad(n, host, m, "no such initiator");
	nd = &n->node[node];
	c = &nd->ctx[ctx];
	op = &c->op;
	/* an op that ended meanwhile (node down, context gone, error):
	 * late replies are expected, not a peer's fault */
	if (!nd->up || nd->remote || c->state != ELAN_CTX_ACTIVE ||
	    !c->has_op || op->rtag != m->tag ||
	    !nicd_addr_remote(n, op->cmd.dst) || host_of(n, op) != host)
		return 0;
	if (m->status > ELAN_E_QUEUE)
		return bad(n, host, m, "bad status");
	switch (m->aop) {
	case NICD_FM_PUT:
	case NICD_FM_GET:
		if (m->aop != (op->cmd.op == ELAN_OP_GET ? NICD_FM_GET : NICD_FM_PUT))
			return bad(n, host, m, "reply to another op");
		k = m->chunk;
		if (k < op->rbase || k - op->rbase >= NICD_RWIN ||
		    !(op->rsent & (1u << (k - op->rbase))))
			return 0;	/* asked again meanwhile: a duplicate */
		if (k >= chunk_count(op)) {	/* past a cut (rw_cut) */
			op->rsent &= ~(1u << (k - op->rbase));
			return 0;
		}
		if (m->status != ELAN_OK) {
			/* a put says how much of its chunk it wrote */
			if (m->aop == NICD_FM_PUT && m->a >= chunk_len(op, k))
				return bad(n, host, m, "more written than asked");
			op->rsent &= ~(1u << (k - op->rbase));
			rw_fail(op, k, m->status,
				m->aop == NICD_FM_PUT ? (uint32_t)m->a : 0);
		} else if (m->aop == NICD_FM_GET) {
			if (len != chunk_len(op, k) || m->len != len)
				return bad(n, host, m, "get data of the wrong length");
			get_place(n, e, c, k, data);
		} else {
			op->rsent &= ~(1u << (k - op->rbase));
			op->racked |= 1u << (k - op->rbase);
		}
		break;
	case NICD_FM_RESOLVE:
	case NICD_FM_EVRES:
	case NICD_FM_ATOMIC:
	case NICD_FM_SEND:
		if (op->rwait != m->aop)
			return 0;
		op->rwait = 0;
		op->rgot = 1;
		op->rstatus = m->status;
		if (op->w.kind == NICD_W_REMOTE)
			op->w.kind = NICD_W_NONE;
		if (m->aop == NICD_FM_RESOLVE && m->status == ELAN_OK) {
			op->t.node = ELAN_ADDR_NODE(op->cmd.dst);
			op->t.ctx = ELAN_ADDR_CTX(op->cmd.dst);
			op->t.gen = m->gen;
			op->t.epoch = m->epoch;
			op->t.cap = c->cap;
		}
		/* a peer's value wider than the op's is cut to its size */
		if (m->aop == NICD_FM_ATOMIC)
			op->old = op->cmd.len == 4 ? (uint32_t)m->a : m->a;
		break;
	default:
		return bad(n, host, m, "reply to no request type");
	}
	return 0;
}

/* ------------------------------------------------------------ owner */

/* The reply to request rq (status and results filled in by the caller). */
static void reply_init(struct nicd_fmsg *rep, const struct nicd_fmsg *rq,
		       int status)
{
	memset(rep, 0, sizeof(*rep));
	rep->type = NICD_FM_REPLY;
	rep->aop = rq->type;
	rep->status = (uint8_t)status;
	rep->src = rq->src;
	rep->tag = rq->tag;
	rep->chunk = rq->chunk;
	rep->node = rq->node;
	rep->ctx = rq->ctx;
}

/* part: a PUT's bytes written before its error */
static int reply(struct nicd *n, uint32_t host, const struct nicd_fmsg *rq,
		 int status, uint32_t part)
{
	struct nicd_fmsg rep;

	reply_init(&rep, rq, status);
	rep.a = part;
	return fsend(n, host, &rep, NULL, 0);
}

/* The target context of a peer's request: as nicd_rna_target(), and the
 * capability it claims must be the context's (a peer may skip RESOLVE). */
static struct nicd_ctx *owner_target(struct nicd *n, const struct nicd_target *t,
				     int *st)
{
	struct nicd_ctx *tc = nicd_rna_target(n, t, st);

	if (tc && tc->cap != t->cap) {
		*st = ELAN_E_CAPABILITY;
		return NULL;
	}
	return tc;
}

static struct nicd_rres *rres_take(struct nicd *n, uint32_t host,
				   const struct nicd_fmsg *m)
{
	struct nicd_rres **pp, *r;

	for (pp = &n->rres; (r = *pp); pp = &r->next)
		if (r->host == host && r->t.node == m->node &&
		    r->t.ctx == m->ctx && r->t.gen == m->gen &&
		    r->t.epoch == m->epoch) {
			*pp = r->next;
			n->nrres--;
			return r;
		}
	return NULL;
}

/*
 * Copy len bytes between buf and the target t at addr (to_target: into
 * it), a run of contiguous target pages under each bracket (nicd_rna_rw),
 * from *done on, which counts what was copied: a PUT retried after a
 * fault goes on where it waited.
 */
static int owner_copy(struct nicd *n, struct nicd_engine *e,
		      const struct nicd_target *t, uint64_t addr, uint32_t len,
		      uint8_t *buf, int to_target, uint32_t *done,
		      struct nicd_wait *w)
{
	uint32_t l;
	int r = 0;

	for (; *done < len; *done += l) {
		l = len - *done < NICD_RUN_MAX ? len - *done : NICD_RUN_MAX;
		r = nicd_rna_rw(n, e, t, addr + *done, len - *done,
				buf + *done, &l, to_target, w);
		if (r)
			break;
	}
	return r;
}

/*
 * GET: a chunk in one target page is read under the target's bracket
 * straight into the reply (read before fsend returns); a bigger one is
 * copied under the target's brackets (nicd_rna_rw) into a buffer the
 * transport takes over.  NICD_PENDING (w: a fault, or NONE: a busy link
 * or no memory; all of it is read again then), 0 sent, or an error
 * status to reply.
 */
static int owner_get(struct nicd *n, struct nicd_engine *e, uint32_t host,
		     const struct nicd_fmsg *m, const struct nicd_target *t,
		     struct nicd_wait *w)
{
	struct nicd_fbuf *b;
	struct nicd_fmsg rep;
	struct nicd_ctx *tc;
	struct iovec iov;
	uint32_t done = 0;
	uint8_t *tp;
	int r;

	tc = owner_target(n, t, &r);
	if (!tc)
		return r;
	if (m->len > page_rest(m->addr)) {
		b = malloc(sizeof(*b) + m->len);
		if (!b)
			return NICD_PENDING;
		r = owner_copy(n, e, t, m->addr, m->len, b->data, 0, &done, w);
		if (r) {
			free(b);
			return r;
		}
		reply_init(&b->m, m, ELAN_OK);
		b->m.len = m->len;
		if (fsend_buf(n, host, b) == NICD_PENDING) {
			w->kind = NICD_W_NONE;	/* parked, read again */
			return NICD_PENDING;
		}
		return 0;	/* sent, or no link: nobody to tell */
	}
	nicd_bracket_open(tc->nd, e->idx, tc->idx);
	r = nicd_xlate(n, tc->nd, tc->idx, m->addr, m->len, 0, 1, &tp, w);
	if (r == 0) {
		if (e->chunk_hook)
			e->chunk_hook(n, e, t->node, 0, e->hook_arg);
		iov.iov_base = tp;
		iov.iov_len = m->len;
		reply_init(&rep, m, ELAN_OK);
		rep.len = m->len;
		r = fsend(n, host, &rep, &iov, 1);
		if (r == NICD_PENDING)
			w->kind = NICD_W_NONE;
		else
			r = 0;	/* sent, or no link: nobody to tell */
	}
	nicd_bracket_close(tc->nd, e->idx);
	return r;
}

/* EVPOST, EVREL: the credit the host's op holds is used or given back. */
static void owner_evdone(struct nicd *n, struct nicd_engine *e, uint32_t host,
			 const struct nicd_fmsg *m)
{
	struct nicd_rres *rr = rres_take(n, host, m);
	struct elan_event ev;

	if (!rr) {
		bad(n, host, m, "no event credit held");
		return;
	}
	if (m->type == NICD_FM_EVREL) {
		nicd_rna_event_release(n, &rr->t);
	} else {
		memset(&ev, 0, sizeof(ev));
		ev.cookie = m->a;
		ev.value = m->b;
		ev.len = m->chunk;
		ev.src = m->src;
		ev.type = ELAN_EV_REMOTE;
		ev.status = ELAN_OK;
		ev.op = m->aop;
		nicd_rna_event_post(n, e, &rr->t, &ev);
	}
	free(rr);
}

static int owner_evres(struct nicd *n, uint32_t host,
		       const struct nicd_target *t, struct nicd_wait *w)
{
	struct nicd_rres *rr;
	int r;

	if (!owner_target(n, t, &r))
		return r;
	rr = malloc(sizeof(*rr));
	if (!rr)
		return ELAN_E_QUEUE;
	r = nicd_rna_event_reserve(n, t, w);
	if (r) {
		free(rr);
		return r;
	}
	rr->host = host;
	rr->t = *t;
	rr->next = n->rres;
	n->rres = rr;
	n->nrres++;
	return 0;
}

/*
 * Run the target half of request m from host.  NICD_PENDING: it waits
 * (*w says for what; NICD_W_NONE: a busy link, retry).  Otherwise done,
 * and *rep is the reply to send (type 0: none, or already sent).
 */
static int owner_exec(struct nicd *n, struct nicd_engine *e, uint32_t host,
		      const struct nicd_fmsg *m, const uint8_t *data,
		      struct nicd_wait *w, uint32_t *done, struct nicd_fmsg *rep)
{
	struct nicd_target t = { m->node, m->ctx, m->gen, m->epoch, m->cap };
	struct iovec iov;
	uint64_t old = 0;
	int r;

	reply_init(rep, m, ELAN_OK);
	switch (m->type) {
	case NICD_FM_RESOLVE:
		r = nicd_rna_resolve(n, ELAN_ADDR(m->node, m->ctx), m->cap, &t);
		rep->gen = t.gen;
		rep->epoch = t.epoch;
		break;
	case NICD_FM_PUT:
		if (!owner_target(n, &t, &r))
			break;
		r = owner_copy(n, e, &t, m->addr, m->len, (uint8_t *)data, 1,
			       done, w);
		rep->a = *done;	/* an error: how much landed */
		break;
	case NICD_FM_GET:
		r = owner_get(n, e, host, m, &t, w);
		if (r == 0)
			rep->type = 0;
		break;
	case NICD_FM_ATOMIC:
		if (!owner_target(n, &t, &r))
			break;
		r = nicd_rna_atomic(n, e, &t, m->addr, m->aop, m->chunk, m->a,
				    m->b, &old, w);
		rep->a = old;
		break;
	case NICD_FM_SEND:
		if (!owner_target(n, &t, &r))
			break;
		iov.iov_base = (void *)data;
		iov.iov_len = m->len;
		r = nicd_rna_recv(n, e, &t, m->src, (uint32_t)m->a, &iov,
				  m->len ? 1 : 0, m->len, w);
		break;
	case NICD_FM_EVRES:
		r = owner_evres(n, host, &t, w);
		break;
	default:		/* EVPOST, EVREL */
		owner_evdone(n, e, host, m);
		rep->type = 0;
		return 0;
	}
	if (r == NICD_PENDING)
		return r;
	rep->status = (uint8_t)r;
	return 0;
}

/* Data bytes a parked request keeps. */
static uint32_t park_dlen(const struct nicd_fmsg *m)
{
	return m->type == NICD_FM_PUT || m->type == NICD_FM_SEND ? m->len : 0;
}

/* Keep request m (or, type REPLY, a reply to send) for later. */
static int park(struct nicd *n, uint32_t host, const struct nicd_fmsg *m,
		const void *data, const struct nicd_wait *w, uint32_t done)
{
	uint32_t dlen = park_dlen(m);
	struct nicd_rpark *p, **pp;

	if (n->nrpark >= NICD_RPARK_MAX ||
	    n->rpark_bytes + dlen > NICD_RPARK_BYTES)
		return -1;
	p = malloc(sizeof(*p) + dlen);
	if (!p)
		return -1;
	p->next = NULL;
	p->host = host;
	p->retries = 0;
	p->done = done;
	p->w = *w;
	p->m = *m;
	if (dlen)
		memcpy(p->data, data, dlen);
	for (pp = &n->rpark; *pp; pp = &(*pp)->next)
		;
	*pp = p;
	n->nrpark++;
	n->rpark_bytes += dlen;
	return 0;
}

/* Run request m and answer it.  1: it waits (the caller keeps it). */
static int owner_run(struct nicd *n, struct nicd_engine *e, uint32_t host,
		     const struct nicd_fmsg *m, const uint8_t *data,
		     struct nicd_wait *w, uint32_t *done)
{
	struct nicd_fmsg rep;
	struct nicd_wait none = { 0 };

	if (owner_exec(n, e, host, m, data, w, done, &rep) == NICD_PENDING)
		return 1;
	if (!rep.type || fsend(n, host, &rep, NULL, 0) != NICD_PENDING)
		return 0;
	/* The work is done (an atomic ran, a message was received): never
	 * again.  Only its reply waits for the link. */
	if (park(n, host, &rep, NULL, &none, 0) < 0)
		nicd_logf(n, NICD_LOG_WARN,
			  "fabric: host %u: a reply lost (too many waiting)", host);
	return 0;
}

/* Check a request from host; 0 if it may run. */
static int owner_check(struct nicd *n, uint32_t host,
		       const struct nicd_fmsg *m, size_t len)
{
	if (m->node >= n->nodes || !n->node[m->node].configured ||
	    n->node[m->node].remote || m->ctx >= ELAN_MAX_CTX)
		return bad(n, host, m, "not a node of ours");
	switch (m->type) {
	case NICD_FM_PUT:
	case NICD_FM_GET:
		if (!m->len || m->len > NICD_FAB_CHUNK ||
		    m->addr + m->len < m->addr)
			return bad(n, host, m, "bad chunk");
		if (len != (m->type == NICD_FM_PUT ? m->len : 0))
			return bad(n, host, m, "data length");
		return 0;
	case NICD_FM_SEND:
		if (m->len > ELAN_SEND_MAX || len != m->len)
			return bad(n, host, m, "bad send length");
		return 0;
	case NICD_FM_ATOMIC:
		if (m->aop > ELAN_AOP_XOR || (m->chunk != 8 && m->chunk != 4) ||
		    (m->addr & (m->chunk - 1)) || len)
			return bad(n, host, m, "bad atomic");
		return 0;
	case NICD_FM_EVPOST:
		if (m->aop > ELAN_OP_SEND)
			return bad(n, host, m, "bad event");
		/* fall through */
	default:
		return len ? bad(n, host, m, "unexpected data") : 0;
	}
}

/* STATE from host: which of its nodes are up, with their epochs. */
static int rx_state(struct nicd *n, uint32_t host, const struct nicd_fmsg *m,
		    const void *data, size_t len)
{
	uint32_t epochs[ELAN_MAX_NODES], i;
	int changed = 0;

	if (len != sizeof(epochs))
		return bad(n, host, m, "state length");
	memcpy(epochs, data, sizeof(epochs));
	for (i = 0; i < n->nodes; i++) {
		struct nicd_node *nd = &n->node[i];
		int up = !!(m->a & (1ull << i));

		if (!nd->remote || nd->host != host)
			continue;
		if (nd->rup && (!up || nd->epoch != epochs[i]))
			nd->rlink++;	/* gone, or back as a new node */
		if (nd->rup != up || nd->epoch != epochs[i])
			changed = 1;
		nd->rup = (uint8_t)up;
		nd->epoch = epochs[i];
		if (up)
			n->nodes_up |= 1ull << i;
		else
			n->nodes_up &= ~(1ull << i);
	}
	if (changed) {
		nicd_logf(n, NICD_LOG_INFO, "fabric: host %u: nodes up %#" PRIx64,
			  host, m->a);
		nicd_publish_nodes_up(n);
	}
	return 0;
}

int nicd_remote_send_state(struct nicd *n, uint32_t host)
{
	uint32_t epochs[ELAN_MAX_NODES] = { 0 }, i;
	struct nicd_fmsg m;
	struct iovec iov = { epochs, sizeof(epochs) };

	memset(&m, 0, sizeof(m));
	m.type = NICD_FM_STATE;
	for (i = 0; i < n->nodes; i++) {
		if (n->node[i].remote || !n->node[i].configured)
			continue;
		epochs[i] = n->node[i].epoch;
		if (n->node[i].up)
			m.a |= 1ull << i;
	}
	m.len = sizeof(epochs);
	return fsend(n, host, &m, &iov, 1);
}

int nicd_remote_rx(struct nicd *n, struct nicd_engine *e, uint32_t host,
		   const struct nicd_fmsg *m, const void *data, size_t len)
{
	struct nicd_wait w = { 0 };
	uint32_t done = 0;

	n->rstat_rx++;
	nicd_trace(n, 'R', host, m->type, m->aop, (uint32_t)len);
	switch (m->type) {
	case NICD_FM_REPLY:
		if (len != (m->aop == NICD_FM_GET && !m->status ? m->len : 0))
			return bad(n, host, m, "reply data length");
		return rx_reply(n, e, host, m, data, len);
	case NICD_FM_STATE:
		return rx_state(n, host, m, data, len);
	case NICD_FM_RESOLVE:
	case NICD_FM_PUT:
	case NICD_FM_GET:
	case NICD_FM_ATOMIC:
	case NICD_FM_SEND:
	case NICD_FM_EVRES:
	case NICD_FM_EVPOST:
	case NICD_FM_EVREL:
		break;
	default:
		return bad(n, host, m, "unknown type");
	}
	if (owner_check(n, host, m, len)) {
		if (m->type != NICD_FM_EVPOST && m->type != NICD_FM_EVREL)
			reply(n, host, m, ELAN_E_NO_CONTEXT, 0);
		return -1;
	}
	if (owner_run(n, e, host, m, data, &w, &done) &&
	    park(n, host, m, data, &w, done) < 0) {
		bad(n, host, m, "too many requests waiting");
		reply(n, host, m, ELAN_E_QUEUE, 0);
	}
	return 0;
}

static void unpark(struct nicd *n, struct nicd_rpark **pp)
{
	struct nicd_rpark *p = *pp;

	*pp = p->next;
	n->nrpark--;
	n->rpark_bytes -= park_dlen(&p->m);
	free(p);
}

int nicd_remote_poll(struct nicd *n, struct nicd_engine *e)
{
	struct nicd_rpark **pp = &n->rpark, *p;
	int work = 0, r;

	while ((p = *pp)) {
		if (p->m.type == NICD_FM_REPLY) {
			if (fsend(n, p->host, &p->m, NULL, 0) == NICD_PENDING) {
				pp = &p->next;
				continue;
			}
			unpark(n, pp);
			work++;
			continue;
		}
		if (p->w.kind == NICD_W_FAULT || p->w.kind == NICD_W_FAULTQ) {
			struct nicd_wait w = p->w;

			r = nicd_wait_poll(n, &p->w);
			if (r == NICD_PENDING) {
				pp = &p->next;
				continue;
			}
			if (!r && w.kind == NICD_W_FAULT) {
				p->w.kind = NICD_W_NONE;
				if (++p->retries > n->max_fault_retries)
					r = ELAN_E_REMOTE_FAULT;
			}
			if (r) {
				if (p->m.type != NICD_FM_EVPOST &&
				    p->m.type != NICD_FM_EVREL)
					reply(n, p->host, &p->m, r,
					      p->m.type == NICD_FM_PUT ? p->done : 0);
				unpark(n, pp);
				work++;
				continue;
			}
		}
		if (owner_run(n, e, p->host, &p->m, p->data, &p->w, &p->done)) {
			pp = &p->next;	/* waits again */
			continue;
		}
		unpark(n, pp);
		work++;
	}
	return work;
}

void nicd_remote_host_down(struct nicd *n, uint32_t host)
{
	struct nicd_rpark **pp = &n->rpark;
	struct nicd_rres **rp = &n->rres, *r;
	uint32_t i, dropped = 0, freed = 0;
	int changed = 0;

	for (i = 0; i < n->nodes; i++) {
		struct nicd_node *nd = &n->node[i];

		if (!nd->remote || nd->host != host)
			continue;
		if (nd->rup)
			changed = 1;
		nd->rup = 0;
		nd->rlink++;
		n->nodes_up &= ~(1ull << i);
	}
	while (*pp) {
		if ((*pp)->host == host) {
			unpark(n, pp);
			dropped++;
		} else {
			pp = &(*pp)->next;
		}
	}
	while ((r = *rp)) {
		if (r->host == host) {
			*rp = r->next;
			n->nrres--;
			nicd_rna_event_release(n, &r->t);
			free(r);
			freed++;
		} else {
			rp = &r->next;
		}
	}
	nicd_logf(n, NICD_LOG_INFO,
		  "fabric: host %u down: its nodes are down, %u waiting requests dropped, %u event credits given back",
		  host, dropped, freed);
	if (changed)
		nicd_publish_nodes_up(n);
}
