// SPDX-License-Identifier: GPL-2.0
/*
 * ioproc_selftest: the user-space side of the IOPROC selftest.
 *
 * Opens /dev/ioproc_test (tests/kernel/ioproc_test.ko, a pretend NIC that
 * keeps a shadow translation table of the process that attached), makes
 * the kernel change this process's page tables in every way promise 4 of
 * docs/design.md names, and after each change proves that
 *   - the shadow holds no stale and no over-permissive entry (CHECK),
 *   - the hook class that should have told the NIC was called (STATS),
 *   - data moved by the "NIC" (PUT/GET through the shadow) is exactly what
 *     the process sees at that address with plain loads and stores.
 *
 * Build (static, so that it runs in a minimal guest):
 *   gcc -std=gnu11 -O2 -Wall -Wextra -static -pthread \
 *       -o tests/kernel/ioproc_selftest tests/kernel/ioproc_selftest.c
 *
 * Usage: ioproc_selftest [options] [SCENARIO...]   (default: all but broken)
 *   -t SECONDS     stress duration (default 10)
 *   -d DIR         directory on a file system with writeback for the msync
 *                  scenario's second file (default: the current directory
 *                  if it is not tmpfs/ramfs)
 *   -w SECONDS     bound for waiting on ksmd and khugepaged (default 60)
 *   -s SEED        random seed for stress (default: time)
 *   -O OPS         stress only with these operations (see -h), and
 *                  "nopreload", "nonuma" to leave those out
 *   -v             verbose: say what each step checked
 *   -l             list the scenarios
 *   --with-broken  also run the broken scenario (last)
 *   --nodev        dry run without the module: PUT/GET become
 *                  process_vm_writev/readv, CHECK and STATS are not tested.
 *                  Only for checking this program and the guest set-up.
 *
 * Output: one line per scenario, "ok NAME", "FAIL NAME: reason" or
 * "skip NAME: reason"; lines starting with '#' are information; the hook
 * call counts; then "N passed, M failed[, K skipped]".  Exit status 0 only
 * if no selected scenario failed.
 *
 * Needs root for most scenarios (pagemap PFNs, ksmd, khugepaged, move_pages
 * between nodes, MADV_SOFT_OFFLINE, /dev/kmsg, skip_hooks).  Every scenario
 * also fails if the kernel log gained a BUG, WARNING, Oops or similar line
 * while it ran.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "ioproc_test.h"

#ifndef MADV_FREE
#define MADV_FREE 8
#endif
#ifndef MADV_MERGEABLE
#define MADV_MERGEABLE 12
#endif
#ifndef MADV_UNMERGEABLE
#define MADV_UNMERGEABLE 13
#endif
#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif
#ifndef MADV_NOHUGEPAGE
#define MADV_NOHUGEPAGE 15
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_SOFT_OFFLINE
#define MADV_SOFT_OFFLINE 101
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MREMAP_FIXED
#define MREMAP_FIXED 2
#endif
#ifndef PR_SET_CHILD_SUBREAPER
#define PR_SET_CHILD_SUBREAPER 36
#endif
#define MPOL_MF_MOVE (1 << 1)

#define TMPFS_MAGIC_ 0x01021994
#define RAMFS_MAGIC_ 0x858458f6

#define HPAGE (2UL << 20)
#define SKIP_PARAM "/sys/module/ioproc_test/parameters/skip_hooks"
#define KSM_DIR "/sys/kernel/mm/ksm/"
#define THP_DIR "/sys/kernel/mm/transparent_hugepage/"

static size_t PG;
static int g_verbose, g_nodev, g_root;
static unsigned g_stress_secs = 10, g_wait_secs = 60;
static const char *g_fsdir;
static uint64_t g_seed;
static const char *g_cur = "setup";

/* ------------------------------------------------------------ reporting */

static pthread_mutex_t g_why_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_why[1536];

