// SPDX-License-Identifier: GPL-2.0
/*
 * The engine: the command queues, the ops (put, get, atomics, send, fence,
 * nop) and the step; contexts are in nicd_ctx.c, and the remote node
 * access functions through which an op touches its target in nicd_rna.c.
 *
 * A context runs one command at a time (so a fence completes at once: every
 * earlier command has already completed); contexts are served round robin
 * with a budget of chunks per step, and an op that waits (for a fault ack,
 * or for ring space at its target) is parked with its progress while the
 * other contexts go on.
 */
#include <stdatomic.h>
#include <inttypes.h>
#include <string.h>
#include "nicd.h"

static int remote_event(struct nicd *n, struct nicd_engine *e,
			struct nicd_ctx *c)
{
	struct nicd_op *op = &c->op;
	struct elan_event ev = { 0 };

	if (!op->tev_reserved)
		return 0;
	ev.cookie = op->cmd.cookie;
	ev.value = op->cmd.raddr;
	ev.len = (uint32_t)op->cmd.len;
	ev.src = nicd_ctx_addr(c);
	ev.type = ELAN_EV_REMOTE;
	ev.status = ELAN_OK;
	ev.op = op->cmd.op;
	nicd_rna_event_post(n, e, &op->t, &ev);
	op->tev_reserved = 0;
	return 0;
}

/*
 * A fault of the op was answered "loaded" (0: retry the access).  Two
 * things end the op instead:
 *  - the page just loaded is missing again at once, max_fault_retries
 *    times in a row: the driver acks but does not load;
 *  - no chunk moved for fault_timeout_ns although every fault was
 *    answered: the translations one chunk needs keep evicting each other
 *    (a driver whose MMU replacement cannot hold them both).
 * A chunk whose two pages fault one after the other (the normal case)
 * counts as neither.
 */
int nicd_fault_acked(struct nicd *n, struct nicd_ctx *c,
		     const struct nicd_wait *w)
{
	struct nicd_op *op = &c->op;
	uint64_t now = n->now();

	if (op->acked && op->acked_page == w->vpage &&
	    op->acked_node == w->node && op->acked_remote == w->remote) {
		if (++op->retries > n->max_fault_retries) {
			nicd_node_logf(n, c->nd, NICD_LOG_WARN,
				       "node %u ctx %u: page 0x%" PRIx64 " still missing after %u acks",
				       c->nd->id, c->idx, w->vpage, op->retries);
			return w->remote ? ELAN_E_REMOTE_FAULT : ELAN_E_LOCAL_FAULT;
		}
	} else {
		op->retries = 1;
		op->acked_page = w->vpage;
		op->acked_node = w->node;
		op->acked_remote = w->remote;
		op->acked = 1;
	}
	if (!op->stall_since)
		op->stall_since = now;
	else if (now - op->stall_since > n->fault_timeout_ns) {
		nicd_node_logf(n, c->nd, NICD_LOG_WARN,
			       "node %u ctx %u: no progress for %.1f s although every fault was answered: translations evict each other",
			       c->nd->id, c->idx, n->fault_timeout_ns / 1e9);
		return w->remote ? ELAN_E_REMOTE_FAULT : ELAN_E_LOCAL_FAULT;
	}
	return 0;
}

/* Common start of a remote op and the end of its waits.  0: go on. */
static int op_prepare(struct nicd *n, struct nicd_ctx *c)
{
	struct nicd_op *op = &c->op;
	int r;

	if (!op->started) {
		r = nicd_rna_resolve(n, op->cmd.dst, c->cap, &op->t);
		if (r)
			return r;
		op->started = 1;
	}
	if (op->w.kind != NICD_W_NONE) {
		struct nicd_wait w = op->w;

		/* the target may have gone while the op waited */
		if (!nicd_rna_target(n, &op->t, &r))
			return r;
		r = nicd_wait_poll(n, &op->w);
		if (r)
			return r;
		if (w.kind == NICD_W_FAULT) {
			/* answered: retry (a full fault queue keeps its
			 * kind, whose deadline counts from the first try) */
			op->w.kind = NICD_W_NONE;
			r = nicd_fault_acked(n, c, &w);
			if (r)
				return r;
		}
	}
	if ((op->cmd.flags & ELAN_CMDF_REMOTE_EVENT) && !op->tev_reserved) {
		r = nicd_rna_event_reserve(n, &op->t, &op->w);
		if (r)
			return r;
		op->tev_reserved = 1;
		op->w.kind = NICD_W_NONE;
	}
	return 0;
}

