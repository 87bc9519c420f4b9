// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The codec of include/ compiled for user space, as the AF_XDP engine uses
 * it: SipHash-2-4 and the token against known answers and the reference,
 * slot claim / release semantics, checksum sums and the parser against
 * the reference.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>

#include "nfsl_csum.h"
#include "nfsl_parse.h"
#include "nfsl_siphash.h"
#include "nfsl_store.h"
#include "nfsl_token.h"
#include "nfsl_splice.h"
#include "harness.h"
#include "pkt.h"
#include "ref.h"
#include "csum_probe.skel.h"

TestSuite(codec, .timeout = 10);

static const uint8_t kat_key[16] = { 0, 1, 2, 3, 4, 5, 6, 7,
				     8, 9, 10, 11, 12, 13, 14, 15 };

/* SipHash-2-4 paper, Appendix A / reference vectors.h: key 00..0f,
 * message 00..(n-1). */
static const struct {
	size_t n;
	uint8_t out[8];
} kat[] = {
	{ 0, { 0x31, 0x0e, 0x0e, 0xdd, 0x47, 0xdb, 0x6f, 0x72 } },
	{ 1, { 0xfd, 0x67, 0xdc, 0x93, 0xc5, 0x39, 0xf8, 0x74 } },
	{ 7, { 0x37, 0xd1, 0x01, 0x8b, 0xf5, 0x00, 0x02, 0xab } },
	{ 8, { 0x62, 0x24, 0x93, 0x9a, 0x79, 0xf5, 0xf5, 0x93 } },
	{ 9, { 0xb0, 0xe4, 0xa9, 0x0b, 0xdf, 0x82, 0x00, 0x9e } },
	{ 15, { 0xe5, 0x45, 0xbe, 0x49, 0x61, 0xca, 0x29, 0xa1 } },
};

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

Test(codec, siphash_known_answer)
{
	uint64_t h = nfsl_siphash24_u64(le64(kat_key), le64(kat_key + 8),
					le64(kat_key)); /* message 00..07 */
	uint8_t out[8];

	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(h >> (8 * i));
	cr_expect_arr_eq(out, kat[3].out, 8, "nfsl_siphash24_u64 = %016llx",
			 (unsigned long long)h);
}

/* The judge itself against the published vectors. */
Test(codec, siphash_reference_vectors)
{
	uint8_t out[8];

	for (size_t i = 0; i < ARRAY_SIZE(kat); i++) {
		ref_siphash24(kat_key, kat_key, kat[i].n, out);
		cr_expect_arr_eq(out, kat[i].out, 8, "vector %zu", kat[i].n);
	}
}

Test(codec, siphash_matches_reference)
{
	uint8_t key[16], msg[8], want[8];

	srand(1);
	for (int n = 0; n < 1000; n++) {
		uint64_t h;

		for (int i = 0; i < 16; i++)
			key[i] = (uint8_t)rand();
		for (int i = 0; i < 8; i++)
			msg[i] = (uint8_t)rand();
		ref_siphash24(key, msg, 8, want);
		h = nfsl_siphash24_u64(le64(key), le64(key + 8), le64(msg));
		cr_assert_eq(h, le64(want), "round %d", n);
	}
}

/* The token: slot and generation big-endian, then the MAC of the
 * little-endian word slot | gen << 32; every bit counts. */
Test(codec, token)
{
	static const uint32_t cases[][2] = {
		{ 0, 0 }, { 1, 1 }, { 63, 7 }, { 0x12345678, 0x9abcdef0 },
		{ 0xffffffff, 0xffffffff },
	};

	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		struct nfsl_token t, f;
		uint8_t want[16];

		nfsl_token_make(&t, h_key, cases[c][0], cases[c][1]);
		h_token(cases[c][0], cases[c][1], want);
		cr_expect_arr_eq(&t, want, 16, "token %u/%u", cases[c][0],
				 cases[c][1]);
		cr_expect(nfsl_token_verify(&t, h_key));
		for (int b = 0; b < 128; b++) {
			f = t;
			((uint8_t *)&f)[b / 8] ^= 1 << (b % 8);
			cr_expect(!nfsl_token_verify(&f, h_key),
				  "token %zu verifies with bit %d flipped", c, b);
		}
		f = t;
		cr_expect(!nfsl_token_verify(&f, (const __u64[2]){ h_key[0] ^ 1,
								   h_key[1] }));
	}
}

/* The token memo: equal tokens only, under the key it was written with,
 * and none for a payload that leaves no room for it. */
