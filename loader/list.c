// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice list / gc: every domain on the host, whatever its network
 * namespace, from the pin directories <bpffs>/nfslice/ns<cookie>/NAME.
 * Whether a domain's namespace still exists is its namespace probe's answer
 * (a BPF link the kernel detaches when the namespace exits: domain.h);
 * its name and a way into it come from /run/netns and /proc (netns.h).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfslice.h"
#include "nfsl/guard.h"
#include "nfsl/domain.h"
#include "nfsl/domains.h"
#include "nfsl/retired.h"
#include "nfsl/detach.h"
#include "nfsl/health.h"
#include "nfsl/holding.h"
#include "util/json_writer.h"
#include "nfsl/netns.h"

struct list_opts {
	bool json;
	bool dry_run;
};

static const struct list_opts list_defaults;

enum ns_state { NS_ALIVE, NS_GONE, NS_UNKNOWN };
static const char *const ns_states[] = { "alive", "gone", "unknown" };

/* What gc did with a domain's holding tag (holding.h). */
enum hold_act {
	HOLD_NONE,     /* no tag, or its migration runs */
	HOLD_DETACHED, /* still holding, its migration gone: detached */
	HOLD_CLEARED,  /* it slices (the migration died after the switch): tag removed */
	HOLD_FAILED,   /* either failed, or its namespace cannot be entered */
};

/* One domain directory, and what is known of it. */
struct entry {
	char dir[PATH_MAX];
	char name[NFSL_NAME_MAX];
	__u64 cookie;
	int probe;                /* nfsl_netns_probe: 1, 0 or -errno */
	__u64 ino;                /* with probe 1 */
	enum ns_state state;
	const struct nfsl_netns *ns; /* where found, NULL when not */
	enum hold_act hold_act;      /* gc: what became of a holding tag */
	__u32 hold_pid;              /* gc: its migration's pid */
};

/* Every domain (nfsl_domains_collect), as list and gc judge them. */
static int collect(struct entry **out, size_t *n)
{
	struct nfsl_dom_entry *d;
	struct entry *v;
	int err;

	*out = NULL;
	err = nfsl_domains_collect(&d, n);
	if (err || !*n)
		return err;
	v = calloc(*n, sizeof(*v));
	if (!v) {
		free(d);
		*n = 0;
		return -ENOMEM;
	}
	for (size_t i = 0; i < *n; i++) {
		memcpy(v[i].dir, d[i].dir, sizeof(v[i].dir));
		memcpy(v[i].name, d[i].name, sizeof(v[i].name));
		v[i].cookie = d[i].cookie;
	}
	free(d);
	*out = v;
	return 0;
}

/* Is the namespace of @x alive, gone, or unknown? The probe decides; a
 * domain without one is alive when its cookie is found in @l. */
static void judge(struct entry *x, const struct nfsl_netns_list *l)
{
	x->probe = nfsl_netns_probe(x->dir, &x->ino);
	if (x->probe == 1)
		x->ns = nfsl_netns_by_ino(l, x->ino);
	/* The cookie names the namespace for good (never reused). */
	if (!x->ns)
		x->ns = nfsl_netns_by_cookie(l, x->cookie);
	if (x->probe == 1 || x->ns)
		x->state = NS_ALIVE;
	else if (x->probe == 0)
		x->state = NS_GONE;
	else
		x->state = NS_UNKNOWN;
}

/* Domains, namespaces, and the bpffs check both commands start with. */
static int prepare(struct entry **v, size_t *n, struct nfsl_netns_list *l)
{
	char nsdir[PATH_MAX];
	int err;

	err = nfsl_netns_dir(nsdir, sizeof(nsdir));
	if (err == -ENOMEDIUM)
		return nfsl_err_domain(err, "default");
	err = collect(v, n);
	if (err)
		return nfsl_err("cannot read %s/nfslice: %s", nfsl_bpffs(), strerror(-err));
	err = nfsl_netns_scan(l);
	if (err) {
		free(*v);
		return nfsl_err("cannot list the network namespaces: %s", strerror(-err));
	}
	for (size_t i = 0; i < *n; i++)
		judge(&(*v)[i], l);
	return 0;
}

