// SPDX-License-Identifier: GPL-2.0
/*
 * The fabric transport of elan-nicd: links to the nicds of other hosts
 * over UCX (UCP active messages), see nicd_fabric.h and nic/README.md,
 * "The fabric".  The library (nicd_remote.c) builds and parses the
 * messages; this file moves them and owns the links:
 *
 *  - the table: which host owns which node, where each listens, the key;
 *  - links: the host listed earlier connects to the later one (one UCP
 *    endpoint per pair, used both ways), the later one listens; a lost
 *    link is retried every FAB_RETRY_NS by its connecting side;
 *  - proof: HELLO (client nonce), CHAL (server nonce and its HMAC over
 *    both with the fabric key), AUTH (the client's HMAC).  Until AUTH
 *    checks, nothing but the handshake is taken from an endpoint;
 *  - failure: a UCX endpoint error or a linked host silent for the
 *    timeout (heartbeats every quarter of it) is the host down:
 *    nicd_remote_host_down();
 *  - sends: small ones by ucp_am_send_nbx with FORCE_IMM_CMPL: the data
 *    (guest RAM under the caller's bracket) is taken before the call
 *    returns, or the call fails with NO_RESOURCE and the library
 *    retries; big ones (a chunk of up to NICD_FAB_CHUNK in a buffer
 *    of ours) as UCX likes (eager or rendezvous), the buffer freed when
 *    done;
 *  - big messages that come by rendezvous are received into a buffer of
 *    ours (ucp_am_recv_data_nbx) and given to the library when whole,
 *    if their link is still the one they came on.
 *
 * Runs on nicd's one thread (UCS_THREAD_MODE_SINGLE); UCX calls our
 * callbacks only from inside ucp_worker_progress(), which only
 * fabric_progress() and fabric_arm() call, between engine steps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <ucp/api/ucp.h>
#include "elan-nicd.h"
#include "nicd_fabric.h"

enum { AM_CTL = 11, AM_MSG = 12 };		/* UCP active message ids */
enum { CTL_HELLO = 1, CTL_CHAL, CTL_AUTH, CTL_PING };
#define FAB_MAGIC	0x42464c45u		/* "ELFB" */
#define FAB_VERSION	2				/* 2: rx_seg in the handshake */
#define FAB_NONCE	16
#define FAB_MAC		32
#define FAB_RETRY_NS	200000000ull		/* reconnect every 200 ms */
#define FAB_PENDING_MAX	32			/* unproven connections */

/* A handshake or heartbeat message (the AM header of AM_CTL). */
struct fab_ctl {
	uint32_t magic;
	uint16_t version;
	uint8_t type;
	uint8_t pad;
	uint32_t from, to;		/* host indices in the table */
	uint32_t rx_seg;		/* the sender's UCX tcp receive segment */
	uint8_t nonce[FAB_NONCE];
	uint8_t mac[FAB_MAC];
};

enum { CS_HELLO_SENT = 1, CS_AWAIT_HELLO, CS_CHAL_SENT, CS_AUTH_SENT, CS_UP,
       CS_DEAD };

struct fab_conn {
	struct fab_conn *next;
	ucp_ep_h ep;
	int host;			/* -1 until HELLO names it */
	int state;
	int client;			/* we connected */
	int proven;			/* it was linked (CS_UP) */
	uint8_t nonce_c[FAB_NONCE], nonce_s[FAB_NONCE];
	uint64_t since;			/* ns: created */
	char why[96];			/* CS_DEAD: why */
};

struct fab_host {
	struct fab_conn *link;		/* proven, CS_UP */
	struct fab_conn *dial;		/* our connection being set up */
	uint64_t last_rx, last_tx, next_try;
	uint32_t state_sent;		/* n->node_seq of the last STATE */
	uint8_t state_due;
	uint64_t links, downs;
	uint64_t tx_queued;		/* bytes of send_buf() not yet sent */
	uint64_t rx_queued;		/* bytes of rendezvous not yet received */
};

/* Bytes of big messages queued to, or being received by rendezvous
 * from, one host at most: a peer must not make us hold unbounded
 * memory (fab_send_buf, rx_rndv). */
#define FAB_TX_MAX	(32ull << 20)
/* UCX tcp receive segment: a chunk, its headers and room to spare */
#define FAB_RX_SEG	(512u << 10)
_Static_assert(NICD_FAB_CHUNK + 4096 <= FAB_RX_SEG, "FAB_RX_SEG holds a chunk");

/* A big message UCX holds: freed, and its bytes unqueued, when sent. */
struct fab_tx {
	uint32_t host;
	uint64_t link;			/* F.host[host].links when queued */
	struct nicd_fbuf *b;
};

static struct {
	struct nicd *n;
	struct fab_table t;
	uint32_t self;
	uint64_t timeout_ns;
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_listener_h listener;
	struct fab_conn *conns;
	uint32_t npending;
	struct fab_host host[FAB_MAX_HOSTS];
	uint64_t refused, dropped;
	uint32_t rx_seg;		/* our UCX tcp receive segment, bytes */
} F;

static int fab_send(void *arg, uint32_t host, const struct nicd_fmsg *m,
		    const struct iovec *iov, int iovcnt);
