// SPDX-License-Identifier: GPL-2.0
/*
 * elan.ko: driver of the virtual Elan NIC.
 *
 * The NIC is an ivshmem-doorbell PCI device (1af4:1110) whose BAR2 holds
 * the NIC region (<elan/elan_hw.h>); a plain ivshmem device is recognised by
 * the missing magic and left alone.  /dev/elan0 gives one NIC context per
 * open file: ELAN_IOC_ATTACH claims a slot and follows the caller's mm,
 * with IOPROC hooks or an mmu_interval_notifier (module parameter mode);
 * mmap() hands user space its command queue and its (read-only) event
 * and receive rings; poll() sleeps until an event comes.
 * The NIC MMU upkeep is in elan_mmu.c, the fault service in elan_fault.c.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/interrupt.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/io.h>
#include <linux/uaccess.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/version.h>

#include "elan_drv.h"

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
/* 6.3 made vma->vm_flags read-only behind these helpers. */
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

#define ELAN_NAME	"elan"

static unsigned int elan_heartbeat_timeout_ms = 10000;
module_param_named(heartbeat_timeout_ms, elan_heartbeat_timeout_ms, uint,
		   0644);
MODULE_PARM_DESC(heartbeat_timeout_ms,
		 "Declare the NIC dead when its heartbeat stops this long (ms, 0: never)");

/*
 * How the NIC MMU follows the page tables: "ioproc" (the IOPROC hooks:
 * update hooks preload, everything under the PTE lock) or "notifier"
 * (mmu_interval_notifier and hmm_range_fault(), as ODP and HMM drivers
 * do; any kernel).  "auto": ioproc where the kernel has the series, else
 * notifier.  Read back, it names the mode in use.
 */
enum { ELAN_MODE_AUTO, ELAN_MODE_IOPROC, ELAN_MODE_NOTIFIER };
static const char * const elan_mode_names[] = {
	[ELAN_MODE_AUTO] = "auto",
	[ELAN_MODE_IOPROC] = "ioproc",
	[ELAN_MODE_NOTIFIER] = "notifier",
};

static int elan_mode = ELAN_MODE_AUTO;
bool elan_notifier_mode;

static int elan_mode_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(elan_mode_names, val);

	if (i < 0)
		return -EINVAL;
	*(int *)kp->arg = i;
	return 0;
}

static int elan_mode_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n",
			 elan_notifier_mode ? "notifier" : "ioproc");
}

static const struct kernel_param_ops elan_mode_ops = {
	.set = elan_mode_set,
	.get = elan_mode_get,
};
module_param_cb(mode, &elan_mode_ops, &elan_mode, 0444);
MODULE_PARM_DESC(mode,
		 "auto (default: ioproc if the kernel has CONFIG_IOPROC, else notifier), ioproc or notifier");

static int elan_mode_pick(void)
{
	bool ioproc = IS_ENABLED(CONFIG_IOPROC);

	if (elan_mode == ELAN_MODE_AUTO) {
		elan_notifier_mode = !ioproc;
	} else if (elan_mode == ELAN_MODE_NOTIFIER && ELAN_HAVE_NOTIFIER) {
		elan_notifier_mode = true;
	} else if (elan_mode == ELAN_MODE_IOPROC && ioproc) {
		elan_notifier_mode = false;
	} else {
		pr_err("elan: mode=%s: this kernel has %s\n",
		       elan_mode_names[elan_mode],
		       ioproc && ELAN_HAVE_NOTIFIER ? "ioproc and notifier" :
		       ioproc ? "ioproc only (no CONFIG_HMM_MIRROR)" :
		       "notifier only (no CONFIG_IOPROC)");
		return -EINVAL;
	}
	return 0;
}

static DEFINE_MUTEX(elan_global_lock);
static struct elan_dev *elan_the_dev;	/* one NIC per guest */
static struct dentry *elan_debugfs_root;

/* ---------------------------------------------------------------- lifetime */

static void elan_dev_free(struct kref *ref)
{
	struct elan_dev *dev = container_of(ref, struct elan_dev, ref);
	unsigned long kept = 0;
	unsigned int i;

	for (i = 0; i < ELAN_MAX_CTX; i++) {
		if (dev->mmu_free)
			elan_mmu_table_free(&dev->mmu[i]);
		else
			kept += dev->mmu[i].sets / ELAN_MMU_PAGE_SETS;
	}
	/* The NIC may still read them: never give those pages back. */
	if (kept)
		pr_warn("elan: %lu pages of NIC MMU tables stay allocated for good\n",
			kept);

	if (dev->region)
		memunmap(dev->region);
	if (dev->regs)
		pci_iounmap(dev->pdev, dev->regs);
	pci_dev_put(dev->pdev);
	kfree(dev);
}

