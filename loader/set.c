// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice set: change a domain's configuration while it runs (issue 10
 * §3; userspace/lib/nfsl/cfg.h): through nfsliced when it serves its socket, on the
 * pins otherwise; the same change, the same lock and generation either way.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfslice.h"
#include "nfsl/cfg.h"
#include "nfsl/ctl.h"
#include "nfsl/route.h"
#include "util/json_writer.h"
#include "nfsl/tenant.h"

struct set_opts {
	char *name;
	__u32 threshold, keep, expiry, ttl, if_gen;
	bool has_threshold, has_keep, has_expiry, has_ttl, has_if_gen;
	__u32 timeout; /* s to wait for nfsliced */
	char *tenants; /* tenants file */
	char *quota;   /* NAME=Q[,NAME=Q...] */
	int mode;      /* index into tenant_modes[] */
	int events;    /* index into event_modes[] */
	bool json;
	bool route_flush;
};

static const char *const tenant_modes[] = { "unchanged", "static", "dynamic", NULL };
static const char *const event_modes[] = { "unchanged", "off", "on", NULL };

static const struct set_opts set_defaults = {
	.name = "default",
	.timeout = NFSL_CTL_TIMEOUT_MS / 1000,
};

static void print(const struct set_opts *o, const struct nfsl_config *cfg, const char *via)
{
	struct json_writer jw;

	if (!o->json && cfg->ntenants && (o->tenants || o->quota || o->mode)) {
		printf("nfslice: domain '%s': %s quotas, slots per partition:", o->name,
		       cfg->tenant_flags & NFSL_TEN_DYNAMIC ? "dynamic" : "static");
		for (__u32 t = 0; t < cfg->ntenants && t < NFSL_MAX_TENANTS; t++)
			printf(" %s %u", cfg->tenants[t].name, cfg->tenants[t].size);
		printf(" (configuration generation %u, set through %s)\n", cfg->cfg_gen, via);
		return;
	}
	if (!o->json) {
		printf("nfslice: domain '%s': threshold %u B, keep %u B, expiry %u, ttl %u ms, "
		       "drop events %s (configuration generation %u, set through %s)\n",
		       o->name, cfg->threshold, cfg->keep, cfg->expiry, cfg->ttl_us / 1000,
		       cfg->flags & NFSL_CFG_EVENTS ? "on" : "off", cfg->cfg_gen, via);
		return;
	}
	jsonw_init(&jw, stdout);
	jsonw_start_object(&jw);
	jsonw_string_field(&jw, "name", o->name);
	jsonw_string_field(&jw, "via", via);
	jsonw_uint_field(&jw, "gen", cfg->cfg_gen);
	jsonw_uint_field(&jw, "threshold", cfg->threshold);
	jsonw_uint_field(&jw, "keep", cfg->keep);
	jsonw_uint_field(&jw, "expiry", cfg->expiry);
	jsonw_uint_field(&jw, "ttl_ms", cfg->ttl_us / 1000);
	jsonw_bool_field(&jw, "events", cfg->flags & NFSL_CFG_EVENTS);
	if (cfg->ntenants) {
		jsonw_string_field(&jw, "tenant_mode",
				   cfg->tenant_flags & NFSL_TEN_DYNAMIC ? "dynamic" : "static");
		jsonw_name(&jw, "quotas");
		jsonw_start_object(&jw);
		for (__u32 t = 0; t < cfg->ntenants && t < NFSL_MAX_TENANTS; t++)
			jsonw_uint_field(&jw, cfg->tenants[t].name, cfg->tenants[t].size);
		jsonw_end_object(&jw);
	}
	jsonw_end_object(&jw);
}

