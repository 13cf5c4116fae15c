// SPDX-License-Identifier: GPL-2.0
/*
 * The server side of the ivshmem-doorbell protocol (ivshmem_server.h):
 * the listening socket and the messages that set up a guest.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <elan/elan_hw.h>
#include "ivshmem_server.h"

#define IVSHMEM_PROTOCOL_VERSION	0
#define GUEST_PEER_ID			1	/* the one client of a socket */

/* One server message: an 8-byte little-endian number, maybe with an fd. */
static int send_msg(int sock, int64_t v, int fd)
{
	struct msghdr msg = { 0 };
	struct iovec iov;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	uint64_t le = htole64((uint64_t)v);
	ssize_t r;

	iov.iov_base = &le;
	iov.iov_len = sizeof(le);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&c, 0, sizeof(c));
		msg.msg_control = c.buf;
		msg.msg_controllen = sizeof(c.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	do
		r = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	return r == (ssize_t)sizeof(le) ? 0 : -1;
}

int ivsh_greet(int sock, int region_fd, const int *db, const int *irq,
	       int nvec)
{
	int v;

	/* version, the client's id, the region, our doorbells (peer 0),
	 * then the client's own interrupt vectors */
	if (send_msg(sock, IVSHMEM_PROTOCOL_VERSION, -1) ||
	    send_msg(sock, GUEST_PEER_ID, -1) ||
	    send_msg(sock, -1, region_fd))
		return -1;
	for (v = 0; v < nvec; v++)
		if (send_msg(sock, ELAN_NIC_PEER_ID, db[v]))
			return -1;
	for (v = 0; v < nvec; v++)
		if (send_msg(sock, GUEST_PEER_ID, irq[v]))
			return -1;
	return 0;
}

int ivsh_listen(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char tmp[sizeof(sa.sun_path)];
	struct stat st;
	int fd;

	/* Bound under a temporary name and renamed when it listens: whoever
	 * waits for the path to appear can connect at once. */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		snprintf(err, errlen, "socket path too long: %s", path);
		return -1;
	}
	strcpy(sa.sun_path, tmp);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket", path);
			return -1;
		}
		unlink(path);	/* stale, from an earlier run */
	}
	unlink(tmp);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 4) < 0 || rename(tmp, path) < 0) {
		snprintf(err, errlen, "listen on %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}
