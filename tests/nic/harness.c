// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "harness.h"

#define VBASE	0x7f0000000000ull

static void th_log(void *arg, int level, const char *msg)
{
	struct th *t = arg;
	size_t l = strlen(msg);

	if (t->verbose)
		fprintf(stderr, "nicd[%d]: %s\n", level, msg);
	if (t->loglen + l + 2 < sizeof(t->log)) {
		memcpy(t->log + t->loglen, msg, l);
		t->loglen += l;
		t->log[t->loglen++] = '\n';
		t->log[t->loglen] = 0;
	}
}

static void th_irq(void *arg, uint32_t node, uint32_t vec)
{
	struct th *t = arg;

	if (node < TH_MAX_NODES && vec < ELAN_NR_IRQS)
		t->irqs[node][vec]++;
}

static void ctx_ptrs(struct th_node *tn, struct th_ctx *c, uint32_t i)
{
	c->tn = tn;
	c->idx = i;
	c->map = elan_hw_ctx_map((uint8_t *)tn->region + ELAN_REGION_OFF_CTX +
				 (size_t)i * ELAN_CTX_STRIDE);
	c->mmu_pfn = tn->mmu_pfn + (uint64_t)i * TH_MMU_PAGES;
}

static void region_free(struct th_node *tn)
{
	if (tn->region)
		munmap((uint8_t *)tn->region - 4096, ELAN_REGION_SIZE + 2 * 4096);
	if (tn->region_fd >= 0)
		close(tn->region_fd);
	tn->region = NULL;
	tn->region_fd = -1;
}

