// SPDX-License-Identifier: GPL-2.0
/*
 * Elan NIC MMU upkeep: the tables, the IOPROC hooks and the shootdown
 * handshake with the NIC (the translation fault service that fills the
 * tables is in elan_fault.c).
 *
 * Each context's NIC MMU is a set-associative table in guest RAM, named
 * by the slot's directory in the NIC region, that only this driver
 * writes.  Translations enter it from the fault service
 * (ioproc_load(), whose callback runs under the PTE lock) and, for pages
 * that already have an entry, from the update hooks; they leave it from
 * the invalidate and change_protection hooks, which run under the same
 * PTE lock, so an entry never outlives the PTE it was loaded from.  After
 * any removal or downgrade the hook waits for every DMA chunk that may
 * still use the old translation (the shootdown).  No page reference is
 * ever taken.
 */
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/ktime.h>
#include <linux/io.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "elan_drv.h"

unsigned int elan_shootdown_timeout_ms = 2000;
module_param_named(shootdown_timeout_ms, elan_shootdown_timeout_ms, uint,
		   0644);
MODULE_PARM_DESC(shootdown_timeout_ms,
		 "How long a shootdown waits for a DMA chunk before the NIC is declared dead (ms)");

static unsigned int elan_mmu_reach_mb;
module_param_named(mmu_reach_mb, elan_mmu_reach_mb, uint, 0644);
MODULE_PARM_DESC(mmu_reach_mb,
		 "Memory each context's NIC MMU translates without evicting (MiB; 0: all of RAM). Costs 1/256 of it per context used; taken at attach");

#define ELAN_TAG_VA(tag)	((tag) & ~(u64)(ELAN_PAGE - 1))
#define ELAN_HUGE_SIZE		(1UL << ELAN_MMU_HUGE_SHIFT)
#define ELAN_HUGE_MASK		(~(ELAN_HUGE_SIZE - 1))

/* ivshmem BAR0 register: write peer << 16 | vector to interrupt a peer */
#define IVSHMEM_DOORBELL	12

void elan_ring(struct elan_dev *dev, unsigned int vector)
{
	if (READ_ONCE(dev->removed))
		return;
	iowrite32((u32)ELAN_NIC_PEER_ID << 16 | vector,
		  dev->regs + IVSHMEM_DOORBELL);
}

/*
 * The driver lets go (remove): ask the NIC to start this node afresh
 * (ELAN_DB_RESET) and wait, bounded, for its new header.  Whatever is in
 * the region now, even garbage a bad kernel wrote over the header, the
 * fault queue and the engine seqs, is then not the next driver's
 * problem.  Called once the interrupts and the fault work are gone, so
 * that nothing of ours writes into the new region.  May sleep.
 */
bool elan_nic_reset(struct elan_dev *dev)
{
	u32 epoch = READ_ONCE(dev->hdr->nic_epoch);
	unsigned int i;

	iowrite32((u32)ELAN_NIC_PEER_ID << 16 | ELAN_DB_RESET,
		  dev->regs + IVSHMEM_DOORBELL);
	for (i = 0; i < 1000; i++) {
		/* the NIC writes the magic last (release): header complete */
		if (smp_load_acquire(&dev->hdr->magic) == ELAN_HW_MAGIC &&
		    READ_ONCE(dev->hdr->nic_epoch) != epoch)
			return true;
		usleep_range(1000, 2000);
	}
	dev_warn(&dev->pdev->dev, "the NIC did not reset its region\n");
	return false;
}

/*
 * The NIC missed a shootdown (it may still be using a translation that is
 * gone), stopped its heartbeat or went down.  Nothing can be waited for
 * any more; stop every context so that no new DMA starts and user space
 * sees the failure, and refuse further fault service and attaches.  May
 * be called in atomic context.
 */
void elan_nic_dead(struct elan_dev *dev, int why)
{
	static const char *const text[] = {
		[ELAN_DEAD_SHOOTDOWN] = "a DMA engine did not finish its chunk in time",
		[ELAN_DEAD_HEARTBEAT] = "its heartbeat stopped",
		[ELAN_DEAD_DOWN] = "it went down",
	};
	unsigned int i;

	if (atomic_cmpxchg(&dev->dead, ELAN_ALIVE, why) != ELAN_ALIVE)
		return;
	WRITE_ONCE(dev->dead_heartbeat, READ_ONCE(dev->hdr->heartbeat));
	/*
	 * The contexts before the message (slow on a serial console): a
	 * process woken by anything else must not find its context still
	 * ACTIVE on a dead NIC.
	 */
	for (i = 0; i < dev->max_ctx; i++)
		elan_fail_slot(dev, i);
	wake_up_all(&dev->waitq);
	dev_err(&dev->pdev->dev, "NIC declared dead: %s; contexts failed\n",
		text[why]);
}

/* An active context of a dead NIC: its owner sees it FAILED, NODE_DOWN. */
void elan_fail_slot(struct elan_dev *dev, unsigned int i)
{
	struct elan_hw_ctx *hw = elan_hw_ctx(dev, i);
	struct elan_user_status *st = elan_status(dev, i);

	if (READ_ONCE(hw->state) != ELAN_CTX_ACTIVE)
		return;
	WRITE_ONCE(hw->state, ELAN_CTX_FAILED);
	WRITE_ONCE(st->error, ELAN_E_NODE_DOWN);
	/* error before state, for user space */
	smp_wmb();
	WRITE_ONCE(st->state, ELAN_CTX_FAILED);
}

