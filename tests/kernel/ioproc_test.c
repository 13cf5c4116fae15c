// SPDX-License-Identifier: GPL-2.0
/*
 * ioproc_test: a pretend NIC that proves the IOPROC hooks.
 *
 * Each open file is one NIC context on the opener's mm.  Its shadow table
 * (an xarray indexed by virtual page) holds what a NIC MMU would hold: the
 * frame and whether the NIC may write it.  The hooks keep it in step with
 * the page tables; IOPROC_TEST_CHECK proves that they did.  The xarray
 * lock stands in for the NIC's shootdown: a hook removing an entry waits
 * for a PUT or GET that is copying through it.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/kthread.h>
#include <linux/pid.h>
#include <linux/highmem.h>
#include <linux/ktime.h>
#include <linux/delay.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <linux/ioproc.h>

#include "ioproc_test.h"

static unsigned int skip_hooks;
module_param(skip_hooks, uint, 0644);
MODULE_PARM_DESC(skip_hooks,
		 "Ignore hook classes (1 invalidate, 2 protection, 4 release) to show that CHECK catches a broken NIC");

static bool huge = true;
module_param(huge, bool, 0644);
MODULE_PARM_DESC(huge,
		 "A translation the kernel reports for a whole THP block (pte->shift) is held for every page of it, as a NIC with 2 MiB entries relies on");

static bool assume_blocks;
module_param(assume_blocks, bool, 0644);
MODULE_PARM_DESC(assume_blocks,
		 "Broken NIC: holds every translation as a 2 MiB block, frames counted on, whatever pte->shift says");

static bool wait_faulting;
module_param(wait_faulting, bool, 0644);
MODULE_PARM_DESC(wait_faulting,
		 "Broken NIC: hooks also wait for a PUT/GET parked on a translation fault");

/* Release hooks run, all contexts: the mm is gone when they do. */
static atomic_t release_calls = ATOMIC_INIT(0);
static int release_calls_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&release_calls));
}

static const struct kernel_param_ops release_calls_ops = {
	.get = release_calls_get,
};

module_param_cb(release_calls, &release_calls_ops, NULL, 0444);
MODULE_PARM_DESC(release_calls, "release hooks called so far");
struct nic_ctx {
	struct mm_struct *mm;		/* mmgrab()ed at attach */
	struct ioproc_ops ops;
	bool attached;
	struct xarray shadow;		/* vpn -> xa_mk_value(pfn << 1 | w) */
	unsigned long preload_start, preload_end;
	atomic64_t calls[IOPROC_HOOK_NR];
	atomic64_t loads, preloads, faults, released, blocks;
	/* IOPROC_TEST_INFLIGHT: [start, end) with its data, freed at close */
	unsigned long inflight_start, inflight_end;
	void *inflight_buf;
	unsigned int inflight_wait_ms;
	atomic64_t inflight_waiting, inflight_landed, inflight_seen_clean;
	/* PUT/GET in flight (struct nic_dma), for hooks to wait for */
	spinlock_t dma_lock;
	struct list_head dmas;
	unsigned int dma_wait_ms;
	unsigned long pause_addr;
	atomic_t hook_waiting;
	atomic64_t dma_waits, dma_wait_timeouts, xfer_paused;
	struct list_head follow_node;	/* follow mode: on follow.ctxs */
	struct mutex lock;		/* attach/detach */
};

/* A PUT or GET as the NIC's DMA engine runs it. */
struct nic_dma {
	struct list_head node;
	unsigned long start, end;
	bool faulting;		/* parked on a translation fault: aborted */
	bool abandoned;		/* a hook's wait for it ran out */
};

static inline unsigned long shadow_val(const struct ioproc_pte *t)
{
	return t->pfn << 1 | t->writable;
}

/* Drop the entries of [start, end), or with @wr_only take write away. */
static void shadow_change(struct nic_ctx *c, unsigned long start,
			  unsigned long end, bool wr_only)
{
	unsigned long idx;
	void *e;

	xa_lock(&c->shadow);
	xa_for_each_range(&c->shadow, idx, e, start >> PAGE_SHIFT,
			  (end - 1) >> PAGE_SHIFT) {
		if (!wr_only)
			__xa_erase(&c->shadow, idx);
		else if (xa_to_value(e) & 1)
			__xa_store(&c->shadow, idx,
				   xa_mk_value(xa_to_value(e) & ~1UL),
				   GFP_ATOMIC);
	}
	xa_unlock(&c->shadow);
}

static void shadow_drop(struct nic_ctx *c, unsigned long start,
			unsigned long end)
{
	shadow_change(c, start, end, false);
}

/*
 * The write in flight through the entry of @idx lands, as late as it can:
 * after writeback had the chance to clean the page and write it out,
 * bounded by @deadline.  Writeback must not be able to (the hook runs
 * before the PTE's dirty bit is handed on), or the write never reaches
 * the file and is lost once the clean page is reclaimed.
 */