/* Through the daemon: 1 when none serves the socket, 0 done, -1 failed. */
static int set_via_daemon(const struct set_opts *o, const struct nfsl_cfg_change *c,
			  __u64 cookie)
{
	struct nfsl_config cfg = {};
	json_t *req, *resp = NULL, *conf;
	int err;

	req = json_pack("{s:s,s:I,s:s,s:o}", "op", "set", "netns", (json_int_t)cookie, "name",
			o->name, "changes", nfsl_ctl_change_json(c));
	if (req && o->has_if_gen)
		json_object_set_new(req, "if_gen", json_integer(o->if_gen));
	if (!req)
		return nfsl_err("out of memory");
	err = nfsl_ctl_call(NULL, req, &resp, o->timeout * 1000);
	if (err == -ENOENT || err == -ECONNREFUSED)
		return 1;
	/* Stopped (SIGSTOP), stuck, or waiting for the host-wide lock. */
	if (err == -ETIMEDOUT)
		return nfsl_err("nfsliced at %s did not answer within %u s: is it running? "
				"(systemctl status nfsliced; nfsliced --help); or wait longer "
				"with --timeout. A change nfsliced had begun may still be made: "
				"nfslice status --name %s shows the configuration",
				nfsl_ctl_path(), o->timeout, o->name);
	if (err)
		return nfsl_err("nfsliced at %s did not answer: %s", nfsl_ctl_path(),
				strerror(-err));
	if (!json_is_true(json_object_get(resp, "ok"))) {
		err = nfsl_err("%s", json_string_value(json_object_get(resp, "error")) ?:
					     "nfsliced refused the change");
		json_decref(resp);
		return err;
	}
	conf = json_object_get(resp, "config");
	cfg.threshold = json_integer_value(json_object_get(conf, "threshold"));
	cfg.keep = json_integer_value(json_object_get(conf, "keep"));
	cfg.expiry = json_integer_value(json_object_get(conf, "expiry"));
	cfg.ttl_us = json_integer_value(json_object_get(conf, "ttl_ms")) * 1000;
	cfg.cfg_gen = json_integer_value(json_object_get(resp, "gen"));
	if (json_integer_value(json_object_get(conf, "events")))
		cfg.flags |= NFSL_CFG_EVENTS;
	print(o, &cfg, "nfsliced");
	json_decref(resp);
	return 0;
}

/* The outcome of a change written on the pins: the config as written, or
 * the error (-ENOENT: no such domain). */
static int report(const struct set_opts *o, int rc, const struct nfsl_config *cfg,
		  const char *err)
{
	if (rc == -ENOENT)
		return nfsl_err_domain(rc, o->name);
	if (rc)
		return nfsl_err("%s", *err ? err : strerror(-rc));
	print(o, cfg, "pins");
	return 0;
}

/*
 * quota_each - call @fn(NAME, Q, @arg) for each NAME=Q of --quota @list
 * (Q: N% of each partition or N slots, nfsl_quota_parse), in order; stops
 * at the first nonzero return. A malformed item is refused with a message.
 * Returns 0, @fn's nonzero return, or NFSL_EXIT_USAGE after a message.
 */
static int quota_each(const char *list, int (*fn)(const char *name, const struct nfsl_quota *q,
						  void *arg),
		      void *arg)
{
	char buf[512], *save = NULL, *tok;
	int rc = 0;

	if (strlen(list) >= sizeof(buf))
		return nfsl_err("--quota: too long (at most %zu characters)", sizeof(buf) - 1),
		       NFSL_EXIT_USAGE;
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		char *v = strchr(tok, '=');
		struct nfsl_quota q;

		if (!v || v == tok)
			return nfsl_err("--quota '%s' is not valid: give NAME=Q, NAME a tenant "
					"(nfslice tenants lists them)", tok), NFSL_EXIT_USAGE;
		if (nfsl_quota_parse(v + 1, &q))
			return nfsl_err("--quota %s is not valid: give " NFSL_QUOTA_RULE, tok),
			       NFSL_EXIT_USAGE;
		*v = '\0';
		rc = fn(tok, &q, arg);
	}
	return rc;
}

struct quota_sizes {
	const struct nfsl_config *cfg;
	__u32 *size;
	bool given[NFSL_MAX_TENANTS];
};

