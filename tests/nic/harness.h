/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host test harness for the nicd library: fake guests (RAM with guard pages
 * around it, a NIC region each) and a fake driver and user (contexts with a
 * fake page table, fault service, command posting, event polling).
 */
#ifndef NIC_HARNESS_H
#define NIC_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include "nicd.h"

#define TH_MAX_NODES	4
#define TH_GUARD	(64u << 10)	/* guard bytes on each side of RAM */
#define TH_GUARD_BYTE	0xa5
/* the fake driver's NIC MMU: 1024 sets of 4 ways (16 pages) per context,
 * at the top of guest RAM, slot by slot */
#define TH_MMU_SETS	1024u
#define TH_MMU_PAGES	(TH_MMU_SETS / ELAN_MMU_PAGE_SETS)

enum th_fault_mode {
	TH_FAULT_SERVE = 0,	/* load translations from the page table */
	TH_FAULT_IGNORE,	/* never answer (nor consume) */
	TH_FAULT_ERROR,		/* answer every fault with LOCAL_FAULT */
};

struct th_page {
	uint64_t pfn;
	uint8_t mapped;
	uint8_t writable;
};

struct th_ctx {
	struct th_node *tn;
	uint32_t idx;
	uint64_t cap;
	uint64_t vbase;
	uint32_t npages;
	struct th_page *pt;
	uint32_t cmd_pos, ev_pos, recv_pos;
	uint32_t evict;
	uint8_t attached;
	uint8_t used;		/* attached before in this region */
	struct elan_hw_ctx_map map;	/* its pieces in the region */
	uint64_t mmu_pfn;	/* first page of its table (contiguous) */
};

struct th_node {
	uint32_t id;
	void *region;
	int region_fd;
	uint8_t *map;		/* guard | RAM | guard */
	uint8_t *ram;
	uint64_t ram_size;
	uint32_t next_pfn;
	uint32_t mmu_pfn;	/* RAM from here on holds the MMU tables */
	uint32_t fault_head;
	int fault_mode;
	uint64_t faults_served, faults_write;
	uint32_t fault_pages_max;	/* largest pages hint of a request */
	struct th_ctx ctx[ELAN_MAX_CTX];
};

struct th {
	struct nicd n;
	struct nicd_engine e;
	uint32_t nnodes;
	struct th_node node[TH_MAX_NODES];
	uint64_t irqs[TH_MAX_NODES][ELAN_NR_IRQS];
	char log[16384];
	size_t loglen;
	int verbose;
};

int th_init(struct th *t, uint32_t nnodes, uint64_t ram_size);
void th_fini(struct th *t);
/* 1 if the guard bytes around node's RAM are intact. */
int th_guards_ok(struct th *t, uint32_t node);
/* Fresh region for node (after nicd_node_down). */
int th_node_reconnect(struct th *t, uint32_t node);

/* Attach a context with npages of private memory at vbase. */
struct th_ctx *th_attach(struct th *t, uint32_t node, uint32_t idx,
			 uint64_t cap, uint32_t npages);
void th_detach(struct th *t, struct th_ctx *c);
uint32_t th_addr(const struct th_ctx *c);
uint64_t th_va(const struct th_ctx *c, uint64_t off);
/* Host address of the byte at va (NULL if unmapped in the page table). */
uint8_t *th_host(const struct th_ctx *c, uint64_t va);
/* Copy between a context's virtual range and a buffer (page by page). */
void th_write_mem(struct th_ctx *c, uint64_t va, const void *buf, uint64_t len);
void th_read_mem(struct th_ctx *c, uint64_t va, void *buf, uint64_t len);
int th_cmp_mem(struct th_ctx *c, uint64_t va, const void *buf, uint64_t len);
/* Load MMU entries for a range, as the driver's update hook would. */
void th_preload(struct th_ctx *c, uint64_t va, uint64_t len);
/* Install one raw MMU entry. */
/* Where a node's RAM (ram_size set) gives contexts their pages and tables. */
void th_ram_layout(struct th_node *tn);
/* The ELAN_MMU_WAYS entries of set s of c's table, in guest RAM. */
struct elan_hw_tlbe *th_mmu_ways(struct th_ctx *c, uint32_t s);
void th_mmu_set(struct th_ctx *c, uint64_t va, uint64_t pfn, int writable);
void th_mmu_set_huge(struct th_ctx *c, uint64_t va, uint64_t pfn, int writable);
void th_mmu_clear(struct th_ctx *c);

/* Post a command (seq written last).  0, or -1 if the queue is full. */
int th_post(struct th_ctx *c, const struct elan_cmd *cmd);
/* Take the next event.  1 if there was one. */
int th_poll_ev(struct th_ctx *c, struct elan_event *ev);
/* Take the next receive slot: header and payload copied.  1 if any. */
int th_poll_recv(struct th_ctx *c, struct elan_recv_hdr *h, void *buf);

/* The driver side: serve fault requests of every node. */
int th_service_faults(struct th *t);
/* One engine step plus fault service.  Returns the step's work. */
int th_run(struct th *t);
/* Run until c has an event (at most max steps).  1 if it has. */
int th_wait_ev(struct th *t, struct th_ctx *c, struct elan_event *ev,
	       long max);
/* Post, run until the event, return its status (or -1: no event). */
int th_do(struct th *t, struct th_ctx *c, const struct elan_cmd *cmd,
	  struct elan_event *ev);

struct elan_cmd th_cmd(int op, uint32_t dst, uint64_t laddr, uint64_t raddr,
		       uint64_t len);

#endif
