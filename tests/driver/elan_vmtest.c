// SPDX-License-Identifier: GPL-2.0
/*
 * elan_vmtest: libelan tests of data movement, atomics, messages, every VM
 * event of promise 4 (docs/design.md) and bad input, on one node with an
 * Elan NIC.
 *
 *   elan_vmtest [-v] [-l] [-x TEST] [-d DIR] [TEST...]
 *
 * Each test uses the NIC between contexts of this process (a context may
 * address itself: its address is both initiator and target), so the
 * target memory is ours and the test can change it under the NIC: after
 * each VM event, RDMA to an address must reach the memory the process now
 * sees there (promise 4), a write through a write-protected or cleaned
 * PTE must fault again (promise 3), and the driver must hold no page
 * (pages_referenced == 0 after every test, promise 1).
 *
 * -l lists the tests, -x skips one, -d DIR is where the MAP_SHARED file
 * test puts its file (default: the current directory, which in the guest
 * is the 9p share of the repository: a file system with writeback).
 * Needs root for the KSM, THP and swap knobs; tests whose kernel feature
 * is missing say SKIP.  Exit status: 0 if every test passed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "elan_testlib.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MPOL_MF_MOVE
#define MPOL_MF_MOVE (1 << 1)
#endif

#define PG 4096UL
#define CAP 0x5eed0001ULL

static elan_ctx_t *ctx;		/* the main context */
static uint32_t self;		/* its address */
static const char *file_dir = ".";
static bool t_skipped;

#define T_SKIP(...) do { t_skipped = true; t_msg("SKIP " __VA_ARGS__); return; } while (0)

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

/* 2 MiB aligned anonymous memory of len bytes (len a multiple of 2 MiB). */
static void *map_aligned(size_t len, size_t align)
{
	uint8_t *p = map_anon(len + align);
	uintptr_t a = ((uintptr_t)p + align - 1) & ~(align - 1);

	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((void *)(a + len), (uintptr_t)p + align - a);
	return (void *)a;
}