/* Record the reason a scenario fails (or skips); the first one wins. */
static void why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void why(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&g_why_mu);
	if (!g_why[0]) {
		va_start(ap, fmt);
		vsnprintf(g_why, sizeof(g_why), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&g_why_mu);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	printf("# %s: ", g_cur);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#define vnote(...) do { if (g_verbose) note(__VA_ARGS__); } while (0)

/*
 * Scenario functions return 0 (pass), -1 (fail) or 1 (skip) with the
 * reason in g_why, and clean up at their "out" label.
 */
#define FAIL(...) do { why(__VA_ARGS__); rc = -1; goto out; } while (0)
#define SKIP(...) do { why(__VA_ARGS__); rc = 1; goto out; } while (0)
#define TRY(x) do { if ((x) < 0) { rc = -1; goto out; } } while (0)
#define REQ(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

typedef unsigned long long ull;

/* ------------------------------------------------------------ small helpers */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Word i of a buffer is a function of the seed and word0 + i. */
static void pattern(void *dst, size_t len, uint64_t seed, uint64_t word0)
{
	uint64_t *w = dst;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = mix64(seed * 0x100000001b3ULL + word0 + i);
}

static int read_str(const char *path, char *buf, size_t n)
{
	ssize_t r;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read(fd, buf, n - 1);
	e = errno;
	close(fd);
	if (r < 0)
		return -e;
	buf[r] = 0;
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
		buf[--r] = 0;
	return 0;
}

static int read_long(const char *path, long *v)
{
	char buf[64], *end;
	int e = read_str(path, buf, sizeof(buf));

	if (e < 0)
		return e;
	errno = 0;
	*v = strtol(buf, &end, 0);
	if (end == buf || errno)
		return -EINVAL;
	return 0;
}

static int write_str(const char *path, const char *s)
{
	size_t len = strlen(s);
	ssize_t r;
	int fd, e;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write(fd, s, len);
	e = errno;
	close(fd);
	if (r < 0)
		return -e;
	return (size_t)r == len ? 0 : -EIO;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* A "key value" line of /proc/vmstat, or a "Key: value kB" of meminfo. */
static long proc_value(const char *file, const char *key)
{
	char line[256];
	size_t kl = strlen(key);
	long v = -1;
	FILE *f = fopen(file, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, kl) == 0 &&
		    (line[kl] == ' ' || line[kl] == ':')) {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

static long vmstat(const char *key)
{
	return proc_value("/proc/vmstat", key);
}

/* ------------------------------------------------------------ settings */

/*
 * Tunables a scenario changes are saved on first change and restored when
 * the scenario ends (and at exit, and on a timeout).
 */
struct saved {
	char path[160];
	char val[64];
};
static struct saved g_saved[32];
static int g_nsaved;

/* "always [madvise] never" -> "madvise" */
static void selected_word(char *s)
{
	char *a = strchr(s, '['), *b;

	if (a && (b = strchr(a, ']'))) {
		*b = 0;
		memmove(s, a + 1, strlen(a + 1) + 1);
	}
}

static int setting_set(const char *path, const char *val)
{
	char old[64];
	int i, e;

	for (i = 0; i < g_nsaved; i++)
		if (strcmp(g_saved[i].path, path) == 0)
			break;
	if (i == g_nsaved) {
		if (g_nsaved == (int)(sizeof(g_saved) / sizeof(g_saved[0])))
			return -ENOSPC;
		e = read_str(path, old, sizeof(old));
		if (e < 0)
			return e;
		selected_word(old);
		snprintf(g_saved[i].path, sizeof(g_saved[i].path), "%s", path);
		snprintf(g_saved[i].val, sizeof(g_saved[i].val), "%s", old);
		g_nsaved++;
	}
	return write_str(path, val);
}

/* Async-signal-safe enough for the timeout handler: open/write/close. */
static void settings_restore(void)
{
	while (g_nsaved > 0) {
		struct saved *s = &g_saved[--g_nsaved];
		int fd = open(s->path, O_WRONLY | O_CLOEXEC);

		if (fd >= 0) {
			if (write(fd, s->val, strlen(s->val)) < 0)
				(void)0;
			close(fd);
		}
	}
}

/* ------------------------------------------------------------ kernel log */

static int g_kmsg = -1;

static void kmsg_open(void)
{
	g_kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (g_kmsg >= 0)
		lseek(g_kmsg, 0, SEEK_END);
}

static const char *const kmsg_bad[] = {
	"BUG:", "BUG ", "WARNING:", "Oops", "general protection fault",
	"Call Trace:", "cut here ]", "soft lockup", "hard LOCKUP",
	"rcu_sched detected stall", "rcu_preempt detected stall",
	"self-detected stall", "blocked for more than",
	"suspected memory leak", "KASAN:", "UBSAN:", "Bad page",
	"list_add corruption", "list_del corruption", "refcount_t:",
	"page dumped because", "Kernel panic",
};

/* Count new kernel log records that look like trouble; print them. */
static int kmsg_scan(char *first, size_t firstlen)
{
	char rec[2048];
	int bad = 0, printed = 0;

	if (g_kmsg < 0)
		return 0;
	for (;;) {
		ssize_t r = read(g_kmsg, rec, sizeof(rec) - 1);
		char *msg, *nl;
		size_t i;

		if (r < 0) {
			if (errno == EPIPE || errno == EINTR)
				continue;	/* records overwritten: go on */
			break;
		}
		if (r == 0)
			break;
		rec[r] = 0;
		msg = strchr(rec, ';');
		if (!msg)
			continue;
		msg++;
		nl = strchr(msg, '\n');
		if (nl)
			*nl = 0;
		for (i = 0; i < sizeof(kmsg_bad) / sizeof(kmsg_bad[0]); i++)
			if (strstr(msg, kmsg_bad[i]))
				break;
		if (i == sizeof(kmsg_bad) / sizeof(kmsg_bad[0]))
			continue;
		if (!bad && first)
			snprintf(first, firstlen, "%s", msg);
		bad++;
		if (printed++ < 30)
			note("kernel: %s", msg);
	}
	return bad;
}

/* ------------------------------------------------------------ pagemap */

static int g_pm = -1;

#define PM_PFN(e) ((e) & ((1ULL << 55) - 1))
#define PM_SWAP(e) (((e) >> 62) & 1)
#define PM_PRESENT(e) (((e) >> 63) & 1)

static uint64_t pm_entry(const void *addr)
{
	uint64_t e = 0;

	if (g_pm < 0)
		g_pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (g_pm < 0 ||
	    pread(g_pm, &e, sizeof(e), ((uintptr_t)addr / PG) * 8) != sizeof(e))
		return 0;
	return e;
}

static uint64_t pm_pfn(const void *addr)
{
	uint64_t e = pm_entry(addr);

	return PM_PRESENT(e) ? PM_PFN(e) : 0;
}

/* Sum of AnonHugePages over the VMAs overlapping [addr, addr+len). */
static long smaps_anon_huge_kb(const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, e = a + len;
	unsigned long s, t;
	char line[512], perms[8];
	bool in = false;
	long sum = 0, kb;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s", &s, &t, perms) == 3) {
			in = s < e && t > a;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			sum += kb;
	}
	fclose(f);
	return sum;
}

static int count_nodes(void)
{
	char path[64];
	int n;

	for (n = 0; n < 64; n++) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", n);
		if (!exists(path))
			break;
	}
	return n;
}

static bool swap_configured(void)
{
	return proc_value("/proc/meminfo", "SwapTotal") > 0;
}

/* ------------------------------------------------------------ the device */

struct dev {
	int fd;
	struct ioproc_test_stats s0;
};

static struct ioproc_test_stats g_total;
static bool g_total_valid;

static int xioctl(int fd, unsigned long req, void *arg)
{
	int r;

	do
		r = ioctl(fd, req, arg);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

static int dev_stats(struct dev *d, struct ioproc_test_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (g_nodev)
		return 0;
	return xioctl(d->fd, IOPROC_TEST_STATS, s);
}

static int dev_open(struct dev *d)
{
	int e;

	memset(d, 0, sizeof(*d));
	d->fd = -1;
	if (g_nodev)
		return 0;
	d->fd = open(IOPROC_TEST_DEV, O_RDWR | O_CLOEXEC);
	if (d->fd < 0) {
		e = errno;
		why("open %s: %s", IOPROC_TEST_DEV, strerror(e));
		return -1;
	}
	e = xioctl(d->fd, IOPROC_TEST_ATTACH, NULL);
	if (e < 0) {
		why("ATTACH: %s", strerror(-e));
		close(d->fd);
		d->fd = -1;
		return -1;
	}
	e = dev_stats(d, &d->s0);
	if (e < 0) {
		why("STATS: %s", strerror(-e));
		close(d->fd);
		d->fd = -1;
		return -1;
	}
	return 0;
}

/* Add what this attachment counted to the totals, then close it. */
static void dev_close(struct dev *d)
{
	struct ioproc_test_stats s;
	int i;

	if (d->fd < 0)
		return;
	if (dev_stats(d, &s) == 0) {
		for (i = 0; i < IOPROC_HOOK_NR; i++)
			g_total.calls[i] += s.calls[i] - d->s0.calls[i];
		g_total.loads += s.loads - d->s0.loads;
		g_total.preloads += s.preloads - d->s0.preloads;
		g_total.faults += s.faults - d->s0.faults;
		g_total_valid = true;
	}
	close(d->fd);
	d->fd = -1;
}

/*
 * --nodev: move data through a pipe, so that the kernel's copy_from_user
 * and copy_to_user apply the process's own protections (the guest kernel
 * has no process_vm_readv).
 */
static int nodev_xfer(bool put, void *addr, void *buf, size_t len)
{
	static __thread int pfd[2] = { -1, -1 };
	char *src = put ? buf : addr, *dst = put ? addr : buf, junk[4096];
	size_t done = 0, chunk;
	ssize_t n;
	int e = 0;

	if (pfd[0] < 0 && pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	while (done < len && !e) {
		chunk = len - done < 65536 ? len - done : 65536;
		n = write(pfd[1], src + done, chunk);
		if (n <= 0) {
			e = n < 0 ? -errno : -EFAULT;
			break;
		}
		chunk = n;
		n = read(pfd[0], dst + done, chunk);
		if (n != (ssize_t)chunk)
			e = n < 0 ? -errno : -EFAULT;
		done += n > 0 ? (size_t)n : 0;
	}
	while (read(pfd[0], junk, sizeof(junk)) > 0)
		;	/* what could not be delivered */
	return e;
}

static int dev_load(struct dev *d, void *addr, size_t len, bool write,
		    uint64_t *done)
{
	struct ioproc_test_range r = {
		.addr = (uintptr_t)addr, .len = len, .write = write,
	};
	int e;

	if (done)
		*done = 0;
	if (g_nodev) {
		char *buf = malloc(len);

		if (!buf)
			return -ENOMEM;
		e = nodev_xfer(false, addr, buf, len);
		if (!e && write)
			e = nodev_xfer(true, addr, buf, len);
		free(buf);
		if (!e && done)
			*done = len / PG;
		return e;
	}
	e = xioctl(d->fd, IOPROC_TEST_LOAD, &r);
	if (done)
		*done = r.done;
	return e < 0 ? e : 0;
}

static int dev_check(struct dev *d, void *addr, size_t len,
		     struct ioproc_test_check *c)
{
	memset(c, 0, sizeof(*c));
	c->addr = (uintptr_t)addr;
	c->len = len;
	if (g_nodev)
		return 0;
	return xioctl(d->fd, IOPROC_TEST_CHECK, c);
}

static int dev_xfer(struct dev *d, bool put, void *addr, void *buf, size_t len)
{
	struct ioproc_test_xfer x = {
		.addr = (uintptr_t)addr, .len = len, .buf = (uintptr_t)buf,
	};
	int e;

	if (g_nodev)
		return nodev_xfer(put, addr, buf, len);
	e = xioctl(d->fd, put ? IOPROC_TEST_PUT : IOPROC_TEST_GET, &x);
	if (e < 0)
		return e;
	return x.error > 0 ? -x.error : x.error;
}

static int dev_put(struct dev *d, void *addr, const void *buf, size_t len)
{
	return dev_xfer(d, true, addr, (void *)buf, len);
}

static int dev_get(struct dev *d, void *addr, void *buf, size_t len)
{
	return dev_xfer(d, false, addr, buf, len);
}

static int dev_preload(struct dev *d, void *addr, size_t len)
{
	struct ioproc_test_range r = { .addr = (uintptr_t)addr, .len = len };

	if (g_nodev)
		return 0;
	return xioctl(d->fd, IOPROC_TEST_PRELOAD, &r);
}

static bool prot_err(int e)
{
	return e == -EFAULT || e == -EACCES;
}

static const char *errname(int e)
{
	static __thread char buf[64];

	if (e < 0)
		e = -e;
	switch (e) {
	case 0: return "success";
	case EFAULT: return "EFAULT";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case EINVAL: return "EINVAL";
	case ENOMEM: return "ENOMEM";
	case EAGAIN: return "EAGAIN";
	case EBUSY: return "EBUSY";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case ENOTTY: return "ENOTTY";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case EEXIST: return "EEXIST";
	case ENOSYS: return "ENOSYS";
	}
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

static int load_ok(struct dev *d, void *addr, size_t len, bool write,
		   const char *what)
{
	uint64_t done;
	int e = dev_load(d, addr, len, write, &done);

	if (e < 0) {
		why("%s: LOAD%s of %zu pages failed: %s", what,
		    write ? " (write)" : "", len / PG, errname(e));
		return -1;
	}
	vnote("%s: LOAD%s %zu pages, %llu loaded", what, write ? " (write)" : "",
	      len / PG, (ull)done);
	return 0;
}

/* CHECK every shadow entry: no stale, no over-permissive one. */
static int expect_clean(struct dev *d, const char *what)
{
	struct ioproc_test_check c;
	int e = dev_check(d, NULL, 0, &c);

	if (e < 0) {
		why("%s: CHECK failed: %s", what, errname(e));
		return -1;
	}
	if (c.stale || c.overperm) {
		why("%s: CHECK found %llu stale and %llu over-permissive of %llu entries (first bad at %#llx)",
		    what, (ull)c.stale, (ull)c.overperm, (ull)c.checked,
		    (ull)c.first_bad);
		return -1;
	}
	vnote("%s: CHECK clean (%llu entries)", what, (ull)c.checked);
	return 0;
}

/* ------------------------------------------------------------ hook counts */

enum hclass { CL_INV, CL_PROT, CL_UPD, CL_SYNC_RANGE, CL_SYNC, CL_REL };
static const char *const hclass_name[] = {
	"invalidate_range/page", "change_protection", "update_range/page",
	"sync_range", "sync_range/page", "release",
};
static const char *const hook_name[IOPROC_HOOK_NR] = {
	"release", "sync_range", "invalidate_range", "update_range",
	"change_protection", "sync_page", "invalidate_page", "update_page",
};

static void hk_snap(struct dev *d, struct ioproc_test_stats *s)
{
	if (dev_stats(d, s) < 0)
		memset(s, 0, sizeof(*s));
}

static uint64_t hk_class(const struct ioproc_test_stats *s, enum hclass c)
{
	const __u64 *k = s->calls;

	switch (c) {
	case CL_INV:
		return k[IOPROC_HOOK_INVALIDATE_RANGE] + k[IOPROC_HOOK_INVALIDATE_PAGE];
	case CL_PROT:
		return k[IOPROC_HOOK_CHANGE_PROTECTION];
	case CL_UPD:
		return k[IOPROC_HOOK_UPDATE_RANGE] + k[IOPROC_HOOK_UPDATE_PAGE];
	case CL_SYNC_RANGE:
		return k[IOPROC_HOOK_SYNC_RANGE];
	case CL_SYNC:
		return k[IOPROC_HOOK_SYNC_RANGE] + k[IOPROC_HOOK_SYNC_PAGE];
	case CL_REL:
		return k[IOPROC_HOOK_RELEASE];
	}
	return 0;
}

/* The hook class must have been called since @before. */
static int expect_grew(struct dev *d, const struct ioproc_test_stats *before,
		       enum hclass c, const char *what)
{
	struct ioproc_test_stats now;
	uint64_t a, b;

	if (g_nodev)
		return 0;
	hk_snap(d, &now);
	a = hk_class(before, c);
	b = hk_class(&now, c);
	if (b <= a) {
		why("%s: no %s hook was called (count %llu before and after)",
		    what, hclass_name[c], (ull)a);
		return -1;
	}
	vnote("%s: %s hook called %llu times", what, hclass_name[c],
	      (ull)(b - a));
	return 0;
}

static bool hk_grew(struct dev *d, const struct ioproc_test_stats *before,
		    enum hclass c)
{
	struct ioproc_test_stats now;

	hk_snap(d, &now);
	return hk_class(&now, c) > hk_class(before, c);
}

/* ------------------------------------------------------------ regions */

/*
 * A mapping and what the process should see in it: every CPU store and
 * every successful PUT also goes to exp, and every CPU load or GET is
 * compared with it.
 */
struct region {
	char *p;
	size_t len;
	unsigned char *exp;
};

static int reg_init(struct region *r, void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->exp = calloc(1, len);
	if (!r->exp) {
		why("out of memory");
		return -1;
	}
	return 0;
}

static int reg_map(struct region *r, size_t len, int flags)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	memset(r, 0, sizeof(*r));
	if (p == MAP_FAILED) {
		why("mmap %zu bytes: %s", len, strerror(errno));
		return -1;
	}
	return reg_init(r, p, len);
}

static void reg_free(struct region *r)
{
	if (r->p)
		munmap(r->p, r->len);
	free(r->exp);
	memset(r, 0, sizeof(*r));
}

/* A region aligned to @align (PROT_NONE for a reservation). */
static void *map_aligned(size_t len, size_t align, int prot)
{
	char *raw = mmap(NULL, len + align, prot,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *a;

	if (raw == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
	if (a > raw)
		munmap(raw, a - raw);
	munmap(a + len, raw + len + align - (a + len));
	return a;
}

static void reg_fill(struct region *r, size_t off, size_t len, uint64_t seed)
{
	pattern(r->exp + off, len, seed, off / 8);
	memcpy(r->p + off, r->exp + off, len);
}

static void reg_zero(struct region *r, size_t off, size_t len)
{
	memset(r->exp + off, 0, len);
}

static size_t first_diff(const unsigned char *a, const unsigned char *b,
			 size_t len)
{
	size_t i;

	for (i = 0; i < len; i += 8)
		if (memcmp(a + i, b + i, 8))
			return i;
	return len;
}

static int reg_cpu_check(struct region *r, size_t off, size_t len,
			 const char *what)
{
	size_t i;

	if (memcmp(r->p + off, r->exp + off, len) == 0)
		return 0;
	i = first_diff((unsigned char *)r->p + off, r->exp + off, len);
	why("%s: the CPU reads %#" PRIx64 " at page %zu +%#zx, expected %#" PRIx64,
	    what, *(uint64_t *)(r->p + off + i), (off + i) / PG,
	    (off + i) % PG, *(uint64_t *)(r->exp + off + i));
	return -1;
}

static int reg_get_check(struct dev *d, struct region *r, size_t off,
			 size_t len, const char *what)
{
	unsigned char *buf = malloc(len);
	size_t i;
	int e;

	if (!buf) {
		why("out of memory");
		return -1;
	}
	memset(buf, 0xa5, len);
	e = dev_get(d, r->p + off, buf, len);
	if (e < 0) {
		why("%s: GET of %zu bytes failed: %s", what, len, errname(e));
		free(buf);
		return -1;
	}
	if (memcmp(buf, r->exp + off, len)) {
		i = first_diff(buf, r->exp + off, len);
		why("%s: GET returned %#" PRIx64 " at page %zu +%#zx, the process has %#" PRIx64,
		    what, *(uint64_t *)(buf + i), (off + i) / PG,
		    (off + i) % PG, *(uint64_t *)(r->exp + off + i));
		free(buf);
		return -1;
	}
	free(buf);
	return 0;
}

static int reg_put(struct dev *d, struct region *r, size_t off, size_t len,
		   uint64_t seed, const char *what)
{
	unsigned char *buf = malloc(len);
	int e;

	if (!buf) {
		why("out of memory");
		return -1;
	}
	pattern(buf, len, seed, off / 8);
	e = dev_put(d, r->p + off, buf, len);
	if (e < 0) {
		why("%s: PUT of %zu bytes failed: %s", what, len, errname(e));
		free(buf);
		return -1;
	}
	memcpy(r->exp + off, buf, len);
	free(buf);
	return 0;
}

/* A PUT that must be refused; @cpu: the pages are readable, compare them. */
static int reg_put_denied(struct dev *d, struct region *r, size_t off,
			  size_t len, uint64_t seed, bool cpu, const char *what)
{
	unsigned char *buf = malloc(len);
	int e;

	if (!buf) {
		why("out of memory");
		return -1;
	}
	pattern(buf, len, seed, off / 8);
	e = dev_put(d, r->p + off, buf, len);
	free(buf);
	if (e == 0) {
		why("%s: PUT succeeded where the process may not write", what);
		return -1;
	}
	if (!prot_err(e)) {
		why("%s: PUT failed with %s, expected EFAULT or EACCES", what,
		    errname(e));
		return -1;
	}
	vnote("%s: PUT refused with %s", what, errname(e));
	if (cpu)
		return reg_cpu_check(r, off, len, what);
	return 0;
}

static int reg_get_denied(struct dev *d, struct region *r, size_t off,
			  size_t len, const char *what)
{
	unsigned char *buf = malloc(len);
	int e;

	if (!buf) {
		why("out of memory");
		return -1;
	}
	e = dev_get(d, r->p + off, buf, len);
	free(buf);
	if (e == 0) {
		why("%s: GET succeeded where the process may not read", what);
		return -1;
	}
	if (!prot_err(e)) {
		why("%s: GET failed with %s, expected EFAULT or EACCES", what,
		    errname(e));
		return -1;
	}
	vnote("%s: GET refused with %s", what, errname(e));
	return 0;
}

/*
 * The data check after a VM event: the NIC reads what the process has,
 * a NIC write is seen by the CPU at that address, and a CPU write is seen
 * by the NIC.
 */
static int roundtrip(struct dev *d, struct region *r, size_t off, size_t len,
		     uint64_t seed, const char *what)
{
	char w[160];

	snprintf(w, sizeof(w), "%s (GET before)", what);
	if (reg_get_check(d, r, off, len, w) < 0)
		return -1;
	snprintf(w, sizeof(w), "%s (PUT)", what);
	if (reg_put(d, r, off, len, seed, w) < 0)
		return -1;
	snprintf(w, sizeof(w), "%s (CPU after PUT)", what);
	if (reg_cpu_check(r, off, len, w) < 0)
		return -1;
	reg_fill(r, off, len, seed + 1);
	snprintf(w, sizeof(w), "%s (GET after CPU write)", what);
	return reg_get_check(d, r, off, len, w);
}

/* Wait for a child, at most @secs seconds; kill it if it is stuck. */
static int wait_child(pid_t pid, unsigned secs, int *status)
{
	uint64_t end = now_ms() + secs * 1000ULL;
	pid_t r;

	for (;;) {
		r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			return -ETIMEDOUT;
		}
		sleep_ms(20);
	}
}

/* fork() whose child only _exit()s: the kernel write-protects our COW pages. */
static int fork_and_reap(void)
{
	int st;
	pid_t pid = fork();

	if (pid < 0) {
		why("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0)
		_exit(0);
	waitpid(pid, &st, 0);
	return 0;
}

/* ============================================================ scenarios */

/* ------------------------------------------------------------ fork_cow */

static int fork_case(bool loadwrite)
{
	const size_t n = 4, len = n * PG;
	const char *kind = loadwrite ? "write-loaded" : "read-loaded";
	struct ioproc_test_stats h0, h1;
	struct region r = { 0 };
	struct dev d = { .fd = -1 };
	int c2p[2] = { -1, -1 }, p2c[2] = { -1, -1 };
	pid_t pid = -1;
	char w[128];
	int rc = 0, st;
	unsigned char ch;

	TRY(dev_open(&d));
	TRY(reg_map(&r, len, 0));
	reg_fill(&r, 0, len, 101);
	TRY(load_ok(&d, r.p, len, loadwrite, kind));
	TRY(expect_clean(&d, "before fork"));
	hk_snap(&d, &h0);
	if (pipe(c2p) || pipe(p2c))
		FAIL("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		unsigned char res = 0;
		size_t i;

		close(c2p[0]);
		close(p2c[1]);
		reg_fill(&r, 0, PG, 202);	/* COW in the child */
		ch = 'w';
		if (write(c2p[1], &ch, 1) != 1)
			_exit(1);
		if (read(p2c[0], &ch, 1) != 1)
			_exit(1);
		/* Our copy of exp is what we had at fork, plus page 0. */
		for (i = 0; i < n && !res; i++)
			if (memcmp(r.p + i * PG, r.exp + i * PG, PG))
				res = i + 1;
		if (write(c2p[1], &res, 1) != 1)
			_exit(1);
		_exit(0);
	}
	close(c2p[1]);
	close(p2c[0]);
	c2p[1] = p2c[0] = -1;
	if (read(c2p[0], &ch, 1) != 1)
		FAIL("%s: the child died before writing", kind);

	snprintf(w, sizeof(w), "%s: after fork", kind);
	TRY(expect_clean(&d, w));
	TRY(expect_grew(&d, &h0, CL_PROT, w));

	hk_snap(&d, &h1);
	reg_fill(&r, PG, PG, 303);	/* COW in the parent */
	snprintf(w, sizeof(w), "%s: parent writes after fork", kind);
	TRY(expect_grew(&d, &h1, CL_INV, w));
	TRY(expect_clean(&d, w));

	snprintf(w, sizeof(w), "%s: PUT after fork", kind);
	TRY(reg_put(&d, &r, 0, len, 404, w));
	TRY(reg_cpu_check(&r, 0, len, w));
	TRY(expect_clean(&d, w));
	TRY(reg_get_check(&d, &r, 0, len, w));

	ch = 'g';
	if (write(p2c[1], &ch, 1) != 1)
		FAIL("%s: write to the child: %s", kind, strerror(errno));
	if (read(c2p[0], &ch, 1) != 1)
		FAIL("%s: the child died before reporting", kind);
	REQ(ch == 0, "%s: the child sees a change in page %d after the parent's PUT (NIC wrote to a page shared with the child)",
	    kind, ch - 1);
	TRY(expect_clean(&d, "after the child's check"));
out:
	if (c2p[1] >= 0)
		close(c2p[1]);
	if (p2c[0] >= 0)
		close(p2c[0]);
	if (p2c[1] >= 0)
		close(p2c[1]);
	if (c2p[0] >= 0)
		close(c2p[0]);
	if (pid > 0) {
		if (wait_child(pid, 30, &st) < 0) {
			why("%s: the child hung", kind);
			rc = -1;
		} else if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			why("%s: the child failed (status %#x)", kind, st);
			rc = -1;
		}
	}
	reg_free(&r);
	dev_close(&d);
	return rc;
}

static int sc_fork_cow(void)
{
	if (fork_case(false) < 0)
		return -1;
	return fork_case(true);
}

/* ------------------------------------------------------------ munmap_mmap */

static int sc_munmap_mmap(void)
{
	const size_t n = 8, len = n * PG;
	struct ioproc_test_stats h;
	struct region r = { 0 };
	struct dev d = { .fd = -1 };
	int rc = 0, mfd = -1;
	void *q;

	TRY(dev_open(&d));
	TRY(reg_map(&r, len, 0));
	reg_fill(&r, 0, len, 11);
	TRY(load_ok(&d, r.p, len, true, "before munmap"));
	TRY(expect_clean(&d, "before munmap"));

	/* 1. munmap and a new anonymous mapping at the same address */
	hk_snap(&d, &h);
	REQ(munmap(r.p, len) == 0, "munmap: %s", strerror(errno));
	q = mmap(r.p, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	REQ(q == r.p, "mmap(MAP_FIXED) again: %s", strerror(errno));
	reg_zero(&r, 0, len);
	TRY(expect_grew(&d, &h, CL_INV, "munmap"));
	TRY(expect_clean(&d, "after munmap + mmap"));
	TRY(roundtrip(&d, &r, 0, len, 12, "new mapping"));
	TRY(expect_clean(&d, "after PUT/GET on the new mapping"));

	/* 2. mmap(MAP_FIXED) over a mapped page: shared anonymous now */
	TRY(load_ok(&d, r.p, len, true, "before mmap over page 3"));
	hk_snap(&d, &h);
	q = mmap(r.p + 3 * PG, PG, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	REQ(q == r.p + 3 * PG, "mmap(MAP_FIXED) over page 3: %s",
	    strerror(errno));
	reg_zero(&r, 3 * PG, PG);
	TRY(expect_grew(&d, &h, CL_INV, "mmap(MAP_FIXED) over a mapping"));
	TRY(expect_clean(&d, "after mmap(MAP_FIXED) over page 3"));
	TRY(roundtrip(&d, &r, 0, len, 13, "shared page 3"));

	/* 3. a file (memfd) mapped over pages 4-5 */
	TRY(load_ok(&d, r.p, len, true, "before mapping a file"));
	mfd = memfd_create("ioproc_selftest", MFD_CLOEXEC);
	REQ(mfd >= 0, "memfd_create: %s", strerror(errno));
	pattern(r.exp + 4 * PG, 2 * PG, 14, 4 * PG / 8);
	REQ(pwrite(mfd, r.exp + 4 * PG, 2 * PG, 0) == (ssize_t)(2 * PG),
	    "write memfd: %s", strerror(errno));
	hk_snap(&d, &h);
	q = mmap(r.p + 4 * PG, 2 * PG, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, mfd, 0);
	REQ(q == r.p + 4 * PG, "mmap memfd over pages 4-5: %s",
	    strerror(errno));
	TRY(expect_grew(&d, &h, CL_INV, "file mapped over anonymous pages"));
	TRY(expect_clean(&d, "after mapping a file over pages 4-5"));
	TRY(roundtrip(&d, &r, 0, len, 15, "file pages 4-5"));
	TRY(expect_clean(&d, "end"));
out:
	if (mfd >= 0)
		close(mfd);
	reg_free(&r);
	dev_close(&d);
	return rc;
}

/* ------------------------------------------------------------ mremap */

/* @thp: -1 no huge pages (whole page tables move), 1 huge pages, 0 small */
static int mremap_case(size_t len, int thp, const char *kind)
{
	struct ioproc_test_stats h;
	struct region r = { 0 };
	struct dev d = { .fd = -1 };
	unsigned char vec;
	char *p, *dst = NULL, *old;
	char w[128];
	int rc = 0, e;
	long kb;

	TRY(dev_open(&d));
	p = map_aligned(len, HPAGE, PROT_READ | PROT_WRITE);
	REQ(p, "%s: mmap: %s", kind, strerror(errno));
	TRY(reg_init(&r, p, len));
	if (thp)
		madvise(p, len, thp > 0 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	reg_fill(&r, 0, len, 21);
	if (thp > 0) {
		kb = smaps_anon_huge_kb(p, len);
		note("%s: %ld kB in huge pages before the move", kind, kb);
	}
	TRY(load_ok(&d, p, len, true, kind));
	TRY(expect_clean(&d, kind));
	dst = map_aligned(len, HPAGE, PROT_NONE);
	REQ(dst, "%s: reserve the destination: %s", kind, strerror(errno));

	hk_snap(&d, &h);
	old = r.p;
	p = mremap(old, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	REQ(p == dst, "%s: mremap: %s", kind, strerror(errno));
	r.p = p;
	dst = NULL;
	snprintf(w, sizeof(w), "%s: mremap", kind);
	TRY(expect_grew(&d, &h, CL_INV, w));
	REQ(mincore(old, PG, &vec) < 0 && errno == ENOMEM,
	    "%s: the old address is still mapped after mremap", kind);
	e = dev_load(&d, old, PG, false, NULL);
	REQ(e < 0, "%s: LOAD at the old address succeeded after mremap", kind);
	snprintf(w, sizeof(w), "%s: after mremap", kind);
	TRY(expect_clean(&d, w));
	TRY(reg_cpu_check(&r, 0, len, w));
	if (thp > 0)
		vnote("%s: %ld kB in huge pages after the move", kind,
		      smaps_anon_huge_kb(p, len));
	TRY(roundtrip(&d, &r, 0, len, 22, w));
	TRY(expect_clean(&d, w));
out:
	if (dst)
		munmap(dst, len);
	reg_free(&r);
	dev_close(&d);
	return rc;
}

static int sc_mremap(void)
{
	if (mremap_case(4 * PG, 0, "4 pages") < 0)
		return -1;
	if (mremap_case(HPAGE, -1, "2 MiB of small pages (page table move)") < 0)
		return -1;
	if (exists(THP_DIR "enabled") &&
	    mremap_case(HPAGE, 1, "2 MiB huge page") < 0)
		return -1;
	return 0;
}

/* ------------------------------------------------------------ mprotect */

static int sc_mprotect(void)
{
	const size_t n = 4, len = n * PG;
	struct ioproc_test_stats h;
	struct region r = { 0 };
	struct dev d = { .fd = -1 };
	int rc = 0;

	TRY(dev_open(&d));
	TRY(reg_map(&r, len, 0));
	reg_fill(&r, 0, len, 31);
	TRY(load_ok(&d, r.p, len, true, "before mprotect"));
	TRY(expect_clean(&d, "before mprotect"));

	hk_snap(&d, &h);
	REQ(mprotect(r.p, len, PROT_READ) == 0, "mprotect: %s", strerror(errno));
	TRY(expect_grew(&d, &h, CL_PROT, "mprotect(PROT_READ)"));
	TRY(expect_clean(&d, "after mprotect(PROT_READ)"));
	TRY(reg_put_denied(&d, &r, 0, len, 32, true, "PUT to read-only pages"));
	TRY(reg_get_check(&d, &r, 0, len, "GET from read-only pages"));
	TRY(expect_clean(&d, "after the refused PUT"));

	REQ(mprotect(r.p, len, PROT_READ | PROT_WRITE) == 0, "mprotect: %s",
	    strerror(errno));
	TRY(expect_clean(&d, "after mprotect(PROT_READ|PROT_WRITE)"));
	TRY(roundtrip(&d, &r, 0, len, 33, "writable again"));
	TRY(expect_clean(&d, "after PUT to writable pages"));

	TRY(load_ok(&d, r.p, len, true, "before PROT_NONE"));
	hk_snap(&d, &h);
	REQ(mprotect(r.p, len, PROT_NONE) == 0, "mprotect: %s", strerror(errno));
	TRY(expect_grew(&d, &h, CL_PROT, "mprotect(PROT_NONE)"));
	TRY(expect_clean(&d, "after mprotect(PROT_NONE)"));
	TRY(reg_get_denied(&d, &r, 0, len, "GET from PROT_NONE pages"));
	TRY(reg_put_denied(&d, &r, 0, len, 34, false, "PUT to PROT_NONE pages"));
	TRY(expect_clean(&d, "after the refused GET"));
	REQ(mprotect(r.p, len, PROT_READ | PROT_WRITE) == 0, "mprotect: %s",
	    strerror(errno));
	TRY(reg_cpu_check(&r, 0, len, "after PROT_NONE and back"));
	TRY(roundtrip(&d, &r, 0, len, 35, "after PROT_NONE and back"));

	/* one page of the four: the VMA is split */
	TRY(load_ok(&d, r.p, len, true, "before mprotect of page 1"));
	hk_snap(&d, &h);
	REQ(mprotect(r.p + PG, PG, PROT_READ) == 0, "mprotect: %s",
	    strerror(errno));
	TRY(expect_grew(&d, &h, CL_PROT, "mprotect(PROT_READ) of page 1"));
	TRY(expect_clean(&d, "after mprotect of page 1"));
	TRY(reg_put_denied(&d, &r, PG, PG, 36, true, "PUT to page 1"));
	TRY(reg_put(&d, &r, 0, PG, 37, "PUT to page 0"));
	TRY(reg_put(&d, &r, 2 * PG, 2 * PG, 38, "PUT to pages 2-3"));
	TRY(reg_cpu_check(&r, 0, len, "after PUTs around page 1"));
	TRY(reg_get_check(&d, &r, 0, len, "GET around page 1"));
	REQ(mprotect(r.p, len, PROT_READ | PROT_WRITE) == 0, "mprotect: %s",
	    strerror(errno));
	TRY(roundtrip(&d, &r, 0, len, 39, "page 1 writable again"));
	TRY(expect_clean(&d, "end"));
out:
	reg_free(&r);
	dev_close(&d);
	return rc;
}

/* ------------------------------------------------------------ msync */

static int file_check(int fd, struct region *r, const char *what)
{
	unsigned char *buf = malloc(r->len);
	ssize_t n;
	size_t i;

	if (!buf) {
		why("out of memory");
		return -1;
	}
	n = pread(fd, buf, r->len, 0);
	if (n != (ssize_t)r->len) {
		why("%s: pread: %s", what, n < 0 ? strerror(errno) : "short read");
		free(buf);
		return -1;
	}
	if (memcmp(buf, r->exp, r->len)) {
		i = first_diff(buf, r->exp, r->len);
		why("%s: the file has %#" PRIx64 " at page %zu +%#zx, expected %#" PRIx64,
		    what, *(uint64_t *)(buf + i), i / PG, i % PG,
		    *(uint64_t *)(r->exp + i));
		free(buf);
		return -1;
	}
	free(buf);
	return 0;
}

static int msync_case(struct dev *d, const char *dir, bool writeback)
{
	const size_t n = 4, len = n * PG;
	struct ioproc_test_stats h;
	struct region r = { 0 };
	char path[4096], w[160];
	bool cleaned;
	int rc = 0, fd = -1;
	void *p;

	snprintf(path, sizeof(path), "%s/.ioproc_selftest.XXXXXX", dir);
	fd = mkstemp(path);
	REQ(fd >= 0, "mkstemp in %s: %s", dir, strerror(errno));
	REQ(ftruncate(fd, len) == 0, "ftruncate: %s", strerror(errno));
	TRY(reg_init(&r, NULL, len));
	pattern(r.exp, len, 41, 0);
	REQ(pwrite(fd, r.exp, len, 0) == (ssize_t)len, "pwrite: %s",
	    strerror(errno));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQ(p != MAP_FAILED, "mmap MAP_SHARED %s: %s", path, strerror(errno));
	r.p = p;

	snprintf(w, sizeof(w), "%s: GET of the file's data", dir);
	TRY(reg_get_check(d, &r, 0, len, w));
	snprintf(w, sizeof(w), "%s: PUT to the file mapping", dir);
	TRY(reg_put(d, &r, 0, len, 42, w));
	TRY(reg_cpu_check(&r, 0, len, w));
	hk_snap(d, &h);
	REQ(msync(p, len, MS_SYNC) == 0, "msync: %s", strerror(errno));
	snprintf(w, sizeof(w), "%s: msync", dir);
	TRY(expect_grew(d, &h, CL_SYNC_RANGE, w));
	cleaned = !g_nodev && hk_grew(d, &h, CL_PROT);
	if (writeback && !g_nodev)
		note("%s: writeback %s the PTEs (change_protection %s)", dir,
		     cleaned ? "cleaned" : "did not clean",
		     cleaned ? "called" : "not called");
	snprintf(w, sizeof(w), "%s: after msync", dir);
	TRY(expect_clean(d, w));
	TRY(file_check(fd, &r, w));

	/* The PTEs are clean now: the next NIC write must dirty them again. */
	snprintf(w, sizeof(w), "%s: second PUT after msync", dir);
	TRY(reg_put(d, &r, 0, len, 43, w));
	TRY(reg_cpu_check(&r, 0, len, w));
	REQ(msync(p, len, MS_SYNC) == 0, "msync: %s", strerror(errno));
	snprintf(w, sizeof(w), "%s: file after the second PUT and msync (was the page re-dirtied?)", dir);
	TRY(file_check(fd, &r, w));
	snprintf(w, sizeof(w), "%s: after the second msync", dir);
	TRY(expect_clean(d, w));

	/* And a CPU write is seen by the NIC and reaches the file. */
	reg_fill(&r, 0, PG, 44);
	REQ(msync(p, len, MS_SYNC) == 0, "msync: %s", strerror(errno));
	snprintf(w, sizeof(w), "%s: CPU write, msync", dir);
	TRY(reg_get_check(d, &r, 0, len, w));
	TRY(file_check(fd, &r, w));
	TRY(expect_clean(d, w));
out:
	if (r.p)
		munmap(r.p, len);
	r.p = NULL;
	free(r.exp);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	return rc;
}

/* The type of the mount holding @dir, from /proc/self/mounts. */
static void mount_type(const char *dir, char *type, size_t n)
{
	char real[4096], line[1024], mnt[1024], fs[64];
	size_t best = 0, l;
	FILE *f;

	snprintf(type, n, "?");
	if (!realpath(dir, real) || !(f = fopen("/proc/self/mounts", "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %1023s %63s", mnt, fs) != 2)
			continue;
		l = strlen(mnt);
		if (strncmp(real, mnt, l) == 0 &&
		    (real[l] == '/' || real[l] == 0 || l == 1) && l >= best) {
			best = l;
			snprintf(type, n, "%s", fs);
		}
	}
	fclose(f);
}

static const char *writeback_dir(void)
{
	static char cwd[4096];
	struct statfs sf;
	const char *dir = g_fsdir;

	if (!dir) {
		dir = getenv("IOPROC_SELFTEST_FSDIR");
		if (!dir && getcwd(cwd, sizeof(cwd)))
			dir = cwd;
	}
	if (!dir || statfs(dir, &sf) < 0 || access(dir, W_OK) < 0)
		return NULL;
	if ((unsigned long)sf.f_type == TMPFS_MAGIC_ ||
	    (unsigned long)sf.f_type == RAMFS_MAGIC_)
		return NULL;
	return dir;
}

static int sc_msync(void)
{
	struct dev d = { .fd = -1 };
	struct statfs sf;
	const char *wb;
	int rc = 0;

	TRY(dev_open(&d));
	if (statfs("/tmp", &sf) == 0 && (unsigned long)sf.f_type != TMPFS_MAGIC_)
		note("/tmp is not tmpfs (f_type %#lx)", (unsigned long)sf.f_type);
	TRY(msync_case(&d, "/tmp", false));
	wb = writeback_dir();
	if (wb) {
		char type[64];

		mount_type(wb, type, sizeof(type));
		note("file system with writeback: %s (%s)", wb, type);
		TRY(msync_case(&d, wb, true));
	} else {
		note("no writable file system with writeback found (-d DIR): only tmpfs tested");
	}
out:
	dev_close(&d);
	return rc;
}

/* ------------------------------------------------------------ pageout */

static size_t count_pm(struct region *r, int swapped)
{
	size_t i, c = 0;

	for (i = 0; i < r->len; i += PG) {
		uint64_t e = pm_entry(r->p + i);

		if (swapped ? PM_SWAP(e) : PM_PRESENT(e))
			c++;
	}
	return c;
}

static int sc_pageout(void)
{
	const size_t n = 32, len = n * PG;
	struct ioproc_test_stats h, h1;
	struct region r = { 0 };
	struct dev d = { .fd = -1 };
	bool swap = swap_configured();
	long o0, o1;
	size_t out, in;
	int rc = 0;

	TRY(dev_open(&d));
	TRY(reg_map(&r, len, 0));
	reg_fill(&r, 0, len, 51);
	TRY(load_ok(&d, r.p, len, true, "before pageout"));
	TRY(expect_clean(&d, "before pageout"));

	o0 = vmstat("pswpout");
	hk_snap(&d, &h);
	if (madvise(r.p, len, MADV_PAGEOUT) < 0) {
		if (errno == EINVAL)
			SKIP("MADV_PAGEOUT is not supported");
		FAIL("madvise(MADV_PAGEOUT): %s", strerror(errno));
	}
	o1 = vmstat("pswpout");
	out = count_pm(&r, 1);
	note("%zu of %zu pages swapped out (pswpout +%ld, swap %s)", out, n,
	     o1 - o0, swap ? "configured" : "not configured");
	if (out == 0) {
		if (!swap)
			SKIP("no swap configured: MADV_PAGEOUT cannot swap anonymous pages");
		FAIL("swap is configured but MADV_PAGEOUT swapped nothing out (pswpout +%ld)",
		     o1 - o0);
	}
	TRY(expect_grew(&d, &h, CL_INV, "pageout"));
	TRY(expect_clean(&d, "after pageout"));

	/* First touch through the NIC: its fault path must swap them in. */
	hk_snap(&d, &h1);
	TRY(reg_get_check(&d, &r, 0, len, "GET after pageout"));
	REQ(g_nodev || h1.faults < (hk_snap(&d, &h), h.faults),
	    "GET of swapped-out pages did not go through the fault path (faults %llu before and after)",
	    (ull)h1.faults);
	in = count_pm(&r, 0);
	REQ(in == n, "after GET only %zu of %zu pages are present", in, n);
	TRY(expect_clean(&d, "after swap-in by GET"));
	TRY(reg_cpu_check(&r, 0, len, "CPU after swap-in by GET"));

	/* Again, and this time the NIC writes first. */
	TRY(load_ok(&d, r.p, len, true, "before the second pageout"));
	REQ(madvise(r.p, len, MADV_PAGEOUT) == 0, "madvise(MADV_PAGEOUT): %s",
	    strerror(errno));
	out = count_pm(&r, 1);
	vnote("second pageout: %zu pages swapped out", out);
	REQ(out > 0, "the second MADV_PAGEOUT swapped nothing out");
	TRY(expect_clean(&d, "after the second pageout"));
	TRY(reg_put(&d, &r, 0, len, 52, "PUT to swapped-out pages"));
	TRY(reg_cpu_check(&r, 0, len, "CPU after PUT to swapped-out pages"));
	TRY(expect_clean(&d, "after swap-in by PUT"));
	TRY(roundtrip(&d, &r, 0, len, 53, "after swap-in"));
out:
	reg_free(&r);
	dev_close(&d);
	return rc;
}

/* ------------------------------------------------------------ migrate */

static long sys_move_pages(size_t n, void **pages, const int *nodes,
			   int *status, int flags)
{
	return syscall(SYS_move_pages, 0, n, pages, nodes, status, flags);
}

static int move_to(struct dev *d, struct region *r, int target,
		   const char *what)
{
	size_t n = r->len / PG, i, moved = 0;
	struct ioproc_test_stats h;
	uint64_t *pfn0 = calloc(n, sizeof(*pfn0));
	void **pages = calloc(n, sizeof(*pages));
	int *nodes = calloc(n, sizeof(*nodes));
	int *status = calloc(n, sizeof(*status));
	int rc = 0;
	long ret;

	if (!pfn0 || !pages || !nodes || !status)
		FAIL("out of memory");
	for (i = 0; i < n; i++) {
		pages[i] = r->p + i * PG;
		nodes[i] = target;
		pfn0[i] = pm_pfn(pages[i]);
	}
	TRY(load_ok(d, r->p, r->len, true, what));
	hk_snap(d, &h);
	ret = sys_move_pages(n, pages, nodes, status, MPOL_MF_MOVE);
	REQ(ret >= 0, "%s: move_pages: %s", what, strerror(errno));
	for (i = 0; i < n; i++)
		REQ(status[i] == target, "%s: page %zu: move_pages status %d (%s)%s",
		    what, i, status[i], status[i] < 0 ? errname(status[i]) : "node",
		    status[i] == -EBUSY || status[i] == -EAGAIN ?
		    ": a page reference held by the driver?" : "");
	ret = sys_move_pages(n, pages, NULL, status, 0);
	REQ(ret >= 0, "%s: move_pages query: %s", what, strerror(errno));
	for (i = 0; i < n; i++) {
		REQ(status[i] == target, "%s: page %zu is on node %d after the move",
		    what, i, status[i]);
		if (pfn0[i] && pm_pfn(pages[i]) != pfn0[i])
			moved++;
	}
	if (pfn0[0])
		REQ(moved == n, "%s: only %zu of %zu pages have a new frame", what,
		    moved, n);
	TRY(expect_grew(d, &h, CL_INV, what));
	TRY(expect_grew(d, &h, CL_UPD, what));
	TRY(expect_clean(d, what));
	TRY(roundtrip(d, r, 0, r->len, 61 + target, what));
	TRY(expect_clean(d, what));
out:
	free(pfn0);
	free(pages);
	free(nodes);
	free(status);
	return rc;
}

static int sc_migrate(void)
{
	const size_t n = 8, len = n * PG;
	struct ioproc_test_stats h;
	struct region r = { 0 };
	struct dev d = { .fd = -1 };
	int nodes = count_nodes(), rc = 0, status, cur, done = 0;
	uint64_t pfn0, pfn1;
	void *pg;
	size_t i, moved;
	long ret;

	TRY(dev_open(&d));
	TRY(reg_map(&r, len, 0));
	reg_fill(&r, 0, len, 61);
	TRY(load_ok(&d, r.p, len, true, "before migration"));
	TRY(expect_clean(&d, "before migration"));

	/* 1. move_pages(2) to the other node and back */
	if (nodes < 2) {
		note("move_pages part skipped: %d NUMA node(s) (boot with numa=fake=2)",
		     nodes);
	} else {
		pg = r.p;
		ret = sys_move_pages(1, &pg, NULL, &status, 0);
		REQ(ret >= 0, "move_pages query: %s", strerror(errno));
		REQ(status >= 0, "move_pages query: status %s", errname(status));
		cur = status;
		vnote("pages are on node %d", cur);
		TRY(move_to(&d, &r, cur == 0 ? 1 : 0, "move_pages to the other node"));
		TRY(move_to(&d, &r, cur, "move_pages back"));
		done++;
	}

	/* 2. soft offline: the page is migrated away from its frame */
	TRY(load_ok(&d, r.p, len, true, "before soft offline"));
	pfn0 = pm_pfn(r.p + 2 * PG);
	hk_snap(&d, &h);
	if (madvise(r.p + 2 * PG, PG, MADV_SOFT_OFFLINE) < 0) {
		if (errno == EINVAL || errno == EPERM)
			note("MADV_SOFT_OFFLINE part skipped: %s",
			     errno == EPERM ? "needs root" :
			     "not supported (CONFIG_MEMORY_FAILURE)");
		else
			FAIL("madvise(MADV_SOFT_OFFLINE): %s", strerror(errno));
	} else {
		pfn1 = pm_pfn(r.p + 2 * PG);
		vnote("soft offline: frame %#llx -> %#llx", (ull)pfn0, (ull)pfn1);
		REQ(!pfn0 || pfn1 != pfn0,
		    "MADV_SOFT_OFFLINE left the page on its frame %#llx", (ull)pfn0);
		TRY(expect_grew(&d, &h, CL_INV, "MADV_SOFT_OFFLINE"));
		TRY(expect_clean(&d, "after MADV_SOFT_OFFLINE"));
		TRY(roundtrip(&d, &r, 0, len, 65, "after MADV_SOFT_OFFLINE"));
		TRY(expect_clean(&d, "after MADV_SOFT_OFFLINE"));
		done++;
	}

	/* 3. compaction (may or may not move our pages) */
	if (g_root && exists("/proc/sys/vm/compact_memory")) {
		uint64_t *pf = calloc(n, sizeof(*pf));

		REQ(pf, "out of memory");
		TRY(load_ok(&d, r.p, len, true, "before compaction"));
		for (i = 0; i < n; i++)
			pf[i] = pm_pfn(r.p + i * PG);
		if (write_str("/proc/sys/vm/compact_memory", "1") < 0) {
			note("compaction part skipped: cannot write compact_memory");
			free(pf);
		} else {
			for (i = 0, moved = 0; i < n; i++)
				moved += pf[i] && pm_pfn(r.p + i * PG) != pf[i];
			free(pf);
			note("compaction moved %zu of %zu pages", moved, n);
			TRY(expect_clean(&d, "after compaction"));
			TRY(roundtrip(&d, &r, 0, len, 67, "after compaction"));
			done++;
		}
	}
	if (!done)
		SKIP("no migration path available (one NUMA node, no MADV_SOFT_OFFLINE, not root)");
out:
	reg_free(&r);
	dev_close(&d);
	return rc;
}

/* ------------------------------------------------------------ ksm */

static size_t same_frame(struct region *r, uint64_t pfn)
{
	size_t i, c = 0;

	for (i = 0; i < r->len; i += PG)
		c += pm_pfn(r->p + i) == pfn;
	return c;
}

static int sc_ksm(void)
{
	const size_t na = 16, nb = 8;
	struct ioproc_test_stats h;
	struct region a = { 0 }, b = { 0 };
	struct dev d = { .fd = -1 };
	size_t i, ma = 0, mb = 0;
	long sharing0 = 0, sharing = 0;
	uint64_t t0, ksmpfn = 0;
	char w[96];
	int rc = 0;

	if (!exists(KSM_DIR "run"))
		SKIP("no KSM (CONFIG_KSM)");
	if (!g_root && !g_nodev)
		SKIP("needs root to start ksmd and read page frames");
	TRY(dev_open(&d));
	TRY(reg_map(&a, na * PG, 0));
	TRY(reg_map(&b, nb * PG, 0));
	for (i = 0; i < na; i++) {
		pattern(a.exp + i * PG, PG, 71, 0);
		memcpy(a.p + i * PG, a.exp + i * PG, PG);
	}
	/*
	 * The control pages differ from the loaded ones: otherwise all the
	 * loaded pages could be merged onto a control page's frame, and
	 * none of them would stay on its own frame, write-protected.
	 */
	for (i = 0; i < nb; i++) {
		pattern(b.exp + i * PG, PG, 70, 0);
		memcpy(b.p + i * PG, b.exp + i * PG, PG);
	}
	TRY(load_ok(&d, a.p, a.len, true, "before merge"));
	TRY(expect_clean(&d, "before merge"));

	REQ(setting_set(KSM_DIR "pages_to_scan", "5000") == 0 &&
	    setting_set(KSM_DIR "sleep_millisecs", "10") == 0 &&
	    setting_set(KSM_DIR "run", "1") == 0,
	    "cannot start ksmd: %s", strerror(errno));
	read_long(KSM_DIR "pages_sharing", &sharing0);
	hk_snap(&d, &h);
	if (madvise(a.p, a.len, MADV_MERGEABLE) < 0 ||
	    madvise(b.p, b.len, MADV_MERGEABLE) < 0)
		SKIP("madvise(MADV_MERGEABLE): %s", strerror(errno));

	/* Wait until the pages of each region map one KSM frame. */
	t0 = now_ms();
	while (now_ms() - t0 < g_wait_secs * 1000ULL) {
		sleep_ms(250);
		ksmpfn = pm_pfn(a.p + PG);
		ma = ksmpfn ? same_frame(&a, ksmpfn) : 0;
		mb = pm_pfn(b.p) ? same_frame(&b, pm_pfn(b.p)) : 0;
		if (ma == na && mb == nb)
			break;
	}
	read_long(KSM_DIR "pages_sharing", &sharing);
	note("after %.1f s: %zu/%zu loaded pages share frame %#llx, %zu/%zu control pages share one (pages_sharing %ld -> %ld)",
	     (now_ms() - t0) / 1000.0, ma, na, (ull)ksmpfn, mb, nb, sharing0,
	     sharing);
	if (ma != na) {
		if (mb == nb)
			FAIL("the control pages merged but only %zu of %zu NIC-loaded pages did within %u s: does the driver keep page references?",
			     ma, na, g_wait_secs);
		FAIL("ksmd merged only %zu+%zu of %zu+%zu identical pages within %u s",
		     ma, mb, na, nb, g_wait_secs);
	}
	TRY(expect_grew(&d, &h, CL_PROT, "KSM write_protect_page"));
	TRY(expect_grew(&d, &h, CL_INV, "KSM replace_page"));
	TRY(expect_clean(&d, "after merge"));
	TRY(reg_get_check(&d, &a, 0, a.len, "GET from merged pages"));
	TRY(expect_clean(&d, "after GET from merged pages"));

	/* A NIC write to one merged page breaks COW for that page only. */
	TRY(reg_put(&d, &a, 5 * PG, PG, 72, "PUT to merged page 5"));
	TRY(reg_cpu_check(&a, 0, a.len, "after PUT to merged page 5"));
	TRY(reg_cpu_check(&b, 0, b.len, "control pages after PUT to page 5"));
	REQ(pm_pfn(a.p + 5 * PG) != ksmpfn,
	    "page 5 still maps the KSM frame after the PUT");
	ma = same_frame(&a, ksmpfn);
	REQ(ma == na - 1, "%zu pages share the KSM frame after the PUT, expected %zu",
	    ma, na - 1);
	TRY(expect_clean(&d, "after PUT to merged page 5"));

	/* A CPU write to another one is seen by the NIC. */
	reg_fill(&a, 6 * PG, PG, 73);
	TRY(reg_get_check(&d, &a, 0, a.len, "GET after CPU write to page 6"));
	for (i = 0; i < na; i += 7) {
		snprintf(w, sizeof(w), "merged page %zu", i);
		TRY(roundtrip(&d, &a, i * PG, PG, 74 + i, w));
	}
	TRY(expect_clean(&d, "end"));
out:
	if (a.p)
		madvise(a.p, a.len, MADV_UNMERGEABLE);
	if (b.p)
		madvise(b.p, b.len, MADV_UNMERGEABLE);
	reg_free(&a);
	reg_free(&b);
	dev_close(&d);
	return rc;
}

/* ------------------------------------------------------------ thp */

static int sc_thp(void)
{
	const size_t len = 2 * HPAGE;
	struct ioproc_test_stats h;
	struct region r = { 0 };
	struct dev d = { .fd = -1 };
	char mode[64];
	long kb, kb_split, coll0 = -1, coll1 = -1;
	bool collapsed = false, khp;
	uint64_t t0;
	char *p;
	int rc = 0;

	if (read_str(THP_DIR "enabled", mode, sizeof(mode)) < 0)
		SKIP("no transparent huge pages (CONFIG_TRANSPARENT_HUGEPAGE)");
	selected_word(mode);
	if (strcmp(mode, "never") == 0) {
		if (!g_root)
			SKIP("THP is disabled and we are not root");
		REQ(setting_set(THP_DIR "enabled", "madvise") == 0,
		    "cannot enable THP: %s", strerror(errno));
	}
	/* khugepaged stays away until the collapse part (it would undo splits) */
	khp = g_root && exists(THP_DIR "khugepaged/scan_sleep_millisecs");
	if (khp)
		setting_set(THP_DIR "khugepaged/scan_sleep_millisecs", "600000");
	p = map_aligned(len, HPAGE, PROT_READ | PROT_WRITE);
	REQ(p, "mmap: %s", strerror(errno));
	TRY(reg_init(&r, p, len));
	REQ(madvise(p, len, MADV_HUGEPAGE) == 0, "madvise(MADV_HUGEPAGE): %s",
	    strerror(errno));
	reg_fill(&r, 0, len, 81);
	kb = smaps_anon_huge_kb(p, len);
	note("%ld kB of %zu kB in huge pages after the first touch", kb, len >> 10);
	if (kb < (long)(HPAGE >> 10))
		SKIP("no transparent huge page was allocated (AnonHugePages %ld kB)",
		     kb);
	TRY(dev_open(&d));
	hk_snap(&d, &h);
	TRY(load_ok(&d, p, len, true, "huge pages"));
	TRY(expect_clean(&d, "huge pages loaded"));
	/* the kernel said each huge PMD's translation holds for its block */
	{
		struct ioproc_test_stats s;
		char on[8] = "";

		TRY(dev_stats(&d, &s));
		read_str("/sys/module/ioproc_test/parameters/huge", on, sizeof(on));
		vnote("%llu THP blocks loaded whole", (ull)(s.blocks - h.blocks));
		if (on[0] == 'Y')
			REQ(s.blocks - h.blocks >= (uint64_t)kb / (HPAGE >> 10),
			    "%ld kB in huge pages loaded as %llu whole blocks",
			    kb, (ull)(s.blocks - h.blocks));
	}

	/* fork write-protects the parent's huge PMDs */
	hk_snap(&d, &h);
	TRY(fork_and_reap());
	TRY(expect_grew(&d, &h, CL_PROT, "fork with huge pages"));
	TRY(expect_clean(&d, "after fork with huge pages"));
	TRY(roundtrip(&d, &r, 0, 8 * PG, 82, "huge page after fork"));
	TRY(expect_clean(&d, "after PUT to the huge page after fork"));

	/* split the first huge PMD: mprotect 4 KiB in its middle */
	TRY(load_ok(&d, p, len, true, "before split"));
	hk_snap(&d, &h);
	REQ(mprotect(p + HPAGE / 2, PG, PROT_READ) == 0, "mprotect: %s",
	    strerror(errno));
	kb = smaps_anon_huge_kb(p, len);
	vnote("%ld kB in huge pages after mprotect of 4 KiB", kb);
	REQ(kb < (long)(len >> 10), "mprotect of 4 KiB did not split the huge page (AnonHugePages %ld kB)", kb);
	TRY(expect_grew(&d, &h, CL_INV, "split by mprotect"));
	TRY(expect_grew(&d, &h, CL_PROT, "mprotect inside a huge page"));
	TRY(expect_clean(&d, "after split by mprotect"));
	TRY(reg_put_denied(&d, &r, HPAGE / 2, PG, 83, true,
			   "PUT to the read-only 4 KiB of the split huge page"));
	TRY(reg_put(&d, &r, HPAGE / 2 + PG, PG, 84,
		    "PUT next to the read-only 4 KiB"));
	TRY(reg_get_check(&d, &r, 0, HPAGE, "GET of the split huge page"));
	TRY(reg_cpu_check(&r, 0, len, "CPU after split"));
	REQ(mprotect(p + HPAGE / 2, PG, PROT_READ | PROT_WRITE) == 0,
	    "mprotect: %s", strerror(errno));
	TRY(roundtrip(&d, &r, HPAGE / 2 - PG, 3 * PG, 85,
		      "around the 4 KiB made writable again"));
	TRY(expect_clean(&d, "after the split huge page is writable again"));

	/* zap one subpage of the second huge page */
	TRY(load_ok(&d, p, len, true, "before MADV_DONTNEED of a subpage"));
	hk_snap(&d, &h);
	REQ(madvise(p + HPAGE + 16 * PG, PG, MADV_DONTNEED) == 0,
	    "madvise(MADV_DONTNEED): %s", strerror(errno));
	reg_zero(&r, HPAGE + 16 * PG, PG);
	TRY(expect_grew(&d, &h, CL_INV, "MADV_DONTNEED of a subpage"));
	TRY(expect_clean(&d, "after MADV_DONTNEED of a subpage"));
	TRY(reg_get_check(&d, &r, HPAGE, HPAGE,
			  "GET of the huge page with a zapped subpage"));
	TRY(reg_cpu_check(&r, 0, len, "CPU after MADV_DONTNEED of a subpage"));
	kb_split = smaps_anon_huge_kb(p, len);
	note("%ld kB in huge pages after the splits", kb_split);

	/* collapse by khugepaged, woken now */
	reg_fill(&r, 0, len, 86);	/* young PTEs, so khugepaged wants them */
	TRY(load_ok(&d, p, len, true, "before collapse"));
	hk_snap(&d, &h);
	read_long(THP_DIR "khugepaged/pages_collapsed", &coll0);
	if (khp) {
		setting_set(THP_DIR "khugepaged/alloc_sleep_millisecs", "100");
		setting_set(THP_DIR "khugepaged/pages_to_scan", "4096");
		setting_set(THP_DIR "khugepaged/scan_sleep_millisecs", "100");
	}
	t0 = now_ms();
	while (now_ms() - t0 < g_wait_secs * 1000ULL) {
		sleep_ms(250);
		kb = smaps_anon_huge_kb(p, len);
		if (kb >= (long)(len >> 10))
			break;
	}
	read_long(THP_DIR "khugepaged/pages_collapsed", &coll1);
	collapsed = kb > kb_split && coll1 > coll0;
	note("after %.1f s: %ld kB in huge pages (khugepaged pages_collapsed %ld -> %ld)",
	     (now_ms() - t0) / 1000.0, kb, coll0, coll1);
	if (collapsed)
		TRY(expect_grew(&d, &h, CL_INV, "khugepaged collapse"));
	TRY(expect_clean(&d, "after the wait for khugepaged"));
	TRY(reg_cpu_check(&r, 0, len, "CPU after collapse"));
	TRY(roundtrip(&d, &r, 0, len, 87, "after collapse"));
	TRY(expect_clean(&d, "end"));
	if (!collapsed)
		SKIP("khugepaged did not collapse within %u s (fault, fork, split and zap parts passed)",
		     g_wait_secs);
out:
	reg_free(&r);
	dev_close(&d);
	return rc;
}

/* ------------------------------------------------------------ dontneed_free */

static int sc_dontneed_free(void)
{
	const size_t n = 8, len = n * PG, nf = 16, flen = nf * PG;
	struct ioproc_test_stats h;
	struct region r = { 0 }, f = { 0 };
	struct dev d = { .fd = -1 };
	unsigned char *orig = NULL;
	int rc = 0, ctl;

	TRY(dev_open(&d));

	/* MADV_DONTNEED: zero pages afterwards, for the NIC too */
	TRY(reg_map(&r, len, 0));
	reg_fill(&r, 0, len, 91);
	TRY(load_ok(&d, r.p, len, true, "before MADV_DONTNEED"));
	TRY(expect_clean(&d, "before MADV_DONTNEED"));
	hk_snap(&d, &h);
	REQ(madvise(r.p, len, MADV_DONTNEED) == 0, "madvise(MADV_DONTNEED): %s",
	    strerror(errno));
	reg_zero(&r, 0, len);
	TRY(expect_grew(&d, &h, CL_INV, "MADV_DONTNEED"));
	TRY(expect_clean(&d, "after MADV_DONTNEED"));
	TRY(reg_get_check(&d, &r, 0, len, "GET after MADV_DONTNEED (zeros)"));
	TRY(reg_cpu_check(&r, 0, len, "CPU after MADV_DONTNEED (zeros)"));
	TRY(roundtrip(&d, &r, 0, len, 92, "after MADV_DONTNEED"));
	TRY(expect_clean(&d, "after PUT/GET"));

	/* MADV_FREE: the NIC's next write must re-dirty the page */
	TRY(reg_map(&f, flen, 0));
	reg_fill(&f, 0, flen, 93);
	TRY(reg_put(&d, &f, 0, flen, 94, "PUT before MADV_FREE"));
	TRY(expect_clean(&d, "before MADV_FREE"));
	hk_snap(&d, &h);
	if (madvise(f.p, flen, MADV_FREE) < 0) {
		if (errno == EINVAL) {
			note("MADV_FREE part skipped: not supported");
			goto out;
		}
		FAIL("madvise(MADV_FREE): %s", strerror(errno));
	}
	TRY(expect_grew(&d, &h, CL_PROT, "MADV_FREE"));
	TRY(expect_clean(&d, "after MADV_FREE"));
	/* the last page is a control: freed and not written again */
	orig = malloc(PG);
	REQ(orig, "out of memory");
	memcpy(orig, f.exp + flen - PG, PG);
	TRY(reg_put(&d, &f, 0, flen - PG, 95, "PUT after MADV_FREE"));
	TRY(expect_clean(&d, "after PUT after MADV_FREE"));
	REQ(madvise(f.p, flen, MADV_PAGEOUT) == 0,
	    "madvise(MADV_PAGEOUT) for memory pressure: %s", strerror(errno));
	TRY(reg_cpu_check(&f, 0, flen - PG,
			  "CPU after reclaim of MADV_FREE pages the NIC wrote"));
	ctl = memcmp(f.p + flen - PG, orig, PG) == 0 ? 1 :
	      f.p[flen - PG] == 0 && !memcmp(f.p + flen - PG, f.p + flen - PG + 1, PG - 1) ? 0 : -1;
	REQ(ctl >= 0, "the MADV_FREE control page has neither its data nor zeros");
	if (ctl)
		note("the control page (MADV_FREE, not written) survived MADV_PAGEOUT: reclaim was not proven to discard");
	else
		vnote("the control page (MADV_FREE, not written) was discarded by reclaim");
	memcpy(f.exp + flen - PG, f.p + flen - PG, PG);
	TRY(reg_get_check(&d, &f, 0, flen, "GET after reclaim"));
	TRY(expect_clean(&d, "after reclaim"));
	TRY(roundtrip(&d, &f, 0, flen, 96, "after reclaim"));
	TRY(expect_clean(&d, "end"));
out:
	free(orig);
	reg_free(&r);
	reg_free(&f);
	dev_close(&d);
	return rc;
}

/* ------------------------------------------------------------ hmm */

/*
 * lib/test_hmm.c (CONFIG_TEST_HMM): a pretend GPU that moves a process's
 * pages to device-private memory and back with migrate_vma_*(), as nouveau
 * and amdgpu SVM do.  Its uapi (lib/test_hmm_uapi.h), the part used here.
 */
struct hmm_dmirror_cmd {
	uint64_t addr;
	uint64_t ptr;
	uint64_t npages;
	uint64_t cpages;
	uint64_t faults;
};

#define HMM_DMIRROR_MIGRATE_TO_DEV _IOWR('H', 0x02, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_MIGRATE_TO_SYS _IOWR('H', 0x03, struct hmm_dmirror_cmd)
#define HMM_DEV "/dev/hmm_dmirror0"	/* minor 0: device-private memory */

/* test_hmm makes no device node: make it from its major in /proc/devices. */
static int hmm_open(void)
{
	char line[128], name[64];
	FILE *f;
	int fd, m, major = -1;

	fd = open(HMM_DEV, O_RDWR | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT)
		return fd < 0 ? -errno : fd;
	f = fopen("/proc/devices", "re");
	if (!f)
		return -ENOENT;
	while (major < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%d %63s", &m, name) == 2 &&
		    !strcmp(name, "HMM_DMIRROR"))
			major = m;
	fclose(f);
	if (major < 0)
		return -ENODEV;
	if (mknod(HMM_DEV, S_IFCHR | 0600, makedev(major, 0)) < 0 &&
	    errno != EEXIST)
		return -errno;
	fd = open(HMM_DEV, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Migrate [addr, addr + len) to the device or back; @out: device data. */
static int hmm_migrate(int hfd, bool to_dev, void *addr, size_t len,
		       void *out, uint64_t *cpages)
{
	struct hmm_dmirror_cmd cmd = {
		.addr = (uintptr_t)addr, .ptr = (uintptr_t)out,
		.npages = len / PG,
	};
	int e = xioctl(hfd, to_dev ? HMM_DMIRROR_MIGRATE_TO_DEV :
		       HMM_DMIRROR_MIGRATE_TO_SYS, &cmd);

	*cpages = cmd.cpages;
	return e;
}

/* Pages of @r that are device-private now (non-present, not swap). */
static size_t count_on_device(struct region *r)
{
	size_t i, c = 0;

	for (i = 0; i < r->len; i += PG) {
		uint64_t e = pm_entry(r->p + i);

		c += !PM_PRESENT(e) && PM_SWAP(e);
	}
	return c;
}

/*
 * CHECK after a migration to the device: the pages left the process, so
 * the NIC must hold no entry for them.  A stale entry points at a page
 * that migrate_vma_finalize() freed: report it, and detach at once rather
 * than move data through it.  Returns 0 clean, -1 dirty (reason in @msg).
 */
static int hmm_check(struct dev *d, const char *what, char *msg, size_t n)
{
	struct ioproc_test_check c;
	int e = dev_check(d, NULL, 0, &c);

	if (e < 0) {
		snprintf(msg, n, "%s: CHECK failed: %s", what, errname(e));
		return -1;
	}
	note("%s: CHECK %llu stale, %llu over-permissive of %llu entries",
	     what, (ull)c.stale, (ull)c.overperm, (ull)c.checked);
	if (!c.stale && !c.overperm)
		return 0;
	snprintf(msg, n, "%s: CHECK found %llu stale and %llu over-permissive of %llu entries (first bad at %#llx)",
		 what, (ull)c.stale, (ull)c.overperm, (ull)c.checked,
		 (ull)c.first_bad);
	dev_close(d);
	return -1;
}

/* Ordinary pages the NIC may write, migrated to the device and back. */
static int hmm_pages(int hfd, char *msg, size_t msglen)
{
	const size_t n = 16, len = n * PG;
	struct ioproc_test_stats h;
	struct region r = { 0 };
	struct dev d = { .fd = -1 };
	unsigned char *devcopy = malloc(len);
	uint64_t cpages;
	int rc = 0, e, round;

	REQ(devcopy, "out of memory");
	TRY(dev_open(&d));
	TRY(reg_map(&r, len, 0));
	reg_fill(&r, 0, len, 121);
	for (round = 0; round < 2; round++) {
		const char *back = round ? "HMM_DMIRROR_MIGRATE_TO_SYS" :
			"a NIC fault (migrate_to_ram)";

		TRY(load_ok(&d, r.p, len, true, "before migration to the device"));
		TRY(expect_clean(&d, "before migration to the device"));
		hk_snap(&d, &h);
		e = hmm_migrate(hfd, true, r.p, len, devcopy, &cpages);
		REQ(e == 0, "HMM_DMIRROR_MIGRATE_TO_DEV: %s", errname(e));
		REQ(count_on_device(&r) == n && cpages == n,
		    "test_hmm moved %zu of %zu pages to the device (cpages %llu)",
		    count_on_device(&r), n, (ull)cpages);
		REQ(!memcmp(devcopy, r.exp, len),
		    "the device's copy differs from what the process had");
		if (hmm_check(&d, "written pages migrated to device-private memory",
			      msg, msglen) < 0) {
			rc = -1;
			goto out;
		}
		TRY(expect_grew(&d, &h, CL_INV, "migration to the device"));
		if (round) {
			e = hmm_migrate(hfd, false, r.p, len, devcopy, &cpages);
			REQ(e == 0, "HMM_DMIRROR_MIGRATE_TO_SYS: %s", errname(e));
			REQ(count_on_device(&r) == 0,
			    "%zu pages still on the device after MIGRATE_TO_SYS",
			    count_on_device(&r));
			TRY(expect_clean(&d, "after HMM_DMIRROR_MIGRATE_TO_SYS"));
		}
		/* round 0: the GET's faults bring the pages back */
		TRY(reg_get_check(&d, &r, 0, len, back));
		REQ(count_on_device(&r) == 0, "%zu pages still on the device after %s",
		    count_on_device(&r), back);
		TRY(expect_clean(&d, back));
		TRY(roundtrip(&d, &r, 0, len, 122 + round, back));
		TRY(expect_clean(&d, back));
	}
out:
	free(devcopy);
	reg_free(&r);
	dev_close(&d);
	return rc;
}

/* Zero pages the NIC reads, replaced by device pages. */
static int hmm_zero(int hfd, char *msg, size_t msglen)
{
	const size_t n = 8, len = n * PG;
	struct region z = { 0 };
	struct dev d = { .fd = -1 };
	unsigned char *devcopy = malloc(len);
	uint64_t cpages, zpfn;
	int rc = 0, e;

	REQ(devcopy, "out of memory");
	TRY(dev_open(&d));
	TRY(reg_map(&z, len, 0));
	TRY(load_ok(&d, z.p, len, false, "zero pages"));
	zpfn = pm_pfn(z.p);
	REQ(!zpfn || pm_pfn(z.p + len - PG) == zpfn,
	    "a read fault did not map the zero page");
	TRY(expect_clean(&d, "zero pages"));
	e = hmm_migrate(hfd, true, z.p, len, devcopy, &cpages);
	REQ(e == 0, "HMM_DMIRROR_MIGRATE_TO_DEV of zero pages: %s", errname(e));
	REQ(count_on_device(&z) == n,
	    "test_hmm moved %zu of %zu zero pages to the device",
	    count_on_device(&z), n);
	if (hmm_check(&d, "zero pages the NIC read, migrated to the device",
		      msg, msglen) < 0) {
		rc = -1;
		goto out;
	}
	TRY(reg_get_check(&d, &z, 0, len, "GET of the migrated zero pages"));
	TRY(expect_clean(&d, "zero pages back"));
	TRY(roundtrip(&d, &z, 0, len, 125, "zero pages back"));
	TRY(expect_clean(&d, "zero pages back"));
out:
	free(devcopy);
	reg_free(&z);
	dev_close(&d);
	return rc;
}

static int sc_hmm(void)
{
	char m1[512] = "", m2[512] = "";
	int rc = 0, hfd = -1, a = 0, b = 0;

	if (g_nodev)
		SKIP("needs the module");
	hfd = hmm_open();
	if (hfd < 0)
		SKIP("no %s (CONFIG_TEST_HMM): %s", HMM_DEV, errname(hfd));
	/* Both parts run, so one broken hook does not hide the other. */
	a = hmm_pages(hfd, m1, sizeof(m1));
	if (a < 0 && !m1[0])
		goto out;	/* a set-up failure, already in g_why */
	b = hmm_zero(hfd, m2, sizeof(m2));
	if (b < 0 && !m2[0])
		goto out;
	if (a < 0 || b < 0)
		FAIL("%s%s%s", m1, m1[0] && m2[0] ? "; " : "", m2);
out:
	if (hfd >= 0)
		close(hfd);
	return rc < 0 || a < 0 || b < 0 ? -1 : rc;
}

/* ------------------------------------------------------------ zap + writeback */

struct wb_racer {
	struct dev *d;
	int fd;
	volatile bool done;	/* munmap returned */
	bool saw_wait;
	int err;
};

/* As soon as an invalidate hook waits to land its write: write back. */
static void *wb_racer_thread(void *arg)
{
	struct wb_racer *w = arg;
	struct ioproc_test_stats s;

	while (!w->done) {
		if (xioctl(w->d->fd, IOPROC_TEST_STATS, &s) == 0 &&
		    s.inflight_waiting) {
			w->saw_wait = true;
			break;
		}
		sched_yield();
	}
	if (fdatasync(w->fd) < 0)
		w->err = errno;
	return NULL;
}

/*
 * A shared file mapping the NIC is writing is unmapped while writeback
 * runs.  The write in flight lands during the zap's invalidate hook; if
 * the zap had already handed the PTE's dirty bit to the page, writeback
 * could clean the page first and the write would never reach the file.
 */
static int sc_zap_writeback(void)
{
	const size_t n = 4, len = n * PG;
	struct ioproc_test_inflight inf = { 0 };
	struct ioproc_test_stats s0, s1;
	struct region r = { 0 };
	struct dev d = { .fd = -1 };
	struct wb_racer w = { 0 };
	unsigned char *data = NULL;
	char path[4096];
	const char *dir;
	pthread_t th;
	bool started = false;
	int rc = 0, fd = -1, e;
	void *p;

	path[0] = 0;
	if (g_nodev)
		SKIP("needs the module");
	dir = writeback_dir();
	if (!dir)
		SKIP("no writable file system with writeback (-d DIR)");
	TRY(dev_open(&d));
	snprintf(path, sizeof(path), "%s/.ioproc_zapwb.XXXXXX", dir);
	fd = mkstemp(path);
	REQ(fd >= 0, "mkstemp in %s: %s", dir, strerror(errno));
	TRY(reg_init(&r, NULL, len));
	pattern(r.exp, len, 131, 0);
	REQ(pwrite(fd, r.exp, len, 0) == (ssize_t)len, "pwrite: %s",
	    strerror(errno));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQ(p != MAP_FAILED, "mmap MAP_SHARED %s: %s", path, strerror(errno));
	r.p = p;

	/* Written, written back (translations downgraded), written again. */
	TRY(reg_put(&d, &r, 0, len, 132, "PUT to the file mapping"));
	REQ(fdatasync(fd) == 0, "fdatasync: %s", strerror(errno));
	TRY(file_check(fd, &r, "file after PUT and fdatasync"));
	TRY(reg_put(&d, &r, 0, len, 133, "PUT after writeback"));
	TRY(expect_clean(&d, "before munmap"));

	data = malloc(len);
	REQ(data, "out of memory");
	pattern(data, len, 134, 0);
	inf.addr = (uintptr_t)p;
	inf.len = len;
	inf.buf = (uintptr_t)data;
	inf.wait_ms = 2000;
	e = xioctl(d.fd, IOPROC_TEST_INFLIGHT, &inf);
	REQ(e == 0, "IOPROC_TEST_INFLIGHT: %s", errname(e));
	hk_snap(&d, &s0);
	w.d = &d;
	w.fd = fd;
	e = pthread_create(&th, NULL, wb_racer_thread, &w);
	REQ(e == 0, "pthread_create: %s", strerror(e));
	started = true;
	REQ(munmap(p, len) == 0, "munmap: %s", strerror(errno));
	r.p = NULL;
	w.done = true;
	pthread_join(th, NULL);
	started = false;
	memset(&inf, 0, sizeof(inf));
	xioctl(d.fd, IOPROC_TEST_INFLIGHT, &inf);
	hk_snap(&d, &s1);
	note("munmap racing writeback: %llu of %zu in-flight NIC writes landed during the hook, %llu after writeback had cleaned the page; the racer %s the hook wait",
	     (ull)(s1.inflight_landed - s0.inflight_landed), n,
	     (ull)(s1.inflight_seen_clean - s0.inflight_seen_clean),
	     w.saw_wait ? "saw" : "did not see");
	REQ(w.err == 0, "fdatasync during munmap: %s", strerror(w.err));
	REQ(s1.inflight_landed - s0.inflight_landed == n,
	    "%llu of %zu in-flight writes landed: the NIC held no write translation at munmap",
	    (ull)(s1.inflight_landed - s0.inflight_landed), n);
	memcpy(r.exp, data, len);
	REQ(fdatasync(fd) == 0, "fdatasync: %s", strerror(errno));
	/* Drop the clean page cache, so that the file itself is read. */
	posix_fadvise(fd, 0, len, POSIX_FADV_DONTNEED);
	TRY(file_check(fd, &r, "file after munmap (the NIC's last write lost?)"));
	TRY(expect_clean(&d, "after munmap"));
out:
	if (started) {
		w.done = true;
		pthread_join(th, NULL);
	}
	if (r.p)
		munmap(r.p, len);
	free(r.exp);
	free(data);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	dev_close(&d);
	return rc;
}

/* ------------------------------------------------------------ dma_fault */

#define WAIT_FAULTING_PARAM "/sys/module/ioproc_test/parameters/wait_faulting"

struct put_thread {
	struct dev *d;
	void *addr;
	void *buf;
	size_t len;
	int err;
};

static void *put_thread_fn(void *arg)
{
	struct put_thread *t = arg;

	t->err = dev_put(t->d, t->addr, t->buf, t->len);
	return NULL;
}

/*
 * A PUT over two pages of one page table: the first has a translation,
 * the second must fault.  The PUT pauses after the first page until a
 * MADV_DONTNEED of the first page waits for it in its invalidate hook,
 * under the page table lock; then the PUT faults on the second page,
 * which needs that lock.  The hook must stop waiting for a transfer
 * parked on a fault, or the two wait for each other (here until the
 * hook's bound, 1 s, counted as a timeout).  Returns the timeouts seen,
 * or -1 with the reason in g_why.
 */
static long dma_fault_case(bool *waited)
{
	const size_t len = 2 * PG;
	struct ioproc_test_dma_wait dw = { 0 };
	struct ioproc_test_stats s0, s1, s;
	struct put_thread t = { 0 };
	struct dev d = { .fd = -1 };
	struct region r = { 0 };
	bool started = false;
	pthread_t th;
	uint64_t end;
	long rc = 0;
	char *p = NULL;
	int e;

	TRY(dev_open(&d));
	/* 2 MiB aligned: both pages under one PTE page and its lock */
	p = map_aligned(len, HPAGE, PROT_READ | PROT_WRITE);
	REQ(p, "mmap: %s", strerror(errno));
	TRY(reg_init(&r, p, len));
	reg_fill(&r, 0, PG, 141);
	TRY(load_ok(&d, p, PG, true, "first page"));
	REQ(!PM_PRESENT(pm_entry(p + PG)), "the second page is present already");
	t.buf = malloc(len);
	REQ(t.buf, "out of memory");
	pattern(t.buf, len, 142, 0);
	dw.wait_ms = 1000;
	dw.pause_addr = (uintptr_t)p + PG;
	e = xioctl(d.fd, IOPROC_TEST_DMA_WAIT, &dw);
	REQ(e == 0, "IOPROC_TEST_DMA_WAIT: %s", errname(e));
	hk_snap(&d, &s0);
	t.d = &d;
	t.addr = p;
	t.len = len;
	e = pthread_create(&th, NULL, put_thread_fn, &t);
	REQ(e == 0, "pthread_create: %s", strerror(e));
	started = true;
	for (end = now_ms() + 5000; now_ms() < end; sleep_ms(1))
		if (dev_stats(&d, &s) == 0 && s.xfer_paused)
			break;
	REQ(s.xfer_paused, "the PUT did not reach its pause after the first page");
	REQ(madvise(p, PG, MADV_DONTNEED) == 0, "madvise(MADV_DONTNEED): %s",
	    strerror(errno));
	pthread_join(th, NULL);
	started = false;
	hk_snap(&d, &s1);
	REQ(t.err == 0, "PUT: %s", errname(t.err));
	*waited = s1.dma_waits > s0.dma_waits;
	rc = s1.dma_wait_timeouts - s0.dma_wait_timeouts;
	/* The PUT wrote the first page before the zap: zeros there now. */
	memset(r.exp, 0, PG);
	memcpy(r.exp + PG, (char *)t.buf + PG, PG);
	TRY(reg_cpu_check(&r, 0, len, "after the PUT and MADV_DONTNEED"));
	TRY(expect_clean(&d, "after the PUT and MADV_DONTNEED"));
out:
	if (started)
		pthread_join(th, NULL);
	dw.wait_ms = 0;
	dw.pause_addr = 0;
	if (d.fd >= 0)
		xioctl(d.fd, IOPROC_TEST_DMA_WAIT, &dw);
	free(t.buf);
	reg_free(&r);
	dev_close(&d);
	return rc;
}

static int sc_dma_fault(void)
{
	bool waited = false;
	long timeouts;
	int rc = 0;

	if (g_nodev)
		SKIP("needs the module");
	timeouts = dma_fault_case(&waited);
	if (timeouts < 0)
		return -1;
	note("zap of a page a PUT was writing: the hook %s for the PUT, and ran out of time %ld times",
	     waited ? "waited" : "did not wait", timeouts);
	REQ(waited, "the hook never waited for the PUT in flight: the case proves nothing");
	REQ(!timeouts, "the hook waited for a PUT that was waiting on a fault under the same page table lock");
out:
	return rc;
}

/* ------------------------------------------------------------ exit */

/* In a child: attach, load, PUT, and exit without closing. */
static int exit_child_simple(void)
{
	struct dev d;
	struct region r;

	if (dev_open(&d) < 0 || reg_map(&r, 8 * PG, 0) < 0)
		return 10;
	reg_fill(&r, 0, r.len, 101);
	if (dev_load(&d, r.p, r.len, true, NULL) < 0)
		return 11;
	if (reg_put(&d, &r, 0, r.len, 102, "child") < 0 ||
	    reg_cpu_check(&r, 0, r.len, "child") < 0)
		return 12;
	return 0;
}

struct busy {
	struct dev *d;
	char *p;
	size_t len;
};

static void *busy_thread(void *arg)
{
	struct busy *b = arg;
	uint64_t s = (uintptr_t)arg ^ now_ms();
	struct ioproc_test_check c;
	char buf[4096];

	for (;;) {
		size_t off = (rnd(&s) % (b->len / PG)) * PG;

		switch (rnd(&s) % 4) {
		case 0:
			dev_load(b->d, b->p + off, PG, rnd(&s) & 1, NULL);
			break;
		case 1:
			memset(buf, (int)s, sizeof(buf));
			dev_put(b->d, b->p + off, buf, PG);
			break;
		case 2:
			dev_get(b->d, b->p + off, buf, PG);
			break;
		default:
			dev_check(b->d, NULL, 0, &c);
		}
	}
	return NULL;
}

/* In a child: threads keep the NIC busy while the process exits or dies. */
static int exit_child_busy(unsigned delay_ms, bool wait_kill)
{
	static struct dev d;
	static struct busy b;
	struct region r;
	pthread_t t;
	int i;

	if (dev_open(&d) < 0 || reg_map(&r, 64 * PG, 0) < 0)
		return 10;
	reg_fill(&r, 0, r.len, 103);
	if (dev_load(&d, r.p, r.len, true, NULL) < 0)
		return 11;
	b.d = &d;
	b.p = r.p;
	b.len = r.len;
	for (i = 0; i < 2; i++)
		if (pthread_create(&t, NULL, busy_thread, &b))
			return 12;
	sleep_ms(delay_ms);
	munmap(r.p + 32 * PG, 32 * PG);
	if (wait_kill)
		for (;;)
			pause();
	return 0;	/* exit_group with the threads in the driver */
}

struct gc_report {
	int stats_rc, check_rc, load_rc, detach_rc;
	uint64_t released, entries, checked, stale, overperm;
};

/* The module's count of release hooks run, or -1 without the module. */
static long release_calls(void)
{
	FILE *f = fopen("/sys/module/ioproc_test/parameters/release_calls", "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

static int sc_exit(void)
{
	long rel0;
	struct region r = { 0 };
	struct dev d = { .fd = -1 };
	struct gc_report rep;
	int gp[2] = { -1, -1 }, rp[2] = { -1, -1 };
	int rc = 0, st, i, e;
	pid_t pid;
	char ch;

	if (g_nodev)
		note("--nodev: the children attach nothing");

	/* 1. a child attaches, loads, PUTs and exits: its release hook runs */
	rel0 = release_calls();
	pid = fork();
	REQ(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(exit_child_simple());
	REQ(wait_child(pid, 60, &st) == 0, "the child hung on exit");
	REQ(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "the child that attached and exited failed (status %#x)", st);
	if (!g_nodev && rel0 >= 0)
		REQ(release_calls() > rel0,
		    "no release hook ran when the attached child exited (%ld before, %ld after)",
		    rel0, release_calls());

	/* 2. the open file outlives the mm: a grandchild keeps it */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (pipe(gp) || pipe(rp))
		FAIL("pipe: %s", strerror(errno));
	pid = fork();
	REQ(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		struct ioproc_test_stats s;
		struct ioproc_test_check c;
		struct region cr;
		struct dev cd;

		close(gp[1]);
		close(rp[0]);
		if (dev_open(&cd) < 0 || reg_map(&cr, 8 * PG, 0) < 0)
			_exit(10);
		reg_fill(&cr, 0, cr.len, 104);
		if (dev_load(&cd, cr.p, cr.len, true, NULL) < 0)
			_exit(11);
		if (fork() == 0) {
			/* grandchild: wait until our parent's mm is gone */
			memset(&rep, 0, sizeof(rep));
			if (read(gp[0], &ch, 1) != 1)
				_exit(20);
			rep.stats_rc = dev_stats(&cd, &s);
			rep.released = s.released;
			rep.entries = s.entries;
			rep.check_rc = dev_check(&cd, NULL, 0, &c);
			rep.checked = c.checked;
			rep.stale = c.stale;
			rep.overperm = c.overperm;
			rep.load_rc = g_nodev ? -EINVAL :
				dev_load(&cd, cr.p, PG, false, NULL);
			rep.detach_rc = g_nodev ? 0 :
				xioctl(cd.fd, IOPROC_TEST_DETACH, NULL);
			if (write(rp[1], &rep, sizeof(rep)) != sizeof(rep))
				_exit(21);
			close(cd.fd);
			_exit(0);
		}
		_exit(0);	/* the mm goes; the file stays open */
	}
	close(gp[0]);
	close(rp[1]);
	gp[0] = rp[1] = -1;
	REQ(wait_child(pid, 60, &st) == 0, "the child hung on exit");
	REQ(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "the child that handed its file on failed (status %#x)", st);
	ch = 'g';
	REQ(write(gp[1], &ch, 1) == 1, "write to the grandchild: %s",
	    strerror(errno));
	{
		struct pollfd pfd = { rp[0], POLLIN, 0 };

		REQ(poll(&pfd, 1, 60000) == 1, "the grandchild did not report");
	}
	REQ(read(rp[0], &rep, sizeof(rep)) == sizeof(rep),
	    "the grandchild died before reporting");
	while ((e = waitpid(-1, &st, WNOHANG)) > 0)
		;
	if (rep.stats_rc < 0) {
		note("STATS on the file after its mm exited: %s", errname(rep.stats_rc));
	} else if (!g_nodev) {
		note("after the mm exited: released=%llu entries=%llu; CHECK %s (%llu entries); LOAD from another mm %s; DETACH %s",
		     (ull)rep.released, (ull)rep.entries,
		     rep.check_rc < 0 ? errname(rep.check_rc) : "ok",
		     (ull)rep.checked,
		     rep.load_rc < 0 ? errname(rep.load_rc) : "succeeded",
		     rep.detach_rc < 0 ? errname(rep.detach_rc) : "ok");
		REQ(rep.released, "the release hook did not run when the mm exited (is the mm kept alive by the open file?)");
		REQ(rep.entries == 0 && rep.checked == 0,
		    "%llu shadow entries survived the release hook",
		    (ull)(rep.entries ? rep.entries : rep.checked));
		REQ(rep.load_rc < 0,
		    "LOAD from another process succeeded on a file whose mm exited");
	}
	prctl(PR_SET_CHILD_SUBREAPER, 0);

	/* 3. exit_group and 4. SIGKILL while threads are in the driver */
	for (i = 0; i < 8; i++) {
		bool killit = i & 1;
		unsigned delay = 5 + 17 * i;

		pid = fork();
		REQ(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0)
			_exit(exit_child_busy(delay, killit));
		if (killit) {
			sleep_ms(delay + 20);
			kill(pid, SIGKILL);
		}
		REQ(wait_child(pid, 60, &st) == 0,
		    "a busy child did not end within 60 s (%s)",
		    killit ? "SIGKILL" : "exit");
		if (killit)
			REQ(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
			    "the busy child failed before it was killed (status %#x)", st);
		else
			REQ(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			    "the busy child failed (status %#x)", st);
	}

	/* 5. DETACH, then the same file is dead; a new one works */
	TRY(dev_open(&d));
	TRY(reg_map(&r, 4 * PG, 0));
	reg_fill(&r, 0, r.len, 105);
	TRY(load_ok(&d, r.p, r.len, true, "before DETACH"));
	if (!g_nodev) {
		struct ioproc_test_check c;

		e = xioctl(d.fd, IOPROC_TEST_DETACH, NULL);
		REQ(e == 0, "DETACH: %s", errname(e));
		REQ(munmap(r.p, r.len) == 0, "munmap: %s", strerror(errno));
		r.p = mmap(r.p, r.len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		REQ(r.p != MAP_FAILED, "mmap: %s", strerror(errno));
		reg_zero(&r, 0, r.len);
		e = dev_check(&d, NULL, 0, &c);
		vnote("CHECK after DETACH: %s, %llu entries", errname(e),
		      (ull)c.checked);
		REQ(e < 0 || (c.checked == 0 && c.stale == 0),
		    "CHECK after DETACH still finds %llu entries (%llu stale)",
		    (ull)c.checked, (ull)c.stale);
		e = xioctl(d.fd, IOPROC_TEST_ATTACH, NULL);
		vnote("ATTACH again on a detached file: %s", errname(e));
		dev_close(&d);
	}
	TRY(dev_open(&d));
	TRY(roundtrip(&d, &r, 0, r.len, 106, "a new attachment after the exits"));
	TRY(expect_clean(&d, "a new attachment after the exits"));
out:
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	while (waitpid(-1, &st, WNOHANG) > 0)
		;
	for (i = 0; i < 2; i++) {
		if (gp[i] >= 0)
			close(gp[i]);
		if (rp[i] >= 0)
			close(rp[i]);
	}
	reg_free(&r);
	dev_close(&d);
	return rc;
}

/* ------------------------------------------------------------ stress */

#define ST_SLOTS 16
#define ST_SLOT_PAGES 4
#define ST_MAX_MUTATORS 8

enum { S_RW, S_RO, S_NONE };
enum {
	SO_WRITE, SO_REMAP, SO_NONEMAP, SO_MUNMAP, SO_RO, SO_PROTNONE, SO_RW,
	SO_DONTNEED, SO_PAGEOUT, SO_FREE, SO_MREMAP, SO_FORK, SO_NR
};
static const char *const so_name[SO_NR] = {
	"write", "mmap", "mmap-none", "munmap", "mprotect-ro",
	"mprotect-none", "mprotect-rw", "dontneed", "pageout", "free",
	"mremap", "fork",
};

static const unsigned so_weight[SO_NR] = {
	24, 10, 6, 4, 10, 5, 15, 12, 5, 5, 3, 1,
};
static unsigned g_st_mask = (1u << SO_NR) - 1;	/* -O: ops to use */
static bool g_st_preload = true, g_st_numa = true;

#define ST_HIST 8
struct st_hist {
	uint8_t op, state;
	uint32_t ms;
};

struct st_slot {
	pthread_mutex_t mu;
	int state;
	unsigned hn;
	struct st_hist hist[ST_HIST];
};

static struct stress {
	char *base;
	size_t ssz;
	struct st_slot slot[ST_SLOTS];
	struct dev *d;
	volatile int stop;
	bool swap;
	uint64_t t0;
	uint64_t ops[SO_NR];
	uint64_t ld_ok, ld_fault, put_ok, put_fault, get_ok, get_fault;
	uint64_t unexpected, checks, bad, transient, transient_addr;
	int unexpected_err, check_err;
	const char *unexpected_op;
	struct ioproc_test_check badc;
	/* what the checker saw at the first bad CHECK */
	uint32_t bad_ms;
	int bad_slot, bad_state;
	uint64_t bad_pm;
	unsigned bad_hn;
	struct st_hist bad_hist[ST_HIST];
} S;

#define ADD(x) __atomic_fetch_add(&(x), 1, __ATOMIC_RELAXED)

static char *st_addr(int i)
{
	return S.base + i * S.ssz;
}

/* Under the slot's lock: remember the operation for the diagnosis. */
static void st_log(int i, int op)
{
	struct st_slot *sl = &S.slot[i];
	struct st_hist *h = &sl->hist[sl->hn % ST_HIST];

	h->op = op;
	h->state = sl->state;
	h->ms = now_ms() - S.t0;
	__atomic_store_n(&sl->hn, sl->hn + 1, __ATOMIC_RELEASE);
}

/* Put a PROT_NONE placeholder where a slot was unmapped. */
static void st_hole(int i)
{
	void *q = mmap(st_addr(i), S.ssz, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		       MAP_FIXED_NOREPLACE, -1, 0);

	if (q != st_addr(i)) {
		why("stress: could not refill unmapped slot %d: %s", i,
		    q == MAP_FAILED ? strerror(errno) : "placed elsewhere");
		S.stop = 1;
	}
}

static void st_syserr(const char *op, int i)
{
	why("stress: %s on slot %d: %s", op, i, strerror(errno));
	S.stop = 1;
}

static int st_pick(uint64_t *s)
{
	unsigned total = 0, r;
	int op;

	for (op = 0; op < SO_NR; op++)
		if (g_st_mask & (1u << op))
			total += so_weight[op];
	if (!total)
		return -1;
	r = rnd(s) % total;
	for (op = 0; op < SO_NR; op++) {
		if (!(g_st_mask & (1u << op)))
			continue;
		if (r < so_weight[op])
			return op;
		r -= so_weight[op];
	}
	return -1;
}

static void st_mremap(int i, int j)
{
	int lo = i < j ? i : j, hi = i < j ? j : i;
	void *q;

	pthread_mutex_lock(&S.slot[lo].mu);
	pthread_mutex_lock(&S.slot[hi].mu);
	q = mremap(st_addr(i), S.ssz, S.ssz, MREMAP_MAYMOVE | MREMAP_FIXED,
		   st_addr(j));
	if (q != st_addr(j)) {
		st_syserr("mremap", i);
	} else {
		S.slot[j].state = S.slot[i].state;
		S.slot[i].state = S_NONE;
		st_hole(i);
		st_log(i, SO_MREMAP);	/* moved away */
		st_log(j, SO_MREMAP | 0x80);	/* moved here */
	}
	pthread_mutex_unlock(&S.slot[hi].mu);
	pthread_mutex_unlock(&S.slot[lo].mu);
}

static void *st_mutator(void *arg)
{
	uint64_t s = g_seed ^ ((uintptr_t)arg * 0x9e3779b97f4a7c15ULL);
	volatile uint64_t sink = 0;

	rnd(&s);
	while (!S.stop) {
		int i = rnd(&s) % ST_SLOTS, op = st_pick(&s);
		struct st_slot *sl = &S.slot[i];
		char *a = st_addr(i);

		if (op < 0)
			break;
		if (op == SO_MREMAP) {
			int j = rnd(&s) % ST_SLOTS;

			if (j != i) {
				st_mremap(i, j);
				ADD(S.ops[op]);
			}
			continue;
		}
		if (op == SO_FORK) {
			pid_t pid = fork();
			int st;

			if (pid == 0)
				_exit(0);
			if (pid > 0)
				waitpid(pid, &st, 0);
			ADD(S.ops[op]);
			continue;
		}
		pthread_mutex_lock(&sl->mu);
		switch (op) {
		case SO_WRITE:
			if (sl->state == S_RW)
				pattern(a, S.ssz, rnd(&s), 0);
			else if (sl->state == S_RO)
				sink += *(volatile uint64_t *)(a + (rnd(&s) % S.ssz & ~7UL));
			break;
		case SO_REMAP:
			if (mmap(a, S.ssz, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != a)
				st_syserr("mmap", i);
			sl->state = S_RW;
			break;
		case SO_NONEMAP:
			if (mmap(a, S.ssz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
				 MAP_FIXED | MAP_NORESERVE, -1, 0) != a)
				st_syserr("mmap PROT_NONE", i);
			sl->state = S_NONE;
			break;
		case SO_MUNMAP:
			if (munmap(a, S.ssz) < 0)
				st_syserr("munmap", i);
			else
				st_hole(i);
			sl->state = S_NONE;
			break;
		case SO_RO:
			if (mprotect(a, S.ssz, PROT_READ) < 0)
				st_syserr("mprotect", i);
			sl->state = S_RO;
			break;
		case SO_PROTNONE:
			if (mprotect(a, S.ssz, PROT_NONE) < 0)
				st_syserr("mprotect", i);
			sl->state = S_NONE;
			break;
		case SO_RW:
			if (mprotect(a, S.ssz, PROT_READ | PROT_WRITE) < 0)
				st_syserr("mprotect", i);
			sl->state = S_RW;
			break;
		case SO_DONTNEED:
			madvise(a, S.ssz, MADV_DONTNEED);
			break;
		case SO_PAGEOUT:
			madvise(a, S.ssz, S.swap ? MADV_PAGEOUT : MADV_COLD);
			break;
		case SO_FREE:
			if (sl->state == S_RW)
				madvise(a, S.ssz, MADV_FREE);
			break;
		}
		if (op != SO_WRITE)
			st_log(i, op);
		pthread_mutex_unlock(&sl->mu);
		ADD(S.ops[op]);
	}
	(void)sink;
	return NULL;
}

static void st_result(int e, uint64_t *ok, uint64_t *fault, const char *op)
{
	if (e == 0) {
		ADD(*ok);
	} else if (prot_err(e)) {
		ADD(*fault);
	} else {
		if (ADD(S.unexpected) == 0) {
			S.unexpected_err = e;
			S.unexpected_op = op;
		}
	}
}

static void *st_loader(void *arg)
{
	uint64_t s = g_seed ^ 0x5bd1e995;
	char *buf = arg;

	while (!S.stop) {
		int i = rnd(&s) % ST_SLOTS;
		size_t o = rnd(&s) % ST_SLOT_PAGES;
		size_t np = 1 + rnd(&s) % (ST_SLOT_PAGES - o);
		char *a = st_addr(i) + o * PG;
		int r = rnd(&s) % 10;

		if (r < 5) {
			st_result(dev_load(S.d, a, np * PG, r >= 3, NULL),
				  &S.ld_ok, &S.ld_fault, "LOAD");
		} else if (r < 8) {
			pattern(buf, np * PG, rnd(&s), 0);
			st_result(dev_put(S.d, a, buf, np * PG), &S.put_ok,
				  &S.put_fault, "PUT");
		} else {
			st_result(dev_get(S.d, a, buf, np * PG), &S.get_ok,
				  &S.get_fault, "GET");
		}
	}
	return NULL;
}

/*
 * A bad CHECK of everything may only have caught a system call half way
 * (munmap(2), for one, zaps with the mmap_lock downgraded to read after
 * the VMA is gone).  So each slot is checked again while holding its lock,
 * with nothing in flight on it: only what is still bad then counts.
 */
static void st_recheck(uint64_t bad_addr)
{
	struct ioproc_test_check c;
	bool genuine = false;
	int i, e;

	for (i = 0; i < ST_SLOTS && !S.stop; i++) {
		pthread_mutex_lock(&S.slot[i].mu);
		e = dev_check(S.d, st_addr(i), S.ssz, &c);
		if (e == 0 && (c.stale || c.overperm) && !genuine) {
			genuine = true;
			if (S.bad++ == 0) {
				S.badc = c;
				S.bad_ms = now_ms() - S.t0;
				S.bad_slot = i;
				S.bad_pm = pm_entry((void *)(uintptr_t)c.first_bad);
				S.bad_state = S.slot[i].state;
				S.bad_hn = S.slot[i].hn;
				memcpy(S.bad_hist, S.slot[i].hist,
				       sizeof(S.bad_hist));
			}
		}
		pthread_mutex_unlock(&S.slot[i].mu);
	}
	if (!genuine && S.transient++ == 0)
		S.transient_addr = bad_addr;
}

static void *st_checker(void *arg)
{
	struct ioproc_test_check c;

	(void)arg;
	while (!S.stop) {
		int e = dev_check(S.d, NULL, 0, &c);

		if (e < 0) {
			if (!S.check_err)
				S.check_err = e;
		} else if (c.stale || c.overperm) {
			st_recheck(c.first_bad);
		}
		S.checks++;
		sched_yield();
	}
	return NULL;
}

/* After the run: what the threads saw, then every slot must work both ways. */
static int stress_verdict(struct dev *d)
{
	struct region r = { 0 };
	char w[64];
	int rc = 0, i, e;

	if (S.bad) {
		char h[512] = "";
		size_t l = 0;
		unsigned k, n = S.bad_hn < ST_HIST ? S.bad_hn : ST_HIST;
		static const char *const stn[] = { "rw", "ro", "none" };

		for (k = S.bad_hn - n; k < S.bad_hn && l < sizeof(h); k++) {
			struct st_hist *he = &S.bad_hist[k % ST_HIST];

			l += snprintf(h + l, sizeof(h) - l, " %u:%s%s->%s",
				      he->ms, so_name[he->op & 0x7f],
				      he->op & 0x80 ? "-in" : "",
				      stn[he->state % 3]);
		}
		note("first bad CHECK of a quiet slot at %u ms: address %#llx is slot %d page %llu, slot state %s, pagemap %s%s pfn %#llx; last slot operations (ms:op->state):%s",
		     S.bad_ms, (ull)S.badc.first_bad, S.bad_slot,
		     S.bad_slot >= 0 ? (ull)((S.badc.first_bad - (uintptr_t)S.base) % S.ssz / PG) : 0ULL,
		     S.bad_slot >= 0 ? stn[S.bad_state % 3] : "-",
		     PM_PRESENT(S.bad_pm) ? "present" : "not present",
		     PM_SWAP(S.bad_pm) ? " swapped" : "",
		     (ull)PM_PFN(S.bad_pm), h);
	}
	if (S.transient)
		note("%llu of %llu CHECKs of everything were bad but clean again per slot with no operation in flight (first at %#llx): a system call caught half way",
		     (ull)S.transient, (ull)S.checks, (ull)S.transient_addr);
	if (S.bad)
		FAIL("CHECK of a quiet slot found problems %llu of %llu times; first: %llu stale, %llu over-permissive of %llu (first bad at %#llx)",
		     (ull)S.bad, (ull)S.checks, (ull)S.badc.stale,
		     (ull)S.badc.overperm, (ull)S.badc.checked,
		     (ull)S.badc.first_bad);
	if (S.check_err)
		FAIL("CHECK failed: %s", errname(S.check_err));
	if (S.unexpected)
		FAIL("%llu NIC operations failed unexpectedly; first: %s with %s",
		     (ull)S.unexpected, S.unexpected_op, errname(S.unexpected_err));
	if (g_why[0]) {
		rc = -1;	/* a mutator's system call failed: reason set */
		goto out;
	}
	TRY(expect_clean(d, "after the run"));
	for (i = 0; i < ST_SLOTS; i++) {
		REQ(mprotect(st_addr(i), S.ssz, PROT_READ | PROT_WRITE) == 0,
		    "mprotect: %s", strerror(errno));
		TRY(reg_init(&r, st_addr(i), S.ssz));
		memcpy(r.exp, r.p, S.ssz);
		snprintf(w, sizeof(w), "slot %d after the run", i);
		e = roundtrip(d, &r, 0, S.ssz, 1000 + i, w);
		free(r.exp);
		r.exp = NULL;
		TRY(e);
	}
	TRY(expect_clean(d, "end"));
out:
	return rc;
}

static int sc_stress(void)
{
	const int nmut = 3;
	pthread_t mut[ST_MAX_MUTATORS], ld, ck;
	struct dev d = { .fd = -1 };
	int rc = 0, i, e, started = 0;
	bool preload_ok = true, preload_on = false;
	long numa0 = vmstat("numa_pte_updates"), numa1;
	char *buf = NULL;
	uint64_t t0;

	memset(&S, 0, sizeof(S));
	S.ssz = ST_SLOT_PAGES * PG;
	S.swap = swap_configured();
	S.base = mmap(NULL, ST_SLOTS * S.ssz, PROT_NONE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	REQ(S.base != MAP_FAILED, "mmap: %s", strerror(errno));
	for (i = 0; i < ST_SLOTS; i++) {
		pthread_mutex_init(&S.slot[i].mu, NULL);
		REQ(mmap(st_addr(i), S.ssz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == st_addr(i),
		    "mmap: %s", strerror(errno));
		pattern(st_addr(i), S.ssz, i, 0);
		S.slot[i].state = S_RW;
	}
	buf = malloc(S.ssz);
	REQ(buf, "out of memory");
	TRY(dev_open(&d));
	S.d = &d;
	S.t0 = now_ms();
	preload_ok = g_st_preload;
	if (g_st_numa && g_root && exists("/proc/sys/kernel/numa_balancing") &&
	    count_nodes() > 1 && setting_set("/proc/sys/kernel/numa_balancing", "1") == 0)
		vnote("NUMA balancing on during the run");
	note("%u s, %d mutators, seed %#llx, swap %s, preload %s, NUMA balancing %s",
	     g_stress_secs, nmut, (ull)g_seed, S.swap ? "yes" : "no",
	     g_st_preload ? "toggled" : "off", g_st_numa ? "tried" : "off");
	if (g_st_mask != (1u << SO_NR) - 1) {
		char ops[256] = "";
		size_t l = 0;

		for (i = 0; i < SO_NR; i++)
			if ((g_st_mask & (1u << i)) && l < sizeof(ops))
				l += snprintf(ops + l, sizeof(ops) - l, " %s", so_name[i]);
		note("operations:%s", ops);
	}

	for (i = 0; i < nmut; i++) {
		if (pthread_create(&mut[i], NULL, st_mutator, (void *)(uintptr_t)(i + 1)))
			FAIL("pthread_create");
		started++;
	}
	if (pthread_create(&ld, NULL, st_loader, buf))
		FAIL("pthread_create");
	started++;
	if (pthread_create(&ck, NULL, st_checker, NULL))
		FAIL("pthread_create");
	started++;

	/* Preload (update hooks load translations) on and off each second. */
	t0 = now_ms();
	while (!S.stop && now_ms() - t0 < g_stress_secs * 1000ULL) {
		sleep_ms(100);
		if (preload_ok && (now_ms() - t0) / 1000 % 2 != preload_on) {
			preload_on = !preload_on;
			e = dev_preload(&d, preload_on ? S.base : NULL,
					preload_on ? ST_SLOTS * S.ssz : 0);
			if (e < 0) {
				note("PRELOAD: %s; going on without", errname(e));
				preload_ok = false;
				preload_on = false;
			}
		}
	}
out:
	S.stop = 1;
	if (started > 0) {
		for (i = 0; i < nmut && i < started; i++)
			pthread_join(mut[i], NULL);
		if (started > nmut)
			pthread_join(ld, NULL);
		if (started > nmut + 1)
			pthread_join(ck, NULL);
	}
	if (d.fd >= 0 && preload_on)
		dev_preload(&d, NULL, 0);
	if (started) {
		char line[512];
		uint64_t ops = 0;
		size_t l = 0;

		for (i = 0; i < SO_NR; i++) {
			ops += S.ops[i];
			l += snprintf(line + l, sizeof(line) - l, "%s %s %llu",
				      i ? "," : "", so_name[i], (ull)S.ops[i]);
			if (l >= sizeof(line))
				l = sizeof(line) - 1;
		}
		note("%llu VM operations:%s", (ull)ops, line);
		note("NIC: LOAD %llu ok / %llu refused, PUT %llu / %llu, GET %llu / %llu, unexpected errors %llu; CHECK %llu times, %llu bad in flight, %llu bad when quiet",
		     (ull)S.ld_ok, (ull)S.ld_fault, (ull)S.put_ok,
		     (ull)S.put_fault, (ull)S.get_ok, (ull)S.get_fault,
		     (ull)S.unexpected, (ull)S.checks, (ull)S.transient,
		     (ull)S.bad);
		numa1 = vmstat("numa_pte_updates");
		if (numa0 >= 0 && numa1 > numa0)
			note("NUMA balancing changed %ld PTEs", numa1 - numa0);
	}
	if (rc == 0)
		rc = stress_verdict(&d);
	if (S.base && S.base != MAP_FAILED)
		munmap(S.base, ST_SLOTS * S.ssz);
	free(buf);
	dev_close(&d);
	return rc;
}

/* ------------------------------------------------------------ broken */

/* The checker must see what a NIC that ignores a hook class leaves behind. */
static int sc_broken(void)
{
	struct ioproc_test_check c1 = { 0 }, c1b = { 0 }, c2 = { 0 }, c3 = { 0 };
	struct region r = { 0 };
	struct dev d = { .fd = -1 };
	void *decoy = MAP_FAILED;
	char buf[32];
	long old;
	int rc = 0, e;
	void *q;

	if (g_nodev)
		SKIP("needs the module");
	e = read_long(SKIP_PARAM, &old);
	REQ(e == 0, "cannot read %s: %s", SKIP_PARAM, errname(e));
	if (old)
		note("skip_hooks was %ld before", old);

	/* 1. invalidate hooks ignored: munmap + mmap leaves stale entries */
	snprintf(buf, sizeof(buf), "%u", IOPROC_SKIP_INVALIDATE);
	e = setting_set(SKIP_PARAM, buf);
	REQ(e == 0, "cannot write %s: %s", SKIP_PARAM, errname(e));
	TRY(dev_open(&d));
	TRY(reg_map(&r, 8 * PG, 0));
	reg_fill(&r, 0, r.len, 111);
	TRY(load_ok(&d, r.p, r.len, true, "invalidate skipped"));
	REQ(munmap(r.p, r.len) == 0, "munmap: %s", strerror(errno));
	q = mmap(r.p, r.len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	REQ(q == r.p, "mmap: %s", strerror(errno));
	/* No PUT or GET from here on: they would go to freed pages. */
	e = dev_check(&d, NULL, 0, &c1);	/* the PTEs are gone */
	if (e == 0) {
		/*
		 * The page allocator hands the freed frames back first, most
		 * likely at the same addresses; a decoy takes them, so that
		 * the new PTEs map other frames than the stale entries.
		 */
		decoy = mmap(NULL, 64 * PG, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (decoy != MAP_FAILED)
			memset(decoy, 1, 64 * PG);
		reg_fill(&r, 0, r.len, 112);
		e = dev_check(&d, NULL, 0, &c1b);	/* other frames */
	}
	write_str(SKIP_PARAM, "0");
	dev_close(&d);
	REQ(e == 0, "CHECK: %s", errname(e));
	note("invalidate skipped, munmap + mmap: CHECK %llu stale of %llu before touching, %llu stale of %llu after",
	     (ull)c1.stale, (ull)c1.checked, (ull)c1b.stale, (ull)c1b.checked);
	REQ(c1.stale > 0, "with invalidate hooks skipped CHECK found no stale entry after munmap + mmap: the checker cannot fail");
	REQ(c1b.stale > 0, "with invalidate hooks skipped CHECK found no stale entry once the new mapping had other frames");
	reg_free(&r);

	/* 2. change_protection ignored: mprotect leaves writable entries */
	snprintf(buf, sizeof(buf), "%u", IOPROC_SKIP_PROTECTION);
	REQ(write_str(SKIP_PARAM, buf) == 0, "cannot write %s", SKIP_PARAM);
	TRY(dev_open(&d));
	TRY(reg_map(&r, 4 * PG, 0));
	reg_fill(&r, 0, r.len, 113);
	TRY(load_ok(&d, r.p, r.len, true, "protection skipped"));
	REQ(mprotect(r.p, r.len, PROT_READ) == 0, "mprotect: %s", strerror(errno));
	e = dev_check(&d, NULL, 0, &c2);
	write_str(SKIP_PARAM, "0");
	dev_close(&d);
	REQ(e == 0, "CHECK: %s", errname(e));
	note("protection skipped, mprotect(PROT_READ): CHECK %llu stale, %llu over-permissive of %llu",
	     (ull)c2.stale, (ull)c2.overperm, (ull)c2.checked);
	REQ(c2.overperm > 0, "with change_protection skipped CHECK found no over-permissive entry after mprotect(PROT_READ): the checker cannot fail");
	reg_free(&r);

	/* 3. the same through fork's COW write-protection */
	REQ(write_str(SKIP_PARAM, buf) == 0, "cannot write %s", SKIP_PARAM);
	TRY(dev_open(&d));
	TRY(reg_map(&r, 4 * PG, 0));
	reg_fill(&r, 0, r.len, 114);
	TRY(load_ok(&d, r.p, r.len, true, "protection skipped, fork"));
	e = fork_and_reap();
	if (e == 0)
		e = dev_check(&d, NULL, 0, &c3);
	write_str(SKIP_PARAM, "0");
	dev_close(&d);
	REQ(e == 0, "CHECK: %s", errname(e));
	note("protection skipped, fork: CHECK %llu stale, %llu over-permissive of %llu",
	     (ull)c3.stale, (ull)c3.overperm, (ull)c3.checked);
	REQ(c3.overperm > 0, "with change_protection skipped CHECK found no over-permissive entry after fork");

	/* 4. a NIC whose shootdown also waits for DMA parked on a fault */
	e = setting_set(WAIT_FAULTING_PARAM, "1");
	REQ(e == 0, "cannot write %s: %s", WAIT_FAULTING_PARAM, errname(e));
	{
		bool waited = false;
		long timeouts = dma_fault_case(&waited);

		write_str(WAIT_FAULTING_PARAM, "0");
		if (timeouts < 0) {
			rc = -1;
			goto out;
		}
		note("hooks waiting for faulting DMA: %ld timeouts", timeouts);
		REQ(timeouts > 0, "with wait_faulting set no hook ran out of time: the dma_fault case cannot fail");
	}
out:
	if (exists(SKIP_PARAM))
		write_str(SKIP_PARAM, "0");
	if (exists(WAIT_FAULTING_PARAM))
		write_str(WAIT_FAULTING_PARAM, "0");
	if (decoy != MAP_FAILED)
		munmap(decoy, 64 * PG);
	reg_free(&r);
	dev_close(&d);
	return rc;
}

/* ============================================================ main */

static const struct scenario {
	const char *name;
	int (*fn)(void);
	bool dflt;
	const char *help;
} scenarios[] = {
	{ "fork_cow", sc_fork_cow, true, "fork, COW in child and parent, write translations downgraded" },
	{ "munmap_mmap", sc_munmap_mmap, true, "munmap + mmap(MAP_FIXED) at the same address" },
	{ "mremap", sc_mremap, true, "mremap to a new address (pages, page tables, huge page)" },
	{ "mprotect", sc_mprotect, true, "PROT_READ, PROT_NONE and back, whole and partial" },
	{ "msync", sc_msync, true, "MAP_SHARED file, msync, writeback re-dirtying" },
	{ "pageout", sc_pageout, true, "MADV_PAGEOUT to zram swap, swap-in by GET and PUT" },
	{ "migrate", sc_migrate, true, "move_pages between nodes, MADV_SOFT_OFFLINE, compaction" },
	{ "ksm", sc_ksm, true, "KSM merge, then COW break by PUT" },
	{ "thp", sc_thp, true, "huge page fault, fork, split, zap, khugepaged collapse" },
	{ "dontneed_free", sc_dontneed_free, true, "MADV_DONTNEED; MADV_FREE then PUT under reclaim" },
	{ "hmm", sc_hmm, true, "test_hmm migrates loaded pages and zero pages to device-private memory and back" },
	{ "zap_writeback", sc_zap_writeback, true, "shared file mapping unmapped while the NIC writes and writeback runs" },
	{ "dma_fault", sc_dma_fault, true, "a hook never waits for a PUT parked on a fault in its page table" },
	{ "exit", sc_exit, true, "attached processes exiting and being killed" },
	{ "stress", sc_stress, true, "random VM operations against LOAD/PUT/CHECK" },
	{ "broken", sc_broken, false, "with skip_hooks set, CHECK must report the damage" },
};
#define NSCEN (int)(sizeof(scenarios) / sizeof(scenarios[0]))

static int g_pass, g_fail, g_skip;

static void print_hooks(void)
{
	int i;

	if (g_nodev || !g_total_valid)
		return;
	printf("# hook calls:");
	for (i = 0; i < IOPROC_HOOK_NR; i++)
		printf(" %s %llu", hook_name[i], (ull)g_total.calls[i]);
	printf("\n# translations: loads %llu, preloads %llu, faults %llu\n",
	       (ull)g_total.loads, (ull)g_total.preloads, (ull)g_total.faults);
}

static void print_summary(void)
{
	printf("%d passed, %d failed", g_pass, g_fail);
	if (g_skip)
		printf(", %d skipped", g_skip);
	printf("\n");
	fflush(stdout);
}

static void on_alarm(int sig)
{
	char buf[256];
	int n;

	(void)sig;
	n = snprintf(buf, sizeof(buf), "FAIL %s: timed out\n", g_cur);
	if (write(1, buf, n) < 0)
		(void)0;
	settings_restore();
	if (exists(SKIP_PARAM))
		write_str(SKIP_PARAM, "0");
	g_fail++;
	print_summary();
	_exit(1);
}

static void usage(FILE *f)
{
	int i;

	fprintf(f, "usage: ioproc_selftest [-t SECONDS] [-d DIR] [-w SECONDS] [-s SEED] [-v] [-l]\n"
		   "                       [-O OPS] [--with-broken] [--nodev] [SCENARIO...]\n"
		   "  -O OPS  stress only with these operations (comma list of write, mmap,\n"
		   "          mmap-none, munmap, mprotect-ro, mprotect-none, mprotect-rw,\n"
		   "          dontneed, pageout, free, mremap, fork; all; nopreload; nonuma)\n"
		   "scenarios (default: all but broken):\n");
	for (i = 0; i < NSCEN; i++)
		fprintf(f, "  %-14s %s%s\n", scenarios[i].name, scenarios[i].help,
			scenarios[i].dflt ? "" : " (only when named or --with-broken)");
}

static bool parse_uint(const char *s, unsigned *v)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(s, &end, 0);
	if (!*s || *end || errno || x > 100000)
		return false;
	*v = x;
	return true;
}

int main(int argc, char **argv)
{
	bool sel[NSCEN] = { false }, any = false, with_broken = false;
	struct sigaction sa;
	long pin_acq0, pin_rel0, pin_acq1, pin_rel1, skip;
	int i, j;

	setvbuf(stdout, NULL, _IOLBF, 0);
	PG = sysconf(_SC_PAGESIZE);
	g_root = geteuid() == 0;
	g_seed = mix64(now_ms() ^ getpid());

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-l")) {
			for (j = 0; j < NSCEN; j++)
				printf("%s\n", scenarios[j].name);
			return 0;
		} else if (!strcmp(a, "-v")) {
			g_verbose = 1;
		} else if (!strcmp(a, "--with-broken")) {
			with_broken = true;
		} else if (!strcmp(a, "--nodev")) {
			g_nodev = 1;
		} else if (!strcmp(a, "-t") || !strcmp(a, "-w")) {
			if (i + 1 >= argc ||
			    !parse_uint(argv[i + 1], a[1] == 't' ? &g_stress_secs : &g_wait_secs)) {
				fprintf(stderr, "%s wants a number of seconds\n", a);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "-O")) {
			char *list, *tok, *save = NULL;

			if (i + 1 >= argc) {
				fprintf(stderr, "-O wants a list of stress operations\n");
				return 2;
			}
			list = strdup(argv[++i]);
			g_st_mask = 0;
			for (tok = strtok_r(list, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (!strcmp(tok, "nopreload")) {
					g_st_preload = false;
					continue;
				}
				if (!strcmp(tok, "nonuma")) {
					g_st_numa = false;
					continue;
				}
				if (!strcmp(tok, "all")) {
					g_st_mask = (1u << SO_NR) - 1;
					continue;
				}
				for (j = 0; j < SO_NR; j++)
					if (!strcmp(tok, so_name[j]))
						break;
				if (j == SO_NR) {
					fprintf(stderr, "unknown stress operation %s\n", tok);
					return 2;
				}
				g_st_mask |= 1u << j;
			}
			free(list);
			if (!g_st_mask)
				g_st_mask = (1u << SO_NR) - 1;
		} else if (!strcmp(a, "-d")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "-d wants a directory\n");
				return 2;
			}
			g_fsdir = argv[++i];
		} else if (!strcmp(a, "-s")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "-s wants a number\n");
				return 2;
			}
			g_seed = strtoull(argv[++i], NULL, 0);
		} else if (a[0] == '-') {
			fprintf(stderr, "unknown option %s\n", a);
			usage(stderr);
			return 2;
		} else {
			for (j = 0; j < NSCEN; j++)
				if (!strcmp(a, scenarios[j].name))
					break;
			if (j == NSCEN) {
				fprintf(stderr, "unknown scenario %s\n", a);
				usage(stderr);
				return 2;
			}
			sel[j] = any = true;
		}
	}
	if (!any)
		for (j = 0; j < NSCEN; j++)
			sel[j] = scenarios[j].dflt ||
				 (with_broken && !strcmp(scenarios[j].name, "broken"));
	else if (with_broken)
		for (j = 0; j < NSCEN; j++)
			if (!strcmp(scenarios[j].name, "broken"))
				sel[j] = true;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	atexit(settings_restore);
	kmsg_open();

	if (!g_root)
		printf("# not root: scenarios needing root will skip parts\n");
	if (g_kmsg < 0)
		printf("# cannot read /dev/kmsg (%s): kernel log not checked\n",
		       strerror(errno));
	if (g_nodev)
		printf("# --nodev: no module; CHECK and hook counts are NOT tested\n");
	if (read_long(SKIP_PARAM, &skip) == 0 && skip)
		printf("# WARNING: skip_hooks is %ld: the module ignores hooks\n", skip);
	pin_acq0 = vmstat("nr_foll_pin_acquired");
	pin_rel0 = vmstat("nr_foll_pin_released");

	/* broken runs last whatever the order on the command line */
	for (i = 0; i < NSCEN; i++) {
		const struct scenario *s = &scenarios[i];
		char kline[512] = "";
		int rc, bad;

		if (!sel[i])
			continue;
		g_cur = s->name;
		g_why[0] = 0;
		kmsg_scan(NULL, 0);	/* forget older records */
		alarm(!strcmp(s->name, "stress") ? g_stress_secs + 300 :
		      4 * g_wait_secs + 300);
		rc = s->fn();
		alarm(0);
		settings_restore();
		bad = kmsg_scan(kline, sizeof(kline));
		if (bad && rc >= 0) {
			g_why[0] = 0;
			why("the kernel logged %d problem line(s): %s", bad, kline);
			rc = -1;
		}
		if (rc == 0) {
			printf("ok %s\n", s->name);
			g_pass++;
		} else if (rc > 0) {
			printf("skip %s: %s\n", s->name, g_why);
			g_skip++;
		} else {
			printf("FAIL %s: %s\n", s->name, g_why[0] ? g_why : "(no reason)");
			g_fail++;
		}
		fflush(stdout);
	}
	g_cur = "summary";
	print_hooks();
	pin_acq1 = vmstat("nr_foll_pin_acquired");
	pin_rel1 = vmstat("nr_foll_pin_released");
	if (pin_acq0 >= 0 && pin_rel0 >= 0)
		printf("# FOLL_PIN pins taken %ld, released %ld during the run (outstanding now %ld)\n",
		       pin_acq1 - pin_acq0, pin_rel1 - pin_rel0, pin_acq1 - pin_rel1);
	print_summary();
	return g_fail ? 1 : 0;
}