/* ------------------------------------------------------------------ list */

/* What list shows of one domain. */
struct view {
	bool complete;  /* its maps and config could be read */
	bool checked;   /* its interfaces were checked in its namespace */
	struct nfsl_domain d;
	struct nfsl_health h;
	bool held;       /* tagged by a migration (holding.h): */
	bool held_alive; /* that migration still runs */
	struct nfsl_holding hold;
};

/* Open @x's domain and, when its namespace can be entered, check it there. */
static int inspect(const struct entry *x, struct view *w)
{
	int back, err;

	memset(w, 0, sizeof(*w));
	w->held = !nfsl_holding_get(x->dir, &w->hold);
	w->held_alive = w->held && nfsl_holding_alive(&w->hold);
	w->complete = !nfsl_domain_open_dir(&w->d, x->dir);
	if (!w->complete || x->state != NS_ALIVE || !x->ns)
		return 0;
	if (nfsl_netns_enter(x->ns->path, &back))
		return 0; /* the process holding it exited meanwhile */
	nfsl_domain_health(&w->d, &w->h);
	w->checked = true;
	err = nfsl_netns_return(back);
	if (err)
		return nfsl_err("cannot return to nfslice's own network namespace: %s",
				strerror(-err));
	return 0;
}

/* The health of @x in a word or a sentence, and whether it is whole
 * (1), not (0), or not known (-1). */
static int health(const struct entry *x, const struct view *w, char *buf, size_t len)
{
	if (x->state == NS_GONE) {
		snprintf(buf, len, "network namespace gone: nfslice gc removes the domain");
		return 0;
	}
	if (!w->complete) {
		snprintf(buf, len, "incomplete (an attach was interrupted): nfslice "
			 "detach --name %s in its namespace removes it", x->name);
		return 0;
	}
	if (x->state == NS_UNKNOWN) {
		snprintf(buf, len, "namespace not found in /run/netns or /proc, and "
			 "no namespace probe to ask");
		return -1;
	}
	if (!w->checked) {
		snprintf(buf, len, "namespace alive but not reachable (held by no "
			 "process or /run/netns name nfslice can see)");
		return -1;
	}
	if (!w->h.nproblems) {
		snprintf(buf, len, "ok");
		return 1;
	}
	snprintf(buf, len, "DAMAGED: %s%s (nfslice status/repair --name %s in its "
		 "namespace)", w->h.problems[0], w->h.nproblems > 1 ? ", ..." : "",
		 x->name);
	return 0;
}

