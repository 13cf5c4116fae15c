/*
 * The Elan UCT transport (uct_elan/) in one guest, at the UCT level:
 * every device atomic (32 and 64 bits, fetching and not) checked against
 * memory; put, get and active messages of each kind byte for byte; flush
 * with a completion; the event fd (armed, woken by a message); pending
 * requests when the command queue is full; active messages in order
 * around the pending queue; and the errors: a bad remote
 * address (UCS_ERR_INVALID_ADDR), a context that does not exist and a
 * peer process that exited (an error, within a bound, never a hang).
 *
 *   uct_elan_test [-v]
 *
 * Built by tests/ucx/check against the UCX of uct_elan/build.sh.  Prints
 * TAP-style "ok N - name" / "not ok N - name: why" lines and
 * "N passed, M failed"; exit status 0 only when all passed.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct node {
	ucs_async_context_t *async;
	uct_worker_h worker;
	uct_component_h comp;
	uct_md_h md;
	uct_iface_h iface;
	uct_iface_attr_t attr;
	uint32_t addr;
	int ep_errors;
	ucs_status_t ep_error;
};

static int tap_n, tap_fail;
static char why[512];

static void result(const char *name, int bad)
{
	tap_n++;
	if (bad) {
		tap_fail++;
		printf("not ok %d - %s: %s\n", tap_n, name, why);
	} else {
		printf("ok %d - %s\n", tap_n, name);
	}
	fflush(stdout);
	why[0] = '\0';
}

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		snprintf(why, sizeof(why), __VA_ARGS__);		\
		return 1;						\
	}								\
} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static ucs_status_t on_ep_error(void *arg, uct_ep_h ep, ucs_status_t status)
{
	struct node *n = arg;

	n->ep_errors++;
	n->ep_error = status;
	return UCS_OK;
}

static int node_open(struct node *n)
{
	uct_component_h *comps;
	unsigned ncomps, i;
	uct_md_config_t *md_config;
	uct_iface_config_t *if_config;
	uct_iface_params_t params;
	ucs_status_t st;

	memset(n, 0, sizeof(*n));
	st = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &n->async);
	CHECK(st == UCS_OK, "async: %s", ucs_status_string(st));
	st = uct_worker_create(n->async, UCS_THREAD_MODE_SINGLE, &n->worker);
	CHECK(st == UCS_OK, "worker: %s", ucs_status_string(st));
	st = uct_query_components(&comps, &ncomps);
	CHECK(st == UCS_OK, "components: %s", ucs_status_string(st));
	for (i = 0; i < ncomps; i++) {
		uct_component_attr_t a = { .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME };

		uct_component_query(comps[i], &a);
		if (!strcmp(a.name, "elan"))
			n->comp = comps[i];
	}
	uct_release_component_list(comps);
	CHECK(n->comp != NULL, "no UCT component \"elan\" (is this UCX the one of uct_elan/build.sh?)");
	st = uct_md_config_read(n->comp, NULL, NULL, &md_config);
	CHECK(st == UCS_OK, "md config: %s", ucs_status_string(st));
	st = uct_md_open(n->comp, "elan", md_config, &n->md);
	uct_config_release(md_config);
	CHECK(st == UCS_OK, "md open: %s", ucs_status_string(st));
	st = uct_md_iface_config_read(n->md, "elan", NULL, NULL, &if_config);
	CHECK(st == UCS_OK, "iface config: %s", ucs_status_string(st));
	memset(&params, 0, sizeof(params));
	params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
			    UCT_IFACE_PARAM_FIELD_DEVICE |
			    UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
			    UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
			    UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
	params.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
	params.mode.device.tl_name = "elan";
	params.mode.device.dev_name = "elan0";
	params.err_handler = on_ep_error;
	params.err_handler_arg = n;
	params.err_handler_flags = 0;
	st = uct_iface_open(n->md, n->worker, &params, if_config, &n->iface);
	uct_config_release(if_config);
	CHECK(st == UCS_OK, "iface open: %s", ucs_status_string(st));
	st = uct_iface_query(n->iface, &n->attr);
	CHECK(st == UCS_OK, "iface query: %s", ucs_status_string(st));
	CHECK(n->attr.iface_addr_len == sizeof(uint32_t), "iface address of %zu bytes",
	      n->attr.iface_addr_len);
	uct_iface_get_address(n->iface, (uct_iface_addr_t *)&n->addr);
	uct_iface_progress_enable(n->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
	return 0;
}

static void node_close(struct node *n)
{
	if (n->iface)
		uct_iface_close(n->iface);
	if (n->md)
		uct_md_close(n->md);
	if (n->worker)
		uct_worker_destroy(n->worker);
	if (n->async)
		ucs_async_context_destroy(n->async);
}

static uct_ep_h ep_to(struct node *n, uint32_t addr)
{
	uct_ep_params_t p;
	uct_ep_h ep = NULL;
	ucs_status_t st;

	memset(&p, 0, sizeof(p));
	p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
		       UCT_EP_PARAM_FIELD_IFACE_ADDR;
	p.iface = n->iface;
	p.dev_addr = (const uct_device_addr_t *)"";
	p.iface_addr = (const uct_iface_addr_t *)&addr;
	st = uct_ep_create(&p, &ep);
	if (st != UCS_OK) {
		snprintf(why, sizeof(why), "ep create: %s", ucs_status_string(st));
		return NULL;
	}
	return ep;
}

struct wait_comp {
	uct_completion_t c;
	int done;
};

static void comp_cb(uct_completion_t *c)
{
	((struct wait_comp *)c)->done = 1;
}

static void comp_init(struct wait_comp *w)
{
	w->c.func = comp_cb;
	w->c.count = 1;
	w->c.status = UCS_OK;
	w->done = 0;
}

/* Progress until w completes (st: what the op returned); its status, or
 * UCS_ERR_TIMED_OUT after secs */
