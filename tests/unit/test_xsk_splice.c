// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The AF_XDP engine's splice (userspace/lib/xsk/splice.c) against the tc splicer: one
 * codec (include/nfsl_splice.h), two engines, the same bytes out. Every
 * packet kind the splice tests cover is sliced by the slicer, changed as an
 * NF on the way would change it, then spliced once by the tc splicer
 * (BPF_PROG_TEST_RUN) and once, re-sliced, by nfsl_xsk_splice on a
 * read-write mmap of the same store: the frames must be byte-identical and
 * each engine must free the slot. Then the refusals: stale, forged, too
 * big, no room, explicit release, and garbage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "ref.h"
#include "nfsl/domain.h"
#include "nfsl_splice.h"
#include "xsk/nfsl_xsk_splice.h"

#define XS_ROOM 2048u /* a UMEM frame */
#define XS_MTU 1500u

static struct nfsl_xsk_store xs;

/* The store of the test domain, mapped as the AF_XDP engine maps it. */
static void xs_setup(void)
{
	struct nfsl_domain d = { .config_fd = -1, .counters_fd = -1, .cursor_fd = -1 };
	int err;

	h_setup();
	d.store_fd = H.store;
	d.cfg = H.cfg;
	err = nfsl_xsk_store_open(&xs, &d);
	cr_assert_eq(err, 0, "cannot map the store: %s", strerror(-err));
	cr_assert_eq(xs.nslots, H_STORE_SLOTS);
}

static void xs_teardown(void)
{
	nfsl_xsk_store_close(&xs);
	nfsl_xsk_store_close(&xs); /* twice: harmless */
	h_teardown();
}

TestSuite(xsk_splice, .init = xs_setup, .fini = xs_teardown, .timeout = 60);

static const char *const res_names[] = {
	[NFSL_XSK_SPLICE_NOT_SLICED] = "NOT_SLICED", [NFSL_XSK_SPLICE_SPLICED] = "SPLICED",
	[NFSL_XSK_SPLICE_STALE] = "STALE",	     [NFSL_XSK_SPLICE_TOO_BIG] = "TOO_BIG",
	[NFSL_XSK_SPLICE_NO_ROOM] = "NO_ROOM",	     [NFSL_XSK_SPLICE_BAD] = "BAD",
};

static const char *res_name(int r)
{
	return r >= 0 && r < (int)ARRAY_SIZE(res_names) ? res_names[r] : "?";
}

static uint32_t csum_off(const struct ref_info *ri)
{
	return ri->l4off + (ri->proto == PKT_UDP ? 6 : 16);
}

static void parse(const uint8_t *f, size_t len, struct ref_info *ri)
{
	cr_assert_eq(ref_parse(f, len, ri), 0, "frame does not parse");
}

/* Add @d to the big-endian word at @p in ones' complement. */
static void add16(uint8_t *p, uint16_t d)
{
	ref_put16(p, ref_fold((uint64_t)ref_get16(p) + d));
}

static uint64_t slot_ctl(uint32_t idx)
{
	return __atomic_load_n(&xs.slots[idx].ctl, __ATOMIC_RELAXED);
}

/* The token's slot and generation in the sliced frame @f. */
static void token_of(const uint8_t *f, size_t len, uint32_t *slot, uint32_t *gen)
{
	struct ref_info ri;

	parse(f, len, &ri);
	*slot = NFSL_TOKEN_IDX((uint32_t)ref_get16(f + ri.l3end - 16) << 16 |
			       ref_get16(f + ri.l3end - 14));
	*gen = (uint32_t)ref_get16(f + ri.l3end - 12) << 16 | ref_get16(f + ri.l3end - 10);
}

/* Run nfsl_xsk_splice on a copy of @in; the result in @out / *@olen. */
static int xs_splice(const uint8_t *in, uint32_t len, uint8_t *out, uint32_t *olen,
		     uint32_t room, uint32_t mtu)
{
	memcpy(out, in, len);
	*olen = len;
	return nfsl_xsk_splice(&xs, out, olen, room, mtu);
}

/* ---- the input before slicing ---- */

/* The computed L4 checksum becomes 0x0000 and the field says 0xffff (the
 * other zero): TCP carries it only if it arrived so, UDP always does. */
static void prep_l4_ffff(uint8_t *f, size_t len, const struct ref_info *ri)
{
	add16(f + ri->payoff + 8, ref_get16(f + csum_off(ri)));
	ref_fix_csums(f, len);
	cr_assert_eq(ref_get16(f + csum_off(ri)), ri->proto == PKT_UDP ? 0xffff : 0);
	ref_put16(f + csum_off(ri), 0xffff);
}

/* The same for the IPv4 header checksum, through the IP ID. */
static void prep_ip_ffff(uint8_t *f, size_t len, const struct ref_info *ri)
{
	uint8_t *l3 = f + ri->l3off;

	add16(l3 + 4, ref_get16(l3 + 10));
	ref_fix_csums(f, len);
	cr_assert_eq(ref_get16(l3 + 10), 0);
	ref_put16(l3 + 10, 0xffff);
}

/* CHECKSUM_PARTIAL: the field holds the pseudo-header seed (Linux
 * ~csum_tcpudp_magic()), the device is to sum the rest. */
static void prep_partial(uint8_t *f, size_t len, const struct ref_info *ri)
{
	uint64_t acc = ri->v6 ? ref_sum(f + ri->l3off + 8, 32, 0)
			      : ref_sum(f + ri->l3off + 12, 8, 0);

	ref_put16(f + csum_off(ri), ref_fold(acc + ri->proto + (ri->l3end - ri->l4off)));
}

#define ONLY_V4 0x1
#define ONLY_UDP 0x2
#define PARTIAL 0x4   /* prep: CHECKSUM_PARTIAL; nf: for those only */
#define NO_PARTIAL 0x8 /* nf: not on a partial header */
#define INVALID 0x10  /* prep: the output need not verify (wrong checksum) */

