/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elan-nicd's fabric transport: the links to the nicds of other hosts,
 * over UCX (UCP active messages).  It reads the fabric table, listens,
 * connects, authenticates peers with the fabric key, watches the links
 * (heartbeats, UCX endpoint errors) and carries the messages of
 * nic/nicd_remote.h.  See nic/README.md, "The fabric".
 *
 * Threading: everything runs on nicd's one thread, from the polling
 * loop (fabric_progress) and its epoll (the UCP worker's event fd).
 */
#ifndef NICD_FABRIC_H
#define NICD_FABRIC_H

#include <stdint.h>
#include "nicd.h"

#define FAB_MAX_HOSTS	16

/* A parsed fabric table (also used by tests). */
struct fab_table {
	uint32_t nhosts;
	uint32_t nodes;			/* highest node number + 1 */
	uint8_t key[64];
	uint32_t keylen;
	struct fab_table_host {
		char name[64];
		char addr[64];		/* IPv4 address or host name */
		uint16_t port;
		uint64_t nodes;		/* the nodes it owns */
	} host[FAB_MAX_HOSTS];
};

/*
 * Parse the table at path: lines "key SECRET" (at least 16 characters)
 * and "host NAME ADDRESS:PORT NODES" (NODES: 0-3,6), '#' comments.
 * 0, or -1 with a message naming the file and line in err.
 */
int fab_table_read(const char *path, struct fab_table *t, char *err,
		   size_t errlen);

/*
 * Join the fabric as host self (a NAME of the table): the table's other
 * hosts' nodes become remote nodes of n (nicd_node_remote), the UCP
 * worker's event fd is added to epfd with data ev_data.  Listens on its
 * own ADDRESS:PORT; links to the others come up in fabric_progress().
 * timeout_ms: a linked host silent this long is down.  0, or -1 after
 * logging why.
 */
int fabric_init(struct nicd *n, const struct fab_table *t, const char *self,
		uint64_t timeout_ms, int epfd, uint64_t ev_data);

/* The nodes this host owns (for checking --node). */
uint64_t fabric_local_nodes(void);

/*
 * Make progress: UCP's, the handshakes, heartbeats, silent hosts,
 * reconnects, STATE when our nodes changed.  Returns the work done.
 */
int fabric_progress(uint64_t now);

/* Before sleeping in epoll: 1 if there is work now (do not sleep), 0
 * if the worker is armed (its fd will wake us). */
int fabric_arm(void);

/* ns until fabric_progress() must run even without an event. */
uint64_t fabric_next_timeout(uint64_t now);

/* Log the links' counts; close them. */
void fabric_fini(void);

#endif /* NICD_FABRIC_H */
