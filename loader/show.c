// SPDX-License-Identifier: GPL-2.0
/* nfslice status / stats: what a domain is attached to, and its counters. */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nfslice.h"
#include "domain.h"
#include "json_writer.h"
#include "util.h"

struct show_opts {
	const char *name;
	bool json;
	__u32 interval; /* seconds, 0 = print once */
	__u32 count;    /* intervals to print, 0 = until interrupted */
};

static const struct show_opts show_defaults = { .name = "default" };

static const char *const pin_names[] = {
	NFSL_PIN_STORE, NFSL_PIN_CONFIG, NFSL_PIN_COUNTERS, NFSL_PIN_CURSOR,
	NFSL_PIN_SPLICER,
};
#define NR_PINS (sizeof(pin_names) / sizeof(pin_names[0]))

static void print_status_json(const struct nfsl_domain *d, const char *name)
{
	const struct nfsl_config *c = &d->cfg;
	char path[PATH_MAX + 32];
	struct json_writer w;

	jsonw_init(&w, stdout);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "name", name);
	jsonw_string_field(&w, "dir", d->dir);
	jsonw_name(&w, "pins");
	jsonw_start_object(&w);
	for (size_t i = 0; i < NR_PINS; i++) {
		snprintf(path, sizeof(path), "%s/%s", d->dir, pin_names[i]);
		jsonw_string_field(&w, pin_names[i], path);
	}
	jsonw_end_object(&w);
	jsonw_uint_field(&w, "threshold", c->threshold);
	jsonw_uint_field(&w, "keep", c->keep);
	jsonw_uint_field(&w, "slots", c->slots);
	jsonw_uint_field(&w, "partitions", c->ncpus);
	jsonw_uint_field(&w, "expiry", c->expiry);
	jsonw_bool_field(&w, "ct_liberal_set", c->flags & NFSL_CFG_CT_LIBERAL_SET);
	jsonw_name(&w, "interfaces");
	jsonw_start_array(&w);
	for (__u32 i = 0; i < c->nifaces && i < NFSL_MAX_IFACES; i++) {
		char ifname[IF_NAMESIZE] = "";
		__u32 xdp_id = 0, tc_id = nfsl_splicer_attached(c->ifaces[i].ifindex);
		const char *mode = nfsl_slicer_attached(c->ifaces[i].ifindex, &xdp_id);

		if_indextoname(c->ifaces[i].ifindex, ifname);
		jsonw_start_object(&w);
		jsonw_string_field(&w, "name", ifname);
		jsonw_uint_field(&w, "ifindex", c->ifaces[i].ifindex);
		jsonw_bool_field(&w, "nf_port", c->ifaces[i].flags & NFSL_IF_NF_PORT);
		if (mode)
			jsonw_string_field(&w, "xdp", mode);
		else
			jsonw_null_field(&w, "xdp");
		jsonw_uint_field(&w, "xdp_prog_id", xdp_id);
		jsonw_bool_field(&w, "tc_egress", tc_id);
		jsonw_uint_field(&w, "tc_prog_id", tc_id);
		jsonw_end_object(&w);
	}
	jsonw_end_array(&w);
	jsonw_end_object(&w);
}

static void print_status_text(const struct nfsl_domain *d, const char *name)
{
	const struct nfsl_config *c = &d->cfg;

	printf("domain %s\n", name);
	printf("  config   threshold %u B, keep %u B, %u slots (%u CPU partitions of %u), "
	       "expiry %u%s\n",
	       c->threshold, c->keep, c->slots, c->ncpus, c->part_slots, c->expiry,
	       c->flags & NFSL_CFG_CT_LIBERAL_SET ? ", set nf_conntrack_tcp_be_liberal" : "");
	printf("  pins     ");
	for (size_t i = 0; i < NR_PINS; i++)
		printf("%s%s/%s\n", i ? "           " : "", d->dir, pin_names[i]);
	for (__u32 i = 0; i < c->nifaces && i < NFSL_MAX_IFACES; i++) {
		char ifname[IF_NAMESIZE] = "?";
		__u32 xdp_id = 0, tc_id = nfsl_splicer_attached(c->ifaces[i].ifindex);
		const char *mode = nfsl_slicer_attached(c->ifaces[i].ifindex, &xdp_id);

		if_indextoname(c->ifaces[i].ifindex, ifname);
		if (c->ifaces[i].flags & NFSL_IF_NF_PORT) {
			printf("  %-8s ifindex %u: NF port (headers leave and return "
			       "sliced)\n", ifname, c->ifaces[i].ifindex);
			continue;
		}
		printf("  %-8s ifindex %u: slicer %s", ifname, c->ifaces[i].ifindex,
		       mode ? "xdp " : "MISSING");
		if (mode)
			printf("%s (prog id %u)", mode, xdp_id);
		printf(", splicer ");
		if (tc_id)
			printf("tc egress (prog id %u)\n", tc_id);
		else
			printf("MISSING\n");
	}
}

