// SPDX-License-Identifier: GPL-2.0
/*
 * elan-nicd's fault injection (--inject-stall-ms): SIGUSR2 or SIGUSR1
 * stops the whole NIC inside the next chunk that writes a target.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <time.h>
#include "elan-nicd.h"

/* 1: stall the next chunk (SIGUSR2), 2: and erase its names (SIGUSR1) */
static volatile sig_atomic_t stall_armed;

void on_stall_signal(int sig)
{
	stall_armed = sig == SIGUSR1 ? 2 : 1;
}

/*
 * Fault injection (--inject-stall-ms): the whole NIC stops inside one
 * chunk, its translations read and its pages named, as a SIGSTOPped or
 * starved elan-nicd would.  The drivers' shootdowns of those pages time
 * out; the pages must be kept until the chunk ends (tests/faults).
 */
void stall_hook(struct nicd *n, struct nicd_engine *e, uint32_t node,
		int write, void *arg)
{
	struct timespec ts = { .tv_sec = (time_t)(cfg.stall_ms / 1000),
			       .tv_nsec = (long)(cfg.stall_ms % 1000) * 1000000 };
	int unnamed = stall_armed == 2;
	uint32_t i;

	(void)arg;
	if (!stall_armed || !write)
		return;
	stall_armed = 0;
	if (unnamed)
		for (i = 0; i < n->nodes; i++)
			if (n->node[i].up)
				__atomic_store_n(&n->node[i].hdr->engine[e->idx].runs,
						 0u, __ATOMIC_SEQ_CST);
	nicd_logf(n, NICD_LOG_WARN,
		  "fault injection: stalling %llu ms inside a chunk of engine %u into node %u%s",
		  (unsigned long long)cfg.stall_ms, e->idx, node,
		  unnamed ? ", its pages not named" : "");
	/* a second SIGUSR2 ends it early */
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !stop_sig &&
	       !stall_armed)
		;
	stall_armed = 0;
	nicd_logf(n, NICD_LOG_WARN, "fault injection: stall over, the chunk goes on");
}
