/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Elan NIC: the interface between user space, elan.ko and the NIC.
 *
 * A process opens /dev/elan0 and attaches a context with a job capability.
 * It then maps two areas of its context and talks to the NIC with no system
 * call on the fast path:
 *
 *   ELAN_MMAP_CMD (read-write): its control block and its command queue,
 *   ELAN_MMAP_EVT (read-only):  the NIC's status block, the event ring and
 *                               the receive ring.
 *
 * Rings are single-producer single-consumer.  A slot is valid when its seq
 * field holds the ring position + 1 (mod 2^32); the producer writes the
 * payload first and seq last (release), the consumer reads seq first
 * (acquire).  Every posted command ends in exactly one event in the
 * poster's event ring; a command whose event could not be posted is not
 * started (back-pressure: the queue stops advancing, nothing is dropped).
 */
#ifndef _UAPI_ELAN_H
#define _UAPI_ELAN_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <stdint.h>
#include <sys/ioctl.h>
#include <linux/types.h>	/* __u64 is unsigned long long there: never redefine it */
#endif

#define ELAN_DEVICE		"/dev/elan0"
/*
 * 2: 128 receive slots (were 32): a window of 64 small sends (osu_bw's)
 * and the reply fit in the receiver's ring, so a receiver that runs late
 * no longer holds the sender back.
 */
#define ELAN_ABI_VERSION	2

/* Sizes of one context's rings (entries; powers of two). */
#define ELAN_CMDQ_ENTRIES	256
#define ELAN_EVQ_ENTRIES	512
#define ELAN_RECVQ_ENTRIES	128
#define ELAN_RECV_SLOT		4096	/* bytes per receive slot */
#define ELAN_RECV_HDR		32
#define ELAN_SEND_MAX		(ELAN_RECV_SLOT - ELAN_RECV_HDR)
#define ELAN_MAX_CTX		32	/* contexts per node */
#define ELAN_MAX_NODES		64

/* A context's NIC address: node << 16 | context. */
#define ELAN_ADDR(node, ctx)	((__u32)(node) << 16 | (__u32)(ctx))
#define ELAN_ADDR_NODE(a)	((a) >> 16)
#define ELAN_ADDR_CTX(a)	((a) & 0xffff)

enum elan_op {
	ELAN_OP_NOP	= 0,	/* completes at once: a marker */
	ELAN_OP_PUT	= 1,	/* laddr[len] -> dst:raddr[len] */
	ELAN_OP_GET	= 2,	/* dst:raddr[len] -> laddr[len] */
	ELAN_OP_ATOMIC	= 3,	/* atomic of len 8 or 4 bytes at dst:raddr (len-aligned) */
	ELAN_OP_SEND	= 4,	/* laddr[len <= ELAN_SEND_MAX] -> dst's receive ring */
	ELAN_OP_FENCE	= 5,	/* completes when every earlier command has */
};

enum elan_atomic_op {
	ELAN_AOP_ADD	= 0,	/* *r += operand */
	ELAN_AOP_CSWAP	= 1,	/* if (*r == compare) *r = operand */
	ELAN_AOP_SWAP	= 2,	/* *r = operand */
	ELAN_AOP_AND	= 3,
	ELAN_AOP_OR	= 4,
	ELAN_AOP_XOR	= 5,
};

/* elan_cmd.flags */
#define ELAN_CMDF_FETCH		0x0001	/* atomic: old value -> laddr (len bytes) */
#define ELAN_CMDF_REMOTE_EVENT	0x0002	/* put/atomic: also an event at dst */

/* One command: 64 bytes, written by user space into its command queue. */
struct elan_cmd {
	__u8  op;		/* enum elan_op */
	__u8  aop;		/* enum elan_atomic_op */
	__u16 flags;		/* ELAN_CMDF_* */
	__u32 dst;		/* target context, ELAN_ADDR() */
	__u64 cookie;		/* returned in the completion event */
	__u64 laddr;		/* local virtual address */
	__u64 raddr;		/* remote virtual address */
	__u64 len;		/* bytes; atomics: 8 or 4 (the operand's size) */
	__u64 operand;		/* atomics (4-byte ones: the low 32 bits) */
	__u64 compare;		/* compare-and-swap (likewise) */
	__u32 tag;		/* send: delivered with the message */
	__u32 seq;		/* ring position + 1, written last */
};