static uint64_t U(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* NIC-put pattern seed into [addr, addr+len) of this process, via a bounce. */
static int nic_write(void *addr, size_t len, uint64_t seed)
{
	void *src = map_anon(len);
	int r;

	t_fill(src, len, seed);
	r = t_put(ctx, self, src, U(addr), len);
	munmap(src, len);
	return r;
}

/* NIC-get [addr, addr+len) and check it holds pattern seed (or zero). */
static int nic_check(const void *addr, size_t len, uint64_t seed, bool zero,
		     const char *what)
{
	uint8_t *dst = map_anon(len);
	int64_t bad = -1;
	size_t i;
	int r;

	memset(dst, 0xa5, len);
	r = t_get(ctx, self, dst, U(addr), len);
	if (r) {
		T_FAIL("%s: get: %s", what, t_st(r));
	} else if (zero) {
		for (i = 0; i < len && bad < 0; i++)
			if (dst[i])
				bad = (int64_t)i;
	} else {
		bad = t_verify(dst, len, seed);
	}
	if (!r && bad >= 0)
		T_FAIL("%s: NIC read wrong data at +%#" PRIx64 " (%#x)", what,
		       bad, dst[bad]);
	munmap(dst, len);
	return r ? r : bad >= 0 ? -1 : 0;
}

/* What the CPU sees: pattern seed (or zero) in [addr, addr+len)? */
static void cpu_check(const void *addr, size_t len, uint64_t seed, bool zero,
		      const char *what)
{
	const uint8_t *b = addr;
	int64_t bad = -1;
	size_t i;

	if (zero) {
		for (i = 0; i < len && bad < 0; i++)
			if (b[i])
				bad = (int64_t)i;
	} else {
		bad = t_verify(addr, len, seed);
	}
	if (bad >= 0)
		T_FAIL("%s: memory differs at +%#" PRIx64 " (%#x)", what, bad,
		       b[bad]);
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* A bool module parameter: 1 (Y), 0 (N), -1 (none). */
static int read_bool(const char *path)
{
	FILE *f = fopen(path, "r");
	int c = f ? fgetc(f) : EOF;

	if (f)
		fclose(f);
	return c == 'Y' ? 1 : c == 'N' ? 0 : -1;
}

/* Pages of [p, p+len) resident, by mincore. */
static size_t resident(void *p, size_t len)
{
	unsigned char vec[4096];
	size_t n = len / PG, i, r = 0;

	if (n > sizeof(vec) || mincore(p, len, vec))
		return (size_t)-1;
	for (i = 0; i < n; i++)
		r += vec[i] & 1;
	return r;
}

/* AnonHugePages of the mapping containing p, in kB (-1 unknown). */
static long thp_kb(void *p)
{
	char line[256], want[64];
	FILE *f = fopen("/proc/self/smaps", "r");
	bool in = false;
	long kb = -1;

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%lx-", (unsigned long)(uintptr_t)p);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') &&
		    line[0] != ' ' && strncmp(line, "AnonHuge", 8) &&
		    strchr(line, '-') < strchr(line, ' ')) {
			unsigned long s, e;

			in = sscanf(line, "%lx-%lx", &s, &e) == 2 &&
			     (uintptr_t)p >= s && (uintptr_t)p < e;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/* ------------------------------------------------------------ basic */

static void test_basic(void)
{
	struct elan_recv_hdr h;
	struct elan_event ev;
	const void *payload;
	uint64_t *w = map_anon(PG), v = 0x1122334455667788ULL, old = 0;
	char msg[] = "hello, Elan";
	int r, i;

	T_CHECK(ELAN_ADDR_CTX(self) < ELAN_MAX_CTX, "address %#x", self);
	T_INFO("context %#x, %u nodes", self, elan_nodes(ctx));
	r = T_DO(ctx, &ev, elan_nop(ctx, CK));
	T_CHECK(r == 0 && ev.op == ELAN_OP_NOP, "nop: %s op %u", t_st(r), ev.op);
	r = T_DO(ctx, &ev, elan_fence(ctx, CK, 0));
	T_CHECK(r == 0 && ev.op == ELAN_OP_FENCE, "fence: %s", t_st(r));
	r = t_put(ctx, self, &v, U(&w[1]), 8);
	T_CHECK(r == 0 && w[1] == v, "put 8: %s, %#" PRIx64, t_st(r), w[1]);
	r = t_get(ctx, self, &w[2], U(&w[1]), 8);
	T_CHECK(r == 0 && w[2] == v, "get 8: %s, %#" PRIx64, t_st(r), w[2]);
	w[3] = 40;
	r = t_atomic(ctx, self, U(&w[3]), ELAN_AOP_ADD, 2, 0, NULL, &old);
	T_CHECK(r == 0 && old == 40 && w[3] == 42, "atomic add: %s old %" PRIu64
		" now %" PRIu64, t_st(r), old, w[3]);
	r = T_DO(ctx, NULL, elan_send(ctx, self, 77, msg, sizeof(msg), CK, 0));
	T_CHECK(r == 0, "send: %s", t_st(r));
	for (i = 0; i < 100 && elan_recv(ctx, &h, &payload) != 1; i++)
		elan_wait(ctx, 100);
	if (i == 100) {
		T_FAIL("no message arrived");
	} else {
		T_CHECK(h.src == self && h.tag == 77 && h.len == sizeof(msg) &&
			!memcmp(payload, msg, sizeof(msg)),
			"message: src %#x tag %u len %u", h.src, h.tag, h.len);
		elan_recv_release(ctx);
		T_CHECK(elan_recv(ctx, &h, &payload) == 0,
			"message still there after release");
	}
	/* A remote event: put with REMOTE_EVENT to ourselves. */
	r = T_DO(ctx, NULL, elan_put(ctx, self, &v, U(&w[4]), 8, CK,
				     ELAN_CMDF_REMOTE_EVENT));
	T_CHECK(r == 0 && w[4] == v, "put with remote event: %s", t_st(r));
	for (i = 0; i < t_nstash; i++)
		if (t_stash[i].type == ELAN_EV_REMOTE)
			break;
	for (; i == t_nstash && t_nstash < T_STASH;) {
		if (elan_poll_event(ctx, &ev) == 1) {
			t_stash[t_nstash++] = ev;
			if (ev.type == ELAN_EV_REMOTE)
				break;
		} else if (elan_wait(ctx, 2000) <= 0) {
			break;
		}
	}
	T_CHECK(t_nstash && t_stash[t_nstash - 1].type == ELAN_EV_REMOTE,
		"no ELAN_EV_REMOTE event for the put");
	munmap(w, PG);
}

/* ------------------------------------------------------------ data */

static void test_data(void)
{
	static const uint64_t sizes[] = {
		1, 2, 3, 7, 8, 9, 63, 64, 65, 511, 4095, 4096, 4097, 8191,
		65536 + 13, 1 * MiB + 5, 4 * MiB - 3, 16 * MiB, 64 * MiB,
	};
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t len = sizes[i], so = (len * 7 + 3) % PG,
			 dof = (len * 13 + 5) % PG, go = (len * 3 + 1) % PG;
		size_t blen = len + 2 * PG;
		uint8_t *src = map_anon(blen), *dst = map_anon(blen),
			*back = map_anon(blen);
		double t0 = t_now(), tp, tg;
		int64_t bad;
		int r;

		t_fill(src + so, len, len);
		r = t_put(ctx, self, src + so, U(dst + dof), len);
		tp = t_now() - t0;
		if (r) {
			T_FAIL("put %" PRIu64 " B: %s", len, t_st(r));
		} else {
			bad = t_verify(dst + dof, len, len);
			T_CHECK(bad < 0, "put %" PRIu64 " B (src +%" PRIu64
				", dst +%" PRIu64 "): wrong at %" PRId64, len,
				so, dof, bad);
			T_CHECK(dof == 0 || !dst[dof - 1],
				"put %" PRIu64 " B wrote before its start", len);
			T_CHECK(!dst[dof + len], "put %" PRIu64
				" B wrote past its end", len);
		}
		t0 = t_now();
		r = t_get(ctx, self, back + go, U(dst + dof), len);
		tg = t_now() - t0;
		if (r) {
			T_FAIL("get %" PRIu64 " B: %s", len, t_st(r));
		} else {
			bad = t_verify(back + go, len, len);
			T_CHECK(bad < 0, "get %" PRIu64 " B: wrong at %" PRId64,
				len, bad);
			T_CHECK(!back[go + len], "get %" PRIu64
				" B wrote past its end", len);
		}
		if (len >= MiB)
			T_INFO("%" PRIu64 " B: put %.1f MB/s, get %.1f MB/s", len,
			       len / tp / 1e6, len / tg / 1e6);
		munmap(src, blen);
		munmap(dst, blen);
		munmap(back, blen);
	}
}

/* A counter of the driver's debugfs file (not in the user ABI), or -1. */
static long debug_counter(const char *name)
{
	FILE *f = fopen("/sys/kernel/debug/elan/counters", "r");
	char key[64];
	long v, found = -1;

	while (f && fscanf(f, "%63s %ld", key, &v) == 2)
		if (!strcmp(key, name))
			found = v;
	if (f)
		fclose(f);
	return found;
}

/*
 * Source and destination of 16 MiB each in one context: with a table of
 * 16 MiB of reach (the old NIC MMU, mmu_small) the two sides of a chunk
 * compete for the same sets; the driver's fault-around (16 pages a
 * fault) used to evict the other side's page it had just loaded, every
 * time, until nicd gave up (ELAN_E_*_FAULT).  elan_bench's sequence: a
 * first-touch put from a source the CPU never touched (zero pages), then
 * puts and gets back and forth with no CPU write in between (nothing
 * invalidated), then a pattern through it all, checked byte for byte.
 * In context c (address addr); returns the evictions it caused.
 */
static long mmu_thrash_in(elan_ctx_t *c, uint32_t addr)
{
	static const uint64_t sizes[] = { 4096, 1 * MiB, 4 * MiB, 16 * MiB };
	size_t blen = 16 * MiB + PG;
	uint8_t *a = map_anon(blen), *b = map_anon(blen);
	struct elan_counters k0 = t_counters(), k1;
	long e0 = debug_counter("evictions"), e1;
	unsigned int i, j;
	int64_t bad;
	int r;

	r = t_put(c, addr, a, U(b), 16 * MiB);
	T_CHECK(r == 0, "first-touch put 16 MiB: %s", t_st(r));
	for (i = 0; i < 16 * MiB && !b[i]; i++)
		;
	T_CHECK(i == 16 * MiB, "first-touch put: byte %u not zero", i);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t len = sizes[i];

		for (j = 0; j < 2; j++) {
			r = t_put(c, addr, a + 1, U(b + 3), len);
			T_CHECK(r == 0, "put %" PRIu64 " B: %s", len, t_st(r));
			r = t_get(c, addr, a + 5, U(b + 7), len);
			T_CHECK(r == 0, "get %" PRIu64 " B: %s", len, t_st(r));
		}
	}
	t_fill(a + 1, 16 * MiB - 8, 77);
	r = t_put(c, addr, a + 1, U(b + 3), 16 * MiB - 8);
	T_CHECK(r == 0, "put 16 MiB - 8 B: %s", t_st(r));
	bad = r ? -1 : t_verify(b + 3, 16 * MiB - 8, 77);
	T_CHECK(bad < 0, "put 16 MiB - 8: wrong at %" PRId64, bad);
	r = t_get(c, addr, a + 9, U(b + 3), 16 * MiB - 8);
	T_CHECK(r == 0, "get 16 MiB - 8 B: %s", t_st(r));
	bad = r ? -1 : t_verify(a + 9, 16 * MiB - 8, 77);
	T_CHECK(bad < 0, "get 16 MiB - 8: wrong at %" PRId64, bad);
	k1 = t_counters();
	e1 = debug_counter("evictions");
	T_INFO("%llu NIC faults, %ld evictions", k1.faults - k0.faults, e1 - e0);
	munmap(a, blen);
	munmap(b, blen);
	return e0 < 0 || e1 < 0 ? -1 : e1 - e0;
}

/* The default table reaches all of RAM: 32 MiB move without an eviction. */
static void test_mmu_thrash(void)
{
	long ev = mmu_thrash_in(ctx, self);

	T_CHECK(ev == 0, "32 MiB in one context: %ld NIC MMU evictions (-1: no debugfs)", ev);
}

/*
 * A table of 16 MiB of reach (mmu_reach_mb, the old NIC MMU's size) for
 * a new context: the same sequence evicts and still completes, correct.
 */
static void test_mmu_small(void)
{
	const char *param = "/sys/module/elan/parameters/mmu_reach_mb";
	long old = read_long(param), ev;
	elan_ctx_t *c;
	char val[32];
	int r;

	T_REQUIRE(old >= 0 && !write_file(param, "16"), "cannot set %s", param);
	r = elan_open(CAP, &c);
	snprintf(val, sizeof(val), "%ld", old);
	write_file(param, val);		/* taken at attach: done */
	T_REQUIRE(r == 0, "no second context: %s", t_st(r));
	ev = mmu_thrash_in(c, elan_addr(c));
	T_CHECK(ev > 0, "a 16 MiB table with 32 MiB in use: %ld evictions (-1: no debugfs)", ev);
	elan_close(c);
}

/*
 * A NIC fault faults in the rest of the operation's pages (up to the
 * driver's fault_around), on the local and the remote side, and nothing
 * beyond the operation: into buffers never touched, an 8-page put costs
 * one fault for the fresh target and one for the source, and exactly the
 * pages the operation covers become resident.
 */
static void test_fault_ahead(void)
{
	const size_t len = 8 * PG, span = 64 * PG;
	long fa = read_long("/sys/module/elan/parameters/fault_around");
	uint8_t *src = map_anon(len), *dst = map_anon(span);
	uint8_t *l = map_anon(span);
	struct elan_counters k0, k1;
	size_t res;
	int r;

	T_REQUIRE(fa >= 10, "fault_around is %ld: the test needs >= 10", fa);
	t_fill(src, len, 31);
	k0 = t_counters();
	r = t_put(ctx, self, src, U(dst), len);
	k1 = t_counters();
	T_REQUIRE(r == 0, "put into a fresh buffer: %s", t_st(r));
	cpu_check(dst, len, 31, false, "put into a fresh buffer");
	T_CHECK(k1.faults - k0.faults <= 2,
		"8-page put, both sides cold: %llu NIC faults (want <= 2)",
		k1.faults - k0.faults);
	res = resident(dst, span);
	T_CHECK(res == 8, "put target: %zu pages resident (want the 8 put)",
		res);

	/* unaligned: 8 pages from +100 cover 9 pages of l */
	k0 = t_counters();
	r = t_get(ctx, self, l + 100, U(dst), len);
	k1 = t_counters();
	T_REQUIRE(r == 0, "get into a fresh buffer: %s", t_st(r));
	cpu_check(l + 100, len, 31, false, "get into a fresh buffer");
	T_CHECK(k1.faults - k0.faults <= 1,
		"8-page get into a cold buffer: %llu NIC faults (want <= 1)",
		k1.faults - k0.faults);
	res = resident(l, span);
	T_CHECK(res == 9, "get target: %zu pages resident (want the 9 covered)",
		res);
	munmap(src, len);
	munmap(dst, span);
	munmap(l, span);
}

/*
 * Fault-around also loads the present pages below the faulting one, down
 * to its aligned block: 1-page puts from the top page of a touched 32-page
 * buffer down to its bottom (the order in which the fragments of a free
 * list are used) cost one NIC fault, not 32, and allocate nothing.
 */
static void test_fault_around_down(void)
{
	const size_t n = 32, block = 64 * PG;
	long fa = read_long("/sys/module/elan/parameters/fault_around");
	uint8_t *m = map_anon(2 * block), *w = map_anon(PG), *dst = map_anon(PG);
	uint8_t *buf = (uint8_t *)(((uintptr_t)m + block - 1) & ~(uintptr_t)(block - 1));
	struct elan_counters k0, k1;
	size_t i, res;
	int r;

	T_REQUIRE(fa >= (long)n, "fault_around is %ld: the test needs >= %zu", fa, n);
	t_fill(buf, n * PG, 41);
	w[0] = 1;
	r = t_put(ctx, self, w, U(dst), 64);	/* the target: translated */
	T_REQUIRE(r == 0, "put to warm the target: %s", t_st(r));
	k0 = t_counters();
	for (i = n; i-- > 0;) {
		r = t_put(ctx, self, buf + i * PG, U(dst), 64);
		T_CHECK(r == 0, "put from page %zu: %s", i, t_st(r));
	}
	k1 = t_counters();
	T_CHECK(k1.faults - k0.faults <= 1,
		"%zu one-page puts, top page first: %llu NIC faults (want <= 1)",
		n, k1.faults - k0.faults);
	cpu_check(dst, 64, 41, false, "the last put");
	res = resident(m, 2 * block);
	T_CHECK(res == n, "%zu pages resident (want the %zu touched)", res, n);
	munmap(m, 2 * block);
	munmap(w, PG);
	munmap(dst, PG);
}

/*
 * A batch holds the doorbell back: commands posted in one while the NIC
 * sleeps ring it once, at the outermost elan_batch_end(), and complete.
 * Without batching, the first post rings at once.
 */
static void test_batch(void)
{
	const int n = 8;
	const uint64_t ck = 0xba7c000000ULL;
	long long db0, db1, db2;
	struct elan_event ev;
	int i, early = 0, done, r;
	double end;

	T_REQUIRE(t_debugfs_counter("doorbells") >= 0, "no doorbell counter in debugfs");
	usleep(20000);		/* the NIC sleeps 100 us after its last work */
	db0 = t_debugfs_counter("doorbells");
	elan_batch_begin(ctx);
	elan_batch_begin(ctx);
	for (i = 0; i < n; i++) {
		r = elan_nop(ctx, ck + i);
		T_REQUIRE(r == 0, "nop %d in a batch: %s", i, t_st(r));
	}
	elan_batch_end(ctx);	/* the inner end holds on */
	usleep(1000);
	/* only a periodic wake-up of the NIC could have run them by now */
	while (elan_poll_event(ctx, &ev) == 1)
		early += ev.op == ELAN_OP_NOP && ev.cookie - ck < (uint64_t)n;
	db1 = t_debugfs_counter("doorbells");
	elan_batch_end(ctx);
	end = t_now() + t_op_timeout;
	for (done = early; done < n && t_now() < end;) {
		if (elan_poll_event(ctx, &ev) == 1)
			done += ev.op == ELAN_OP_NOP && ev.cookie - ck < (uint64_t)n;
		else
			usleep(100);
	}
	db2 = t_debugfs_counter("doorbells");
	T_CHECK(db1 == db0, "%lld doorbells inside a batch (want 0)", db1 - db0);
	T_CHECK(done == n, "%d of %d commands of the batch completed", done, n);
	T_CHECK(early || db2 - db1 == 1,
		"%lld doorbells at the end of a batch, NIC asleep (want 1)", db2 - db1);
}

/* ------------------------------------------------------------ atomics */

#define AT_THREADS 4
static int at_iters = 300;

struct at_arg {
	uint64_t *counter;	/* in our memory */
	uint64_t *cas_counter;
	int idx;
	int errors;
	int cas_retries;
};

static void *at_thread(void *p)
{
	struct at_arg *a = p;
	elan_ctx_t *c;
	uint64_t old, fetched, expect;
	int i, r;

	r = elan_open(CAP, &c);
	if (r) {
		a->errors++;
		return NULL;
	}
	for (i = 0; i < at_iters; i++) {
		r = T_DO(c, NULL, elan_atomic(c, elan_addr(c), U(a->counter),
					      ELAN_AOP_ADD, 1, 0, NULL, CK, 0));
		if (r)
			a->errors++;
		/* increment cas_counter by compare-and-swap */
		expect = __atomic_load_n(a->cas_counter, __ATOMIC_RELAXED);
		for (;;) {
			struct elan_event ev;

			r = T_DO(c, &ev, elan_atomic(c, elan_addr(c),
						     U(a->cas_counter),
						     ELAN_AOP_CSWAP, expect + 1,
						     expect, &fetched, CK, 0));
			if (r) {
				a->errors++;
				break;
			}
			old = ev.value;
			if (fetched != old)
				a->errors++;
			if (old == expect)
				break;
			expect = old;
			a->cas_retries++;
		}
	}
	elan_close(c);
	return NULL;
}

static void test_atomics(void)
{
	uint64_t *w = map_anon(PG), old = 0, f = 0;
	struct at_arg args[AT_THREADS];
	pthread_t th[AT_THREADS];
	int i, r, errors = 0, retries = 0;
	uint64_t cpu_adds = 0;

	/* Semantics of every op, with and without fetch. */
	w[0] = 5;
	r = t_atomic(ctx, self, U(&w[0]), ELAN_AOP_ADD, 3, 0, &f, &old);
	T_CHECK(!r && old == 5 && f == 5 && w[0] == 8, "add: %s %" PRIu64 " %" PRIu64, t_st(r), old, w[0]);
	r = t_atomic(ctx, self, U(&w[0]), ELAN_AOP_CSWAP, 100, 8, &f, &old);
	T_CHECK(!r && old == 8 && f == 8 && w[0] == 100, "cswap hit: %s %" PRIu64, t_st(r), w[0]);
	r = t_atomic(ctx, self, U(&w[0]), ELAN_AOP_CSWAP, 7, 1, NULL, &old);
	T_CHECK(!r && old == 100 && w[0] == 100, "cswap miss: %s %" PRIu64, t_st(r), w[0]);
	r = t_atomic(ctx, self, U(&w[0]), ELAN_AOP_SWAP, 42, 0, &f, &old);
	T_CHECK(!r && old == 100 && f == 100 && w[0] == 42, "swap: %s %" PRIu64, t_st(r), w[0]);
	r = t_atomic(ctx, self, U(&w[0]), ELAN_AOP_AND, 0x0f, 0, NULL, &old);
	T_CHECK(!r && old == 42 && w[0] == 10, "and: %s %" PRIu64, t_st(r), w[0]);
	r = t_atomic(ctx, self, U(&w[0]), ELAN_AOP_OR, 0x30, 0, NULL, &old);
	T_CHECK(!r && old == 10 && w[0] == 0x3a, "or: %s %" PRIu64, t_st(r), w[0]);
	r = t_atomic(ctx, self, U(&w[0]), ELAN_AOP_XOR, 0xff, 0, NULL, &old);
	T_CHECK(!r && old == 0x3a && w[0] == 0xc5, "xor: %s %" PRIu64, t_st(r), w[0]);
	w[1] = ~0ULL;
	r = t_atomic(ctx, self, U(&w[1]), ELAN_AOP_ADD, 1, 0, NULL, &old);
	T_CHECK(!r && old == ~0ULL && w[1] == 0, "add wraps: %s", t_st(r));

	/* Racing: AT_THREADS contexts add and compare-and-swap on one word,
	 * while the CPU adds to it too. */
	w[2] = 0;
	w[3] = 0;
	for (i = 0; i < AT_THREADS; i++) {
		args[i] = (struct at_arg){ .counter = &w[2],
					   .cas_counter = &w[3], .idx = i };
		pthread_create(&th[i], NULL, at_thread, &args[i]);
	}
	for (i = 0; i < AT_THREADS; i++) {
		void *res;

		while (pthread_tryjoin_np(th[i], &res) == EBUSY) {
			__atomic_fetch_add(&w[2], 1, __ATOMIC_SEQ_CST);
			cpu_adds++;
			usleep(500);
		}
		errors += args[i].errors;
		retries += args[i].cas_retries;
	}
	T_CHECK(!errors, "%d errors in the racing threads", errors);
	T_CHECK(w[2] == (uint64_t)AT_THREADS * at_iters + cpu_adds,
		"racing fetch-add: %" PRIu64 ", want %" PRIu64 " (%" PRIu64
		" by the CPU)", w[2], (uint64_t)AT_THREADS * at_iters + cpu_adds,
		cpu_adds);
	T_CHECK(w[3] == (uint64_t)AT_THREADS * at_iters,
		"racing cswap: %" PRIu64 ", want %" PRIu64, w[3],
		(uint64_t)AT_THREADS * at_iters);
	T_INFO("%d threads x %d: %d cswap retries, %" PRIu64 " CPU adds",
	       AT_THREADS, at_iters, retries, cpu_adds);
	munmap(w, PG);
}

/* ------------------------------------------------------------ send flood */

static int send_count = 3000;

struct rx_arg {
	elan_ctx_t *c;
	int got, errors, slow;
	uint32_t want_src;
};

static void *rx_thread(void *p)
{
	struct rx_arg *a = p;
	struct elan_recv_hdr h;
	const void *payload;
	double end = t_now() + t_op_timeout * 4;
	uint32_t seq;

	while (a->got < send_count && t_now() < end) {
		if (elan_recv(a->c, &h, &payload) != 1) {
			elan_wait(a->c, 1000);
			continue;
		}
		memcpy(&seq, payload, sizeof(seq));
		if (seq != (uint32_t)a->got || h.tag != seq * 3 ||
		    h.src != a->want_src || h.len != 4 + seq % 997 ||
		    t_verify((const uint8_t *)payload + 4, h.len - 4, seq) >= 0) {
			if (a->errors++ < 5)
				fprintf(stderr, "rx: message %d: seq %u tag %u len %u src %#x\n",
					a->got, seq, h.tag, h.len, h.src);
		}
		elan_recv_release(a->c);
		a->got++;
		/* Slow at first: the ring fills and the sender is held back. */
		if (a->got < a->slow)
			usleep(2000);
	}
	return NULL;
}

/* Completions of the senders below: each cookie (the message number)
 * once, no errors. */
struct send_tally {
	unsigned char *seen;
	int done, dup, errs;
};

/* Count one event; returns its cookie, or -1 if it is not a fresh one. */
static int send_tally_event(struct send_tally *t, const struct elan_event *ev)
{
	if (ev->type != ELAN_EV_DONE)
		return -1;
	t->done++;
	if (ev->status)
		t->errs++;
	if (ev->cookie >= (uint64_t)send_count || t->seen[ev->cookie]++) {
		t->dup++;
		return -1;
	}
	return (int)ev->cookie;
}

/* Message @seq: its number, then a pattern; returns its length. */
static uint32_t send_fill(uint8_t *buf, uint32_t seq)
{
	uint32_t len = 4 + seq % 997;

	memcpy(buf, &seq, 4);
	t_fill(buf + 4, len - 4, seq);
	return len;
}

static void send_check(int sent, const struct send_tally *t,
		       const struct rx_arg *rx, int eagain)
{
	T_CHECK(sent == send_count && t->done == send_count,
		"sent %d, completed %d of %d", sent, t->done, send_count);
	T_CHECK(!t->dup && !t->errs,
		"%d duplicate or unknown completions, %d errors", t->dup,
		t->errs);
	T_CHECK(rx->got == send_count && !rx->errors,
		"received %d of %d, %d wrong or out of order", rx->got,
		send_count, rx->errors);
	T_INFO("%d messages, %d EAGAIN", send_count, eagain);
}

static void test_send(void)
{
	struct rx_arg rx = { .slow = 200 };
	uint8_t *buf = map_anon(ELAN_SEND_MAX);
	struct send_tally t = { .seen = calloc(send_count, 1) };
	struct elan_event ev;
	pthread_t th;
	int sent = 0, eagain = 0, r, i;
	double end;

	r = elan_open(CAP, &rx.c);
	T_REQUIRE(!r, "second context: %s", strerror(-r));
	rx.want_src = self;
	pthread_create(&th, NULL, rx_thread, &rx);
	end = t_now() + t_op_timeout * 4;
	while ((sent < send_count || t.done < send_count) && t_now() < end) {
		while (elan_poll_event(ctx, &ev) == 1)
			send_tally_event(&t, &ev);
		if (sent < send_count) {
			uint32_t seq = sent, len = send_fill(buf, seq);

			r = elan_send(ctx, elan_addr(rx.c), seq * 3, buf, len,
				      seq, 0);
			if (r == -EAGAIN) {
				eagain++;
				elan_wait(ctx, 10);
				continue;
			}
			if (r) {
				T_FAIL("send %d: %s", sent, t_st(r));
				break;
			}
			/* The buffer is reused: wait for this one to be done. */
			for (i = 0; i < 100000 && !t.seen[seq]; i++) {
				if (elan_poll_event(ctx, &ev) == 1)
					send_tally_event(&t, &ev);
				else
					elan_wait(ctx, 100);
			}
			sent++;
		} else {
			elan_wait(ctx, 100);
		}
	}
	pthread_join(th, NULL);
	send_check(sent, &t, &rx, eagain);
	elan_close(rx.c);
	free(t.seen);
	munmap(buf, ELAN_SEND_MAX);
}

/*
 * Flood without waiting for each completion: many sends in flight at
 * once, receiver slow, so back-pressure happens at the receive ring.
 */
static void test_send_flood(void)
{
	struct rx_arg rx = { .slow = 100 };
	enum { NBUF = 64 };
	uint8_t *bufs = map_anon(NBUF * ELAN_SEND_MAX);
	struct send_tally t = { .seen = calloc(send_count, 1) };
	int inflight[NBUF];
	struct elan_event ev;
	pthread_t th;
	int sent = 0, r, eagain = 0, k;
	double end;

	for (k = 0; k < NBUF; k++)
		inflight[k] = -1;
	r = elan_open(CAP, &rx.c);
	T_REQUIRE(!r, "second context: %s", strerror(-r));
	rx.want_src = self;
	pthread_create(&th, NULL, rx_thread, &rx);
	end = t_now() + t_op_timeout * 4;
	while (t.done < send_count && t_now() < end) {
		while (elan_poll_event(ctx, &ev) == 1) {
			k = send_tally_event(&t, &ev);
			if (k >= 0)
				inflight[k % NBUF] = -1;
		}
		if (sent < send_count && inflight[sent % NBUF] < 0) {
			uint32_t seq = sent;
			uint8_t *buf = bufs + (seq % NBUF) * ELAN_SEND_MAX;
			uint32_t len = send_fill(buf, seq);

			r = elan_send(ctx, elan_addr(rx.c), seq * 3, buf, len,
				      seq, 0);
			if (r == -EAGAIN) {
				eagain++;
				elan_wait(ctx, 10);
				continue;
			}
			if (r) {
				T_FAIL("send %d: %s", sent, t_st(r));
				break;
			}
			inflight[seq % NBUF] = (int)seq;
			sent++;
		} else {
			elan_wait(ctx, 50);
		}
	}
	pthread_join(th, NULL);
	send_check(sent, &t, &rx, eagain);
	elan_close(rx.c);
	free(t.seen);
	munmap(bufs, NBUF * ELAN_SEND_MAX);
}

/* ------------------------------------------------------------ VM events */

/* fork: COW in the child or in the parent; the NIC follows the parent. */
static void test_vm_fork(void)
{
	const size_t len = 16 * PG;
	int order;

	for (order = 0; order < 3; order++) {
		uint8_t *buf = map_anon(len);
		int pipefd[2], status;
		char go = 0;
		pid_t pid;

		t_fill(buf, len, 1);
		/* Translations for reading and writing exist before fork. */
		nic_check(buf, len, 1, false, "before fork");
		if (nic_write(buf, len, 2))
			T_FAIL("put before fork");
		if (pipe(pipefd))
			exit(2);
		pid = fork();
		if (pid == 0) {
			int bad = 0;
			char line[512];
			FILE *m;

			/* The queues are not inherited. */
			m = fopen("/proc/self/maps", "r");
			while (m && fgets(line, sizeof(line), m))
				if (strstr(line, "/dev/elan"))
					bad |= 1;
			if (m)
				fclose(m);
			if (t_verify(buf, len, 2) >= 0)
				bad |= 2;
			if (order == 0)
				t_fill(buf, len, 3);	/* child COWs first */
			if (read(pipefd[0], &go, 1) != 1)
				bad |= 4;
			/* The parent's NIC write must not reach us. */
			if (order == 0 ? t_verify(buf, len, 3) >= 0 :
			    t_verify(buf, len, 2) >= 0)
				bad |= 8;
			_exit(bad);
		}
		close(pipefd[0]);
		if (order == 0)
			usleep(200000);		/* let the child write */
		else if (order == 1)
			t_fill(buf, PG, 4);	/* the parent COWs page 0 */
		/* order 2: the NIC write breaks COW itself */
		if (nic_write(buf, len, 5))
			T_FAIL("fork order %d: put after fork", order);
		cpu_check(buf, len, 5, false, order == 0 ? "child wrote first" :
			  order == 1 ? "parent wrote first" : "NIC wrote first");
		nic_check(buf, len, 5, false, "after fork");
		if (write(pipefd[1], &go, 1) != 1)
			exit(2);
		close(pipefd[1]);
		waitpid(pid, &status, 0);
		T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			"fork order %d: child saw %#x (1 queues mapped, 2 data"
			" at fork, 8 parent's NIC write)", order,
			WIFEXITED(status) ? WEXITSTATUS(status) : 0x100);
		munmap(buf, len);
	}

	/* A child can open its own context and use it. */
	{
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			elan_ctx_t *c;
			uint64_t v = 7, w = 0;

			if (elan_open(CAP, &c))
				_exit(1);
			if (T_DO(c, NULL, elan_put(c, elan_addr(c), &v, U(&w), 8,
						   CK, 0)) || w != 7)
				_exit(2);
			elan_close(c);
			_exit(0);
		}
		waitpid(pid, &status, 0);
		T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			"child's own context: status %#x", status);
	}
}