static int fab_send_buf(void *arg, uint32_t host, struct nicd_fbuf *b);
static const struct nicd_fabric_ops fab_ops = {
	.send = fab_send, .send_buf = fab_send_buf,
};

/* A message coming by rendezvous: received here, then given on. */
struct fab_rx {
	uint32_t host;
	uint64_t link;			/* F.host[host].links when it began */
	struct nicd_fmsg m;
	uint8_t data[];
};

#ifdef NICD_BROKEN_FABRIC
/*
 * Broken on purpose, for the tests only (nic/elan-nicd-broken, never
 * installed): ELAN_NICD_BROKEN=nodedown leaves a lost host's nodes up
 * (its link goes, nicd_remote_host_down() is never called), =heartbeat
 * never ends a link for silence (only a UCX error ends it), =norejoin
 * never dials a host again once its first link went, =segcheck links a
 * peer whose UCX tcp receive segment is not ours.  The checks of
 * tests/nic/fabric_test and tests/hosts must fail on them.
 */
static int broken(const char *what)
{
	const char *b = getenv("ELAN_NICD_BROKEN");

	return b && !strcmp(b, what);
}
#else
static int broken(const char *what)
{
	(void)what;
	return 0;
}
#endif

/* ------------------------------------------------------------ the table */

static int parse_nodes(const char *s, uint64_t *mask)
{
	unsigned long a, b;
	char *end;

	*mask = 0;
	while (*s) {
		a = strtoul(s, &end, 10);
		if (end == s)
			return -1;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtoul(s, &end, 10);
			if (end == s)
				return -1;
		}
		if (a > b || b >= ELAN_MAX_NODES)
			return -1;
		for (; a <= b; a++)
			*mask |= 1ull << a;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return *mask ? 0 : -1;
}

static int table_line(struct fab_table *t, char *line, char *err,
		      size_t errlen)
{
	char *w[5], *save = NULL, *colon, *end;
	uint64_t all = 0;
	unsigned long port;
	int k = 0;
	uint32_t i;

	for (char *p = strtok_r(line, " \t\r\n", &save); p && k < 5;
	     p = strtok_r(NULL, " \t\r\n", &save))
		w[k++] = p;
	if (!k || w[0][0] == '#')
		return 0;
	if (!strcmp(w[0], "key") && k == 2) {
		if (strlen(w[1]) < 16 || strlen(w[1]) > sizeof(t->key)) {
			snprintf(err, errlen, "the key must have 16 to %zu characters",
				 sizeof(t->key));
			return -1;
		}
		t->keylen = (uint32_t)strlen(w[1]);
		memcpy(t->key, w[1], t->keylen);
		return 0;
	}
	if (strcmp(w[0], "host") || k != 4) {
		snprintf(err, errlen, "want 'key SECRET' or 'host NAME ADDRESS:PORT NODES'");
		return -1;
	}
	if (t->nhosts >= FAB_MAX_HOSTS) {
		snprintf(err, errlen, "more than %d hosts", FAB_MAX_HOSTS);
		return -1;
	}
	struct fab_table_host *h = &t->host[t->nhosts];

	colon = strrchr(w[2], ':');
	if (strlen(w[1]) >= sizeof(h->name) || !colon ||
	    (size_t)(colon - w[2]) >= sizeof(h->addr) || colon == w[2]) {
		snprintf(err, errlen, "bad host name or ADDRESS:PORT '%s'", w[2]);
		return -1;
	}
	port = strtoul(colon + 1, &end, 10);
	if (*end || !port || port > 65535) {
		snprintf(err, errlen, "bad port in '%s'", w[2]);
		return -1;
	}
	if (parse_nodes(w[3], &h->nodes)) {
		snprintf(err, errlen, "bad NODES '%s' (like 0-3,6; nodes 0..%d)",
			 w[3], ELAN_MAX_NODES - 1);
		return -1;
	}
	for (i = 0; i < t->nhosts; i++) {
		all |= t->host[i].nodes;
		if (!strcmp(t->host[i].name, w[1])) {
			snprintf(err, errlen, "host %s given twice", w[1]);
			return -1;
		}
	}
	if (all & h->nodes) {
		snprintf(err, errlen, "host %s: a node is owned by another host too", w[1]);
		return -1;
	}
	strcpy(h->name, w[1]);
	memcpy(h->addr, w[2], (size_t)(colon - w[2]));
	h->addr[colon - w[2]] = '\0';
	h->port = (uint16_t)port;
	t->nhosts++;
	return 0;
}

