// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice migrate: move a domain to another instance on the same path, in
 * another network namespace or on another host, while traffic flows
 * (issue 10 §7; UNO §3.3.2). The engine, drain and copy mode:
 * userspace/lib/nfsl/migrate.h; here the options and the report.
 */
#include <stdio.h>

#include "nfslice.h"
#include "nfsl/migrate.h"
#include "util/json_writer.h"

static const char *const migrate_modes[] = { "drain", "copy", NULL }; /* NFSL_MIGRATE_* */

struct migrate_opts {
	char *name;
	char *to;       /* target namespace: a name under /run/netns, or a path */
	char *nf_ports; /* in the target */
	__u32 wait_ms;
	int mode;       /* NFSL_MIGRATE_* */
	bool json, has_wait;
};

static const struct migrate_opts migrate_defaults = {
	.name = "default",
	.mode = NFSL_MIGRATE_DRAIN,
};

static void report_drain(const struct migrate_opts *o, const struct nfsl_migrate_result *r)
{
	struct json_writer jw;

	if (!o->json) {
		printf("nfslice: domain '%s' moved to %s: unsliced for %.3f ms, %u payloads "
		       "parked at the switch, %u left after %llu ms of drain%s, %.1f ms in all\n",
		       o->name, o->to, (r->t_start - r->t_stop) / 1e6, r->busy0, r->busy,
		       (unsigned long long)r->waited_ms,
		       r->busy ? " (dropped with the old store)" : "", (r->t_end - r->t0) / 1e6);
		return;
	}
	jsonw_init(&jw, stdout);
	jsonw_start_object(&jw);
	jsonw_string_field(&jw, "name", o->name);
	jsonw_string_field(&jw, "to", o->to);
	jsonw_string_field(&jw, "mode", "drain");
	jsonw_uint_field(&jw, "unsliced_ns", r->t_start - r->t_stop);
	jsonw_uint_field(&jw, "busy_at_switch", r->busy0);
	jsonw_uint_field(&jw, "busy_left", r->busy);
	jsonw_uint_field(&jw, "total_ns", r->t_end - r->t0);
	/* The phases: new instance attached (and the lock waited for),
	 * drained, old one detached. */
	jsonw_uint_field(&jw, "lock_wait_ns", r->lock_ns);
	jsonw_uint_field(&jw, "attach_ns", r->t_stop - r->t0);
	jsonw_uint_field(&jw, "drain_ns", r->t_drained - r->t_start);
	jsonw_uint_field(&jw, "detach_ns", r->t_end - r->t_drained);
	jsonw_end_object(&jw);
}

static void report_copy(const struct migrate_opts *o, const struct nfsl_migrate_result *r)
{
	const struct nfsl_follow *f = &r->f;
	struct json_writer jw;

	if (!o->json) {
		printf("nfslice: domain '%s' copied to %s: unsliced for %.3f ms, %u payloads "
		       "copied (%llu bytes), %u imported; of those %u spliced there, %u "
		       "spliced by the old instance after the copy (freed), %u freed at the "
		       "TTL, %u left at the end of the wait (freed); the old key honoured for "
		       "%.1f ms; %.1f ms in all\n",
		       o->name, o->to, (r->t_start - r->t_stop) / 1e6, r->saved.saved,
		       (unsigned long long)r->saved.bytes, r->imp.restored, f->spliced, f->stale,
		       f->expired, f->left + f->raced, (r->t_end - r->t_start) / 1e6,
		       (r->t_end - r->t0) / 1e6);
		return;
	}
	jsonw_init(&jw, stdout);
	jsonw_start_object(&jw);
	jsonw_string_field(&jw, "name", o->name);
	jsonw_string_field(&jw, "to", o->to);
	jsonw_string_field(&jw, "mode", "copy");
	jsonw_uint_field(&jw, "unsliced_ns", r->t_start - r->t_stop);
	jsonw_uint_field(&jw, "busy_at_switch", r->saved.saved);
	jsonw_uint_field(&jw, "skipped", r->saved.skipped);
	jsonw_uint_field(&jw, "bytes", r->saved.bytes);
	jsonw_uint_field(&jw, "imported", r->imp.restored);
	jsonw_uint_field(&jw, "conflicts", r->imp.conflicts);
	jsonw_uint_field(&jw, "raised", r->imp.raised);
	jsonw_uint_field(&jw, "spliced_new", f->spliced);
	jsonw_uint_field(&jw, "stale_copies", f->stale);
	jsonw_uint_field(&jw, "expired", f->expired);
	jsonw_uint_field(&jw, "busy_left", f->left + f->raced);
	jsonw_uint_field(&jw, "total_ns", r->t_end - r->t0);
	/* The phases: new instance attached (and the lock waited for); old
	 * stopped .. image taken; imported (to a host: sent and imported);
	 * old detached; the old key honoured. */
	jsonw_uint_field(&jw, "lock_wait_ns", r->lock_ns);
	jsonw_uint_field(&jw, "attach_ns", r->t_stop - r->t0);
	jsonw_uint_field(&jw, "export_ns", r->t_saved - r->t_stop);
	jsonw_uint_field(&jw, "import_ns", r->t_imported - r->t_saved);
	jsonw_uint_field(&jw, "detach_ns", r->t_detached - r->t_start);
	jsonw_uint_field(&jw, "key_old_ns", r->t_end - r->t_start);
	jsonw_end_object(&jw);
}