static void elan_ctx_free(struct kref *ref)
{
	struct elan_ctx *c = container_of(ref, struct elan_ctx, ref);
	struct elan_dev *dev = c->dev;

	if (c->mm)
		mmdrop(c->mm);
	kfree(c);
	kref_put(&dev->ref, elan_dev_free);
}

void elan_ctx_put(struct elan_ctx *c)
{
	kref_put(&c->ref, elan_ctx_free);
}

/* ---------------------------------------------------------------- slots */

static void elan_slot_bind(struct elan_ctx *c, unsigned int i)
{
	struct elan_dev *dev = c->dev;
	phys_addr_t base = dev->region_phys + dev->ctx_off +
			   (phys_addr_t)i * dev->ctx_stride;

	c->idx = i;
	c->map = elan_hw_ctx_map(elan_ctx_base(dev, i));
	c->mmu = &dev->mmu[i];
	c->cmd_phys = base + ELAN_CTX_OFF_CMD;
	c->evt_phys = base + ELAN_CTX_OFF_EVT;
}

/*
 * Claim a free slot: the lowest one that the NIC also sees FREE, else the
 * lowest one the driver has free.  Returns the slot or -ENOSPC.
 */
static int elan_slot_claim(struct elan_dev *dev, struct elan_ctx *c)
{
	int i, pick = -ENOSPC;

	spin_lock(&dev->slot_lock);
	for (i = 0; i < dev->max_ctx; i++) {
		if (dev->slot[i])
			continue;
		if (READ_ONCE(elan_hw_ctx(dev, i)->nic_state) == ELAN_CTX_FREE) {
			pick = i;
			break;
		}
		if (pick < 0)
			pick = i;
	}
	if (pick >= 0)
		dev->slot[pick] = c;
	spin_unlock(&dev->slot_lock);
	return pick;
}

/* The context in slot @i with a reference (elan_ctx_put()), or NULL. */
struct elan_ctx *elan_slot_get(struct elan_dev *dev, unsigned int i)
{
	struct elan_ctx *c;

	spin_lock(&dev->slot_lock);
	c = dev->slot[i];
	if (c)
		kref_get(&c->ref);
	spin_unlock(&dev->slot_lock);
	return c;
}

static void elan_slot_release(struct elan_dev *dev, struct elan_ctx *c)
{
	spin_lock(&dev->slot_lock);
	if (dev->slot[c->idx] == c)
		dev->slot[c->idx] = NULL;
	spin_unlock(&dev->slot_lock);
}

/* Fresh queues and rings and an empty MMU for a new owner of the slot. */
static void elan_slot_reset(struct elan_ctx *c, u64 capability)
{
	struct elan_dev *dev = c->dev;
	struct elan_hw_ctx *hw = c->map.ctl;
	unsigned int p;

	WRITE_ONCE(hw->state, ELAN_CTX_FREE);
	WRITE_ONCE(hw->armed, 0);
	memset(c->map.uctl, 0, ELAN_CMD_AREA_SIZE);
	memset(c->map.status, 0, ELAN_EVT_AREA_SIZE);
	WRITE_ONCE(c->map.status->node, READ_ONCE(dev->hdr->node));
	WRITE_ONCE(c->map.status->ctx, c->idx);
	WRITE_ONCE(hw->capability, capability);
	WRITE_ONCE(hw->generation, READ_ONCE(hw->generation) + 1);
	elan_mmu_clear(c);
	for (p = 0; p < c->mmu->sets / ELAN_MMU_PAGE_SETS; p++)
		WRITE_ONCE(c->map.mmu_dir[p], PHYS_PFN(__pa(c->mmu->page[p])));
	WRITE_ONCE(hw->mmu_sets, c->mmu->sets);
	/* Everything above is visible before the NIC sees the state. */
	smp_wmb();
}

/* ---------------------------------------------------------------- fops */

static int elan_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct elan_dev *dev = container_of(misc, struct elan_dev, misc);
	struct elan_ctx *c;

	if (READ_ONCE(dev->removed))
		return -ENODEV;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	kref_init(&c->ref);
	mutex_init(&c->mutex);
	spin_lock_init(&c->lock);
	c->dev = dev;
	c->file = file;
	kref_get(&dev->ref);
	file->private_data = c;
	return nonseekable_open(inode, file);
}

/* Follow @c->mm: from now on the NIC MMU is kept in step with it. */
static int elan_follow(struct elan_ctx *c)
{
#if ELAN_HAVE_NOTIFIER
	if (c->notifier)
		return mmu_interval_notifier_insert(&c->mni, c->mm, 0,
						    TASK_SIZE_MAX,
						    &elan_mni_ops);
#endif
#ifdef CONFIG_IOPROC
	c->ops = elan_ioproc_ops;
	c->ops.arg = c;
	return ioproc_register_ops(c->mm, &c->ops);
#else
	return -EINVAL;		/* not reached: notifier mode only */
#endif
}

