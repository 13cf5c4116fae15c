/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elan-nicd library: the NIC model without any socket code.
 *
 * struct nicd holds every node of the fabric (its NIC region and RAM, its
 * contexts as the NIC sees them, its fault queue) and the engines that
 * move data.  The program that owns it (elan-nicd.c, or a test) creates
 * regions, tells the library when a node connects and disconnects, calls
 * nicd_step() to make progress and gets interrupts back through a
 * callback.  See nic/README.md for the design.
 *
 * Threading: one engine per thread; with one engine everything here runs
 * on one thread.  Nodes go up and down only between steps.
 */
#ifndef NICD_H
#define NICD_H

#include <stdint.h>
#include <stddef.h>
#include <sys/uio.h>
#include <elan/elan_hw.h>

/* Returned by internal functions (never in an event): the op waits. */
#define NICD_PENDING		(-1)

/* Log levels. */
enum { NICD_LOG_ERR, NICD_LOG_WARN, NICD_LOG_INFO, NICD_LOG_DEBUG };

struct nicd;

/* What an op waits for. */
enum nicd_wait_kind {
	NICD_W_NONE = 0,
	NICD_W_FAULT,		/* a fault request posted; poll its ack */
	NICD_W_FAULTQ,		/* the fault queue was full: retry */
	NICD_W_SPACE,		/* a ring at the target is full: retry */
	NICD_W_REMOTE,		/* a reply from the nicd owning the target */
};

struct nicd_wait {
	uint8_t kind;
	uint8_t remote;		/* the fault is on the target side */
	uint16_t node;		/* node whose fault queue holds it */
	uint32_t slot;
	uint32_t req_seq;
	uint32_t epoch;		/* node epoch when posted */
	uint64_t deadline;	/* ns, CLOCK_MONOTONIC */
	uint64_t vpage;		/* NICD_W_FAULT: the page asked for */
};

/*
 * The target of an op, resolved at its start.  An op touches the target
 * only through the nicd_rna_*() functions below, which re-check that the
 * node and context are still the ones resolved (epoch, generation).
 */
struct nicd_target {
	uint32_t node, ctx;
	uint32_t gen;		/* target context generation */
	uint32_t epoch;		/* target node epoch */
	uint64_t cap;
};

/* One op in progress (a context runs one command at a time). */
struct nicd_op {
	struct elan_cmd cmd;	/* validated copy of the queue slot */
	uint64_t done;		/* bytes done */
	uint64_t old;		/* atomics: fetched value */
	struct nicd_target t;
	struct nicd_wait w;
	uint32_t retries;	/* acks in a row for one page still missing */
	uint64_t acked_page;	/* the page of the last fault acked OK */
	uint16_t acked_node;
	uint8_t acked_remote;
	uint8_t acked;		/* acked_* valid (since the last progress) */
	uint64_t stall_since;	/* ns: first ack since the last progress */
	uint64_t wait_since;	/* ns: waiting since (0: not waiting) */
	uint8_t wait_logged;	/* a long wait was named in the log */
	uint8_t started;	/* target resolved */
	uint8_t tev_reserved;	/* holds an event credit at the target */
	uint8_t atomic_done;
	uint8_t fetch_stored;
	/* ops on a node of another host (nicd_remote.c) */
	uint32_t rtag;		/* the op's id in its requests (never 0) */
	uint32_t rlink;		/* the target's link epoch when resolved */
	uint8_t rwait;		/* NICD_FM_* request sent, its reply awaited */
	uint8_t rcached;	/* t came from the context's rcache */
	uint8_t rgot;		/* that reply came: rstatus, old, t filled */
	uint8_t rstatus;
	uint8_t rerr;		/* first error a chunk reply gave */
	uint32_t rerr_chunk;	/* ... and its chunk */
	uint32_t rerr_part;	/* ... and its bytes done before the error */
	uint64_t rend;		/* put/get: where a local fault error cut it */
	uint8_t rend_err;	/* ... that error (0: not cut, cmd.len) */
	uint32_t rbase;		/* chunk of op->done (chunks: target pages) */
	uint32_t rsent;		/* chunks rbase + i in flight, bit i */
	uint32_t racked;	/* chunks rbase + i done, bit i */
};