/*
 * Keep the page @pfn from reuse for q: a folio reference.  The page is
 * still allocated: its translation was removed just now (the chunk's
 * first quarantine comes from the first shootdown it held up), and pages
 * are freed only after that.
 */
static void elan_keep_page(struct elan_dev *dev, struct elan_quarantine *q,
			   u64 pfn)
{
	struct folio *folio;

	if (!pfn_valid(pfn) || q->n >= ARRAY_SIZE(q->folio))
		return;
	for (;;) {
		folio = page_folio(pfn_to_page(pfn));
		if (!folio_try_get(folio))
			return;		/* free already: nothing to keep */
		if (likely(folio == page_folio(pfn_to_page(pfn))))
			break;
		folio_put(folio);	/* split under us: again */
	}
	q->folio[q->n++] = folio;
	atomic64_inc(&dev->st.pages_quarantined);
}

static unsigned int elan_quarantine_drop(struct elan_dev *dev,
					 struct elan_quarantine *q)
{
	unsigned int n = q->n;

	while (q->n)
		folio_put(q->folio[--q->n]);
	atomic64_sub(n, &dev->st.pages_quarantined);
	q->seq = 0;
	return n;
}

/*
 * The engines in @busy did not end the chunks they were in (seq @seen)
 * and will not be waited for: keep the pages their records name until
 * they do.  A shootdown removed a translation and fenced before it read
 * seq; the NIC names each page, fences and reads the tag again before it
 * uses it (elan_hw.h), so a page the chunk may touch is named by now.
 * May be called in atomic context.
 */
static void elan_quarantine(struct elan_dev *dev, unsigned long busy,
			    const u64 *seen)
{
	struct elan_hw_engine *eng = dev->hdr->engine;
	unsigned int e, r, k, runs, pages;
	unsigned long flags;

	spin_lock_irqsave(&dev->quar_lock, flags);
	for_each_set_bit(e, &busy, ELAN_MAX_ENGINES) {
		struct elan_quarantine *q = &dev->quar[e];

		if (q->seq == seen[e])
			continue;	/* kept at an earlier shootdown */
		elan_quarantine_drop(dev, q);	/* an earlier chunk: over */
		/* the record after seq: pairs with the NIC's fences */
		smp_rmb();
		runs = min_t(u32, READ_ONCE(eng[e].runs), ELAN_ENGINE_RUNS);
		for (r = 0; r < runs; r++) {
			u64 pfn = READ_ONCE(eng[e].run[r].pfn);

			pages = min_t(u32, READ_ONCE(eng[e].run[r].pages),
				      ELAN_ENGINE_RUN_PAGES);
			for (k = 0; k < pages; k++)
				elan_keep_page(dev, q, pfn + k);
		}
		/* seq after the record: unchanged, so the record was this
		 * chunk's
		 */
		smp_rmb();
		if (READ_ONCE(eng[e].seq) != seen[e]) {
			elan_quarantine_drop(dev, q);	/* ended meanwhile */
			continue;
		}
		q->seq = seen[e];
		atomic64_inc(&dev->st.quarantines);
		dev_warn(&dev->pdev->dev,
			 "DMA engine %u stalled in a chunk: %u pages kept from reuse until it ends\n",
			 e, q->n);
	}
	spin_unlock_irqrestore(&dev->quar_lock, flags);
}

/*
 * Give back the pages of the chunks that ended since they were kept.
 * Returns how many pages are still kept.
 */
unsigned int elan_quarantine_release(struct elan_dev *dev)
{
	struct elan_hw_engine *eng = dev->hdr->engine;
	unsigned int e, n, left = 0;
	unsigned long flags;

	spin_lock_irqsave(&dev->quar_lock, flags);
	for (e = 0; e < ELAN_MAX_ENGINES; e++) {
		struct elan_quarantine *q = &dev->quar[e];

		if (!q->seq)
			continue;
		if (READ_ONCE(eng[e].seq) == q->seq) {
			left += q->n;
			continue;
		}
		/* the chunk's copy is done before seq moved: pairs with the
		 * NIC's release
		 */
		smp_mb();
		n = elan_quarantine_drop(dev, q);
		dev_info(&dev->pdev->dev,
			 "DMA engine %u ended its stalled chunk: %u pages released\n",
			 e, n);
	}
	spin_unlock_irqrestore(&dev->quar_lock, flags);
	return left;
}

/*
 * Wait until no DMA chunk that started before this call and may use a
 * translation of context @ctx (ELAN_SHOOTDOWN_ALL: of any context) is
 * still running: for each engine whose seq is odd, spin until it changes.
 * An engine whose ctx names another context is skipped: the NIC stores
 * ctx before making seq odd (and ELAN_HW_ENGINE_CTX_ANY, fenced, before a
 * second context's translations are read), so ctx read after an odd seq
 * covers the chunk.  Bounded: a chunk moves at most a run of pages, so a
 * NIC that takes longer than shootdown_timeout_ms is declared dead.  A
 * chunk not waited for (a dead NIC, or that timeout) has its pages
 * quarantined instead.  Does not sleep.
 *
 * Return: true when the NIC is known to be past the old translations.
 */