/* munmap and a new mapping at the same address. */
static void test_vm_munmap(void)
{
	const size_t len = 32 * PG;
	uint8_t *buf = map_anon(len), *p;
	uint8_t tmp[64];
	int fd, r;

	t_fill(buf, len, 11);
	nic_check(buf, len, 11, false, "before munmap");
	nic_write(buf, len, 12);
	munmap(buf, len);
	/* Unmapped: the NIC must fault, not use the old pages. */
	r = t_get(ctx, self, tmp, U(buf), sizeof(tmp));
	T_CHECK(r == ELAN_E_REMOTE_FAULT, "get from unmapped: %s", t_st(r));
	r = t_put(ctx, self, tmp, U(buf + PG), sizeof(tmp));
	T_CHECK(r == ELAN_E_REMOTE_FAULT, "put to unmapped: %s", t_st(r));
	r = t_get(ctx, self, buf, U(tmp), sizeof(tmp));
	T_CHECK(r == ELAN_E_LOCAL_FAULT, "get into unmapped: %s", t_st(r));

	/* Fresh anonymous memory at the same address reads zero. */
	p = mmap(buf, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	T_REQUIRE(p == buf, "mmap at the old address");
	nic_check(buf, len, 0, true, "new anonymous mapping");
	nic_write(buf, len, 13);
	cpu_check(buf, len, 13, false, "put into the new mapping");

	/* And a shared memfd mapping there: the NIC writes the file. */
	fd = memfd_create("elan-vmtest", 0);
	T_REQUIRE(fd >= 0 && !ftruncate(fd, len), "memfd");
	p = mmap(buf, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		 0);
	T_REQUIRE(p == buf, "mmap memfd at the old address");
	nic_check(buf, len, 0, true, "new memfd mapping");
	nic_write(buf, len, 14);
	{
		uint8_t *q = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);

		cpu_check(q, len, 14, false, "memfd seen through a 2nd mapping");
		munmap(q, len);
	}
	close(fd);
	munmap(buf, len);
}

