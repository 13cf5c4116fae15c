// SPDX-License-Identifier: GPL-2.0
/*
 * Print N TCP ports free now on an address, one a line:
 *
 *   free-ports N [ADDRESS]        (ADDRESS: 127.0.0.1 unless given)
 *
 * Each is a socket bound to a port below the kernel's ephemeral range
 * (net.ipv4.ip_local_port_range), all N bound at once so that they
 * differ, then closed: free when printed, not reserved.  Below that
 * range no outgoing connection and no bind to port 0 takes it before the
 * caller does (an ssh or UCX connection's local port once did, between
 * the tests' hosts file and its nicd's listen); only a program choosing
 * the same number could.  With no room below the range, the kernel
 * picks (port 0).  For the nicds
 * of elan-cluster up --hosts and the tests' sshd and ucx_perftest.
 * Exit status 0, or 2 with a message.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/socket.h>
#include <netinet/in.h>

#define MAX_PORTS	1024
#define FIRST_PORT	10000	/* the lowest port handed out */
#define TRIES		1000	/* random ports tried for each */

static const char usage[] =
	"Print N TCP ports free now on ADDRESS (default 127.0.0.1), one a line.\n"
	"\n"
	"    free-ports N [ADDRESS]\n";


/* The lowest port of the kernel's ephemeral range (32768 if unreadable). */
static int ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int low = 32768;

	if (f) {
		if (fscanf(f, "%d", &low) != 1)
			low = 32768;
		fclose(f);
	}
	return low;
}

/* Bind fd to a free port in [FIRST_PORT, low) of address a, or to port
 * 0 when there is no room there: 0, or -1 with errno. */
static int bind_low(int fd, struct addrinfo *a, int low)
{
	struct sockaddr_storage sa;
	int k;

	if (low - FIRST_PORT < 1000)
		return bind(fd, a->ai_addr, a->ai_addrlen);
	memcpy(&sa, a->ai_addr, a->ai_addrlen);
	for (k = 0; k < TRIES; k++) {
		in_port_t p = htons((in_port_t)(FIRST_PORT + random() % (low - FIRST_PORT)));

		if (sa.ss_family == AF_INET6)
			((struct sockaddr_in6 *)&sa)->sin6_port = p;
		else
			((struct sockaddr_in *)&sa)->sin_port = p;
		if (!bind(fd, (struct sockaddr *)&sa, a->ai_addrlen))
			return 0;
		if (errno != EADDRINUSE)
			return -1;
	}
	return -1;
}
int main(int argc, char **argv)
{
	const char *addr = argc > 2 ? argv[2] : "127.0.0.1";
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *ai;
	char *end, port[NI_MAXSERV];
	int *fds, i, n, e, low;

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
	low = ephemeral_low();
	srandom((unsigned int)(time(NULL) ^ getpid()));
	for (i = 0; i < n; i++) {
		fds[i] = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[i] < 0 || bind_low(fds[i], ai, low) < 0) {
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