static const struct prep {
	const char *name;
	struct pkt_spec s; /* size, v6, proto, vlans, seed set by the loop */
	void (*fn)(uint8_t *f, size_t len, const struct ref_info *ri);
	unsigned int flags;
} preps[] = {
	{ "plain", {} },
	{ "DSCP 63 from outside, ECN 1", { .dscp = 63, .ecn = 1 } },
	{ "options", { .ip_opt = 8, .n_ext = 1, .ext = { PKT_EXT_HBH }, .tcp_opt = 12 } },
	{ "UDP checksum 0", { .udp_nocsum = 1 }, NULL, ONLY_V4 | ONLY_UDP },
	{ "wrong L4 checksum", { .bad_csum = 1 }, NULL, INVALID },
	{ "L4 checksum 0xffff", {}, prep_l4_ffff },
	{ "IPv4 header checksum 0xffff", {}, prep_ip_ffff, ONLY_V4 },
	{ "CHECKSUM_PARTIAL", {}, prep_partial, PARTIAL | INVALID },
};

/* ---- what the NF does to the sliced header ---- */

static void nf_none(uint8_t *f, uint32_t *len)
{
}

/* A QoS marker: DSCP 10 (AF11), ECN kept, the IPv4 header checksum
 * updated incrementally. */
static void nf_remark(uint8_t *f, uint32_t *len)
{
	struct ref_info ri;
	uint8_t *l3;

	parse(f, *len, &ri);
	l3 = f + ri.l3off;
	if (ri.v6) {
		uint8_t tc = 10 << 2 | ri.ecn;

		l3[0] = (l3[0] & 0xf0) | tc >> 4;
		l3[1] = (uint8_t)((l3[1] & 0x0f) | (tc & 0xf) << 4);
	} else {
		uint16_t old = ref_get16(l3);

		l3[1] = 10 << 2 | ri.ecn;
		ref_put16(l3 + 10, ref_update16(ref_get16(l3 + 10), old, ref_get16(l3)));
	}
}

/* Rewrite the 16-bit word at @off to @v as a NAT does (RFC 1624): the
 * IPv4 header checksum if it covers it, the L4 checksum unless none. */
static void nat_word(uint8_t *f, const struct ref_info *ri, uint32_t off, uint16_t v,
		     bool in_ip)
{
	uint8_t *ipc = f + ri->l3off + 10, *l4c = f + csum_off(ri);
	uint16_t old = ref_get16(f + off), c;

	ref_put16(f + off, v);
	if (in_ip && !ri->v6)
		ref_put16(ipc, ref_update16(ref_get16(ipc), old, v));
	if (ri->proto == PKT_UDP && !ref_get16(l4c))
		return;
	c = ref_update16(ref_get16(l4c), old, v);
	ref_put16(l4c, ri->proto == PKT_UDP && !c ? 0xffff : c);
}

/* Source NAT and a destination port forward, between slice and splice. */
static void nf_nat(uint8_t *f, uint32_t *len)
{
	static const uint16_t src4[2] = { 0xc000, 0x0207 }; /* 192.0.2.7 */
	static const uint16_t src6[8] = { 0x2001, 0x0db8, 0, 0, 0, 0, 0x00ab, 0x0007 };
	struct ref_info ri;

	parse(f, *len, &ri);
	for (int i = 0; i < (ri.v6 ? 8 : 2); i++)
		nat_word(f, &ri, ri.l3off + (ri.v6 ? 8 : 12) + 2 * i, ri.v6 ? src6[i] : src4[i],
			 true);
	nat_word(f, &ri, ri.l4off, 40000, false);
	nat_word(f, &ri, ri.l4off + 2, 8080, false);
}

static void nf_nat_remark(uint8_t *f, uint32_t *len)
{
	nf_nat(f, len);
	nf_remark(f, len);
}

/* An IPv4 NF that drops the UDP checksum (RFC 768 allows it). */
static void nf_clear_udp(uint8_t *f, uint32_t *len)
{
	struct ref_info ri;

	parse(f, *len, &ri);
	ref_put16(f + csum_off(&ri), 0);
}

/* A device on the way (a TAP towards the NF, a NIC with TX offload)
 * completes a CHECKSUM_PARTIAL header's checksum. */
static void nf_complete(uint8_t *f, uint32_t *len)
{
	ref_fix_csums(f, *len);
}

/* Ethernet padding added on the way: the token stays where the IP length
 * says. */
static void nf_pad(uint8_t *f, uint32_t *len)
{
	memset(f + *len, 0, 6);
	*len += 6;
}

static const struct nf {
	const char *name;
	void (*fn)(uint8_t *f, uint32_t *len);
	unsigned int flags;
} nfs[] = {
	{ "no NF", nf_none },
	{ "DSCP re-marked", nf_remark },
	{ "NAT", nf_nat, NO_PARTIAL },
	{ "NAT, DSCP re-marked", nf_nat_remark, NO_PARTIAL },
	{ "UDP checksum cleared", nf_clear_udp, ONLY_V4 | ONLY_UDP },
	{ "checksum completed", nf_complete, PARTIAL },
	{ "padded", nf_pad },
};

static bool fits(unsigned int flags, int v6, uint8_t proto)
{
	return !((flags & ONLY_V4) && v6) && !((flags & ONLY_UDP) && proto != PKT_UDP);
}

/* Slice @in afresh (store reset: slot h_part_base(), generation 1) and
 * let @nf change the header. With @t, the token is checked first, as the
 * AF_XDP worker checks it on receive (nfsl_xsk_frame_orig_len), and the
 * check kept in @t: it must verify. */
static bool slice_nf_tok(const char *name, const uint8_t *in, size_t len, const struct nf *nf,
			 uint8_t *sl, uint32_t *slen, struct nfsl_xsk_tok *t)
{
	int v;

	h_reset();
	v = h_slice(in, len, sl, slen);
	if (v != V_XDP_PASS || *slen >= len) {
		cr_expect_fail("%s: not sliced (verdict %d, %u of %zu B)", name, v, *slen, len);
		return false;
	}
	if (t) {
		nfsl_xsk_orig_len_tok(&xs, sl, *slen, t);
		if (!t->ours) {
			cr_expect_fail("%s: the receive check did not verify the token", name);
			return false;
		}
	}
	nf->fn(sl, slen);
	return true;
}

