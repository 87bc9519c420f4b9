// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Slicer (XDP) through BPF_PROG_TEST_RUN: which packets are sliced, the
 * exact bytes of a sliced packet and of its slot, the allocator, and what
 * must pass untouched (small, too big, store full) or be dropped (replayed
 * tokens). Unparsed frames: test_unparsed.c.
 */
#include <string.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "ref.h"

TestSuite(slice, .init = h_setup, .fini = h_teardown, .timeout = 30);

static const uint16_t sizes[] = { 60, 64, 255, 256, 257, 512, 1000, 1514 };
static const uint8_t l4s[] = { PKT_UDP, PKT_TCP };

/* Every size x IPv4/IPv6 x UDP/TCP at the defaults (threshold 256, keep 0):
 * below the threshold untouched by both programs, at or above it sliced,
 * and spliced back to the original. */
Test(slice, sizes)
{
	struct nfsl_counters small = { .skipped_small = 1 }, none = { 0 };
	uint8_t in[PKT_MAX], out[PKT_MAX];
	uint32_t olen;
	int n = 0;

	for (int v6 = 0; v6 < 2; v6++)
		for (size_t p = 0; p < sizeof(l4s); p++)
			for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
				struct pkt_spec s = { .size = sizes[i], .v6 = v6,
						      .proto = l4s[p], .seed = i };
				size_t len = pkt_build(&s, in);
				const char *name = pkt_name(&s);

				if (!len)
					continue; /* headers do not fit */
				h_reset();
				if (len < H.cfg.threshold) {
					x_slice_untouched(name, in, len, V_XDP_PASS,
							  &small);
					x_splice_untouched(name, in, len, V_TC_OK,
							   &none);
				} else {
					x_slice_ok(name, in, len, h_part_base(), 1,
						   NULL, out, &olen);
					x_splice_ok(name, out, olen, in, len);
				}
				n++;
			}
	/* 60 and 64 B cannot hold IPv6+TCP, 60 B not IPv6+UDP */
	cr_expect_eq(n, 4 * 8 - 3, "ran %d cases", n);
}

/* Sliced only when the payload exceeds keep + token: a slot must hold
 * more bytes than the token that replaces them. */
Test(slice, payload_boundary)
{
	static const uint32_t keeps[] = { 0, 7, 64 };
	struct nfsl_counters small = { .skipped_small = 1 };
	uint8_t in[PKT_MAX], out[PKT_MAX];
	uint32_t olen;

	for (size_t k = 0; k < 3; k++) {
		for (int v6 = 0; v6 < 2; v6++) {
			struct pkt_spec s = { .v6 = v6, .proto = PKT_UDP };
			size_t hdr = pkt_hdr_len(&s), len;

			h_configure(1, keeps[k], 8, 2);
			s.size = hdr + keeps[k] + NFSL_TOKEN_LEN;
			len = pkt_build(&s, in);
			x_slice_untouched(pkt_name(&s), in, len, V_XDP_PASS,
					  &small);
			s.size++; /* one parked byte more than the token */
			len = pkt_build(&s, in);
			x_slice_ok(pkt_name(&s), in, len, h_part_base(), 1, NULL,
				   out, &olen);
		}
	}
}

/* Frames with bytes after the IP packet: a small one (Ethernet padding) is
 * small, a large one is not what the slicer handles. */
Test(slice, padded)
{
	struct nfsl_counters small = { .skipped_small = 1 };
	struct nfsl_counters unparsed = { .unparsed = 1 };
	struct pkt_spec s = { .size = 60, .pad = 14, .proto = PKT_UDP };
	uint8_t in[PKT_MAX];
	size_t len = pkt_build(&s, in);

	cr_assert_null(ref_check(in, len, true));
	x_slice_untouched("60 B with 14 B of padding", in, len, V_XDP_PASS,
			  &small);
	s.size = 600;
	s.pad = 20;
	len = pkt_build(&s, in);
	x_slice_untouched("600 B with 20 B of padding", in, len, V_XDP_PASS,
			  &unparsed);
}