int fab_table_read(const char *path, struct fab_table *t, char *err,
		   size_t errlen)
{
	char line[512], why[200];
	FILE *f = fopen(path, "r");
	int no = 0;
	uint32_t i;

	memset(t, 0, sizeof(*t));
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		no++;
		if (table_line(t, line, why, sizeof(why))) {
			snprintf(err, errlen, "%s:%d: %s", path, no, why);
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	if (!t->keylen || t->nhosts < 1) {
		snprintf(err, errlen, "%s: needs a 'key' line and 'host' lines", path);
		return -1;
	}
	for (i = 0; i < t->nhosts; i++) {
		uint32_t top = 64 - (uint32_t)__builtin_clzll(t->host[i].nodes);

		if (top > t->nodes)
			t->nodes = top;
	}
	return 0;
}

/* ------------------------------------------------------------ helpers */

/* About peers: the first lines, then one in 100 (a peer retrying every
 * 200 ms with a wrong key must not flood the log). */
static void peer_log(const char *fmt, const char *a, const char *b)
{
	static uint64_t lines;

	if (++lines <= 20 || lines % 100 == 0)
		nicd_logf(F.n, NICD_LOG_WARN, fmt, a, b);
}

static int host_index(const char *name)
{
	uint32_t i;

	for (i = 0; i < F.t.nhosts; i++)
		if (!strcmp(F.t.host[i].name, name))
			return (int)i;
	return -1;
}

/* HMAC-SHA256 with the fabric key over (tag, client, server, two nonces). */
static void fab_mac(char tag, uint32_t client, uint32_t server,
		    const uint8_t *n1, const uint8_t *n2, uint8_t *out)
{
	uint8_t buf[1 + 8 + 2 * FAB_NONCE + 16];
	unsigned int len = FAB_MAC;
	size_t k = 0;

	buf[k++] = (uint8_t)tag;
	memcpy(buf + k, &client, 4); k += 4;
	memcpy(buf + k, &server, 4); k += 4;
	memcpy(buf + k, n1, FAB_NONCE); k += FAB_NONCE;
	memcpy(buf + k, n2, FAB_NONCE); k += FAB_NONCE;
	memcpy(buf + k, "elan-fabric-v1\0", 16); k += 16;
	HMAC(EVP_sha256(), F.t.key, (int)F.t.keylen, buf, k, out, &len);
}

static void send_done(void *req, ucs_status_t st, void *user)
{
	(void)st;
	free(user);
	ucp_request_free(req);
}

/* A handshake or heartbeat message: queued by UCX if need be. */
static int ctl_send(struct fab_conn *c, int type, const uint8_t *nonce,
		    const uint8_t *mac)
{
	struct fab_ctl *m = calloc(1, sizeof(*m));
	ucp_request_param_t p = { 0 };
	ucs_status_ptr_t r;

	if (!m)
		return -1;
	m->magic = FAB_MAGIC;
	m->version = FAB_VERSION;
	m->type = (uint8_t)type;
	m->from = F.self;
	m->to = (uint32_t)c->host;
	m->rx_seg = F.rx_seg;
	if (nonce)
		memcpy(m->nonce, nonce, FAB_NONCE);
	if (mac)
		memcpy(m->mac, mac, FAB_MAC);
	p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
			 UCP_OP_ATTR_FIELD_USER_DATA;
	p.flags = UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_REPLY;
	p.cb.send = send_done;
	p.user_data = m;
	r = ucp_am_send_nbx(c->ep, AM_CTL, m, sizeof(*m), NULL, 0, &p);
	if (UCS_PTR_IS_PTR(r))
		return 0;		/* send_done frees m */
	free(m);
	return UCS_PTR_IS_ERR(r) ? -1 : 0;
}

static void conn_dead(struct fab_conn *c, const char *why)
{
	if (c->state == CS_DEAD)
		return;
	c->state = CS_DEAD;
	snprintf(c->why, sizeof(c->why), "%s", why);
}

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	struct fab_conn *c = arg;
	char why[96];

	(void)ep;
	snprintf(why, sizeof(why), "link error: %s", ucs_status_string(st));
	conn_dead(c, why);
}

static struct fab_conn *conn_new(int host, int client)
{
	struct fab_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->host = host;
	c->client = client;
	c->since = nicd_now_mono();
	c->next = F.conns;
	F.conns = c;
	if (!client)
		F.npending++;
	return c;
}

static struct fab_conn *conn_of(ucp_ep_h ep)
{
	struct fab_conn *c;

	for (c = F.conns; c; c = c->next)
		if (c->ep == ep && c->state != CS_DEAD)
			return c;
	return NULL;
}

/* ------------------------------------------------------------ links */

static void link_up(struct fab_conn *c)
{
	struct fab_host *h = &F.host[c->host];

	if (h->link && h->link != c) {
		conn_dead(h->link, "replaced by a new link");
		if (!broken("nodedown"))
			nicd_remote_host_down(F.n, (uint32_t)c->host);
		h->link = NULL;
	}
	if (!c->client)
		F.npending--;
	c->proven = 1;
	c->state = CS_UP;
	h->link = c;
	if (h->dial == c)
		h->dial = NULL;
	h->last_rx = h->last_tx = nicd_now_mono();
	h->links++;
	h->tx_queued = 0;	/* the old link's transfers end on their own */
	h->rx_queued = 0;
	h->state_due = 1;
	nicd_logf(F.n, NICD_LOG_INFO, "fabric: host %s (%u): linked (%s, link %" PRIu64 ")",
		  F.t.host[c->host].name, c->host,
		  c->client ? "we connected" : "it connected", h->links);
}

