// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice evict: one TTL scan of a domain now (issue 10 §2; userspace/lib/nfsl/ttl.h),
 * what nfsliced does every TTL / 4, for tests, cron and hosts without the
 * daemon; and what it evicted.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <net/if.h>

#include "nfslice.h"
#include "nfsl/cfg.h"
#include "util/json_writer.h"
#include "nfsl/ttl.h"
#include "util/util.h"

struct evict_opts {
	const char *name;
	__u32 ttl; /* ms, 0: the domain's */
	bool json;
};

static const struct evict_opts evict_defaults = { .name = "default" };

/* Evicted payloads listed one by one; the counts are always exact. */
#define MAX_LISTED 64

struct listing {
	struct nfsl_ttl_evicted ev[MAX_LISTED];
	unsigned int n;
};

static void list_one(void *arg, const struct nfsl_ttl_evicted *ev)
{
	struct listing *l = arg;

	if (l->n < MAX_LISTED)
		l->ev[l->n++] = *ev;
}

static void print_json(const struct evict_opts *o, const struct nfsl_ttl_result *r,
		       const struct listing *l, __u32 busy)
{
	struct json_writer w;
	char ifname[IF_NAMESIZE];

	jsonw_init(&w, stdout);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "name", o->name);
	jsonw_uint_field(&w, "ttl_us", r->ttl_us);
	jsonw_uint_field(&w, "evicted", r->evicted);
	jsonw_uint_field(&w, "walked", r->walked);
	jsonw_uint_field(&w, "overrun", r->overrun);
	jsonw_uint_field(&w, "raced", r->raced);
	jsonw_uint_field(&w, "slots_busy", busy);
	jsonw_name(&w, "payloads");
	jsonw_start_array(&w);
	for (unsigned int i = 0; i < l->n; i++) {
		const struct nfsl_ttl_evicted *ev = &l->ev[i];

		jsonw_start_object(&w);
		jsonw_uint_field(&w, "slot", ev->slot);
		jsonw_uint_field(&w, "gen", ev->gen);
		jsonw_uint_field(&w, "len", ev->len);
		jsonw_uint_field(&w, "ifindex", ev->ifindex);
		if (if_indextoname(ev->ifindex, ifname))
			jsonw_string_field(&w, "ifname", ifname);
		else
			jsonw_null_field(&w, "ifname");
		jsonw_uint_field(&w, "age_us", ev->age_ns / 1000);
		jsonw_end_object(&w);
	}
	jsonw_end_array(&w);
	jsonw_bool_field(&w, "payloads_complete", l->n == r->evicted);
	jsonw_end_object(&w);
}

static void print_text(const struct evict_opts *o, const struct nfsl_ttl_result *r,
		       const struct listing *l, __u32 busy)
{
	char ifname[IF_NAMESIZE];

	printf("nfslice: domain '%s': ttl %.3f ms: evicted %llu payload%s (%llu log entries "
	       "read, %llu overrun, %llu raced); %u slots busy\n",
	       o->name, r->ttl_us / 1000.0, (unsigned long long)r->evicted,
	       r->evicted == 1 ? "" : "s", (unsigned long long)r->walked,
	       (unsigned long long)r->overrun, (unsigned long long)r->raced, busy);
	for (unsigned int i = 0; i < l->n; i++) {
		const struct nfsl_ttl_evicted *ev = &l->ev[i];

		if (!if_indextoname(ev->ifindex, ifname))
			snprintf(ifname, sizeof(ifname), "ifindex %u", ev->ifindex);
		printf("  slot %u gen %u: %u B from %s, parked %.3f ms ago\n", ev->slot, ev->gen,
		       ev->len, ifname, ev->age_ns / 1e6);
	}
	if (r->evicted > l->n)
		printf("  ... and %llu more\n", (unsigned long long)(r->evicted - l->n));
}

