/* Buffer churn of the soak program: the VM events that change what memory
 * is behind a buffer's address between two operations, the forked child
 * that checks its copy-on-write copy, and the node's counters. */
#include "soak.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

const char *const soak_event_name[EV_KINDS] = {
	[EV_MALLOC] = "malloc/free",
	[EV_MMAP] = "munmap+mmap",
	[EV_FORK] = "fork",
	[EV_MPROTECT] = "mprotect",
	[EV_PAGEOUT] = "MADV_PAGEOUT",
	[EV_DONTNEED] = "MADV_DONTNEED",
};

struct soak_vmstats soak_vm;

static size_t page_size(void)
{
	static size_t pg;

	if (!pg)
		pg = sysconf(_SC_PAGESIZE);
	return pg;
}

static void *map_anon(void *at, size_t len)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

	MT_CHECK(p != MAP_FAILED, "mmap of %zu bytes%s failed: %s", len, at ? " (MAP_FIXED)" : "",
		 strerror(errno));
	return p;
}

void soak_buf_init(struct sbuf *b, const char *name, size_t len, int use_malloc)
{
	size_t pg = page_size();

	b->name = name;
	b->len = len;
	b->maplen = (len + pg - 1) / pg * pg;
	b->is_malloc = use_malloc;
	b->readonly = 0;
	b->p = use_malloc ? mt_alloc(len) : map_anon(NULL, b->maplen);
}

void soak_buf_free(struct sbuf *b)
{
	if (b->is_malloc)
		free(b->p);
	else
		munmap(b->p, b->maplen);
	b->p = NULL;
}

/* The whole pages inside the buffer (a malloc'd one is not page aligned). */
static size_t inner_pages(const struct sbuf *b, uint8_t **start)
{
	uintptr_t pg = page_size();
	uintptr_t s = ((uintptr_t)b->p + pg - 1) & ~(pg - 1);
	uintptr_t e = ((uintptr_t)b->p + b->len) & ~(pg - 1);

	*start = (uint8_t *)s;
	return e > s ? e - s : 0;
}

int soak_event_clobbers(enum soak_event ev)
{
	return ev == EV_MALLOC || ev == EV_MMAP || ev == EV_DONTNEED;
}

static void protect(struct sbuf *b, int prot, const char *why)
{
	uint8_t *s;
	size_t n = inner_pages(b, &s);

	MT_CHECK(n == 0 || mprotect(s, n, prot) == 0, "%s: mprotect of %s failed: %s", why, b->name,
		 strerror(errno));
}

static size_t resident_pages(uint8_t *s, size_t n)
{
	size_t pg = page_size(), np = n / pg, i, res = 0;
	unsigned char *vec = mt_alloc(np + 1);

	if (np && mincore(s, n, vec) == 0)
		for (i = 0; i < np; i++)
			res += vec[i] & 1;
	free(vec);
	return res;
}

void soak_event(struct sbuf *b, enum soak_event ev, int source)
{
	uint8_t *s;
	size_t n;

	soak_vm.events[ev]++;
	switch (ev) {
	case EV_MALLOC:
		soak_buf_free(b);
		soak_buf_init(b, b->name, b->len, 1);
		break;
	case EV_MMAP:
		if (b->is_malloc) {     /* no address to keep: a fresh mapping */
			soak_buf_free(b);
			soak_buf_init(b, b->name, b->len, 0);
		} else {
			void *at = b->p;

			MT_CHECK(munmap(at, b->maplen) == 0, "munmap of %s failed", b->name);
			b->p = map_anon(at, b->maplen);
		}
		break;
	case EV_MPROTECT:
		protect(b, PROT_NONE, "PROT_NONE");
		protect(b, PROT_READ | PROT_WRITE, "back to read-write");
		if (source) {
			protect(b, PROT_READ, "read-only source");
			b->readonly = 1;
		}
		break;
	case EV_PAGEOUT:
		n = inner_pages(b, &s);
		/* EINVAL: a kernel without MADV_PAGEOUT; then it is only counted */
		if (n && madvise(s, n, MADV_PAGEOUT) == 0)
			soak_vm.pages_out += n / page_size() - resident_pages(s, n);
		break;
	case EV_DONTNEED:
		n = inner_pages(b, &s);
		MT_CHECK(n == 0 || madvise(s, n, MADV_DONTNEED) == 0, "MADV_DONTNEED of %s failed",
			 b->name);
		mt_check_const(s, n, 0, "a buffer's own pages after MADV_DONTNEED");
		break;
	case EV_FORK:
	case EV_KINDS:
		break;
	}
}

void soak_restore(struct sbuf *b)
{
	if (b->readonly)
		protect(b, PROT_READ | PROT_WRITE, "restore read-write");
	b->readonly = 0;
}