static void list_json(struct json_writer *jw, const struct entry *x,
		      const struct view *w)
{
	const struct nfsl_config *c = &w->d.cfg;
	char why[256];
	int ok = health(x, w, why, sizeof(why));

	jsonw_start_object(jw);
	jsonw_string_field(jw, "name", x->name);
	jsonw_string_field(jw, "dir", x->dir);
	jsonw_name(jw, "netns");
	jsonw_start_object(jw);
	jsonw_uint_field(jw, "cookie", x->cookie);
	if (x->probe == 1)
		jsonw_uint_field(jw, "inode", x->ino);
	else if (x->ns)
		jsonw_uint_field(jw, "inode", x->ns->ino);
	else
		jsonw_null_field(jw, "inode");
	if (x->ns && x->ns->name[0])
		jsonw_string_field(jw, "name", x->ns->name);
	else
		jsonw_null_field(jw, "name");
	jsonw_string_field(jw, "state", ns_states[x->state]);
	jsonw_bool_field(jw, "probe", x->probe >= 0);
	jsonw_bool_field(jw, "reachable", w->checked);
	jsonw_end_object(jw);
	jsonw_bool_field(jw, "complete", w->complete);
	jsonw_name(jw, "interfaces");
	jsonw_start_array(jw);
	for (__u32 i = 0; w->complete && i < c->nifaces && i < NFSL_MAX_IFACES; i++) {
		const struct nfsl_iface_state *st = &w->h.ifs[i];
		bool nf = c->ifaces[i].flags & NFSL_IF_NF_PORT;

		jsonw_start_object(jw);
		jsonw_uint_field(jw, "ifindex", c->ifaces[i].ifindex);
		if (w->checked && !st->gone)
			jsonw_string_field(jw, "name", st->name);
		else
			jsonw_null_field(jw, "name");
		jsonw_bool_field(jw, "nf_port", nf);
		if (w->checked) {
			jsonw_bool_field(jw, "present", !st->gone);
			if (st->xdp)
				jsonw_string_field(jw, "xdp", st->xdp);
			else
				jsonw_null_field(jw, "xdp");
			jsonw_bool_field(jw, "tc_egress", st->tc_id);
		} else {
			jsonw_null_field(jw, "present");
			jsonw_null_field(jw, "xdp");
			jsonw_null_field(jw, "tc_egress");
		}
		jsonw_end_object(jw);
	}
	jsonw_end_array(jw);
	if (ok < 0)
		jsonw_null_field(jw, "healthy");
	else
		jsonw_bool_field(jw, "healthy", ok);
	jsonw_name(jw, "problems");
	jsonw_start_array(jw);
	if (w->checked && w->complete)
		for (unsigned int i = 0; i < w->h.nproblems; i++)
			jsonw_string(jw, w->h.problems[i]);
	else if (ok == 0)
		jsonw_string(jw, why);
	jsonw_end_array(jw);
	if (ok < 0)
		jsonw_string_field(jw, "note", why);
	jsonw_name(jw, "holding");
	if (w->held) {
		jsonw_start_object(jw);
		jsonw_uint_field(jw, "pid", w->hold.pid);
		jsonw_uint_field(jw, "start_ticks", w->hold.start);
		jsonw_bool_field(jw, "alive", w->held_alive);
		jsonw_uint_field(jw, "from_netns_cookie", w->hold.from_cookie);
		if (w->complete)
			jsonw_bool_field(jw, "slicing", c->threshold != NFSL_HOLD_THRESHOLD);
		else
			jsonw_null_field(jw, "slicing");
		jsonw_end_object(jw);
	} else {
		jsonw_null(jw);
	}
	jsonw_end_object(jw);
}

/* "HOLDING ..." for a domain a migration tagged, else "". */
static void holding_text(const struct view *w, char *buf, size_t len)
{
	*buf = '\0';
	if (w->held)
		snprintf(buf, len, "HOLDING for nfslice migrate pid %u (%s); ", w->hold.pid,
			 w->held_alive ? "running" : "gone: nfslice gc detaches it");
}

static void list_text(const struct entry *x, const struct view *w)
{
	const struct nfsl_config *c = &w->d.cfg;
	char ns[NAME_MAX + 48], ifs[NFSL_MAX_IFACES * (IF_NAMESIZE + 16)], why[256];
	char hold[96];
	size_t used = 0;

	snprintf(ns, sizeof(ns), "ns%llu %s", (unsigned long long)x->cookie,
		 x->ns && x->ns->name[0] ? x->ns->name : "-");
	ifs[0] = '\0';
	for (__u32 i = 0; w->complete && i < c->nifaces && i < NFSL_MAX_IFACES &&
			  used < sizeof(ifs); i++) {
		const struct nfsl_iface_state *st = &w->h.ifs[i];
		const char *nf = c->ifaces[i].flags & NFSL_IF_NF_PORT ? "(nf)" : "";

		if (w->checked && !st->gone)
			used += snprintf(ifs + used, sizeof(ifs) - used, "%s%s%s",
					 used ? "," : "", st->name, nf);
		else
			used += snprintf(ifs + used, sizeof(ifs) - used, "%s#%u%s",
					 used ? "," : "", c->ifaces[i].ifindex, nf);
	}
	health(x, w, why, sizeof(why));
	holding_text(w, hold, sizeof(hold));
	printf("%-16s %-32s %-7s %-22s %s%s\n", x->name, ns, ns_states[x->state],
	       ifs[0] ? ifs : "-", hold, why);
}

