// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Copy-mode migration (issue 10 §7; docs/cli.md "Migration (copy
 * mode)"): the slot import of userspace/lib/nfsl/ckpt.h and the second key.
 *
 * copy: through BPF_PROG_TEST_RUN, payloads sliced under key A are taken
 * into an image, the domain gets key B and an empty store, the image is
 * imported (NFSL_CKPT_LIVE): with NFSL_CFG_KEY_OLD and key_old = A the
 * splicer splices the old headers byte-exact, without the flag they are
 * not ours (bad_token, passed untouched), a token under neither key is
 * not ours either, a header whose payload was spliced before the image
 * is stale (its slot's generation raised), the slicer slices under B, and
 * a drop notice under A frees its slot; the AF_XDP engine's splice
 * honours key_old the same way.
 * ckpt: the import on memory: index, generation, payload and metadata
 * kept, allocation age scaled to the target's region, parked time kept
 * on one clock and translated across hosts, conflicts, raised
 * generations, version 1 images, corrupt images.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <criterion/criterion.h>
#include <zlib.h>

#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "nfsl/ckpt.h"
#include "ckpt_v1.h"
#include "util/util.h"
#include "nfsl_token.h"
#include "xsk/nfsl_xsk_splice.h"

static const __u64 key_b[2] = { 0x0123456789abcdefULL, 0xfedcba9876543210ULL };

/* An image in a memfd, mapped and parsed. */
struct image {
	int fd;
	const void *buf;
	size_t size;
	struct nfsl_ckpt_img img;
	struct nfsl_ckpt_result res;
};

static void image_take(const struct nfsl_ckpt_store *st, struct image *im)
{
	char err[256];

	im->fd = memfd_create("test-image", MFD_CLOEXEC);
	cr_assert_geq(im->fd, 0);
	cr_assert_eq(nfsl_ckpt_write(st, im->fd, 0, &im->res, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nfsl_ckpt_map(im->fd, "image", &im->buf, &im->size, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(im->size, im->res.bytes);
	cr_assert_eq(nfsl_ckpt_parse(im->buf, im->size, 0, &im->img, err, sizeof(err)), 0, "%s",
		     err);
}

static void image_drop(struct image *im)
{
	nfsl_ckpt_unmap(im->buf, im->size);
	close(im->fd);
}

/* ------------------------------------------------ through the datapath -- */

static struct nfsl_slot *map_store(void)
{
	void *m = mmap(NULL, H_STORE_SLOTS * sizeof(struct nfsl_slot), PROT_READ | PROT_WRITE,
		       MAP_SHARED, H.store, 0);

	cr_assert_neq(m, MAP_FAILED, "cannot map the store: %s", strerror(errno));
	return m;
}

/* The test domain's store as nfsl_ckpt_write / nfsl_ckpt_import take it. */
static void test_store(struct nfsl_ckpt_store *st, struct nfsl_slot *slots, __u32 *seq)
{
	cr_assert_eq(nfsl_ckpt_clocks(&H.cfg, H.cursor, -1, seq, NULL), 0);
	*st = (struct nfsl_ckpt_store){ .slots = slots, .cfg = &H.cfg, .seq = seq };
}

/* Run the slicer on @in arriving on @ifindex. */
static int slice_on(int ifindex, const uint8_t *in, uint32_t len, uint8_t *out, uint32_t *olen)
{
	struct xdp_md md = { .data_end = len, .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = len, .data_out = out,
		    .data_size_out = PKT_MAX, .ctx_in = &md, .ctx_size_in = sizeof(md));

	cr_assert_eq(bpf_prog_test_run_opts(H.slicer, &o), 0);
	*olen = o.data_size_out;
	return o.retval;
}

#define NPKT 3
static const struct pkt_spec specs[NPKT] = {
	{ .size = 1000, .proto = PKT_UDP, .seed = 1 },
	{ .size = 1514, .proto = PKT_TCP, .v6 = 1, .seed = 2 },
	{ .size = 512, .proto = PKT_UDP, .v6 = 1, .tcp_opt = 0, .seed = 3 },
};

struct flight {
	uint8_t in[NPKT][PKT_MAX], sliced[NPKT][PKT_MAX];
	uint32_t len[NPKT], slen[NPKT];
};

/* Slice the NPKT packets under the domain's key (A). */
static void slice_all(struct flight *f)
{
	for (int i = 0; i < NPKT; i++) {
		f->len[i] = pkt_build(&specs[i], f->in[i]);
		cr_assert_gt(f->len[i], 0);
		cr_assert_eq(h_slice(f->in[i], f->len[i], f->sliced[i], &f->slen[i]), V_XDP_PASS);
		cr_assert_lt(f->slen[i], f->len[i], "%s not sliced", pkt_name(&specs[i]));
	}
}

/* The new instance: an empty store, its own key B; then the image. */
static void new_instance(struct image *im, struct nfsl_slot *slots)
{
	struct nfsl_ckpt_clock now;
	struct nfsl_ckpt_store st;
	__u32 seq[NFSL_MAX_CPUS];

	h_reset();
	memcpy(H.cfg.key, key_b, sizeof(key_b));
	memset(H.cfg.key_old, 0, sizeof(H.cfg.key_old));
	H.cfg.flags &= ~NFSL_CFG_KEY_OLD;
	h_write_config();
	test_store(&st, slots, seq);
	cr_assert_eq(nfsl_ckpt_clock_now(&now), 0);
	memset(&im->res, 0, sizeof(im->res));
	nfsl_ckpt_import(&im->img, &st, &now, NFSL_CKPT_LIVE, NULL, &im->res);
}

/* The whole copy: @f sliced by the old instance (key A), its store's
 * image imported into the new one's (key B); every payload made it. */
static void moved(struct flight *f, struct image *im, struct nfsl_slot *slots)
{
	struct nfsl_ckpt_store st;
	__u32 seq[NFSL_MAX_CPUS];

	slice_all(f);
	test_store(&st, slots, seq);
	image_take(&st, im);
	new_instance(im, slots);
	cr_assert_eq(im->res.restored, NPKT);
}

static void key_old(bool on)
{
	memcpy(H.cfg.key_old, h_key, sizeof(H.cfg.key_old));
	if (on)
		H.cfg.flags |= NFSL_CFG_KEY_OLD;
	else
		H.cfg.flags &= ~NFSL_CFG_KEY_OLD;
	H.cfg.cfg_gen++; /* as every writer does (userspace/lib/nfsl/cfg.h) */
	h_write_config();
}

TestSuite(copy, .init = h_setup, .fini = h_teardown, .timeout = 30);

/* The heart of copy mode: old headers splice on the new instance from the
 * copies with the flag, and only with it. */
Test(copy, splice_under_old_key)
{
	static struct flight f;
	struct nfsl_slot *slots = map_store();
	struct nfsl_ckpt_store st;
	__u32 seq[NFSL_MAX_CPUS];
	uint8_t out[PKT_MAX];
	struct nfsl_counters c;
	struct image im;
	uint32_t olen;

	slice_all(&f);
	/* The old instance splices the first one before the image. */
	cr_assert_eq(h_splice(f.sliced[0], f.slen[0], out, &olen), V_TC_OK);
	cr_assert_eq(olen, f.len[0]);
	test_store(&st, slots, seq);
	image_take(&st, &im);
	cr_assert_eq(im.res.saved, NPKT - 1);
	new_instance(&im, slots);
	cr_expect_eq(im.res.restored, NPKT - 1);
	cr_expect_eq(im.res.conflicts, 0);
	cr_expect_geq(im.res.raised, 1, "the spliced slot's generation is not raised");

	/* key_old written, the flag not set: not ours. */
	key_old(false);
	cr_assert_eq(h_splice(f.sliced[1], f.slen[1], out, &olen), V_TC_OK);
	cr_expect(olen == f.slen[1] && !memcmp(out, f.sliced[1], olen), "touched without the flag");
	h_counters(&c);
	cr_expect_eq(c.bad_token, 1);
	cr_expect_eq(c.spliced, 0);

	/* With it: both copies splice byte-exact, the slots are freed. */
	key_old(true);
	for (int i = 1; i < NPKT; i++) {
		struct nfsl_slot s;
		__u32 idx;

		memcpy(&idx, f.sliced[i] + f.slen[i] - NFSL_TOKEN_LEN, 4);
		idx = NFSL_TOKEN_IDX(ntohl(idx));
		cr_assert_eq(h_splice(f.sliced[i], f.slen[i], out, &olen), V_TC_OK);
		if (olen != f.len[i] || memcmp(out, f.in[i], olen)) {
			pkt_diff(pkt_name(&specs[i]), out, olen, f.in[i], f.len[i]);
			cr_expect_fail("%s not spliced byte-exact", pkt_name(&specs[i]));
		}
		h_slot_read(idx, &s);
		cr_expect_eq(NFSL_CTL_EXP(s.ctl), 0, "slot %u still busy", idx);
	}
	/* Spliced before the image: stale (dropped), never passed on. */
	cr_expect_eq(h_splice(f.sliced[0], f.slen[0], out, &olen), V_TC_SHOT);
	/* A token under neither key: not ours, passed untouched. */
	memcpy(f.in[0], f.sliced[1], f.slen[1]);
	f.in[0][f.slen[1] - 1] ^= 0x5a;
	cr_expect_eq(h_splice(f.in[0], f.slen[1], out, &olen), V_TC_OK);
	cr_expect(olen == f.slen[1] && !memcmp(out, f.in[0], olen), "a foreign token touched");
	h_counters(&c);
	cr_expect_eq(c.spliced, NPKT - 1);
	cr_expect_eq(c.stale, 1);
	cr_expect_eq(c.bad_token, 2);
	image_drop(&im);
	munmap(slots, H_STORE_SLOTS * sizeof(struct nfsl_slot));
}

/* The new instance slices under its own key, whatever the flag. */
Test(copy, slices_under_new_key)
{
	static struct flight f;
	uint8_t out[PKT_MAX];
	uint32_t olen;

	memcpy(H.cfg.key, key_b, sizeof(key_b));
	key_old(true);
	slice_all(&f);
	key_old(false);
	for (int i = 0; i < NPKT; i++) {
		cr_assert_eq(h_splice(f.sliced[i], f.slen[i], out, &olen), V_TC_OK);
		cr_expect(olen == f.len[i] && !memcmp(out, f.in[i], olen),
			  "%s not spliced under the new key", pkt_name(&specs[i]));
	}
}

/* An NF dropping an old header: its notice carries the old token and
 * frees the copy, with the flag; without, it is not ours. */
Test(copy, drop_notice_under_old_key)
{
	static struct flight f;
	struct nfsl_slot *slots = map_store();
	__u32 idx;
	struct nfsl_counters c;
	uint8_t out[PKT_MAX];
	struct image im;
	uint32_t olen;

	moved(&f, &im, slots);
	/* Frames coming back on H_IF_OUT, now an NF port. */
	H.cfg.ifaces[1].flags |= NFSL_IF_NF_PORT;
	for (int i = 0; i < 2; i++) {
		f.sliced[i][12] = NFSL_ETH_P_NOTICE >> 8;
		f.sliced[i][13] = NFSL_ETH_P_NOTICE & 0xff;
	}
	key_old(false);
	cr_expect_eq(slice_on(H.if_out, f.sliced[0], f.slen[0], out, &olen), V_XDP_DROP);
	key_old(true);
	cr_expect_eq(slice_on(H.if_out, f.sliced[1], f.slen[1], out, &olen), V_XDP_DROP);
	h_counters(&c);
	cr_expect_eq(c.bad_notice, 1);
	cr_expect_eq(c.explicit_drop, 1);
	memcpy(&idx, f.sliced[1] + f.slen[1] - NFSL_TOKEN_LEN, 4);
	cr_expect_eq(NFSL_CTL_EXP(slots[NFSL_TOKEN_IDX(ntohl(idx))].ctl), 0, "copy not freed");
	memcpy(&idx, f.sliced[0] + f.slen[0] - NFSL_TOKEN_LEN, 4);
	cr_expect_neq(NFSL_CTL_EXP(slots[NFSL_TOKEN_IDX(ntohl(idx))].ctl), 0,
		      "a notice not ours freed a slot");
	image_drop(&im);
	munmap(slots, H_STORE_SLOTS * sizeof(struct nfsl_slot));
}

/* The AF_XDP engine's splice (userspace/lib/xsk/splice.c) reads the same codec: the
 * old key with the flag in the configuration it opened with, only then. */
Test(copy, xsk_splice_under_old_key)
{
	static struct flight f;
	struct nfsl_slot *slots = map_store();
	struct nfsl_domain d = { .store_fd = H.store, .config_fd = -1, .counters_fd = -1,
				 .cursor_fd = -1 };
	struct nfsl_xsk_store with, without;
	__u32 len;
	struct image im;

	moved(&f, &im, slots);
	key_old(false);
	d.cfg = H.cfg;
	cr_assert_eq(nfsl_xsk_store_open(&without, &d), 0);
	key_old(true);
	d.cfg = H.cfg;
	cr_assert_eq(nfsl_xsk_store_open(&with, &d), 0);
	len = f.slen[0];
	cr_expect_eq(nfsl_xsk_splice(&without, f.sliced[0], &len, PKT_MAX, 1500),
		     NFSL_XSK_SPLICE_NOT_SLICED);
	for (int i = 0; i < NPKT; i++) {
		len = f.slen[i];
		cr_expect_eq(nfsl_xsk_splice(&with, f.sliced[i], &len, PKT_MAX, 1500),
			     NFSL_XSK_SPLICE_SPLICED, "%s", pkt_name(&specs[i]));
		cr_expect(len == f.len[i] && !memcmp(f.sliced[i], f.in[i], len),
			  "%s not spliced byte-exact", pkt_name(&specs[i]));
	}
	nfsl_xsk_store_close(&with);
	nfsl_xsk_store_close(&without);
	image_drop(&im);
	munmap(slots, H_STORE_SLOTS * sizeof(struct nfsl_slot));
}

/* An AF_XDP NF that opened the new store before the migration set key_old
 * (its config copy has no second key): the first old header makes it read
 * the config again, and every old header splices byte-exact. A token under
 * neither key stays not ours and changes nothing. */
Test(copy, xsk_sees_key_old_set_later)
{
	static struct flight f;
	struct nfsl_slot *slots = map_store();
	struct nfsl_domain d = { .store_fd = H.store, .config_fd = H.config,
				 .counters_fd = -1, .cursor_fd = -1 };
	struct nfsl_xsk_store xs;
	__u32 len, seq0;
	struct image im;
	__u8 foreign[PKT_MAX];

	moved(&f, &im, slots);
	key_old(false);
	d.cfg = H.cfg;
	cr_assert_eq(nfsl_xsk_store_open(&xs, &d), 0);
	cr_assert(xs.cfg_fd >= 0, "the config map is kept");
	/* Under neither key (the flag off): not ours, no refresh. */
	len = f.slen[0];
	memcpy(foreign, f.sliced[0], len);
	seq0 = xs.cfg_seq;
	cr_expect_eq(nfsl_xsk_splice(&xs, foreign, &len, PKT_MAX, 1500),
		     NFSL_XSK_SPLICE_NOT_SLICED);
	cr_expect_eq(xs.cfg_seq, seq0, "nothing changed, nothing rewritten");
	key_old(true); /* the migration's start, while the NF runs */
	for (int i = 0; i < NPKT; i++) {
		len = f.slen[i];
		cr_expect_eq(nfsl_xsk_splice(&xs, f.sliced[i], &len, PKT_MAX, 1500),
			     NFSL_XSK_SPLICE_SPLICED, "%s", pkt_name(&specs[i]));
		cr_expect(len == f.len[i] && !memcmp(f.sliced[i], f.in[i], len),
			  "%s not spliced byte-exact", pkt_name(&specs[i]));
	}
	cr_expect_eq(xs.cfg_seq, seq0 + 2, "one refresh, by the first old header");
	cr_expect(xs.cfg.flags & NFSL_CFG_KEY_OLD);
	nfsl_xsk_store_close(&xs);
	image_drop(&im);
	munmap(slots, H_STORE_SLOTS * sizeof(struct nfsl_slot));
}

/* A read that raced a config write can record the new generation with
 * the old key_old (the kernel copies the value front to back): modelled by
 * a key_old written under the generation the NF holds. The splice's
 * compare of keys and flags in the mapped config still sees it: one
 * re-read, and every old header splices. */
Test(copy, xsk_sees_key_old_same_generation)
{
	static struct flight f;
	struct nfsl_slot *slots = map_store();
	struct nfsl_domain d = { .store_fd = H.store, .config_fd = H.config,
				 .counters_fd = -1, .cursor_fd = -1 };
	struct nfsl_xsk_store xs;
	struct image im;
	__u32 len;

	moved(&f, &im, slots);
	key_old(false);
	d.cfg = H.cfg;
	cr_assert_eq(nfsl_xsk_store_open(&xs, &d), 0);
	cr_assert_not_null(xs.cfg_map);
	H.cfg.flags |= NFSL_CFG_KEY_OLD; /* no generation bump */
	h_write_config();
	cr_assert_eq(xs.cfg_gen, H.cfg.cfg_gen);
	for (int i = 0; i < NPKT; i++) {
		len = f.slen[i];
		cr_expect_eq(nfsl_xsk_splice(&xs, f.sliced[i], &len, PKT_MAX, 1500),
			     NFSL_XSK_SPLICE_SPLICED, "%s", pkt_name(&specs[i]));
	}
	cr_expect_eq(xs.rereads, 1, "%lu re-reads", xs.rereads);
	nfsl_xsk_store_close(&xs);
	image_drop(&im);
	munmap(slots, H_STORE_SLOTS * sizeof(struct nfsl_slot));
}

/* --------------------------------------------------------- on memory -- */

TestSuite(ckpt, .timeout = 30);

/* A store of @ncpus x @nparts partitions of @part slots on the heap. */
static void mem_store(struct nfsl_config *cfg, struct nfsl_slot **slots, __u32 ncpus,
		      __u32 nparts, __u32 part)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ncpus = ncpus;
	cfg->nparts = nparts;
	cfg->part_slots = part;
	cfg->slots = ncpus * nparts * part;
	cfg->expiry = 2;
	*slots = calloc(cfg->slots, sizeof(**slots));
	cr_assert_not_null(*slots);
}

static void park(struct nfsl_slot *s, __u32 gen, __u32 born, __u64 parked_ns, __u8 seed)
{
	s->ctl = NFSL_CTL(gen, 2);
	s->born = born;
	s->parked_ns = parked_ns;
	s->len = 100 + seed;
	s->csum = 0x1234 + seed;
	s->dscp = seed & 63;
	s->flags = NFSL_SLOT_F_V6;
	s->ifindex = 7;
	for (int i = 0; i < s->len; i++)
		s->payload[i] = (__u8)(seed * 31 + i);
}

static bool same_payload(const struct nfsl_slot *a, const struct nfsl_slot *b)
{
	return a->len == b->len && a->csum == b->csum && a->dscp == b->dscp &&
	       a->flags == b->flags && a->ifindex == b->ifindex &&
	       !memcmp(a->payload, b->payload, a->len);
}

/* Index, generation, payload and metadata kept; allocation age scaled to
 * the target's turn; parked time kept (one clock); a busy target slot or
 * one of a newer generation refused live; free slots raised. */
Test(ckpt, import_live)
{
	struct nfsl_config sc, dc;
	struct nfsl_slot *src, *dst;
	__u32 sseq[2] = { 1000, 50 }, dseq[6] = { 0, 0, 0, 5000, 0, 0 };
	struct nfsl_ckpt_store ss = { .cfg = &sc, .seq = sseq }, ds = { .cfg = &dc, .seq = dseq };
	struct nfsl_ckpt_ref refs[8];
	struct nfsl_ckpt_clock now;
	struct image im;
	__u64 t = nfsl_now_ns();

	mem_store(&sc, &src, 2, 1, 8);  /* 16 slots: 2 CPUs x 8 */
	mem_store(&dc, &dst, 2, 3, 3);  /* 18 slots: 2 CPUs x 3 parts x 3 */
	ss.slots = src;
	ds.slots = dst;
	park(&src[5], 7, 1000 - 12, t - 5000, 1);  /* CPU 0, 1.5 turns of 8 old */
	park(&src[12], 3, 40, t - 6000, 2);        /* CPU 1 */
	park(&src[13], 4, 40, t - 7000, 3);
	src[3].ctl = NFSL_CTL(9, 0);              /* spliced before the image */
	src[4].ctl = NFSL_CTL(2, 0);
	dst[12].ctl = NFSL_CTL(1, 1);             /* busy on the target */
	dst[13].ctl = NFSL_CTL(4, 0);             /* target's generation not older */
	dst[4].ctl = NFSL_CTL(6, 0);              /* newer than the saved 2: kept */
	image_take(&ss, &im);
	cr_assert_eq(im.img.version, 2);
	cr_assert_eq(im.img.nrecs, 3);
	cr_assert_eq(nfsl_ckpt_clock_now(&now), 0);
	memset(&im.res, 0, sizeof(im.res));
	cr_assert_eq(nfsl_ckpt_import(&im.img, &ds, &now, NFSL_CKPT_LIVE, refs, &im.res), 1);
	cr_expect_eq(im.res.conflicts, 2);
	cr_expect_eq(refs[0].index, 5);
	cr_expect_eq(refs[0].gen, 7);
	cr_expect_eq(refs[0].parked_ns, t - 5000, "parked time moved on one clock");
	cr_expect_eq(dst[5].ctl, NFSL_CTL(7, 2));
	cr_expect(same_payload(&dst[5], &src[5]));
	cr_expect_eq(dst[5].parked_ns, t - 5000);
	/* Index 5 of the target lies in partition 1 (CPU 0, NF port 1) of 3
	 * slots: 12 attempts of a turn of 8 are 4 of a turn of 3. */
	cr_expect_eq(dst[5].born, (__u32)(0 - 4), "born %u", dst[5].born);
	cr_expect_eq(dst[12].ctl, NFSL_CTL(1, 1), "a busy slot overwritten");
	cr_expect_eq(dst[13].ctl, NFSL_CTL(4, 0));
	cr_expect_eq(dst[3].ctl, NFSL_CTL(9, 0), "free slot's generation not raised");
	cr_expect_eq(dst[4].ctl, NFSL_CTL(6, 0), "a generation lowered");
	cr_expect_eq(NFSL_CTL_GEN(dst[0].ctl), 0, "a slot never taken changed");
	/* Only 3 (to 9): 4 holds a newer one, 5 and 12 are busy, 13 as old. */
	cr_expect_eq(im.res.raised, 1);
	image_drop(&im);
	free(src);
	free(dst);
}

/* Restore (not live): the target takes the image's key, any free slot
 * takes the saved payload whatever its generation. */
Test(ckpt, import_restore)
{
	struct nfsl_config sc, dc;
	struct nfsl_slot *src, *dst;
	__u32 seq[2] = { 100, 100 }, dseq[2] = { 7, 9 };
	struct nfsl_ckpt_store ss = { .cfg = &sc, .seq = seq }, ds = { .cfg = &dc, .seq = dseq };
	struct nfsl_ckpt_clock now;
	struct image im;

	mem_store(&sc, &src, 2, 1, 8);
	mem_store(&dc, &dst, 2, 1, 8);
	ss.slots = src;
	ds.slots = dst;
	park(&src[9], 3, 90, nfsl_now_ns(), 4);
	dst[9].ctl = NFSL_CTL(20, 0);
	image_take(&ss, &im);
	nfsl_ckpt_clock_now(&now);
	memset(&im.res, 0, sizeof(im.res));
	cr_assert_eq(nfsl_ckpt_import(&im.img, &ds, &now, 0, NULL, &im.res), 1);
	cr_expect_eq(dst[9].ctl, NFSL_CTL(3, 2));
	cr_expect_eq(dst[9].born, 9 - 10, "same geometry: the same age");
	cr_expect(same_payload(&dst[9], &src[9]));
	image_drop(&im);
	free(src);
	free(dst);
}

/* Another host: the age at the reference plus the realtime since. */
Test(ckpt, translate)
{
	struct nfsl_ckpt_clock a = { .mono_ns = 10000000, .real_ns = 1000000000,
				     .boot_id = { 1 } },
			       b = { .mono_ns = 500000000, .real_ns = 1000300000,
				     .boot_id = { 2 } };

	cr_expect_eq(nfsl_ckpt_translate(&a, &b, 9000000, 1000000), 500000000 - 1000000 - 300000);
	b.boot_id[0] = 1;
	cr_expect_eq(nfsl_ckpt_translate(&a, &b, 9000000, 1000000), 9000000);
	memset(a.boot_id, 0, sizeof(a.boot_id));
	memset(b.boot_id, 0, sizeof(b.boot_id));
	cr_expect_eq(nfsl_ckpt_translate(&a, &b, 9000000, 1000000), 500000000 - 1300000,
		     "unknown boot ids taken for one clock");
	b.real_ns = 0; /* realtime behind: no elapsed time */
	b.mono_ns = 5;
	cr_expect_eq(nfsl_ckpt_translate(&a, &b, 9000000, 1000000), 0);
}

/* A version 1 image (the previous build's: its configuration without
 * key_old, fixed records holding the age) is still read. */
Test(ckpt, version1)
{
	struct nfsl_config cfg, dc;
	struct nfsl_ckpt_slot_v1 rec = { .index = 6 };
	__u32 seq[2] = { 500, 0 }, dseq[2] = { 80, 0 };
	struct nfsl_ckpt_store ds = { .cfg = &dc, .seq = dseq };
	struct nfsl_ckpt_result res = {};
	struct nfsl_ckpt_clock now;
	struct nfsl_ckpt_img img;
	struct nfsl_slot *dst;
	size_t size = CKPT_V1_SIZE;
	char *buf, err[256];
	__u64 age = 3000000;
	__u32 crc;

	mem_store(&cfg, &dst, 2, 1, 8);
	free(dst);
	mem_store(&dc, &dst, 2, 1, 8);
	ds.slots = dst;
	cfg.key[0] = 42;
	nfsl_ckpt_clock_now(&now);
	park(&rec.slot, 5, 490, age, 9);
	buf = ckpt_v1_image(&cfg, seq, &rec, now.real_ns);
	cr_assert_not_null(buf);
	crc = crc32(0, (const Bytef *)buf, size);
	memcpy(buf + offsetof(struct nfsl_ckpt_hdr, crc32), &crc, sizeof(crc));
	cr_assert_eq(nfsl_ckpt_parse(buf, size, 0, &img, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(img.version, 1);
	cr_expect_eq(img.cfg.key[0], 42);
	cr_expect_eq(img.cfg.key_old[0], 0);
	cr_expect_null(img.gen);
	cr_assert_eq(nfsl_ckpt_import(&img, &ds, &now, 0, NULL, &res), 1);
	cr_expect_eq(dst[6].ctl, NFSL_CTL(5, 2));
	cr_expect_eq(dst[6].born, 80 - 10);
	cr_expect(same_payload(&dst[6], &rec.slot));
	cr_expect(dst[6].parked_ns <= now.mono_ns - age && dst[6].parked_ns > now.mono_ns - age -
		  1000000000ull, "parked %llu, now %llu", (unsigned long long)dst[6].parked_ns,
		  (unsigned long long)now.mono_ns);
	/* Corrupt, truncated, not one. */
	buf[size - 3] ^= 1;
	cr_expect_eq(nfsl_ckpt_parse(buf, size, 0, &img, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "corrupt"), "%s", err);
	buf[size - 3] ^= 1;
	cr_expect_eq(nfsl_ckpt_parse(buf, size - 8, 0, &img, err, sizeof(err)), -EBADMSG);
	cr_expect_eq(nfsl_ckpt_parse("hello", 5, 0, &img, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "not an nfslice checkpoint"), "%s", err);
	free(buf);
	free(dst);
}

/* Every byte of a version 2 image counts: one flipped, refused. */
Test(ckpt, version2_checked)
{
	struct nfsl_config sc;
	struct nfsl_slot *src;
	__u32 seq[2] = { 3, 4 };
	struct nfsl_ckpt_store ss = { .cfg = &sc, .seq = seq };
	struct nfsl_ckpt_img img;
	struct image im;
	char err[256], *copy;

	mem_store(&sc, &src, 2, 1, 8);
	ss.slots = src;
	park(&src[1], 2, 1, 5, 1);
	park(&src[15], 2, 1, 5, 2);
	image_take(&ss, &im);
	cr_expect_eq(im.img.nrecs, 2);
	cr_expect_eq(im.img.ngen, 16);
	copy = malloc(im.size);
	for (size_t i = 0; i < im.size; i += 7) {
		memcpy(copy, im.buf, im.size);
		copy[i] ^= 0x10;
		cr_expect_eq(nfsl_ckpt_parse(copy, im.size, 0, &img, err, sizeof(err)), -EBADMSG,
			     "byte %zu flipped, accepted", i);
	}
	free(copy);
	image_drop(&im);
	/* A migration's image in memory has no CRC: refused as a file, read
	 * when the caller trusts it. */
	im.fd = memfd_create("test-image", MFD_CLOEXEC);
	cr_assert_eq(nfsl_ckpt_write(&ss, im.fd, NFSL_CKPT_NOCRC, &im.res, err, sizeof(err)), 0);
	cr_assert_eq(nfsl_ckpt_map(im.fd, "image", &im.buf, &im.size, err, sizeof(err)), 0);
	cr_expect_eq(nfsl_ckpt_parse(im.buf, im.size, 0, &img, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "without CRC"), "%s", err);
	cr_expect_eq(nfsl_ckpt_parse(im.buf, im.size, NFSL_CKPT_TRUSTED, &img, err, sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(img.nrecs, 2);
	image_drop(&im);
	free(src);
}