bool elan_shootdown(struct elan_dev *dev, unsigned int ctx)
{
	struct elan_hw_engine *eng = dev->hdr->engine;
	u64 seen[ELAN_MAX_ENGINES];
	unsigned long busy = 0;
	unsigned int e, spins = 0;
	ktime_t deadline;

	if (READ_ONCE(dev->removed))
		return false;
	/* The removed tags must be visible before the engines are read. */
	smp_mb();
	for (e = 0; e < ELAN_MAX_ENGINES; e++) {
		u32 ectx;

		seen[e] = READ_ONCE(eng[e].seq);
		if (!(seen[e] & 1))
			continue;
		/* ctx after seq: pairs with the NIC's fence after seq */
		smp_rmb();
		ectx = READ_ONCE(eng[e].ctx);
		if (ctx == ELAN_SHOOTDOWN_ALL || ectx == ctx ||
		    ectx == ELAN_HW_ENGINE_CTX_ANY)
			__set_bit(e, &busy);
	}
	if (!busy)
		return true;
	if (atomic_read(&dev->dead)) {
		/* nothing to wait for: keep what the chunks may touch */
		elan_quarantine(dev, busy, seen);
		return false;
	}

	atomic64_inc(&dev->st.shootdown_waits);
	deadline = ktime_add_ms(ktime_get(),
				READ_ONCE(elan_shootdown_timeout_ms));
	for (;;) {
		for (e = 0; e < ELAN_MAX_ENGINES; e++)
			if (test_bit(e, &busy) && READ_ONCE(eng[e].seq) != seen[e])
				__clear_bit(e, &busy);
		if (!busy)
			break;
		if (!(++spins & 63) && ktime_after(ktime_get(), deadline)) {
			atomic64_inc(&dev->st.shootdown_timeouts);
			elan_nic_dead(dev, ELAN_DEAD_SHOOTDOWN);
			elan_quarantine(dev, busy, seen);
			return false;
		}
		cpu_relax();
	}
	/* Nothing after this may be ordered before the engines moved on. */
	smp_mb();
	return true;
}

/* ---------------------------------------------------------------- table */

static inline u64 elan_tag(unsigned long va, bool writable)
{
	return (u64)(va & PAGE_MASK) | ELAN_MMU_VALID |
	       (writable ? ELAN_MMU_WRITE : 0);
}

static inline struct elan_hw_tlbe *elan_set(struct elan_ctx *c,
					    unsigned long va)
{
	return elan_mmu_ways(c->mmu->page, elan_mmu_set(va, c->mmu->sets));
}

/* Sets for a table that reaches mmu_reach_mb, or all of RAM. */
static unsigned int elan_mmu_sets(void)
{
	unsigned long pages = elan_mmu_reach_mb ?
		(unsigned long)elan_mmu_reach_mb << (20 - PAGE_SHIFT) :
		totalram_pages();

	pages = DIV_ROUND_UP(pages, ELAN_MMU_WAYS);
	return clamp_t(unsigned long, roundup_pow_of_two(max(pages, 1UL)),
		       ELAN_MMU_MIN_SETS, ELAN_MMU_MAX_SETS);
}

/*
 * Give slot @i a table of the size mmu_reach_mb asks for: a new one at
 * its first attach, or when the size changed and the NIC has let go of
 * the old one (nic_state FREE: it reads it no more; the slot's earlier
 * owners, no longer live, do not either).  Zeroed pages: an empty table.
 * Attach only (sleeps), slot claimed.
 */
int elan_mmu_table_alloc(struct elan_dev *dev, unsigned int i)
{
	struct elan_mmu_table *t = &dev->mmu[i];
	struct elan_mmu_table new = { .sets = elan_mmu_sets(), .lo = ULONG_MAX };
	unsigned int n = new.sets / ELAN_MMU_PAGE_SETS, p;
	bool ok;

	if (t->sets == new.sets ||
	    (t->sets && READ_ONCE(elan_hw_ctx(dev, i)->nic_state) != ELAN_CTX_FREE))
		return 0;
	new.page = kvcalloc(n, sizeof(*new.page), GFP_KERNEL);
	new.victim = kvzalloc(new.sets, GFP_KERNEL);
	ok = new.page && new.victim;
	for (p = 0; ok && p < n; p++) {
		new.page[p] = (void *)get_zeroed_page(GFP_KERNEL);
		ok = new.page[p];
	}
	/* (debugfs counts the tables: it sees the old one or the new one) */
	mutex_lock(&dev->mmu_mutex);
	elan_mmu_table_free(t);
	if (ok)
		*t = new;
	mutex_unlock(&dev->mmu_mutex);
	if (!ok)
		elan_mmu_table_free(&new);
	return ok ? 0 : -ENOMEM;
}

/*
 * Free the pages of table @t (of a slot: only once the NIC can no longer
 * read it, with dev->mmu_mutex held or the device going away).
 */
void elan_mmu_table_free(struct elan_mmu_table *t)
{
	unsigned int p;

	if (t->page)
		for (p = 0; p < t->sets / ELAN_MMU_PAGE_SETS; p++)
			free_page((unsigned long)t->page[p]);	/* 0: none */
	kvfree(t->page);
	kvfree(t->victim);
	t->page = NULL;
	t->victim = NULL;
	t->sets = 0;
}

/* Valid entries of @t (debugfs): a lockless count. */
unsigned long elan_mmu_valid(struct elan_mmu_table *t)
{
	unsigned long n = 0;
	unsigned int s, w;

	for (s = 0; s < t->sets; s++)
		for (w = 0; w < ELAN_MMU_WAYS; w++)
			n += !!(READ_ONCE(elan_mmu_ways(t->page, s)[w].tag) &
				ELAN_MMU_VALID);
	return n;
}

