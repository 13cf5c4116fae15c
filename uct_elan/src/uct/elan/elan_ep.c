/**
 * Copyright (C) The Elan IOPROC project. 2026.  ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "elan_ep.h"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>


static UCS_CLASS_INIT_FUNC(uct_elan_ep_t, const uct_ep_params_t *params)
{
    uct_elan_iface_t *iface = ucs_derived_of(params->iface, uct_elan_iface_t);
    const uct_elan_iface_addr_t *addr;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    addr              = (const uct_elan_iface_addr_t*)params->iface_addr;
    self->dst         = addr->addr;
    self->outstanding = 0;
    self->failed      = 0;
    self->in_pending  = 0;
    ucs_arbiter_group_init(&self->arb_group);
    ucs_debug("elan ep %p: 0x%x -> node %u context %u", self, iface->addr,
              ELAN_ADDR_NODE(self->dst), ELAN_ADDR_CTX(self->dst));
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_elan_ep_t)
{
    uct_elan_iface_t *iface = ucs_derived_of(self->super.super.iface,
                                             uct_elan_iface_t);

    uct_elan_ep_pending_purge(&self->super.super, NULL, NULL);
    ucs_arbiter_group_cleanup(&self->arb_group);
    uct_elan_iface_ep_forget(iface, self);
}

UCS_CLASS_DEFINE(uct_elan_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_elan_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_elan_ep_t, uct_ep_t);


#define UCT_ELAN_EP_IFACE(_ep) \
    ucs_derived_of((_ep)->super.super.iface, uct_elan_iface_t)


/* An op descriptor, when the interface has room for a command */
#define UCT_ELAN_IFACE_OP_GET(_iface, _op) \
    do { \
        if (ucs_unlikely(!uct_elan_iface_has_tx_resources(_iface))) { \
            if ((_iface)->failed) { \
                return UCS_ERR_IO_ERROR; \
            } \
            return UCS_ERR_NO_RESOURCE; \
        } \
        (_op) = uct_elan_iface_op_get(_iface); \
        if (ucs_unlikely((_op) == NULL)) { \
            return UCS_ERR_NO_MEMORY; \
        } \
    } while (0)

/* Does a new op of the ep wait behind its pending requests (it must not
 * overtake them), unless one of them, at their head, is the caller */
#ifdef UCT_ELAN_BROKEN_ORDER
/* broken on purpose (PREFIX/lib-broken-order, for the tests only): a new
 * op goes as soon as there is room, ahead of the ep's pending requests */
#define UCT_ELAN_EP_OPS_WAIT(_ep, _iface) 0
#else
#define UCT_ELAN_EP_OPS_WAIT(_ep, _iface) \
    (!ucs_arbiter_group_is_empty(&(_ep)->arb_group) && !(_ep)->in_pending && \
     !(_iface)->failed)
#endif

/* The same for an operation of the ep: not while its pending requests
 * wait */
#define UCT_ELAN_EP_OP_GET(_ep, _iface, _op) \
    do { \
        if (ucs_unlikely(UCT_ELAN_EP_OPS_WAIT(_ep, _iface))) { \
            return UCS_ERR_NO_RESOURCE; \
        } \
        UCT_ELAN_IFACE_OP_GET(_iface, _op); \
    } while (0)


static UCS_F_ALWAYS_INLINE void
uct_elan_ep_op_init(uct_elan_op_t *op, uct_elan_ep_t *ep, uint8_t type,
                    uint8_t elan_op, uct_completion_t *comp)
{
    op->ep      = ep;
    op->type    = type;
    op->elan_op = elan_op;
    op->comp    = comp;
}

/* ret: what libelan's post returned; the op is tracked or given back */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_elan_ep_op_posted(uct_elan_ep_t *ep, uct_elan_op_t *op, int ret)
{
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);

    if (ucs_unlikely(ret != 0)) {
        ucs_mpool_put_inline(op);
        return uct_elan_post_status(iface, ret);
    }

    ++ep->outstanding;
    uct_elan_iface_op_posted(iface, op);
    return UCS_OK;
}


