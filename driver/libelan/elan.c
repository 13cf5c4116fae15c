// SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note
/*
 * libelan: see libelan.h.  The rings are single-producer single-consumer
 * with a seq field written last (release) and read first (acquire).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libelan.h"

struct elan_ctx {
	int fd;
	uint32_t addr;
	uint32_t nodes;
	struct elan_user_ctl *ctl;		/* CMD area: ours */
	struct elan_cmd *cmdq;
	const struct elan_user_status *status;	/* EVT area: the NIC's */
	const struct elan_event *evq;
	const unsigned char *recvq;
	uint32_t cmd_pos;			/* next command position */
	uint32_t ev_head;			/* next event position */
	uint32_t recv_head;			/* oldest unreleased message */
	uint32_t recv_seen;			/* last published ctl->recv_seen */
	unsigned int batch;			/* elan_batch_begin() depth */
	unsigned int batch_held;		/* BATCH_POSTED | BATCH_ROOM */
	uint32_t batch_first;			/* first command posted in it */
};

/* what a batch held back: a command, and room made in a ring */
#define BATCH_POSTED	1u
#define BATCH_ROOM	2u

#define LOAD_ACQ(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define LOAD(p)		__atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE_REL(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)

static const char *elan_device(void)
{
	const char *d = getenv("ELAN_DEVICE");

	return d && *d ? d : ELAN_DEVICE;
}

int elan_open(uint64_t capability, elan_ctx_t **ctxp)
{
	struct elan_attach a;
	elan_ctx_t *c;
	void *cmd, *evt;
	int ret;

	*ctxp = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = open(elan_device(), O_RDWR | O_CLOEXEC);
	if (c->fd < 0) {
		ret = -errno;
		free(c);
		return ret;
	}
	memset(&a, 0, sizeof(a));
	a.capability = capability;
	a.abi_version = ELAN_ABI_VERSION;
	if (ioctl(c->fd, ELAN_IOC_ATTACH, &a) < 0)
		goto fail;
	cmd = mmap(NULL, ELAN_CMD_AREA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   c->fd, ELAN_MMAP_CMD);
	if (cmd == MAP_FAILED)
		goto fail;
	evt = mmap(NULL, ELAN_EVT_AREA_SIZE, PROT_READ, MAP_SHARED, c->fd,
		   ELAN_MMAP_EVT);
	if (evt == MAP_FAILED) {
		ret = -errno;
		munmap(cmd, ELAN_CMD_AREA_SIZE);
		errno = -ret;
		goto fail;
	}
	c->addr = a.addr;
	c->nodes = a.nodes;
	c->ctl = cmd;
	c->cmdq = (struct elan_cmd *)((char *)cmd + ELAN_PAGE);
	c->status = evt;
	c->evq = (const struct elan_event *)((char *)evt + ELAN_EVT_OFF_EVQ);
	c->recvq = (const unsigned char *)evt + ELAN_EVT_OFF_RECVQ;
	/* A fresh context starts at 0; follow what the rings say anyway. */
	c->cmd_pos = LOAD_ACQ(&c->status->cmd_tail);
	c->ev_head = LOAD(&c->ctl->ev_head);
	c->recv_head = LOAD(&c->ctl->recv_head);
	c->recv_seen = c->recv_head;
	*ctxp = c;
	return 0;
fail:
	ret = -errno;
	close(c->fd);
	free(c);
	return ret;
}

int elan_close(elan_ctx_t *c)
{
	if (!c)
		return 0;
	munmap(c->ctl, ELAN_CMD_AREA_SIZE);
	munmap((void *)c->status, ELAN_EVT_AREA_SIZE);
	close(c->fd);
	free(c);
	return 0;
}

uint32_t elan_addr(const elan_ctx_t *c)
{
	return c->addr;
}

uint64_t elan_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint32_t elan_nodes(const elan_ctx_t *c)
{
	return c->nodes;
}

int elan_fd(const elan_ctx_t *c)
{
	return c->fd;
}

