/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elan-nicd, the program around the nicd library: what its files share.
 *
 *   elan-nicd.c       main: the options, the nodes, the polling loop
 *   nicd_tunables.c   the tunables (options, environment variables)
 *   nicd_ivshmem.c    the ivshmem server: sockets, eventfds, epoll
 *   ivshmem_server.c  its protocol: the socket, the messages (ivshmem_server.h)
 *   nicd_place.c      which host CPU nicd sleeps on (vCPUs in /proc)
 *   nicd_inject.c     fault injection (--inject-stall-ms)
 *   nicd_fabric.c     the links to other hosts' nicds (UCX), nicd_fabric.h
 *
 * Its files define _GNU_SOURCE before any include.
 */
#ifndef ELAN_NICD_H
#define ELAN_NICD_H

#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include "nicd.h"

/* ------------------------------------------------------------ elan-nicd.c */

extern struct nicd nic;
extern struct nicd_engine eng;
extern volatile sig_atomic_t stop_sig;	/* SIGTERM or SIGINT came */

void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ------------------------------------------------------------ nicd_tunables.c */

struct elan_nicd_cfg {
	uint64_t spin_us, lag_us, reply_us, fault_ms;
	uint64_t nap_us, stream_cmds;
	uint64_t recv_slots;
	uint64_t rt_prio;
	uint64_t stall_ms;
	uint64_t place;
	uint64_t fabric_timeout_ms;
	const char *log, *pidfile, *trace;
	const char *fabric, *host;	/* --fabric TABLE --host NAME */
};
extern struct elan_nicd_cfg cfg;

/* Read the environment, then the options; --node specs into nodes_spec. */
void parse_args(int argc, char **argv, const char **nodes_spec, int *nspec,
		int *verbose);

/* ------------------------------------------------------------ nicd_ivshmem.c */

#define NVCPU_MAX	8

struct srv_node {
	int configured;
	char *sock_path;
	int lfd, cfd;
	int region_fd;
	void *region;
	int db[ELAN_NR_IRQS];		/* guest -> NIC (we read) */
	int irq[ELAN_NR_IRQS];		/* NIC -> guest (we write) */
	uint64_t connects;
	pid_t qemu_pid;			/* the peer of cfd */
	int vcpus_scanned;
	int nvcpu;
	int vcpu_stat[NVCPU_MAX];	/* /proc/PID/task/TID/stat of its vCPUs */
	uint64_t place_cmds;		/* commands done at the last placement */
};

/* epoll data: what an event is about */
enum { EV_LISTEN = 1, EV_CONN, EV_DOORBELL, EV_FABRIC };
#define EV_DATA(type, node, vec) \
	((uint64_t)(type) << 32 | (uint64_t)(node) << 8 | (uint64_t)(vec))

extern struct srv_node srv[ELAN_MAX_NODES];
extern int fabric_on;			/* --fabric given */
extern int epfd;

/* nic.irq: raise vector vec of node's guest. */
void irq_cb(void *arg, uint32_t node, uint32_t vec);
/* Handle what epoll reports.  Returns how many doorbells/socket events. */
int poll_events(int timeout_ms);
/* The same, waiting at most timeout_ns (a nap). */
int poll_events_ns(uint64_t timeout_ns);
/* Listen on node's socket (bound under a temporary name, then renamed). */
void listen_node(uint32_t node);

/* ------------------------------------------------------------ nicd_place.c */

extern cpu_set_t place_allowed;		/* our affinity at start */
extern uint64_t place_moves;

/* At most every PLACE_NS: move beside a running vCPU of a quiet guest. */
void place(uint64_t now);

/* ------------------------------------------------------------ nicd_inject.c */

/* SIGUSR2: stall the next chunk; SIGUSR1: the same, its pages unnamed. */
void on_stall_signal(int sig);
/* eng.chunk_hook: the stall itself. */
void stall_hook(struct nicd *n, struct nicd_engine *e, uint32_t node,
		int write, void *arg);

#endif /* ELAN_NICD_H */