ucs_status_t uct_elan_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                   unsigned length, uint64_t remote_addr,
                                   uct_rkey_t rkey)
{
    uct_elan_ep_t *ep       = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);
    uct_elan_op_t *op;
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, iface->config.seg_size, "put_short");
    UCT_ELAN_EP_OP_GET(ep, iface, op);
    uct_elan_ep_op_init(op, ep, UCT_ELAN_OP_PLAIN, ELAN_OP_PUT, NULL);
    memcpy(uct_elan_op_data(op), buffer, length);
    status = uct_elan_ep_op_posted(ep, op,
                                   elan_put(iface->ctx, ep->dst,
                                            uct_elan_op_data(op), remote_addr,
                                            length, (uintptr_t)op, 0));
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, PUT, SHORT, length);
    return status;
}

ssize_t uct_elan_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                              void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_elan_ep_t *ep       = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);
    uct_elan_op_t *op;
    ucs_status_t status;
    size_t length;

    UCT_ELAN_EP_OP_GET(ep, iface, op);
    uct_elan_ep_op_init(op, ep, UCT_ELAN_OP_PLAIN, ELAN_OP_PUT, NULL);
    length = pack_cb(uct_elan_op_data(op), arg);
    ucs_assertv(length <= iface->config.seg_size, "length=%zu", length);
    status = uct_elan_ep_op_posted(ep, op,
                                   elan_put(iface->ctx, ep->dst,
                                            uct_elan_op_data(op), remote_addr,
                                            length, (uintptr_t)op, 0));
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, PUT, BCOPY, length);
    return length;
}

/* put and get zcopy: straight from or to the user's buffer, the NIC
 * follows its page tables; they differ in the op and its stats counter */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_elan_ep_zcopy(uct_ep_h tl_ep, uint8_t elan_op, const uct_iov_t *iov,
                  size_t iovcnt, uint64_t remote_addr, uct_completion_t *comp,
                  const char *name)
{
    uct_elan_ep_t *ep       = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);
    size_t length           = uct_iov_total_length(iov, iovcnt);
    uct_elan_op_t *op;
    ucs_status_t status;
    int ret;

    UCT_CHECK_IOV_SIZE(iovcnt, 1ul, name);
    UCT_CHECK_LENGTH(length, 0, UCT_ELAN_MAX_ZCOPY, name);
    UCT_SKIP_ZERO_LENGTH(length);
    UCT_ELAN_EP_OP_GET(ep, iface, op);
    uct_elan_ep_op_init(op, ep, UCT_ELAN_OP_PLAIN, elan_op, comp);
    if (elan_op == ELAN_OP_PUT) {
        ret = elan_put(iface->ctx, ep->dst, iov[0].buffer, remote_addr,
                       length, (uintptr_t)op, 0);
    } else {
        ret = elan_get(iface->ctx, ep->dst, iov[0].buffer, remote_addr,
                       length, (uintptr_t)op, 0);
    }

    status = uct_elan_ep_op_posted(ep, op, ret);
    if (status != UCS_OK) {
        return status;
    }

    if (elan_op == ELAN_OP_PUT) {
        UCT_TL_EP_STAT_OP(&ep->super, PUT, ZCOPY, length);
    } else {
        UCT_TL_EP_STAT_OP(&ep->super, GET, ZCOPY, length);
    }
    return UCS_INPROGRESS;
}

ucs_status_t uct_elan_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_elan_ep_zcopy(tl_ep, ELAN_OP_PUT, iov, iovcnt, remote_addr,
                             comp, "put_zcopy");
}

ucs_status_t uct_elan_ep_get_bcopy(uct_ep_h tl_ep,
                                   uct_unpack_callback_t unpack_cb, void *arg,
                                   size_t length, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_elan_ep_t *ep       = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);
    uct_elan_op_t *op;
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, iface->config.seg_size, "get_bcopy");
    UCT_ELAN_EP_OP_GET(ep, iface, op);
    uct_elan_ep_op_init(op, ep, UCT_ELAN_OP_GET_BCOPY, ELAN_OP_GET, comp);
    op->unpack_cb  = unpack_cb;
    op->unpack_arg = arg;
    op->length     = length;
    status = uct_elan_ep_op_posted(ep, op,
                                   elan_get(iface->ctx, ep->dst,
                                            uct_elan_op_data(op), remote_addr,
                                            length, (uintptr_t)op, 0));
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
    return UCS_INPROGRESS;
}

