// SPDX-License-Identifier: GPL-2.0
/*
 * hostile_user: a user process that writes garbage into its own mapped
 * command queue and control page (attack 2 of the hostile stage).
 *
 *   hostile_user DIR SECONDS SEED TARGET...
 *
 * It uses only what any process gets: /dev/elan0, one context of its own
 * job (a capability that is not the victims') and the two mappings of
 * it.  First the mapping rules: the event area cannot be written or made
 * writable, the command area cannot be grown, a child of fork does not
 * have it, odd ioctls and mmaps are refused.  Then, for SECONDS, rounds
 * of one of:
 *   counted   commands with random fields (ops, flags, lengths, the
 *             victims' addresses and contexts, kernel, null, non-canonical
 *             addresses, its own queue mappings) posted in order: each
 *             must end in exactly one event with a named status;
 *   scribble  random bytes over queue slots (right seq or not), the
 *             control page and the ring heads, while the NIC reads them;
 *   doorbell  a burst of doorbell ioctls.
 * No event may report success for an operation on a victim's context.
 * A context that failed must say why (ELAN_E_QUEUE: it corrupted its
 * own queue); then the process attaches a fresh one and goes on.  At the
 * end a fresh context must still do a NOP and a put into its own memory.
 * Ends with "N passed, M failed"; SEED makes the garbage reproducible.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "hostile.h"

struct raw_ctx {
	int fd;
	uint32_t addr;
	struct elan_user_ctl *ctl;
	struct elan_cmd *cmdq;
	struct elan_user_status *st;
	struct elan_event *evq;
	uint8_t *cmd_area, *evt_area;
	uint8_t *recvq;
	uint32_t pos;		/* next command position we write */
	uint32_t evpos;		/* next event we read */
	uint32_t recvpos;	/* next message we take */
	uint32_t ndone;		/* DONE events: one per command taken */
	int errors;		/* ERROR events: the context failed */
};

#define MAXT 8
static struct vinfo tgt[MAXT];
static int ntgt;
static uint64_t cap;
static uint8_t *buf;		/* our own memory, 64 KiB */
#define BUF_LEN (64 * 1024)

static uint64_t n_events, n_status[256], n_failed_ctx, n_ctx;
static uint64_t n_victim_ops;
static int stuck;		/* the NIC stopped answering */

static int raw_open(struct raw_ctx *c)
{
	struct elan_attach a = { .capability = cap,
				 .abi_version = ELAN_ABI_VERSION };

	memset(c, 0, sizeof(*c));
	c->fd = open(ELAN_DEVICE, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	if (ioctl(c->fd, ELAN_IOC_ATTACH, &a) < 0) {
		close(c->fd);
		return -errno;
	}
	c->addr = a.addr;
	c->cmd_area = mmap(NULL, ELAN_CMD_AREA_SIZE, PROT_READ | PROT_WRITE,
			   MAP_SHARED, c->fd, ELAN_MMAP_CMD);
	c->evt_area = mmap(NULL, ELAN_EVT_AREA_SIZE, PROT_READ, MAP_SHARED,
			   c->fd, ELAN_MMAP_EVT);
	if (c->cmd_area == MAP_FAILED || c->evt_area == MAP_FAILED) {
		close(c->fd);
		return -ENOMEM;
	}
	c->ctl = (void *)c->cmd_area;
	c->cmdq = (void *)(c->cmd_area + ELAN_PAGE);
	c->st = (void *)c->evt_area;
	c->evq = (void *)(c->evt_area + ELAN_EVT_OFF_EVQ);
	c->recvq = c->evt_area + ELAN_EVT_OFF_RECVQ;
	n_ctx++;
	return 0;
}

static void raw_close(struct raw_ctx *c)
{
	munmap(c->cmd_area, ELAN_CMD_AREA_SIZE);
	munmap(c->evt_area, ELAN_EVT_AREA_SIZE);
	close(c->fd);
}

static int is_victim(uint32_t a)
{
	int i;

	for (i = 0; i < ntgt; i++)
		if (tgt[i].addr == a)
			return 1;
	return 0;
}

/* Take the events there are; check each.  Returns how many. */
static int take_events(struct raw_ctx *c)
{
	int n = 0;

	for (;;) {
		struct elan_event *s = elan_evq_slot(c->evq, c->evpos);
		struct elan_event ev;

		if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) !=
		    elan_ring_seq(c->evpos))
			break;
		memcpy(&ev, s, sizeof(ev));
		c->evpos++;
		__atomic_store_n(&c->ctl->ev_head, c->evpos, __ATOMIC_RELEASE);
		n++;
		n_events++;
		n_status[ev.status]++;
		T_CHECK(ev.status < ELAN_STATUS_MAX, "event with status %u",
			ev.status);
		/* a REMOTE event only from our own put/atomic to ourselves */
		T_CHECK(ev.type == ELAN_EV_DONE || ev.type == ELAN_EV_ERROR ||
			(ev.type == ELAN_EV_REMOTE && ev.src == c->addr),
			"event of type %u from %#x", ev.type, ev.src);
		if (ev.type == ELAN_EV_DONE && ev.status == ELAN_OK &&
		    ev.op >= ELAN_OP_PUT && ev.op <= ELAN_OP_SEND &&
		    is_victim(ev.src))
			T_FAIL("op %u on victim %#x succeeded (cookie %#" PRIx64
			       ")", ev.op, ev.src, (uint64_t)ev.cookie);
		if (ev.type == ELAN_EV_DONE && is_victim(ev.src) &&
		    ev.op >= ELAN_OP_PUT && ev.op <= ELAN_OP_SEND)
			n_victim_ops++;
		if (ev.type == ELAN_EV_DONE)
			c->ndone++;
		else if (ev.type == ELAN_EV_ERROR)
			c->errors++;
	}
	/* our own messages (sends to ourselves): only ours may come */
	for (;;) {
		struct elan_recv_hdr *h = elan_recvq_slot(c->recvq, c->recvpos);

		if (__atomic_load_n(&h->seq, __ATOMIC_ACQUIRE) !=
		    elan_ring_seq(c->recvpos))
			break;
		T_CHECK(h->src == c->addr, "a message from %#x", h->src);
		c->recvpos++;
		__atomic_store_n(&c->ctl->recv_head, c->recvpos,
				 __ATOMIC_RELEASE);
	}
	return n;
}