static bool slice_nf(const char *name, const uint8_t *in, size_t len, const struct nf *nf,
		     uint8_t *sl, uint32_t *slen)
{
	return slice_nf_tok(name, in, len, nf, sl, slen, NULL);
}

/* One table entry: the tc splicer and nfsl_xsk_splice agree, byte for
 * byte, and each frees the slot. */
static bool same_one(const struct prep *pr, const struct nf *nf, int v6, uint8_t proto,
		     uint8_t vlans, uint16_t size, uint8_t seed)
{
	uint8_t in[PKT_MAX], sl[PKT_MAX], sl2[PKT_MAX], bo[PKT_MAX], xo[PKT_MAX], xo2[PKT_MAX];
	uint32_t slen, slen2, blen, xlen, xlen2, base = h_part_base();
	struct nfsl_xsk_tok tok;
	struct pkt_spec s = pr->s;
	struct ref_info ri;
	const char *err;
	char name[320];
	bool ok = true;
	size_t len;
	int v, r;

	s.size = size;
	s.v6 = v6;
	s.proto = proto;
	s.vlans = vlans;
	s.seed = seed;
	pkt_spec_fit(&s);
	len = pkt_build(&s, in);
	cr_assert_gt(len, 0);
	parse(in, len, &ri);
	if (pr->fn)
		pr->fn(in, len, &ri);
	snprintf(name, sizeof(name), "%s, %s, keep %u: %s", pr->name, nf->name, H.cfg.keep,
		 pkt_name(&s));

	if (!slice_nf(name, in, len, nf, sl, &slen))
		return false;
	v = h_splice(sl, slen, bo, &blen);
	ok &= v == V_TC_OK && slot_ctl(base) == NFSL_CTL(1, 0);
	cr_expect_eq(v, V_TC_OK, "%s: tc splicer verdict %d", name, v);
	cr_expect_eq(slot_ctl(base), NFSL_CTL(1, 0), "%s: tc splicer left ctl %#llx", name,
		     (unsigned long long)slot_ctl(base));

	if (!slice_nf(name, in, len, nf, sl2, &slen2))
		return false;
	ok &= x_bytes(name, sl2, slen2, sl, slen); /* the same input to both */
	r = xs_splice(sl2, slen2, xo, &xlen, XS_ROOM, XS_MTU);
	ok &= r == NFSL_XSK_SPLICE_SPLICED && slot_ctl(base) == NFSL_CTL(1, 0);
	cr_expect_eq(r, NFSL_XSK_SPLICE_SPLICED, "%s: nfsl_xsk_splice %s", name, res_name(r));
	cr_expect_eq(slot_ctl(base), NFSL_CTL(1, 0), "%s: nfsl_xsk_splice left ctl %#llx",
		     name, (unsigned long long)slot_ctl(base));
	ok &= x_bytes(name, xo, xlen, bo, blen);

	/* The same with the token checked on receive, before the NF, and the
	 * check carried to the splice (issue 18 item 6): what the NF changes
	 * leaves the token where it was, so the carried check is taken, and
	 * the bytes are the tc splicer's still. */
	if (!slice_nf_tok(name, in, len, nf, sl2, &slen2, &tok))
		return false;
	memcpy(xo2, sl2, slen2);
	xlen2 = slen2;
	r = nfsl_xsk_splice_tok(&xs, xo2, &xlen2, XS_ROOM, XS_MTU, &tok);
	ok &= r == NFSL_XSK_SPLICE_SPLICED && slot_ctl(base) == NFSL_CTL(1, 0);
	cr_expect_eq(r, NFSL_XSK_SPLICE_SPLICED, "%s: carried: nfsl_xsk_splice_tok %s", name,
		     res_name(r));
	ok &= x_bytes(name, xo2, xlen2, bo, blen);

	/* And both are right, judged by the reference: no NF gives back the
	 * original; otherwise a packet that verifies. */
	if (nf->fn == nf_none || nf->fn == nf_pad)
		ok &= x_bytes(name, xo, xlen, in, len);
	err = ref_check(xo, xlen, false);
	if (!(pr->flags & INVALID) || nf->fn == nf_complete) {
		cr_expect_null(err, "%s: spliced frame invalid: %s", name, err);
		ok &= !err;
	}
	return ok;
}

/* Whether NF @nf applies to input @pr: a NAT would keep a partial seed
 * apart from the ports (Linux updates only its pseudo-header part), so it is
 * left out there; completing a checksum applies to partial headers only. */
static bool nf_applies(const struct prep *pr, const struct nf *nf)
{
	if (nf->flags & PARTIAL)
		return pr->flags & PARTIAL;
	return !((nf->flags & NO_PARTIAL) && (pr->flags & PARTIAL));
}

/* Every family, L4, VLAN stack and size for input @pr and NF @nf. */
static int same_kind(const struct prep *pr, const struct nf *nf, int *n)
{
	static const uint8_t l4s[] = { PKT_UDP, PKT_TCP };
	static const uint8_t vlans[] = { 0, 2 };
	static const uint16_t sizes[] = { 300, 1001, 1514 };
	int bad = 0;

	for (int v6 = 0; v6 < 2; v6++)
		for (size_t p = 0; p < ARRAY_SIZE(l4s); p++) {
			if (!fits(pr->flags | nf->flags, v6, l4s[p]))
				continue;
			for (size_t vl = 0; vl < ARRAY_SIZE(vlans); vl++)
				for (size_t i = 0; i < ARRAY_SIZE(sizes); i++, (*n)++)
					bad += !same_one(pr, nf, v6, l4s[p], vlans[vl], sizes[i],
							 *n);
		}
	return bad;
}

