// SPDX-License-Identifier: GPL-2.0
/*
 * The fabric of several hosts, end to end and without QEMU: two elan-nicd
 * processes on this machine, each a "host" of one fabric table (h0 owns
 * nodes 0 and 1, h1 nodes 2 and 3), linked by UCX (UCX_TLS=tcp on
 * loopback unless the environment says otherwise).  This program makes
 * the four guests' RAM files, connects to the four ivshmem sockets the
 * way QEMU does and plays driver and user for every node, as ivsh_test
 * does for one nicd: put, get, atomics and sends between nodes of
 * different hosts, checked byte for byte with the bytes around them;
 * faults served at both ends, also in the middle of big chunks, and a
 * fault error there (the bytes before it counted); pages moved by a
 * driver thread (shootdown) under big puts and gets, none written after
 * its release; protection errors; latency and bandwidth
 * across hosts beside the same figures within one; a peer SIGKILLed with
 * ops in flight (each ends in exactly one NODE_DOWN event, within the
 * bound); the link cut (the peer SIGSTOPped: silent, found by the
 * heartbeats; SIGCONT: linked again); an impostor without the fabric key
 * refused; one whose UCX tcp receive segment differs refused; the peer
 * rejoining without the other restarting; SIGTERM.
 *
 * With the broken nicd (nic/elan-nicd-broken, ELAN_NICD_BROKEN=nodedown,
 * heartbeat, norejoin or segcheck in the environment) the link cut must
 * fail (but with segcheck); with nodedown the SIGKILL too, with norejoin
 * the restart, with segcheck the receive segment check.
 *
 *   tests/nic/fabric_test PATH-TO-elan-nicd
 *
 * Prints "ok N - ..." lines, "# ..." figures, ends with "N passed, M failed".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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

#define NODES		4
#define RAM		(32u << 20)
#define TIMEOUT_MS	1000	/* --fabric-timeout-ms */
/* A lost host's nodes must be NODE_DOWN within this (link timeout + 1 s
 * of slack for a loaded machine). */
#define DOWN_BOUND_S	(TIMEOUT_MS / 1000.0 + 1.0)

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
static pid_t nicd_pid[2], impostor_pid;
static char dir[64], table[128], bad_table[128];
static const char *nicd_prog;
static int port0;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ guests */

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

/* The page tables: the fault service reads them, test_shootdown's page
 * mover changes them. */
static pthread_mutex_t pt_lock = PTHREAD_MUTEX_INITIALIZER;

/* The drivers' part while waiting: serve the faults of every node,
 * waiting up to ms for a fault interrupt. */
static void drivers_wait(int ms)
{
	struct pollfd p[NODES];
	uint64_t val;
	int i, np = 0;

	for (i = 0; i < NODES; i++)
		if (t.node[i].region) {
			p[np].fd = g[i].irq[ELAN_IRQ_FAULT];
			p[np++].events = POLLIN;
		}
	poll(p, (nfds_t)np, ms);
	for (i = 0; i < np; i++)
		if (p[i].revents & POLLIN)
			while (read(p[i].fd, &val, 8) == 8)
				;
	pthread_mutex_lock(&pt_lock);
	i = th_service_faults(&t);
	pthread_mutex_unlock(&pt_lock);
	if (i)
		for (i = 0; i < NODES; i++)
			doorbell(i, ELAN_DB_FAULT);
}

static void drivers(void)
{
	drivers_wait(1);
}

/* Measuring: spin, looking at the fault queues without sleeping. */
static int spin;

static int wait_ev(struct th_ctx *c, struct elan_event *ev, double secs)
{
	double t0 = now_s();

	while (now_s() - t0 < secs) {
		if (th_poll_ev(c, ev))
			return 1;
		drivers_wait(spin ? 0 : 1);
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
	if (post(c, cmd) < 0 || !wait_ev(c, ev, 20))
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
	return guest_ram(&g[i], &t.node[i], (uint32_t)i, RAM, "fabric-test");
}

/* ------------------------------------------------------------ nicds */

static int write_table(const char *path, const char *key)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "# two simulated hosts on loopback\nkey %s\n"
		"host h0 127.0.0.1:%d 0-1\nhost h1 127.0.0.1:%d 2-3\n",
		key, port0, port0 + 1);
	return fclose(f);
}

/* Start the nicd of host h (0 or 1) on the table; its log in dir. */
static pid_t start_nicd(int h, const char *tbl, const char *logname)
{
	char spec[2][256], logf[128], *argv[24];
	int pfd[2], a = 0, i;
	char line[256] = "";
	pid_t pid;
	FILE *f;

	snprintf(logf, sizeof(logf), "%s/%s", dir, logname);
	argv[a++] = (char *)nicd_prog;
	for (i = 0; i < 2; i++) {
		int node = 2 * h + i;

		snprintf(spec[i], sizeof(spec[i]), "%d:%s:%s", node, g[node].sock,
			 g[node].ramfile);
		argv[a++] = "--node";
		argv[a++] = spec[i];
	}
	argv[a++] = "--fabric";
	argv[a++] = (char *)tbl;
	argv[a++] = "--host";
	argv[a++] = h ? "h1" : "h0";
	argv[a++] = "--fabric-timeout-ms";
	argv[a++] = TIMEOUT_MS == 1000 ? "1000" : "?";
	argv[a++] = "--fault-timeout-ms";
	argv[a++] = "3000";
	argv[a++] = "--rt-priority";
	argv[a++] = getenv("FABRIC_TEST_RT") ? getenv("FABRIC_TEST_RT") : "1";
	argv[a++] = "--place";
	argv[a++] = "0";
	argv[a++] = "--log";
	argv[a++] = logf;
	argv[a] = NULL;
	if (pipe(pfd) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		close(pfd[0]);
		execv(nicd_prog, argv);
		_exit(127);
	}
	close(pfd[1]);
	/* UCX logs its own errors (a peer not listening yet) on stdout */
	f = fdopen(pfd[0], "r");
	while (fgets(line, sizeof(line), f) && !strstr(line, "elan-nicd: ready"))
		;
	if (!strstr(line, "elan-nicd: ready")) {
		fclose(f);
		return -1;
	}
	fclose(f);
	return pid;
}