/* ---------------------------------------------------------- the child */

static pid_t child_pid;
static int child_pipe = -1;     /* the parent's write end: closing it ends the child */

/* What the child's byte I of a page it wrote holds. */
static uint8_t child_byte(size_t i) { return (uint8_t)(0xc3 ^ (i * 7)); }

/* In the child: no MPI, no stdio buffers shared with the parent. */
static void child_run(struct sbuf **bufs, int n, int rfd)
{
	size_t pg = page_size();
	uint8_t *snap[16];
	char msg[256];
	int i, len;

	for (i = 0; i < n; i++) {
		snap[i] = mmap(NULL, bufs[i]->maplen, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (snap[i] == MAP_FAILED)
			_exit(4);
		memcpy(snap[i], bufs[i]->p, bufs[i]->len);
	}
	/* every other page: the rest stays shared with the parent */
	for (i = 0; i < n; i++) {
		struct sbuf *b = bufs[i];

		if (b->readonly)
			continue;       /* mprotect'd: the child would fault */
		for (size_t o = 0; o < b->len; o += 2 * pg)
			for (size_t j = o; j < o + pg && j < b->len; j++)
				b->p[j] = child_byte(j);
	}
	/* the broken variant: a byte of a shared page changes as if the
	 * parent's transfer had reached the child's copy */
	if (getenv("MPITEST_CORRUPT") && !strcmp(getenv("MPITEST_CORRUPT"), "fork") &&
	    !bufs[0]->readonly && bufs[0]->len > pg)
		bufs[0]->p[pg + 1] ^= 0x5a;
	while (read(rfd, msg, 1) > 0)
		;
	for (i = 0; i < n; i++) {
		struct sbuf *b = bufs[i];

		for (size_t j = 0; j < b->len; j++) {
			int mine = !b->readonly && j / pg % 2 == 0;
			uint8_t want = mine ? child_byte(j) : snap[i][j];

			if (b->p[j] == want)
				continue;
			len = snprintf(msg, sizeof(msg),
				       "FAIL %s [rank %d's forked child]: its copy of %s changed at offset %zu (got 0x%02x, expected 0x%02x, %s page): the parent's transfers reached the child\n",
				       mt_test(), mt_rank, b->name, j, b->p[j], want,
				       mine ? "a child-written" : "a still shared");
			if (write(2, msg, len) < 0)
				_exit(3);
			_exit(3);
		}
	}
	_exit(0);
}

void soak_fork(struct sbuf **bufs, int n)
{
	int fds[2];

	MT_CHECK(n <= 16, "too many buffers for the fork child");
	MT_CHECK(child_pid == 0, "a forked child is still running");
	MT_CHECK(pipe(fds) == 0, "pipe failed");
	fflush(NULL);
	child_pid = fork();
	MT_CHECK(child_pid >= 0, "fork failed: %s", strerror(errno));
	if (child_pid == 0) {
		close(fds[1]);
		child_run(bufs, n, fds[0]);
	}
	close(fds[0]);
	child_pipe = fds[1];
	soak_vm.events[EV_FORK]++;
}

void soak_fork_end(void)
{
	int status;
	pid_t pid = child_pid;

	if (!pid)
		return;
	child_pid = 0;
	close(child_pipe);
	child_pipe = -1;
	MT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid of the forked child failed");
	MT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "the forked child %s %d (3: its copy changed, see its FAIL line)",
		 WIFEXITED(status) ? "exited" : "was killed by signal",
		 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/* ---------------------------------------------------------- counters */

static long long counter(const char *file, const char *name)
{
	FILE *f = fopen(file, "r");
	char key[128];
	long long v, found = 0;

	if (!f)
		return 0;
	while (fscanf(f, "%127s %lld", key, &v) == 2)
		if (!strcmp(key, name)) {
			found = v;
			break;
		}
	fclose(f);
	return found;
}

#define DRIVER_COUNTERS "/sys/kernel/debug/elan/counters"

long long soak_vmstat(const char *name) { return counter("/proc/vmstat", name); }
long long soak_driver_counter(const char *name) { return counter(DRIVER_COUNTERS, name); }

void soak_driver_line(char *out, size_t len)
{
	FILE *f = fopen(DRIVER_COUNTERS, "r");
	char key[128];
	long long v;
	size_t at = 0;

	out[0] = 0;
	if (!f) {
		snprintf(out, len, "(no %s)", DRIVER_COUNTERS);
		return;
	}
	while (fscanf(f, "%127s %lld", key, &v) == 2 && at < len)
		at += snprintf(out + at, len - at, "%s%s=%lld", at ? " " : "", key, v);
	fclose(f);
}
