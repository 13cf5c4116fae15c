/* -*- Mode: C; c-basic-offset:4 ; indent-tabs-mode:nil -*- */
/*
 * Copyright (c) 2026      The Elan project.  All rights reserved.
 * $COPYRIGHT$
 *
 * $HEADER$
 */
#include "opal_config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libgen.h>

#include "opal/mca/pmix/pmix.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"

#include "btl_elan.h"
#include "btl_elan_endpoint.h"
#include "btl_elan_frag.h"

static int mca_btl_elan_component_register(void);
static int mca_btl_elan_component_open(void);
static int mca_btl_elan_component_close(void);
static mca_btl_base_module_t **mca_btl_elan_component_init(int *num_btls,
                                                           bool enable_progress_threads,
                                                           bool enable_mpi_threads);

mca_btl_elan_component_t mca_btl_elan_component = {
    .super = {
        .btl_version = {
            MCA_BTL_DEFAULT_VERSION("elan"),
            .mca_open_component = mca_btl_elan_component_open,
            .mca_close_component = mca_btl_elan_component_close,
            .mca_register_component_params = mca_btl_elan_component_register,
        },
        .btl_data = {
            .param_field = MCA_BASE_METADATA_PARAM_NONE,
        },
        .btl_init = mca_btl_elan_component_init,
        .btl_progress = mca_btl_elan_component_progress,
    }
};

