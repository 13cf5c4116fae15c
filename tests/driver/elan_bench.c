// SPDX-License-Identifier: GPL-2.0
/*
 * elan_bench: libelan microbenchmarks, printed (not checked for speed).
 *
 *   elan_bench [-n ITERS] [-l] [local]  one guest: puts and gets into the
 *                                       context's own memory
 *   elan_bench target DIR               passive target on another node
 *   elan_bench [-n ITERS] initiator DIR node0 -> the target's node
 *   elan_bench [-n ITERS] memcpy        memcpy only (run it on the host:
 *                                       the NIC copies natively there)
 *   elan_bench [-r RUNS] events         one guest: NIC faults and time per
 *                                       page after each VM event (first
 *                                       touch, fork + CPU write, mprotect
 *                                       read-only, swap-in, migration, KSM
 *                                       unmerge); run it in
 *                                       both modes of elan.ko
 *                                       (tests/driver/bench-modes.sh)
 *   elan_bench [-r RUNS] vmcost         one guest: CPU time per page of
 *                                       mprotect, fork, the COW write
 *                                       fault, munmap + mmap, with the NIC
 *                                       holding translations, holding
 *                                       none, and without a context
 *
 * -l: the latency rows only.
 *
 * DIR is a directory both nodes see (the repository share): the target
 * writes DIR/bench.info with its NIC address and buffers and then only
 * waits (its CPU does nothing for the transfers) until the initiator's
 * "done" message.
 *
 * Every figure is printed in a table and as a line
 *   CSV,name,size,value,unit
 * for the main job.  Latency: each operation posted and its completion
 * polled for, ITERS times after a warm-up; min, median, p90 and max, and
 * how many doorbells (the NIC was asleep) per operation.  Bandwidth: best
 * and median of the transfers of each size, beside memcpy of the same
 * sizes in the same process.  The machine is shared and the guest CPU is
 * emulated (TCG): compare columns of one run, not runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elan_testlib.h"

#define CAP		0xbe4c4beeULL
#define MiB		(1024UL * 1024)
#define PG		4096UL
#define BUFSZ		(16 * MiB)
#define FTSZ		(4 * MiB)	/* first-touch measurements */
#define TAG_DONE	0xd0e
#define PARAM		"/sys/module/elan/parameters/"

static const size_t bw_sizes[] = {
	4096, 16384, 65536, 262144, MiB, 4 * MiB, 16 * MiB,
};
#define NBW (sizeof(bw_sizes) / sizeof(bw_sizes[0]))

static int iters = 200;
static int lat_only;		/* -l: latency rows only */
static uint64_t cookie;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *fmt, const char *what)
{
	fprintf(stderr, "elan_bench: ");
	fprintf(stderr, fmt, what);
	fputc('\n', stderr);
	exit(1);
}

static void csv(const char *name, uint64_t size, double value,
		const char *unit)
{
	printf("CSV,%s,%" PRIu64 ",%.3f,%s\n", name, size, value, unit);
}

static char *map(size_t len, int touch)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	if (touch)
		memset(p, 0x5a, len);
	return p;
}

/* Wait for the event of @ck; exit on an error status.  Returns the event. */
static struct elan_event wait_done(elan_ctx_t *c, uint64_t ck)
{
	struct elan_event ev;
	int r;

	for (;;) {
		r = elan_poll_event(c, &ev);
		if (r < 0)
			die("context failed: %s", strerror(-r));
		if (r == 0)
			continue;
		if (ev.type != ELAN_EV_DONE)
			continue;
		if (ev.status)
			die("operation failed: %s", elan_strerror(ev.status));
		if (ev.cookie == ck)
			return ev;
	}
}

enum { OP_PUT, OP_GET, OP_FADD, OP_CSWAP };

/* One operation and its completion: seconds. */
static double op1(elan_ctx_t *c, uint32_t dst, int op, void *l, uint64_t r,
		  size_t len)
{
	static uint64_t fetch;
	double t = now();
	int ret;

	cookie++;
	do {
		switch (op) {
		case OP_PUT:
			ret = elan_put(c, dst, l, r, len, cookie, 0);
			break;
		case OP_GET:
			ret = elan_get(c, dst, l, r, len, cookie, 0);
			break;
		case OP_FADD:
			ret = elan_atomic(c, dst, r, ELAN_AOP_ADD, 1, 0, &fetch,
					  cookie, 0);
			break;
		default:
			ret = elan_atomic(c, dst, r, ELAN_AOP_CSWAP, fetch + 1,
					  fetch, &fetch, cookie, 0);
			break;
		}
	} while (ret == -EAGAIN);
	if (ret)
		die("post: %s", strerror(-ret));
	wait_done(c, cookie);
	return now() - t;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double min, med, p90, max;
};

