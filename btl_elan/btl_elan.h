/* -*- Mode: C; c-basic-offset:4 ; indent-tabs-mode:nil -*- */
/*
 * Copyright (c) 2026      The Elan project.  All rights reserved.
 * $COPYRIGHT$
 *
 * $HEADER$
 */
/**
 * @file
 *
 * btl/elan: a BTL for the Elan NIC (an IOPROC RDMA NIC with its own MMU).
 *
 * The NIC translates every user virtual address itself and follows the
 * process's page tables (no pinning), so this BTL has no memory
 * registration at all: btl_register_mem is NULL and the registration
 * handle size is 0.  ob1 (RGET, pipeline) and osc/rdma both handle such a
 * BTL: they only register when btl_register_mem is set.
 *
 * One NIC context per process (libelan, linked statically).  Eager
 * messages go through elan_send() into the peer context's receive ring,
 * the BTL tag in the elan tag.  put/get/atomics are single NIC commands.
 * Every command carries its fragment as cookie and ends in exactly one
 * DONE event, consumed in the component progress function.  A full
 * command queue (-EAGAIN) parks the fragment on a FIFO pending list that
 * progress retries.
 */
#ifndef MCA_BTL_ELAN_H
#define MCA_BTL_ELAN_H

#include "opal_config.h"

#include <stdint.h>
#include <stdbool.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_list.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/base/btl_base_error.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "opal/threads/mutex.h"

#include "libelan.h"

BEGIN_C_DECLS

/**
 * A diagnostic at verbosity @level of the btl framework
 * (--mca btl_base_verbose), "btl: elan: " before it.  Errors go through
 * BTL_ERROR; BTL_VERBOSE is not used for these lines because it is
 * compiled out of Open MPI's release builds (OPAL_ENABLE_DEBUG 0, as
 * Debian's), and they are what tells a user why btl elan is not used or
 * what it did.
 */
#define MCA_BTL_ELAN_VERBOSE(level, ...)                                          \
    opal_output_verbose(level, opal_btl_base_framework.framework_output,        \
                        "btl: elan: " __VA_ARGS__)

struct mca_btl_elan_frag_t;

/**
 * The component: parameters and the (at most one) module.
 */
struct mca_btl_elan_component_t {
    mca_btl_base_component_3_0_0_t super;

    /** fragments: initial, maximum (bounds outstanding operations), growth */
    int free_list_num;
    int free_list_max;
    int free_list_inc;
    /** at most this many events / received messages handled per progress call */
    int poll_events;
    int poll_recvs;
    /** job capability override (0: derive from the job's transport key) */
    unsigned long capability;
    /** reach peers on the same node through the NIC too */
    bool local_peers;
    /** print operation counters at finalize (verbose level 10) */
    int verbose;

    /** the module, NULL when the component disqualified itself */
    struct mca_btl_elan_module_t *module;
    /** directory the help file was looked for in (for the docs/verbose) */
    char *help_dir;
};
typedef struct mca_btl_elan_component_t mca_btl_elan_component_t;

OPAL_MODULE_DECLSPEC extern mca_btl_elan_component_t mca_btl_elan_component;

/** operation counters (cheap, single context) */
struct mca_btl_elan_stats_t {
    uint64_t sends, sendis, puts, gets, atomics, recvs;
    uint64_t put_bytes, get_bytes;
    uint64_t eagain, errors;
};

/**
 * The module: one NIC context.
 */
struct mca_btl_elan_module_t {
    mca_btl_base_module_t super;

    elan_ctx_t *ctx;
    uint32_t addr;               /**< our ELAN_ADDR() */
    uint64_t capability;

    opal_mutex_t lock;           /**< protects posting, pending and endpoints */
    opal_free_list_t send_frags; /**< eager fragments with a max_send_size buffer */
    opal_free_list_t rdma_frags; /**< put/get/atomic fragments, no buffer */
    opal_list_t pending;         /**< fragments waiting for command-queue space */
    opal_hash_table_t endpoints; /**< mca_btl_elan_endpoint_t by opal_proc_t pointer */

