// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Expectations of the datapath tests, computed with the reference (ref.c),
 * never with the codec under test.
 */
#include <arpa/inet.h>
#include <string.h>
#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "ref.h"
#include "nfsl_store.h"

size_t x_sliced(const uint8_t *in, size_t len, uint32_t keep, uint32_t slot,
		uint32_t gen, uint8_t *out)
{
	struct ref_info ri, ro;
	uint32_t tok_off, olen, l4len;
	uint16_t v;
	uint8_t *l3, *c;

	cr_assert_eq(ref_parse(in, len, &ri), 0, "x_sliced: input does not parse");
	tok_off = ri.payoff + keep;
	olen = tok_off + NFSL_TOKEN_LEN;
	memcpy(out, in, tok_off);
	h_token(NFSL_TOKEN_WORD(slot, ri.l3end - tok_off), gen, out + tok_off);

	l3 = out + ri.l3off;
	l4len = olen - ri.l4off;
	if (ri.v6) {
		/* DSCP: low nibble of byte 0 and top 2 bits of byte 1 */
		l3[0] = (l3[0] & 0xf0) | 0x0f;
		l3[1] |= 0xc0;
		ref_put16(l3 + 4, olen - ri.l3off - 40);
	} else {
		l3[1] = NFSL_DSCP_SLICED << 2 | ri.ecn;
		ref_put16(l3 + 2, olen - ri.l3off);
		ref_put16(l3 + 10, 0);
		ref_put16(l3 + 10, ~ref_fold(ref_sum(l3, (l3[0] & 0xf) * 4, 0)));
	}
	if (ri.proto == PKT_UDP)
		ref_put16(out + ri.l4off + 4, l4len);

	c = out + ri.l4off + (ri.proto == PKT_UDP ? 6 : 16);
	if (ri.proto == PKT_UDP && ref_get16(c) == 0)
		return olen; /* no checksum stays no checksum */
	/* Always a right checksum: the slicer never sums the payload, so a
	 * wrong received checksum cannot show in the sliced packet; the error
	 * rides in the slot's parked sum and comes back on splice. */
	ref_put16(c, 0);
	cr_assert_eq(ref_parse(out, olen, &ro), 0);
	v = ~ref_l4_vsum(out, &ro);
	if (ri.proto == PKT_UDP && v == 0)
		v = 0xffff;
	ref_put16(c, v);
	return olen;
}

bool x_bytes(const char *what, const uint8_t *got, size_t glen,
	     const uint8_t *want, size_t wlen)
{
	if (glen == wlen && !memcmp(got, want, glen))
		return true;
	pkt_diff(what, got, glen, want, wlen);
	cr_expect_fail("%s: output bytes differ (got %zu B, want %zu B)", what,
		       glen, wlen);
	return false;
}

static bool x_counters(const char *what, const struct nfsl_counters *before,
		       const struct nfsl_counters *delta)
{
	struct nfsl_counters want;

#define X_ADD(name) want.name = before->name + delta->name;
	NFSL_COUNTERS(X_ADD)
#undef X_ADD
	return h_expect_counters(&want, what);
}

/* Folded sum modulo 0xffff: 0 and 0xffff are the same number. */
static uint16_t x_norm(uint16_t v)
{
	return v == 0xffff ? 0 : v;
}

bool x_logged(const char *what, uint32_t slot, uint32_t gen)
{
	/* per-CPU values, each rounded up to 8 bytes */
	uint8_t v[NFSL_MAX_CPUS][(sizeof(struct nfsl_alloc) + 7) & ~7ul];
	uint32_t nparts = H.cfg.nparts ? H.cfg.nparts : 1, part = H.cfg.part_slots;
	uint32_t g = slot / part, dst = g % nparts, idx;
	struct nfsl_park_rec e;
	struct nfsl_alloc a;
	struct nfsl_slot s;
	bool ok;

	cr_assert_eq(bpf_map_lookup_elem(H.cursor, &dst, v), 0);
	memcpy(&a, v[g / nparts], sizeof(a));
	idx = g * part + a.seq % part;
	cr_assert_eq(bpf_map_lookup_elem(H.parklog, &idx, &e), 0);
	h_slot_read(slot, &s);
	ok = e.slot == slot && e.gen == gen && e.seq == a.seq && e.parked_ns == s.parked_ns;
	cr_expect(ok, "%s: park log entry %u is {slot %u, gen %u, seq %u, parked %llu}, want "
		  "{slot %u, gen %u, seq %u, parked %llu}", what, idx, e.slot, e.gen, e.seq,
		  (unsigned long long)e.parked_ns, slot, gen, a.seq,
		  (unsigned long long)s.parked_ns);
	return ok;
}

