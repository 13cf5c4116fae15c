// SPDX-License-Identifier: GPL-2.0
/*
 * Elan NIC translation fault service: the NIC posts a request for a page
 * it found without a translation, one work item answers the queue in
 * order, loading the page (and its fault-around) into the context's NIC
 * MMU (elan_mmu.c keeps the table).  IOPROC mode loads with ioproc_load(),
 * whose callback installs each entry under the PTE lock; notifier mode
 * reads the page tables with hmm_range_fault() and installs under the
 * context lock if no invalidation ran meanwhile.
 */
#include <linux/kernel.h>
#include <linux/hmm.h>
#include <linux/jiffies.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/memremap.h>
#include <linux/sched/mm.h>

#include "elan_drv.h"

static unsigned int elan_fault_around = 64;
module_param_named(fault_around, elan_fault_around, uint, 0644);
MODULE_PARM_DESC(fault_around,
		 "Pages loaded per fault (1..64): the faulting one, the ones after it the NIC operation goes on to (faulted in if absent), present ones after it, then present ones below it in its aligned block");

static bool elan_huge = true;
module_param_named(huge, elan_huge, bool, 0644);
MODULE_PARM_DESC(huge,
		 "Hold a PMD-mapped THP as one 2 MiB NIC MMU entry (0: an entry per 4 KiB page, for measurements)");

#define ELAN_FAULT_TRIES	32
#define ELAN_FAULT_BATCH	16

/* The faulting page joins the last faults, kept from eviction. */
static void elan_fault_recent(struct elan_ctx *c, unsigned long addr)
{
	lockdep_assert_held(&c->lock);
	c->recent[c->recent_pos++ % ELAN_MMU_RECENT] = addr & PAGE_MASK;
}

/* The fault-around this fault may load, and its block below @va. */
static unsigned int elan_fault_around_pages(void)
{
	return clamp(READ_ONCE(elan_fault_around), 1U, ELAN_FAULT_AROUND_MAX);
}

static unsigned long elan_fault_around_block(unsigned long va,
					     unsigned int n)
{
	return va & ~(roundup_pow_of_two(n) * PAGE_SIZE - 1);
}

/*
 * The VMA of @va if the access is allowed there, as both modes check it
 * before loading; else NULL, with the status to answer in *@status.
 */
static struct vm_area_struct *elan_fault_vma(struct mm_struct *mm,
					     unsigned long va, bool write,
					     u32 *status)
{
	struct vm_area_struct *vma;

	/*
	 * Not mmap_assert_locked(): with CONFIG_DEBUG_VM it calls dump_mm(),
	 * which 6.1 does not export to modules.
	 */
	lockdep_assert_held(&mm->mmap_lock);
	vma = vma_lookup(mm, va);
	if (!vma) {
		*status = ELAN_E_LOCAL_FAULT;
		return NULL;
	}
	if (!(vma->vm_flags & (write ? VM_WRITE : VM_READ))) {
		*status = ELAN_E_LOCAL_PROT;
		return NULL;
	}
	return vma;
}

#ifdef CONFIG_IOPROC

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
	/* A THP the PMD maps: one entry from the block's first frame. */
	bool huge = pte->shift == ELAN_MMU_HUGE_SHIFT && READ_ONCE(elan_huge);
	unsigned long pfn = pte->pfn;

	if (a->write && !pte->writable)
		return;
	if (huge)
		pfn -= (addr & ((1UL << ELAN_MMU_HUGE_SHIFT) - 1)) >> PAGE_SHIFT;
	spin_lock(&c->lock);
	if (c->live && !atomic_read(&c->dev->dead)) {
		if (elan_mmu_install(c, addr, pfn, pte->writable, huge))
			elan_shootdown(c->dev, c->idx);
		if (huge)
			atomic64_inc(&c->dev->st.huge_loaded);
		if (a->faulted) {
			elan_fault_recent(c, addr);
			a->faulted = false;
		}
		a->installed = true;
		atomic64_inc(&c->dev->st.translations_loaded);
	}
	spin_unlock(&c->lock);
}

/*
 * Load @addr for fault-around; @fault_in: fault it in first if absent.
 * True when it is translated afterwards.  fixup_user_fault() may drop and
 * retake mmap_lock, so the VMA is looked up again.
 */
