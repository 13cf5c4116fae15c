/**
 * Copyright (C) The Elan IOPROC project. 2026.  ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "elan_ep.h"

#include <ucs/arch/cpu.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/type/class.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>


static uct_iface_ops_t uct_elan_iface_ops;


static ucs_config_field_t uct_elan_iface_config_table[] = {
    {"", "ALLOC=huge,thp,mmap,heap", NULL,
     ucs_offsetof(uct_elan_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"SEG_SIZE", "8k",
     "Largest put or get done through a bounce buffer (put short and bcopy,\n"
     "get bcopy); larger ones go zero-copy, straight from and to the user's\n"
     "memory, which needs no registration on this NIC.",
     ucs_offsetof(uct_elan_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"CAPABILITY", "auto",
     "Job key of the NIC context (hexadecimal): only contexts with equal keys\n"
     "reach each other.  \"auto\": derived from the per-job key Open MPI's\n"
     "mpirun gives every rank, else from the user id (one key for all jobs of\n"
     "a user: launchers without a job key, such as MPICH's hydra, should set\n"
     "this per job).",
     ucs_offsetof(uct_elan_iface_config_t, capability), UCS_CONFIG_TYPE_STRING},

    {"MAX_POLL", "32",
     "Most completion events, and most messages, taken by one progress call.",
     ucs_offsetof(uct_elan_iface_config_t, max_poll), UCS_CONFIG_TYPE_UINT},

    {NULL}
};


ucs_status_t uct_elan_status(int elan_status)
{
    switch (elan_status) {
    case ELAN_OK:
        return UCS_OK;
    case ELAN_E_LOCAL_FAULT:
    case ELAN_E_LOCAL_PROT:
    case ELAN_E_REMOTE_FAULT:
    case ELAN_E_REMOTE_PROT:
        return UCS_ERR_INVALID_ADDR;
    case ELAN_E_BADCMD:
        return UCS_ERR_INVALID_PARAM;
    case ELAN_E_NO_CONTEXT:
        return UCS_ERR_UNREACHABLE;
    case ELAN_E_CAPABILITY:
        return UCS_ERR_REJECTED;
    case ELAN_E_TARGET_GONE:
        return UCS_ERR_CONNECTION_RESET;
    case ELAN_E_NODE_DOWN:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

/* The peer (node or context) is gone or unreachable: the ep is failed */
static int uct_elan_status_is_peer_failure(int elan_status)
{
    return (elan_status == ELAN_E_NO_CONTEXT) ||
           (elan_status == ELAN_E_CAPABILITY) ||
           (elan_status == ELAN_E_TARGET_GONE) ||
           (elan_status == ELAN_E_NODE_DOWN);
}

/* What the error handler is told: a peer context that is not there is a
 * peer gone, UCS_ERR_CONNECTION_RESET, as UCX's other transports say (the
 * op's own completion keeps the precise UCS_ERR_UNREACHABLE) */
static ucs_status_t uct_elan_ep_err_status(int elan_status,
                                           ucs_status_t status)
{
    return (elan_status == ELAN_E_NO_CONTEXT) ? UCS_ERR_CONNECTION_RESET :
                                                status;
}

static void uct_elan_iface_set_failed(uct_elan_iface_t *iface)
{
    if (!iface->failed) {
        iface->failed = 1;
        ucs_error("elan iface %p (0x%x): NIC context %s", iface, iface->addr,
                  elan_state_text(iface->ctx));
    }
}