Test(xsk_splice, same_as_tc)
{
	static const uint32_t keeps[] = { 0, 7 };
	int n = 0, bad = 0;

	for (size_t k = 0; k < ARRAY_SIZE(keeps); k++) {
		h_configure(256, keeps[k], 8, 2);
		for (size_t pi = 0; pi < ARRAY_SIZE(preps); pi++)
			for (size_t ni = 0; ni < ARRAY_SIZE(nfs); ni++)
				if (nf_applies(&preps[pi], &nfs[ni]))
					bad += same_kind(&preps[pi], &nfs[ni], &n);
	}
	cr_log_info("same_as_tc: %d cases, %d failed", n, bad);
	cr_expect_eq(bad, 0, "%d of %d cases failed", bad, n);
}

/* Slice a 1000 B packet (@v6, TCP for IPv6) into @sl with the store reset;
 * the original in @in. Returns the slot. */
static uint32_t slice_one(int v6, uint8_t *in, size_t *len, uint8_t *sl, uint32_t *slen)
{
	struct pkt_spec s = { .size = 1000, .v6 = v6, .proto = v6 ? PKT_TCP : PKT_UDP,
			      .seed = 5 };

	*len = pkt_build(&s, in);
	h_reset();
	cr_assert(x_slice_ok(pkt_name(&s), in, *len, h_part_base(), 1, NULL, sl, slen));
	return h_part_base();
}

/* Expect @r for @f: the frame and its length untouched. */
static void expect_untouched(const char *what, const uint8_t *f, uint32_t len, int want,
			     uint32_t room, uint32_t mtu)
{
	uint8_t out[PKT_MAX];
	uint32_t olen;
	int r = xs_splice(f, len, out, &olen, room, mtu);

	cr_expect_eq(r, want, "%s: %s, want %s", what, res_name(r), res_name(want));
	cr_expect_eq(olen, len, "%s: length changed to %u", what, olen);
	x_bytes(what, out, olen, f, len);
}

/* The payload is gone: STALE, frame untouched, and the slot, someone
 * else's now, untouched. Whatever the DSCP. */
Test(xsk_splice, stale)
{
	static const struct {
		const char *what;
		uint64_t ctl;
	} gone[] = {
		{ "released", NFSL_CTL(1, 0) },
		{ "evicted and taken again", NFSL_CTL(2, 1) },
		{ "evicted twice, free", NFSL_CTL(3, 0) },
	};
	uint8_t in[PKT_MAX], sl[PKT_MAX], out[PKT_MAX];
	uint32_t slen, olen, base;
	size_t len;

	for (int v6 = 0; v6 < 2; v6++) {
		for (size_t i = 0; i < ARRAY_SIZE(gone); i++) {
			base = slice_one(v6, in, &len, sl, &slen);
			h_slot_set_ctl(base, gone[i].ctl);
			expect_untouched(gone[i].what, sl, slen, NFSL_XSK_SPLICE_STALE, XS_ROOM,
					 XS_MTU);
			cr_expect_eq(slot_ctl(base), gone[i].ctl, "%s: ctl %#llx", gone[i].what,
				     (unsigned long long)slot_ctl(base));
			nf_remark(sl, &slen);
			expect_untouched("re-marked", sl, slen, NFSL_XSK_SPLICE_STALE, XS_ROOM,
					 XS_MTU);
		}

		/* spliced twice: the second copy is stale */
		base = slice_one(v6, in, &len, sl, &slen);
		cr_expect_eq(xs_splice(sl, slen, out, &olen, XS_ROOM, XS_MTU),
			     NFSL_XSK_SPLICE_SPLICED);
		x_bytes("first copy", out, olen, in, len);
		expect_untouched("second copy", sl, slen, NFSL_XSK_SPLICE_STALE, XS_ROOM, XS_MTU);
		cr_expect_eq(slot_ctl(base), NFSL_CTL(1, 0));

		/* a token that verifies but names a slot beyond the store: no
		 * instance under this key issues one (nfsl_token_in_store) */
		{
			struct ref_info ri;

			parse(sl, slen, &ri);
			h_token(NFSL_TOKEN_WORD(H_STORE_SLOTS + 5, 1000), 1, sl + ri.l3end - NFSL_TOKEN_LEN);
			expect_untouched("slot beyond the store", sl, slen,
					 NFSL_XSK_SPLICE_NOT_SLICED, XS_ROOM, XS_MTU);
		}
	}
}

/* Tokens we did not issue: NOT_SLICED, untouched, the slot they name left
 * alone; then the genuine one splices. */
Test(xsk_splice, forged_token)
{
	uint8_t in[PKT_MAX], sl[PKT_MAX], forged[PKT_MAX], out[PKT_MAX];
	uint32_t slen, olen, tok, base;
	struct ref_info ri;
	size_t len;

	h_configure(256, 7, 8, 2); /* odd keep: token at an odd offset */
	for (int v6 = 0; v6 < 2; v6++) {
		base = slice_one(v6, in, &len, sl, &slen);
		parse(sl, slen, &ri);
		tok = ri.l3end - NFSL_TOKEN_LEN;
		for (int b = 0; b < 64; b++) { /* one MAC bit wrong */
			memcpy(forged, sl, slen);
			forged[tok + 8 + b / 8] ^= 1 << (b % 8);
			expect_untouched("MAC bit flipped", forged, slen,
					 NFSL_XSK_SPLICE_NOT_SLICED, XS_ROOM, XS_MTU);
		}
		memcpy(forged, sl, slen);
		forged[tok + 7] ^= 1; /* another generation under the old MAC */
		expect_untouched("generation changed", forged, slen, NFSL_XSK_SPLICE_NOT_SLICED,
				 XS_ROOM, XS_MTU);
		memcpy(forged, sl, slen);
		forged[tok + 7] ^= 2; /* generation 3: ahead of the slot's */
		expect_untouched("generation ahead", forged, slen, NFSL_XSK_SPLICE_NOT_SLICED,
				 XS_ROOM, XS_MTU);
		memcpy(forged, sl, slen);
		memset(forged + tok + 4, 0, 4); /* generation 0: never issued */
		expect_untouched("generation 0", forged, slen, NFSL_XSK_SPLICE_NOT_SLICED, XS_ROOM,
				 XS_MTU);
		memcpy(forged, sl, slen);
		for (int b = 0; b < NFSL_TOKEN_LEN; b++)
			forged[tok + b] = (uint8_t)rand();
		expect_untouched("random token", forged, slen, NFSL_XSK_SPLICE_NOT_SLICED, XS_ROOM,
				 XS_MTU);
		/* the original itself: DSCP 0, no token */
		expect_untouched("not sliced", in, len, NFSL_XSK_SPLICE_NOT_SLICED, XS_ROOM,
				 XS_MTU);
		cr_expect_eq(slot_ctl(base), NFSL_CTL(1, H.cfg.expiry), "ctl %#llx",
			     (unsigned long long)slot_ctl(base));
		cr_expect_eq(xs_splice(sl, slen, out, &olen, XS_ROOM, XS_MTU),
			     NFSL_XSK_SPLICE_SPLICED);
		x_bytes("genuine after forgeries", out, olen, in, len);
	}

	/* DSCP 63 from outside, too small to be sliced: not ours */
	{
		struct pkt_spec s = { .size = 200, .proto = PKT_UDP, .dscp = 63 };

		len = pkt_build(&s, in);
		expect_untouched("DSCP 63 from outside", in, len, NFSL_XSK_SPLICE_NOT_SLICED,
				 XS_ROOM, XS_MTU);
	}
}

