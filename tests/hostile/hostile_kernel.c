// SPDX-License-Identifier: GPL-2.0
/*
 * hostile_kernel: a guest kernel gone bad, played by root through the NIC
 * region itself (attack 1 of the hostile stage).
 *
 *   hostile_kernel DIR SECONDS SEED TARGET...
 *
 * It maps BAR2 (the NIC region: header, fault queue, every context's
 * control block, queues, rings and NIC MMU directory) and BAR0 (the
 * doorbells) of the Elan device through sysfs, with elan.ko loaded, and
 * writes there what only the kernel may write.  Its NIC MMU tables, which
 * a kernel keeps in guest RAM, are pages of a locked buffer of its own.
 *
 * Part 1, forged contexts, every answer checked: it takes free context
 * slots itself (state ACTIVE, its own generation and capability) and
 * fills their MMU: a window of pages mapped to its own locked buffer
 * (found in /proc/self/pagemap), pages mapped to pfns outside guest RAM
 * (just past the end, in the PCI hole, above 4 GiB, huge, all ones),
 * read-only pages mapped to the pfn number of a victim's bait page on
 * the other node.  Then it posts commands and reads their events:
 * transfers inside its buffer work; a bad pfn on either side ends in
 * LOCAL_FAULT/REMOTE_FAULT and nothing moves; reading "the victim's pfn"
 * reads this guest's own page of that number, never the victim's bytes;
 * a write through a read-only entry, or to an address without an entry
 * (the driver does not know the context), ends in an error; every op on
 * a victim's context ends in CAPABILITY; a corrupt ev_head fails the
 * context with ELAN_E_QUEUE.
 *
 * Part 2, chaos for SECONDS: rounds of random bytes over random spans of
 * the whole region (header, fault queue, control blocks, MMU directories
 * and sizes), random entries in its tables, every
 * slot made ACTIVE with random generations and keys and queues full of
 * random commands whose addresses hit random MMU entries (writable ones
 * only to its buffer or outside RAM, so this guest itself survives),
 * garbage fault acks and fault_head, odd engine seqs, random doorbells.
 * Nothing is checked here but that nicd lives on and serves everybody
 * else: the stage checks the victims, nicd's log and its pid.
 *
 * Ends with "N passed, M failed".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sys/mman.h>

#include "hostile.h"
#include <elan/elan_hw.h>

#define BPAGES		64		/* our buffer */
#define VA_B		0x100000000000ULL	/* -> our buffer */
#define VA_BAD		0x200000000000ULL	/* -> pfns outside RAM */
#define VA_RO		0x300000000000ULL	/* -> other RAM, read-only */
#define VA_NONE		0x400000000000ULL	/* no entry */

static uint8_t *region;
static uint32_t *bar0;
static uint8_t *kbuf;
static uint64_t bpfn[BPAGES];
/* the NIC MMU table of slot i: one page (the smallest table) of tbuf */
#define FSETS		ELAN_MMU_MIN_SETS
static uint8_t *tbuf;
static uint64_t tpfn[ELAN_MAX_CTX];
static uint64_t ram_pages;
static uint64_t bad_pfn[8];
static int nbad;
static struct vinfo tgt[8];
static int ntgt;

static struct elan_hw_header *hdr(void)
{
	return (struct elan_hw_header *)(void *)region;
}

static struct elan_hw_ctx_map cmap(unsigned int i)
{
	return elan_hw_ctx_map(region + ELAN_REGION_OFF_CTX +
			       (size_t)i * ELAN_CTX_STRIDE);
}

static void ring(unsigned int vector)
{
	/* ivshmem doorbell register: peer << 16 | vector */
	__atomic_store_n(&bar0[3], (uint32_t)ELAN_NIC_PEER_ID << 16 | vector,
			 __ATOMIC_SEQ_CST);
}

