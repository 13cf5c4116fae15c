// SPDX-License-Identifier: GPL-2.0
/*
 * ioproc_bench: what the IOPROC hooks cost the CPU's own paths, and what a
 * NIC translation fault costs, measured with ioproc_test.ko in the guest.
 *
 * Each row runs the same work without a registered ioproc_ops and with
 * one (the pretend NIC holding translations for the whole buffer), side by
 * side in one run, and prints both and their ratio.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ioproc_test.h"

#define PAGE 4096UL

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static char *map(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static void load(int fd, char *p, size_t len, int write)
{
	struct ioproc_test_range r = {
		.addr = (unsigned long)p, .len = len, .write = write,
	};

	if (ioctl(fd, IOPROC_TEST_LOAD, &r))
		die("IOPROC_TEST_LOAD");
}

/* Microseconds per page for one phase of the work below. */
struct phase {
	double fault, load, mprotect, munmap;
};

/*
 * Touch every page (CPU faults), load NIC translations for all (NIC
 * faults on present pages), write-protect the range, unmap it.  Without
 * nic_load the NIC holds no translations: only the hooks' own cost shows.
 */
static struct phase run(int fd, size_t len, int rounds, int nic_load)
{
	struct phase ph = { 0 };
	size_t pages = len / PAGE, i;
	int r;

	for (r = 0; r < rounds; r++) {
		char *p = map(len);
		double t;

		t = now();
		for (i = 0; i < len; i += PAGE)
			p[i] = 1;
		ph.fault += now() - t;
		if (nic_load) {
			t = now();
			load(fd, p, len, 1);
			ph.load += now() - t;
		}
		t = now();
		if (mprotect(p, len, PROT_READ))
			die("mprotect");
		ph.mprotect += now() - t;
		t = now();
		if (munmap(p, len))
			die("munmap");
		ph.munmap += now() - t;
	}
	ph.fault *= 1e6 / (pages * rounds);
	ph.load *= 1e6 / (pages * rounds);
	ph.mprotect *= 1e6 / (pages * rounds);
	ph.munmap *= 1e6 / (pages * rounds);
	return ph;
}

static void row(const char *name, double base, double idle, double hooked)
{
	printf("%-32s %10.3f %10.3f %10.3f %8.2fx\n", name, base, idle,
	       hooked, base > 0 ? hooked / base : 0);
}

int main(int argc, char **argv)
{
	size_t len = (argc > 1 ? strtoul(argv[1], NULL, 0) : 32) << 20;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	struct ioproc_test_stats st;
	struct phase base, idle, hooked;
	int fd;

	fd = open(IOPROC_TEST_DEV, O_RDWR);
	if (fd < 0)
		die(IOPROC_TEST_DEV);

	/* Warm up, then the baseline before attaching: no hooks at all. */
	run(fd, len, 1, 0);
	base = run(fd, len, rounds, 0);
	if (ioctl(fd, IOPROC_TEST_ATTACH))
		die("IOPROC_TEST_ATTACH");
	idle = run(fd, len, rounds, 0);
	hooked = run(fd, len, rounds, 1);
	if (ioctl(fd, IOPROC_TEST_STATS, &st))
		die("IOPROC_TEST_STATS");

	printf("IOPROC cost, %zu MiB x %d rounds, microseconds per 4 KiB page\n",
	       len >> 20, rounds);
	printf("%-32s %10s %10s %10s %9s\n", "operation", "no ioproc",
	       "hooks", "hooks+NIC", "ratio");
	row("CPU write fault (update)", base.fault, idle.fault, hooked.fault);
	row("mprotect RO (change_prot)", base.mprotect, idle.mprotect,
	    hooked.mprotect);
	row("munmap (invalidate)", base.munmap, idle.munmap, hooked.munmap);
	printf("%-32s %10s %10s %10.3f\n", "NIC fault, page present", "-", "-",
	       hooked.load);
	printf("(hooks: ioproc_ops registered, NIC holds no translation; hooks+NIC: it holds one per page; ratio: hooks+NIC / no ioproc)\n");
	printf("hook calls: invalidate_range %llu, change_protection %llu, update_page %llu; translations loaded %llu, entries left %llu\n",
	       (unsigned long long)st.calls[IOPROC_HOOK_INVALIDATE_RANGE],
	       (unsigned long long)st.calls[IOPROC_HOOK_CHANGE_PROTECTION],
	       (unsigned long long)st.calls[IOPROC_HOOK_UPDATE_PAGE],
	       (unsigned long long)st.loads,
	       (unsigned long long)st.entries);
	close(fd);
	return st.entries == 0 ? 0 : 1;
}