/* Event types. */
enum elan_ev_type {
	ELAN_EV_DONE	= 1,	/* a command of this context completed */
	ELAN_EV_REMOTE	= 2,	/* a put/atomic with REMOTE_EVENT landed here */
	ELAN_EV_ERROR	= 3,	/* the context itself failed (bad queue entry) */
};

/* Status of an event: 0 or one of these (positive numbers). */
enum elan_status {
	ELAN_OK			= 0,
	ELAN_E_BADCMD		= 1,	/* malformed command (op, size, alignment) */
	ELAN_E_LOCAL_FAULT	= 2,	/* local address not mapped */
	ELAN_E_LOCAL_PROT	= 3,	/* local page does not allow the access */
	ELAN_E_REMOTE_FAULT	= 4,	/* remote address not mapped */
	ELAN_E_REMOTE_PROT	= 5,	/* remote page does not allow the access */
	ELAN_E_NO_CONTEXT	= 6,	/* no such node or context attached */
	ELAN_E_CAPABILITY	= 7,	/* target context is of another job */
	ELAN_E_TARGET_GONE	= 8,	/* target detached or exited meanwhile */
	ELAN_E_NODE_DOWN	= 9,	/* target node is not connected */
	ELAN_E_QUEUE		= 10,	/* queue entry out of sequence or corrupt */
	ELAN_STATUS_MAX
};

/* One event: 32 bytes, written by the NIC into the event ring. */
struct elan_event {
	__u64 cookie;		/* the command's, or the initiator's for REMOTE */
	__u64 value;		/* atomics: old value (zero-extended); REMOTE: raddr */
	__u32 len;		/* bytes moved */
	__u32 src;		/* REMOTE: initiator ELAN_ADDR() */
	__u8  type;		/* enum elan_ev_type */
	__u8  status;		/* enum elan_status */
	__u8  op;		/* the command's op */
	__u8  pad;
	__u32 seq;		/* ring position + 1, written last */
};

/* Header of a receive slot; the payload follows, ELAN_RECV_HDR from the start. */
struct elan_recv_hdr {
	__u32 src;		/* sender ELAN_ADDR() */
	__u32 tag;
	__u32 len;
	__u32 pad[4];
	__u32 seq;		/* ring position + 1, written last */
};

/*
 * ELAN_MMAP_CMD area: user-writable.  ctl first (one page), then the
 * command queue.  The NIC treats all of it as untrusted.
 */
struct elan_user_ctl {
	__u32 ev_head;		/* events consumed (position) */
	__u32 recv_head;	/* receive slots consumed */
	__u32 recv_seen;	/* receive slots looked at: tells the NIC the
				 * process runs (a hint, never trusted) */
	__u32 pad[1021];
};

/*
 * ELAN_MMAP_EVT area: read-only for user space.  status first (one page),
 * then the event ring, then the receive ring.
 */
struct elan_user_status {
	__u32 cmd_tail;		/* commands consumed by the NIC (position) */
	__u32 state;		/* ELAN_CTX_* */
	__u32 nic_sleeping;	/* nonzero: ring the doorbell after posting */
	__u32 error;		/* enum elan_status of a context failure */
	__u32 node;		/* this node */
	__u32 ctx;		/* this context */
	/*
	 * Nonzero while an operation of the NIC waits for space in this
	 * context's event ring or receive ring.  A consumer that moved
	 * ev_head or recv_head issues a full fence, then reads this and
	 * nic_sleeping, and rings the doorbell when both are set.  (A NIC
	 * that never sets it polls the rings instead.)
	 */
	__u32 nic_waiting;
	/*
	 * Nonzero while the NIC's current operation of this context waits
	 * (ring space at its target, a fault answer, its own event ring):
	 * the NIC comes back to this queue by itself when that wait ends,
	 * so a command posted behind it needs no doorbell.
	 */
	__u32 nic_stalled;
	__u32 pad[1016];
};

enum elan_ctx_state {
	ELAN_CTX_FREE		= 0,
	ELAN_CTX_ACTIVE		= 1,
	ELAN_CTX_FAILED		= 2,	/* see error; detach and attach again */
};

