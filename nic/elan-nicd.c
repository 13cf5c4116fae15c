// SPDX-License-Identifier: GPL-2.0
/*
 * elan-nicd: the Elan NIC device model.  One ivshmem server socket per
 * guest (each guest sees only its own NIC region), the engine of the nicd
 * library, and the adaptive polling loop.
 *
 *   elan-nicd --node I:SOCKET:RAMFILE[:RAMSIZE] ... [--spin-us N]
 *             [--spin-lag-us N] [--spin-reply-us N] [--rt-priority N]
 *             [--place 0|1] [--fault-timeout-ms N] [--log FILE] [--pidfile FILE]
 *             [--trace FILE] [-v]
 *
 * Prints "elan-nicd: ready ..." on stdout (and writes the pidfile) once
 * every socket listens.  SIGTERM or SIGINT: NIC down in every region,
 * interrupt the guests, exit 0.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "nicd.h"

#define IVSHMEM_PROTOCOL_VERSION	0
#define GUEST_PEER_ID			1	/* the one client of a socket */

enum { EV_LISTEN = 1, EV_CONN, EV_DOORBELL };
#define EV_DATA(type, node, vec) \
	((uint64_t)(type) << 32 | (uint64_t)(node) << 8 | (uint64_t)(vec))

#define NVCPU_MAX	8

struct srv_node {
	int configured;
	char *sock_path;
	int lfd, cfd;
	int region_fd;
	void *region;
	int db[ELAN_NR_IRQS];		/* guest -> NIC (we read) */
	int irq[ELAN_NR_IRQS];		/* NIC -> guest (we write) */
	uint64_t connects;
	pid_t qemu_pid;			/* the peer of cfd */
	int vcpus_scanned;
	int nvcpu;
	int vcpu_stat[NVCPU_MAX];	/* /proc/PID/task/TID/stat of its vCPUs */
	uint64_t place_cmds;		/* commands done at the last placement */
};

static struct nicd nic;
static struct nicd_engine eng;
static struct srv_node srv[ELAN_MAX_NODES];
static int epfd = -1;
static FILE *logf_;
static volatile sig_atomic_t stop_sig;

