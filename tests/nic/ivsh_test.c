// SPDX-License-Identifier: GPL-2.0
/*
 * End-to-end test of the elan-nicd program, without QEMU: this program
 * creates guest RAM files in /dev/shm, starts elan-nicd on them, connects
 * to its sockets the way QEMU's ivshmem-doorbell device does (checking
 * every protocol message), and plays the guest driver and user for each
 * node: attaches contexts in the region, rings doorbells through the
 * eventfds, serves faults on the fault interrupt, waits for events.
 *
 *   tests/nic/ivsh_test PATH-TO-elan-nicd [IDLE-SECONDS]
 *
 * Prints "ok N - ..." lines, the idle CPU use of nicd, and ends with
 * "N passed, M failed".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "harness.h"
#include "guest.h"

#define NODES	2
#define RAM	(64u << 20)

static int npass, nfail, ntest;
static char why[512];

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		snprintf(why, sizeof(why), __VA_ARGS__);		\
		return 1;						\
	}								\
} while (0)

static void result(const char *name, int r)
{
	ntest++;
	if (r == 0) {
		npass++;
		printf("ok %d - %s\n", ntest, name);
	} else {
		nfail++;
		printf("not ok %d - %s: %s\n", ntest, name, why);
	}
	fflush(stdout);
}

static struct th t;
static struct guest g[NODES];
static pid_t nicd_pid;
static char dir[64];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int guest_connect(int i)
{
	return guest_conn_open(&g[i], &t.node[i], (uint32_t)i, NODES, why,
			       sizeof(why));
}

static void guest_disconnect(int i)
{
	guest_conn_close(&g[i], &t.node[i]);
}

static void doorbell(int i, int vec)
{
	guest_conn_ring(&g[i], vec);
}

/* Wait for an event of c, serving faults when the fault interrupt comes. */
static int wait_ev(struct th_ctx *c, struct elan_event *ev, double secs)
{
	double t0 = now_s();
	struct pollfd p[NODES];
	uint64_t val;
	int i;

	while (now_s() - t0 < secs) {
		if (th_poll_ev(c, ev))
			return 1;
		for (i = 0; i < NODES; i++) {
			p[i].fd = g[i].irq[ELAN_IRQ_FAULT];
			p[i].events = POLLIN;
		}
		poll(p, NODES, 1);
		for (i = 0; i < NODES; i++)
			if (p[i].revents & POLLIN) {
				while (read(p[i].fd, &val, 8) == 8)
					;
			}
		if (th_service_faults(&t))
			for (i = 0; i < NODES; i++)
				doorbell(i, ELAN_DB_FAULT);
	}
	return 0;
}

static int post(struct th_ctx *c, const struct elan_cmd *cmd)
{
	return guest_post(&g[c->tn->id], c, cmd);
}

static int do_cmd(struct th_ctx *c, const struct elan_cmd *cmd, struct elan_event *ev)
{
	struct elan_event tmp;

	if (!ev)
		ev = &tmp;
	if (post(c, cmd) < 0 || !wait_ev(c, ev, 10))
		return -1;
	return ev->status;
}

static struct th_ctx *attach(int node, int idx, uint64_t cap, uint32_t npages)
{
	return guest_attach(&t, &g[node], (uint32_t)node, (uint32_t)idx, cap,
			    npages);
}

static int setup_ram(int i)
{
	return guest_ram(&g[i], &t.node[i], (uint32_t)i, RAM, "ivsh-test");
}

static char trace_path[128];

static cpu_set_t nicd_cpus;
static int nicd_pinned;