static struct stats stats_of(double *s, int n)
{
	struct stats st;

	qsort(s, n, sizeof(*s), cmp_d);
	st.min = s[0];
	st.med = s[n / 2];
	st.p90 = s[n * 9 / 10];
	st.max = s[n - 1];
	return st;
}

static const char *const op_name[] = { "put", "get", "fetch-add", "cswap" };

/* Latency of @op of @len: @iters samples after a warm-up; one table row. */
static void latency(elan_ctx_t *c, uint32_t dst, const char *where, int op,
		    void *l, uint64_t r, size_t len)
{
	double *s = calloc(iters, sizeof(*s));
	long long db0, db1;
	struct stats st;
	char name[64];
	int i;

	if (!s)
		die("%s", "out of memory");
	for (i = 0; i < 10; i++)
		op1(c, dst, op, l, r, len);
	db0 = t_debugfs_counter("doorbells");
	for (i = 0; i < iters; i++)
		s[i] = op1(c, dst, op, l, r, len) * 1e6;
	db1 = t_debugfs_counter("doorbells");
	st = stats_of(s, iters);
	printf("%-10s %-9s %8zu %8.1f %8.1f %8.1f %8.1f %10.2f\n", where,
	       op_name[op], len, st.min, st.med, st.p90, st.max,
	       db0 < 0 ? -1.0 : (double)(db1 - db0) / iters);
	snprintf(name, sizeof(name), "%s_%s_lat_min", where, op_name[op]);
	csv(name, len, st.min, "us");
	snprintf(name, sizeof(name), "%s_%s_lat_median", where, op_name[op]);
	csv(name, len, st.med, "us");
	snprintf(name, sizeof(name), "%s_%s_lat_p90", where, op_name[op]);
	csv(name, len, st.p90, "us");
	snprintf(name, sizeof(name), "%s_%s_lat_max", where, op_name[op]);
	csv(name, len, st.max, "us");
	if (db0 >= 0) {
		snprintf(name, sizeof(name), "%s_%s_doorbells", where,
			 op_name[op]);
		csv(name, len, (double)(db1 - db0) / iters, "per_op");
	}
	free(s);
}

static void latency_header(void)
{
	printf("%-10s %-9s %8s %8s %8s %8s %8s %10s\n", "latency", "op",
	       "bytes", "min us", "med us", "p90 us", "max us", "doorbell/op");
}

/* Transfers of one size: n samples, MB/s best and median. */
static int bw_iters(size_t len)
{
	int n = (int)(64 * MiB / len);

	if (n > iters)
		n = iters;
	return n < 3 ? 3 : n;
}

static void memcpy_bw(size_t len, char *a, char *b, struct stats *st)
{
	int i, n = bw_iters(len);
	double s[n > 0 ? n : 1], t;

	for (i = 0; i < n; i++) {
		t = now();
		memcpy(b + 3, a + 1, len);
		__asm__ volatile("" : : "r"(b) : "memory");
		s[i] = now() - t;
	}
	*st = stats_of(s, n);
}

static void bandwidth(elan_ctx_t *c, uint32_t dst, const char *where,
		      char *l, uint64_t r, char *m1, char *m2)
{
	struct stats sp, sg, sm;
	char name[64];
	size_t k, len;
	int i, n;

	printf("%-10s %9s %10s %10s %10s %10s %12s\n", "bandwidth", "bytes",
	       "put best", "put med", "get best", "get med", "memcpy best");
	for (k = 0; k < NBW; k++) {
		len = bw_sizes[k];
		n = bw_iters(len);
		{
			double s[n];

			for (i = 0; i < n; i++)
				s[i] = op1(c, dst, OP_PUT, l + 1, r + 3, len);
			sp = stats_of(s, n);
			for (i = 0; i < n; i++)
				s[i] = op1(c, dst, OP_GET, l + 5, r + 7, len);
			sg = stats_of(s, n);
		}
		memcpy_bw(len, m1, m2, &sm);
		printf("%-10s %9zu %10.1f %10.1f %10.1f %10.1f %12.1f  MB/s\n",
		       where, len, len / sp.min / 1e6, len / sp.med / 1e6,
		       len / sg.min / 1e6, len / sg.med / 1e6,
		       len / (sm.min > 0 ? sm.min : 1e-9) / 1e6);
		snprintf(name, sizeof(name), "%s_put_bw_best", where);
		csv(name, len, len / sp.min / 1e6, "MB/s");
		snprintf(name, sizeof(name), "%s_put_bw_median", where);
		csv(name, len, len / sp.med / 1e6, "MB/s");
		snprintf(name, sizeof(name), "%s_get_bw_best", where);
		csv(name, len, len / sg.min / 1e6, "MB/s");
		snprintf(name, sizeof(name), "%s_get_bw_median", where);
		csv(name, len, len / sg.med / 1e6, "MB/s");
		csv("guest_memcpy_bw_best", len,
		    len / (sm.min > 0 ? sm.min : 1e-9) / 1e6, "MB/s");
	}
}