static void doorbell(struct raw_ctx *c)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->st->nic_sleeping, __ATOMIC_RELAXED))
		ioctl(c->fd, ELAN_IOC_DOORBELL);
}

/* An address from the interesting ones. */
static uint64_t pick_addr(struct raw_ctx *c)
{
	const struct vinfo *v = &tgt[h_rand() % ntgt];

	switch (h_rand() % 14) {
	case 0: return h_u(buf) + h_rand() % BUF_LEN;
	case 1: return h_u(buf) + (h_rand() % (BUF_LEN / 8)) * 8;
	case 2: return v->arena + h_rand() % ARENA_LEN;
	case 3: return v->arena + WIN_OFF + (h_rand() % 64) * 8;
	case 4: return v->arena + BAIT_OFF;
	case 5: return 0;
	case 6: return 0xffff888000000000ULL + h_rand() % (1ULL << 30);
	case 7: return 0x0000800000000000ULL;		/* non-canonical */
	case 8: return ~0ULL - h_rand() % 8192;
	case 9: return h_u(c->cmd_area) + h_rand() % ELAN_CMD_AREA_SIZE;
	case 10: return h_u(c->evt_area) + h_rand() % ELAN_EVT_AREA_SIZE;
	case 11: return h_u(&pick_addr);		/* our text: read-only */
	case 12: return 0xffffffffff600000ULL;		/* vsyscall */
	default: return h_rand();
	}
}

static uint64_t pick_len(void)
{
	static const uint64_t odd[] = {
		0, 1, 7, 8, 9, 4095, 4096, 4097, ELAN_SEND_MAX,
		ELAN_SEND_MAX + 1, 65536, 0xffffffffULL, 0x100000000ULL,
		1ULL << 63, ~0ULL,
	};

	if (h_rand() % 3 == 0)
		return h_rand() % 20000;
	return odd[h_rand() % (sizeof(odd) / sizeof(odd[0]))];
}

static uint32_t pick_dst(struct raw_ctx *c)
{
	switch (h_rand() % 8) {
	case 0: return c->addr;
	case 1: case 2: case 3: return tgt[h_rand() % ntgt].addr;
	case 4: return ELAN_ADDR(h_rand() % 3, h_rand() % ELAN_MAX_CTX);
	case 5: return ELAN_ADDR(h_rand() % 70, h_rand() % 40);
	case 6: return ELAN_ADDR(1, 0xffff);
	default: return (uint32_t)h_rand();
	}
}