/* quota_each: tenant @name's region size for @q, once per tenant. */
static int quota_size(const char *name, const struct nfsl_quota *q, void *arg)
{
	struct quota_sizes *qs = arg;
	__u32 t;

	for (t = 1; t < qs->cfg->ntenants; t++)
		if (!strncmp(qs->cfg->tenants[t].name, name, sizeof(qs->cfg->tenants[t].name)))
			break;
	if (t >= qs->cfg->ntenants)
		return nfsl_err("--quota %s: no such tenant: give NAME=Q with NAME a tenant of "
				"the domain other than default (which gets the rest): see nfslice "
				"tenants", name), NFSL_EXIT_USAGE;
	if (qs->given[t])
		return nfsl_err("--quota: tenant '%s' is given twice: give each tenant once",
				name), NFSL_EXIT_USAGE;
	qs->given[t] = true;
	qs->size[t] = nfsl_quota_slots(qs->cfg, q);
	return 0;
}

/* --quota NAME=Q[,NAME=Q]: the regions of @cfg with those quotas, into
 * @size. Returns 0 or NFSL_EXIT_USAGE after a message. */
static int quota_sizes(const char *list, const struct nfsl_config *cfg, __u32 *size)
{
	struct quota_sizes qs = { .cfg = cfg, .size = size };

	for (__u32 t = 0; t < NFSL_MAX_TENANTS; t++)
		size[t] = cfg->tenants[t].size;
	return quota_each(list, quota_size, &qs);
}

/* Tenant changes (--tenants, --quota, --tenant-mode) on the pins: the
 * same lock and generation as every writer, nfsliced's dynamic mode
 * included. */
static int set_tenants(const struct set_opts *o, const char *dir)
{
	__u32 size[NFSL_MAX_TENANTS];
	const __u32 *if_gen = o->has_if_gen ? &o->if_gen : NULL;
	struct nfsl_tenant_spec *spec = NULL;
	struct nfsl_config cfg;
	struct nfsl_domain d;
	char err[512] = "";
	int rc;

	if (o->tenants) {
		spec = malloc(sizeof(*spec));
		if (!spec)
			return nfsl_err("out of memory");
		rc = nfsl_tenants_parse(o->tenants, spec, err, sizeof(err));
		if (rc) { /* the file is the user's input: a usage error */
			free(spec);
			return nfsl_err("--tenants: %s", err), NFSL_EXIT_USAGE;
		}
		rc = nfsl_tenants_apply(dir, spec, if_gen, &cfg, err, sizeof(err));
		free(spec);
		if (!rc && o->mode)
			rc = nfsl_tenants_resize(dir, NULL, o->mode == 2, NULL, &cfg, err,
						 sizeof(err));
	} else {
		rc = nfsl_domain_open_dir(&d, dir);
		if (rc)
			return nfsl_err_domain(rc, o->name);
		cfg = d.cfg;
		nfsl_domain_close(&d);
		if (!cfg.ntenants)
			return nfsl_err("domain '%s' has no tenants: they are declared at attach "
					"(nfslice attach --tenants FILE)", o->name);
		if (o->quota && (rc = quota_sizes(o->quota, &cfg, size)))
			return rc;
		rc = nfsl_tenants_resize(dir, o->quota ? size : NULL,
					 o->mode ? o->mode == 2 : -1, if_gen, &cfg, err,
					 sizeof(err));
	}
	return report(o, rc, &cfg, err);
}

static int quota_form_only(const char *name, const struct nfsl_quota *q, void *arg)
{
	return 0;
}

/* What the command line alone tells: the form of every --quota
 * NAME=Q, before the domain is opened. Nonzero after a message. */
static int check_set(const void *p)
{
	const struct set_opts *o = p;

	return o->quota ? quota_each(o->quota, quota_form_only, NULL) : 0;
}

/*
 * Every successful set ends here: the domain's route generation is bumped
 * (route.h), so the slicers look every flow up again. With --route-flush
 * alone it is all set does, and says so. Returns 0 or -1 after a message.
 */
