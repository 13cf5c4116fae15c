/* -*- Mode: C; c-basic-offset:4 ; indent-tabs-mode:nil -*- */
/*
 * Copyright (c) 2026      The Elan project.  All rights reserved.
 * $COPYRIGHT$
 *
 * $HEADER$
 */
#include "btl_elan_endpoint.h"

#include "opal/util/proc.h"

static void mca_btl_elan_endpoint_construct(mca_btl_elan_endpoint_t *endpoint)
{
    endpoint->proc = NULL;
    endpoint->addr = 0;
    endpoint->local = false;
}

static void mca_btl_elan_endpoint_destruct(mca_btl_elan_endpoint_t *endpoint)
{
    if (NULL != endpoint->proc) {
        OBJ_RELEASE(endpoint->proc);
        endpoint->proc = NULL;
    }
}

OBJ_CLASS_INSTANCE(mca_btl_elan_endpoint_t, opal_object_t,
                   mca_btl_elan_endpoint_construct, mca_btl_elan_endpoint_destruct);