/* Wait until node i's header shows exactly the nodes of mask up. */
static int wait_nodes_up(int i, uint64_t mask, double secs)
{
	double t0 = now_s();

	while (now_s() - t0 < secs) {
		if (__atomic_load_n(&g[i].hdr->nodes_up, __ATOMIC_ACQUIRE) == mask)
			return 0;
		usleep(1000);
	}
	return -1;
}

static int log_has(const char *logname, const char *what)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "grep -q -- '%s' %s/%s", what, dir, logname);
	return system(cmd) == 0;
}

/* Lines of a log holding what. */
static int log_count(const char *logname, const char *what)
{
	char cmd[512];
	int n = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "grep -c -F -- '%s' %s/%s", what, dir, logname);
	p = popen(cmd, "r");
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
}

/* ------------------------------------------------------------ tests */

static struct th_ctx *a, *a1, *b, *b3, *c1;

static int test_link(double *secs)
{
	double t0 = now_s();

	CHECK(wait_nodes_up(0, 0xf, 10) == 0 && wait_nodes_up(2, 0xf, 10) == 0,
	      "nodes_up %#llx at node 0, %#llx at node 2 (want 0xf)",
	      (unsigned long long)g[0].hdr->nodes_up,
	      (unsigned long long)g[2].hdr->nodes_up);
	*secs = now_s() - t0;
	return 0;
}

static int attach_all(void)
{
	a = attach(0, 0, 77, 2048);	/* 8 MiB */
	a1 = attach(0, 1, 77, 1024);
	b = attach(2, 3, 77, 1024);
	b3 = attach(3, 0, 77, 1024);
	c1 = attach(1, 2, 77, 1024);
	CHECK(a && a1 && b && b3 && c1, "attach: the NICs did not take the contexts up");
	return 0;
}

/* One put and one get of len bytes between x and y at odd offsets, data
 * checked, and the bytes just outside the destination untouched. */
static int xfer_check(struct th_ctx *x, struct th_ctx *y, uint64_t len,
		      uint64_t xoff, uint64_t yoff, uint8_t seed)
{
	uint8_t *buf = malloc(len + 2), *back = malloc(len + 2), edge[2];
	struct elan_cmd cmd;
	struct elan_event ev;
	uint64_t k;
	int r;

	for (k = 0; k < len; k++)
		buf[k] = (uint8_t)(k * 7 + seed + (k >> 12));
	th_write_mem(x, th_va(x, xoff), buf, len);
	edge[0] = 0x5a;
	edge[1] = 0xa5;
	th_write_mem(y, th_va(y, yoff - 1), &edge[0], 1);
	th_write_mem(y, th_va(y, yoff + len), &edge[1], 1);
	cmd = th_cmd(ELAN_OP_PUT, th_addr(y), th_va(x, xoff), th_va(y, yoff), len);
	r = do_cmd(x, &cmd, &ev);
	CHECK(r == 0 && ev.len == len, "put %llu B: %s, len %u",
	      (unsigned long long)len, nicd_status_name(r), ev.len);
	CHECK(!th_cmp_mem(y, th_va(y, yoff), buf, len), "put %llu B: data differs",
	      (unsigned long long)len);
	th_read_mem(y, th_va(y, yoff - 1), &back[0], 1);
	th_read_mem(y, th_va(y, yoff + len), &back[1], 1);
	CHECK(back[0] == 0x5a && back[1] == 0xa5, "put %llu B wrote outside its range",
	      (unsigned long long)len);
	/* and back: into another place of x */
	th_write_mem(x, th_va(x, xoff + len + 8191 - 1), &edge[0], 1);
	cmd = th_cmd(ELAN_OP_GET, th_addr(y), th_va(x, xoff + len + 8191),
		     th_va(y, yoff), len);
	r = do_cmd(x, &cmd, &ev);
	CHECK(r == 0 && ev.len == len, "get %llu B: %s", (unsigned long long)len,
	      nicd_status_name(r));
	CHECK(!th_cmp_mem(x, th_va(x, xoff + len + 8191), buf, len),
	      "get %llu B: data differs", (unsigned long long)len);
	th_read_mem(x, th_va(x, xoff + len + 8191 - 1), &back[0], 1);
	CHECK(back[0] == 0x5a, "get wrote before its range");
	free(buf);
	free(back);
	return 0;
}

static int test_rw(void)
{
	static const uint64_t lens[] = { 1, 8, 100, 4096, 4097, 65536 + 3,
					 1 << 20, 3 * 262144 + 4095 };
	unsigned i;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		/* same page offset on both sides, and different ones */
		if (xfer_check(a, b, lens[i], 4096 + 5, 8192 + 5, (uint8_t)i) ||
		    xfer_check(a, b, lens[i], 3 * 4096 + 100, 16384 + 3000, (uint8_t)(i + 40)))
			return 1;
	}
	/* the other way: a node of h1 to a node of h0 */
	return xfer_check(b3, c1, 300000, 7, 4096 * 5 + 11, 99);
}