/* IP packets larger than the egress MTU pass unsliced, so the kernel does
 * PMTU as it would without slicing (skipped_mtu); payloads larger than a
 * slot pass unsliced too (skipped_big). */
Test(slice, skipped_big_and_mtu)
{
	struct nfsl_counters big = { .skipped_big = 1 }, mtu = { .skipped_mtu = 1 };
	struct pkt_spec s = { .size = 1514, .proto = PKT_UDP };
	uint8_t in[PKT_MAX], out[PKT_MAX];
	size_t len = pkt_build(&s, in);
	uint32_t olen;

	h_set_mtu(H_IF_OUT, 1499);
	x_slice_untouched("1500 B IP packet, egress MTU 1499", in, len,
			  V_XDP_PASS, &mtu);
	s.v6 = 1;
	len = pkt_build(&s, in);
	x_slice_untouched("1500 B IPv6 packet, egress MTU 1499", in, len,
			  V_XDP_PASS, &mtu);
	h_set_mtu(H_IF_OUT, 1500);
	x_slice_ok("1500 B IPv6 packet, egress MTU 1500", in, len, h_part_base(),
		   1, NULL, out, &olen);

	/* 2016 B is the most a slot parks */
	h_set_mtu(H_IF_OUT, 3000);
	s.v6 = 0;
	s.size = 14 + 20 + 8 + NFSL_PAYLOAD_MAX + 1;
	len = pkt_build(&s, in);
	x_slice_untouched("payload of 2017 B", in, len, V_XDP_PASS, &big);
	s.size--;
	len = pkt_build(&s, in);
	x_slice_ok("payload of 2016 B", in, len, h_part_base() + 1, 1, NULL,
		   out, &olen);
}

/* Until the loader wrote a config with slots, the slicer does nothing. */
Test(slice, not_configured)
{
	struct nfsl_counters none = { 0 };
	struct pkt_spec s = { .size = 1000, .proto = PKT_UDP };
	uint8_t in[PKT_MAX];
	size_t len = pkt_build(&s, in);

	H.cfg.slots = 0;
	h_write_config();
	x_slice_untouched("slots 0", in, len, V_XDP_PASS, &none);
}

/* A sliced header of ours arriving from outside must not reach a splicer:
 * dropped, counted, its slot left alone. */
Test(slice, replay)
{
	struct nfsl_counters replayed = { .replayed = 1 };
	uint8_t in[PKT_MAX], sliced[PKT_MAX];
	uint32_t slen;

	for (int v6 = 0; v6 < 2; v6++)
		for (size_t p = 0; p < sizeof(l4s); p++) {
			struct pkt_spec s = { .size = 1000, .v6 = v6,
					      .proto = l4s[p] };
			size_t len = pkt_build(&s, in);
			struct nfsl_slot slot;

			h_reset();
			x_slice_ok(pkt_name(&s), in, len, h_part_base(), 1, NULL,
				   sliced, &slen);
			x_slice_untouched(pkt_name(&s), sliced, slen, V_XDP_DROP,
					  &replayed);
			h_slot_read(h_part_base(), &slot);
			cr_expect_eq(slot.ctl, NFSL_CTL(1, H.cfg.expiry));
			x_splice_ok(pkt_name(&s), sliced, slen, in, len);
		}
}

/* Allocation is FIFO inside this CPU's partition; a freed slot is taken
 * again with the next generation. */
Test(slice, cursor)
{
	uint8_t in[5][PKT_MAX], sliced[5][PKT_MAX];
	uint32_t slen[5], base;
	size_t len[5];

	h_configure(256, 0, 4, 2);
	base = h_part_base();
	for (int i = 0; i < 5; i++) {
		struct pkt_spec s = { .size = 700 + i, .proto = PKT_TCP, .seed = i };

		len[i] = pkt_build(&s, in[i]);
	}
	for (int i = 0; i < 4; i++)
		x_slice_ok("first round", in[i], len[i], base + i, 1, NULL,
			   sliced[i], &slen[i]);
	for (int i = 3; i >= 0; i--)
		x_splice_ok("first round", sliced[i], slen[i], in[i], len[i]);
	x_slice_ok("after the wrap", in[4], len[4], base, 2, NULL, sliced[4],
		   &slen[4]);
	x_splice_ok("after the wrap", sliced[4], slen[4], in[4], len[4]);
}

