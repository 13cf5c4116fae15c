/* -*- Mode: C; c-basic-offset:4 ; indent-tabs-mode:nil -*- */
/*
 * Copyright (c) 2026      The Elan project.  All rights reserved.
 * $COPYRIGHT$
 *
 * $HEADER$
 */
#include "opal_config.h"

#include <string.h>

#include "opal/datatype/opal_convertor.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"

#include "btl_elan.h"
#include "btl_elan_endpoint.h"
#include "btl_elan_frag.h"

mca_btl_elan_module_t mca_btl_elan_module_template = {
    .super = {
        .btl_component = &mca_btl_elan_component.super,
        .btl_add_procs = mca_btl_elan_add_procs,
        .btl_del_procs = mca_btl_elan_del_procs,
        .btl_finalize = mca_btl_elan_finalize,
        .btl_alloc = mca_btl_elan_alloc,
        .btl_free = mca_btl_elan_free,
        .btl_prepare_src = mca_btl_elan_prepare_src,
        .btl_send = mca_btl_elan_send,
        .btl_sendi = mca_btl_elan_sendi,
        .btl_put = mca_btl_elan_put,
        .btl_get = mca_btl_elan_get,
        .btl_atomic_op = mca_btl_elan_aop,
        .btl_atomic_fop = mca_btl_elan_afop,
        .btl_atomic_cswap = mca_btl_elan_acswap,
        .btl_register_mem = NULL,      /* the NIC needs no registration */
        .btl_deregister_mem = NULL,
        .btl_register_error = mca_btl_elan_register_error,
        .btl_flush = mca_btl_elan_flush,
    },
};

/* The endpoint table is keyed by the opal_proc_t pointer: add_procs and
 * del_procs look endpoints up by proc, nothing looks them up by NIC
 * address (a received message carries no endpoint). */
static inline uint64_t mca_btl_elan_endpoint_key(struct opal_proc_t *proc)
{
    return (uint64_t) (uintptr_t) proc;
}

/* Called with the module lock held. */
static mca_btl_elan_endpoint_t *mca_btl_elan_find_endpoint(mca_btl_elan_module_t *module,
                                                           struct opal_proc_t *proc)
{
    mca_btl_elan_endpoint_t *endpoint;

    if (OPAL_SUCCESS != opal_hash_table_get_value_uint64(&module->endpoints,
                                                         mca_btl_elan_endpoint_key(proc),
                                                         (void **) &endpoint)) {
        return NULL;
    }
    return endpoint;
}

int mca_btl_elan_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                           struct opal_proc_t **procs,
                           struct mca_btl_base_endpoint_t **peers,
                           opal_bitmap_t *reachable)
{
    mca_btl_elan_module_t *module = (mca_btl_elan_module_t *) btl;
    opal_proc_t *my_proc = opal_proc_local_get();
    int rc;

    OPAL_THREAD_LOCK(&module->lock);
    for (size_t i = 0; i < nprocs; ++i) {
        mca_btl_elan_endpoint_t *endpoint;
        uint32_t *addr = NULL;
        size_t size = 0;
        bool local = (procs[i] == my_proc) || OPAL_PROC_ON_LOCAL_NODE(procs[i]->proc_flags);

        peers[i] = NULL;
        if (local && procs[i] != my_proc && !mca_btl_elan_component.local_peers) {
            continue;
        }

        endpoint = mca_btl_elan_find_endpoint(module, procs[i]);
        if (NULL == endpoint) {
            OPAL_MODEX_RECV(rc, &mca_btl_elan_component.super.btl_version,
                            &procs[i]->proc_name, (void **) &addr, &size);
            if (OPAL_SUCCESS != rc || NULL == addr || sizeof(*addr) != size) {
                /* that process has no Elan context: not reachable by us */
                MCA_BTL_ELAN_VERBOSE(10, "%s has no Elan address (modex: %d): unreachable",
                                     OPAL_NAME_PRINT(procs[i]->proc_name), rc);
                free(addr);
                continue;
            }
            endpoint = OBJ_NEW(mca_btl_elan_endpoint_t);
            if (NULL == endpoint) {
                free(addr);
                OPAL_THREAD_UNLOCK(&module->lock);
                return OPAL_ERR_OUT_OF_RESOURCE;
            }
            OBJ_RETAIN(procs[i]);
            endpoint->proc = procs[i];
            endpoint->addr = *addr;
            endpoint->local = local;
            free(addr);
            rc = opal_hash_table_set_value_uint64(&module->endpoints,
                                                  mca_btl_elan_endpoint_key(procs[i]), endpoint);
            if (OPAL_SUCCESS != rc) {
                /* a failed growth leaves the entry in: take it out again */
                (void) opal_hash_table_remove_value_uint64(&module->endpoints,
                                                           mca_btl_elan_endpoint_key(procs[i]));
                OBJ_RELEASE(endpoint);
                OPAL_THREAD_UNLOCK(&module->lock);
                return rc;
            }
            MCA_BTL_ELAN_VERBOSE(20, "%s is NIC context %u:%u%s",
                                 OPAL_NAME_PRINT(procs[i]->proc_name),
                                 ELAN_ADDR_NODE(endpoint->addr), ELAN_ADDR_CTX(endpoint->addr),
                                 local ? " (this node)" : "");
        } else {
            OBJ_RETAIN(endpoint);
        }
        peers[i] = endpoint;
        if (NULL != reachable) {
            opal_bitmap_set_bit(reachable, (int) i);
        }
    }
    OPAL_THREAD_UNLOCK(&module->lock);
    return OPAL_SUCCESS;
}