static int test_atomics_send(void)
{
	struct elan_recv_hdr h;
	struct elan_cmd cmd;
	struct elan_event ev;
	uint8_t msg[ELAN_SEND_MAX], got[ELAN_RECV_SLOT];
	uint64_t v, fetched;
	int k;

	v = 40;
	th_write_mem(b, th_va(b, 64), &v, 8);
	cmd = th_cmd(ELAN_OP_ATOMIC, th_addr(b), th_va(a, 8192), th_va(b, 64), 8);
	cmd.aop = ELAN_AOP_ADD;
	cmd.operand = 2;
	cmd.flags = ELAN_CMDF_FETCH;
	CHECK(do_cmd(a, &cmd, &ev) == 0 && ev.value == 40, "fetch-add: %s, old %llu",
	      nicd_status_name(ev.status), (unsigned long long)ev.value);
	th_read_mem(b, th_va(b, 64), &v, 8);
	th_read_mem(a, th_va(a, 8192), &fetched, 8);
	CHECK(v == 42 && fetched == 40, "fetch-add: target %llu, fetched %llu",
	      (unsigned long long)v, (unsigned long long)fetched);
	cmd.aop = ELAN_AOP_CSWAP;
	cmd.compare = 42;
	cmd.operand = 0x1234567890abcdefull;
	CHECK(do_cmd(a, &cmd, &ev) == 0 && ev.value == 42, "compare-swap");
	cmd.compare = 1;	/* no match: unchanged */
	cmd.operand = 7;
	CHECK(do_cmd(a, &cmd, &ev) == 0 && ev.value == 0x1234567890abcdefull,
	      "compare-swap that fails");
	th_read_mem(b, th_va(b, 64), &v, 8);
	CHECK(v == 0x1234567890abcdefull, "compare-swap result %#llx", (unsigned long long)v);
	cmd.aop = ELAN_AOP_XOR;
	cmd.operand = 0xff;
	cmd.flags = ELAN_CMDF_REMOTE_EVENT;	/* and a REMOTE event at b */
	cmd.cookie = 4242;
	CHECK(do_cmd(a, &cmd, &ev) == 0, "xor with a remote event");
	for (k = 0; k < 2000 && !th_poll_ev(b, &ev); k++)
		usleep(500);
	CHECK(k < 2000 && ev.type == ELAN_EV_REMOTE && ev.cookie == 4242 &&
	      ev.src == th_addr(a) && ev.op == ELAN_OP_ATOMIC,
	      "no REMOTE event at the target (type %u cookie %llu)", ev.type,
	      (unsigned long long)ev.cookie);
	th_read_mem(b, th_va(b, 64), &v, 8);
	CHECK(v == (0x1234567890abcdefull ^ 0xff), "xor result");
	/* 4-byte atomics: on the upper half of that word, the lower kept */
	cmd = th_cmd(ELAN_OP_ATOMIC, th_addr(b), th_va(a, 8192 + 12), th_va(b, 68), 4);
	cmd.aop = ELAN_AOP_ADD;
	cmd.operand = 0xffffffff00000001ull;	/* upper half ignored */
	cmd.flags = ELAN_CMDF_FETCH;
	fetched = ~0ull;
	th_write_mem(a, th_va(a, 8192 + 8), &fetched, 8);
	CHECK(do_cmd(a, &cmd, &ev) == 0 && ev.value == 0x12345678 && ev.len == 4,
	      "4-byte fetch-add: %s, old %#llx", nicd_status_name(ev.status),
	      (unsigned long long)ev.value);
	th_read_mem(b, th_va(b, 64), &v, 8);
	th_read_mem(a, th_va(a, 8192 + 8), &fetched, 8);
	CHECK(v == ((0x12345679ull << 32) | (0x90abcdefull ^ 0xff)) &&
	      fetched == 0x12345678ffffffffull,
	      "4-byte fetch-add: target %#llx, fetched %#llx",
	      (unsigned long long)v, (unsigned long long)fetched);
	cmd.aop = ELAN_AOP_CSWAP;
	cmd.raddr = th_va(b, 64);
	cmd.compare = 0x90abcd10;
	cmd.operand = 7;
	CHECK(do_cmd(a, &cmd, &ev) == 0 && ev.value == 0x90abcd10,
	      "4-byte compare-swap: old %#llx", (unsigned long long)ev.value);
	th_read_mem(b, th_va(b, 64), &v, 8);
	CHECK(v == ((0x12345679ull << 32) | 7), "4-byte compare-swap: target %#llx",
	      (unsigned long long)v);
	/* sends: in order, one across a page boundary of the sender */
	for (k = 0; k < (int)sizeof(msg); k++)
		msg[k] = (uint8_t)(k * 13 + 1);
	th_write_mem(a, th_va(a, 4096 * 20 - 1000), msg, sizeof(msg));
	for (k = 0; k < 3; k++) {
		cmd = th_cmd(ELAN_OP_SEND, th_addr(b), th_va(a, 4096 * 20 - 1000 + k),
			     0, k == 2 ? ELAN_SEND_MAX - 2 : 1000 + k);
		cmd.tag = 100 + (uint32_t)k;
		CHECK(do_cmd(a, &cmd, &ev) == 0, "send %d: %s", k, nicd_status_name(ev.status));
	}
	for (k = 0; k < 3; k++) {
		uint32_t len = k == 2 ? ELAN_SEND_MAX - 2 : 1000 + (uint32_t)k;

		CHECK(th_poll_recv(b, &h, got), "message %d not received", k);
		CHECK(h.tag == 100 + (uint32_t)k && h.len == len && h.src == th_addr(a) &&
		      !memcmp(got, msg + k, len), "message %d: tag %u len %u, or payload differs",
		      k, h.tag, h.len);
	}
	/* put with a remote event */
	cmd = th_cmd(ELAN_OP_PUT, th_addr(b), th_va(a, 0), th_va(b, 0), 10000);
	cmd.flags = ELAN_CMDF_REMOTE_EVENT;
	cmd.cookie = 777;
	CHECK(do_cmd(a, &cmd, &ev) == 0, "put with a remote event");
	for (k = 0; k < 2000 && !th_poll_ev(b, &ev); k++)
		usleep(500);
	CHECK(k < 2000 && ev.type == ELAN_EV_REMOTE && ev.cookie == 777 && ev.len == 10000,
	      "no REMOTE event for the put");
	CHECK(t.node[2].faults_served > 0 && t.node[0].faults_served > 0,
	      "faults served: node 0 %llu, node 2 %llu (both ends should fault)",
	      (unsigned long long)t.node[0].faults_served,
	      (unsigned long long)t.node[2].faults_served);
	return 0;
}

