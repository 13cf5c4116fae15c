// SPDX-License-Identifier: GPL-2.0
/*
 * elan-nicd: the Elan NIC device model.  One ivshmem server socket per
 * guest (each guest sees only its own NIC region), the engine of the nicd
 * library, and the adaptive polling loop.
 *
 *   elan-nicd --node I:SOCKET:RAMFILE[:RAMSIZE] ... [--spin-us N]
 *             [--spin-lag-us N] [--spin-reply-us N] [--rt-priority N]
 *             [--place 0|1] [--fault-timeout-ms N] [--log FILE] [--pidfile FILE]
 *             [--trace FILE] [--fabric TABLE --host NAME] [-v]
 *
 * Prints "elan-nicd: ready ..." on stdout (and writes the pidfile) once
 * every socket listens.  SIGTERM or SIGINT: NIC down in every region,
 * interrupt the guests, exit 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include "elan-nicd.h"
#include "nicd_fabric.h"

struct nicd nic;
struct nicd_engine eng;
static uint64_t naps;			/* the polling loop's naps (a stream) */
int fabric_on;
static struct fab_table fab_table;
static FILE *logf_;
volatile sig_atomic_t stop_sig;

static void log_line(void *arg, int level, const char *msg)
{
	static const char *const lv[] = { "error", "warning", "info", "debug" };
	struct timespec ts;
	struct tm tm;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	fprintf(logf_ ? logf_ : stderr, "%02d:%02d:%02d.%03ld elan-nicd %s: %s\n",
		tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
		lv[level < 0 || level > 3 ? 0 : level], msg);
}

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "elan-nicd: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		die("bad size '%s'", s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end)
		die("bad size '%s'", s);
	return v;
}

static void on_signal(int sig)
{
	stop_sig = sig;
}

static void add_node(const char *spec)
{
	char *copy = strdup(spec), *p = copy, *f[4] = { 0 };
	int k = 0;
	char *end;
	unsigned long id;

	while (k < 4 && (f[k] = strsep(&p, ":")))
		k++;
	if (k < 3 || p || !*f[0] || !*f[1] || !*f[2])
		die("--node wants I:SOCKET:RAMFILE[:RAMSIZE], not '%s'", spec);
	id = strtoul(f[0], &end, 10);
	if (*end || id >= ELAN_MAX_NODES)
		die("node number must be 0..%d: '%s'", ELAN_MAX_NODES - 1, f[0]);
	if (srv[id].configured)
		die("node %lu given twice", id);
	srv[id].configured = 1;
	srv[id].sock_path = strdup(f[1]);
	if (nicd_node_config(&nic, (uint32_t)id, f[2], k == 4 ? parse_size(f[3]) : 0))
		die("node %lu: bad configuration", id);
	free(copy);
}

/*
 * The NIC's engine is hardware: it should run as soon as there is work,
 * not wait behind vCPU threads for a time slice, nor be preempted in the
 * middle of a copy for one (a stall of milliseconds on a busy host, seen
 * in nicd timelines of osu_bw).  SCHED_FIFO does that; the polling loop
 * still sleeps when idle, and the kernel's real-time throttling bounds a
 * runaway.  Without the privilege nicd runs on, slower.
 */
static void set_rt_priority(int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	if (prio <= 0)
		return;
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0)
		nicd_logf(&nic, NICD_LOG_WARN,
			  "cannot run as SCHED_FIFO %d (%s): latency and bandwidth will suffer on a busy host; run as root or with CAP_SYS_NICE, or --rt-priority 0",
			  prio, strerror(errno));
	else
		nicd_logf(&nic, NICD_LOG_INFO, "running as SCHED_FIFO %d", prio);
}

#ifdef NICD_BROKEN_NAP
/* ELAN_NICD_BROKEN names @variant: say so in the log (as @what does) */
static int broken_asked(const char *variant, const char *what)
{
	const char *b = getenv("ELAN_NICD_BROKEN");

	if (!b || strcmp(b, variant))
		return 0;
	nicd_logf(&nic, NICD_LOG_WARN,
		  "BROKEN ON PURPOSE (ELAN_NICD_BROKEN=%s): %s", variant, what);
	return 1;
}