/* Stop following: no hook or invalidate of ours runs after this. */
static void elan_unfollow(struct elan_ctx *c)
{
#if ELAN_HAVE_NOTIFIER
	if (c->notifier) {
		/* may sleep: waits for an invalidation in progress */
		mmu_interval_notifier_remove(&c->mni);
		return;
	}
#endif
#ifdef CONFIG_IOPROC
	/* -ENOENT if the mm's release hook already unlinked us: fine. */
	ioproc_unregister_ops(c->mm, &c->ops);
#endif
}

/* Stop the context and give its slot back. */
static void elan_detach(struct elan_ctx *c)
{
	struct elan_dev *dev = c->dev;

	lockdep_assert_held(&c->mutex);
	if (c->phase == ELAN_PHASE_NEW)
		return;
	/* No more translations; the NIC sees the context FREE. */
	elan_ctx_quiesce(c, false);
	if (c->registered)
		elan_unfollow(c);
	c->registered = false;
	elan_slot_release(dev, c);
	WRITE_ONCE(c->phase, ELAN_PHASE_DOWN);
	atomic64_inc(&dev->st.detaches);
}

static int elan_release(struct inode *inode, struct file *file)
{
	struct elan_ctx *c = file->private_data;

	mutex_lock(&c->mutex);
	elan_detach(c);
	mutex_unlock(&c->mutex);
	elan_ctx_put(c);
	return 0;
}

static long elan_attach(struct elan_ctx *c, struct elan_attach __user *uarg)
{
	struct elan_dev *dev = c->dev;
	struct elan_attach a;
	int idx, ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.abi_version != ELAN_ABI_VERSION)
		return -EPROTO;
	if (!current->mm)
		return -EINVAL;

	mutex_lock(&c->mutex);
	ret = -EBUSY;
	if (c->phase != ELAN_PHASE_NEW)
		goto out;
	ret = -ENODEV;
	if (READ_ONCE(dev->removed))
		goto out;
	ret = -EIO;
	if (atomic_read(&dev->dead))
		goto out;
	ret = -ENETDOWN;
	if (READ_ONCE(dev->hdr->nic_state) != ELAN_NIC_UP)
		goto out;
	idx = elan_slot_claim(dev, c);
	ret = idx;
	if (idx < 0)
		goto out;

	elan_slot_bind(c, idx);
	ret = elan_mmu_table_alloc(dev, idx);
	if (ret) {
		elan_slot_release(dev, c);
		goto out;
	}
	elan_slot_reset(c, a.capability);
	c->mm = current->mm;
	mmgrab(c->mm);
	c->notifier = elan_notifier_mode;
	c->update = c->notifier && elan_update;
	spin_lock(&c->lock);
	c->live = true;
	spin_unlock(&c->lock);
	ret = elan_follow(c);
	if (ret) {
		c->live = false;
		elan_slot_release(dev, c);
		mmdrop(c->mm);
		c->mm = NULL;
		goto out;
	}
	c->registered = true;
	WRITE_ONCE(c->map.status->state, ELAN_CTX_ACTIVE);
	/* The reset slot and capability are visible before ACTIVE. */
	smp_store_release(&c->map.ctl->state, ELAN_CTX_ACTIVE);
	/*
	 * A NIC declared dead since the check above may have passed this
	 * slot by: fail the context here.  The barrier pairs with the
	 * cmpxchg in elan_nic_dead(): one of the two sees the other.
	 */
	smp_mb();
	if (atomic_read(&dev->dead))
		elan_fail_slot(dev, idx);
	elan_ring(dev, ELAN_DB_CTX);
	/* Pairs with the lockless readers of phase (mmap, poll, ioctl). */
	smp_store_release(&c->phase, ELAN_PHASE_ACTIVE);
	atomic64_inc(&dev->st.attaches);

	a.addr = ELAN_ADDR(READ_ONCE(dev->hdr->node), idx);
	a.nodes = READ_ONCE(dev->hdr->nodes);
	a.pad = 0;
	ret = 0;
out:
	mutex_unlock(&c->mutex);
	/* Not under c->mutex: the copy may fault and take mmap_lock. */
	if (!ret && copy_to_user(uarg, &a, sizeof(a)))
		ret = -EFAULT;
	return ret;
}

