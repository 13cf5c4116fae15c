/* soak -P BYTES [-n ROUNDS]: a bandwidth run under memory pressure.
 *
 * Ranks pair up (0,1), (2,3), ...; each rank has a send buffer and a
 * receive buffer of BYTES and window memory of twice that (mmap'd): a
 * working set of four times BYTES.  Started inside a cgroup whose
 * memory.max is well below that (tests/soak/setup-in-guest.sh), the
 * kernel swaps these buffers to zram while the NIC moves them.  Each
 * round both ranks of a pair at once: fill the get half of the window,
 * then the send buffer; exchange BYTES (send/receive: the rendezvous
 * protocol, RDMA), put BYTES into the peer's put half under an
 * exclusive lock, get BYTES from the peer's get half (filled first, so
 * swapped out by now) under a shared lock; every byte is checked.
 *
 * Per rank it prints, for each round, the MB/s of the transfers and
 * the node's swap-ins and swap-outs (/proc/vmstat pswpin, pswpout) during
 * them, and at the end one line
 *   pressure: rank R on HOST: N rounds, B bytes checked, during transfers pswpin +I pswpout +O, ...
 * that tests/soak/check reads.  MPITEST_CORRUPT=pressure flips a byte. */
#include "soak.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPI counts are ints: large transfers go in pieces. */
#define PIECE (1 << 30)

struct swapped {
	long long in, out;
};

static void swap_now(struct swapped *s)
{
	s->in = soak_vmstat("pswpin");
	s->out = soak_vmstat("pswpout");
}

/* This process's cgroup v2 file NAME ("memory.events" ...), a value in it. */
static long long cgroup_value(const char *file, const char *key)
{
	char path[640], line[512];
	FILE *f = fopen("/proc/self/cgroup", "r");
	long long v = -1;

	if (!f)
		return -1;
	path[0] = 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/%s", line + 3, file);
		}
	fclose(f);
	f = path[0] ? fopen(path, "r") : NULL;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char k[128];
		long long x;

		if (!key && sscanf(line, "%lld", &x) == 1)
			v = x;
		else if (key && sscanf(line, "%127s %lld", k, &x) == 2 && !strcmp(k, key))
			v = x;
	}
	fclose(f);
	return v;
}

