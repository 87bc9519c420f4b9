// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Splicer (tc) through BPF_PROG_TEST_RUN: slice -> splice gives back every
 * input byte, and tokens that are not ours, stale, or too big for the
 * device are refused as docs/design.md says (pass / drop / drop).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "nfsl_token.h"
#include "pkt.h"
#include "ref.h"

TestSuite(splice, .init = h_setup, .fini = h_teardown, .timeout = 30);

static const uint16_t sizes[] = { 256, 257, 512, 1000, 1514 };
static const uint32_t keeps[] = { 0, 1, 7, 64 };

/* Header variants every size, family, L4 and keep goes through. */
static const struct variant {
	const char *name;
	struct pkt_spec s; /* size, v6, proto filled in by the loop */
	uint8_t only;      /* 4 or 6: that family only; 17/6: that L4 only */
} variants[] = {
	{ "plain", {} },
	{ "802.1Q", { .vlans = 1 } },
	{ "802.1ad + 802.1Q", { .vlans = 2 } },
	{ "IPv4 options 4 B", { .ip_opt = 4 }, 4 },
	{ "IPv4 options 40 B", { .ip_opt = 40 }, 4 },
	{ "IPv4 don't fragment", { .frag_off = 0x4000 }, 4 },
	{ "IPv6 hop-by-hop", { .n_ext = 1, .ext = { PKT_EXT_HBH } }, 6 },
	{ "IPv6 hop-by-hop + dest opts",
	  { .n_ext = 2, .ext = { PKT_EXT_HBH, PKT_EXT_DST } }, 6 },
	{ "TCP options 4 B", { .tcp_opt = 4 }, PKT_TCP },
	{ "TCP options 12 B", { .tcp_opt = 12 }, PKT_TCP },
	{ "TCP options 40 B", { .tcp_opt = 40 }, PKT_TCP },
	{ "ECN CE", { .ecn = 3 } },
	{ "ECN ECT(1), DSCP 46", { .ecn = 1, .dscp = 46 } },
	{ "UDP checksum 0", { .udp_nocsum = 1 }, 4 }, /* IPv6 forbids it */
	{ "wrong L4 checksum", { .bad_csum = 1 } },
	{ "everything", { .vlans = 2, .ip_opt = 12, .tcp_opt = 12, .ecn = 2,
			  .dscp = 10, .n_ext = 2,
			  .ext = { PKT_EXT_HBH, PKT_EXT_DST } } },
};

static bool variant_fits(const struct variant *v, int v6, uint8_t proto)
{
	if (v->only == 4 || v->only == 6)
		return v->only == (v6 ? 6 : 4);
	if (v->only)
		return v->only == proto;
	return true;
}

/* One table entry: @v's headers on @v6 / @proto at @size, sliced with the
 * configured keep and spliced back. */
static bool roundtrip_one(const struct variant *v, int v6, uint8_t proto,
			  uint16_t size, uint8_t seed)
{
	uint8_t in[PKT_MAX], sliced[PKT_MAX];
	struct pkt_spec s = v->s;
	char name[256];
	uint32_t slen;
	size_t len;

	s.size = size;
	s.v6 = v6;
	s.proto = proto;
	s.seed = seed;
	pkt_spec_fit(&s);
	len = pkt_build(&s, in);
	cr_assert_gt(len, 0);
	snprintf(name, sizeof(name), "%s, keep %u: %s", v->name, H.cfg.keep,
		 pkt_name(&s));
	h_reset();
	return x_slice_ok(name, in, len, h_part_base(), 1, NULL, sliced, &slen) &&
	       x_splice_ok(name, sliced, slen, in, len);
}

/* Slice then splice, nothing in between: the original, byte for byte. */
Test(splice, roundtrip)
{
	static const uint8_t l4s[] = { PKT_UDP, PKT_TCP };
	int n = 0, bad = 0;

	for (size_t k = 0; k < ARRAY_SIZE(keeps); k++) {
		h_configure(256, keeps[k], 8, 2);
		for (size_t vi = 0; vi < ARRAY_SIZE(variants); vi++) {
			const struct variant *v = &variants[vi];

			for (int v6 = 0; v6 < 2; v6++)
				for (size_t p = 0; p < ARRAY_SIZE(l4s); p++) {
					if (!variant_fits(v, v6, l4s[p]))
						continue;
					for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
						bad += !roundtrip_one(v, v6, l4s[p],
								      sizes[i], n++);
				}
		}
	}
	cr_log_info("roundtrip: %d cases, %d failed", n, bad);
	cr_expect_eq(bad, 0);
}

