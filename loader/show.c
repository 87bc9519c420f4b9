// SPDX-License-Identifier: GPL-2.0
/* nfslice status / stats: what a domain is attached to, and its counters. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nfslice.h"
#include "nfsl/domain.h"
#include "nfsl/health.h"
#include "nfsl/retired.h"
#include "nfsl/route.h"
#include "util/json_writer.h"
#include "util/util.h"

struct show_opts {
	const char *name;
	bool json;
	__u32 interval; /* seconds, 0 = print once */
	__u32 count;    /* prints in all, the first included; 0 = until interrupted */
};

static const struct show_opts show_defaults = { .name = "default" };


/* Is pin @i of the domain at @dir to be shown? Those after the first
 * four maps and the splicer only where they are (a domain attached by an
 * older nfslice may lack them). */
static bool show_pin(const char *dir, size_t i)
{
	char path[PATH_MAX + 32];

	if (i < NFSL_NR_DOMAIN_PINS_ALWAYS)
		return true;
	snprintf(path, sizeof(path), "%s/%s", dir, nfsl_domain_pins[i]);
	return !faccessat(AT_FDCWD, path, F_OK, AT_EACCESS);
}

/* How to make a damaged domain whole. */
static void remedy(const struct nfsl_health *h, const char *name, char *buf,
		   size_t len)
{
	if (h->gone)
		snprintf(buf, len, "an interface is gone: detach the domain (nfslice "
			 "detach --name %s) and attach it to the interfaces it has now",
			 name);
	else
		snprintf(buf, len, "restore the missing programs with: nfslice repair "
			 "--name %s", name);
}

/* The guards (guard.h): "guards": {"local_in": {"ipv4_link_id",
 * "ipv6_link_id"}, "forward": {the same},
 * "interfaces": [{"name", "ifindex", "kind", "link_id"}]}, link_id 0
 * where the guard is missing (kind "none": no guard can be attached). */
static void print_guards_json(struct json_writer *w, const struct nfsl_guard_state *g)
{
	jsonw_name(w, "guards");
	jsonw_start_object(w);
	jsonw_bool_field(w, "loaded", g->loaded);
	jsonw_name(w, "local_in");
	jsonw_start_object(w);
	jsonw_uint_field(w, "ipv4_link_id", g->nf[NFSL_GUARD_IN4]);
	jsonw_uint_field(w, "ipv6_link_id", g->nf[NFSL_GUARD_IN6]);
	jsonw_end_object(w);
	jsonw_name(w, "forward");
	jsonw_start_object(w);
	jsonw_uint_field(w, "ipv4_link_id", g->nf[NFSL_GUARD_FW4]);
	jsonw_uint_field(w, "ipv6_link_id", g->nf[NFSL_GUARD_FW6]);
	jsonw_end_object(w);
	jsonw_name(w, "interfaces");
	jsonw_start_array(w);
	for (unsigned int i = 0; i < g->nifs; i++) {
		jsonw_start_object(w);
		jsonw_string_field(w, "name", g->ifs[i].name);
		jsonw_uint_field(w, "ifindex", g->ifs[i].ifindex);
		jsonw_string_field(w, "kind", nfsl_guard_kind_name(g->ifs[i].kind));
		jsonw_uint_field(w, "link_id", g->ifs[i].link_id);
		jsonw_end_object(w);
	}
	jsonw_end_array(w);
	jsonw_end_object(w);
}

/* "  guards   lo, veth1, wg0 (l3); MISSING on x; none on y (link type),
 * ifb0 (ifb);
 * local delivery ipv4 ipv6; routing ipv4 ipv6" */
static void print_guards_text(const struct nfsl_guard_state *g)
{
	static const char *const what[] = { "", "MISSING on ", "none on " };

	printf("  guards   tcx egress on ");
	for (int pass = 0; pass < 3; pass++) {
		bool first = true;

		for (unsigned int i = 0; i < g->nifs; i++) {
			int is = g->ifs[i].link_id ? 0 :
				 g->ifs[i].kind == NFSL_GUARD_NONE ||
				 g->ifs[i].kind == NFSL_GUARD_IFB ? 2 : 1;

			if (is != pass)
				continue;
			printf("%s%s%s%s", first ? (pass ? "; " : "") : ", ",
			       first ? what[pass] : "", g->ifs[i].name,
			       g->ifs[i].kind == NFSL_GUARD_L3 ? " (l3)" :
			       g->ifs[i].kind == NFSL_GUARD_IFB ? " (ifb)" :
			       g->ifs[i].kind == NFSL_GUARD_NONE ? " (link type)" : "");
			first = false;
		}
		if (!pass && first)
			printf("none");
	}
	printf("; local delivery (netfilter LOCAL_IN) ipv4%s ipv6%s"
	       "; routing (netfilter FORWARD) ipv4%s ipv6%s\n",
	       g->nf[NFSL_GUARD_IN4] ? "" : " MISSING", g->nf[NFSL_GUARD_IN6] ? "" : " MISSING",
	       g->nf[NFSL_GUARD_FW4] ? "" : " MISSING", g->nf[NFSL_GUARD_FW6] ? "" : " MISSING");
}