static void test_vm_mremap(void)
{
	const size_t len = 32 * PG;
	uint8_t *a = map_anon(len), *b = map_anon(2 * len), *p;
	uint8_t tmp[64];
	int r;

	munmap(b, 2 * len);	/* a free address range for the move */
	t_fill(a, len, 21);
	nic_check(a, len, 21, false, "before mremap");
	nic_write(a, len, 22);
	p = mremap(a, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, b);
	T_REQUIRE(p == b, "mremap: %s", strerror(errno));
	nic_check(b, len, 22, false, "moved pages at the new address");
	r = t_get(ctx, self, tmp, U(a), sizeof(tmp));
	T_CHECK(r == ELAN_E_REMOTE_FAULT, "get from the old address: %s",
		t_st(r));
	nic_write(b, len, 23);
	cpu_check(b, len, 23, false, "put at the new address");
	/* Grow (may move again). */
	p = mremap(b, len, 2 * len, MREMAP_MAYMOVE);
	T_REQUIRE(p != MAP_FAILED, "mremap grow");
	nic_check(p, len, 23, false, "after growing");
	nic_write(p + len, len, 24);
	cpu_check(p + len, len, 24, false, "put into the grown part");
	munmap(p, 2 * len);
}

static void test_vm_mprotect(void)
{
	const size_t len = 8 * PG;
	uint8_t *buf = map_anon(len), *src = map_anon(len);
	int r;

	t_fill(src, len, 39);
	nic_write(buf, len, 31);
	T_REQUIRE(!mprotect(buf, len, PROT_READ), "mprotect");
	r = t_put(ctx, self, src, U(buf), len);
	T_CHECK(r == ELAN_E_REMOTE_PROT, "put to read-only: %s", t_st(r));
	cpu_check(buf, len, 31, false, "read-only page unchanged");
	nic_check(buf, len, 31, false, "read-only page still readable");
	/* One page read-only in the middle of a writable range. */
	mprotect(buf, len, PROT_READ | PROT_WRITE);
	mprotect(buf + 3 * PG, PG, PROT_READ);
	r = t_put(ctx, self, src, U(buf), len);
	T_CHECK(r == ELAN_E_REMOTE_PROT, "put across a read-only page: %s",
		t_st(r));
	{
		uint8_t *ref = map_anon(len);

		t_fill(ref, len, 31);
		T_CHECK(!memcmp(buf + 3 * PG, ref + 3 * PG, PG),
			"the read-only page was written");
		munmap(ref, len);
	}
	mprotect(buf, len, PROT_NONE);
	r = t_get(ctx, self, src, U(buf), len);
	T_CHECK(r == ELAN_E_REMOTE_PROT, "get from PROT_NONE: %s", t_st(r));
	/* Local side: sources and destinations are checked too. */
	r = t_put(ctx, self, buf, U(src), len);
	T_CHECK(r == ELAN_E_LOCAL_PROT, "put from PROT_NONE: %s", t_st(r));
	mprotect(buf, len, PROT_READ);
	r = t_get(ctx, self, buf, U(src), len);
	T_CHECK(r == ELAN_E_LOCAL_PROT, "get into read-only: %s", t_st(r));
	mprotect(buf, len, PROT_READ | PROT_WRITE);
	nic_write(buf, len, 33);
	cpu_check(buf, len, 33, false, "writable again");
	munmap(buf, len);
	munmap(src, len);
}