/* ------------------------------------------------------------ first touch */

static int param_get(const char *name)
{
	char path[128];
	FILE *f;
	int v = -1;

	snprintf(path, sizeof(path), PARAM "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int param_set(const char *name, int v)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), PARAM "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%d\n", v);
	return fclose(f) ? -1 : 0;
}

static struct elan_counters counters(elan_ctx_t *c)
{
	struct elan_counters k;

	memset(&k, 0, sizeof(k));
	elan_counters(c, &k);
	return k;
}

/* A get of FTSZ from the target into @l: the NIC's local write faults. */
static void touch_row(elan_ctx_t *c, uint32_t dst, uint64_t r, char *l,
		      const char *what, const char *key)
{
	struct elan_counters k0, k1;
	double t, pages = FTSZ / PG, faults;

	k0 = counters(c);
	t = op1(c, dst, OP_GET, l, r, FTSZ);
	k1 = counters(c);
	faults = (double)(k1.faults - k0.faults);
	printf("%-44s %10.1f %10.2f %10.1f\n", what, t * 1e6 / pages,
	       faults / pages, faults ? t * 1e6 / faults : 0.0);
	csv(key, PG, t * 1e6 / pages, "us_per_page");
	{
		char name[64];

		snprintf(name, sizeof(name), "%s_faults", key);
		csv(name, PG, faults / pages, "faults_per_page");
		snprintf(name, sizeof(name), "%s_per_fault", key);
		csv(name, PG, faults ? t * 1e6 / faults : 0.0, "us");
	}
}

/*
 * Write-protect every private page (a fork whose child exits at once),
 * then write each page from the CPU: the NIC's write translations were
 * downgraded, and the CPU's write fault re-establishes a writable PTE,
 * for which the update hook re-loads the translation (preload) unless
 * the driver's preload parameter is 0.
 */
/*
 * The mode elan.ko runs in, as the CSV keys name it: ioproc, notifier, or
 * notifier-update (notifier mode with the kernel's update op: the module
 * parameter update is there and Y).
 */
static void mode_name(char mode[32])
{
	FILE *f = fopen(PARAM "mode", "r");
	char u[8] = "";

	strcpy(mode, "?");
	if (!f)
		return;
	if (fscanf(f, "%31s", mode) != 1)
		strcpy(mode, "?");
	fclose(f);
	f = fopen(PARAM "update", "r");
	if (!f)
		return;
	if (fscanf(f, "%7s", u) == 1 && !strcmp(mode, "notifier") &&
	    !strcmp(u, "Y"))
		strcpy(mode, "notifier-update");
	fclose(f);
}

static void fork_and_write(char *l, size_t len)
{
	pid_t pid = fork();
	size_t i;

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	for (i = 0; i < len; i += PG)
		l[i]++;
}

static void first_touch(elan_ctx_t *c, uint32_t dst, uint64_t r)
{
	int fa = param_get("fault_around"), pl = param_get("preload");
	char *l;

	printf("%-44s %10s %10s %10s\n", "NIC first touch (get, 4 MiB)",
	       "us/page", "faults/pg", "us/fault");
	op1(c, dst, OP_GET, map(FTSZ, 1), r, FTSZ);	/* remote side warm */
	l = map(FTSZ, 0);
	touch_row(c, dst, r, l, "page never touched (NIC faults it in)",
		  "touch_absent");
	l = map(FTSZ, 1);
	touch_row(c, dst, r, l, "page present, fault-around",
		  "touch_present_around");
	if (fa > 0 && param_set("fault_around", 1) == 0) {
		l = map(FTSZ, 1);
		touch_row(c, dst, r, l, "page present, no fault-around (service)",
			  "touch_present_single");
		param_set("fault_around", fa);
	}
	/* update-hook preload: translations exist, the CPU re-dirties */
	l = map(FTSZ, 1);
	op1(c, dst, OP_GET, l, r, FTSZ);
	fork_and_write(l, FTSZ);
	touch_row(c, dst, r, l, "after fork + CPU write, preload",
		  "touch_cow_preload");
	if (pl > 0 && param_set("preload", 0) == 0) {
		l = map(FTSZ, 1);
		op1(c, dst, OP_GET, l, r, FTSZ);
		fork_and_write(l, FTSZ);
		touch_row(c, dst, r, l, "after fork + CPU write, no preload",
			  "touch_cow_nopreload");
		param_set("preload", pl);
	}
}

/* ------------------------------------------------------------ modes */

static elan_ctx_t *open_ctx(void)
{
	elan_ctx_t *c;
	int r = elan_open(CAP, &c);

	if (r)
		die("elan_open: %s", strerror(-r));
	return c;
}

static int run_local(void)
{
	elan_ctx_t *c = open_ctx();
	uint32_t self = elan_addr(c);
	char *a = map(BUFSZ + PG, 0), *b = map(BUFSZ + PG, 0);
	char *m1, *m2;
	double t;

	printf("elan_bench: one guest, context %#x into its own memory, %d iterations\n",
	       self, iters);
	if (lat_only) {
		latency_header();
		latency(c, self, "local", OP_PUT, a, (uintptr_t)b, 8);
		latency(c, self, "local", OP_GET, a, (uintptr_t)b, 8);
		elan_close(c);
		return 0;
	}
	m1 = map(BUFSZ + PG, 1);
	m2 = map(BUFSZ + PG, 1);
	/* First touch: NIC faults on pages the CPU never touched. */
	t = op1(c, self, OP_PUT, a, (uintptr_t)b, BUFSZ);
	printf("first-touch put 16 MiB: %.1f us per 4 KiB page (NIC faults, both sides)\n",
	       t * 1e6 / (BUFSZ / PG) / 2);
	csv("local_first_touch_put", PG, t * 1e6 / (BUFSZ / PG) / 2,
	    "us_per_page");
	latency_header();
	latency(c, self, "local", OP_PUT, a, (uintptr_t)b, 8);
	latency(c, self, "local", OP_GET, a, (uintptr_t)b, 8);
	latency(c, self, "local", OP_PUT, a, (uintptr_t)b, 4096);
	latency(c, self, "local", OP_GET, a, (uintptr_t)b, 4096);
	bandwidth(c, self, "local", a, (uintptr_t)b, m1, m2);
	if (memcmp(a + 5, b + 7, BUFSZ - 8))
		die("%s", "get data differs");
	elan_close(c);
	return 0;
}

struct info {
	uint32_t addr;
	uint64_t buf, word;
};

static int run_target(const char *dir)
{
	elan_ctx_t *c = open_ctx();
	char path[1024], tmp[1100];
	struct elan_recv_hdr h;
	struct elan_event ev;
	const void *p;
	char *buf = map(BUFSZ + PG, 1);
	uint64_t *word = (uint64_t *)(void *)map(PG, 1);
	double end = now() + 3600;
	FILE *f;

	*word = 0;
	snprintf(path, sizeof(path), "%s/bench.info", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%x %" PRIx64 " %" PRIx64 "\n", elan_addr(c),
			  (uint64_t)(uintptr_t)buf,
			  (uint64_t)(uintptr_t)word) < 0 ||
	    fclose(f) || rename(tmp, path))
		die("cannot write %s", path);
	printf("elan_bench target: context %#x, waiting\n", elan_addr(c));
	fflush(stdout);
	/* Passive: the CPU only sleeps until the initiator says done. */
	while (now() < end) {
		while (elan_poll_event(c, &ev) == 1)
			;
		if (elan_recv(c, &h, &p) == 1) {
			elan_recv_release(c);
			if (h.tag == TAG_DONE)
				break;
		}
		if (elan_wait(c, 1000) < 0)
			die("%s", "context failed");
	}
	printf("elan_bench target: done, fetch-add word %" PRIu64 "\n", *word);
	elan_close(c);
	return 0;
}