/* Fault request bookkeeping of the NIC, one per fault queue slot. */
enum { NICD_FS_FREE, NICD_FS_PENDING, NICD_FS_ACKED, NICD_FS_DEAD };
struct nicd_fault_slot {
	uint32_t req_seq;
	uint32_t ctx;
	uint64_t vpage;
	uint32_t write;
	uint32_t state;
	uint32_t status;
	uint64_t posted;	/* ns */
};

/* A context as the NIC sees it. */
struct nicd_ctx {
	struct nicd_node *nd;
	uint32_t idx;
	uint32_t state;		/* ELAN_CTX_* (NIC view) */
	uint32_t gen;
	uint64_t cap;
	uint32_t cmd_tail, ev_tail, recv_tail;
	uint32_t recv_watched;	/* recv_tail when last watched */
	uint32_t ev_reserved;	/* event credits held by ops */
	uint8_t has_op;
	uint8_t notify;		/* on the notify list this step */
	uint8_t blocked;	/* waits for ring space (polled) */
	uint8_t space_want;	/* this step: an op found a ring of ours full */
	uint8_t reply_elsewhere;	/* this step: a message to another host, or a
				 * put or atomic into another context, done:
				 * a reply may come that no ring shows */
	uint8_t posted;		/* since the last nap or sleep: a command taken */
	uint32_t waiting_pub;	/* the status page's nic_waiting */
	uint8_t stalled_pub;	/* the status page's nic_stalled */
	struct nicd_op op;
	/* the last remote target it resolved (nicd_remote.c): the next op
	 * to it skips the RESOLVE round trip; the owner checks every
	 * request anyway, and a stale entry costs one retry */
	struct nicd_target rcache;
	uint32_t rcache_dst, rcache_link;
	uint8_t rcache_ok;
	struct elan_hw_ctx_map map;	/* its pieces in the region */
	/* the NIC MMU as taken up with the generation (nicd_mmu_take) */
	struct elan_hw_tlbe **mmu_page;	/* host address of each table page */
	uint32_t mmu_sets;
	uint32_t mmu_page_cap;		/* entries allocated in mmu_page */
	/* statistics */
	uint64_t ncmds, nbytes;
};

struct nicd_node {
	uint32_t id;
	uint8_t configured;
	uint8_t up;		/* connected, region valid (never for remote) */
	/* a node of another host (nicd_remote.c): no region, no RAM here */
	uint8_t remote;
	uint8_t rup;		/* its owner is linked and says it is up */
	uint16_t host;		/* its owner's index in the fabric table */
	uint32_t rlink;		/* bumped whenever it goes down */
	uint32_t epoch;		/* bumped on every up and down */
	uint8_t *region;
	struct elan_hw_header *hdr;
	/* guest RAM */
	char *ram_path;		/* NULL: set with nicd_node_set_ram() */
	uint64_t ram_max;	/* RAMSIZE from the command line, 0 = file size */
	uint8_t *ram;
	uint64_t ram_size;	/* bytes mapped */
	uint64_t ram_lowmem;	/* RAM below 4 GiB (q35 layout) */
	uint8_t ram_owned;	/* mapped by the library: unmap on down */
	uint8_t rescan;		/* re-read every context's ctl */
	/* contexts */
	uint32_t active_mask;	/* contexts the NIC serves */
	struct nicd_ctx ctx[ELAN_MAX_CTX];
	/* fault queue */
	uint32_t fault_tail;
	uint32_t faults_pending;
	struct nicd_fault_slot fs[ELAN_FAULTQ_ENTRIES];
	/* shootdown brackets, per engine */
	uint64_t eseq[ELAN_MAX_ENGINES];
	uint32_t br_depth[ELAN_MAX_ENGINES];
	uint32_t br_ctx[ELAN_MAX_ENGINES];
	uint32_t br_engine;	/* the engine whose bracket is open */
	uint32_t br_runs;	/* runs it published (never read back) */
	uint64_t br_pfn[ELAN_ENGINE_RUNS];
	/* interrupts to raise at the end of the step */
	uint32_t irq_pending;
	/* log rate limit */
	uint64_t log_window;
	uint32_t log_count;
	/* fair service: first context served next step */
	uint32_t rr;
	/* statistics */
	uint64_t nfaults, nirqs;
	uint64_t budget_out;	/* steps that left work for the next (fairness) */
	uint64_t busy_ns;	/* NIC time spent serving the node */
};

