// SPDX-License-Identifier: GPL-2.0
/*
 * Print N TCP ports free now on an address, one a line:
 *
 *   free-ports N [ADDRESS]        (ADDRESS: 127.0.0.1 unless given)
 *
 * Each is a socket bound to port 0 (the kernel picks one), all N bound at
 * once so that they differ, then closed: free when printed, not reserved
 * (another program may take one before the caller does).  For the nicds
 * of elan-cluster up --hosts and the tests' sshd and ucx_perftest.
 * Exit status 0, or 2 with a message.
 */
#define _GNU_SOURCE
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#define MAX_PORTS	1024

static const char usage[] =
	"Print N TCP ports free now on ADDRESS (default 127.0.0.1), one a line.\n"
	"\n"
	"    free-ports N [ADDRESS]\n";

int main(int argc, char **argv)
{
	const char *addr = argc > 2 ? argv[2] : "127.0.0.1";
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *ai;
	char *end, port[NI_MAXSERV];
	int *fds, i, n, e;

	if (argc < 2 || argc > 3 || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "--help")) {
		fputs(usage, stderr);
		return 2;
	}
	n = (int)strtol(argv[1], &end, 10);
	if (*end || end == argv[1] || n < 1 || n > MAX_PORTS) {
		fprintf(stderr, "free-ports: N must be 1..%d, not '%s'\n",
			MAX_PORTS, argv[1]);
		return 2;
	}
	e = getaddrinfo(addr, "0", &hints, &ai);
	if (e) {
		fprintf(stderr, "free-ports: %s: %s\n", addr, gai_strerror(e));
		return 2;
	}
	fds = calloc((size_t)n, sizeof(*fds));
	if (!fds) {
		fputs("free-ports: out of memory\n", stderr);
		return 2;
	}
	for (i = 0; i < n; i++) {
		fds[i] = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[i] < 0 || bind(fds[i], ai->ai_addr, ai->ai_addrlen) < 0) {
			fprintf(stderr, "free-ports: %s: %m\n", addr);
			return 2;
		}
	}
	for (i = 0; i < n; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);

		if (getsockname(fds[i], (struct sockaddr *)&sa, &len) < 0 ||
		    getnameinfo((struct sockaddr *)&sa, len, NULL, 0, port,
				sizeof(port), NI_NUMERICSERV)) {
			fprintf(stderr, "free-ports: %s: no port\n", addr);
			return 2;
		}
		printf("%s\n", port);
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	freeaddrinfo(ai);
	free(fds);
	if (fflush(stdout)) {
		fprintf(stderr, "free-ports: standard output: %m\n");
		return 2;
	}
	return 0;
}