static void inflight_land(struct nic_ctx *c, unsigned long idx,
			  unsigned long pfn, ktime_t *deadline)
{
	unsigned long off = (idx << PAGE_SHIFT) - c->inflight_start;
	struct page *page = pfn_to_page(pfn);
	void *va;

	if (!*deadline)
		*deadline = ktime_add_ms(ktime_get(), c->inflight_wait_ms);
	atomic64_set(&c->inflight_waiting, 1);
	while ((PageDirty(page) || PageWriteback(page)) &&
	       ktime_before(ktime_get(), *deadline))
		cpu_relax();
	atomic64_set(&c->inflight_waiting, 0);
	if (!PageDirty(page) && !PageWriteback(page))
		atomic64_inc(&c->inflight_seen_clean);
	va = kmap_local_pfn(pfn);
	memcpy(va, c->inflight_buf + off, PAGE_SIZE);
	kunmap_local(va);
	atomic64_inc(&c->inflight_landed);
}

/* An invalidate hook: drop the entries, landing writes in flight first. */
static void shadow_invalidate(struct nic_ctx *c, unsigned long start,
			      unsigned long end)
{
	/* Pairs with do_inflight(): a set end comes with start and buffer. */
	unsigned long iend = smp_load_acquire(&c->inflight_end);
	unsigned long istart = READ_ONCE(c->inflight_start);
	ktime_t deadline = 0;
	unsigned long idx;
	void *e;

	if (istart >= iend || end <= istart || start >= iend) {
		shadow_drop(c, start, end);
		return;
	}
	xa_lock(&c->shadow);
	xa_for_each_range(&c->shadow, idx, e, start >> PAGE_SHIFT,
			  (end - 1) >> PAGE_SHIFT) {
		if ((xa_to_value(e) & 1) && idx >= istart >> PAGE_SHIFT &&
		    idx < iend >> PAGE_SHIFT)
			inflight_land(c, idx, xa_to_value(e) >> 1, &deadline);
		__xa_erase(&c->shadow, idx);
	}
	xa_unlock(&c->shadow);
}

/*
 * Called by ioproc_load() and from update hooks, under the PTE (or PMD)
 * lock.  A translation of a whole block (a PMD-mapped THP) is stored for
 * each of its pages, frames counted on from the block's first: the
 * checker then holds the kernel to pte->shift for every page of it until
 * a hook covers that page.  (Once stored, the other pages' loads of the
 * same block find their entry and store nothing.)
 */
static void shadow_load(void *arg, unsigned long addr,
			const struct ioproc_pte *t)
{
	unsigned int shift = READ_ONCE(assume_blocks) ? PMD_SHIFT : t->shift;
	unsigned long size = 1UL << shift, first = addr & ~(size - 1);
	unsigned long pfn0 = t->pfn - ((addr - first) >> PAGE_SHIFT), i;
	struct nic_ctx *c = arg;
	void *e;

	xa_lock(&c->shadow);
	e = xa_load(&c->shadow, addr >> PAGE_SHIFT);
	if (!READ_ONCE(huge) || shift <= PAGE_SHIFT) {
		__xa_store(&c->shadow, addr >> PAGE_SHIFT,
			   xa_mk_value(shadow_val(t)), GFP_ATOMIC);
	} else if (!e || xa_to_value(e) != shadow_val(t)) {
		for (i = 0; i < size >> PAGE_SHIFT; i++)
			__xa_store(&c->shadow, (first >> PAGE_SHIFT) + i,
				   xa_mk_value((pfn0 + i) << 1 | t->writable),
				   GFP_ATOMIC);
		atomic64_inc(&c->blocks);
	}
	xa_unlock(&c->shadow);
}

static void hook_release(void *arg, struct mm_struct *mm)
{
	struct nic_ctx *c = arg;

	atomic64_inc(&c->calls[IOPROC_HOOK_RELEASE]);
	atomic64_inc(&c->released);
	atomic_inc(&release_calls);
	if (!(skip_hooks & IOPROC_SKIP_RELEASE))
		shadow_drop(c, 0, TASK_SIZE);
}

static void hook_sync_range(void *arg, struct vm_area_struct *vma,
			    unsigned long start, unsigned long end)
{
	struct nic_ctx *c = arg;

	/* Every PUT completes before its ioctl returns: nothing in flight. */
	atomic64_inc(&c->calls[IOPROC_HOOK_SYNC_RANGE]);
}

static void hook_sync_page(void *arg, struct vm_area_struct *vma,
			   unsigned long addr)
{
	struct nic_ctx *c = arg;

	atomic64_inc(&c->calls[IOPROC_HOOK_SYNC_PAGE]);
}

