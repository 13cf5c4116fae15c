/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fabric as the nicd library sees it: nodes owned by the nicd of
 * another host, the messages nicds exchange about them, and the narrow
 * interface to the transport that carries them (nic/nicd_fabric.c: UCX).
 * Included by nicd.h.  See nic/README.md, "The fabric".
 *
 * The library knows no transport: it builds and parses messages (header
 * struct nicd_fmsg, then up to NICD_FAB_CHUNK bytes of data) and hands
 * them to fabric->send() (small: read before it returns) or
 * fabric->send_buf() (big: a buffer of ours the transport takes over);
 * the transport authenticates peers and gives
 * every message of a linked peer to nicd_remote_rx().  Both run on the
 * engine's thread, between steps or inside one (threading as nicd.h).
 */
#ifndef NICD_REMOTE_H
#define NICD_REMOTE_H

#include <stdint.h>
#include <sys/uio.h>

struct nicd;
struct nicd_engine;
struct nicd_ctx;

/* Message types.  Requests carry the initiator's (src, tag[, chunk]);
 * the owner answers each with one REPLY carrying them back. */
enum nicd_fmsg_type {
	NICD_FM_RESOLVE = 1,	/* node, ctx, cap -> REPLY status, gen, epoch */
	NICD_FM_PUT,		/* target, addr, len, data -> REPLY status */
	NICD_FM_GET,		/* target, addr, len -> REPLY status, data */
	NICD_FM_ATOMIC,		/* target, addr, aop, chunk = size (8, 4), a, b -> REPLY status, a = old */
	NICD_FM_SEND,		/* target, a = tag, len, data -> REPLY status */
	NICD_FM_EVRES,		/* target -> REPLY status (an event credit held) */
	NICD_FM_EVPOST,		/* target, a = cookie, b = raddr, aop = op, len: no reply */
	NICD_FM_EVREL,		/* target: the credit given back, no reply */
	NICD_FM_REPLY,		/* answer to the request of (src, tag, chunk) */
	NICD_FM_STATE,		/* the sender's nodes: a = up mask, data = epochs */
	NICD_FM_MAX
};

/* The header of every message (the AM header; data is the AM's data). */
struct nicd_fmsg {
	uint8_t type;		/* NICD_FM_* */
	uint8_t status;		/* REPLY: ELAN_OK or ELAN_E_* */
	uint8_t aop;		/* ATOMIC: ELAN_AOP_*; EVPOST: op; REPLY: the request's type */
	uint8_t rsvd;
	uint32_t chunk;		/* PUT, GET: the op's chunk; EVPOST: the event's len;
				 * ATOMIC: the operand's size, 8 or 4 */
	uint32_t len;		/* bytes of data (GET request: wanted) */
	uint32_t src;		/* initiator ELAN_ADDR(node, ctx) */
	uint32_t tag;		/* initiator's op id */
	uint32_t node, ctx;	/* target */
	uint32_t gen, epoch;	/* target's generation, node epoch (resolved) */
	uint32_t pad;
	uint64_t cap;
	uint64_t addr;
	uint64_t a, b;		/* REPLY to a PUT that failed: a = bytes written */
};

/*
 * Most data bytes in one message: a PUT or GET chunk (256 KiB: over tcp
 * here fabric_test's 1 MiB put/get went 2.5, 2.8, 3.4 GB/s with 64, 128
 * and 256 KiB chunks; up to 16 in flight).  A chunk within one page of
 * the sender goes straight from guest RAM by send(), read before it
 * returns (UCX AM short: latency); a
 * bigger one is copied out under the sender's brackets into a buffer
 * of ours, handed over by send_buf() (UCX eager or rendezvous, completed
 * later, never touching guest RAM), and copied in by the receiver under
 * its brackets.  Why not straight into guest RAM: a transfer that runs
 * after its step would need a bracket held open that long, naming every
 * page it touches (elan_hw.h: 2 runs per engine), which the device ABI
 * cannot say yet.
 */
