/**
 * Copyright (C) The Elan IOPROC project. 2026.  ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 */

#ifndef UCT_ELAN_EP_H_
#define UCT_ELAN_EP_H_

#include "elan_iface.h"


struct uct_elan_ep {
    uct_base_ep_t       super;
    uint32_t            dst;           /* the peer's ELAN_ADDR() */
    unsigned            outstanding;   /* its ops posted, not completed */
    int                 failed;        /* the peer's failure was reported */
    int                 in_pending;    /* its pending request at the head of
                                          arb_group is running */
    ucs_arbiter_group_t arb_group;     /* its pending requests */
};


UCS_CLASS_DECLARE_NEW_FUNC(uct_elan_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_elan_ep_t, uct_ep_t);

ucs_status_t uct_elan_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                   unsigned length, uint64_t remote_addr,
                                   uct_rkey_t rkey);
ssize_t uct_elan_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                              void *arg, uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_elan_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_elan_ep_get_bcopy(uct_ep_h tl_ep,
                                   uct_unpack_callback_t unpack_cb, void *arg,
                                   size_t length, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_elan_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_elan_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                  const void *payload, unsigned length);
ssize_t uct_elan_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                             uct_pack_callback_t pack_cb, void *arg,
                             unsigned flags);
ucs_status_t uct_elan_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                       uint64_t value, uint64_t remote_addr,
                                       uct_rkey_t rkey);
ucs_status_t uct_elan_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                       uint32_t value, uint64_t remote_addr,
                                       uct_rkey_t rkey);
ucs_status_t uct_elan_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                        uint64_t value, uint64_t *result,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp);
ucs_status_t uct_elan_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                        uint32_t value, uint32_t *result,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp);
ucs_status_t uct_elan_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                        uint64_t swap, uint64_t remote_addr,
                                        uct_rkey_t rkey, uint64_t *result,
                                        uct_completion_t *comp);
ucs_status_t uct_elan_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                        uint32_t swap, uint64_t remote_addr,
                                        uct_rkey_t rkey, uint32_t *result,
                                        uct_completion_t *comp);
ucs_status_t uct_elan_ep_flush(uct_ep_h tl_ep, unsigned flags,
                               uct_completion_t *comp);
ucs_status_t uct_elan_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t uct_elan_ep_check(uct_ep_h tl_ep, unsigned flags,
                               uct_completion_t *comp);
ucs_status_t uct_elan_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                     unsigned flags);
void uct_elan_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                               void *arg);
ucs_arbiter_cb_result_t uct_elan_ep_process_pending(ucs_arbiter_t *arbiter,
                                                    ucs_arbiter_group_t *group,
                                                    ucs_arbiter_elem_t *elem,
                                                    void *arg);

#endif