static void print_status_json(const struct nfsl_domain *d, const char *name,
			      const struct nfsl_health *h)
{
	const struct nfsl_config *c = &d->cfg;
	char path[PATH_MAX + 32], fix[160];
	struct json_writer w;
	__u64 left, gen;
	int n;

	jsonw_init(&w, stdout);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "name", name);
	jsonw_string_field(&w, "dir", d->dir);
	jsonw_name(&w, "pins");
	jsonw_start_object(&w);
	for (size_t i = 0; i < NFSL_NR_DOMAIN_PINS; i++) {
		if (!show_pin(d->dir, i))
			continue;
		snprintf(path, sizeof(path), "%s/%s", d->dir, nfsl_domain_pins[i]);
		jsonw_string_field(&w, nfsl_domain_pins[i], path);
	}
	jsonw_end_object(&w);
	jsonw_uint_field(&w, "threshold", c->threshold);
	jsonw_uint_field(&w, "keep", c->keep);
	jsonw_uint_field(&w, "slots", c->slots);
	jsonw_uint_field(&w, "partitions", c->ncpus);
	jsonw_uint_field(&w, "dest_partitions", c->nparts ? c->nparts : 1);
	jsonw_uint_field(&w, "partition_slots", c->part_slots);
	jsonw_uint_field(&w, "expiry", c->expiry);
	jsonw_uint_field(&w, "ttl_ms", c->ttl_us / 1000);
	jsonw_bool_field(&w, "ct_liberal_set", c->flags & NFSL_CFG_CT_LIBERAL_SET);
	jsonw_bool_field(&w, "events", c->flags & NFSL_CFG_EVENTS);
	jsonw_bool_field(&w, "route_cache", c->route_cache_us);
	jsonw_uint_field(&w, "route_cache_age_ms", c->route_cache_us / 1000);
	/* Bumped by every change nfsliced or the CLI saw (route.h). */
	if (!nfsl_route_gen_read(d, &gen))
		jsonw_uint_field(&w, "route_gen", gen);
	/* Keys retired lately: their tokens are stale here (retired.h). */
	n = nfsl_retired_live(d->dir, &left);
	jsonw_uint_field(&w, "retired_keys", n > 0 ? n : 0);
	jsonw_uint_field(&w, "retired_grace_ms", left / 1000000);
	jsonw_name(&w, "interfaces");
	jsonw_start_array(&w);
	for (__u32 i = 0; i < c->nifaces && i < NFSL_MAX_IFACES; i++) {
		const struct nfsl_iface_state *st = &h->ifs[i];

		jsonw_start_object(&w);
		if (st->gone)
			jsonw_null_field(&w, "name");
		else
			jsonw_string_field(&w, "name", st->name);
		jsonw_uint_field(&w, "ifindex", c->ifaces[i].ifindex);
		jsonw_bool_field(&w, "present", !st->gone);
		jsonw_bool_field(&w, "nf_port", c->ifaces[i].flags & NFSL_IF_NF_PORT);
		if (st->xdp)
			jsonw_string_field(&w, "xdp", st->xdp);
		else
			jsonw_null_field(&w, "xdp");
		jsonw_uint_field(&w, "xdp_prog_id", st->xdp_id);
		jsonw_bool_field(&w, "tc_egress", st->tc_id);
		jsonw_string_field(&w, "egress_hook",
				   c->ifaces[i].flags & NFSL_IF_TCX ? "tcx" : "clsact");
		jsonw_uint_field(&w, "tc_prog_id", st->tc_id);
		jsonw_end_object(&w);
	}
	jsonw_end_array(&w);
	print_guards_json(&w, &h->guards);
	jsonw_bool_field(&w, "healthy", !h->nproblems);
	jsonw_name(&w, "problems");
	jsonw_start_array(&w);
	for (unsigned int i = 0; i < h->nproblems; i++)
		jsonw_string(&w, h->problems[i]);
	jsonw_end_array(&w);
	if (h->nproblems) {
		remedy(h, name, fix, sizeof(fix));
		jsonw_string_field(&w, "fix", fix);
	}
	jsonw_end_object(&w);
}

