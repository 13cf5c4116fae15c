/* -*- Mode: C; c-basic-offset:4 ; indent-tabs-mode:nil -*- */
/*
 * Copyright (c) 2026      The Elan project.  All rights reserved.
 * $COPYRIGHT$
 *
 * $HEADER$
 */
/*
 * put and get: one NIC command each, straight from/to user memory.  No
 * registration: local_handle and remote_handle are always NULL (handle
 * size 0) and ignored; the NIC translates both addresses itself.  Cold
 * buffers need nothing either: a NIC translation fault makes the driver
 * fault in and load the next fault_around (64) pages the operation
 * covers, on both sides (driver/README.md).
 */
#include "btl_elan.h"
#include "btl_elan_frag.h"

/* A put or a get (@type): within its limit, counted, one fragment started. */
static inline int mca_btl_elan_rdma(struct mca_btl_base_module_t *btl, uint8_t type,
                                    struct mca_btl_base_endpoint_t *endpoint,
                                    void *local_address, uint64_t remote_address,
                                    struct mca_btl_base_registration_handle_t *local_handle,
                                    size_t size, mca_btl_base_rdma_completion_fn_t cbfunc,
                                    void *cbcontext, void *cbdata)
{
    mca_btl_elan_module_t *module = (mca_btl_elan_module_t *) btl;
    bool put = MCA_BTL_ELAN_FRAG_PUT == type;
    mca_btl_elan_frag_t *frag;

    if (OPAL_UNLIKELY(size > (put ? btl->btl_put_limit : btl->btl_get_limit))) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (put) {
        ++module->stats.puts;
        module->stats.put_bytes += size;
    } else {
        ++module->stats.gets;
        module->stats.get_bytes += size;
    }
    frag = mca_btl_elan_rdma_frag_alloc(module, type, endpoint, local_address, remote_address,
                                        local_handle, size, cbfunc, cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == frag)) {
        /* too many outstanding operations: the caller retries */
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    return mca_btl_elan_rdma_frag_start(module, frag);
}

int mca_btl_elan_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     size_t size, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_elan_rdma(btl, MCA_BTL_ELAN_FRAG_PUT, endpoint, local_address, remote_address,
                             local_handle, size, cbfunc, cbcontext, cbdata);
}

int mca_btl_elan_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     size_t size, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_elan_rdma(btl, MCA_BTL_ELAN_FRAG_GET, endpoint, local_address, remote_address,
                             local_handle, size, cbfunc, cbcontext, cbdata);
}