    int64_t outstanding;         /**< commands posted and not yet completed */
    bool failed;                 /**< the context failed: everything errors */
    bool in_recv;                /**< recv callback running: no recursion into the ring */
    bool finalizing;             /**< draining at finalize: no more callbacks upward */

    mca_btl_base_module_error_cb_fn_t error_cb;
    mca_btl_base_descriptor_t recv_desc;   /**< handed to receive callbacks */
    mca_btl_base_segment_t recv_seg;

    struct mca_btl_elan_stats_t stats;
};
typedef struct mca_btl_elan_module_t mca_btl_elan_module_t;

extern mca_btl_elan_module_t mca_btl_elan_module_template;

/* module functions (btl_elan_module.c) */
int mca_btl_elan_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                           struct opal_proc_t **procs,
                           struct mca_btl_base_endpoint_t **peers,
                           opal_bitmap_t *reachable);
int mca_btl_elan_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                           struct opal_proc_t **procs,
                           struct mca_btl_base_endpoint_t **peers);
int mca_btl_elan_finalize(struct mca_btl_base_module_t *btl);
mca_btl_base_descriptor_t *mca_btl_elan_alloc(struct mca_btl_base_module_t *btl,
                                              struct mca_btl_base_endpoint_t *endpoint,
                                              uint8_t order, size_t size, uint32_t flags);
int mca_btl_elan_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des);
mca_btl_base_descriptor_t *mca_btl_elan_prepare_src(struct mca_btl_base_module_t *btl,
                                                    struct mca_btl_base_endpoint_t *endpoint,
                                                    struct opal_convertor_t *convertor,
                                                    uint8_t order, size_t reserve,
                                                    size_t *size, uint32_t flags);
int mca_btl_elan_send(struct mca_btl_base_module_t *btl,
                      struct mca_btl_base_endpoint_t *endpoint,
                      struct mca_btl_base_descriptor_t *descriptor,
                      mca_btl_base_tag_t tag);
int mca_btl_elan_sendi(struct mca_btl_base_module_t *btl,
                       struct mca_btl_base_endpoint_t *endpoint,
                       struct opal_convertor_t *convertor,
                       void *header, size_t header_size, size_t payload_size,
                       uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                       mca_btl_base_descriptor_t **descriptor);
int mca_btl_elan_register_error(struct mca_btl_base_module_t *btl,
                                mca_btl_base_module_error_cb_fn_t cbfunc);
int mca_btl_elan_flush(struct mca_btl_base_module_t *btl,
                       struct mca_btl_base_endpoint_t *endpoint);

/* RDMA (btl_elan_rdma.c) */
int mca_btl_elan_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     size_t size, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int mca_btl_elan_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     size_t size, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);

/* atomics (btl_elan_atomic.c) */
int mca_btl_elan_aop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     uint64_t remote_address, struct mca_btl_base_registration_handle_t *remote_handle,
                     mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int mca_btl_elan_afop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      void *local_address, uint64_t remote_address,
                      struct mca_btl_base_registration_handle_t *local_handle,
                      struct mca_btl_base_registration_handle_t *remote_handle,
                      mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                      mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int mca_btl_elan_acswap(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                        void *local_address, uint64_t remote_address,
                        struct mca_btl_base_registration_handle_t *local_handle,
                        struct mca_btl_base_registration_handle_t *remote_handle,
                        uint64_t compare, uint64_t value, int flags, int order,
                        mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);

/* the fragments' life cycle (btl_elan_frag.c) */
int mca_btl_elan_post(mca_btl_elan_module_t *module, struct mca_btl_elan_frag_t *frag);
int mca_btl_elan_start(mca_btl_elan_module_t *module, struct mca_btl_elan_frag_t *frag);
void mca_btl_elan_complete(mca_btl_elan_module_t *module, struct elan_event *ev);
int mca_btl_elan_progress_pending(mca_btl_elan_module_t *module);
void mca_btl_elan_drain(mca_btl_elan_module_t *module, int timeout_s);
int mca_btl_elan_status_to_opal(int status);

/* the context and progress (btl_elan_component.c) */
int mca_btl_elan_component_progress(void);
void mca_btl_elan_context_failed(mca_btl_elan_module_t *module, const char *where, int rc);

END_C_DECLS

#endif /* MCA_BTL_ELAN_H */