/* Each context of node ND the NIC serves (active_mask): C the context, M a
 * uint32_t cursor of the bits left. */
#define nicd_for_each_active_ctx(nd, c, m)				\
	for ((m) = (nd)->active_mask;					\
	     (m) && ((c) = &(nd)->ctx[__builtin_ctz(m)], 1);		\
	     (m) &= (m) - 1)

struct nicd_engine {
	uint32_t idx;
	struct nicd_ctx *notify[ELAN_MAX_NODES * ELAN_MAX_CTX];
	uint32_t nnotify;
	/* optional: called inside the shootdown bracket of every chunk, with
	 * the translations read and before the copy (tests, fault injection);
	 * node: the target's, write: the chunk writes the target's memory */
	void (*chunk_hook)(struct nicd *n, struct nicd_engine *e, uint32_t node,
			   int write, void *arg);
	void *hook_arg;
};

/* A context that was just given events or messages (adaptive polling). */
struct nicd_watch {
	uint32_t node, ctx, gen;
	uint32_t ev_tail, recv_tail;	/* posted up to here */
	uint8_t got_msg;		/* messages among them */
	uint8_t reply_elsewhere;	/* see struct nicd_ctx */
};
#define NICD_WATCH	16

struct nicd {
	uint32_t nodes;			/* node ids are < nodes */
	uint32_t n_engines;
	struct nicd_node node[ELAN_MAX_NODES];
	uint64_t nodes_up;
	uint64_t fault_timeout_ns;	/* default 10 s */
	uint32_t max_fault_retries;	/* acks OK for a page that stays missing, default 1000 */
	uint32_t recv_slots;		/* receive slots filled at most at once:
					 * ELAN_RECVQ_ENTRIES, fewer to measure
					 * what the ring's size is worth */
	uint32_t chunk_budget;		/* pages per context per step */
	uint32_t node_budget;		/* pages per node per step (fairness) */
	uint64_t node_ns;		/* NIC time per node per step (fairness) */
	uint64_t serve_until;		/* ns: the served node's time runs out */
	uint8_t turn_used;		/* the turn moved a command or chunk */
	uint32_t sleeping;
	uint8_t backpressure;		/* an op waits for ring space */
	uint32_t wait_seq;		/* last nic_waiting value published */
	/* the contexts of the last step that posted anything */
	struct nicd_watch watch[NICD_WATCH];
	uint32_t nwatch;
	uint64_t rescan_at;		/* ns: next periodic ctl rescan */
	uint64_t (*now)(void);		/* clock (ns); tests may replace it */
	void (*irq)(void *arg, uint32_t node, uint32_t vector);
	void *irq_arg;
	void (*log)(void *arg, int level, const char *msg);
	void *log_arg;
	int log_level;
	uint64_t start_ns;
	struct nicd_trace *trace;	/* elan-nicd --trace; NULL: off */
	/* the fabric: nodes of other hosts (nicd_remote.c); NULL: none */
	const struct nicd_fabric_ops *fabric;
	void *fabric_arg;
	uint32_t node_seq;		/* bumped on every local node up/down */
	uint32_t rtag_next;
	struct nicd_rpark *rpark;	/* owner: requests that wait */
	uint32_t nrpark;
	uint64_t rpark_bytes;		/* their data (NICD_RPARK_BYTES) */
	struct nicd_rres *rres;		/* owner: event credits peers hold */
	uint32_t nrres;
	uint8_t remote_busy;		/* a request found the link busy */
	uint64_t rstat_rx, rstat_tx, rstat_bad;
	uint64_t cmds_queued;		/* commands taken with the next one
					 * already posted behind them */
};

/* ------------------------------------------------------------ tracing */

/*
 * A timeline of what the NIC does, to find where time goes (elan-nicd
 * --trace FILE): a record per command taken (C: len = the command's
 * length), op completed (D: len = bytes done), fault raised (F: op = 1
 * for a write, len = the page number's low 32 bits), doorbell (B: op =
 * the vector), and the polling loop's sleep (S), nap (N: len = the
 * commands taken with another queued behind them since the last nap) and
 * wake (W).  A ring
 * that keeps the newest NICD_TRACE_RECS, written out at exit.
 */
#define NICD_TRACE_RECS (1u << 20)