static ucs_status_t comp_wait(struct node *n, struct wait_comp *w,
			      ucs_status_t st, double secs)
{
	double t0 = now();

	if (st == UCS_OK)
		return UCS_OK;
	if (st != UCS_INPROGRESS)
		return st;
	while (!w->done) {
		uct_worker_progress(n->worker);
		if (now() - t0 > secs)
			return UCS_ERR_TIMED_OUT;
	}
	return w->c.status;
}

static ucs_status_t flush_ep(struct node *n, uct_ep_h ep, double secs)
{
	struct wait_comp w;
	ucs_status_t st;
	double t0 = now();

	for (;;) {
		comp_init(&w);
		st = uct_ep_flush(ep, 0, &w.c);
		if (st != UCS_ERR_NO_RESOURCE)
			break;
		uct_worker_progress(n->worker);
		if (now() - t0 > secs)
			return UCS_ERR_TIMED_OUT;
	}
	return comp_wait(n, &w, st, secs);
}

static uint64_t rnd64(void)
{
	return ((uint64_t)random() << 40) ^ ((uint64_t)random() << 20) ^ (uint64_t)random();
}

static uint64_t ref_op(int op, uint64_t v, uint64_t x, uint64_t cmp, int size)
{
	uint64_t r;

	switch (op) {
	case UCT_ATOMIC_OP_ADD: r = v + x; break;
	case UCT_ATOMIC_OP_AND: r = v & x; break;
	case UCT_ATOMIC_OP_OR: r = v | x; break;
	case UCT_ATOMIC_OP_XOR: r = v ^ x; break;
	case UCT_ATOMIC_OP_SWAP: r = x; break;
	default: r = v == cmp ? x : v; break;
	}
	return size == 4 ? (uint32_t)r : r;
}

static const char *const op_names[] = { "add", "and", "or", "xor", "swap", "cswap" };

/* Every device atomic, 32 and 64 bits, fetching and not, on our own
 * memory through the NIC (an ep to our own interface) */