/* A page entry for the page of @va? */
static inline bool elan_tag_is(u64 tag, unsigned long va)
{
	return (tag & (ELAN_MMU_VALID | ELAN_MMU_HUGE)) == ELAN_MMU_VALID &&
	       ELAN_TAG_VA(tag) == (va & PAGE_MASK);
}

/* A 2 MiB entry for the block at @block? */
static inline bool elan_tag_is_huge(u64 tag, unsigned long block)
{
	return (tag & (ELAN_MMU_VALID | ELAN_MMU_HUGE)) ==
	       (ELAN_MMU_VALID | ELAN_MMU_HUGE) && ELAN_TAG_VA(tag) == block;
}

/* The bytes the entry with @tag translates. */
static inline unsigned long elan_tag_size(u64 tag)
{
	return tag & ELAN_MMU_HUGE ? ELAN_HUGE_SIZE : PAGE_SIZE;
}

/*
 * Notifier mode: a write entry is going (removed, downgraded or evicted):
 * the NIC may have written the page, and hmm_range_fault() gives a write
 * translation from a writable PTE that may be clean, so the page is
 * dirtied here, as ODP does (the CPU's own dirty bit would be moved to
 * the page by the zap, unmap or page_mkclean that invalidates us).  The
 * page is still mapped: whatever unmaps it calls our invalidate first,
 * which waits for this context's lock, so it cannot be truncated or freed
 * under us.  Whatever cleans the page afterwards (writeback's
 * page_mkclean, reclaim's unmap) invalidates this range first, and the
 * shootdown there waits for any write in flight.  In IOPROC mode a write
 * entry only comes from a dirty PTE, whose bit the core moves to the page.
 */
static void elan_entry_dirty(struct elan_ctx *c, u64 tag,
			     struct elan_hw_tlbe *e)
{
	unsigned long pfn = READ_ONCE(e->pfn);

	lockdep_assert_held(&c->lock);
	if (!c->notifier || !(tag & ELAN_MMU_WRITE) || !pfn_valid(pfn))
		return;
	folio_mark_dirty(page_folio(pfn_to_page(pfn)));
	atomic64_inc(&c->dev->st.pages_dirtied);
}

/* How a removal leaves an entry (elan_zap_entry()). */
#define ELAN_ZAP_WRITE	0x1	/* write-protect it only */
#define ELAN_ZAP_MARK	0x2	/* leave a refresh mark (notifier update) */

/*
 * Drop or write-protect one entry.  A refresh mark is the tag of a page
 * entry without its flags: the NIC takes it for a miss and an install for
 * a free way, and the update op loads the page again when the CPU
 * re-establishes its PTE (notifier mode with the kernel's update op: the
 * invalidation comes first, and would otherwise leave nothing to update).
 */
static bool elan_zap_entry(struct elan_ctx *c, struct elan_hw_tlbe *e,
			   unsigned int how)
{
	u64 tag = READ_ONCE(e->tag);

	lockdep_assert_held(&c->lock);
	if (!(tag & ELAN_MMU_VALID))
		return false;
	elan_entry_dirty(c, tag, e);
	if (how & ELAN_ZAP_WRITE) {
		if (!(tag & ELAN_MMU_WRITE))
			return false;
		WRITE_ONCE(e->tag, tag & ~ELAN_MMU_WRITE);
		return true;
	}
	if ((how & ELAN_ZAP_MARK) && !(tag & ELAN_MMU_HUGE)) {
		WRITE_ONCE(e->tag, ELAN_TAG_VA(tag));
		c->mmu->marks = true;
	} else {
		WRITE_ONCE(e->tag, 0);
	}
	c->mmu->nr_entries--;
	if (tag & ELAN_MMU_HUGE)
		c->mmu->nr_huge--;
	return true;
}

/*
 * Call @fn on every valid entry that translates any of [start, end) (a
 * 2 MiB entry with the address of its block): the range is cut to where
 * entries lie, then looked up page by page (and block by block) if no
 * longer than the table has sets, else the whole table is scanned.
 * Returns true if any call changed something.  Always inlined, so that
 * @fn is a direct call.
 */
static __always_inline bool
elan_walk_range(struct elan_ctx *c, unsigned long start, unsigned long end,
		bool (*fn)(struct elan_ctx *c, struct elan_hw_tlbe *e,
			   unsigned long va, void *arg), void *arg)
{
	struct elan_mmu_table *t = c->mmu;
	struct elan_hw_tlbe *e;
	unsigned long va;
	bool changed = false;
	unsigned int i, s;

	lockdep_assert_held(&c->lock);
	if (!t->nr_entries)
		return false;
	start = max(start & PAGE_MASK, t->lo);
	end = min(end, t->hi);
	if (end <= start)
		return false;
	if ((end - start) / PAGE_SIZE <= t->sets) {
		for (va = start; va < end; va += PAGE_SIZE) {
			e = elan_set(c, va);
			for (i = 0; i < ELAN_MMU_WAYS; i++)
				if (elan_tag_is(READ_ONCE(e[i].tag), va))
					changed |= fn(c, &e[i], va, arg);
		}
		for (va = start & ELAN_HUGE_MASK; t->nr_huge && va < end;
		     va += ELAN_HUGE_SIZE) {
			e = elan_set(c, va);
			for (i = 0; i < ELAN_MMU_WAYS; i++)
				if (elan_tag_is_huge(READ_ONCE(e[i].tag), va))
					changed |= fn(c, &e[i], va, arg);
		}
		return changed;
	}
	for (s = 0; s < t->sets && t->nr_entries; s++) {
		e = elan_mmu_ways(t->page, s);
		for (i = 0; i < ELAN_MMU_WAYS; i++) {
			u64 tag = READ_ONCE(e[i].tag);

			va = ELAN_TAG_VA(tag);
			if ((tag & ELAN_MMU_VALID) && va < end &&
			    va + elan_tag_size(tag) > start)
				changed |= fn(c, &e[i], va, arg);
		}
	}
	return changed;
}