ucs_status_t uct_elan_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_elan_ep_zcopy(tl_ep, ELAN_OP_GET, iov, iovcnt, remote_addr,
                             comp, "get_zcopy");
}

/* Active messages: a NIC send into the peer's receive ring, the AM id in
 * the message's tag; the ring holds the sender back when it is full */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_elan_ep_am_send(uct_elan_ep_t *ep, uct_elan_op_t *op, uint8_t id,
                    size_t length, const char *title)
{
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);

    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id,
                       uct_elan_op_data(op), length, "TX: AM_%s", title);
    return uct_elan_ep_op_posted(ep, op,
                                 elan_send(iface->ctx, ep->dst, id,
                                           uct_elan_op_data(op), length,
                                           (uintptr_t)op, 0));
}

ucs_status_t uct_elan_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                  const void *payload, unsigned length)
{
    uct_elan_ep_t *ep       = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);
    uct_elan_op_t *op;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(length + sizeof(header), 0, ELAN_SEND_MAX, "am_short");
    UCT_ELAN_EP_OP_GET(ep, iface, op);
    uct_elan_ep_op_init(op, ep, UCT_ELAN_OP_PLAIN, ELAN_OP_SEND, NULL);
    uct_am_short_fill_data(uct_elan_op_data(op), header, payload, length);
    status = uct_elan_ep_am_send(ep, op, id, length + sizeof(header), "SHORT");
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, AM, SHORT,
                                 length + sizeof(header));
    return status;
}

ssize_t uct_elan_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                             uct_pack_callback_t pack_cb, void *arg,
                             unsigned flags)
{
    uct_elan_ep_t *ep       = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);
    uct_elan_op_t *op;
    ucs_status_t status;
    size_t length;

    UCT_CHECK_AM_ID(id);
    UCT_ELAN_EP_OP_GET(ep, iface, op);
    uct_elan_ep_op_init(op, ep, UCT_ELAN_OP_PLAIN, ELAN_OP_SEND, NULL);
    length = pack_cb(uct_elan_op_data(op), arg);
    ucs_assertv(length <= ELAN_SEND_MAX, "length=%zu", length);
    status = uct_elan_ep_am_send(ep, op, id, length, "BCOPY");
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    return length;
}

/* Atomics: device atomics of the NIC, 64- and 32-bit.  A fetched value
 * comes back in the completion event, which stores it in *result. */
static UCS_F_ALWAYS_INLINE enum elan_atomic_op
uct_elan_atomic_op(unsigned opcode)
{
    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:
        return ELAN_AOP_ADD;
    case UCT_ATOMIC_OP_AND:
        return ELAN_AOP_AND;
    case UCT_ATOMIC_OP_OR:
        return ELAN_AOP_OR;
    case UCT_ATOMIC_OP_XOR:
        return ELAN_AOP_XOR;
    case UCT_ATOMIC_OP_SWAP:
        return ELAN_AOP_SWAP;
    default:
        return ELAN_AOP_CSWAP;
    }
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_elan_ep_atomic(uct_ep_h tl_ep, int size, enum elan_atomic_op aop,
                   uint64_t value, uint64_t compare, void *result,
                   uint64_t remote_addr, uct_completion_t *comp)
{
    uct_elan_ep_t *ep       = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);
    uct_elan_op_t *op;
    ucs_status_t status;
    uint8_t type;
    int ret;

    if (result == NULL) {
        type = UCT_ELAN_OP_PLAIN;
    } else {
        type = (size == 4) ? UCT_ELAN_OP_FETCH32 : UCT_ELAN_OP_FETCH64;
    }

    UCT_ELAN_EP_OP_GET(ep, iface, op);
    uct_elan_ep_op_init(op, ep, type, ELAN_OP_ATOMIC, comp);
    op->result = result;
    if (size == 4) {
        ret = elan_atomic32(iface->ctx, ep->dst, remote_addr, aop,
                            (uint32_t)value, (uint32_t)compare, NULL,
                            (uintptr_t)op, 0);
    } else {
        ret = elan_atomic(iface->ctx, ep->dst, remote_addr, aop, value,
                          compare, NULL, (uintptr_t)op, 0);
    }

    status = uct_elan_ep_op_posted(ep, op, ret);
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_ATOMIC(&ep->super);
    return (result == NULL) ? UCS_OK : UCS_INPROGRESS;
}

