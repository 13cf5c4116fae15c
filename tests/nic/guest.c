// SPDX-License-Identifier: GPL-2.0
/* A pretend guest of the real elan-nicd: see guest.h. */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "guest.h"

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		snprintf(why, whylen, __VA_ARGS__);			\
		return 1;						\
	}								\
} while (0)

/* One server message: an 8-byte little-endian number, maybe with an fd. */
static int recv_msg(int fd, int64_t *v, int *rfd)
{
	struct msghdr msg = { 0 };
	struct iovec iov;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct cmsghdr *cm;
	uint64_t le;

	iov.iov_base = &le;
	iov.iov_len = sizeof(le);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = c.buf;
	msg.msg_controllen = sizeof(c.buf);
	if (recvmsg(fd, &msg, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(le))
		return -1;
	*v = (int64_t)le64toh(le);
	*rfd = -1;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(rfd, CMSG_DATA(cm), sizeof(int));
	return 0;
}

int guest_conn_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(path) >= sizeof(sa.sun_path))
		goto fail;
	strcpy(sa.sun_path, path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

int guest_conn_open(struct guest *gg, struct th_node *tn, uint32_t node,
		  uint32_t nodes, char *why, size_t whylen)
{
	int64_t v;
	int fd, k;

	gg->sock_fd = guest_conn_socket(gg->sock);
	CHECK(gg->sock_fd >= 0, "connect %s: %s", gg->sock, strerror(errno));
	CHECK(recv_msg(gg->sock_fd, &v, &fd) == 0 && v == 0 && fd < 0,
	      "version message: %lld fd %d", (long long)v, fd);
	CHECK(recv_msg(gg->sock_fd, &v, &fd) == 0 && v == 1 && fd < 0,
	      "id message: %lld", (long long)v);
	CHECK(recv_msg(gg->sock_fd, &v, &fd) == 0 && v == -1 && fd >= 0,
	      "shm message: %lld fd %d", (long long)v, fd);
	gg->region_fd = fd;
	for (k = 0; k < ELAN_NR_IRQS; k++) {
		CHECK(recv_msg(gg->sock_fd, &v, &fd) == 0 && v == ELAN_NIC_PEER_ID &&
		      fd >= 0, "peer 0 vector %d: %lld fd %d", k, (long long)v, fd);
		gg->db[k] = fd;
	}
	for (k = 0; k < ELAN_NR_IRQS; k++) {
		CHECK(recv_msg(gg->sock_fd, &v, &fd) == 0 && v == 1 && fd >= 0,
		      "own vector %d: %lld fd %d", k, (long long)v, fd);
		gg->irq[k] = fd;
		fcntl(fd, F_SETFL, O_NONBLOCK);
	}
	gg->hdr = mmap(NULL, ELAN_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       gg->region_fd, 0);
	CHECK(gg->hdr != MAP_FAILED, "mmap region");
	/* nicd_node_up runs right after the messages: wait for the magic */
	for (k = 0; k < 1000 && __atomic_load_n(&gg->hdr->magic, __ATOMIC_ACQUIRE) !=
	     ELAN_HW_MAGIC; k++)
		usleep(1000);
	CHECK(gg->hdr->magic == ELAN_HW_MAGIC && gg->hdr->version == ELAN_HW_VERSION &&
	      gg->hdr->node == node && gg->hdr->nodes == nodes &&
	      gg->hdr->max_ctx == ELAN_MAX_CTX && gg->hdr->ctx_off == ELAN_REGION_OFF_CTX &&
	      gg->hdr->ctx_stride == ELAN_CTX_STRIDE &&
	      gg->hdr->region_size == ELAN_REGION_SIZE &&
	      gg->hdr->nic_state == ELAN_NIC_UP,
	      "region header wrong: node %u of %u nodes", gg->hdr->node,
	      gg->hdr->nodes);
	tn->region = gg->hdr;
	tn->fault_head = 0;
	tn->next_pfn = 16;
	for (k = 0; k < ELAN_MAX_CTX; k++) {
		free(tn->ctx[k].pt);
		tn->ctx[k].pt = NULL;
		tn->ctx[k].used = 0;
	}
	return 0;
}

void guest_conn_close(struct guest *gg, struct th_node *tn)
{
	int k;

	if (!tn->region)
		return;
	close(gg->sock_fd);
	for (k = 0; k < ELAN_NR_IRQS; k++) {
		close(gg->db[k]);
		close(gg->irq[k]);
	}
	munmap(gg->hdr, ELAN_REGION_SIZE);
	gg->hdr = NULL;
	close(gg->region_fd);
	tn->region = NULL;
}

void guest_conn_ring(struct guest *gg, int vec)
{
	uint64_t one = 1;

	if (gg->hdr && write(gg->db[vec], &one, 8) != 8)
		perror("doorbell");
}

int guest_ram(struct guest *gg, struct th_node *tn, uint32_t node,
	      uint64_t size, const char *tag)
{
	int fd;

	snprintf(gg->ramfile, sizeof(gg->ramfile), "/dev/shm/elan-%s-%d-%u",
		 tag, (int)getpid(), node);
	fd = open(gg->ramfile, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		return -1;
	}
	tn->id = node;
	tn->ram_size = size;
	th_ram_layout(tn);
	tn->ram = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return tn->ram == MAP_FAILED ? -1 : 0;
}

int guest_post(struct guest *gg, struct th_ctx *c, const struct elan_cmd *cmd)
{
	uint32_t pos = c->cmd_pos;

	if (th_post(c, cmd) < 0)
		return -1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (elan_doorbell_needed(c->map.status, pos, c->cmd_pos)) {
		guest_conn_ring(gg, ELAN_DB_WORK);
		gg->work_rings++;
	}
	return 0;
}

struct th_ctx *guest_attach(struct th *t, struct guest *gg, uint32_t node,
			    uint32_t idx, uint64_t cap, uint32_t npages)
{
	struct th_ctx *c = th_attach(t, node, idx, cap, npages);
	int k;

	if (!c)
		return NULL;
	guest_conn_ring(gg, ELAN_DB_CTX);
	for (k = 0; k < 2000 && c->map.ctl->nic_state != ELAN_CTX_ACTIVE; k++)
		usleep(500);
	return c->map.ctl->nic_state == ELAN_CTX_ACTIVE ? c : NULL;
}