/* DSCP 63 is not ours by itself. A small DSCP-63 packet from outside passes
 * both programs untouched (the splicer counts it bad_token); a large one is
 * sliced like any other and comes back with DSCP 63. */
Test(splice, dscp63_from_outside)
{
	struct nfsl_counters small = { .skipped_small = 1 };
	struct nfsl_counters bad = { .bad_token = 1 };
	uint8_t in[PKT_MAX], sliced[PKT_MAX];
	uint32_t slen;

	for (int v6 = 0; v6 < 2; v6++) {
		struct pkt_spec s = { .v6 = v6, .proto = PKT_UDP, .dscp = 63,
				      .ecn = 1 };
		size_t len;

		h_reset();
		s.size = 200; /* a payload larger than a token */
		len = pkt_build(&s, in);
		x_slice_untouched(pkt_name(&s), in, len, V_XDP_PASS, &small);
		x_splice_untouched(pkt_name(&s), in, len, V_TC_OK, &bad);
		s.size = pkt_hdr_len(&s) + 5; /* smaller than a token */
		len = pkt_build(&s, in);
		x_splice_untouched(pkt_name(&s), in, len, V_TC_OK, &bad);

		s.size = 1200;
		s.proto = PKT_TCP;
		len = pkt_build(&s, in);
		x_slice_ok(pkt_name(&s), in, len, h_part_base(), 1, NULL, sliced,
			   &slen);
		x_splice_ok(pkt_name(&s), sliced, slen, in, len);
	}
}

/* Tokens we did not issue pass untouched (not ours), counted bad_token, and
 * leave the slot they name alone. */
Test(splice, forged_token)
{
	struct nfsl_counters bad = { .bad_token = 1 };
	struct pkt_spec s = { .size = 1000, .proto = PKT_UDP };
	uint8_t in[PKT_MAX], sliced[PKT_MAX], forged[PKT_MAX];
	uint32_t slen, tok, base;
	size_t len = pkt_build(&s, in);
	struct nfsl_slot slot;

	h_configure(256, 7, 8, 2); /* odd keep: token at an odd offset */
	base = h_part_base();
	x_slice_ok("genuine", in, len, base, 1, NULL, sliced, &slen);
	tok = slen - NFSL_TOKEN_LEN;

	for (int b = 0; b < 8; b++) { /* one MAC byte wrong */
		memcpy(forged, sliced, slen);
		forged[tok + 8 + b] ^= 1 << b;
		x_splice_untouched("MAC bit flipped", forged, slen, V_TC_OK, &bad);
	}
	memcpy(forged, sliced, slen);
	for (int b = 0; b < 8; b++)
		forged[tok + 8 + b] = (uint8_t)rand();
	x_splice_untouched("random MAC", forged, slen, V_TC_OK, &bad);
	memcpy(forged, sliced, slen);
	forged[tok + 7] ^= 1; /* another generation under the old MAC */
	x_splice_untouched("generation changed", forged, slen, V_TC_OK, &bad);
	for (int b = 0; b < NFSL_TOKEN_LEN; b++)
		forged[tok + b] = (uint8_t)rand();
	x_splice_untouched("random token", forged, slen, V_TC_OK, &bad);

	/* A token that verifies but names a slot beyond the store: no
	 * instance under this key issues one (nfsl_token_in_store), so it is
	 * not ours, refused before the MAC. */
	memcpy(forged, sliced, slen);
	h_token(NFSL_TOKEN_WORD(100000, 1000), 1, forged + tok);
	x_splice_untouched("slot out of range", forged, slen, V_TC_OK, &bad);

	h_slot_read(base, &slot);
	cr_expect_eq(slot.ctl, NFSL_CTL(1, H.cfg.expiry), "slot ctl %#llx",
		     (unsigned long long)slot.ctl);
	x_splice_ok("genuine after forgeries", sliced, slen, in, len);
}

/* The token memo (nfsl_token_h "token memo"): the slicer leaves the token
 * it issued in the slot after the payload, under the key; the splicer
 * takes a token equal to it as ours without its MAC, and one that is not
 * equal the slow way. */
