/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A pretend guest on elan-nicd's socket, as QEMU's ivshmem-doorbell
 * device connects (ivsh_test, fabric_test): every message of the server's
 * protocol (nic/ivshmem_server.h) checked, the NIC region mapped and its
 * header checked, the harness node pointed at it.
 */
#ifndef NIC_GUEST_CONN_H
#define NIC_GUEST_CONN_H

#include <stddef.h>
#include "harness.h"

struct guest {
	char sock[108];
	char ramfile[64];
	int sock_fd;
	int region_fd;
	int db[ELAN_NR_IRQS];		/* to nicd */
	int irq[ELAN_NR_IRQS];		/* from nicd (non-blocking) */
	struct elan_hw_header *hdr;
};

/*
 * Connect gg (node `node` of a fabric of `nodes`) to gg->sock and point
 * tn at its region, with no context used yet.  0, or 1 with what was
 * wrong in why.
 */
int guest_conn_open(struct guest *gg, struct th_node *tn, uint32_t node,
		  uint32_t nodes, char *why, size_t whylen);
/* Close what guest_conn_open opened; tn->region NULL (the fault service
 * skips it).  Safe on a guest not connected. */
void guest_conn_close(struct guest *gg, struct th_node *tn);
/* A connection to the unix socket path (nothing read): the fd or -1. */
int guest_conn_socket(const char *path);
/* Ring doorbell vector vec of gg (nothing when it is not connected). */
void guest_conn_ring(struct guest *gg, int vec);

#endif /* NIC_GUEST_CONN_H */