static void print_status_text(const struct nfsl_domain *d, const char *name,
			      const struct nfsl_health *h)
{
	const struct nfsl_config *c = &d->cfg;
	char buf[32], fix[160];
	__u64 left;
	int n;

	printf("domain %s\n", name);
	if (c->nparts > 1)
		printf("  config   threshold %u B, keep %u B, %u slots (%u CPUs x %u partitions: "
		       "domain interfaces and each NF port, %u slots each), expiry %u",
		       c->threshold, c->keep, c->slots, c->ncpus, c->nparts, c->part_slots,
		       c->expiry);
	else
		printf("  config   threshold %u B, keep %u B, %u slots (%u CPU partitions of %u), "
		       "expiry %u",
		       c->threshold, c->keep, c->slots, c->ncpus, c->part_slots, c->expiry);
	if (c->ttl_us)
		printf(", ttl %u ms", c->ttl_us / 1000);
	else
		printf(", ttl off");
	if (c->route_cache_us)
		printf(", route cache %u ms", c->route_cache_us / 1000);
	else
		printf(", route cache off");
	if (c->flags & NFSL_CFG_EVENTS)
		printf(", drop events on");
	printf("%s\n", c->flags & NFSL_CFG_CT_LIBERAL_SET ? ", set nf_conntrack_tcp_be_liberal" : "");
	n = nfsl_retired_live(d->dir, &left);
	if (n > 0)
		printf("  retired  %d key%s: headers signed by %s dropped as stale for %llu s more\n",
		       n, n > 1 ? "s" : "", n > 1 ? "them" : "it",
		       (unsigned long long)(left + 999999999) / 1000000000);
	printf("  pins     ");
	for (size_t i = 0; i < NFSL_NR_DOMAIN_PINS; i++)
		if (show_pin(d->dir, i))
			printf("%s%s/%s\n", i ? "           " : "", d->dir, nfsl_domain_pins[i]);
	for (__u32 i = 0; i < c->nifaces && i < NFSL_MAX_IFACES; i++) {
		const struct nfsl_iface_state *st = &h->ifs[i];
		const char *ifname = nfsl_health_ifname(h, c, i, buf, sizeof(buf));

		if (st->gone) {
			printf("  %-8s GONE (deleted, or moved to another network "
			       "namespace)\n", ifname);
			continue;
		}
		if (c->ifaces[i].flags & NFSL_IF_NF_PORT) {
			printf("  %-8s ifindex %u: NF port (headers leave and return "
			       "sliced), slicer %s", ifname, c->ifaces[i].ifindex,
			       st->xdp ? "xdp " : "MISSING");
			if (st->xdp)
				printf("%s (prog id %u)", st->xdp, st->xdp_id);
			printf(" for drop notices\n");
			continue;
		}
		printf("  %-8s ifindex %u: slicer %s", ifname, c->ifaces[i].ifindex,
		       st->xdp ? "xdp " : "MISSING");
		if (st->xdp)
			printf("%s (prog id %u)", st->xdp, st->xdp_id);
		printf(", splicer ");
		if (st->tc_id)
			printf("%s egress (prog id %u)\n",
			       c->ifaces[i].flags & NFSL_IF_TCX ? "tcx" : "tc", st->tc_id);
		else
			printf("MISSING\n");
	}
	print_guards_text(&h->guards);
	if (!h->nproblems) {
		printf("  health   ok\n");
		return;
	}
	remedy(h, name, fix, sizeof(fix));
	printf("  health   DAMAGED: ");
	for (unsigned int i = 0; i < h->nproblems; i++)
		printf("%s%s", i ? "; " : "", h->problems[i]);
	printf("\n           %s\n", fix);
}

/* Domain lookup shared by status and stats. */
static int open_domain(const struct show_opts *opt, struct nfsl_domain *d)
{
	int err;

	err = nfsl_domain_open(d, opt->name);
	return err ? nfsl_err_domain(err, opt->name) : 0;
}