static void elan_get_counters(struct elan_dev *dev, struct elan_counters *k)
{
	memset(k, 0, sizeof(*k));
	k->translations_loaded = atomic64_read(&dev->st.translations_loaded);
	k->preloads = atomic64_read(&dev->st.preloads);
	k->faults = atomic64_read(&dev->st.faults);
	k->fault_errors = atomic64_read(&dev->st.fault_errors);
	k->invalidations = atomic64_read(&dev->st.invalidations);
	k->shootdown_waits = atomic64_read(&dev->st.shootdown_waits);
	k->pages_referenced = atomic64_read(&dev->st.pages_referenced);
}

static long elan_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct elan_ctx *c = file->private_data;
	struct elan_dev *dev = c->dev;
	struct elan_counters k;

	switch (cmd) {
	case ELAN_IOC_ATTACH:
		return elan_attach(c, (struct elan_attach __user *)arg);
	case ELAN_IOC_DOORBELL:
		/* pairs with the release in elan_attach() */
		if (smp_load_acquire(&c->phase) != ELAN_PHASE_ACTIVE)
			return -ENOTCONN;
		if (READ_ONCE(dev->removed))
			return -ENODEV;
		atomic64_inc(&dev->st.doorbells);
		elan_ring(dev, ELAN_DB_WORK);
		return 0;
	case ELAN_IOC_COUNTERS:
		elan_get_counters(dev, &k);
		if (copy_to_user((void __user *)arg, &k, sizeof(k)))
			return -EFAULT;
		return 0;
	default:
		return -ENOTTY;
	}
}

/*
 * Map the CMD area read-write or the EVT area read-only, exactly their
 * size.  Not inherited by children of fork (VM_DONTCOPY; VM_IO also makes
 * MADV_DOFORK fail) and never grown by mremap.
 */
static int elan_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct elan_ctx *c = file->private_data;
	unsigned long size = vma->vm_end - vma->vm_start;
	phys_addr_t phys;

	/* pairs with the release in elan_attach() */
	if (smp_load_acquire(&c->phase) != ELAN_PHASE_ACTIVE ||
	    READ_ONCE(c->dev->removed))
		return -ENOTCONN;
	if (vma->vm_mm != c->mm)
		return -EPERM;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff == ELAN_MMAP_CMD >> PAGE_SHIFT) {
		if (size != ELAN_CMD_AREA_SIZE)
			return -EINVAL;
		phys = c->cmd_phys;
	} else if (vma->vm_pgoff == ELAN_MMAP_EVT >> PAGE_SHIFT) {
		if (size != ELAN_EVT_AREA_SIZE)
			return -EINVAL;
		if (vma->vm_flags & VM_WRITE)
			return -EPERM;
		vm_flags_clear(vma, VM_MAYWRITE);
		phys = c->evt_phys;
	} else {
		return -EINVAL;
	}
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP | VM_IO);
	return io_remap_pfn_range(vma, vma->vm_start, PHYS_PFN(phys), size,
				  vma->vm_page_prot);
}

/*
 * Readable when the event ring slot at the user's ev_head, or the receive
 * slot at its recv_head, holds a valid entry.  The positions come from the
 * user-writable ctl page and only pick a slot (masked), so any value is
 * harmless.
 */
static __poll_t elan_poll(struct file *file, poll_table *pt)
{
	struct elan_ctx *c = file->private_data;
	struct elan_dev *dev = c->dev;
	const struct elan_event *ev;
	const struct elan_recv_hdr *rh;
	__poll_t mask = 0;
	u32 head;

	/* pairs with the release in elan_attach() */
	if (smp_load_acquire(&c->phase) != ELAN_PHASE_ACTIVE)
		return EPOLLERR | EPOLLHUP;
	poll_wait(file, &dev->waitq, pt);
	if (READ_ONCE(dev->removed))
		return EPOLLERR | EPOLLHUP;

	WRITE_ONCE(c->map.ctl->armed, 1);
	/* Armed before looking: an event posted after this interrupts. */
	smp_mb();

	head = READ_ONCE(c->map.uctl->ev_head);
	ev = elan_evq_slot(c->map.evq, head);
	if (READ_ONCE(ev->seq) == head + 1)
		mask |= EPOLLIN | EPOLLRDNORM;

	head = READ_ONCE(c->map.uctl->recv_head);
	rh = elan_recvq_slot(c->map.recvq, head);
	if (READ_ONCE(rh->seq) == head + 1)
		mask |= EPOLLIN | EPOLLRDNORM;

	/*
	 * Not dev->dead: elan_nic_dead() fails the contexts before it wakes
	 * us, and an error here must come with the context's state.
	 */
	if (READ_ONCE(c->map.status->state) == ELAN_CTX_FAILED ||
	    READ_ONCE(c->map.ctl->nic_state) == ELAN_CTX_FAILED)
		mask |= EPOLLERR;
	if (!READ_ONCE(c->live))
		mask |= EPOLLHUP;
	return mask;
}

