// SPDX-License-Identifier: GPL-2.0
/*
 * hostile_victim: a process that the hostile stage attacks.
 *
 *   hostile_victim DIR NAME SLOT [PEER...]
 *
 * Attaches a context with the job capability of DIR/cap, fills its arena
 * (hostile.h) with its guard pattern, publishes DIR/NAME.info and then,
 * until DIR/stop.NAME appears, does legitimate traffic with each PEER
 * (another victim, as soon as DIR/PEER.info exists): put its pattern into
 * its slot of the peer's window and get it back, fetch-add and
 * compare-swap its counter words there (the fetched values must count
 * exactly), and send numbered messages (checked in order on arrival).
 * Every half second DIR/NAME.progress gets the number of rounds done.
 *
 * At the stop, each pair of peers exchanges a FINAL message (what it
 * wrote into the other's arena); once every peer it talked to has said
 * FINAL, the victim reads back every byte of its arena (guard pages
 * included) and compares it with what it must hold.  A message or a
 * remote event from anyone but a peer is a failure too.  Ends with
 * "N passed, M failed".
 *
 * While it waits for one of its ops it takes its messages off the ring
 * (held for the next drain): HOSTILE_NO_HOLD=1 does not, as the victims
 * did before (for comparison).
 *
 * HOSTILE_CORRUPT=guard|page|window: before the final check the victim
 * itself changes one byte of a guard pattern, of a guard page, or of a
 * peer's window slot: the check must notice (the stage runs this).
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "hostile.h"

enum { TAG_DATA = 0x4801, TAG_FINAL };

struct data_hdr {
	uint32_t seq;
	uint32_t len;
	uint64_t seed;
};

struct final_msg {
	uint64_t nput, last_seed, nfadd, ncswap, nsent;
};

struct peer {
	const char *name;
	struct vinfo vi;
	int known;		/* info read */
	int final_sent, final_got;
	int gone;		/* an op found it gone: no rounds, no FINAL */
	uint64_t iter;
	struct final_msg mine;	/* what we did to it */
	uint32_t rseq;		/* next message number expected from it */
	uint64_t nrecv;
};

#define MAXPEERS 8
static struct peer peers[MAXPEERS];
static int npeers;
static elan_ctx_t *ctx;
static uint32_t my_slot;
static uint8_t *arena, *shadow, *src, *back;
static uint64_t rounds, strangers;
static int broken;		/* an op timed out or the context died */
static const char *dir, *name;
static double t_start;

static uint64_t wseed(uint32_t from, uint32_t to, uint64_t i)
{
	return 0x5eed000000000000ULL | (uint64_t)from << 40 |
	       (uint64_t)to << 32 | i;
}

static int learn_peer(struct peer *p)
{
	if (p->known || h_read_info(dir, p->name, &p->vi, 0))
		return 0;
	p->known = 1;
	printf("victim %s: peer %s is %#x\n", name, p->name, p->vi.addr);
	return 1;
}

/*
 * The peer with NIC address a.  A peer may talk before we saw its info,
 * and a peer that said FINAL is gone: its address may be a new peer's.
 */
static struct peer *peer_by_addr(uint32_t a)
{
	int i, pass;

	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < npeers; i++) {
			struct peer *p = &peers[i];

			if (pass == 1)
				learn_peer(p);
			if (p->known && p->vi.addr == a &&
			    (pass == 2 || !p->final_got))
				return p;
		}
	}
	return NULL;
}

/*
 * Does traffic with p end with this op?  -ETIMEDOUT or -EPIPE: nobody
 * serves us any more.  No context, or its node down: p is gone.  Either
 * fails once, with the time, and no more rounds are tried.
 */
static int op_ended(struct peer *p, const char *op, int r)
{
	if (r < 0 && !broken) {
		broken = 1;
		T_FAIL("the NIC stopped serving us (%s of round %" PRIu64
		       " with %s: %s, context %s) %.1f s after the start: traffic ends",
		       op, p->iter - 1, p->name, t_st(r), elan_state_text(ctx),
		       t_now() - t_start);
	}
	if (r == ELAN_E_NO_CONTEXT || r == ELAN_E_TARGET_GONE ||
	    r == ELAN_E_NODE_DOWN) {
		p->gone = 1;
		T_FAIL("%s is gone: the %s of round %" PRIu64 " ended in %s %.1f s after the start: no more traffic with it",
		       p->name, op, p->iter - 1, t_st(r), t_now() - t_start);
	}
	return broken || p->gone;
}

