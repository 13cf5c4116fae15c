// SPDX-License-Identifier: GPL-2.0
/*
 * Translation: the shootdown bracket, the walk of a context's NIC MMU,
 * validation of the pfn found there, and translation fault requests.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <inttypes.h>
#include "nicd.h"


/*
 * Shootdown bracket of engine e on node nd.  Brackets nest (a chunk
 * between two contexts of one node opens the node twice): only the
 * outermost makes seq odd and even again; a second context makes ctx
 * ELAN_HW_ENGINE_CTX_ANY, stored and fenced before its translations are
 * read, so a driver that reads ctx after seeing seq odd cannot skip us.
 */
void nicd_bracket_open(struct nicd_node *nd, uint32_t e, uint32_t ctx)
{
	struct elan_hw_engine *eng = &nd->hdr->engine[e];

	if (nd->br_depth[e]++ == 0) {
		nd->br_ctx[e] = ctx;
		nd->br_engine = e;
		nd->br_runs = 0;
		STORE(&eng->runs, 0u);
		STORE(&eng->ctx, ctx);
		nd->eseq[e] |= 1;	/* odd */
		STORE(&eng->seq, nd->eseq[e]);
		atomic_thread_fence(memory_order_seq_cst);
	} else if (nd->br_ctx[e] != ctx &&
		   nd->br_ctx[e] != ELAN_HW_ENGINE_CTX_ANY) {
		nd->br_ctx[e] = ELAN_HW_ENGINE_CTX_ANY;
		STORE(&eng->ctx, ELAN_HW_ENGINE_CTX_ANY);
		atomic_thread_fence(memory_order_seq_cst);
	}
}

void nicd_bracket_close(struct nicd_node *nd, uint32_t e)
{
	if (--nd->br_depth[e] == 0) {
		nd->eseq[e]++;		/* even: the chunk is over */
		/* release: the copy is visible before seq changes */
		STORE_REL(&nd->hdr->engine[e].seq, nd->eseq[e]);
	}
}

/* Host address of the page with this pfn, or NULL if it is not RAM. */
static uint8_t *pfn_to_host(const struct nicd_node *nd, uint64_t pfn)
{
	uint64_t gpa, off;

	if (!nd->ram || pfn >= (1ULL << (64 - ELAN_MMU_VPN_SHIFT)))
		return NULL;
	gpa = pfn << ELAN_MMU_VPN_SHIFT;
	if (gpa < nd->ram_lowmem)
		off = gpa;
	else if (gpa >= (4ULL << 30))
		off = nd->ram_lowmem + (gpa - (4ULL << 30));
	else
		return NULL;		/* the PCI hole: not RAM */
	if (off >= nd->ram_size || nd->ram_size - off < NICD_PAGE)
		return NULL;
	return nd->ram + off;
}

int nicd_mmu_take(struct nicd *n, struct nicd_ctx *c)
{
	struct nicd_node *nd = c->nd;
	uint32_t sets = LOAD(&c->map.ctl->mmu_sets), pages, i;
	struct elan_hw_tlbe **pg;
	uint64_t pfn;

	c->mmu_sets = 0;	/* no table until it is whole */
	if (sets < ELAN_MMU_MIN_SETS || sets > ELAN_MMU_MAX_SETS ||
	    (sets & (sets - 1))) {
		nicd_node_logf(n, nd, NICD_LOG_WARN,
			       "node %u ctx %u: NIC MMU of %u sets (a power of two from %u to %u expected)",
			       nd->id, c->idx, sets, ELAN_MMU_MIN_SETS,
			       ELAN_MMU_MAX_SETS);
		return -1;
	}
	pages = sets / ELAN_MMU_PAGE_SETS;
	if (pages > c->mmu_page_cap) {
		pg = realloc(c->mmu_page, pages * sizeof(*pg));
		if (!pg) {
			nicd_node_logf(n, nd, NICD_LOG_ERR,
				       "node %u ctx %u: no memory for a NIC MMU of %u pages",
				       nd->id, c->idx, pages);
			return -1;
		}
		c->mmu_page = pg;
		c->mmu_page_cap = pages;
	}
	for (i = 0; i < pages; i++) {
		pfn = LOAD(&c->map.mmu_dir[i]);
		c->mmu_page[i] = (struct elan_hw_tlbe *)(void *)pfn_to_host(nd, pfn);
		if (!c->mmu_page[i]) {
			nicd_node_logf(n, nd, NICD_LOG_WARN,
				       "node %u ctx %u: NIC MMU page %u at pfn 0x%" PRIx64
				       " is outside guest RAM",
				       nd->id, c->idx, i, pfn);
			return -1;
		}
	}
	c->mmu_sets = sets;
	return 0;
}