static const struct file_operations elan_fops = {
	.owner		= THIS_MODULE,
	.open		= elan_open,
	.release	= elan_release,
	.unlocked_ioctl	= elan_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= elan_mmap,
	.poll		= elan_poll,
	/* No .llseek: lseek() fails with -ESPIPE (6.12 has no no_llseek). */
};

/* ---------------------------------------------------------------- IRQs */

static irqreturn_t elan_irq_event(int irq, void *data)
{
	struct elan_dev *dev = data;
	unsigned int i;

	atomic64_inc(&dev->st.irq_event);
	/* One-shot: pollers re-arm when they look again after the wake-up. */
	for (i = 0; i < dev->max_ctx; i++)
		if (READ_ONCE(elan_hw_ctx(dev, i)->armed))
			WRITE_ONCE(elan_hw_ctx(dev, i)->armed, 0);
	wake_up_all(&dev->waitq);
	return IRQ_HANDLED;
}

static irqreturn_t elan_irq_fault(int irq, void *data)
{
	struct elan_dev *dev = data;

	atomic64_inc(&dev->st.irq_fault);
	queue_work(dev->fault_wq, &dev->fault_work);
	return IRQ_HANDLED;
}

static irqreturn_t elan_irq_state(int irq, void *data)
{
	struct elan_dev *dev = data;
	u32 state = READ_ONCE(dev->hdr->nic_state);
	u32 epoch = READ_ONCE(dev->hdr->nic_epoch);

	atomic64_inc(&dev->st.irq_state);
	if (state != dev->last_nic_state || epoch != dev->last_epoch)
		dev_info(&dev->pdev->dev, "NIC %s (epoch %u, node %u of %u)\n",
			 state == ELAN_NIC_UP ? "up" : "down", epoch,
			 READ_ONCE(dev->hdr->node), READ_ONCE(dev->hdr->nodes));
	if (state != ELAN_NIC_UP) {
		elan_nic_dead(dev, ELAN_DEAD_DOWN);
	} else if (atomic_read(&dev->dead) && epoch != dev->last_epoch) {
		dev_info(&dev->pdev->dev, "NIC restarted: new attaches allowed\n");
		atomic_set(&dev->dead, ELAN_ALIVE);
	}
	dev->last_nic_state = state;
	dev->last_epoch = epoch;
	wake_up_all(&dev->waitq);
	queue_work(dev->fault_wq, &dev->fault_work);
	return IRQ_HANDLED;
}

static const struct {
	unsigned int vector;
	irq_handler_t handler;
} elan_irqs[] = {
	{ ELAN_IRQ_EVENT, elan_irq_event },
	{ ELAN_IRQ_FAULT, elan_irq_fault },
	{ ELAN_IRQ_STATE, elan_irq_state },
};

/*
 * The NIC's heartbeat (every 250 ms from elan-nicd): a NIC that stopped
 * ticking while up is declared dead, so that user space waiting for its
 * completions sees its contexts fail instead of waiting for ever.  The
 * pages of a chunk it stalled in go back once the chunk ended; a
 * heartbeat that comes back with no such chunk left revives it for new
 * attaches.
 */
static void elan_watchdog(struct work_struct *work)
{
	struct elan_dev *dev = container_of(to_delayed_work(work),
					    struct elan_dev, watchdog);
	unsigned int tmo = READ_ONCE(elan_heartbeat_timeout_ms), kept;
	u64 hb = READ_ONCE(dev->hdr->heartbeat);
	int why;

	if (READ_ONCE(dev->removed))
		return;
	kept = elan_quarantine_release(dev);
	if (hb != dev->last_heartbeat ||
	    READ_ONCE(dev->hdr->nic_state) != ELAN_NIC_UP) {
		why = atomic_read(&dev->dead);
		/* alive again: ticking since it was declared dead */
		if (hb != READ_ONCE(dev->dead_heartbeat) && !kept &&
		    (why == ELAN_DEAD_HEARTBEAT || why == ELAN_DEAD_SHOOTDOWN) &&
		    atomic_cmpxchg(&dev->dead, why, ELAN_ALIVE) == why)
			dev_info(&dev->pdev->dev,
				 "NIC heartbeat is back: new attaches allowed\n");
		dev->last_heartbeat = hb;
		dev->heartbeat_seen = jiffies;
	} else if (tmo && time_after(jiffies, dev->heartbeat_seen +
				     msecs_to_jiffies(tmo))) {
		elan_nic_dead(dev, ELAN_DEAD_HEARTBEAT);
	}
	schedule_delayed_work(&dev->watchdog, HZ);
}

/* ---------------------------------------------------------------- debugfs */