static int run_initiator(const char *dir)
{
	elan_ctx_t *c = open_ctx();
	char path[1024];
	struct info inf;
	char *l = map(BUFSZ + PG, 1);
	char *m1 = map(BUFSZ + PG, 1), *m2 = map(BUFSZ + PG, 1);
	double end = now() + 600;
	FILE *f = NULL;
	int r;

	snprintf(path, sizeof(path), "%s/bench.info", dir);
	while (now() < end) {
		f = fopen(path, "r");
		if (f)
			break;
		usleep(100000);
	}
	if (!f || fscanf(f, "%x %" SCNx64 " %" SCNx64, &inf.addr, &inf.buf,
			 &inf.word) != 3)
		die("no target info in %s", path);
	fclose(f);
	printf("elan_bench: node %u -> node %u (context %#x -> %#x), %d iterations\n",
	       ELAN_ADDR_NODE(elan_addr(c)), ELAN_ADDR_NODE(inf.addr),
	       elan_addr(c), inf.addr, iters);
	/* Warm-up: every translation on both sides once. */
	op1(c, inf.addr, OP_PUT, l, inf.buf, BUFSZ);
	op1(c, inf.addr, OP_GET, l, inf.buf, BUFSZ);
	latency_header();
	latency(c, inf.addr, "remote", OP_PUT, l, inf.buf, 8);
	latency(c, inf.addr, "remote", OP_GET, l, inf.buf, 8);
	latency(c, inf.addr, "remote", OP_PUT, l, inf.buf, 4096);
	latency(c, inf.addr, "remote", OP_GET, l, inf.buf, 4096);
	latency(c, inf.addr, "remote", OP_FADD, NULL, inf.word, 8);
	latency(c, inf.addr, "remote", OP_CSWAP, NULL, inf.word, 8);
	if (!lat_only) {
		bandwidth(c, inf.addr, "remote", l, inf.buf, m1, m2);
		first_touch(c, inf.addr, inf.buf);
	}
	cookie++;
	r = elan_send(c, inf.addr, TAG_DONE, NULL, 0, cookie, 0);
	if (r == 0)
		wait_done(c, cookie);
	elan_close(c);
	return 0;
}