struct nicd_trace_rec {
	uint64_t t;		/* n->now() */
	uint32_t len;
	uint8_t kind, node, ctx, op;
};

struct nicd_trace {
	struct nicd_trace_rec *rec;	/* NICD_TRACE_RECS of them */
	uint32_t n;			/* records written so far */
};

/* Start recording: 0 or -ENOMEM. */
int nicd_trace_start(struct nicd *n);
/* Write the records to path (oldest first), stop, free: 0 or -errno. */
int nicd_trace_finish(struct nicd *n, const char *path);
void nicd_trace_rec(struct nicd *n, char kind, uint32_t node, uint32_t ctx,
		    uint32_t op, uint64_t len);

static inline void nicd_trace(struct nicd *n, char kind, uint32_t node,
			      uint32_t ctx, uint32_t op, uint64_t len)
{
	if (n->trace)
		nicd_trace_rec(n, kind, node, ctx, op, len);
}

/* ------------------------------------------------------------ setup */

/* Initialise n for nodes 0..nodes-1 (none configured yet). */
int nicd_init(struct nicd *n, uint32_t nodes);
void nicd_fini(struct nicd *n);

/* Mark a node configured.  ram_path may be NULL (see nicd_node_set_ram). */
int nicd_node_config(struct nicd *n, uint32_t node, const char *ram_path,
		     uint64_t ram_max);

/* Use RAM the caller mapped (tests): size bytes, guest physical == offset
 * below lowmem, 4 GiB + (offset - lowmem) above it. */
void nicd_node_set_ram(struct nicd *n, uint32_t node, void *ram,
		       uint64_t size);

/* Map ram_path if it is not mapped yet.  0 or -errno. */
int nicd_node_map_ram(struct nicd *n, uint32_t node);

/* Create a NIC region: a memfd of ELAN_REGION_SIZE, mapped.  Returns the fd
 * or -errno. */
int nicd_region_create(void **map);
void nicd_region_destroy(void *map);

/*
 * The guest of node connected with this (zeroed or fresh) region: write
 * the header, bump the epoch, nic_state = UP.  The library keeps the
 * pointer until nicd_node_down().
 */
int nicd_node_up(struct nicd *n, uint32_t node, void *region);

/* The guest is gone: its contexts die, ops targeting it end in
 * ELAN_E_NODE_DOWN.  The region may be unmapped after this returns. */
void nicd_node_down(struct nicd *n, uint32_t node);

/* Shutdown: nic_state = DOWN in every region, IRQ_STATE raised. */
void nicd_shutdown(struct nicd *n);
/*
 * The guest's driver let go of the NIC (ELAN_DB_RESET): down and up again
 * on the same region, zeroed in between, as a reconnect would give it.
 */
void nicd_node_reset(struct nicd *n, uint32_t node);


/* ------------------------------------------------------------ running */

/* Doorbell from node: re-read its contexts (ELAN_DB_CTX), reset the node
 * (ELAN_DB_RESET; call it between steps) or nothing. */
void nicd_doorbell(struct nicd *n, uint32_t node, uint32_t vector);

/* Make progress: returns a count of work done (0: nothing to do). */
int nicd_step(struct nicd *n, struct nicd_engine *e);

/* Set or clear nic_sleeping in every header and status page (with a full
 * fence after setting). */
void nicd_set_sleeping(struct nicd *n, int on);
/*
 * Before a nap in a stream: nic_sleeping set in the status page of every
 * context that posted nothing since the last nap or sleep, so that its
 * next command rings and ends the nap (a receiver's reply); the posters
 * of the stream, ahead of the NIC, still post without ringing (full
 * fence after).  nicd_set_sleeping(n, 0) ends it.
 */
void nicd_set_napping(struct nicd *n);

/* ns until the library needs a step without any doorbell (a fault
 * timeout, a ring it polls for space, the ctl rescan), UINT64_MAX if
 * never. */
uint64_t nicd_next_timeout(struct nicd *n);

/*
 * Are the processes the last posting step gave events or messages to
 * running?  NICD_RUNNING: they took them.  NICD_BEHIND: one has not (its
 * process is not polling: it computes, sleeps, or waits for the CPU the NIC
 * spins on); the polling loop stops spinning early then.  NICD_REPLYING:
 * every receiver of a message saw it, but an initiator has not taken its
 * completion: a reply is likely soon, but past that the initiator, whose
 * CPU the NIC may be sitting on, may be the one to post next.  A send
 * to another host: NICD_BEHIND while it waits for the owner's reply,
 * NICD_REPLYING once its completion was taken (what comes next comes by
 * the link, which wakes the NIC).
 */