static void random_cmd(struct raw_ctx *c, struct elan_cmd *x)
{
	h_fill_rand(x, sizeof(*x));
	if (h_rand() % 4)
		x->op = (uint8_t)(h_rand() % 6);
	if (h_rand() % 2)
		x->aop = (uint8_t)(h_rand() % 6);
	if (h_rand() % 3)
		x->flags = (uint16_t)(h_rand() % 4);
	x->dst = pick_dst(c);
	x->laddr = pick_addr(c);
	x->raddr = pick_addr(c);
	x->len = x->op == ELAN_OP_ATOMIC && h_rand() % 2 ? 8 : pick_len();
	if (x->op == ELAN_OP_ATOMIC && h_rand() % 2) {
		x->raddr &= ~7ULL;
		x->laddr &= ~7ULL;
	}
	if (h_rand() % 2)
		return;
	/* Half of them well formed, so that they get past the validation
	 * into the engine: capability, translation, faults, protection. */
	x->op = (uint8_t)(ELAN_OP_PUT + h_rand() % 4);
	x->aop = (uint8_t)(h_rand() % 6);
	x->flags = 0;
	if (x->op != ELAN_OP_SEND && h_rand() % 2)
		x->flags |= ELAN_CMDF_REMOTE_EVENT;
	if (x->op == ELAN_OP_ATOMIC && h_rand() % 2)
		x->flags |= ELAN_CMDF_FETCH;
	if (x->op == ELAN_OP_ATOMIC) {
		x->len = 8;
		x->raddr &= ~7ULL;
		x->laddr &= ~7ULL;
	} else {
		x->len = h_rand() % (x->op == ELAN_OP_SEND ? ELAN_SEND_MAX + 1 :
				     20000);
	}
}

/* Write a command into the slot at pos: payload, then seq (release). */
static void write_slot(struct raw_ctx *c, uint32_t pos,
		       const struct elan_cmd *x, uint32_t seq)
{
	struct elan_cmd *s = elan_cmdq_slot(c->cmdq, pos);

	memcpy(s, x, offsetof(struct elan_cmd, seq));
	__atomic_store_n(&s->seq, seq, __ATOMIC_RELEASE);
}

static int ctx_alive(struct raw_ctx *c)
{
	return __atomic_load_n(&c->st->state, __ATOMIC_ACQUIRE) ==
	       ELAN_CTX_ACTIVE;
}

/*
 * Back to a consistent queue after garbage: heads to what we consumed,
 * stale slots invalidated, then wait until the NIC has answered every
 * command it took: exactly one DONE event each (promise 6).
 */