ucs_status_t uct_elan_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                       uint64_t value, uint64_t remote_addr,
                                       uct_rkey_t rkey)
{
    return uct_elan_ep_atomic(tl_ep, 8, uct_elan_atomic_op(opcode), value, 0,
                              NULL, remote_addr, NULL);
}

ucs_status_t uct_elan_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                       uint32_t value, uint64_t remote_addr,
                                       uct_rkey_t rkey)
{
    return uct_elan_ep_atomic(tl_ep, 4, uct_elan_atomic_op(opcode), value, 0,
                              NULL, remote_addr, NULL);
}

ucs_status_t uct_elan_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                        uint64_t value, uint64_t *result,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    return uct_elan_ep_atomic(tl_ep, 8, uct_elan_atomic_op(opcode), value, 0,
                              result, remote_addr, comp);
}

ucs_status_t uct_elan_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                        uint32_t value, uint32_t *result,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    return uct_elan_ep_atomic(tl_ep, 4, uct_elan_atomic_op(opcode), value, 0,
                              result, remote_addr, comp);
}

ucs_status_t uct_elan_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                        uint64_t swap, uint64_t remote_addr,
                                        uct_rkey_t rkey, uint64_t *result,
                                        uct_completion_t *comp)
{
    return uct_elan_ep_atomic(tl_ep, 8, ELAN_AOP_CSWAP, swap, compare, result,
                              remote_addr, comp);
}

ucs_status_t uct_elan_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                        uint32_t swap, uint64_t remote_addr,
                                        uct_rkey_t rkey, uint32_t *result,
                                        uct_completion_t *comp)
{
    return uct_elan_ep_atomic(tl_ep, 4, ELAN_AOP_CSWAP, swap, compare, result,
                              remote_addr, comp);
}

/*
 * Flush: every op of this ep completes in one event; with a completion,
 * a NIC fence (which completes after every command posted before it)
 * carries it.
 */
ucs_status_t uct_elan_ep_flush(uct_ep_h tl_ep, unsigned flags,
                               uct_completion_t *comp)
{
    uct_elan_ep_t *ep       = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);
    uct_elan_op_t *op;
    ucs_status_t status;

    /* behind the pending requests, unless this flush is the one at their
     * head, run from the pending queue: what came before it is posted */
    if (!ucs_arbiter_group_is_empty(&ep->arb_group) && !ep->in_pending) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
        return UCS_ERR_NO_RESOURCE;
    }

    if (ep->outstanding == 0) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        return UCS_OK;
    }

    if (comp != NULL) {
        UCT_ELAN_IFACE_OP_GET(iface, op);
        uct_elan_ep_op_init(op, ep, UCT_ELAN_OP_PLAIN, ELAN_OP_FENCE, comp);
        status = uct_elan_ep_op_posted(ep, op,
                                       elan_fence(iface->ctx, (uintptr_t)op,
                                                  0));
        if (status != UCS_OK) {
            return status;
        }
    }

    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    return UCS_INPROGRESS;
}

/*
 * Fence: the NIC starts a context's commands in the order they were posted
 * and runs them one at a time, so what follows is done after what came
 * before; a NIC fence is posted when ops are in flight, so that the order
 * holds by the NIC's contract (a fence completes after every command
 * before it) and not only by how it runs today.
 */
ucs_status_t uct_elan_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_elan_ep_t *ep       = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);
    uct_elan_op_t *op;
    ucs_status_t status;

    if (ep->outstanding == 0) {
        UCT_TL_EP_STAT_FENCE(&ep->super);
        return UCS_OK;
    }

    UCT_ELAN_IFACE_OP_GET(iface, op);
    uct_elan_ep_op_init(op, ep, UCT_ELAN_OP_PLAIN, ELAN_OP_FENCE, NULL);
    status = uct_elan_ep_op_posted(ep, op,
                                   elan_fence(iface->ctx, (uintptr_t)op, 0));
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_FENCE(&ep->super);
    }
    return status;
}