static int node_region(struct th *t, uint32_t i)
{
	struct th_node *tn = &t->node[i];
	uint32_t j;

	void *map, *res;

	tn->region_fd = nicd_region_create(&map);
	if (tn->region_fd < 0)
		return -1;
	/* remap between two inaccessible pages: a stray access faults */
	nicd_region_destroy(map);
	res = mmap(NULL, ELAN_REGION_SIZE + 2 * 4096, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		return -1;
	tn->region = mmap((uint8_t *)res + 4096, ELAN_REGION_SIZE,
			  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			  tn->region_fd, 0);
	if (tn->region == MAP_FAILED)
		return -1;
	tn->fault_head = 0;
	for (j = 0; j < ELAN_MAX_CTX; j++) {
		free(tn->ctx[j].pt);
		memset(&tn->ctx[j], 0, sizeof(tn->ctx[j]));
		ctx_ptrs(tn, &tn->ctx[j], j);
	}
	return nicd_node_up(&t->n, i, tn->region);
}

void th_ram_layout(struct th_node *tn)
{
	tn->next_pfn = 16;	/* leave low pages alone */
	tn->mmu_pfn = (uint32_t)(tn->ram_size / 4096) - ELAN_MAX_CTX * TH_MMU_PAGES;
}

int th_init(struct th *t, uint32_t nnodes, uint64_t ram_size)
{
	uint32_t i;

	memset(t, 0, sizeof(*t));
	t->verbose = getenv("NIC_TEST_VERBOSE") != NULL;
	if (nicd_init(&t->n, nnodes) < 0)
		return -1;
	t->n.log = th_log;
	t->n.log_arg = t;
	t->n.log_level = t->verbose ? NICD_LOG_DEBUG : NICD_LOG_INFO;
	t->n.irq = th_irq;
	t->n.irq_arg = t;
	nicd_engine_init(&t->e, 0);
	t->nnodes = nnodes;
	for (i = 0; i < nnodes; i++) {
		struct th_node *tn = &t->node[i];

		tn->id = i;
		tn->ram_size = ram_size;
		/* no access | guard bytes | RAM | guard bytes | no access */
		tn->map = mmap(NULL, ram_size + 2 * TH_GUARD + 2 * 4096,
			       PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (tn->map == MAP_FAILED)
			return -1;
		mprotect(tn->map, 4096, PROT_NONE);
		mprotect(tn->map + 4096 + 2 * TH_GUARD + ram_size, 4096, PROT_NONE);
		tn->map += 4096;
		tn->region_fd = -1;
		memset(tn->map, TH_GUARD_BYTE, TH_GUARD);
		memset(tn->map + TH_GUARD + ram_size, TH_GUARD_BYTE, TH_GUARD);
		tn->ram = tn->map + TH_GUARD;
		th_ram_layout(tn);
		nicd_node_config(&t->n, i, NULL, 0);
		nicd_node_set_ram(&t->n, i, tn->ram, ram_size);
		if (node_region(t, i) < 0)
			return -1;
	}
	return 0;
}

int th_node_reconnect(struct th *t, uint32_t i)
{
	struct th_node *tn = &t->node[i];

	nicd_node_down(&t->n, i);	/* before its region goes */
	region_free(tn);
	tn->next_pfn = 16;
	return node_region(t, i);
}

void th_fini(struct th *t)
{
	uint32_t i, j;

	nicd_fini(&t->n);
	for (i = 0; i < t->nnodes; i++) {
		struct th_node *tn = &t->node[i];

		for (j = 0; j < ELAN_MAX_CTX; j++)
			free(tn->ctx[j].pt);
		region_free(tn);
		munmap(tn->map - 4096, tn->ram_size + 2 * TH_GUARD + 2 * 4096);
	}
}

int th_guards_ok(struct th *t, uint32_t node)
{
	static uint8_t pattern[TH_GUARD];
	struct th_node *tn = &t->node[node];

	if (pattern[0] != TH_GUARD_BYTE)
		memset(pattern, TH_GUARD_BYTE, sizeof(pattern));
	return !memcmp(tn->map, pattern, TH_GUARD) &&
	       !memcmp(tn->map + TH_GUARD + tn->ram_size, pattern, TH_GUARD);
}

struct th_ctx *th_attach(struct th *t, uint32_t node, uint32_t idx,
			 uint64_t cap, uint32_t npages)
{
	struct th_node *tn = &t->node[node];
	struct th_ctx *c = &tn->ctx[idx];
	uint32_t i, gen;

	if ((uint64_t)tn->next_pfn + npages > tn->mmu_pfn)
		return NULL;
	free(c->pt);
	ctx_ptrs(tn, c, idx);
	c->cap = cap;
	c->vbase = VBASE + ((uint64_t)node << 36) + ((uint64_t)idx << 31);
	c->npages = npages;
	c->pt = calloc(npages, sizeof(*c->pt));
	for (i = 0; i < npages; i++) {
		c->pt[i].pfn = tn->next_pfn + i;
		c->pt[i].mapped = 1;
		c->pt[i].writable = 1;
	}
	/* scatter: swap neighbours pairwise so pages are not contiguous */
	for (i = 0; i + 1 < npages; i += 2) {
		uint64_t p = c->pt[i].pfn;

		c->pt[i].pfn = c->pt[i + 1].pfn;
		c->pt[i + 1].pfn = p;
	}
	tn->next_pfn += npages;
	c->cmd_pos = c->ev_pos = c->recv_pos = 0;
	c->evict = 0;
	/* The driver's attach: zero the user areas and the MMU, then
	 * capability, generation, state (release). */
	if (c->used) {	/* a fresh region is zero already */
		memset(c->map.uctl, 0, ELAN_CMD_AREA_SIZE);
		memset(c->map.status, 0, ELAN_EVT_AREA_SIZE);
	}
	th_mmu_clear(c);
	for (i = 0; i < TH_MMU_PAGES; i++)
		c->map.mmu_dir[i] = c->mmu_pfn + i;
	c->map.ctl->mmu_sets = TH_MMU_SETS;
	c->used = 1;
	c->map.ctl->capability = cap;
	c->map.ctl->armed = 0;
	gen = c->map.ctl->generation + 1;
	__atomic_store_n(&c->map.ctl->generation, gen, __ATOMIC_RELEASE);
	__atomic_store_n(&c->map.ctl->state, ELAN_CTX_ACTIVE, __ATOMIC_RELEASE);
	nicd_doorbell(&t->n, node, ELAN_DB_CTX);
	c->attached = 1;
	return c;
}

void th_detach(struct th *t, struct th_ctx *c)
{
	__atomic_store_n(&c->map.ctl->state, ELAN_CTX_FREE, __ATOMIC_RELEASE);
	nicd_doorbell(&t->n, c->tn->id, ELAN_DB_CTX);
	c->attached = 0;
}

uint32_t th_addr(const struct th_ctx *c)
{
	return ELAN_ADDR(c->tn->id, c->idx);
}

uint64_t th_va(const struct th_ctx *c, uint64_t off)
{
	return c->vbase + off;
}

uint8_t *th_host(const struct th_ctx *c, uint64_t va)
{
	uint64_t pg = (va - c->vbase) >> 12;

	if (va < c->vbase || pg >= c->npages || !c->pt[pg].mapped)
		return NULL;
	return c->tn->ram + c->pt[pg].pfn * 4096 + (va & 4095);
}

static void mem_op(struct th_ctx *c, uint64_t va, uint8_t *buf, uint64_t len,
		   int op, int *diff)
{
	while (len) {
		uint64_t n = 4096 - (va & 4095);
		uint8_t *p = th_host(c, va);

		if (n > len)
			n = len;
		if (op == 0)
			memcpy(p, buf, n);
		else if (op == 1)
			memcpy(buf, p, n);
		else if (memcmp(p, buf, n))
			*diff = 1;
		va += n;
		buf += n;
		len -= n;
	}
}

void th_write_mem(struct th_ctx *c, uint64_t va, const void *buf, uint64_t len)
{
	mem_op(c, va, (uint8_t *)buf, len, 0, NULL);
}

void th_read_mem(struct th_ctx *c, uint64_t va, void *buf, uint64_t len)
{
	mem_op(c, va, buf, len, 1, NULL);
}

int th_cmp_mem(struct th_ctx *c, uint64_t va, const void *buf, uint64_t len)
{
	int diff = 0;

	mem_op(c, va, (uint8_t *)buf, len, 2, &diff);
	return diff;
}

struct elan_hw_tlbe *th_mmu_ways(struct th_ctx *c, uint32_t s)
{
	return (struct elan_hw_tlbe *)(void *)(c->tn->ram + c->mmu_pfn * 4096) +
	       (size_t)(s % TH_MMU_SETS) * ELAN_MMU_WAYS;
}

/* Write the entry tagged tva | flags (a page, or a block with
 * ELAN_MMU_HUGE): its own way, else an empty one, else evict in turn;
 * remove, then pfn first and tag last. */
static void mmu_write(struct th_ctx *c, uint64_t tva, uint64_t flags,
		      uint64_t pfn, int writable)
{
	struct elan_hw_tlbe *set = th_mmu_ways(c, elan_mmu_set(tva, TH_MMU_SETS));
	int w, way = -1;

	for (w = 0; w < ELAN_MMU_WAYS; w++)
		if ((set[w].tag & ~4095ull) == tva &&
		    (set[w].tag & (ELAN_MMU_VALID | ELAN_MMU_HUGE)) ==
		    (ELAN_MMU_VALID | flags))
			way = w;
	for (w = 0; way < 0 && w < ELAN_MMU_WAYS; w++)
		if (!(set[w].tag & ELAN_MMU_VALID))
			way = w;
	if (way < 0)
		way = (int)(c->evict++ % ELAN_MMU_WAYS);
	__atomic_store_n(&set[way].tag, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&set[way].pfn, pfn, __ATOMIC_RELAXED);
	__atomic_store_n(&set[way].tag,
			 tva | flags | ELAN_MMU_VALID | (writable ? ELAN_MMU_WRITE : 0),
			 __ATOMIC_RELEASE);
}

void th_mmu_set(struct th_ctx *c, uint64_t va, uint64_t pfn, int writable)
{
	mmu_write(c, va & ~4095ull, 0, pfn, writable);
}

/* A 2 MiB entry: the block of va to the 512 frames from pfn on. */
void th_mmu_set_huge(struct th_ctx *c, uint64_t va, uint64_t pfn, int writable)
{
	mmu_write(c, va & ~((1ull << ELAN_MMU_HUGE_SHIFT) - 1), ELAN_MMU_HUGE,
		  pfn, writable);
}

void th_mmu_clear(struct th_ctx *c)
{
	memset(th_mmu_ways(c, 0), 0,
	       TH_MMU_SETS * ELAN_MMU_WAYS * sizeof(struct elan_hw_tlbe));
}

void th_preload(struct th_ctx *c, uint64_t va, uint64_t len)
{
	uint64_t end = va + len;

	for (va &= ~4095ull; va < end; va += 4096) {
		uint64_t pg = (va - c->vbase) >> 12;

		if (pg < c->npages && c->pt[pg].mapped)
			th_mmu_set(c, va, c->pt[pg].pfn, c->pt[pg].writable);
	}
}

int th_post(struct th_ctx *c, const struct elan_cmd *cmd)
{
	struct elan_cmd *s;
	uint32_t tail = __atomic_load_n(&c->map.status->cmd_tail,
					__ATOMIC_ACQUIRE);

	if (c->cmd_pos - tail >= ELAN_CMDQ_ENTRIES)
		return -1;
	s = elan_cmdq_slot(c->map.cmdq, c->cmd_pos);
	memcpy(s, cmd, offsetof(struct elan_cmd, seq));
	__atomic_store_n(&s->seq, elan_ring_seq(c->cmd_pos), __ATOMIC_RELEASE);
	c->cmd_pos++;
	return 0;
}

int th_poll_ev(struct th_ctx *c, struct elan_event *ev)
{
	struct elan_event *s = elan_evq_slot(c->map.evq, c->ev_pos);

	if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != elan_ring_seq(c->ev_pos))
		return 0;
	*ev = *s;
	c->ev_pos++;
	__atomic_store_n(&c->map.uctl->ev_head, c->ev_pos, __ATOMIC_RELEASE);
	return 1;
}

int th_poll_recv(struct th_ctx *c, struct elan_recv_hdr *h, void *buf)
{
	struct elan_recv_hdr *s = elan_recvq_slot(c->map.recvq, c->recv_pos);
	uint8_t *slot = (uint8_t *)s;

	if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != elan_ring_seq(c->recv_pos))
		return 0;
	*h = *s;
	if (buf && h->len <= ELAN_SEND_MAX)
		memcpy(buf, slot + ELAN_RECV_HDR, h->len);
	c->recv_pos++;
	__atomic_store_n(&c->map.uctl->recv_head, c->recv_pos, __ATOMIC_RELEASE);
	return 1;
}