static int test_errors(void)
{
	struct th_ctx *wrong = attach(2, 5, 78, 16);
	struct elan_cmd cmd;
	struct elan_event ev;
	uint64_t served[2];
	int r;

	CHECK(wrong, "attach");
	cmd = th_cmd(ELAN_OP_PUT, th_addr(wrong), th_va(a, 0), th_va(wrong, 0), 64);
	r = do_cmd(a, &cmd, &ev);
	CHECK(r == ELAN_E_CAPABILITY, "put to another job's context: %s", nicd_status_name(r));
	cmd = th_cmd(ELAN_OP_PUT, ELAN_ADDR(2, 9), th_va(a, 0), 0x1000, 64);
	r = do_cmd(a, &cmd, &ev);
	CHECK(r == ELAN_E_NO_CONTEXT, "put to no context: %s", nicd_status_name(r));
	/* past the target's mapping: its driver answers the fault with an
	 * error; the chunks before it landed */
	cmd = th_cmd(ELAN_OP_PUT, th_addr(b), th_va(a, 0), th_va(b, 1020 * 4096), 8 * 4096);
	r = do_cmd(a, &cmd, &ev);
	CHECK(r == ELAN_E_REMOTE_FAULT && ev.len == 4 * 4096,
	      "put past the target's memory: %s, len %u (want REMOTE_FAULT, 16384)",
	      nicd_status_name(r), ev.len);
	cmd = th_cmd(ELAN_OP_GET, th_addr(b), th_va(a, 2046 * 4096), th_va(b, 0), 4 * 4096);
	r = do_cmd(a, &cmd, &ev);
	CHECK(r == ELAN_E_LOCAL_FAULT && ev.len == 2 * 4096,
	      "get past our memory: %s, len %u (want LOCAL_FAULT, 8192)",
	      nicd_status_name(r), ev.len);
	/* the same in the middle of a second big chunk, at odd offsets:
	 * the first chunk and the second's bytes before the fault count */
	cmd = th_cmd(ELAN_OP_PUT, th_addr(b), th_va(a, 5), th_va(b, 1024 * 4096 - 300001),
		     400000);
	r = do_cmd(a, &cmd, &ev);
	CHECK(r == ELAN_E_REMOTE_FAULT && ev.len == 300001,
	      "400000 B put 300001 B before the target's end: %s, len %u (want REMOTE_FAULT, 300001)",
	      nicd_status_name(r), ev.len);
	cmd = th_cmd(ELAN_OP_GET, th_addr(b), th_va(a, 2048 * 4096 - 300003), th_va(b, 7),
		     400000);
	r = do_cmd(a, &cmd, &ev);
	CHECK(r == ELAN_E_LOCAL_FAULT && ev.len == 300003,
	      "400000 B get 300003 B before our end: %s, len %u (want LOCAL_FAULT, 300003)",
	      nicd_status_name(r), ev.len);
	/* faults served in the middle of big chunks at both ends: pages
	 * neither side touched before */
	served[0] = t.node[0].faults_served;
	served[1] = t.node[2].faults_served;
	if (xfer_check(a, b, 700001, 5 * 262144 + 77, 2 * 262144 * 4 + 4001, 3))
		return 1;
	CHECK(t.node[0].faults_served > served[0] && t.node[2].faults_served > served[1],
	      "no faults served for fresh pages (node 0 %llu, node 2 %llu)",
	      (unsigned long long)(t.node[0].faults_served - served[0]),
	      (unsigned long long)(t.node[2].faults_served - served[1]));
	th_detach(&t, wrong);
	doorbell(2, ELAN_DB_CTX);
	/* the target detached and attached again (a new generation): the
	 * initiator's cached resolve is stale, the op must still succeed */
	cmd = th_cmd(ELAN_OP_PUT, th_addr(b), th_va(a, 0), th_va(b, 0), 64);
	CHECK(do_cmd(a, &cmd, &ev) == 0, "put before re-attach");
	th_detach(&t, b);
	doorbell(2, ELAN_DB_CTX);
	b = attach(2, 3, 77, 1024);
	CHECK(b, "re-attach");
	return xfer_check(a, b, 5000, 1, 2, 7);	/* after the re-attach */
}

static int cmp_u64(const void *x, const void *y)
{
	double p = *(const double *)x, q = *(const double *)y;

	return p < q ? -1 : p > q;
}

/* Median 8 B put latency and 1 MiB put/get bandwidth from a to y. */
static int measure(struct th_ctx *y, double *lat_us, double *put_gbs,
		   double *get_gbs)
{
	double lat[200], t0;
	struct elan_cmd cmd;
	struct elan_event ev;
	int k;

	cmd = th_cmd(ELAN_OP_PUT, th_addr(y), th_va(a, 0), th_va(y, 0), 8);
	for (k = 0; k < 200; k++) {
		t0 = now_s();
		CHECK(do_cmd(a, &cmd, &ev) == 0, "8 B put");
		lat[k] = (now_s() - t0) * 1e6;
	}
	qsort(lat, 200, sizeof(lat[0]), cmp_u64);
	*lat_us = lat[100];
	cmd = th_cmd(ELAN_OP_PUT, th_addr(y), th_va(a, 0), th_va(y, 0), 1 << 20);
	CHECK(do_cmd(a, &cmd, &ev) == 0, "warm-up put");
	t0 = now_s();
	for (k = 0; k < 20; k++)
		CHECK(do_cmd(a, &cmd, &ev) == 0, "1 MiB put");
	*put_gbs = 20.0 * (1 << 20) / (now_s() - t0) / 1e9;
	cmd.op = ELAN_OP_GET;
	CHECK(do_cmd(a, &cmd, &ev) == 0, "warm-up get");
	t0 = now_s();
	for (k = 0; k < 20; k++)
		CHECK(do_cmd(a, &cmd, &ev) == 0, "1 MiB get");
	*get_gbs = 20.0 * (1 << 20) / (now_s() - t0) / 1e9;
	return 0;
}

