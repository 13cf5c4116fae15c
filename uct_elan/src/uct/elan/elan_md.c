/**
 * Copyright (C) The Elan IOPROC project. 2026.  ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "elan_md.h"

#include <libelan.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <stdlib.h>
#include <unistd.h>


/* A memory handle that is not UCT_MEM_HANDLE_NULL and stands for nothing:
 * there is nothing to register */
#define UCT_ELAN_MEMH ((uct_mem_h)0xe1a0e1a0ul)


static ucs_config_field_t uct_elan_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_elan_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {NULL}
};


const char *uct_elan_device_path(void)
{
    const char *path = getenv("ELAN_DEVICE");

    return ((path != NULL) && (path[0] != '\0')) ? path : ELAN_DEVICE;
}

static ucs_status_t
uct_elan_query_md_resources(uct_component_t *component,
                            uct_md_resource_desc_t **resources_p,
                            unsigned *num_resources_p)
{
    if (access(uct_elan_device_path(), R_OK | W_OK) != 0) {
        ucs_debug("no Elan NIC here: %s: %m", uct_elan_device_path());
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }

    return uct_md_query_single_md_resource(component, resources_p,
                                           num_resources_p);
}

static ucs_status_t uct_elan_md_query(uct_md_h md, uct_md_attr_t *md_attr)
{
    /* Registration: free, of any size, and no remote key is needed
     * (UCT_MD_FLAG_NEED_RKEY is not set: the address is the key) */
    md_attr->cap.flags            = UCT_MD_FLAG_REG;
    md_attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->cap.alloc_mem_types  = 0;
    md_attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->cap.detect_mem_types = 0;
    md_attr->cap.max_alloc        = 0;
    md_attr->cap.max_reg          = ULONG_MAX;
    md_attr->rkey_packed_size     = 0;
    md_attr->reg_cost             = ucs_linear_func_make(0, 0);
    memset(&md_attr->local_cpus, 0xff, sizeof(md_attr->local_cpus));
    return UCS_OK;
}

static ucs_status_t uct_elan_mem_reg(uct_md_h md, void *address, size_t length,
                                     unsigned flags, uct_mem_h *memh_p)
{
    *memh_p = UCT_ELAN_MEMH;
    return UCS_OK;
}

static ucs_status_t uct_elan_mem_dereg(uct_md_h md,
                                       const uct_md_mem_dereg_params_t *params)
{
    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);

    ucs_assert(params->memh == UCT_ELAN_MEMH);
    return UCS_OK;
}

static ucs_status_t
uct_elan_mkey_pack(uct_md_h md, uct_mem_h memh,
                   const uct_md_mkey_pack_params_t *params, void *rkey_buffer)
{
    return UCS_OK;
}

static void uct_elan_md_close(uct_md_h md)
{
    ucs_free(md);
}

static ucs_status_t
uct_elan_md_open(uct_component_t *component, const char *md_name,
                 const uct_md_config_t *config, uct_md_h *md_p)
{
    static uct_md_ops_t md_ops = {
        .close                  = uct_elan_md_close,
        .query                  = uct_elan_md_query,
        .mem_alloc              = (uct_md_mem_alloc_func_t)
                                  ucs_empty_function_return_unsupported,
        .mem_free               = (uct_md_mem_free_func_t)
                                  ucs_empty_function_return_unsupported,
        .mem_reg                = uct_elan_mem_reg,
        .mem_dereg              = uct_elan_mem_dereg,
        .mkey_pack              = uct_elan_mkey_pack,
        .is_sockaddr_accessible = ucs_empty_function_return_zero_int,
        .detect_memory_type     = ucs_empty_function_return_unsupported
    };
    uct_elan_md_t *md;

    md = ucs_malloc(sizeof(*md), "uct_elan_md_t");
    if (md == NULL) {
        ucs_error("failed to allocate the Elan memory domain");
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &md_ops;
    md->super.component = &uct_elan_component;
    *md_p               = &md->super;
    return UCS_OK;
}

static ucs_status_t
uct_elan_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                     uct_rkey_t *rkey_p, void **handle_p)
{
    *rkey_p   = 0;
    *handle_p = NULL;
    return UCS_OK;
}

uct_component_t uct_elan_component = {
    .query_md_resources = uct_elan_query_md_resources,
    .md_open            = uct_elan_md_open,
    .cm_open            = ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_elan_rkey_unpack,
    .rkey_ptr           = ucs_empty_function_return_unsupported,
    .rkey_release       = ucs_empty_function_return_success,
    .name               = UCT_ELAN_MD_NAME,
    .md_config          = {
        .name           = "Elan memory domain",
        .prefix         = "ELAN_",
        .table          = uct_elan_md_config_table,
        .size           = sizeof(uct_elan_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_elan_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)ucs_empty_function
};