/* ------------------------------------------------------------ VM events */

/*
 * What a VM event costs the NIC afterwards: a buffer of EVSZ whose pages
 * the NIC had translated (a get into it) goes through the event, then a
 * get of EVSZ into it is timed and its NIC faults counted.  In IOPROC
 * mode the update hooks may have refreshed the translations (preload);
 * in notifier mode nothing does, and the NIC faults.  Each event is run
 * runs times: the median and the range of faults and microseconds per
 * page.  Rows whose event cannot happen here (no swap, one NUMA node,
 * KSM merging nothing) say so.
 */
#define EVSZ		MiB
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif
#ifndef MPOL_MF_MOVE
#define MPOL_MF_MOVE	(1 << 1)
#endif
#define KSM		"/sys/kernel/mm/ksm/"

static int runs = 3;		/* -r */

static int file_put(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(val, f);
	return fclose(f) ? -1 : 0;
}

/*
 * A fresh EVSZ buffer, small pages only, every byte @v written by the
 * CPU (a value of its own each run: KSM must not find the last run's
 * pages of the same content).
 */
static char *small_buf(size_t len, int v)
{
	char *p = map(len, 0);

	madvise(p, len, MADV_NOHUGEPAGE);
	memset(p, v, len);
	return p;
}

static char *ev_buf(int v)
{
	return small_buf(EVSZ, v);
}

static size_t resident(char *p, size_t len)
{
	unsigned char v[EVSZ / PG];
	size_t i, n = 0;

	if (mincore(p, len, v))
		return 0;
	for (i = 0; i < len / PG; i++)
		n += v[i] & 1;
	return n;
}

/* Each page of @p to the other NUMA node; how many moved. */
static int migrate(char *p)
{
	enum { N = EVSZ / PG };
	void *pages[N];
	int nodes[N], status[N], i, moved = 0;

	for (i = 0; i < N; i++)
		pages[i] = p + i * PG;
	if (syscall(SYS_move_pages, 0, N, pages, NULL, status, 0))
		return 0;
	for (i = 0; i < N; i++)
		nodes[i] = status[0] == 0 ? 1 : 0;
	if (syscall(SYS_move_pages, 0, N, pages, nodes, status, MPOL_MF_MOVE) < 0)
		return 0;
	for (i = 0; i < N; i++)
		moved += status[i] == nodes[0];
	return moved;
}

/*
 * How many of @p's EVSZ pages are merged now: pages whose frame another
 * page of @p maps too (the page map, root only; -1 without it).  The
 * buffer's pages all hold one value, and inside one private anonymous
 * buffer only KSM makes pages share a frame.  Not the page flags: 6.12
 * reports KPF_KSM for every anonymous page (fs/proc/page.c tests
 * mapping & PAGE_MAPPING_KSM, true with PAGE_MAPPING_ANON alone), and
 * KSM's own counts, global or per process, go stale while ksmd sleeps.
 */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static long ksm_pages(char *p)
{
	int pm = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e, pfn[EVSZ / PG];
	size_t i, np = 0;
	long n = 0;

	if (pm < 0)
		return -1;
	for (i = 0; i < EVSZ / PG; i++) {
		uintptr_t va = (uintptr_t)p + i * PG;

		if (pread(pm, &e, 8, va / PG * 8) != 8 || !(e >> 63 & 1))
			continue;
		e &= (1ULL << 55) - 1;		/* the pfn: 0 unless root */
		if (!e) {
			close(pm);
			return -1;
		}
		pfn[np++] = e;
	}
	close(pm);
	qsort(pfn, np, sizeof(pfn[0]), cmp_u64);
	for (i = 0; i < np; i++)
		n += (i > 0 && pfn[i] == pfn[i - 1]) ||
		     (i + 1 < np && pfn[i] == pfn[i + 1]);
	return n;
}