static int test_figures(void)
{
	double l1, p1, g1, l2, p2, g2;

	spin = 1;
	if (measure(c1, &l1, &p1, &g1) || measure(b, &l2, &p2, &g2)) {
		spin = 0;
		return 1;
	}
	spin = 0;
	printf("# same host  (node 0 -> node 1): 8 B put %.1f us, 1 MiB put %.3f GB/s, get %.3f GB/s\n",
	       l1, p1, g1);
	printf("# cross host (node 0 -> node 2): 8 B put %.1f us, 1 MiB put %.3f GB/s, get %.3f GB/s\n",
	       l2, p2, g2);
	return 0;
}

/*
 * Never stale across hosts: a driver thread keeps moving pages of the
 * put target (node 2, h1's) and of the get destination (node 0) while
 * big puts and gets run between them, as the kernel would: remove the
 * entry, fence, wait for every odd engine seq of that node to change,
 * then poison the old page and point the page table at a fresh one.  No
 * old page may change after it was released: whatever holds guest data
 * across the link must have let go of it (or closed its bracket) first.
 */
#define MOVE_WIN	160	/* pages of each window */
#define MOVE_MAX	1200	/* moves per side at most */

struct mover {
	struct th_ctx *c[2];
	uint64_t first[2];	/* first page of each window */
	uint32_t spare[2];	/* next fresh page of each node */
	uint64_t old[2][MOVE_MAX];
	uint32_t nold[2];
	volatile int stop;
	unsigned int seed;
};

static void move_page(struct mover *mv, int side)
{
	struct th_ctx *c = mv->c[side];
	struct elan_hw_header *h = c->tn->region;
	uint64_t pg = mv->first[side] + (uint64_t)rand_r(&mv->seed) % MOVE_WIN;
	uint64_t va = th_va(c, pg * 4096), old, seq;
	struct elan_hw_tlbe *set = th_mmu_ways(c, elan_mmu_set(va, TH_MMU_SETS));
	int w, e;

	pthread_mutex_lock(&pt_lock);
	old = c->pt[pg].pfn;
	for (w = 0; w < ELAN_MMU_WAYS; w++)	/* invalidate: tag 0 */
		if ((__atomic_load_n(&set[w].tag, __ATOMIC_RELAXED) & ~4095ull) == va)
			__atomic_store_n(&set[w].tag, 0, __ATOMIC_RELAXED);
	c->pt[pg].pfn = mv->spare[side]++;
	pthread_mutex_unlock(&pt_lock);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (e = 0; e < ELAN_MAX_ENGINES; e++) {
		seq = __atomic_load_n(&h->engine[e].seq, __ATOMIC_ACQUIRE);
		if (seq & 1)
			while (__atomic_load_n(&h->engine[e].seq, __ATOMIC_ACQUIRE) == seq &&
			       !mv->stop)
				;
	}
	memset(c->tn->ram + old * 4096, 0xee, 4096);	/* free: poisoned */
	mv->old[side][mv->nold[side]++] = old;
}

static void *mover_main(void *arg)
{
	struct mover *mv = arg;

	while (!mv->stop && mv->nold[0] < MOVE_MAX && mv->nold[1] < MOVE_MAX) {
		move_page(mv, 0);
		move_page(mv, 1);
		usleep(100);
	}
	return NULL;
}

static int test_shootdown(void)
{
	static struct mover mv;
	struct elan_cmd put, get;
	struct elan_event ev;
	int posted[2] = { 0 }, done[2] = { 0 }, i;
	uint32_t k, j, bad = 0;
	pthread_t th;
	double t0;

	mv.c[0] = b;		/* the put's target, at h1 */
	mv.c[1] = a1;		/* the get's destination, at h0 */
	mv.first[0] = 256;
	mv.first[1] = 256;
	for (i = 0; i < 2; i++) {
		mv.spare[i] = mv.c[i]->tn->next_pfn;
		CHECK(mv.spare[i] + MOVE_MAX < mv.c[i]->tn->mmu_pfn, "no spare pages");
	}
	mv.seed = 1;
	put = th_cmd(ELAN_OP_PUT, th_addr(b), th_va(a, 3), th_va(b, 256 * 4096 + 5),
		     MOVE_WIN * 4096 - 10);
	get = th_cmd(ELAN_OP_GET, th_addr(b), th_va(a1, 256 * 4096 + 9), th_va(b, 11),
		     MOVE_WIN * 4096 - 20);
	pthread_create(&th, NULL, mover_main, &mv);
	for (t0 = now_s(); now_s() - t0 < 2 && mv.nold[0] < MOVE_MAX - 1 &&
	     mv.nold[1] < MOVE_MAX - 1;) {
		if (posted[0] == done[0] && post(a, &put) == 0)
			posted[0]++;
		if (posted[1] == done[1] && post(a1, &get) == 0)
			posted[1]++;
		drivers_wait(0);
		while (th_poll_ev(a, &ev)) {
			CHECK(ev.status == 0, "put while its pages move: %s",
			      nicd_status_name(ev.status));
			done[0]++;
		}
		while (th_poll_ev(a1, &ev)) {
			CHECK(ev.status == 0, "get while its pages move: %s",
			      nicd_status_name(ev.status));
			done[1]++;
		}
	}
	mv.stop = 1;
	pthread_join(th, NULL);
	for (i = 0; i < 2; i++) {
		if (mv.spare[i] > mv.c[i]->tn->next_pfn)
			mv.c[i]->tn->next_pfn = mv.spare[i];
		for (t0 = now_s(); done[i] < posted[i] && now_s() - t0 < 10;) {
			drivers_wait(1);
			while (th_poll_ev(i ? a1 : a, &ev))
				done[i]++;
		}
	}
	for (i = 0; i < 2; i++)
		for (k = 0; k < mv.nold[i]; k++) {
			const uint8_t *p = mv.c[i]->tn->ram + mv.old[i][k] * 4096;

			for (j = 0; j < 4096; j++)
				bad += p[j] != 0xee;
		}
	CHECK(!bad, "%u bytes of released pages written after their release", bad);
	CHECK(mv.nold[0] >= 50 && mv.nold[1] >= 50 && done[0] >= 5 && done[1] >= 5,
	      "too little happened: %u and %u pages moved during %d puts and %d gets",
	      mv.nold[0], mv.nold[1], done[0], done[1]);
	printf("# %u + %u pages moved during %d puts and %d gets of %u KiB across hosts\n",
	       mv.nold[0], mv.nold[1], done[0], done[1], MOVE_WIN * 4);
	return 0;
}

