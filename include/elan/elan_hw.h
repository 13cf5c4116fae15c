/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Elan NIC hardware interface: the layout of a node's NIC region, as
 * elan-nicd (the NIC) and elan.ko (its driver) share it.
 *
 * Each guest's ivshmem-doorbell device exposes its own NIC region as BAR2;
 * no other guest can see it.  The region holds a header (kernel only), and
 * for each context: a kernel-only control block and NIC MMU directory, and
 * the pages user space maps (see elan_uapi.h).  The NIC MMU tables
 * themselves are in guest RAM, kernel pages the directory names.  elan-nicd validates every field it
 * reads from a region: nothing a guest writes can make it touch memory
 * outside that guest's RAM and region or another job's contexts.
 *
 * Interrupt vectors (NIC -> driver) and doorbell vectors (driver -> NIC)
 * are the ivshmem-doorbell ones.
 */
#ifndef ELAN_HW_H
#define ELAN_HW_H

#include "elan_uapi.h"

#define ELAN_HW_MAGIC		0x31434e4e414c45ULL	/* "ELANNC1" */
#define ELAN_HW_VERSION		5	/* 3: the NIC MMU in guest RAM, 4: 2 MiB entries,
					 * 5: 128 receive slots, so contexts of 640 KiB */
#define ELAN_REGION_SIZE	(32u << 20)	/* power of two for the BAR */

/* NIC -> driver interrupt vectors. */
enum elan_hw_irq {
	ELAN_IRQ_EVENT	= 0,	/* events for an armed context */
	ELAN_IRQ_FAULT	= 1,	/* translation fault requests posted */
	ELAN_IRQ_STATE	= 2,	/* NIC or fabric state changed */
	ELAN_NR_IRQS	= 4,
};

/* Driver -> NIC doorbell vectors (the NIC is peer 0). */
enum elan_hw_doorbell {
	ELAN_DB_WORK	= 0,	/* commands posted while nic_sleeping */
	ELAN_DB_FAULT	= 1,	/* fault replies posted */
	ELAN_DB_CTX	= 2,	/* a context was attached or detached */
	ELAN_DB_RESET	= 3,	/* the driver let go: a fresh region, please */
};
#define ELAN_NIC_PEER_ID	0

#define ELAN_MAX_ENGINES	4
#define ELAN_FAULTQ_ENTRIES	256

/*
 * Shootdown.  A DMA engine brackets every chunk it moves (at most one run
 * of ELAN_ENGINE_RUN_PAGES pages on each side) with seq: it makes seq odd,
 * issues a full fence, reads the translations, copies, then makes seq
 * even.  A driver that removed or downgraded a translation issues a full
 * fence, and for each engine whose seq is odd waits until seq changes.
 * Then no chunk that read the old translation is still running.  nicd
 * writes an engine's seq into the region of every node whose translation
 * the chunk uses.
 *
 * A chunk also names the guest pages it uses on this node, in run[]: each
 * translation is published there, then a full fence, then the NIC reads
 * its tag once more and drops the translation if it changed.  So a driver
 * that removed a translation, fenced, and finds seq still odd knows every
 * page the chunk may still touch even if the NIC never ends the chunk in
 * time (a stalled elan-nicd): it keeps those pages from reuse
 * (quarantine) until seq moves on.
 */
#define ELAN_ENGINE_RUNS	2	/* runs of one node in one chunk */
/* pages in one run at most: 64 KiB from an unaligned address */
#define ELAN_ENGINE_RUN_PAGES	17

struct elan_hw_engine_run {
	__u64 pfn;		/* first guest page frame of the run */
	__u32 pages;		/* pages from pfn, contiguous */
	__u32 pad;
};

struct elan_hw_engine {
	__u64 seq;
	__u32 ctx;		/* context whose translation is in use */
	__u32 runs;		/* entries of run[] this chunk published */
	struct elan_hw_engine_run run[ELAN_ENGINE_RUNS];
};
/*
 * engine.ctx when the chunk uses translations of two contexts of this node
 * (a transfer between two contexts of one node): every context must wait.
 */
#define ELAN_HW_ENGINE_CTX_ANY	0xffffffffu

