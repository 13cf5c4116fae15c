/*
 * osc dynwin: dynamic windows spanning nodes go to osc pt2pt where osc
 * rdma deadlocks on them.
 *
 * osc rdma of Open MPI 4.1.0 to 4.1.4 takes the target's region lock
 * exclusively in ompi_osc_rdma_find_dynamic_region() and then, refreshing
 * its copy of the target's attached regions, takes the same lock shared
 * (ompi_osc_rdma_refresh_dynamic_region()): the shared acquire sees the
 * exclusive holder, itself, and retries for ever.  So the first access to
 * a dynamic window of a process on another node hangs, over any BTL that
 * carries osc rdma (open-mpi/ompi issue 10328, fixed in 4.1.5).  Peers on
 * the same node are read through shared memory and do not take that path.
 *
 * This component claims exactly those windows (dynamic flavour, a peer on
 * another node, an affected release), with a priority above osc rdma's,
 * and has osc pt2pt create them: pt2pt carries RMA as messages over the
 * PML (ob1, over btl elan here).  Every other window is left alone.
 * "--mca osc ^dynwin" or osc_dynwin_priority = -1 turns it off.
 */

#include "ompi_config.h"

#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/group/group.h"
#include "ompi/mca/osc/base/base.h"
#include "ompi/mca/osc/osc.h"
#include "opal/mca/base/base.h"
#include "opal/util/output.h"

#define OSC_DYNWIN_AFFECTED                                                    \
    (OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION == 1 && OMPI_RELEASE_VERSION <= 4)

static int osc_dynwin_priority;

static int osc_dynwin_register(void);
static int osc_dynwin_init(bool enable_progress_threads, bool enable_mpi_threads);
static int osc_dynwin_query(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                            struct ompi_communicator_t *comm, struct opal_info_t *info,
                            int flavor);
static int osc_dynwin_select(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                             struct ompi_communicator_t *comm, struct opal_info_t *info,
                             int flavor, int *model);
static int osc_dynwin_finalize(void);

ompi_osc_base_component_t mca_osc_dynwin_component = {
    .osc_version = {
        OMPI_OSC_BASE_VERSION_3_0_0,
        .mca_component_name = "dynwin",
        MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                              OMPI_RELEASE_VERSION),
        .mca_register_component_params = osc_dynwin_register,
    },
    .osc_data = {
        MCA_BASE_METADATA_PARAM_NONE
    },
    .osc_init = osc_dynwin_init,
    .osc_query = osc_dynwin_query,
    .osc_select = osc_dynwin_select,
    .osc_finalize = osc_dynwin_finalize,
};

static int osc_dynwin_register(void)
{
    /* above osc rdma's 101 */
    osc_dynwin_priority = 200;
    (void) mca_base_component_var_register(&mca_osc_dynwin_component.osc_version, "priority",
                                           "Priority of osc dynwin for the dynamic windows it "
                                           "hands to osc pt2pt (those with a peer on another "
                                           "node, on Open MPI 4.1.0-4.1.4); negative: never",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_READONLY, &osc_dynwin_priority);
    return OMPI_SUCCESS;
}

static int osc_dynwin_init(bool enable_progress_threads, bool enable_mpi_threads)
{
    return OSC_DYNWIN_AFFECTED ? OMPI_SUCCESS : OMPI_ERR_NOT_AVAILABLE;
}

static int osc_dynwin_finalize(void)
{
    return OMPI_SUCCESS;
}

/* osc pt2pt among the opened components, or NULL. */
static ompi_osc_base_component_t *osc_dynwin_pt2pt(void)
{
    mca_base_component_list_item_t *cli;

    OPAL_LIST_FOREACH (cli, &ompi_osc_base_framework.framework_components,
                       mca_base_component_list_item_t) {
        if (0 == strcmp(cli->cli_component->mca_component_name, "pt2pt")) {
            return (ompi_osc_base_component_t *) cli->cli_component;
        }
    }
    return NULL;
}

static int osc_dynwin_query(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                            struct ompi_communicator_t *comm, struct opal_info_t *info,
                            int flavor)
{
    ompi_osc_base_component_t *pt2pt;

    if (MPI_WIN_FLAVOR_DYNAMIC != flavor || osc_dynwin_priority < 0
        || !ompi_group_have_remote_peers(comm->c_local_group)) {
        return -1;
    }
    pt2pt = osc_dynwin_pt2pt();
    if (NULL == pt2pt || pt2pt->osc_query(win, base, size, disp_unit, comm, info, flavor) < 0) {
        return -1;
    }
    return osc_dynwin_priority;
}

static int osc_dynwin_select(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                             struct ompi_communicator_t *comm, struct opal_info_t *info,
                             int flavor, int *model)
{
    ompi_osc_base_component_t *pt2pt = osc_dynwin_pt2pt();

    if (NULL == pt2pt) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    opal_output_verbose(10, ompi_osc_base_framework.framework_output,
                        "osc dynwin: dynamic window across nodes to osc pt2pt "
                        "(osc rdma of Open MPI 4.1.0-4.1.4 deadlocks on it)");
    return pt2pt->osc_select(win, base, size, disp_unit, comm, info, flavor, model);
}
