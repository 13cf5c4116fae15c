// SPDX-License-Identifier: GPL-2.0
/*
 * Elan NIC MMU upkeep: the IOPROC hooks, the shootdown handshake with the
 * NIC and the translation fault service.
 *
 * Each context's NIC MMU is a set-associative table in guest RAM, named
 * by the slot's directory in the NIC region, that only this driver writes.  Translations enter it from the fault service
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

static unsigned int elan_fault_around = 64;
module_param_named(fault_around, elan_fault_around, uint, 0644);
MODULE_PARM_DESC(fault_around,
		 "Pages loaded per fault (1..64): the faulting one, the ones after it the NIC operation goes on to (faulted in if absent), present ones after it, then present ones below it in its aligned block");

static unsigned int elan_preload = 1;
module_param_named(preload, elan_preload, uint, 0644);
MODULE_PARM_DESC(preload,
		 "Update hooks refresh the translations of pages the NIC used (0: drop them instead; for measurements)");

static unsigned int elan_mmu_reach_mb;
module_param_named(mmu_reach_mb, elan_mmu_reach_mb, uint, 0644);
MODULE_PARM_DESC(mmu_reach_mb,
		 "Memory each context's NIC MMU translates without evicting (MiB; 0: all of RAM). Costs 1/256 of it per context used; taken at attach");

#define ELAN_TAG_VA(tag)	((tag) & ~(u64)(ELAN_PAGE - 1))
#define ELAN_FAULT_TRIES	32
#define ELAN_FAULT_BATCH	16

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
	return elan_mmu_ways(c->mmu, elan_mmu_set(va, c->mmu->sets));
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
	unsigned int sets = elan_mmu_sets(), n = sets / ELAN_MMU_PAGE_SETS, p;

	if (t->sets == sets ||
	    (t->sets && READ_ONCE(elan_hw_ctx(dev, i)->nic_state) != ELAN_CTX_FREE))
		return 0;
	mutex_lock(&dev->mmu_mutex);
	elan_mmu_table_free(dev, i);
	mutex_unlock(&dev->mmu_mutex);
	t->page = kvcalloc(n, sizeof(*t->page), GFP_KERNEL);
	t->victim = kvzalloc(sets, GFP_KERNEL);
	if (!t->page || !t->victim)
		goto fail;
	for (p = 0; p < n; p++) {
		t->page[p] = (void *)get_zeroed_page(GFP_KERNEL);
		if (!t->page[p])
			goto fail;
	}
	t->nr_entries = 0;
	t->lo = ULONG_MAX;
	t->hi = 0;
	t->sets = sets;
	return 0;
fail:
	t->sets = sets;
	mutex_lock(&dev->mmu_mutex);
	elan_mmu_table_free(dev, i);
	mutex_unlock(&dev->mmu_mutex);
	return -ENOMEM;
}

/*
 * Free slot @i's table: only once the NIC can no longer read it.
 * dev->mmu_mutex held, or the device is going away.
 */
void elan_mmu_table_free(struct elan_dev *dev, unsigned int i)
{
	struct elan_mmu_table *t = &dev->mmu[i];
	unsigned int p;

	if (t->page)
		for (p = 0; p < t->sets / ELAN_MMU_PAGE_SETS; p++)
			free_page((unsigned long)t->page[p]);
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
			n += !!(READ_ONCE(elan_mmu_ways(t, s)[w].tag) &
				ELAN_MMU_VALID);
	return n;
}

static inline bool elan_tag_is(u64 tag, unsigned long va)
{
	return (tag & ELAN_MMU_VALID) && ELAN_TAG_VA(tag) == (va & PAGE_MASK);
}

/* Drop or write-protect one entry; the caller holds c->lock. */
static bool elan_zap_entry(struct elan_ctx *c, struct elan_hw_tlbe *e,
			   bool wr_only)
{
	u64 tag = READ_ONCE(e->tag);

	lockdep_assert_held(&c->lock);
	if (!(tag & ELAN_MMU_VALID))
		return false;
	if (wr_only) {
		if (!(tag & ELAN_MMU_WRITE))
			return false;
		WRITE_ONCE(e->tag, tag & ~ELAN_MMU_WRITE);
		return true;
	}
	WRITE_ONCE(e->tag, 0);
	c->mmu->nr_entries--;
	return true;
}