static int t_atomics(struct node *n)
{
	static uint64_t words[4] __attribute__((aligned(64)));
	uct_ep_h ep = ep_to(n, n->addr);
	int size, op, fetch, k;

	if (!ep)
		return 1;
	CHECK((n->attr.cap.flags & UCT_IFACE_FLAG_ATOMIC_DEVICE) &&
	      n->attr.cap.atomic32.fop_flags == n->attr.cap.atomic64.fop_flags &&
	      (n->attr.cap.atomic64.fop_flags & UCS_BIT(UCT_ATOMIC_OP_CSWAP)),
	      "the interface does not offer the whole set of device atomics");
	for (size = 4; size <= 8; size += 4) {
		for (op = UCT_ATOMIC_OP_ADD; op <= UCT_ATOMIC_OP_CSWAP; op++) {
			for (fetch = 0; fetch < 2; fetch++) {
				if (!fetch && op >= UCT_ATOMIC_OP_SWAP)
					continue;	/* no post form */
				for (k = 0; k < 4; k++) {
					uint64_t init = rnd64(), x = rnd64(), cmp, want, got;
					uint64_t res64 = 0x5555555555555555ull;
					uint32_t res32 = 0x55555555u;
					volatile uint32_t *w32 = (uint32_t *)(void *)&words[1] + (k & 1);
					struct wait_comp w;
					ucs_status_t st;

					if (size == 4) {
						init = (uint32_t)init;
						x = (uint32_t)x;
					}
					cmp = (k < 2) ? init : (size == 4 ? (uint32_t)rnd64() : rnd64());
					want = ref_op(op, init, x, cmp, size);
					words[0] = words[2] = 0xa5a5a5a5a5a5a5a5ull;
					words[1] = 0xa5a5a5a5a5a5a5a5ull;
					if (size == 4)
						*w32 = (uint32_t)init;
					else
						words[1] = init;
					comp_init(&w);
					if (op == UCT_ATOMIC_OP_CSWAP && size == 8)
						st = uct_ep_atomic_cswap64(ep, cmp, x, (uintptr_t)&words[1], 0, &res64, &w.c);
					else if (op == UCT_ATOMIC_OP_CSWAP)
						st = uct_ep_atomic_cswap32(ep, (uint32_t)cmp, (uint32_t)x, (uintptr_t)w32, 0, &res32, &w.c);
					else if (fetch && size == 8)
						st = uct_ep_atomic64_fetch(ep, op, x, &res64, (uintptr_t)&words[1], 0, &w.c);
					else if (fetch)
						st = uct_ep_atomic32_fetch(ep, op, (uint32_t)x, &res32, (uintptr_t)w32, 0, &w.c);
					else if (size == 8)
						st = uct_ep_atomic64_post(ep, op, x, (uintptr_t)&words[1], 0);
					else
						st = uct_ep_atomic32_post(ep, op, (uint32_t)x, (uintptr_t)w32, 0);
					st = comp_wait(n, &w, st, 10);
					if (st == UCS_OK && !fetch)
						st = flush_ep(n, ep, 10);
					CHECK(st == UCS_OK, "%d-bit %s%s: %s", size * 8, fetch ? "fetch-" : "",
					      op_names[op], ucs_status_string(st));
					got = size == 4 ? *w32 : words[1];
					CHECK(got == want, "%d-bit %s%s: memory %#llx, want %#llx", size * 8,
					      fetch ? "fetch-" : "", op_names[op],
					      (unsigned long long)got, (unsigned long long)want);
					if (fetch) {
						got = size == 4 ? res32 : res64;
						CHECK(got == init, "%d-bit fetch-%s: fetched %#llx, want the old %#llx",
						      size * 8, op_names[op], (unsigned long long)got,
						      (unsigned long long)init);
					}
					CHECK(words[0] == 0xa5a5a5a5a5a5a5a5ull &&
					      words[2] == 0xa5a5a5a5a5a5a5a5ull &&
					      (size == 8 || *((uint32_t *)(void *)&words[1] + !(k & 1)) == 0xa5a5a5a5u),
					      "%d-bit %s: the bytes around the word changed", size * 8, op_names[op]);
				}
			}
		}
	}
	uct_ep_destroy(ep);
	return 0;
}

static size_t pack_cb(void *dest, void *arg)
{
	struct iovec *v = arg;

	memcpy(dest, v->iov_base, v->iov_len);
	return v->iov_len;
}

static void unpack_cb(void *arg, const void *data, size_t length)
{
	memcpy(arg, data, length);
}

static int am_count;
static size_t am_len;
static unsigned char am_data[8192];

static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
	am_count++;
	am_len = length;
	memcpy(am_data, data, length < sizeof(am_data) ? length : sizeof(am_data));
	return UCS_OK;
}

static void fill(unsigned char *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 7 + seed);
}