/* KSM merges @p's identical pages, then they are unmerged; 0 if not. */
static int ksm_unmerge(char *p)
{
	long m = ksm_pages(p), want = (long)(EVSZ / PG) / 2;
	double end = now() + 30;

	if (m < 0 || madvise(p, EVSZ, MADV_MERGEABLE)) {
		fprintf(stderr, "elan_bench: no KSM here (%s)\n",
			m < 0 ? "no page frame numbers in the page map" : strerror(errno));
		return 0;
	}
	file_put(KSM "pages_to_scan", "10000");
	file_put(KSM "sleep_millisecs", "10");
	file_put(KSM "run", "1");
	while (now() < end && m < want) {
		usleep(20000);
		m = ksm_pages(p);
	}
	file_put(KSM "run", "0");
	madvise(p, EVSZ, MADV_UNMERGEABLE);	/* each page its own again */
	if (m < want)
		fprintf(stderr, "elan_bench: KSM merged %ld pages in 30 s\n", m);
	return m >= want;
}

enum { EV_FIRST, EV_FORK, EV_MPROTECT, EV_SWAP, EV_MIGRATE, EV_KSM, EV_N };
static const char *const ev_name[EV_N] = {
	"first touch (CPU-written, new to the NIC)",
	"after fork + CPU write",
	"after mprotect read-only (the NIC reads)",
	"after swap-out and CPU swap-in",
	"after migration to the other node",
	"after KSM merge and unmerge",
};
static const char *const ev_key[EV_N] = {
	"first", "fork_write", "mprotect_ro", "swapin", "migrate",
	"ksm_unmerge",
};

/*
 * One run of event @ev: faults and us per page of the get after it.  The
 * source of the gets is a buffer of the same content as the target's, so
 * that the target's pages stay identical (KSM).  After mprotect read-only
 * the NIC reads the buffer instead (a get from it into a third buffer,
 * translated before): the IOPROC hook is told the new protection and
 * keeps read translations; mprotect's notifier event does not say it.
 */
static int ev_run(elan_ctx_t *c, uint32_t self, int ev, double *faults,
		  double *us)
{
	static unsigned char v = 0x20;
	struct elan_counters k0, k1;
	char *src = ev_buf(++v ? v : ++v), *l = ev_buf(v), *warm, *dst = src;
	double t;
	size_t i;
	int ok = 1;

	if (ev != EV_FIRST) {
		op1(c, self, OP_GET, l, (uintptr_t)src, EVSZ);
	} else {
		/* the source translated, the target not */
		warm = ev_buf(v);
		op1(c, self, OP_GET, warm, (uintptr_t)src, EVSZ);
		munmap(warm, EVSZ);
	}
	switch (ev) {
	case EV_FORK:
		fork_and_write(l, EVSZ);
		break;
	case EV_MPROTECT:
		dst = ev_buf(v);
		op1(c, self, OP_GET, dst, (uintptr_t)l, EVSZ);
		ok = !mprotect(l, EVSZ, PROT_READ);
		break;
	case EV_SWAP:
		madvise(l, EVSZ, MADV_PAGEOUT);
		ok = resident(l, EVSZ) < EVSZ / PG / 2;
		for (i = 0; i < EVSZ; i += PG)
			*(volatile char *)(l + i);
		break;
	case EV_MIGRATE:
		ok = migrate(l) == EVSZ / PG;
		break;
	case EV_KSM:
		ok = ksm_unmerge(l);
		break;
	}
	k0 = counters(c);
	if (ev == EV_MPROTECT)
		t = op1(c, self, OP_GET, dst, (uintptr_t)l, EVSZ);
	else
		t = op1(c, self, OP_GET, l, (uintptr_t)src, EVSZ);
	k1 = counters(c);
	*faults = (double)(k1.faults - k0.faults) / (EVSZ / PG);
	*us = t * 1e6 / (EVSZ / PG);
	if (memcmp(l, src, EVSZ) || memcmp(dst, l, EVSZ))
		die("%s", "events: the get's data differs");
	if (dst != src)
		munmap(dst, EVSZ);
	munmap(l, EVSZ);
	munmap(src, EVSZ);
	return ok;
}