/* One of two_ops_then_signal's ops ended as it may: cut short by its
 * target's host lost (the bytes done counted), or done before that. */
static int lost_or_done(const struct elan_event *ev)
{
	return (ev->status == ELAN_E_NODE_DOWN && ev->len < (4u << 20)) ||
	       (ev->status == 0 && ev->len == (4u << 20));
}

/*
 * A 4 MiB put from a and a 4 MiB get into a1, both with b, started (put:
 * the put's command); then h1's nicd gets sig, and each op's event is
 * waited for until limit s after it: got[i] says whether op i's came,
 * *last_s when the later of the two came.  1 (why) if they were not posted.
 */
static int two_ops_then_signal(int sig, double limit, struct elan_cmd *put,
			       struct elan_event ev[2], int got[2],
			       double *last_s)
{
	struct elan_cmd get;
	struct th_ctx *from[2] = { a, a1 };
	double t0, at[2] = { -1, -1 };
	int i;

	*put = th_cmd(ELAN_OP_PUT, th_addr(b), th_va(a, 0), th_va(b, 0), 4 << 20);
	get = th_cmd(ELAN_OP_GET, th_addr(b), th_va(a1, 0), th_va(b, 0), 4 << 20);
	got[0] = got[1] = 0;
	CHECK(post(a, put) == 0 && post(a1, &get) == 0, "post");
	for (t0 = now_s(); now_s() - t0 < 0.003;)
		drivers();	/* let them start */
	t0 = now_s();
	kill(nicd_pid[1], sig);
	while (now_s() - t0 < limit && (!got[0] || !got[1])) {
		for (i = 0; i < 2; i++)
			if (!got[i] && th_poll_ev(from[i], &ev[i])) {
				got[i] = 1;
				at[i] = now_s() - t0;
			}
		drivers();
	}
	*last_s = at[0] > at[1] ? at[0] : at[1];
	return 0;
}

/*
 * The link cut: h1 SIGSTOPped (its process and sockets stay, it only
 * falls silent, as a host whose cable is pulled or that hangs) with two
 * long ops in flight from node 0: h0 must declare it down by the missing
 * heartbeats, each op ending in exactly one NODE_DOWN within the bound;
 * h0's own traffic goes on.  Then SIGCONT: h1 finds the link gone, both
 * link again without either restarting, transfers both ways.
 */
static int test_peer_stopped(double *down_s, double *back_s)
{
	struct elan_cmd put;
	struct elan_event ev[2], extra;
	double t0, last;
	int got[2], r = 0;

	/* the bound and a second more, then h1 goes on whatever happened */
	if (two_ops_then_signal(SIGSTOP, DOWN_BOUND_S + 1, &put, ev, got, &last))
		return 1;
	if (got[0] && got[1])
		*down_s = last;
	if (!got[0] || !got[1])
		snprintf(why, sizeof(why),
			 "ops in flight without an event %.1f s after h1 fell silent (put %d, get %d)",
			 DOWN_BOUND_S + 1, got[0], got[1]), r = 1;
	else if (*down_s >= DOWN_BOUND_S)
		snprintf(why, sizeof(why), "NODE_DOWN after %.2f s (bound %.1f s)",
			 *down_s, DOWN_BOUND_S), r = 1;
	else if (!lost_or_done(&ev[0]) || !lost_or_done(&ev[1]) ||
		 !(ev[0].status || ev[1].status))
		snprintf(why, sizeof(why), "put: %s, len %u; get: %s, len %u",
			 nicd_status_name(ev[0].status), ev[0].len,
			 nicd_status_name(ev[1].status), ev[1].len), r = 1;
	else if (wait_nodes_up(0, 0x3, 0.5))
		snprintf(why, sizeof(why), "node 0 still sees nodes_up %#llx",
			 (unsigned long long)g[0].hdr->nodes_up), r = 1;
	else if (xfer_check(a, c1, 100000, 1, 2, 4))
		r = 1;		/* h0's own nodes go on */
	t0 = now_s();
	kill(nicd_pid[1], SIGCONT);
	if (r) {
		/* the ops end once h1 is back (or never): take their events */
		for (double t1 = now_s(); now_s() - t1 < 3 && (!got[0] || !got[1]);) {
			got[0] |= th_poll_ev(a, &ev[0]);
			got[1] |= th_poll_ev(a1, &ev[1]);
			drivers();
		}
		wait_nodes_up(0, 0xf, 5);
		return 1;
	}
	CHECK(!th_poll_ev(a, &extra) && !th_poll_ev(a1, &extra),
	      "a second event for an op in flight");
	CHECK(wait_nodes_up(0, 0xf, 10) == 0 && wait_nodes_up(2, 0xf, 10) == 0,
	      "not linked again after SIGCONT: nodes_up %#llx at node 0, %#llx at node 2",
	      (unsigned long long)g[0].hdr->nodes_up,
	      (unsigned long long)g[2].hdr->nodes_up);
	*back_s = now_s() - t0;
	CHECK(!th_poll_ev(a, &extra) && !th_poll_ev(a1, &extra),
	      "an event for an op that had ended");
	if (xfer_check(a, b, 300000, 7, 11, 19) || xfer_check(b3, c1, 7000, 5, 3, 20))
		return 1;
	return 0;
}

/*
 * SIGKILL h1 with two long ops in flight from two contexts of node 0:
 * each ends in exactly one event, NODE_DOWN, within the bound, with the
 * bytes done counted; node 0 sees nodes 2 and 3 down; new ops to them
 * fail at once; h0 and its own nodes go on.
 */