static int mca_btl_elan_component_register(void)
{
    mca_base_component_t *version = &mca_btl_elan_component.super.btl_version;
    mca_btl_base_module_t *btl = &mca_btl_elan_module_template.super;

    (void) mca_base_var_group_component_register(version,
        "BTL for the Elan NIC: zero-copy RDMA, eager messages and 64-bit atomics "
        "on unregistered (unpinned) memory");

    mca_btl_elan_component.free_list_num = 32;
    (void) mca_base_component_var_register(version, "free_list_num",
        "Number of fragments of each kind (eager, rdma) allocated at start",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &mca_btl_elan_component.free_list_num);
    mca_btl_elan_component.free_list_max = 1024;
    (void) mca_base_component_var_register(version, "free_list_max",
        "Maximum number of fragments of each kind, i.e. the maximum number of "
        "outstanding eager sends and of outstanding put/get/atomic operations; "
        "beyond it the BTL answers OUT_OF_RESOURCE and the PML or OSC retries "
        "(-1: unlimited)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &mca_btl_elan_component.free_list_max);
    mca_btl_elan_component.free_list_inc = 32;
    (void) mca_base_component_var_register(version, "free_list_inc",
        "Number of fragments added when a free list grows",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &mca_btl_elan_component.free_list_inc);

    mca_btl_elan_component.poll_events = 64;
    (void) mca_base_component_var_register(version, "poll_events",
        "Polling: at most this many completion events are consumed per progress "
        "call (the event ring holds 512)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &mca_btl_elan_component.poll_events);
    mca_btl_elan_component.poll_recvs = 16;
    (void) mca_base_component_var_register(version, "poll_recvs",
        "Polling: at most this many received messages are handed to the PML per "
        "progress call (the receive ring holds 32)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &mca_btl_elan_component.poll_recvs);

    mca_btl_elan_component.capability = 0;
    (void) mca_base_component_var_register(version, "capability",
        "Job capability (key) of the NIC context; only contexts with equal keys "
        "reach each other.  0 (default): derived from the job's random transport "
        "key (OMPI_MCA_orte_precondition_transports, set by mpirun for every rank), "
        "else from the job id.  Setting it by hand is for tests only",
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &mca_btl_elan_component.capability);

    mca_btl_elan_component.local_peers = true;
    (void) mca_base_component_var_register(version, "local_peers",
        "Also reach processes on the same node through the NIC (default true).  "
        "When btl vader is selected as well it wins for on-node peers anyway "
        "(higher exclusivity); false leaves on-node peers to other BTLs",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &mca_btl_elan_component.local_peers);

    mca_btl_elan_component.verbose = 0;
    (void) mca_base_component_var_register(version, "verbose",
        "Verbosity of btl elan (10: operation counters at finalize)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_LOCAL, &mca_btl_elan_component.verbose);

    /* the standard BTL parameters (btl_elan_eager_limit, ...) */
    btl->btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT;
    btl->btl_eager_limit = ELAN_SEND_MAX;
    btl->btl_rndv_eager_limit = ELAN_SEND_MAX;
    btl->btl_max_send_size = ELAN_SEND_MAX;
    btl->btl_rdma_pipeline_send_length = ELAN_SEND_MAX;
    btl->btl_rdma_pipeline_frag_size = 4 * 1024 * 1024;
    btl->btl_min_rdma_pipeline_size = 64 * 1024;
    btl->btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_RDMA | MCA_BTL_FLAGS_ATOMIC_OPS |
        MCA_BTL_FLAGS_ATOMIC_FOPS;
    btl->btl_atomic_flags = MCA_BTL_ATOMIC_SUPPORTS_ADD | MCA_BTL_ATOMIC_SUPPORTS_AND |
        MCA_BTL_ATOMIC_SUPPORTS_OR | MCA_BTL_ATOMIC_SUPPORTS_XOR | MCA_BTL_ATOMIC_SUPPORTS_SWAP |
        MCA_BTL_ATOMIC_SUPPORTS_CSWAP;
    btl->btl_latency = 2;
    btl->btl_bandwidth = 10000;
    btl->btl_get_limit = 4 * 1024 * 1024;
    btl->btl_put_limit = 4 * 1024 * 1024;
    btl->btl_get_alignment = 0;
    btl->btl_put_alignment = 0;
    btl->btl_get_local_registration_threshold = 0;
    btl->btl_put_local_registration_threshold = 0;
    btl->btl_registration_handle_size = 0;
    (void) mca_btl_base_param_register(version, btl);

    return OPAL_SUCCESS;
}

/* Open MPI looks for help files only in its own pkgdatadir; a component
 * that lives elsewhere adds its own directory (where the .so is, and the
 * parent of libtool's .libs/ in a build tree) with opal_show_help_add_dir. */
static void mca_btl_elan_add_help_dir(void)
{
    Dl_info info;
    char *path, *dir, *parent;

    if (0 == dladdr((void *) mca_btl_elan_add_help_dir, &info) || NULL == info.dli_fname) {
        return;
    }
    path = strdup(info.dli_fname);
    if (NULL == path) {
        return;
    }
    dir = strdup(dirname(path));
    free(path);
    if (NULL == dir) {
        return;
    }
    (void) opal_show_help_add_dir(dir);
    if (0 == strcmp(basename(dir), ".libs") && NULL != (parent = strdup(dir))) {
        (void) opal_show_help_add_dir(dirname(parent));
        free(parent);
    }
    mca_btl_elan_component.help_dir = dir;
}

static int mca_btl_elan_component_open(void)
{
    mca_btl_elan_component.module = NULL;
    mca_btl_elan_component.help_dir = NULL;
    mca_btl_elan_add_help_dir();
    return OPAL_SUCCESS;
}

static int mca_btl_elan_component_close(void)
{
    free(mca_btl_elan_component.help_dir);
    mca_btl_elan_component.help_dir = NULL;
    return OPAL_SUCCESS;
}

/* The job capability: from the random per-job key that mpirun gives every
 * rank of the job (the one PSM/OFI use), else from the job id. */
static uint64_t mca_btl_elan_job_capability(void)
{
    unsigned long long hi, lo;
    const char *key;
    uint64_t cap;

    if (0 != mca_btl_elan_component.capability) {
        MCA_BTL_ELAN_VERBOSE(10, "capability set by hand: 0x%016lx",
                             mca_btl_elan_component.capability);
        return (uint64_t) mca_btl_elan_component.capability;
    }

    key = getenv(OPAL_MCA_PREFIX "orte_precondition_transports");
    if (NULL != key && 2 == sscanf(key, "%16llx-%16llx", &hi, &lo)) {
        cap = elan_mix64(elan_mix64(hi) ^ lo);
        MCA_BTL_ELAN_VERBOSE(10, "capability derived from the job's transport key");
    } else {
        /* direct launch without a transport key: all ranks of a job share
         * the job id (the hash of the PMIx namespace) */
        cap = elan_mix64(0x656c616e00000000ULL ^ OPAL_PROC_MY_NAME.jobid);
        MCA_BTL_ELAN_VERBOSE(1, "no " OPAL_MCA_PREFIX "orte_precondition_transports "
                             "in the environment (direct launch?): capability derived "
                             "from job id %u, weaker isolation between jobs",
                             (unsigned) OPAL_PROC_MY_NAME.jobid);
    }
    return 0 == cap ? 1 : cap;
}

static mca_btl_base_module_t **mca_btl_elan_component_init(int *num_btls,
                                                           bool enable_progress_threads,
                                                           bool enable_mpi_threads)
{
    mca_btl_elan_module_t *module;
    mca_btl_base_module_t **btls;
    elan_ctx_t *ctx = NULL;
    uint64_t cap;
    uint32_t addr;
    int rc;

    *num_btls = 0;

    cap = mca_btl_elan_job_capability();
    rc = elan_open(cap, &ctx);
    if (0 != rc) {
        MCA_BTL_ELAN_VERBOSE(1, "no usable Elan NIC (elan_open: %s): btl elan disqualified",
                             elan_strerror(rc));
        return NULL;
    }
    addr = elan_addr(ctx);

    module = (mca_btl_elan_module_t *) malloc(sizeof(*module));
    btls = (mca_btl_base_module_t **) malloc(sizeof(*btls));
    if (NULL == module || NULL == btls) {
        free(module);
        free(btls);
        elan_close(ctx);
        return NULL;
    }
    memcpy(module, &mca_btl_elan_module_template, sizeof(*module));
    module->ctx = ctx;
    module->addr = addr;
    module->capability = cap;
    module->outstanding = 0;
    module->failed = false;
    module->in_recv = false;
    module->finalizing = false;
    module->error_cb = NULL;
    memset(&module->stats, 0, sizeof(module->stats));

    /* a message never exceeds one receive slot */
    if (module->super.btl_max_send_size > ELAN_SEND_MAX) {
        module->super.btl_max_send_size = ELAN_SEND_MAX;
    }
    if (module->super.btl_eager_limit > module->super.btl_max_send_size) {
        module->super.btl_eager_limit = module->super.btl_max_send_size;
    }
    if (module->super.btl_rndv_eager_limit > module->super.btl_max_send_size) {
        module->super.btl_rndv_eager_limit = module->super.btl_max_send_size;
    }
    /* no memory registration at all */
    module->super.btl_registration_handle_size = 0;
    module->super.btl_register_mem = NULL;
    module->super.btl_deregister_mem = NULL;
    /* 64-bit NIC atomics only */
    module->super.btl_atomic_flags &= ~(MCA_BTL_ATOMIC_SUPPORTS_32BIT | MCA_BTL_ATOMIC_SUPPORTS_FLOAT);

    OBJ_CONSTRUCT(&module->lock, opal_recursive_mutex_t);
    OBJ_CONSTRUCT(&module->send_frags, opal_free_list_t);
    OBJ_CONSTRUCT(&module->rdma_frags, opal_free_list_t);
    OBJ_CONSTRUCT(&module->pending, opal_list_t);
    OBJ_CONSTRUCT(&module->endpoints, opal_hash_table_t);
    OBJ_CONSTRUCT(&module->recv_desc, mca_btl_base_descriptor_t);
    module->recv_desc.des_segments = &module->recv_seg;
    module->recv_desc.des_segment_count = 1;

    /* endpoints by opal_proc_t pointer; the table grows beyond half full */
    rc = opal_hash_table_init(&module->endpoints, 512);
    if (OPAL_SUCCESS == rc) {
        rc = opal_free_list_init(&module->send_frags,
                                 sizeof(mca_btl_elan_frag_t) + module->super.btl_max_send_size,
                                 opal_cache_line_size, OBJ_CLASS(mca_btl_elan_frag_t), 0,
                                 opal_cache_line_size, mca_btl_elan_component.free_list_num,
                                 mca_btl_elan_component.free_list_max,
                                 mca_btl_elan_component.free_list_inc, NULL, 0, NULL, NULL, NULL);
    }
    if (OPAL_SUCCESS == rc) {
        rc = opal_free_list_init(&module->rdma_frags, sizeof(mca_btl_elan_frag_t),
                                 opal_cache_line_size, OBJ_CLASS(mca_btl_elan_frag_t), 0,
                                 opal_cache_line_size, mca_btl_elan_component.free_list_num,
                                 mca_btl_elan_component.free_list_max,
                                 mca_btl_elan_component.free_list_inc, NULL, 0, NULL, NULL, NULL);
    }
    if (OPAL_SUCCESS != rc) {
        BTL_ERROR(("cannot allocate the endpoint table or fragments: btl elan disqualified"));
        mca_btl_elan_finalize(&module->super);
        free(btls);
        return NULL;
    }

    OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &mca_btl_elan_component.super.btl_version,
                    &addr, sizeof(addr));
    if (OPAL_SUCCESS != rc) {
        BTL_ERROR(("modex send failed (%d): btl elan disqualified", rc));
        mca_btl_elan_finalize(&module->super);
        free(btls);
        return NULL;
    }

    MCA_BTL_ELAN_VERBOSE(10, "NIC context %u:%u of %u nodes, eager limit %zu, "
                         "max send %zu, help files in %s",
                         ELAN_ADDR_NODE(addr), ELAN_ADDR_CTX(addr), elan_nodes(ctx),
                         module->super.btl_eager_limit, module->super.btl_max_send_size,
                         mca_btl_elan_component.help_dir ? mca_btl_elan_component.help_dir : "?");

    mca_btl_elan_component.module = module;
    btls[0] = &module->super;
    *num_btls = 1;
    return btls;
}

/* The context failed (bad queue entry, NIC dead, ...): say so once, tell
 * the PML through the error callback; every later operation fails. */
void mca_btl_elan_context_failed(mca_btl_elan_module_t *module, const char *where, int rc)
{
    if (module->failed) {
        return;
    }
    module->failed = true;
    opal_show_help("help-mpi-btl-elan.txt", "context failed", true,
                   opal_process_info.nodename, where, elan_strerror(rc),
                   elan_state_text(module->ctx));
    if (NULL != module->error_cb && !module->finalizing) {
        module->error_cb(&module->super, MCA_BTL_ERROR_FLAGS_FATAL, NULL,
                         "btl elan: the NIC context failed");
    }
}

int mca_btl_elan_component_progress(void)
{
    mca_btl_elan_module_t *module = mca_btl_elan_component.module;
    struct elan_event ev;
    struct elan_recv_hdr hdr;
    const void *payload;
    int count = 0, rc, i;

    if (OPAL_UNLIKELY(NULL == module)) {
        return 0;
    }

    OPAL_THREAD_LOCK(&module->lock);
    /* what the callbacks post (FINs, gets of rendezvous headers, ...)
     * wakes the NIC once, at the end: see elan_batch_begin() */
    elan_batch_begin(module->ctx);

    for (i = 0; i < mca_btl_elan_component.poll_events; ++i) {
        rc = elan_poll_event(module->ctx, &ev);
        if (1 != rc) {
            if (OPAL_UNLIKELY(rc < 0)) {
                mca_btl_elan_context_failed(module, "elan_poll_event", rc);
            }
            break;
        }
        if (OPAL_LIKELY(ELAN_EV_DONE == ev.type)) {
            mca_btl_elan_complete(module, &ev);
        } else if (ELAN_EV_ERROR == ev.type) {
            mca_btl_elan_context_failed(module, "event ring", -EPIPE);
        } /* ELAN_EV_REMOTE: not requested by this BTL */
        ++count;
    }

    if (!module->in_recv) {
        module->in_recv = true;
        for (i = 0; i < mca_btl_elan_component.poll_recvs; ++i) {
            const mca_btl_active_message_callback_t *reg;

            if (1 != elan_recv(module->ctx, &hdr, &payload)) {
                break;
            }
            reg = mca_btl_base_active_message_trigger + (hdr.tag & 0xff);
            module->recv_seg.seg_addr.pval = (void *) payload;
            module->recv_seg.seg_len = hdr.len;
            ++module->stats.recvs;
            if (OPAL_LIKELY(NULL != reg->cbfunc)) {
                OPAL_THREAD_UNLOCK(&module->lock);
                reg->cbfunc(&module->super, (mca_btl_base_tag_t) hdr.tag, &module->recv_desc,
                            reg->cbdata);
                OPAL_THREAD_LOCK(&module->lock);
            }
            elan_recv_release(module->ctx);
            ++count;
        }
        module->in_recv = false;
    }

    if (OPAL_UNLIKELY(!opal_list_is_empty(&module->pending))) {
        count += mca_btl_elan_progress_pending(module);
    }

    elan_batch_end(module->ctx);
    OPAL_THREAD_UNLOCK(&module->lock);
    return count;
}