/*
 * Name a page the chunk will use in the open bracket's engine record
 * (a run of one page, grown by nicd_xlate_run) and fence, before the
 * caller reads its tag once more (see elan_hw.h).  -1 if the chunk
 * already named ELAN_ENGINE_RUNS runs on this node (a bug: no op needs
 * more).  nd->br_* keep what was written: the region is never read back.
 */
static int run_publish(struct nicd_node *nd, uint64_t pfn)
{
	struct elan_hw_engine *eng = &nd->hdr->engine[nd->br_engine];
	uint32_t i = nd->br_runs;

	if (i >= ELAN_ENGINE_RUNS)
		return -1;
	STORE(&eng->run[i].pfn, pfn);
	STORE(&eng->run[i].pages, 1u);
	STORE(&eng->runs, i + 1);
	nd->br_pfn[i] = pfn;
	nd->br_runs = i + 1;
	atomic_thread_fence(memory_order_seq_cst);
	return (int)i;
}

/* The fault status the driver wrote, as the op's error. */
static int fault_error(uint32_t st, int remote)
{
	int prot = st == ELAN_E_LOCAL_PROT || st == ELAN_E_REMOTE_PROT;

	/* The process behind the context is gone: say so, not "unmapped". */
	if (st == ELAN_E_TARGET_GONE || st == ELAN_E_NODE_DOWN)
		return (int)st;
	if (remote)
		return prot ? ELAN_E_REMOTE_PROT : ELAN_E_REMOTE_FAULT;
	return prot ? ELAN_E_LOCAL_PROT : ELAN_E_LOCAL_FAULT;
}

void nicd_faults_reset(struct nicd_node *nd)
{
	uint32_t i;

	nd->fault_tail = 0;
	nd->faults_pending = 0;
	for (i = 0; i < ELAN_FAULTQ_ENTRIES; i++)
		nd->fs[i].state = NICD_FS_FREE;
}

static int fault_post(struct nicd *n, struct nicd_node *nd, uint32_t ctx,
		      uint64_t vpage, uint32_t pages, int write, int remote,
		      struct nicd_wait *w)
{
	struct elan_hw_header *h = nd->hdr;
	uint64_t now = n->now();
	uint32_t i, head, slot;
	struct nicd_fault_slot *fs;
	struct elan_hw_fault *f;

	w->remote = remote;
	w->node = nd->id;
	w->epoch = nd->epoch;
	w->vpage = vpage;
	/* Join a request for the same page that is still unanswered (a write
	 * request covers a read). */
	if (nd->faults_pending) {
		for (i = 0; i < ELAN_FAULTQ_ENTRIES; i++) {
			fs = &nd->fs[i];
			if (fs->state == NICD_FS_PENDING && fs->ctx == ctx &&
			    fs->vpage == vpage && fs->write >= (uint32_t)!!write) {
				w->kind = NICD_W_FAULT;
				w->slot = i;
				w->req_seq = fs->req_seq;
				w->deadline = fs->posted + n->fault_timeout_ns;
				return NICD_PENDING;
			}
		}
	}
	/* Room: the driver consumed all but ELAN_FAULTQ_ENTRIES. */
	head = LOAD_ACQ(&h->fault_head);
	if ((uint32_t)(nd->fault_tail - head) >= ELAN_FAULTQ_ENTRIES) {
		if ((uint32_t)(nd->fault_tail - head) > ELAN_FAULTQ_ENTRIES)
			nicd_node_logf(n, nd, NICD_LOG_WARN,
				       "node %u: fault_head %u out of range (tail %u)",
				       nd->id, head, nd->fault_tail);
		/* no interrupt: the driver got one for each request queued */
		if (w->kind != NICD_W_FAULTQ) {
			w->kind = NICD_W_FAULTQ;
			w->deadline = now + n->fault_timeout_ns;
		}
		return NICD_PENDING;
	}
	slot = nd->fault_tail % ELAN_FAULTQ_ENTRIES;
	fs = &nd->fs[slot];
	if (fs->state == NICD_FS_PENDING)
		nd->faults_pending--;
	f = &h->faultq[slot];
	STORE(&f->vaddr, vpage);
	STORE(&f->ctx, ctx);
	STORE(&f->write, (uint32_t)!!write);
	STORE(&f->pages, pages);
	STORE(&f->status, 0u);
	STORE_REL(&f->req_seq, nd->fault_tail + 1);
	fs->req_seq = nd->fault_tail + 1;
	fs->ctx = ctx;
	fs->vpage = vpage;
	fs->write = !!write;
	fs->state = NICD_FS_PENDING;
	fs->status = 0;
	fs->posted = now;
	nd->faults_pending++;
	nd->fault_tail++;
	nd->nfaults++;
	nicd_trace(n, 'F', nd->id, ctx, !!write, vpage >> 12);
	nd->irq_pending |= 1u << ELAN_IRQ_FAULT;
	w->kind = NICD_W_FAULT;
	w->slot = slot;
	w->req_seq = fs->req_seq;
	w->deadline = now + n->fault_timeout_ns;
	return NICD_PENDING;
}