static void log_line(void *arg, int level, const char *msg)
{
	static const char *const lv[] = { "error", "warning", "info", "debug" };
	struct timespec ts;
	struct tm tm;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	fprintf(logf_ ? logf_ : stderr, "%02d:%02d:%02d.%03ld elan-nicd %s: %s\n",
		tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
		lv[level < 0 || level > 3 ? 0 : level], msg);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "elan-nicd: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/*
 * The tunables: an option each and, for most, an environment variable
 * (elan-cluster passes ELAN_NICD_* on).  The environment is read first,
 * so an option overrides it.
 */
static struct {
	uint64_t spin_us, lag_us, reply_us, fault_ms;
	uint64_t rt_prio;
	uint64_t stall_ms;
	uint64_t place;
	const char *log, *pidfile, *trace;
} cfg = { .spin_us = 100, .lag_us = 3, .reply_us = 10, .fault_ms = 10000, .rt_prio = 1,
	  .place = 1 };

static const struct tunable {
	const char *opt, *env, *arg, *help;
	uint64_t *num;		/* a number in [0, max] ... */
	uint64_t max;
	const char **path;	/* ... or a path */
} tunables[] = {
	{ "spin-us", "ELAN_NICD_SPIN_US", "N", "poll this long idle before sleeping",
	  &cfg.spin_us, 10000000, NULL },
	{ "spin-lag-us", "ELAN_NICD_SPIN_LAG_US", "N",
	  "but sleep after N us idle when a process just given\n"
	  "events has not taken them (0: never)", &cfg.lag_us, 10000000, NULL },
	{ "spin-reply-us", "ELAN_NICD_SPIN_REPLY_US", "N",
	  "and after N us when messages were seen but their senders'\n"
	  "completions not taken", &cfg.reply_us, 10000000, NULL },
	{ "rt-priority", "ELAN_NICD_RT_PRIORITY", "N",
	  "run as SCHED_FIFO N (0: normal scheduling)", &cfg.rt_prio, 99, NULL },
	{ "place", "ELAN_NICD_PLACE", "0|1",
	  "1: sleep on the host CPU of a running vCPU of a guest\n"
	  "that posts nothing (a passive target) while others\n"
	  "post; 0: where the host scheduler leaves us",
	  &cfg.place, 1, NULL },
	{ "fault-timeout-ms", NULL, "N", "fail an op whose fault is not answered",
	  &cfg.fault_ms, 3600000, NULL },
	{ "inject-stall-ms", "ELAN_NICD_INJECT_STALL_MS", "N",
	  "fault injection: on SIGUSR2, stop for N ms (or until\n"
	  "the next SIGUSR2) inside the next chunk that writes\n"
	  "a target (as a nicd stopped or starved mid-copy);\n"
	  "on SIGUSR1 the same, its pages first erased from\n"
	  "what the drivers see (a broken NIC, for tests);\n"
	  "0: off", &cfg.stall_ms, 600000, NULL },
	{ "log", NULL, "FILE", "log here (default stderr)", NULL, 0, &cfg.log },
	{ "pidfile", NULL, "FILE", "written when every socket listens", NULL, 0,
	  &cfg.pidfile },
	{ "trace", "ELAN_NICD_TRACE", "FILE",
	  "record a timeline of commands, completions, faults,\n"
	  "doorbells, sleeps and wake-ups (the newest 1M),\n"
	  "written to FILE at exit",
	  NULL, 0, &cfg.trace },
};
#define NTUNABLES (sizeof(tunables) / sizeof(tunables[0]))
#define OPT_TUNABLE 256		/* getopt value of tunables[0] */

static void usage(void)
{
	const struct tunable *t;
	const char *h, *nl;
	char head[48];

	fprintf(stderr,
		"usage: elan-nicd --node I:SOCKET:RAMFILE[:RAMSIZE] ... [options]\n"
		"  --node I:SOCKET:RAMFILE[:RAMSIZE]  node I (0..%d): ivshmem server socket,\n"
		"                          guest RAM file (memory-backend-file share=on),\n"
		"                          optional RAM size (bytes, or with K/M/G)\n",
		ELAN_MAX_NODES - 1);
	for (t = tunables; t < tunables + NTUNABLES; t++) {
		snprintf(head, sizeof(head), "--%s %s", t->opt, t->arg);
		for (h = t->help; (nl = strchr(h, '\n')); h = nl + 1) {
			fprintf(stderr, "  %-23s %.*s\n", head, (int)(nl - h), h);
			head[0] = '\0';
		}
		fprintf(stderr, "  %-23s %s", head, h);
		if (t->num)
			fprintf(stderr, " (default %llu)", (unsigned long long)*t->num);
		if (t->env)
			fprintf(stderr, "\n  %-23s environment %s", "", t->env);
		fputc('\n', stderr);
	}
	fprintf(stderr, "  -v, --verbose           debug log\n");
	exit(2);
}

/* Set a tunable from @val (@from: the option or variable, for errors). */
static void set_tunable(const struct tunable *t, const char *val, const char *from)
{
	unsigned long long v;
	char *end;

	if (t->path) {
		*t->path = val;
		return;
	}
	errno = 0;
	v = strtoull(val, &end, 10);
	if (errno || end == val || *end || *val == '-' || v > t->max)
		die("%s: '%s' is not a number from 0 to %llu", from, val,
		    (unsigned long long)t->max);
	*t->num = v;
}

static void parse_args(int argc, char **argv, const char **nodes_spec, int *nspec,
		       int *verbose)
{
	struct option opts[NTUNABLES + 4] = {
		{ "node", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
	};
	const struct tunable *t;
	char from[64];
	const char *env;
	int c;

	for (t = tunables; t < tunables + NTUNABLES; t++) {
		opts[3 + (t - tunables)] = (struct option){ t->opt, required_argument, NULL,
							    OPT_TUNABLE + (int)(t - tunables) };
		env = t->env ? getenv(t->env) : NULL;
		if (env && *env)
			set_tunable(t, env, t->env);
	}
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		if (c >= OPT_TUNABLE && c < OPT_TUNABLE + (int)NTUNABLES) {
			t = &tunables[c - OPT_TUNABLE];
			snprintf(from, sizeof(from), "--%s", t->opt);
			set_tunable(t, optarg, from);
		} else if (c == 'n') {
			if (*nspec >= ELAN_MAX_NODES)
				die("too many --node");
			nodes_spec[(*nspec)++] = optarg;
		} else if (c == 'v') {
			*verbose = 1;
		} else {
			usage();
		}
	}
	if (optind != argc || *nspec == 0)
		usage();
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		die("bad size '%s'", s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end)
		die("bad size '%s'", s);
	return v;
}

/* ------------------------------------------------------------ ivshmem */

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

static void irq_cb(void *arg, uint32_t node, uint32_t vec)
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

/*
 * Where the NIC runs on the host.  nicd is real-time: it wakes on the
 * CPU it slept on and keeps whatever vCPU runs there off it while it
 * works.  With more busy threads than cores (two spinning MPI ranks and
 * nicd on two) it always sits beside some vCPU.  Beside one whose
 * process posts commands it delays each next command (MPI_Put + flush:
 * 13-16 us an op); beside one whose process only waits, a passive
 * target spinning in a barrier, it costs nothing (1.4-1.8 us).  So at
 * most every PLACE_NS, busy or not, nicd looks for a guest with a
 * running vCPU whose contexts took no command since the last look while
 * another guest's did, and took all they were given (nicd_node_settled),
 * and moves to that vCPU's CPU; when every running guest posts, it
 * leaves the choice to the host again.  Looking while busy bounds what a
 * guest flooding the NIC can cost a quiet one: once its vCPU falls
 * behind, nicd leaves it within PLACE_NS.  QEMU names its
 * vCPU threads "CPU n/..." (-name ...,debug-threads=on); without names
 * nothing moves.
 */
#define PLACE_NS	2000000ull

static cpu_set_t place_allowed;		/* our affinity at start */
static uint64_t place_moves;

static void vcpus_scan(struct srv_node *s)
{
	char path[64], comm[32];
	struct dirent *d;
	DIR *dir;
	int fd;
	ssize_t r;

	s->vcpus_scanned = 1;
	if (s->qemu_pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)s->qemu_pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir)) && s->nvcpu < NVCPU_MAX) {
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/comm",
			 (int)s->qemu_pid, d->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (r < 4 || strncmp(comm, "CPU ", 4))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/stat",
			 (int)s->qemu_pid, d->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			s->vcpu_stat[s->nvcpu++] = fd;
	}
	closedir(dir);
}