/*
 * The shootdown waits for DMA in flight through the range, but never for
 * a transfer parked on a translation fault: its fault may need the page
 * table lock this hook runs under, so it counts as aborted (it restarts
 * its page once the fault is serviced).  A broken NIC (wait_faulting)
 * waits for it too; the bound turns that deadlock into a counted timeout,
 * after which the transfer is given up on, as a NIC declares a stuck DMA
 * dead (a zap that retries its batch would otherwise wait again).
 */
static void dma_wait(struct nic_ctx *c, unsigned long start,
		     unsigned long end)
{
	unsigned int ms = READ_ONCE(c->dma_wait_ms);
	bool busy, waited = false;
	struct nic_dma *d;
	ktime_t deadline;

	if (!ms)
		return;
	deadline = ktime_add_ms(ktime_get(), ms);
	for (;;) {
		busy = false;
		spin_lock(&c->dma_lock);
		list_for_each_entry(d, &c->dmas, node)
			if (d->start < end && start < d->end && !d->abandoned &&
			    (wait_faulting || !READ_ONCE(d->faulting)))
				busy = true;
		if (busy && ktime_after(ktime_get(), deadline)) {
			list_for_each_entry(d, &c->dmas, node)
				if (d->start < end && start < d->end)
					d->abandoned = true;
			busy = false;
			atomic64_inc(&c->dma_wait_timeouts);
			pr_warn_ratelimited("ioproc_test: a hook waited %u ms for a DMA in flight\n",
					    ms);
		}
		spin_unlock(&c->dma_lock);
		if (!busy)
			break;
		if (!waited) {
			waited = true;
			atomic64_inc(&c->dma_waits);
			atomic_set(&c->hook_waiting, 1);
		}
		cpu_relax();
	}
	if (waited)
		atomic_set(&c->hook_waiting, 0);
}

static void hook_invalidate_range(void *arg, struct vm_area_struct *vma,
				  unsigned long start, unsigned long end)
{
	struct nic_ctx *c = arg;

	atomic64_inc(&c->calls[IOPROC_HOOK_INVALIDATE_RANGE]);
	if (skip_hooks & IOPROC_SKIP_INVALIDATE)
		return;
	dma_wait(c, start, end);
	shadow_invalidate(c, start, end);
}

static void hook_invalidate_page(void *arg, struct vm_area_struct *vma,
				 unsigned long addr)
{
	struct nic_ctx *c = arg;

	atomic64_inc(&c->calls[IOPROC_HOOK_INVALIDATE_PAGE]);
	if (skip_hooks & IOPROC_SKIP_INVALIDATE)
		return;
	dma_wait(c, addr, addr + PAGE_SIZE);
	shadow_invalidate(c, addr, addr + PAGE_SIZE);
}

static void preload(struct nic_ctx *c, struct vm_area_struct *vma,
		    unsigned long start, unsigned long end)
{
	struct ioproc_pte t;
	unsigned long addr;

	start = max(start, READ_ONCE(c->preload_start));
	end = min(end, READ_ONCE(c->preload_end));
	for (addr = start; addr < end; addr += PAGE_SIZE) {
		if (ioproc_peek_locked(vma, addr, &t))
			continue;
		shadow_load(c, addr, &t);
		atomic64_inc(&c->preloads);
	}
}

static void hook_update_range(void *arg, struct vm_area_struct *vma,
			      unsigned long start, unsigned long end)
{
	struct nic_ctx *c = arg;

	atomic64_inc(&c->calls[IOPROC_HOOK_UPDATE_RANGE]);
	preload(c, vma, start, end);
}

static void hook_update_page(void *arg, struct vm_area_struct *vma,
			     unsigned long addr)
{
	struct nic_ctx *c = arg;

	atomic64_inc(&c->calls[IOPROC_HOOK_UPDATE_PAGE]);
	preload(c, vma, addr, addr + PAGE_SIZE);
}

static void hook_change_protection(void *arg, struct vm_area_struct *vma,
				   unsigned long start, unsigned long end,
				   pgprot_t newprot)
{
	struct nic_ctx *c = arg;

	atomic64_inc(&c->calls[IOPROC_HOOK_CHANGE_PROTECTION]);
	if (skip_hooks & IOPROC_SKIP_PROTECTION)
		return;
	if (!ioproc_prot_read(newprot))
		shadow_drop(c, start, end);
	else if (!ioproc_prot_write(newprot))
		shadow_change(c, start, end, true);
}

static const struct ioproc_ops nic_ops_template = {
	.release		= hook_release,
	.sync_range		= hook_sync_range,
	.invalidate_range	= hook_invalidate_range,
	.update_range		= hook_update_range,
	.change_protection	= hook_change_protection,
	.sync_page		= hook_sync_page,
	.invalidate_page	= hook_invalidate_page,
	.update_page		= hook_update_page,
};