#define ELAN_PAGE		4096
#define ELAN_CMD_AREA_SIZE	(ELAN_PAGE + ELAN_CMDQ_ENTRIES * 64)
#define ELAN_EVT_OFF_EVQ	ELAN_PAGE
#define ELAN_EVT_OFF_RECVQ	(ELAN_PAGE + ELAN_EVQ_ENTRIES * 32)
#define ELAN_EVT_AREA_SIZE	(ELAN_EVT_OFF_RECVQ + ELAN_RECVQ_ENTRIES * ELAN_RECV_SLOT)

/*
 * Ring slots.  A slot at ring position @pos (a free-running __u32) is
 * valid when its seq field holds elan_ring_seq(pos); the producer writes
 * it last (release), the consumer reads it first (acquire).
 */
static inline __u32 elan_ring_seq(__u32 pos)
{
	return pos + 1;
}

static inline struct elan_cmd *elan_cmdq_slot(struct elan_cmd *cmdq, __u32 pos)
{
	return &cmdq[pos & (ELAN_CMDQ_ENTRIES - 1)];
}

static inline struct elan_event *elan_evq_slot(struct elan_event *evq,
					       __u32 pos)
{
	return &evq[pos & (ELAN_EVQ_ENTRIES - 1)];
}

/* The receive slot at @pos: its struct elan_recv_hdr, payload after it. */
static inline struct elan_recv_hdr *elan_recvq_slot(void *recvq, __u32 pos)
{
	return (struct elan_recv_hdr *)((char *)recvq +
		(unsigned long)(pos & (ELAN_RECVQ_ENTRIES - 1)) * ELAN_RECV_SLOT);
}

#ifndef __KERNEL__
/*
 * After posting the commands at positions [first, end) and a full fence:
 * must the poster ring the doorbell?  Only when the NIC sleeps, is not
 * stalled on this queue (above), and some of these commands but none
 * posted before them is still queued: an older queued command was posted
 * under this same rule, so its poster rang, or the NIC was awake and
 * looks at the queue again after it announces sleep (it sets
 * nic_sleeping, fences, then looks), or it is stalled on this queue.
 * Ringing for every command while the NIC sleeps cost a doorbell (a
 * system call and a device exit in a guest) for each command posted
 * while the first doorbell was waking it, or while it waited for a
 * receiver to make room.
 */
static inline int elan_doorbell_needed(const struct elan_user_status *st,
				       __u32 first, __u32 end)
{
	__u32 tail;

	if (!__atomic_load_n(&st->nic_sleeping, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&st->nic_stalled, __ATOMIC_RELAXED))
		return 0;
	tail = __atomic_load_n(&st->cmd_tail, __ATOMIC_ACQUIRE);
	return (__u32)(tail - first) < (__u32)(end - first);
}
#endif

/* mmap offsets of the two areas (multiples of the page size). */
#define ELAN_MMAP_CMD		0
#define ELAN_MMAP_EVT		(1UL << 20)

struct elan_attach {
	__u64 capability;	/* job key: only equal keys reach each other */
	__u32 abi_version;	/* in: ELAN_ABI_VERSION */
	__u32 addr;		/* out: this context's ELAN_ADDR() */
	__u32 nodes;		/* out: nodes on the fabric */
	__u32 pad;
};

struct elan_counters {
	__u64 translations_loaded;	/* by fault service */
	__u64 preloads;			/* by update hooks */
	__u64 faults;			/* NIC translation faults serviced */
	__u64 fault_errors;		/* answered with a fault/protection error */
	__u64 invalidations;		/* hook calls that dropped entries */
	__u64 shootdown_waits;		/* invalidations that waited for DMA */
	__u64 pages_referenced;		/* page references held now: must be 0 */
};

#define ELAN_IOC_MAGIC		0xEA
#define ELAN_IOC_ATTACH		_IOWR(ELAN_IOC_MAGIC, 1, struct elan_attach)
/* Wake the NIC: only needed when status.nic_sleeping was set. */
#define ELAN_IOC_DOORBELL	_IO(ELAN_IOC_MAGIC, 2)
#define ELAN_IOC_COUNTERS	_IOR(ELAN_IOC_MAGIC, 3, struct elan_counters)

#endif /* _UAPI_ELAN_H */