/* A spliced IP packet above the MTU: TOO_BIG, untouched, slot freed; at
 * the MTU exactly it splices. A VLAN tag does not count. */
Test(xsk_splice, too_big)
{
	uint8_t in[PKT_MAX], sl[PKT_MAX], out[PKT_MAX];
	uint32_t slen, olen, base;

	for (int v6 = 0; v6 < 2; v6++)
		for (int vlans = 0; vlans < 3; vlans += 2) {
			struct pkt_spec s = { .size = 14 + 4 * vlans + 1300, .v6 = v6,
					      .vlans = vlans,
					      .proto = v6 ? PKT_TCP : PKT_UDP };
			size_t len = pkt_build(&s, in);

			h_reset();
			base = h_part_base();
			x_slice_ok(pkt_name(&s), in, len, base, 1, NULL, sl, &slen);
			expect_untouched(pkt_name(&s), sl, slen, NFSL_XSK_SPLICE_TOO_BIG, XS_ROOM,
					 1299);
			cr_expect_eq(slot_ctl(base), NFSL_CTL(1, 0), "%s: not freed: %#llx",
				     pkt_name(&s), (unsigned long long)slot_ctl(base));

			h_reset();
			x_slice_ok(pkt_name(&s), in, len, base, 1, NULL, sl, &slen);
			cr_expect_eq(xs_splice(sl, slen, out, &olen, XS_ROOM, 1300),
				     NFSL_XSK_SPLICE_SPLICED, "%s", pkt_name(&s));
			x_bytes(pkt_name(&s), out, olen, in, len);
		}
}

/* A buffer too small for the spliced frame: NO_ROOM, untouched, slot
 * freed (never sent truncated); exactly large enough: it splices. A frame
 * longer than its room: BAD, nothing done. */
Test(xsk_splice, no_room)
{
	uint8_t in[PKT_MAX], sl[PKT_MAX], out[PKT_MAX];
	uint32_t slen, olen, base;
	size_t len;

	for (int v6 = 0; v6 < 2; v6++) {
		base = slice_one(v6, in, &len, sl, &slen);
		expect_untouched("BAD", sl, slen, NFSL_XSK_SPLICE_BAD, slen - 1, XS_MTU);
		cr_expect_eq(slot_ctl(base), NFSL_CTL(1, H.cfg.expiry));
		expect_untouched("room - 1", sl, slen, NFSL_XSK_SPLICE_NO_ROOM, len - 1, XS_MTU);
		cr_expect_eq(slot_ctl(base), NFSL_CTL(1, 0), "not freed: %#llx",
			     (unsigned long long)slot_ctl(base));

		base = slice_one(v6, in, &len, sl, &slen);
		cr_expect_eq(xs_splice(sl, slen, out, &olen, len, XS_MTU), NFSL_XSK_SPLICE_SPLICED);
		x_bytes("room exact", out, olen, in, len);
		cr_expect_eq(slot_ctl(base), NFSL_CTL(1, 0));
	}
}

/* The NF dropped the header: nfsl_xsk_release frees the slot once, found
 * by its token whatever the DSCP; the splice that follows is stale. */
Test(xsk_splice, release)
{
	uint8_t in[PKT_MAX], sl[PKT_MAX];
	uint32_t slen, base, slot, gen;
	size_t len;

	for (int v6 = 0; v6 < 2; v6++)
		for (int remark = 0; remark < 2; remark++) {
			base = slice_one(v6, in, &len, sl, &slen);
			if (remark)
				nf_remark(sl, &slen);
			token_of(sl, slen, &slot, &gen);
			cr_assert_eq(slot, base);
			cr_expect_eq(nfsl_xsk_release(&xs, in, len), 0, "not sliced");
			cr_expect_eq(slot_ctl(base), NFSL_CTL(gen, H.cfg.expiry));
			cr_expect_eq(nfsl_xsk_release(&xs, sl, slen), 1);
			cr_expect_eq(slot_ctl(base), NFSL_CTL(gen, 0), "ctl %#llx",
				     (unsigned long long)slot_ctl(base));
			cr_expect_eq(nfsl_xsk_release(&xs, sl, slen), 0, "released twice");
			expect_untouched("spliced after release", sl, slen, NFSL_XSK_SPLICE_STALE,
					 XS_ROOM, XS_MTU);

			/* a stale token never frees the slot's new owner */
			base = slice_one(v6, in, &len, sl, &slen);
			h_slot_set_ctl(base, NFSL_CTL(2, 1));
			cr_expect_eq(nfsl_xsk_release(&xs, sl, slen), 0, "stale released");
			cr_expect_eq(slot_ctl(base), NFSL_CTL(2, 1));
		}
}