static void progress(struct nicd_op *op)
{
	op->w.kind = NICD_W_NONE;
	op->retries = 0;
	op->acked = 0;
	op->stall_since = 0;
	op->wait_since = 0;
}

/*
 * The op waits (NICD_PENDING).  Waits end by themselves (a fault ack or
 * its timeout) or by back-pressure, which has no end of its own (a
 * consumer that never makes room): an op that made no progress for
 * NICD_LONG_WAIT_NS is named in the log once, with what it waits for.
 */
static void op_waiting(struct nicd *n, struct nicd_ctx *c)
{
	static const char *const kind[] = {
		[NICD_W_NONE] = "its next chunk",
		[NICD_W_FAULT] = "a fault answer",
		[NICD_W_FAULTQ] = "room in a fault queue",
		[NICD_W_SPACE] = "ring space at its target",
		[NICD_W_REMOTE] = "a reply from its target's host",
	};
	struct nicd_op *op = &c->op;
	uint64_t now = n->now();

	if (!op->wait_since) {
		op->wait_since = now;
		return;
	}
	if (op->wait_logged || now - op->wait_since < NICD_LONG_WAIT_NS)
		return;
	op->wait_logged = 1;
	nicd_node_logf(n, c->nd, NICD_LOG_WARN,
		       "node %u ctx %u: %s cookie %llu to %#x waits %.1f s for %s (node %u)",
		       c->nd->id, c->idx, nicd_op_name(op->cmd.op),
		       (unsigned long long)op->cmd.cookie, op->cmd.dst,
		       (now - op->wait_since) / 1e9,
		       op->w.kind <= NICD_W_REMOTE ? kind[op->w.kind] : "?",
		       op->w.kind == NICD_W_SPACE || op->w.kind == NICD_W_REMOTE ?
		       ELAN_ADDR_NODE(op->cmd.dst) : op->w.node);
}

static int op_rw(struct nicd *n, struct nicd_engine *e, struct nicd_ctx *c,
		 uint32_t *budget)
{
	struct nicd_op *op = &c->op;
	struct nicd_node *nd = c->nd;
	int get = op->cmd.op == ELAN_OP_GET;
	uint64_t la, ra, left;
	uint32_t cn, pages;
	uint8_t *lp;
	int r;

	r = op_prepare(n, c);
	if (r)
		return r;
	while (op->done < op->cmd.len) {
		if (!nicd_budget_left(n, budget))
			return NICD_PENDING;
		la = op->cmd.laddr + op->done;
		ra = op->cmd.raddr + op->done;
		left = op->cmd.len - op->done;
		/*
		 * One copy for as many pages as both sides translate to
		 * contiguous host memory (a guest's free pages often are),
		 * up to NICD_RUN_MAX: one bracket and one memmove instead of
		 * one per page.
		 */
		cn = left < NICD_RUN_MAX ? (uint32_t)left : NICD_RUN_MAX;
		nicd_bracket_open(nd, e->idx, c->idx);
		r = nicd_xlate(n, nd, c->idx, la, left, get, 0, &lp, &op->w);
		if (r == 0) {
			cn = nicd_xlate_run(nd, c->idx, la, lp, cn, get);
			r = nicd_rna_rw(n, e, &op->t, ra, left, lp, &cn, !get,
					&op->w);
		}
		nicd_bracket_close(nd, e->idx);
		if (r)
			return r;
		op->done += cn;
		c->nbytes += cn;
		pages = (cn + NICD_PAGE - 1) / NICD_PAGE;
		nicd_budget_use(n, budget, pages);
		progress(op);
	}
	return remote_event(n, e, c);
}