static int run_events(void)
{
	elan_ctx_t *c = open_ctx();
	uint32_t self = elan_addr(c);
	char mode[32], name[96];
	double f[64], u[64];
	struct stats sf, su;
	int ev, i, n = runs > 64 ? 64 : runs, fa = param_get("fault_around");

	mode_name(mode);
	printf("elan_bench events: elan.ko in %s mode, fault_around %d; a get of %lu KiB into a buffer after each event, %d runs: median (min-max)\n",
	       mode, fa, EVSZ / 1024, n);
	printf("%-44s %22s %24s\n", "event", "NIC faults/page", "us/page");
	for (ev = 0; ev < EV_N; ev++) {
		for (i = 0; i < n; i++)
			if (!ev_run(c, self, ev, &f[i], &u[i]))
				break;
		if (i < n) {
			printf("%-44s %22s\n", ev_name[ev],
			       "(the event did not happen here)");
			continue;
		}
		/* every run a line: medians are taken over all of them */
		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "events_%s_fa%d_%s_faults",
				 mode, fa, ev_key[ev]);
			csv(name, PG, f[i], "faults_per_page");
			snprintf(name, sizeof(name), "events_%s_fa%d_%s_us",
				 mode, fa, ev_key[ev]);
			csv(name, PG, u[i], "us_per_page");
		}
		sf = stats_of(f, n);
		su = stats_of(u, n);
		printf("%-44s %6.3f (%5.3f-%5.3f) %8.1f (%6.1f-%6.1f)\n",
		       ev_name[ev], sf.med, sf.min, sf.max, su.med, su.min,
		       su.max);
	}
	elan_close(c);
	return 0;
}

/* ------------------------------------------------------------ VM costs */

/*
 * What a VM operation costs the CPU while the NIC holds translations of
 * the memory it changes: each hook or notifier callback removes or
 * downgrades entries and shoots the NIC down before the operation goes
 * on.  A region of VCSZ, CPU-written, small pages, in three states:
 *
 *   held    a context open, the NIC holds write translations of every
 *           page (a get into the region just before each operation);
 *   none    a context open, the NIC never touched the region (the hooks
 *           or the notifier run and find nothing);
 *   noctx   no context in the process (no hooks, no notifier: the
 *           kernel's own cost).
 *
 * The operations, each timed alone, in microseconds per page: mprotect
 * read-only, mprotect read-write again, fork (the child exits at once:
 * every private PTE write-protected, then waited for), the CPU's write
 * faults after that fork (the PTEs made writable again: IOPROC's update
 * hook refreshes the NIC's translations there), munmap and mmap at the
 * same address.  Each state is run runs times, alternated; every run is
 * a CSV line (vmcost_MODE_STATE_OP), the table gives median (min-max).
 */
#define VCSZ		(4 * MiB)
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif

enum { VC_RO, VC_RW, VC_FORK, VC_COW, VC_UNMAP, VC_N };
static const char *const vc_name[VC_N] = {
	"mprotect read-only",
	"mprotect read-write again",
	"fork (child exits at once)",
	"CPU write fault after fork (COW)",
	"munmap + mmap at the same address",
};
static const char *const vc_key[VC_N] = {
	"mprotect_ro", "mprotect_rw", "fork", "cow_write", "munmap_mmap",
};
enum { VS_HELD, VS_NONE, VS_NOCTX, VS_N };
static const char *const vs_key[VS_N] = { "held", "none", "noctx" };

/* the NIC's write translations of every page of @l (a get into it) */
static void vc_hold(elan_ctx_t *c, uint32_t self, char *l, char *src)
{
	if (c)
		op1(c, self, OP_GET, l, (uintptr_t)src, VCSZ);
}

static void vc_run(elan_ctx_t *c, uint32_t self, int held, double us[VC_N])
{
	const double pages = VCSZ / PG;
	char *src = small_buf(VCSZ, 0x33), *l = small_buf(VCSZ, 0x33), *p;
	double t;
	size_t i;
	pid_t pid;

	if (!held)
		c = NULL;	/* none and noctx: the NIC never touches l */
	vc_hold(c, self, l, src);
	t = now();
	if (mprotect(l, VCSZ, PROT_READ))
		die("mprotect: %s", strerror(errno));
	us[VC_RO] = (now() - t) * 1e6 / pages;
	t = now();
	if (mprotect(l, VCSZ, PROT_READ | PROT_WRITE))
		die("mprotect: %s", strerror(errno));
	us[VC_RW] = (now() - t) * 1e6 / pages;
	vc_hold(c, self, l, src);
	t = now();
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid < 0)
		die("fork: %s", strerror(errno));
	waitpid(pid, NULL, 0);
	us[VC_FORK] = (now() - t) * 1e6 / pages;
	t = now();
	for (i = 0; i < VCSZ; i += PG)
		l[i]++;
	us[VC_COW] = (now() - t) * 1e6 / pages;
	vc_hold(c, self, l, src);
	t = now();
	munmap(l, VCSZ);
	p = mmap(l, VCSZ, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	us[VC_UNMAP] = (now() - t) * 1e6 / pages;
	if (p != l)
		die("mmap at the same address: %s",
		    p == MAP_FAILED ? strerror(errno) : "another address");
	munmap(l, VCSZ);
	munmap(src, VCSZ);
}