/* Random bytes, truncated sliced frames, sliced frames with headers
 * mangled: never a crash, never a write beyond the frame, and nothing
 * changed unless spliced. */
Test(xsk_splice, garbage)
{
	uint8_t in[PKT_MAX], sl[PKT_MAX], f[PKT_MAX], orig[PKT_MAX];
	uint8_t *store = malloc(xs.map_len);
	uint32_t slen, flen, base;
	int seed = (int)getpid(), hist[6] = { 0 };
	struct ref_info ri;
	size_t len;

	cr_assert_not_null(store);
	cr_log_info("garbage: seed %d", seed);
	srand(seed);
	base = slice_one(0, in, &len, sl, &slen);
	memcpy(store, xs.slots, xs.map_len);

	for (int i = 0; i < 20000; i++) { /* random bytes, 0..300 B */
		int r;

		flen = rand() % 301;
		for (uint32_t j = 0; j < flen; j++)
			f[j] = (uint8_t)rand();
		if (i & 1) { /* half of them parse as IPv4/UDP or TCP, or nearly */
			ref_put16(f + 12, 0x0800);
			f[14] = 0x45;
			f[14 + 9] = i & 2 ? PKT_UDP : PKT_TCP;
			ref_put16(f + 16, (uint16_t)(flen - 14 - rand() % 2));
			f[14 + 6] &= 0x40;
			f[14 + 7] = 0;
			ref_put16(f + 34 + 4, (uint16_t)(flen - 34)); /* UDP length */
			f[34 + 12] = 0x50;                            /* TCP doff */
		}
		memcpy(orig, f, flen);
		memset(f + flen, 0xa5, 64);
		r = nfsl_xsk_splice(&xs, f, &flen, XS_ROOM, XS_MTU);
		cr_assert(r == NFSL_XSK_SPLICE_NOT_SLICED || r == NFSL_XSK_SPLICE_BAD,
			  "random frame %d: %s", i, res_name(r));
		cr_assert_eq(memcmp(f, orig, flen), 0, "random frame %d changed", i);
		for (int j = 0; j < 64; j++)
			cr_assert_eq(f[flen + j], 0xa5, "random frame %d: written beyond", i);
		cr_assert_eq(nfsl_xsk_release(&xs, f, flen), 0);
	}
	for (uint32_t n = 0; n < slen; n++) { /* every truncation */
		int r;

		flen = n;
		memcpy(f, sl, n);
		r = nfsl_xsk_splice(&xs, f, &flen, XS_ROOM, XS_MTU);
		cr_assert(r == NFSL_XSK_SPLICE_NOT_SLICED || r == NFSL_XSK_SPLICE_BAD,
			  "sliced frame cut at %u: %s", n, res_name(r));
		cr_assert_eq(flen, n);
		cr_assert_eq(memcmp(f, sl, n), 0);
		cr_assert_eq(nfsl_xsk_release(&xs, f, n), 0);
	}
	cr_assert_eq(memcmp(store, xs.slots, xs.map_len), 0, "the store changed");

	/* header bytes mangled: anything may come back, but only a splice
	 * changes the frame, and never beyond the room */
	parse(sl, slen, &ri);
	for (int i = 0; i < 5000; i++) {
		int r;

		memcpy(f, sl, slen);
		for (int k = rand() % 3; k >= 0; k--)
			f[rand() % (ri.payoff + 4)] = (uint8_t)rand();
		memcpy(orig, f, slen);
		flen = slen;
		memset(f + slen, 0xa5, PKT_MAX - slen);
		r = nfsl_xsk_splice(&xs, f, &flen, 1024, XS_MTU);
		cr_assert(r >= 0 && r < (int)ARRAY_SIZE(res_names), "mangled %d: %d", i, r);
		hist[r]++;
		for (uint32_t j = 1024; j < PKT_MAX; j++)
			cr_assert_eq(f[j], 0xa5, "mangled %d: written beyond the room", i);
		if (r == NFSL_XSK_SPLICE_SPLICED) {
			cr_assert_leq(flen, 1024);
		} else {
			cr_assert_eq(flen, slen, "mangled %d: %s changed the length", i,
				     res_name(r));
			cr_assert_eq(memcmp(f, orig, slen), 0, "mangled %d: %s changed it", i,
				     res_name(r));
		}
		if (slot_ctl(base) != NFSL_CTL(1, H.cfg.expiry))
			h_slot_set_ctl(base, NFSL_CTL(1, H.cfg.expiry)); /* parked again */
	}
	cr_log_info("mangled: %d not sliced, %d spliced, %d stale, %d too big, %d no room, "
		    "%d bad", hist[0], hist[1], hist[2], hist[3], hist[4], hist[5]);
	free(store);
}

/* nfsl_xsk_store_open refuses a map that is not a store, and a store it
 * may not write. */
Test(xsk_splice, open_refuses)
{
	LIBBPF_OPTS(bpf_map_create_opts, mm, .map_flags = BPF_F_MMAPABLE);
	LIBBPF_OPTS(bpf_get_fd_by_id_opts, ro, .open_flags = BPF_F_RDONLY);
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	struct nfsl_domain d = { .config_fd = -1, .counters_fd = -1, .cursor_fd = -1 };
	struct nfsl_xsk_store st;
	int fd, err;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "nfut_plain", 4, sizeof(struct nfsl_slot), 4,
			    NULL);
	cr_assert_geq(fd, 0);
	d.store_fd = fd;
	cr_expect_eq(nfsl_xsk_store_open(&st, &d), -EINVAL, "not mmapable");
	nfsl_xsk_store_close(&st);
	close(fd);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "nfut_small", 4, 8, 4, &mm);
	cr_assert_geq(fd, 0);
	d.store_fd = fd;
	cr_expect_eq(nfsl_xsk_store_open(&st, &d), -EINVAL, "value size 8");
	close(fd);
	/* the store itself, through a read-only fd */
	cr_assert_eq(bpf_obj_get_info_by_fd(H.store, &info, &ilen), 0);
	fd = bpf_map_get_fd_by_id_opts(info.id, &ro);
	cr_assert_geq(fd, 0);
	d.store_fd = fd;
	cr_expect_eq(nfsl_xsk_store_open(&st, &d), -EACCES, "read-only fd");
	close(fd);
	d.store_fd = -1;
	err = nfsl_xsk_store_open(&st, &d);
	cr_expect_lt(err, 0, "no fd: %d", err); /* the kernel's -errno */
	nfsl_xsk_store_close(&st);
}