/*
 * Call @fn on every valid entry for a page in [start, end): the range is
 * cut to where entries lie, then looked up page by page if no longer than
 * the table has sets, else the whole table is scanned.  Returns true if
 * any call changed something.  The caller holds c->lock.  Always inlined,
 * so that @fn is a direct call.
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
		return changed;
	}
	for (s = 0; s < t->sets && t->nr_entries; s++) {
		e = elan_mmu_ways(t, s);
		for (i = 0; i < ELAN_MMU_WAYS; i++) {
			u64 tag = READ_ONCE(e[i].tag);

			va = ELAN_TAG_VA(tag);
			if ((tag & ELAN_MMU_VALID) && va >= start && va < end)
				changed |= fn(c, &e[i], va, arg);
		}
	}
	return changed;
}

static bool elan_zap_one(struct elan_ctx *c, struct elan_hw_tlbe *e,
			 unsigned long va, void *wr_only)
{
	return elan_zap_entry(c, e, *(bool *)wr_only);
}

/* Remove (or write-protect) every entry for [start, end).  c->lock held. */
static bool elan_zap_range(struct elan_ctx *c, unsigned long start,
			   unsigned long end, bool wr_only)
{
	return elan_walk_range(c, start, end, elan_zap_one, &wr_only);
}

/* Empty the table (at attach, detach, release).  c->lock held. */
static bool elan_mmu_clear_locked(struct elan_ctx *c)
{
	struct elan_mmu_table *t = c->mmu;
	bool had = t->nr_entries != 0;
	unsigned int s, w;

	lockdep_assert_held(&c->lock);
	/* (an empty table has nothing to clear: its entries are all 0) */
	if (had)
		for (s = 0; s < t->sets; s++)
			for (w = 0; w < ELAN_MMU_WAYS; w++)
				WRITE_ONCE(elan_mmu_ways(t, s)[w].tag, 0);
	t->nr_entries = 0;
	t->lo = ULONG_MAX;
	t->hi = 0;
	return had;
}