/* A NIC translation fault: fault the page in, load, no reference kept. */
static int nic_fault(struct nic_ctx *c, unsigned long addr, bool write)
{
	struct vm_area_struct *vma;
	int tries, ret = -EBUSY;

	/* The caller holds mmap_lock: ioproc_load() asserts it. */
	for (tries = 0; tries < 32; tries++) {
		vma = vma_lookup(c->mm, addr);
		if (!vma)
			return -EFAULT;
		ret = ioproc_load(vma, addr, write, shadow_load, c);
		if (!ret) {
			atomic64_inc(&c->loads);
			return 0;
		}
		if (ret == -EAGAIN)
			continue;
		if (ret != -EFAULT)
			return ret;
		atomic64_inc(&c->faults);
		ret = fixup_user_fault(c->mm, addr,
				       write ? FAULT_FLAG_WRITE : 0, NULL);
		if (ret)
			return ret;
	}
	return -EBUSY;
}

static bool ctx_usable(struct nic_ctx *c)
{
	return c->attached && current->mm == c->mm;
}

static long do_load(struct nic_ctx *c, struct ioproc_test_range __user *u)
{
	struct ioproc_test_range r;
	unsigned long addr;
	int ret = 0;

	if (copy_from_user(&r, u, sizeof(r)))
		return -EFAULT;
	if (!PAGE_ALIGNED(r.addr) || !PAGE_ALIGNED(r.len) ||
	    r.addr + r.len < r.addr || r.addr + r.len > TASK_SIZE)
		return -EINVAL;
	r.done = 0;
	if (mmap_read_lock_killable(c->mm))
		return -EINTR;
	for (addr = r.addr; addr < r.addr + r.len; addr += PAGE_SIZE) {
		ret = nic_fault(c, addr, r.write);
		if (ret)
			break;
		r.done++;
	}
	mmap_read_unlock(c->mm);
	if (copy_to_user(u, &r, sizeof(r)))
		return -EFAULT;
	return ret;
}

/*
 * Compare one shadow entry with the live PTE.  Returns 0 if it matches,
 * 1 stale, 2 over-permissive, -EAGAIN to look again.
 */
struct check_arg {
	struct nic_ctx *c;
	int verdict;
};

static void check_cb(void *arg, unsigned long addr, const struct ioproc_pte *t)
{
	struct check_arg *a = arg;
	void *e;

	xa_lock(&a->c->shadow);
	e = xa_load(&a->c->shadow, addr >> PAGE_SHIFT);
	if (!e)
		a->verdict = 0;			/* dropped meanwhile: fine */
	else if ((xa_to_value(e) >> 1) != t->pfn)
		a->verdict = 1;
	else if ((xa_to_value(e) & 1) && !t->writable)
		a->verdict = 2;
	else
		a->verdict = 0;
	xa_unlock(&a->c->shadow);
}

static int check_one(struct nic_ctx *c, unsigned long addr)
{
	struct check_arg a = { .c = c };
	struct vm_area_struct *vma;
	int tries, ret;

	for (tries = 0; tries < 8; tries++) {
		vma = vma_lookup(c->mm, addr);
		ret = vma ? ioproc_load(vma, addr, false, check_cb, &a) :
			    -EFAULT;
		if (!ret)
			return a.verdict;
		if (ret == -EAGAIN)
			continue;
		/*
		 * No PTE (or no VMA): stale if the entry is still there.  A
		 * PTE being re-established right now (migration, swap-in)
		 * may have preloaded it, so look again before judging.  A
		 * munmap() that downgraded mmap_lock to read has removed the
		 * VMA but may not have zapped yet: taking the lock for
		 * writing waits for it to finish.
		 */
		if (!xa_load(&c->shadow, addr >> PAGE_SHIFT))
			return 0;
		mmap_read_unlock(c->mm);
		if (!vma) {
			mmap_write_lock(c->mm);
			mmap_write_unlock(c->mm);
		}
		cond_resched();
		mmap_read_lock(c->mm);
	}
	return xa_load(&c->shadow, addr >> PAGE_SHIFT) ? 1 : 0;
}

