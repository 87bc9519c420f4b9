/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A host reached through a remote shell: the HOST-SPEC of nfslice migrate
 * --to (ssh://[USER@]HOST). Every step on it is an nfslice command run
 * there (`ssh HOST nfslice ARGS`): nothing here reads its pins, so the
 * transport is ssh's (authentication, encryption of the image, which holds
 * the key), as rsync and git use it.
 */
#ifndef NFSL_REMOTE_H
#define NFSL_REMOTE_H

#include <stdbool.h>
#include <sys/types.h>

#define NFSL_REMOTE_ARGS 48

struct nfsl_remote {
	char dest[256];                    /* [USER@]HOST */
	char words[1024];                  /* NFSLICE_RSH and NFSLICE_REMOTE, split */
	char *prefix[NFSL_REMOTE_ARGS];    /* RSH... DEST NFSLICE... */
	int nprefix;
};

/* nfsl_remote_spec - true when @to names a host (ssh://...), not a
 * network namespace. */
bool nfsl_remote_spec(const char *to);

/*
 * nfsl_remote_parse - @spec (ssh://[USER@]HOST) into @r: the remote shell
 * is $NFSLICE_RSH (default "ssh -o BatchMode=yes"; tests use "ip netns
 * exec" with a namespace as HOST), the command run there
 * $NFSLICE_REMOTE (default "nfslice"), both split at spaces. Returns 0,
 * or -EINVAL after printing what is wrong and the form expected.
 */
int nfsl_remote_parse(const char *spec, struct nfsl_remote *r);

/*
 * nfsl_remote_run - run "nfslice ARGV..." on @r's host, its standard
 * output discarded (its errors go to ours). Each argument must be a plain
 * word ([A-Za-z0-9_.,:/@=+-]): ssh hands the remote shell one string.
 * Returns the remote exit status, or -1 when it could not run.
 */
int nfsl_remote_run(const struct nfsl_remote *r, char *const argv[]);

/*
 * nfsl_remote_spawn - start "nfslice ARGV..." on @r's host with pipes to
 * its standard input (*@in) and from its standard output (*@out).
 * Returns the child's pid, or -1 (message printed).
 */
pid_t nfsl_remote_spawn(const struct nfsl_remote *r, char *const argv[], int *in, int *out);

/* nfsl_remote_wait - the exit status of @pid (-1: killed or not ours). */
int nfsl_remote_wait(pid_t pid);

#endif /* NFSL_REMOTE_H */
