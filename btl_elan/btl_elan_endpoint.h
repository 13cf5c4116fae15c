/* -*- Mode: C; c-basic-offset:4 ; indent-tabs-mode:nil -*- */
/*
 * Copyright (c) 2026      The Elan project.  All rights reserved.
 * $COPYRIGHT$
 *
 * $HEADER$
 */
#ifndef MCA_BTL_ELAN_ENDPOINT_H
#define MCA_BTL_ELAN_ENDPOINT_H

#include "btl_elan.h"

BEGIN_C_DECLS

/**
 * A peer process: its NIC context address, learned from the modex.
 * Nothing to connect: the NIC reaches any context of the same job.
 * Kept in the module's endpoint table, keyed by its opal_proc_t pointer.
 */
struct mca_btl_base_endpoint_t {
    opal_object_t super;
    struct opal_proc_t *proc;
    uint32_t addr;           /**< the peer's ELAN_ADDR() */
    bool local;              /**< on this node */
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
typedef mca_btl_base_endpoint_t mca_btl_elan_endpoint_t;

OBJ_CLASS_DECLARATION(mca_btl_elan_endpoint_t);

END_C_DECLS

#endif /* MCA_BTL_ELAN_ENDPOINT_H */