static int send_final(struct peer *p)
{
	int r = T_DO(ctx, NULL, elan_send(ctx, p->vi.addr, TAG_FINAL, &p->mine,
					  sizeof(p->mine), CK, 0));

	if (!op_ended(p, "FINAL", r))
		T_CHECK(r == 0, "FINAL to %s: %s", p->name, t_st(r));
	p->final_sent = 1;
	return r;
}

static void on_message(const struct elan_recv_hdr *h, const uint8_t *pl)
{
	struct peer *p = peer_by_addr(h->src);
	struct data_hdr d;
	int64_t bad;

	if (!p) {
		strangers++;
		T_FAIL("message from a stranger %#x (tag %#x, %u bytes)",
		       h->src, h->tag, h->len);
		return;
	}
	if (p->final_got) {
		T_FAIL("%s: a message after its FINAL (tag %#x)", p->name,
		       h->tag);
		return;
	}
	p->nrecv++;
	if (h->tag == TAG_FINAL && h->len == sizeof(struct final_msg)) {
		struct final_msg f;

		memcpy(&f, pl, sizeof(f));
		if (f.nput)
			t_fill(shadow + WIN_OFF + p->vi.slot * SLOT_LEN,
			       SLOT_LEN, f.last_seed);
		memcpy(shadow + CNT_FADD(p->vi.slot), &f.nfadd, 8);
		memcpy(shadow + CNT_CSWAP(p->vi.slot), &f.ncswap, 8);
		T_CHECK(f.nsent + 1 == p->nrecv,
			"%s says it sent %" PRIu64 " messages, %" PRIu64 " came",
			p->name, f.nsent, p->nrecv - 1);
		p->final_got = 1;
		if (!p->final_sent)
			send_final(p);
		return;
	}
	if (h->tag != TAG_DATA || h->len < sizeof(d)) {
		T_FAIL("%s: message with tag %#x, %u bytes", p->name, h->tag,
		       h->len);
		return;
	}
	memcpy(&d, pl, sizeof(d));
	T_CHECK(d.seq == p->rseq, "%s: message %u, expected %u", p->name,
		d.seq, p->rseq);
	p->rseq = d.seq + 1;
	bad = d.len + sizeof(d) == h->len ?
	      t_verify(pl + sizeof(d), d.len, d.seed) : 0;
	T_CHECK(bad < 0, "%s: message %u wrong at %" PRId64, p->name, d.seq,
		bad);
}

/*
 * Messages taken off the ring while an op was waited for, handled at the
 * next drain() in their order: waiting for our send into a peer's full
 * ring without making room in ours would let two victims wait for each
 * other for ever (v1 and v1b did, once one of them was slowed down).
 */
struct held_msg {
	struct elan_recv_hdr h;
	uint8_t pl[ELAN_SEND_MAX];
};
static struct held_msg *held;
static size_t nheld, held_cap;

static void hold_messages(elan_ctx_t *c)
{
	struct elan_recv_hdr h;
	const void *pl;

	while (elan_recv(c, &h, &pl) == 1) {
		if (nheld == held_cap) {
			size_t cap = held_cap ? 2 * held_cap : 64;
			struct held_msg *m = realloc(held, cap * sizeof(*m));

			if (!m)
				return;		/* the ring keeps it */
			held = m;
			held_cap = cap;
		}
		held[nheld].h = h;
		memcpy(held[nheld].pl, pl, h.len);
		nheld++;
		elan_recv_release(c);
	}
}

/*
 * Handle the held messages in their order.  Each is copied out first:
 * on_message may send and wait, and the wait holds more (and may move
 * the array).
 */
static void run_held(void)
{
	static struct held_msg m;
	size_t k;

	for (k = 0; k < nheld; k++) {
		m.h = held[k].h;
		memcpy(m.pl, held[k].pl, m.h.len);
		on_message(&m.h, m.pl);
	}
	nheld = 0;
}

/*
 * Take every message and look at stray events.  A message is copied off
 * the ring and released before it is handled: handling one may wait,
 * and the wait takes what is on the ring (this one too, were it still
 * there: it would be handled twice).
 */