static int start_nicd(const char *prog)
{
	char spec[NODES][256], logf[128], *argv[2 * NODES + 10];
	int pfd[2], a = 0, i;
	char line[256];
	FILE *f;

	snprintf(logf, sizeof(logf), "%s/nicd.log", dir);
	snprintf(trace_path, sizeof(trace_path), "%s/trace.txt", dir);
	argv[a++] = (char *)prog;
	for (i = 0; i < NODES; i++) {
		snprintf(g[i].sock, sizeof(g[i].sock), "%s/node%d.sock", dir, i);
		snprintf(spec[i], sizeof(spec[i]), "%d:%s:%s", i, g[i].sock, g[i].ramfile);
		argv[a++] = "--node";
		argv[a++] = spec[i];
	}
	argv[a++] = "--log";
	argv[a++] = logf;
	argv[a++] = "--fault-timeout-ms";
	argv[a++] = "2000";
	argv[a++] = "--trace";
	argv[a++] = trace_path;
	/* on a CPU of its own (below), as beside the guests' vCPUs */
	argv[a++] = "--place";
	argv[a++] = "0";
	argv[a] = NULL;
	if (pipe(pfd) < 0)
		return -1;
	/*
	 * The test on one CPU, nicd on another, when there are two: a
	 * real-time nicd that wakes on the test's CPU preempts it at every
	 * doorbell, takes the one command posted and sleeps again (its
	 * consumer, this test, is not running), so a stream never gets
	 * ahead of it and never naps (the stream test's broken nicd,
	 * napdrop, then went uncaught).
	 */
	{
		cpu_set_t all, one;
		int c, k = 0;

		if (sched_getaffinity(0, sizeof(all), &all) == 0 && CPU_COUNT(&all) >= 2) {
			for (c = 0; c < CPU_SETSIZE; c++)
				if (CPU_ISSET(c, &all) && k++ == 0) {
					CPU_ZERO(&one);
					CPU_SET(c, &one);
					CPU_CLR(c, &all);
					sched_setaffinity(0, sizeof(one), &one);
					break;
				}
			nicd_cpus = all;
			nicd_pinned = 1;
		}
	}
	nicd_pid = fork();
	if (nicd_pid == 0) {
		/* nicd dies with this test, even if the test crashes */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (nicd_pinned)
			sched_setaffinity(0, sizeof(nicd_cpus), &nicd_cpus);
		dup2(pfd[1], 1);
		close(pfd[0]);
		execv(prog, argv);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	if (!fgets(line, sizeof(line), f) || !strstr(line, "ready"))
		return -1;
	fclose(f);
	return 0;
}

static uint64_t cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;
	int k;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	p = strrchr(buf, ')');
	/* fields after the name: state is field 3; utime 14, stime 15 */
	for (k = 3; p && k < 14; k++)
		p = strchr(p + 1, ' ');
	if (p)
		sscanf(p + 1, "%lu %lu", &ut, &st);
	return ut + st;
}

/* ns on CPU from /proc/PID/schedstat (finer than the ticks of stat) */
static uint64_t cpu_ns(pid_t pid)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &ns) != 1)
		ns = 0;
	fclose(f);
	return ns;
}

static double idle_wakeups = -1, idle_ns_pct = -1;