/* The host CPU of a running vCPU of the guest, or -1. */
static int vcpu_running_cpu(struct srv_node *s)
{
	char buf[512], *p;
	int i, f, cpu;
	ssize_t r;

	if (!s->vcpus_scanned)
		vcpus_scan(s);
	for (i = 0; i < s->nvcpu; i++) {
		r = pread(s->vcpu_stat[i], buf, sizeof(buf) - 1, 0);
		if (r <= 0)
			continue;
		buf[r] = 0;
		p = strrchr(buf, ')');	/* the name may hold anything */
		if (!p || p[1] != ' ' || p[2] != 'R')
			continue;
		/* from field 3, the state, to field 39, the processor */
		for (p += 2, f = 3; f < 39 && p; f++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (p && sscanf(p, "%d", &cpu) == 1 && cpu >= 0 &&
		    cpu < CPU_SETSIZE && CPU_ISSET(cpu, &place_allowed))
			return cpu;
	}
	return -1;
}

static void place(uint64_t now)
{
	static uint64_t next;
	static int pinned;
	uint32_t i, j, posters = 0;
	int quiet[ELAN_MAX_NODES], nquiet = 0, cpu = -1;
	uint64_t cmds;
	cpu_set_t set;

	if (now < next)
		return;
	next = now + PLACE_NS;
	for (i = 0; i < nic.nodes; i++) {
		if (!srv[i].configured || !nic.node[i].up)
			continue;
		for (cmds = 0, j = 0; j < ELAN_MAX_CTX; j++)
			cmds += nic.node[i].ctx[j].ncmds;
		/*
		 * Quiet: it posted nothing, and it is not behind either
		 * (it took every event and message and runs no op).  A
		 * guest that is behind is not a passive target but one that
		 * does not get the CPU: beside it we would starve it for
		 * good (we are real-time), as a guest flooding us with work
		 * would then make us do to its victims.
		 */
		if (cmds != srv[i].place_cmds)
			posters++;
		else if (nicd_node_settled(&nic, i))
			quiet[nquiet++] = (int)i;
		srv[i].place_cmds = cmds;
	}
	if (!posters)
		return;
	for (i = 0; i < (uint32_t)nquiet && cpu < 0; i++)
		cpu = vcpu_running_cpu(&srv[quiet[i]]);
	if (cpu < 0) {
		/* every running guest posts: leave it to the host again */
		if (pinned && !sched_setaffinity(0, sizeof(place_allowed),
						 &place_allowed))
			pinned = 0;
		return;
	}
	if (pinned && cpu == sched_getcpu())
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (!sched_setaffinity(0, sizeof(set), &set)) {
		pinned = 1;
		place_moves++;
	}
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
	/* version, the client's id, the region, our doorbells (peer 0),
	 * then the client's own interrupt vectors */
	ok = !send_msg(fd, IVSHMEM_PROTOCOL_VERSION, -1) &&
	     !send_msg(fd, GUEST_PEER_ID, -1) &&
	     !send_msg(fd, -1, s->region_fd);
	for (v = 0; ok && v < ELAN_NR_IRQS; v++)
		ok = !send_msg(fd, ELAN_NIC_PEER_ID, s->db[v]);
	for (v = 0; ok && v < ELAN_NR_IRQS; v++)
		ok = !send_msg(fd, GUEST_PEER_ID, s->irq[v]);
	if (!ok) {
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
static int poll_events(int timeout_ms)
{
	struct epoll_event evs[64];
	int n, i, got = 0;

	n = epoll_wait(epfd, evs, 64, timeout_ms);
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
		}
	}
	return got;
}

static void listen_node(uint32_t node)
{
	struct srv_node *s = &srv[node];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { 0 };
	struct stat st;

	char tmp[sizeof(sa.sun_path)];

	/* Bound under a temporary name and renamed when it listens: whoever
	 * waits for the path to appear can connect at once. */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", s->sock_path) >= sizeof(tmp))
		die("socket path too long: %s", s->sock_path);
	strcpy(sa.sun_path, tmp);
	if (lstat(s->sock_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			die("%s exists and is not a socket", s->sock_path);
		unlink(s->sock_path);	/* stale, from an earlier run */
	}
	unlink(tmp);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(s->lfd, 4) < 0 || rename(tmp, s->sock_path) < 0)
		die("listen on %s: %s", s->sock_path, strerror(errno));
	ev.events = EPOLLIN;
	ev.data.u64 = EV_DATA(EV_LISTEN, node, 0);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, s->lfd, &ev) < 0)
		die("epoll: %s", strerror(errno));
}