static int op_atomic(struct nicd *n, struct nicd_engine *e, struct nicd_ctx *c,
		     uint32_t *budget)
{
	struct nicd_op *op = &c->op;
	struct nicd_node *nd = c->nd;
	int fetch = !!(op->cmd.flags & ELAN_CMDF_FETCH);
	uint32_t size = (uint32_t)op->cmd.len;	/* 8 or 4: validated */
	uint8_t *lp = NULL;
	uint64_t old = 0;
	int r;

	r = op_prepare(n, c);
	if (r)
		return r;
	nicd_bracket_open(nd, e->idx, c->idx);
	r = 0;
	if (fetch && !op->fetch_stored)
		r = nicd_xlate(n, nd, c->idx, op->cmd.laddr, size, 1, 0, &lp,
			       &op->w);
	if (r == 0 && !op->atomic_done) {
		r = nicd_rna_atomic(n, e, &op->t, op->cmd.raddr, op->cmd.aop,
				    size, op->cmd.operand, op->cmd.compare,
				    &old, &op->w);
		if (r == 0) {
			op->atomic_done = 1;
			op->old = old;
			op->done = size;
		}
	}
	if (r == 0 && fetch && !op->fetch_stored) {
		nicd_atomic_store_fetched(lp, size, op->old);
		op->fetch_stored = 1;
	}
	nicd_bracket_close(nd, e->idx);
	if (r)
		return r;
	nicd_budget_use(n, budget, 1);
	progress(op);
	return remote_event(n, e, c);
}

static int op_send(struct nicd *n, struct nicd_engine *e, struct nicd_ctx *c,
		   uint32_t *budget)
{
	struct nicd_op *op = &c->op;
	struct nicd_node *nd = c->nd;
	uint32_t len = (uint32_t)op->cmd.len, n0;
	struct iovec iov[2];
	int cnt = 0, r;
	uint8_t *p = NULL;

	r = op_prepare(n, c);
	if (r)
		return r;
	n0 = NICD_PAGE - (uint32_t)(op->cmd.laddr & (NICD_PAGE - 1));
	if (n0 > len)
		n0 = len;
	/* The whole message in one bracket: the slot is taken only when
	 * every local page translated, so a fault never holds a slot. */
	nicd_bracket_open(nd, e->idx, c->idx);
	if (len) {
		r = nicd_xlate(n, nd, c->idx, op->cmd.laddr, len, 0, 0, &p,
			       &op->w);
		iov[cnt].iov_base = p;
		iov[cnt++].iov_len = n0;
		if (r == 0 && len > n0) {
			r = nicd_xlate(n, nd, c->idx, op->cmd.laddr + n0,
				       len - n0, 0, 0, &p, &op->w);
			iov[cnt].iov_base = p;
			iov[cnt++].iov_len = len - n0;
		}
	}
	if (r == 0)
		r = nicd_rna_recv(n, e, &op->t, nicd_ctx_addr(c), op->cmd.tag,
				  iov, cnt, len, &op->w);
	nicd_bracket_close(nd, e->idx);
	if (r)
		return r;
	op->done = len;
	c->nbytes += len;
	nicd_budget_use(n, budget, 1);
	progress(op);
	return 0;
}

static int op_run(struct nicd *n, struct nicd_engine *e, struct nicd_ctx *c,
		  uint32_t *budget)
{
	/* a node of another host: requests to its owner (nicd_remote.c) */
	if (c->op.cmd.op >= ELAN_OP_PUT && c->op.cmd.op <= ELAN_OP_SEND &&
	    nicd_addr_remote(n, c->op.cmd.dst))
		return nicd_remote_op(n, e, c, budget);
	switch (c->op.cmd.op) {
	case ELAN_OP_PUT:
	case ELAN_OP_GET:
		return op_rw(n, e, c, budget);
	case ELAN_OP_ATOMIC:
		return op_atomic(n, e, c, budget);
	case ELAN_OP_SEND:
		return op_send(n, e, c, budget);
	default:		/* NOP, FENCE: every earlier command is done */
		return ELAN_OK;
	}
}