/* The Elan device's BARs, mapped through sysfs. */
static int map_device(void)
{
	char path[512], id[64];
	struct dirent *d;
	DIR *dd = opendir("/sys/bus/pci/devices");
	int fd = -1;

	while (dd && (d = readdir(dd))) {
		FILE *f;

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(id, sizeof(id), f) && !strncmp(id, "0x1110", 6)) {
			snprintf(path, sizeof(path),
				 "/sys/bus/pci/devices/%s/resource2", d->d_name);
			fd = open(path, O_RDWR | O_SYNC);
		}
		fclose(f);
		if (fd >= 0)
			break;
	}
	if (fd < 0)
		return -1;
	region = mmap(NULL, ELAN_REGION_SIZE, PROT_READ | PROT_WRITE,
		      MAP_SHARED, fd, 0);
	close(fd);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0",
		 d->d_name);
	fd = open(path, O_RDWR | O_SYNC);
	bar0 = fd < 0 ? MAP_FAILED : mmap(NULL, PG, PROT_READ | PROT_WRITE,
					  MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	closedir(dd);
	printf("kernel: NIC region of %s mapped\n", d->d_name);
	return region == MAP_FAILED || bar0 == MAP_FAILED ? -1 : 0;
}

/* End of guest RAM (pages), from /proc/iomem. */
static uint64_t ram_end_pages(void)
{
	char line[256];
	uint64_t s, e, end = 0;
	FILE *f = fopen("/proc/iomem", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "System RAM") &&
		    sscanf(line, "%" SCNx64 "-%" SCNx64, &s, &e) == 2 && e + 1 > end)
			end = e + 1;
	if (f)
		fclose(f);
	/* the RAM file also holds the firmware's reserved tail: round up */
	return ((end + (64 << 20) - 1) & ~((uint64_t)(64 << 20) - 1)) / PG;
}

/* ------------------------------------------------------------ forged contexts */

struct fctx {
	unsigned int idx;
	struct elan_hw_ctx_map m;
	uint32_t gen;
	uint32_t pos, evpos;
	uint64_t cap;
};

/* The ways of va's set in slot i's table. */
static struct elan_hw_tlbe *ftable(unsigned int i, uint64_t va)
{
	return (struct elan_hw_tlbe *)(void *)(tbuf + (size_t)i * PG) +
	       (size_t)elan_mmu_set(va, FSETS) * ELAN_MMU_WAYS;
}

/* Describe slot i's table in its control block and directory. */
static void table_give(struct elan_hw_ctx_map *m, unsigned int i)
{
	m->mmu_dir[0] = tpfn[i];
	m->ctl->mmu_sets = FSETS;
}

static void mmu_map(struct fctx *f, uint64_t va, uint64_t pfn, int write)
{
	struct elan_hw_tlbe *set = ftable(f->idx, va);
	int w;

	for (w = 0; w < ELAN_MMU_WAYS - 1; w++)
		if (!(set[w].tag & ELAN_MMU_VALID))
			break;
	__atomic_store_n(&set[w].tag, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&set[w].pfn, pfn, __ATOMIC_RELEASE);
	__atomic_store_n(&set[w].tag, (va & ~(PG - 1)) | ELAN_MMU_VALID |
			 (write ? ELAN_MMU_WRITE : 0), __ATOMIC_RELEASE);
}

/* Take slot idx as the driver would (but the driver knows nothing). */
static int fctx_attach(struct fctx *f, unsigned int idx, uint64_t cap)
{
	double end = t_now() + 10;
	unsigned int k;

	f->idx = idx;
	f->m = cmap(idx);
	f->cap = cap;
	f->pos = f->evpos = 0;
	__atomic_store_n(&f->m.ctl->state, ELAN_CTX_FREE, __ATOMIC_RELEASE);
	ring(ELAN_DB_CTX);
	while (__atomic_load_n(&f->m.ctl->nic_state, __ATOMIC_ACQUIRE) !=
	       ELAN_CTX_FREE && t_now() < end)
		usleep(1000);
	memset(f->m.uctl, 0, ELAN_CMD_AREA_SIZE);
	memset(f->m.status, 0, ELAN_EVT_AREA_SIZE);
	memset(tbuf + (size_t)idx * PG, 0, PG);
	table_give(&f->m, idx);
	for (k = 0; k < BPAGES; k++)
		mmu_map(f, VA_B + k * PG, bpfn[k], 1);
	for (k = 0; k < (unsigned int)nbad; k++)
		mmu_map(f, VA_BAD + k * PG, bad_pfn[k], 1);
	for (k = 0; k < (unsigned int)ntgt; k++)
		mmu_map(f, VA_RO + k * PG, tgt[k].bait_pfn, 0);
	f->m.ctl->capability = cap;
	f->gen = f->m.ctl->generation + 1 + (uint32_t)(h_rand() % 1000);
	f->m.ctl->generation = f->gen;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&f->m.ctl->state, ELAN_CTX_ACTIVE, __ATOMIC_RELEASE);
	ring(ELAN_DB_CTX);
	while (t_now() < end) {
		if (__atomic_load_n(&f->m.ctl->nic_state, __ATOMIC_ACQUIRE) ==
		    ELAN_CTX_ACTIVE && f->m.ctl->nic_generation == f->gen)
			return 0;
		usleep(1000);
	}
	return -1;
}