static bool elan_zap_one(struct elan_ctx *c, struct elan_hw_tlbe *e,
			 unsigned long va, void *how)
{
	return elan_zap_entry(c, e, *(unsigned int *)how);
}

/* Remove (or as @how says) every entry for [start, end). */
static bool elan_zap_range(struct elan_ctx *c, unsigned long start,
			   unsigned long end, unsigned int how)
{
	lockdep_assert_held(&c->lock);
	return elan_walk_range(c, start, end, elan_zap_one, &how);
}

/*
 * Empty the table (at attach, detach, release); @live: its entries are
 * this context's, current (their write entries' pages are dirtied in
 * notifier mode).
 */
static bool elan_mmu_clear_locked(struct elan_ctx *c, bool live)
{
	struct elan_mmu_table *t = c->mmu;
	bool had = t->nr_entries != 0;
	struct elan_hw_tlbe *e;
	unsigned int s, w;

	lockdep_assert_held(&c->lock);
	/* (an empty table has nothing to clear: its entries are all 0) */
	if (had || t->marks)
		for (s = 0; s < t->sets; s++)
			for (w = 0; w < ELAN_MMU_WAYS; w++) {
				e = &elan_mmu_ways(t->page, s)[w];
				if (live)
					elan_entry_dirty(c, READ_ONCE(e->tag), e);
				WRITE_ONCE(e->tag, 0);
			}
	t->nr_entries = 0;
	t->nr_huge = 0;
	t->marks = false;
	t->lo = ULONG_MAX;
	t->hi = 0;
	return had;
}

void elan_mmu_clear(struct elan_ctx *c)
{
	spin_lock(&c->lock);
	elan_mmu_clear_locked(c, false);
	c->sd_pending = false;
	spin_unlock(&c->lock);
}

/* Write a translation into entry @e: pfn first, tag last (release). */
static void elan_set_entry(struct elan_hw_tlbe *e, u64 tag, unsigned long pfn)
{
	if (READ_ONCE(e->tag)) {
		WRITE_ONCE(e->tag, 0);
		/* No reader may pair the old tag with the new pfn. */
		smp_wmb();
	}
	WRITE_ONCE(e->pfn, pfn);
	/* The NIC reads tag, pfn, tag: pfn is there before the tag. */
	smp_store_release(&e->tag, tag);
}

/* Does the entry @tag translate the page of one of the last faults? */
static bool elan_mmu_recent(struct elan_ctx *c, u64 tag)
{
	unsigned long va = ELAN_TAG_VA(tag), size = elan_tag_size(tag);
	unsigned int i;

	lockdep_assert_held(&c->lock);
	for (i = 0; i < ELAN_MMU_RECENT; i++)
		if (c->recent[i] - va < size)
			return true;
	return false;
}

/*
 * The way of the full set @e (index @set) to evict: the next one in turn
 * that does not hold the page of a recent fault.  There is always one:
 * fewer pages are kept than a set has ways.
 */
static struct elan_hw_tlbe *elan_mmu_victim(struct elan_ctx *c,
					    struct elan_hw_tlbe *e,
					    unsigned int set)
{
	unsigned int i, w = c->mmu->victim[set];

	lockdep_assert_held(&c->lock);
	for (i = 0; i < ELAN_MMU_WAYS; i++, w++) {
		w %= ELAN_MMU_WAYS;
		if (!elan_mmu_recent(c, READ_ONCE(e[w].tag)))
			break;
	}
	w %= ELAN_MMU_WAYS;
	c->mmu->victim[set] = (w + 1) % ELAN_MMU_WAYS;
	return &e[w];
}

/*
 * Install the translation of the page of @va to @pfn, or with @huge of
 * the 2 MiB block of @va to the 512 frames from @pfn on.  An entry for
 * that page (block) is updated in place; otherwise an empty way is used,
 * or a victim is evicted (always safe: a miss only faults again; the
 * victim may still be in use by a running chunk, which c->sd_pending
 * makes the next removal wait for).  The pages of the last faults are
 * never the victim: a chunk faults its two pages in one after the other,
 * and the second fault (with its fault-around) must not evict the first.
 * Returns true if a translation was replaced by one to another page,
 * which needs a shootdown.
 */
