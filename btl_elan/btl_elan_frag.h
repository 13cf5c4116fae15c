/* -*- Mode: C; c-basic-offset:4 ; indent-tabs-mode:nil -*- */
/*
 * Copyright (c) 2026      The Elan project.  All rights reserved.
 * $COPYRIGHT$
 *
 * $HEADER$
 */
#ifndef MCA_BTL_ELAN_FRAG_H
#define MCA_BTL_ELAN_FRAG_H

#include "btl_elan.h"
#include "btl_elan_endpoint.h"

BEGIN_C_DECLS

enum mca_btl_elan_frag_type_t {
    MCA_BTL_ELAN_FRAG_SEND = 0,     /**< elan_send of data[] (send and sendi) */
    MCA_BTL_ELAN_FRAG_PUT,
    MCA_BTL_ELAN_FRAG_GET,
    MCA_BTL_ELAN_FRAG_ATOMIC,       /**< atomic without fetch */
    MCA_BTL_ELAN_FRAG_FATOMIC,      /**< atomic whose old value goes to local_address */
};

/**
 * One NIC command and what to do when its DONE event comes back; the
 * fragment's address is the command's cookie.
 */
struct mca_btl_elan_frag_t {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segments[1];
    mca_btl_base_endpoint_t *endpoint;
    opal_free_list_t *my_list;
    uint8_t type;                 /**< enum mca_btl_elan_frag_type_t */
    mca_btl_base_tag_t tag;       /**< send: the BTL tag (goes in the elan tag) */
    uint8_t aop;                  /**< atomics: enum elan_atomic_op */
    bool pending;                 /**< on the module's pending list */

    /* put/get/atomics */
    void *local_address;
    uint64_t remote_address;
    uint64_t size;
    uint64_t operand;
    uint64_t compare;
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext;
    void *cbdata;

    /** send: the message buffer (max_send_size bytes follow the fragment) */
    unsigned char *data;
};
typedef struct mca_btl_elan_frag_t mca_btl_elan_frag_t;

OBJ_CLASS_DECLARATION(mca_btl_elan_frag_t);

static inline mca_btl_elan_frag_t *mca_btl_elan_frag_alloc(opal_free_list_t *list)
{
    mca_btl_elan_frag_t *frag = (mca_btl_elan_frag_t *) opal_free_list_get(list);

    if (OPAL_LIKELY(NULL != frag)) {
        frag->my_list = list;
        frag->pending = false;
        frag->base.des_flags = 0;
        frag->base.des_cbfunc = NULL;
        frag->base.des_cbdata = NULL;
        frag->base.des_context = NULL;
        frag->base.des_segment_count = 1;
        frag->base.order = MCA_BTL_NO_ORDER;
    }
    return frag;
}

static inline void mca_btl_elan_frag_return(mca_btl_elan_frag_t *frag)
{
    opal_free_list_return(frag->my_list, (opal_free_list_item_t *) frag);
}

/**
 * A put, get or atomic fragment with the fields they all have; NULL when
 * too many operations are outstanding (the caller returns
 * OPAL_ERR_OUT_OF_RESOURCE and the PML or OSC retries).
 */
static inline mca_btl_elan_frag_t *
mca_btl_elan_rdma_frag_alloc(mca_btl_elan_module_t *module, uint8_t type,
                             struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                             uint64_t remote_address,
                             struct mca_btl_base_registration_handle_t *local_handle,
                             uint64_t size, mca_btl_base_rdma_completion_fn_t cbfunc,
                             void *cbcontext, void *cbdata)
{
    mca_btl_elan_frag_t *frag = mca_btl_elan_frag_alloc(&module->rdma_frags);

    if (OPAL_LIKELY(NULL != frag)) {
        frag->type = type;
        frag->endpoint = endpoint;
        frag->local_address = local_address;
        frag->remote_address = remote_address;
        frag->local_handle = local_handle;
        frag->size = size;
        frag->cbfunc = cbfunc;
        frag->cbcontext = cbcontext;
        frag->cbdata = cbdata;
    }
    return frag;
}

/** Start a put, get or atomic fragment; it goes back to its list on failure. */
static inline int mca_btl_elan_rdma_frag_start(mca_btl_elan_module_t *module,
                                               mca_btl_elan_frag_t *frag)
{
    int rc = mca_btl_elan_start(module, frag);

    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        mca_btl_elan_frag_return(frag);
    }
    return rc;
}

END_C_DECLS

#endif /* MCA_BTL_ELAN_FRAG_H */
