// SPDX-License-Identifier: GPL-2.0
/*
 * elan_twonode: put, get, atomics and messages between two nodes.
 *
 *   elan_twonode target    DIR [-v]   (on one node, started first)
 *   elan_twonode initiator DIR [-v]   (on another node)
 *
 * DIR is a directory both nodes see (the repository share): the target
 * writes DIR/target.info with its NIC address and buffer addresses; the
 * initiator reads it and runs the tests, then asks the target (by a
 * message) to check its memory and to report what it saw.  Both print
 * "N passed, M failed" and exit 0 only if everything passed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "elan_testlib.h"

#define CAP	0x7770002ULL
#define BUFSZ	(16 * MiB)
#define NADD	200	/* fetch-adds per party */
#define NMSG	500
#define PG	4096UL

enum { TAG_ECHO = 1, TAG_ECHO_REPLY, TAG_CHECK, TAG_REPORT };

struct info {
	uint32_t addr;
	uint32_t pad;
	uint64_t buf, counter;
};

struct check_req {		/* TAG_CHECK */
	uint64_t off, len, seed;
	uint64_t adds_expected;	/* counter value the initiator expects */
};

struct report {			/* TAG_REPORT */
	int64_t first_bad;	/* -1: the buffer holds the pattern */
	uint64_t counter;
	uint32_t remote_events, echoes;
};