/* Close dead connections; a dead link is its host down. */
static void reap(void)
{
	struct fab_conn **pp = &F.conns, *c;
	ucp_request_param_t p = { 0 };
	ucs_status_ptr_t r;

	while ((c = *pp)) {
		if (c->state != CS_DEAD) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		if (c->host >= 0) {
			struct fab_host *h = &F.host[c->host];

			if (h->link == c) {
				h->link = NULL;
				h->downs++;
				nicd_logf(F.n, NICD_LOG_WARN,
					  "fabric: host %s (%u): down (%s)",
					  F.t.host[c->host].name, c->host, c->why);
				if (!broken("nodedown"))
					nicd_remote_host_down(F.n, (uint32_t)c->host);
			} else if (c->why[0]) {
				nicd_logf(F.n, NICD_LOG_INFO,
					  "fabric: host %s (%u): connection dropped (%s)",
					  F.t.host[c->host].name, c->host, c->why);
			}
			if (h->dial == c)
				h->dial = NULL;
		} else {
			nicd_logf(F.n, NICD_LOG_DEBUG,
				  "fabric: an unnamed connection dropped (%s)", c->why);
		}
		if (!c->client && !c->proven)
			F.npending--;
		p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
		p.flags = UCP_EP_CLOSE_FLAG_FORCE;
		if (c->ep) {
			r = ucp_ep_close_nbx(c->ep, &p);
			if (UCS_PTR_IS_PTR(r))
				ucp_request_free(r);
		}
		free(c);
	}
}

static int addr_of(const struct fab_table_host *h, struct sockaddr_in *sa)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;

	if (getaddrinfo(h->addr, NULL, &hints, &ai))
		return -1;
	memcpy(sa, ai->ai_addr, sizeof(*sa));
	freeaddrinfo(ai);
	sa->sin_port = htons(h->port);
	return 0;
}

/* Connect to a later host of the table and say HELLO. */
static void dial(uint32_t i, uint64_t now)
{
	struct fab_host *h = &F.host[i];
	ucp_ep_params_t ep = { 0 };
	struct sockaddr_in sa;
	struct fab_conn *c;

	h->next_try = now + FAB_RETRY_NS;
	if (addr_of(&F.t.host[i], &sa)) {
		peer_log("fabric: host %s: cannot resolve %s",
			 F.t.host[i].name, F.t.host[i].addr);
		return;
	}
	c = conn_new((int)i, 1);
	if (!c)
		return;
	ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
			UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
			UCP_EP_PARAM_FIELD_ERR_HANDLER;
	ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
	ep.sockaddr.addr = (struct sockaddr *)&sa;
	ep.sockaddr.addrlen = sizeof(sa);
	ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
	ep.err_handler.cb = on_ep_error;
	ep.err_handler.arg = c;
	if (ucp_ep_create(F.worker, &ep, &c->ep) != UCS_OK) {
		c->ep = NULL;
		conn_dead(c, "cannot create an endpoint");
		return;
	}
	if (getrandom(c->nonce_c, FAB_NONCE, 0) != FAB_NONCE ||
	    ctl_send(c, CTL_HELLO, c->nonce_c, NULL)) {
		conn_dead(c, "cannot send HELLO");
		return;
	}
	c->state = CS_HELLO_SENT;
	h->dial = c;
}

static void on_conn_request(ucp_conn_request_h req, void *arg)
{
	ucp_ep_params_t ep = { 0 };
	struct fab_conn *c;
	ucs_status_t st;

	(void)arg;
	if (F.npending >= FAB_PENDING_MAX) {
		F.refused++;
		ucp_listener_reject(F.listener, req);
		peer_log("fabric: refused a connection: %s unproven ones already%s",
			 "too many", "");
		return;
	}
	c = conn_new(-1, 0);
	if (!c) {
		ucp_listener_reject(F.listener, req);
		return;
	}
	ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST |
			UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
			UCP_EP_PARAM_FIELD_ERR_HANDLER;
	ep.conn_request = req;
	ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
	ep.err_handler.cb = on_ep_error;
	ep.err_handler.arg = c;
	st = ucp_ep_create(F.worker, &ep, &c->ep);
	if (st != UCS_OK) {
		c->ep = NULL;
		peer_log("fabric: cannot accept a connection: %s%s",
			 ucs_status_string(st), "");
		conn_dead(c, "cannot accept");
		return;
	}
	c->state = CS_AWAIT_HELLO;
}

/* A peer that failed the handshake: named in the log, dropped. */
static void refuse(struct fab_conn *c, const char *why)
{
	F.refused++;
	peer_log("fabric: refused a peer (%s): %s",
		 c->host >= 0 ? F.t.host[c->host].name : "unnamed", why);
	conn_dead(c, why);
}

/*
 * UCX tcp sends a message of up to its own receive segment in one
 * fragment and takes it for granted the peer's is as large: one that is
 * not aborts on an assertion (tcp_ep.c) when a chunk comes.  So peers
 * must agree, and one that does not is refused before any chunk flows
 * (1 if c was refused for it).
 */
static int seg_refused(struct fab_conn *c, const struct fab_ctl *m)
{
	char why[160];

	if (m->rx_seg == F.rx_seg || broken("segcheck"))
		return 0;
	snprintf(why, sizeof(why),
		 "its UCX tcp receive segment is %u bytes, ours %u: set UCX_TCP_RX_SEG_SIZE alike on every host",
		 m->rx_seg, F.rx_seg);
	refuse(c, why);
	return 1;
}