static void quiesce(struct raw_ctx *c)
{
	double end = t_now() + 60;
	uint32_t i, tail;

	__atomic_store_n(&c->ctl->ev_head, c->evpos, __ATOMIC_RELEASE);
	__atomic_store_n(&c->ctl->recv_head, c->recvpos, __ATOMIC_RELEASE);
	for (i = 0; i < ELAN_CMDQ_ENTRIES; i++)
		__atomic_store_n(&c->cmdq[i].seq, 0u, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (;;) {
		take_events(c);
		tail = __atomic_load_n(&c->st->cmd_tail, __ATOMIC_ACQUIRE);
		if (!ctx_alive(c) || c->ndone == tail)
			break;
		if (t_now() > end) {
			T_FAIL("context %#x: %u commands taken, %u events after 60 s",
			       c->addr, tail, c->ndone);
			stuck = 1;
			break;
		}
		ioctl(c->fd, ELAN_IOC_DOORBELL);
		usleep(500);
	}
	c->pos = __atomic_load_n(&c->st->cmd_tail, __ATOMIC_ACQUIRE);
}

/* A failed context must name its error; then a fresh one replaces it. */
static void replace_if_failed(struct raw_ctx *c)
{
	uint32_t st = __atomic_load_n(&c->st->state, __ATOMIC_ACQUIRE);
	uint32_t err = __atomic_load_n(&c->st->error, __ATOMIC_RELAXED);
	int r;

	if (st == ELAN_CTX_ACTIVE)
		return;
	n_failed_ctx++;
	T_CHECK(st == ELAN_CTX_FAILED && err == ELAN_E_QUEUE,
		"context %#x: state %u error %s", c->addr, st, t_st((int)err));
	raw_close(c);
	r = raw_open(c);
	if (r) {
		T_FAIL("re-attach after a failure: %s", strerror(-r));
		exit(1);
	}
}

/* Counted: n random commands at consecutive positions, then quiesce. */
static void round_counted(struct raw_ctx *c)
{
	uint32_t n = 1 + (uint32_t)(h_rand() % 64), i;
	struct elan_cmd x;

	quiesce(c);
	for (i = 0; i < n; i++) {
		random_cmd(c, &x);
		x.cookie = i;
		write_slot(c, c->pos, &x, elan_ring_seq(c->pos));
		c->pos++;
	}
	doorbell(c);
	quiesce(c);
}

/* Scribble: random bytes where the NIC reads, while it reads. */
static void round_scribble(struct raw_ctx *c)
{
	uint32_t k, i;
	struct elan_cmd x;

	switch (h_rand() % 6) {
	case 0:		/* whole slots, seq right or not, anywhere */
		k = 1 + (uint32_t)(h_rand() % 300);
		for (i = 0; i < k; i++) {
			uint32_t p = c->pos + (uint32_t)(h_rand() % 300);

			random_cmd(c, &x);
			write_slot(c, p, &x, h_rand() % 2 ? elan_ring_seq(p) :
				   (uint32_t)h_rand());
		}
		break;
	case 1:		/* raw bytes over the queue */
		h_fill_rand(c->cmdq, (size_t)ELAN_CMDQ_ENTRIES * 64);
		break;
	case 2:		/* the heads */
		__atomic_store_n(&c->ctl->ev_head, (uint32_t)h_rand(),
				 __ATOMIC_RELEASE);
		__atomic_store_n(&c->ctl->recv_head, (uint32_t)h_rand(),
				 __ATOMIC_RELEASE);
		break;
	case 3:		/* the whole control page */
		h_fill_rand(c->ctl, ELAN_PAGE);
		break;
	case 4:		/* one slot rewritten while the NIC takes it */
		for (i = 0; i < 2000; i++) {
			random_cmd(c, &x);
			write_slot(c, c->pos, &x, elan_ring_seq(c->pos));
			if (__atomic_load_n(&c->st->cmd_tail, __ATOMIC_ACQUIRE) !=
			    c->pos)
				c->pos++;
		}
		break;
	default:	/* a seq far ahead and the ring wrapped */
		random_cmd(c, &x);
		write_slot(c, c->pos + ELAN_CMDQ_ENTRIES,
			   &x, elan_ring_seq(c->pos + ELAN_CMDQ_ENTRIES));
		break;
	}
	doorbell(c);
	usleep(2000);
	take_events(c);
	/* mostly the heads are put back at once, else the context may die */
	if (h_rand() % 4)
		quiesce(c);
	c->pos = __atomic_load_n(&c->st->cmd_tail, __ATOMIC_ACQUIRE);
}

static sigjmp_buf jb;

static void on_segv(int sig)
{
	siglongjmp(jb, sig);
}

/* 1 if writing *p kills the writer with SIGSEGV/SIGBUS. */
static int write_faults(uint8_t *p)
{
	struct sigaction sa = { .sa_handler = on_segv }, o1, o2;
	int sig;

	sigaction(SIGSEGV, &sa, &o1);
	sigaction(SIGBUS, &sa, &o2);
	sig = sigsetjmp(jb, 1);
	if (!sig)
		__atomic_store_n(p, 0x5a, __ATOMIC_SEQ_CST);
	sigaction(SIGSEGV, &o1, NULL);
	sigaction(SIGBUS, &o2, NULL);
	return sig != 0;
}

/* What the mappings allow: only the command area is ours to write. */
static void mapping_rules(struct raw_ctx *c)
{
	void *p;
	pid_t pid;
	int st, r, i;

	T_CHECK(write_faults(c->evt_area + 100), "wrote the event area");
	T_CHECK(write_faults(c->evt_area + ELAN_EVT_OFF_RECVQ),
		"wrote the receive ring");
	r = mprotect(c->evt_area, ELAN_PAGE, PROT_READ | PROT_WRITE);
	T_CHECK(r < 0, "mprotect made the event area writable");
	p = mremap(c->cmd_area, ELAN_CMD_AREA_SIZE, 2 * ELAN_CMD_AREA_SIZE,
		   MREMAP_MAYMOVE);
	T_CHECK(p == MAP_FAILED, "mremap grew the command area");
	if (p != MAP_FAILED)
		c->cmd_area = p;
	p = mmap(NULL, ELAN_CMD_AREA_SIZE + PG, PROT_READ | PROT_WRITE,
		 MAP_SHARED, c->fd, ELAN_MMAP_CMD);
	T_CHECK(p == MAP_FAILED, "a command area larger than it is");
	p = mmap(NULL, ELAN_EVT_AREA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 c->fd, ELAN_MMAP_EVT);
	T_CHECK(p == MAP_FAILED, "a writable event area");
	p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 2 << 20);
	T_CHECK(p == MAP_FAILED, "mmap at offset 2 MiB");
	p = mmap(NULL, ELAN_CMD_AREA_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE, c->fd, ELAN_MMAP_CMD);
	T_CHECK(p == MAP_FAILED, "a private command area");
	for (i = 0; i < 200; i++) {
		unsigned long req = (unsigned long)h_rand();

		if (req == ELAN_IOC_ATTACH || req == ELAN_IOC_DOORBELL ||
		    req == ELAN_IOC_COUNTERS)
			continue;
		ioctl(c->fd, req, buf);
	}
	{
		struct elan_attach a = { .capability = cap,
					 .abi_version = ELAN_ABI_VERSION };

		T_CHECK(ioctl(c->fd, ELAN_IOC_ATTACH, &a) < 0 && errno == EBUSY,
			"second attach on one file");
		T_CHECK(ioctl(c->fd, ELAN_IOC_ATTACH, (void *)16) < 0,
			"attach from a bad pointer");
	}
	pid = fork();
	if (pid == 0)
		_exit(write_faults(c->cmd_area) ? 0 : 1);
	T_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0, "a child of fork could write the queue");
}