/* The original IP length of a sliced header, for meters: from the slot
 * with the store (inline), from the token's parked length without it
 * (park); the frame's own length when it is not sliced. */
Test(xsk_splice, orig_len)
{
	uint8_t in[PKT_MAX], sl[PKT_MAX];
	struct ref_info ri, rs;
	uint32_t slen;
	size_t len;

	for (int v6 = 0; v6 < 2; v6++) {
		slice_one(v6, in, &len, sl, &slen);
		parse(in, len, &ri);
		parse(sl, slen, &rs);
		cr_assert_lt(rs.l3end - rs.l3off, ri.l3end - ri.l3off, "not sliced");
		cr_expect_eq(nfsl_xsk_orig_len(&xs, sl, slen), ri.l3end - ri.l3off);
		cr_expect_eq(nfsl_xsk_orig_len(NULL, sl, slen), ri.l3end - ri.l3off);
		cr_expect_eq(nfsl_xsk_orig_len(&xs, in, len), ri.l3end - ri.l3off);
		cr_expect_eq(nfsl_xsk_orig_len(NULL, in, len), ri.l3end - ri.l3off);
		/* payload gone: with the store, only what the frame says */
		cr_assert_eq(nfsl_xsk_release(&xs, sl, slen), 1);
		cr_expect_eq(nfsl_xsk_orig_len(&xs, sl, slen), rs.l3end - rs.l3off);
	}
}

/* Splice a copy of @f with the check @t carried; the result. */
static int xs_splice_tok(const uint8_t *f, uint32_t len, const struct nfsl_xsk_tok *t,
			 uint8_t *out, uint32_t *olen)
{
	memcpy(out, f, len);
	*olen = len;
	return nfsl_xsk_splice_tok(&xs, out, olen, XS_ROOM, XS_MTU, t);
}

/*
 * One check per packet (issue 18 item 6): the check made on receive is
 * what the splice and the release take, without a MAC, while the token
 * is where and what it was under the same keys; otherwise the frame is
 * checked again, exactly as without a carried check. The MAC not being
 * computed again shows with keys changed behind the store's back (no
 * seqcount bump: nothing a running domain does): the carried header
 * still splices, the same header without the carry is not ours.
 */
Test(xsk_splice, carried_check)
{
	uint8_t in[PKT_MAX], sl[PKT_MAX], f[PKT_MAX], out[PKT_MAX];
	struct ref_info rs;
	struct nfsl_xsk_tok t, none;
	uint32_t slen, flen, olen, base;
	size_t len;

	for (int v6 = 0; v6 < 2; v6++) {
		/* not sliced: nothing carried */
		base = slice_one(v6, in, &len, sl, &slen);
		memset(&none, 0xa5, sizeof(none));
		nfsl_xsk_orig_len_tok(&xs, in, len, &none);
		cr_expect_eq(none.ours, 0, "an ordinary frame carried a verdict");
		nfsl_xsk_orig_len_tok(&xs, sl, slen, &t);
		cr_assert_eq(t.ours, 1, "the sliced header's token did not verify");
		parse(sl, slen, &rs);
		cr_expect_eq(t.off, rs.l3end - NFSL_TOKEN_LEN);

		/* carried: no MAC (keys broken behind the store's back) */
		xs.cfg.key[0] ^= 1;
		expect_untouched("re-checked, keys broken", sl, slen, NFSL_XSK_SPLICE_NOT_SLICED,
				 XS_ROOM, XS_MTU);
		cr_expect_eq(xs_splice_tok(sl, slen, &t, out, &olen), NFSL_XSK_SPLICE_SPLICED,
			     "carried: the MAC was checked again");
		x_bytes("carried", out, olen, in, len);
		cr_expect_eq(slot_ctl(base), NFSL_CTL(1, 0));

		/* a release takes the carried check too, once */
		base = slice_one(v6, in, &len, sl, &slen);
		cr_expect_eq(nfsl_xsk_release(&xs, sl, slen), 0, "released under broken keys");
		cr_expect_eq(nfsl_xsk_release_tok(&xs, sl, slen, &t), 1, "carried release");
		cr_expect_eq(slot_ctl(base), NFSL_CTL(1, 0));
		cr_expect_eq(nfsl_xsk_release_tok(&xs, sl, slen, &t), 0, "released twice");
		/* and the slot state still rules: the payload is gone */
		cr_expect_eq(xs_splice_tok(sl, slen, &t, out, &olen), NFSL_XSK_SPLICE_STALE);

		/* the keys changed (a refresh bumps the seqcount): checked again */
		base = slice_one(v6, in, &len, sl, &slen);
		xs.cfg_seq += 2;
		cr_expect_eq(xs_splice_tok(sl, slen, &t, out, &olen), NFSL_XSK_SPLICE_NOT_SLICED,
			     "carried across a key change");
		xs.cfg_seq -= 2;
		xs.cfg.key[0] ^= 1;

		/* the NF changed the token's bytes: checked again, as without */
		memcpy(f, sl, slen);
		f[rs.l3end - 1] ^= 1; /* a MAC bit */
		cr_expect_eq(xs_splice_tok(f, slen, &t, out, &olen), NFSL_XSK_SPLICE_NOT_SLICED,
			     "a changed token taken as carried");
		x_bytes("changed token", out, olen, f, slen);

		/* the NF cut the IP packet (token moved): as without */
		memcpy(f, sl, slen);
		flen = slen - 4;
		ref_put16(f + rs.l3off + (v6 ? 4 : 2),
			  ref_get16(f + rs.l3off + (v6 ? 4 : 2)) - 4);
		cr_expect_eq(xs_splice(f, flen, out, &olen, XS_ROOM, XS_MTU),
			     NFSL_XSK_SPLICE_NOT_SLICED, "moved token, without a carry");
		cr_expect_eq(xs_splice_tok(f, flen, &t, out, &olen), NFSL_XSK_SPLICE_NOT_SLICED,
			     "a moved token taken as carried");
		x_bytes("moved token", out, olen, f, flen);

		/* untouched and carried: spliced, the bytes of the original */
		cr_expect_eq(xs_splice_tok(sl, slen, &t, out, &olen), NFSL_XSK_SPLICE_SPLICED);
		x_bytes("carried, keys intact", out, olen, in, len);
		cr_expect_eq(slot_ctl(base), NFSL_CTL(1, 0));
	}
}

