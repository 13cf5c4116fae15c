/* -*- Mode: C; c-basic-offset:4 ; indent-tabs-mode:nil -*- */
/*
 * Copyright (c) 2026      The Elan project.  All rights reserved.
 * $COPYRIGHT$
 *
 * $HEADER$
 */
/*
 * The life cycle of a fragment, one NIC command: allocated (frag.h), posted
 * to the command queue (post), or parked in order on the pending list when
 * the queue is full (start), retried from progress (progress_pending),
 * completed by its DONE event (complete: the callback, then back to its
 * free list), and at finalize drained (drain).
 */
#include "opal_config.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "opal/util/proc.h"

#include "btl_elan_frag.h"

static void mca_btl_elan_frag_construct(mca_btl_elan_frag_t *frag)
{
    /* send fragments carry their buffer right behind them (see the free
     * list's element size); rdma fragments have none and never use it */
    frag->data = (unsigned char *) (frag + 1);
    frag->base.des_segments = frag->segments;
    frag->base.des_segment_count = 1;
    frag->segments[0].seg_addr.pval = frag->data;
    frag->segments[0].seg_len = 0;
    frag->endpoint = NULL;
    frag->my_list = NULL;
    frag->pending = false;
}

OBJ_CLASS_INSTANCE(mca_btl_elan_frag_t, mca_btl_base_descriptor_t,
                   mca_btl_elan_frag_construct, NULL);

/* Post one fragment's command.  Returns 0, -EAGAIN (queue full), -EPIPE
 * (context failed) or another negative errno. */
int mca_btl_elan_post(mca_btl_elan_module_t *module, mca_btl_elan_frag_t *frag)
{
    uint32_t dst = frag->endpoint->addr;
    uint64_t cookie = (uint64_t) (uintptr_t) frag;
    int rc;

    switch (frag->type) {
    case MCA_BTL_ELAN_FRAG_SEND:
        rc = elan_send(module->ctx, dst, frag->tag, frag->data, frag->segments[0].seg_len,
                       cookie, 0);
        break;
    case MCA_BTL_ELAN_FRAG_PUT:
        rc = elan_put(module->ctx, dst, frag->local_address, frag->remote_address,
                      frag->size, cookie, 0);
        break;
    case MCA_BTL_ELAN_FRAG_GET:
        rc = elan_get(module->ctx, dst, frag->local_address, frag->remote_address,
                      frag->size, cookie, 0);
        break;
    default:
        /* the old value comes back in the event: no fetch address needed */
        rc = elan_atomic(module->ctx, dst, frag->remote_address, (enum elan_atomic_op) frag->aop,
                         frag->operand, frag->compare, NULL, cookie, 0);
        break;
    }
    if (OPAL_LIKELY(0 == rc)) {
        ++module->outstanding;
    }
    return rc;
}

/* Post now, or park on the pending list (kept in order) when the command
 * queue is full or older fragments already wait.  Never drops. */
int mca_btl_elan_start(mca_btl_elan_module_t *module, mca_btl_elan_frag_t *frag)
{
    int rc;

    OPAL_THREAD_LOCK(&module->lock);
    if (OPAL_UNLIKELY(module->failed)) {
        OPAL_THREAD_UNLOCK(&module->lock);
        return OPAL_ERR_UNREACH;
    }
    if (OPAL_LIKELY(opal_list_is_empty(&module->pending))) {
        rc = mca_btl_elan_post(module, frag);
        if (OPAL_LIKELY(0 == rc)) {
            OPAL_THREAD_UNLOCK(&module->lock);
            return OPAL_SUCCESS;
        }
        if (-EAGAIN != rc) {
            if (-EPIPE == rc) {
                mca_btl_elan_context_failed(module, "elan_post", rc);
            }
            ++module->stats.errors;
            OPAL_THREAD_UNLOCK(&module->lock);
            return -EPIPE == rc ? OPAL_ERR_UNREACH : OPAL_ERR_BAD_PARAM;
        }
    }
    ++module->stats.eagain;
    frag->pending = true;
    opal_list_append(&module->pending, (opal_list_item_t *) frag);
    OPAL_THREAD_UNLOCK(&module->lock);
    return OPAL_SUCCESS;
}

int mca_btl_elan_status_to_opal(int status)
{
    switch (status) {
    case ELAN_OK:
        return OPAL_SUCCESS;
    case ELAN_E_BADCMD:
        return OPAL_ERR_BAD_PARAM;
    case ELAN_E_LOCAL_FAULT:
    case ELAN_E_REMOTE_FAULT:
        return OPAL_ERR_BAD_PARAM;        /* address not mapped */
    case ELAN_E_LOCAL_PROT:
    case ELAN_E_REMOTE_PROT:
    case ELAN_E_CAPABILITY:
        return OPAL_ERR_PERM;
    case ELAN_E_NO_CONTEXT:
        return OPAL_ERR_UNREACH;
    case ELAN_E_TARGET_GONE:
        return OPAL_ERR_PROC_ABORTED;
    case ELAN_E_NODE_DOWN:
        return OPAL_ERR_NODE_DOWN;
    case ELAN_E_QUEUE:
        return OPAL_ERR_FATAL;
    default:
        return OPAL_ERROR;
    }
}

static const char *mca_btl_elan_op_name(int type)
{
    static const char *names[] = {"send", "put", "get", "atomic", "fetching atomic"};
    return type >= 0 && type <= MCA_BTL_ELAN_FRAG_FATOMIC ? names[type] : "?";
}