Test(splice, token_memo)
{
	struct nfsl_counters bad = { .bad_token = 1 };
	struct pkt_spec s = { .size = 1000, .proto = PKT_UDP };
	uint8_t in[PKT_MAX], sliced[PKT_MAX], forged[PKT_MAX];
	struct nfsl_token_memo m;
	struct nfsl_token t;
	uint32_t slen, base, off;
	size_t len = pkt_build(&s, in);
	struct nfsl_slot slot;

	h_configure(256, 7, 8, 2);
	base = h_part_base();
	x_slice_ok("genuine", in, len, base, 1, NULL, sliced, &slen);
	memcpy(&t, sliced + slen - NFSL_TOKEN_LEN, sizeof(t));
	h_slot_read(base, &slot);
	off = NFSL_MEMO_OFF(slot.len);
	cr_assert_eq(NFSL_TOKEN_PLEN(ntohl(t.slot)), slot.len);
	memcpy(&m, slot.payload + off, sizeof(m));
	cr_expect_eq(m.word, ntohl(t.slot), "memo word %#x, token %#x", m.word, ntohl(t.slot));
	cr_expect_eq(m.gen, ntohl(t.gen));
	cr_expect_eq(m.mac_x, t.mac ^ H.cfg.key[0] ^ H.cfg.key[1]);

	/* A MAC no key made, with the memo made to match: spliced, so the
	 * splicer asked the memo, not SipHash (only who can write the store,
	 * root, can do this). */
	memcpy(forged, sliced, slen);
	for (off = 0; forged[slen - 8 + off] == forged[slen - 6 + off]; off++)
		cr_assert_lt(off, 5, "a MAC of equal bytes");
	/* bytes 2 apart swapped: another MAC, the same checksum */
	forged[slen - 8 + off] = sliced[slen - 6 + off];
	forged[slen - 6 + off] = sliced[slen - 8 + off];
	off = NFSL_MEMO_OFF(slot.len);
	memcpy(&t, forged + slen - NFSL_TOKEN_LEN, sizeof(t));
	m.mac_x = t.mac ^ H.cfg.key[0] ^ H.cfg.key[1];
	memcpy(slot.payload + off, &m, sizeof(m));
	h_slot_write(base, &slot);
	x_splice_ok("memo trusted", forged, slen, in, len);

	/* A memo under another key (left by a key a restore replaced): the
	 * genuine token goes the slow way and is spliced; the memo's MAC is
	 * not ours. */
	h_reset();
	x_slice_ok("genuine, again", in, len, base, 1, NULL, sliced, &slen);
	memcpy(&t, sliced + slen - NFSL_TOKEN_LEN, sizeof(t));
	h_slot_read(base, &slot);
	memcpy(&m, slot.payload + off, sizeof(m));
	/* key K' with K'[0] ^ K'[1] = K[0] ^ K[1] ^ X made MAC t.mac ^ Y */
	m.mac_x = t.mac ^ 0x0f0f0f0f0f0f0f0full ^ H.cfg.key[0] ^ H.cfg.key[1] ^
		  0x1234567890abcdefull;
	memcpy(slot.payload + off, &m, sizeof(m));
	h_slot_write(base, &slot);
	memcpy(forged, sliced, slen);
	t.mac ^= 0x0f0f0f0f0f0f0f0full;
	memcpy(forged + slen - NFSL_TOKEN_LEN, &t, sizeof(t));
	x_splice_untouched("MAC of the memo's key", forged, slen, V_TC_OK, &bad);
	x_splice_ok("genuine, memo of another key", sliced, slen, in, len);
}

/* Stale tokens: the payload they name is gone. Dropped (never sent on
 * truncated), counted, and the slot's new owner is left alone. */
