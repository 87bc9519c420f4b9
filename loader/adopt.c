// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice adopt: the new host's half of a copy-mode migration to another
 * host (nfslice migrate --mode copy --to ssh://HOST runs it there through
 * ssh, the image on its standard input; issue 10 §7, UNO §3.3.2). The
 * domain was attached holding by the same migration; adopt imports the
 * old instance's parked payloads and key, starts slicing with both keys,
 * and forgets the old key once no copy is left.
 *
 * Standard output is the protocol with the sender, one JSON object per
 * line: {"ready":...} once the store is mapped (the sender stops the old
 * slicer only then), {"started":...} once this instance slices (the
 * sender detaches the old one, then names the copies its splicer made
 * stale), {"done":...} at the end. A failure prints its message on
 * standard error and ends the stream before "started": the sender rolls
 * back (the old instance slices again, this one is detached).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfslice.h"
#include "nfsl/ckpt.h"
#include "nfsl/copyin.h"
#include "util/json_writer.h"
#include "util/util.h"

struct adopt_opts {
	char *name;
	__u32 threshold;
	__u32 wait_ms;
	bool has_threshold, has_wait;
};

static const struct adopt_opts adopt_defaults = {
	.name = "default",
};

/* One protocol line: {"EVENT":true, fields...} (fields added by @fill). */
static void line(const char *event, void (*fill)(struct json_writer *, const void *),
		 const void *arg)
{
	struct json_writer jw;

	jsonw_init(&jw, stdout);
	jsonw_start_object(&jw);
	jsonw_bool_field(&jw, event, true);
	if (fill)
		fill(&jw, arg);
	jsonw_end_object(&jw); /* and the newline */
	fflush(stdout);
}

struct adopted {
	const struct nfsl_ckpt_result *imp;
	__u64 bytes, import_ns;
	const struct nfsl_follow *f;
	__u64 key_old_ns;
	__u32 slots;
};

static void fill_ready(struct json_writer *jw, const void *arg)
{
	jsonw_uint_field(jw, "slots", ((const struct adopted *)arg)->slots);
}

static void fill_started(struct json_writer *jw, const void *arg)
{
	const struct adopted *a = arg;

	jsonw_uint_field(jw, "received", a->bytes);
	jsonw_uint_field(jw, "imported", a->imp->restored);
	jsonw_uint_field(jw, "conflicts", a->imp->conflicts);
	jsonw_uint_field(jw, "raised", a->imp->raised);
	jsonw_uint_field(jw, "import_ns", a->import_ns);
}

static void fill_done(struct json_writer *jw, const void *arg)
{
	const struct adopted *a = arg;

	jsonw_uint_field(jw, "spliced_new", a->f->spliced);
	jsonw_uint_field(jw, "stale_copies", a->f->stale);
	jsonw_uint_field(jw, "expired", a->f->expired);
	jsonw_uint_field(jw, "busy_left", a->f->left + a->f->raced);
	jsonw_uint_field(jw, "key_old_ns", a->key_old_ns);
}

