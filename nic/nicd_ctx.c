// SPDX-License-Identifier: GPL-2.0
/*
 * Contexts as the NIC sees them: following the driver's ctl (taking a
 * generation up, dropping, failing), event credits and posting, the
 * notify list and the armed interrupt.
 */
#include <stdatomic.h>
#include <string.h>
#include "nicd.h"

uint32_t nicd_ctx_addr(const struct nicd_ctx *c)
{
	return ELAN_ADDR(c->nd->id, c->idx);
}

void nicd_notify(struct nicd_engine *e, struct nicd_ctx *c)
{
	if (c->notify)
		return;
	c->notify = 1;
	e->notify[e->nnotify++] = c;
}

/* Raise the event interrupt if the driver armed the context. */
void nicd_check_armed(struct nicd_ctx *c)
{
	if (LOAD(&c->map.ctl->armed) &&
	    __atomic_exchange_n(&c->map.ctl->armed, 0, __ATOMIC_ACQ_REL))
		c->nd->irq_pending |= 1u << ELAN_IRQ_EVENT;
}

/*
 * Event credits.  The consumer's ev_head is untrusted: it must lie within
 * ELAN_EVQ_ENTRIES behind ev_tail.  1: a credit is free, 0: full,
 * -1: ev_head is corrupt.
 */
int nicd_ev_credit(struct nicd_ctx *c)
{
	uint32_t h = LOAD_ACQ(&c->map.uctl->ev_head);
	uint32_t used = c->ev_tail - h;

	if (used > ELAN_EVQ_ENTRIES)
		return -1;
	return ELAN_EVQ_ENTRIES - used > c->ev_reserved;
}

/* Write an event into c's ring; the caller holds a credit. */
void nicd_post_event(struct nicd_ctx *c, const struct elan_event *ev)
{
	struct elan_event *s = elan_evq_slot(c->map.evq, c->ev_tail);

	if (c->ev_reserved)
		c->ev_reserved--;
	s->cookie = ev->cookie;
	s->value = ev->value;
	s->len = ev->len;
	s->src = ev->src;
	s->type = ev->type;
	s->status = ev->status;
	s->op = ev->op;
	s->pad = 0;
	STORE_REL(&s->seq, elan_ring_seq(c->ev_tail));
	c->ev_tail++;
}

static void op_release(struct nicd *n, struct nicd_ctx *c)
{
	if (c->has_op && c->op.tev_reserved)
		nicd_rna_event_release(n, &c->op.t);
	c->op.tev_reserved = 0;
	c->has_op = 0;
}

/*
 * The context stops: its op is dropped without an event (its owner is gone,
 * or it corrupted its own queue), and the NIC says so in ctl and status.
 */
void nicd_ctx_drop(struct nicd *n, struct nicd_ctx *c, uint32_t state,
		   uint32_t error)
{
	struct nicd_node *nd = c->nd;

	op_release(n, c);
	c->blocked = 0;
	nd->active_mask &= ~(1u << c->idx);
	if (c->state == ELAN_CTX_FREE && state == ELAN_CTX_FREE)
		return;
	c->state = state;
	if (!nd->up)
		return;
	STORE(&c->map.status->error, error);
	STORE_REL(&c->map.status->state, state);
	STORE(&c->map.ctl->nic_error, error);
	STORE_REL(&c->map.ctl->nic_state, state);
	if (state == ELAN_CTX_FAILED) {
		atomic_thread_fence(memory_order_seq_cst);
		nicd_check_armed(c);
	}
}

void nicd_ctx_fail(struct nicd *n, struct nicd_ctx *c, uint32_t err,
		   const char *why)
{
	struct elan_event ev = { 0 };

	nicd_node_logf(n, c->nd, NICD_LOG_WARN,
		       "node %u ctx %u: context failed (%s): %s", c->nd->id,
		       c->idx, nicd_status_name((int)err), why);
	/* An ERROR event if the ring has room by the NIC's own count. */
	if (nicd_ev_credit(c) > 0) {
		ev.type = ELAN_EV_ERROR;
		ev.status = (uint8_t)err;
		ev.src = nicd_ctx_addr(c);
		nicd_post_event(c, &ev);
	}
	nicd_ctx_drop(n, c, ELAN_CTX_FAILED, err);
}

static void ctx_adopt(struct nicd *n, struct nicd_ctx *c, uint32_t gen)
{
	struct nicd_node *nd = c->nd;

	op_release(n, c);
	c->gen = gen;
	c->cap = LOAD(&c->map.ctl->capability);
	c->cmd_tail = c->ev_tail = c->recv_tail = c->recv_watched = 0;
	c->ev_reserved = 0;
	c->blocked = 0;
	c->space_want = 0;
	c->waiting_pub = 0;
	c->stalled_pub = 0;
	c->state = ELAN_CTX_ACTIVE;
	STORE(&c->map.status->nic_waiting, 0u);
	STORE(&c->map.status->nic_stalled, 0u);
	STORE(&c->map.status->node, nd->id);
	STORE(&c->map.status->ctx, c->idx);
	STORE(&c->map.status->cmd_tail, 0u);
	STORE(&c->map.status->error, 0u);
	STORE(&c->map.status->nic_sleeping, n->sleeping);
	STORE_REL(&c->map.status->state, (uint32_t)ELAN_CTX_ACTIVE);
	STORE(&c->map.ctl->nic_error, 0u);
	STORE(&c->map.ctl->nic_generation, gen);
	STORE_REL(&c->map.ctl->nic_state, (uint32_t)ELAN_CTX_ACTIVE);
	nd->active_mask |= 1u << c->idx;
	nicd_logf(n, NICD_LOG_DEBUG, "node %u ctx %u: active, generation %u",
		  nd->id, c->idx, gen);
}

/* Follow the driver's ctl.state and generation.  Returns 1 if changed. */
int nicd_ctx_sync(struct nicd *n, struct nicd_ctx *c)
{
	struct nicd_node *nd = c->nd;
	uint32_t st = LOAD_ACQ(&c->map.ctl->state);
	uint32_t gen = LOAD_ACQ(&c->map.ctl->generation);
	int r;

	if (st == ELAN_CTX_ACTIVE) {
		if (c->state != ELAN_CTX_FREE && gen == c->gen)
			return 0;
		if (!nd->ram) {
			r = nicd_node_map_ram(n, nd->id);
			if (r < 0) {
				nicd_node_logf(n, nd, NICD_LOG_ERR,
					       "node %u: cannot map guest RAM %s: %s",
					       nd->id, nd->ram_path ? nd->ram_path : "(none)",
					       strerror(-r));
				return 0;
			}
		}
		ctx_adopt(n, c, gen);
		if (nicd_mmu_take(n, c) < 0)
			nicd_ctx_fail(n, c, ELAN_E_QUEUE, "no usable NIC MMU");
		return 1;
	}
	if (c->state != ELAN_CTX_FREE) {
		nicd_ctx_drop(n, c, ELAN_CTX_FREE, 0);
		return 1;
	}
	return 0;
}
