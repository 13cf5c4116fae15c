/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The server side of the protocol of QEMU's ivshmem-doorbell, as the Elan
 * NIC speaks it: elan-nicd's (nicd_ivshmem.c) and that of its stand-in
 * in tests/cluster (fake_nicd.c).
 *
 * One guest on a socket: it gets 8-byte little-endian numbers, some with
 * a file descriptor: the protocol version 0, its own id 1, -1 with the
 * NIC region's fd, the NIC's id (peer ELAN_NIC_PEER_ID) with each of its
 * doorbell eventfds, then its own id with each of its interrupt vectors'
 * eventfds.
 */
#ifndef ELAN_IVSHMEM_SERVER_H
#define ELAN_IVSHMEM_SERVER_H

#include <stddef.h>

/*
 * Listen on the unix socket path, bound under path.tmp and renamed when it
 * listens (whoever waits for path to appear can connect at once); a socket
 * left at path (a stale one) is replaced.  Returns the listening fd
 * (SOCK_CLOEXEC), or -1 with what went wrong in err.
 */
int ivsh_listen(const char *path, char *err, size_t errlen);

/*
 * Set up the guest connected on sock: the region, the NIC's doorbells
 * db[0..nvec-1] (the guest writes them), the guest's interrupt vectors
 * irq[0..nvec-1] (the NIC writes them).  0, or -1 with errno.
 */
int ivsh_greet(int sock, int region_fd, const int *db, const int *irq,
	       int nvec);

#endif /* ELAN_IVSHMEM_SERVER_H */
