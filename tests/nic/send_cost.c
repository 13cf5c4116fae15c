// SPDX-License-Identifier: GPL-2.0
/*
 * send_cost: elan-nicd's own time per small message, for the main job
 * (issue 30: a NIC model should spend well under a microsecond on one).
 *
 *   send_cost [-r ROUNDS] [-s BYTES]
 *
 * The engine of the nicd library, as elan-nicd runs it, between two
 * nodes of the host test harness (tests/nic/harness.c: fake guests in
 * host memory, translations loaded beforehand, so no fault): a sender
 * posts a burst of 8-byte sends (as many as the receive ring holds),
 * and only the engine's steps until every completion is posted are
 * timed; then the receiver takes the messages (untimed, each checked:
 * its tag, its order and its bytes).  Prints, in nanoseconds, the
 * median over the rounds of
 *
 *   the time per message of a burst (commands taken, translated, copied
 *   into the receive ring, completion events posted);
 *   the time of a burst of one (a ping-pong's message);
 *   an idle step (what the polling loop spins on);
 *
 * and "CSV,name,size,value,ns" lines.  The guests' side (posting under
 * TCG, the doorbell, the receiver's progress) is not in it: that is what
 * the main job's message rate over btl elan adds.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MiB (1024 * 1024)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return n % 2 ? (double)v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/*
 * One round: @burst sends of @size bytes, message k of the whole run
 * carrying tag k and bytes k * 31 + i; the engine's time until every
 * completion is in.  Returns the nanoseconds, or 0 on a failed check.
 */
static uint64_t round_ns(struct th *t, struct th_ctx *s, struct th_ctx *r,
			 uint32_t burst, uint32_t size, uint32_t *next)
{
	uint8_t msg[64], got[ELAN_RECV_SLOT];
	struct elan_recv_hdr h;
	struct elan_event ev;
	uint32_t k, i, events = 0;
	uint64_t t0, ns = 0;
	long steps = 0;

	for (k = 0; k < burst; k++) {
		uint32_t m = *next + k;
		struct elan_cmd cmd;

		for (i = 0; i < size; i++)
			msg[i] = (uint8_t)(m * 31 + i);
		th_write_mem(s, th_va(s, k * 64), msg, size);
		cmd = th_cmd(ELAN_OP_SEND, th_addr(r), th_va(s, k * 64), 0, size);
		cmd.tag = m;
		cmd.cookie = m;
		if (th_post(s, &cmd) < 0) {
			fprintf(stderr, "send_cost: command queue full\n");
			return 0;
		}
	}
	while (events < burst) {
		t0 = now_ns();
		nicd_step(&t->n, &t->e);
		ns += now_ns() - t0;
		while (th_poll_ev(s, &ev)) {
			if (ev.status != ELAN_OK || ev.cookie != *next + events) {
				fprintf(stderr, "send_cost: completion %u: status %u cookie %llu\n",
					*next + events, ev.status, (unsigned long long)ev.cookie);
				return 0;
			}
			events++;
		}
		if (++steps > 1000000) {
			fprintf(stderr, "send_cost: %u of %u sends completed\n", events, burst);
			return 0;
		}
	}
	for (k = 0; k < burst; k++) {
		uint32_t m = *next + k;

		if (!th_poll_recv(r, &h, got) || h.tag != m || h.len != size) {
			fprintf(stderr, "send_cost: message %u missing or out of order (tag %u)\n",
				m, h.tag);
			return 0;
		}
		for (i = 0; i < size; i++)
			if (got[i] != (uint8_t)(m * 31 + i)) {
				fprintf(stderr, "send_cost: message %u byte %u differs\n", m, i);
				return 0;
			}
	}
	*next += burst;
	return ns ? ns : 1;
}

int main(int argc, char **argv)
{
	int rounds = 2000, c, i;
	uint32_t size = 8, next = 0, burst = ELAN_RECVQ_ENTRIES;
	uint64_t *v, t0;
	double per_msg, single, idle;
	struct th t;
	struct th_ctx *s, *r;

	while ((c = getopt(argc, argv, "r:s:")) != -1) {
		switch (c) {
		case 'r': rounds = atoi(optarg); break;
		case 's': size = (uint32_t)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: send_cost [-r ROUNDS] [-s BYTES (at most 64)]\n");
			return 2;
		}
	}
	if (rounds < 1 || size < 1 || size > 64) {
		fprintf(stderr, "send_cost: -r at least 1, -s 1 to 64\n");
		return 2;
	}
	v = calloc((size_t)rounds, sizeof(*v));
	if (!v || th_init(&t, 2, 32 * MiB) < 0) {
		fprintf(stderr, "send_cost: no memory for the harness\n");
		return 1;
	}
	s = th_attach(&t, 0, 1, 7, 4);
	r = th_attach(&t, 1, 2, 7, 4);
	if (!s || !r) {
		fprintf(stderr, "send_cost: attach failed\n");
		return 1;
	}
	th_preload(s, th_va(s, 0), 4 * 4096);
	th_preload(r, th_va(r, 0), 4 * 4096);
	/* the contexts taken up, a warm-up */
	for (i = 0; i < 50; i++)
		if (!round_ns(&t, s, r, burst, size, &next))
			return 1;
	for (i = 0; i < rounds; i++)
		if (!(v[i] = round_ns(&t, s, r, burst, size, &next)))
			return 1;
	per_msg = median(v, rounds) / burst;
	for (i = 0; i < rounds; i++)
		if (!(v[i] = round_ns(&t, s, r, 1, size, &next)))
			return 1;
	single = median(v, rounds);
	for (i = 0; i < rounds; i++) {
		t0 = now_ns();
		nicd_step(&t.n, &t.e);
		v[i] = now_ns() - t0;
	}
	idle = median(v, rounds);
	printf("elan-nicd engine alone (host, no guest): %u B sends, medians of %d rounds\n", size, rounds);
	printf("  per message in a burst of %u: %8.0f ns\n", burst, per_msg);
	printf("  a burst of one:             %8.0f ns\n", single);
	printf("  an idle step:               %8.0f ns\n", idle);
	printf("CSV,send_ns_per_msg,%u,%.0f,ns\n", size, per_msg);
	printf("CSV,send_ns_single,%u,%.0f,ns\n", size, single);
	printf("CSV,step_idle_ns,0,%.0f,ns\n", idle);
	free(v);
	th_fini(&t);
	return 0;
}
