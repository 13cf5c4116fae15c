// SPDX-License-Identifier: GPL-2.0
/*
 * fake-nicd: a stand-in for elan-nicd that only speaks the ivshmem-doorbell
 * server protocol (nic/ivshmem_server.c, elan-nicd's own), to test how
 * cluster/elan-cluster up --nic wires guests to nicd without the NIC.
 *
 *   fake-nicd --node I:SOCKET:RAMFILE:RAMBYTES [--node ...] [--pidfile FILE]
 *
 * For each node it listens on SOCKET, checks that RAMFILE exists with
 * RAMBYTES bytes and maps it shared (as nicd will, to DMA), and gives the
 * guest that connects a NIC region (nicd's, ELAN_REGION_SIZE) and
 * ELAN_NR_IRQS doorbell vectors, with itself as peer 0; every guest of a
 * socket gets the same ones.  Writes the pidfile once every socket
 * listens, as elan-nicd does.  Writes "node I: RAM file ok" and "node I:
 * guest connected" to its stdout (the cluster's nic/nicd.log).  Runs
 * until killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include "nicd.h"
#include "ivshmem_server.h"

struct fake_node {
	unsigned long idx;
	char *sock, *ram;
	unsigned long long ram_bytes;
	int region_fd;
	void *region;
	int db[ELAN_NR_IRQS];		/* the NIC's doorbells (peer 0) */
	int irq[ELAN_NR_IRQS];		/* the guest's vectors */
};

static void die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("fake-nicd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static int parse_ul(const char *s, unsigned long long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

/* --node I:SOCKET:RAMFILE:RAMBYTES */
static void parse_node(struct fake_node *nd, const char *spec)
{
	char *f[4], *p = strdup(spec);
	unsigned long long idx;
	int k;

	if (!p)
		die("out of memory");
	for (k = 0; k < 4; k++)
		f[k] = strsep(&p, ":");
	if (!f[3] || p || parse_ul(f[0], &idx) || parse_ul(f[3], &nd->ram_bytes))
		die("--node wants I:SOCKET:RAMFILE:RAMBYTES, not '%s'", spec);
	nd->idx = (unsigned long)idx;
	nd->sock = f[1];
	nd->ram = f[2];
}

/* The guest RAM file: RAMBYTES bytes, mapped shared (as nicd maps it). */
static void map_ram(const struct fake_node *nd)
{
	struct stat st;
	void *p;
	int fd;

	fd = open(nd->ram, O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		die("node %lu: %s: %s", nd->idx, nd->ram, strerror(errno));
	if ((unsigned long long)st.st_size != nd->ram_bytes)
		die("node %lu: %s has %lld bytes, not %llu", nd->idx, nd->ram,
		    (long long)st.st_size, nd->ram_bytes);
	p = mmap(NULL, (size_t)nd->ram_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	if (p == MAP_FAILED)
		die("node %lu: mmap %s: %s", nd->idx, nd->ram, strerror(errno));
	close(fd);
	printf("node %lu: RAM file ok (%s, %llu bytes)\n", nd->idx, nd->ram,
	       nd->ram_bytes);
}

static void setup_node(struct fake_node *nd)
{
	int v;

	nd->region_fd = nicd_region_create(&nd->region);
	if (nd->region_fd < 0)
		die("node %lu: region: %s", nd->idx, strerror(-nd->region_fd));
	for (v = 0; v < ELAN_NR_IRQS; v++) {
		nd->db[v] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		nd->irq[v] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (nd->db[v] < 0 || nd->irq[v] < 0)
			die("node %lu: eventfd: %s", nd->idx, strerror(errno));
	}
}

int main(int argc, char **argv)
{
	struct fake_node *nodes = NULL;
	struct pollfd *pfd;
	const char *pidfile = NULL;
	char err[300];
	int n = 0, i;

	for (i = 1; i < argc; i += 2) {
		if (!strcmp(argv[i], "--pidfile") && i + 1 < argc) {
			pidfile = argv[i + 1];
		} else if (!strcmp(argv[i], "--node") && i + 1 < argc) {
			nodes = realloc(nodes, (size_t)(n + 1) * sizeof(*nodes));
			if (!nodes)
				die("out of memory");
			parse_node(&nodes[n++], argv[i + 1]);
		} else {
			die("usage: --node I:SOCKET:RAMFILE:RAMBYTES ... [--pidfile F] (got %s)",
			    argv[i]);
		}
	}
	pfd = calloc(n ? (size_t)n : 1, sizeof(*pfd));
	if (!pfd)
		die("out of memory");
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < n; i++) {
		map_ram(&nodes[i]);
		setup_node(&nodes[i]);
		pfd[i].fd = ivsh_listen(nodes[i].sock, err, sizeof(err));
		if (pfd[i].fd < 0)
			die("node %lu: %s", nodes[i].idx, err);
		pfd[i].events = POLLIN;
	}
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");

		if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
			die("%s: %s", pidfile, strerror(errno));
	}
	printf("listening\n");

	for (;;) {
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		for (i = 0; i < n; i++) {
			struct fake_node *nd = &nodes[i];
			int fd;

			if (!(pfd[i].revents & POLLIN))
				continue;
			fd = accept4(pfd[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			/* the connection stays open (and unread) until we exit */
			if (ivsh_greet(fd, nd->region_fd, nd->db, nd->irq,
				       ELAN_NR_IRQS)) {
				fprintf(stderr, "fake-nicd: node %lu: setting up the guest failed: %s\n",
					nd->idx, strerror(errno));
				close(fd);
				continue;
			}
			printf("node %lu: guest connected\n", nd->idx);
		}
	}
}
