// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice upgrade: replace the slicer and splicer of a running domain with
 * this build's programs (issue 10 §6), reusing the pinned store, key,
 * configuration, counters, cursors and chain map (the engine:
 * userspace/lib/nfsl/upgrade.h).
 *
 * Never two slicers in series: on an interface the kernel holds one XDP
 * program, and XDP_FLAGS_REPLACE swaps the old for the new in one step
 * (bpf_xdp_attach with old_prog_fd: it fails, changing nothing, if another
 * program took the hook meanwhile). Never a slicer without a splicer:
 * every splicer is replaced first, in place (tc filter replace, the same
 * handle and priority), and the new splicer reads the tokens of the old
 * slicer (same store, key and token format), so at every moment each
 * interface has exactly one slicer and one splicer.
 */
#include <stdbool.h>
#include <stddef.h>

#include "nfslice.h"
#include "nfsl/upgrade.h"
#include "util/json_writer.h"

struct upgrade_opts {
	char *name;
	bool json;
};

/* --json: what was replaced and how long each step took (ns, CLOCK_MONOTONIC). */
static void upgrade_report(const char *name, const struct nfsl_upgrade_result *r)
{
	struct json_writer jw;

	jsonw_init(&jw, stdout);
	jsonw_start_object(&jw);
	jsonw_string_field(&jw, "name", name);
	jsonw_uint_field(&jw, "splicers", r->nsplicers);
	jsonw_uint_field(&jw, "slicers", r->nslicers);
	jsonw_uint_field(&jw, "lock_ns", r->t_locked - r->t_start);
	jsonw_uint_field(&jw, "load_ns", r->t_loaded - r->t_start);
	jsonw_uint_field(&jw, "splicers_ns", r->t_splicers - r->t_loaded);
	jsonw_uint_field(&jw, "slicers_ns", r->t_slicers - r->t_splicers);
	jsonw_uint_field(&jw, "total_ns", r->t_slicers - r->t_start);
	jsonw_end_object(&jw);
}

static int run_upgrade(void *p, int argc, char **argv)
{
	const struct upgrade_opts *o = p;
	struct nfsl_upgrade_result r;

	if (nfsl_upgrade(o->name, o->json, &r))
		return -1;
	if (o->json)
		upgrade_report(o->name, &r);
	else
		printf("nfslice: domain '%s' upgraded: %d splicers, %d slicers replaced; "
		       "store, key and counters kept\n", o->name, r.nsplicers, r.nslicers);
	return 0;
}

static const struct upgrade_opts upgrade_defaults = { .name = "default" };

static const struct nfsl_opt upgrade_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct upgrade_opts, name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "json", NFSL_OPT_FLAG, offsetof(struct upgrade_opts, json),
	  .help = "print the programs replaced and each step's time (lock_ns, load_ns, "
		  "splicers_ns, slicers_ns, total_ns: ns) as one JSON object" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_upgrade = {
	.name = "upgrade",
	.summary = "replace a running domain's programs with this build's",
	.description =
		"Loads this nfslice's slicer and splicer on the domain's pinned store,\n"
		"key, configuration, counters, cursors and chain map, and swaps them in\n"
		"for the running ones: first every splicer (tc filter replace, in\n"
		"place), then every slicer (XDP_FLAGS_REPLACE: one program out, the\n"
		"other in, in one step). So there is never a moment with two slicers in\n"
		"series (the second would drop the first's headers as replayed) nor one\n"
		"with a slicer and no splicer, and payloads parked by the old slicer\n"
		"are spliced by the new splicer. The new programs must read the old\n"
		"ones' store and tokens (the same format); a damaged domain must be\n"
		"repaired first. Not for a slicer inside libxdp's dispatcher (this\n"
		"kernel refuses the dispatcher: docs/platform.md). --json times the\n"
		"steps (loading the new splicer, swapping the splicers, loading and\n"
		"swapping the slicers) in ns; load_ns includes lock_ns, the wait for\n"
		"the host-wide lock, and the domain's health check.",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = upgrade_table,
	.run = run_upgrade,
	.opts_size = sizeof(struct upgrade_opts),
	.defaults = &upgrade_defaults,
};