int main(int argc, char **argv)
{
	struct raw_ctx c;
	double secs, end;
	uint64_t seed, nr = 0, counted = 0;
	elan_ctx_t *lc;
	int i, r;

	if (argc < 5) {
		fprintf(stderr, "usage: hostile_user DIR SECONDS SEED TARGET...\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_name = "user";
	t_op_timeout = 60;
	secs = atof(argv[2]);
	seed = strtoull(argv[3], NULL, 0);
	h_seed(seed);
	for (i = 4; i < argc && ntgt < MAXT; i++)
		if (h_read_info(argv[1], argv[i], &tgt[ntgt], 60) == 0)
			ntgt++;
		else
			T_FAIL("no info of victim %s", argv[i]);
	if (!ntgt) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	/* Another job than the victims'. */
	cap = h_read_cap(argv[1]) ^ 0x0123456789abcdefULL;
	/* Guard pages around our buffer: runaway lengths end in a fault. */
	buf = mmap(NULL, BUF_LEN + 2 * PG, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED ||
	    mprotect(buf + PG, BUF_LEN, PROT_READ | PROT_WRITE)) {
		printf("user: no memory\n0 passed, 1 failed\n");
		return 1;
	}
	buf += PG;
	memset(buf, 0x11, BUF_LEN);
	r = raw_open(&c);
	if (r) {
		printf("user: attach: %s\n0 passed, 1 failed\n", strerror(-r));
		return 1;
	}
	printf("user: context %#x, seed %#" PRIx64 ", %.0f s of garbage\n",
	       c.addr, seed, secs);
	mapping_rules(&c);

	end = t_now() + secs;
	while (t_now() < end && !stuck) {
		switch (h_rand() % 8) {
		case 0: case 1: case 2:
			round_counted(&c);
			counted++;
			break;
		case 3:
			for (i = 0; i < 50; i++)
				ioctl(c.fd, ELAN_IOC_DOORBELL);
			break;
		default:
			round_scribble(&c);
			break;
		}
		nr++;
		replace_if_failed(&c);
	}
	if (!stuck) {
		quiesce(&c);
		replace_if_failed(&c);
	}
	raw_close(&c);

	/* Still served: a fresh context does a NOP and a put to itself. */
	r = stuck ? -EIO : elan_open(cap, &lc);
	T_CHECK(r == 0, "attach after the garbage: %s", strerror(-r));
	if (r == 0) {
		r = T_DO(lc, NULL, elan_nop(lc, CK));
		T_CHECK(r == 0, "nop after the garbage: %s", t_st(r));
		t_fill(buf, 5000, 42);
		r = t_put(lc, elan_addr(lc), buf, h_u(buf) + 30000, 5000);
		T_CHECK(r == 0 && t_verify(buf + 30000, 5000, 42) < 0,
			"put after the garbage: %s", t_st(r));
		elan_close(lc);
	}
	printf("user: %" PRIu64 " rounds (%" PRIu64 " counted), %" PRIu64
	       " events, %" PRIu64 " on victims, %" PRIu64 " contexts, %" PRIu64
	       " failed\n", nr, counted, n_events, n_victim_ops, n_ctx,
	       n_failed_ctx);
	printf("user: statuses:");
	for (i = 0; i < 256; i++)
		if (n_status[i])
			printf(" %s=%" PRIu64, i < ELAN_STATUS_MAX ?
			       elan_strerror(i) : "?", n_status[i]);
	printf("\n%s user\n", t_failed ? "FAIL" : "ok  ");
	printf("%d passed, %d failed\n", t_failed ? 0 : 1, t_failed ? 1 : 0);
	return t_failed ? 1 : 0;
}
