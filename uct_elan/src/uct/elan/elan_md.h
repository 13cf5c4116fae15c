/**
 * Copyright (C) The Elan IOPROC project. 2026.  ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 */

#ifndef UCT_ELAN_MD_H_
#define UCT_ELAN_MD_H_

#include <uct/base/uct_md.h>


#define UCT_ELAN_MD_NAME "elan"


/*
 * The Elan NIC follows the page tables of the process (the kernel's IOPROC
 * hooks keep its MMU in step with the CPU's), so a memory domain over it
 * registers nothing and pins nothing: a remote key is the remote address
 * itself, which every RMA and atomic call already carries.
 */
typedef struct uct_elan_md {
    uct_md_t super;
} uct_elan_md_t;


typedef struct uct_elan_md_config {
    uct_md_config_t super;
} uct_elan_md_config_t;


extern uct_component_t uct_elan_component;


/* The device node to open: $ELAN_DEVICE, else ELAN_DEVICE */
const char *uct_elan_device_path(void);

#endif