/* put short/bcopy/zcopy, get bcopy/zcopy, am short/bcopy: byte for byte */
static int t_rma_am(struct node *n)
{
	enum { BIG = 1 << 20 };
	unsigned char *src = malloc(BIG), *dst = malloc(BIG + 2);
	uct_ep_h ep = ep_to(n, n->addr);
	struct wait_comp w;
	struct iovec v;
	uct_iov_t iov;
	ucs_status_t st;
	size_t len;
	ssize_t sl;
	double t0;

	if (!ep || !src || !dst)
		return 1;
	uct_iface_set_am_handler(n->iface, 5, am_cb, NULL, 0);
	/* put short, 8 B */
	fill(src, BIG, 1);
	memset(dst, 0, BIG + 2);
	st = uct_ep_put_short(ep, src, 8, (uintptr_t)(dst + 1), 0);
	CHECK(st == UCS_OK, "put_short: %s", ucs_status_string(st));
	CHECK(flush_ep(n, ep, 10) == UCS_OK && !memcmp(dst + 1, src, 8) && dst[0] == 0 && dst[9] == 0,
	      "put_short: data differ after flush");
	/* put bcopy, seg size */
	len = n->attr.cap.put.max_bcopy;
	fill(src, len, 2);
	v.iov_base = src;
	v.iov_len = len;
	sl = uct_ep_put_bcopy(ep, pack_cb, &v, (uintptr_t)(dst + 1), 0);
	CHECK(sl == (ssize_t)len, "put_bcopy of %zu: %zd", len, sl);
	CHECK(flush_ep(n, ep, 10) == UCS_OK && !memcmp(dst + 1, src, len) && dst[len + 1] == 0,
	      "put_bcopy: data differ after flush");
	/* put zcopy, 1 MiB, odd offsets, no registration */
	fill(src, BIG, 3);
	iov.buffer = src + 1;
	iov.length = BIG - 1;
	iov.memh = UCT_MEM_HANDLE_NULL;
	iov.stride = 0;
	iov.count = 1;
	comp_init(&w);
	st = comp_wait(n, &w, uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)(dst + 1), 0, &w.c), 30);
	CHECK(st == UCS_OK && !memcmp(dst + 1, src + 1, BIG - 1), "put_zcopy 1 MiB: %s",
	      st == UCS_OK ? "data differ" : ucs_status_string(st));
	/* get bcopy, get zcopy */
	fill(dst, BIG, 4);
	memset(src, 0, BIG);
	comp_init(&w);
	st = comp_wait(n, &w, uct_ep_get_bcopy(ep, unpack_cb, src, n->attr.cap.get.max_bcopy,
					       (uintptr_t)dst, 0, &w.c), 10);
	CHECK(st == UCS_OK && !memcmp(src, dst, n->attr.cap.get.max_bcopy), "get_bcopy: %s",
	      st == UCS_OK ? "data differ" : ucs_status_string(st));
	memset(src, 0, BIG);
	iov.buffer = src;
	iov.length = BIG;
	comp_init(&w);
	st = comp_wait(n, &w, uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)dst, 0, &w.c), 30);
	CHECK(st == UCS_OK && !memcmp(src, dst, BIG), "get_zcopy 1 MiB: %s",
	      st == UCS_OK ? "data differ" : ucs_status_string(st));
	/* am short and bcopy to ourselves */
	fill(src, 8192, 5);
	am_count = 0;
	st = uct_ep_am_short(ep, 5, 0x1122334455667788ull, src, 100);
	CHECK(st == UCS_OK, "am_short: %s", ucs_status_string(st));
	v.iov_base = src;
	v.iov_len = n->attr.cap.am.max_bcopy;
	sl = uct_ep_am_bcopy(ep, 5, pack_cb, &v, 0);
	CHECK(sl == (ssize_t)v.iov_len, "am_bcopy of %zu: %zd", v.iov_len, sl);
	t0 = now();
	while (am_count < 2 && now() - t0 < 10) {
		uct_worker_progress(n->worker);
		if (am_count == 1 && am_len == 108) {
			uint64_t h;

			memcpy(&h, am_data, 8);
			CHECK(h == 0x1122334455667788ull && !memcmp(am_data + 8, src, 100),
			      "am_short: header or payload differ");
			am_len = 0;
		}
	}
	CHECK(am_count == 2 && am_len == v.iov_len && !memcmp(am_data, src, am_len),
	      "am_bcopy: %d messages, last of %zu bytes", am_count, am_len);
	CHECK(flush_ep(n, ep, 10) == UCS_OK, "flush");
	uct_iface_set_am_handler(n->iface, 5, NULL, NULL, 0);
	uct_ep_destroy(ep);
	free(src);
	free(dst);
	return 0;
}