static bool have_swap(void)
{
	FILE *f = fopen("/proc/swaps", "r");
	char line[256];
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n++;
	if (f)
		fclose(f);
	return n > 1;
}

static void test_vm_pageout(void)
{
	const size_t len = 64 * PG;
	uint8_t *buf = map_anon(len);
	size_t res;

	if (!have_swap())
		T_SKIP("no swap (set up zram)");
	t_fill(buf, len, 41);
	nic_check(buf, len, 41, false, "before pageout");
	nic_write(buf, len, 42);
	T_REQUIRE(!madvise(buf, len, MADV_PAGEOUT), "MADV_PAGEOUT: %s",
		  strerror(errno));
	res = resident(buf, len);
	T_INFO("%zu of %zu pages resident after MADV_PAGEOUT", res, len / PG);
	T_CHECK(res < len / PG / 2, "MADV_PAGEOUT left %zu pages resident", res);
	nic_check(buf, len, 42, false, "swapped out, read by the NIC");
	madvise(buf, len, MADV_PAGEOUT);
	nic_write(buf, len, 43);
	madvise(buf, len, MADV_PAGEOUT);
	cpu_check(buf, len, 43, false, "NIC write to swapped-out pages");
	munmap(buf, len);
}

static void test_vm_migrate(void)
{
	enum { N = 16 };
	uint8_t *buf = map_anon(N * PG);
	void *pages[N];
	int nodes[N], status[N], i, from, moved = 0;
	long r;

	if (read_long("/sys/devices/system/node/node1/online") < 0 &&
	    access("/sys/devices/system/node/node1", F_OK))
		T_SKIP("one NUMA node only (boot with numa=fake=2)");
	t_fill(buf, N * PG, 51);
	nic_check(buf, N * PG, 51, false, "before migration");
	nic_write(buf, N * PG, 52);
	for (i = 0; i < N; i++)
		pages[i] = buf + i * PG;
	r = syscall(SYS_move_pages, 0, N, pages, NULL, status, 0);
	T_REQUIRE(r == 0, "move_pages query: %s", strerror(errno));
	from = status[0];
	for (i = 0; i < N; i++)
		nodes[i] = from == 0 ? 1 : 0;
	r = syscall(SYS_move_pages, 0, N, pages, nodes, status, MPOL_MF_MOVE);
	T_REQUIRE(r >= 0, "move_pages: %s", strerror(errno));
	for (i = 0; i < N; i++)
		moved += status[i] == nodes[0];
	T_CHECK(moved == N, "%d of %d pages migrated to node %d", moved, N,
		nodes[0]);
	nic_check(buf, N * PG, 52, false, "migrated pages");
	nic_write(buf, N * PG, 53);
	cpu_check(buf, N * PG, 53, false, "NIC write after migration");
	/* Back again, and the NIC follows once more. */
	for (i = 0; i < N; i++)
		nodes[i] = from;
	syscall(SYS_move_pages, 0, N, pages, nodes, status, MPOL_MF_MOVE);
	nic_check(buf, N * PG, 53, false, "migrated back");
	munmap(buf, N * PG);
}

static void test_vm_ksm(void)
{
	enum { N = 16 };
	const size_t len = N * PG;
	uint8_t *a = map_anon(len), *b = map_anon(len);
	long shared = 0, sharing;
	double end;
	int i;

	if (access("/sys/kernel/mm/ksm/run", W_OK))
		T_SKIP("no KSM control");
	for (i = 0; i < N; i++) {
		t_fill(a + i * PG, PG, 60 + i);
		t_fill(b + i * PG, PG, 60 + i);
	}
	T_REQUIRE(!madvise(a, len, MADV_MERGEABLE) &&
		  !madvise(b, len, MADV_MERGEABLE), "MADV_MERGEABLE: %s",
		  strerror(errno));
	/* Translations of both copies, then let KSM merge them. */
	nic_check(a, PG, 60, false, "a before merge");
	nic_check(b, PG, 60, false, "b before merge");
	write_file("/sys/kernel/mm/ksm/pages_to_scan", "10000");
	write_file("/sys/kernel/mm/ksm/sleep_millisecs", "10");
	sharing = read_long("/sys/kernel/mm/ksm/pages_sharing");
	write_file("/sys/kernel/mm/ksm/run", "1");
	end = t_now() + 60;
	while (t_now() < end) {
		shared = read_long("/sys/kernel/mm/ksm/pages_sharing");
		if (shared - sharing >= N)
			break;
		usleep(100000);
	}
	T_INFO("pages_sharing %ld -> %ld", sharing, shared);
	if (shared - sharing < N) {
		write_file("/sys/kernel/mm/ksm/run", "2");
		T_SKIP("KSM merged only %ld pages in 60 s", shared - sharing);
	}
	for (i = 0; i < N; i++)
		nic_check(a + i * PG, PG, 60 + i, false, "merged page (a)");
	/* A NIC write to a must break the merge, not change b. */
	nic_write(a, PG, 99);
	cpu_check(a, PG, 99, false, "NIC write to a merged page");
	cpu_check(b, PG, 60, false, "the other copy of the merged page");
	nic_check(b, PG, 60, false, "the other copy, read by the NIC");
	write_file("/sys/kernel/mm/ksm/run", "2");	/* unmerge all */
	nic_check(b + PG, PG, 61, false, "after unmerge");
	write_file("/sys/kernel/mm/ksm/run", "0");
	munmap(a, len);
	munmap(b, len);
}

static void test_vm_thp(void)
{
	const size_t huge = 2 * MiB, len = 2 * huge;
	uint8_t *buf = map_aligned(len, huge);
	long kb, h0, h1;
	int r;

	if (madvise(buf, len, MADV_HUGEPAGE))
		T_SKIP("MADV_HUGEPAGE: %s", strerror(errno));
	t_fill(buf, len, 71);		/* faults in huge pages */
	kb = thp_kb(buf);
	T_INFO("AnonHugePages %ld kB", kb);
	if (kb < 2048)
		T_INFO("no huge page after the fault (THP off?): the test still runs");
	h0 = debug_counter("huge_loaded");
	nic_check(buf, len, 71, false, "THP");
	h1 = debug_counter("huge_loaded");
	/* each huge page the PMD maps: one 2 MiB NIC entry (elan huge=1) */
	T_INFO("%ld 2 MiB NIC MMU entries loaded for %ld kB of THP", h1 - h0, kb);
	if (kb >= 2048 && read_bool("/sys/module/elan/parameters/huge") == 1)
		T_CHECK(h1 - h0 >= kb / 2048, "%ld kB of THP read by the NIC with %ld 2 MiB entries (-1: no debugfs)",
			kb, h1 - h0);
	nic_write(buf + 4096 + 100, huge, 72);
	cpu_check(buf + 4096 + 100, huge, 72, false, "NIC write into a THP");
	/* Split: one small page of the huge page becomes read-only. */
	T_REQUIRE(!mprotect(buf + 5 * PG, PG, PROT_READ), "mprotect");
	r = t_put(ctx, self, buf + huge, U(buf + 5 * PG), 64);
	T_CHECK(r == ELAN_E_REMOTE_PROT, "put to the read-only part: %s",
		t_st(r));
	nic_write(buf + 6 * PG, 32 * PG, 73);
	cpu_check(buf + 6 * PG, 32 * PG, 73, false, "split THP");
	mprotect(buf + 5 * PG, PG, PROT_READ | PROT_WRITE);
	/* Part of it dropped. */
	madvise(buf + 64 * PG, 16 * PG, MADV_DONTNEED);
	nic_check(buf + 64 * PG, 16 * PG, 0, true, "DONTNEED inside a THP");
	nic_write(buf + 60 * PG, 32 * PG, 74);
	cpu_check(buf + 60 * PG, 32 * PG, 74, false, "after partial DONTNEED");
	/* Collapse back into a huge page (6.1 has MADV_COLLAPSE). */
	t_fill(buf, huge, 75);
	if (madvise(buf, huge, MADV_COLLAPSE) == 0) {
		T_INFO("collapsed: AnonHugePages %ld kB", thp_kb(buf));
		nic_check(buf, huge, 75, false, "collapsed THP");
		nic_write(buf, huge, 76);
		cpu_check(buf, huge, 76, false, "NIC write to the collapsed THP");
	} else {
		T_INFO("MADV_COLLAPSE: %s", strerror(errno));
	}
	munmap(buf, len);
}

static void test_vm_dontneed(void)
{
	const size_t len = 16 * PG;
	uint8_t *buf = map_anon(len);

	t_fill(buf, len, 81);
	nic_check(buf, len, 81, false, "before DONTNEED");
	nic_write(buf, len, 82);
	madvise(buf, len, MADV_DONTNEED);
	cpu_check(buf, len, 0, true, "CPU after DONTNEED");
	nic_check(buf, len, 0, true, "NIC after DONTNEED");
	nic_write(buf, len, 83);
	cpu_check(buf, len, 83, false, "NIC write after DONTNEED");
	munmap(buf, len);
}

/*
 * MADV_FREE cleans the PTEs: the pages may be dropped instead of swapped.
 * A NIC write afterwards must dirty them again (promise 3), so that
 * reclaim keeps the data.  A control buffer shows that reclaim does drop
 * clean lazy-free pages here, or the test proves nothing.
 */