/* Root check and domain lookup shared by status and stats. */
static int open_domain(const struct show_opts *opt, struct nfsl_domain *d)
{
	int err;

	if (nfsl_require_root())
		return -1;
	err = nfsl_domain_open(d, opt->name);
	return err ? nfsl_err_domain(err, opt->name) : 0;
}

static int run_status(void *o, int argc, char **argv)
{
	struct show_opts *opt = o;
	struct nfsl_domain d;

	if (open_domain(opt, &d))
		return -1;
	if (opt->json)
		print_status_json(&d, opt->name);
	else
		print_status_text(&d, opt->name);
	nfsl_domain_close(&d);
	return 0;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static int print_stats(const struct nfsl_domain *d, const struct show_opts *opt,
		       const struct nfsl_counters *prev, struct nfsl_counters *now,
		       double secs)
{
	const __u64 *v = (const __u64 *)now, *p = (const __u64 *)prev;
	__u32 busy = 0;
	int err;

	err = nfsl_domain_counters(d, now);
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
		for (size_t i = 0; i < NFSL_NR_COUNTERS; i++)
			jsonw_uint_field(&w, nfsl_counter_names[i], v[i]);
		if (prev) {
			jsonw_float_field_fmt(&w, "interval_s", "%.3f", secs);
			jsonw_name(&w, "rates");
			jsonw_start_object(&w);
			for (size_t i = 0; i < NFSL_NR_COUNTERS; i++)
				jsonw_float_field_fmt(&w, nfsl_counter_names[i], "%.1f",
						      (v[i] - p[i]) / secs);
			jsonw_end_object(&w);
		}
		jsonw_end_object(&w);
	} else {
		printf("domain %s: %u slots, %u busy (%.1f%%)\n", opt->name,
		       d->cfg.slots, busy, d->cfg.slots ? 100.0 * busy / d->cfg.slots : 0);
		for (size_t i = 0; i < NFSL_NR_COUNTERS; i++) {
			printf("  %-14s %20llu", nfsl_counter_names[i],
			       (unsigned long long)v[i]);
			if (prev)
				printf("  %12.1f /s", (v[i] - p[i]) / secs);
			printf("\n");
		}
	}
	fflush(stdout);
	return 0;
}

static int run_stats(void *o, int argc, char **argv)
{
	struct show_opts *opt = o;
	struct nfsl_counters prev, cur;
	struct nfsl_domain d;
	double t0, t1;
	int err;

	if (open_domain(opt, &d))
		return -1;
	err = print_stats(&d, opt, NULL, &cur, 0);
	if (err || !opt->interval)
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	t0 = nfsl_now_ns() / 1e9;
	for (__u32 n = 0; !stop && (!opt->count || n < opt->count); n++) {
		prev = cur;
		sleep(opt->interval);
		if (stop)
			break;
		t1 = nfsl_now_ns() / 1e9;
		err = print_stats(&d, opt, &prev, &cur, t1 - t0);
		if (err)
			break;
		t0 = t1;
	}
out:
	nfsl_domain_close(&d);
	return err;
}

static const struct nfsl_opt status_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct show_opts, name), .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "json", NFSL_OPT_FLAG, offsetof(struct show_opts, json),
	  .help = "print one JSON object" },
	{ NULL },
};

static const struct nfsl_opt stats_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct show_opts, name), .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "json", NFSL_OPT_FLAG, offsetof(struct show_opts, json),
	  .help = "print one JSON object (one per line with --interval)" },
	{ "interval", NFSL_OPT_U32, offsetof(struct show_opts, interval), 1, 3600,
	  .metavar = "SECONDS", .help = "print again every SECONDS, with rates in 1/s" },
	{ "count", NFSL_OPT_U32, offsetof(struct show_opts, count), 1, 1000000,
	  .metavar = "N", .help = "with --interval: stop after N more prints" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_status = {
	.name = "status",
	.summary = "show a domain's interfaces, configuration and pin paths",
	.description =
		"Shows, for domain NAME of this network namespace, the configuration,\n"
		"the pin paths of its maps (inspect them with bpftool map dump pinned\n"
		"PATH) and, per interface, whether the slicer (XDP) and the splicer (tc\n"
		"egress) are attached, with their program ids.",
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
		"dropped), unparsed (not Ethernet/VLAN/IP/UDP/TCP, fragments, malformed).",
	.opts = stats_table,
	.run = run_stats,
	.opts_size = sizeof(struct show_opts),
	.defaults = &show_defaults,
};
