/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A pretend guest of the real elan-nicd (ivsh_test, fabric_test): its RAM
 * in a /dev/shm file, its connection to nicd's socket as QEMU's
 * ivshmem-doorbell device makes it (every message of the server's
 * protocol, nic/ivshmem_server.h, checked; the NIC region mapped and its
 * header checked), and contexts attached and commands posted as elan.ko
 * and libelan do, over the harness's fake driver (harness.h).
 */
#ifndef NIC_GUEST_H
#define NIC_GUEST_H

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
	unsigned long work_rings;	/* doorbells rung by guest_post */
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
/*
 * RAM of size bytes for node `node` in a new /dev/shm file named after tag
 * and the pid (gg->ramfile; the caller removes it), mapped into tn.
 * 0, or -1 with errno.
 */
int guest_ram(struct guest *gg, struct th_node *tn, uint32_t node,
	      uint64_t size, const char *tag);
/* Post cmd on c as libelan would: seq, full fence, doorbell if the NIC
 * needs one (elan_doorbell_needed()).  0, or -1 when the queue is full. */
int guest_post(struct guest *gg, struct th_ctx *c, const struct elan_cmd *cmd);
/* Attach context idx of node through the fake driver and ring for it;
 * the context once nicd made it active (within 1 s), or NULL. */
struct th_ctx *guest_attach(struct th *t, struct guest *gg, uint32_t node,
			    uint32_t idx, uint64_t cap, uint32_t npages);
/* A connection to the unix socket path (nothing read): the fd or -1. */
int guest_conn_socket(const char *path);
/* Ring doorbell vector vec of gg (nothing when it is not connected). */
void guest_conn_ring(struct guest *gg, int vec);

#endif /* NIC_GUEST_H */