Test(codec, token_memo)
{
	static const uint32_t plens[] = { 17, 1000, 1001, 1448, NFSL_MEMO_PLEN_MAX };
	const __u64 other[2] = { h_key[0] ^ 1, h_key[1] };
	static struct nfsl_slot s;

	for (size_t i = 0; i < ARRAY_SIZE(plens); i++) {
		uint32_t word = NFSL_TOKEN_WORD(5, plens[i]);
		struct nfsl_token t, f;

		memset(&s, 0, sizeof(s));
		nfsl_token_make(&t, h_key, word, 9);
		cr_expect(!nfsl_token_memo_ok(&t, &s, h_key), "no memo yet");
		nfsl_token_memo_write(&s, &t, h_key);
		cr_expect_eq(NFSL_MEMO_OFF(plens[i]) % 8, 0);
		cr_expect_geq(NFSL_MEMO_OFF(plens[i]), plens[i]);
		cr_expect(nfsl_token_memo_ok(&t, &s, h_key), "plen %u", plens[i]);
		cr_expect(!nfsl_token_memo_ok(&t, &s, other), "another key");
		for (int b = 0; b < 128; b++) {
			f = t;
			((uint8_t *)&f)[b / 8] ^= 1 << (b % 8);
			cr_expect(!nfsl_token_memo_ok(&f, &s, h_key),
				  "plen %u: bit %d flipped", plens[i], b);
		}
	}
	/* No room: nothing written, nothing trusted. */
	{
		struct nfsl_token t;

		memset(&s, 0xa5, sizeof(s));
		nfsl_token_make(&t, h_key, NFSL_TOKEN_WORD(5, NFSL_MEMO_PLEN_MAX + 1), 9);
		nfsl_token_memo_write(&s, &t, h_key);
		for (size_t b = 0; b < sizeof(s.payload); b++)
			cr_assert_eq(s.payload[b], 0xa5, "byte %zu written", b);
		cr_expect(!nfsl_token_memo_ok(&t, &s, h_key));
	}
}

/* Claim takes a free slot with the next generation; release frees only the
 * generation that holds it, once. */
Test(codec, store_claim_release)
{
	struct nfsl_slot s = { 0 };
	uint32_t gen = 0;

	cr_assert_eq(nfsl_slot_claim(&s, 2, &gen), NFSL_CLAIM_FREE);
	cr_expect_eq(gen, 1);
	cr_expect_eq(s.ctl, NFSL_CTL(1, 2));
	cr_expect(nfsl_slot_busy(&s, 1));
	cr_expect(!nfsl_slot_busy(&s, 0));
	cr_expect(!nfsl_slot_busy(&s, 2));

	cr_expect(!nfsl_slot_release(&s, 0), "released with an old generation");
	cr_expect(!nfsl_slot_release(&s, 2), "released with a future generation");
	cr_expect_eq(s.ctl, NFSL_CTL(1, 2));
	cr_expect(nfsl_slot_release(&s, 1));
	cr_expect_eq(s.ctl, NFSL_CTL(1, 0));
	cr_expect(!nfsl_slot_busy(&s, 1));
	cr_expect(!nfsl_slot_release(&s, 1), "released twice");
	cr_expect_eq(s.ctl, NFSL_CTL(1, 0));

	cr_assert_eq(nfsl_slot_claim(&s, 2, &gen), NFSL_CLAIM_FREE);
	cr_expect_eq(gen, 2);
	cr_expect_eq(s.ctl, NFSL_CTL(2, 2));
}

/* Wrap-count expiry (PayloadPark Alg. 1): a busy slot loses one count per
 * visit of the cursor and is evicted when the count is 1; the evicted
 * generation can no longer be released. */
Test(codec, store_expiry)
{
	struct nfsl_slot s = { 0 };
	uint32_t gen = 0;

	cr_assert_eq(nfsl_slot_claim(&s, 3, &gen), NFSL_CLAIM_FREE);
	cr_expect_eq(nfsl_slot_claim(&s, 3, &gen), NFSL_CLAIM_BUSY);
	cr_expect_eq(s.ctl, NFSL_CTL(1, 2));
	cr_expect(nfsl_slot_busy(&s, 1), "still the first payload's");
	cr_expect_eq(nfsl_slot_claim(&s, 3, &gen), NFSL_CLAIM_BUSY);
	cr_expect_eq(s.ctl, NFSL_CTL(1, 1));
	cr_expect_eq(nfsl_slot_claim(&s, 3, &gen), NFSL_CLAIM_EVICTED);
	cr_expect_eq(gen, 2);
	cr_expect_eq(s.ctl, NFSL_CTL(2, 3));

	cr_expect(!nfsl_slot_busy(&s, 1));
	cr_expect(!nfsl_slot_release(&s, 1), "stale generation released");
	cr_expect_eq(s.ctl, NFSL_CTL(2, 3), "stale release changed the slot");
	cr_expect(nfsl_slot_release(&s, 2));

	/* expiry 1: evicted at the first wrap */
	cr_assert_eq(nfsl_slot_claim(&s, 1, &gen), NFSL_CLAIM_FREE);
	cr_expect_eq(gen, 3);
	cr_expect_eq(nfsl_slot_claim(&s, 1, &gen), NFSL_CLAIM_EVICTED);
	cr_expect_eq(gen, 4);
	cr_expect_eq(s.ctl, NFSL_CTL(4, 1));
}