static void on_signal(int sig)
{
	stop_sig = sig;
}

/* 1: stall the next chunk (SIGUSR2), 2: and erase its names (SIGUSR1) */
static volatile sig_atomic_t stall_armed;

static void on_stall_signal(int sig)
{
	stall_armed = sig == SIGUSR1 ? 2 : 1;
}

/*
 * Fault injection (--inject-stall-ms): the whole NIC stops inside one
 * chunk, its translations read and its pages named, as a SIGSTOPped or
 * starved elan-nicd would.  The drivers' shootdowns of those pages time
 * out; the pages must be kept until the chunk ends (tests/faults).
 */
static void stall_hook(struct nicd *n, struct nicd_engine *e, uint32_t node,
		       int write, void *arg)
{
	struct timespec ts = { .tv_sec = (time_t)(cfg.stall_ms / 1000),
			       .tv_nsec = (long)(cfg.stall_ms % 1000) * 1000000 };
	int unnamed = stall_armed == 2;
	uint32_t i;

	(void)arg;
	if (!stall_armed || !write)
		return;
	stall_armed = 0;
	if (unnamed)
		for (i = 0; i < n->nodes; i++)
			if (n->node[i].up)
				__atomic_store_n(&n->node[i].hdr->engine[e->idx].runs,
						 0u, __ATOMIC_SEQ_CST);
	nicd_logf(n, NICD_LOG_WARN,
		  "fault injection: stalling %llu ms inside a chunk of engine %u into node %u%s",
		  (unsigned long long)cfg.stall_ms, e->idx, node,
		  unnamed ? ", its pages not named" : "");
	/* a second SIGUSR2 ends it early */
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !stop_sig &&
	       !stall_armed)
		;
	stall_armed = 0;
	nicd_logf(n, NICD_LOG_WARN, "fault injection: stall over, the chunk goes on");
}

