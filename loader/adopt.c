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
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfslice.h"
#include "ckpt.h"
#include "copyin.h"
#include "json_writer.h"
#include "util.h"

struct adopt_opts {
	char *name;
	__u32 threshold;
	__u32 wait_ms;
};

static const struct adopt_opts adopt_defaults = {
	.name = "default",
	.threshold = UINT32_MAX,
	.wait_ms = UINT32_MAX,
};

/* Exactly @n bytes of @fd into @b, or fewer at EOF: the count, or -errno. */
static ssize_t read_full(int fd, void *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)b + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* The image from @fd: a little-endian __u64 length (at most @max), then
 * that many bytes into *@buf (malloc'd). 0 or -errno (-EPROTO: cut short
 * or too long). */
static int read_image(int fd, __u64 max, char **buf, size_t *size)
{
	__u64 len;
	ssize_t r = read_full(fd, &len, sizeof(len));

	if (r != sizeof(len))
		return r < 0 ? (int)r : -EPROTO;
	len = le64toh(len);
	if (len > max)
		return -EPROTO;
	*buf = malloc(len ? len : 1);
	if (!*buf)
		return -ENOMEM;
	r = read_full(fd, *buf, len);
	if (r != (ssize_t)len)
		return r < 0 ? (int)r : -EPROTO;
	*size = len;
	return 0;
}

/*
 * The copies the old splicer made stale, as the sender reads them off the
 * old store once the old instance is detached ((index, generation) pairs
 * of little-endian __u32 until EOF): each freed at once and taken out of
 * @refs (*@n of them) as run_copy's follow does. One pass over @refs, the
 * named ones looked up by index. 0, or -ENOMEM (nothing freed: the rest
 * waits for the TTL or the wait's end).
 */
static int drop_stale(int fd, struct nfsl_slot *slots, __u32 nslots,
		      struct nfsl_ckpt_ref *refs, __u32 *n, struct nfsl_follow *f)
{
	__u64 *named = calloc(nslots, sizeof(*named)); /* 1 << 32 | generation */
	__u32 pair[2];

	/* Read to EOF even without memory: the sender must not block. */
	while (read_full(fd, pair, sizeof(pair)) == sizeof(pair))
		if (named && le32toh(pair[0]) < nslots)
			named[le32toh(pair[0])] = 1ull << 32 | le32toh(pair[1]);
	if (!named)
		return -ENOMEM;
	for (__u32 k = 0; k < *n;) {
		struct nfsl_ckpt_ref *r = &refs[k];

		if (named[r->index] != (1ull << 32 | r->gen)) {
			k++;
			continue;
		}
		switch (nfsl_slot_evict(&slots[r->index], r->gen, r->parked_ns)) {
		case NFSL_EVICT_GONE: /* its own header came here first */
			f->spliced++;
			break;
		case NFSL_EVICT_RACED:
			f->raced++;
			break;
		default:
			f->stale++;
		}
		*r = refs[--*n];
	}
	free(named);
	return 0;
}

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

	if (o->threshold == UINT32_MAX)
		return nfsl_err("--threshold BYTES is required: the old instance's, which "
				"this one slices with once the copy is in"), NFSL_EXIT_USAGE;
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
	if ((rc = read_image(STDIN_FILENO, max, &buf, &size))) {
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
	if (drop_stale(STDIN_FILENO, nds.st.slots, nd.cfg.slots, refs, &pending, &f))
		nfsl_err("out of memory for the stale copies' list: they wait for the TTL");
	nfsl_follow_imports(nds.st.slots, NULL, refs, pending, t_start,
			    o->wait_ms != UINT32_MAX ? o->wait_ms :
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
	{ "threshold", NFSL_OPT_U32, OFF(threshold), 0, 65535, .metavar = "BYTES",
	  .help = "slice frames of this size or more once the copy is in (required)" },
	{ "wait", NFSL_OPT_U32, OFF(wait_ms), 0, 600000, .metavar = "MS",
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
		"fails (the sender then rolls back).",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = adopt_table,
	.run = run_adopt,
	.opts_size = sizeof(struct adopt_opts),
	.defaults = &adopt_defaults,
};
