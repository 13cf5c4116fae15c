// SPDX-License-Identifier: GPL-2.0
/*
 * wake_cost: what one doorbell costs on this host, the floor under the
 * NIC's small-message latency (printed by the main job beside the
 * targets).
 *
 *   wake_cost [-n ROUNDS]
 *
 * A doorbell that finds elan-nicd asleep is an eventfd write (by the
 * guest vCPU's QEMU thread) that wakes a SCHED_FIFO thread blocked in
 * epoll_wait.  This times exactly that, on the host, with no guest: from
 * the write to the woken thread running, once with both threads on one
 * CPU and once on two.  Each round lets the sleeper block for 1 ms
 * first.  Prints the median, minimum and 90th percentile in
 * microseconds, and "CSV,name,0,value,us" lines.  Without the right to
 * run SCHED_FIFO (root or CAP_SYS_NICE) it says so and times normal
 * scheduling.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

static int efd, epfd, sleeper_cpu, rt = 1;
static uint64_t woke_ns;		/* written by the sleeper */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* As elan-nicd sleeps: real-time, in epoll_wait on the doorbell. */
static void *sleeper(void *arg)
{
	struct sched_param sp = { .sched_priority = 1 };
	struct epoll_event ev;
	uint64_t v;

	(void)arg;
	pin(sleeper_cpu);
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		__atomic_store_n(&rt, 0, __ATOMIC_RELAXED);
	for (;;) {
		if (epoll_wait(epfd, &ev, 1, -1) < 1)
			continue;
		if (read(efd, &v, sizeof(v)) != sizeof(v))
			continue;
		if (v == UINT64_MAX - 1)	/* told to end */
			return NULL;
		__atomic_store_n(&woke_ns, now_ns(), __ATOMIC_RELEASE);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Time ROUNDS wake-ups of a sleeper on cpu s by a writer on cpu w. */
static int measure(const char *name, int s, int w, int rounds)
{
	struct timespec gap = { 0, 1000000 };
	uint64_t one = 1, end = UINT64_MAX - 1, t0, t1;
	struct epoll_event ev = { .events = EPOLLIN };
	double *d = calloc((size_t)rounds, sizeof(*d));
	pthread_t th;
	int i;

	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!d || efd < 0 || epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev)) {
		fprintf(stderr, "wake_cost: %s\n", strerror(errno));
		return -1;
	}
	sleeper_cpu = s;
	if (pin(w) || pthread_create(&th, NULL, sleeper, NULL)) {
		fprintf(stderr, "wake_cost: cannot run on CPUs %d and %d\n", s, w);
		return -1;
	}
	nanosleep(&gap, NULL);
	for (i = 0; i < rounds; i++) {
		nanosleep(&gap, NULL);	/* the sleeper blocks again */
		__atomic_store_n(&woke_ns, 0, __ATOMIC_RELAXED);
		t0 = now_ns();
		if (write(efd, &one, sizeof(one)) != sizeof(one))
			return -1;
		while (!(t1 = __atomic_load_n(&woke_ns, __ATOMIC_ACQUIRE)))
			;
		d[i] = (double)(t1 - t0) / 1000.0;
	}
	if (write(efd, &end, sizeof(end)) != sizeof(end))
		return -1;
	pthread_join(th, NULL);
	close(epfd);
	close(efd);
	qsort(d, (size_t)rounds, sizeof(*d), cmp);
	printf("waking a%s thread in epoll_wait, %-22s median %6.1f us, min %6.1f, p90 %6.1f\n",
	       rt ? " SCHED_FIFO" : " (not real-time)", name, d[rounds / 2], d[0],
	       d[rounds * 9 / 10]);
	printf("CSV,wake_%s,0,%.2f,us\n", s == w ? "same_cpu" : "other_cpu",
	       d[rounds / 2]);
	free(d);
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = 300, opt, cpus[2], n = 0, c;
	cpu_set_t set;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		rounds = opt == 'n' ? atoi(optarg) : 0;
		if (rounds < 1) {
			fprintf(stderr, "usage: %s [-n ROUNDS]\n", argv[0]);
			return 2;
		}
	}
	if (sched_getaffinity(0, sizeof(set), &set)) {
		perror("wake_cost: sched_getaffinity");
		return 1;
	}
	for (c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	if (measure("on the writer's CPU:", cpus[0], cpus[0], rounds))
		return 1;
	if (n == 2 && measure("on another CPU:", cpus[1], cpus[0], rounds))
		return 1;
	return 0;
}