static int run_list(void *o, int argc, char **argv)
{
	const struct list_opts *opt = o;
	struct nfsl_netns_list l;
	struct json_writer jw;
	struct entry *v;
	size_t n;
	int err = 0;

	if (prepare(&v, &n, &l))
		return -1;
	if (opt->json) {
		jsonw_init(&jw, stdout);
		jsonw_start_array(&jw);
	} else if (n) {
		printf("%-16s %-32s %-7s %-22s %s\n", "NAME", "NETNS (cookie, name)",
		       "STATE", "INTERFACES", "HEALTH");
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct view w;

		err = inspect(&v[i], &w);
		if (opt->json)
			list_json(&jw, &v[i], &w);
		else
			list_text(&v[i], &w);
		nfsl_domain_close(&w.d);
	}
	if (opt->json)
		jsonw_end_array(&jw);
	else if (!n)
		printf("nfslice: no slicing domain on this host (%s/nfslice)\n",
		       nfsl_bpffs());
	nfsl_netns_free(&l);
	free(v);
	return err;
}

/* -------------------------------------------------------------------- gc */

/*
 * A domain a migration tagged as holding (holding.h) whose migration is
 * gone: still at the holding threshold, it is detached in its namespace
 * (without a drain: what it may hold are copies whose headers go to the
 * old instance, which a migration killed before its switch leaves
 * attached); slicing already (killed right after the switch), only the tag
 * goes. Under gc's lock. Sets @x->hold_act.
 */
static void gc_holding(struct entry *x, bool dry_run)
{
	struct nfsl_holding h;
	struct nfsl_domain d;
	bool holding;
	int back, err;

	if (x->state != NS_ALIVE || nfsl_holding_get(x->dir, &h) || nfsl_holding_alive(&h))
		return;
	x->hold_pid = h.pid;
	if (nfsl_domain_open_dir(&d, x->dir)) {
		x->hold_act = HOLD_FAILED; /* incomplete: detach in its namespace */
		return;
	}
	holding = d.cfg.threshold == NFSL_HOLD_THRESHOLD;
	nfsl_domain_close(&d);
	x->hold_act = holding ? HOLD_DETACHED : HOLD_CLEARED;
	if (dry_run)
		return;
	if (!holding) {
		if (nfsl_holding_clear(x->dir))
			x->hold_act = HOLD_FAILED;
		return;
	}
	if (!x->ns || nfsl_netns_enter(x->ns->path, &back)) {
		x->hold_act = HOLD_FAILED;
		return;
	}
	if (nfsl_detach_locked(x->name, true))
		x->hold_act = HOLD_FAILED;
	err = nfsl_netns_return(back);
	if (err)
		nfsl_err("cannot return to nfslice's own network namespace: %s", strerror(-err));
}

static void gc_hold_item(struct json_writer *jw, const struct entry *x)
{
	static const char *const acts[] = { "none", "detached", "tag_removed", "failed" };

	jsonw_start_object(jw);
	jsonw_string_field(jw, "name", x->name);
	jsonw_string_field(jw, "dir", x->dir);
	jsonw_uint_field(jw, "cookie", x->cookie);
	jsonw_uint_field(jw, "migration_pid", x->hold_pid);
	jsonw_string_field(jw, "action", acts[x->hold_act]);
	jsonw_end_object(jw);
}

static void gc_item(struct json_writer *jw, const struct entry *x)
{
	jsonw_start_object(jw);
	jsonw_string_field(jw, "name", x->name);
	jsonw_string_field(jw, "dir", x->dir);
	jsonw_uint_field(jw, "cookie", x->cookie);
	jsonw_end_object(jw);
}