/* voluntary context switches: how often it wakes up */
static uint64_t switches(pid_t pid)
{
	char path[64], line[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* ------------------------------------------------------------ tests */

static int test_transfers(void)
{
	struct th_ctx *a, *b;
	struct elan_cmd cmd;
	struct elan_event ev;
	uint8_t *buf = malloc(1 << 20);
	uint64_t v;
	int k;

	a = attach(0, 0, 77, 512);
	b = attach(1, 3, 77, 512);
	CHECK(a && b, "attach: the NIC did not take up the contexts");
	CHECK(a->map.status->node == 0 && b->map.status->node == 1 && b->map.status->ctx == 3,
	      "status page identity");
	for (k = 0; k < (1 << 20); k++)
		buf[k] = (uint8_t)(k * 7 + 3);
	th_write_mem(a, th_va(a, 5), buf, 1 << 20);
	cmd = th_cmd(ELAN_OP_PUT, th_addr(b), th_va(a, 5), th_va(b, 4000), 1 << 20);
	CHECK(do_cmd(a, &cmd, &ev) == 0, "put 1 MiB: %s", nicd_status_name(ev.status));
	CHECK(!th_cmp_mem(b, th_va(b, 4000), buf, 1 << 20), "put data differs");
	cmd = th_cmd(ELAN_OP_GET, th_addr(b), th_va(a, 1 << 20), th_va(b, 4000), 1 << 20);
	CHECK(do_cmd(a, &cmd, &ev) == 0, "get: %s", nicd_status_name(ev.status));
	CHECK(!th_cmp_mem(a, th_va(a, 1 << 20), buf, 1 << 20), "get data differs");
	v = 40;
	th_write_mem(b, th_va(b, 64), &v, 8);
	cmd = th_cmd(ELAN_OP_ATOMIC, th_addr(b), th_va(a, 8192), th_va(b, 64), 8);
	cmd.aop = ELAN_AOP_ADD;
	cmd.operand = 2;
	cmd.flags = ELAN_CMDF_FETCH;
	CHECK(do_cmd(a, &cmd, &ev) == 0 && ev.value == 40, "atomic");
	th_read_mem(b, th_va(b, 64), &v, 8);
	CHECK(v == 42, "atomic result %llu", (unsigned long long)v);
	cmd = th_cmd(ELAN_OP_SEND, th_addr(b), th_va(a, 5), 0, 1000);
	cmd.tag = 9;
	CHECK(do_cmd(a, &cmd, &ev) == 0, "send");
	{
		struct elan_recv_hdr h;
		uint8_t got[ELAN_RECV_SLOT];

		CHECK(th_poll_recv(b, &h, got) && h.tag == 9 && h.len == 1000 &&
		      !memcmp(got, buf, 1000), "message not received");
	}
	CHECK(t.node[0].faults_served > 0 && t.node[1].faults_served > 0,
	      "no faults served");
	free(buf);
	return 0;
}

/*
 * A stream of small sends, as osu_bw posts them: bursts of up to twice a
 * ring's worth outstanding while the receiver drains its ring (so the
 * ring fills), 4000 messages of 1-64
 * bytes, each burst in two parts with a pause between (so the second
 * part is posted while nicd naps).  elan-nicd takes such bursts and naps
 * between them (--nap-us) instead of sleeping, unless a send waits for
 * room in the receiver's ring (then it sleeps, and the receiver rings):
 * so the second half of the stream keeps at most a ring's worth
 * outstanding.  Every message must still arrive exactly once, in the
 * order posted, with its bytes, and every send must complete in order.
 * (test_trace then checks that nicd napped.)
 */
static int test_stream(void)
{
	enum { N = 4000, WIN = 2 * ELAN_RECVQ_ENTRIES };
	struct th_ctx *a = attach(0, 5, 78, 16), *b = attach(1, 6, 78, 16);
	uint32_t posted = 0, events = 0, delivered = 0, i;
	uint8_t msg[64], got[ELAN_RECV_SLOT];
	struct elan_recv_hdr h;
	struct elan_event ev;
	double t0 = now_s();
	unsigned long rings0 = g[0].work_rings, half = 0;

	CHECK(a && b, "attach: the NIC did not take up the contexts");
	th_preload(a, th_va(a, 0), WIN * 64);
	while (delivered < N || events < N) {
		/* second half: bursts of a ring's worth, each posted once the
		 * last one completed (so nicd takes it with commands queued
		 * behind, and naps) */
		while (posted < N &&
		       (posted < N / 2 ? posted - events < WIN :
			posted - events < ELAN_RECVQ_ENTRIES &&
			(posted == events || posted % ELAN_RECVQ_ENTRIES))) {
			uint32_t len = 1 + posted % 64;
			struct elan_cmd cmd;

			for (i = 0; i < len; i++)
				msg[i] = (uint8_t)(posted * 13 + i);
			th_write_mem(a, th_va(a, (posted % WIN) * 64), msg, len);
			cmd = th_cmd(ELAN_OP_SEND, th_addr(b), th_va(a, (posted % WIN) * 64), 0, len);
			cmd.tag = posted;
			cmd.cookie = posted;
			if (post(a, &cmd) < 0)
				break;
			if (posted == N / 2)
				half = g[0].work_rings;
			/* a pause in the middle of the burst: the rest is
			 * posted while nicd naps after the first part */
			if (++posted % (ELAN_RECVQ_ENTRIES / 2) == 0) {
				double p0 = now_s();

				while (now_s() - p0 < 15e-6)
					;
			}
		}
		while (th_poll_ev(a, &ev)) {
			CHECK(ev.status == ELAN_OK && ev.cookie == events,
			      "send %u: completion of cookie %llu, status %u", events,
			      (unsigned long long)ev.cookie, ev.status);
			events++;
		}
		while (th_poll_recv(b, &h, got)) {
			uint32_t len = 1 + delivered % 64;

			CHECK(h.tag == delivered, "message %u: tag %u arrived in its place (dropped or reordered)",
			      delivered, h.tag);
			CHECK(h.len == len && h.src == th_addr(a), "message %u: %u bytes from %#x",
			      delivered, h.len, h.src);
			for (i = 0; i < len; i++)
				CHECK(got[i] == (uint8_t)(delivered * 13 + i),
				      "message %u: byte %u differs", delivered, i);
			delivered++;
		}
		CHECK(now_s() - t0 < 30, "after 30 s: %u posted, %u completed, %u delivered of %d",
		      posted, events, delivered, N);
	}
	CHECK(events == N, "%u completions for %d sends", events, N);
	printf("# stream: %.3f doorbells per send (%lu, %lu in the halves)\n",
	       (double)(g[0].work_rings - rings0) / N, half - rings0, g[0].work_rings - half);
	return 0;
}

/* Take b's messages as libelan does: release, then ring if the NIC waits
 * for that room and sleeps.  How many came in order (tag = k + first,
 * k bytes of k + first), or -1 at the first out of place. */
static int drain_in_order(struct th_ctx *b, uint32_t first)
{
	struct elan_recv_hdr h;
	uint8_t got[ELAN_RECV_SLOT];
	int k = 0;

	while (th_poll_recv(b, &h, got)) {
		if (h.tag != first + (uint32_t)k || h.len != 8 ||
		    got[0] != (uint8_t)(first + (uint32_t)k))
			return -1;
		k++;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (k && b->map.status->nic_waiting && b->map.status->nic_sleeping)
		doorbell(1, ELAN_DB_WORK);
	return k;
}

/* a buffer of its own for each send in flight (test_wakeups: a ring's
 * worth and more) */
#define SEND8_BUFS	(2 * ELAN_RECVQ_ENTRIES)

static int send8(struct th_ctx *a, struct th_ctx *b, uint32_t k)
{
	uint8_t msg[8];
	struct elan_cmd cmd;

	memset(msg, (uint8_t)k, sizeof(msg));
	th_write_mem(a, th_va(a, (k % SEND8_BUFS) * 64), msg, sizeof(msg));
	cmd = th_cmd(ELAN_OP_SEND, th_addr(b), th_va(a, (k % SEND8_BUFS) * 64), 0, sizeof(msg));
	cmd.tag = k;
	cmd.cookie = k;
	return post(a, &cmd);
}

/*
 * Doorbells only where needed (elan_doorbell_needed()): sends that wait
 * for room at a receiver that takes nothing stall the sender's queue
 * (status.nic_stalled), and what is posted behind them while the NIC
 * sleeps rings no doorbell; once the receiver takes its messages, every
 * one arrives in order.  Then the NIC sleeps between single sends, and
 * each must be taken at once: a poster that wrongly stays silent leaves
 * its command to the NIC's own 250 ms poll (a lost wake-up).
 */
static int test_wakeups(void)
{
	enum { FILL = ELAN_RECVQ_ENTRIES + 1, BEHIND = 16, PINGS = 10 };
	_Static_assert(FILL + BEHIND + PINGS <= SEND8_BUFS, "a buffer per send in flight");
	struct th_ctx *a = attach(0, 7, 79, 16), *b = attach(1, 8, 79, 16);
	uint32_t k, got = 0, events = 0;
	unsigned long rings;
	struct elan_event ev;
	double t0, worst = 0;
	int d;

	CHECK(a && b, "attach: the NIC did not take up the contexts");
	th_preload(a, th_va(a, 0), SEND8_BUFS * 64);
	for (k = 0; k < FILL; k++)
		CHECK(send8(a, b, k) == 0, "post %u", k);
	usleep(20000);
	CHECK(a->map.status->nic_sleeping && a->map.status->nic_stalled,
	      "after 20 ms with a send waiting for room: sleeping %u, stalled %u",
	      a->map.status->nic_sleeping, a->map.status->nic_stalled);
	rings = g[0].work_rings;
	for (; k < FILL + BEHIND; k++)
		CHECK(send8(a, b, k) == 0, "post %u", k);
	CHECK(g[0].work_rings == rings, "%lu doorbells for %d sends posted behind a stalled one",
	      g[0].work_rings - rings, BEHIND);
	t0 = now_s();
	while ((got < k || events < k) && now_s() - t0 < 10) {
		d = drain_in_order(b, got);
		CHECK(d >= 0, "message %u: dropped or reordered", got);
		got += (uint32_t)d;
		while (th_poll_ev(a, &ev)) {
			CHECK(ev.status == ELAN_OK && ev.cookie == events,
			      "send %u: completion of cookie %llu, status %u", events,
			      (unsigned long long)ev.cookie, ev.status);
			events++;
		}
	}
	CHECK(got == k && events == k, "after 10 s: %u of %u messages, %u completions", got, k,
	      events);
	for (; k < FILL + BEHIND + PINGS; k++) {
		usleep(5000);	/* the NIC falls asleep (spin 100 us) */
		CHECK(a->map.status->nic_sleeping, "the NIC is awake after 5 ms idle");
		CHECK(send8(a, b, k) == 0, "post %u", k);
		t0 = now_s();
		CHECK(wait_ev(a, &ev, 1) && ev.status == ELAN_OK && ev.cookie == k,
		      "send %u posted while the NIC slept: no completion in 1 s", k);
		if (now_s() - t0 > worst)
			worst = now_s() - t0;
		CHECK(now_s() - t0 < 0.1,
		      "send %u posted while the NIC slept was taken after %.0f ms: a lost wake-up",
		      k, (now_s() - t0) * 1e3);
		CHECK(drain_in_order(b, k) == 1, "message %u not received in its place", k);
	}
	printf("# wake-ups: slowest single send %.2f ms\n", worst * 1e3);
	return 0;
}

static int test_sleep_and_irq(double idle_secs, double *cpu_pct)
{
	struct th_ctx *a = &t.node[0].ctx[0];
	struct elan_cmd cmd = th_cmd(ELAN_OP_NOP, 0, 0, 0, 0);
	struct elan_event ev;
	uint64_t hb0, c0, c1, val, ns0, sw0;
	struct pollfd p;
	long hz = sysconf(_SC_CLK_TCK);
	double t0;

	usleep(200000);
	CHECK(g[0].hdr->nic_sleeping && a->map.status->nic_sleeping,
	      "NIC not sleeping after 200 ms idle");
	hb0 = g[0].hdr->heartbeat;
	c0 = cpu_ticks(nicd_pid);
	ns0 = cpu_ns(nicd_pid);
	sw0 = switches(nicd_pid);
	t0 = now_s();
	sleep((unsigned)idle_secs);
	c1 = cpu_ticks(nicd_pid);
	*cpu_pct = 100.0 * (double)(c1 - c0) / (double)hz / (now_s() - t0);
	idle_ns_pct = 100.0 * (double)(cpu_ns(nicd_pid) - ns0) / 1e9 / (now_s() - t0);
	idle_wakeups = (double)(switches(nicd_pid) - sw0) / (now_s() - t0);
	CHECK(g[0].hdr->heartbeat > hb0, "no heartbeat while idle");
	CHECK(*cpu_pct < 2.0, "idle CPU %.2f%%", *cpu_pct);
	/* wake by doorbell, event interrupt when armed */
	while (read(g[0].irq[ELAN_IRQ_EVENT], &val, 8) == 8)
		;
	a->map.ctl->armed = 1;
	t0 = now_s();
	CHECK(post(a, &cmd) == 0, "post");
	p.fd = g[0].irq[ELAN_IRQ_EVENT];
	p.events = POLLIN;
	CHECK(poll(&p, 1, 2000) == 1, "no event interrupt");
	CHECK(now_s() - t0 < 0.2, "wake-up took %.3f s", now_s() - t0);
	CHECK(th_poll_ev(a, &ev) && ev.status == 0, "no event after the interrupt");
	CHECK(a->map.ctl->armed == 0, "armed not cleared");
	return 0;
}

static int test_second_connection(void)
{
	int fd = guest_conn_socket(g[0].sock);
	struct pollfd p;
	char c;

	CHECK(fd >= 0, "connect");
	p.fd = fd;
	p.events = POLLIN;
	CHECK(poll(&p, 1, 2000) == 1 && read(fd, &c, 1) == 0,
	      "second guest on a socket not refused");
	close(fd);
	return 0;
}

static int test_disconnect(void)
{
	struct th_ctx *a = &t.node[0].ctx[0], *b;
	struct elan_cmd cmd;
	struct elan_event ev;
	uint32_t epoch = g[1].hdr->nic_epoch;
	int k;

	guest_disconnect(1);
	for (k = 0; k < 200 && (g[0].hdr->nodes_up & 2); k++)
		usleep(1000);
	CHECK(!(g[0].hdr->nodes_up & 2), "node 1 still up in nodes_up");
	cmd = th_cmd(ELAN_OP_PUT, ELAN_ADDR(1, 3), th_va(a, 0), 0x1000, 8);
	CHECK(do_cmd(a, &cmd, &ev) == ELAN_E_NODE_DOWN, "put to gone node: %s",
	      nicd_status_name(ev.status));
	if (guest_connect(1))
		return 1;	/* why says what */
	CHECK(g[1].hdr->nic_epoch > epoch, "epoch not bumped");
	b = attach(1, 3, 77, 64);
	CHECK(b, "attach after reconnect");
	cmd = th_cmd(ELAN_OP_PUT, th_addr(b), th_va(a, 0), th_va(b, 0), 4096);
	CHECK(do_cmd(a, &cmd, &ev) == 0, "put after reconnect: %s",
	      nicd_status_name(ev.status));
	return 0;
}

static int test_shutdown(void)
{
	int st, k;

	kill(nicd_pid, SIGTERM);
	CHECK(waitpid(nicd_pid, &st, 0) == nicd_pid, "waitpid");
	nicd_pid = 0;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d", st);
	for (k = 0; k < NODES; k++) {
		CHECK(g[k].hdr->nic_state == ELAN_NIC_DOWN, "node %d: nic_state not DOWN", k);
		CHECK(access(g[k].sock, F_OK) != 0, "socket %s left", g[k].sock);
	}
	return 0;
}

/*
 * --trace: the timeline written at exit holds, in time order, the 1 MiB
 * put of test_transfers taken and done, and faults, doorbells, sleeps and
 * wake-ups.
 */
static int test_trace(void)
{
	unsigned int node, ctx, op, len;
	unsigned long long t, last = 0;
	int put_c = 0, put_d = 0, nf = 0, nb = 0, ns = 0, nw = 0, nn = 0, ordered = 1;
	char line[160], kind;
	FILE *f = fopen(trace_path, "r");

	CHECK(f, "no trace file %s: %s", trace_path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "%llu %c %u %u %u %u", &t, &kind, &node, &ctx, &op, &len) != 6) {
			fclose(f);
			CHECK(0, "bad trace line: %.60s", line);
		}
		ordered &= t >= last;
		last = t;
		put_c += kind == 'C' && !node && !ctx && op == ELAN_OP_PUT && len == 1 << 20;
		put_d += kind == 'D' && !node && !ctx && op == ELAN_OP_PUT && len == 1 << 20;
		nf += kind == 'F';
		nb += kind == 'B';
		ns += kind == 'S';
		nw += kind == 'W';
		nn += kind == 'N';
	}
	fclose(f);
	CHECK(ordered, "trace records out of time order");
	CHECK(put_c && put_d, "the 1 MiB put: taken %d, done %d times in the trace", put_c, put_d);
	CHECK(nf && nb && ns && nw, "traced: %d faults, %d doorbells, %d sleeps, %d wake-ups", nf, nb,
	      ns, nw);
	printf("# traced: %d doorbells, %d sleeps, %d naps, %d wake-ups\n", nb, ns, nn, nw);
	CHECK(nn, "no nap traced: the stream of sends did not nap");
	return 0;
}

int main(int argc, char **argv)
{
	double idle = argc > 2 ? atof(argv[2]) : 10, cpu = -1;
	char cmdline[256];
	int i, r;

	if (argc < 2) {
		fprintf(stderr, "usage: ivsh_test PATH-TO-elan-nicd [IDLE-SECONDS]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* RAM files and dirs of earlier runs that died */
	if (system("for f in /dev/shm/elan-ivsh-test-* /tmp/elan-ivsh-test.*; do "
		   "[ -e \"$f\" ] || continue; p=${f##*[.-]test[.-]}; p=${p%%-*}; "
		   "kill -0 \"$p\" 2>/dev/null || rm -rf \"$f\"; done") < 0)
		perror("system");
	snprintf(dir, sizeof(dir), "/tmp/elan-ivsh-test.%d", (int)getpid());
	mkdir(dir, 0700);
	t.nnodes = NODES;
	for (i = 0; i < NODES; i++)
		if (setup_ram(i) < 0) {
			perror("guest RAM file");
			return 1;
		}
	r = start_nicd(argv[1]);
	if (r == 0)
		for (i = 0; i < NODES && r == 0; i++)
			r = guest_connect(i);
	else
		snprintf(why, sizeof(why), "elan-nicd did not say ready");
	result("nicd ready; QEMU-style setup messages on every socket; region header", r);
	if (r == 0) {
		result("put/get/atomic/send between two guests, faults on interrupt",
		       test_transfers());
		result("a stream of 4000 small sends across naps: none lost, none reordered",
		       test_stream());
		result("doorbells only where needed: none behind a stalled send, every wake-up kept",
		       test_wakeups());
		r = test_sleep_and_irq(idle, &cpu);
		result("sleeps when idle, doorbell wakes it, armed event interrupt", r);
		if (cpu >= 0)
			printf("# idle CPU of elan-nicd over %.0f s: %.2f%% (/proc/PID/stat), "
			       "%.4f%% (schedstat), %.1f wake-ups/s\n", idle, cpu,
			       idle_ns_pct, idle_wakeups);
		result("a second guest on one socket is refused", test_second_connection());
		result("guest disconnect: NODE_DOWN, reconnect with a fresh region",
		       test_disconnect());
		result("SIGTERM: NIC down in every region, sockets removed", test_shutdown());
		result("--trace: commands, completions, faults, doorbells, sleeps, naps at exit",
		       test_trace());
	}
	if (nicd_pid > 0) {
		kill(nicd_pid, SIGKILL);
		waitpid(nicd_pid, NULL, 0);
	}
	if (nfail) {
		snprintf(cmdline, sizeof(cmdline), "sed 's/^/#   nicd: /' %s/nicd.log | tail -30", dir);
		if (system(cmdline) < 0)
			perror("system");
	}
	for (i = 0; i < NODES; i++)
		unlink(g[i].ramfile);
	snprintf(cmdline, sizeof(cmdline), "rm -rf %s", dir);
	if (system(cmdline) < 0)
		perror("system");
	printf("%d passed, %d failed\n", npass, nfail);
	return nfail ? 1 : 0;
}