static void on_hello(struct fab_conn *c, const struct fab_ctl *m)
{
	uint8_t mac[FAB_MAC];

	if (c->client || c->state != CS_AWAIT_HELLO)
		return refuse(c, "HELLO out of turn");
	if (m->to != F.self || m->from >= F.self)
		return refuse(c, "HELLO from a host that is not to connect to us");
	if (seg_refused(c, m))
		return;
	c->host = (int)m->from;
	memcpy(c->nonce_c, m->nonce, FAB_NONCE);
	if (getrandom(c->nonce_s, FAB_NONCE, 0) != FAB_NONCE)
		return conn_dead(c, "no random bytes");
	fab_mac('S', m->from, F.self, c->nonce_c, c->nonce_s, mac);
	if (ctl_send(c, CTL_CHAL, c->nonce_s, mac))
		return conn_dead(c, "cannot send CHAL");
	c->state = CS_CHAL_SENT;
}

static void on_chal(struct fab_conn *c, const struct fab_ctl *m)
{
	uint8_t mac[FAB_MAC];

	if (!c->client || c->state != CS_HELLO_SENT ||
	    m->from != (uint32_t)c->host || m->to != F.self)
		return refuse(c, "CHAL out of turn");
	fab_mac('S', F.self, m->from, c->nonce_c, m->nonce, mac);
	if (CRYPTO_memcmp(mac, m->mac, FAB_MAC))
		return refuse(c, "it does not prove the fabric key");
	if (seg_refused(c, m))
		return;
	memcpy(c->nonce_s, m->nonce, FAB_NONCE);
	fab_mac('C', F.self, m->from, c->nonce_s, c->nonce_c, mac);
	if (ctl_send(c, CTL_AUTH, NULL, mac))
		return conn_dead(c, "cannot send AUTH");
	c->state = CS_AUTH_SENT;
}

static void on_auth(struct fab_conn *c, const struct fab_ctl *m)
{
	uint8_t mac[FAB_MAC];

	if (c->client || c->state != CS_CHAL_SENT || m->from != (uint32_t)c->host)
		return refuse(c, "AUTH out of turn");
	fab_mac('C', m->from, F.self, c->nonce_s, c->nonce_c, mac);
	if (CRYPTO_memcmp(mac, m->mac, FAB_MAC))
		return refuse(c, "it does not prove the fabric key");
	link_up(c);
}

