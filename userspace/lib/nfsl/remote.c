// SPDX-License-Identifier: GPL-2.0
/* nfslice migrate's remote hosts: commands through a remote shell (remote.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "nfsl/errors.h"
#include "nfsl/remote.h"

#define SCHEME "ssh://"

bool nfsl_remote_spec(const char *to)
{
	return to && !strncmp(to, SCHEME, strlen(SCHEME));
}

/* A word the remote shell reads as itself. */
static bool plain(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789_.,:/@=+-", *s))
			return false;
	return true;
}

/* Split @s at spaces into @r->prefix, copying into @r->words at *@used. */
static int split(struct nfsl_remote *r, const char *s, size_t *used)
{
	char *w = r->words + *used, *save = NULL, *tok;
	size_t n = strlen(s) + 1;

	if (*used + n > sizeof(r->words))
		return -1;
	memcpy(w, s, n);
	*used += n;
	for (tok = strtok_r(w, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (r->nprefix >= NFSL_REMOTE_ARGS / 2)
			return -1;
		r->prefix[r->nprefix++] = tok;
	}
	return 0;
}

int nfsl_remote_parse(const char *spec, struct nfsl_remote *r)
{
	const char *host = spec + strlen(SCHEME), *rsh = getenv("NFSLICE_RSH"),
		   *cmd = getenv("NFSLICE_REMOTE");
	size_t used = 0;
	int before;

	memset(r, 0, sizeof(*r));
	if (nfsl_remote_spec(spec) && strchr(host, ':')) {
		nfsl_err("--to %s: no port in HOST-SPEC; give it in ~/.ssh/config or as "
			 "NFSLICE_RSH='ssh -p PORT'", spec);
		return -EINVAL;
	}
	if (!nfsl_remote_spec(spec) || !plain(host) || strchr(host, '/') ||
	    snprintf(r->dest, sizeof(r->dest), "%s", host) >= (int)sizeof(r->dest)) {
		nfsl_err("--to %s: a host is ssh://[USER@]HOST (a name or address; port, "
			 "keys and options in ~/.ssh/config)", spec);
		return -EINVAL;
	}
	if (split(r, rsh && *rsh ? rsh : "ssh -o BatchMode=yes", &used) || !r->nprefix) {
		nfsl_err("NFSLICE_RSH='%s': give the remote shell command, e.g. 'ssh -p 2222'",
			 rsh);
		return -EINVAL;
	}
	r->prefix[r->nprefix++] = r->dest;
	before = r->nprefix;
	if (split(r, cmd && *cmd ? cmd : "nfslice", &used) || r->nprefix == before) {
		nfsl_err("NFSLICE_REMOTE='%s': give the nfslice command on the remote host, "
			 "e.g. /usr/local/sbin/nfslice", cmd);
		return -EINVAL;
	}
	return 0;
}

/* The whole command line: prefix then @argv; NULL when an argument is not
 * a plain word or there are too many. */
static int build(const struct nfsl_remote *r, char *const argv[], char **out)
{
	int n = 0;

	for (; n < r->nprefix; n++)
		out[n] = r->prefix[n];
	for (int i = 0; argv[i]; i++) {
		if (n >= NFSL_REMOTE_ARGS - 1)
			return nfsl_err("too many arguments for the remote command");
		if (!plain(argv[i]))
			return nfsl_err("'%s': not a plain word, which the remote shell would "
					"read otherwise; use names of [A-Za-z0-9_.,:/@=+-]",
					argv[i]);
		out[n++] = argv[i];
	}
	out[n] = NULL;
	return 0;
}

pid_t nfsl_remote_spawn(const struct nfsl_remote *r, char *const argv[], int *in, int *out)
{
	char *args[NFSL_REMOTE_ARGS];
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 };
	pid_t pid;

	if (build(r, argv, args))
		return -1;
	if ((in && pipe2(pin, O_CLOEXEC)) || (out && pipe2(pout, O_CLOEXEC))) {
		nfsl_err("pipe: %s", strerror(errno));
		goto fail;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		nfsl_err("fork: %s", strerror(errno));
		goto fail;
	}
	if (!pid) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		dup2(in ? pin[0] : null, STDIN_FILENO);
		dup2(out ? pout[1] : null, STDOUT_FILENO);
		execvp(args[0], args);
		fprintf(stderr, "nfslice: cannot run %s: %s\n", args[0], strerror(errno));
		_exit(127);
	}
	if (in) {
		close(pin[0]);
		*in = pin[1];
	}
	if (out) {
		close(pout[1]);
		*out = pout[0];
	}
	return pid;
fail:
	for (int i = 0; i < 2; i++) {
		if (pin[i] >= 0)
			close(pin[i]);
		if (pout[i] >= 0)
			close(pout[i]);
	}
	return -1;
}

int nfsl_remote_wait(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int nfsl_remote_run(const struct nfsl_remote *r, char *const argv[])
{
	pid_t pid = nfsl_remote_spawn(r, argv, NULL, NULL);

	return pid < 0 ? -1 : nfsl_remote_wait(pid);
}
