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

static inline int mca_btl_elan_aop_map(mca_btl_base_atomic_op_t op, uint8_t *aop)
{
    switch (op) {
    case MCA_BTL_ATOMIC_ADD:
        *aop = ELAN_AOP_ADD;
        return OPAL_SUCCESS;
    case MCA_BTL_ATOMIC_AND:
        *aop = ELAN_AOP_AND;
        return OPAL_SUCCESS;
    case MCA_BTL_ATOMIC_OR:
        *aop = ELAN_AOP_OR;
        return OPAL_SUCCESS;
    case MCA_BTL_ATOMIC_XOR:
        *aop = ELAN_AOP_XOR;
        return OPAL_SUCCESS;
    case MCA_BTL_ATOMIC_SWAP:
        *aop = ELAN_AOP_SWAP;
        return OPAL_SUCCESS;
    default:
        return OPAL_ERR_NOT_SUPPORTED;
    }
}

static inline int mca_btl_elan_atomic(mca_btl_elan_module_t *module, int type, uint8_t aop,
                                      struct mca_btl_base_endpoint_t *endpoint,
                                      void *local_address, uint64_t remote_address,
                                      struct mca_btl_base_registration_handle_t *local_handle,
                                      uint64_t operand, uint64_t compare, int flags,
                                      mca_btl_base_rdma_completion_fn_t cbfunc,
                                      void *cbcontext, void *cbdata)
{
    mca_btl_elan_frag_t *frag;

    if (OPAL_UNLIKELY(flags & (MCA_BTL_ATOMIC_FLAG_32BIT | MCA_BTL_ATOMIC_FLAG_FLOAT))) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (OPAL_UNLIKELY(remote_address & 7)) {
        return OPAL_ERR_BAD_PARAM;
    }
    frag = mca_btl_elan_rdma_frag_alloc(module, type, endpoint, local_address, remote_address,
                                        local_handle, 8, cbfunc, cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    frag->aop = aop;
    frag->operand = operand;
    frag->compare = compare;
    ++module->stats.atomics;
    return mca_btl_elan_rdma_frag_start(module, frag);
}

/* An atomic of MCA_BTL_ATOMIC_*: fetching (@type FATOMIC, the old value to
 * @local_address) or not (ATOMIC). */
static inline int mca_btl_elan_atomic_op(struct mca_btl_base_module_t *btl, int type,
                                         struct mca_btl_base_endpoint_t *endpoint,
                                         void *local_address, uint64_t remote_address,
                                         struct mca_btl_base_registration_handle_t *local_handle,
                                         mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                                         mca_btl_base_rdma_completion_fn_t cbfunc,
                                         void *cbcontext, void *cbdata)
{
    uint8_t aop;
    int rc = mca_btl_elan_aop_map(op, &aop);

    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        return rc;
    }
    return mca_btl_elan_atomic((mca_btl_elan_module_t *) btl, type, aop, endpoint, local_address,
                               remote_address, local_handle, operand, 0, flags, cbfunc,
                               cbcontext, cbdata);
}

int mca_btl_elan_aop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     uint64_t remote_address, struct mca_btl_base_registration_handle_t *remote_handle,
                     mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_elan_atomic_op(btl, MCA_BTL_ELAN_FRAG_ATOMIC, endpoint, NULL, remote_address,
                                  NULL, op, operand, flags, cbfunc, cbcontext, cbdata);
}

int mca_btl_elan_afop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      void *local_address, uint64_t remote_address,
                      struct mca_btl_base_registration_handle_t *local_handle,
                      struct mca_btl_base_registration_handle_t *remote_handle,
                      mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                      mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_elan_atomic_op(btl, MCA_BTL_ELAN_FRAG_FATOMIC, endpoint, local_address,
                                  remote_address, local_handle, op, operand, flags, cbfunc,
                                  cbcontext, cbdata);
}

int mca_btl_elan_acswap(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                        void *local_address, uint64_t remote_address,
                        struct mca_btl_base_registration_handle_t *local_handle,
                        struct mca_btl_base_registration_handle_t *remote_handle,
                        uint64_t compare, uint64_t value, int flags, int order,
                        mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_elan_atomic((mca_btl_elan_module_t *) btl, MCA_BTL_ELAN_FRAG_FATOMIC,
                               ELAN_AOP_CSWAP, endpoint, local_address, remote_address,
                               local_handle, value, compare, flags, cbfunc, cbcontext, cbdata);
}
