/* -*- Mode: C; c-basic-offset:4 ; indent-tabs-mode:nil -*- */
/*
 * Copyright (c) 2026      The Elan project.  All rights reserved.
 * $COPYRIGHT$
 *
 * $HEADER$
 */
/*
 * 64-bit NIC atomics: add, and, or, xor, swap, compare-and-swap.  The NIC
 * returns the old value in the completion event; for fetching atomics it
 * is stored at local_address before the callback runs.  32-bit and
 * floating-point atomics are not offered (btl_atomic_flags says so).
 */
#include "btl_elan.h"
#include "btl_elan_frag.h"

/* The NIC's operation for MCA_BTL_ATOMIC_* @op, or -1 (not offered). */
static inline int mca_btl_elan_aop_of(mca_btl_base_atomic_op_t op)
{
    switch (op) {
    case MCA_BTL_ATOMIC_ADD:
        return ELAN_AOP_ADD;
    case MCA_BTL_ATOMIC_AND:
        return ELAN_AOP_AND;
    case MCA_BTL_ATOMIC_OR:
        return ELAN_AOP_OR;
    case MCA_BTL_ATOMIC_XOR:
        return ELAN_AOP_XOR;
    case MCA_BTL_ATOMIC_SWAP:
        return ELAN_AOP_SWAP;
    default:
        return -1;
    }
}

/* One atomic: @type FATOMIC stores the old value at @local_address, ATOMIC
 * does not; @aop is the NIC's operation (-1: not supported). */
static inline int mca_btl_elan_atomic(struct mca_btl_base_module_t *btl, int type, int aop,
                                      struct mca_btl_base_endpoint_t *endpoint,
                                      void *local_address, uint64_t remote_address,
                                      struct mca_btl_base_registration_handle_t *local_handle,
                                      uint64_t operand, uint64_t compare, int flags,
                                      mca_btl_base_rdma_completion_fn_t cbfunc,
                                      void *cbcontext, void *cbdata)
{
    mca_btl_elan_module_t *module = (mca_btl_elan_module_t *) btl;
    mca_btl_elan_frag_t *frag;

    if (OPAL_UNLIKELY(aop < 0 ||
                      (flags & (MCA_BTL_ATOMIC_FLAG_32BIT | MCA_BTL_ATOMIC_FLAG_FLOAT)))) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    /* the NIC's atomics are on aligned 64-bit words: "not supported" lets
     * osc rdma fall back to get-op-put under its accumulate lock (a
     * BAD_PARAM there ends the operation, or retries it for ever) */
    if (OPAL_UNLIKELY(remote_address & 7)) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    frag = mca_btl_elan_rdma_frag_alloc(module, type, endpoint, local_address, remote_address,
                                        local_handle, 8, cbfunc, cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    frag->aop = (uint8_t) aop;
    frag->operand = operand;
    frag->compare = compare;
    ++module->stats.atomics;
    return mca_btl_elan_rdma_frag_start(module, frag);
}

int mca_btl_elan_aop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     uint64_t remote_address, struct mca_btl_base_registration_handle_t *remote_handle,
                     mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_elan_atomic(btl, MCA_BTL_ELAN_FRAG_ATOMIC, mca_btl_elan_aop_of(op), endpoint,
                               NULL, remote_address, NULL, operand, 0, flags, cbfunc, cbcontext,
                               cbdata);
}

int mca_btl_elan_afop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      void *local_address, uint64_t remote_address,
                      struct mca_btl_base_registration_handle_t *local_handle,
                      struct mca_btl_base_registration_handle_t *remote_handle,
                      mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                      mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_elan_atomic(btl, MCA_BTL_ELAN_FRAG_FATOMIC, mca_btl_elan_aop_of(op), endpoint,
                               local_address, remote_address, local_handle, operand, 0, flags,
                               cbfunc, cbcontext, cbdata);
}

int mca_btl_elan_acswap(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                        void *local_address, uint64_t remote_address,
                        struct mca_btl_base_registration_handle_t *local_handle,
                        struct mca_btl_base_registration_handle_t *remote_handle,
                        uint64_t compare, uint64_t value, int flags, int order,
                        mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_elan_atomic(btl, MCA_BTL_ELAN_FRAG_FATOMIC, ELAN_AOP_CSWAP, endpoint,
                               local_address, remote_address, local_handle, value, compare, flags,
                               cbfunc, cbcontext, cbdata);
}