/*
 * A translation fault: the NIC posts it (req_seq = position + 1, written
 * last), the driver services it, writes status and then ack_seq =
 * req_seq, and rings ELAN_DB_FAULT.  The NIC retries the access after the
 * ack; status tells it when to give up instead.  pages is a hint: the
 * operation goes on to touch that many pages from vaddr on (at least 1),
 * so the driver may fault in and load those too.
 */
struct elan_hw_fault {
	__u64 vaddr;		/* page-aligned user address */
	__u32 ctx;
	__u32 write;		/* nonzero: the NIC wants to write */
	__u32 status;		/* enum elan_status: 0 loaded, or a fault error */
	__u32 req_seq;		/* written by the NIC */
	__u32 ack_seq;		/* written by the driver */
	__u32 pages;		/* pages the operation touches from vaddr */
};

struct elan_hw_header {
	__u64 magic;			/* ELAN_HW_MAGIC: tells a plain ivshmem apart */
	__u32 version;			/* ELAN_HW_VERSION */
	__u32 region_size;
	__u32 node;			/* this node's number */
	__u32 nodes;			/* nodes on the fabric */
	__u32 max_ctx;			/* ELAN_MAX_CTX */
	__u32 ctx_off;			/* offset of context 0 */
	__u32 ctx_stride;		/* bytes per context */
	__u32 nic_state;		/* ELAN_NIC_* (written by the NIC) */
	__u32 nic_sleeping;		/* NIC waits for a doorbell */
	__u32 nic_epoch;		/* bumped on each NIC start */
	__u64 heartbeat;		/* NIC clock ticks while running */
	__u32 fault_head;		/* driver: faults consumed (position) */
	__u32 pad0;
	struct elan_hw_engine engine[ELAN_MAX_ENGINES];
	__u64 nodes_up;			/* NIC: bit n set while node n is connected */
	__u8  pad2[4096 - 64 - ELAN_MAX_ENGINES * sizeof(struct elan_hw_engine) - 8];
	struct elan_hw_fault faultq[ELAN_FAULTQ_ENTRIES];
};

enum elan_nic_state {
	ELAN_NIC_DOWN	= 0,
	ELAN_NIC_UP	= 1,
};

/*
 * NIC MMU: a set-associative translation table per context, in guest RAM.
 * ctl.mmu_sets sets (a power of two, ELAN_MMU_MIN_SETS..ELAN_MMU_MAX_SETS)
 * of ELAN_MMU_WAYS entries; ELAN_MMU_PAGE_SETS sets fill one page, and the
 * context's MMU directory (in the region) holds the guest frame of each
 * page in order.  The driver sizes the table to the memory a job may use
 * and writes the directory and mmu_sets before it makes the context
 * ACTIVE; the NIC takes both up with the generation (later writes are not
 * seen) and fails a context whose size is out of range or whose directory
 * names a frame outside guest RAM.
 */
#define ELAN_MMU_WAYS		4
#define ELAN_MMU_VALID		0x1ULL
#define ELAN_MMU_WRITE		0x2ULL
#define ELAN_MMU_HUGE		0x4ULL	/* a 2 MiB entry */
#define ELAN_MMU_VPN_SHIFT	12
#define ELAN_MMU_HUGE_SHIFT	21
#define ELAN_MMU_PAGE_SETS	(ELAN_PAGE / (ELAN_MMU_WAYS * 16))	/* 64 */
#define ELAN_MMU_DIR_ENTRIES	8192
#define ELAN_MMU_MIN_SETS	ELAN_MMU_PAGE_SETS
#define ELAN_MMU_MAX_SETS	(ELAN_MMU_DIR_ENTRIES * ELAN_MMU_PAGE_SETS)

/*
 * tag = vaddr page | ELAN_MMU_* flags; 0 is an empty entry.  With
 * ELAN_MMU_HUGE the entry translates the 2 MiB-aligned block at the
 * tag's address (kept in that address's set) to the 512 frames from pfn
 * on: the NIC looks a page up in its own set first, then as a block in
 * the set of the block's address.  The driver
 * installs pfn first and tag last (release), removes by writing tag = 0.
 * The NIC reads tag, pfn, then tag again, and uses pfn only if both tags
 * are equal, valid and match; the shootdown covers the rest.  Evicting an
 * entry (replacing it to make room) needs no shootdown at once, but a
 * chunk may still be using the victim's page: the next removal of a
 * translation of that context must wait for the engines even when the
 * entry it removes was not in the table.
 */