static ucs_status_t on_ctl(void *arg, const void *header, size_t hlen,
			   void *data, size_t len, const ucp_am_recv_param_t *p)
{
	struct fab_conn *c;
	struct fab_ctl m;

	(void)arg; (void)data;
	if (!(p->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
	    !(c = conn_of(p->reply_ep))) {
		F.dropped++;
		return UCS_OK;
	}
	if (hlen != sizeof(m) || len) {
		refuse(c, "malformed handshake message");
		return UCS_OK;
	}
	memcpy(&m, header, sizeof(m));
	if (m.magic != FAB_MAGIC || m.version != FAB_VERSION) {
		refuse(c, "not an elan fabric peer of this version");
		return UCS_OK;
	}
	if (m.from >= F.t.nhosts || m.from == F.self) {
		refuse(c, "names no other host of the table");
		return UCS_OK;
	}
	switch (m.type) {
	case CTL_HELLO:
		on_hello(c, &m);
		break;
	case CTL_CHAL:
		on_chal(c, &m);
		break;
	case CTL_AUTH:
		on_auth(c, &m);
		break;
	case CTL_PING:
		if (c->state == CS_UP && m.from == (uint32_t)c->host)
			F.host[c->host].last_rx = nicd_now_mono();
		break;
	default:
		refuse(c, "unknown handshake message");
	}
	return UCS_OK;
}

/* A rendezvous message whole (or failed): to the library if its link
 * is still the one it came on (a late one of a lost link is dropped). */
static void rx_done(void *req, ucs_status_t st, size_t len, void *user)
{
	struct fab_rx *x = user;
	struct fab_host *h = &F.host[x->host];

	if (h->links == x->link)
		h->rx_queued -= x->m.len;
	if (st == UCS_OK && len == x->m.len && h->link &&
	    h->link->state == CS_UP && h->links == x->link)
		nicd_remote_rx(F.n, &eng, x->host, &x->m, x->data, len);
	free(x);
	if (req)
		ucp_request_free(req);
}

/* Receive a big message into a buffer of ours (its header checked
 * first: no more than a chunk is ever taken from a peer). */
static void rx_rndv(struct fab_conn *c, const struct nicd_fmsg *m,
		    void *desc, size_t len)
{
	ucp_request_param_t p = { 0 };
	ucs_status_ptr_t r;
	struct fab_rx *x;

	if (len > NICD_FAB_CHUNK || len != m->len ||
	    F.host[c->host].rx_queued + len > FAB_TX_MAX ||
	    !(x = malloc(sizeof(*x) + len))) {
		F.dropped++;
		nicd_logf(F.n, NICD_LOG_WARN,
			  "fabric: host %s: a message of %zu bytes refused",
			  F.t.host[c->host].name, len);
		return;		/* UCX drops what we do not take */
	}
	x->host = (uint32_t)c->host;
	x->link = F.host[c->host].links;
	x->m = *m;
	F.host[c->host].rx_queued += len;
	p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
	p.cb.recv_am = rx_done;
	p.user_data = x;
	r = ucp_am_recv_data_nbx(F.worker, desc, x->data, len, &p);
	if (UCS_PTR_IS_PTR(r))
		return;		/* rx_done comes */
	rx_done(NULL, UCS_PTR_STATUS(r), len, x);
}

static ucs_status_t on_msg(void *arg, const void *header, size_t hlen,
			   void *data, size_t len, const ucp_am_recv_param_t *p)
{
	struct fab_conn *c;
	struct nicd_fmsg m;

	(void)arg;
	if (!(p->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
	    !(c = conn_of(p->reply_ep))) {
		F.dropped++;
		return UCS_OK;
	}
	/* the server sends only once it took our AUTH: that proves it */
	if (c->client && c->state == CS_AUTH_SENT)
		link_up(c);
	if (c->state != CS_UP) {
		refuse(c, "a message before the handshake");
		return UCS_OK;
	}
	F.host[c->host].last_rx = nicd_now_mono();
	if (hlen != sizeof(m)) {
		F.dropped++;
		nicd_logf(F.n, NICD_LOG_WARN,
			  "fabric: host %s: malformed message dropped (header %zu bytes)",
			  F.t.host[c->host].name, hlen);
		return UCS_OK;
	}
	memcpy(&m, header, sizeof(m));
	if (p->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)
		rx_rndv(c, &m, data, len);
	else
		nicd_remote_rx(F.n, &eng, (uint32_t)c->host, &m, data, len);
	return UCS_OK;
}

/* The library's transport: one message, its data taken before return. */
static int fab_send(void *arg, uint32_t host, const struct nicd_fmsg *m,
		    const struct iovec *iov, int iovcnt)
{
	ucp_request_param_t p = { 0 };
	struct fab_host *h;
	ucs_status_ptr_t r;
	ucs_status_t st;

	(void)arg;
	if (host >= F.t.nhosts || !F.host[host].link ||
	    F.host[host].link->state != CS_UP)
		return ELAN_E_NODE_DOWN;
	if (iovcnt > 1)
		return ELAN_E_BADCMD;	/* contract: at most one piece */
	h = &F.host[host];
	p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
	p.flags = UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_REPLY;
	r = ucp_am_send_nbx(h->link->ep, AM_MSG, m, sizeof(*m),
			    iovcnt ? iov[0].iov_base : NULL,
			    iovcnt ? iov[0].iov_len : 0, &p);
	if (UCS_PTR_IS_PTR(r))
		ucp_request_free(r);	/* not with FORCE_IMM_CMPL, but safe */
	st = UCS_PTR_STATUS(r);
	if (UCS_PTR_IS_PTR(r) || st == UCS_OK) {
		h->last_tx = nicd_now_mono();
		return 0;
	}
	if (st == UCS_ERR_NO_RESOURCE)
		return NICD_PENDING;
	conn_dead(h->link, ucs_status_string(st));
	return ELAN_E_NODE_DOWN;
}

static void buf_sent(void *req, ucs_status_t st, void *user)
{
	struct fab_tx *tx = user;
	struct fab_host *h = &F.host[tx->host];

	(void)st;
	if (h->links == tx->link)	/* a new link counts afresh */
		h->tx_queued -= tx->b->m.len;
	free(tx->b);
	free(tx);
	ucp_request_free(req);
}

/* The library's big message: b is ours to free once UCX is done. */
static int fab_send_buf(void *arg, uint32_t host, struct nicd_fbuf *b)
{
	ucp_request_param_t p = { 0 };
	struct fab_host *h;
	struct fab_tx *tx;
	ucs_status_ptr_t r;
	ucs_status_t st;

	(void)arg;
	if (host >= F.t.nhosts || !F.host[host].link ||
	    F.host[host].link->state != CS_UP) {
		free(b);
		return ELAN_E_NODE_DOWN;
	}
	h = &F.host[host];
	if (h->tx_queued + b->m.len > FAB_TX_MAX)
		return NICD_PENDING;
	tx = malloc(sizeof(*tx));
	if (!tx)
		return NICD_PENDING;
	tx->host = host;
	tx->link = h->links;
	tx->b = b;
	p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
			 UCP_OP_ATTR_FIELD_USER_DATA;
	/* eager: over tcp a rendezvous per 64 KiB costs more round trips
	 * than it saves copies (fabric_test: 1.0-1.6 GB/s against 2.4-2.6) */
	p.flags = UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_REPLY;
	p.cb.send = buf_sent;
	p.user_data = tx;
	/* the header lies in b too: valid until the send completes */
	r = ucp_am_send_nbx(h->link->ep, AM_MSG, &b->m, sizeof(b->m),
			    b->data, b->m.len, &p);
	if (UCS_PTR_IS_PTR(r)) {
		h->tx_queued += b->m.len;
		h->last_tx = nicd_now_mono();
		return 0;	/* buf_sent frees b */
	}
	free(b);
	free(tx);
	st = UCS_PTR_STATUS(r);
	if (st == UCS_OK) {
		h->last_tx = nicd_now_mono();
		return 0;
	}
	conn_dead(h->link, ucs_status_string(st));
	return ELAN_E_NODE_DOWN;
}

/* ------------------------------------------------------------ public */

/*
 * A size as UCX reads one ("512k", "65536", "1MB"): 0, or -1 if it is
 * not one (or says 0 or 4 GiB and more).
 */
static int size_parse(const char *s, uint32_t *v)
{
	unsigned long long x;
	unsigned int shift = 0;
	char *end;

	errno = 0;
	x = strtoull(s, &end, 10);
	if (end == s || errno)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	}
	if (shift)
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || !x || x > (UINT32_MAX >> shift))
		return -1;
	*v = (uint32_t)(x << shift);
	return 0;
}