#define ELAN_STAT(f) { #f, offsetof(struct elan_stats, f) }
static const struct {
	const char *name;
	size_t off;
} elan_stat_names[] = {
	ELAN_STAT(translations_loaded),
	ELAN_STAT(preloads),
	ELAN_STAT(faults),
	ELAN_STAT(fault_errors),
	ELAN_STAT(invalidations),
	ELAN_STAT(shootdown_waits),
	ELAN_STAT(pages_referenced),
	ELAN_STAT(shootdown_timeouts),
	ELAN_STAT(evictions),
	ELAN_STAT(huge_loaded),
	ELAN_STAT(attaches),
	ELAN_STAT(detaches),
	ELAN_STAT(releases),
	ELAN_STAT(doorbells),
	ELAN_STAT(irq_event),
	ELAN_STAT(irq_fault),
	ELAN_STAT(irq_state),
	ELAN_STAT(quarantines),
	ELAN_STAT(pages_quarantined),
	ELAN_STAT(fault_retries),
	ELAN_STAT(pages_dirtied),
};

/* What the driver holds now: both 0 once every process has detached. */
static unsigned int elan_contexts_attached(struct elan_dev *dev)
{
	unsigned int i, n = 0;

	spin_lock(&dev->slot_lock);
	for (i = 0; i < dev->max_ctx; i++)
		n += dev->slot[i] != NULL;
	spin_unlock(&dev->slot_lock);
	return n;
}

/* Valid entries in every context's NIC MMU, attached or not. */
static unsigned long elan_translations_valid(struct elan_dev *dev)
{
	unsigned long n = 0;
	unsigned int i;

	mutex_lock(&dev->mmu_mutex);
	for (i = 0; i < dev->max_ctx; i++)
		n += elan_mmu_valid(&dev->mmu[i]);
	mutex_unlock(&dev->mmu_mutex);
	return n;
}

static int elan_counters_show(struct seq_file *m, void *unused)
{
	struct elan_dev *dev = m->private;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(elan_stat_names); i++)
		seq_printf(m, "%s %lld\n", elan_stat_names[i].name,
			   (long long)atomic64_read((void *)&dev->st +
						    elan_stat_names[i].off));
	seq_printf(m, "nic_dead %d\n", atomic_read(&dev->dead));
	seq_printf(m, "contexts_attached %u\n", elan_contexts_attached(dev));
	seq_printf(m, "translations_valid %lu\n", elan_translations_valid(dev));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(elan_counters);

/* ---------------------------------------------------------------- PCI */

/* Does the header describe a region this driver can use? */
static int elan_check_header(struct elan_dev *dev)
{
	struct elan_hw_header *h = dev->hdr;
	u64 need;

	dev->region_len = min_t(size_t, dev->region_len,
				READ_ONCE(h->region_size));
	dev->max_ctx = READ_ONCE(h->max_ctx);
	dev->ctx_off = READ_ONCE(h->ctx_off);
	dev->ctx_stride = READ_ONCE(h->ctx_stride);
	dev->node = READ_ONCE(h->node);
	dev->nodes = READ_ONCE(h->nodes);
	need = dev->ctx_off + (u64)dev->max_ctx * dev->ctx_stride;
	if (!dev->max_ctx || dev->max_ctx > ELAN_MAX_CTX ||
	    dev->ctx_off < sizeof(*h) || !PAGE_ALIGNED(dev->ctx_off) ||
	    !PAGE_ALIGNED(dev->ctx_stride) ||
	    dev->ctx_stride < ELAN_CTX_OFF_MMU + ELAN_CTX_MMU_DIR_SIZE ||
	    need > dev->region_len || dev->nodes > ELAN_MAX_NODES) {
		dev_err(&dev->pdev->dev,
			"bad NIC region: size %zu, %u contexts at %#x stride %#x, %u nodes\n",
			dev->region_len, dev->max_ctx, dev->ctx_off,
			dev->ctx_stride, dev->nodes);
		return -EINVAL;
	}
	return 0;
}

/*
 * Forget whatever a previous driver instance left: FREE, no MMU (its
 * tables are gone; ours are given at attach).
 */
static void elan_reset_slots(struct elan_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->max_ctx; i++) {
		WRITE_ONCE(elan_hw_ctx(dev, i)->state, ELAN_CTX_FREE);
		WRITE_ONCE(elan_hw_ctx(dev, i)->armed, 0);
		WRITE_ONCE(elan_hw_ctx(dev, i)->mmu_sets, 0);
		memset(elan_mmu_dir(dev, i), 0, ELAN_CTX_MMU_DIR_SIZE);
	}
	/* no tables before the shootdown reads the engines */
	smp_mb();
	elan_shootdown(dev, ELAN_SHOOTDOWN_ALL);
}

