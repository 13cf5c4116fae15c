// SPDX-License-Identifier: GPL-2.0
/*
 * Remote node access: the only way an op touches its target (see nicd.h).
 * Each function checks that the target is still the context resolved,
 * then brackets, translates and copies.
 */
#include <string.h>
#include "nicd.h"

int nicd_rna_resolve(struct nicd *n, uint32_t dst, uint64_t cap,
		     struct nicd_target *t)
{
	uint32_t node = ELAN_ADDR_NODE(dst), ctx = ELAN_ADDR_CTX(dst);
	struct nicd_node *nd;
	struct nicd_ctx *tc;

	if (node >= n->nodes || !n->node[node].configured || ctx >= ELAN_MAX_CTX)
		return ELAN_E_NO_CONTEXT;
	nd = &n->node[node];
	if (!nd->up)
		return ELAN_E_NODE_DOWN;
	tc = &nd->ctx[ctx];
	/* It may have been attached a moment ago.  Only a FREE context is
	 * synced here: that can only take it up.  (Syncing an active one could
	 * drop or re-adopt the initiator itself in the middle of its op.) */
	if (tc->state == ELAN_CTX_FREE)
		nicd_ctx_sync(n, tc);
	if (tc->state != ELAN_CTX_ACTIVE)
		return ELAN_E_NO_CONTEXT;
	if (tc->cap != cap)
		return ELAN_E_CAPABILITY;
	t->node = node;
	t->ctx = ctx;
	t->gen = tc->gen;
	t->epoch = nd->epoch;
	t->cap = cap;
	return ELAN_OK;
}

/* The target context if it is still the one resolved. */
struct nicd_ctx *nicd_rna_target(struct nicd *n, const struct nicd_target *t,
				 int *st)
{
	struct nicd_node *nd = &n->node[t->node];
	struct nicd_ctx *tc;

	if (!nd->up || nd->epoch != t->epoch) {
		*st = ELAN_E_NODE_DOWN;
		return NULL;
	}
	tc = &nd->ctx[t->ctx];
	if (tc->state != ELAN_CTX_ACTIVE || tc->gen != t->gen ||
	    LOAD(&tc->map.ctl->state) != ELAN_CTX_ACTIVE ||
	    LOAD(&tc->map.ctl->generation) != t->gen) {
		*st = ELAN_E_TARGET_GONE;
		return NULL;
	}
	return tc;
}

int nicd_rna_rw(struct nicd *n, struct nicd_engine *e,
		const struct nicd_target *t, uint64_t va, uint64_t span,
		uint8_t *buf, uint32_t *len, int to_target, struct nicd_wait *w)
{
	struct nicd_ctx *tc;
	uint8_t *tp;
	int r;

	tc = nicd_rna_target(n, t, &r);
	if (!tc)
		return r;
	nicd_bracket_open(tc->nd, e->idx, tc->idx);
	r = nicd_xlate(n, tc->nd, tc->idx, va, span, to_target, 1, &tp, w);
	if (r == 0) {
		*len = nicd_xlate_run(tc->nd, tc->idx, va, tp, *len, to_target);
		if (e->chunk_hook)
			e->chunk_hook(n, e, t->node, to_target, e->hook_arg);
		if (to_target)
			memmove(tp, buf, *len);
		else
			memmove(buf, tp, *len);
	}
	nicd_bracket_close(tc->nd, e->idx);
	return r;
}

static uint64_t do_atomic(uint64_t *p, int aop, uint64_t operand,
			  uint64_t compare)
{
	uint64_t old;

	switch (aop) {
	case ELAN_AOP_ADD:
		return __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST);
	case ELAN_AOP_CSWAP:
		old = compare;
		__atomic_compare_exchange_n(p, &old, operand, 0,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		return old;
	case ELAN_AOP_SWAP:
		return __atomic_exchange_n(p, operand, __ATOMIC_SEQ_CST);
	case ELAN_AOP_AND:
		return __atomic_fetch_and(p, operand, __ATOMIC_SEQ_CST);
	case ELAN_AOP_OR:
		return __atomic_fetch_or(p, operand, __ATOMIC_SEQ_CST);
	default:
		return __atomic_fetch_xor(p, operand, __ATOMIC_SEQ_CST);
	}
}

/* The same on a 4-byte word: its neighbours are never touched. */
static uint32_t do_atomic32(uint32_t *p, int aop, uint32_t operand,
			    uint32_t compare)
{
	uint32_t old;

	switch (aop) {
	case ELAN_AOP_ADD:
		return __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST);
	case ELAN_AOP_CSWAP:
		old = compare;
		__atomic_compare_exchange_n(p, &old, operand, 0,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		return old;
	case ELAN_AOP_SWAP:
		return __atomic_exchange_n(p, operand, __ATOMIC_SEQ_CST);
	case ELAN_AOP_AND:
		return __atomic_fetch_and(p, operand, __ATOMIC_SEQ_CST);
	case ELAN_AOP_OR:
		return __atomic_fetch_or(p, operand, __ATOMIC_SEQ_CST);
	default:
		return __atomic_fetch_xor(p, operand, __ATOMIC_SEQ_CST);
	}
}