static int run_vmcost(void)
{
	double v[VS_N][VC_N][64];
	char mode[32], name[96];
	int n = runs > 64 ? 64 : runs, s, o, i;
	elan_ctx_t *c;
	uint32_t self;
	struct stats st;
	double us[VC_N];

	mode_name(mode);
	/* no context yet: the kernel alone */
	for (i = 0; i < n; i++) {
		vc_run(NULL, 0, 0, us);
		for (o = 0; o < VC_N; o++)
			v[VS_NOCTX][o][i] = us[o];
	}
	c = open_ctx();
	self = elan_addr(c);
	for (i = 0; i < n; i++)
		for (s = VS_HELD; s <= VS_NONE; s++) {
			vc_run(c, self, s == VS_HELD, us);
			for (o = 0; o < VC_N; o++)
				v[s][o][i] = us[o];
		}
	elan_close(c);
	for (o = 0; o < VC_N; o++)
		for (s = 0; s < VS_N; s++)
			for (i = 0; i < n; i++) {
				snprintf(name, sizeof(name), "vmcost_%s_%s_%s",
					 mode, vs_key[s], vc_key[o]);
				csv(name, PG, v[s][o][i], "us_per_page");
			}
	printf("elan_bench vmcost: elan.ko in %s mode; %lu KiB region, %d runs: us per page, median (min-max)\n",
	       mode, VCSZ / 1024, n);
	printf("%-36s %22s %22s %22s\n", "operation", "NIC holds the pages",
	       "NIC holds none", "no NIC context");
	for (o = 0; o < VC_N; o++) {
		printf("%-36s", vc_name[o]);
		for (s = 0; s < VS_N; s++) {
			st = stats_of(v[s][o], n);
			printf(" %7.2f (%5.2f-%6.2f)", st.med, st.min, st.max);
		}
		printf("\n");
	}
	return 0;
}

static int run_memcpy(void)
{
	char *m1 = map(BUFSZ + PG, 1), *m2 = map(BUFSZ + PG, 1);
	struct stats sm;
	size_t k;

	printf("%-10s %9s %12s %12s\n", "memcpy", "bytes", "best MB/s",
	       "median MB/s");
	for (k = 0; k < NBW; k++) {
		memcpy_bw(bw_sizes[k], m1, m2, &sm);
		printf("%-10s %9zu %12.1f %12.1f\n", "host", bw_sizes[k],
		       bw_sizes[k] / (sm.min > 0 ? sm.min : 1e-9) / 1e6,
		       bw_sizes[k] / (sm.med > 0 ? sm.med : 1e-9) / 1e6);
		csv("host_memcpy_bw_best", bw_sizes[k],
		    bw_sizes[k] / (sm.min > 0 ? sm.min : 1e-9) / 1e6, "MB/s");
		csv("host_memcpy_bw_median", bw_sizes[k],
		    bw_sizes[k] / (sm.med > 0 ? sm.med : 1e-9) / 1e6, "MB/s");
	}
	return 0;
}

int main(int argc, char **argv)
{
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "n:lr:")) != -1) {
		if (opt == 'l') {
			lat_only = 1;
			continue;
		}
		if (opt == 'r') {
			runs = atoi(optarg);
			if (runs < 1)
				runs = 1;
			continue;
		}
		if (opt != 'n')
			goto usage;
		iters = atoi(optarg);
		if (iters < 10)
			iters = 10;
	}
	/* the old form: elan_bench ITERS */
	if (optind < argc && argv[optind][0] >= '0' && argv[optind][0] <= '9') {
		iters = atoi(argv[optind++]);
		if (iters < 10)
			iters = 10;
	}
	if (optind == argc || !strcmp(argv[optind], "local"))
		return run_local();
	if (!strcmp(argv[optind], "memcpy"))
		return run_memcpy();
	if (!strcmp(argv[optind], "events"))
		return run_events();
	if (!strcmp(argv[optind], "vmcost"))
		return run_vmcost();
	if (optind + 1 < argc && !strcmp(argv[optind], "target"))
		return run_target(argv[optind + 1]);
	if (optind + 1 < argc && !strcmp(argv[optind], "initiator"))
		return run_initiator(argv[optind + 1]);
usage:
	fprintf(stderr, "usage: elan_bench [-n ITERS] [-l] [-r RUNS] [local | memcpy | events | vmcost | target DIR | initiator DIR]\n");
	return 2;
}