int mca_btl_elan_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                           struct opal_proc_t **procs,
                           struct mca_btl_base_endpoint_t **peers)
{
    mca_btl_elan_module_t *module = (mca_btl_elan_module_t *) btl;

    OPAL_THREAD_LOCK(&module->lock);
    for (size_t i = 0; i < nprocs; ++i) {
        mca_btl_elan_endpoint_t *endpoint = mca_btl_elan_find_endpoint(module, procs[i]);

        if (NULL == endpoint) {
            continue;
        }
        if (1 == endpoint->super.obj_reference_count) {
            (void) opal_hash_table_remove_value_uint64(&module->endpoints,
                                                       mca_btl_elan_endpoint_key(procs[i]));
        }
        OBJ_RELEASE(endpoint);
    }
    OPAL_THREAD_UNLOCK(&module->lock);
    return OPAL_SUCCESS;
}

int mca_btl_elan_finalize(struct mca_btl_base_module_t *btl)
{
    mca_btl_elan_module_t *module = (mca_btl_elan_module_t *) btl;
    struct mca_btl_elan_stats_t *s = &module->stats;
    mca_btl_elan_endpoint_t *endpoint;
    uint64_t key;

    if (mca_btl_elan_component.verbose >= 10 ||
        opal_output_get_verbosity(opal_btl_base_framework.framework_output) >= 10) {
        opal_output(0, "btl: elan: %s: context %u:%u: sends %lu sendi %lu recvs %lu puts %lu "
                    "(%lu B) gets %lu (%lu B) atomics %lu, queue-full retries %lu, errors %lu",
                    OPAL_NAME_PRINT(OPAL_PROC_MY_NAME), ELAN_ADDR_NODE(module->addr),
                    ELAN_ADDR_CTX(module->addr), (unsigned long) s->sends,
                    (unsigned long) s->sendis, (unsigned long) s->recvs,
                    (unsigned long) s->puts, (unsigned long) s->put_bytes,
                    (unsigned long) s->gets, (unsigned long) s->get_bytes,
                    (unsigned long) s->atomics, (unsigned long) s->eagain,
                    (unsigned long) s->errors);
    }

    if (mca_btl_elan_component.module == module) {
        mca_btl_elan_component.module = NULL;
    }
    /* elan_close would abandon commands still in flight: let them finish */
    mca_btl_elan_drain(module, 10);
    elan_close(module->ctx);
    module->ctx = NULL;

    OPAL_HASH_TABLE_FOREACH(key, uint64, endpoint, &module->endpoints) {
        OBJ_RELEASE(endpoint);
    }
    /* pending fragments belong to the free lists: just forget the list */
    while (NULL != opal_list_remove_first(&module->pending)) {
    }
    OBJ_DESTRUCT(&module->endpoints);
    OBJ_DESTRUCT(&module->pending);
    OBJ_DESTRUCT(&module->send_frags);
    OBJ_DESTRUCT(&module->rdma_frags);
    OBJ_DESTRUCT(&module->recv_desc);
    OBJ_DESTRUCT(&module->lock);
    free(module);
    return OPAL_SUCCESS;
}

mca_btl_base_descriptor_t *mca_btl_elan_alloc(struct mca_btl_base_module_t *btl,
                                              struct mca_btl_base_endpoint_t *endpoint,
                                              uint8_t order, size_t size, uint32_t flags)
{
    mca_btl_elan_module_t *module = (mca_btl_elan_module_t *) btl;
    mca_btl_elan_frag_t *frag;

    if (OPAL_UNLIKELY(size > btl->btl_max_send_size)) {
        return NULL;
    }
    frag = mca_btl_elan_frag_alloc(&module->send_frags);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    frag->type = MCA_BTL_ELAN_FRAG_SEND;
    frag->endpoint = endpoint;
    frag->segments[0].seg_addr.pval = frag->data;
    frag->segments[0].seg_len = size;
    frag->base.des_flags = flags;
    return &frag->base;
}

int mca_btl_elan_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    mca_btl_elan_frag_return((mca_btl_elan_frag_t *) des);
    return OPAL_SUCCESS;
}

