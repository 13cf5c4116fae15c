// SPDX-License-Identifier: GPL-2.0
/*
 * elan-nicd's tunables: the options and environment variables, --help.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elan-nicd.h"

/*
 * The tunables: an option each and, for most, an environment variable
 * (elan-cluster passes ELAN_NICD_* on).  The environment is read first,
 * so an option overrides it.
 */
struct elan_nicd_cfg cfg = {
	.spin_us = 100, .lag_us = 3, .reply_us = 10, .nap_us = 40, .stream_cmds = 2,
	.recv_slots = ELAN_RECVQ_ENTRIES,
	.fault_ms = 10000,
	.rt_prio = 1, .place = 1, .fabric_timeout_ms = 1000,
};

static const struct tunable {
	const char *opt, *env, *arg, *help;
	uint64_t *num;		/* a number in [0, max] ... */
	uint64_t max;
	const char **path;	/* ... or a path */
} tunables[] = {
	{ "spin-us", "ELAN_NICD_SPIN_US", "N", "poll this long idle before sleeping",
	  &cfg.spin_us, 10000000, NULL },
	{ "spin-lag-us", "ELAN_NICD_SPIN_LAG_US", "N",
	  "but sleep after N us idle when a process just given\n"
	  "events has not taken them (0: never)", &cfg.lag_us, 10000000, NULL },
	{ "spin-reply-us", "ELAN_NICD_SPIN_REPLY_US", "N",
	  "and after N us when messages were seen but their senders'\n"
	  "completions not taken", &cfg.reply_us, 10000000, NULL },
	{ "nap-us", "ELAN_NICD_NAP_US", "N",
	  "a stream (--stream-cmds commands taken with more\n"
	  "queued behind them since the last idle spell): once\n"
	  "idle, nap N us without asking for doorbells, then\n"
	  "take what was posted meanwhile (0: never nap)",
	  &cfg.nap_us, 10000, NULL },
	{ "stream-cmds", "ELAN_NICD_STREAM_CMDS", "N",
	  "commands found queued behind another that make a stream",
	  &cfg.stream_cmds, 1000000, NULL },
	{ "recv-slots", "ELAN_NICD_RECV_SLOTS", "N",
	  "fill at most N slots of a receive ring at once\n"
	  "(fewer than the ring's: to measure what its size is\n"
	  "worth; 0: all)", &cfg.recv_slots, ELAN_RECVQ_ENTRIES, NULL },
	{ "rt-priority", "ELAN_NICD_RT_PRIORITY", "N",
	  "run as SCHED_FIFO N (0: normal scheduling)", &cfg.rt_prio, 99, NULL },
	{ "place", "ELAN_NICD_PLACE", "0|1",
	  "1: sleep on the host CPU of a running vCPU of a guest\n"
	  "that posts nothing (a passive target) while others\n"
	  "post; 0: where the host scheduler leaves us",
	  &cfg.place, 1, NULL },
	{ "fault-timeout-ms", NULL, "N", "fail an op whose fault is not answered",
	  &cfg.fault_ms, 3600000, NULL },
	{ "inject-stall-ms", "ELAN_NICD_INJECT_STALL_MS", "N",
	  "fault injection: on SIGUSR2, stop for N ms (or until\n"
	  "the next SIGUSR2) inside the next chunk that writes\n"
	  "a target (as a nicd stopped or starved mid-copy);\n"
	  "on SIGUSR1 the same, its pages first erased from\n"
	  "what the drivers see (a broken NIC, for tests);\n"
	  "0: off", &cfg.stall_ms, 600000, NULL },
	{ "fabric", "ELAN_NICD_FABRIC", "TABLE",
	  "join the fabric of several hosts this table describes\n"
	  "(nic/README.md, \"The fabric\"); needs --host",
	  NULL, 0, &cfg.fabric },
	{ "host", "ELAN_NICD_HOST", "NAME", "which host of the fabric table this is",
	  NULL, 0, &cfg.host },
	{ "fabric-timeout-ms", "ELAN_NICD_FABRIC_TIMEOUT_MS", "N",
	  "a linked host silent this long is down (its nodes\n"
	  "NODE_DOWN); heartbeats every quarter of it",
	  &cfg.fabric_timeout_ms, 600000, NULL },
	{ "log", NULL, "FILE", "log here (default stderr)", NULL, 0, &cfg.log },
	{ "pidfile", NULL, "FILE", "written when every socket listens", NULL, 0,
	  &cfg.pidfile },
	{ "trace", "ELAN_NICD_TRACE", "FILE",
	  "record a timeline of commands, completions, faults,\n"
	  "doorbells, sleeps and wake-ups (the newest 1M),\n"
	  "written to FILE at exit",
	  NULL, 0, &cfg.trace },
};
#define NTUNABLES (sizeof(tunables) / sizeof(tunables[0]))
#define OPT_TUNABLE 256		/* getopt value of tunables[0] */

