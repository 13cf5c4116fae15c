// SPDX-License-Identifier: GPL-2.0
/*
 * Nodes: NIC regions, guest RAM, node up and down, sleeping, logging.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "nicd.h"

/* The layout of elan_hw.h: a context within its stride, every context in
 * the region. */
_Static_assert(ELAN_CTX_OFF_MMU + ELAN_CTX_MMU_DIR_SIZE <= ELAN_CTX_STRIDE,
	       "a context's areas fit its stride");
_Static_assert(ELAN_REGION_OFF_CTX + (uint64_t)ELAN_MAX_CTX * ELAN_CTX_STRIDE <=
	       ELAN_REGION_SIZE, "every context fits the region");

uint64_t nicd_now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void default_log(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	fprintf(stderr, "elan-nicd: %s\n", msg);
}

static void vlogf(struct nicd *n, int level, const char *fmt, va_list ap)
{
	char buf[512];

	if (level > n->log_level || !n->log)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n->log(n->log_arg, level, buf);
}

void nicd_logf(struct nicd *n, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlogf(n, level, fmt, ap);
	va_end(ap);
}

/* At most 50 lines a second about one node: a guest cannot flood the log. */
void nicd_node_logf(struct nicd *n, struct nicd_node *nd, int level,
		    const char *fmt, ...)
{
	uint64_t sec = n->now() / 1000000000ull;
	va_list ap;

	if (sec != nd->log_window) {
		if (nd->log_count > 50)
			nicd_logf(n, NICD_LOG_WARN, "node %u: %u log lines suppressed",
				  nd->id, nd->log_count - 50);
		nd->log_window = sec;
		nd->log_count = 0;
	}
	if (++nd->log_count > 50)
		return;
	va_start(ap, fmt);
	vlogf(n, level, fmt, ap);
	va_end(ap);
}

int nicd_trace_start(struct nicd *n)
{
	struct nicd_trace *tr = calloc(1, sizeof(*tr));

	if (tr)
		tr->rec = calloc(NICD_TRACE_RECS, sizeof(*tr->rec));
	if (!tr || !tr->rec) {
		free(tr);
		return -ENOMEM;
	}
	n->trace = tr;
	return 0;
}

void nicd_trace_rec(struct nicd *n, char kind, uint32_t node, uint32_t ctx,
		    uint32_t op, uint64_t len)
{
	struct nicd_trace_rec *r;

	r = &n->trace->rec[n->trace->n++ % NICD_TRACE_RECS];
	r->t = n->now();
	r->kind = (uint8_t)kind;
	r->node = (uint8_t)node;
	r->ctx = (uint8_t)ctx;
	r->op = (uint8_t)op;
	r->len = (uint32_t)len;
}

int nicd_trace_finish(struct nicd *n, const char *path)
{
	struct nicd_trace *tr = n->trace;
	uint32_t k = tr && tr->n > NICD_TRACE_RECS ? tr->n - NICD_TRACE_RECS : 0;
	int r = 0;
	FILE *f;

	if (!tr)
		return 0;
	n->trace = NULL;
	f = fopen(path, "w");
	if (!f) {
		r = -errno;
	} else {
		fprintf(f, "# elan-nicd trace, %u of %u records: ns kind node ctx op len\n"
			"# C command taken, D op done, F fault raised, B doorbell, S sleep, W wake,\n"
			"# N nap in a stream (len: commands queued behind others before it),\n"
			"# T message sent to a host, R received (node: host, ctx: type, op: reply's request)\n",
			tr->n - k, tr->n);
		for (; k < tr->n; k++) {
			const struct nicd_trace_rec *e = &tr->rec[k % NICD_TRACE_RECS];

			fprintf(f, "%" PRIu64 " %c %u %u %u %u\n", e->t, e->kind,
				e->node, e->ctx, e->op, e->len);
		}
		if (fclose(f))
			r = -errno;
	}
	free(tr->rec);
	free(tr);
	return r;
}

int nicd_init(struct nicd *n, uint32_t nodes)
{
	uint32_t i;

	if (nodes == 0 || nodes > ELAN_MAX_NODES)
		return -EINVAL;
	memset(n, 0, sizeof(*n));
	n->nodes = nodes;
	n->n_engines = 1;
	n->fault_timeout_ns = 10ull * 1000000000ull;
	n->max_fault_retries = 1000;
	n->recv_slots = ELAN_RECVQ_ENTRIES;
	n->chunk_budget = 64;
	n->node_budget = 4 * n->chunk_budget;
	n->node_ns = 100000;	/* about the copy of node_budget's pages */
	n->serve_until = UINT64_MAX;
	n->now = nicd_now_mono;
	n->log = default_log;
	n->log_level = NICD_LOG_INFO;
	n->start_ns = nicd_now_mono();
	for (i = 0; i < ELAN_MAX_NODES; i++)
		n->node[i].id = i;
	return 0;
}