static bool elan_load_one(struct elan_load_arg *a, struct mm_struct *mm,
			  unsigned long addr, bool fault_in)
{
	struct vm_area_struct *vma;
	bool unlocked = false;
	u32 status;
	int ret;

	vma = elan_fault_vma(mm, addr, a->write, &status);
	if (!vma)
		return false;
	if (elan_mmu_has(a->c, addr, a->write))
		return true;
	a->installed = false;
	ret = ioproc_load(vma, addr, a->write, elan_load_cb, a);
	if (ret == -EFAULT && fault_in) {
		if (fixup_user_fault(mm, addr, a->write ? FAULT_FLAG_WRITE : 0,
				     &unlocked))
			return false;
		vma = elan_fault_vma(mm, addr, a->write, &status);
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
	unsigned int i, n = elan_fault_around_pages();
	unsigned long block = elan_fault_around_block(va, n), addr = va;

	lockdep_assert_held(&mm->mmap_lock);
	for (i = 1; i < n; i++)
		if (!elan_load_one(a, mm, va + i * PAGE_SIZE, i < ahead))
			break;
	for (; i < n && addr > block; i++) {
		addr -= PAGE_SIZE;
		if (!elan_load_one(a, mm, addr, false))
			break;
	}
}

/*
 * Load the translation of @va into @c's MMU; @ahead: how many pages from
 * @va on the NIC operation touches (a hint).  Returns an elan_status.
 * The caller holds a reference on c->mm (elan_service_fault()).
 */
static u32 elan_ctx_fault_ioproc(struct elan_ctx *c, unsigned long va,
				 bool write, unsigned int ahead)
{
	struct elan_load_arg a = { .c = c, .write = write };
	struct mm_struct *mm = c->mm;
	struct vm_area_struct *vma;
	unsigned int tries;
	bool unlocked;
	u32 status = ELAN_E_LOCAL_FAULT;
	int ret;

	mmap_read_lock(mm);
	for (tries = 0; tries < ELAN_FAULT_TRIES; tries++) {
		vma = elan_fault_vma(mm, va, write, &status);
		if (!vma)
			break;
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
	return status;
}
#endif /* CONFIG_IOPROC */

#if ELAN_HAVE_NOTIFIER
/*
 * Notifier mode.  Two hmm_range_fault() calls, within the faulting page's
 * VMA: the first faults in the pages from @va that the operation goes on
 * to touch (@ahead) like the CPU would (HMM_PFN_REQ_FAULT, and
 * HMM_PFN_REQ_WRITE for a write, so a write translation comes from a
 * writable PTE); the second reads the faulting page and its fault-around
 * without faulting anything.  (One call with the fault flags per page does
 * not do: where it faults, hmm_range_fault() faults every page from there
 * to the end of the page table it walks, flagged or not.)  Then, under
 * the context lock and only if no invalidation ran since the page tables
 * were read (mmu_interval_read_retry()), the entries are installed the
 * way IOPROC mode's fault-around does: the faulting page, the pages after
 * it up to the first gap, then the pages below it down to its
 * fault_around-aligned block, fault_around in all.  hmm_range_fault()
 * takes no page reference.  The caller holds a reference on c->mm
 * (elan_service_fault()).
 */

struct elan_hmm_load {
	struct elan_ctx *c;
	struct hmm_range *r;
	bool write;
	unsigned long block;	/* the last 2 MiB block installed */
};

/* Install the page at @a from l->r; false if it has no translation. */
static bool elan_hmm_load_one(struct elan_hmm_load *l, unsigned long a)
{
	unsigned long hp = l->r->hmm_pfns[(a - l->r->start) >> PAGE_SHIFT];
	bool wr = hp & HMM_PFN_WRITE, huge;
	struct elan_ctx *c = l->c;
	unsigned long pfn, mask;

	lockdep_assert_held(&c->lock);
	if (!(hp & HMM_PFN_VALID) || (l->write && !wr))
		return false;
	/* ordinary memory and the zero page only, as ioproc_load() */
	if (is_zone_device_page(hmm_pfn_to_page(hp)))
		return false;
	pfn = page_to_pfn(hmm_pfn_to_page(hp));
	/* A THP the PMD maps: one entry from the block's first frame. */
	huge = hmm_pfn_to_map_order(hp) == ELAN_MMU_HUGE_SHIFT - PAGE_SHIFT &&
	       READ_ONCE(elan_huge);
	if (huge) {
		mask = (1UL << ELAN_MMU_HUGE_SHIFT) - 1;
		if ((a & ~mask) == l->block)
			return true;	/* installed for an earlier page */
		l->block = a & ~mask;
		pfn -= (a & mask) >> PAGE_SHIFT;
		atomic64_inc(&c->dev->st.huge_loaded);
	}
	if (elan_mmu_install(c, a, pfn, wr, huge))
		elan_shootdown(c->dev, c->idx);
	atomic64_inc(&c->dev->st.translations_loaded);
	return true;
}

/*
 * Install @va and its fault-around from l->r, @n pages at most: @va, the
 * pages after it up to the first one without a translation, then those
 * below it down to the range's start.  False if @va itself has none.
 */
static bool elan_hmm_install(struct elan_hmm_load *l, unsigned long va,
			     unsigned int n)
{
	unsigned long a;
	unsigned int i = 1;

	if (!elan_hmm_load_one(l, va))
		return false;
	elan_fault_recent(l->c, va);
	for (a = va + PAGE_SIZE; i < n && a < l->r->end; i++, a += PAGE_SIZE)
		if (!elan_hmm_load_one(l, a))
			break;
	for (a = va; i < n && a > l->r->start; i++) {
		a -= PAGE_SIZE;
		if (!elan_hmm_load_one(l, a))
			break;
	}
	return true;
}

static u32 elan_ctx_fault_hmm(struct elan_ctx *c, unsigned long va,
			      bool write, unsigned int ahead)
{
	unsigned long req = HMM_PFN_REQ_FAULT | (write ? HMM_PFN_REQ_WRITE : 0);
	unsigned long timeout = jiffies +
				msecs_to_jiffies(HMM_RANGE_DEFAULT_TIMEOUT);
	unsigned int n = elan_fault_around_pages();
	/* f: the pages to fault in; r: what is loaded, read only */
	struct hmm_range f = {
		.notifier = &c->mni,
		.hmm_pfns = c->dev->fault_pfns,
		.default_flags = req,
	};
	struct hmm_range r = {
		.notifier = &c->mni,
		.hmm_pfns = c->dev->fault_pfns,
	};
	struct elan_hmm_load l = { .c = c, .r = &r, .write = write,
				   .block = ~0UL };
	unsigned long ahead_end = va + max(ahead, 1U) * PAGE_SIZE;
	struct mm_struct *mm = c->mm;
	struct vm_area_struct *vma;
	u32 status;
	int ret;

	for (;;) {
		r.notifier_seq = mmu_interval_read_begin(&c->mni);
		f.notifier_seq = r.notifier_seq;
		mmap_read_lock(mm);
		vma = elan_fault_vma(mm, va, write, &status);
		if (!vma) {
			mmap_read_unlock(mm);
			return status;
		}
		/* va's block below it, n pages from va on, in va's VMA */
		r.start = max(elan_fault_around_block(va, n), vma->vm_start);
		r.end = min(va + n * PAGE_SIZE, vma->vm_end);
		f.start = va;
		f.end = min(ahead_end, r.end);
		ret = hmm_range_fault(&f);
		if (!ret)
			ret = hmm_range_fault(&r);
		mmap_read_unlock(mm);
		if (ret == -EBUSY && time_before(jiffies, timeout)) {
			atomic64_inc(&c->dev->st.fault_retries);
			continue;
		}
		if (ret) {
			/* VM_IO, VM_PFNMAP, out of memory, always raced */
			return ELAN_E_LOCAL_FAULT;
		}
		spin_lock(&c->lock);
		if (mmu_interval_read_retry(&c->mni, r.notifier_seq)) {
			/* an invalidation ran since: the pfns may be stale */
			spin_unlock(&c->lock);
			atomic64_inc(&c->dev->st.fault_retries);
			continue;
		}
		if (!c->live || atomic_read(&c->dev->dead))
			status = ELAN_E_TARGET_GONE;
		else if (!elan_hmm_install(&l, va, n))
			status = ELAN_E_LOCAL_FAULT;
		else
			status = ELAN_OK;
		spin_unlock(&c->lock);
		return status;
	}
}
#endif /* ELAN_HAVE_NOTIFIER */

static u32 elan_ctx_fault(struct elan_ctx *c, unsigned long va, bool write,
			  unsigned int ahead)
{
#if ELAN_HAVE_NOTIFIER
	if (c->notifier)
		return elan_ctx_fault_hmm(c, va, write, ahead);
#endif
#ifdef CONFIG_IOPROC
	return elan_ctx_fault_ioproc(c, va, write, ahead);
#else
	return ELAN_E_LOCAL_FAULT;	/* not reached: notifier mode only */
#endif
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
	c = elan_slot_get(dev, idx);
	if (!c)
		return ELAN_E_TARGET_GONE;
	/* Both modes: a live context whose process still has its mm. */
	if (!READ_ONCE(c->live) ||
	    READ_ONCE(c->map.ctl->state) != ELAN_CTX_ACTIVE ||
	    !mmget_not_zero(c->mm)) {
		elan_ctx_put(c);
		return ELAN_E_TARGET_GONE;
	}
	status = elan_ctx_fault(c, (unsigned long)vaddr & PAGE_MASK, write,
				min(pages, 64U));
	mmput(c->mm);
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