static int run_adopt(void *p, int argc, char **argv)
{
	const struct adopt_opts *o = p;
	struct nfsl_ckpt_dstore nds = { .tcursor_fd = -1 };
	struct nfsl_key_old_change kc = { .set = true };
	struct nfsl_domain nd = { .store_fd = -1 };
	struct nfsl_ckpt_result imp = {};
	struct nfsl_ckpt_ref *refs = NULL;
	struct adopted a = { .imp = &imp };
	struct nfsl_ckpt_clock now;
	struct nfsl_ckpt_img img;
	struct nfsl_follow f = {};
	char err[1024], *buf = NULL;
	__u64 t0, t_start, max;
	size_t size = 0;
	__u32 pending;
	int rc;

	if (!o->has_threshold)
		return nfsl_err("--threshold BYTES is required: the old instance's, which "
				"this one slices with once the copy is in"), NFSL_EXIT_USAGE;
	/* The image's key mints tokens: from a pipe or socket (the sender's
	 * ssh channel), or a file only its owner (us or root) can write. */
	if (nfsl_ckpt_file_safe(STDIN_FILENO, "the checkpoint on standard input", NULL, err,
				sizeof(err)))
		return nfsl_err("%s", err);
	rc = nfsl_domain_open(&nd, o->name);
	if (rc)
		return nfsl_err_domain(rc, o->name);
	rc = -1;
	if (nfsl_ckpt_dstore_open(&nds, &nd, err, sizeof(err))) {
		nfsl_err("%s", err);
		goto out;
	}
	a.slots = nd.cfg.slots;
	line("ready", fill_ready, &a);
	/* No image of a store this size is larger: every slot busy with a
	 * whole payload, the generations, the header and clocks. */
	max = (__u64)nd.cfg.slots * (4 + sizeof(struct nfsl_ckpt_rec) + NFSL_PAYLOAD_MAX) +
	      (1 << 20);
	if ((rc = nfsl_adopt_read_image(STDIN_FILENO, max, &buf, &size))) {
		nfsl_err("reading the image from standard input: %s", strerror(-rc));
		rc = -1;
		goto out;
	}
	rc = -1;
	a.bytes = size;
	t0 = nfsl_now_ns();
	/* Not trusted: it crossed a network; the CRC and every bound checked. */
	if (nfsl_ckpt_parse(buf, size, 0, &img, err, sizeof(err))) {
		nfsl_err("the image: %s", err);
		goto out;
	}
	if (img.cfg.slots > nd.cfg.slots) {
		nfsl_err("this store has %u slots, the old one's indexes go up to %u: attach "
			 "with --slots %u or more", nd.cfg.slots, img.cfg.slots, img.cfg.slots);
		goto out;
	}
	refs = calloc(img.nrecs + 1, sizeof(*refs));
	if (!refs || nfsl_ckpt_dstore_clocks(&nds) || nfsl_ckpt_clock_now(&now)) {
		nfsl_err("cannot read this instance's cursors or the clock");
		goto out;
	}
	nfsl_ckpt_import(&img, &nds.st, &now, NFSL_CKPT_LIVE, refs, &imp);
	memcpy(kc.key, img.cfg.key, sizeof(kc.key));
	if (nfsl_mig_key_old(nd.dir, NULL, &kc) ||
	    nfsl_mig_key_old(nd.dir, NULL, &(struct nfsl_key_old_change){
						  .start = true, .threshold = o->threshold }))
		goto out;
	t_start = nfsl_now_ns();
	a.import_ns = t_start - t0;
	line("started", fill_started, &a);
	/* The old store is on the other host: the sender names the copies its
	 * splicer made stale once it is detached; the rest are followed. */
	pending = imp.restored;
	if (nfsl_adopt_drop_stale(STDIN_FILENO, nds.st.slots, nd.cfg.slots, refs, &pending, &f))
		nfsl_err("out of memory for the stale copies' list: they wait for the TTL");
	nfsl_follow_imports(nds.st.slots, NULL, refs, pending, t_start,
			    o->has_wait ? o->wait_ms :
			    nd.cfg.ttl_us     ? nd.cfg.ttl_us / 1000 : 1000,
			    (__u64)nd.cfg.ttl_us * 1000, &f);
	if (nfsl_mig_key_old(nd.dir, NULL, &(struct nfsl_key_old_change){ .clear = true }) ||
	    nfsl_mig_key_old(nd.dir, NULL, &(struct nfsl_key_old_change){ .wipe = true })) {
		nfsl_err("clearing the old key failed: this instance still honours it "
			 "(harmless; detach and attach to drop it)");
		goto out;
	}
	a.f = &f;
	a.key_old_ns = nfsl_now_ns() - t_start;
	line("done", fill_done, &a);
	rc = 0;
out:
	free(refs);
	free(buf);
	nfsl_ckpt_dstore_close(&nds);
	nfsl_domain_close(&nd);
	return rc;
}

#define OFF(f) offsetof(struct adopt_opts, f)
static const struct nfsl_opt adopt_table[] = {
	{ "name", NFSL_OPT_STR, OFF(name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "the domain, attached holding by the migration (default: default)" },
	{ "threshold", NFSL_OPT_U32, OFF(threshold), 0, 65535,
	  .given = NFSL_GIVEN(struct adopt_opts, has_threshold), .metavar = "BYTES",
	  .help = "slice frames of this size or more once the copy is in (required)" },
	{ "wait", NFSL_OPT_DURATION, OFF(wait_ms), 0, 600000, .unit = NFSL_MS,
	  .given = NFSL_GIVEN(struct adopt_opts, has_wait), .metavar = "MS",
	  .help = "longest time the old key is honoured, ms (default: the TTL, else 1000)" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_adopt = {
	.name = "adopt",
	.summary = "take in a copy-mode migration image from another host (stdin)",
	.description =
		"The receiving half of nfslice migrate --mode copy --to ssh://HOST,\n"
		"which runs it on HOST through ssh; not meant to be typed. Reads from\n"
		"standard input a checkpoint image (a little-endian 64-bit length, then\n"
		"version 2, CRC-32 checked, docs/format.md), imports its parked\n"
		"payloads into domain NAME (attached holding: its own key, threshold\n"
		"65535) where their slots are free with an older generation, makes the\n"
		"image's key the domain's second key, starts slicing at --threshold and\n"
		"honours both keys. Then reads the copies the old splicer spliced\n"
		"meanwhile ((index, generation) pairs of little-endian 32-bit words\n"
		"until EOF) and frees them, follows the rest until each is spliced, or\n"
		"freed at the TTL or when --wait ends, and forgets the old key.\n"
		"\n"
		"Prints one JSON object per line: ready (slots), started (received\n"
		"bytes, imported, conflicts, raised, import_ns), done (spliced_new,\n"
		"stale_copies, expired, busy_left, key_old_ns). Exits 1 with the reason\n"
		"on standard error before \"started\" when the image or the import\n"
		"fails (the sender then rolls back). Standard input must be a pipe or a\n"
		"socket, or a file owned by you or root and not writable by group or\n"
		"others (the image's key makes tokens valid); else refused, exit 1.",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = adopt_table,
	.run = run_adopt,
	.opts_size = sizeof(struct adopt_opts),
	.defaults = &adopt_defaults,
};