/*
 * Is the peer there: an empty put to it, which the NIC resolves (node up,
 * context attached, same job) without touching memory; a failure goes to
 * the interface's error handler.
 */
ucs_status_t uct_elan_ep_check(uct_ep_h tl_ep, unsigned flags,
                               uct_completion_t *comp)
{
    uct_elan_ep_t *ep       = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);
    uct_elan_op_t *op;

    UCT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
    UCT_ELAN_IFACE_OP_GET(iface, op);
    uct_elan_ep_op_init(op, ep, UCT_ELAN_OP_CHECK, ELAN_OP_PUT, NULL);
    return uct_elan_ep_op_posted(ep, op,
                                 elan_put(iface->ctx, ep->dst, NULL, 0, 0,
                                          (uintptr_t)op, 0));
}

ucs_status_t uct_elan_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                     unsigned flags)
{
    uct_elan_ep_t *ep       = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);

    /* there is room (a completion was taken since the op was refused):
     * try the op now */
    if (uct_elan_iface_has_tx_resources(iface) &&
        ucs_arbiter_group_is_empty(&ep->arb_group)) {
        return UCS_ERR_BUSY;
    }

    UCS_STATIC_ASSERT(sizeof(uct_pending_req_priv_arb_t) <=
                      UCT_PENDING_REQ_PRIV_LEN);
    uct_pending_req_arb_group_push(&ep->arb_group, req);
    ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
    UCT_TL_EP_STAT_PEND(&ep->super);
    return UCS_OK;
}

ucs_arbiter_cb_result_t uct_elan_ep_process_pending(ucs_arbiter_t *arbiter,
                                                    ucs_arbiter_group_t *group,
                                                    ucs_arbiter_elem_t *elem,
                                                    void *arg)
{
    uct_elan_ep_t *ep       = ucs_container_of(group, uct_elan_ep_t,
                                               arb_group);
    uct_elan_iface_t *iface = UCT_ELAN_EP_IFACE(ep);
    uct_pending_req_t *req  = ucs_container_of(elem, uct_pending_req_t, priv);
    ucs_status_t status;

    if (!uct_elan_iface_has_tx_resources(iface)) {
        return UCS_ARBITER_CB_RESULT_STOP;
    }

    ep->in_pending = 1;
    status         = req->func(req);
    ep->in_pending = 0;
    ucs_trace_data("elan ep %p: pending request %p: %s", ep, req,
                   ucs_status_string(status));
    if (status == UCS_OK) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if (status == UCS_INPROGRESS) {
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    } else if (!uct_elan_iface_has_tx_resources(iface)) {
        return UCS_ARBITER_CB_RESULT_STOP;
    }

    /* not for want of room: try again after this dispatch (a
     * descheduled group would never run again) */
    return UCS_ARBITER_CB_RESULT_RESCHED_GROUP;
}

static ucs_arbiter_cb_result_t
uct_elan_ep_purge_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                     ucs_arbiter_elem_t *elem, void *arg)
{
    uct_elan_ep_t *ep            = ucs_container_of(group, uct_elan_ep_t,
                                                    arb_group);
    uct_purge_cb_args_t *cb_args = arg;
    uct_pending_req_t *req       = ucs_container_of(elem, uct_pending_req_t,
                                                    priv);

    if ((cb_args != NULL) && (cb_args->cb != NULL)) {
        cb_args->cb(req, cb_args->arg);
    } else {
        ucs_debug("elan ep %p: cancelling pending request %p", ep, req);
    }

    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

void uct_elan_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                               void *arg)
{
    uct_elan_ep_t *ep         = ucs_derived_of(tl_ep, uct_elan_ep_t);
    uct_elan_iface_t *iface   = UCT_ELAN_EP_IFACE(ep);
    uct_purge_cb_args_t args  = {cb, arg};

    ucs_arbiter_group_purge(&iface->arbiter, &ep->arb_group,
                            uct_elan_ep_purge_cb, &args);
}