bool elan_mmu_install(struct elan_ctx *c, unsigned long va,
		      unsigned long pfn, bool writable, bool huge)
{
	struct elan_mmu_table *t = c->mmu;
	unsigned long tva = va & (huge ? ELAN_HUGE_MASK : PAGE_MASK);
	unsigned int set = elan_mmu_set(tva, t->sets);
	struct elan_hw_tlbe *e = elan_mmu_ways(t->page, set), *slot = NULL;
	u64 tag = elan_tag(tva, writable) | (huge ? ELAN_MMU_HUGE : 0);
	unsigned int i;

	lockdep_assert_held(&c->lock);
	for (i = 0; i < ELAN_MMU_WAYS; i++) {
		u64 old = READ_ONCE(e[i].tag);

		if (huge ? elan_tag_is_huge(old, tva) : elan_tag_is(old, tva)) {
			if (READ_ONCE(e[i].pfn) == pfn) {
				/* Only ever upgrade here: the PTE allows it. */
				if ((old | tag) == old)
					return false;
				/* Release: pairs with the NIC's tag reads. */
				smp_store_release(&e[i].tag, old | tag);
				return false;
			}
			/* Stale: a hook must have been missed.  Replace. */
			elan_set_entry(&e[i], tag, pfn);
			return true;
		}
		if (!slot && !(old & ELAN_MMU_VALID))
			slot = &e[i];
	}
	t->lo = min(t->lo, tva);
	t->hi = max(t->hi, tva + elan_tag_size(tag));
	if (slot) {
		t->nr_entries++;
	} else {
		slot = elan_mmu_victim(c, e, set);
		elan_entry_dirty(c, READ_ONCE(slot->tag), slot);
		if (READ_ONCE(slot->tag) & ELAN_MMU_HUGE)
			t->nr_huge--;
		c->sd_pending = true;
		atomic64_inc(&c->dev->st.evictions);
	}
	if (huge)
		t->nr_huge++;
	elan_set_entry(slot, tag, pfn);
	return false;
}

/* Does set @e hold an entry for @tva (@huge: a block) that allows @write? */
static bool elan_set_has(struct elan_hw_tlbe *e, unsigned long tva, bool huge,
			 bool write)
{
	unsigned int i;

	for (i = 0; i < ELAN_MMU_WAYS; i++) {
		u64 tag = READ_ONCE(e[i].tag);

		if ((huge ? elan_tag_is_huge(tag, tva) : elan_tag_is(tag, tva)) &&
		    (!write || (tag & ELAN_MMU_WRITE)))
			return true;
	}
	return false;
}

/* Is @va translated for this access already?  A hint. */
bool elan_mmu_has(struct elan_ctx *c, unsigned long va, bool write)
{
	unsigned long block = va & ELAN_HUGE_MASK;
	bool has = false;

	spin_lock(&c->lock);
	/* not live: the table may be a new owner's, or another */
	if (c->live)
		has = elan_set_has(elan_set(c, va), va & PAGE_MASK, false, write) ||
		      (c->mmu->nr_huge &&
		       elan_set_has(elan_set(c, block), block, true, write));
	spin_unlock(&c->lock);
	return has;
}

/* ---------------------------------------------------------------- removal */

/*
 * Remove [start, end) (or as @how says) and shoot down.  Atomic context,
 * the context lock held.
 */
static void elan_zap_locked(struct elan_ctx *c, unsigned long start,
			    unsigned long end, unsigned int how)
{
	bool changed;

	lockdep_assert_held(&c->lock);
	/* not live: emptied and shot down, and the table may be a new owner's */
	if (!c->live || (!c->mmu->nr_entries && !c->sd_pending))
		return;
	changed = elan_zap_range(c, start, end, how);
	if (changed)
		atomic64_inc(&c->dev->st.invalidations);
	if (changed || c->sd_pending) {
		c->sd_pending = false;
		elan_shootdown(c->dev, c->idx);
	}
}

/*
 * Stop the context: no translation may be installed any more, the table
 * is emptied, the NIC is past every old translation and sees the context
 * FREE.  Idempotent.  May be called from the release hook (the mm is going
 * away) and from detach.  Does not sleep.
 */
void elan_ctx_quiesce(struct elan_ctx *c, bool mm_gone)
{
	struct elan_dev *dev = c->dev;

	spin_lock(&c->lock);
	elan_mmu_clear_locked(c, c->live);
	c->live = false;
	c->sd_pending = false;
	elan_shootdown(dev, c->idx);
	spin_unlock(&c->lock);

	if (READ_ONCE(c->map.ctl->state) != ELAN_CTX_FREE) {
		/* The emptied table is visible before the state. */
		smp_store_release(&c->map.ctl->state, ELAN_CTX_FREE);
		if (mm_gone) {
			WRITE_ONCE(c->map.status->error, ELAN_E_TARGET_GONE);
			/* error before state, for user space */
			smp_wmb();
		}
		WRITE_ONCE(c->map.status->state, ELAN_CTX_FREE);
		elan_ring(dev, ELAN_DB_CTX);
	}
	wake_up_all(&dev->waitq);
}

#ifdef CONFIG_IOPROC
/* ---------------------------------------------------------------- IOPROC hooks */

static unsigned int elan_preload = 1;
module_param_named(preload, elan_preload, uint, 0644);
MODULE_PARM_DESC(preload,
		 "Update hooks refresh the translations of pages the NIC used (0: drop them instead; for measurements)");

static void elan_zap(struct elan_ctx *c, unsigned long start,
		     unsigned long end, unsigned int how)
{
	spin_lock(&c->lock);
	elan_zap_locked(c, start, end, how);
	spin_unlock(&c->lock);
}

static void elan_hook_invalidate_range(void *arg, struct vm_area_struct *vma,
				       unsigned long start, unsigned long end)
{
	elan_zap(arg, start, end, 0);
}