static void test_vm_free(void)
{
	const size_t len = 16 * PG;
	uint8_t *buf = map_anon(len), *ctl = map_anon(len);
	bool dropped;

	t_fill(buf, len, 91);
	t_fill(ctl, len, 91);
	nic_write(buf, len, 92);	/* a writable translation exists */
	T_REQUIRE(!madvise(buf, len, MADV_FREE) &&
		  !madvise(ctl, len, MADV_FREE), "MADV_FREE: %s",
		  strerror(errno));
	nic_write(buf, len, 93);	/* must fault and re-dirty */
	madvise(buf, len, MADV_PAGEOUT);
	madvise(ctl, len, MADV_PAGEOUT);
	dropped = ctl[0] == 0 && ctl[len - 1] == 0;
	if (!dropped)
		T_INFO("reclaim kept the clean lazy-free control pages: the test is weak");
	cpu_check(buf, len, 93, false, "NIC data after MADV_FREE + reclaim");
	munmap(buf, len);
	munmap(ctl, len);
}

/*
 * MAP_SHARED file + msync: writeback cleans the PTEs (page_mkclean), so a
 * NIC write after the first msync must fault and dirty the page again, or
 * the second msync would not write it.  The file is read back with pread,
 * which on the 9p share goes to the server (the host file).
 */
static void test_vm_shared(void)
{
	const size_t len = 8 * PG;
	char path[512];
	uint8_t *map, *back = map_anon(len);
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/.elan-vmtest-%d", file_dir, getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	T_REQUIRE(fd >= 0, "open %s: %s", path, strerror(errno));
	if (ftruncate(fd, len)) {
		T_FAIL("ftruncate: %s", strerror(errno));
		unlink(path);
		return;
	}
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_REQUIRE(map != MAP_FAILED, "mmap shared: %s", strerror(errno));
	t_fill(map, len, 101);
	nic_write(map, len, 102);
	T_CHECK(!msync(map, len, MS_SYNC), "msync: %s", strerror(errno));
	n = pread(fd, back, len, 0);
	T_CHECK(n == (ssize_t)len && t_verify(back, len, 102) < 0,
		"file after the first msync");
	nic_write(map, len, 103);	/* the PTEs are clean now */
	T_CHECK(!msync(map, len, MS_SYNC), "msync: %s", strerror(errno));
	n = pread(fd, back, len, 0);
	T_CHECK(n == (ssize_t)len && t_verify(back, len, 103) < 0,
		"file after the second msync: the NIC write was lost by writeback");
	cpu_check(map, len, 103, false, "mapping");
	munmap(map, len);
	close(fd);
	unlink(path);
	munmap(back, len);
}

/*
 * Promise 2 under concurrency: threads with their own contexts keep
 * putting into one page-sized window while the main thread remaps the
 * window between two pages of a memfd (which stay alive, so a late DMA
 * would be seen), write-protects it and drops it.  Once the call that
 * changed the mapping has returned, the page that left the window must
 * not change any more, and a write-protected page must not change at all.
 */
#define RACE_THREADS 2
#define RACE_WIN (16 * PG)
static volatile int race_stop;
static uint8_t *race_win;

static void *race_putter(void *p)
{
	elan_ctx_t *c;
	uint64_t *src = map_anon(RACE_WIN), seq = (uintptr_t)p << 40;
	int i, r;

	if (elan_open(CAP, &c))
		return (void *)1;
	while (!race_stop) {
		seq++;
		for (i = 0; i < (int)(RACE_WIN / 8); i += PG / 8)
			src[i] = seq;
		r = T_DO(c, NULL, elan_put(c, elan_addr(c), src, U(race_win),
					   RACE_WIN, CK, 0));
		if (r == -ETIMEDOUT)
			break;
	}
	elan_close(c);
	munmap(src, RACE_WIN);
	return NULL;
}

static void test_vm_race(void)
{
	const int rounds = 300;
	pthread_t th[RACE_THREADS];
	uint8_t *view, *snap = map_anon(RACE_WIN);
	struct elan_counters k0 = t_counters(), k1;
	int fd, i, cur = 0, bad_away = 0, bad_ro = 0;

	fd = memfd_create("elan-race", 0);
	T_REQUIRE(fd >= 0 && !ftruncate(fd, 2 * RACE_WIN), "memfd");
	view = mmap(NULL, 2 * RACE_WIN, PROT_READ, MAP_SHARED, fd, 0);
	race_win = mmap(NULL, RACE_WIN, PROT_READ | PROT_WRITE, MAP_SHARED,
			fd, 0);
	T_REQUIRE(view != MAP_FAILED && race_win != MAP_FAILED, "mmap");
	race_stop = 0;
	for (i = 0; i < RACE_THREADS; i++)
		pthread_create(&th[i], NULL, race_putter, (void *)(uintptr_t)(i + 1));
	usleep(100000);
	for (i = 0; i < rounds; i++) {
		int away = cur, k;
		void *p;

		switch (i % 3) {
		case 0:	/* remap the window to the other page */
			cur ^= 1;
			p = mmap(race_win, RACE_WIN, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_FIXED, fd, cur * RACE_WIN);
			T_REQUIRE(p == race_win, "remap");
			memcpy(snap, view + away * RACE_WIN, RACE_WIN);
			usleep(2000);
			if (memcmp(snap, view + away * RACE_WIN, RACE_WIN))
				bad_away++;
			break;
		case 1:	/* write-protect it */
			mprotect(race_win, RACE_WIN, PROT_READ);
			memcpy(snap, view + cur * RACE_WIN, RACE_WIN);
			usleep(2000);
			if (memcmp(snap, view + cur * RACE_WIN, RACE_WIN))
				bad_ro++;
			mprotect(race_win, RACE_WIN, PROT_READ | PROT_WRITE);
			break;
		case 2:	/* drop it from the page tables, then look */
			madvise(race_win, RACE_WIN, MADV_DONTNEED);
			for (k = 0; k < 3; k++)
				sched_yield();
			break;
		}
		usleep(1000);
	}
	race_stop = 1;
	for (i = 0; i < RACE_THREADS; i++) {
		void *res;

		pthread_join(th[i], &res);
		T_CHECK(!res, "putter %d could not open a context", i);
	}
	k1 = t_counters();
	T_CHECK(!bad_away, "%d times a page changed after leaving the window",
		bad_away);
	T_CHECK(!bad_ro, "%d times a write-protected page changed", bad_ro);
	T_INFO("%d rounds: invalidations %llu, shootdown waits %llu", rounds,
	       k1.invalidations - k0.invalidations,
	       k1.shootdown_waits - k0.shootdown_waits);
	munmap(race_win, RACE_WIN);
	munmap(view, 2 * RACE_WIN);
	munmap(snap, RACE_WIN);
	close(fd);
}

/* ------------------------------------------------------------ exit */

static void test_exit_mid(void)
{
	const size_t len = 64 * MiB;
	struct elan_counters k0 = t_counters(), k1;
	int status, pipefd[2], r;
	struct { uint32_t addr; uint64_t buf; } info;
	uint8_t *src;
	pid_t pid;

	/* The initiator exits with a 64 MiB put and get in flight. */
	pid = fork();
	if (pid == 0) {
		elan_ctx_t *c;
		uint8_t *a = map_anon(len), *b = map_anon(len);

		memset(a, 1, len);
		if (elan_open(CAP, &c))
			_exit(1);
		elan_put(c, elan_addr(c), a, U(b), len, 1, 0);
		elan_get(c, elan_addr(c), a, U(b), len, 2, 0);
		usleep(20000);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"initiator child: %#x", status);

	/* The target exits while we put 64 MiB into it. */
	src = map_anon(len);
	memset(src, 2, len);
	if (pipe(pipefd))
		exit(2);
	pid = fork();
	if (pid == 0) {
		elan_ctx_t *c;
		uint8_t *b = map_anon(len);

		close(pipefd[0]);
		if (elan_open(CAP, &c))
			_exit(1);
		info.addr = elan_addr(c);
		info.buf = U(b);
		if (write(pipefd[1], &info, sizeof(info)) != sizeof(info))
			_exit(2);
		usleep(500000);
		_exit(0);
	}
	close(pipefd[1]);
	T_REQUIRE(read(pipefd[0], &info, sizeof(info)) == sizeof(info),
		  "target child");
	close(pipefd[0]);
	r = t_put(ctx, info.addr, src, info.buf, len);
	T_INFO("put into an exiting target: %s", t_st(r));
	T_CHECK(r == 0 || r == ELAN_E_TARGET_GONE || r == ELAN_E_NO_CONTEXT ||
		r == ELAN_E_REMOTE_FAULT,
		"put into an exiting target ended with %s", t_st(r));
	waitpid(pid, &status, 0);
	munmap(src, len);
	/* Still working afterwards. */
	r = nic_write(&info, sizeof(info), 5);
	T_CHECK(r == 0, "put after the exits: %s", t_st(r));
	k1 = t_counters();
	T_INFO("faults %llu -> %llu", k0.faults, k1.faults);
}

/* ------------------------------------------------------------ bad input */