static void fctx_post(struct fctx *f, const struct elan_cmd *c)
{
	struct elan_cmd *s = elan_cmdq_slot(f->m.cmdq, f->pos);

	memcpy(s, c, offsetof(struct elan_cmd, seq));
	__atomic_store_n(&s->seq, elan_ring_seq(f->pos), __ATOMIC_RELEASE);
	f->pos++;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	ring(ELAN_DB_WORK);
}

/* The next event of f, waiting up to tmo seconds. */
static int fctx_event(struct fctx *f, struct elan_event *ev, double tmo)
{
	double end = t_now() + tmo;

	while (t_now() < end) {
		struct elan_event *s = elan_evq_slot(f->m.evq, f->evpos);

		if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) ==
		    elan_ring_seq(f->evpos)) {
			memcpy(ev, s, sizeof(*ev));
			f->evpos++;
			__atomic_store_n(&f->m.uctl->ev_head, f->evpos,
					 __ATOMIC_RELEASE);
			return 0;
		}
		usleep(200);
	}
	return -1;
}

/* Post c on f and return its status (-ETIMEDOUT: no event). */
static int fdo(struct fctx *f, struct elan_cmd c)
{
	static uint64_t cookie = 1000;
	static int silent;	/* the NIC stopped answering: do not wait again */
	struct elan_event ev;

	if (silent)
		return -ETIMEDOUT;
	c.cookie = cookie++;
	fctx_post(f, &c);
	if (fctx_event(f, &ev, 30)) {
		T_FAIL("ctx %u: no event for op %u in 30 s: the NIC is gone",
		       f->idx, c.op);
		silent = 1;
		return -ETIMEDOUT;
	}
	T_CHECK(ev.cookie == c.cookie && ev.type == ELAN_EV_DONE,
		"ctx %u: event type %u cookie %" PRIu64 ", want %" PRIu64,
		f->idx, ev.type, (uint64_t)ev.cookie, (uint64_t)c.cookie);
	return ev.status;
}

static struct elan_cmd mk(uint8_t op, uint32_t dst, uint64_t la, uint64_t ra,
			  uint64_t len)
{
	struct elan_cmd c = { .op = op, .dst = dst, .laddr = la, .raddr = ra,
			      .len = len };

	return c;
}

#define BA(k, off)	(VA_B + (k) * PG + (off))	/* NIC view of kbuf */
#define BH(k, off)	(kbuf + (k) * PG + (off))		/* our view of kbuf */

