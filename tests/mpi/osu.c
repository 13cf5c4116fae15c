/* Shared parts of the OSU-style microbenchmarks (see osu.h). */
#include "osu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define LARGE 8192

static void usage(const struct osu *o, const char *prog)
{
	if (mt_rank == 0)
		fprintf(stderr, "usage: %s [-m [MIN:]MAX] [-i ITERS] [-x WARMUP]%s%s%s%s\n"
			"  sizes %zu:%zu, %d iterations (fewer above 8 KiB), %d warmup\n",
			prog, o->window ? " [-W WINDOW]" : "", o->window && !o->sync ? " [-T MS]" : "",
			o->window ? " [-M]" : "",
			o->sync ? " [-s flush|lock|fence|pscw] [-w allocate|create|dynamic] [-R REGIONS]" : "",
			o->min, o->max, o->iters, o->warmup);
}

void osu_init(struct osu *o, int *argc, char ***argv, int min_ranks)
{
	const char *prog = (*argv)[0];
	char *colon;
	int c, bad = 0, help = 0;

	mt_init(argc, argv);
	while ((c = getopt(*argc, *argv, "m:i:x:W:T:s:w:R:Mh")) != -1) {
		switch (c) {
		case 'm':
			colon = strchr(optarg, ':');
			if (colon) {
				*colon = 0;
				o->min = mt_parse_size(optarg);
				o->max = mt_parse_size(colon + 1);
			} else {
				o->max = mt_parse_size(optarg);
			}
			break;
		case 'i': o->iters = atoi(optarg); break;
		case 'x': o->warmup = atoi(optarg); break;
		case 'W': o->window = atoi(optarg); bad |= !o->window; break;
		case 'T': o->min_ms = atoi(optarg); bad |= o->min_ms < 0; break;
		case 's':
			o->sync = optarg;
			bad |= strcmp(optarg, "flush") && strcmp(optarg, "lock") && strcmp(optarg, "fence") &&
			       strcmp(optarg, "pscw");
			break;
		case 'w':
			o->win = optarg;
			bad |= !o->sync || (strcmp(optarg, "allocate") && strcmp(optarg, "create") &&
				       strcmp(optarg, "dynamic"));
			break;
		case 'R': o->regions = atoi(optarg); bad |= !o->sync || o->regions < 1; break;
		case 'M': o->remap = 1; bad |= !o->window; break;
		case 'h': help = 1; break;
		default: bad = 1;
		}
	}
	bad |= o->min > o->max || o->iters < 1 || o->warmup < 0 ||
	       (o->regions > 1 && (!o->win || strcmp(o->win, "dynamic")));
	if (help || bad || mt_size < min_ranks) {
		usage(o, prog);
		if (mt_size < min_ranks && mt_rank == 0)
			fprintf(stderr, "%s needs at least %d ranks\n", prog, min_ranks);
		MPI_Finalize();
		exit(help ? 0 : 2);
	}
	if (mt_rank == 0) {
		printf("# %s (Elan tests/mpi, OSU-style)\n", o->title);
		printf("# %d ranks%s%s", mt_size, o->sync ? ", synchronization " : "", o->sync ? o->sync : "");
		if (o->win)
			printf(", %s window", o->win);
		if (o->regions > 1)
			printf(", %d regions attached per rank", o->regions);
		if (o->remap)
			printf(", buffers re-mapped between iterations");
		printf("\n");
		printf("# %-8s%20s\n", "Size", o->column);
	}
}

static int scaled(int n, size_t size, int least)
{
	size_t v = size <= LARGE ? (size_t)n : (size_t)n * LARGE / size;

	return v < (size_t)least ? least : (int)v;
}

int osu_iters(const struct osu *o, size_t size) { return scaled(o->iters, size, 4); }
int osu_warmup(const struct osu *o, size_t size) { return o->warmup ? scaled(o->warmup, size, 1) : 0; }

int osu_window_iters(const struct osu *o, size_t size)
{
	int n = osu_iters(o, size);

	return size > 8192 ? (n + 3) / 4 : n;
}

int osu_rounds(const struct osu *o, int n, double warm_secs, int warm)
{
	int rounds = n;

	if (mt_rank == 0 && o->min_ms > 0 && warm > 0 && warm_secs > 0) {
		double want = o->min_ms / 1e3 / (warm_secs / warm);

		if (want > 64.0 * n)
			want = 64.0 * n;
		if (want > rounds)
			rounds = (int)want + 1;
	}
	MPI_Bcast(&rounds, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return rounds;
}

void osu_row(size_t size, double value)
{
	if (mt_rank == 0)
		printf("%-10zu%20.2f\n", size, value);
}

static size_t buffer_len(const struct osu *o)
{
	size_t len = o->max < 8 ? 8 : o->max;

	return o->remap ? (len + 4095) & ~(size_t)4095 : len;
}

void *osu_buffer(const struct osu *o)
{
	void *p;
	size_t len = buffer_len(o);

	if (o->remap) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		MT_CHECK(p != MAP_FAILED, "mmap(%zu) failed", len);
	} else {
		MT_CHECK(posix_memalign(&p, 4096, len) == 0, "posix_memalign(%zu) failed", len);
	}
	memset(p, 'a' + mt_rank % 26, len);
	return p;
}

void osu_free(const struct osu *o, void *p)
{
	if (o->remap)
		munmap(p, buffer_len(o));
	else
		free(p);
}

void osu_remap(const struct osu *o, void *p)
{
	size_t len = buffer_len(o);
	void *q;

	if (!o->remap)
		return;
	MT_CHECK(munmap(p, len) == 0, "munmap(%zu) failed", len);
	/* never over a mapping the library made meanwhile */
	q = mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	MT_CHECK(q == p, "mmap at %p again failed", p);
	memset(p, 'a' + mt_rank % 26, len);
}