ucs_status_t uct_elan_post_status(uct_elan_iface_t *iface, int ret)
{
    switch (ret) {
    case -EAGAIN:
        return UCS_ERR_NO_RESOURCE;
    case -EMSGSIZE:
        return UCS_ERR_EXCEEDS_LIMIT;
    case -EINVAL:
        return UCS_ERR_INVALID_PARAM;
    case -EPIPE:
        uct_elan_iface_set_failed(iface);
        return UCS_ERR_IO_ERROR;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

uct_elan_op_t *uct_elan_iface_op_get(uct_elan_iface_t *iface)
{
    uct_elan_op_t *op = ucs_mpool_get_inline(&iface->op_mp);

    if (ucs_unlikely(op == NULL)) {
        ucs_error("elan iface %p: no memory for an op descriptor", iface);
        return NULL;
    }

    op->comp   = NULL;
    op->result = NULL;
    return op;
}

void uct_elan_iface_op_posted(uct_elan_iface_t *iface, uct_elan_op_t *op)
{
    ucs_list_add_tail(&iface->outstanding, &op->list);
    ++iface->num_outstanding;
}

/* An ep goes: its ops still in flight complete without it */
void uct_elan_iface_ep_forget(uct_elan_iface_t *iface, uct_elan_ep_t *ep)
{
    uct_elan_op_t *op;

    if (ep->outstanding == 0) {
        return;
    }

    ucs_list_for_each(op, &iface->outstanding, list) {
        if (op->ep == ep) {
            op->ep = NULL;
        }
    }
}

static void uct_elan_iface_op_done(uct_elan_iface_t *iface, uct_elan_op_t *op,
                                   int elan_status, uint64_t value)
{
    ucs_status_t status = uct_elan_status(elan_status);
    uct_elan_ep_t *ep   = op->ep;

    ucs_list_del(&op->list);
    --iface->num_outstanding;
    if (ep != NULL) {
        --ep->outstanding;
    }

    if (ucs_likely(status == UCS_OK)) {
        switch (op->type) {
        case UCT_ELAN_OP_GET_BCOPY:
            op->unpack_cb(op->unpack_arg, uct_elan_op_data(op), op->length);
            break;
#ifdef UCT_ELAN_BROKEN_FETCH
        /* broken on purpose (PREFIX/lib-broken, for the tests only): the
         * fetched value is dropped */
        case UCT_ELAN_OP_FETCH32:
        case UCT_ELAN_OP_FETCH64:
            break;
#else
        case UCT_ELAN_OP_FETCH32:
            *(uint32_t*)op->result = (uint32_t)value;
            break;
        case UCT_ELAN_OP_FETCH64:
            *(uint64_t*)op->result = value;
            break;
#endif
        default:
            break;
        }
    } else {
        ucs_log((elan_status == ELAN_E_REMOTE_FAULT) ||
                (elan_status == ELAN_E_REMOTE_PROT) ?
                UCS_LOG_LEVEL_DIAG : UCS_LOG_LEVEL_DEBUG,
                "elan iface 0x%x: %s to node %u context %u failed: %s (%s)",
                iface->addr, (op->elan_op == ELAN_OP_SEND) ? "send" :
                (op->elan_op == ELAN_OP_GET) ? "get" :
                (op->elan_op == ELAN_OP_ATOMIC) ? "atomic" :
                (op->elan_op == ELAN_OP_FENCE) ? "fence" : "put",
                (ep != NULL) ? ELAN_ADDR_NODE(ep->dst) : 0,
                (ep != NULL) ? ELAN_ADDR_CTX(ep->dst) : 0,
                elan_strerror(elan_status), ucs_status_string(status));
        /* An op with a completion gets the error there; the ep fails too
         * when the peer is gone, or when nobody else can be told (put
         * short and bcopy, sends, atomic posts, ep_check) */
        if ((ep != NULL) && !ep->failed &&
            ((op->comp == NULL) ||
             uct_elan_status_is_peer_failure(elan_status))) {
            ep->failed = 1;
            uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                    uct_elan_ep_err_status(elan_status,
                                                           status));
        }
    }

    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }

    ucs_mpool_put_inline(op);
}

/* The NIC context failed or was stopped: nothing in flight will complete */
static void uct_elan_iface_fail_all(uct_elan_iface_t *iface)
{
    uct_elan_op_t *op, *tmp;

    uct_elan_iface_set_failed(iface);
    ucs_list_for_each_safe(op, tmp, &iface->outstanding, list) {
        uct_elan_iface_op_done(iface, op, ELAN_E_QUEUE, 0);
    }
}