#define NICD_FAB_CHUNK	262144u
/* Chunks of one put/get in flight (at most 32: bits of rsent/racked). */
#define NICD_RWIN	16u
/* Requests the owner keeps waiting at most (faults, ring space). */
#define NICD_RPARK_MAX	32768u
/* ... and the data bytes they keep at most (a PUT keeps its chunk) */
#define NICD_RPARK_BYTES	(256ull << 20)

/* A message with its data in one buffer, given to the transport. */
struct nicd_fbuf {
	struct nicd_fmsg m;
	uint8_t data[];		/* m.len bytes */
};

/* The transport. */
struct nicd_fabric_ops {
	/*
	 * Send m (and iovcnt pieces of data, m->len bytes in all) to host.
	 * The data must be read before it returns (it may be guest RAM
	 * under the caller's shootdown bracket).  0: sent; NICD_PENDING:
	 * no resources now, try again; ELAN_E_NODE_DOWN: no link.
	 */
	int (*send)(void *arg, uint32_t host, const struct nicd_fmsg *m,
		    const struct iovec *iov, int iovcnt);
	/*
	 * Send b (b->m.len <= NICD_FAB_CHUNK bytes of data).  0: taken,
	 * the transport frees b once sent or failed; NICD_PENDING: too
	 * much is queued to that host already (a peer that does not read
	 * must not make us hold unbounded memory), b stays the caller's,
	 * try again; ELAN_E_NODE_DOWN: no link, b freed.
	 */
	int (*send_buf)(void *arg, uint32_t host, struct nicd_fbuf *b);
};

/* An owner's request that waits (a fault at its node, ring space). */
struct nicd_rpark {
	struct nicd_rpark *next;
	uint32_t host;
	uint32_t retries;	/* acks "loaded" with the page still missing */
	uint32_t done;		/* PUT: bytes written before it waited */
	struct nicd_wait w;
	struct nicd_fmsg m;
	uint8_t data[];		/* m.len bytes (PUT, SEND) */
};

/* An event credit a peer's op holds at one of our contexts. */
struct nicd_rres {
	struct nicd_rres *next;
	uint32_t host;
	struct nicd_target t;
};

/* Node is owned by the nicd of host (index in the fabric table). */
int nicd_node_remote(struct nicd *n, uint32_t node, uint32_t host);
/* Is dst (ELAN_ADDR) a node of another host? */
int nicd_addr_remote(const struct nicd *n, uint32_t dst);

/*
 * A message from host (authenticated by the transport): validated like a
 * guest's writes (a bad one is counted, logged and dropped; it can harm
 * only the sender's own requests), then run: requests as the target half
 * of the op (resolve, capability, generation, epoch, bracket, translate,
 * fault and park, copy, event credits), replies into the waiting op.
 * data: len bytes, valid during the call.  0, or -1 if it was invalid.
 */
int nicd_remote_rx(struct nicd *n, struct nicd_engine *e, uint32_t host,
		   const struct nicd_fmsg *m, const void *data, size_t len);

/* The link to host is up: tell it our nodes (a STATE message). */
int nicd_remote_send_state(struct nicd *n, uint32_t host);

/*
 * The link to host is gone: its nodes go down (ops on them end in
 * ELAN_E_NODE_DOWN, one event each, when next run), its waiting
 * requests are dropped and the event credits its ops held given back.
 */
void nicd_remote_host_down(struct nicd *n, uint32_t host);

/* Engine: run c's op, whose target is remote.  As an op_*() of the
 * engine: 0 or a status to complete with, NICD_PENDING to wait. */
int nicd_remote_op(struct nicd *n, struct nicd_engine *e, struct nicd_ctx *c,
		   uint32_t *budget);

/* Engine, every step: retry the owner's waiting requests.  Work done. */
int nicd_remote_poll(struct nicd *n, struct nicd_engine *e);

/* A credit at a remote target given back (nicd_rna_event_release). */
void nicd_remote_evrel(struct nicd *n, const struct nicd_target *t);

const char *nicd_fmsg_name(int type);

#endif /* NICD_REMOTE_H */