void elan_mmu_clear(struct elan_ctx *c)
{
	spin_lock(&c->lock);
	elan_mmu_clear_locked(c);
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

/* Is @va the page of one of the last faults?  c->lock held. */
static bool elan_mmu_recent(struct elan_ctx *c, unsigned long va)
{
	unsigned int i;

	lockdep_assert_held(&c->lock);
	for (i = 0; i < ELAN_MMU_RECENT; i++)
		if (c->recent[i] == va)
			return true;
	return false;
}

/*
 * The way of the full set @e (index @set) to evict: the next one in turn
 * that does not hold the page of a recent fault.  There is always one:
 * fewer pages are kept than a set has ways.  c->lock held.
 */
static struct elan_hw_tlbe *elan_mmu_victim(struct elan_ctx *c,
					    struct elan_hw_tlbe *e,
					    unsigned int set)
{
	unsigned int i, w = c->mmu->victim[set];

	lockdep_assert_held(&c->lock);
	for (i = 0; i < ELAN_MMU_WAYS; i++, w++) {
		w %= ELAN_MMU_WAYS;
		if (!elan_mmu_recent(c, ELAN_TAG_VA(READ_ONCE(e[w].tag))))
			break;
	}
	w %= ELAN_MMU_WAYS;
	c->mmu->victim[set] = (w + 1) % ELAN_MMU_WAYS;
	return &e[w];
}

/*
 * Install the translation @va -> @pfn.  c->lock held.  An entry for @va
 * is updated in place; otherwise an empty way is used, or a victim is
 * evicted (always safe: a miss only faults again; the victim may still
 * be in use by a running chunk, which c->sd_pending makes the next
 * removal wait for).  The pages of the last faults are never the victim:
 * a chunk faults its two pages in one after the other, and the second
 * fault (with its fault-around) must not evict the first.  Returns true
 * if a translation was replaced by one to another page, which needs a
 * shootdown.
 */
static bool elan_mmu_install(struct elan_ctx *c, unsigned long va,
			     unsigned long pfn, bool writable)
{
	struct elan_mmu_table *t = c->mmu;
	unsigned int set = elan_mmu_set(va, t->sets);
	struct elan_hw_tlbe *e = elan_mmu_ways(t, set), *slot = NULL;
	u64 tag = elan_tag(va, writable);
	unsigned int i;

	lockdep_assert_held(&c->lock);
	for (i = 0; i < ELAN_MMU_WAYS; i++) {
		u64 old = READ_ONCE(e[i].tag);

		if (elan_tag_is(old, va)) {
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
	t->lo = min(t->lo, va & PAGE_MASK);
	t->hi = max(t->hi, (va & PAGE_MASK) + PAGE_SIZE);
	if (slot) {
		t->nr_entries++;
	} else {
		slot = elan_mmu_victim(c, e, set);
		c->sd_pending = true;
		atomic64_inc(&c->dev->st.evictions);
	}
	elan_set_entry(slot, tag, pfn);
	return false;
}

/* ---------------------------------------------------------------- hooks */

/* Remove or write-protect [start, end) and shoot down.  Atomic context. */
static void elan_zap(struct elan_ctx *c, unsigned long start,
		     unsigned long end, bool wr_only)
{
	bool changed;

	spin_lock(&c->lock);
	/* not live: emptied and shot down, and the table may be a new owner's */
	if (!c->live || (!c->mmu->nr_entries && !c->sd_pending)) {
		spin_unlock(&c->lock);
		return;
	}
	changed = elan_zap_range(c, start, end, wr_only);
	if (changed)
		atomic64_inc(&c->dev->st.invalidations);
	if (changed || c->sd_pending) {
		c->sd_pending = false;
		elan_shootdown(c->dev, c->idx);
	}
	spin_unlock(&c->lock);
}

static void elan_hook_invalidate_range(void *arg, struct vm_area_struct *vma,
				       unsigned long start, unsigned long end)
{
	elan_zap(arg, start, end, false);
}

static void elan_hook_change_protection(void *arg, struct vm_area_struct *vma,
					unsigned long start, unsigned long end,
					pgprot_t newprot)
{
	if (!ioproc_prot_read(newprot))
		elan_zap(arg, start, end, false);
	else if (!ioproc_prot_write(newprot))
		elan_zap(arg, start, end, true);
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
		elan_zap_entry(c, e, false);
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
	c->live = false;
	elan_mmu_clear_locked(c);
	c->sd_pending = false;
	elan_shootdown(dev, c->idx);
	spin_unlock(&c->lock);

	if (READ_ONCE(c->hw->state) != ELAN_CTX_FREE) {
		/* The emptied table is visible before the state. */
		smp_store_release(&c->hw->state, ELAN_CTX_FREE);
		if (mm_gone) {
			WRITE_ONCE(c->status->error, ELAN_E_TARGET_GONE);
			/* error before state, for user space */
			smp_wmb();
		}
		WRITE_ONCE(c->status->state, ELAN_CTX_FREE);
		elan_ring(dev, ELAN_DB_CTX);
	}
	wake_up_all(&dev->waitq);
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

/* ---------------------------------------------------------- fault service */

struct elan_load_arg {
	struct elan_ctx *c;
	bool write;
	bool installed;
	bool faulted;		/* the page the NIC asked for (not fault-around) */
};

/* ioproc_load() callback: under the PTE (or PMD) lock of @addr. */
static void elan_load_cb(void *arg, unsigned long addr,
			 const struct ioproc_pte *pte)
{
	struct elan_load_arg *a = arg;
	struct elan_ctx *c = a->c;

	if (a->write && !pte->writable)
		return;
	spin_lock(&c->lock);
	if (c->live && !atomic_read(&c->dev->dead)) {
		if (elan_mmu_install(c, addr, pte->pfn, pte->writable))
			elan_shootdown(c->dev, c->idx);
		if (a->faulted) {
			/* Kept from eviction until ELAN_MMU_RECENT more faults. */
			c->recent[c->recent_pos++ % ELAN_MMU_RECENT] =
				addr & PAGE_MASK;
			a->faulted = false;
		}
		a->installed = true;
		atomic64_inc(&c->dev->st.translations_loaded);
	}
	spin_unlock(&c->lock);
}

/* Is @va translated for this access already?  A hint. */
static bool elan_mmu_has(struct elan_ctx *c, unsigned long va, bool write)
{
	struct elan_hw_tlbe *e;
	bool has = false;
	unsigned int i;

	spin_lock(&c->lock);
	if (c->live) {	/* else the table may be a new owner's, or another */
		e = elan_set(c, va);
		for (i = 0; i < ELAN_MMU_WAYS && !has; i++) {
			u64 tag = READ_ONCE(e[i].tag);

			has = elan_tag_is(tag, va) &&
			      (!write || (tag & ELAN_MMU_WRITE));
		}
	}
	spin_unlock(&c->lock);
	return has;
}

/*
 * Load @addr for fault-around; @fault_in: fault it in first if absent.
 * True when it is translated afterwards.  fixup_user_fault() may drop and
 * retake mmap_lock, so the VMA is looked up again.
 */
static bool elan_load_one(struct elan_load_arg *a, struct mm_struct *mm,
			  unsigned long addr, bool fault_in)
{
	struct vm_area_struct *vma = vma_lookup(mm, addr);
	bool unlocked = false;
	int ret;

	if (!vma || !(vma->vm_flags & (a->write ? VM_WRITE : VM_READ)))
		return false;
	if (elan_mmu_has(a->c, addr, a->write))
		return true;
	a->installed = false;
	ret = ioproc_load(vma, addr, a->write, elan_load_cb, a);
	if (ret == -EFAULT && fault_in) {
		if (fixup_user_fault(mm, addr, a->write ? FAULT_FLAG_WRITE : 0,
				     &unlocked))
			return false;
		vma = vma_lookup(mm, addr);
		if (!vma)
			return false;
		a->installed = false;
		ret = ioproc_load(vma, addr, a->write, elan_load_cb, a);
	}
	return !ret && a->installed;
}

/*
 * After a fault on @va: load more pages, up to fault_around in all.  First
 * those that follow @va: the first @ahead are pages the NIC operation
 * goes on to touch (the NIC says how far), faulted in like the CPU would
 * if absent, so a transfer into a fresh buffer costs one NIC fault per
 * fault_around pages, not one per page; beyond the operation only present
 * pages.  Then present pages below @va, down to the fault_around-aligned
 * block it lies in (as the CPU's fault-around): buffers taken from the top
 * down, like the fragments of a free list, also cost one fault per block.
 * Nothing the process did not ask the NIC to touch is ever allocated.
 * Each direction stops at the end of the VMA, at a page the access is not
 * allowed to, or at the first failure.  Called and returns with mmap_lock
 * held for reading.
 */
static void elan_fault_around_load(struct elan_load_arg *a,
				   struct mm_struct *mm, unsigned long va,
				   unsigned int ahead)
{
	unsigned int i, n = min(READ_ONCE(elan_fault_around), 64U);
	unsigned long block, addr = va;

	mmap_assert_locked(mm);
	for (i = 1; i < n; i++)
		if (!elan_load_one(a, mm, va + i * PAGE_SIZE, i < ahead))
			break;
	block = va & ~(roundup_pow_of_two(max(n, 1U)) * PAGE_SIZE - 1);
	for (; i < n && addr > block; i++) {
		addr -= PAGE_SIZE;
		if (!elan_load_one(a, mm, addr, false))
			break;
	}
}

/*
 * Load the translation of @va into @c's MMU; @ahead: how many pages from
 * @va on the NIC operation touches (a hint).  Returns an elan_status.
 */
static u32 elan_ctx_fault(struct elan_ctx *c, unsigned long va, bool write,
			  unsigned int ahead)
{
	struct elan_load_arg a = { .c = c, .write = write };
	struct mm_struct *mm = c->mm;
	struct vm_area_struct *vma;
	unsigned int tries;
	bool unlocked;
	u32 status = ELAN_E_LOCAL_FAULT;
	int ret;

	if (!READ_ONCE(c->live) ||
	    READ_ONCE(c->hw->state) != ELAN_CTX_ACTIVE)
		return ELAN_E_TARGET_GONE;
	if (!mmget_not_zero(mm))
		return ELAN_E_TARGET_GONE;
	mmap_read_lock(mm);
	for (tries = 0; tries < ELAN_FAULT_TRIES; tries++) {
		vma = vma_lookup(mm, va);
		if (!vma) {
			status = ELAN_E_LOCAL_FAULT;
			break;
		}
		if (!(vma->vm_flags & (write ? VM_WRITE : VM_READ))) {
			status = ELAN_E_LOCAL_PROT;
			break;
		}
		a.installed = false;
		a.faulted = true;
		ret = ioproc_load(vma, va, write, elan_load_cb, &a);
		if (!ret) {
			status = a.installed ? ELAN_OK : ELAN_E_TARGET_GONE;
			if (a.installed)
				elan_fault_around_load(&a, mm, va, ahead);
			break;
		}
		if (ret == -EAGAIN)
			continue;
		if (ret != -EFAULT) {
			/* VM_IO, VM_PFNMAP, hugetlb: not translatable */
			status = ELAN_E_LOCAL_FAULT;
			break;
		}
		unlocked = false;
		ret = fixup_user_fault(mm, va, write ? FAULT_FLAG_WRITE : 0,
				       &unlocked);
		if (ret) {
			status = ELAN_E_LOCAL_FAULT;
			break;
		}
	}
	mmap_read_unlock(mm);
	mmput(mm);
	return status;
}

static u32 elan_service_fault(struct elan_dev *dev, u32 idx, u64 vaddr,
			      bool write, u32 pages)
{
	struct elan_ctx *c = NULL;
	u32 status;

	if (idx >= dev->max_ctx)
		return ELAN_E_NO_CONTEXT;
	if (vaddr >= TASK_SIZE_MAX)
		return ELAN_E_LOCAL_FAULT;
	spin_lock(&dev->slot_lock);
	c = dev->slot[idx];
	if (c)
		kref_get(&c->ref);
	spin_unlock(&dev->slot_lock);
	if (!c)
		return ELAN_E_TARGET_GONE;
	status = elan_ctx_fault(c, (unsigned long)vaddr & PAGE_MASK, write,
				min(pages, 64U));
	elan_ctx_put(c);
	return status;
}

/*
 * The fault queue: the NIC posts requests (req_seq = position + 1, written
 * last); each is answered with status, then ack_seq, and the NIC is rung
 * after a batch.  The queue is serviced in order by one work item.
 */
void elan_fault_work(struct work_struct *work)
{
	struct elan_dev *dev = container_of(work, struct elan_dev, fault_work);
	struct elan_hw_header *hdr = dev->hdr;
	unsigned int n = 0;

	while (!READ_ONCE(dev->removed)) {
		u32 head = READ_ONCE(hdr->fault_head);
		struct elan_hw_fault *f = &hdr->faultq[head % ELAN_FAULTQ_ENTRIES];
		/* req_seq first: the request's fields are valid after it */
		u32 req = smp_load_acquire(&f->req_seq);
		u32 status;

		if (req != head + 1)
			break;
		if (atomic_read(&dev->dead))
			status = ELAN_E_NODE_DOWN;
		else
			status = elan_service_fault(dev, READ_ONCE(f->ctx),
						    READ_ONCE(f->vaddr),
						    READ_ONCE(f->write),
						    READ_ONCE(f->pages));
		atomic64_inc(&dev->st.faults);
		if (status != ELAN_OK)
			atomic64_inc(&dev->st.fault_errors);
		WRITE_ONCE(f->status, status);
		/* status before ack_seq, ack_seq before fault_head */
		smp_store_release(&f->ack_seq, req);
		smp_store_release(&hdr->fault_head, head + 1); /* see above */
		if (++n % ELAN_FAULT_BATCH == 0)
			elan_ring(dev, ELAN_DB_FAULT);
		cond_resched();
	}
	if (n % ELAN_FAULT_BATCH)
		elan_ring(dev, ELAN_DB_FAULT);
}