static int run_gc(void *o, int argc, char **argv)
{
	const struct list_opts *opt = o;
	struct nfsl_netns_list l;
	struct json_writer jw;
	struct entry *v;
	size_t n, removed = 0;
	int lock, failed = 0;

	/* Under the lock: no attach or detach changes the pins meanwhile. */
	lock = nfsl_domains_lock();
	if (lock < 0)
		return nfsl_err("cannot lock %s: %s", NFSL_LOCK_FILE, nfsl_lock_strerror(lock));
	if (prepare(&v, &n, &l)) {
		close(lock);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct entry *x = &v[i];
		int err;

		gc_holding(x, opt->dry_run);
		if (x->hold_act == HOLD_FAILED)
			failed = 1;
		if (x->hold_act != HOLD_NONE && !opt->json)
			printf("nfslice: %s '%s' (ns%llu), the holding instance of nfslice "
			       "migrate pid %u, which is gone%s\n",
			       x->hold_act == HOLD_FAILED ? "could not remove" :
			       x->hold_act == HOLD_CLEARED ?
					 (opt->dry_run ? "would untag" : "untagged") :
					 (opt->dry_run ? "would detach" : "detached"),
			       x->name, (unsigned long long)x->cookie, x->hold_pid,
			       x->hold_act == HOLD_CLEARED ? " (it slices: only its tag went)" :
			       x->hold_act == HOLD_FAILED ? ": detach it in its namespace "
							    "(nfslice detach --name NAME)" : "");
		/* A namespace no name or process holds may be held by the
		 * domain's own local-delivery guards only (netfilter links
		 * hold it): without them it exits, if nothing else holds it. */
		if (x->probe == 1 && !x->ns && !opt->dry_run && nfsl_guard_release(x->dir))
			x->state = NS_GONE;
		/* Only the probe's word that the namespace is gone removes a
		 * domain: a namespace held by a file descriptor alone is in
		 * no list, but its probe still answers. */
		if (x->state != NS_GONE)
			continue;
		err = opt->dry_run ? 0 : nfsl_domain_remove(x->dir);
		if (err) {
			nfsl_err("cannot remove %s: %s", x->dir, strerror(-err));
			failed = 1;
			x->state = NS_ALIVE; /* not in "removed" */
			continue;
		}
		removed++;
		if (!opt->json)
			printf("nfslice: %s domain '%s' of a network namespace that is "
			       "gone (ns%llu): %s\n", opt->dry_run ? "would remove" : "removed",
			       x->name, (unsigned long long)x->cookie, x->dir);
	}
	/* Retired keys whose grace ended and whose domain is gone (retired.h). */
	if (!opt->dry_run)
		nfsl_retired_prune();
	if (opt->json) {
		jsonw_init(&jw, stdout);
		jsonw_start_object(&jw);
		jsonw_bool_field(&jw, "dry_run", opt->dry_run);
		jsonw_name(&jw, "removed");
		jsonw_start_array(&jw);
		for (size_t i = 0; i < n; i++)
			if (v[i].state == NS_GONE)
				gc_item(&jw, &v[i]);
		jsonw_end_array(&jw);
		jsonw_name(&jw, "unknown");
		jsonw_start_array(&jw);
		for (size_t i = 0; i < n; i++)
			if (v[i].state == NS_UNKNOWN)
				gc_item(&jw, &v[i]);
		jsonw_end_array(&jw);
		jsonw_name(&jw, "holding");
		jsonw_start_array(&jw);
		for (size_t i = 0; i < n; i++)
			if (v[i].hold_act != HOLD_NONE)
				gc_hold_item(&jw, &v[i]);
		jsonw_end_array(&jw);
		jsonw_end_object(&jw);
	} else {
		for (size_t i = 0; i < n; i++)
			if (v[i].state == NS_UNKNOWN)
				printf("nfslice: kept domain '%s' (%s): it has no namespace "
				       "probe (attached by an older nfslice) and its namespace "
				       "ns%llu is not found in /run/netns or /proc; if it is "
				       "gone, remove the directory by hand\n", v[i].name,
				       v[i].dir, (unsigned long long)v[i].cookie);
		if (!removed)
			printf("nfslice: no domain of a gone network namespace%s\n",
			       opt->dry_run ? "" : "; nothing removed");
	}
	nfsl_netns_free(&l);
	free(v);
	close(lock);
	return failed ? -1 : 0;
}