static void add_node(const char *spec)
{
	char *copy = strdup(spec), *p = copy, *f[4] = { 0 };
	int k = 0;
	char *end;
	unsigned long id;

	while (k < 4 && (f[k] = strsep(&p, ":")))
		k++;
	if (k < 3 || p || !*f[0] || !*f[1] || !*f[2])
		die("--node wants I:SOCKET:RAMFILE[:RAMSIZE], not '%s'", spec);
	id = strtoul(f[0], &end, 10);
	if (*end || id >= ELAN_MAX_NODES)
		die("node number must be 0..%d: '%s'", ELAN_MAX_NODES - 1, f[0]);
	if (srv[id].configured)
		die("node %lu given twice", id);
	srv[id].configured = 1;
	srv[id].sock_path = strdup(f[1]);
	if (nicd_node_config(&nic, (uint32_t)id, f[2], k == 4 ? parse_size(f[3]) : 0))
		die("node %lu: bad configuration", id);
	free(copy);
}

/*
 * The NIC's engine is hardware: it should run as soon as there is work,
 * not wait behind vCPU threads for a time slice, nor be preempted in the
 * middle of a copy for one (a stall of milliseconds on a busy host, seen
 * in nicd timelines of osu_bw).  SCHED_FIFO does that; the polling loop
 * still sleeps when idle, and the kernel's real-time throttling bounds a
 * runaway.  Without the privilege nicd runs on, slower.
 */
static void set_rt_priority(int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	if (prio <= 0)
		return;
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0)
		nicd_logf(&nic, NICD_LOG_WARN,
			  "cannot run as SCHED_FIFO %d (%s): latency and bandwidth will suffer on a busy host; run as root or with CAP_SYS_NICE, or --rt-priority 0",
			  prio, strerror(errno));
	else
		nicd_logf(&nic, NICD_LOG_INFO, "running as SCHED_FIFO %d", prio);
}

/*
 * Past the lag: spin on while the consumers run, or while a reply is
 * awaited for less than reply_ns.
 */
static int keep_spinning(int consumers, uint64_t idle_ns, uint64_t reply_ns)
{
	return consumers == NICD_RUNNING ||
	       (consumers == NICD_REPLYING && idle_ns < reply_ns);
}

