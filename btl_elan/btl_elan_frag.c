/* -*- Mode: C; c-basic-offset:4 ; indent-tabs-mode:nil -*- */
/*
 * Copyright (c) 2026      The Elan project.  All rights reserved.
 * $COPYRIGHT$
 *
 * $HEADER$
 */
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