static void part_forged(void)
{
	struct fctx f0, f1, f2;
	uint32_t a0, a1, a2, node = hdr()->node;
	unsigned int i, k, got = 0, idx[3];
	struct elan_cmd c;
	uint64_t v, sum;
	int r;

	/* three slots the NIC sees free */
	for (i = ELAN_MAX_CTX; i-- > 0 && got < 3;)
		if (cmap(i).ctl->nic_state == ELAN_CTX_FREE &&
		    cmap(i).ctl->state != ELAN_CTX_ACTIVE)
			idx[got++] = i;
	if (got < 3) {
		T_FAIL("no three free context slots");
		return;
	}
	if (fctx_attach(&f0, idx[0], 0x6b6b6b6bULL) ||
	    fctx_attach(&f1, idx[1], 0x6b6b6b6bULL) ||
	    fctx_attach(&f2, idx[2], h_rand())) {
		T_FAIL("the NIC did not take up the forged contexts");
		return;
	}
	a0 = ELAN_ADDR(node, f0.idx);
	a1 = ELAN_ADDR(node, f1.idx);
	a2 = ELAN_ADDR(node, f2.idx);
	printf("kernel: forged contexts %#x %#x (one job) and %#x\n", a0, a1, a2);

	/* transfers inside our own buffer work */
	t_fill(BH(0, 0), 8 * PG, 7);
	memset(BH(8, 0), 0, 16 * PG);
	r = fdo(&f0, mk(ELAN_OP_PUT, a1, BA(0, 5), BA(8, 100), 6000));
	T_CHECK(r == 0 && !memcmp(BH(8, 100), BH(0, 5), 6000) &&
		t_verify(BH(0, 0), 8 * PG, 7) < 0,
		"put between forged contexts: %s", t_st(r));
	r = fdo(&f0, mk(ELAN_OP_GET, a1, BA(12, 3), BA(8, 100), 6000));
	T_CHECK(r == 0 && !memcmp(BH(12, 3), BH(0, 5), 6000),
		"get between forged contexts: %s", t_st(r));
	memset(BH(20, 0), 0, 16);
	c = mk(ELAN_OP_ATOMIC, a1, BA(20, 8), BA(20, 0), 8);
	c.aop = ELAN_AOP_ADD;
	c.operand = 5;
	c.flags = ELAN_CMDF_FETCH;
	for (i = 0, sum = 0; i < 3; i++, sum += 5) {
		r = fdo(&f0, c);
		memcpy(&v, BH(20, 8), 8);
		T_CHECK(r == 0 && v == sum, "fetch-add: %s, fetched %" PRIu64,
			t_st(r), v);
	}
	memcpy(&v, BH(20, 0), 8);
	T_CHECK(v == 15, "fetch-add result %" PRIu64, v);
	r = fdo(&f0, mk(ELAN_OP_SEND, a1, BA(0, 0), 0, 2000));
	T_CHECK(r == 0 && !memcmp(f1.m.recvq + ELAN_RECV_HDR, BH(0, 0), 2000),
		"send between forged contexts: %s", t_st(r));
	r = fdo(&f0, mk(ELAN_OP_PUT, a2, BA(0, 0), BA(30, 0), 64));
	T_CHECK(r == ELAN_E_CAPABILITY, "put to a forged context of another key: %s",
		t_st(r));

	/* pfns outside guest RAM, on either side: an error, nothing moves */
	for (k = 0; k < (unsigned int)nbad; k++) {
		memset(BH(40, 0), 0x77, PG);
		r = fdo(&f0, mk(ELAN_OP_PUT, a1, VA_BAD + k * PG, BA(40, 0), 64));
		T_CHECK(r == ELAN_E_LOCAL_FAULT, "put from pfn %#" PRIx64 ": %s",
			bad_pfn[k], t_st(r));
		r = fdo(&f0, mk(ELAN_OP_GET, a1, VA_BAD + k * PG, BA(40, 0), 64));
		T_CHECK(r == ELAN_E_LOCAL_FAULT, "get into pfn %#" PRIx64 ": %s",
			bad_pfn[k], t_st(r));
		r = fdo(&f0, mk(ELAN_OP_PUT, a1, BA(40, 0), VA_BAD + k * PG, 64));
		T_CHECK(r == ELAN_E_REMOTE_FAULT, "put to pfn %#" PRIx64 ": %s",
			bad_pfn[k], t_st(r));
		r = fdo(&f0, mk(ELAN_OP_GET, a1, BA(40, 0), VA_BAD + k * PG, 64));
		T_CHECK(r == ELAN_E_REMOTE_FAULT, "get from pfn %#" PRIx64 ": %s",
			bad_pfn[k], t_st(r));
		c = mk(ELAN_OP_ATOMIC, a1, 0, VA_BAD + k * PG + 8, 8);
		r = fdo(&f0, c);
		T_CHECK(r == ELAN_E_REMOTE_FAULT, "atomic at pfn %#" PRIx64 ": %s",
			bad_pfn[k], t_st(r));
		c = mk(ELAN_OP_ATOMIC, a1, VA_BAD + k * PG, BA(40, 0), 8);
		c.flags = ELAN_CMDF_FETCH;
		r = fdo(&f0, c);
		T_CHECK(r == ELAN_E_LOCAL_FAULT, "atomic fetch to pfn %#" PRIx64 ": %s",
			bad_pfn[k], t_st(r));
		r = fdo(&f0, mk(ELAN_OP_SEND, a1, VA_BAD + k * PG, 0, 64));
		T_CHECK(r == ELAN_E_LOCAL_FAULT, "send from pfn %#" PRIx64 ": %s",
			bad_pfn[k], t_st(r));
		for (i = 0; i < PG && BH(40, 0)[i] == 0x77; i++)
			;
		T_CHECK(i == PG, "a failed op changed our buffer");
	}

	/* another guest's pfn number is a page of ours, read-only here */
	for (k = 0; k < (unsigned int)ntgt; k++) {
		r = fdo(&f0, mk(ELAN_OP_PUT, a1, VA_RO + k * PG, BA(44, 0), PG));
		T_CHECK(r == 0 || r == ELAN_E_LOCAL_FAULT,
			"read of pfn %#" PRIx64 ": %s", tgt[k].bait_pfn, t_st(r));
		T_CHECK(t_verify(BH(44, 0), 64, tgt[k].seed + BAIT_OFF / 8) != -1 ||
			r != 0, "read the victim's bait through its pfn number");
		r = fdo(&f0, mk(ELAN_OP_GET, a1, VA_RO + k * PG, BA(44, 0), 64));
		T_CHECK(r == ELAN_E_LOCAL_FAULT || r == ELAN_E_LOCAL_PROT ||
			r == ELAN_E_TARGET_GONE,
			"write through a read-only entry: %s", t_st(r));
	}
	r = fdo(&f0, mk(ELAN_OP_PUT, a1, VA_NONE, BA(40, 0), 64));
	T_CHECK(r == ELAN_E_LOCAL_FAULT || r == ELAN_E_TARGET_GONE,
		"address without an entry: %s", t_st(r));

	/* the victims: another job, whatever the forged key */
	for (k = 0; k < (unsigned int)ntgt; k++) {
		struct fctx *fs[2] = { &f0, &f2 };

		for (i = 0; i < 2; i++) {
			uint64_t ra = tgt[k].arena + BAIT_OFF;

			r = fdo(fs[i], mk(ELAN_OP_PUT, tgt[k].addr, BA(0, 0), ra, 64));
			T_CHECK(r == ELAN_E_CAPABILITY, "put to %#x: %s",
				tgt[k].addr, t_st(r));
			r = fdo(fs[i], mk(ELAN_OP_GET, tgt[k].addr, BA(0, 0), ra, 64));
			T_CHECK(r == ELAN_E_CAPABILITY, "get from %#x: %s",
				tgt[k].addr, t_st(r));
			c = mk(ELAN_OP_ATOMIC, tgt[k].addr, 0, ra, 8);
			r = fdo(fs[i], c);
			T_CHECK(r == ELAN_E_CAPABILITY, "atomic on %#x: %s",
				tgt[k].addr, t_st(r));
			r = fdo(fs[i], mk(ELAN_OP_SEND, tgt[k].addr, BA(0, 0), 0, 64));
			T_CHECK(r == ELAN_E_CAPABILITY, "send to %#x: %s",
				tgt[k].addr, t_st(r));
		}
	}

	/* a corrupt ev_head fails the context, with a name */
	f2.m.uctl->ev_head = 0x80000000u;
	fctx_post(&f2, &c);
	for (i = 0; i < 10000 && f2.m.ctl->nic_state == ELAN_CTX_ACTIVE; i++)
		usleep(1000);
	T_CHECK(f2.m.ctl->nic_state == ELAN_CTX_FAILED &&
		f2.m.ctl->nic_error == ELAN_E_QUEUE &&
		f2.m.status->state == ELAN_CTX_FAILED &&
		f2.m.status->error == ELAN_E_QUEUE,
		"corrupt ev_head: NIC state %u error %u",
		f2.m.ctl->nic_state, f2.m.ctl->nic_error);
}