int th_service_faults(struct th *t)
{
	uint32_t i, served = 0;

	for (i = 0; i < t->nnodes; i++) {
		struct th_node *tn = &t->node[i];
		struct elan_hw_header *h = tn->region;

		if (tn->fault_mode == TH_FAULT_IGNORE || !h)
			continue;
		for (;;) {
			struct elan_hw_fault *f =
				&h->faultq[tn->fault_head % ELAN_FAULTQ_ENTRIES];
			uint32_t seq = __atomic_load_n(&f->req_seq, __ATOMIC_ACQUIRE);
			uint32_t st = 0;
			struct th_ctx *c;
			uint64_t pg;

			if (seq != tn->fault_head + 1)
				break;
			c = f->ctx < ELAN_MAX_CTX ? &tn->ctx[f->ctx] : NULL;
			if (f->write)
				tn->faults_write++;
			if (f->pages > tn->fault_pages_max)
				tn->fault_pages_max = f->pages;
			if (!c || !c->pt || tn->fault_mode == TH_FAULT_ERROR) {
				st = ELAN_E_LOCAL_FAULT;
			} else {
				pg = (f->vaddr - c->vbase) >> 12;
				if (f->vaddr < c->vbase || pg >= c->npages ||
				    !c->pt[pg].mapped)
					st = ELAN_E_LOCAL_FAULT;
				else if (f->write && !c->pt[pg].writable)
					st = ELAN_E_LOCAL_PROT;
				else
					th_mmu_set(c, f->vaddr, c->pt[pg].pfn,
						   c->pt[pg].writable);
			}
			f->status = st;
			__atomic_store_n(&f->ack_seq, seq, __ATOMIC_RELEASE);
			tn->fault_head++;
			__atomic_store_n(&h->fault_head, tn->fault_head,
					 __ATOMIC_RELEASE);
			tn->faults_served++;
			served++;
		}
	}
	return (int)served;
}

int th_run(struct th *t)
{
	int w = nicd_step(&t->n, &t->e);

	return w + th_service_faults(t);
}

int th_wait_ev(struct th *t, struct th_ctx *c, struct elan_event *ev, long max)
{
	long i;

	for (i = 0; i < max; i++) {
		if (th_poll_ev(c, ev))
			return 1;
		th_run(t);
	}
	return th_poll_ev(c, ev);
}

int th_do(struct th *t, struct th_ctx *c, const struct elan_cmd *cmd,
	  struct elan_event *ev)
{
	struct elan_event tmp;

	if (!ev)
		ev = &tmp;
	if (th_post(c, cmd) < 0)
		return -1;
	if (!th_wait_ev(t, c, ev, 50000000))
		return -1;
	return ev->status;
}

struct elan_cmd th_cmd(int op, uint32_t dst, uint64_t laddr, uint64_t raddr,
		       uint64_t len)
{
	struct elan_cmd c;

	memset(&c, 0, sizeof(c));
	c.op = (uint8_t)op;
	c.dst = dst;
	c.laddr = laddr;
	c.raddr = raddr;
	c.len = len;
	return c;
}