/* The generation is 32 bits and wraps; the free slot it wraps from is
 * simply taken. */
Test(codec, store_generation_wraps)
{
	struct nfsl_slot s = { .ctl = NFSL_CTL(0xffffffffu, 0) };
	uint32_t gen = 1;

	cr_assert_eq(nfsl_slot_claim(&s, 2, &gen), NFSL_CLAIM_FREE);
	cr_expect_eq(gen, 0);
	cr_expect_eq(s.ctl, NFSL_CTL(0, 2));
	cr_expect(nfsl_slot_release(&s, 0));
}

/* nfsl_csum_bytes sums in memory order; the reference in network order. */
Test(codec, csum_bytes)
{
	uint8_t buf[300];

	srand(2);
	for (size_t len = 0; len < sizeof(buf); len++) {
		uint16_t got, want;

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rand();
		got = nfsl_csum_fold(nfsl_csum_bytes(buf, len, 0));
		want = htons(ref_fold(ref_sum(buf, len, 0)));
		cr_assert_eq(got, want, "len %zu: %#x, want %#x", len, got, want);
		/* the same bytes one position further: swapped halves */
		memmove(buf + 1, buf, len);
		buf[0] = 0;
		want = htons(ref_fold(ref_sum(buf, len + 1, 0)));
		cr_assert_eq(nfsl_csum_at(got, 1), want, "len %zu odd", len);
		cr_assert_eq(nfsl_csum_at(got, 2), got);
	}
}

/* nfsl_csum_add: the 32-bit sum with the end-around carry, at the edges
 * (no carry, a carry, the largest sum) and on random words against
 * the 64-bit reference fold. */
Test(codec, csum_add)
{
	static const uint32_t e[][3] = {
		{ 0, 0, 0 },
		{ 1, 0xfffffffe, 0xffffffff },
		{ 1, 0xffffffff, 1 },
		{ 0x80000000, 0x80000000, 1 },
		{ 0xffffffff, 0xffffffff, 0xffffffff },
		{ 0x12345678, 0xedcba987, 0xffffffff }, /* -0 stays -0 */
	};

	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		cr_assert_eq(nfsl_csum_add(e[i][0], e[i][1]), e[i][2], "%#x + %#x", e[i][0], e[i][1]);
	srand(3);
	for (int i = 0; i < 100000; i++) {
		uint32_t a = (uint32_t)rand() << 1 ^ (uint32_t)rand(), b = (uint32_t)rand() << 1 ^ (uint32_t)rand();
		uint64_t s = (uint64_t)a + b;

		cr_assert_eq(nfsl_csum_add(a, b), (uint32_t)(s + (s >> 32)), "%#x + %#x", a, b);
	}
}

/*
 * nfsl_csum_add compiled for BPF (tests/unit/bpf/csum_probe.bpf.c, the
 * datapath's flags) has no conditional jump: BPF has no set-on-carry, so
 * a carry test is a branch on the data, mispredicted about every other
 * add, a dozen adds per slice and per splice.
 */
Test(codec, csum_add_bpf_branchless)
{
	const struct bpf_insn *in;
	struct bpf_program *prog;
	struct bpf_object *obj;
	size_t sz, n, jumps = 0;
	const void *elf = csum_probe_bpf__elf_bytes(&sz);

	obj = bpf_object__open_mem(elf, sz, NULL);
	cr_assert_not_null(obj, "csum_probe.bpf.o does not open");
	prog = bpf_object__find_program_by_name(obj, "nfsl_csum_add_probe");
	cr_assert_not_null(prog);
	in = bpf_program__insns(prog);
	n = bpf_program__insn_cnt(prog);
	cr_assert_gt(n, 3);
	for (size_t i = 0; i < n; i++) {
		__u8 cls = BPF_CLASS(in[i].code), op = BPF_OP(in[i].code);

		if ((cls == BPF_JMP || cls == BPF_JMP32) && op != BPF_JA && op != BPF_CALL &&
		    op != BPF_EXIT)
			jumps++;
	}
	bpf_object__close(obj);
	cr_assert_eq(jumps, 0, "%zu conditional jumps in %zu instructions", jumps, n);
}