mca_btl_base_descriptor_t *mca_btl_elan_prepare_src(struct mca_btl_base_module_t *btl,
                                                    struct mca_btl_base_endpoint_t *endpoint,
                                                    struct opal_convertor_t *convertor,
                                                    uint8_t order, size_t reserve,
                                                    size_t *size, uint32_t flags)
{
    mca_btl_elan_frag_t *frag;
    struct iovec iov;
    uint32_t iov_count = 1;
    size_t max_data = *size;
    int rc;

    if (OPAL_UNLIKELY(reserve > btl->btl_max_send_size)) {
        return NULL;
    }
    if (max_data + reserve > btl->btl_max_send_size) {
        max_data = btl->btl_max_send_size - reserve;
    }
    frag = (mca_btl_elan_frag_t *) mca_btl_elan_alloc(btl, endpoint, order, reserve + max_data,
                                                      flags);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    /* a message is one contiguous buffer for the NIC: pack behind the
     * header (the NIC could read user memory directly, but header and
     * payload must be adjacent) */
    if (max_data > 0) {
        iov.iov_base = (IOVBASE_TYPE *) (frag->data + reserve);
        iov.iov_len = max_data;
        rc = opal_convertor_pack(convertor, &iov, &iov_count, &max_data);
        if (OPAL_UNLIKELY(rc < 0)) {
            mca_btl_elan_frag_return(frag);
            return NULL;
        }
    }
    frag->segments[0].seg_len = reserve + max_data;
    *size = max_data;
    return &frag->base;
}

int mca_btl_elan_send(struct mca_btl_base_module_t *btl,
                      struct mca_btl_base_endpoint_t *endpoint,
                      struct mca_btl_base_descriptor_t *descriptor,
                      mca_btl_base_tag_t tag)
{
    mca_btl_elan_module_t *module = (mca_btl_elan_module_t *) btl;
    mca_btl_elan_frag_t *frag = (mca_btl_elan_frag_t *) descriptor;

    frag->endpoint = endpoint;
    frag->tag = tag;
    frag->type = MCA_BTL_ELAN_FRAG_SEND;
    ++module->stats.sends;
    /* completion comes later, from progress, through des_cbfunc */
    return mca_btl_elan_start(module, frag);
}

int mca_btl_elan_sendi(struct mca_btl_base_module_t *btl,
                       struct mca_btl_base_endpoint_t *endpoint,
                       struct opal_convertor_t *convertor,
                       void *header, size_t header_size, size_t payload_size,
                       uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                       mca_btl_base_descriptor_t **descriptor)
{
    mca_btl_elan_module_t *module = (mca_btl_elan_module_t *) btl;
    size_t total = header_size + payload_size;
    mca_btl_elan_frag_t *frag;
    int rc;

    if (OPAL_UNLIKELY(total > btl->btl_max_send_size || module->failed)) {
        if (NULL != descriptor) {
            *descriptor = NULL;
        }
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    frag = mca_btl_elan_frag_alloc(&module->send_frags);
    if (OPAL_UNLIKELY(NULL == frag)) {
        if (NULL != descriptor) {
            *descriptor = NULL;
        }
        return OPAL_ERR_OUT_OF_RESOURCE;
    }

    memcpy(frag->data, header, header_size);
    if (payload_size) {
        struct iovec iov = {.iov_base = (IOVBASE_TYPE *) (frag->data + header_size),
                            .iov_len = payload_size};
        uint32_t iov_count = 1;
        size_t max_data = payload_size;

        rc = opal_convertor_pack(convertor, &iov, &iov_count, &max_data);
        if (OPAL_UNLIKELY(rc < 0)) {
            mca_btl_elan_frag_return(frag);
            if (NULL != descriptor) {
                *descriptor = NULL;
            }
            return OPAL_ERROR;
        }
        total = header_size + max_data;
    }
    frag->type = MCA_BTL_ELAN_FRAG_SEND;
    frag->endpoint = endpoint;
    frag->tag = tag;
    frag->segments[0].seg_len = total;
    /* nobody waits for it: the BTL returns it when the NIC has read it */
    frag->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    ++module->stats.sendis;
    rc = mca_btl_elan_start(module, frag);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        mca_btl_elan_frag_return(frag);
        if (NULL != descriptor) {
            *descriptor = NULL;
        }
    }
    return rc;
}

int mca_btl_elan_register_error(struct mca_btl_base_module_t *btl,
                                mca_btl_base_module_error_cb_fn_t cbfunc)
{
    ((mca_btl_elan_module_t *) btl)->error_cb = cbfunc;
    return OPAL_SUCCESS;
}

/* Wait until every command posted so far (to any peer) has completed. */
int mca_btl_elan_flush(struct mca_btl_base_module_t *btl,
                       struct mca_btl_base_endpoint_t *endpoint)
{
    mca_btl_elan_module_t *module = (mca_btl_elan_module_t *) btl;

    while (!module->failed &&
           (module->outstanding > 0 || !opal_list_is_empty(&module->pending))) {
        opal_progress();
    }
    return module->failed ? OPAL_ERROR : OPAL_SUCCESS;
}
