// SPDX-License-Identifier: GPL-2.0
/*
 * elan-nicd's placement: which host CPU the NIC sleeps on, found from
 * the guests' vCPU threads in /proc.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "elan-nicd.h"

/*
 * Where the NIC runs on the host.  nicd is real-time: it wakes on the
 * CPU it slept on and keeps whatever vCPU runs there off it while it
 * works.  With more busy threads than cores (two spinning MPI ranks and
 * nicd on two) it always sits beside some vCPU.  Beside one whose
 * process posts commands it delays each next command (MPI_Put + flush:
 * 13-16 us an op); beside one whose process only waits, a passive
 * target spinning in a barrier, it costs nothing (1.4-1.8 us).  So at
 * most every PLACE_NS, busy or not, nicd looks for a guest with a
 * running vCPU whose contexts took no command since the last look while
 * another guest's did, and took all they were given (nicd_node_settled),
 * and moves to that vCPU's CPU; when every running guest posts, it
 * leaves the choice to the host again.  Looking while busy bounds what a
 * guest flooding the NIC can cost a quiet one: once its vCPU falls
 * behind, nicd leaves it within PLACE_NS.  QEMU names its
 * vCPU threads "CPU n/..." (-name ...,debug-threads=on); without names
 * nothing moves.
 */
#define PLACE_NS	2000000ull

cpu_set_t place_allowed;		/* our affinity at start */
uint64_t place_moves;

static void vcpus_scan(struct srv_node *s)
{
	char path[64], comm[32];
	struct dirent *d;
	DIR *dir;
	int fd;
	ssize_t r;

	s->vcpus_scanned = 1;
	if (s->qemu_pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)s->qemu_pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir)) && s->nvcpu < NVCPU_MAX) {
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/comm",
			 (int)s->qemu_pid, d->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (r < 4 || strncmp(comm, "CPU ", 4))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/stat",
			 (int)s->qemu_pid, d->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			s->vcpu_stat[s->nvcpu++] = fd;
	}
	closedir(dir);
}

/* The host CPU of a running vCPU of the guest, or -1. */
static int vcpu_running_cpu(struct srv_node *s)
{
	char buf[512], *p;
	int i, f, cpu;
	ssize_t r;

	if (!s->vcpus_scanned)
		vcpus_scan(s);
	for (i = 0; i < s->nvcpu; i++) {
		r = pread(s->vcpu_stat[i], buf, sizeof(buf) - 1, 0);
		if (r <= 0)
			continue;
		buf[r] = 0;
		p = strrchr(buf, ')');	/* the name may hold anything */
		if (!p || p[1] != ' ' || p[2] != 'R')
			continue;
		/* from field 3, the state, to field 39, the processor */
		for (p += 2, f = 3; f < 39 && p; f++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (p && sscanf(p, "%d", &cpu) == 1 && cpu >= 0 &&
		    cpu < CPU_SETSIZE && CPU_ISSET(cpu, &place_allowed))
			return cpu;
	}
	return -1;
}

void place(uint64_t now)
{
	static uint64_t next;
	static int pinned;
	uint32_t i, j, posters = 0;
	int quiet[ELAN_MAX_NODES], nquiet = 0, cpu = -1;
	uint64_t cmds;
	cpu_set_t set;

	if (now < next)
		return;
	next = now + PLACE_NS;
	for (i = 0; i < nic.nodes; i++) {
		if (!srv[i].configured || !nic.node[i].up)
			continue;
		for (cmds = 0, j = 0; j < ELAN_MAX_CTX; j++)
			cmds += nic.node[i].ctx[j].ncmds;
		/*
		 * Quiet: it posted nothing, and it is not behind either
		 * (it took every event and message and runs no op).  A
		 * guest that is behind is not a passive target but one that
		 * does not get the CPU: beside it we would starve it for
		 * good (we are real-time), as a guest flooding us with work
		 * would then make us do to its victims.
		 */
		if (cmds != srv[i].place_cmds)
			posters++;
		else if (nicd_node_settled(&nic, i))
			quiet[nquiet++] = (int)i;
		srv[i].place_cmds = cmds;
	}
	if (!posters)
		return;
	for (i = 0; i < (uint32_t)nquiet && cpu < 0; i++)
		cpu = vcpu_running_cpu(&srv[quiet[i]]);
	if (cpu < 0) {
		/* every running guest posts: leave it to the host again */
		if (pinned && !sched_setaffinity(0, sizeof(place_allowed),
						 &place_allowed))
			pinned = 0;
		return;
	}
	if (pinned && cpu == sched_getcpu())
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (!sched_setaffinity(0, sizeof(set), &set)) {
		pinned = 1;
		place_moves++;
	}
}