static uint64_t U(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* Wait for the next message; returns its payload copied into buf. */
static int recv_msg(elan_ctx_t *c, struct elan_recv_hdr *h, void *buf,
		    size_t max, double timeout, uint32_t *remote_events)
{
	double end = t_now() + timeout;
	struct elan_event ev;
	const void *p;
	int i;

	for (i = 0; i < t_nstash; i++)
		if (t_stash[i].type == ELAN_EV_REMOTE) {
			(*remote_events)++;
			t_stash[i--] = t_stash[--t_nstash];
		}
	for (;;) {
		while (elan_poll_event(c, &ev) == 1) {
			if (ev.type == ELAN_EV_REMOTE)
				(*remote_events)++;
			else if (t_nstash < T_STASH)
				t_stash[t_nstash++] = ev;
		}
		if (elan_recv(c, h, &p) == 1) {
			memcpy(buf, p, h->len < max ? h->len : max);
			elan_recv_release(c);
			return 0;
		}
		if (t_now() > end)
			return -ETIMEDOUT;
		elan_wait(c, 500);
	}
}

static int run_target(const char *dir)
{
	char path[1024], tmp[1100];
	struct elan_recv_hdr h;
	uint8_t msg[ELAN_SEND_MAX];
	uint32_t remote_events = 0, echoes = 0;
	struct info inf;
	elan_ctx_t *c;
	uint8_t *buf;
	uint64_t *counter;
	FILE *f;
	int r, i;

	t_name = "target";
	r = elan_open(CAP, &c);
	if (r) {
		printf("target: elan_open: %s\n0 passed, 1 failed\n", strerror(-r));
		return 1;
	}
	buf = mmap(NULL, BUFSZ, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	counter = mmap(NULL, PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(buf, 0, BUFSZ);
	inf = (struct info){ .addr = elan_addr(c), .buf = U(buf),
			     .counter = U(counter) };
	snprintf(path, sizeof(path), "%s/target.info", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%x %" PRIx64 " %" PRIx64 "\n", inf.addr, inf.buf,
			  inf.counter) < 0 || fclose(f) || rename(tmp, path)) {
		printf("target: cannot write %s\n0 passed, 1 failed\n", path);
		return 1;
	}
	printf("target: context %#x, buffer %#" PRIx64 ", counter %#" PRIx64 "\n",
	       inf.addr, inf.buf, inf.counter);

	/* Our own share of the racing fetch-adds, through our own NIC. */
	for (i = 0; i < NADD; i++) {
		r = t_atomic(c, elan_addr(c), U(counter), ELAN_AOP_ADD, 1, 0,
			     NULL, NULL);
		T_CHECK(r == 0, "local fetch-add: %s", elan_strerror(r));
	}

	for (;;) {
		r = recv_msg(c, &h, msg, sizeof(msg), 600, &remote_events);
		if (r) {
			T_FAIL("no message from the initiator for 600 s");
			break;
		}
		if (h.tag == TAG_ECHO) {
			echoes++;
			r = T_DO(c, NULL, elan_send(c, h.src, TAG_ECHO_REPLY, msg,
						    h.len, CK, 0));
			T_CHECK(r == 0, "echo: %s", elan_strerror(r));
		} else if (h.tag == TAG_CHECK) {
			struct check_req q;
			struct report rep = { .first_bad = -1 };

			memcpy(&q, msg, sizeof(q));
			if (q.off + q.len <= BUFSZ)
				rep.first_bad = t_verify(buf + q.off, q.len, q.seed);
			else
				rep.first_bad = 0;
			rep.counter = __atomic_load_n(counter, __ATOMIC_SEQ_CST);
			rep.remote_events = remote_events;
			rep.echoes = echoes;
			T_CHECK(rep.first_bad < 0, "buffer wrong at %" PRId64,
				rep.first_bad);
			T_CHECK(rep.counter == q.adds_expected,
				"counter %" PRIu64 ", want %" PRIu64, rep.counter,
				q.adds_expected);
			r = T_DO(c, NULL, elan_send(c, h.src, TAG_REPORT, &rep,
						    sizeof(rep), CK, 0));
			T_CHECK(r == 0, "report: %s", elan_strerror(r));
			break;
		}
	}
	unlink(path);
	printf("target: %u echoes, %u remote events\n", echoes, remote_events);
	elan_close(c);
	printf("%d passed, %d failed\n", t_failed ? 0 : 1, t_failed ? 1 : 0);
	return t_failed ? 1 : 0;
}

struct add_arg {
	struct info *inf;
	int errors;
};

static void *add_thread(void *p)
{
	struct add_arg *a = p;
	elan_ctx_t *c;
	int i, r;

	if (elan_open(CAP, &c)) {
		a->errors++;
		return NULL;
	}
	for (i = 0; i < NADD; i++) {
		r = t_atomic(c, a->inf->addr, a->inf->counter, ELAN_AOP_ADD, 1,
			     0, NULL, NULL);
		if (r)
			a->errors++;
	}
	elan_close(c);
	return NULL;
}

static int run_initiator(const char *dir)
{
	static const uint64_t sizes[] = {
		1, 3, 8, 100, 4095, 4096, 4097, 12345, 65536 + 7, 1 * MiB + 3,
		BUFSZ - 2 * PG,
	};
	char path[1024];
	struct elan_recv_hdr h;
	struct info inf;
	struct add_arg aa[2] = { { &inf, 0 }, { &inf, 0 } };
	pthread_t th[2];
	uint8_t *src, *back, msg[ELAN_SEND_MAX];
	uint32_t rev = 0;
	uint64_t old = 0, fetched = 0, last_seed = 0, last_off = 0, last_len = 0;
	elan_ctx_t *c;
	double end = t_now() + 300;
	unsigned int i;
	int r, pass = 0, fail = 0, before;
	FILE *f = NULL;

	snprintf(path, sizeof(path), "%s/target.info", dir);
	while (t_now() < end) {
		f = fopen(path, "r");
		if (f)
			break;
		usleep(200000);
	}
	if (!f || fscanf(f, "%x %" SCNx64 " %" SCNx64, &inf.addr, &inf.buf,
			 &inf.counter) != 3) {
		printf("initiator: no %s\n0 passed, 1 failed\n", path);
		return 1;
	}
	fclose(f);
	r = elan_open(CAP, &c);
	if (r) {
		printf("initiator: elan_open: %s\n0 passed, 1 failed\n",
		       strerror(-r));
		return 1;
	}
	printf("initiator: context %#x -> target %#x (%u nodes)\n",
	       elan_addr(c), inf.addr, elan_nodes(c));
	src = mmap(NULL, BUFSZ, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	back = mmap(NULL, BUFSZ, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

#define RESULT(name) do {						\
	printf("%s %s\n", t_failed > before ? "FAIL" : "ok  ", name);	\
	if (t_failed > before) fail++; else pass++;			\
	before = t_failed;						\
} while (0)
	before = 0;

	/* put / get round trips, unaligned on both sides */
	t_name = "put/get";
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t len = sizes[i], so = (len * 7 + 3) % PG,
			 ro = (len * 13 + 5) % PG, seed = 1000 + i;
		double t0 = t_now(), tp, tg;
		int64_t bad;

		if (ro + len > BUFSZ)
			ro = 0;
		t_fill(src + so, len, seed);
		r = t_put(c, inf.addr, src + so, inf.buf + ro, len);
		tp = t_now() - t0;
		T_CHECK(r == 0, "put %" PRIu64 " B: %s", len, elan_strerror(r));
		memset(back, 0, len + PG);
		t0 = t_now();
		r = t_get(c, inf.addr, back + 1, inf.buf + ro, len);
		tg = t_now() - t0;
		T_CHECK(r == 0, "get %" PRIu64 " B: %s", len, elan_strerror(r));
		bad = t_verify(back + 1, len, seed);
		T_CHECK(bad < 0, "%" PRIu64 " B round trip wrong at %" PRId64,
			len, bad);
		if (len >= MiB)
			T_INFO("%" PRIu64 " B: put %.1f MB/s, get %.1f MB/s",
			       len, len / tp / 1e6, len / tg / 1e6);
		last_seed = seed;
		last_off = ro;
		last_len = len;
	}
	RESULT("put/get 1 B .. 16 MiB across nodes");

	/* a put with a remote event */
	t_name = "remote event";
	r = T_DO(c, NULL, elan_put(c, inf.addr, src, inf.buf + BUFSZ - 8, 8,
				   CK, ELAN_CMDF_REMOTE_EVENT));
	T_CHECK(r == 0, "put: %s", elan_strerror(r));
	RESULT("put with a remote event");

	/* atomics: every op on the remote counter's neighbour word */
	t_name = "atomics";
	{
		uint64_t w = inf.counter + 8;

		r = t_atomic(c, inf.addr, w, ELAN_AOP_SWAP, 10, 0, NULL, &old);
		r |= t_atomic(c, inf.addr, w, ELAN_AOP_ADD, 5, 0, &fetched, &old);
		T_CHECK(!r && old == 10 && fetched == 10, "add: old %" PRIu64, old);
		r = t_atomic(c, inf.addr, w, ELAN_AOP_CSWAP, 99, 15, NULL, &old);
		T_CHECK(!r && old == 15, "cswap: old %" PRIu64, old);
		r = t_atomic(c, inf.addr, w, ELAN_AOP_XOR, 3, 0, NULL, &old);
		r |= t_atomic(c, inf.addr, w, ELAN_AOP_AND, 0xf0, 0, NULL, &old);
		r |= t_atomic(c, inf.addr, w, ELAN_AOP_OR, 1, 0, NULL, &old);
		T_CHECK(!r && old == ((99 ^ 3) & 0xf0), "xor/and/or: old %" PRIu64,
			old);
		r = t_get(c, inf.addr, &old, w, 8);
		T_CHECK(!r && old == (((99 ^ 3) & 0xf0) | 1),
			"final value %" PRIu64, old);
	}
	RESULT("atomics: every op across nodes");

	/* racing fetch-adds: 2 contexts here and the target itself */
	t_name = "racing atomics";
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, add_thread, &aa[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	T_CHECK(!aa[0].errors && !aa[1].errors, "%d errors",
		aa[0].errors + aa[1].errors);
	RESULT("racing fetch-adds from two nodes");

	/* messages: echoes in order */
	t_name = "send";
	for (i = 0; i < NMSG; i++) {
		uint32_t len = 8 + i * 37 % (ELAN_SEND_MAX - 8), seq;

		t_fill(src, len, i);
		memcpy(src, &i, 4);
		r = T_DO(c, NULL, elan_send(c, inf.addr, TAG_ECHO, src, len, CK, 0));
		if (r) {
			T_FAIL("send %u: %s", i, elan_strerror(r));
			break;
		}
		r = recv_msg(c, &h, msg, sizeof(msg), 120, &rev);
		if (r || h.tag != TAG_ECHO_REPLY || h.len != len ||
		    h.src != inf.addr) {
			T_FAIL("echo %u: %d tag %u len %u", i, r, h.tag, h.len);
			break;
		}
		memcpy(&seq, msg, 4);
		if (seq != i || t_verify(msg + 4, len - 4, i) !=
		    t_verify(src + 4, len - 4, i)) {
			T_FAIL("echo %u: wrong payload (seq %u)", i, seq);
			break;
		}
	}
	RESULT("send: echoes in order");

	/* the target checks its memory and the counter */
	t_name = "report";
	{
		struct check_req q = { .off = last_off, .len = last_len,
				       .seed = last_seed,
				       .adds_expected = 3 * NADD };
		struct report rep;

		r = T_DO(c, NULL, elan_send(c, inf.addr, TAG_CHECK, &q,
					    sizeof(q), CK, 0));
		T_CHECK(r == 0, "check request: %s", elan_strerror(r));
		r = recv_msg(c, &h, msg, sizeof(msg), 300, &rev);
		if (r || h.tag != TAG_REPORT) {
			T_FAIL("no report from the target");
			memset(&rep, 0, sizeof(rep));
			rep.first_bad = -1;
			rep.counter = 3 * NADD;
			rep.remote_events = 1;
			rep.echoes = NMSG;
		} else {
			memcpy(&rep, msg, sizeof(rep));
		}
		T_CHECK(rep.first_bad < 0, "target memory wrong at %" PRId64,
			rep.first_bad);
		T_CHECK(rep.counter == 3 * NADD, "counter %" PRIu64 ", want %d",
			rep.counter, 3 * NADD);
		T_CHECK(rep.remote_events >= 1, "target saw %u remote events",
			rep.remote_events);
		T_CHECK(rep.echoes == NMSG, "target echoed %u", rep.echoes);
	}
	RESULT("target: memory, counter, remote event");
	{
		struct elan_counters k;

		if (!elan_counters(c, &k))
			printf("counters: loaded %llu faults %llu invalidations %llu pages_referenced %llu\n",
			       k.translations_loaded, k.faults, k.invalidations,
			       k.pages_referenced);
		t_name = "pages";
		T_CHECK(k.pages_referenced == 0, "pages_referenced %llu",
			k.pages_referenced);
		RESULT("no page referenced");
	}
	elan_close(c);
	printf("%d passed, %d failed\n", pass, fail);
	return fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 3; i < argc; i++)
		if (!strcmp(argv[i], "-v"))
			t_verbose = 1;
	if (argc < 3) {
		fprintf(stderr, "usage: %s target|initiator DIR [-v]\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "target"))
		return run_target(argv[2]);
	if (!strcmp(argv[1], "initiator"))
		return run_initiator(argv[2]);
	fprintf(stderr, "usage: %s target|initiator DIR [-v]\n", argv[0]);
	return 2;
}