struct elan_hw_tlbe {
	__u64 tag;
	__u64 pfn;		/* guest page frame number */
};

/* The set of @vaddr in a table of @sets sets (a power of two). */
static inline unsigned int elan_mmu_set(__u64 vaddr, __u32 sets)
{
	__u64 vpn = vaddr >> ELAN_MMU_VPN_SHIFT;

	/* consecutive pages in consecutive sets */
	return (unsigned int)((vpn ^ (vpn >> 20) ^ (vpn >> 40)) & (sets - 1));
}

/* The ELAN_MMU_WAYS entries of set @s; @page[]: each table page's address. */
static inline struct elan_hw_tlbe *elan_mmu_ways(struct elan_hw_tlbe *const *page,
						 __u32 s)
{
	return page[s / ELAN_MMU_PAGE_SETS] +
	       (s % ELAN_MMU_PAGE_SETS) * ELAN_MMU_WAYS;
}

/* Kernel-only control block of a context. */
struct elan_hw_ctx {
	__u32 state;		/* ELAN_CTX_* (driver writes ACTIVE/FREE) */
	__u32 generation;	/* bumped by the driver on each attach */
	__u64 capability;	/* job key */
	__u32 armed;		/* driver: interrupt on the next event */
	__u32 nic_state;	/* NIC: ELAN_CTX_* as the NIC sees it */
	__u32 nic_error;	/* NIC: enum elan_status of a failure */
	__u32 nic_generation;	/* NIC: the generation it has taken up */
	__u32 mmu_sets;		/* driver: sets of the NIC MMU table */
	__u32 pad[1015];
};

/* Layout of one context inside the region (offsets from its start). */
#define ELAN_CTX_OFF_CTL	0
#define ELAN_CTX_OFF_CMD	ELAN_PAGE				/* CMD area */
#define ELAN_CTX_OFF_EVT	(ELAN_CTX_OFF_CMD + ELAN_CMD_AREA_SIZE)	/* EVT area */
#define ELAN_CTX_OFF_MMU	(ELAN_CTX_OFF_EVT + ELAN_EVT_AREA_SIZE)	/* MMU directory */
#define ELAN_CTX_MMU_DIR_SIZE	(ELAN_MMU_DIR_ENTRIES * sizeof(__u64))
#define ELAN_CTX_STRIDE		(640u << 10)
#define ELAN_REGION_OFF_CTX	(64u << 10)

/* Where the pieces of one context lie (see the layout above). */
struct elan_hw_ctx_map {
	struct elan_hw_ctx *ctl;		/* kernel only */
	struct elan_user_ctl *uctl;		/* CMD area: user ctl ... */
	struct elan_cmd *cmdq;			/* ... and command queue */
	struct elan_user_status *status;	/* EVT area: NIC status ... */
	struct elan_event *evq;			/* ... event ring ... */
	__u8 *recvq;				/* ... and receive ring */
	__u64 *mmu_dir;				/* kernel only */
};

/*
 * The map of the context whose block starts at @base: region +
 * header.ctx_off + index * header.ctx_stride (ELAN_REGION_OFF_CTX and
 * ELAN_CTX_STRIDE as the NIC lays it out).
 */
static inline struct elan_hw_ctx_map elan_hw_ctx_map(void *base)
{
	__u8 *b = (__u8 *)base;
	struct elan_hw_ctx_map m;

	m.ctl = (struct elan_hw_ctx *)(void *)(b + ELAN_CTX_OFF_CTL);
	m.uctl = (struct elan_user_ctl *)(void *)(b + ELAN_CTX_OFF_CMD);
	m.cmdq = (struct elan_cmd *)(void *)(b + ELAN_CTX_OFF_CMD + ELAN_PAGE);
	m.status = (struct elan_user_status *)(void *)(b + ELAN_CTX_OFF_EVT);
	m.evq = (struct elan_event *)(void *)(b + ELAN_CTX_OFF_EVT +
					      ELAN_EVT_OFF_EVQ);
	m.recvq = b + ELAN_CTX_OFF_EVT + ELAN_EVT_OFF_RECVQ;
	m.mmu_dir = (__u64 *)(void *)(b + ELAN_CTX_OFF_MMU);
	return m;
}

#endif /* ELAN_HW_H */
