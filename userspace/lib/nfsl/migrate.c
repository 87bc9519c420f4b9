// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice migrate's engine (migrate.h): the request resolved (the target,
 * the new instance's attach command) and drain mode; copy mode is
 * migrate_copy.c, the steps both share migrate_steps.c.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "nfsl/migrate.h"
#include "nfsl/errors.h"
#include "nfsl/holding.h"
#include "nfsl/migrate_copy.h"
#include "nfsl/migrate_steps.h"
#include "nfsl/retired.h"
#include "util/util.h"

/* The target: a host (ssh://...), else a namespace's path. 0 or
 * NFSL_EXIT_USAGE (printed). */
static int resolve_target(struct nfsl_migration *m)
{
	const char *to = m->r->to;

	m->remote = nfsl_remote_spec(to);
	if (m->remote)
		return nfsl_remote_parse(to, &m->rem) ? NFSL_EXIT_USAGE : 0;
	if (snprintf(m->ns, sizeof(m->ns), strchr(to, '/') ? "%s" : "/run/netns/%s", to) >=
		    (int)sizeof(m->ns) || access(m->ns, R_OK))
		return nfsl_err("--to %s: no such network namespace (%s): give a name "
				"'ip netns list' shows, or a path", to, m->ns), NFSL_EXIT_USAGE;
	return 0;
}

/* Count the comma-separated names of @list (NULL: 0). */
static __u32 count_list(const char *list)
{
	__u32 n = list && *list;

	for (; list && *list; list++)
		n += *list == ',';
	return n;
}

/* The new instance's attach command (the old one open in m->d): its own
 * key, holding, keep and expiry the old one's; the old slots, in copy mode
 * rounded up so that every old index is a slot of the new store: its
 * partitions are CPUs x (1 + NF ports) of equal size (nfsl_config_split).
 * And how long the old instance drains or its key is honoured. */
static void plan_attach(struct nfsl_migration *m)
{
	const struct nfsl_migrate_req *r = m->r;
	__u32 slots = m->d.cfg.slots;
	int n = 11;

	if (r->mode == NFSL_MIGRATE_COPY) {
		int ncpus = libbpf_num_possible_cpus();
		__u32 parts = (ncpus > 0 ? ncpus : 1) * (1 + count_list(r->nf_ports));

		slots = (slots + parts - 1) / parts * parts;
	}
	snprintf(m->slots, sizeof(m->slots), "%u", slots);
	snprintf(m->keep, sizeof(m->keep), "%u", m->d.cfg.keep);
	snprintf(m->expiry, sizeof(m->expiry), "%u", m->d.cfg.expiry);
	m->wait_ms = r->has_wait ? r->wait_ms : m->d.cfg.ttl_us ? m->d.cfg.ttl_us / 1000 : 1000;
	memcpy(m->attach_argv, (char *[]){ "attach", "--name", (char *)r->name, "--threshold",
				   "65535", "--slots", m->slots, "--keep", m->keep,
				   "--expiry", m->expiry },
	       11 * sizeof(char *));
	/* The old instance's route cache, given only when not the default
	 * (a target host's older nfslice knows no such option). */
	snprintf(m->route_age, sizeof(m->route_age), "%u", m->d.cfg.route_cache_us / 1000);
	if (m->d.cfg.route_cache_us != NFSL_DEF_ROUTE_CACHE_MS * 1000) {
		m->attach_argv[n++] = m->d.cfg.route_cache_us ? "--route-cache-age" : "--route-cache";
		m->attach_argv[n++] = m->d.cfg.route_cache_us ? m->route_age : "off";
	}
	if (r->nf_ports) {
		m->attach_argv[n++] = "--nf-port";
		m->attach_argv[n++] = (char *)r->nf_ports;
	}
	for (int i = 0; i < r->argc && n < 30; i++)
		m->attach_argv[n++] = r->argv[i];
	m->attach_argv[n] = NULL;
}