/* CHECK the entries of pages [first, last] into @r (its counts). */
static int check_entries(struct nic_ctx *c, unsigned long first,
			 unsigned long last, struct ioproc_test_check *r)
{
	unsigned long idx, *batch;
	unsigned int n, i;
	void *e;

	r->checked = 0;
	r->stale = 0;
	r->overperm = 0;
	r->first_bad = 0;
	batch = kmalloc_array(256, sizeof(*batch), GFP_KERNEL);
	if (!batch)
		return -ENOMEM;
	if (mmap_read_lock_killable(c->mm)) {
		kfree(batch);
		return -EINTR;
	}
	idx = first;
	for (;;) {
		n = 0;
		xa_lock(&c->shadow);
		xa_for_each_range(&c->shadow, idx, e, idx, last) {
			batch[n++] = idx;
			if (n == 256)
				break;
		}
		xa_unlock(&c->shadow);
		for (i = 0; i < n; i++) {
			int v = check_one(c, batch[i] << PAGE_SHIFT);

			r->checked++;
			if (v == 1)
				r->stale++;
			if (v == 2)
				r->overperm++;
			if (v > 0 && !r->first_bad)
				r->first_bad = batch[i] << PAGE_SHIFT;
		}
		if (n < 256 || batch[n - 1] == last)
			break;
		idx = batch[n - 1] + 1;
	}
	mmap_read_unlock(c->mm);
	kfree(batch);
	if (r->stale || r->overperm)
		pr_warn("ioproc_test: %llu stale, %llu over-permissive of %llu (first at %#llx)\n",
			r->stale, r->overperm, r->checked, r->first_bad);
	return 0;
}

static long do_check(struct nic_ctx *c, struct ioproc_test_check __user *u)
{
	struct ioproc_test_check r;
	unsigned long first, last;
	int ret;

	if (copy_from_user(&r, u, sizeof(r)))
		return -EFAULT;
	if (!r.addr && !r.len) {
		first = 0;
		last = ULONG_MAX;
	} else {
		if (!r.len || r.addr + r.len < r.addr)
			return -EINVAL;
		first = r.addr >> PAGE_SHIFT;
		last = (r.addr + r.len - 1) >> PAGE_SHIFT;
	}
	ret = check_entries(c, first, last, &r);
	if (ret)
		return ret;
	return copy_to_user(u, &r, sizeof(r)) ? -EFAULT : 0;
}

/*
 * Copy one page's part through its shadow translation, as the NIC's DMA
 * engine does.  The xarray lock is held across the copy, so an invalidate
 * hook for this page waits until the copy is done (the shootdown).
 */
static int xfer_page(struct nic_ctx *c, struct nic_dma *dma,
		     unsigned long addr, void *kbuf, size_t len, bool put)
{
	int tries, ret;
	void *e, *va;

	for (tries = 0; tries < 32; tries++) {
		xa_lock(&c->shadow);
		e = xa_load(&c->shadow, addr >> PAGE_SHIFT);
		if (e && !pfn_valid(xa_to_value(e) >> 1)) {
			/* (a block made up by assume_blocks) */
			xa_unlock(&c->shadow);
			return -EFAULT;
		}
		if (e && (!put || (xa_to_value(e) & 1))) {
			va = kmap_local_pfn(xa_to_value(e) >> 1);
			if (put)
				memcpy(va + offset_in_page(addr), kbuf, len);
			else
				memcpy(kbuf, va + offset_in_page(addr), len);
			kunmap_local(va);
			xa_unlock(&c->shadow);
			return 0;
		}
		xa_unlock(&c->shadow);
		/* Translation fault: aborted until the driver services it. */
		WRITE_ONCE(dma->faulting, true);
		ret = nic_fault(c, addr & PAGE_MASK, put);
		WRITE_ONCE(dma->faulting, false);
		if (ret)
			return ret;
	}
	return -EBUSY;
}

/* Wait at pause_addr, once, until a hook waits for this transfer. */
static void dma_pause(struct nic_ctx *c)
{
	int i;

	WRITE_ONCE(c->pause_addr, 0);
	atomic64_set(&c->xfer_paused, 1);
	for (i = 0; i < 2000 && !atomic_read(&c->hook_waiting); i++)
		usleep_range(500, 1000);
	atomic64_set(&c->xfer_paused, 0);
}

static long do_xfer(struct nic_ctx *c, struct ioproc_test_xfer __user *u,
		    bool put)
{
	struct ioproc_test_xfer x;
	struct nic_dma dma;
	unsigned long addr, end;
	void *kbuf;
	long ret = 0;

	if (copy_from_user(&x, u, sizeof(x)))
		return -EFAULT;
	if (x.addr + x.len < x.addr || x.addr + x.len > TASK_SIZE ||
	    x.len > SZ_64M)
		return -EINVAL;
	kbuf = kvmalloc(max_t(size_t, x.len, 1), GFP_KERNEL);
	if (!kbuf)
		return -ENOMEM;
	if (put && copy_from_user(kbuf, u64_to_user_ptr(x.buf), x.len)) {
		kvfree(kbuf);
		return -EFAULT;
	}
	x.error = 0;
	if (mmap_read_lock_killable(c->mm)) {
		kvfree(kbuf);
		return -EINTR;
	}
	dma.start = x.addr & PAGE_MASK;
	dma.end = x.addr + x.len;
	dma.faulting = false;
	dma.abandoned = false;
	spin_lock(&c->dma_lock);
	list_add(&dma.node, &c->dmas);
	spin_unlock(&c->dma_lock);
	for (addr = x.addr, end = x.addr + x.len; addr < end;) {
		size_t n = min_t(size_t, end - addr,
				 PAGE_SIZE - offset_in_page(addr));

		if ((addr & PAGE_MASK) == READ_ONCE(c->pause_addr))
			dma_pause(c);
		x.error = xfer_page(c, &dma, addr, kbuf + (addr - x.addr), n,
				    put);
		if (x.error)
			break;
		addr += n;
	}
	spin_lock(&c->dma_lock);
	list_del(&dma.node);
	spin_unlock(&c->dma_lock);
	mmap_read_unlock(c->mm);
	if (!put && !x.error &&
	    copy_to_user(u64_to_user_ptr(x.buf), kbuf, x.len))
		ret = -EFAULT;
	kvfree(kbuf);
	if (copy_to_user(u, &x, sizeof(x)))
		ret = -EFAULT;
	return ret;
}