static const struct nfsl_opt list_table[] = {
	{ "json", NFSL_OPT_FLAG, offsetof(struct list_opts, json),
	  .help = "print one JSON array, an object per domain" },
	{ NULL },
};

static const struct nfsl_opt gc_table[] = {
	{ "dry-run", NFSL_OPT_FLAG, offsetof(struct list_opts, dry_run),
	  .help = "say what would be removed, remove nothing" },
	{ "json", NFSL_OPT_FLAG, offsetof(struct list_opts, json),
	  .help = "print one JSON object: removed and unknown domains" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_list = {
	.name = "list",
	.summary = "list every slicing domain on the host, in every namespace",
	.description =
		"Lists the domains of every network namespace, from the pin directories\n"
		"<bpffs>/nfslice/ns<netns cookie>/NAME. For each: its namespace by netns\n"
		"cookie, its state (alive, gone, unknown) and, where known, its name\n"
		"under /run/netns; its interfaces (by name when the namespace can be\n"
		"entered: one bound under /run/netns or held by a process; else by\n"
		"ifindex, #N) and its health: ok, DAMAGED (a slicer or splicer missing,\n"
		"an interface gone: see nfslice status in that namespace), the\n"
		"namespace gone (nfslice gc removes the domain), or not known.\n"
		"Whether a namespace lives is asked of the domain's namespace probe\n"
		"(see attach); a domain attached by an older nfslice has none, and its\n"
		"namespace is alive when its cookie is found among those of /run/netns\n"
		"and of processes, else unknown. A domain that nfslice migrate attached\n"
		"holding (threshold 65535, before its switch) is marked HOLDING with the\n"
		"migration's pid, running or gone (a gone one's nfslice gc detaches).\n"
		"Exit status 0 whatever the health.",
	.caps = NFSL_CAPS_READ,
	.caps_why = NFSL_CAPS_READ_WHY,
	.opts = list_table,
	.run = run_list,
	.opts_size = sizeof(struct list_opts),
	.defaults = &list_defaults,
};

const struct nfsl_cmd nfsl_cmd_gc = {
	.name = "gc",
	.summary = "remove the domains of gone namespaces and of killed migrations",
	.description =
		"Removes the pins (store, config, counters, cursor, splicer, probe) and\n"
		"directory of every domain whose network namespace no longer exists:\n"
		"deleting a namespace detaches nothing, and its domain's store (8 MiB\n"
		"at the default 4096 slots) stays pinned until then. Only a domain's\n"
		"namespace probe saying its namespace is gone removes it, so a domain\n"
		"whose namespace lives, even held by an open file descriptor alone, is\n"
		"never removed; a domain without a probe (attached by an older nfslice)\n"
		"is kept and reported as unknown when its namespace is not found.\n"
		"It also detaches, in its namespace, every instance nfslice migrate\n"
		"attached holding whose migration process is gone (killed before its\n"
		"switch; pid and start time recorded, so a reused pid does not count),\n"
		"or only removes the tag when the instance slices already.\n"
		"Runs under the host-wide lock of attach and detach.",
	.caps = NFSL_CAPS_READ,
	.caps_why = NFSL_CAPS_READ_WHY,
	.opts = gc_table,
	.run = run_gc,
	.opts_size = sizeof(struct list_opts),
	.defaults = &list_defaults,
};
