// SPDX-License-Identifier: GPL-2.0
/*
 * nfsliced's control operations (userspace/lib/nfsl/ctl.h): ping, list, get, set;
 * and the collection of domains whose network namespace is gone.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "nfsliced.h"
#include "nfsl/cfg.h"
#include "util/cli.h"
#include "nfsl/ctl.h"
#include "nfsl/domains.h"
#include "nfsl/guard.h"
#include "nfsl/netns.h"
#include "nfsl/retired.h"
#include "nfsl/holding.h"
#include "util/version.h"

/* The domain a request names into @dir: NULL, or the error response
 * (it is not attached). */
static json_t *req_domain(const struct nfsl_ctl_req *r, char *dir, size_t len)
{
	int err = nfsl_domain_dir_of(dir, len, r->netns, r->name);

	if (err)
		return nfsl_ctl_error(NFSL_EXIT_FAIL, "domain '%s': %s", r->name, strerror(-err));
	if (access(dir, F_OK))
		return nfsl_ctl_error(NFSL_EXIT_FAIL,
				      "no domain '%s' is attached in that network namespace "
				      "(ns%llu)", r->name, (unsigned long long)r->netns);
	return NULL;
}

static json_t *op_ping(const struct nfsl_ctl_req *req)
{
	struct nfsl_dom_entry *v;
	size_t n = 0;
	json_t *r;

	if (!nfsl_domains_collect(&v, &n))
		free(v);
	r = nfsl_ctl_ok();
	json_object_set_new(r, "version", json_string(nfsl_version()));
	json_object_set_new(r, "proto", json_integer(NFSL_CTL_VERSION));
	json_object_set_new(r, "pid", json_integer(getpid()));
	json_object_set_new(r, "domains", json_integer(n));
	return r;
}

static json_t *op_list(const struct nfsl_ctl_req *req)
{
	struct nfsl_dom_entry *v;
	json_t *r, *a;
	size_t n;
	int err = nfsl_domains_collect(&v, &n);

	if (err)
		return nfsl_ctl_error(NFSL_EXIT_FAIL, "cannot read %s/nfslice: %s", nfsl_bpffs(),
				      strerror(-err));
	r = nfsl_ctl_ok();
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:I,s:s,s:s}", "netns",
						   (json_int_t)v[i].cookie, "name", v[i].name,
						   "dir", v[i].dir));
	json_object_set_new(r, "domains", a);
	free(v);
	return r;
}

static json_t *op_get(const struct nfsl_ctl_req *req)
{
	char dir[PATH_MAX];
	struct nfsl_domain d;
	json_t *r = req_domain(req, dir, sizeof(dir));
	int err;

	if (r)
		return r;
	err = nfsl_domain_open_dir(&d, dir);
	if (err)
		return nfsl_ctl_error(NFSL_EXIT_FAIL, "cannot open %s: %s", dir, strerror(-err));
	r = nfsl_ctl_ok();
	json_object_set_new(r, "config", nfsl_ctl_config_json(&d.cfg));
	json_object_set_new(r, "gen", json_integer(d.cfg.cfg_gen));
	nfsl_domain_close(&d);
	return r;
}

/* Takes the host-wide lock: run by the worker (worker.c), never by the
 * event loop. */
static json_t *op_set(const struct nfsl_ctl_req *req)
{
	struct nfsl_config cfg;
	char dir[PATH_MAX], err[512];
	json_t *r = req_domain(req, dir, sizeof(dir));
	__u32 if_gen = req->if_gen;
	int rc;

	if (r)
		return r;
	rc = nfsl_config_change(dir, &req->changes, req->has_if_gen ? &if_gen : NULL, &cfg, err,
				sizeof(err));
	if (rc == -ERANGE)
		return nfsl_ctl_error(NFSL_EXIT_USAGE, "%s", err);
	if (rc)
		return nfsl_ctl_error(NFSL_EXIT_FAIL, "%s", *err ? err : strerror(-rc));
	mgr_log(MGR_NOTICE, "%s: configuration generation %u", dir, cfg.cfg_gen);
	r = nfsl_ctl_ok();
	json_object_set_new(r, "config", nfsl_ctl_config_json(&cfg));
	json_object_set_new(r, "gen", json_integer(cfg.cfg_gen));
	return r;
}