static long do_stats(struct nic_ctx *c, struct ioproc_test_stats __user *u)
{
	struct ioproc_test_stats s = {};
	unsigned long idx;
	void *e;
	int i;

	for (i = 0; i < IOPROC_HOOK_NR; i++)
		s.calls[i] = atomic64_read(&c->calls[i]);
	/* RCU only: an invalidate hook may hold the lock while it waits. */
	xa_for_each(&c->shadow, idx, e)
		s.entries++;
	s.loads = atomic64_read(&c->loads);
	s.preloads = atomic64_read(&c->preloads);
	s.blocks = atomic64_read(&c->blocks);
	s.faults = atomic64_read(&c->faults);
	s.released = atomic64_read(&c->released);
	s.inflight_waiting = atomic64_read(&c->inflight_waiting);
	s.inflight_landed = atomic64_read(&c->inflight_landed);
	s.inflight_seen_clean = atomic64_read(&c->inflight_seen_clean);
	s.dma_waits = atomic64_read(&c->dma_waits);
	s.dma_wait_timeouts = atomic64_read(&c->dma_wait_timeouts);
	s.xfer_paused = atomic64_read(&c->xfer_paused);
	return copy_to_user(u, &s, sizeof(s)) ? -EFAULT : 0;
}

/*
 * Arm once per context: hooks read the buffer without a lock, so it stays
 * until close (after unregistration has waited for them).
 */
static long do_inflight(struct nic_ctx *c,
			struct ioproc_test_inflight __user *u)
{
	struct ioproc_test_inflight r;

	if (copy_from_user(&r, u, sizeof(r)))
		return -EFAULT;
	if (!r.len) {
		WRITE_ONCE(c->inflight_end, 0);
		return 0;
	}
	if (c->inflight_buf)
		return -EBUSY;
	if (!PAGE_ALIGNED(r.addr) || !PAGE_ALIGNED(r.len) || r.len > SZ_1M ||
	    r.addr + r.len < r.addr || r.addr + r.len > TASK_SIZE ||
	    r.wait_ms > 10000)
		return -EINVAL;
	c->inflight_buf = kvmalloc(r.len, GFP_KERNEL);
	if (!c->inflight_buf)
		return -ENOMEM;
	if (copy_from_user(c->inflight_buf, u64_to_user_ptr(r.buf), r.len)) {
		kvfree(c->inflight_buf);
		c->inflight_buf = NULL;
		return -EFAULT;
	}
	c->inflight_wait_ms = r.wait_ms;
	WRITE_ONCE(c->inflight_start, r.addr);
	/* Hooks that see the end see the start and the buffer too. */
	smp_store_release(&c->inflight_end, r.addr + r.len);
	return 0;
}

static void ctx_detach(struct nic_ctx *c)
{
	if (!c->attached)
		return;
	/* -ENOENT if the mm's release hook unlinked us already: fine. */
	ioproc_unregister_ops(c->mm, &c->ops);
	c->attached = false;
	shadow_drop(c, 0, TASK_SIZE);
}

static struct nic_ctx *ctx_alloc(void)
{
	struct nic_ctx *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (!c)
		return NULL;
	xa_init(&c->shadow);
	spin_lock_init(&c->dma_lock);
	INIT_LIST_HEAD(&c->dmas);
	mutex_init(&c->lock);
	return c;
}

static void ctx_free(struct nic_ctx *c)
{
	ctx_detach(c);
	kvfree(c->inflight_buf);
	xa_destroy(&c->shadow);
	if (c->mm)
		mmdrop(c->mm);
	kfree(c);
}

/*
 * Follow mode (IOPROC_TEST_FOLLOW): a context on every mm of the
 * descendants of a supervisor, so that programs that know nothing of the
 * NIC (the kernel's own mm selftests) run with it watching.  One kernel
 * thread does all of it: the contexts and their list are its own.
 */