static void complete(struct nicd *n, struct nicd_engine *e, struct nicd_ctx *c,
		     int status)
{
	struct nicd_op *op = &c->op;
	struct elan_event ev = { 0 };

	if (status && op->tev_reserved) {
		nicd_rna_event_release(n, &op->t);
		op->tev_reserved = 0;
	}
	if (status && status != ELAN_E_BADCMD)
		nicd_logf(n, NICD_LOG_DEBUG, "node %u ctx %u: %s cookie %llu"
			  " ends in %s", c->nd->id, c->idx,
			  nicd_op_name(op->cmd.op), (unsigned long long)op->cmd.cookie,
			  nicd_status_name(status));
	ev.cookie = op->cmd.cookie;
	ev.value = op->cmd.op == ELAN_OP_ATOMIC ? op->old : 0;
	ev.len = (uint32_t)op->done;
	ev.src = op->cmd.dst;
	ev.type = ELAN_EV_DONE;
	ev.status = (uint8_t)status;
	ev.op = op->cmd.op;
	nicd_post_event(c, &ev);
	nicd_trace(n, 'D', c->nd->id, c->idx, op->cmd.op, op->done);
	if (op->cmd.op == ELAN_OP_SEND && nicd_addr_remote(n, op->cmd.dst))
		c->reply_elsewhere = 1;
	if (!status && (op->cmd.op == ELAN_OP_PUT ||
			op->cmd.op == ELAN_OP_ATOMIC) &&
	    op->cmd.dst != ELAN_ADDR(c->nd->id, c->idx))
		c->reply_elsewhere = 1;
	nicd_notify(e, c);
	c->has_op = 0;
	c->ncmds++;
}

/*
 * Serve one context: take commands, run the current op within budget
 * (the context's own, capped by what its node has left this step, which
 * is reduced by what was used).
 */
static int ctx_run(struct nicd *n, struct nicd_engine *e, struct nicd_ctx *c,
		   uint32_t *node_left)
{
	uint32_t budget = n->chunk_budget < *node_left ? n->chunk_budget :
			  *node_left, start = budget;
	struct elan_cmd *slot;
	int work = 0, r;

	c->blocked = 0;
	while (nicd_budget_left(n, &budget) && c->state == ELAN_CTX_ACTIVE) {
		if (!c->has_op) {
			slot = elan_cmdq_slot(c->map.cmdq, c->cmd_tail);
			if (LOAD_ACQ(&slot->seq) != elan_ring_seq(c->cmd_tail))
				break;		/* not ready */
			r = nicd_ev_credit(c);
			if (r < 0) {
				nicd_ctx_fail(n, c, ELAN_E_QUEUE, "ev_head out of range");
				work++;
				break;
			}
			if (r == 0) {		/* back-pressure */
				c->blocked = 1;
				c->space_want = 1;
				n->backpressure = 1;
				break;
			}
			memcpy(&c->op.cmd, slot, sizeof(c->op.cmd));
			c->cmd_tail++;
			/* a hint for the polling loop (a stream: the
			 * poster is ahead of us); never trusted */
			slot = elan_cmdq_slot(c->map.cmdq, c->cmd_tail);
			if (LOAD(&slot->seq) == elan_ring_seq(c->cmd_tail))
				n->cmds_queued++;
			c->posted = 1;
			STORE_REL(&c->map.status->cmd_tail, c->cmd_tail);
			c->ev_reserved++;
			memset((uint8_t *)&c->op + sizeof(c->op.cmd), 0,
			       sizeof(c->op) - sizeof(c->op.cmd));
			c->has_op = 1;
			nicd_trace(n, 'C', c->nd->id, c->idx, c->op.cmd.op,
				   c->op.cmd.len);
			work++;
			nicd_budget_use(n, &budget, 1);
			r = nicd_validate_cmd(n, &c->op.cmd);
			if (r) {
				nicd_node_logf(n, c->nd, NICD_LOG_DEBUG,
					       "node %u ctx %u: command %u (op %u) rejected: %s",
					       c->nd->id, c->idx, c->cmd_tail - 1,
					       c->op.cmd.op, nicd_status_name(r));
				complete(n, e, c, r);
				continue;
			}
		}
		r = op_run(n, e, c, &budget);
		if (!c->has_op || c->state != ELAN_CTX_ACTIVE)
			break;	/* the context itself went away meanwhile */
		if (r == NICD_PENDING) {
			op_waiting(n, c);
			if (c->op.w.kind == NICD_W_SPACE) {
				c->blocked = 1;
				n->backpressure = 1;
			}
			break;
		}
		complete(n, e, c, r);
		work++;
	}
	*node_left -= start - budget;
	return work + (int)(start - budget);
}

