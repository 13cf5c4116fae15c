// SPDX-License-Identifier: GPL-2.0
/*
 * Send one QMP command to a QEMU and print the JSON of its "return" (a
 * string as it is): elan_qmp of cluster/lib.sh.
 *
 *   cluster/qmp SOCKET COMMAND [JSON-ARGUMENTS]
 *   cluster/qmp SOCKET hmp "info usernet"     (a human monitor command)
 *
 * Exit status 0 on success, 1 when QEMU answered with an error, 2 when the
 * socket could not be reached or the answer was not QMP (or the arguments
 * were not JSON).
 *
 * QMP is one JSON value a line: QEMU's greeting ({"QMP": ...}), then the
 * reply of each command ({"return": ...} or {"error": ...}), with events
 * between them.  The JSON is Debian's libjansson; what it prints is written
 * as the first, Python, version of this tool wrote it (json.dumps: ", " and
 * ": " between items, members in their order, non-ASCII as \uXXXX).
 * jansson keeps integers in signed 64 bits: a reply with a larger one is
 * refused (exit 2).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <jansson.h>

#define TIMEOUT_S	10	/* the connect, and each send and receive */
#define DUMP_FLAGS	(JSON_ENCODE_ANY | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII)

static const char usage[] =
	"Send one QMP command to a QEMU and print the JSON of its \"return\".\n"
	"\n"
	"    cluster/qmp SOCKET COMMAND [JSON-ARGUMENTS]\n"
	"    cluster/qmp SOCKET hmp \"info usernet\"     (a human monitor command)\n"
	"\n"
	"Exit status 0 on success, 1 when QEMU answered with an error, 2 when the\n"
	"socket could not be reached or the answer was not QMP.\n";

static const char *path;	/* the socket, for the messages */

/* Trouble with the socket or the protocol: say so, exit 2. */
static void broken(const char *what)
{
	fprintf(stderr, "qmp: %s: %s\n", path, what);
	exit(2);
}

static const char *io_error(FILE *f)
{
	if (f && !ferror(f))
		return "QMP connection closed";
	return errno == EAGAIN || errno == EWOULDBLOCK ? "timed out" :
	       strerror(errno);
}

/* QEMU's next line, an object (or array) of JSON; exits 2 on anything else. */
static json_t *receive(FILE *in)
{
	static char *line;
	static size_t cap;
	json_error_t jerr;
	ssize_t n;
	json_t *v;

	errno = 0;
	n = getline(&line, &cap, in);
	if (n < 0)
		broken(io_error(in));
	v = json_loadb(line, (size_t)n, 0, &jerr);
	if (!v) {
		n = (ssize_t)strcspn(line, "\r\n");
		fprintf(stderr, "qmp: %s: bad line from QEMU (%s): %.*s\n", path,
			jerr.text, n > 200 ? 200 : (int)n, line);
		exit(2);
	}
	return v;
}

/*
 * Execute cmd (with args unless NULL) and read up to its reply, past any
 * events: the reply, which has a "return" or an "error".
 */
static json_t *call(FILE *in, int fd, const char *cmd, json_t *args)
{
	json_t *msg = json_pack("{s:s}", "execute", cmd);
	char *text;
	size_t len, off;

	if (!msg || (args && json_object_set(msg, "arguments", args)))
		broken("cannot make the command's JSON (not UTF-8?)");
	text = json_dumps(msg, DUMP_FLAGS);
	if (!text)
		broken("cannot write the command as JSON");
	len = strlen(text);
	text[len++] = '\n';	/* over the NUL: the length is what is sent */
	for (off = 0; off < len;) {
		ssize_t r = send(fd, text + off, len - off, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			broken(io_error(NULL));
		off += (size_t)r;
	}
	free(text);
	json_decref(msg);
	for (;;) {
		json_t *reply = receive(in);

		if (json_object_get(reply, "return") ||
		    json_object_get(reply, "error"))
			return reply;
		json_decref(reply);	/* an event */
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = TIMEOUT_S };
	json_t *args = NULL, *greeting, *reply, *ret, *err;
	const char *command;
	json_error_t jerr;
	char *out;
	FILE *in;
	int fd;

	if (argc < 3 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, stderr);
		return 2;
	}
	path = argv[1];
	command = argv[2];
	if (!strcmp(command, "hmp")) {
		size_t n = 1;
		char *line;
		int i;

		for (i = 3; i < argc; i++)
			n += strlen(argv[i]) + 1;
		line = calloc(1, n);
		for (i = 3; line && i < argc; i++)
			strcat(strcat(line, i > 3 ? " " : ""), argv[i]);
		command = "human-monitor-command";
		args = line ? json_pack("{s:s}", "command-line", line) : NULL;
		if (!args)
			broken("cannot make the command's JSON (not UTF-8?)");
		free(line);
	} else if (argc > 3) {
		args = json_loads(argv[3], JSON_DECODE_ANY, &jerr);
		if (!args) {
			fprintf(stderr, "qmp: %s: not JSON (%s)\n", argv[3], jerr.text);
			return 2;
		}
		if (json_is_null(args))	/* as no arguments */
			args = NULL;
	}
	signal(SIGPIPE, SIG_IGN);

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		broken(io_error(NULL));
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* a unix socket's connect waits as long as SO_SNDTIMEO says */
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    !(in = fdopen(fd, "r")))
		broken(io_error(NULL));

	greeting = receive(in);
	if (!json_object_get(greeting, "QMP"))
		broken("no QMP greeting");
	/* its reply does not matter: without it the command fails */
	json_decref(call(in, fd, "qmp_capabilities", NULL));
	reply = call(in, fd, command, args);
	fclose(in);

	err = json_object_get(reply, "error");
	if (err) {
		json_t *desc = json_object_get(err, "desc");

		if (json_is_string(desc)) {
			fprintf(stderr, "qmp: %s: %s\n", command, json_string_value(desc));
		} else {
			out = json_dumps(desc ? desc : err, DUMP_FLAGS);
			fprintf(stderr, "qmp: %s: %s\n", command, out ? out : "error");
			free(out);
		}
		return 1;
	}
	ret = json_object_get(reply, "return");
	if (json_is_string(ret)) {
		fwrite(json_string_value(ret), 1, json_string_length(ret), stdout);
		putchar('\n');
	} else {
		out = json_dumps(ret, DUMP_FLAGS);
		if (!out)
			broken("cannot write the return as JSON");
		puts(out);
		free(out);
	}
	if (fflush(stdout)) {
		fprintf(stderr, "qmp: standard output: %s\n", strerror(errno));
		return 1;
	}
	json_decref(reply);
	json_decref(greeting);
	json_decref(args);
	return 0;
}