/* A bad remote address: a named error (UCS_ERR_INVALID_ADDR), for ops
 * with a completion and, through the error handler, for those without */
static int t_bad_address(struct node *n)
{
	uct_ep_h ep = ep_to(n, n->addr);
	char *hole = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char buf[64] = "x";
	struct wait_comp w;
	uct_iov_t iov = { .buffer = buf, .length = sizeof(buf), .memh = UCT_MEM_HANDLE_NULL,
			  .count = 1 };
	ucs_status_t st;
	uint64_t res;
	double t0;

	if (!ep || hole == MAP_FAILED)
		return 1;
	munmap(hole, 4096);
	comp_init(&w);
	st = comp_wait(n, &w, uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)hole, 0, &w.c), 10);
	CHECK(st == UCS_ERR_INVALID_ADDR, "put_zcopy to an unmapped page: %s", ucs_status_string(st));
	comp_init(&w);
	st = comp_wait(n, &w, uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)hole, 0, &w.c), 10);
	CHECK(st == UCS_ERR_INVALID_ADDR, "get_zcopy from an unmapped page: %s", ucs_status_string(st));
	comp_init(&w);
	st = comp_wait(n, &w, uct_ep_atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, 1, &res, (uintptr_t)hole,
						    0, &w.c), 10);
	CHECK(st == UCS_ERR_INVALID_ADDR, "fetch-add on an unmapped page: %s", ucs_status_string(st));
	n->ep_errors = 0;
	st = uct_ep_put_short(ep, buf, 8, (uintptr_t)hole, 0);
	CHECK(st == UCS_OK, "put_short: %s", ucs_status_string(st));
	t0 = now();
	while (n->ep_errors == 0 && now() - t0 < 10)
		uct_worker_progress(n->worker);
	CHECK(n->ep_errors == 1 && n->ep_error == UCS_ERR_INVALID_ADDR,
	      "put_short to an unmapped page: %d errors reported, last %s", n->ep_errors,
	      ucs_status_string(n->ep_error));
	uct_ep_destroy(ep);
	return 0;
}

/* A context that was never attached: UCS_ERR_UNREACHABLE, at once; the
 * error handler gets UCS_ERR_CONNECTION_RESET */
static int t_no_context(struct node *n)
{
	uint32_t nobody = (n->addr & 0xffff0000u) | 31u;
	uct_ep_h ep;
	struct wait_comp w;
	char buf[8];
	uct_iov_t iov = { .buffer = buf, .length = 8, .memh = UCT_MEM_HANDLE_NULL, .count = 1 };
	ucs_status_t st;

	CHECK((n->addr & 0xffff) != 31, "our own context is 31");
	ep = ep_to(n, nobody);
	if (!ep)
		return 1;
	n->ep_errors = 0;
	comp_init(&w);
	st = comp_wait(n, &w, uct_ep_put_zcopy(ep, &iov, 1, 4096, 0, &w.c), 10);
	CHECK(st == UCS_ERR_UNREACHABLE, "put to context 31 of our node: %s", ucs_status_string(st));
	/* the error handler hears of a peer gone, as UCX's transports say it */
	CHECK(n->ep_errors == 1 && n->ep_error == UCS_ERR_CONNECTION_RESET,
	      "the error handler was called %d times (want 1), last with %s (want %s)",
	      n->ep_errors, ucs_status_string(n->ep_error),
	      ucs_status_string(UCS_ERR_CONNECTION_RESET));
	uct_ep_destroy(ep);
	return 0;
}