static void test_bad_unmapped(void)
{
	uint8_t *buf = map_anon(3 * PG), *hole = buf + 2 * PG;
	uint64_t v = 1;
	int r;

	munmap(hole, PG);
	r = t_put(ctx, self, hole, U(buf), 8);
	T_CHECK(r == ELAN_E_LOCAL_FAULT, "put from unmapped: %s", t_st(r));
	r = t_put(ctx, self, buf, U(hole), 8);
	T_CHECK(r == ELAN_E_REMOTE_FAULT, "put to unmapped: %s", t_st(r));
	r = t_get(ctx, self, hole, U(buf), 8);
	T_CHECK(r == ELAN_E_LOCAL_FAULT, "get into unmapped: %s", t_st(r));
	r = t_get(ctx, self, buf, U(hole), 8);
	T_CHECK(r == ELAN_E_REMOTE_FAULT, "get from unmapped: %s", t_st(r));
	r = t_atomic(ctx, self, U(hole), ELAN_AOP_ADD, 1, 0, NULL, NULL);
	T_CHECK(r == ELAN_E_REMOTE_FAULT, "atomic on unmapped: %s", t_st(r));
	r = t_atomic(ctx, self, U(buf), ELAN_AOP_ADD, 1, 0, (uint64_t *)hole,
		     NULL);
	T_CHECK(r == ELAN_E_LOCAL_FAULT, "atomic fetch into unmapped: %s",
		t_st(r));
	r = T_DO(ctx, NULL, elan_send(ctx, self, 1, hole, 16, CK, 0));
	T_CHECK(r == ELAN_E_LOCAL_FAULT, "send from unmapped: %s", t_st(r));
	/* Kernel addresses, the null page and a page crossing into a hole. */
	r = t_put(ctx, self, (void *)0xffff888000000000UL, U(buf), 8);
	T_CHECK(r == ELAN_E_LOCAL_FAULT || r == ELAN_E_BADCMD,
		"put from a kernel address: %s", t_st(r));
	r = t_put(ctx, self, buf, 0xffffffffff600000UL, 8);
	T_CHECK(r == ELAN_E_REMOTE_FAULT || r == ELAN_E_BADCMD ||
		r == ELAN_E_REMOTE_PROT, "put to the vsyscall page: %s",
		t_st(r));
	r = t_get(ctx, self, buf, 0, 8);
	T_CHECK(r == ELAN_E_REMOTE_FAULT, "get from NULL: %s", t_st(r));
	r = t_put(ctx, self, &v, U(buf + 2 * PG - 4), 8);
	T_CHECK(r == ELAN_E_REMOTE_FAULT, "put running into unmapped: %s",
		t_st(r));
	/* The library's own event ring is VM_IO: not a DMA target. */
	{
		char line[256];
		unsigned long s = 0, e;
		FILE *m = fopen("/proc/self/maps", "r");

		while (m && fgets(line, sizeof(line), m))
			if (strstr(line, "/dev/elan") &&
			    sscanf(line, "%lx-%lx", &s, &e) == 2)
				break;
		if (m)
			fclose(m);
		if (s) {
			r = t_put(ctx, self, buf, s, 8);
			T_CHECK(r == ELAN_E_REMOTE_FAULT || r == ELAN_E_REMOTE_PROT,
				"put into the NIC queue mapping: %s", t_st(r));
		}
	}
	munmap(buf, 2 * PG);
}

static void test_bad_cap(void)
{
	elan_ctx_t *other;
	uint64_t v = 1, w = 0;
	int r;

	r = elan_open(CAP + 1, &other);
	T_REQUIRE(!r, "second context: %s", strerror(-r));
	r = t_put(ctx, elan_addr(other), &v, U(&w), 8);
	T_CHECK(r == ELAN_E_CAPABILITY, "put to another job: %s", t_st(r));
	r = t_get(ctx, elan_addr(other), &v, U(&w), 8);
	T_CHECK(r == ELAN_E_CAPABILITY, "get from another job: %s", t_st(r));
	r = T_DO(ctx, NULL, elan_send(ctx, elan_addr(other), 1, &v, 8, CK, 0));
	T_CHECK(r == ELAN_E_CAPABILITY, "send to another job: %s", t_st(r));
	r = t_atomic(ctx, elan_addr(other), U(&w), ELAN_AOP_ADD, 1, 0, NULL,
		     NULL);
	T_CHECK(r == ELAN_E_CAPABILITY, "atomic on another job: %s", t_st(r));
	T_CHECK(w == 0, "memory of the other job changed");
	elan_close(other);
	/* A context nobody attached, a node that does not exist. */
	r = t_put(ctx, ELAN_ADDR(ELAN_ADDR_NODE(self), ELAN_MAX_CTX - 1), &v,
		  U(&w), 8);
	T_CHECK(r == ELAN_E_NO_CONTEXT || r == ELAN_E_TARGET_GONE,
		"put to an unattached context: %s", t_st(r));
	r = t_put(ctx, ELAN_ADDR(ELAN_MAX_NODES - 1, 0), &v, U(&w), 8);
	T_CHECK(r == ELAN_E_NO_CONTEXT || r == ELAN_E_NODE_DOWN,
		"put to a missing node: %s", t_st(r));
	r = t_put(ctx, ELAN_ADDR(ELAN_ADDR_NODE(self), 5000), &v, U(&w), 8);
	T_CHECK(r == ELAN_E_NO_CONTEXT, "put to context 5000: %s", t_st(r));
}

/* Post without consuming events: back-pressure, then exactly one each. */
static void test_bad_overrun(void)
{
	enum { MAXPOST = 3000 };
	unsigned char *seen = calloc(MAXPOST, 1);
	struct elan_event ev;
	int posted = 0, got = 0, dup = 0, r, stalls = 0;
	double end;

	t_stash_clear();
	while (posted < MAXPOST) {
		r = elan_nop(ctx, posted);
		if (r == -EAGAIN) {
			if (++stalls > 50)
				break;		/* the NIC stopped taking more */
			usleep(20000);
			continue;
		}
		T_REQUIRE(!r, "nop: %s", t_st(r));
		stalls = 0;
		posted++;
	}
	T_INFO("posted %d commands before the queue stayed full", posted);
	T_CHECK(posted < MAXPOST, "the queue never filled");
	T_CHECK(posted >= ELAN_CMDQ_ENTRIES, "only %d posted", posted);
	end = t_now() + t_op_timeout;
	while (got < posted && t_now() < end) {
		r = elan_poll_event(ctx, &ev);
		if (r == 1) {
			if (ev.cookie >= (uint64_t)posted || seen[ev.cookie]++ ||
			    ev.status)
				dup++;
			got++;
			continue;
		}
		T_REQUIRE(r == 0, "poll: %d", r);
		/* After consuming, more can be posted again. */
		elan_wait(ctx, 100);
	}
	T_CHECK(got == posted && !dup, "%d events for %d commands, %d bad",
		got, posted, dup);
	usleep(200000);
	T_CHECK(elan_poll_event(ctx, &ev) == 0, "an extra event");
	free(seen);
}

static void test_bad_cmd(void)
{
	uint64_t *w = map_anon(PG);
	struct elan_cmd c;
	int r;

#define RAW(...) ({ c = (struct elan_cmd){ __VA_ARGS__ };		\
		    T_DO(ctx, NULL, (c.cookie = CK, elan_post(ctx, &c))); })
	r = RAW(.op = 99, .dst = self);
	T_CHECK(r == ELAN_E_BADCMD, "op 99: %s", t_st(r));
	r = RAW(.op = ELAN_OP_ATOMIC, .aop = 77, .dst = self,
		.raddr = U(w), .len = 8);
	T_CHECK(r == ELAN_E_BADCMD, "atomic op 77: %s", t_st(r));
	r = RAW(.op = ELAN_OP_ATOMIC, .aop = ELAN_AOP_ADD, .dst = self,
		.raddr = U(w) + 4, .len = 8);
	T_CHECK(r == ELAN_E_BADCMD, "unaligned atomic: %s", t_st(r));
	r = RAW(.op = ELAN_OP_ATOMIC, .aop = ELAN_AOP_ADD, .dst = self,
		.raddr = U(w), .len = 2);
	T_CHECK(r == ELAN_E_BADCMD, "atomic of 2 bytes: %s", t_st(r));
	r = RAW(.op = ELAN_OP_ATOMIC, .aop = ELAN_AOP_ADD, .dst = self,
		.raddr = U(w) + 2, .len = 4);
	T_CHECK(r == ELAN_E_BADCMD, "unaligned atomic of 4 bytes: %s", t_st(r));
	r = RAW(.op = ELAN_OP_ATOMIC, .aop = ELAN_AOP_ADD, .dst = self,
		.raddr = U(w), .len = 8, .flags = ELAN_CMDF_FETCH,
		.laddr = U(w) + 12);
	T_CHECK(r == ELAN_E_BADCMD || r == 0, "fetch to an unaligned address: %s",
		t_st(r));
	r = RAW(.op = ELAN_OP_SEND, .dst = self, .laddr = U(w),
		.len = ELAN_SEND_MAX + 1);
	T_CHECK(r == ELAN_E_BADCMD, "send of %d bytes: %s", ELAN_SEND_MAX + 1,
		t_st(r));
	r = RAW(.op = ELAN_OP_PUT, .dst = self, .laddr = U(w), .raddr = U(w),
		.len = 1ULL << 62);
	T_CHECK(r == ELAN_E_BADCMD || r == ELAN_E_LOCAL_FAULT ||
		r == ELAN_E_REMOTE_FAULT, "put of 2^62 bytes: %s", t_st(r));
	r = RAW(.op = ELAN_OP_PUT, .dst = self, .laddr = ~0ULL - 3,
		.raddr = U(w), .len = 8);
	T_CHECK(r == ELAN_E_BADCMD || r == ELAN_E_LOCAL_FAULT,
		"put wrapping around: %s", t_st(r));
	r = RAW(.op = ELAN_OP_PUT, .dst = self, .laddr = U(w), .raddr = U(w),
		.len = 8, .flags = 0x8000);
	T_CHECK(r == ELAN_E_BADCMD || r == 0, "unknown flag: %s", t_st(r));
	/* The context still works. */
	r = t_put(ctx, self, &w[1], U(&w[2]), 8);
	T_CHECK(r == 0, "put after bad commands: %s", t_st(r));
#undef RAW
	munmap(w, PG);
}