static unsigned uct_elan_iface_progress(uct_iface_h tl_iface)
{
    uct_elan_iface_t *iface = ucs_derived_of(tl_iface, uct_elan_iface_t);
    struct elan_recv_hdr hdr;
    struct elan_event ev;
    const void *payload;
    unsigned count = 0;
    unsigned n;
    void *data;
    int ret;

    elan_batch_begin(iface->ctx);

    for (n = 0; n < iface->config.max_poll; ++n) {
        ret = elan_poll_event(iface->ctx, &ev);
        if (ret != 1) {
            if ((ret < 0) && !ucs_list_is_empty(&iface->outstanding)) {
                uct_elan_iface_fail_all(iface);
            }
            break;
        }

        if (ev.type == ELAN_EV_DONE) {
            uct_elan_iface_op_done(iface, (uct_elan_op_t*)(uintptr_t)ev.cookie,
                                   ev.status, ev.value);
        } else if (ev.type == ELAN_EV_ERROR) {
            uct_elan_iface_fail_all(iface);
        }
        ++count;
    }

    /* Messages: copied out, so the slot goes back to the NIC before the
     * handler runs (it may send, and the sender may be us) */
    for (n = 0; n < iface->config.max_poll; ++n) {
        if (elan_recv(iface->ctx, &hdr, &payload) != 1) {
            break;
        }

        data = UCS_PTR_BYTE_OFFSET(iface->rx_buf, iface->rx_offset);
        memcpy(data, payload, hdr.len);
        elan_recv_release(iface->ctx);
        if (ucs_unlikely(hdr.tag >= UCT_AM_ID_MAX)) {
            ucs_error("elan iface 0x%x: message of node %u context %u with "
                      "AM id %u dropped", iface->addr,
                      ELAN_ADDR_NODE(hdr.src), ELAN_ADDR_CTX(hdr.src), hdr.tag);
            continue;
        }

        uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, hdr.tag,
                           data, hdr.len, "RX: AM");
        uct_iface_invoke_am(&iface->super, hdr.tag, data, hdr.len, 0);
        ++count;
    }

    if (!ucs_arbiter_is_empty(&iface->arbiter) &&
        uct_elan_iface_has_tx_resources(iface)) {
        ucs_arbiter_dispatch(&iface->arbiter, 1, uct_elan_ep_process_pending,
                             NULL);
    }

    elan_batch_end(iface->ctx);
    return count;
}

ucs_status_t uct_elan_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                  uct_completion_t *comp)
{
    uct_elan_iface_t *iface = ucs_derived_of(tl_iface, uct_elan_iface_t);

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    if (!ucs_arbiter_is_empty(&iface->arbiter)) {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
        return UCS_ERR_NO_RESOURCE;
    }

    if (iface->num_outstanding == 0) {
        UCT_TL_IFACE_STAT_FLUSH(&iface->super);
        return UCS_OK;
    }

    UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
    return UCS_INPROGRESS;
}

static ucs_status_t uct_elan_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    /* every ep's fence orders its own ops; ops of one context start in
     * order and run one at a time (see uct_elan_ep_fence) */
    UCT_TL_IFACE_STAT_FENCE(ucs_derived_of(tl_iface, uct_base_iface_t));
    return UCS_OK;
}

static ucs_status_t uct_elan_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    *fd_p = elan_fd(ucs_derived_of(tl_iface, uct_elan_iface_t)->ctx);
    return UCS_OK;
}

