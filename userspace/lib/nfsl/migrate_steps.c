// SPDX-License-Identifier: GPL-2.0
/*
 * The steps both modes of a migration share (migrate.h): the CLI's own
 * commands run in the target, the host-wide lock of the switch, the new
 * instance attached holding and, once it slices, no longer holding.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "nfsl/migrate_steps.h"
#include "nfsl/domains.h"
#include "nfsl/errors.h"
#include "nfsl/holding.h"
#include "nfsl/netns.h"
#include "util/util.h"

/* Run "nfslice ARGS..." (argv[0] is the subcommand) in the namespace @ns
 * (NULL: ours), its standard output discarded (its errors go to our
 * stderr). Returns its exit status, or -1 when it could not run. */
static int run_in_netns(const struct nfsl_migration *m, const char *ns, char *const argv[])
{
	char *args[32] = { (char *)m->r->argv0 };
	int st, n = 1;
	pid_t pid;

	for (; argv[n - 1] && n < 31; n++)
		args[n] = argv[n - 1];
	args[n] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (ns) {
			int fd = open(ns, O_RDONLY | O_CLOEXEC);

			if (fd < 0 || setns(fd, CLONE_NEWNET)) {
				fprintf(stderr, "nfslice: cannot enter %s: %s\n", ns, strerror(errno));
				_exit(1);
			}
		}
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execv(m->r->exe, args);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int nfsl_mig_run_at_target(const struct nfsl_migration *m, char *const argv[])
{
	return m->remote ? nfsl_remote_run(&m->rem, argv) : run_in_netns(m, m->ns, argv);
}

int nfsl_mig_detach_old(const struct nfsl_migration *m, bool no_drain)
{
	return run_in_netns(m, NULL, (char *const[]){ "detach", "--name", (char *)m->r->name,
						      no_drain ? "--no-drain" : NULL, NULL });
}

int nfsl_mig_lock(__u64 *wait_ns)
{
	__u64 t0 = nfsl_now_ns();
	int lock = nfsl_domains_lock();

	*wait_ns = nfsl_now_ns() - t0;
	if (lock < 0)
		nfsl_err("cannot lock %s: %s", NFSL_LOCK_FILE, nfsl_lock_strerror(lock));
	return lock;
}

void nfsl_mig_unlock(int *lock)
{
	if (*lock >= 0)
		close(*lock);
	*lock = -1;
}

/* Pin directory of domain @name in the namespace @ns opens. */
static int target_dir(const char *ns, const char *name, char *dir, size_t len)
{
	__u64 cookie;
	int back, rc = nfsl_netns_enter(ns, &back);

	if (rc)
		return rc;
	rc = nfsl_netns_cookie(&cookie);
	nfsl_netns_return(back);
	return rc ? rc : nfsl_domain_dir_of(dir, len, cookie, name);
}

/*
 * Test hook (tests/integration/test_migrate.py, docs/cli.md "Killed
 * migrations"): NFSLICE_TEST_HOOK=kill-holding or stop-holding makes this
 * process raise SIGKILL or SIGSTOP on itself once the new instance is
 * attached holding and tagged, the point a kill used to leave it behind.
 */
static void test_hook(const char *point)
{
	const char *h = getenv("NFSLICE_TEST_HOOK");
	char want[32];

	if (!h)
		return;
	snprintf(want, sizeof(want), "kill-%s", point);
	if (!strcmp(h, want))
		raise(SIGKILL);
	snprintf(want, sizeof(want), "stop-%s", point);
	if (!strcmp(h, want))
		raise(SIGSTOP);
}

int nfsl_mig_attach_new(struct nfsl_migration *m)
{
	const struct nfsl_migrate_req *r = m->r;
	__u64 cookie = 0;
	char ttl[16];
	int err;

	snprintf(ttl, sizeof(ttl), "%u", m->d.cfg.ttl_us / 1000);
	if (nfsl_mig_run_at_target(m, m->attach_argv)) {
		nfsl_err("attaching the new instance in %s failed (above); nothing changed", r->to);
		return -1;
	}
	if (!m->remote) {
		err = target_dir(m->ns, r->name, m->new_dir, sizeof(m->new_dir));
		if (!err) {
			nfsl_netns_cookie(&cookie);
			err = nfsl_holding_mark(m->new_dir, cookie);
		}
		if (err) {
			nfsl_err("cannot find or tag the new instance's pins: %s; detach it in %s",
				 strerror(-err), r->to);
			return -1;
		}
		test_hook("holding");
	}
	if (nfsl_mig_run_at_target(m, (char *const[]){ "set", "--name", (char *)r->name, "--ttl",
						       ttl, NULL })) {
		nfsl_err("setting the new instance's TTL failed; detach it in %s", r->to);
		return -1;
	}
	return 0;
}

void nfsl_mig_started_new(const struct nfsl_migration *m)
{
	int err = m->remote ? 0 : nfsl_holding_clear(m->new_dir);

	if (err)
		nfsl_err("the new instance slices, but its holding tag stays (%s): nfslice "
			 "gc would detach it once this process ends; remove %s/%s", strerror(-err),
			 m->new_dir, NFSL_PIN_HOLDING);
}
