// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice checkpoint / restore: a domain's parked payloads, key and
 * configuration to a file and back (userspace/lib/nfsl/ckpt.h; issue 10 §7).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nfslice.h"
#include "nfsl/ckpt.h"
#include "util/json_writer.h"
#include "util/util.h"

struct ckpt_opts {
	char *name;
	char *file;
	bool json;
};

static const struct ckpt_opts ckpt_defaults = { .name = "default" };

static void report(const struct ckpt_opts *o, const char *what,
		   const struct nfsl_ckpt_result *r, __u64 ns)
{
	struct json_writer jw;

	if (!o->json) {
		if (!strcmp(what, "checkpoint"))
			printf("nfslice: domain '%s': %u parked payloads saved to %s (%llu "
			       "bytes, mode 0600: it holds the key)%s\n", o->name, r->saved,
			       o->file, (unsigned long long)r->bytes,
			       r->skipped ? "; some were spliced while copied" : "");
		else
			printf("nfslice: domain '%s': %u parked payloads, the key and the "
			       "configuration restored from %s\n", o->name, r->restored, o->file);
		return;
	}
	jsonw_init(&jw, stdout);
	jsonw_start_object(&jw);
	jsonw_string_field(&jw, "name", o->name);
	jsonw_string_field(&jw, "file", o->file);
	jsonw_uint_field(&jw, "bytes", r->bytes);
	jsonw_uint_field(&jw, "ns", ns); /* the library call, without start-up */
	if (!strcmp(what, "checkpoint")) {
		jsonw_uint_field(&jw, "saved", r->saved);
		jsonw_uint_field(&jw, "skipped", r->skipped);
	} else {
		jsonw_uint_field(&jw, "restored", r->restored);
		jsonw_uint_field(&jw, "conflicts", r->conflicts);
		jsonw_uint_field(&jw, "raised", r->raised);
	}
	jsonw_end_object(&jw);
}

static int run(void *p, bool save)
{
	const struct ckpt_opts *o = p;
	struct nfsl_ckpt_result r;
	char dir[PATH_MAX], err[1024];
	__u64 t0;
	int rc;

	if (!o->file)
		return nfsl_err("--file PATH is required: where the checkpoint %s",
				save ? "goes" : "is"), NFSL_EXIT_USAGE;
	rc = nfsl_domain_dir(dir, sizeof(dir), o->name);
	if (!rc && faccessat(AT_FDCWD, dir, F_OK, AT_EACCESS))
		rc = -ENOENT;
	if (rc)
		return nfsl_err_domain(rc, o->name);
	t0 = nfsl_now_ns();
	rc = save ? nfsl_ckpt_save(dir, o->file, &r, err, sizeof(err)) :
		    nfsl_ckpt_restore(dir, o->file, &r, err, sizeof(err));
	if (rc)
		return nfsl_err("%s", err);
	report(o, save ? "checkpoint" : "restore", &r, nfsl_now_ns() - t0);
	return 0;
}

static int run_checkpoint(void *p, int argc, char **argv)
{
	return run(p, true);
}

static int run_restore(void *p, int argc, char **argv)
{
	return run(p, false);
}

#define OFF(f) offsetof(struct ckpt_opts, f)
static const struct nfsl_opt ckpt_table[] = {
	{ "name", NFSL_OPT_STR, OFF(name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "file", NFSL_OPT_STR, OFF(file), .metavar = "PATH",
	  .help = "the checkpoint file (required)" },
	{ "json", NFSL_OPT_FLAG, OFF(json),
	  .help = "print what was done as one JSON object (with ns: the time it took, ns)" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_checkpoint = {
	.name = "checkpoint",
	.summary = "save a domain's parked payloads, key and configuration",
	.description =
		"Writes every parked payload of the domain (slot index, generation,\n"
		"bytes, checksum, DSCP, parked time), every slot's generation, each\n"
		"allocation partition's and tenant's clock, a clock reference\n"
		"(CLOCK_MONOTONIC and CLOCK_REALTIME read together, the boot id), the\n"
		"configuration and the SipHash key to PATH: version 2 (docs/format.md\n"
		"\"Checkpoint file\"), CRC-32 checked, mode 0600 (the key makes tokens\n"
		"valid). Written beside and renamed over, so PATH is never half a file.\n"
		"Traffic may flow: a payload spliced while it is copied is left out.\n"
		"Restore it with nfslice restore.",
	.caps = NFSL_CAPS_READ,
	.caps_why = NFSL_CAPS_READ_WHY,
	.opts = ckpt_table,
	.run = run_checkpoint,
	.opts_size = sizeof(struct ckpt_opts),
	.defaults = &ckpt_defaults,
};

const struct nfsl_cmd nfsl_cmd_restore = {
	.name = "restore",
	.summary = "load a checkpoint into a domain that holds no payload",
	.description =
		"Checks PATH (magic, version 1 or 2, struct sizes, CRC-32, lengths, and\n"
		"the domain's geometry: slots, CPU partitions, NF ports) and loads it:\n"
		"every saved payload parked again in its slot with its generation and\n"
		"age (parked time and allocation clocks translated to this domain's),\n"
		"free slots' generations raised to the saved ones (a header whose\n"
		"payload was gone before the checkpoint is stale here, not foreign),\n"
		"and the saved key, threshold, keep, expiry and TTL made the\n"
		"domain's (its interfaces stay). Headers sliced before the checkpoint\n"
		"then splice on this domain. Refused, changing nothing, while the domain\n"
		"holds parked payloads: their tokens would stop verifying under the\n"
		"saved key. So restore before traffic reaches the domain (attach it,\n"
		"restore, then route traffic to it). Runs under the host-wide lock.\n"
		"PATH must be owned by you or root and not be writable by group or\n"
		"others (its key makes tokens valid): else refused, naming the fix.",
	.caps = NFSL_CAPS_READ,
	.caps_why = NFSL_CAPS_READ_WHY,
	.opts = ckpt_table,
	.run = run_restore,
	.opts_size = sizeof(struct ckpt_opts),
	.defaults = &ckpt_defaults,
};