static void drain(void)
{
	struct elan_event ev;
	int i;

	while (elan_poll_event(ctx, &ev) == 1)
		if (t_nstash < T_STASH)
			t_stash[t_nstash++] = ev;
	for (i = 0; i < t_nstash; i++) {
		if (t_stash[i].type == ELAN_EV_DONE)
			continue;
		T_FAIL("unexpected event type %u status %u from %#x",
		       t_stash[i].type, t_stash[i].status, t_stash[i].src);
		t_stash[i--] = t_stash[--t_nstash];
	}
	hold_messages(ctx);
	run_held();
}

/*
 * The stage's file pause.NAME: stop for PAUSE_SECS right before the next
 * send, once.  Meanwhile our peers fill our receive ring and wait for
 * room in it, and those that also send to each other fill each other's:
 * when we go on, our send meets a full ring whose owner waits for ours.
 * Only a victim that takes its messages while it waits gets out of that
 * cycle (what an MPI progress engine does); one that does not hangs.
 */
#define PAUSE_SECS 3
static void pause_if_asked(const struct peer *p)
{
	char fname[256];

	snprintf(fname, sizeof(fname), "pause.%s", name);
	if (!h_file_exists(dir, fname))
		return;
	/* said (and flushed) before the file goes: the stage reads both */
	printf("victim %s: pausing %d s before a send to %s\n", name,
	       PAUSE_SECS, p->name);
	fflush(stdout);
	snprintf(fname, sizeof(fname), "%s/pause.%s", dir, name);
	unlink(fname);
	sleep(PAUSE_SECS);
}

/* One round of legitimate traffic with peer p, every result checked. */
static void one_round(struct peer *p)
{
	uint64_t i = p->iter++, seed = wseed(my_slot, p->vi.slot, i);
	uint64_t win = p->vi.arena + WIN_OFF + my_slot * SLOT_LEN;
	uint64_t fetch = ~0ULL, old = ~0ULL;
	struct data_hdr d;
	int64_t bad;
	int r;

	t_fill(src, SLOT_LEN, seed);
	r = t_put(ctx, p->vi.addr, src, win, SLOT_LEN);
	if (op_ended(p, "put", r))
		return;
	T_CHECK(r == 0, "put to %s: %s", p->name, t_st(r));
	if (r == 0) {
		p->mine.nput++;
		p->mine.last_seed = seed;
	}
	memset(back, 0, SLOT_LEN);
	r = t_get(ctx, p->vi.addr, back, win, SLOT_LEN);
	if (op_ended(p, "get", r))
		return;
	bad = r ? -1 : t_verify(back, SLOT_LEN, seed);
	T_CHECK(r == 0 && bad < 0, "get from %s: %s, wrong at %" PRId64,
		p->name, t_st(r), bad);

	r = t_atomic(ctx, p->vi.addr, p->vi.arena + CNT_FADD(my_slot),
		     ELAN_AOP_ADD, 1, 0, &fetch, &old);
	if (op_ended(p, "fetch-add", r))
		return;
	T_CHECK(r == 0 && old == p->mine.nfadd && fetch == old,
		"fetch-add at %s: %s, old %" PRIu64 " fetched %" PRIu64
		" want %" PRIu64, p->name, t_st(r), old, fetch, p->mine.nfadd);
	if (r == 0)
		p->mine.nfadd++;
	r = t_atomic(ctx, p->vi.addr, p->vi.arena + CNT_CSWAP(my_slot),
		     ELAN_AOP_CSWAP, p->mine.ncswap + 1, p->mine.ncswap, NULL,
		     &old);
	if (op_ended(p, "compare-swap", r))
		return;
	T_CHECK(r == 0 && old == p->mine.ncswap,
		"compare-swap at %s: %s, old %" PRIu64 " want %" PRIu64,
		p->name, t_st(r), old, p->mine.ncswap);
	if (r == 0)
		p->mine.ncswap++;

	pause_if_asked(p);
	d.seq = (uint32_t)p->mine.nsent;
	d.len = (uint32_t)(16 + (i * 37) % 3000);
	d.seed = seed ^ 0xa11ce;
	memcpy(src, &d, sizeof(d));
	t_fill(src + sizeof(d), d.len, d.seed);
	r = T_DO(ctx, NULL, elan_send(ctx, p->vi.addr, TAG_DATA, src,
				      sizeof(d) + d.len, CK, 0));
	if (op_ended(p, "send", r))
		return;
	T_CHECK(r == 0, "send to %s: %s", p->name, t_st(r));
	if (r == 0)
		p->mine.nsent++;
	rounds++;
}


