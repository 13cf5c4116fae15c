/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elan.ko internals: the device, its contexts and the NIC MMU upkeep.
 *
 * Locking (IOPROC mode; in notifier mode the interval notifier's
 * invalidate and the fault service's install are serialised by
 * elan_ctx.lock alone, with the notifier's sequence, and only the kernel's
 * update op, where it has one, runs under a PTE lock, and under the mm's
 * notifier lock, and takes elan_ctx.lock):
 *   elan_ctx.mutex  attach (sleeps); never held while a PTE lock is taken
 *                   by us, and never around copy_to/from_user.
 *   PTE/PMD lock -> elan_ctx.lock
 *                   Hooks run under the page table lock and take the
 *                   context lock; ioproc_load() takes the page table lock
 *                   and its callback takes the context lock.  So the
 *                   context lock is never held while calling ioproc_load().
 *   elan_dev.slot_lock  the slot table; taken alone (never with ctx.lock).
 */
#ifndef ELAN_DRV_H
#define ELAN_DRV_H

#include <linux/types.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/miscdevice.h>
#include <linux/mmu_notifier.h>
#ifdef CONFIG_IOPROC
#include <linux/ioproc.h>
#endif

/*
 * Two ways to follow a process's page tables (module parameter mode):
 * the IOPROC hooks, on a kernel with the series, and mmu_interval_notifier
 * with hmm_range_fault(), the way ODP and HMM drivers do it, on any
 * kernel with CONFIG_HMM_MIRROR (and on request on one with IOPROC).
 */
#if IS_ENABLED(CONFIG_HMM_MIRROR)
#define ELAN_HAVE_NOTIFIER	1
#else
#define ELAN_HAVE_NOTIFIER	0
#endif
#if !defined(CONFIG_IOPROC) && !ELAN_HAVE_NOTIFIER
#error "elan.ko needs CONFIG_IOPROC or CONFIG_HMM_MIRROR"
#endif

/*
 * Notifier mode on a kernel whose interval notifiers have the update op
 * (kernel/6.12's optional mmu_notifier patch; driver/Kbuild finds it in
 * the kernel's mmu_notifier.h): the NIC MMU is told of PTEs established
 * and reloads the pages it used, unless the module parameter update is 0.
 */
#if ELAN_HAVE_NOTIFIER && defined(ELAN_HAVE_MNI_UPDATE)
#define ELAN_HAVE_UPDATE	1
#else
#define ELAN_HAVE_UPDATE	0
#endif

#include <elan/elan_hw.h>

struct pci_dev;
struct dentry;

/* The most pages one NIC fault loads (module parameter fault_around). */
#define ELAN_FAULT_AROUND_MAX	64

struct elan_stats {
	atomic64_t translations_loaded;
	atomic64_t preloads;
	atomic64_t faults;
	atomic64_t fault_errors;
	atomic64_t invalidations;
	atomic64_t shootdown_waits;
	atomic64_t pages_referenced;	/* nothing ever takes one: stays 0 */
	/* not in the ABI; shown in debugfs only */
	atomic64_t shootdown_timeouts;
	atomic64_t evictions;
	atomic64_t huge_loaded;		/* 2 MiB entries installed */
	atomic64_t attaches;
	atomic64_t detaches;
	atomic64_t releases;
	atomic64_t doorbells;
	atomic64_t irq_event;
	atomic64_t irq_fault;
	atomic64_t irq_state;
	atomic64_t quarantines;		/* stalled chunks whose pages were kept */
	atomic64_t pages_quarantined;	/* pages kept now */
	/* notifier mode */
	atomic64_t fault_retries;	/* loads raced by an invalidation */
	atomic64_t pages_dirtied;	/* write entries dropped: page dirtied */
};

/*
 * The pages a chunk that did not end in time may still touch, as its
 * engine record named them (elan_hw.h): kept (a folio reference each)
 * until the engine's seq moves on from seq.
 */