static int route_flush(const struct set_opts *o, const char *dir, bool alone)
{
	struct nfsl_domain d;
	__u64 gen = 0;
	int rc = nfsl_domain_open_dir(&d, dir);

	if (rc)
		return nfsl_err_domain(rc, o->name);
	rc = nfsl_route_gen_bump(&d, &gen);
	nfsl_domain_close(&d);
	if (rc == -ENOENT)
		return nfsl_err("domain '%s' has no route generation (attached by an older "
				"nfslice): run nfslice upgrade --name %s", o->name, o->name);
	if (rc)
		return nfsl_err("cannot bump the route generation of domain '%s': %s", o->name,
				strerror(-rc));
	if (!alone)
		return 0;
	if (o->json) {
		struct json_writer jw;

		jsonw_init(&jw, stdout);
		jsonw_start_object(&jw);
		jsonw_string_field(&jw, "name", o->name);
		jsonw_uint_field(&jw, "route_gen", gen);
		jsonw_end_object(&jw);
	} else {
		printf("nfslice: domain '%s': cached route verdicts flushed (route generation "
		       "%llu)\n", o->name, (unsigned long long)gen);
	}
	return 0;
}

/* The change of set's options but --route-flush; @dir (PATH_MAX) gets
 * the domain's directory, *@none whether there was no such change. 0, -1
 * or NFSL_EXIT_USAGE after a message. */
static int set_change(const struct set_opts *o, char *dir, bool *none)
{
	struct nfsl_cfg_change c = {
		.has_threshold = o->has_threshold, .threshold = o->threshold,
		.has_keep = o->has_keep,           .keep = o->keep,
		.has_expiry = o->has_expiry,       .expiry = o->expiry,
		.has_ttl = o->has_ttl,             .ttl_ms = o->ttl,
		.has_events = o->events != 0,      .events = o->events == 2,
	};
	struct nfsl_config cfg;
	char err[512];
	bool ten = o->tenants || o->quota || o->mode;
	__u64 cookie;
	int rc;

	if (!nfsl_cfg_change_any(&c) && !ten && !o->route_flush)
		return nfsl_err("nothing to change: give --threshold, --keep, --expiry, "
				"--ttl, --events, --tenants, --quota, --tenant-mode or "
				"--route-flush"),
		       NFSL_EXIT_USAGE;
	if (ten && nfsl_cfg_change_any(&c))
		return nfsl_err("give tenant changes (--tenants, --quota, --tenant-mode) and "
				"the others in two commands: each is one change with its own "
				"generation"), NFSL_EXIT_USAGE;
	if (o->tenants && o->quota)
		return nfsl_err("--tenants FILE sets every quota: give --quota without it"),
		       NFSL_EXIT_USAGE;
	rc = nfsl_domain_dir(dir, PATH_MAX, o->name);
	if (!rc)
		rc = nfsl_netns_cookie(&cookie);
	if (rc)
		return nfsl_err_domain(rc, o->name);
	*none = !nfsl_cfg_change_any(&c) && !ten;
	if (*none)
		return 0;
	if (ten)
		return set_tenants(o, dir);
	rc = set_via_daemon(o, &c, cookie);
	if (rc <= 0)
		return rc;
	rc = nfsl_config_change(dir, &c, o->has_if_gen ? &o->if_gen : NULL, &cfg, err,
				sizeof(err));
	return report(o, rc, &cfg, err);
}

static int run_set(void *p, int argc, char **argv)
{
	const struct set_opts *o = p;
	char dir[PATH_MAX];
	bool none = false;
	int rc = set_change(o, dir, &none);

	return rc ? rc : route_flush(o, dir, none);
}