static int run_migrate(void *p, int argc, char **argv)
{
	const struct migrate_opts *o = p;
	struct nfsl_migrate_result res;
	struct nfsl_migrate_req r = {
		.name = o->name, .to = o->to, .nf_ports = o->nf_ports, .mode = o->mode,
		.wait_ms = o->wait_ms, .has_wait = o->has_wait,
		.exe = "/proc/self/exe", .argv0 = "nfslice", .argc = argc, .argv = argv,
	};
	int rc;

	if (!o->to)
		return nfsl_err("--to NETNS|ssh://HOST is required: the namespace of the new "
				"instance (a name under /run/netns, or a path), or its host"),
		       NFSL_EXIT_USAGE;
	rc = nfsl_migrate(&r, &res);
	if (res.done && o->mode == NFSL_MIGRATE_DRAIN)
		report_drain(o, &res);
	else if (res.done)
		report_copy(o, &res);
	return rc;
}

#define OFF(f) offsetof(struct migrate_opts, f)
static const struct nfsl_opt migrate_table[] = {
	{ "name", NFSL_OPT_STR, OFF(name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name, here and in the target (default: default)" },
	{ "to", NFSL_OPT_STR, OFF(to), .metavar = "NETNS|ssh://HOST",
	  .help = "where the new instance goes: a namespace (a name under /run/netns, or a "
		  "path) or another host ([USER@]HOST, through ssh)" },
	{ "mode", NFSL_OPT_ENUM, OFF(mode), .choices = migrate_modes, .metavar = "MODE",
	  .help = "drain (the old splicer stays until its payloads are spliced) or copy "
		  "(the payloads move, the old node leaves at once) (default: drain)" },
	{ "nf-port", NFSL_OPT_STR, OFF(nf_ports), .metavar = "IFACE[,IFACE]",
	  .help = "NF ports of the new instance (attach --nf-port)" },
	{ "wait", NFSL_OPT_DURATION, OFF(wait_ms), 0, 600000, .unit = NFSL_MS,
	  .given = NFSL_GIVEN(struct migrate_opts, has_wait), .metavar = "MS",
	  .help = "drain: longest drain of the old instance; copy: longest time the new "
		  "one honours the old key; ms (default: the TTL, else 1000)" },
	{ "json", NFSL_OPT_FLAG, OFF(json), .help = "print the counts and timings (ns) as one "
						  "JSON object" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_migrate = {
	.name = "migrate",
	.summary = "move a domain to a new instance in another namespace or host (drain or copy)",
	.args = "IFACE...",
	.min_args = 1,
	.max_args = 16,
	.description =
		"Moves domain NAME of this namespace to a new instance on the same path\n"
		"in namespace NETNS (e.g. one standing in for a smart NIC) or on another\n"
		"host, attached to IFACE... there, while traffic flows (UNO §3.3.2, loss-free migration:\n"
		"start the new instance, move the state, switch, retire the old one).\n"
		"The new instance is attached with its own key and a threshold no frame\n"
		"reaches (keep, expiry and TTL as the old one's); the old one stops\n"
		"slicing (threshold 65535). Tokens of either instance pass the other\n"
		"untouched (not its key), and a sliced header is never sliced again, so\n"
		"the two never drop each other's packets.\n"
		"\n"
		"drain (default): nothing copied. The new one starts (the old\n"
		"threshold, slots as the old one's); the old splicer splices what the\n"
		"old slicer parked until its store is empty or --wait ms have passed;\n"
		"then the old domain is detached. For an old node that stays on the\n"
		"return path until then.\n"
		"\n"
		"copy: for an old node that leaves the return path at once. The new\n"
		"store gets at least the old one's slots (rounded up to its\n"
		"partitions) so every index stays a slot. The old store's parked\n"
		"payloads (index, generation, bytes, metadata, parked time with a clock\n"
		"reference) and every slot's generation are copied into the new store\n"
		"(a checkpoint image in memory, docs/format.md), the old key becomes the\n"
		"new instance's second key, the new one starts slicing and splices\n"
		"tokens of both keys, and the old domain is detached without a drain\n"
		"(detach --no-drain). A copy whose header the old splicer spliced after\n"
		"the copy is freed as soon as the old store shows it; one whose header\n"
		"does not come back within the TTL (or --wait) is freed then. When no\n"
		"copy is left, the old key is forgotten and the command returns.\n"
		"\n"
		"Another host (--to ssh://[USER@]HOST): every step there is an nfslice\n"
		"command run through ssh (NFSLICE_RSH, default 'ssh -o BatchMode=yes';\n"
		"NFSLICE_REMOTE, the command there, default 'nfslice'); IFACE... and\n"
		"--nf-port name that host's interfaces. The unsliced window then holds\n"
		"one ssh command (drain: nfslice set there) or the image's transfer\n"
		"(copy: nfslice adopt there reads it, CRC-32 checked; ssh encrypts it,\n"
		"and it holds the key). A copy the old splicer spliced after the image\n"
		"is freed at the TTL there (the old store is not visible).\n"
		"\n"
		"Prints the unsliced window (old stopped .. new started, copy included)\n"
		"and the total time; drain: payloads parked at the switch and left after\n"
		"the drain (lost with the old store); copy: payloads and bytes copied,\n"
		"imported, and how each copy ended. --json gives them as unsliced_ns,\n"
		"total_ns, busy_at_switch, busy_left and the phases (drain: attach_ns,\n"
		"drain_ns, detach_ns; copy: attach_ns, export_ns, import_ns, detach_ns,\n"
		"key_old_ns; copy adds bytes, imported, conflicts, raised, spliced_new,\n"
		"stale_copies, expired).",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = migrate_table,
	.run = run_migrate,
	.opts_size = sizeof(struct migrate_opts),
	.defaults = &migrate_defaults,
};