/* ------------------------------------------------------------ chaos */

/* A pfn for chaos: ours (writable) or outside RAM, or other RAM read-only. */
static uint64_t chaos_pfn(int *write)
{
	switch (h_rand() % 4) {
	case 0:
		*write = 1;
		return bpfn[h_rand() % BPAGES];
	case 1:
		*write = 1;
		return bad_pfn[h_rand() % nbad];
	case 2:
		*write = 1;
		return h_rand();
	default:
		*write = 0;
		return h_rand() % ram_pages;
	}
}

static uint64_t chaos_va(void)
{
	return (0x100000000000ULL * (1 + h_rand() % 4)) + (h_rand() % 32) * PG +
	       (h_rand() % 2 ? h_rand() % PG : 0);
}

/* Every slot active, with random keys, MMUs and queues of commands. */
static void chaos_contexts(void)
{
	uint32_t node = hdr()->node;
	unsigned int i, j;

	for (i = 0; i < ELAN_MAX_CTX; i++) {
		struct elan_hw_ctx_map m = cmap(i);
		int w;

		m.ctl->capability = h_rand() % 2 ? 0x6b6b6b6bULL : h_rand();
		for (j = 0; j < 128; j++) {
			uint64_t va = chaos_va(), pfn = chaos_pfn(&w);
			struct elan_hw_tlbe *e = ftable(i, va) +
				h_rand() % ELAN_MMU_WAYS;

			e->pfn = pfn;
			e->tag = (va & ~(PG - 1)) | ELAN_MMU_VALID |
				 (w ? ELAN_MMU_WRITE : 0);
		}
		for (j = 0; j < ELAN_CMDQ_ENTRIES; j++) {
			struct elan_cmd *c = &m.cmdq[j];

			h_fill_rand(c, sizeof(*c));
			c->op = (uint8_t)(h_rand() % 7);
			c->aop = (uint8_t)(h_rand() % 7);
			c->flags = (uint16_t)(h_rand() % 4);
			switch (h_rand() % 6) {
			case 0:
				c->dst = tgt[h_rand() % ntgt].addr;
				break;
			case 1:		/* any node, any context id */
				c->dst = (uint32_t)h_rand();
				break;
			default:
				c->dst = ELAN_ADDR(node, h_rand() % ELAN_MAX_CTX);
				break;
			}
			c->laddr = chaos_va();
			c->raddr = h_rand() % 4 ? chaos_va() :
				   tgt[h_rand() % ntgt].arena + h_rand() % ARENA_LEN;
			c->len = h_rand() % 3 ? h_rand() % (3 * PG) : h_rand();
			if (c->op == ELAN_OP_ATOMIC) {
				c->len = 8;
				c->laddr &= ~7ULL;
				c->raddr &= ~7ULL;
			}
			c->seq = elan_ring_seq(j);
		}
		m.uctl->ev_head = h_rand() % 8 ? 0 : (uint32_t)h_rand();
		m.uctl->recv_head = h_rand() % 8 ? 0 : (uint32_t)h_rand();
		m.ctl->armed = (uint32_t)h_rand();
		/* mostly its own table, else a garbage size or page */
		table_give(&m, i);
		if (h_rand() % 8 == 0)
			m.ctl->mmu_sets = (uint32_t)h_rand();
		if (h_rand() % 8 == 0)
			m.mmu_dir[h_rand() % 4] = chaos_pfn(&w);
		m.ctl->generation += 1 + (uint32_t)(h_rand() % 3);
		__atomic_store_n(&m.ctl->state, h_rand() % 8 ? ELAN_CTX_ACTIVE :
				 (uint32_t)h_rand(), __ATOMIC_RELEASE);
	}
	ring(ELAN_DB_CTX);
	ring(ELAN_DB_WORK);
}