int nicd_wait_poll(struct nicd *n, struct nicd_wait *w)
{
	struct nicd_node *nd;
	struct nicd_fault_slot *fs;
	uint32_t ack;

	switch (w->kind) {
	case NICD_W_NONE:
	case NICD_W_SPACE:
		return 0;
	case NICD_W_FAULTQ:
		if (n->now() > w->deadline) {
			nicd_node_logf(n, &n->node[w->node], NICD_LOG_WARN,
				       "node %u: fault queue full for %.1f s: giving up",
				       w->node, n->fault_timeout_ns / 1e9);
			return fault_error(ELAN_E_LOCAL_FAULT, w->remote);
		}
		return 0;
	case NICD_W_FAULT:
		break;
	default:
		return ELAN_E_QUEUE;
	}
	nd = &n->node[w->node];
	if (!nd->up || nd->epoch != w->epoch)
		return w->remote ? ELAN_E_NODE_DOWN : ELAN_E_TARGET_GONE;
	fs = &nd->fs[w->slot];
	if (fs->req_seq != w->req_seq)
		return 0;	/* the slot moved on: just try again */
	if (fs->state == NICD_FS_PENDING) {
		ack = LOAD_ACQ(&nd->hdr->faultq[w->slot].ack_seq);
		if (ack == w->req_seq) {
			fs->status = LOAD(&nd->hdr->faultq[w->slot].status);
			fs->state = NICD_FS_ACKED;
			nd->faults_pending--;
		} else if (n->now() > w->deadline) {
			fs->state = NICD_FS_DEAD;
			nd->faults_pending--;
			nicd_node_logf(n, nd, NICD_LOG_WARN,
				       "node %u: fault ctx %u vaddr 0x%" PRIx64
				       " %s not answered in %.1f s: fault timeout",
				       nd->id, fs->ctx, fs->vpage,
				       fs->write ? "write" : "read",
				       n->fault_timeout_ns / 1e9);
			return fault_error(ELAN_E_LOCAL_FAULT, w->remote);
		} else {
			return NICD_PENDING;
		}
	}
	if (fs->state == NICD_FS_DEAD)
		return fault_error(ELAN_E_LOCAL_FAULT, w->remote);
	if (fs->status == 0)
		return 0;
	return fault_error(fs->status, w->remote);
}

/*
 * Look the page of va up in the MMU of ctx: its host address, NULL on a
 * miss, or NICD_BAD_PFN for an entry outside guest RAM.  Tag, pfn, tag
 * again: the pfn is used only if both tags agree, are valid and match.
 * A page entry is looked for first, then a 2 MiB entry for the block of
 * va (elan_hw.h).  Runs inside the bracket.
 */
#define NICD_BAD_PFN ((uint8_t *)1)
#define NICD_HUGE ((uint64_t)1 << ELAN_MMU_HUGE_SHIFT)

/* The entry of set tagged tva (with flag huge): 1 and its pfn, or 0. */
static int mmu_probe(const struct nicd_ctx *c, uint64_t tva, uint64_t huge,
		     int write, uint64_t *pfnp)
{
	struct elan_hw_tlbe *set;
	uint64_t tag, tag2, pfn;
	int way;

	set = elan_mmu_ways(c->mmu_page, elan_mmu_set(tva, c->mmu_sets));
	for (way = 0; way < ELAN_MMU_WAYS; way++) {
		tag = LOAD_ACQ(&set[way].tag);
		if ((tag & (ELAN_MMU_VALID | ELAN_MMU_HUGE)) !=
		    (ELAN_MMU_VALID | huge) ||
		    (tag & ~(uint64_t)(NICD_PAGE - 1)) != tva)
			continue;
		pfn = LOAD_ACQ(&set[way].pfn);
		tag2 = LOAD(&set[way].tag);
		if (tag2 != tag)
			continue;	/* changing under us: treat as a miss */
		if (write && !(tag & ELAN_MMU_WRITE))
			continue;	/* read-only: fault with write = 1 */
		*pfnp = pfn;
		return 1;
	}
	return 0;
}