/* Stop every attached context (remove, shutdown). */
static void elan_quiesce_all(struct elan_dev *dev)
{
	struct elan_ctx *c;
	unsigned int i;

	for (i = 0; i < dev->max_ctx; i++) {
		c = elan_slot_get(dev, i);
		if (!c)
			continue;
		elan_ctx_quiesce(c, false);
		elan_ctx_put(c);
	}
}

static void elan_free_irqs(struct elan_dev *dev, unsigned int n)
{
	while (n--)
		free_irq(pci_irq_vector(dev->pdev, elan_irqs[n].vector), dev);
	if (dev->nvec > 0)
		pci_free_irq_vectors(dev->pdev);
	dev->nvec = 0;
}

static int elan_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct elan_dev *dev;
	unsigned int nirq = 0;
	void *region;
	int ret;

	if (pci_resource_len(pdev, 2) < sizeof(struct elan_hw_header) ||
	    !(pci_resource_flags(pdev, 2) & IORESOURCE_MEM))
		return -ENODEV;
	ret = pci_enable_device(pdev);
	if (ret)
		return ret;

	/* A plain ivshmem device has no magic: leave it alone, quietly. */
	region = memremap(pci_resource_start(pdev, 2),
			  pci_resource_len(pdev, 2), MEMREMAP_WB);
	if (!region) {
		ret = -ENODEV;
		goto err_disable;
	}
	if (READ_ONCE(((struct elan_hw_header *)region)->magic) !=
	    ELAN_HW_MAGIC) {
		ret = -ENODEV;
		goto err_unmap;
	}
	if (READ_ONCE(((struct elan_hw_header *)region)->version) !=
	    ELAN_HW_VERSION) {
		dev_warn(&pdev->dev, "Elan NIC region version %u, want %u\n",
			 ((struct elan_hw_header *)region)->version,
			 ELAN_HW_VERSION);
		ret = -ENODEV;
		goto err_unmap;
	}

	mutex_lock(&elan_global_lock);
	if (elan_the_dev) {
		mutex_unlock(&elan_global_lock);
		dev_warn(&pdev->dev, "a second Elan NIC is not supported\n");
		ret = -EBUSY;
		goto err_unmap;
	}

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	kref_init(&dev->ref);
	dev->pdev = pci_dev_get(pdev);
	dev->region = region;
	dev->region_phys = pci_resource_start(pdev, 2);
	dev->region_len = pci_resource_len(pdev, 2);
	dev->hdr = region;
	spin_lock_init(&dev->slot_lock);
	mutex_init(&dev->mmu_mutex);
	spin_lock_init(&dev->quar_lock);
	init_waitqueue_head(&dev->waitq);
	INIT_WORK(&dev->fault_work, elan_fault_work);
	INIT_DELAYED_WORK(&dev->watchdog, elan_watchdog);
	pci_set_drvdata(pdev, dev);

	ret = elan_check_header(dev);
	if (ret)
		goto err_put;
	ret = pci_request_regions(pdev, ELAN_NAME);
	if (ret)
		goto err_put;
	dev->regs = pci_iomap(pdev, 0, 0);
	if (!dev->regs) {
		ret = -ENOMEM;
		goto err_regions;
	}
	/*
	 * Faults are serviced on the CPU that took the interrupt, at high
	 * priority: the process whose op faulted usually spins there, and an
	 * unbound worker would wait for another (virtual) CPU to be
	 * scheduled, milliseconds on a busy host.  The work item never runs
	 * twice at once, so requests are still answered in order.
	 */
	dev->fault_wq = alloc_workqueue("elan-fault", WQ_HIGHPRI, 1);
	if (!dev->fault_wq) {
		ret = -ENOMEM;
		goto err_regions;
	}
	elan_reset_slots(dev);

	/* MSI-X messages are memory writes of the device: bus master. */
	pci_set_master(pdev);
	ret = pci_alloc_irq_vectors(pdev, ELAN_NR_IRQS, ELAN_NR_IRQS,
				    PCI_IRQ_MSIX);
	if (ret < 0) {
		dev_err(&pdev->dev, "needs %d MSI-X vectors (vectors=%d): %d\n",
			ELAN_NR_IRQS, ELAN_NR_IRQS, ret);
		goto err_wq;
	}
	dev->nvec = ret;
	for (nirq = 0; nirq < ARRAY_SIZE(elan_irqs); nirq++) {
		ret = request_irq(pci_irq_vector(pdev, elan_irqs[nirq].vector),
				  elan_irqs[nirq].handler, 0, ELAN_NAME, dev);
		if (ret)
			goto err_irqs;
	}

	dev->last_nic_state = READ_ONCE(dev->hdr->nic_state);
	dev->last_epoch = READ_ONCE(dev->hdr->nic_epoch);
	dev->misc.minor = MISC_DYNAMIC_MINOR;
	dev->misc.name = "elan0";
	dev->misc.fops = &elan_fops;
	dev->misc.mode = 0666;
	dev->misc.parent = &pdev->dev;
	ret = misc_register(&dev->misc);
	if (ret)
		goto err_irqs;
	dev->misc_registered = true;
	if (elan_debugfs_root)
		dev->dbg = debugfs_create_file("counters", 0444,
					       elan_debugfs_root, dev,
					       &elan_counters_fops);
	elan_the_dev = dev;
	mutex_unlock(&elan_global_lock);

	elan_ring(dev, ELAN_DB_CTX);
	queue_work(dev->fault_wq, &dev->fault_work);
	dev->last_heartbeat = READ_ONCE(dev->hdr->heartbeat);
	dev->heartbeat_seen = jiffies;
	schedule_delayed_work(&dev->watchdog, HZ);
	dev_info(&pdev->dev,
		 "Elan NIC node %u of %u, %u contexts, NIC %s: /dev/elan0\n",
		 dev->node, dev->nodes, dev->max_ctx,
		 dev->last_nic_state == ELAN_NIC_UP ? "up" : "down");
	return 0;

