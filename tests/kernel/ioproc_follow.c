// SPDX-License-Identifier: GPL-2.0
/*
 * ioproc_follow: run a program with the pretend NIC following it.
 *
 *   ioproc_follow [-i MS] -- PROGRAM [ARGS...]
 *
 * Starts the follow mode of /dev/ioproc_test (tests/kernel/ioproc_test.ko):
 * PROGRAM and every process it starts get a NIC context on their mm (after
 * fork and after exec) that preloads every PTE the process establishes,
 * and every entry is checked against the page tables every MS ms (default
 * 50) and once more at the end.  PROGRAM knows nothing of it.
 *
 * Prints one "# follow:" line of counts on stderr and exits with
 * PROGRAM's status, 125 if an entry was stale or over-permissive (whatever
 * PROGRAM did), 126 on a set-up error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "ioproc_test.h"

int main(int argc, char **argv)
{
	struct ioproc_test_follow f = { .on = 1, .interval_ms = 50 };
	int i = 1, fd, status, code;
	pid_t pid;

	if (i + 1 < argc && !strcmp(argv[i], "-i")) {
		f.interval_ms = atoi(argv[i + 1]);
		i += 2;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc) {
		fprintf(stderr, "usage: ioproc_follow [-i MS] -- PROGRAM [ARGS...]\n");
		return 126;
	}
	fd = open(IOPROC_TEST_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, IOPROC_TEST_FOLLOW, &f) < 0) {
		fprintf(stderr, "ioproc_follow: %s: %s\n", IOPROC_TEST_DEV,
			strerror(errno));
		return 126;
	}
	pid = fork();
	if (pid < 0) {
		perror("ioproc_follow: fork");
		return 126;
	}
	if (pid == 0) {
		execvp(argv[i], argv + i);
		fprintf(stderr, "ioproc_follow: %s: %s\n", argv[i],
			strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	memset(&f, 0, sizeof(f));
	if (ioctl(fd, IOPROC_TEST_FOLLOW, &f) < 0) {
		fprintf(stderr, "ioproc_follow: stop: %s\n", strerror(errno));
		return 126;
	}
	code = WIFEXITED(status) ? WEXITSTATUS(status) :
	       128 + WTERMSIG(status);
	fprintf(stderr, "# follow: %s: exit %d; %llu mms followed, %llu translations preloaded (%llu THP blocks held whole), %llu entries checked in %llu passes, %llu stale, %llu over-permissive\n",
		argv[i], code, (unsigned long long)f.mms,
		(unsigned long long)f.preloads, (unsigned long long)f.blocks,
		(unsigned long long)f.checked, (unsigned long long)f.passes,
		(unsigned long long)f.stale, (unsigned long long)f.overperm);
	if (f.stale || f.overperm)
		return 125;
	return code;
}