/* One DONE event: complete its fragment. */
void mca_btl_elan_complete(mca_btl_elan_module_t *module, struct elan_event *ev)
{
    mca_btl_elan_frag_t *frag = (mca_btl_elan_frag_t *) (uintptr_t) ev->cookie;
    int status = OPAL_SUCCESS;

    --module->outstanding;
    if (OPAL_UNLIKELY(module->finalizing)) {
        /* the upper layers are gone: only take the fragment back */
        mca_btl_elan_frag_return(frag);
        return;
    }
    if (OPAL_UNLIKELY(ELAN_OK != ev->status)) {
        status = mca_btl_elan_status_to_opal(ev->status);
        ++module->stats.errors;
        MCA_BTL_ELAN_VERBOSE(10, "op %u to %u:%u failed: %s", ev->op,
                             frag->endpoint ? ELAN_ADDR_NODE(frag->endpoint->addr) : 0,
                             frag->endpoint ? ELAN_ADDR_CTX(frag->endpoint->addr) : 0,
                             elan_strerror(ev->status));
        opal_show_help("help-mpi-btl-elan.txt", "op failed", true, opal_process_info.nodename,
                       mca_btl_elan_op_name(frag->type),
                       frag->endpoint && frag->endpoint->proc ?
                       OPAL_NAME_PRINT(frag->endpoint->proc->proc_name) : "?",
                       elan_strerror(ev->status));
    }

    switch (frag->type) {
    case MCA_BTL_ELAN_FRAG_SEND: {
        int flags = frag->base.des_flags;
        if (NULL != frag->base.des_cbfunc) {
            frag->base.des_cbfunc(&module->super, frag->endpoint, &frag->base, status);
        } else if (OPAL_UNLIKELY(OPAL_SUCCESS != status) && NULL != module->error_cb) {
            /* a sendi message nobody waits for could not be delivered:
             * the upper layer must hear of it, or it waits for ever.  The
             * reason goes in this line too: the help message above may be
             * lost when the job aborts at once. */
            char why[160];

            snprintf(why, sizeof(why), "btl elan: a message to %s could not be delivered: %s",
                     frag->endpoint && frag->endpoint->proc ?
                     OPAL_NAME_PRINT(frag->endpoint->proc->proc_name) : "?",
                     elan_strerror(ev->status));
            module->error_cb(&module->super, MCA_BTL_ERROR_FLAGS_FATAL,
                             frag->endpoint ? frag->endpoint->proc : NULL, why);
        }
        if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) {
            mca_btl_elan_frag_return(frag);
        }
        break;
    }
    case MCA_BTL_ELAN_FRAG_FATOMIC:
        if (OPAL_SUCCESS == status) {
            *(uint64_t *) frag->local_address = ev->value;
        }
        /* fall through */
    default: {
        /* copy out first: the callback may post again and reuse the frag */
        mca_btl_base_rdma_completion_fn_t cbfunc = frag->cbfunc;
        mca_btl_base_endpoint_t *endpoint = frag->endpoint;
        void *local_address = frag->local_address, *cbcontext = frag->cbcontext,
            *cbdata = frag->cbdata;
        struct mca_btl_base_registration_handle_t *local_handle = frag->local_handle;

        mca_btl_elan_frag_return(frag);
        if (NULL != cbfunc) {
            cbfunc(&module->super, endpoint, local_address, local_handle, cbcontext, cbdata,
                   status);
        }
        break;
    }
    }
}

/* Retry fragments parked by a full command queue, in order. */
int mca_btl_elan_progress_pending(mca_btl_elan_module_t *module)
{
    mca_btl_elan_frag_t *frag;
    int count = 0, rc;

    while (NULL != (frag = (mca_btl_elan_frag_t *) opal_list_get_first(&module->pending)) &&
           (opal_list_item_t *) frag != opal_list_get_end(&module->pending)) {
        rc = mca_btl_elan_post(module, frag);
        if (-EAGAIN == rc) {
            break;
        }
        opal_list_remove_first(&module->pending);
        frag->pending = false;
        if (0 != rc) {
            /* -EPIPE (context failed) or -EINVAL: complete it with an error */
            struct elan_event ev = {.cookie = (uintptr_t) frag, .status = ELAN_E_BADCMD};
            if (-EPIPE == rc) {
                mca_btl_elan_context_failed(module, "elan_post (pending)", rc);
                ev.status = ELAN_E_QUEUE;
            }
            ++module->outstanding;
            mca_btl_elan_complete(module, &ev);
        }
        ++count;
    }
    return count;
}

/* At finalize: let the commands still in flight (fire-and-forget sendi
 * messages such as ob1's last FIN) reach the NIC and complete before the
 * context is closed, which would abandon them and leave a peer waiting.
 * Only completion events are consumed; bounded by @timeout_s. */
void mca_btl_elan_drain(mca_btl_elan_module_t *module, int timeout_s)
{
    time_t deadline = time(NULL) + timeout_s;
    struct elan_event ev;
    int rc;

    module->finalizing = true;
    while (!module->failed && (module->outstanding > 0 || !opal_list_is_empty(&module->pending))) {
        if (!opal_list_is_empty(&module->pending)) {
            (void) mca_btl_elan_progress_pending(module);
        }
        rc = elan_poll_event(module->ctx, &ev);
        if (1 == rc) {
            if (ELAN_EV_DONE == ev.type) {
                mca_btl_elan_complete(module, &ev);
            }
            continue;
        }
        if (rc < 0 || time(NULL) > deadline) {
            MCA_BTL_ELAN_VERBOSE(10, "finalize: %ld commands still in flight abandoned",
                                 (long) module->outstanding);
            break;
        }
    }
}