err_irqs:
	elan_free_irqs(dev, nirq);
err_wq:
	pci_clear_master(pdev);
	destroy_workqueue(dev->fault_wq);
err_regions:
	pci_release_regions(pdev);
err_put:
	pci_set_drvdata(pdev, NULL);
	mutex_unlock(&elan_global_lock);
	kref_put(&dev->ref, elan_dev_free);	/* unmaps the region */
	pci_disable_device(pdev);
	return ret;
err_unlock:
	mutex_unlock(&elan_global_lock);
err_unmap:
	memunmap(region);
err_disable:
	pci_disable_device(pdev);
	return ret;
}

static void elan_remove(struct pci_dev *pdev)
{
	struct elan_dev *dev = pci_get_drvdata(pdev);

	mutex_lock(&elan_global_lock);
	if (dev->misc_registered)
		misc_deregister(&dev->misc);
	debugfs_remove(dev->dbg);
	/* Open files keep dev; everything they do now fails or is a no-op. */
	elan_quiesce_all(dev);
	WRITE_ONCE(dev->removed, true);
	cancel_delayed_work_sync(&dev->watchdog);
	/* The NIC may still end that chunk: never give those pages back. */
	if (atomic64_read(&dev->st.pages_quarantined))
		dev_warn(&pdev->dev, "%lld pages stay quarantined for good\n",
			 (long long)atomic64_read(&dev->st.pages_quarantined));
	wake_up_all(&dev->waitq);
	elan_free_irqs(dev, ARRAY_SIZE(elan_irqs));
	pci_clear_master(pdev);
	destroy_workqueue(dev->fault_wq);
	/*
	 * A fresh region for the next driver, whatever this one leaves.
	 * Once the NIC has reset it, it reads none of our tables any more.
	 */
	dev->mmu_free = elan_nic_reset(dev);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	pci_set_drvdata(pdev, NULL);
	elan_the_dev = NULL;
	mutex_unlock(&elan_global_lock);
	kref_put(&dev->ref, elan_dev_free);
}

/* Power-off or reboot: tell the NIC every context is gone. */
static void elan_shutdown(struct pci_dev *pdev)
{
	struct elan_dev *dev = pci_get_drvdata(pdev);

	if (dev)
		elan_quiesce_all(dev);
}

static const struct pci_device_id elan_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110) },	/* ivshmem */
	{ }
};
MODULE_DEVICE_TABLE(pci, elan_ids);

static struct pci_driver elan_pci_driver = {
	.name		= ELAN_NAME,
	.id_table	= elan_ids,
	.probe		= elan_probe,
	.remove		= elan_remove,
	.shutdown	= elan_shutdown,
};

static int __init elan_init(void)
{
	int ret;

	ret = elan_mode_pick();
	if (ret)
		return ret;
	elan_debugfs_root = debugfs_create_dir(ELAN_NAME, NULL);
	if (IS_ERR(elan_debugfs_root))
		elan_debugfs_root = NULL;
	ret = pci_register_driver(&elan_pci_driver);
	if (ret)
		debugfs_remove_recursive(elan_debugfs_root);
	return ret;
}

static void __exit elan_exit(void)
{
	pci_unregister_driver(&elan_pci_driver);
	debugfs_remove_recursive(elan_debugfs_root);
	/* no invalidate of ours may still be running */
	if (ELAN_HAVE_NOTIFIER)
		mmu_notifier_synchronize();
}

module_init(elan_init);
module_exit(elan_exit);
MODULE_DESCRIPTION("Virtual Elan RDMA NIC: NIC MMU kept by IOPROC hooks or mmu_interval_notifier, no pinning");
MODULE_LICENSE("GPL");