int fabric_init(struct nicd *n, const struct fab_table *t, const char *self,
		uint64_t timeout_ms, int epfd, uint64_t ev_data)
{
	ucp_params_t up = { 0 };
	ucp_worker_params_t wp = { 0 };
	ucp_listener_params_t lp = { 0 };
	ucp_am_handler_param_t hp = { 0 };
	struct epoll_event ev = { 0 };
	struct sockaddr_in sa;
	ucp_config_t *cfg;
	ucs_status_t st;
	char seg[16];
	int me, efd;
	uint32_t i, node;

	memset(&F, 0, sizeof(F));
	F.n = n;
	F.t = *t;
	F.timeout_ns = timeout_ms * 1000000ull;
	me = host_index(self);
	if (me < 0) {
		nicd_logf(n, NICD_LOG_ERR, "fabric: host '%s' is not in the table", self);
		return -1;
	}
	F.self = (uint32_t)me;
	for (i = 0; i < t->nhosts; i++) {
		if (i == F.self)
			continue;
		for (node = 0; node < ELAN_MAX_NODES; node++)
			if ((t->host[i].nodes >> node) & 1 &&
			    nicd_node_remote(n, node, i)) {
				nicd_logf(n, NICD_LOG_ERR,
					  "fabric: node %u of host %s is also given with --node here",
					  node, t->host[i].name);
				return -1;
			}
	}
	/* a nicd restarted at once must listen on its port again (the old
	 * links' sockets linger in TIME_WAIT); the environment may say no.
	 * A transport setting, read from the environment when UCX opens it */
	setenv("UCX_TCP_CM_REUSEADDR", "y", 0);
	/* a whole chunk and its headers in one receive segment of UCX tcp:
	 * it comes as one zero-copy fragment, not reassembled in a buffer of
	 * UCX (a copy more): 0.54 core-seconds per GB of osu_bw across
	 * against 0.63-0.77 with the default 64 KiB (docs/measurements.md) */
	snprintf(seg, sizeof(seg), "%u", FAB_RX_SEG);
	setenv("UCX_TCP_RX_SEG_SIZE", seg, 0);
	if (size_parse(getenv("UCX_TCP_RX_SEG_SIZE"), &F.rx_seg)) {
		nicd_logf(n, NICD_LOG_ERR,
			  "fabric: UCX_TCP_RX_SEG_SIZE=%s is not a size (as 512k)",
			  getenv("UCX_TCP_RX_SEG_SIZE"));
		return -1;
	}
	if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK)
		return -1;
	up.field_mask = UCP_PARAM_FIELD_FEATURES;
	up.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
	st = ucp_init(&up, cfg, &F.ctx);
	ucp_config_release(cfg);
	if (st != UCS_OK) {
		nicd_logf(n, NICD_LOG_ERR, "fabric: ucp_init: %s", ucs_status_string(st));
		return -1;
	}
	wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
	wp.thread_mode = UCS_THREAD_MODE_SINGLE;
	st = ucp_worker_create(F.ctx, &wp, &F.worker);
	if (st != UCS_OK) {
		nicd_logf(n, NICD_LOG_ERR, "fabric: ucp_worker_create: %s",
			  ucs_status_string(st));
		return -1;
	}
	hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
	hp.id = AM_CTL;
	hp.cb = on_ctl;
	ucp_worker_set_am_recv_handler(F.worker, &hp);
	hp.id = AM_MSG;
	hp.cb = on_msg;
	ucp_worker_set_am_recv_handler(F.worker, &hp);
	if (addr_of(&t->host[F.self], &sa)) {
		nicd_logf(n, NICD_LOG_ERR, "fabric: cannot resolve %s", t->host[F.self].addr);
		return -1;
	}
	lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
			UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
	lp.sockaddr.addr = (struct sockaddr *)&sa;
	lp.sockaddr.addrlen = sizeof(sa);
	lp.conn_handler.cb = on_conn_request;
	st = ucp_listener_create(F.worker, &lp, &F.listener);
	if (st != UCS_OK) {
		nicd_logf(n, NICD_LOG_ERR, "fabric: cannot listen on %s:%u: %s",
			  t->host[F.self].addr, t->host[F.self].port,
			  ucs_status_string(st));
		return -1;
	}
	if (ucp_worker_get_efd(F.worker, &efd) != UCS_OK) {
		nicd_logf(n, NICD_LOG_ERR, "fabric: no event fd from UCX");
		return -1;
	}
	ev.events = EPOLLIN;
	ev.data.u64 = ev_data;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev) < 0) {
		nicd_logf(n, NICD_LOG_ERR, "fabric: epoll: %s", strerror(errno));
		return -1;
	}
	n->fabric = &fab_ops;
	n->fabric_arg = NULL;
	if (broken("nodedown") || broken("heartbeat") || broken("norejoin") ||
	    broken("segcheck"))
		nicd_logf(n, NICD_LOG_WARN,
			  "fabric: BROKEN ON PURPOSE (ELAN_NICD_BROKEN=%s): %s",
			  getenv("ELAN_NICD_BROKEN"),
			  broken("nodedown") ? "a lost host's nodes are never marked down" :
			  broken("heartbeat") ? "a silent host is never declared down" :
			  broken("segcheck") ? "a peer whose receive segment is not ours is linked" :
			  "a lost link is never dialed again");
	nicd_logf(n, NICD_LOG_INFO,
		  "fabric: host %s (%u of %u), listening on %s:%u, nodes %#" PRIx64 ", link timeout %" PRIu64 " ms",
		  self, F.self, t->nhosts, t->host[F.self].addr,
		  t->host[F.self].port, t->host[F.self].nodes, timeout_ms);
	return 0;
}