static const char *region_of(uint64_t off)
{
	if (off < PG || off >= ARENA_LEN - PG)
		return "guard page";
	if (off >= WIN_OFF && off < WIN_OFF + NSLOTS * SLOT_LEN)
		return "window";
	if (off >= CNT_OFF && off < CNT_OFF + CNT_LEN)
		return "counters";
	if (off >= BAIT_OFF && off < BAIT_OFF + BAIT_LEN)
		return "bait";
	return "guard pattern";
}

static void corrupt(const char *how)
{
	uint64_t off;

	if (!strcmp(how, "guard"))
		off = 2 * PG + 17;
	else if (!strcmp(how, "page"))
		off = ARENA_LEN - PG + 99;
	else if (!strcmp(how, "window"))
		off = WIN_OFF + SLOT_LEN + 4500;
	else
		return;
	mprotect(arena, ARENA_LEN, PROT_READ | PROT_WRITE);
	arena[off] ^= 0x40;
	printf("victim %s: HOSTILE_CORRUPT=%s: flipped a bit at +%#" PRIx64
	       " (%s)\n", name, how, off, region_of(off));
}

/* Every byte of the arena against what it must hold. */
static void final_check(void)
{
	uint64_t off, ndiff = 0;
	int shown = 0, i;

	if (mprotect(arena, ARENA_LEN, PROT_READ))
		T_FAIL("mprotect of the guard pages: %s", strerror(errno));
	if (getenv("HOSTILE_CORRUPT"))
		corrupt(getenv("HOSTILE_CORRUPT"));
	/* What a peer without a FINAL wrote is unknown: its slot and its
	 * counter words are not checked (its missing FINAL failed already).
	 */
	for (i = 0; i < npeers; i++) {
		const struct peer *p = &peers[i];

		if (!p->known || p->final_got)
			continue;
		memcpy(shadow + WIN_OFF + p->vi.slot * SLOT_LEN,
		       arena + WIN_OFF + p->vi.slot * SLOT_LEN, SLOT_LEN);
		memcpy(shadow + CNT_FADD(p->vi.slot), arena + CNT_FADD(p->vi.slot), 8);
		memcpy(shadow + CNT_CSWAP(p->vi.slot), arena + CNT_CSWAP(p->vi.slot), 8);
		printf("victim %s: %s said no FINAL: its window slot and counters are not checked\n",
		       name, p->name);
	}
	for (off = 0; off < ARENA_LEN; off++) {
		if (arena[off] == shadow[off])
			continue;
		ndiff++;
		if (shown++ < 8)
			T_FAIL("arena +%#" PRIx64 " (%s) is %#04x, must be %#04x",
			       off, region_of(off), arena[off], shadow[off]);
	}
	T_CHECK(ndiff == 0, "%" PRIu64 " bytes of the arena changed", ndiff);
	printf("victim %s: checked %lu bytes of its arena, %" PRIu64
	       " differ\n", name, ARENA_LEN, ndiff);
}

static void publish_progress(void)
{
	char text[64], fname[256];

	snprintf(text, sizeof(text), "%" PRIu64 "\n", rounds);
	snprintf(fname, sizeof(fname), "%s.progress", name);
	h_write_file(dir, fname, text);
}