/*
 * Publish status.nic_waiting of every context: set while an op found one
 * of its rings full in this step.  A newly set flag is fenced and counts
 * as work, so the rings are looked at once more before the NIC may sleep
 * (the consumer stores its head, fences, then reads the flag).
 *
 * And status.nic_stalled: set while the context's op waits (its target's
 * ring, a fault answer, its own event ring: each wait ends by a doorbell
 * of someone else or a timeout), so posters behind it do not ring; it is
 * cleared here, before the NIC announces sleep and looks at the queues
 * once more, as soon as the op no longer waits.
 */
static int publish_waiting(struct nicd *n)
{
	struct nicd_ctx *c;
	uint32_t i, m;
	int newly = 0;
	uint8_t st;

	for (i = 0; i < n->nodes; i++) {
		struct nicd_node *nd = &n->node[i];

		if (!nd->up)
			continue;
		nicd_for_each_active_ctx(nd, c, m) {
			st = c->blocked ||
			     (c->has_op && c->op.w.kind != NICD_W_NONE);
			if (st != c->stalled_pub) {
				c->stalled_pub = st;
				STORE(&c->map.status->nic_stalled, (uint32_t)st);
				/* cleared: fenced, and the queue looked at
				 * again before any sleep */
				newly |= !st;
			}
			if (c->space_want && !c->waiting_pub) {
				if (++n->wait_seq == 0)
					n->wait_seq = 1;
				c->waiting_pub = n->wait_seq;
				STORE(&c->map.status->nic_waiting,
				      c->waiting_pub);
				newly = 1;
			} else if (!c->space_want && c->waiting_pub) {
				c->waiting_pub = 0;
				STORE(&c->map.status->nic_waiting, 0u);
			}
			c->space_want = 0;
		}
	}
	if (newly)
		atomic_thread_fence(memory_order_seq_cst);
	return newly;
}

void nicd_doorbell(struct nicd *n, uint32_t node, uint32_t vector)
{
	nicd_trace(n, 'B', node, 0, vector, 0);
	if (node < n->nodes && n->node[node].up && vector == ELAN_DB_CTX)
		n->node[node].rescan = 1;
	if (node < n->nodes && n->node[node].up && vector == ELAN_DB_RESET)
		nicd_node_reset(n, node);
}

/*
 * Fair service: a node's turn in a step lasts until it has had node_ns of
 * the NIC's time, measured, so whatever its contexts cost counts
 * (commands, faults, MMU walks, logging), or node_budget pages, however
 * many contexts it keeps busy: the time is checked before every command
 * and chunk but the turn's first (nicd_budget_left), so a turn overruns
 * by one of them at most and always moves the node on.  An overrun is
 * not carried into the next turns: the clock also runs while the host
 * preempts nicd, which is no node's doing (a debt would make the node
 * that happened to be served then wait).  Its contexts are served from a
 * rotating first one; where the turn ended, the next begins.
 */
static int serve_node(struct nicd *n, struct nicd_engine *e,
		      struct nicd_node *nd)
{
	uint32_t left = n->node_budget, i = nd->id, j = nd->rr, k;
	uint64_t t0;
	int work = 0;

	if (!nd->active_mask)
		return 0;
	t0 = n->now();
	n->serve_until = t0 + n->node_ns;
	n->turn_used = 0;
	for (k = 0; k < ELAN_MAX_CTX; k++) {
		j = (nd->rr + k) % ELAN_MAX_CTX;
		if (!(nd->active_mask & (1u << j)))
			continue;
		if (n->n_engines > 1 &&
		    (i * ELAN_MAX_CTX + j) % n->n_engines != e->idx)
			continue;
		if (!nicd_budget_left(n, &left)) {
			nd->budget_out++;
			work++;		/* the rest next step */
			break;
		}
		work += ctx_run(n, e, &nd->ctx[j], &left);
	}
	nd->rr = k < ELAN_MAX_CTX ? j : (nd->rr + 1) % ELAN_MAX_CTX;
	n->serve_until = UINT64_MAX;
	nd->busy_ns += n->now() - t0;
	return work;
}