void nicd_fini(struct nicd *n)
{
	uint32_t i;

	for (i = 0; i < n->nodes; i++) {
		if (n->node[i].up)
			nicd_node_down(n, i);
		free(n->node[i].ram_path);
		n->node[i].ram_path = NULL;
	}
}

void nicd_engine_init(struct nicd_engine *e, uint32_t idx)
{
	memset(e, 0, sizeof(*e));
	e->idx = idx;
}

int nicd_node_config(struct nicd *n, uint32_t node, const char *ram_path,
		     uint64_t ram_max)
{
	struct nicd_node *nd;

	if (node >= n->nodes)
		return -EINVAL;
	nd = &n->node[node];
	if (nd->configured)
		return -EEXIST;
	nd->configured = 1;
	nd->ram_max = ram_max;
	if (ram_path) {
		nd->ram_path = strdup(ram_path);
		if (!nd->ram_path)
			return -ENOMEM;
	}
	return 0;
}

/* q35 puts at most 2 GiB below 4 GiB when the guest has 2.75 GiB or more. */
static uint64_t q35_lowmem(uint64_t size)
{
	return size >= 0xb0000000ull ? 0x80000000ull : size;
}

void nicd_node_set_ram(struct nicd *n, uint32_t node, void *ram,
		       uint64_t size)
{
	struct nicd_node *nd = &n->node[node];

	nd->ram = ram;
	nd->ram_size = size & ~(uint64_t)(NICD_PAGE - 1);
	nd->ram_lowmem = q35_lowmem(nd->ram_size);
	nd->ram_owned = 0;
}