struct elan_quarantine {
	u64 seq;			/* the stalled chunk; 0: none */
	unsigned int n;
	struct folio *folio[ELAN_ENGINE_RUNS * ELAN_ENGINE_RUN_PAGES];
};

/*
 * A slot's NIC MMU table (elan_hw.h): sets * ELAN_MMU_WAYS entries in
 * kernel pages of guest RAM that the slot's directory names.  Allocated
 * at the slot's first attach and kept for the device's life: the NIC may
 * read a table until it has seen its context FREE, and the slot's next
 * owner reuses it.  Under the owning context's lock.
 */
struct elan_mmu_table {
	unsigned int sets;		/* 0: not allocated */
	struct elan_hw_tlbe **page;	/* sets / ELAN_MMU_PAGE_SETS pages */
	u8 *victim;			/* next way to evict, per set */
	unsigned int nr_entries;	/* valid entries */
	unsigned int nr_huge;		/* of them, 2 MiB entries */
	bool marks;			/* refresh marks may be left (notifier update) */
	unsigned long lo, hi;		/* what every entry translates is in [lo, hi) */
};

struct elan_dev {
	struct kref ref;
	struct pci_dev *pdev;
	void __iomem *regs;		/* BAR0: ivshmem registers */
	void *region;			/* BAR2: the NIC region, memremap WB */
	phys_addr_t region_phys;
	size_t region_len;
	struct elan_hw_header *hdr;
	u32 node, nodes, max_ctx, ctx_off, ctx_stride;

	struct miscdevice misc;
	bool misc_registered;
	wait_queue_head_t waitq;	/* pollers of every context */
	struct workqueue_struct *fault_wq;
	struct work_struct fault_work;
	/* notifier mode: hmm_range_fault()'s output, for the fault work only */
	unsigned long fault_pfns[2 * ELAN_FAULT_AROUND_MAX];
	struct delayed_work watchdog;	/* NIC heartbeat */
	u64 last_heartbeat;
	u64 dead_heartbeat;		/* the heartbeat when it was declared dead */
	unsigned long heartbeat_seen;	/* jiffies of its last change */
	int nvec;

	spinlock_t slot_lock;		/* slot[] */
	struct elan_ctx *slot[ELAN_MAX_CTX];
	struct mutex mmu_mutex;		/* freeing mmu[]'s pages; their counting */
	struct elan_mmu_table mmu[ELAN_MAX_CTX];	/* per slot */
	bool mmu_free;			/* the NIC let go of them: free at the end */

	spinlock_t quar_lock;		/* quar[] */
	struct elan_quarantine quar[ELAN_MAX_ENGINES];

	atomic_t dead;			/* enum elan_dead_reason, 0: alive */
	bool removed;
	u32 last_nic_state, last_epoch;
	struct elan_stats st;
	struct dentry *dbg;
};

/* Why the NIC is considered dead; 0 while it is not. */
enum elan_dead_reason {
	ELAN_ALIVE = 0,
	ELAN_DEAD_SHOOTDOWN,		/* a DMA chunk did not end in time */
	ELAN_DEAD_HEARTBEAT,		/* the heartbeat stopped */
	ELAN_DEAD_DOWN,			/* the NIC said it went down */
};

enum elan_ctx_phase {
	ELAN_PHASE_NEW = 0,		/* opened, not attached */
	ELAN_PHASE_ACTIVE,		/* attached: slot, mm, hooks */
	ELAN_PHASE_DOWN,		/* mm released or detached: slot kept */
};

/* Faulted pages kept from eviction: fewer than the ways of a set. */
#define ELAN_MMU_RECENT		3