static bool x_slot_ok(const char *what, const uint8_t *in,
		      const struct ref_info *ri, uint32_t slot, uint32_t gen)
{
	uint32_t tok_off = ri->payoff + H.cfg.keep, parked = ri->l3end - tok_off;
	uint32_t at = tok_off - ri->l4off;
	uint16_t l4c = ref_get16(in + ri->l4off + (ri->proto == PKT_UDP ? 6 : 16));
	bool nocsum = ri->proto == PKT_UDP && l4c == 0;
	struct nfsl_slot s;
	uint8_t flags;
	bool ok = true;

	h_slot_read(slot, &s);
	flags = (at & 1 ? NFSL_SLOT_F_ODD : 0) |
		(nocsum ? NFSL_SLOT_F_NOCSUM : 0) | (ri->v6 ? NFSL_SLOT_F_V6 : 0) |
		(l4c == 0xffff ? NFSL_SLOT_F_L4FFFF : 0) |
		(!ri->v6 && ref_get16(in + ri->l3off + 10) == 0xffff
			 ? NFSL_SLOT_F_IPFFFF : 0);
	ok &= s.ctl == NFSL_CTL(gen, H.cfg.expiry);
	cr_expect_eq(s.ctl, NFSL_CTL(gen, H.cfg.expiry),
		     "%s: slot %u ctl %#llx, want gen %u expiry %u", what, slot,
		     (unsigned long long)s.ctl, gen, H.cfg.expiry);
	ok &= s.len == parked && s.dscp == ri->dscp && s.flags == flags;
	cr_expect_eq(s.len, parked, "%s: slot len %u, want %u", what, s.len, parked);
	cr_expect_eq(s.dscp, ri->dscp, "%s: slot dscp %u, want %u", what, s.dscp,
		     ri->dscp);
	cr_expect_eq(s.flags, flags, "%s: slot flags %#x, want %#x", what,
		     s.flags, flags);
	/* test runs receive XDP frames on H_IF_IN */
	ok &= s.ifindex == (__u32)H.if_in && s.parked_ns != 0;
	cr_expect_eq(s.ifindex, H.if_in, "%s: slot ifindex %u", what, s.ifindex);
	cr_expect_neq(s.parked_ns, 0, "%s: slot parked_ns not set", what);
	if (s.len == parked && memcmp(s.payload, in + tok_off, parked)) {
		cr_expect_fail("%s: slot does not hold the parked bytes", what);
		ok = false;
	}
	if (nocsum) {
		ok &= s.csum == 0;
		cr_expect_eq(s.csum, 0, "%s: slot csum %#x for UDP without one",
			     what, s.csum);
	} else if (ref_l4_vsum(in, ri) == 0xffff) {
		/* Sum of the parked bytes where they sat: an odd L4 offset
		 * puts each byte in the other half of its word. */
		uint8_t tmp[PKT_MAX + 1] = { 0 };
		uint16_t want;

		memcpy(tmp + (at & 1), in + tok_off, parked);
		want = htons(ref_fold(ref_sum(tmp, parked + (at & 1), 0)));
		ok &= x_norm(s.csum) == x_norm(want);
		cr_expect_eq(x_norm(s.csum), x_norm(want),
			     "%s: slot csum %#x, want %#x", what, s.csum, want);
	}
	return ok;
}