int main(int argc, char **argv)
{
	char fname[256], text[256];
	struct vinfo me;
	uint64_t cap;
	double stop_at = 0, last_pub = 0;
	int i, r, stopping = 0, active;

	if (argc < 4) {
		fprintf(stderr, "usage: hostile_victim DIR NAME SLOT [PEER...]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	dir = argv[1];
	name = argv[2];
	my_slot = (uint32_t)atoi(argv[3]);
	t_name = name;
	t_op_timeout = 30;
	/* HOSTILE_NO_HOLD=1: the old victims, which drained nothing here */
	if (!getenv("HOSTILE_NO_HOLD") || strcmp(getenv("HOSTILE_NO_HOLD"), "1"))
		t_while_waiting = hold_messages;
	t_start = t_now();
	for (i = 4; i < argc && npeers < MAXPEERS; i++)
		peers[npeers++].name = argv[i];
	cap = h_read_cap(dir);
	if (!cap || my_slot >= NSLOTS) {
		printf("victim %s: no DIR/cap or bad slot\n0 passed, 1 failed\n", name);
		return 1;
	}
	r = elan_open(cap, &ctx);
	if (r) {
		printf("victim %s: elan_open: %s\n0 passed, 1 failed\n", name,
		       strerror(-r));
		return 1;
	}
	arena = mmap(NULL, ARENA_LEN, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src = malloc(SLOT_LEN + 4096);
	back = malloc(SLOT_LEN + 4096);
	shadow = malloc(ARENA_LEN);
	if (arena == MAP_FAILED || !src || !back || !shadow) {
		printf("victim %s: out of memory\n0 passed, 1 failed\n", name);
		return 1;
	}
	me.addr = elan_addr(ctx);
	me.slot = my_slot;
	me.arena = h_u(arena);
	me.seed = 0xa5a5000000000000ULL | (uint64_t)me.addr << 8 | my_slot;
	t_fill(arena, ARENA_LEN, me.seed);
	memset(arena + CNT_OFF, 0, CNT_LEN);
	memcpy(shadow, arena, ARENA_LEN);
	mlock(arena, ARENA_LEN);
	me.bait_pfn = h_pfn(arena + BAIT_OFF);
	if (mprotect(arena, PG, PROT_NONE) ||
	    mprotect(arena + ARENA_LEN - PG, PG, PROT_NONE))
		T_FAIL("guard pages: %s", strerror(errno));
	snprintf(fname, sizeof(fname), "%s.pid", name);
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	h_write_file(dir, fname, text);	/* the stage stops and continues us */
	snprintf(text, sizeof(text), "%x %u %" PRIx64 " %" PRIx64 " %" PRIx64 "\n",
		 me.addr, me.slot, me.arena, me.seed, me.bait_pfn);
	snprintf(fname, sizeof(fname), "%s.info", name);
	if (h_write_file(dir, fname, text)) {
		printf("victim %s: cannot write %s/%s\n0 passed, 1 failed\n",
		       name, dir, fname);
		return 1;
	}
	printf("victim %s: context %#x slot %u arena %#" PRIx64 " (bait pfn %#"
	       PRIx64 ")\n", name, me.addr, my_slot, me.arena, me.bait_pfn);
	snprintf(fname, sizeof(fname), "stop.%s", name);

	for (;;) {
		drain();
		active = 0;
		for (i = 0; i < npeers; i++) {
			struct peer *p = &peers[i];

			if (!stopping)
				learn_peer(p);
			if (!p->known || p->final_sent || p->final_got ||
			    p->gone || broken)
				continue;
			active++;
			one_round(p);
			drain();
		}
		if (t_now() - last_pub > 0.5) {
			publish_progress();
			last_pub = t_now();
		}
		if (!stopping && h_file_exists(dir, fname)) {
			stopping = 1;
			stop_at = t_now();
			for (i = 0; i < npeers; i++)
				if (peers[i].known && !peers[i].final_sent &&
				    !peers[i].gone)
					send_final(&peers[i]);
		}
		if (broken)
			break;
		if (stopping) {
			int waiting = 0;

			for (i = 0; i < npeers; i++)
				if (peers[i].known && !peers[i].final_got &&
				    !peers[i].gone)
					waiting++;
			if (!waiting)
				break;
			if (t_now() - stop_at > 120) {
				T_FAIL("%d peers never said FINAL", waiting);
				break;
			}
		}
		if (!active)
			usleep(2000);
	}
	publish_progress();
	drain();
	final_check();
	T_CHECK(elan_state(ctx, NULL) == ELAN_CTX_ACTIVE, "context %s",
		elan_state_text(ctx));
	printf("victim %s: %" PRIu64 " rounds with %d peers, %" PRIu64
	       " messages from strangers\n", name, rounds, npeers, strangers);
	for (i = 0; i < npeers; i++)
		if (peers[i].known)
			printf("victim %s:   with %s: %" PRIu64 " puts, %" PRIu64
			       " fetch-adds, %" PRIu64 " messages sent, %" PRIu64
			       " received\n", name, peers[i].name,
			       peers[i].mine.nput, peers[i].mine.nfadd,
			       peers[i].mine.nsent, peers[i].nrecv);
	elan_close(ctx);
	printf("%s %s\n", t_failed ? "FAIL" : "ok  ", name);
	printf("%d passed, %d failed\n", t_failed ? 0 : 1, t_failed ? 1 : 0);
	return t_failed ? 1 : 0;
}