/* The device interface itself: ioctls and mmaps that must be refused. */
static void test_bad_driver(void)
{
	struct elan_attach a = { .capability = CAP, .abi_version = 999 };
	void *p;
	int fd = open(ELAN_DEVICE, O_RDWR), fd2, r;

	T_REQUIRE(fd >= 0, "open: %s", strerror(errno));
	p = mmap(NULL, ELAN_CMD_AREA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, ELAN_MMAP_CMD);
	T_CHECK(p == MAP_FAILED, "mmap before attach worked");
	T_CHECK(ioctl(fd, ELAN_IOC_DOORBELL) < 0, "doorbell before attach");
	r = ioctl(fd, ELAN_IOC_ATTACH, &a);
	T_CHECK(r < 0 && errno == EPROTO, "attach with ABI 999: %d %s", r,
		strerror(errno));
	a.abi_version = ELAN_ABI_VERSION;
	r = ioctl(fd, ELAN_IOC_ATTACH, &a);
	T_REQUIRE(r == 0, "attach: %s", strerror(errno));
	T_CHECK(ELAN_ADDR_NODE(a.addr) == ELAN_ADDR_NODE(self) &&
		a.addr != self && a.nodes >= 1, "attach gave %#x, %u nodes",
		a.addr, a.nodes);
	r = ioctl(fd, ELAN_IOC_ATTACH, &a);
	T_CHECK(r < 0 && errno == EBUSY, "second attach: %s", strerror(errno));
	T_CHECK(ioctl(fd, _IO(ELAN_IOC_MAGIC, 99)) < 0 && errno == ENOTTY,
		"unknown ioctl");
	T_CHECK(ioctl(fd, ELAN_IOC_ATTACH, (void *)8) < 0 && errno == EFAULT,
		"attach with a bad pointer");
	/* Wrong sizes, offsets, and writes to the read-only area. */
	p = mmap(NULL, ELAN_CMD_AREA_SIZE + PG, PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, ELAN_MMAP_CMD);
	T_CHECK(p == MAP_FAILED, "mmap of a larger CMD area");
	p = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, ELAN_MMAP_CMD);
	T_CHECK(p == MAP_FAILED, "mmap of a smaller CMD area");
	p = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 2 * ELAN_MMAP_EVT);
	T_CHECK(p == MAP_FAILED, "mmap at an unknown offset");
	p = mmap(NULL, ELAN_EVT_AREA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, ELAN_MMAP_EVT);
	T_CHECK(p == MAP_FAILED && errno == EPERM, "writable EVT mapping");
	p = mmap(NULL, ELAN_CMD_AREA_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		 fd, ELAN_MMAP_CMD);
	T_CHECK(p == MAP_FAILED, "private CMD mapping");
	p = mmap(NULL, ELAN_EVT_AREA_SIZE, PROT_READ, MAP_SHARED, fd,
		 ELAN_MMAP_EVT);
	T_REQUIRE(p != MAP_FAILED, "EVT mapping: %s", strerror(errno));
	T_CHECK(mprotect(p, ELAN_EVT_AREA_SIZE, PROT_READ | PROT_WRITE) < 0,
		"EVT area made writable by mprotect");
	T_CHECK(madvise(p, ELAN_EVT_AREA_SIZE, MADV_DOFORK) < 0,
		"MADV_DOFORK on the EVT area");
	T_CHECK(mremap(p, ELAN_EVT_AREA_SIZE, ELAN_EVT_AREA_SIZE + PG,
		       MREMAP_MAYMOVE) == MAP_FAILED, "EVT area grown");
	munmap(p, ELAN_EVT_AREA_SIZE);
	/* A second open of the device is another context. */
	fd2 = open(ELAN_DEVICE, O_RDWR);
	T_CHECK(fd2 >= 0, "second open");
	if (fd2 >= 0)
		close(fd2);
	/* A corrupt ev_head: the NIC fails that context only. */
	p = mmap(NULL, ELAN_CMD_AREA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, ELAN_MMAP_CMD);
	if (p != MAP_FAILED) {
		struct elan_user_ctl *ctl = p;
		struct elan_cmd *q = (void *)((char *)p + ELAN_PAGE);
		const struct elan_user_status *st;
		void *e = mmap(NULL, ELAN_EVT_AREA_SIZE, PROT_READ, MAP_SHARED,
			       fd, ELAN_MMAP_EVT);
		double end;

		T_REQUIRE(e != MAP_FAILED, "EVT mapping");
		st = e;
		ctl->ev_head = 12345;
		q[0] = (struct elan_cmd){ .op = ELAN_OP_NOP, .cookie = 1 };
		__atomic_store_n(&q[0].seq, 1, __ATOMIC_RELEASE);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		ioctl(fd, ELAN_IOC_DOORBELL);
		end = t_now() + 30;
		while (st->state == ELAN_CTX_ACTIVE && t_now() < end)
			usleep(10000);
		T_CHECK(st->state == ELAN_CTX_FAILED && st->error == ELAN_E_QUEUE,
			"corrupt ev_head: state %u error %u", st->state,
			st->error);
		{
			struct pollfd pfd = { .fd = fd, .events = POLLIN };

			T_CHECK(poll(&pfd, 1, 1000) == 1 &&
				(pfd.revents & POLLERR), "poll of a failed context: %#x",
				pfd.revents);
		}
		munmap(e, ELAN_EVT_AREA_SIZE);
		munmap(p, ELAN_CMD_AREA_SIZE);
	}
	close(fd);
	/* Ours is unaffected. */
	T_CHECK(nic_write(&a, sizeof(a), 3) == 0, "main context after that");
}

/* ------------------------------------------------------------ main */

static const struct {
	const char *name;
	void (*fn)(void);
	const char *what;
} tests[] = {
	{ "basic", test_basic, "nop, fence, put, get, atomic, send, remote event" },
	{ "data", test_data, "put/get 1 B .. 64 MiB, unaligned" },
	{ "fault_ahead", test_fault_ahead, "a fault loads the op's next pages, no more" },
	{ "fault_around_down", test_fault_around_down, "a fault loads present pages below it in its block" },
	{ "batch", test_batch, "a batch of commands rings the doorbell once, at its end" },
	{ "mmu_thrash", test_mmu_thrash, "16 MiB both sides in one context: no eviction" },
	{ "mmu_small", test_mmu_small, "the same with a 16 MiB NIC MMU: evicts, completes" },
	{ "atomics", test_atomics, "every op; racing contexts and CPU" },
	{ "send", test_send, "3000 messages, in order, one completion each" },
	{ "send_flood", test_send_flood, "64 sends in flight, slow receiver" },
	{ "vm_fork", test_vm_fork, "fork/COW both ways; queues not inherited" },
	{ "vm_munmap", test_vm_munmap, "munmap + mmap at the same address" },
	{ "vm_mremap", test_vm_mremap, "mremap move and grow" },
	{ "vm_mprotect", test_vm_mprotect, "read-only: REMOTE_PROT, page unchanged" },
	{ "vm_pageout", test_vm_pageout, "MADV_PAGEOUT to zram and back" },
	{ "vm_migrate", test_vm_migrate, "move_pages between NUMA nodes" },
	{ "vm_ksm", test_vm_ksm, "KSM merge, NIC write breaks it" },
	{ "vm_thp", test_vm_thp, "THP fault, split, partial DONTNEED, collapse" },
	{ "vm_dontneed", test_vm_dontneed, "MADV_DONTNEED" },
	{ "vm_free", test_vm_free, "MADV_FREE: NIC write re-dirties" },
	{ "vm_shared", test_vm_shared, "MAP_SHARED file + msync writeback" },
	{ "vm_race", test_vm_race, "remap/mprotect under running puts" },
	{ "exit_mid", test_exit_mid, "initiator / target exit mid-transfer" },
	{ "bad_unmapped", test_bad_unmapped, "unmapped and kernel addresses" },
	{ "bad_cap", test_bad_cap, "other capability, missing context/node" },
	{ "bad_overrun", test_bad_overrun, "queue overrun: back-pressure" },
	{ "bad_cmd", test_bad_cmd, "malformed commands" },
	{ "bad_driver", test_bad_driver, "refused ioctls and mmaps, corrupt ring" },
};
#define NTESTS (sizeof(tests) / sizeof(tests[0]))

int main(int argc, char **argv)
{
	const char *skip[32];
	int nskip = 0, opt, i, j, pass = 0, fail = 0, skipped = 0, r;
	bool want[NTESTS], any = false;
	struct elan_counters k;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "vlx:d:n:")) != -1) {
		switch (opt) {
		case 'v':
			t_verbose = 1;
			break;
		case 'l':
			for (i = 0; i < (int)NTESTS; i++)
				printf("%-14s %s\n", tests[i].name, tests[i].what);
			return 0;
		case 'x':
			if (nskip < 32)
				skip[nskip++] = optarg;
			break;
		case 'd':
			file_dir = optarg;
			break;
		case 'n':
			send_count = atoi(optarg);
			at_iters = send_count / 10 + 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-v] [-l] [-x TEST] [-d DIR] [-n MSGS] [TEST...]\n",
				argv[0]);
			return 2;
		}
	}
	for (i = 0; i < (int)NTESTS; i++) {
		want[i] = optind == argc;
		for (j = optind; j < argc; j++)
			if (!strcmp(argv[j], tests[i].name))
				want[i] = any = true;
		for (j = 0; j < nskip; j++)
			if (!strcmp(skip[j], tests[i].name))
				want[i] = false;
	}
	if (optind < argc && !any) {
		fprintf(stderr, "no such test; -l lists them\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	r = elan_open(CAP, &ctx);
	if (r) {
		printf("elan_open: %s\n", strerror(-r));
		printf("0 passed, 1 failed\n");
		return 1;
	}
	self = elan_addr(ctx);
	printf("elan_vmtest: context %#x (node %u), %u nodes\n", self,
	       ELAN_ADDR_NODE(self), elan_nodes(ctx));
	for (i = 0; i < (int)NTESTS; i++) {
		double t0 = t_now();

		if (!want[i])
			continue;
		t_name = tests[i].name;
		t_failed = 0;
		t_skipped = false;
		t_stash_clear();
		tests[i].fn();
		/* Promise 1: nothing is held, after every test. */
		k = t_counters();
		T_CHECK(k.pages_referenced == 0, "pages_referenced %llu",
			k.pages_referenced);
		if (elan_state(ctx, NULL) != ELAN_CTX_ACTIVE) {
			T_FAIL("main context no longer active: reopening");
			elan_close(ctx);
			if (elan_open(CAP, &ctx))
				return 1;
			self = elan_addr(ctx);
		}
		printf("%s %-14s %6.1fs  %s\n",
		       t_failed ? "FAIL" : t_skipped ? "SKIP" : "ok  ",
		       tests[i].name, t_now() - t0, tests[i].what);
		if (t_failed)
			fail++;
		else if (t_skipped)
			skipped++;
		else
			pass++;
	}
	k = t_counters();
	printf("counters: loaded %llu preloads %llu faults %llu fault_errors %llu"
	       " invalidations %llu shootdown_waits %llu pages_referenced %llu\n",
	       k.translations_loaded, k.preloads, k.faults, k.fault_errors,
	       k.invalidations, k.shootdown_waits, k.pages_referenced);
	elan_close(ctx);
	printf("%d passed, %d failed (%d skipped)\n", pass, fail, skipped);
	return fail ? 1 : 0;
}