/*
 * Broken on purpose (nic/elan-nicd-broken, tests only):
 * ELAN_NICD_BROKEN=napdrop loses, after each nap, the next command
 * queued (skipped: never run, no event), as a stream taken in one go from
 * a wrong position would: tests/nic/ivsh_test's stream must fail on it.
 */
static void broken_napdrop(void)
{
	static int on = -1;
	struct nicd_ctx *c;
	struct elan_cmd *slot;
	uint32_t i, m;

	if (on < 0)
		on = broken_asked("napdrop", "a command lost after each nap");
	if (!on)
		return;
	for (i = 0; i < nic.nodes; i++) {
		if (!nic.node[i].up)
			continue;
		nicd_for_each_active_ctx(&nic.node[i], c, m) {
			slot = elan_cmdq_slot(c->map.cmdq, c->cmd_tail);
			if (LOAD_ACQ(&slot->seq) != elan_ring_seq(c->cmd_tail))
				continue;
			c->cmd_tail++;
			STORE_REL(&c->map.status->cmd_tail, c->cmd_tail);
			return;
		}
	}
}

/*
 * Broken on purpose (nic/elan-nicd-broken, tests only):
 * ELAN_NICD_BROKEN=stalled leaves status.nic_stalled of a context set
 * once it was set (an op of it waited), as a NIC that forgot to clear it
 * would: its posters no longer ring, so a command posted while the NIC
 * sleeps waits for the next heartbeat.  tests/nic/ivsh_test's wake-up
 * test must fail on it.
 */
static void broken_stalled(void)
{
	static uint32_t was[ELAN_MAX_NODES];
	static int on = -1;
	struct nicd_ctx *c;
	uint32_t i, m;

	if (on < 0)
		on = broken_asked("stalled", "nic_stalled never cleared");
	if (!on)
		return;
	for (i = 0; i < nic.nodes; i++) {
		if (!nic.node[i].up)
			continue;
		nicd_for_each_active_ctx(&nic.node[i], c, m) {
			if (LOAD(&c->map.status->nic_stalled))
				was[i] |= 1u << c->idx;
			if (was[i] & (1u << c->idx))
				STORE(&c->map.status->nic_stalled, 1u);
		}
	}
}
#endif

/*
 * Past the lag: spin on while the consumers run, or while a reply is
 * awaited for less than reply_ns.
 */
static int keep_spinning(int consumers, uint64_t idle_ns, uint64_t reply_ns)
{
	return consumers == NICD_RUNNING ||
	       (consumers == NICD_REPLYING && idle_ns < reply_ns);
}

static void print_stats(void)
{
	uint32_t i, j;

	for (i = 0; i < nic.nodes; i++) {
		struct nicd_node *nd = &nic.node[i];
		uint64_t cmds = 0, bytes = 0;

		if (!srv[i].configured)
			continue;
		for (j = 0; j < ELAN_MAX_CTX; j++) {
			cmds += nd->ctx[j].ncmds;
			bytes += nd->ctx[j].nbytes;
		}
		nicd_logf(&nic, NICD_LOG_INFO,
			  "node %u: %llu connections, %llu commands, %llu bytes, %llu faults, %llu interrupts, %llu steps over its budget, %.3f s of NIC time (current connection)",
			  i, (unsigned long long)srv[i].connects,
			  (unsigned long long)cmds, (unsigned long long)bytes,
			  (unsigned long long)nd->nfaults, (unsigned long long)nd->nirqs,
			  (unsigned long long)nd->budget_out, nd->busy_ns / 1e9);
	}
	if (cfg.place)
		nicd_logf(&nic, NICD_LOG_INFO,
			  "placement: %llu moves beside a guest that posted nothing",
			  (unsigned long long)place_moves);
	nicd_logf(&nic, NICD_LOG_INFO,
		  "polling: %llu naps in streams (%llu commands taken with more queued behind)",
		  (unsigned long long)naps, (unsigned long long)nic.cmds_queued);
}