/* The new instance's threshold: a map write here, a command on a host. */
static int set_target_threshold(const struct nfsl_migration *m, const int *lock, __u32 threshold)
{
	char t[16];

	if (!m->remote)
		return nfsl_mig_threshold(m->new_dir, lock, threshold);
	snprintf(t, sizeof(t), "%u", threshold);
	if (nfsl_mig_run_at_target(m, (char *const[]){ "set", "--name", (char *)m->r->name,
						       "--threshold", t, NULL }))
		return nfsl_err("setting the threshold on %s failed (above)", m->r->to);
	return 0;
}

/* 2. The old one stops slicing; 3. the new one starts: both under one
 * hold of the lock. */
static int drain_switch(const struct nfsl_migration *m, struct nfsl_migrate_result *res)
{
	const struct nfsl_domain *d = &m->d;
	int lock = nfsl_mig_lock(&res->lock_ns);

	if (lock < 0)
		return -1;
	res->t_stop = nfsl_now_ns();
	if (nfsl_mig_threshold(d->dir, &lock, NFSL_HOLD_THRESHOLD)) {
		nfsl_mig_unlock(&lock);
		nfsl_err("stopping the old instance failed; both attached, the old one slicing: "
			 "detach the new one in %s", m->r->to);
		return -1;
	}
	/* Another host's write takes that host's lock; ours, held across the
	 * command, would only make this host's sessions wait out an ssh round
	 * trip (and, were both the same host, wait forever). */
	if (m->remote)
		nfsl_mig_unlock(&lock);
	if (set_target_threshold(m, &lock, d->cfg.threshold)) {
		nfsl_mig_unlock(&lock);
		nfsl_err("starting the new instance failed: the old one splices what it parked "
			 "and slices nothing; set its threshold back (nfslice set --threshold %u)",
			 d->cfg.threshold);
		return -1;
	}
	res->t_start = nfsl_now_ns();
	nfsl_mig_unlock(&lock);
	return 0;
}

/* 4. The old splicer drains what the old slicer parked. */
static void drain_wait(struct nfsl_migration *m, struct nfsl_migrate_result *res)
{
	nfsl_domain_busy_slots(&m->d, &res->busy0);
	for (;;) {
		if (nfsl_domain_busy_slots(&m->d, &res->busy) || !res->busy)
			break;
		res->waited_ms = (nfsl_now_ns() - res->t_start) / 1000000;
		if (res->waited_ms >= m->wait_ms)
			break;
		usleep(1000);
	}
	res->t_drained = nfsl_now_ns();
}

static int run_drain(struct nfsl_migration *m, struct nfsl_migrate_result *res)
{
	struct nfsl_domain *d = &m->d;

	if (nfsl_mig_attach_new(m) || drain_switch(m, res))
		return -1;
	nfsl_mig_started_new(m);
	drain_wait(m, res);
	/* 5. A header of the old instance released after this point finds
	 * no splicer that knows its key but the new one: it must drop it as
	 * stale, not pass it on truncated (issue 17 §1.2). Done before the
	 * detach: what the old store still holds now is dropped with it. */
	if (!m->remote && nfsl_retire_key(m->new_dir, d->cfg.key, nfsl_retire_grace_ms(&d->cfg)))
		nfsl_warn("nfslice: warning: ",
			  "the new instance could not take the old key as retired: a header "
			  "the old instance sliced that an NF releases from now on leaves "
			  "truncated; give migrate a --wait as long as the NFs hold headers");
	nfsl_domain_close(d);
	if (nfsl_mig_detach_old(m, false)) {
		nfsl_err("detaching the old instance failed (above): it slices nothing; "
			 "detach it by hand");
		return -1;
	}
	res->t_end = nfsl_now_ns();
	res->done = true;
	return 0;
}

int nfsl_migrate(const struct nfsl_migrate_req *r, struct nfsl_migrate_result *res)
{
	struct nfsl_migration m = { .r = r };
	int err, rc;

	memset(res, 0, sizeof(*res));
	rc = resolve_target(&m);
	if (rc)
		return rc;
	err = nfsl_domain_open(&m.d, r->name);
	if (err)
		return nfsl_err_domain(err, r->name);
	plan_attach(&m);
	res->t0 = nfsl_now_ns();
	rc = r->mode == NFSL_MIGRATE_DRAIN ? run_drain(&m, res) : nfsl_mig_copy(&m, res);
	if (m.d.store_fd >= 0)
		nfsl_domain_close(&m.d);
	return rc;
}