int elan_state(const elan_ctx_t *c, uint32_t *error)
{
	uint32_t st = LOAD_ACQ(&c->status->state);

	if (error)
		*error = LOAD(&c->status->error);
	return (int)st;
}

const char *elan_state_text(const elan_ctx_t *c)
{
	static __thread char text[128];
	uint32_t err;
	int st = elan_state(c, &err);

	if (st == ELAN_CTX_ACTIVE)
		return "active";
	if (st != ELAN_CTX_FAILED)
		return "stopped by the driver";
	snprintf(text, sizeof(text), "failed: %s",
		 err == ELAN_E_NODE_DOWN ?
		 "this node's NIC is down (elan-nicd stopped, or the device went away)" :
		 elan_strerror((int)err));
	return text;
}

unsigned int elan_cmdq_space(const elan_ctx_t *c)
{
	uint32_t used = c->cmd_pos - LOAD_ACQ(&c->status->cmd_tail);

	return used >= ELAN_CMDQ_ENTRIES ? 0 : ELAN_CMDQ_ENTRIES - used;
}

/*
 * Failed (by the NIC: a bad queue entry; by the driver: the NIC died) or
 * stopped (the device went away).  The driver sets ACTIVE before the
 * attach returns, so a fresh context never reads as stopped.
 */
static int stopped(const elan_ctx_t *c)
{
	return LOAD_ACQ(&c->status->state) != ELAN_CTX_ACTIVE;
}

/*
 * Write the command into its slot, seq last with release; then, after a
 * full fence (the NIC sets nic_sleeping and then looks at the queue once
 * more), ring the doorbell only if the NIC sleeps and nothing else will
 * make it look at this command (elan_doorbell_needed()).
 */