enum { NICD_RUNNING, NICD_BEHIND, NICD_REPLYING };
int nicd_consumers_behind(struct nicd *n);

/*
 * Has every active context of node taken all the events and messages it
 * was given, with no op in progress?  (Placement: a quiet guest that is
 * settled waits for others; one that is not may be starved of its CPU.)
 */
int nicd_node_settled(struct nicd *n, uint32_t node);

/* Heartbeat: write the clock into every header. */
void nicd_heartbeat(struct nicd *n);

void nicd_engine_init(struct nicd_engine *e, uint32_t idx);

/* ------------------------------------------------------------ internal */

/* Accesses to what a guest shares with the NIC (region, rings, MMU). */
#define LOAD_ACQ(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define LOAD(p)		__atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE_REL(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define STORE(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* contexts (nicd_ctx.c) */
/* The context stops (node down, detach, failure). */
void nicd_ctx_drop(struct nicd *n, struct nicd_ctx *c, uint32_t state,
		   uint32_t error);
/* The context fails: logged, an ERROR event if its ring has room, dropped. */
void nicd_ctx_fail(struct nicd *n, struct nicd_ctx *c, uint32_t err,
		   const char *why);
/* Follow the driver's ctl.state and generation.  Returns 1 if changed. */
int nicd_ctx_sync(struct nicd *n, struct nicd_ctx *c);
/* The context's NIC address, ELAN_ADDR(). */
uint32_t nicd_ctx_addr(const struct nicd_ctx *c);
/* Put c on e's notify list (interrupts and watching, end of the step). */
void nicd_notify(struct nicd_engine *e, struct nicd_ctx *c);
/* Raise the event interrupt if the driver armed the context. */
void nicd_check_armed(struct nicd_ctx *c);
/* An event credit: 1 free, 0 the ring is full, -1 ev_head is corrupt. */
int nicd_ev_credit(struct nicd_ctx *c);
/* Write an event into c's ring; the caller holds a credit. */
void nicd_post_event(struct nicd_ctx *c, const struct elan_event *ev);

uint64_t nicd_now_mono(void);

/*
 * May the op being served go on in this step: pages left in its budget
 * and time left in its node's turn (nicd_step)?  The turn's first command
 * or chunk always goes: a turn the host preempted nicd in, or a clock
 * that jumps, still moves the node on.  The budget is left as it is, so
 * what a turn used is what it counts.
 */
static inline int nicd_budget_left(struct nicd *n, const uint32_t *budget)
{
	return *budget && !(n->turn_used && n->now() >= n->serve_until);
}

/* Pages or commands done: taken from the budget, and the turn has moved. */
static inline void nicd_budget_use(struct nicd *n, uint32_t *budget,
				   uint32_t used)
{
	*budget = *budget > used ? *budget - used : 0;
	n->turn_used = 1;
}