bool x_slice_ok(const char *what, const uint8_t *in, size_t len,
		uint32_t slot, uint32_t gen, const struct nfsl_counters *extra,
		uint8_t *out, uint32_t *olen)
{
	struct nfsl_counters before, delta = { 0 };
	uint8_t want[PKT_MAX];
	struct ref_info ri;
	const char *err;
	size_t wlen;
	bool ok;
	int v;

	cr_assert_eq(ref_parse(in, len, &ri), 0, "%s: input does not parse", what);
	wlen = x_sliced(in, len, H.cfg.keep, slot, gen, want);
	h_counters(&before);
	v = h_slice(in, len, out, olen);
	cr_expect_eq(v, V_XDP_PASS, "%s: slicer verdict %d, want XDP_PASS", what, v);
	ok = v == V_XDP_PASS;
	ok &= x_bytes(what, out, *olen, want, wlen);
	err = ref_check(out, *olen, false);
	cr_expect_null(err, "%s: sliced packet invalid: %s", what, err);
	ok &= !err;
	ok &= x_slot_ok(what, in, &ri, slot, gen);
	ok &= x_logged(what, slot, gen);
	if (extra)
		delta = *extra;
	delta.sliced += 1;
	delta.parked_bytes += ri.l3end - ri.payoff - H.cfg.keep;
	ok &= x_counters(what, &before, &delta);
	return ok;
}

bool x_splice_ok(const char *what, const uint8_t *in, size_t len,
		 const uint8_t *want, size_t wlen)
{
	struct nfsl_counters before, delta = { 0 };
	uint8_t out[PKT_MAX];
	struct ref_info ri;
	uint32_t olen, slot, gen;
	struct nfsl_slot s;
	bool ok;
	int v;

	cr_assert_eq(ref_parse(in, len, &ri), 0, "%s: sliced frame does not parse",
		     what);
	slot = NFSL_TOKEN_IDX(ntohl(*(uint32_t *)(in + ri.l3end - NFSL_TOKEN_LEN)));
	gen = ntohl(*(uint32_t *)(in + ri.l3end - NFSL_TOKEN_LEN + 4));
	h_counters(&before);
	v = h_splice(in, len, out, &olen);
	cr_expect_eq(v, V_TC_OK, "%s: splicer verdict %d, want TC_ACT_UNSPEC (on to the next program)", what, v);
	ok = v == V_TC_OK;
	ok &= x_bytes(what, out, olen, want, wlen);
	h_slot_read(slot, &s);
	cr_expect_eq(s.ctl, NFSL_CTL(gen, 0), "%s: slot %u ctl %#llx not freed",
		     what, slot, (unsigned long long)s.ctl);
	ok &= s.ctl == NFSL_CTL(gen, 0);
	delta.spliced = 1;
	ok &= x_counters(what, &before, &delta);
	return ok;
}

/* Run @run (slicer or splicer) on @in and expect @verdict, the same bytes
 * out, and the counter changes @delta. */
static bool x_untouched(const char *what, const char *prog,
			int (*run)(const uint8_t *, uint32_t, uint8_t *, uint32_t *),
			const uint8_t *in, size_t len, int verdict,
			const struct nfsl_counters *delta)
{
	struct nfsl_counters before;
	uint8_t out[PKT_MAX];
	uint32_t olen;
	bool ok;
	int v;

	h_counters(&before);
	v = run(in, len, out, &olen);
	cr_expect_eq(v, verdict, "%s: %s verdict %d, want %d", what, prog, v,
		     verdict);
	ok = v == verdict;
	ok &= x_bytes(what, out, olen, in, len);
	ok &= x_counters(what, &before, delta);
	return ok;
}

bool x_slice_untouched(const char *what, const uint8_t *in, size_t len,
		       int verdict, const struct nfsl_counters *delta)
{
	return x_untouched(what, "slicer", h_slice, in, len, verdict, delta);
}

bool x_splice_untouched(const char *what, const uint8_t *in, size_t len,
			int verdict, const struct nfsl_counters *delta)
{
	return x_untouched(what, "splicer", h_splice, in, len, verdict, delta);
}