/* One open file of /dev/elan0: one context once attached. */
struct elan_ctx {
	struct kref ref;		/* the file; a fault being serviced */
	struct elan_dev *dev;
	struct file *file;
	struct mutex mutex;		/* attach / detach */
	int phase;			/* enum elan_ctx_phase, under mutex */
	unsigned int idx;		/* slot */
	struct mm_struct *mm;		/* mmgrab()ed at attach */
	bool notifier;			/* notifier mode (else IOPROC) */
	bool update;			/* notifier mode with the update op */
	bool registered;		/* ops or mni registered on mm */
#ifdef CONFIG_IOPROC
	struct ioproc_ops ops;
#endif
#if ELAN_HAVE_NOTIFIER
	/* notifier mode: the whole address space, one interval */
	struct mmu_interval_notifier mni;
#endif

	struct elan_hw_ctx_map map;	/* the slot's pieces in the NIC region */
	struct elan_mmu_table *mmu;	/* the slot's table */
	phys_addr_t cmd_phys, evt_phys;

	spinlock_t lock;		/* the MMU table; after a PTE lock */
	bool live;			/* translations may be installed */
	bool sd_pending;		/* evicted: shoot down before next removal */
	/*
	 * Eviction: each set evicts its ways in turn (FIFO), but never the
	 * pages of the last ELAN_MMU_RECENT faults, so that the (up to two)
	 * translations one DMA chunk needs in this table, faulted in one
	 * after the other, are both there when the NIC retries.
	 */
	unsigned long recent[ELAN_MMU_RECENT];	/* pages of the last faults */
	unsigned int recent_pos;
};

/* elan_mmu.c, elan_fault.c */
#ifdef CONFIG_IOPROC
extern const struct ioproc_ops elan_ioproc_ops;
#endif
#if ELAN_HAVE_NOTIFIER
extern const struct mmu_interval_notifier_ops elan_mni_ops;
#endif
extern bool elan_notifier_mode;
#if ELAN_HAVE_UPDATE
extern bool elan_update;
#else
#define elan_update	false
#endif
bool elan_mmu_install(struct elan_ctx *c, unsigned long va,
		      unsigned long pfn, bool writable, bool huge);
bool elan_mmu_has(struct elan_ctx *c, unsigned long va, bool write);
int elan_mmu_table_alloc(struct elan_dev *dev, unsigned int i);
void elan_mmu_table_free(struct elan_mmu_table *t);
void elan_mmu_clear(struct elan_ctx *c);
unsigned long elan_mmu_valid(struct elan_mmu_table *t);
void elan_ctx_quiesce(struct elan_ctx *c, bool mm_gone);
bool elan_shootdown(struct elan_dev *dev, unsigned int ctx);
void elan_fault_work(struct work_struct *work);
void elan_nic_dead(struct elan_dev *dev, int why);
void elan_fail_slot(struct elan_dev *dev, unsigned int i);
void elan_ring(struct elan_dev *dev, unsigned int vector);
void elan_ctx_put(struct elan_ctx *c);
struct elan_ctx *elan_slot_get(struct elan_dev *dev, unsigned int i);
bool elan_nic_reset(struct elan_dev *dev);
unsigned int elan_quarantine_release(struct elan_dev *dev);
#define ELAN_SHOOTDOWN_ALL	ELAN_HW_ENGINE_CTX_ANY
extern unsigned int elan_shootdown_timeout_ms;

static inline void *elan_ctx_base(struct elan_dev *dev, unsigned int i)
{
	return dev->region + dev->ctx_off + (size_t)i * dev->ctx_stride;
}

static inline struct elan_hw_ctx *elan_hw_ctx(struct elan_dev *dev,
					      unsigned int i)
{
	return elan_hw_ctx_map(elan_ctx_base(dev, i)).ctl;
}

static inline struct elan_user_status *elan_status(struct elan_dev *dev,
						   unsigned int i)
{
	return elan_hw_ctx_map(elan_ctx_base(dev, i)).status;
}

static inline u64 *elan_mmu_dir(struct elan_dev *dev, unsigned int i)
{
	return elan_hw_ctx_map(elan_ctx_base(dev, i)).mmu_dir;
}

#endif /* ELAN_DRV_H */