static int run_status(void *o, int argc, char **argv)
{
	struct show_opts *opt = o;
	struct nfsl_health h;
	struct nfsl_domain d;

	if (open_domain(opt, &d))
		return -1;
	nfsl_domain_health(&d, &h);
	if (opt->json)
		print_status_json(&d, opt->name, &h);
	else
		print_status_text(&d, opt->name, &h);
	nfsl_domain_close(&d);
	/* A health check's answer, not a failure: the status was shown. */
	return h.nproblems ? NFSL_EXIT_DAMAGED : 0;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

/* Every counter stats shows: the datapath's (per CPU, summed), then
 * those of the evictions user space makes (the TTL scan). */
#define NR_SHOWN (NFSL_NR_COUNTERS + NFSL_NR_MGR_COUNTERS)

static const char *shown_name(size_t i)
{
	return i < NFSL_NR_COUNTERS ? nfsl_counter_names[i]
				    : nfsl_mgr_counter_names[i - NFSL_NR_COUNTERS];
}

static int read_shown(const struct nfsl_domain *d, __u64 *v)
{
	struct nfsl_mgr_counters m;
	struct nfsl_counters c;
	int err = nfsl_domain_counters(d, &c);

	if (!err)
		err = nfsl_domain_mgr_counters(d, &m);
	if (err)
		return err;
	memcpy(v, &c, sizeof(c));
	memcpy(v + NFSL_NR_COUNTERS, &m, NFSL_NR_MGR_COUNTERS * sizeof(*v));
	return 0;
}

/* Share of the route verdicts the slicers' cache gave, since attach (@p
 * NULL) or over the interval since @p; < 0 when there was none (cache off,
 * or nothing large enough to slice). */
static double hit_rate(const __u64 *v, const __u64 *p)
{
	const size_t h = offsetof(struct nfsl_counters, route_cache_hit) / sizeof(__u64),
		     m = offsetof(struct nfsl_counters, route_cache_miss) / sizeof(__u64);
	__u64 hit = v[h] - (p ? p[h] : 0), all = hit + v[m] - (p ? p[m] : 0);

	return all ? (double)hit / all : -1;
}

static int print_stats(const struct nfsl_domain *d, const struct show_opts *opt,
		       const __u64 *p, __u64 *v, double secs)
{
	__u32 busy = 0;
	int err;

	err = read_shown(d, v);
	if (!err)
		err = nfsl_domain_busy_slots(d, &busy);
	if (err)
		return nfsl_err("cannot read the counters: %s", strerror(-err));
	if (opt->json) {
		struct json_writer w;

		jsonw_init(&w, stdout);
		jsonw_start_object(&w);
		jsonw_string_field(&w, "name", opt->name);
		jsonw_uint_field(&w, "slots", d->cfg.slots);
		jsonw_uint_field(&w, "slots_busy", busy);
		for (size_t i = 0; i < NR_SHOWN; i++)
			jsonw_uint_field(&w, shown_name(i), v[i]);
		if (hit_rate(v, NULL) >= 0)
			jsonw_float_field_fmt(&w, "route_cache_hit_rate", "%.4f", hit_rate(v, NULL));
		else
			jsonw_null_field(&w, "route_cache_hit_rate");
		if (p) {
			jsonw_float_field_fmt(&w, "interval_s", "%.3f", secs);
			jsonw_name(&w, "rates");
			jsonw_start_object(&w);
			for (size_t i = 0; i < NR_SHOWN; i++)
				jsonw_float_field_fmt(&w, shown_name(i), "%.1f", (v[i] - p[i]) / secs);
			jsonw_end_object(&w);
		}
		jsonw_end_object(&w);
	} else {
		printf("domain %s: %u slots, %u busy (%.1f%%)\n", opt->name,
		       d->cfg.slots, busy, d->cfg.slots ? 100.0 * busy / d->cfg.slots : 0);
		for (size_t i = 0; i < NR_SHOWN; i++) {
			printf("  %-14s %20llu", shown_name(i), (unsigned long long)v[i]);
			if (p)
				printf("  %12.1f /s", (v[i] - p[i]) / secs);
			printf("\n");
		}
		if (!d->cfg.route_cache_us)
			printf("  route cache off: every packet large enough to slice is looked up\n");
		else if (hit_rate(v, p) >= 0)
			printf("  route cache hit rate %.2f%%%s\n", 100 * hit_rate(v, p),
			       p ? " in the interval" : "");
	}
	fflush(stdout);
	return 0;
}

static int run_stats(void *o, int argc, char **argv)
{
	struct show_opts *opt = o;
	__u64 prev[NR_SHOWN], cur[NR_SHOWN];
	struct nfsl_domain d;
	double t0, t1;
	int err;

	if (open_domain(opt, &d))
		return -1;
	err = print_stats(&d, opt, NULL, cur, 0);
	if (err || !opt->interval)
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	t0 = nfsl_now_ns() / 1e9;
	/* --count is every print, the first included (as vmstat's). */
	for (__u32 n = 1; !stop && (!opt->count || n < opt->count); n++) {
		memcpy(prev, cur, sizeof(cur));
		sleep(opt->interval);
		if (stop)
			break;
		t1 = nfsl_now_ns() / 1e9;
		err = print_stats(&d, opt, prev, cur, t1 - t0);
		if (err)
			break;
		t0 = t1;
	}
out:
	nfsl_domain_close(&d);
	return err;
}

static const struct nfsl_opt status_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct show_opts, name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "json", NFSL_OPT_FLAG, offsetof(struct show_opts, json),
	  .help = "print one JSON object" },
	{ NULL },
};

