/* Buffer churn subtests of mpi_suite: the cases a pinning registration
 * cache gets wrong.  A transfer from/into a buffer (which a caching
 * transport would register), then an event that changes what memory is
 * behind the same virtual address, then transfers again from/into the
 * same address: they must move the memory the process sees now.
 *
 *   malloc    free + malloc of the same size (large ones come back at
 *             the same address from mmap)
 *   mmap      munmap + mmap MAP_FIXED at the same address, new content
 *   fork      a child writes the buffer and exits; the parent's buffer
 *             (untouched, COW-shared meanwhile) is then sent/received
 *   mprotect  PROT_NONE and back, then new content; and a send from a
 *             buffer that is read-only during the send
 *   dontneed  MADV_DONTNEED: the pages read back as zeros, which is what
 *             must arrive; then new content
 *
 * Both ranks of each pair churn their own buffer, in both directions,
 * at eager and rendezvous sizes; every transfer is checked byte for byte.
 *
 * Broken variant (MPITEST_CORRUPT): after the event the sender sends
 * what a stale registration would: the memory from before the event
 * (for fork, the child's copy).  The receiver must notice. */
#include "suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum content { FILL, KEEP, ZERO };

struct cbuf {
	uint8_t *p;
	size_t len;             /* bytes transferred */
	size_t maplen;          /* page-rounded */
	int use_malloc;
};

static size_t page_round(size_t n)
{
	size_t pg = sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

static void cbuf_alloc(struct cbuf *b, size_t len, int use_malloc)
{
	b->len = len;
	b->maplen = page_round(len);
	b->use_malloc = use_malloc;
	if (use_malloc) {
		b->p = mt_alloc(len);
	} else {
		b->p = mmap(NULL, b->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		MT_CHECK(b->p != MAP_FAILED, "mmap of %zu bytes failed", b->maplen);
	}
}

static void cbuf_free(struct cbuf *b)
{
	if (b->use_malloc)
		free(b->p);
	else
		munmap(b->p, b->maplen);
}

/* The events: change what is behind b->p; return what it now holds. */
static enum content ev_malloc(struct cbuf *b)
{
	free(b->p);
	b->p = mt_alloc(b->len);
	return FILL;
}

static enum content ev_mmap(struct cbuf *b)
{
	void *at = b->p;

	MT_CHECK(munmap(at, b->maplen) == 0, "munmap failed");
	b->p = mmap(at, b->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	MT_CHECK(b->p == at, "mmap MAP_FIXED at %p gave %p", at, (void *)b->p);
	return FILL;
}

static enum content ev_fork(struct cbuf *b)
{
	int status;
	pid_t pid = fork();

	MT_CHECK(pid >= 0, "fork failed");
	if (pid == 0) {         /* the child: its own copy, new content, gone */
		memset(b->p, 0xc5, b->len);
		_exit(0);
	}
	MT_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "forked child did not exit cleanly");
	return KEEP;
}

static enum content ev_mprotect(struct cbuf *b)
{
	MT_CHECK(mprotect(b->p, b->maplen, PROT_NONE) == 0, "mprotect PROT_NONE failed");
	MT_CHECK(mprotect(b->p, b->maplen, PROT_READ | PROT_WRITE) == 0, "mprotect back to read-write failed");
	return FILL;
}

static enum content ev_dontneed(struct cbuf *b)
{
	MT_CHECK(madvise(b->p, b->maplen, MADV_DONTNEED) == 0, "madvise MADV_DONTNEED failed");
	mt_check_const(b->p, b->len, 0, "the buffer itself after MADV_DONTNEED");
	return ZERO;
}

/* One transfer from the sender's buffer into the receiver's: the sender
 * fills it first (FILL) or sends what it holds (KEEP: pattern SEED is
 * still there; ZERO: zeros).  With READONLY the sender's buffer is
 * read-only during the send. */
static void xfer(struct cbuf *b, int peer, int sending, enum content c, uint32_t seed, int readonly,
		 const void *stale, const char *what)
{
	char w[192];

	if (sending) {
		if (c == FILL)
			mt_fill(b->p, b->len, seed);
		if (readonly)
			MT_CHECK(mprotect(b->p, b->maplen, PROT_READ) == 0, "mprotect PROT_READ failed");
		MT_MPI(MPI_Send(stale ? stale : b->p, b->len, MPI_BYTE, peer, 0, MPI_COMM_WORLD));
		if (readonly)
			MT_CHECK(mprotect(b->p, b->maplen, PROT_READ | PROT_WRITE) == 0, "mprotect back failed");
	} else {
		MT_MPI(MPI_Recv(b->p, b->len, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		snprintf(w, sizeof(w), "%s, %zu bytes received from rank %d", what, b->len, peer);
		if (c == ZERO)
			mt_check_const(b->p, b->len, 0, w);
		else
			mt_check(b->p, b->len, seed, w);
	}
}

static void churn(enum content (*event)(struct cbuf *), const char *name, int use_malloc, int readonly_round)
{
	static const size_t sizes[] = { 4093, 65539, (1 << 20) + 5 };
	int peer = pair_peer();
	char what[128];

	if (peer < 0)
		return;
	mt_broken_by_test();
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int dir = 0; dir < 2; dir++) {
			int sending = (mt_rank < peer) == (dir == 0);
			uint32_t seed = 60000 + s * 16 + dir * 4;
			struct cbuf b;
			enum content c;
			uint8_t *stale;

			cbuf_alloc(&b, sizes[s], use_malloc);
			stale = mt_broken() ? mt_alloc(sizes[s]) : NULL;
			snprintf(what, sizeof(what), "before %s", name);
			xfer(&b, peer, sending, FILL, seed, 0, NULL, what);
			if (stale)
				memcpy(stale, b.p, b.len);
			c = event(&b);
			if (stale && c == KEEP)
				memset(stale, 0xc5, b.len);
			snprintf(what, sizeof(what), "after %s (%s)", name,
				 c == KEEP ? "parent's own data" : c == ZERO ? "zeros expected" : "new data");
			xfer(&b, peer, sending, c, c == KEEP ? seed : seed + 1, 0, stale, what);
			snprintf(what, sizeof(what), "after %s, new data again", name);
			xfer(&b, peer, sending, FILL, seed + 2, 0, NULL, what);
			if (readonly_round) {
				snprintf(what, sizeof(what), "after %s, sent from a read-only buffer", name);
				xfer(&b, peer, sending, KEEP, seed + 2, 1, NULL, what);
			}
			cbuf_free(&b);
			free(stale);
		}
	suite_note("4 KiB..1 MiB, both directions, transfer / %s / transfer x2", name);
}

void churn_malloc(void) { churn(ev_malloc, "free+malloc", 1, 0); }
void churn_mmap(void) { churn(ev_mmap, "munmap+mmap at the same address", 0, 0); }
void churn_fork(void) { churn(ev_fork, "fork (child writes, exits)", 0, 0); }
void churn_mprotect(void) { churn(ev_mprotect, "mprotect none+rw", 0, 1); }
void churn_dontneed(void) { churn(ev_dontneed, "MADV_DONTNEED", 0, 0); }
