/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * libelan: user-space access to the Elan NIC.
 *
 * A context is one attachment to the NIC (one open of /dev/elan0): it has
 * a NIC address (node << 16 | context), a command queue that this library
 * writes and the NIC reads, an event ring and a receive ring that the NIC
 * writes and this library reads.  Nothing is registered or pinned: any
 * address of the process can be used in a command at any time, and the
 * NIC follows every change to the process's memory (munmap, fork/COW,
 * swap, migration, ...).
 *
 * Fast path: posting a command and reading an event are plain memory
 * accesses, with no system call; the library rings the doorbell (one
 * ioctl) only when the NIC has said it is asleep: after posting the
 * first command the sleeping NIC has not seen (not for the commands
 * behind it, nor while the NIC is stalled on this queue:
 * elan_doorbell_needed() in elan_uapi.h), and after consuming an event
 * or a message while the NIC waits for room in this context's rings
 * (status.nic_waiting).
 *
 * Errors: functions return 0 (or a count) on success and a negative errno
 * value on failure; they do not set errno.  The NIC's own status codes
 * (enum elan_status, in completion events) are positive: see
 * elan_strerror().
 *
 * Threads: a context is single-producer single-consumer.  One thread may
 * post commands while another consumes events and messages, but two
 * threads must not post (or consume) on the same context at once without
 * a lock of their own.  Different contexts are independent.
 *
 * Ordering guarantees:
 *  - Commands of one context start in the order they were posted; they
 *    may complete (and their events arrive) in any order, except that an
 *    ELAN_OP_FENCE completes only after every command posted before it.
 *  - Every posted command ends in exactly one event in this context's
 *    event ring (ELAN_EV_DONE, status 0 or an error); nothing is dropped.
 *    When the event ring is full the NIC stops taking commands until
 *    events are consumed, so keep consuming events.
 *  - When a put's or get's completion event has been read, its data is in
 *    place (in the target's memory for a put, in ours for a get).  For an
 *    atomic with a fetch address, the old value is stored there before
 *    the event, and also returned in event.value.
 *  - A put or atomic with ELAN_CMDF_REMOTE_EVENT also posts an
 *    ELAN_EV_REMOTE event at the target, after the data is in place.
 *  - Messages (elan_send) between one pair of contexts arrive in order.
 *    A full receive ring at the target holds the sender back (its send
 *    completes later); it is never dropped.
 *  - Local buffers may be reused once the command's event was read.
 */
#ifndef LIBELAN_ELAN_H
#define LIBELAN_ELAN_H

#include <stddef.h>
#include <stdint.h>

#include <elan/elan_uapi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An attached NIC context.  Opaque. */
typedef struct elan_ctx elan_ctx_t;

/**
 * elan_open() - attach a new NIC context
 * @capability: the job key; only contexts with equal keys reach each other
 * @ctxp: where the new context is returned
 *
 * Opens the device (ELAN_DEVICE, or $ELAN_DEVICE if set), attaches and
 * maps the queues.  The context belongs to the calling process: a child
 * of fork() does not inherit it (its queues are not mapped in the child)
 * and must open its own.
 *
 * Return: 0; -ENOENT or -ENODEV when there is no NIC, -ENETDOWN when the
 * NIC is not running, -ENOSPC when every context of the node is taken,
 * -EPROTO on an ABI mismatch, -EIO when the NIC was declared dead, or
 * another negative errno.
 */
int elan_open(uint64_t capability, elan_ctx_t **ctxp);

/**
 * elan_mix64() - splitmix64's finaliser, to derive a capability from a
 * launcher's job key (btl elan and uct elan hash the same way)
 */
uint64_t elan_mix64(uint64_t x);

/**
 * elan_close() - detach and free a context
 *
 * Commands still in flight are abandoned: the NIC stops the context and
 * no further event is delivered.  Memory the NIC was writing may or may
 * not have been written.  @ctx may be NULL.  Return: 0.
 */
int elan_close(elan_ctx_t *ctx);

/** elan_addr() - this context's NIC address, ELAN_ADDR(node, context) */
uint32_t elan_addr(const elan_ctx_t *ctx);

/** elan_nodes() - the number of nodes on the fabric */
uint32_t elan_nodes(const elan_ctx_t *ctx);

/** elan_fd() - the file descriptor to poll() for events (POLLIN) */
int elan_fd(const elan_ctx_t *ctx);

/*
 * Posting commands.  Each takes the target context's address @dst (as
 * elan_addr() returned it there), a @cookie that comes back in the
 * completion event, and @flags (ELAN_CMDF_*).  Each returns 0 when the
 * command was queued, or:
 *   -EAGAIN  the command queue is full: consume events and try again;
 *   -EPIPE   the context has failed (see elan_state()); close it;
 *   -EINVAL  an argument the library can check is wrong (the NIC checks
 *            the rest and answers with ELAN_E_BADCMD).
 * Remote addresses are virtual addresses in the target process.
 */

/** elan_put() - write @len bytes at @src to @raddr in @dst */
int elan_put(elan_ctx_t *ctx, uint32_t dst, const void *src, uint64_t raddr,
	     uint64_t len, uint64_t cookie, unsigned int flags);

/** elan_get() - read @len bytes at @raddr in @dst into @buf */
int elan_get(elan_ctx_t *ctx, uint32_t dst, void *buf, uint64_t raddr,
	     uint64_t len, uint64_t cookie, unsigned int flags);

/**
 * elan_atomic() - a 64-bit atomic on @raddr (8-byte aligned) in @dst
 * @op: enum elan_atomic_op
 * @operand: the value added, and-ed, or-ed, xor-ed, swapped in, or for
 *           ELAN_AOP_CSWAP stored if the old value equals @compare
 * @fetch: NULL, or where the old value is stored before the completion
 *         event (which also carries it in value)
 */
int elan_atomic(elan_ctx_t *ctx, uint32_t dst, uint64_t raddr,
		enum elan_atomic_op op, uint64_t operand, uint64_t compare,
		uint64_t *fetch, uint64_t cookie, unsigned int flags);

/**
 * elan_atomic32() - the same on a 32-bit word (@raddr 4-byte aligned):
 * the 4 bytes around it are never touched; @fetch (4-byte aligned)
 * receives the old value, and the event's value carries it zero-extended
 */
int elan_atomic32(elan_ctx_t *ctx, uint32_t dst, uint64_t raddr,
		  enum elan_atomic_op op, uint32_t operand, uint32_t compare,
		  uint32_t *fetch, uint64_t cookie, unsigned int flags);

/**
 * elan_send() - send a message of @len <= ELAN_SEND_MAX bytes into the
 * receive ring of @dst, with @tag.  The buffer may be reused after the
 * completion event.  -EMSGSIZE when @len is too large.
 */
int elan_send(elan_ctx_t *ctx, uint32_t dst, uint32_t tag, const void *buf,
	      uint64_t len, uint64_t cookie, unsigned int flags);

/** elan_fence() - completes when every command posted before it has */
int elan_fence(elan_ctx_t *ctx, uint64_t cookie, unsigned int flags);

/** elan_nop() - completes at once: a marker in the event stream */
int elan_nop(elan_ctx_t *ctx, uint64_t cookie);

/**
 * elan_post() - post a raw command (tests and unusual uses): @cmd is
 * copied as it is, except for its seq field, which the library sets.
 */
int elan_post(elan_ctx_t *ctx, const struct elan_cmd *cmd);

/**
 * elan_batch_begin() - hold back doorbells until elan_batch_end()
 *
 * Commands posted and ring slots freed in a batch ring the doorbell at
 * most once, at its end, if the NIC sleeps then.  A NIC woken by the
 * first command of a burst would take the CPU from the very process that
 * is about to post the rest (each vCPU and the NIC's thread share few
 * host CPUs), and serve the burst one command per wake-up.  Batches nest;
 * the outermost end rings.  Use them around loops that post, such as a
 * progress function's completion and receive callbacks.
 */
void elan_batch_begin(elan_ctx_t *ctx);

/** elan_batch_end() - end a batch: ring the doorbell once if needed */
void elan_batch_end(elan_ctx_t *ctx);

/** elan_cmdq_space() - how many commands can be posted now */
unsigned int elan_cmdq_space(const elan_ctx_t *ctx);

/*
 * Completions and messages.
 */

/**
 * elan_poll_event() - take the next event, if any; never blocks
 *
 * Return: 1 and *@ev filled, 0 when there is none, -EPIPE when there is
 * none and the context has failed or was stopped.
 */
int elan_poll_event(elan_ctx_t *ctx, struct elan_event *ev);

/**
 * elan_recv() - look at the oldest message in the receive ring, if any
 * @hdr: filled with its header (src, tag, len)
 * @payload: set to its payload (hdr->len bytes, read-only) in the ring
 *
 * The message stays in the ring, and elan_recv() returns the same one,
 * until elan_recv_release() is called; the payload pointer is valid until
 * then.  Return: 1, or 0 when the ring is empty.
 */
int elan_recv(elan_ctx_t *ctx, struct elan_recv_hdr *hdr,
	      const void **payload);

/** elan_recv_release() - hand the oldest message's slot back to the NIC */
void elan_recv_release(elan_ctx_t *ctx);

/**
 * elan_wait() - sleep until an event or a message is there
 * @timeout_ms: as for poll(): -1 waits for ever, 0 does not wait
 *
 * Return: 1 when an event or message is ready, 0 on timeout, -EPIPE when
 * the context has failed or was stopped, -EINTR on a signal, or another
 * negative errno.
 */
int elan_wait(elan_ctx_t *ctx, int timeout_ms);

/**
 * elan_state() - the context's state as the NIC sees it
 * @error: if not NULL, the enum elan_status of a failure
 *
 * Return: ELAN_CTX_ACTIVE, ELAN_CTX_FAILED or ELAN_CTX_FREE (stopped).
 */
int elan_state(const elan_ctx_t *ctx, uint32_t *error);

/**
 * elan_state_text() - the context's state in words, for messages
 *
 * "active", "failed: " and the reason, or "stopped by the driver".  A
 * context fails with ELAN_E_NODE_DOWN only when the NIC of its own node
 * is gone (a lost target ends single operations, not the context): the
 * text says so.  The string is valid until the next call in this thread.
 */
const char *elan_state_text(const elan_ctx_t *ctx);

/** elan_strerror() - a text for an enum elan_status (or a negative errno) */
const char *elan_strerror(int status);

/**
 * elan_counters() - the driver's counters for the node's NIC
 * @ctx: a context, or NULL to open the device just for this
 *
 * pages_referenced is always 0: the driver never holds a page.
 * Return: 0 or a negative errno.
 */
int elan_counters(elan_ctx_t *ctx, struct elan_counters *out);

#ifdef __cplusplus
}
#endif

#endif /* LIBELAN_ELAN_H */