Test(splice, stale)
{
	struct nfsl_counters stale = { .stale = 1 };
	struct nfsl_counters evicted = { .evicted = 1 };
	uint8_t in[6][PKT_MAX], sliced[6][PKT_MAX];
	uint32_t slen[6], base;
	struct nfsl_slot slot;
	size_t len[6];

	for (int i = 0; i < 6; i++) {
		struct pkt_spec s = { .size = 400 + 100 * i, .v6 = i & 1,
				      .proto = i & 2 ? PKT_TCP : PKT_UDP,
				      .seed = 40 + i };

		len[i] = pkt_build(&s, in[i]);
	}

	/* spliced twice: the second copy is stale */
	h_configure(256, 0, 4, 1);
	base = h_part_base();
	x_slice_ok("twice", in[0], len[0], base, 1, NULL, sliced[0], &slen[0]);
	x_splice_ok("twice, first", sliced[0], slen[0], in[0], len[0]);
	x_splice_untouched("twice, second", sliced[0], slen[0], V_TC_SHOT, &stale);
	h_slot_read(base, &slot);
	cr_expect_eq(slot.ctl, NFSL_CTL(1, 0));

	/* evicted by the allocator: expiry 1, the cursor wraps once */
	h_reset();
	for (int i = 0; i < 5; i++)
		x_slice_ok("wrap", in[i], len[i], base + i % 4, i < 4 ? 1 : 2,
			   i < 4 ? NULL : &evicted, sliced[i], &slen[i]);
	x_splice_untouched("evicted", sliced[0], slen[0], V_TC_SHOT, &stale);
	h_slot_read(base, &slot);
	cr_expect_eq(slot.ctl, NFSL_CTL(2, 1), "new owner's slot ctl %#llx",
		     (unsigned long long)slot.ctl);
	x_splice_ok("new owner", sliced[4], slen[4], in[4], len[4]);
	for (int i = 1; i < 4; i++)
		x_splice_ok("others", sliced[i], slen[i], in[i], len[i]);

	/* the slot moved on behind the splicer's back (e.g. the manager's
	 * TTL eviction followed by a new claim) */
	h_reset();
	x_slice_ok("moved on", in[5], len[5], base, 1, NULL, sliced[5], &slen[5]);
	h_slot_set_ctl(base, NFSL_CTL(2, 1));
	x_splice_untouched("moved on", sliced[5], slen[5], V_TC_SHOT, &stale);
	h_slot_read(base, &slot);
	cr_expect_eq(slot.ctl, NFSL_CTL(2, 1));
	/* freed (TTL eviction alone) */
	h_slot_set_ctl(base, NFSL_CTL(1, 0));
	x_splice_untouched("freed", sliced[5], slen[5], V_TC_SHOT, &stale);
	h_slot_read(base, &slot);
	cr_expect_eq(slot.ctl, NFSL_CTL(1, 0));
}

/*
 * A spliced packet larger than the egress device's MTU is dropped before
 * it is touched, counted too_big, and its slot freed: the MTU of H_IF_OUT
 * is lowered to 1300 after slicing (IPv6 needs >= 1280) (the slicer would not slice a packet too
 * large for its egress). A test run's skb sits on loopback unless
 * __sk_buff.ifindex names another device.
 */
Test(splice, too_big)
{
	struct nfsl_counters too_big = { .too_big = 1 };
	uint8_t in[PKT_MAX], sliced[PKT_MAX];
	struct nfsl_slot slot;
	uint32_t slen, base;

	H.ifindex = H.if_out;
	h_configure(256, 0, 8, 2);
	base = h_part_base();
	for (int v6 = 0; v6 < 2; v6++) {
		struct pkt_spec s = { .v6 = v6, .proto = v6 ? PKT_TCP : PKT_UDP,
				      .seed = v6 };
		size_t len;

		h_reset();
		h_set_mtu(H_IF_OUT, 1500);
		s.size = 14 + 1300; /* IP packet of 1300 B: fits */
		len = pkt_build(&s, in);
		x_slice_ok(pkt_name(&s), in, len, base, 1, NULL, sliced, &slen);
		h_set_mtu(H_IF_OUT, 1300);
		x_splice_ok(pkt_name(&s), sliced, slen, in, len);

		h_set_mtu(H_IF_OUT, 1500);
		s.size++; /* 1301 B: one too many */
		len = pkt_build(&s, in);
		x_slice_ok(pkt_name(&s), in, len, base + 1, 1, NULL, sliced,
			   &slen);
		h_set_mtu(H_IF_OUT, 1300);
		x_splice_untouched(pkt_name(&s), sliced, slen, V_TC_SHOT,
				   &too_big);
		h_slot_read(base + 1, &slot);
		cr_expect_eq(slot.ctl, NFSL_CTL(1, 0), "slot not freed: %#llx",
			     (unsigned long long)slot.ctl);

		/* a VLAN tag does not count against the MTU (nor does it
		 * in the kernel): 1300 B fit */
		h_set_mtu(H_IF_OUT, 1500);
		s.size = 14 + 4 + 1300;
		s.vlans = 1;
		len = pkt_build(&s, in);
		x_slice_ok(pkt_name(&s), in, len, base + 2, 1, NULL, sliced,
			   &slen);
		h_set_mtu(H_IF_OUT, 1300);
		x_splice_ok(pkt_name(&s), sliced, slen, in, len);
	}
	H.ifindex = 0;
}
