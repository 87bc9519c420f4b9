// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice tenants: a domain's tenants, their quotas, rules' effect and
 * occupancy (issue 10 §5; userspace/lib/nfsl/tenant.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nfslice.h"
#include "util/json_writer.h"
#include "nfsl/tenant.h"

struct tenants_opts {
	char *name;
	bool json;
};

static const struct tenants_opts tenants_defaults = { .name = "default" };

static int run_tenants(void *p, int argc, char **argv)
{
	const struct tenants_opts *o = p;
	struct nfsl_tenant_state st[NFSL_MAX_TENANTS];
	const struct nfsl_config *cfg;
	struct nfsl_domain d;
	__u32 parts;
	int rc;

	rc = nfsl_domain_open(&d, o->name);
	if (rc)
		return nfsl_err_domain(rc, o->name);
	cfg = &d.cfg;
	if (!cfg->ntenants) {
		rc = nfsl_err("domain '%s' has no tenants (nfslice attach --tenants FILE "
			      "declares them)", o->name);
		goto out;
	}
	rc = nfsl_tenants_read(&d, st, NULL, NULL, NULL);
	if (rc) {
		rc = nfsl_err("cannot read the tenants of '%s': %s", o->name, strerror(-rc));
		goto out;
	}
	parts = cfg->ncpus * (cfg->nparts ? cfg->nparts : 1);
	if (o->json) {
		struct json_writer w;

		jsonw_init(&w, stdout);
		jsonw_start_object(&w);
		jsonw_string_field(&w, "name", o->name);
		jsonw_string_field(&w, "mode", cfg->tenant_flags & NFSL_TEN_DYNAMIC ? "dynamic"
										  : "static");
		jsonw_uint_field(&w, "gen", cfg->cfg_gen);
		jsonw_uint_field(&w, "part_slots", cfg->part_slots);
		jsonw_uint_field(&w, "partitions", parts);
		jsonw_name(&w, "tenants");
		jsonw_start_array(&w);
		for (__u32 t = 0; t < cfg->ntenants; t++) {
			const struct nfsl_tenant *tn = &cfg->tenants[t];

			jsonw_start_object(&w);
			jsonw_uint_field(&w, "id", t);
			jsonw_string_field(&w, "tenant", tn->name);
			jsonw_uint_field(&w, "base", tn->base);
			jsonw_uint_field(&w, "quota", tn->size);
			jsonw_uint_field(&w, "quota_slots", (__u64)tn->size * parts);
			jsonw_uint_field(&w, "weight", tn->weight);
			jsonw_uint_field(&w, "min", tn->min);
			jsonw_uint_field(&w, "busy", st[t].busy);
			jsonw_uint_field(&w, "busy_max", st[t].busy_max);
#define X(f) jsonw_uint_field(&w, #f, st[t].cnt.f);
			NFSL_TENANT_COUNTERS(X)
#undef X
			jsonw_end_object(&w);
		}
		jsonw_end_array(&w);
		jsonw_end_object(&w);
	} else {
		printf("domain %s: %u tenants, %s quotas, %u partitions of %u slots "
		       "(configuration generation %u)\n",
		       o->name, cfg->ntenants,
		       cfg->tenant_flags & NFSL_TEN_DYNAMIC ? "dynamic" : "static", parts,
		       cfg->part_slots, cfg->cfg_gen);
		printf("  %-15s %7s %6s %6s %4s %8s %12s %12s %12s %10s\n", "tenant", "quota",
		       "share", "base", "wt", "busy", "attempts", "sliced", "skip_quota",
		       "evicted");
		for (__u32 t = 0; t < cfg->ntenants; t++) {
			const struct nfsl_tenant *tn = &cfg->tenants[t];

			printf("  %-15s %7u %5.1f%% %6u %4u %8u %12llu %12llu %12llu %10llu\n",
			       tn->name, tn->size,
			       cfg->part_slots ? 100.0 * tn->size / cfg->part_slots : 0, tn->base,
			       tn->weight, st[t].busy, (unsigned long long)st[t].cnt.attempts,
			       (unsigned long long)st[t].cnt.sliced,
			       (unsigned long long)st[t].cnt.skipped_quota,
			       (unsigned long long)st[t].cnt.evicted);
		}
	}
	rc = 0;
out:
	nfsl_domain_close(&d);
	return rc;
}

#define OFF(f) offsetof(struct tenants_opts, f)
static const struct nfsl_opt tenants_table[] = {
	{ "name", NFSL_OPT_STR, OFF(name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "json", NFSL_OPT_FLAG, OFF(json), .help = "print one JSON object" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_tenants = {
	.name = "tenants",
	.summary = "show a domain's tenants: quotas, occupancy, counters",
	.description =
		"Shows the tenants of a domain attached with --tenants FILE (issue 10\n"
		"§5): each tenant's quota (its region of every allocation partition: slots\n"
		"per partition, and its share of one), weight and min (dynamic mode), the\n"
		"slots holding its payloads now (busy: a scan of the store), and its\n"
		"counters: attempts (packets the route let slice: its demand), sliced,\n"
		"skip_quota (no usable slot in its region: passed unsliced, never dropped)\n"
		"and evicted (its own expired payloads reclaimed by its allocator; another\n"
		"tenant's payloads are never taken). The store is partitioned as\n"
		"PayloadPark §6.2.3 partitions it between NF servers; nfsliced moves the\n"
		"quotas toward demand in dynamic mode (nfslice set --tenant-mode dynamic).\n"
		"\n"
		"Tenants file, one tenant per line ('#' comments):\n"
		"  NAME [quota=Q] [weight=W] [min=Q] [dev=IFACE]... [vlan=VID]... [dst=PREFIX]...\n"
		"Q is N% of each partition or N slots of the store; W 1-1000 (default 1).\n"
		"'default' is the tenant of what no rule claims; it gets the slots the\n"
		"others leave. A packet's tenant: its longest dst= prefix, else its outer\n"
		"VLAN, else its ingress interface, else default. At most 8 tenants with\n"
		"default, 256 prefixes.",
	.caps = NFSL_CAPS_READ,
	.caps_why = NFSL_CAPS_READ_WHY,
	.opts = tenants_table,
	.run = run_tenants,
	.opts_size = sizeof(struct tenants_opts),
	.defaults = &tenants_defaults,
};
