// SPDX-License-Identifier: GPL-2.0
/*
 * Validation of a command copied out of a queue slot.  Everything here is
 * guest-written and untrusted; the copy is private, so it cannot change
 * after it was checked.
 */
#include "nicd.h"

static const char *const status_names[] = {
	[ELAN_OK] = "OK",
	[ELAN_E_BADCMD] = "BADCMD",
	[ELAN_E_LOCAL_FAULT] = "LOCAL_FAULT",
	[ELAN_E_LOCAL_PROT] = "LOCAL_PROT",
	[ELAN_E_REMOTE_FAULT] = "REMOTE_FAULT",
	[ELAN_E_REMOTE_PROT] = "REMOTE_PROT",
	[ELAN_E_NO_CONTEXT] = "NO_CONTEXT",
	[ELAN_E_CAPABILITY] = "CAPABILITY",
	[ELAN_E_TARGET_GONE] = "TARGET_GONE",
	[ELAN_E_NODE_DOWN] = "NODE_DOWN",
	[ELAN_E_QUEUE] = "QUEUE",
};

const char *nicd_status_name(int status)
{
	if (status >= 0 && status < ELAN_STATUS_MAX)
		return status_names[status];
	return "?";
}

const char *nicd_op_name(int op)
{
	static const char *const names[] = { "nop", "put", "get", "atomic",
					     "send", "fence" };

	if (op >= 0 && op <= ELAN_OP_FENCE)
		return names[op];
	return "bad-op";
}

/* Largest put/get: the event's len field is 32 bits. */
#define NICD_MAX_RW	0xffffffffULL

static int range_ok(uint64_t addr, uint64_t len)
{
	return len == 0 || addr + len - 1 >= addr;	/* no wrap past 2^64 */
}

int nicd_validate_cmd(const struct nicd *n, const struct elan_cmd *c)
{
	uint32_t node = ELAN_ADDR_NODE(c->dst), ctx = ELAN_ADDR_CTX(c->dst);
	int remote_op = 0;

	switch (c->op) {
	case ELAN_OP_NOP:
	case ELAN_OP_FENCE:
		return c->flags ? ELAN_E_BADCMD : ELAN_OK;
	case ELAN_OP_PUT:
	case ELAN_OP_GET:
		if (c->flags & ~ELAN_CMDF_REMOTE_EVENT)
			return ELAN_E_BADCMD;
		if (c->len > NICD_MAX_RW || !range_ok(c->laddr, c->len) ||
		    !range_ok(c->raddr, c->len))
			return ELAN_E_BADCMD;
		remote_op = 1;
		break;
	case ELAN_OP_ATOMIC:
		if (c->flags & ~(ELAN_CMDF_REMOTE_EVENT | ELAN_CMDF_FETCH))
			return ELAN_E_BADCMD;
		/* 8- or 4-byte operands, aligned to their size (so within
		 * one page) at both ends */
		if (c->aop > ELAN_AOP_XOR || (c->len != 8 && c->len != 4) ||
		    (c->raddr & (c->len - 1)))
			return ELAN_E_BADCMD;
		if ((c->flags & ELAN_CMDF_FETCH) && (c->laddr & (c->len - 1)))
			return ELAN_E_BADCMD;
		remote_op = 1;
		break;
	case ELAN_OP_SEND:
		if (c->flags || c->len > ELAN_SEND_MAX ||
		    !range_ok(c->laddr, c->len))
			return ELAN_E_BADCMD;
		remote_op = 1;
		break;
	default:
		return ELAN_E_BADCMD;
	}
	if (remote_op && (node >= n->nodes || !n->node[node].configured ||
			  ctx >= ELAN_MAX_CTX))
		return ELAN_E_NO_CONTEXT;
	return ELAN_OK;
}