static void elan_hook_change_protection(void *arg, struct vm_area_struct *vma,
					unsigned long start, unsigned long end,
					pgprot_t newprot)
{
	if (!ioproc_prot_read(newprot))
		elan_zap(arg, start, end, 0);
	else if (!ioproc_prot_write(newprot))
		elan_zap(arg, start, end, ELAN_ZAP_WRITE);
}

/*
 * Refresh the entry @e for @va from the PTE the hook was called for.
 * Returns true if a translation was removed, downgraded or replaced.
 */
static bool elan_refresh_entry(struct elan_ctx *c, struct vm_area_struct *vma,
			       struct elan_hw_tlbe *e, unsigned long va)
{
	struct ioproc_pte t;
	u64 old = READ_ONCE(e->tag), tag;

	if (!READ_ONCE(elan_preload) || ioproc_peek_locked(vma, va, &t)) {
		elan_zap_entry(c, e, 0);
		return true;
	}
	atomic64_inc(&c->dev->st.preloads);
	tag = elan_tag(va, t.writable);
	if (READ_ONCE(e->pfn) != t.pfn) {
		elan_set_entry(e, tag, t.pfn);
		return true;
	}
	if (tag == old)
		return false;
	/* Same page, other rights; pairs with the NIC's tag reads. */
	smp_store_release(&e->tag, tag);
	return (old & ELAN_MMU_WRITE) && !t.writable;
}

/*
 * Update hooks: PTEs of [start, end) were established or gained access.
 * Preload (refresh) only pages that already have an entry: the NIC used
 * them and will again; other pages are left to fault.
 */
static bool elan_refresh_one(struct elan_ctx *c, struct elan_hw_tlbe *e,
			     unsigned long va, void *vma)
{
	/* A block is dropped: the NIC faults it in again, as one entry if a
	 * huge PMD still maps it.
	 */
	if (READ_ONCE(e->tag) & ELAN_MMU_HUGE)
		return elan_zap_entry(c, e, 0);
	return elan_refresh_entry(c, vma, e, va);
}

static void elan_refresh(struct elan_ctx *c, struct vm_area_struct *vma,
			 unsigned long start, unsigned long end)
{
	spin_lock(&c->lock);
	if (c->live && elan_walk_range(c, start, end, elan_refresh_one, vma)) {
		atomic64_inc(&c->dev->st.invalidations);
		c->sd_pending = false;
		elan_shootdown(c->dev, c->idx);
	}
	spin_unlock(&c->lock);
}

static void elan_hook_update_range(void *arg, struct vm_area_struct *vma,
				   unsigned long start, unsigned long end)
{
	elan_refresh(arg, vma, start, end);
}

/*
 * msync: the NIC writes guest RAM directly, so there is nothing to flush;
 * wait for the chunks in flight so that they are in memory before the
 * file is written.  May sleep, but needs not.
 */
static void elan_hook_sync_range(void *arg, struct vm_area_struct *vma,
				 unsigned long start, unsigned long end)
{
	struct elan_ctx *c = arg;

	elan_shootdown(c->dev, c->idx);
}

/* Writeback is about to clean the PTE: its change_protection follows. */
static void elan_hook_sync_page(void *arg, struct vm_area_struct *vma,
				unsigned long addr)
{
}

/* The mm has no users left: its pages are freed once this returns. */
static void elan_hook_release(void *arg, struct mm_struct *mm)
{
	struct elan_ctx *c = arg;

	atomic64_inc(&c->dev->st.releases);
	elan_ctx_quiesce(c, true);
}

const struct ioproc_ops elan_ioproc_ops = {
	.release		= elan_hook_release,
	.sync_range		= elan_hook_sync_range,
	.invalidate_range	= elan_hook_invalidate_range,
	.update_range		= elan_hook_update_range,
	.change_protection	= elan_hook_change_protection,
	.sync_page		= elan_hook_sync_page,
	/* invalidate_page, update_page: the core calls the range hooks. */
};
#endif /* CONFIG_IOPROC */

#if ELAN_HAVE_NOTIFIER
/* ---------------------------------------------------------------- notifier */

/*
 * Notifier mode: the interval notifier covers the whole address space and
 * is called before any PTE of it changes (invalidate_range_start).  The
 * entries of the range are removed and the NIC shot down before this
 * returns, and the notifier's sequence is bumped under the context lock,
 * so the fault service, which installs under that lock only if the
 * sequence did not move since hmm_range_fault() read the page tables,
 * never installs a translation read before this invalidation (a load that
 * raced it is retried).  Events that only write-protect a PTE and keep
 * its page (page_mkclean, fork's COW protection, soft-dirty) downgrade
 * the entries; every other event removes them (mprotect's notifier does
 * not say the new protection), leaving refresh marks for the update op
 * where the kernel has one (but for munmap's).  Never sleeps: the shootdown spins,
 * bounded, so non-blockable invalidations (the OOM reaper) are served
 * like the others.
 */