/* A peer process that exited: its ops, and ep_check, end in an error */
static int t_peer_gone(struct node *n, uint32_t peer, pid_t child, int go_fd)
{
	uct_ep_h ep = ep_to(n, peer);
	uint64_t word = 0, res;
	struct wait_comp w;
	ucs_status_t st;
	int status;
	double t0;

	if (!ep)
		return 1;
	/* the peer is there: a get of its word works */
	comp_init(&w);
	st = comp_wait(n, &w, uct_ep_atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, 0, &res, 4096, 0, &w.c), 10);
	CHECK(st == UCS_ERR_INVALID_ADDR || st == UCS_OK,
	      "an atomic at the live peer's page 1: %s", ucs_status_string(st));
	n->ep_errors = 0;
	(void)!write(go_fd, "x", 1);
	CHECK(waitpid(child, &status, 0) == child, "waitpid");
	t0 = now();
	comp_init(&w);
	st = comp_wait(n, &w, uct_ep_atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, 1, &word, 4096, 0, &w.c), 10);
	CHECK(st == UCS_ERR_UNREACHABLE || st == UCS_ERR_CONNECTION_RESET,
	      "fetch-add at the exited peer: %s (after %.1f s)", ucs_status_string(st), now() - t0);
	CHECK(n->ep_errors == 1, "the error handler was called %d times, want 1", n->ep_errors);
	uct_ep_destroy(ep);
	/* ep_check on a fresh ep to it reports through the error handler */
	ep = ep_to(n, peer);
	if (!ep)
		return 1;
	n->ep_errors = 0;
	st = uct_ep_check(ep, 0, NULL);
	CHECK(st == UCS_OK, "ep_check: %s", ucs_status_string(st));
	t0 = now();
	while (n->ep_errors == 0 && now() - t0 < 10)
		uct_worker_progress(n->worker);
	CHECK(n->ep_errors == 1, "ep_check of the exited peer: %d errors reported", n->ep_errors);
	uct_ep_destroy(ep);
	return 0;
}

/* The event fd: armed when idle, readable once a message came */
static int t_event_fd(struct node *n)
{
	uct_ep_h ep = ep_to(n, n->addr);
	struct pollfd p = { .events = POLLIN };
	ucs_status_t st;
	int r;

	if (!ep)
		return 1;
	CHECK(n->attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD, "no UCT_IFACE_FLAG_EVENT_FD");
	st = uct_iface_event_fd_get(n->iface, &p.fd);
	CHECK(st == UCS_OK, "event_fd_get: %s", ucs_status_string(st));
	while (uct_worker_progress(n->worker))
		;
	st = uct_iface_event_arm(n->iface, UCT_EVENT_SEND_COMP | UCT_EVENT_RECV);
	CHECK(st == UCS_OK, "arm when idle: %s", ucs_status_string(st));
	r = poll(&p, 1, 0);
	CHECK(r == 0, "the fd is readable with nothing there");
	uct_iface_set_am_handler(n->iface, 6, am_cb, NULL, 0);
	am_count = 0;
	st = uct_ep_am_short(ep, 6, 42, NULL, 0);
	CHECK(st == UCS_OK, "am_short: %s", ucs_status_string(st));
	r = poll(&p, 1, 10000);
	CHECK(r == 1, "the fd did not wake within 10 s of a message");
	st = uct_iface_event_arm(n->iface, UCT_EVENT_SEND_COMP | UCT_EVENT_RECV);
	CHECK(st == UCS_ERR_BUSY, "arm with a message waiting: %s, want BUSY", ucs_status_string(st));
	while (am_count == 0)
		uct_worker_progress(n->worker);
	CHECK(flush_ep(n, ep, 10) == UCS_OK, "flush");
	uct_iface_set_am_handler(n->iface, 6, NULL, NULL, 0);
	uct_ep_destroy(ep);
	return 0;
}

struct pend {
	uct_pending_req_t r;
	uct_ep_h ep;
	uint64_t *dst;
	int done;
};

static ucs_status_t pend_cb(uct_pending_req_t *r)
{
	struct pend *p = (struct pend *)r;
	static uint64_t v = 0x77;
	ucs_status_t st = uct_ep_put_short(p->ep, &v, 8, (uintptr_t)p->dst, 0);

	if (st == UCS_OK)
		p->done = 1;
	return st;
}

/* Back-pressure: puts until the interface has no room (256 commands in
 * flight), then a pending request that runs once there is room again */