static int test_peer_killed(double *down_s)
{
	struct elan_cmd put;
	struct elan_event ev[2], extra;
	int got[2];

	if (two_ops_then_signal(SIGKILL, 10, &put, ev, got, down_s))
		return 1;
	waitpid(nicd_pid[1], NULL, 0);
	nicd_pid[1] = 0;
	guest_disconnect(2);
	guest_disconnect(3);
	CHECK(got[0] && got[1], "ops in flight without an event 10 s after the kill (put %d, get %d)",
	      got[0], got[1]);
	/* the put may have finished before the kill: OK or NODE_DOWN */
	CHECK(lost_or_done(&ev[0]), "put: %s, len %u",
	      nicd_status_name(ev[0].status), ev[0].len);
	CHECK(lost_or_done(&ev[1]), "get: %s, len %u",
	      nicd_status_name(ev[1].status), ev[1].len);
	CHECK(ev[0].status || ev[1].status, "both ops finished before the kill: nothing tested");
	CHECK(*down_s < DOWN_BOUND_S, "NODE_DOWN after %.2f s (bound %.1f s)", *down_s,
	      DOWN_BOUND_S);
	CHECK(wait_nodes_up(0, 0x3, DOWN_BOUND_S) == 0, "node 0 still sees nodes_up %#llx",
	      (unsigned long long)g[0].hdr->nodes_up);
	usleep(300000);
	CHECK(!th_poll_ev(a, &extra) && !th_poll_ev(a1, &extra),
	      "a second event for an op in flight");
	CHECK(do_cmd(a, &put, &ev[0]) == ELAN_E_NODE_DOWN, "new put to a lost node: %s",
	      nicd_status_name(ev[0].status));
	/* h0's own nodes go on */
	return xfer_check(a, c1, 100000, 1, 2, 3);
}

/*
 * A nicd started as h1 (on table tbl, its log logname, UCX_TCP_RX_SEG_SIZE
 * seg if not NULL) that must be refused: the refusal (what, in the log
 * where) comes, h0 never links with it, its nodes never come up at node
 * 0, and neither nicd dies of it.
 */
static int refused_h1(const char *tbl, const char *logname, const char *seg,
		      const char *where, const char *what)
{
	const char *env = getenv("UCX_TCP_RX_SEG_SIZE");
	char *saved = env ? strdup(env) : NULL;
	int links = log_count("h0.log", "(1): linked"), k, r = 0;

	if (seg)
		setenv("UCX_TCP_RX_SEG_SIZE", seg, 1);
	impostor_pid = start_nicd(1, tbl, logname);
	if (saved)
		setenv("UCX_TCP_RX_SEG_SIZE", saved, 1);
	else
		unsetenv("UCX_TCP_RX_SEG_SIZE");
	free(saved);
	CHECK(impostor_pid > 0, "the refused nicd did not start");
	/* refused (logged) or, wrongly, linked: whichever comes first */
	for (k = 0; k < 400 && !log_has(where, what) &&
	     log_count("h0.log", "(1): linked") == links; k++)
		usleep(10000);
	usleep(300000);
	if (log_count("h0.log", "(1): linked") != links) {
		snprintf(why, sizeof(why), "h0 linked with it");
		r = -1;
	} else if (wait_nodes_up(0, 0x3, 0.5)) {
		snprintf(why, sizeof(why), "its nodes came up: %#llx",
			 (unsigned long long)g[0].hdr->nodes_up);
		r = -1;
	} else if (!log_has(where, what)) {
		snprintf(why, sizeof(why), "%s does not say \"%s\"", where, what);
		r = -1;
	} else if (waitpid(nicd_pid[0], NULL, WNOHANG) ||
		   waitpid(impostor_pid, NULL, WNOHANG)) {
		snprintf(why, sizeof(why), "a nicd died of it");
		r = -1;
	}
	kill(impostor_pid, SIGKILL);
	waitpid(impostor_pid, NULL, 0);
	impostor_pid = 0;
	return r ? 1 : 0;
}

/* A nicd claiming to be h1 without the fabric key: refused, logged. */
static int test_impostor(void)
{
	return refused_h1(bad_table, "impostor.log", NULL, "h0.log",
			  "does not prove the fabric key");
}

/*
 * A nicd of the fabric (the key, h1's name) whose UCX tcp receive
 * segment is not h0's: refused and named in its log (a chunk that came
 * whole in h0's segment would abort it in UCX).
 */
static int test_seg_mismatch(void)
{
	return refused_h1(table, "segment.log", "64k", "segment.log",
			  "receive segment is 524288 bytes, ours 65536");
}

/* h1 comes back: its guests reconnect, h0 (never restarted) links again. */
static int test_rejoin(double *secs)
{
	double t0 = now_s();

	unlink(g[2].sock);
	unlink(g[3].sock);
	nicd_pid[1] = start_nicd(1, table, "h1.log");
	CHECK(nicd_pid[1] > 0, "h1 did not start again");
	if (guest_connect(2) || guest_connect(3))
		return 1;
	CHECK(wait_nodes_up(0, 0xf, 10) == 0 && wait_nodes_up(2, 0xf, 10) == 0,
	      "not linked again: nodes_up %#llx at node 0",
	      (unsigned long long)g[0].hdr->nodes_up);
	*secs = now_s() - t0;
	b = attach(2, 3, 77, 1024);
	b3 = attach(3, 0, 77, 1024);
	CHECK(b && b3, "attach after rejoin");
	if (xfer_check(a, b, 200000, 5, 9, 17) || xfer_check(b3, c1, 5000, 3, 4, 18))
		return 1;
	return 0;
}

static int test_shutdown(void)
{
	int st;

	CHECK(nicd_pid[0] > 0 && nicd_pid[1] > 0 && t.node[2].region,
	      "not both hosts running");
	kill(nicd_pid[0], SIGTERM);
	CHECK(waitpid(nicd_pid[0], &st, 0) == nicd_pid[0], "waitpid");
	nicd_pid[0] = 0;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "h0 exit status %d", st);
	CHECK(wait_nodes_up(2, 0xc, DOWN_BOUND_S) == 0,
	      "h1 still sees h0's nodes after SIGTERM: %#llx",
	      (unsigned long long)g[2].hdr->nodes_up);
	return 0;
}

