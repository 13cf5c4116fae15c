/* The one-sided OSU-style benchmarks, one source built six ways:
 *
 *   osu_put_latency  -DRMA_OP=RMA_PUT            (sizes 0..4 MiB)
 *   osu_get_latency  -DRMA_OP=RMA_GET
 *   osu_acc_latency  -DRMA_OP=RMA_ACC            (MPI_Accumulate SUM, uint8)
 *   osu_fop_latency  -DRMA_OP=RMA_FOP            (MPI_Fetch_and_op SUM, 8 B)
 *   osu_put_bw       -DRMA_OP=RMA_PUT -DRMA_BW   (a window of puts, MB/s)
 *   osu_get_bw       -DRMA_OP=RMA_GET -DRMA_BW
 *
 * Rank 0 is the origin, rank 1 the target, window from MPI_Win_allocate
 * (-w allocate), MPI_Win_create of a malloc'd buffer (-w create) or
 * MPI_Win_create_dynamic with a malloc'd buffer attached (-w dynamic;
 * displacements are the target's addresses; -R N attaches N - 1 more
 * regions of 4000 B from MPI_Alloc_mem on every rank, half before the
 * buffer and half after: the target's table holds N regions).
 * -s flush (default): one lock, each operation (or window) flushed;
 * lock: lock/unlock around each; fence and pscw: both ranks take turns
 * as origin, as OSU does, and the latency is per turn.  -M (bw only, with
 * flush or lock): the origin's buffer re-mapped after each window. */
#include "osu.h"

#include <stdlib.h>
#include <string.h>

enum { RMA_PUT, RMA_GET, RMA_ACC, RMA_FOP };

#ifndef RMA_OP
#error define RMA_OP
#endif
#ifdef RMA_BW
#define BW 1
#else
#define BW 0
#endif

static const char *const titles[2][4] = {
	{ "OSU MPI_Put Latency Test", "OSU MPI_Get Latency Test", "OSU MPI_Accumulate latency Test",
	  "OSU MPI_Fetch_and_op latency Test" },
	{ "OSU MPI_Put Bandwidth Test", "OSU MPI_Get Bandwidth Test", "", "" },
};

static MPI_Aint disp;		/* the peer's window base: 0, or its address (dynamic) */

static void op(void *buf, void *res, size_t size, MPI_Win win)
{
	static const int64_t one = 1;

	switch (RMA_OP) {
	case RMA_PUT: MPI_Put(buf, size, MPI_CHAR, 1 - mt_rank, disp, size, MPI_CHAR, win); break;
	case RMA_GET: MPI_Get(buf, size, MPI_CHAR, 1 - mt_rank, disp, size, MPI_CHAR, win); break;
	case RMA_ACC: MPI_Accumulate(buf, size, MPI_UINT8_T, 1 - mt_rank, disp, size, MPI_UINT8_T, MPI_SUM, win); break;
	case RMA_FOP: MPI_Fetch_and_op(&one, res, MPI_INT64_T, 1 - mt_rank, disp, MPI_SUM, win); break;
	}
}