static const struct nfsl_opt stats_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct show_opts, name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "json", NFSL_OPT_FLAG, offsetof(struct show_opts, json),
	  .help = "print one JSON object (one per line with --interval)" },
	{ "interval", NFSL_OPT_DURATION, offsetof(struct show_opts, interval), 1, 3600,
	  .unit = NFSL_S, .metavar = "SECONDS", .help = "print again every SECONDS, with rates in 1/s" },
	{ "count", NFSL_OPT_U32, offsetof(struct show_opts, count), 1, 1000000,
	  .metavar = "N", .help = "with --interval: stop after N prints, the first included "
				  "(default: until SIGINT)" },
	{ NULL },
};

/* --count alone would print once and ignore N: refuse it. */
static int check_stats(const void *o)
{
	const struct show_opts *opt = o;

	if (opt->count && !opt->interval)
		return nfsl_msg("", "nfslice stats: --count %u needs --interval SECONDS "
				"(e.g. --interval 1 --count %u: %u prints a second apart)",
				opt->count, opt->count, opt->count);
	return 0;
}

const struct nfsl_cmd nfsl_cmd_status = {
	.name = "status",
	.summary = "show a domain's interfaces, configuration and pin paths",
	.description =
		"Shows, for domain NAME of this network namespace, the configuration,\n"
		"the pin paths of its maps (inspect them with bpftool map dump pinned\n"
		"PATH) and, per interface, whether the slicer (XDP) and the splicer (tc\n"
		"egress) are attached, with their program ids, and the domain's health.\n"
		"Exit status 3 when the domain is damaged: a slicer or a splicer is\n"
		"missing (nfslice repair --name NAME restores them) or an interface is\n"
		"gone (detach, then attach again); 1 when there is no such domain.\n"
		"Also the keys the domain retired lately (detach and attach, restore,\n"
		"migration: docs/format.md \"Retired keys\"), whose headers are dropped\n"
		"as stale for their grace period: their count and the longest grace\n"
		"left. With --json the object has \"healthy\", \"problems\" (one\n"
		"string each), when damaged \"fix\", and \"retired_keys\",\n"
		"\"retired_grace_ms\" (ms).",
	.caps = NFSL_CAPS_READ,
	.caps_why = NFSL_CAPS_READ_WHY,
	.opts = status_table,
	.run = run_status,
	.opts_size = sizeof(struct show_opts),
	.defaults = &show_defaults,
};

const struct nfsl_cmd nfsl_cmd_stats = {
	.name = "stats",
	.summary = "show a domain's counters and store occupancy",
	.description =
		"Sums the per-CPU datapath counters (packets, except parked_bytes in\n"
		"bytes) and counts busy slots of the store. Counters: sliced, spliced,\n"
		"skipped_small (frame < threshold), skipped_full (no usable slot),\n"
		"skipped_big (payload > slot or packet > MTU), evicted (expiry reached 0,\n"
		"PayloadPark Alg. 1), stale (token valid but payload evicted: dropped),\n"
		"bad_token (DSCP 63 without our token: passed), replayed (our token\n"
		"arriving from outside: dropped), too_big (spliced packet > egress MTU:\n"
		"dropped), unparsed (not Ethernet/VLAN/IP/UDP/TCP, fragments, malformed);\n"
		"then the counters of the TTL scan (nfsliced, nfslice evict): evicted_ttl\n"
		"(busy slots freed, parked longer than the TTL), ttl_scans, ttl_walked\n"
		"(park log entries read), ttl_overrun (entries overwritten before a scan\n"
		"read them: left to expiry), ttl_raced (slot changed under the scan);\n"
		"their full list and meaning: docs/format.md, Counters.",
	.caps = NFSL_CAP(CAP_BPF),
	.caps_why = "CAP_BPF opens the pinned maps",
	.opts = stats_table,
	.check = check_stats,
	.run = run_stats,
	.opts_size = sizeof(struct show_opts),
	.defaults = &show_defaults,
};