/* The NIC's fd polls readable while an event or a message waits */
static ucs_status_t uct_elan_iface_event_arm(uct_iface_h tl_iface,
                                             unsigned events)
{
    uct_elan_iface_t *iface = ucs_derived_of(tl_iface, uct_elan_iface_t);
    int ret;

    if ((events & UCT_EVENT_SEND_COMP) &&
        !ucs_arbiter_is_empty(&iface->arbiter)) {
        return UCS_ERR_BUSY;
    }

    ret = elan_wait(iface->ctx, 0);
    if (ret == 1) {
        return UCS_ERR_BUSY;
    } else if (ret < 0) {
        if (ret == -EPIPE) {
            /* progress fails what is in flight */
            return ucs_list_is_empty(&iface->outstanding) ? UCS_ERR_IO_ERROR :
                   UCS_ERR_BUSY;
        }
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}

static ucs_status_t uct_elan_iface_query(uct_iface_h tl_iface,
                                         uct_iface_attr_t *attr)
{
    uct_elan_iface_t *iface = ucs_derived_of(tl_iface, uct_elan_iface_t);

    uct_base_iface_query(&iface->super, attr);

    attr->iface_addr_len          = sizeof(uct_elan_iface_addr_t);
    attr->device_addr_len         = 0;
    attr->ep_addr_len             = 0;
    attr->max_conn_priv           = 0;
    attr->cap.flags               = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                                    UCT_IFACE_FLAG_AM_SHORT         |
                                    UCT_IFACE_FLAG_AM_BCOPY         |
                                    UCT_IFACE_FLAG_PUT_SHORT        |
                                    UCT_IFACE_FLAG_PUT_BCOPY        |
                                    UCT_IFACE_FLAG_PUT_ZCOPY        |
                                    UCT_IFACE_FLAG_GET_BCOPY        |
                                    UCT_IFACE_FLAG_GET_ZCOPY        |
                                    UCT_IFACE_FLAG_ATOMIC_DEVICE    |
                                    UCT_IFACE_FLAG_PENDING          |
                                    UCT_IFACE_FLAG_CB_SYNC          |
                                    UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                                    UCT_IFACE_FLAG_EP_CHECK;
    attr->cap.event_flags         = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                                    UCT_IFACE_FLAG_EVENT_RECV      |
                                    UCT_IFACE_FLAG_EVENT_FD;

    attr->cap.atomic32.op_flags   =
    attr->cap.atomic64.op_flags   = UCS_BIT(UCT_ATOMIC_OP_ADD) |
                                    UCS_BIT(UCT_ATOMIC_OP_AND) |
                                    UCS_BIT(UCT_ATOMIC_OP_OR)  |
                                    UCS_BIT(UCT_ATOMIC_OP_XOR);
    attr->cap.atomic32.fop_flags  =
    attr->cap.atomic64.fop_flags  = UCS_BIT(UCT_ATOMIC_OP_ADD)  |
                                    UCS_BIT(UCT_ATOMIC_OP_AND)  |
                                    UCS_BIT(UCT_ATOMIC_OP_OR)   |
                                    UCS_BIT(UCT_ATOMIC_OP_XOR)  |
                                    UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                                    UCS_BIT(UCT_ATOMIC_OP_CSWAP);

    attr->cap.put.max_short       = iface->config.seg_size;
    attr->cap.put.max_bcopy       = iface->config.seg_size;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = UCT_ELAN_MAX_ZCOPY;
    attr->cap.put.opt_zcopy_align = 1;
    attr->cap.put.align_mtu       = 1;
    attr->cap.put.max_iov         = 1;

    attr->cap.get.max_bcopy       = iface->config.seg_size;
    attr->cap.get.min_zcopy       = 0;
    attr->cap.get.max_zcopy       = UCT_ELAN_MAX_ZCOPY;
    attr->cap.get.opt_zcopy_align = 1;
    attr->cap.get.align_mtu       = 1;
    attr->cap.get.max_iov         = 1;

    attr->cap.am.max_short        = ELAN_SEND_MAX;
    attr->cap.am.max_bcopy        = ELAN_SEND_MAX;
    attr->cap.am.min_zcopy        = 0;
    attr->cap.am.max_zcopy        = 0;
    attr->cap.am.opt_zcopy_align  = 1;
    attr->cap.am.align_mtu        = 1;
    attr->cap.am.max_hdr          = 0;
    attr->cap.am.max_iov          = 1;

    /* Measured here (a virtual NIC under TCG: a host thread, woken by a
     * doorbell): about 10 us for 8 bytes, about 1 GB/s */
    attr->latency                 = ucs_linear_func_make(10e-6, 0);
    attr->bandwidth.dedicated     = 1000.0 * UCS_MBYTE;
    attr->bandwidth.shared        = 0;
    attr->overhead                = 1e-6;
    attr->priority                = 0;
    return UCS_OK;
}

static ucs_status_t uct_elan_iface_get_address(uct_iface_h tl_iface,
                                               uct_iface_addr_t *addr)
{
    uct_elan_iface_t *iface = ucs_derived_of(tl_iface, uct_elan_iface_t);

    ((uct_elan_iface_addr_t*)addr)->addr = iface->addr;
    return UCS_OK;
}

static int uct_elan_iface_is_reachable(const uct_iface_h tl_iface,
                                       const uct_device_addr_t *dev_addr,
                                       const uct_iface_addr_t *iface_addr)
{
    const uct_elan_iface_addr_t *addr = (const void*)iface_addr;

    /* every context of the fabric, ours included; the NIC refuses other
     * jobs' contexts (a capability error) */
    return (addr != NULL) && (ELAN_ADDR_NODE(addr->addr) < ELAN_MAX_NODES) &&
           (ELAN_ADDR_CTX(addr->addr) < ELAN_MAX_CTX);
}

static ucs_status_t uct_elan_capability(const char *config, uint64_t *cap_p)
{
    unsigned long long hi, lo;
    const char *key;
    uint64_t cap;
    char *end;

    if (strcasecmp(config, "auto") != 0) {
        cap = strtoull(config, &end, 16);
        if ((end == config) || (*end != '\0') || (cap == 0)) {
            ucs_error("UCX_ELAN_CAPABILITY=%s: not a nonzero hexadecimal key",
                      config);
            return UCS_ERR_INVALID_PARAM;
        }
        *cap_p = cap;
        return UCS_OK;
    }

    /* the per-job key of Open MPI's mpirun (PSM and OFI use it too) */
    key = getenv("OMPI_MCA_orte_precondition_transports");
    if ((key != NULL) && (sscanf(key, "%16llx-%16llx", &hi, &lo) == 2)) {
        cap = elan_mix64(elan_mix64(hi) ^ lo ^ 0x756374ull);
    } else {
        cap = elan_mix64(0x7563745f656c616eull ^ getuid());
    }

    *cap_p = (cap == 0) ? 1 : cap;
    return UCS_OK;
}

static ucs_mpool_ops_t uct_elan_op_mpool_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

static UCS_CLASS_INIT_FUNC(uct_elan_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_elan_iface_config_t *config = ucs_derived_of(tl_config,
                                                     uct_elan_iface_config_t);
    size_t align_offset, alignment;
    ucs_status_t status;
    int ret;

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("the elan transport supports only UCT_IFACE_OPEN_MODE_DEVICE");
        return UCS_ERR_UNSUPPORTED;
    }

    UCS_CLASS_CALL_SUPER_INIT(
            uct_base_iface_t, &uct_elan_iface_ops,
            &uct_base_iface_internal_ops, md, worker, params,
            tl_config UCS_STATS_ARG(
                    (params->field_mask & UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                            params->stats_root : NULL)
            UCS_STATS_ARG(UCT_ELAN_TL_NAME));

    /* every op in flight has room for its completion in the event ring */
    UCS_STATIC_ASSERT(UCT_ELAN_TX_QUEUE_LEN <= ELAN_EVQ_ENTRIES);

    self->config.seg_size = ucs_max(config->seg_size, 64);
    self->config.max_poll = ucs_max(config->max_poll, 1);
    self->num_outstanding = 0;
    self->failed          = 0;
    ucs_list_head_init(&self->outstanding);
    ucs_arbiter_init(&self->arbiter);

    status = uct_elan_capability(config->capability, &self->capability);
    if (status != UCS_OK) {
        goto err_arbiter;
    }

    /* the messages' receive buffer, aligned as the user asked */
    status = uct_iface_param_am_alignment(params, ELAN_SEND_MAX, 0, 0,
                                          &alignment, &align_offset);
    if (status != UCS_OK) {
        goto err_arbiter;
    }

    if ((alignment == 0) || !ucs_is_pow2(alignment)) {
        ucs_error("elan: AM alignment %zu is not a power of 2", alignment);
        status = UCS_ERR_INVALID_PARAM;
        goto err_arbiter;
    }

    self->rx_offset = (alignment > 1) ?
                      (alignment - (align_offset % alignment)) % alignment : 0;
    ret = ucs_posix_memalign(&self->rx_buf, UCS_SYS_CACHE_LINE_SIZE,
                             ELAN_SEND_MAX + alignment, "elan rx buffer");
    if (ret != 0) {
        status = UCS_ERR_NO_MEMORY;
        goto err_arbiter;
    }

    status = ucs_mpool_init(&self->op_mp, 0,
                            sizeof(uct_elan_op_t) + self->config.seg_size, 0,
                            UCS_SYS_CACHE_LINE_SIZE, 16, UINT_MAX,
                            &uct_elan_op_mpool_ops, "elan_op_desc");
    if (status != UCS_OK) {
        goto err_rx_buf;
    }

    ret = elan_open(self->capability, &self->ctx);
    if (ret != 0) {
        ucs_error("elan: cannot attach a NIC context on %s: %s",
                  uct_elan_device_path(), strerror(-ret));
        status = (ret == -ENOSPC) ? UCS_ERR_EXCEEDS_LIMIT :
                 (ret == -ENOENT) || (ret == -ENODEV) ? UCS_ERR_NO_DEVICE :
                 UCS_ERR_IO_ERROR;
        goto err_mpool;
    }

    self->addr = elan_addr(self->ctx);
    ucs_debug("elan iface %p: NIC context 0x%x (node %u context %u)", self,
              self->addr, ELAN_ADDR_NODE(self->addr),
              ELAN_ADDR_CTX(self->addr));
    return UCS_OK;

err_mpool:
    ucs_mpool_cleanup(&self->op_mp, 0);
err_rx_buf:
    ucs_free(self->rx_buf);
err_arbiter:
    ucs_arbiter_cleanup(&self->arbiter);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_elan_iface_t)
{
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    /* ops still in flight are abandoned with the context */
    elan_close(self->ctx);
    ucs_mpool_cleanup(&self->op_mp, 0);
    ucs_free(self->rx_buf);
    ucs_arbiter_cleanup(&self->arbiter);
}

UCS_CLASS_DEFINE(uct_elan_iface_t, uct_base_iface_t);

static UCS_CLASS_DEFINE_NEW_FUNC(uct_elan_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_elan_iface_t, uct_iface_t);

static uct_iface_ops_t uct_elan_iface_ops = {
    .ep_put_short             = uct_elan_ep_put_short,
    .ep_put_bcopy             = uct_elan_ep_put_bcopy,
    .ep_put_zcopy             = uct_elan_ep_put_zcopy,
    .ep_get_bcopy             = uct_elan_ep_get_bcopy,
    .ep_get_zcopy             = uct_elan_ep_get_zcopy,
    .ep_am_short              = uct_elan_ep_am_short,
    .ep_am_short_iov          = uct_base_ep_am_short_iov,
    .ep_am_bcopy              = uct_elan_ep_am_bcopy,
    .ep_atomic_cswap64        = uct_elan_ep_atomic_cswap64,
    .ep_atomic64_post         = uct_elan_ep_atomic64_post,
    .ep_atomic64_fetch        = uct_elan_ep_atomic64_fetch,
    .ep_atomic_cswap32        = uct_elan_ep_atomic_cswap32,
    .ep_atomic32_post         = uct_elan_ep_atomic32_post,
    .ep_atomic32_fetch        = uct_elan_ep_atomic32_fetch,
    .ep_pending_add           = uct_elan_ep_pending_add,
    .ep_pending_purge         = uct_elan_ep_pending_purge,
    .ep_flush                 = uct_elan_ep_flush,
    .ep_fence                 = uct_elan_ep_fence,
    .ep_check                 = uct_elan_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_elan_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_elan_ep_t),
    .iface_flush              = uct_elan_iface_flush,
    .iface_fence              = uct_elan_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_elan_iface_progress,
    .iface_event_fd_get       = uct_elan_iface_event_fd_get,
    .iface_event_arm          = uct_elan_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_elan_iface_t),
    .iface_query              = uct_elan_iface_query,
    .iface_get_device_address = ucs_empty_function_return_success,
    .iface_get_address        = uct_elan_iface_get_address,
    .iface_is_reachable       = uct_elan_iface_is_reachable
};

static ucs_status_t
uct_elan_query_tl_devices(uct_md_h md, uct_tl_device_resource_t **tl_devices_p,
                          unsigned *num_tl_devices_p)
{
    return uct_single_device_resource(md, UCT_ELAN_DEV_NAME,
                                      UCT_DEVICE_TYPE_NET,
                                      UCS_SYS_DEVICE_ID_UNKNOWN, tl_devices_p,
                                      num_tl_devices_p);
}

UCT_TL_DEFINE_ENTRY(&uct_elan_component, elan, uct_elan_query_tl_devices,
                    uct_elan_iface_t, "ELAN_", uct_elan_iface_config_table,
                    uct_elan_iface_config_t);

UCT_SINGLE_TL_INIT(&uct_elan_component, elan, ctor,,)