int elan_post(elan_ctx_t *c, const struct elan_cmd *cmd)
{
	uint32_t pos = c->cmd_pos;
	struct elan_cmd *slot;

	if (stopped(c))
		return -EPIPE;
	if (pos - LOAD_ACQ(&c->status->cmd_tail) >= ELAN_CMDQ_ENTRIES)
		return -EAGAIN;
	slot = elan_cmdq_slot(c->cmdq, pos);
	slot->op = cmd->op;
	slot->aop = cmd->aop;
	slot->flags = cmd->flags;
	slot->dst = cmd->dst;
	slot->cookie = cmd->cookie;
	slot->laddr = cmd->laddr;
	slot->raddr = cmd->raddr;
	slot->len = cmd->len;
	slot->operand = cmd->operand;
	slot->compare = cmd->compare;
	slot->tag = cmd->tag;
	STORE_REL(&slot->seq, elan_ring_seq(pos));
	c->cmd_pos = pos + 1;
	if (c->batch) {
		if (!(c->batch_held & BATCH_POSTED))
			c->batch_first = pos;
		c->batch_held |= BATCH_POSTED;
		return 0;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (elan_doorbell_needed(c->status, pos, pos + 1))
		ioctl(c->fd, ELAN_IOC_DOORBELL);
	return 0;
}

void elan_batch_begin(elan_ctx_t *c)
{
	c->batch++;
}

/*
 * Every command posted and every slot freed in the batch was stored
 * before this fence, so one look at nic_sleeping covers them all.
 */
void elan_batch_end(elan_ctx_t *c)
{
	unsigned int held;

	if (!c->batch || --c->batch || !c->batch_held)
		return;
	held = c->batch_held;
	c->batch_held = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (((held & BATCH_POSTED) &&
	     elan_doorbell_needed(c->status, c->batch_first, c->cmd_pos)) ||
	    ((held & BATCH_ROOM) && LOAD(&c->status->nic_waiting) &&
	     LOAD(&c->status->nic_sleeping)))
		ioctl(c->fd, ELAN_IOC_DOORBELL);
}

static int post(elan_ctx_t *c, uint8_t op, uint8_t aop, unsigned int flags,
		uint32_t dst, uint64_t cookie, uint64_t laddr, uint64_t raddr,
		uint64_t len, uint64_t operand, uint64_t compare, uint32_t tag)
{
	struct elan_cmd cmd = {
		.op = op, .aop = aop, .flags = (uint16_t)flags, .dst = dst,
		.cookie = cookie, .laddr = laddr, .raddr = raddr, .len = len,
		.operand = operand, .compare = compare, .tag = tag,
	};

	if (flags > 0xffff)
		return -EINVAL;
	return elan_post(c, &cmd);
}

int elan_put(elan_ctx_t *c, uint32_t dst, const void *src, uint64_t raddr,
	     uint64_t len, uint64_t cookie, unsigned int flags)
{
	return post(c, ELAN_OP_PUT, 0, flags, dst, cookie, (uintptr_t)src,
		    raddr, len, 0, 0, 0);
}

int elan_get(elan_ctx_t *c, uint32_t dst, void *buf, uint64_t raddr,
	     uint64_t len, uint64_t cookie, unsigned int flags)
{
	return post(c, ELAN_OP_GET, 0, flags, dst, cookie, (uintptr_t)buf,
		    raddr, len, 0, 0, 0);
}

/* 64- and 32-bit atomics differ only in @size (the NIC checks alignment) */
static int atomic_post(elan_ctx_t *c, uint32_t dst, uint64_t raddr,
		       enum elan_atomic_op op, uint64_t operand,
		       uint64_t compare, void *fetch, uint64_t size,
		       uint64_t cookie, unsigned int flags)
{
	if ((unsigned int)op > ELAN_AOP_XOR)
		return -EINVAL;
	if (fetch)
		flags |= ELAN_CMDF_FETCH;
	else
		flags &= ~ELAN_CMDF_FETCH;
	return post(c, ELAN_OP_ATOMIC, (uint8_t)op, flags, dst, cookie,
		    (uintptr_t)fetch, raddr, size, operand, compare, 0);
}

int elan_atomic(elan_ctx_t *c, uint32_t dst, uint64_t raddr,
		enum elan_atomic_op op, uint64_t operand, uint64_t compare,
		uint64_t *fetch, uint64_t cookie, unsigned int flags)
{
	return atomic_post(c, dst, raddr, op, operand, compare, fetch, 8,
			   cookie, flags);
}

int elan_atomic32(elan_ctx_t *c, uint32_t dst, uint64_t raddr,
		  enum elan_atomic_op op, uint32_t operand, uint32_t compare,
		  uint32_t *fetch, uint64_t cookie, unsigned int flags)
{
	return atomic_post(c, dst, raddr, op, operand, compare, fetch, 4,
			   cookie, flags);
}

int elan_send(elan_ctx_t *c, uint32_t dst, uint32_t tag, const void *buf,
	      uint64_t len, uint64_t cookie, unsigned int flags)
{
	if (len > ELAN_SEND_MAX)
		return -EMSGSIZE;
	return post(c, ELAN_OP_SEND, 0, flags, dst, cookie, (uintptr_t)buf, 0,
		    len, 0, 0, tag);
}

int elan_fence(elan_ctx_t *c, uint64_t cookie, unsigned int flags)
{
	return post(c, ELAN_OP_FENCE, 0, flags, 0, cookie, 0, 0, 0, 0, 0, 0);
}

int elan_nop(elan_ctx_t *c, uint64_t cookie)
{
	return post(c, ELAN_OP_NOP, 0, 0, 0, cookie, 0, 0, 0, 0, 0, 0);
}


static const struct elan_event *next_event(const elan_ctx_t *c)
{
	const struct elan_event *e =
		elan_evq_slot((struct elan_event *)c->evq, c->ev_head);

	return LOAD_ACQ(&e->seq) == elan_ring_seq(c->ev_head) ? e : NULL;
}

static const struct elan_recv_hdr *next_msg(const elan_ctx_t *c)
{
	const struct elan_recv_hdr *h =
		elan_recvq_slot((void *)c->recvq, c->recv_head);

	return LOAD_ACQ(&h->seq) == elan_ring_seq(c->recv_head) ? h : NULL;
}

/*
 * Room was made in a ring: if an operation of the NIC waits for it and
 * the NIC sleeps, wake it.  The fence orders the head store before the
 * flag loads; the NIC sets its flags, fences, then reads the heads.
 */
static void room_made(elan_ctx_t *c)
{
	if (c->batch) {
		c->batch_held |= BATCH_ROOM;
		return;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (LOAD(&c->status->nic_waiting) && LOAD(&c->status->nic_sleeping))
		ioctl(c->fd, ELAN_IOC_DOORBELL);
}

int elan_poll_event(elan_ctx_t *c, struct elan_event *ev)
{
	const struct elan_event *e = next_event(c);

	if (!e)
		return stopped(c) ? -EPIPE : 0;
	memcpy(ev, e, sizeof(*ev));
	c->ev_head++;
	/* The slot is read before the NIC may reuse it. */
	STORE_REL(&c->ctl->ev_head, c->ev_head);
	room_made(c);
	return 1;
}

int elan_recv(elan_ctx_t *c, struct elan_recv_hdr *hdr, const void **payload)
{
	const struct elan_recv_hdr *h = next_msg(c);

	if (!h)
		return 0;
	/*
	 * Say at once that the message was seen: the slot is released only
	 * after the caller has handled it, and the NIC, which keeps polling
	 * while the receivers of what it delivered are running, would
	 * otherwise take a busy receiver for a descheduled one and sleep.
	 */
	if (c->recv_seen != c->recv_head + 1) {
		c->recv_seen = c->recv_head + 1;
		__atomic_store_n(&c->ctl->recv_seen, c->recv_seen,
				 __ATOMIC_RELAXED);
	}
	memcpy(hdr, h, sizeof(*hdr));
	if (hdr->len > ELAN_SEND_MAX)
		hdr->len = ELAN_SEND_MAX;
	if (payload)
		*payload = (const unsigned char *)h + ELAN_RECV_HDR;
	return 1;
}

void elan_recv_release(elan_ctx_t *c)
{
	if (!next_msg(c))
		return;
	c->recv_head++;
	/* The payload is read before the NIC may reuse the slot. */
	STORE_REL(&c->ctl->recv_head, c->recv_head);
	room_made(c);
}

int elan_wait(elan_ctx_t *c, int timeout_ms)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	int n;

	if (next_event(c) || next_msg(c))
		return 1;
	if (stopped(c))
		return -EPIPE;
	n = poll(&p, 1, timeout_ms);
	if (n < 0)
		return -errno;
	if (next_event(c) || next_msg(c))
		return 1;
	if (n > 0 && (p.revents & (POLLERR | POLLHUP)))
		return -EPIPE;
	return 0;
}

static const char *const elan_status_text[ELAN_STATUS_MAX] = {
	[ELAN_OK]		= "success",
	[ELAN_E_BADCMD]		= "malformed command",
	[ELAN_E_LOCAL_FAULT]	= "local address not mapped",
	[ELAN_E_LOCAL_PROT]	= "local page does not allow the access",
	[ELAN_E_REMOTE_FAULT]	= "remote address not mapped",
	[ELAN_E_REMOTE_PROT]	= "remote page does not allow the access",
	[ELAN_E_NO_CONTEXT]	= "no such node or context",
	[ELAN_E_CAPABILITY]	= "target context belongs to another job",
	[ELAN_E_TARGET_GONE]	= "target detached or exited",
	[ELAN_E_NODE_DOWN]	= "target node is down",
	[ELAN_E_QUEUE]		= "command queue entry out of sequence or corrupt",
};

const char *elan_strerror(int status)
{
	if (status < 0)
		return strerror(-status);
	if (status < ELAN_STATUS_MAX && elan_status_text[status])
		return elan_status_text[status];
	return "unknown Elan status";
}

int elan_counters(elan_ctx_t *c, struct elan_counters *out)
{
	int fd = c ? c->fd : open(elan_device(), O_RDONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, ELAN_IOC_COUNTERS, out) < 0)
		ret = -errno;
	if (!c)
		close(fd);
	return ret;
}