static uint8_t *mmu_lookup(struct nicd_node *nd, uint32_t ctx, uint64_t va,
			   int write, uint64_t *pfnp)
{
	const struct nicd_ctx *c = &nd->ctx[ctx];
	uint64_t block = va & ~(NICD_HUGE - 1), pfn;
	uint8_t *page;

	if (!c->mmu_sets)
		return NULL;
	if (!mmu_probe(c, va & ~(uint64_t)(NICD_PAGE - 1), 0, write, &pfn)) {
		if (!mmu_probe(c, block, ELAN_MMU_HUGE, write, &pfn))
			return NULL;
		/* (a garbage base must not wrap around into RAM) */
		pfn = pfn > UINT64_MAX - NICD_HUGE / NICD_PAGE ? UINT64_MAX :
		      pfn + (va - block) / NICD_PAGE;
	}
	*pfnp = pfn;
	page = pfn_to_host(nd, pfn);
	return page ? page : NICD_BAD_PFN;
}

/* Walk the MMU of ctx for va; on a miss, post a fault.  In the bracket. */
int nicd_xlate(struct nicd *n, struct nicd_node *nd, uint32_t ctx,
	       uint64_t va, uint64_t span, int write, int remote, uint8_t **p,
	       struct nicd_wait *w)
{
	uint64_t pages = ((va & (NICD_PAGE - 1)) + span + NICD_PAGE - 1) /
			 NICD_PAGE;
	uint64_t vpage = va & ~(uint64_t)(NICD_PAGE - 1), pfn = 0;
	uint8_t *page = mmu_lookup(nd, ctx, va, write, &pfn);

	if (page == NICD_BAD_PFN) {
		nicd_node_logf(n, nd, NICD_LOG_WARN,
			       "node %u ctx %u: MMU entry for 0x%" PRIx64
			       " has pfn 0x%" PRIx64 " outside guest RAM",
			       nd->id, ctx, vpage, pfn);
		return remote ? ELAN_E_REMOTE_FAULT : ELAN_E_LOCAL_FAULT;
	}
	if (page) {
		if (run_publish(nd, pfn) < 0) {
			nicd_node_logf(n, nd, NICD_LOG_ERR,
				       "node %u ctx %u: a chunk needs more than %u runs",
				       nd->id, ctx, ELAN_ENGINE_RUNS);
			return remote ? ELAN_E_REMOTE_FAULT : ELAN_E_LOCAL_FAULT;
		}
		/* removed after we read it: the driver may not have seen
		 * the run, so do not use it (a miss, as in mmu_lookup) */
		if (mmu_lookup(nd, ctx, va, write, &pfn) == page) {
			*p = page + (va & (NICD_PAGE - 1));
			return 0;
		}
	}
	if (pages < 1)
		pages = 1;
	return fault_post(n, nd, ctx, vpage,
			  pages > UINT32_MAX ? UINT32_MAX : (uint32_t)pages,
			  write, remote, w);
}

uint32_t nicd_xlate_run(struct nicd_node *nd, uint32_t ctx, uint64_t va,
			const uint8_t *p, uint32_t max, int write)
{
	struct elan_hw_engine *eng = &nd->hdr->engine[nd->br_engine];
	uint32_t head = NICD_PAGE - (uint32_t)(va & (NICD_PAGE - 1));
	uint32_t run = head, last, pages, i;
	uint64_t pfn0, pfn;

	if (!nd->br_runs)	/* no nicd_xlate before: nothing to grow */
		return head < max ? head : max;
	last = nd->br_runs - 1;
	pfn0 = nd->br_pfn[last];

	/* contiguous in host memory and in guest frames (the run is
	 * published as first frame + count) */
	while (run < max &&
	       mmu_lookup(nd, ctx, va + run, write, &pfn) == p + run &&
	       pfn == pfn0 + (run - head) / NICD_PAGE + 1)
		run += NICD_PAGE;
	if (run > head) {
		pages = 1 + (run - head) / NICD_PAGE;
		STORE(&eng->run[last].pages, pages);
		atomic_thread_fence(memory_order_seq_cst);
		/* again after publishing: stop before a page removed since */
		for (i = 1; i < pages; i++) {
			if (mmu_lookup(nd, ctx, va + head + (i - 1) * NICD_PAGE,
				       write, &pfn) != p + head + (i - 1) * NICD_PAGE) {
				run = head + (i - 1) * NICD_PAGE;
				break;
			}
		}
	}
	return run < max ? run : max;
}