static void usage(void)
{
	const struct tunable *t;
	const char *h, *nl;
	char head[48];

	fprintf(stderr,
		"usage: elan-nicd --node I:SOCKET:RAMFILE[:RAMSIZE] ... [options]\n"
		"  --node I:SOCKET:RAMFILE[:RAMSIZE]  node I (0..%d): ivshmem server socket,\n"
		"                          guest RAM file (memory-backend-file share=on),\n"
		"                          optional RAM size (bytes, or with K/M/G)\n",
		ELAN_MAX_NODES - 1);
	for (t = tunables; t < tunables + NTUNABLES; t++) {
		snprintf(head, sizeof(head), "--%s %s", t->opt, t->arg);
		for (h = t->help; (nl = strchr(h, '\n')); h = nl + 1) {
			fprintf(stderr, "  %-23s %.*s\n", head, (int)(nl - h), h);
			head[0] = '\0';
		}
		fprintf(stderr, "  %-23s %s", head, h);
		if (t->num)
			fprintf(stderr, " (default %llu)", (unsigned long long)*t->num);
		if (t->env)
			fprintf(stderr, "\n  %-23s environment %s", "", t->env);
		fputc('\n', stderr);
	}
	fprintf(stderr, "  -v, --verbose           debug log\n");
	exit(2);
}

/* Set a tunable from @val (@from: the option or variable, for errors). */
static void set_tunable(const struct tunable *t, const char *val, const char *from)
{
	unsigned long long v;
	char *end;

	if (t->path) {
		*t->path = val;
		return;
	}
	errno = 0;
	v = strtoull(val, &end, 10);
	if (errno || end == val || *end || *val == '-' || v > t->max)
		die("%s: '%s' is not a number from 0 to %llu", from, val,
		    (unsigned long long)t->max);
	*t->num = v;
}

void parse_args(int argc, char **argv, const char **nodes_spec, int *nspec,
		int *verbose)
{
	struct option opts[NTUNABLES + 4] = {
		{ "node", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
	};
	const struct tunable *t;
	char from[64];
	const char *env;
	int c;

	for (t = tunables; t < tunables + NTUNABLES; t++) {
		opts[3 + (t - tunables)] = (struct option){ t->opt, required_argument, NULL,
							    OPT_TUNABLE + (int)(t - tunables) };
		env = t->env ? getenv(t->env) : NULL;
		if (env && *env)
			set_tunable(t, env, t->env);
	}
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		if (c >= OPT_TUNABLE && c < OPT_TUNABLE + (int)NTUNABLES) {
			t = &tunables[c - OPT_TUNABLE];
			snprintf(from, sizeof(from), "--%s", t->opt);
			set_tunable(t, optarg, from);
		} else if (c == 'n') {
			if (*nspec >= ELAN_MAX_NODES)
				die("too many --node");
			nodes_spec[(*nspec)++] = optarg;
		} else if (c == 'v') {
			*verbose = 1;
		} else {
			usage();
		}
	}
	if (optind != argc || *nspec == 0)
		usage();
}