static int t_pending(struct node *n)
{
	static uint64_t dst[2], one = 1;
	uct_ep_h ep = ep_to(n, n->addr);
	struct pend p = { .dst = &dst[1] };
	ucs_status_t st = UCS_OK;
	double t0;
	int i;

	if (!ep)
		return 1;
	p.ep = ep;
	p.r.func = pend_cb;
	for (i = 0; i < 100000 && (st = uct_ep_put_short(ep, &one, 8, (uintptr_t)&dst[0], 0)) == UCS_OK; i++)
		;
	CHECK(st == UCS_ERR_NO_RESOURCE, "no back-pressure after %d puts: %s", i, ucs_status_string(st));
	/* room comes back only in progress: the add right after the refusal
	 * queues the request (UCS_ERR_BUSY would mean room came back) */
	st = uct_ep_pending_add(ep, &p.r, 0);
	CHECK(st == UCS_OK, "pending_add right after UCS_ERR_NO_RESOURCE: %s", ucs_status_string(st));
	t0 = now();
	while (!p.done && now() - t0 < 20)
		uct_worker_progress(n->worker);
	CHECK(p.done, "the pending request never ran (20 s)");
	CHECK(flush_ep(n, ep, 20) == UCS_OK && dst[1] == 0x77, "flush after it, or its data");
	uct_ep_destroy(ep);
	printf("# the interface had no room after %d puts\n", i);
	return 0;
}

/* Active messages in order around the pending queue (UCX's
 * test_uct_pending.send_ooo_with_pending, sharpened): numbered messages
 * to a receiver of our own process (a second interface); the sender fills
 * its room, queues a pending request for the refused number, which
 * declines a few times when it runs (UCS_ERR_NO_RESOURCE while there is
 * room, as a request that waits for another resource does); meanwhile
 * every new am_short of that ep must be refused, and the receiver must
 * see every number once, in order */
#define ORDER_AM 9

struct order_rx {
	uint64_t next;		/* the number due */
	uint64_t got;
	uint64_t bad, bad_due;	/* the first one out of order (bad: + 1) */
};

static ucs_status_t order_am_cb(void *arg, void *data, size_t len, unsigned flags)
{
	struct order_rx *o = arg;
	uint64_t seq;

	(void)flags;
	memcpy(&seq, data, sizeof(seq));
	if (len != sizeof(seq) || seq != o->next) {
		if (!o->bad) {
			o->bad = seq + 1;
			o->bad_due = o->next;
		}
	}
	o->next = seq + 1;
	o->got++;
	return UCS_OK;
}

struct order_req {
	uct_pending_req_t r;
	uct_ep_h ep;
	uint64_t seq;
	int declines;
	int sent;
};

static ucs_status_t order_pend_cb(uct_pending_req_t *r)
{
	struct order_req *q = (struct order_req *)r;
	ucs_status_t st;

	if (q->declines > 0) {
		q->declines--;
		return UCS_ERR_NO_RESOURCE;
	}
	st = uct_ep_am_short(q->ep, ORDER_AM, q->seq, NULL, 0);
	if (st == UCS_OK)
		q->sent = 1;
	return st;
}

static int am_order_rounds(struct node *n, struct node *r, uct_ep_h ep,
			   struct order_rx *o)
{
	struct order_req q;
	uint64_t seq = 0, total;
	ucs_status_t st;
	int round, i, early;
	double t0;