struct follow {
	struct task_struct *thread;
	struct pid *root;		/* the supervisor's thread group */
	struct file *owner;		/* the file that started it */
	struct list_head ctxs;
	unsigned int interval_ms;
	atomic64_t mms, passes, preloads, blocks, checked, stale, overperm;
};

static DEFINE_MUTEX(follow_lock);	/* starting and stopping */
static struct follow *follower;

/* Under rcu_read_lock(). */
static bool follow_descends(struct task_struct *p, struct pid *root)
{
	struct task_struct *parent;

	for (;;) {
		parent = rcu_dereference(p->real_parent);
		if (parent == p || !parent->pid)
			return false;
		if (task_tgid(parent) == root)
			return true;
		p = parent;
	}
}

static bool follow_has(struct follow *f, struct mm_struct *mm,
		       struct mm_struct **found, int n)
{
	struct nic_ctx *c;
	int i;

	list_for_each_entry(c, &f->ctxs, follow_node)
		if (c->mm == mm)
			return true;
	for (i = 0; i < n; i++)
		if (found[i] == mm)
			return true;
	return false;
}

/* Register a context on each mm of a descendant not followed yet. */
static void follow_discover(struct follow *f)
{
	struct mm_struct *found[16], *mm;
	struct task_struct *p;
	struct nic_ctx *c;
	int n = 0, i;

	rcu_read_lock();
	for_each_process(p) {
		if ((p->flags & PF_KTHREAD) || !follow_descends(p, f->root))
			continue;
		task_lock(p);
		mm = p->mm;
		if (mm && n < ARRAY_SIZE(found) &&
		    !follow_has(f, mm, found, n) && mmget_not_zero(mm))
			found[n++] = mm;
		task_unlock(p);
	}
	rcu_read_unlock();
	for (i = 0; i < n; i++) {
		c = ctx_alloc();
		if (c) {
			c->mm = found[i];
			mmgrab(c->mm);
			c->ops = nic_ops_template;
			c->ops.arg = c;
			c->preload_end = TASK_SIZE;
			c->attached = !ioproc_register_ops(c->mm, &c->ops);
			if (c->attached) {
				list_add(&c->follow_node, &f->ctxs);
				atomic64_inc(&f->mms);
			} else {
				ctx_free(c);
			}
		}
		mmput(found[i]);
	}
}

static void follow_drop(struct follow *f, struct nic_ctx *c)
{
	list_del(&c->follow_node);
	atomic64_add(atomic64_read(&c->preloads), &f->preloads);
	atomic64_add(atomic64_read(&c->blocks), &f->blocks);
	ctx_free(c);
}

/* CHECK every entry of every followed mm; drop the mms that exited. */
static void follow_pass(struct follow *f)
{
	struct ioproc_test_check r;
	struct nic_ctx *c, *tmp;

	list_for_each_entry_safe(c, tmp, &f->ctxs, follow_node) {
		if (atomic64_read(&c->released) || !mmget_not_zero(c->mm)) {
			follow_drop(f, c);
			continue;
		}
		if (!check_entries(c, 0, ULONG_MAX, &r)) {
			atomic64_add(r.checked, &f->checked);
			atomic64_add(r.stale, &f->stale);
			atomic64_add(r.overperm, &f->overperm);
		}
		mmput(c->mm);
		cond_resched();
	}
	atomic64_inc(&f->passes);
}

static int follow_thread(void *arg)
{
	struct follow *f = arg;
	struct nic_ctx *c, *tmp;
	unsigned long next = jiffies;

	/* New mms are looked for every 5 ms, so short programs are seen. */
	while (!kthread_should_stop()) {
		follow_discover(f);
		if (time_after_eq(jiffies, next)) {
			follow_pass(f);
			next = jiffies + msecs_to_jiffies(f->interval_ms);
		}
		schedule_timeout_interruptible(msecs_to_jiffies(5));
	}
	follow_pass(f);
	list_for_each_entry_safe(c, tmp, &f->ctxs, follow_node)
		follow_drop(f, c);
	return 0;
}

static void follow_counts(struct follow *f, struct ioproc_test_follow *r)
{
	r->mms = atomic64_read(&f->mms);
	r->passes = atomic64_read(&f->passes);
	r->preloads = atomic64_read(&f->preloads);
	r->blocks = atomic64_read(&f->blocks);
	r->checked = atomic64_read(&f->checked);
	r->stale = atomic64_read(&f->stale);
	r->overperm = atomic64_read(&f->overperm);
}

/* Under follow_lock. */
static void follow_stop(struct ioproc_test_follow *r)
{
	struct follow *f = follower;

	kthread_stop(f->thread);
	if (r)
		follow_counts(f, r);
	put_pid(f->root);
	kfree(f);
	follower = NULL;
}

static void follow_stop_owned(struct file *file)
{
	mutex_lock(&follow_lock);
	if (follower && follower->owner == file)
		follow_stop(NULL);
	mutex_unlock(&follow_lock);
}