int nicd_step(struct nicd *n, struct nicd_engine *e)
{
	uint64_t now = n->now();
	int periodic = now >= n->rescan_at, work = 0;
	struct nicd_ctx *c;
	uint32_t i, j, m, v;

	if (periodic)
		n->rescan_at = now + 1000000;	/* 1 ms */
	n->backpressure = 0;
	n->remote_busy = 0;
	/* peers' requests that wait at our nodes (a fault, ring space) */
	if (n->rpark)
		work += nicd_remote_poll(n, e);
	for (i = 0; i < n->nodes; i++) {
		struct nicd_node *nd = &n->node[i];

		if (!nd->up)
			continue;
		if (nd->rescan || periodic) {
			nd->rescan = 0;
			for (j = 0; j < ELAN_MAX_CTX; j++)
				if (n->n_engines <= 1 ||
				    (i * ELAN_MAX_CTX + j) % n->n_engines == e->idx)
					work += nicd_ctx_sync(n, &nd->ctx[j]);
		} else {
			nicd_for_each_active_ctx(nd, c, m)
				work += nicd_ctx_sync(n, c);
		}
	}
	for (i = 0; i < n->nodes; i++)
		if (n->node[i].up)
			work += serve_node(n, e, &n->node[i]);
	work += publish_waiting(n);
	/* Interrupts, coalesced: one per node and vector per step. */
	if (e->nnotify) {
		atomic_thread_fence(memory_order_seq_cst);
		n->nwatch = 0;
		for (i = 0; i < e->nnotify; i++) {
			struct nicd_ctx *c = e->notify[i];

			c->notify = 0;
			if (c->nd->up && c->state != ELAN_CTX_FREE)
				nicd_check_armed(c);
			if (c->nd->up && c->state == ELAN_CTX_ACTIVE &&
			    n->nwatch < NICD_WATCH) {
				struct nicd_watch *wt = &n->watch[n->nwatch++];

				wt->node = c->nd->id;
				wt->ctx = c->idx;
				wt->gen = c->gen;
				wt->ev_tail = c->ev_tail;
				wt->recv_tail = c->recv_tail;
				wt->got_msg = c->recv_tail != c->recv_watched;
				c->recv_watched = c->recv_tail;
				wt->reply_elsewhere = c->reply_elsewhere;
			}
			c->reply_elsewhere = 0;
		}
		e->nnotify = 0;
	}
	for (i = 0; i < n->nodes; i++) {
		struct nicd_node *nd = &n->node[i];

		if (!nd->up || !nd->irq_pending)
			continue;
		for (v = 0; v < ELAN_NR_IRQS; v++) {
			if (!(nd->irq_pending & (1u << v)))
				continue;
			nd->nirqs++;
			if (n->irq)
				n->irq(n->irq_arg, i, v);
		}
		nd->irq_pending = 0;
	}
	return work;
}

/* An op waits for the reply to a message it sent to another host. */
static int send_away_waits(struct nicd *n)
{
	struct nicd_ctx *c;
	uint32_t i, m;

	for (i = 0; i < n->nodes; i++) {
		struct nicd_node *nd = &n->node[i];

		if (!nd->up)
			continue;
		nicd_for_each_active_ctx(nd, c, m) {
			if (c->has_op && c->op.rwait == NICD_FM_SEND)
				return 1;
		}
	}
	return 0;
}