#define OFF(f) offsetof(struct set_opts, f)
#define GIVEN(f) NFSL_GIVEN(struct set_opts, f)
static const struct nfsl_opt set_table[] = {
	{ "name", NFSL_OPT_STR, OFF(name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "threshold", NFSL_OPT_U32, OFF(threshold), 0, 65535, .given = GIVEN(has_threshold),
	  .metavar = "BYTES",
	  .help = "slice frames of at least BYTES bytes from the next packet on" },
	{ "keep", NFSL_OPT_U32, OFF(keep), 0, NFSL_KEEP_MAX, .given = GIVEN(has_keep),
	  .metavar = "BYTES",
	  .help = "payload bytes left after the L4 header (max 192)" },
	{ "expiry", NFSL_OPT_U32, OFF(expiry), 1, NFSL_MAX_EXPIRY, .given = GIVEN(has_expiry),
	  .metavar = "N",
	  .help = "allocator wrap-arounds a busy slot survives (1-255)" },
	{ "ttl", NFSL_OPT_DURATION, OFF(ttl), 0, NFSL_MAX_TTL_MS,
	  .given = GIVEN(has_ttl), .unit = NFSL_MS, .metavar = "MS",
	  .help = "evict payloads parked longer than MS ms (nfsliced), 0 = no TTL" },
	{ "events", NFSL_OPT_ENUM, OFF(events), .choices = event_modes, .metavar = "on|off",
	  .help = "write drop events for nfslice events (on) or stop (off)" },
	{ "tenants", NFSL_OPT_STR, OFF(tenants), .metavar = "FILE",
	  .help = "new quotas, weights, mins and rules of the tenants FILE declares "
		  "(the same tenants as at attach)" },
	{ "quota", NFSL_OPT_STR, OFF(quota), .metavar = "NAME=Q[,NAME=Q]",
	  .help = "new quota of tenant NAME: N% of each partition or N slots of the store" },
	{ "tenant-mode", NFSL_OPT_ENUM, OFF(mode), .choices = tenant_modes, .metavar = "MODE",
	  .help = "static (quotas as set) or dynamic (nfsliced moves them toward demand)" },
	{ "if-gen", NFSL_OPT_U32, OFF(if_gen), 0, UINT32_MAX, .given = GIVEN(has_if_gen),
	  .metavar = "GEN",
	  .help = "change only if the configuration generation is still GEN" },
	{ "route-flush", NFSL_OPT_FLAG, OFF(route_flush),
	  .help = "drop the route verdicts the slicers cached (bump the route "
		  "generation), after a route change nfsliced did not see; every set "
		  "does it after its change" },
	{ "json", NFSL_OPT_FLAG, OFF(json),
	  .help = "print the configuration as written as one JSON object" },
	{ "timeout", NFSL_OPT_DURATION, OFF(timeout), 1, 3600, .unit = NFSL_S, .metavar = "SECONDS",
	  .help = "wait at most SECONDS for nfsliced to answer (default 5)" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_set = {
	.name = "set",
	.summary = "change a domain's configuration while it runs",
	.description =
		"Changes the threshold, keep, expiry, TTL and drop events (nfslice events)\n"
		"of a running domain without\n"
		"detaching it and without losing a parked payload: the splicer finds a\n"
		"payload through its token and slot alone, so a new threshold or keep\n"
		"applies from the next packet sliced while the payloads in flight are\n"
		"spliced as before; a new expiry or TTL applies to every busy slot at\n"
		"the allocator's or the TTL scan's next visit. When nfsliced serves its\n"
		"control socket ($NFSLICE_SOCKET, else /run/nfsliced.sock), the change\n"
		"goes through it (waiting at most --timeout seconds for the answer, then\n"
		"exit 1); otherwise nfslice writes the pinned config itself.\n"
		"Either way it takes the host-wide lock and bumps the configuration\n"
		"generation; with --if-gen GEN it changes nothing when another writer\n"
		"came first (exit 1: read the generation again and retry; nfslice set\n"
		"prints it, as nfsliced's get does). Prints the configuration as written\n"
		"and its generation.\n"
		"Tenant quotas (--tenants FILE, --quota, --tenant-mode; see nfslice\n"
		"tenants) move the regions of the store's partitions: a slot that\n"
		"changes tenant keeps its payload until it is spliced, dropped or evicted\n"
		"by the TTL (the new owner never takes another tenant's busy slot).\n"
		"They are written on the pins under the same lock and generation,\n"
		"whether nfsliced runs or not (its dynamic mode writes them the same way).\n"
		"Every set ends by bumping the domain's route generation: the route\n"
		"verdicts the slicers cached (attach --route-cache) are looked up again\n"
		"from the next packet on. --route-flush alone does only that, for a\n"
		"route, rule, address, link or MTU change nfsliced does not report.",
	.caps = NFSL_CAPS_READ,
	.caps_why = "CAP_BPF opens and writes the pinned config, CAP_SYS_ADMIN enters "
		    "the host's mount namespace",
	.opts = set_table,
	.check = check_set,
	.run = run_set,
	.opts_size = sizeof(struct set_opts),
	.defaults = &set_defaults,
};