static void chaos_header(void)
{
	struct elan_hw_header *h = hdr();
	unsigned int i;

	for (i = 0; i < ELAN_FAULTQ_ENTRIES; i++) {
		if (h_rand() % 2)
			continue;
		h->faultq[i].ack_seq = h_rand() % 2 ? h->faultq[i].req_seq :
				       (uint32_t)h_rand();
		h->faultq[i].status = (uint32_t)h_rand() % 20;
		if (h_rand() % 4 == 0)
			h->faultq[i].req_seq = (uint32_t)h_rand();
	}
	h->fault_head = h_rand() % 2 ? h->fault_head + (uint32_t)(h_rand() % 600) :
			(uint32_t)h_rand();
	for (i = 0; i < ELAN_MAX_ENGINES; i++)
		h->engine[i].seq = h_rand();
	h->nic_sleeping = (uint32_t)h_rand();
	h->node = (uint32_t)h_rand();
	h->nodes = (uint32_t)h_rand();
	h->nodes_up = h_rand();
	ring(ELAN_DB_FAULT);
}

static void chaos_bytes(void)
{
	unsigned int n = 1 + (unsigned int)(h_rand() % 16), i;

	for (i = 0; i < n; i++) {
		size_t off = h_rand() % ELAN_REGION_SIZE;
		size_t len = h_rand() % (h_rand() % 4 ? 4096 : 1 << 20);

		if (off + len > ELAN_REGION_SIZE)
			len = ELAN_REGION_SIZE - off;
		h_fill_rand(region + off, len);
	}
}