/* Each CPU allocates from its own partition (cpu * part_slots ...), with
 * its own cursor; a CPU beyond the configured partitions wraps onto them. */
Test(slice, partitions)
{
	uint8_t in[2][PKT_MAX], sliced[4][2][PKT_MAX];
	int ncpu = H.nallowed < 4 ? H.nallowed : 4;
	uint32_t slen[4][2];
	size_t len[2];

	for (int i = 0; i < 2; i++) {
		struct pkt_spec s = { .size = 900, .v6 = i, .proto = PKT_UDP,
				      .seed = i };

		len[i] = pkt_build(&s, in[i]);
	}
	h_configure(256, 0, 4, 2);
	for (int c = 0; c < ncpu; c++) {
		h_pin(H.allowed[c]);
		for (int i = 0; i < 2; i++)
			x_slice_ok("own partition", in[i], len[i],
				   H.cpu * 4 + i, 1, NULL, sliced[c][i],
				   &slen[c][i]);
	}
	for (int c = 0; c < ncpu; c++) {
		h_pin(H.allowed[(c + 1) % ncpu]); /* splice anywhere */
		for (int i = 0; i < 2; i++)
			x_splice_ok("own partition", sliced[c][i], slen[c][i],
				    in[i], len[i]);
	}

	/* one partition for all CPUs: every CPU's cursor starts at slot 0 */
	H.cfg.ncpus = 1;
	H.cfg.slots = 4;
	h_write_config();
	h_reset();
	for (int c = 0; c < ncpu; c++) {
		h_pin(H.allowed[c]);
		x_slice_ok("one partition", in[0], len[0], 0, c + 1, NULL,
			   sliced[0][0], &slen[0][0]);
		x_splice_ok("one partition", sliced[0][0], slen[0][0], in[0],
			    len[0]);
	}
	cr_log_info("partitions: %d CPUs", ncpu);
}

/* Store full: with expiry 2 a busy slot survives one wrap of the cursor.
 * Packets meeting a busy slot pass unsliced and byte-identical (never
 * dropped); at the second wrap the oldest payload is evicted. */
Test(slice, full_store)
{
	struct nfsl_counters full = { .skipped_full = 1 };
	struct nfsl_counters evicted = { .evicted = 1 };
	struct nfsl_counters stale = { .stale = 1 };
	uint8_t in[9][PKT_MAX], sliced[9][PKT_MAX];
	uint32_t slen[9], base;
	size_t len[9];
	struct nfsl_slot slot;

	h_configure(256, 0, 4, 2);
	base = h_part_base();
	for (int i = 0; i < 9; i++) {
		struct pkt_spec s = { .size = 600 + 10 * i, .v6 = i & 1,
				      .proto = PKT_UDP, .seed = i };

		len[i] = pkt_build(&s, in[i]);
	}
	for (int i = 0; i < 4; i++)
		x_slice_ok("filling", in[i], len[i], base + i, 1, NULL,
			   sliced[i], &slen[i]);
	for (int i = 4; i < 8; i++) {
		x_slice_untouched("store full", in[i], len[i], V_XDP_PASS, &full);
		h_slot_read(base + i - 4, &slot);
		cr_expect_eq(slot.ctl, NFSL_CTL(1, 1), "slot %d ctl %#llx", i - 4,
			     (unsigned long long)slot.ctl);
	}
	x_slice_ok("evicting", in[8], len[8], base, 2, &evicted, sliced[8],
		   &slen[8]);

	x_splice_untouched("evicted payload", sliced[0], slen[0], V_TC_SHOT,
			   &stale);
	for (int i = 1; i < 4; i++)
		x_splice_ok("survivor", sliced[i], slen[i], in[i], len[i]);
	x_splice_ok("evictor", sliced[8], slen[8], in[8], len[8]);
}