/* Both ranks of a pair at once: send BUF, receive into RBUF. */
static void exchange(uint8_t *buf, uint8_t *rbuf, size_t len, int peer)
{
	MPI_Request req[2];

	for (size_t at = 0; at < len; at += PIECE) {
		int n = len - at < PIECE ? (int)(len - at) : PIECE;

		MT_MPI(MPI_Irecv(rbuf + at, n, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &req[0]));
		MT_MPI(MPI_Isend(buf + at, n, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &req[1]));
		MT_MPI(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
	}
}

/* A put of BUF to, or a get into BUF from, the peer's window at DISP. */
static void xfer_rma(uint8_t *buf, size_t len, int peer, MPI_Aint disp, int put, MPI_Win win)
{
	MT_MPI(MPI_Win_lock(put ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, peer, 0, win));
	for (size_t at = 0; at < len; at += PIECE) {
		int n = len - at < PIECE ? (int)(len - at) : PIECE;

		if (put)
			MT_MPI(MPI_Put(buf + at, n, MPI_BYTE, peer, disp + at, n, MPI_BYTE, win));
		else
			MT_MPI(MPI_Get(buf + at, n, MPI_BYTE, peer, disp + at, n, MPI_BYTE, win));
	}
	MT_MPI(MPI_Win_unlock(peer, win));
}

/* Transfers (between two barriers) with the node's swap counts around them. */
struct phase {
	double secs;
	struct swapped sw;
};

static void phase_begin(struct swapped *a, double *t0)
{
	MPI_Barrier(MPI_COMM_WORLD);
	swap_now(a);
	*t0 = MPI_Wtime();
}

static void phase_end(struct phase *ph, const struct swapped *a, double t0)
{
	struct swapped b;

	MPI_Barrier(MPI_COMM_WORLD);    /* the peer's transfers into me are complete too */
	ph->secs += MPI_Wtime() - t0;
	swap_now(&b);
	ph->sw.in += b.in - a->in;
	ph->sw.out += b.out - a->out;
}

void soak_pressure(size_t size, int rounds)
{
	struct sbuf sendb, recvb, winb;
	struct swapped s0, a, end;
	struct phase ph = { 0, { 0, 0 } };
	unsigned long long checked = 0;
	long long swap_peak = 0, v;
	int peer = mt_rank ^ 1, r;
	double t0;
	char what[256], line[1024];
	MPI_Win win;

	MT_CHECK(mt_size % 2 == 0, "soak -P pairs the ranks: run an even number of them");
	mt_begin("pressure");
	/* what MPI itself uses: the limit must leave room for it */
	printf("pressure: rank %d on %s: memory.current %lld KiB after MPI_Init\n", mt_rank, mt_host,
	       cgroup_value("memory.current", NULL) / 1024);
	soak_buf_init(&sendb, "send buffer", size, 0);
	soak_buf_init(&recvb, "receive buffer", size, 0);
	/* the put half, then the get half */
	soak_buf_init(&winb, "window memory", 2 * size, 0);
	MT_MPI(MPI_Win_create(winb.p, 2 * size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	if (mt_rank == 0)
		printf("pressure: %d ranks, buffers of %zu bytes (4 per rank), %d rounds; memory.max %lld, memory.swap.max %lld\n",
		       mt_size, size, rounds, cgroup_value("memory.max", NULL),
		       cgroup_value("memory.swap.max", NULL));
	swap_now(&s0);
	for (r = 0; r < rounds; r++) {
		uint32_t me = 90000 + r * 8 + mt_rank * 64, other = 90000 + r * 8 + peer * 64;

		/* Filled first, read last: by then reclaim has swapped the
		 * get half out, and the NIC must bring it back. */
		mt_fill(winb.p + size, size, me + 2);
		mt_fill(sendb.p, size, me);

		phase_begin(&a, &t0);
		exchange(sendb.p, recvb.p, size, peer);
		phase_end(&ph, &a, t0);
		snprintf(what, sizeof(what), "round %d: %zu bytes received from rank %d", r, size, peer);
		mt_check(recvb.p, size, other, what);

		phase_begin(&a, &t0);
		xfer_rma(sendb.p, size, peer, 0, 1, win);
		phase_end(&ph, &a, t0);
		snprintf(what, sizeof(what), "round %d: window after a put of %zu bytes from rank %d", r, size,
			 peer);
		mt_check(winb.p, size, other, what);

		phase_begin(&a, &t0);
		xfer_rma(recvb.p, size, peer, size, 0, win);
		phase_end(&ph, &a, t0);
		snprintf(what, sizeof(what), "round %d: %zu bytes got from rank %d's window", r, size, peer);
		mt_check(recvb.p, size, other + 2, what);
		checked += 3 * size;

		v = cgroup_value("memory.swap.current", NULL);
		if (v > swap_peak)
			swap_peak = v;
		printf("pressure: rank %d round %d: %.2f MB/s over send, put and get, swap in use %lld KiB, pswpin %+lld pswpout %+lld so far\n",
		       mt_rank, r, ph.secs > 0 ? 3.0 * size * (r + 1) / ph.secs / 1e6 : 0.0, v / 1024,
		       ph.sw.in, ph.sw.out);
	}
	MT_MPI(MPI_Win_free(&win));
	swap_now(&end);
	soak_driver_line(line, sizeof(line));
	printf("pressure: rank %d on %s: %d rounds, %llu bytes checked, during transfers pswpin +%lld pswpout +%lld, whole run pswpin +%lld pswpout +%lld, memory.events max %lld oom_kill %lld, swap peak %lld KiB\n",
	       mt_rank, mt_host, rounds, checked, ph.sw.in, ph.sw.out, end.in - s0.in, end.out - s0.out,
	       cgroup_value("memory.events", "max"), cgroup_value("memory.events", "oom_kill"),
	       swap_peak / 1024);
	printf("pressure: rank %d on %s: driver %s\n", mt_rank, mt_host, line);
	soak_buf_free(&sendb);
	soak_buf_free(&recvb);
	soak_buf_free(&winb);
}