static void print_stats(void)
{
	uint32_t i, j;

	for (i = 0; i < nic.nodes; i++) {
		struct nicd_node *nd = &nic.node[i];
		uint64_t cmds = 0, bytes = 0;

		if (!srv[i].configured)
			continue;
		for (j = 0; j < ELAN_MAX_CTX; j++) {
			cmds += nd->ctx[j].ncmds;
			bytes += nd->ctx[j].nbytes;
		}
		nicd_logf(&nic, NICD_LOG_INFO,
			  "node %u: %llu connections, %llu commands, %llu bytes, %llu faults, %llu interrupts, %llu steps over its budget (current connection)",
			  i, (unsigned long long)srv[i].connects,
			  (unsigned long long)cmds, (unsigned long long)bytes,
			  (unsigned long long)nd->nfaults, (unsigned long long)nd->nirqs,
			  (unsigned long long)nd->budget_out);
	}
	if (cfg.place)
		nicd_logf(&nic, NICD_LOG_INFO,
			  "placement: %llu moves beside a guest that posted nothing",
			  (unsigned long long)place_moves);
}

int main(int argc, char **argv)
{
	const char *nodes_spec[ELAN_MAX_NODES];
	uint64_t spin_ns, lag_ns, reply_ns, hb_ns = 250000000ull, now, last_work,
		 last_poll = 0, last_hb = 0;
	uint32_t nnodes = 0, maxnode = 0, i;
	int verbose = 0, nspec = 0, v;
	struct sigaction sa = { 0 };

	parse_args(argc, argv, nodes_spec, &nspec, &verbose);
	spin_ns = cfg.spin_us * 1000;
	lag_ns = cfg.lag_us * 1000;
	reply_ns = cfg.reply_us * 1000;
	/* node count = highest node number + 1 */
	for (v = 0; v < nspec; v++) {
		unsigned long id = strtoul(nodes_spec[v], NULL, 10);

		if (id < ELAN_MAX_NODES && id + 1 > maxnode)
			maxnode = (uint32_t)id + 1;
	}
	if (nicd_init(&nic, maxnode ? maxnode : 1) < 0)
		die("bad node numbers");
	for (i = 0; i < ELAN_MAX_NODES; i++) {
		srv[i].lfd = srv[i].cfd = srv[i].region_fd = -1;
		for (v = 0; v < ELAN_NR_IRQS; v++)
			srv[i].db[v] = srv[i].irq[v] = -1;
	}
	for (v = 0; v < nspec; v++)
		add_node(nodes_spec[v]);
	if (cfg.log) {
		logf_ = fopen(cfg.log, "a");
		if (!logf_)
			die("%s: %s", cfg.log, strerror(errno));
		setvbuf(logf_, NULL, _IOLBF, 0);
	}
	nic.log = log_line;
	nic.log_level = verbose ? NICD_LOG_DEBUG : NICD_LOG_INFO;
	nic.irq = irq_cb;
	nic.fault_timeout_ns = cfg.fault_ms * 1000000ull;
	nicd_engine_init(&eng, 0);
	set_rt_priority((int)cfg.rt_prio);
	if (sched_getaffinity(0, sizeof(place_allowed), &place_allowed) < 0)
		CPU_ZERO(&place_allowed);
	if (cfg.trace) {
		if (nicd_trace_start(&nic) < 0)
			die("--trace: out of memory");
		nicd_logf(&nic, NICD_LOG_INFO, "tracing to %s at exit", cfg.trace);
	}

	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	if (cfg.stall_ms) {
		sa.sa_handler = on_stall_signal;
		sigaction(SIGUSR2, &sa, NULL);
		sigaction(SIGUSR1, &sa, NULL);
		eng.chunk_hook = stall_hook;
		nicd_logf(&nic, NICD_LOG_INFO,
			  "fault injection armed: SIGUSR2 (SIGUSR1: pages unnamed) stalls the next target write %llu ms",
			  (unsigned long long)cfg.stall_ms);
	}

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll: %s", strerror(errno));
	for (i = 0; i < ELAN_MAX_NODES; i++)
		if (srv[i].configured) {
			listen_node(i);
			nnodes++;
		}
	if (cfg.pidfile) {
		FILE *f = fopen(cfg.pidfile, "w");

		if (!f)
			die("%s: %s", cfg.pidfile, strerror(errno));
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	nicd_logf(&nic, NICD_LOG_INFO, "ready: %u nodes, spin %llu us (lag %llu us, reply %llu us), fault timeout %lu ms",
		  nnodes, (unsigned long long)(spin_ns / 1000),
		  (unsigned long long)(lag_ns / 1000),
		  (unsigned long long)(reply_ns / 1000),
		  (unsigned long)cfg.fault_ms);
	printf("elan-nicd: ready: %u nodes, pid %d\n", nnodes, (int)getpid());
	fflush(stdout);

	last_work = nicd_now_mono();
	while (!stop_sig) {
		int w = nicd_step(&nic, &eng);

		now = nicd_now_mono();
		if (w)
			last_work = now;
		/* while spinning, look at the sockets and doorbells every ms */
		if (now - last_poll >= 1000000) {
			if (poll_events(0))
				last_work = now;
			last_poll = now;
		}
		if (now - last_hb >= hb_ns) {
			nicd_heartbeat(&nic);
			last_hb = now;
		}
		/* also while busy: a flood must not keep us beside its victim */
		if (cfg.place)
			place(now);
		/*
		 * Spin while there is work and for spin_ns after it: a
		 * process that polls its rings posts its next command within
		 * microseconds.  But when what the last step posted is still
		 * not taken after lag_ns, that process is not running (it
		 * computes, sleeps, or waits for the very CPU we spin on:
		 * the host scheduler likes to put the NIC beside the vCPU
		 * whose doorbell woke it), so spinning on only delays it.
		 */
		if (w || (now - last_work < spin_ns &&
			  (!lag_ns || now - last_work < lag_ns ||
			   keep_spinning(nicd_consumers_behind(&nic),
					 now - last_work, reply_ns))))
			continue;
		/* idle: announce sleep, fence, look once more, then block */
		nicd_set_sleeping(&nic, 1);
		nicd_trace(&nic, 'S', 0, 0, 0, 0);
		w = nicd_step(&nic, &eng);
		if (!w) {
			uint64_t t = nicd_next_timeout(&nic);
			int ms;

			if (t > hb_ns)
				t = hb_ns;
			ms = (int)((t + 999999) / 1000000);
			if (poll_events(ms))
				last_work = nicd_now_mono();
			last_poll = nicd_now_mono();
		} else {
			last_work = nicd_now_mono();
		}
		nicd_set_sleeping(&nic, 0);
		nicd_trace(&nic, 'W', 0, 0, 0, 0);
	}
	nicd_logf(&nic, NICD_LOG_INFO, "signal %d: shutting down", (int)stop_sig);
	nicd_shutdown(&nic);
	print_stats();
	if (cfg.trace) {
		int r = nicd_trace_finish(&nic, cfg.trace);

		if (r < 0)
			nicd_logf(&nic, NICD_LOG_WARN, "--trace %s: %s", cfg.trace, strerror(-r));
	}
	/*
	 * The guests live on: their drivers fail every context with
	 * NODE_DOWN on the DOWN state.  Taking the nodes down here (or in
	 * nicd_fini()) would write FREE over that into the regions they
	 * still map, and a process would see its context "stopped" with no
	 * reason.  Exiting closes the connections and unmaps the rest.
	 */
	for (i = 0; i < ELAN_MAX_NODES; i++) {
		if (!srv[i].configured)
			continue;
		if (srv[i].lfd >= 0)
			close(srv[i].lfd);
		unlink(srv[i].sock_path);
	}
	if (cfg.pidfile)
		unlink(cfg.pidfile);
	return 0;
}