uint64_t fabric_local_nodes(void)
{
	return F.t.host[F.self].nodes;
}

/* ns from then to now; 0 if then is later (set after now was read). */
static uint64_t since(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

/* Heartbeats, silent hosts, handshakes that take too long, dialing. */
static int watch_links(uint64_t now)
{
	struct fab_conn *c;
	int work = 0;
	uint32_t i;

	for (c = F.conns; c; c = c->next)
		if (c->state != CS_UP && c->state != CS_DEAD &&
		    since(now, c->since) > F.timeout_ns)
			conn_dead(c, "no handshake within the link timeout");
	for (i = 0; i < F.t.nhosts; i++) {
		struct fab_host *h = &F.host[i];

		if (i == F.self)
			continue;
		if (h->link) {
			if (since(now, h->last_rx) > F.timeout_ns &&
			    !broken("heartbeat")) {
				char why[64];

				snprintf(why, sizeof(why), "silent for %.1f s",
					 since(now, h->last_rx) / 1e9);
				conn_dead(h->link, why);
			} else if (since(now, h->last_tx) > F.timeout_ns / 4) {
				h->last_tx = now;
				ctl_send(h->link, CTL_PING, NULL, NULL);
			}
			if (h->link->state == CS_UP &&
			    (h->state_due || h->state_sent != F.n->node_seq)) {
				uint32_t seq = F.n->node_seq;

				if (nicd_remote_send_state(F.n, i) == 0) {
					h->state_sent = seq;
					h->state_due = 0;
					work++;
				}
			}
		} else if (i > F.self && !h->dial && now >= h->next_try &&
			   !(broken("norejoin") && h->links)) {
			dial(i, now);
		}
	}
	return work;
}

int fabric_progress(uint64_t now)
{
	int work = 0;

	while (ucp_worker_progress(F.worker))
		work++;
	if (work)	/* callbacks stamped times later than now */
		now = nicd_now_mono();
	work += watch_links(now);
	reap();
	return work;
}

int fabric_arm(void)
{
	ucs_status_t st;

	if (ucp_worker_progress(F.worker))
		return 1;
	st = ucp_worker_arm(F.worker);
	return st == UCS_ERR_BUSY;
}

uint64_t fabric_next_timeout(uint64_t now)
{
	(void)now;
	/* heartbeats every quarter of the link timeout, dialing every
	 * FAB_RETRY_NS: looking this often is enough for both */
	return F.timeout_ns / 4 < FAB_RETRY_NS ? F.timeout_ns / 4 : FAB_RETRY_NS;
}

void fabric_fini(void)
{
	struct fab_conn *c;
	uint32_t i;

	for (i = 0; i < F.t.nhosts; i++)
		if (i != F.self)
			nicd_logf(F.n, NICD_LOG_INFO,
				  "fabric: host %s: %" PRIu64 " links, %" PRIu64 " lost",
				  F.t.host[i].name, F.host[i].links, F.host[i].downs);
	nicd_logf(F.n, NICD_LOG_INFO,
		  "fabric: %" PRIu64 " messages in, %" PRIu64 " out, %" PRIu64 " invalid, %" PRIu64 " peers refused, %" PRIu64 " dropped",
		  F.n->rstat_rx, F.n->rstat_tx, F.n->rstat_bad, F.refused, F.dropped);
	for (c = F.conns; c; c = c->next)
		conn_dead(c, "shutting down");
	reap();
	if (F.listener)
		ucp_listener_destroy(F.listener);
	if (F.worker)
		ucp_worker_destroy(F.worker);
	if (F.ctx)
		ucp_cleanup(F.ctx);
}
