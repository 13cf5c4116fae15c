/**
 * Copyright (C) The Elan IOPROC project. 2026.  ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 */

#ifndef UCT_ELAN_IFACE_H_
#define UCT_ELAN_IFACE_H_

#include "elan_md.h"

#include <libelan.h>
#include <uct/base/uct_iface.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/mpool.h>


#define UCT_ELAN_TL_NAME     "elan"
#define UCT_ELAN_DEV_NAME    "elan0"

/* Largest put/get of one command: the event's len field is 32 bits */
#define UCT_ELAN_MAX_ZCOPY   UINT32_MAX

/* Most commands in flight (posted, completion not taken yet): the command
 * queue's size, so a post never finds the queue full; the event ring has
 * room for twice as many completions */
#define UCT_ELAN_TX_QUEUE_LEN ELAN_CMDQ_ENTRIES


/* The interface address: the NIC context's ELAN_ADDR(node, context) */
typedef struct uct_elan_iface_addr {
    uint32_t addr;
} UCS_S_PACKED uct_elan_iface_addr_t;


/* What to do when an operation's completion event arrives */
typedef enum {
    UCT_ELAN_OP_PLAIN,      /* put, send, atomic post, fence: nothing more */
    UCT_ELAN_OP_GET_BCOPY,  /* unpack the bounce buffer */
    UCT_ELAN_OP_FETCH32,    /* store the event's value in *result */
    UCT_ELAN_OP_FETCH64,
    UCT_ELAN_OP_CHECK       /* ep_check: report a failure of the peer */
} uct_elan_op_type_t;


typedef struct uct_elan_ep uct_elan_ep_t;


/*
 * One posted command, from post to its completion event (the cookie is
 * this descriptor's address).  The bounce buffer follows for put short and
 * bcopy, get bcopy and active messages; their data must stay until the
 * NIC has read (or written) it.
 */
typedef struct uct_elan_op {
    ucs_list_link_t       list;        /* in iface->outstanding */
    uct_elan_ep_t         *ep;         /* NULL when the ep is gone */
    uct_completion_t      *comp;
    void                  *result;     /* fetching atomics */
    uct_unpack_callback_t unpack_cb;   /* get bcopy */
    void                  *unpack_arg;
    uint32_t              length;
    uint8_t               type;        /* uct_elan_op_type_t */
    uint8_t               elan_op;     /* enum elan_op, for messages */
} uct_elan_op_t;


typedef struct uct_elan_iface_config {
    uct_iface_config_t super;
    size_t             seg_size;       /* bounce buffer of put/get bcopy */
    char               *capability;    /* job key, or "auto" */
    unsigned           max_poll;       /* events and messages per progress */
} uct_elan_iface_config_t;


typedef struct uct_elan_iface {
    uct_base_iface_t  super;
    elan_ctx_t        *ctx;            /* one NIC context per interface */
    uint32_t          addr;            /* its ELAN_ADDR() */
    uint64_t          capability;
    ucs_mpool_t       op_mp;           /* uct_elan_op_t + bounce buffer */
    ucs_list_link_t   outstanding;     /* posted, event not seen yet */
    unsigned          num_outstanding;
    ucs_arbiter_t     arbiter;         /* pending requests of all eps */
    void              *rx_buf;         /* a message copied out of the ring */
    size_t            rx_offset;       /* where in rx_buf it starts (align) */
    int               failed;          /* the NIC context failed */
    struct {
        size_t        seg_size;
        unsigned      max_poll;
    } config;
} uct_elan_iface_t;


/* The bounce buffer of an op */
static UCS_F_ALWAYS_INLINE void *uct_elan_op_data(uct_elan_op_t *op)
{
    return op + 1;
}

ucs_status_t uct_elan_status(int elan_status);

ucs_status_t uct_elan_post_status(uct_elan_iface_t *iface, int ret);

uct_elan_op_t *uct_elan_iface_op_get(uct_elan_iface_t *iface);

void uct_elan_iface_op_posted(uct_elan_iface_t *iface, uct_elan_op_t *op);

void uct_elan_iface_ep_forget(uct_elan_iface_t *iface, uct_elan_ep_t *ep);

ucs_status_t uct_elan_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                  uct_completion_t *comp);

/*
 * Room for one more command: the interface's own count of the commands
 * posted and not completed yet (num_outstanding), not the command queue's
 * free space, which the NIC makes on its own at any time.  Room comes back
 * only in progress, when a completion is taken: an op refused with
 * UCS_ERR_NO_RESOURCE and the pending_add after it see the same answer,
 * and the queue (of as many entries) is never full when a command is
 * posted.
 */
static UCS_F_ALWAYS_INLINE int
uct_elan_iface_has_tx_resources(uct_elan_iface_t *iface)
{
    return iface->num_outstanding < UCT_ELAN_TX_QUEUE_LEN;
}

#endif