static int run_evict(void *p, int argc, char **argv)
{
	const struct evict_opts *o = p;
	struct nfsl_ttl_result r;
	struct listing l = { .n = 0 };
	struct nfsl_domain d;
	struct nfsl_ttl t;
	__u32 busy = 0;
	int err;

	err = nfsl_domain_open(&d, o->name);
	if (err)
		return nfsl_err_domain(err, o->name);
	err = nfsl_ttl_open(&t, &d);
	if (err == -ENOENT) {
		nfsl_err("domain '%s' has no park log: it was attached by an older nfslice; "
			 "nfslice upgrade --name %s loads this build's slicer, which logs what "
			 "it parks (payloads parked before stay to wrap-count expiry)",
			 o->name, o->name);
		goto out_domain;
	}
	if (err) {
		nfsl_err("cannot map domain '%s' for the TTL scan: %s", o->name, strerror(-err));
		goto out_domain;
	}
	t.ttl_us = o->ttl * 1000;
	t.on_evict = list_one;
	t.arg = &l;
	err = nfsl_ttl_scan(&t, nfsl_now_ns(), &r);
	if (err) {
		nfsl_err("the TTL scan of domain '%s' failed: %s", o->name, strerror(-err));
		goto out;
	}
	if (!r.ttl_us) {
		nfsl_err("domain '%s' has no TTL (ttl 0, off): give one with --ttl MS, or set "
			 "it with nfslice set --name %s --ttl MS", o->name, o->name);
		err = NFSL_EXIT_USAGE;
		goto out;
	}
	err = nfsl_domain_busy_slots(&d, &busy);
	if (err) {
		nfsl_err("cannot count the busy slots: %s", strerror(-err));
		goto out;
	}
	if (o->json)
		print_json(o, &r, &l, busy);
	else
		print_text(o, &r, &l, busy);
out:
	nfsl_ttl_close(&t);
out_domain:
	nfsl_domain_close(&d);
	return err > 0 ? err : err ? -1 : 0;
}

static const struct nfsl_opt evict_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct evict_opts, name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "ttl", NFSL_OPT_DURATION, offsetof(struct evict_opts, ttl), 1, NFSL_MAX_TTL_MS,
	  .unit = NFSL_MS, .metavar = "MS",
	  .help = "evict what was parked at least MS ms ago (default: the domain's ttl)" },
	{ "json", NFSL_OPT_FLAG, offsetof(struct evict_opts, json),
	  .help = "print one JSON object" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_evict = {
	.name = "evict",
	.summary = "evict payloads parked longer than the TTL, now",
	.description =
		"Runs one TTL scan of domain NAME now, as nfsliced does every TTL / 4:\n"
		"every payload parked at least the TTL ago (--ttl MS, else the\n"
		"domain's: attach --ttl, set --ttl) whose slot still holds it is\n"
		"evicted; its sliced header, if it ever comes back, is dropped as\n"
		"stale. The slicer logs every slice with its time (CLOCK_MONOTONIC,\n"
		"ns) in parking order, so the scan reads only the log entries older\n"
		"than the TTL (PayloadPark §3.3's evictor, by time; NFSlicer §III-C\n"
		"payload timeouts); a payload whose entry the slicer overwrote before\n"
		"any scan read it (its partition took part_slots slices within the\n"
		"TTL) is left to wrap-count expiry (--expiry). A scan started\n"
		"afresh, as this one, reads the whole log once. Safe beside\n"
		"nfsliced and under traffic: a payload spliced or parked again\n"
		"meanwhile is never touched. Prints the counts (evicted, log entries\n"
		"read, overrun, raced), the busy slots left and up to 64 of the\n"
		"payloads evicted (slot, generation, bytes, interface, age); the\n"
		"counts also go to nfslice stats (evicted_ttl, ttl_*). Exit status 0\n"
		"also when nothing was due; 1 when the domain has no park log (an\n"
		"older nfslice attached it: nfslice upgrade) or a map cannot be read;\n"
		"2 when the domain has no TTL and --ttl is not given.",
	.caps = NFSL_CAPS_READ,
	.caps_why = "CAP_BPF maps the store and the park log and frees slots, "
		    "CAP_SYS_ADMIN enters the host's mount namespace",
	.opts = evict_table,
	.run = run_evict,
	.opts_size = sizeof(struct evict_opts),
	.defaults = &evict_defaults,
};