/*
 * Is a consumer of what the last posting step delivered not running (it
 * has not taken it)?  Messages decide when there were any: their
 * receivers are who will post next (a reply), so while every one of them
 * has seen its messages (recv_seen: before it handles and releases them)
 * the NIC keeps polling for that reply, even if an initiator has not yet
 * taken its completion (its vCPU may be the one the NIC runs beside: it
 * may only wait for the reply); that case is NICD_REPLYING, which the
 * polling loop gives a shorter time, for a message may need no reply (an
 * MPI rendezvous FIN) and its sender may post next.  Without messages,
 * any consumer behind on its events counts: the initiator posts the next
 * command after taking the completion of the last.
 *
 * A message sent to another host is answered there, and both the owner's
 * reply and the receiver's answer come by the link, which wakes us.  So
 * while such a send waits for its reply, BEHIND (sleep after the lag:
 * the vCPUs need the CPU more than the reply needs us awake), and once
 * its sender took the completion, REPLYING (a short spin for a sender
 * that streams), not a full spin for a command that comes to the other
 * host.  Both spins kept the receiver's vCPU off the CPU across hosts
 * (nicd traces of osu_latency 8 B: 100 us spins at every other message).
 *
 * A put or atomic into another context is the same without the link:
 * its target polls memory, no ring or event of it can be watched, and it
 * may be who posts next (a one-sided ping-pong), so REPLYING too.  A full
 * spin kept the target's vCPU off the CPU until we slept (nicd traces of
 * ucx_perftest put_lat 8 B: 100 us spins after every put).
 */
int nicd_consumers_behind(struct nicd *n)
{
	uint32_t i;
	int msgs = 0, behind = 0, away = 0;

	if (send_away_waits(n))
		return NICD_BEHIND;

	for (i = 0; i < n->nwatch && i < NICD_WATCH; i++) {
		const struct nicd_watch *wt = &n->watch[i];
		struct nicd_node *nd;
		struct nicd_ctx *c;

		if (wt->node >= n->nodes || wt->ctx >= ELAN_MAX_CTX)
			continue;
		nd = &n->node[wt->node];
		c = &nd->ctx[wt->ctx];
		if (!nd->up || c->state != ELAN_CTX_ACTIVE || c->gen != wt->gen)
			continue;
		/* heads are untrusted: only compared, never used */
		if (wt->got_msg) {
			msgs = 1;
			if ((int32_t)(LOAD(&c->map.uctl->recv_seen) -
				      wt->recv_tail) < 0 &&
			    (int32_t)(LOAD(&c->map.uctl->recv_head) -
				      wt->recv_tail) < 0)
				return NICD_BEHIND;
		} else if ((int32_t)(LOAD(&c->map.uctl->ev_head) -
				     wt->ev_tail) < 0) {
			behind = 1;
		}
		away |= wt->reply_elsewhere;
	}
	if (!behind)
		return away && !msgs ? NICD_REPLYING : NICD_RUNNING;
	return msgs ? NICD_REPLYING : NICD_BEHIND;
}

uint64_t nicd_next_timeout(struct nicd *n)
{
	uint64_t now = n->now(), best = UINT64_MAX;
	struct nicd_ctx *c;
	uint32_t i, m;

	if (n->backpressure)		/* consumers ring after making room */
		return NICD_SPACE_POLL_NS;
	if (n->remote_busy)		/* a link had no room: retry soon */
		return 1000000;
	for (i = 0; i < n->nodes; i++) {
		struct nicd_node *nd = &n->node[i];

		if (!nd->up)
			continue;
		nicd_for_each_active_ctx(nd, c, m) {
			uint64_t d;

			if (!c->has_op)
				continue;
			if (c->op.w.kind == NICD_W_SPACE) {
				if (NICD_SPACE_POLL_NS < best)
					best = NICD_SPACE_POLL_NS;
				continue;
			}
			if (c->op.w.kind != NICD_W_FAULT &&
			    c->op.w.kind != NICD_W_FAULTQ)
				continue;
			d = c->op.w.deadline > now ? c->op.w.deadline - now : 0;
			if (d < best)
				best = d;
		}
	}
	return best;
}

int nicd_node_settled(struct nicd *n, uint32_t node)
{
	struct nicd_node *nd = &n->node[node];
	const struct nicd_ctx *c;
	uint32_t m;

	if (node >= n->nodes || !nd->up)
		return 0;
	nicd_for_each_active_ctx(nd, c, m) {
		/* heads are untrusted: only compared */
		if (c->has_op || LOAD(&c->map.uctl->ev_head) != c->ev_tail ||
		    LOAD(&c->map.uctl->recv_head) != c->recv_tail)
			return 0;
	}
	return 1;
}