int nicd_node_map_ram(struct nicd *n, uint32_t node)
{
	struct nicd_node *nd = &n->node[node];
	struct stat st;
	uint64_t size;
	void *p;
	int fd;

	if (nd->ram)
		return 0;
	if (!nd->ram_path)
		return -ENOENT;
	fd = open(nd->ram_path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -errno;
	}
	size = (uint64_t)st.st_size;
	if (nd->ram_max && nd->ram_max < size)
		size = nd->ram_max;
	size &= ~(uint64_t)(NICD_PAGE - 1);
	if (size == 0) {
		close(fd);
		return -ENODATA;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	nd->ram = p;
	nd->ram_size = size;
	nd->ram_lowmem = q35_lowmem(size);
	nd->ram_owned = 1;
	nicd_logf(n, NICD_LOG_INFO, "node %u: mapped guest RAM %s (%llu MiB)",
		  node, nd->ram_path, (unsigned long long)(size >> 20));
	return 0;
}

static void node_unmap_ram(struct nicd_node *nd)
{
	if (nd->ram && nd->ram_owned)
		munmap(nd->ram, nd->ram_size);
	if (nd->ram_owned) {
		nd->ram = NULL;
		nd->ram_size = 0;
	}
}

int nicd_region_create(void **map)
{
	void *p;
	int fd;

	fd = memfd_create("elan-nic-region", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, ELAN_REGION_SIZE) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	p = mmap(NULL, ELAN_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	if (p == MAP_FAILED) {
		int e = -errno;

		close(fd);
		return e;
	}
	*map = p;
	return fd;
}

void nicd_region_destroy(void *map)
{
	if (map)
		munmap(map, ELAN_REGION_SIZE);
}

void nicd_publish_nodes_up(struct nicd *n)
{
	uint32_t i;

	for (i = 0; i < n->nodes; i++) {
		struct nicd_node *nd = &n->node[i];

		if (!nd->up)
			continue;
		__atomic_store_n(&nd->hdr->nodes_up, n->nodes_up,
				 __ATOMIC_RELEASE);
		if (n->irq)
			n->irq(n->irq_arg, i, ELAN_IRQ_STATE);
	}
}

int nicd_node_up(struct nicd *n, uint32_t node, void *region)
{
	struct nicd_node *nd;
	struct elan_hw_header *h;
	uint32_t i;

	if (node >= n->nodes || !n->node[node].configured)
		return -EINVAL;
	nd = &n->node[node];
	if (nd->up)
		nicd_node_down(n, node);
	nd->region = region;
	nd->hdr = h = region;
	nd->epoch++;
	nicd_faults_reset(nd);
	memset(nd->eseq, 0, sizeof(nd->eseq));
	memset(nd->br_depth, 0, sizeof(nd->br_depth));
	nd->active_mask = 0;
	nd->irq_pending = 0;
	for (i = 0; i < ELAN_MAX_CTX; i++) {
		struct nicd_ctx *c = &nd->ctx[i];

		memset(c, 0, sizeof(*c));
		c->nd = nd;
		c->idx = i;
		c->state = ELAN_CTX_FREE;
		c->map = elan_hw_ctx_map(nd->region + ELAN_REGION_OFF_CTX +
					 (size_t)i * ELAN_CTX_STRIDE);
	}
	h->version = ELAN_HW_VERSION;
	h->region_size = ELAN_REGION_SIZE;
	h->node = node;
	h->nodes = n->nodes;
	h->max_ctx = ELAN_MAX_CTX;
	h->ctx_off = ELAN_REGION_OFF_CTX;
	h->ctx_stride = ELAN_CTX_STRIDE;
	h->nic_sleeping = n->sleeping;
	h->nic_epoch = nd->epoch;
	h->heartbeat = (n->now() - n->start_ns) / 1000000;
	h->fault_head = 0;
	for (i = 0; i < ELAN_MAX_ENGINES; i++)
		h->engine[i].seq = 0;
	h->nic_state = ELAN_NIC_UP;
	__atomic_store_n(&h->magic, ELAN_HW_MAGIC, __ATOMIC_RELEASE);
	nd->up = 1;
	nd->rescan = 1;
	n->nodes_up |= 1ull << node;
	/* Guest RAM is mapped when the first context becomes active: QEMU
	 * connects to the socket before it creates and sizes the RAM file. */
	nicd_logf(n, NICD_LOG_INFO, "node %u: up (epoch %u)", node, nd->epoch);
	n->node_seq++;
	nicd_publish_nodes_up(n);
	return 0;
}

void nicd_node_down(struct nicd *n, uint32_t node)
{
	struct nicd_node *nd = &n->node[node];
	uint32_t i;

	if (node >= n->nodes || !nd->up)
		return;
	for (i = 0; i < ELAN_MAX_CTX; i++) {
		nicd_ctx_drop(n, &nd->ctx[i], ELAN_CTX_FREE, 0);
		free(nd->ctx[i].mmu_page);
		nd->ctx[i].mmu_page = NULL;
		nd->ctx[i].mmu_sets = nd->ctx[i].mmu_page_cap = 0;
	}
	__atomic_store_n(&nd->hdr->nic_state, ELAN_NIC_DOWN, __ATOMIC_RELEASE);
	nd->up = 0;
	nd->epoch++;
	nd->region = NULL;
	nd->hdr = NULL;
	nd->active_mask = 0;
	nd->irq_pending = 0;
	nicd_faults_reset(nd);
	node_unmap_ram(nd);
	n->nodes_up &= ~(1ull << node);
	nicd_logf(n, NICD_LOG_INFO, "node %u: down", node);
	n->node_seq++;
	nicd_publish_nodes_up(n);
}

/*
 * Whatever the guest left in its region (a kernel writing garbage over the
 * header, the fault queue and the engine seqs too) is gone: the next
 * driver finds a fresh NIC, a new epoch and no context.  Between steps.
 */
void nicd_node_reset(struct nicd *n, uint32_t node)
{
	void *region;

	if (node >= n->nodes || !n->node[node].up)
		return;
	region = n->node[node].region;
	nicd_node_down(n, node);
	memset(region, 0, ELAN_REGION_SIZE);
	nicd_logf(n, NICD_LOG_INFO, "node %u: reset by its driver", node);
	nicd_node_up(n, node, region);
}

void nicd_shutdown(struct nicd *n)
{
	uint32_t i;

	for (i = 0; i < n->nodes; i++) {
		struct nicd_node *nd = &n->node[i];

		if (!nd->up)
			continue;
		__atomic_store_n(&nd->hdr->nic_state, ELAN_NIC_DOWN,
				 __ATOMIC_RELEASE);
		if (n->irq)
			n->irq(n->irq_arg, i, ELAN_IRQ_STATE);
	}
}

void nicd_set_sleeping(struct nicd *n, int on)
{
	struct nicd_ctx *c;
	uint32_t i, m;

	n->sleeping = !!on;
	for (i = 0; i < n->nodes; i++) {
		struct nicd_node *nd = &n->node[i];

		if (!nd->up)
			continue;
		__atomic_store_n(&nd->hdr->nic_sleeping, n->sleeping,
				 __ATOMIC_RELAXED);
		nicd_for_each_active_ctx(nd, c, m) {
			__atomic_store_n(&c->map.status->nic_sleeping,
					 n->sleeping, __ATOMIC_RELAXED);
			if (on)
				c->posted = 0;
		}
	}
	if (on)
		atomic_thread_fence(memory_order_seq_cst);
}

void nicd_set_napping(struct nicd *n)
{
	struct nicd_ctx *c;
	uint32_t i, m;

	for (i = 0; i < n->nodes; i++) {
		struct nicd_node *nd = &n->node[i];

		if (!nd->up)
			continue;
		nicd_for_each_active_ctx(nd, c, m) {
			__atomic_store_n(&c->map.status->nic_sleeping,
					 (uint32_t)!c->posted,
					 __ATOMIC_RELAXED);
			c->posted = 0;
		}
	}
	atomic_thread_fence(memory_order_seq_cst);
}

void nicd_heartbeat(struct nicd *n)
{
	uint64_t ms = (n->now() - n->start_ns) / 1000000;
	uint32_t i;

	for (i = 0; i < n->nodes; i++)
		if (n->node[i].up)
			__atomic_store_n(&n->node[i].hdr->heartbeat, ms,
					 __ATOMIC_RELAXED);
}