static long do_follow(struct file *file, struct ioproc_test_follow __user *u)
{
	struct ioproc_test_follow r;
	struct follow *f;
	long ret = 0;

	if (copy_from_user(&r, u, sizeof(r)))
		return -EFAULT;
	mutex_lock(&follow_lock);
	switch (r.on) {
	case 1:
		ret = -EBUSY;
		if (follower)
			break;
		ret = -ENOMEM;
		f = kzalloc(sizeof(*f), GFP_KERNEL);
		if (!f)
			break;
		INIT_LIST_HEAD(&f->ctxs);
		f->interval_ms = clamp(r.interval_ms ? r.interval_ms : 100, 1U, 10000U);
		f->root = get_pid(task_tgid(current));
		f->owner = file;
		f->thread = kthread_run(follow_thread, f, "ioproc_follow");
		if (IS_ERR(f->thread)) {
			ret = PTR_ERR(f->thread);
			put_pid(f->root);
			kfree(f);
			break;
		}
		follower = f;
		ret = 0;
		break;
	case 2:
		ret = -ENOENT;
		if (follower) {
			follow_counts(follower, &r);
			ret = 0;
		}
		break;
	case 0:
		ret = -ENOENT;
		if (follower) {
			follow_stop(&r);
			ret = 0;
		}
		break;
	default:
		ret = -EINVAL;
	}
	mutex_unlock(&follow_lock);
	if (!ret && copy_to_user(u, &r, sizeof(r)))
		ret = -EFAULT;
	return ret;
}

static long nic_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct nic_ctx *c = f->private_data;
	void __user *u = (void __user *)arg;
	struct ioproc_test_range r;
	long ret;

	/* Counters only: no lock, so that a thread can watch a PUT run. */
	if (cmd == IOPROC_TEST_STATS)
		return do_stats(c, u);
	if (cmd == IOPROC_TEST_FOLLOW)
		return do_follow(f, u);
	mutex_lock(&c->lock);
	if (cmd == IOPROC_TEST_ATTACH) {
		ret = -EBUSY;
		if (!c->attached && !c->mm) {
			c->mm = current->mm;
			mmgrab(c->mm);
			c->ops = nic_ops_template;
			c->ops.arg = c;
			ret = ioproc_register_ops(c->mm, &c->ops);
			c->attached = !ret;
		}
		goto out;
	}
	ret = -EINVAL;
	if (!ctx_usable(c))
		goto out;
	switch (cmd) {
	case IOPROC_TEST_LOAD:
		ret = do_load(c, u);
		break;
	case IOPROC_TEST_PRELOAD:
		ret = -EFAULT;
		if (copy_from_user(&r, u, sizeof(r)))
			break;
		WRITE_ONCE(c->preload_start, r.addr);
		WRITE_ONCE(c->preload_end, r.len ? r.addr + r.len : 0);
		ret = 0;
		break;
	case IOPROC_TEST_CHECK:
		ret = do_check(c, u);
		break;
	case IOPROC_TEST_PUT:
	case IOPROC_TEST_GET:
		ret = do_xfer(c, u, cmd == IOPROC_TEST_PUT);
		break;
	case IOPROC_TEST_DETACH:
		ctx_detach(c);
		ret = 0;
		break;
	case IOPROC_TEST_INFLIGHT:
		ret = do_inflight(c, u);
		break;
	case IOPROC_TEST_DMA_WAIT: {
		struct ioproc_test_dma_wait w;

		ret = -EFAULT;
		if (copy_from_user(&w, u, sizeof(w)))
			break;
		ret = -EINVAL;
		if (!PAGE_ALIGNED(w.pause_addr) || w.wait_ms > 10000)
			break;
		WRITE_ONCE(c->pause_addr, w.pause_addr);
		WRITE_ONCE(c->dma_wait_ms, w.wait_ms);
		ret = 0;
		break;
	}
	default:
		ret = -ENOTTY;
	}
out:
	mutex_unlock(&c->lock);
	return ret;
}

static int nic_open(struct inode *inode, struct file *f)
{
	struct nic_ctx *c = ctx_alloc();

	if (!c)
		return -ENOMEM;
	f->private_data = c;
	return 0;
}

static int nic_release(struct inode *inode, struct file *f)
{
	follow_stop_owned(f);
	ctx_free(f->private_data);
	return 0;
}

static const struct file_operations nic_fops = {
	.owner		= THIS_MODULE,
	.open		= nic_open,
	.release	= nic_release,
	.unlocked_ioctl	= nic_ioctl,
};

static struct miscdevice nic_dev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "ioproc_test",
	.fops	= &nic_fops,
	.mode	= 0600,
};

module_misc_device(nic_dev);
MODULE_DESCRIPTION("Pretend NIC with a shadow MMU to prove the IOPROC hooks");
MODULE_LICENSE("GPL");