int main(int argc, char **argv)
{
	double link_s = -1, down_s = -1, rejoin_s = -1, stop_s = -1, back_s = -1;
	char cmdline[512];
	int i, r;

	if (argc < 2) {
		fprintf(stderr, "usage: fabric_test PATH-TO-elan-nicd\n");
		return 2;
	}
	nicd_prog = argv[1];
	signal(SIGPIPE, SIG_IGN);
	/* the transport of the simulated hosts: TCP on loopback, as between
	 * two real hosts (not UCX's shared memory) unless told otherwise */
	setenv("UCX_TLS", getenv("UCX_TLS") ? getenv("UCX_TLS") : "tcp", 1);
	setenv("UCX_NET_DEVICES", getenv("UCX_NET_DEVICES") ? getenv("UCX_NET_DEVICES") : "lo", 1);
	if (system("for f in /dev/shm/elan-fabric-test-* /tmp/elan-fabric-test.*; do "
		   "[ -e \"$f\" ] || continue; p=${f##*[.-]test[.-]}; p=${p%%-*}; "
		   "kill -0 \"$p\" 2>/dev/null || rm -rf \"$f\"; done") < 0)
		perror("system");
	snprintf(dir, sizeof(dir), "/tmp/elan-fabric-test.%d", (int)getpid());
	mkdir(dir, 0700);
	port0 = 20000 + (int)(getpid() % 20000) * 2 % 40000;
	snprintf(table, sizeof(table), "%s/fabric", dir);
	snprintf(bad_table, sizeof(bad_table), "%s/fabric-wrong-key", dir);
	t.nnodes = NODES;
	for (i = 0; i < NODES; i++) {
		snprintf(g[i].sock, sizeof(g[i].sock), "%s/node%d.sock", dir, i);
		if (setup_ram(i) < 0) {
			perror("guest RAM file");
			return 1;
		}
	}
	r = write_table(table, "fabric-test-key-0123456789") ||
	    write_table(bad_table, "not-the-key-of-this-fabric");
	if (!r) {
		nicd_pid[0] = start_nicd(0, table, "h0.log");
		nicd_pid[1] = start_nicd(1, table, "h1.log");
		r = nicd_pid[0] <= 0 || nicd_pid[1] <= 0;
	}
	for (i = 0; i < NODES && r == 0; i++)
		r = guest_connect(i);
	if (r && !why[0])
		snprintf(why, sizeof(why), "the nicds did not say ready");
	result("two nicds (hosts h0, h1) ready; four guests connected", r);
	if (r == 0) {
		r = test_link(&link_s);
		result("linked over UCX: every node sees all four nodes up", r);
		if (link_s >= 0)
			printf("# linked %.3f s after the guests connected\n", link_s);
	}
	if (r == 0) {
		r = attach_all();
		result("contexts attached on both hosts", r);
	}
	if (r == 0) {
		result("put/get across hosts, 1 B .. 1 MiB, odd offsets, both ways, byte for byte",
		       test_rw());
		result("atomics (fetch, compare-swap, xor + remote event; 8 and 4 bytes) and sends across hosts",
		       test_atomics_send());
		result("capability, no context, remote and local faults across hosts",
		       test_errors());
		result("latency and bandwidth, same host and across", test_figures());
		result("pages moved (shootdown) under big puts and gets across hosts: none written after its release",
		       test_shootdown());
		r = test_peer_stopped(&stop_s, &back_s);
		result("link cut (peer SIGSTOPped): ops in flight end in one NODE_DOWN each, within the bound; after SIGCONT both link again, neither restarted",
		       r);
		if (stop_s >= 0 && back_s >= 0)
			printf("# NODE_DOWN %.3f s after SIGSTOP (bound %.1f s), linked again %.3f s after SIGCONT\n",
			       stop_s, DOWN_BOUND_S, back_s);
		else if (stop_s >= 0)
			printf("# NODE_DOWN %.3f s after SIGSTOP (bound %.1f s)\n", stop_s, DOWN_BOUND_S);
		r = test_peer_killed(&down_s);
		result("peer SIGKILLed: ops in flight end in one NODE_DOWN each, within the bound", r);
		if (down_s >= 0)
			printf("# NODE_DOWN %.3f s after SIGKILL (bound %.1f s)\n", down_s,
			       DOWN_BOUND_S);
		result("a nicd without the fabric key is refused and logged", test_impostor());
		result("a nicd whose UCX receive segment is not ours is refused and named, nothing dies",
		       test_seg_mismatch());
		r = test_rejoin(&rejoin_s);
		result("the peer restarts and rejoins; the other was never restarted", r);
		if (rejoin_s >= 0)
			printf("# rejoined %.3f s after restart\n", rejoin_s);
		result("SIGTERM: exit 0, the other host sees its nodes down", test_shutdown());
	}
	for (i = 0; i < 2; i++)
		if (nicd_pid[i] > 0) {
			kill(nicd_pid[i], SIGKILL);
			waitpid(nicd_pid[i], NULL, 0);
		}
	if (impostor_pid > 0) {
		kill(impostor_pid, SIGKILL);
		waitpid(impostor_pid, NULL, 0);
	}
	if (nfail) {
		snprintf(cmdline, sizeof(cmdline),
			 "for f in %s/*.log; do echo \"# == $f\"; tail -25 $f | sed 's/^/#   /'; done",
			 dir);
		if (system(cmdline) < 0)
			perror("system");
	}
	for (i = 0; i < NODES; i++)
		unlink(g[i].ramfile);
	if (!getenv("FABRIC_TEST_KEEP")) {
		snprintf(cmdline, sizeof(cmdline), "rm -rf %s", dir);
		if (system(cmdline) < 0)
			perror("system");
	}
	printf("%d passed, %d failed\n", npass, nfail);
	return nfail ? 1 : 0;
}