	for (round = 1; round <= 3; round++) {
		/* fill: until the interface has no room (the receiver does
		 * not progress: its ring fills and holds the NIC back) */
		for (i = 0; i < 100000 &&
		     (st = uct_ep_am_short(ep, ORDER_AM, seq, NULL, 0)) == UCS_OK; i++)
			seq++;
		CHECK(st == UCS_ERR_NO_RESOURCE, "round %d: no back-pressure after %d sends: %s",
		      round, i, ucs_status_string(st));
		/* the refused number goes pending; nothing was progressed
		 * since the refusal, so the add finds no room either */
		memset(&q, 0, sizeof(q));
		q.r.func = order_pend_cb;
		q.ep = ep;
		q.seq = seq++;
		q.declines = 3;
		st = uct_ep_pending_add(ep, &q.r, 0);
		CHECK(st == UCS_OK, "round %d: pending_add right after UCS_ERR_NO_RESOURCE: %s",
		      round, ucs_status_string(st));
		total = seq + 16;
		early = 0;
		t0 = now();
		while (o->got < total && now() - t0 < 20) {
			uct_worker_progress(n->worker);
			uct_worker_progress(r->worker);
			if (seq == total)
				continue;
			st = uct_ep_am_short(ep, ORDER_AM, seq, NULL, 0);
			if (st == UCS_OK) {
				early += !q.sent;
				seq++;
			} else {
				CHECK(st == UCS_ERR_NO_RESOURCE, "round %d: am_short: %s", round,
				      ucs_status_string(st));
			}
		}
		CHECK(!o->bad, "round %d: message %llu arrived when %llu was due (%d sends "
		      "accepted while the pending request waited)", round,
		      (unsigned long long)(o->bad - 1), (unsigned long long)o->bad_due, early);
		CHECK(q.sent && !early, "round %d: %d sends accepted while the pending request "
		      "waited (it %s)", round, early, q.sent ? "ran later" : "never ran");
		CHECK(o->got == total, "round %d: %llu of %llu messages arrived in 20 s", round,
		      (unsigned long long)o->got, (unsigned long long)total);
	}
	CHECK(flush_ep(n, ep, 20) == UCS_OK, "flush");
	printf("# am order: 3 rounds, %llu messages in order, each round's pending request "
	       "declined 3 times first\n", (unsigned long long)o->got);
	return 0;
}

static int t_am_order(struct node *n)
{
	struct order_rx o = { 0 };
	struct node r;
	uct_ep_h ep;
	int bad;

	if (node_open(&r)) {
		node_close(&r);
		return 1;
	}
	uct_iface_set_am_handler(r.iface, ORDER_AM, order_am_cb, &o, 0);
	ep = ep_to(n, r.addr);
	bad = !ep || am_order_rounds(n, &r, ep, &o);
	if (ep)
		uct_ep_destroy(ep);
	node_close(&r);
	return bad;
}

int main(int argc, char **argv)
{
	int to_child[2], from_child[2];
	uint32_t peer = 0;
	int have_peer;
	struct node n;
	pid_t child;
	char c;

	(void)argc;
	(void)argv;
	srandom(getpid());
	/* the peer that will exit: its own process, its own interface */
	if (pipe(to_child) || pipe(from_child))
		return 2;
	child = fork();
	if (child == 0) {
		struct node cn;

		close(to_child[1]);
		close(from_child[0]);
		if (node_open(&cn)) {
			fprintf(stderr, "child: %s\n", why);
			_exit(1);
		}
		(void)!write(from_child[1], &cn.addr, sizeof(cn.addr));
		(void)!read(to_child[0], &c, 1);
		_exit(0);	/* the NIC context goes with the process */
	}
	close(to_child[0]);
	close(from_child[1]);
	have_peer = read(from_child[0], &peer, sizeof(peer)) == sizeof(peer);

	if (node_open(&n)) {
		result("open the elan md and interface", 1);
		kill(child, SIGKILL);
		goto out;
	}
	result("open the elan md and interface", 0);
	printf("# our context 0x%x, the peer's 0x%x\n", n.addr, peer);
	result("device atomics, 32 and 64 bits, every op, fetching and not", t_atomics(&n));
	result("put short/bcopy/zcopy, get bcopy/zcopy, am short/bcopy, flush", t_rma_am(&n));
	result("bad remote address: UCS_ERR_INVALID_ADDR", t_bad_address(&n));
	result("a context never attached: UCS_ERR_UNREACHABLE", t_no_context(&n));
	result("event fd: armed when idle, woken by a message", t_event_fd(&n));
	result("pending: a full command queue, then the request runs", t_pending(&n));
	result("AMs in order around the pending queue: new sends wait behind it", t_am_order(&n));
	if (have_peer)
		result("a peer process that exited: an error, no hang; ep_check reports it",
		       t_peer_gone(&n, peer, child, to_child[1]));
	else
		result("a peer process that exited", (snprintf(why, sizeof(why), "no peer"), 1));
	node_close(&n);
out:
	printf("%d passed, %d failed\n", tap_n - tap_fail, tap_fail);
	return tap_fail ? 1 : 0;
}