static json_t *(*const ops[])(const struct nfsl_ctl_req *req) = {
	[NFSL_CTL_PING] = op_ping,
	[NFSL_CTL_LIST] = op_list,
	[NFSL_CTL_GET] = op_get,
	[NFSL_CTL_SET] = op_set,
};

json_t *mgr_handle(const struct nfsl_ctl_req *r)
{
	return ops[r->op](r);
}

bool mgr_needs_lock(const struct nfsl_ctl_req *r)
{
	return r->op == NFSL_CTL_SET;
}

/*
 * Instances that nfslice migrate attached holding and whose migration is
 * gone (holding.h) are detached by `nfslice gc`, run here: detaching is
 * the library's engine (nfsl/detach.h), and gc does it in the instance's
 * namespace under the host-wide lock. nfslice is looked for beside this
 * binary (both are installed in one directory, and built into build/).
 * Waits for it (a detach of a domain with nothing parked takes
 * milliseconds); runs only when such an instance exists.
 */
static void gc_holding(void)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 16);
	int st;
	pid_t pid;

	if (n <= 0)
		return;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return;
	strcpy(slash + 1, "nfslice");
	if (access(self, X_OK)) {
		mgr_log(MGR_WARNING, "a holding instance of a killed migration is left, but %s "
			"is missing: run nfslice gc", self);
		return;
	}
	pid = fork();
	if (pid < 0)
		return;
	if (!pid) {
		execl(self, "nfslice", "gc", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) == pid && !(WIFEXITED(st) && !WEXITSTATUS(st)))
		mgr_log(MGR_WARNING, "nfslice gc for a killed migration's holding instance "
			"failed (its output above): run nfslice gc as root (detaching needs "
			"CAP_NET_ADMIN and setns, which nfsliced.service does not grant)");
}

int mgr_gc(void)
{
	struct nfsl_dom_entry *v;
	int lock, removed = 0, orphans = 0;
	struct nfsl_netns_list l = {};
	bool scanned;
	size_t n;
	int err;

	lock = nfsl_domains_lock();
	if (lock < 0)
		return lock;
	err = nfsl_domains_collect(&v, &n);
	if (err) {
		close(lock);
		return err;
	}
	scanned = n && !nfsl_netns_scan(&l);
	for (size_t i = 0; i < n; i++) {
		struct nfsl_holding h;
		__u64 ino;
		int probe = nfsl_netns_probe(v[i].dir, &ino);

		/* A namespace no name or process holds may be held by the
		 * domain's local-delivery guards only (nfslice gc). */
		if (probe == 1 && scanned && !nfsl_netns_by_cookie(&l, v[i].cookie) &&
		    nfsl_guard_release(v[i].dir))
			probe = 0;
		/* Only the probe's word that the namespace is gone counts
		 * (nfslice gc): a domain without a probe is left alone. */
		if (probe != 0) {
			if (!nfsl_holding_get(v[i].dir, &h) && !nfsl_holding_alive(&h)) {
				mgr_log(MGR_NOTICE, "domain '%s' (ns%llu) is the holding instance "
					"of nfslice migrate pid %u, which is gone", v[i].name,
					(unsigned long long)v[i].cookie, h.pid);
				orphans++;
			}
			continue;
		}
		err = nfsl_domain_remove(v[i].dir);
		if (err) {
			mgr_log(MGR_WARNING, "cannot remove %s: %s", v[i].dir, strerror(-err));
			continue;
		}
		mgr_log(MGR_NOTICE, "removed domain '%s' of a network namespace that is gone "
			"(ns%llu): %s", v[i].name, (unsigned long long)v[i].cookie, v[i].dir);
		removed++;
	}
	nfsl_retired_prune(); /* retired keys past their grace (retired.h) */
	if (scanned)
		nfsl_netns_free(&l);
	free(v);
	close(lock);
	if (orphans)
		gc_holding(); /* takes the lock itself */
	return removed;
}
