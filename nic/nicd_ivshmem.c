// SPDX-License-Identifier: GPL-2.0
/*
 * elan-nicd's ivshmem server: one socket per guest, speaking the protocol
 * of QEMU's ivshmem-doorbell (ivshmem_server.c: the region fd, doorbell
 * and interrupt eventfds), connects and disconnects, and the epoll loop's
 * events.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include "elan-nicd.h"
#include "ivshmem_server.h"
#include "nicd_fabric.h"

struct srv_node srv[ELAN_MAX_NODES];
int epfd = -1;

void irq_cb(void *arg, uint32_t node, uint32_t vec)
{
	uint64_t one = 1;
	ssize_t r;

	(void)arg;
	if (node >= ELAN_MAX_NODES || vec >= ELAN_NR_IRQS || srv[node].cfd < 0 ||
	    srv[node].irq[vec] < 0)
		return;
	r = write(srv[node].irq[vec], &one, sizeof(one));
	(void)r;	/* EAGAIN: the counter is saturated, the irq pending */
}

static void close_fds(struct srv_node *s)
{
	int v;

	for (v = 0; v < ELAN_NR_IRQS; v++) {
		if (s->db[v] >= 0) {
			epoll_ctl(epfd, EPOLL_CTL_DEL, s->db[v], NULL);
			close(s->db[v]);
		}
		if (s->irq[v] >= 0)
			close(s->irq[v]);
		s->db[v] = s->irq[v] = -1;
	}
	if (s->cfd >= 0) {
		epoll_ctl(epfd, EPOLL_CTL_DEL, s->cfd, NULL);
		close(s->cfd);
		s->cfd = -1;
	}
	if (s->region) {
		nicd_region_destroy(s->region);
		s->region = NULL;
	}
	if (s->region_fd >= 0) {
		close(s->region_fd);
		s->region_fd = -1;
	}
	while (s->nvcpu > 0)
		close(s->vcpu_stat[--s->nvcpu]);
	s->vcpus_scanned = 0;
	s->qemu_pid = 0;
}

static void disconnect(uint32_t node)
{
	struct srv_node *s = &srv[node];

	if (s->cfd < 0)
		return;
	nicd_node_down(&nic, node);
	close_fds(s);
	nicd_logf(&nic, NICD_LOG_INFO, "node %u: guest disconnected", node);
}

static void accept_conn(uint32_t node)
{
	struct srv_node *s = &srv[node];
	struct epoll_event ev = { 0 };
	int fd, v, ok;

	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (s->cfd >= 0) {
		nicd_logf(&nic, NICD_LOG_WARN,
			  "node %u: a second guest connected to %s: refused",
			  node, s->sock_path);
		close(fd);
		return;
	}
	s->cfd = fd;
	{
		struct ucred cr;
		socklen_t crlen = sizeof(cr);

		if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen))
			s->qemu_pid = cr.pid;
	}
	s->region_fd = nicd_region_create(&s->region);
	if (s->region_fd < 0) {
		nicd_logf(&nic, NICD_LOG_ERR, "node %u: region: %s", node,
			  strerror(-s->region_fd));
		s->region = NULL;
		close_fds(s);
		return;
	}
	ok = 1;
	for (v = 0; v < ELAN_NR_IRQS; v++) {
		s->db[v] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		s->irq[v] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (s->db[v] < 0 || s->irq[v] < 0)
			ok = 0;
	}
	if (!ok) {
		nicd_logf(&nic, NICD_LOG_ERR, "node %u: eventfd: %s", node, strerror(errno));
		close_fds(s);
		return;
	}
	/* the header is written before the guest can see the region */
	nicd_node_up(&nic, node, s->region);
	if (ivsh_greet(fd, s->region_fd, s->db, s->irq, ELAN_NR_IRQS)) {
		nicd_logf(&nic, NICD_LOG_ERR, "node %u: setting up the guest failed: %s",
			  node, strerror(errno));
		nicd_node_down(&nic, node);
		close_fds(s);
		return;
	}
	ev.events = EPOLLIN | EPOLLRDHUP;
	ev.data.u64 = EV_DATA(EV_CONN, node, 0);
	epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
	for (v = 0; v < ELAN_NR_IRQS; v++) {
		ev.events = EPOLLIN;
		ev.data.u64 = EV_DATA(EV_DOORBELL, node, v);
		epoll_ctl(epfd, EPOLL_CTL_ADD, s->db[v], &ev);
	}
	s->connects++;
	nicd_logf(&nic, NICD_LOG_INFO, "node %u: guest connected (connection %llu)",
		  node, (unsigned long long)s->connects);
}

/* Handle what epoll reports.  Returns how many doorbells/socket events. */
static int handle_events(struct epoll_event *evs, int n);

int poll_events(int timeout_ms)
{
	struct epoll_event evs[64];

	return handle_events(evs, epoll_wait(epfd, evs, 64, timeout_ms));
}

int poll_events_ns(uint64_t timeout_ns)
{
	struct epoll_event evs[64];
	struct timespec ts = { .tv_sec = (time_t)(timeout_ns / 1000000000u),
			       .tv_nsec = (long)(timeout_ns % 1000000000u) };

	return handle_events(evs, epoll_pwait2(epfd, evs, 64, &ts, NULL));
}

static int handle_events(struct epoll_event *evs, int n)
{
	int i, got = 0;

	for (i = 0; i < n; i++) {
		uint32_t type = (uint32_t)(evs[i].data.u64 >> 32);
		uint32_t node = (uint32_t)(evs[i].data.u64 >> 8) & 0xffffff;
		uint32_t vec = (uint32_t)evs[i].data.u64 & 0xff;
		uint64_t val;
		char buf[64];
		ssize_t r;

		got++;
		switch (type) {
		case EV_LISTEN:
			accept_conn(node);
			break;
		case EV_CONN:
			r = read(srv[node].cfd, buf, sizeof(buf));
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) ||
			    (evs[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)))
				disconnect(node);
			break;
		case EV_DOORBELL:
			if (srv[node].db[vec] >= 0 &&
			    read(srv[node].db[vec], &val, sizeof(val)) == sizeof(val))
				nicd_doorbell(&nic, node, vec);
			break;
		case EV_FABRIC:		/* the UCP worker has events */
			fabric_progress(nicd_now_mono());
			break;
		}
	}
	return got;
}

void listen_node(uint32_t node)
{
	struct srv_node *s = &srv[node];
	struct epoll_event ev = { 0 };
	char err[300];

	s->lfd = ivsh_listen(s->sock_path, err, sizeof(err));
	if (s->lfd < 0)
		die("%s", err);
	ev.events = EPOLLIN;
	ev.data.u64 = EV_DATA(EV_LISTEN, node, 0);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, s->lfd, &ev) < 0)
		die("epoll: %s", strerror(errno));
}