int main(int argc, char **argv)
{
	const char *nodes_spec[ELAN_MAX_NODES];
	uint64_t spin_ns, lag_ns, reply_ns, nap_ns, hb_ns = 250000000ull, now,
		 last_work, last_poll = 0, last_hb = 0, spell = 0, queued_mark = 0,
		 spell_queued = 0;
	int streaming = 0;
	uint32_t nnodes = 0, maxnode = 0, i;
	int verbose = 0, nspec = 0, v;
	struct sigaction sa = { 0 };

	parse_args(argc, argv, nodes_spec, &nspec, &verbose);
	spin_ns = cfg.spin_us * 1000;
	lag_ns = cfg.lag_us * 1000;
	reply_ns = cfg.reply_us * 1000;
	nap_ns = cfg.nap_us * 1000;
	/* node count = highest node number + 1 */
	for (v = 0; v < nspec; v++) {
		unsigned long id = strtoul(nodes_spec[v], NULL, 10);

		if (id < ELAN_MAX_NODES && id + 1 > maxnode)
			maxnode = (uint32_t)id + 1;
	}
	/* a fabric: the nodes of every host, ours given with --node */
	if (cfg.fabric) {
		char err[300];

		if (!cfg.host)
			die("--fabric needs --host NAME (this host's name in the table)");
		if (fab_table_read(cfg.fabric, &fab_table, err, sizeof(err)))
			die("fabric table: %s", err);
		if (fab_table.nodes > maxnode)
			maxnode = fab_table.nodes;
		fabric_on = 1;
	} else if (cfg.host) {
		die("--host needs --fabric TABLE");
	}
	if (nicd_init(&nic, maxnode ? maxnode : 1) < 0)
		die("bad node numbers");
	for (i = 0; i < ELAN_MAX_NODES; i++) {
		srv[i].lfd = srv[i].cfd = srv[i].region_fd = -1;
		for (v = 0; v < ELAN_NR_IRQS; v++)
			srv[i].db[v] = srv[i].irq[v] = -1;
	}
	for (v = 0; v < nspec; v++)
		add_node(nodes_spec[v]);
	if (fabric_on) {
		int self = -1;

		for (i = 0; i < fab_table.nhosts; i++)
			if (!strcmp(fab_table.host[i].name, cfg.host))
				self = (int)i;
		if (self < 0)
			die("fabric table %s has no host '%s'", cfg.fabric, cfg.host);
		for (i = 0; i < ELAN_MAX_NODES; i++)
			if (srv[i].configured &&
			    !((fab_table.host[self].nodes >> i) & 1))
				die("--node %u: the fabric table gives node %u to another host", i, i);
	}
	if (cfg.log) {
		logf_ = fopen(cfg.log, "a");
		if (!logf_)
			die("%s: %s", cfg.log, strerror(errno));
		setvbuf(logf_, NULL, _IOLBF, 0);
	}
	nic.log = log_line;
	nic.log_level = verbose ? NICD_LOG_DEBUG : NICD_LOG_INFO;
	nic.irq = irq_cb;
	nic.fault_timeout_ns = cfg.fault_ms * 1000000ull;
	if (cfg.recv_slots)
		nic.recv_slots = (uint32_t)cfg.recv_slots;
	nicd_engine_init(&eng, 0);
	set_rt_priority((int)cfg.rt_prio);
	if (sched_getaffinity(0, sizeof(place_allowed), &place_allowed) < 0)
		CPU_ZERO(&place_allowed);
	if (cfg.trace) {
		/* the hosts of a fabric on one machine share the variable:
		 * each writes its own file, FILE.HOST */
		if (fabric_on) {
			static char path[4096];

			if ((size_t)snprintf(path, sizeof(path), "%s.%s", cfg.trace,
					     cfg.host) >= sizeof(path))
				die("--trace: path too long");
			cfg.trace = path;
		}
		if (nicd_trace_start(&nic) < 0)
			die("--trace: out of memory");
		nicd_logf(&nic, NICD_LOG_INFO, "tracing to %s at exit", cfg.trace);
	}

	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	if (cfg.stall_ms) {
		sa.sa_handler = on_stall_signal;
		sigaction(SIGUSR2, &sa, NULL);
		sigaction(SIGUSR1, &sa, NULL);
		eng.chunk_hook = stall_hook;
		nicd_logf(&nic, NICD_LOG_INFO,
			  "fault injection armed: SIGUSR2 (SIGUSR1: pages unnamed) stalls the next target write %llu ms",
			  (unsigned long long)cfg.stall_ms);
	}

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll: %s", strerror(errno));
	for (i = 0; i < ELAN_MAX_NODES; i++)
		if (srv[i].configured) {
			listen_node(i);
			nnodes++;
		}
	if (fabric_on && fabric_init(&nic, &fab_table, cfg.host,
				     cfg.fabric_timeout_ms, epfd,
				     EV_DATA(EV_FABRIC, 0, 0)))
		die("cannot join the fabric (see the log)");
	if (cfg.pidfile) {
		FILE *f = fopen(cfg.pidfile, "w");

		if (!f)
			die("%s: %s", cfg.pidfile, strerror(errno));
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	nicd_logf(&nic, NICD_LOG_INFO, "ready: %u nodes, spin %llu us (lag %llu us, reply %llu us, nap %llu us in streams of %llu), fault timeout %lu ms, %u of %u receive slots",
		  nnodes, (unsigned long long)(spin_ns / 1000),
		  (unsigned long long)(lag_ns / 1000),
		  (unsigned long long)(reply_ns / 1000),
		  (unsigned long long)(nap_ns / 1000),
		  (unsigned long long)cfg.stream_cmds,
		  (unsigned long)cfg.fault_ms, nic.recv_slots, ELAN_RECVQ_ENTRIES);
	printf("elan-nicd: ready: %u nodes, pid %d\n", nnodes, (int)getpid());
	fflush(stdout);

	last_work = nicd_now_mono();
	while (!stop_sig) {
		int w = nicd_step(&nic, &eng);

		now = nicd_now_mono();
		/* the links to other hosts: replies, requests, heartbeats */
		if (fabric_on && fabric_progress(now))
			w = 1;
		if (w)
			last_work = now;
		/* while spinning, look at the sockets and doorbells every ms */
		if (now - last_poll >= 1000000) {
			if (poll_events(0))
				last_work = now;
			last_poll = now;
		}
		if (now - last_hb >= hb_ns) {
			nicd_heartbeat(&nic);
			last_hb = now;
		}
		/* also while busy: a flood must not keep us beside its victim */
		if (cfg.place)
			place(now);
		if (w)
			continue;
		/*
		 * A stream (once per idle spell, past the lag): since the
		 * last spell, stream_cmds commands or more were taken with
		 * another already posted behind them, so the posters are
		 * ahead of us and post on.  Spinning for them takes a core
		 * from their vCPUs (2 host cores here), sleeping makes each
		 * wake-up cost a doorbell (an ioctl in the guest, then 4-52
		 * us here) for the few commands posted meanwhile.  So nap:
		 * nap_ns with nic_sleeping still 0 (nobody rings; a command
		 * posted now waits for the nap's end at most), then take in
		 * one go what was posted meanwhile.  A ping-pong never has a
		 * command queued behind another and sleeps as before; a nap
		 * that brings no work ends the stream.  Nor does a stream
		 * whose op waits for ring space nap: its consumer rings once
		 * it made room, but only if we sleep (nic_waiting): a nap
		 * made the next messages wait for its end (nicd traces of
		 * osu_mbw_mr: a 55 us nap after every 32 sends, the
		 * receiver's ring, with the room made long before).
		 */
		if (nap_ns && now - last_work >= lag_ns && spell != last_work) {
			spell = last_work;
			spell_queued = nic.cmds_queued - queued_mark;
			streaming = spell_queued >= cfg.stream_cmds &&
				    !nic.backpressure;
			queued_mark = nic.cmds_queued;
		}
		if (streaming) {
			streaming = 0;
			naps++;
			nicd_trace(&nic, 'N', 0, 0, 0, spell_queued);
			/*
			 * Only the posters of the stream nap with us: any
			 * other context (the receiver's reply that ends an
			 * osu_mbw_mr window waited for the nap's end: 30-55
			 * us per window in nicd traces) sees nic_sleeping
			 * and rings.  (A command it posted just before the
			 * flag was seen waits for the nap's end at most, as
			 * every command did before; a step here to find it
			 * cut the naps short and the stream fell apart into
			 * a doorbell per command.)
			 */
			nicd_set_napping(&nic);
			if (poll_events_ns(nap_ns))
				last_work = nicd_now_mono();
			nicd_set_sleeping(&nic, 0);
			last_poll = nicd_now_mono();
#ifdef NICD_BROKEN_NAP
			broken_napdrop();
#endif
			continue;
		}
		/*
		 * Spin while there is work and for spin_ns after it: a
		 * process that polls its rings posts its next command within
		 * microseconds.  But when what the last step posted is still
		 * not taken after lag_ns, that process is not running (it
		 * computes, sleeps, or waits for the very CPU we spin on:
		 * the host scheduler likes to put the NIC beside the vCPU
		 * whose doorbell woke it), so spinning on only delays it.
		 */
		if (now - last_work < spin_ns &&
		    (!lag_ns || now - last_work < lag_ns ||
		     keep_spinning(nicd_consumers_behind(&nic), now - last_work,
				   reply_ns)))
			continue;
		/* idle: announce sleep, fence, look once more, then block */
		nicd_set_sleeping(&nic, 1);
		nicd_trace(&nic, 'S', 0, 0, 0, 0);
		w = nicd_step(&nic, &eng);
		/* the UCP worker armed, or it has work now */
		if (!w && fabric_on)
			w = fabric_arm();
		if (!w) {
			uint64_t t = nicd_next_timeout(&nic);
			int ms;

#ifdef NICD_BROKEN_NAP
			broken_stalled();
#endif
			if (t > hb_ns)
				t = hb_ns;
			if (fabric_on && t > fabric_next_timeout(now))
				t = fabric_next_timeout(now);
			ms = (int)((t + 999999) / 1000000);
			if (poll_events(ms))
				last_work = nicd_now_mono();
			last_poll = nicd_now_mono();
		} else {
			last_work = nicd_now_mono();
		}
		nicd_set_sleeping(&nic, 0);
		nicd_trace(&nic, 'W', 0, 0, 0, 0);
	}
	nicd_logf(&nic, NICD_LOG_INFO, "signal %d: shutting down", (int)stop_sig);
	nicd_shutdown(&nic);
	print_stats();
	if (fabric_on)
		fabric_fini();
	if (cfg.trace) {
		int r = nicd_trace_finish(&nic, cfg.trace);

		if (r < 0)
			nicd_logf(&nic, NICD_LOG_WARN, "--trace %s: %s", cfg.trace, strerror(-r));
	}
	/*
	 * The guests live on: their drivers fail every context with
	 * NODE_DOWN on the DOWN state.  Taking the nodes down here (or in
	 * nicd_fini()) would write FREE over that into the regions they
	 * still map, and a process would see its context "stopped" with no
	 * reason.  Exiting closes the connections and unmaps the rest.
	 */
	for (i = 0; i < ELAN_MAX_NODES; i++) {
		if (!srv[i].configured)
			continue;
		if (srv[i].lfd >= 0)
			close(srv[i].lfd);
		unlink(srv[i].sock_path);
	}
	if (cfg.pidfile)
		unlink(cfg.pidfile);
	return 0;
}