static bool elan_mni_invalidate(struct mmu_interval_notifier *mni,
				const struct mmu_notifier_range *range,
				unsigned long cur_seq)
{
	struct elan_ctx *c = container_of(mni, struct elan_ctx, mni);
	unsigned int how = 0;

	if (range->event == MMU_NOTIFY_PROTECTION_PAGE ||
	    range->event == MMU_NOTIFY_SOFT_DIRTY)
		how = ELAN_ZAP_WRITE;
	else if (c->update && range->event != MMU_NOTIFY_UNMAP)
		how = ELAN_ZAP_MARK;	/* the PTE may come back: elan_mni_update() */

#ifdef ELAN_DRIVER_BROKEN
	/* The broken variant the tests must catch (driver/Kbuild). */
	if (range->event == ELAN_DRIVER_BROKEN)
		return true;
#endif
	spin_lock(&c->lock);
	mmu_interval_set_seq(mni, cur_seq);
	if (range->event != MMU_NOTIFY_RELEASE)
		elan_zap_locked(c, range->start, range->end, how);
	spin_unlock(&c->lock);
	if (range->event == MMU_NOTIFY_RELEASE) {
		/* exit_mmap: the pages are freed once this returns */
		atomic64_inc(&c->dev->st.releases);
		elan_ctx_quiesce(c, true);
	}
	return true;
}

#if ELAN_HAVE_UPDATE
bool elan_update = true;
module_param_named(update, elan_update, bool, 0444);
MODULE_PARM_DESC(update,
		 "Notifier mode: reload the pages the NIC used when the kernel's update op says their PTEs are back (0: let the NIC fault; for measurements)");

/*
 * Load the entry @e (a valid entry for @va or a refresh mark) from @pte.
 * Returns true if a translation was removed, downgraded or replaced.
 */
static bool elan_update_entry(struct elan_ctx *c, struct vm_area_struct *vma,
			      struct elan_hw_tlbe *e, unsigned long va,
			      pte_t pte)
{
	unsigned long pfn = pte_pfn(pte);
	u64 old = READ_ONCE(e->tag), tag;
	bool wr;

	/* what hmm_range_fault() and ioproc_load() would not load either */
	if (!(vma->vm_flags & VM_READ) || !pte_present(pte) ||
	    pte_protnone(pte) || pte_special(pte) || !pfn_valid(pfn) ||
	    is_zone_device_page(pfn_to_page(pfn)))
		return elan_zap_entry(c, e, ELAN_ZAP_MARK);
	wr = pte_write(pte) && (vma->vm_flags & VM_WRITE);
#ifdef ELAN_DRIVER_BROKEN_UPDATE_write
	/* The broken variant the tests must catch (driver/Kbuild). */
	wr = true;
#endif
	tag = elan_tag(va, wr);
	atomic64_inc(&c->dev->st.preloads);
	if (!(old & ELAN_MMU_VALID)) {
		c->mmu->nr_entries++;
		elan_set_entry(e, tag, pfn);
		return false;
	}
	if (READ_ONCE(e->pfn) != pfn) {
		elan_set_entry(e, tag, pfn);
		return true;
	}
	if (tag == old)
		return false;
	/* Same page, other rights; pairs with the NIC's tag reads. */
	smp_store_release(&e->tag, tag);
	return (old & ELAN_MMU_WRITE) && !wr;
}

/* The entry of @va's set the update op loads: @va's page entry or mark. */
static struct elan_hw_tlbe *elan_update_find(struct elan_ctx *c,
					     unsigned long va)
{
	struct elan_hw_tlbe *e = elan_set(c, va);
	unsigned int i;

	for (i = 0; i < ELAN_MMU_WAYS; i++) {
		u64 tag = READ_ONCE(e[i].tag);

		if (tag == va || elan_tag_is(tag, va))
			return &e[i];
	}
	return NULL;
}

/*
 * The kernel's update op: the PTEs of [start, end), from @ptep on, were
 * made present or had their access changed; their page table lock is held
 * and no other invalidation is in progress, nor can one begin before this
 * returns, so an entry loaded here is removed by the next invalidation of
 * its page, as one the fault service installs.  Only the pages the NIC
 * used are loaded (a valid entry, or the refresh mark of one an
 * invalidation removed); the NIC faults any other in.  Write access only
 * from a writable PTE; the page is dirtied when the entry goes, as for
 * the fault service's entries.
 */
static void elan_mni_update(struct mmu_interval_notifier *mni,
			    struct vm_area_struct *vma, unsigned long start,
			    unsigned long end, pte_t *ptep)
{
	struct elan_ctx *c = container_of(mni, struct elan_ctx, mni);
	struct elan_mmu_table *t = c->mmu;
	struct elan_hw_tlbe *e;
	bool changed = false;
	unsigned long va;
	pte_t pte;

	if (!c->update)
		return;
	spin_lock(&c->lock);
	/* not live: the table may be a new owner's */
	if (c->live && !atomic_read(&c->dev->dead) &&
	    (t->nr_entries || t->marks) &&
	    !(vma->vm_flags & (VM_IO | VM_PFNMAP)))
		for (va = max(start, t->lo); va < min(end, t->hi);
		     va += PAGE_SIZE) {
			e = elan_update_find(c, va);
			if (!e)
				continue;
			pte = ptep_get(ptep + ((va - start) >> PAGE_SHIFT));
			changed |= elan_update_entry(c, vma, e, va, pte);
		}
	if (changed) {
		atomic64_inc(&c->dev->st.invalidations);
		c->sd_pending = false;
		elan_shootdown(c->dev, c->idx);
	}
	spin_unlock(&c->lock);
}
#endif /* ELAN_HAVE_UPDATE */

const struct mmu_interval_notifier_ops elan_mni_ops = {
	.invalidate = elan_mni_invalidate,
#if ELAN_HAVE_UPDATE
	.update = elan_mni_update,
#endif
};
#endif /* ELAN_HAVE_NOTIFIER */