void nicd_logf(struct nicd *n, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Per-node rate limited log line (about guest-caused problems). */
void nicd_node_logf(struct nicd *n, struct nicd_node *nd, int level,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* validation (nicd_valid.c): 0 or the status of the command's event */
int nicd_validate_cmd(const struct nicd *n, const struct elan_cmd *c);
const char *nicd_status_name(int status);
const char *nicd_op_name(int op);

/* translation (nicd_xlate.c) */
void nicd_bracket_open(struct nicd_node *nd, uint32_t e, uint32_t ctx);
void nicd_bracket_close(struct nicd_node *nd, uint32_t e);
/* Inside an open bracket of (nd, e): translate the page of va for ctx.
 * span: bytes the op touches from va on (the fault request's pages hint).
 * 0 and *p = host address of va; NICD_PENDING with w filled (fault posted
 * or queue full); or ELAN_E_{LOCAL,REMOTE}_FAULT for a bad pfn. */
int nicd_xlate(struct nicd *n, struct nicd_node *nd, uint32_t ctx,
	       uint64_t va, uint64_t span, int write, int remote, uint8_t **p,
	       struct nicd_wait *w);
/* Inside the same bracket, after nicd_xlate gave p for va: how many bytes
 * from va on (at least to the end of its page, at most max) are
 * translated to host memory contiguous with p.  Never posts a fault: the
 * run ends at the first page that is not translated so. */
uint32_t nicd_xlate_run(struct nicd_node *nd, uint32_t ctx, uint64_t va,
			const uint8_t *p, uint32_t max, int write);
/* Take up the NIC MMU the driver described for c's new generation (its
 * size and directory, each page checked to be guest RAM).  0, or -1 after
 * logging why: the context cannot be served. */
int nicd_mmu_take(struct nicd *n, struct nicd_ctx *c);
/* Poll a wait: NICD_PENDING, 0 (retry the access) or an error status. */
int nicd_wait_poll(struct nicd *n, struct nicd_wait *w);
/* Forget fault bookkeeping (node down). */
void nicd_faults_reset(struct nicd_node *nd);

/*
 * Remote node access (nicd_rna.c): the only way an op touches the
 * target side.  Each checks that t still names a live context, then
 * brackets, translates and copies.  Each returns 0, NICD_PENDING (w says
 * what for) or an ELAN_E_* status.  With a fabric spanning several hosts,
 * these become request messages to the nicd that owns t->node.
 */
int nicd_rna_resolve(struct nicd *n, uint32_t dst, uint64_t cap,
		     struct nicd_target *t);
/* The target context if it is still the one resolved; else NULL and *st
 * says why (NODE_DOWN, TARGET_GONE). */
struct nicd_ctx *nicd_rna_target(struct nicd *n, const struct nicd_target *t,
				 int *st);
/* Up to *len bytes now (buf is contiguous for that many), *len set to
 * the bytes copied: at least to the end of va's page, as far as the
 * target's translations are contiguous; span: bytes the op goes on for
 * from va (>= *len). */
int nicd_rna_rw(struct nicd *n, struct nicd_engine *e,
		const struct nicd_target *t, uint64_t va, uint64_t span,
		uint8_t *buf, uint32_t *len, int to_target, struct nicd_wait *w);
/* size: 8 or 4 (va aligned to it); a 4-byte op takes the low 32 bits of
 * operand and compare and returns the old value zero-extended. */
int nicd_rna_atomic(struct nicd *n, struct nicd_engine *e,
		    const struct nicd_target *t, uint64_t va, int aop,
		    uint32_t size, uint64_t operand, uint64_t compare,
		    uint64_t *old, struct nicd_wait *w);
/* Store an atomic's fetched value (size 8 or 4) at p, aligned to size. */
void nicd_atomic_store_fetched(uint8_t *p, uint32_t size, uint64_t old);
int nicd_rna_recv(struct nicd *n, struct nicd_engine *e,
		  const struct nicd_target *t, uint32_t src, uint32_t tag,
		  const struct iovec *iov, int iovcnt, uint32_t len,
		  struct nicd_wait *w);
int nicd_rna_event_reserve(struct nicd *n, const struct nicd_target *t,
			   struct nicd_wait *w);
void nicd_rna_event_release(struct nicd *n, const struct nicd_target *t);
void nicd_rna_event_post(struct nicd *n, struct nicd_engine *e,
			 const struct nicd_target *t,
			 const struct elan_event *ev);

/* Tell the guests which nodes are up (nodes_up, ELAN_IRQ_STATE). */
void nicd_publish_nodes_up(struct nicd *n);
/* Engine: a fault of c's op was answered "loaded" (see nicd_engine.c). */
int nicd_fault_acked(struct nicd *n, struct nicd_ctx *c,
		     const struct nicd_wait *w);

#include "nicd_remote.h"

/*
 * While an op waits for ring space, the consumer rings the doorbell after
 * it made room (status.nic_waiting); the rings are still polled this
 * often, for consumers that do not (an older libelan).
 */
#define NICD_SPACE_POLL_NS	10000000ull

/* An op waiting this long is named in the log (once): a hang is visible. */
#define NICD_LONG_WAIT_NS	5000000000ull

/* The page size the engine splits at. */
#define NICD_PAGE	4096u
/* Most bytes one put/get chunk copies: bounds how long a bracket is open. */
#define NICD_RUN_MAX	((ELAN_ENGINE_RUN_PAGES - 1) * NICD_PAGE)

#endif /* NICD_H */