int main(int argc, char **argv)
{
	struct osu o = { .title = titles[BW][RMA_OP], .column = BW ? "Bandwidth (MB/s)" : "Latency (us)",
			 .min = RMA_OP == RMA_FOP ? 8 : BW ? 1 : 0, .max = RMA_OP == RMA_FOP ? 8 : 4 << 20,
			 .iters = BW ? 20 : 200, .warmup = BW ? 2 : 20, .window = BW ? 64 : 0, .sync = "flush",
			 .win = "allocate", .regions = 1 };
	char *buf, *res, *winmem, **extra = NULL;
	size_t wsize;			/* the window's bytes */
	MPI_Group world, peer;
	MPI_Win win;
	int other;

	osu_init(&o, &argc, &argv, 2);
	if (RMA_OP == RMA_FOP)          /* one 8-byte operation: no sweep */
		o.min = o.max = 8;
	if (o.remap && strcmp(o.sync, "flush") && strcmp(o.sync, "lock"))
		mt_fail("-M re-maps the origin's buffer with -s flush or lock only");
	buf = osu_buffer(&o);
	res = osu_buffer(&o);
	wsize = o.max < 8 ? 8 : o.max;
	if (!strcmp(o.win, "dynamic")) {
		MPI_Aint mine;

		/* a page more than used: Open MPI 4.1.4's osc rdma refuses
		 * (MPI_ERR_RMA_RANGE) an access that ends where an attached
		 * region ends */
		size_t len = wsize + 4096;

		extra = calloc(o.regions, sizeof(*extra));
		if (!extra)
			mt_fail("calloc of the regions");
		MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
		for (int i = 0; i < o.regions - 1; i++) {
			if (i == (o.regions - 1) / 2)
				winmem = malloc(len);   /* the measured one, amid the others */
			MPI_Alloc_mem(4000, MPI_INFO_NULL, &extra[i]);
			if (MPI_Win_attach(win, extra[i], 4000) != MPI_SUCCESS)
				mt_fail("MPI_Win_attach of region %d of %d", i + 1, o.regions);
		}
		if (o.regions == 1)
			winmem = malloc(len);
		if (!winmem)
			mt_fail("malloc of the window");
		MPI_Win_attach(win, winmem, (MPI_Aint)len);
		MPI_Get_address(winmem, &mine);
		if (mt_rank < 2)	/* ranks 0 and 1 reach each other's */
			MPI_Sendrecv(&mine, 1, MPI_AINT, 1 - mt_rank, 0, &disp, 1,
				     MPI_AINT, 1 - mt_rank, 0, MPI_COMM_WORLD,
				     MPI_STATUS_IGNORE);
	} else if (!strcmp(o.win, "create")) {
		winmem = malloc(wsize);
		if (!winmem)
			mt_fail("malloc of the window");
		MPI_Win_create(winmem, wsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	} else {
		MPI_Win_allocate(wsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &winmem, &win);
	}
	memset(winmem, 0, wsize);
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	other = 1 - mt_rank;
	MPI_Group_incl(world, mt_rank < 2 ? 1 : 0, &other, &peer);
	MPI_Barrier(MPI_COMM_WORLD);

	OSU_SIZES(&o, size) {
		int n = BW ? osu_window_iters(&o, size) : osu_iters(&o, size);
		int w = osu_warmup(&o, size), per = BW ? o.window : 1;
		double t0 = 0, t = 0;
		const char *s = o.sync;

		MPI_Barrier(MPI_COMM_WORLD);
		if (mt_rank < 2 && (!strcmp(s, "flush") || !strcmp(s, "lock"))) {
			if (mt_rank == 0) {
				if (!strcmp(s, "flush"))
					MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
				for (int i = 0; i < n + w; i++) {
					if (i == w)
						t0 = MPI_Wtime();
					if (!strcmp(s, "lock"))
						MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
					for (int j = 0; j < per; j++)
						op(buf, res, size, win);
					if (!strcmp(s, "lock"))
						MPI_Win_unlock(1, win);
					else
						MPI_Win_flush(1, win);
					osu_remap(&o, buf);	/* -M */
				}
				t = MPI_Wtime() - t0;
				if (!strcmp(s, "flush"))
					MPI_Win_unlock(1, win);
			}
		} else if (mt_rank < 2 && !strcmp(s, "fence")) {
			MPI_Win_fence(0, win);
			for (int i = 0; i < n + w; i++) {
				if (i == w)
					t0 = MPI_Wtime();
				for (int turn = 0; turn < 2; turn++) {
					if (turn == mt_rank)
						for (int j = 0; j < per; j++)
							op(buf, res, size, win);
					MPI_Win_fence(0, win);
				}
			}
			t = (MPI_Wtime() - t0) / 2;
		} else if (mt_rank < 2) {       /* pscw */
			for (int i = 0; i < n + w; i++) {
				if (i == w)
					t0 = MPI_Wtime();
				for (int turn = 0; turn < 2; turn++) {
					if (turn == mt_rank) {
						MPI_Win_start(peer, 0, win);
						for (int j = 0; j < per; j++)
							op(buf, res, size, win);
						MPI_Win_complete(win);
					} else {
						MPI_Win_post(peer, 0, win);
						MPI_Win_wait(win);
					}
				}
			}
			t = (MPI_Wtime() - t0) / 2;
		} else {
			t = 0;
		}
		/* fence is collective over the window's group: idle ranks join */
		if (mt_rank >= 2 && !strcmp(s, "fence"))
			for (int i = 0; i < 2 * (n + w) + 1; i++)
				MPI_Win_fence(0, win);
		if (BW)
			osu_row(size, (double)size * per * n / t / 1e6);
		else
			osu_row(size, t * 1e6 / n);
	}
	MPI_Group_free(&peer);
	MPI_Group_free(&world);
	if (!strcmp(o.win, "dynamic")) {
		/* the origin may still be reaching into the region */
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Win_detach(win, winmem);
		for (int i = 0; i < o.regions - 1; i++) {
			MPI_Win_detach(win, extra[i]);
			MPI_Free_mem(extra[i]);
		}
		free(extra);
	}
	MPI_Win_free(&win);
	if (strcmp(o.win, "allocate"))	/* ours, not MPI's */
		free(winmem);
	osu_free(&o, buf);
	osu_free(&o, res);
	MPI_Finalize();
	return 0;
}
