// SPDX-License-Identifier: GPL-2.0
/*
 * A stand-in for QEMU: elan-cluster's handling of hosts, without guests
 * (the dry part of tests/hosts/check).
 *
 *   ELAN_QEMU_BIN=tests/hosts/fake-qemu cluster/elan-cluster up ...
 *
 * Started with QEMU's arguments, it boots nothing: it answers QMP's "info
 * usernet" with a forward to an sshd of its own on 127.0.0.1 (the
 * cluster's host key and authorized key, as the guest's sshd has them),
 * writes the ready marker to the console file and waits.  That sshd runs
 * no command: every one ends in this program's --guest-command, which only
 * takes the power-off ("kill -USR2 1": this stand-in exits, writing
 * ELAN-EXIT=0 to the console) and exits 0 for anything else, so nothing a
 * test sends "into the guest" runs on the host.  Needs /usr/sbin/sshd and
 * /run/sshd.  Every QMP command but human-monitor-command returns {}.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

static char rundir[PATH_MAX], console[PATH_MAX];
static pid_t sshd = -1;

static void die(const char *what)
{
	fprintf(stderr, "fake-qemu: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Append s to the console file (from the SIGTERM handler too). */
static void to_console(const char *s)
{
	int fd = open(console, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	if (fd >= 0) {
		if (write(fd, s, strlen(s)) < 0)
			(void)0;	/* nobody to tell */
		close(fd);
	}
}

static void bye(int sig)
{
	(void)sig;
	if (sshd > 0)
		kill(sshd, SIGTERM);
	to_console("ELAN-EXIT=0\n");
	_exit(0);
}

/* The sshd's ForceCommand: only the power-off does something. */
static int guest_command(const char *dir)
{
	const char *cmd = getenv("SSH_ORIGINAL_COMMAND");
	char path[PATH_MAX];
	FILE *f;
	int pid;

	if (!cmd)
		return 0;
	cmd += strspn(cmd, " \t\n");
	if (strncmp(cmd, "kill -USR2 1", 12) || cmd[12 + strspn(cmd + 12, " \t\n")])
		return 0;
	snprintf(path, sizeof(path), "%s/fake-qemu.pid", dir);
	f = fopen(path, "r");
	if (f && fscanf(f, "%d", &pid) == 1 && pid > 0)
		kill(pid, SIGTERM);
	if (f)
		fclose(f);
	return 0;
}

/* One QMP connection: the greeting, then a reply to each line. */
static void serve(int c, int port)
{
	static const char greeting[] = "{\"QMP\": {\"version\": {}, \"capabilities\": []}}\n";
	char usernet[512], in[4096];
	size_t have = 0;
	FILE *out = fdopen(c, "w");

	snprintf(usernet, sizeof(usernet), "{\"return\": \"Hub -1 (ctl):\\r\\n"
		 "  Protocol[State]    FD  Source Address  Port   Dest. Address  Port RecvQ SendQ\\r\\n"
		 "  TCP[HOST_FORWARD]  13       127.0.0.1 %d   10.200.254.15    22     0     0\\r\\n\"}\n",
		 port);
	if (!out || fputs(greeting, out) < 0 || fflush(out))
		return;
	for (;;) {
		char *nl;
		ssize_t r = read(c, in + have, sizeof(in) - 1 - have);

		if (r <= 0)
			return;
		have += (size_t)r;
		in[have] = '\0';
		while ((nl = strchr(in, '\n'))) {
			*nl = '\0';
			fputs(strstr(in, "\"human-monitor-command\"") ? usernet :
			      "{\"return\": {}}\n", out);
			if (fflush(out))
				return;
			have -= (size_t)(nl + 1 - in);
			memmove(in, nl + 1, have + 1);
		}
		if (have == sizeof(in) - 1)	/* a line too long: not ours */
			return;
	}
}

/* The value of "key=" among the comma-separated options of opt, or NULL. */
static const char *option(const char *opt, const char *key, char *buf, size_t n)
{
	size_t k = strlen(key);
	const char *p = opt;

	for (;;) {
		if (!strncmp(p, key, k)) {
			snprintf(buf, n, "%.*s", (int)strcspn(p + k, ","), p + k);
			return buf;
		}
		p = strchr(p, ',');
		if (!p)
			return NULL;
		p++;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len = sizeof(sin);
	char qmp[PATH_MAX] = "", cdir[PATH_MAX] = "", self[PATH_MAX];
	char path[PATH_MAX + 32], log[PATH_MAX + 32];
	int i, s, port;
	FILE *f;

	if (argc == 3 && !strcmp(argv[1], "--guest-command"))
		return guest_command(argv[2]);
	for (i = 1; i + 1 < argc; i++) {
		const char *a = argv[i + 1];

		if (!strcmp(argv[i], "-qmp") && !strncmp(a, "unix:", 5))
			snprintf(qmp, sizeof(qmp), "%.*s", (int)strcspn(a + 5, ","), a + 5);
		else if (!strcmp(argv[i], "-chardev") && !strncmp(a, "file,id=con,", 12) &&
			 strstr(a, "path="))
			snprintf(console, sizeof(console), "%s", strstr(a, "path=") + 5);
		else if (!strcmp(argv[i], "-fsdev") && strstr(a, "id=fs_cluster"))
			option(a, "path=", cdir, sizeof(cdir));
	}
	if (!*qmp || !*console || !*cdir || strlen(qmp) >= sizeof(sun.sun_path)) {
		fputs("fake-qemu: not an elan-cluster node's arguments\n", stderr);
		return 1;
	}
	snprintf(rundir, sizeof(rundir), "%s", qmp);
	*strrchr(rundir, '/') = '\0';		/* qmp is DIR/qmp.sock */
	snprintf(path, sizeof(path), "%s/fake-qemu.pid", rundir);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%d", (int)getpid()) < 0 || fclose(f))
		die(path);

	/* a port free now for the sshd (the guest's forward) */
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    getsockname(s, (struct sockaddr *)&sin, &len) < 0)
		die("a free port");
	port = ntohs(sin.sin_port);
	close(s);
	i = (int)readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (i < 0)
		die("/proc/self/exe");
	self[i] = '\0';
	snprintf(path, sizeof(path), "%s/fake-sshd_config", rundir);
	f = fopen(path, "w");
	if (!f || fprintf(f, "Port %d\nListenAddress 127.0.0.1\n"
			  "HostKey %s/ssh/ssh_host_ed25519_key\n"
			  "AuthorizedKeysFile %s/ssh/authorized_keys\n"
			  "PidFile %s/fake-sshd.pid\n"
			  "PermitRootLogin prohibit-password\n"
			  "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
			  "UsePAM no\nStrictModes no\nUseDNS no\n"
			  "MaxStartups 64:30:128\nMaxSessions 64\n"
			  "ForceCommand %s --guest-command %s\n",
			  port, cdir, cdir, rundir, self, rundir) < 0 || fclose(f))
		die(path);
	snprintf(log, sizeof(log), "%s/fake-sshd.log", rundir);
	sshd = fork();
	if (sshd < 0)
		die("fork");
	if (sshd == 0) {
		execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-f", path, "-E", log, (char *)NULL);
		die("/usr/sbin/sshd");
	}
	signal(SIGTERM, bye);

	strcpy(sun.sun_path, qmp);
	unlink(qmp);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(s, 8) < 0)
		die(qmp);
	to_console("fake-qemu: no guest here\nELAN-READY\n");
	for (;;) {
		int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
		pid_t pid;

		while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
			if (pid == sshd)
				sshd = -1;
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		pid = fork();
		if (pid == 0) {		/* one connection, in a child */
			signal(SIGTERM, SIG_DFL);
			close(s);
			serve(c, port);
			_exit(0);
		}
		close(c);
	}
}