/* The user-space parser finds what the reference finds. */
Test(codec, parse)
{
	static const struct pkt_spec specs[] = {
		{ .size = 100, .proto = PKT_UDP },
		{ .size = 300, .proto = PKT_TCP, .tcp_opt = 40, .vlans = 1 },
		{ .size = 300, .proto = PKT_UDP, .ip_opt = 40, .vlans = 2,
		  .dscp = 63, .ecn = 3 },
		{ .size = 100, .proto = PKT_UDP, .pad = 20 },
		{ .size = 200, .v6 = 1, .proto = PKT_TCP, .dscp = 46, .ecn = 1 },
		{ .size = 200, .v6 = 1, .proto = PKT_UDP, .n_ext = 2,
		  .ext = { PKT_EXT_HBH, PKT_EXT_DST } },
	};
	uint8_t f[PKT_MAX];

	for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
		size_t len = pkt_build(&specs[i], f);
		struct nfsl_pkt p = { 0 };
		struct ref_info ri;

		cr_assert_eq(ref_parse(f, len, &ri), 0);
		cr_assert_eq(nfsl_parse(f, f + len, &p), 0, "%s",
			     pkt_name(&specs[i]));
		cr_expect(p.l3off == ri.l3off && p.l4off == ri.l4off &&
				  p.payoff == ri.payoff && p.l3end == ri.l3end &&
				  p.v6 == ri.v6 && p.proto == ri.proto &&
				  p.dscp == ri.dscp && p.ecn == ri.ecn,
			  "%s: parsed differently", pkt_name(&specs[i]));
	}
}

/*
 * nfsl_splice_quick_token (the splicers' not-ours path before the parse):
 * where it answers, the token is where the full parse puts it; it leaves
 * to the parse every frame whose token it cannot place without it
 * (tagged, padded, DSCP 63, too short), so no sliced header skips the
 * full way.
 */
Test(codec, splice_quick_token)
{
	static const struct {
		const char *name;
		struct pkt_spec s;
		bool quick; /* answers (else NULL) */
	} cases[] = {
		{ "IPv4 UDP", { .size = 1514, .proto = PKT_UDP }, true },
		{ "IPv4 TCP, a token's payload", { .size = 70, .proto = PKT_TCP }, true },
		{ "IPv6 UDP", { .size = 1514, .v6 = 1, .proto = PKT_UDP }, true },
		{ "IPv6 TCP + hop-by-hop", { .size = 600, .v6 = 1, .proto = PKT_TCP,
					     .n_ext = 1, .ext = { PKT_EXT_HBH } }, true },
		{ "IPv4 options 40 B", { .size = 300, .proto = PKT_UDP, .ip_opt = 40 }, true },
		{ "DSCP 46", { .size = 300, .proto = PKT_UDP, .dscp = 46 }, true },
		{ "DSCP 63", { .size = 300, .proto = PKT_UDP, .dscp = 63 }, false },
		{ "IPv6 DSCP 63", { .size = 300, .v6 = 1, .proto = PKT_UDP, .dscp = 63 }, false },
		{ "802.1Q", { .size = 300, .proto = PKT_UDP, .vlans = 1 }, false },
		{ "padded 4 B", { .size = 300, .pad = 4, .proto = PKT_UDP }, false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint8_t f[PKT_MAX];
		struct pkt_spec s = cases[i].s;
		struct nfsl_pkt p = {};
		const struct nfsl_token *t;
		uint32_t off;
		size_t len;

		pkt_spec_fit(&s);
		len = pkt_build(&s, f);
		cr_assert_gt(len, 0, "%s", cases[i].name);
		t = nfsl_splice_quick_token(f, f + len, len);
		if (!cases[i].quick) {
			cr_expect_null(t, "%s: answered before the parse", cases[i].name);
			continue;
		}
		cr_assert_eq(nfsl_parse(f, f + len, &p), 0, "%s", cases[i].name);
		cr_assert(nfsl_splice_token_off(&p, &off), "%s", cases[i].name);
		cr_expect_eq((const uint8_t *)t, f + off, "%s: token at %td, the parse's at %u",
			     cases[i].name, t ? (const uint8_t *)t - f : -1, off);
	}
	/* Shorter than an IPv6 header after Ethernet, or cut off: NULL. */
	{
		uint8_t f[PKT_MAX];
		struct pkt_spec s = { .size = 1514, .proto = PKT_UDP };
		size_t len = pkt_build(&s, f);

		cr_expect_null(nfsl_splice_quick_token(f, f + 40, 40));
		cr_expect_null(nfsl_splice_quick_token(f, f + 1000, len), "token beyond data_end");
	}
}
