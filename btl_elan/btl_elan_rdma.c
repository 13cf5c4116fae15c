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
 * size 0) and ignored; the NIC translates both addresses itself.
 */
#include "btl_elan.h"
#include "btl_elan_frag.h"

#include <sys/mman.h>

#include "opal/util/sys_limits.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/*
 * Warm the local buffer before the NIC touches it.  The NIC needs no
 * registration, but every page it finds without a translation costs a
 * fault round trip to the guest's driver (interrupt, work item,
 * fixup_user_fault, ack: about 11 ms each, measured on the busy 2-core
 * TCG host).  The driver loads up to 16 pages per fault (fault-around), but
 * only pages that are already present: a receive buffer that was never
 * touched (the common case for a large message: a fresh malloc) faults
 * page by page, 16384 round trips for 64 MiB (minutes).  Populating the
 * range first (writable for a get, which the NIC writes: it must not find
 * the shared zero page) lets each NIC fault load 16 pages.  madvise
 * populates without touching the data, so a buffer the user shares with
 * other threads is safe; nothing is pinned.  A failure (unmapped or
 * read-only range, an old kernel) is ignored: the NIC then reports the
 * bad address itself, as it would have anyway.
 */
static inline void mca_btl_elan_warm(void *address, size_t size, bool write)
{
    const uintptr_t page = (uintptr_t) opal_getpagesize();
    uintptr_t start = (uintptr_t) address & ~(page - 1);
    uintptr_t end = ((uintptr_t) address + size + page - 1) & ~(page - 1);

    if (size < page) {
        /* one or two pages: not worth a system call, and small buffers are warm */
        return;
    }
    (void) madvise((void *) start, end - start, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
}

static inline int mca_btl_elan_rdma(mca_btl_elan_module_t *module, int type,
                                    struct mca_btl_base_endpoint_t *endpoint,
                                    void *local_address, uint64_t remote_address,
                                    struct mca_btl_base_registration_handle_t *local_handle,
                                    size_t size, mca_btl_base_rdma_completion_fn_t cbfunc,
                                    void *cbcontext, void *cbdata)
{
    mca_btl_elan_frag_t *frag;

    frag = mca_btl_elan_rdma_frag_alloc(module, type, endpoint, local_address, remote_address,
                                        local_handle, size, cbfunc, cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == frag)) {
        /* too many outstanding operations: the caller retries */
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (mca_btl_elan_component.warm) {
        mca_btl_elan_warm(local_address, size, MCA_BTL_ELAN_FRAG_GET == type);
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
    mca_btl_elan_module_t *module = (mca_btl_elan_module_t *) btl;

    if (OPAL_UNLIKELY(size > btl->btl_put_limit)) {
        return OPAL_ERR_BAD_PARAM;
    }
    ++module->stats.puts;
    module->stats.put_bytes += size;
    return mca_btl_elan_rdma(module, MCA_BTL_ELAN_FRAG_PUT, endpoint, local_address,
                             remote_address, local_handle, size, cbfunc, cbcontext, cbdata);
}

int mca_btl_elan_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     size_t size, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_elan_module_t *module = (mca_btl_elan_module_t *) btl;

    if (OPAL_UNLIKELY(size > btl->btl_get_limit)) {
        return OPAL_ERR_BAD_PARAM;
    }
    ++module->stats.gets;
    module->stats.get_bytes += size;
    return mca_btl_elan_rdma(module, MCA_BTL_ELAN_FRAG_GET, endpoint, local_address,
                             remote_address, local_handle, size, cbfunc, cbcontext, cbdata);
}