void nicd_atomic_store_fetched(uint8_t *p, uint32_t size, uint64_t old)
{
	if (size == 4)
		__atomic_store_n((uint32_t *)(void *)p, (uint32_t)old,
				 __ATOMIC_RELAXED);
	else
		__atomic_store_n((uint64_t *)(void *)p, old, __ATOMIC_RELAXED);
}

int nicd_rna_atomic(struct nicd *n, struct nicd_engine *e,
		    const struct nicd_target *t, uint64_t va, int aop,
		    uint32_t size, uint64_t operand, uint64_t compare,
		    uint64_t *old, struct nicd_wait *w)
{
	struct nicd_ctx *tc;
	uint8_t *tp;
	int r;

	tc = nicd_rna_target(n, t, &r);
	if (!tc)
		return r;
	nicd_bracket_open(tc->nd, e->idx, tc->idx);
	r = nicd_xlate(n, tc->nd, tc->idx, va, size, 1, 1, &tp, w);
	if (r == 0) {
		if (e->chunk_hook)
			e->chunk_hook(n, e, t->node, 1, e->hook_arg);
		/* va is aligned to size (validated) and so is tp: one page */
#ifdef NICD_BROKEN_ATOMIC32
		/* broken on purpose (tests/nic/nic_test_broken only): a
		 * 4-byte atomic done on the 8 bytes around it */
		if (size == 4) {
			*old = do_atomic((uint64_t *)(void *)(tp - (va & 4)),
					 aop, operand, compare);
			*old = (uint32_t)(*old >> (8 * (va & 4)));
		} else
#endif
		if (size == 4)
			*old = do_atomic32((uint32_t *)(void *)tp, aop,
					   (uint32_t)operand, (uint32_t)compare);
		else
			*old = do_atomic((uint64_t *)(void *)tp, aop, operand,
					 compare);
	}
	nicd_bracket_close(tc->nd, e->idx);
	return r;
}

int nicd_rna_recv(struct nicd *n, struct nicd_engine *e,
		  const struct nicd_target *t, uint32_t src, uint32_t tag,
		  const struct iovec *iov, int iovcnt, uint32_t len,
		  struct nicd_wait *w)
{
	struct elan_recv_hdr *h;
	struct nicd_ctx *tc;
	uint32_t head, used;
	uint8_t *p;
	int r, i;

	tc = nicd_rna_target(n, t, &r);
	if (!tc)
		return r;
	head = LOAD_ACQ(&tc->map.uctl->recv_head);
	used = tc->recv_tail - head;
	if (used > ELAN_RECVQ_ENTRIES) {
		nicd_ctx_fail(n, tc, ELAN_E_QUEUE, "recv_head out of range");
		return ELAN_E_TARGET_GONE;
	}
	if (used >= n->recv_slots) {
		w->kind = NICD_W_SPACE;
		tc->space_want = 1;
		return NICD_PENDING;
	}
	h = elan_recvq_slot(tc->map.recvq, tc->recv_tail);
	p = (uint8_t *)h + ELAN_RECV_HDR;
	if (e->chunk_hook)
		e->chunk_hook(n, e, t->node, 1, e->hook_arg);
	for (i = 0; i < iovcnt; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	h->src = src;
	h->tag = tag;
	h->len = len;
	memset(h->pad, 0, sizeof(h->pad));
	STORE_REL(&h->seq, elan_ring_seq(tc->recv_tail));
	tc->recv_tail++;
	nicd_notify(e, tc);
	return 0;
}

int nicd_rna_event_reserve(struct nicd *n, const struct nicd_target *t,
			   struct nicd_wait *w)
{
	struct nicd_ctx *tc;
	int r;

	tc = nicd_rna_target(n, t, &r);
	if (!tc)
		return r;
	r = nicd_ev_credit(tc);
	if (r < 0) {
		nicd_ctx_fail(n, tc, ELAN_E_QUEUE, "ev_head out of range");
		return ELAN_E_TARGET_GONE;
	}
	if (r == 0) {
		w->kind = NICD_W_SPACE;
		tc->space_want = 1;
		return NICD_PENDING;
	}
	tc->ev_reserved++;
	return 0;
}

void nicd_rna_event_release(struct nicd *n, const struct nicd_target *t)
{
	struct nicd_ctx *tc;
	int r;

	if (n->node[t->node].remote) {	/* a request to its owner */
		nicd_remote_evrel(n, t);
		return;
	}
	tc = nicd_rna_target(n, t, &r);
	if (tc && tc->ev_reserved)
		tc->ev_reserved--;
}

void nicd_rna_event_post(struct nicd *n, struct nicd_engine *e,
			 const struct nicd_target *t,
			 const struct elan_event *ev)
{
	struct nicd_ctx *tc;
	int r;

	tc = nicd_rna_target(n, t, &r);
	if (!tc)
		return;
	nicd_post_event(tc, ev);
	nicd_notify(e, tc);
}