static void part_chaos(double secs)
{
	double end = t_now() + secs;
	uint64_t rounds = 0, i;

	while (t_now() < end) {
		switch (h_rand() % 5) {
		case 0: case 1:
			chaos_contexts();
			break;
		case 2:
			chaos_header();
			break;
		case 3:
			chaos_bytes();
			break;
		default:
			for (i = 0; i < 100; i++)
				ring((unsigned int)(h_rand() % 8));
			break;
		}
		rounds++;
		usleep(20000 + h_rand() % 100000);
	}
	/* and once the whole region, for good measure */
	h_fill_rand(region, ELAN_REGION_SIZE);
	ring(ELAN_DB_CTX);
	printf("kernel: %" PRIu64 " rounds of chaos over the NIC region\n", rounds);
}

int main(int argc, char **argv)
{
	double secs;
	unsigned int k;
	int i;

	if (argc < 5) {
		fprintf(stderr, "usage: hostile_kernel DIR SECONDS SEED TARGET...\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_name = "kernel";
	secs = atof(argv[2]);
	h_seed(strtoull(argv[3], NULL, 0));
	for (i = 4; i < argc && ntgt < 8; i++)
		if (h_read_info(argv[1], argv[i], &tgt[ntgt], 60) == 0)
			ntgt++;
		else
			T_FAIL("no info of victim %s", argv[i]);
	if (!ntgt || map_device()) {
		printf("kernel: no victims or no NIC region (%s)\n0 passed, 1 failed\n",
		       strerror(errno));
		return 1;
	}
	kbuf = mmap(NULL, BPAGES * PG, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (kbuf == MAP_FAILED || mlock(kbuf, BPAGES * PG)) {
		printf("kernel: no locked buffer\n0 passed, 1 failed\n");
		return 1;
	}
	tbuf = mmap(NULL, ELAN_MAX_CTX * PG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (tbuf == MAP_FAILED || mlock(tbuf, ELAN_MAX_CTX * PG)) {
		printf("kernel: no locked tables\n0 passed, 1 failed\n");
		return 1;
	}
	for (k = 0; k < ELAN_MAX_CTX; k++)
		tpfn[k] = h_pfn(tbuf + k * PG);
	for (k = 0; k < BPAGES; k++) {
		bpfn[k] = h_pfn(kbuf + k * PG);
		if (!bpfn[k] || (k < ELAN_MAX_CTX && !tpfn[k])) {
			printf("kernel: no pfn from /proc/self/pagemap\n0 passed, 1 failed\n");
			return 1;
		}
	}
	ram_pages = ram_end_pages();
	bad_pfn[nbad++] = ram_pages;			/* just past the end */
	bad_pfn[nbad++] = ram_pages + 17;
	bad_pfn[nbad++] = 0xc0000;			/* the PCI hole (3 GiB) */
	bad_pfn[nbad++] = 0x100000;			/* 4 GiB */
	bad_pfn[nbad++] = 0x100000 + ram_pages;
	bad_pfn[nbad++] = (1ULL << 52) - 1;		/* huge */
	bad_pfn[nbad++] = 1ULL << 52;			/* address overflows */
	bad_pfn[nbad++] = ~0ULL;
	printf("kernel: guest RAM %" PRIu64 " pages, our buffer at pfn %#" PRIx64
	       ", %d victims\n", ram_pages, bpfn[0], ntgt);

	part_forged();
	printf("%s kernel/forged\n", t_failed ? "FAIL" : "ok  ");
	part_chaos(secs);
	printf("%d passed, %d failed\n", t_failed ? 0 : 1, t_failed ? 1 : 0);
	return t_failed ? 1 : 0;
}