/* 5000 ordinary DSCP-0 UDP frames with random trailers through @st: each
 * NOT_SLICED and untouched. With @in_store the trailer's token names a
 * slot of the store (random bytes do once in 2^20 / slots), the only
 * ones that reach the MAC (nfsl_token_in_store) and so a config re-read.
 * Returns how many passed the whole pre-check (nfsl_token_index and a
 * slot of the store), i.e. would have cost a config re-read before the
 * re-read waited for a generation change (issue 17 §3: 2405 of 5000 when
 * that pre-check was nfsl_token_index alone). */
static int ordinary_frames(struct nfsl_xsk_store *st, unsigned int seed, bool in_store)
{
	struct pkt_spec s = { .size = 1000, .proto = PKT_UDP };
	uint8_t in[PKT_MAX], out[PKT_MAX];
	struct nfsl_token tok;
	int prechecked = 0;
	struct ref_info ri;
	uint32_t olen, idx;
	size_t len;

	srand(seed);
	len = pkt_build(&s, in);
	parse(in, len, &ri);
	for (int i = 0; i < 5000; i++) {
		for (uint32_t b = ri.payoff; b < ri.l3end; b++)
			in[b] = (uint8_t)rand();
		memcpy(&tok, in + ri.l3end - NFSL_TOKEN_LEN, sizeof(tok));
		if (in_store) {
			idx = ntohl(tok.slot);
			tok.slot = htonl(idx - NFSL_TOKEN_IDX(idx) + (uint32_t)rand() % st->nslots);
			memcpy(in + ri.l3end - NFSL_TOKEN_LEN, &tok, sizeof(tok));
		}
		prechecked += nfsl_token_index(&tok, &idx) && nfsl_token_in_store(idx, st->nslots);
		memcpy(out, in, len);
		olen = len;
		cr_assert_eq(nfsl_xsk_splice(st, out, &olen, XS_ROOM, XS_MTU),
			     NFSL_XSK_SPLICE_NOT_SLICED, "frame %d", i);
		cr_assert(olen == len && !memcmp(out, in, len), "frame %d changed", i);
	}
	return prechecked;
}

/* The config is read again only when its generation moved: 5000 ordinary
 * frames cost no bpf(2) lookup however many pass the token pre-check; a
 * configuration change costs exactly one, then none again. */
Test(xsk_splice, reread_on_generation_only)
{
	struct nfsl_domain d = { .store_fd = H.store, .config_fd = H.config,
				 .counters_fd = -1, .cursor_fd = -1 };
	struct nfsl_xsk_store st;
	int pre;

	d.cfg = H.cfg;
	cr_assert_eq(nfsl_xsk_store_open(&st, &d), 0);
	cr_assert_not_null(st.cfg_map, "the config map is mmapable and mapped");
	pre = ordinary_frames(&st, 17, true);
	cr_assert_gt(pre, 1000, "only %d of 5000 trailers passed the pre-check", pre);
	cr_expect_eq(st.rereads, 0, "%lu re-reads for %d pre-checked trailers", st.rereads, pre);
	H.cfg.threshold++; /* a runtime change, as nfslice set makes it */
	H.cfg.cfg_gen++;
	h_write_config();
	/* Random trailers naming no slot of the store never reach the MAC,
	 * so they cannot make it read the config either. */
	pre = ordinary_frames(&st, 20, false);
	cr_expect_eq(st.rereads, pre ? 1 : 0, "%lu re-reads for %d random trailers in the store",
		     st.rereads, pre);
	pre = ordinary_frames(&st, 18, true);
	cr_expect_eq(st.rereads, 1, "%lu re-reads after one change", st.rereads);
	cr_expect_eq(st.cfg_gen, H.cfg.cfg_gen, "generation %u recorded, map has %u", st.cfg_gen,
		     H.cfg.cfg_gen);
	nfsl_xsk_store_close(&st);
}

/* A config map that is not mmapable (a domain attached by an older
 * nfslice): at most one re-read per NFSL_XSK_REREAD_NS. */
Test(xsk_splice, reread_rate_limited)
{
	struct nfsl_domain d = { .store_fd = H.store, .counters_fd = -1, .cursor_fd = -1 };
	struct nfsl_xsk_store st;
	struct timespec t0, t1;
	__u32 zero = 0;
	__u64 ms;

	d.config_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "nfut_cfg", 4, sizeof(struct nfsl_config),
				     1, NULL);
	cr_assert_geq(d.config_fd, 0);
	cr_assert_eq(bpf_map_update_elem(d.config_fd, &zero, &H.cfg, BPF_ANY), 0);
	d.cfg = H.cfg;
	cr_assert_eq(nfsl_xsk_store_open(&st, &d), 0);
	cr_assert_null(st.cfg_map);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ordinary_frames(&st, 19, true);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = ((__u64)(t1.tv_sec - t0.tv_sec) * 1000000000ull + t1.tv_nsec - t0.tv_nsec) /
	     NFSL_XSK_REREAD_NS;
	cr_expect_leq(st.rereads, ms + 1, "%lu re-reads in %llu ms", st.rereads,
		      (unsigned long long)ms);
	cr_expect_geq(st.rereads, 1);
	nfsl_xsk_store_close(&st);
	close(d.config_fd);
}
