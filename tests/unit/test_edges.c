// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Edges of the checksum arithmetic and of the configuration: payloads that
 * sum to +0 or -0, checksum fields that are 0x0000 or 0xffff before or
 * after slicing (where an incremental update can pick the other zero), and
 * the largest keep.
 */
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "ref.h"

TestSuite(edges, .init = h_setup, .fini = h_teardown, .timeout = 30);

static const uint8_t l4s[] = { PKT_UDP, PKT_TCP };

static bool roundtrip(const char *name, const uint8_t *in, size_t len)
{
	uint8_t sliced[PKT_MAX];
	uint32_t slen;

	h_reset();
	return x_slice_ok(name, in, len, h_part_base(), 1, NULL, sliced, &slen) &&
	       x_splice_ok(name, sliced, slen, in, len);
}

Test(edges, zero_and_ones_payloads)
{
	static const uint32_t keeps[] = { 0, 1, 7 };
	static const uint8_t fills[] = { PKT_FILL_ZERO, PKT_FILL_ONES };
	uint8_t in[PKT_MAX];
	char name[256];

	for (size_t k = 0; k < ARRAY_SIZE(keeps); k++) {
		h_configure(256, keeps[k], 8, 2);
		for (size_t f = 0; f < ARRAY_SIZE(fills); f++)
			for (int v6 = 0; v6 < 2; v6++)
				for (size_t p = 0; p < ARRAY_SIZE(l4s); p++)
					for (int odd = 0; odd < 2; odd++) {
						struct pkt_spec s = {
							.size = 300 + odd, .v6 = v6,
							.proto = l4s[p],
							.fill = fills[f],
						};
						size_t len = pkt_build(&s, in);

						snprintf(name, sizeof(name),
							 "keep %u: %s", keeps[k],
							 pkt_name(&s));
						roundtrip(name, in, len);
					}
	}
}

/* Add @d to the big-endian word at @p in ones' complement: the sum of the
 * packet grows by @d. */
static void add16(uint8_t *p, uint16_t d)
{
	ref_put16(p, ref_fold((uint64_t)ref_get16(p) + d));
}

static uint16_t l4_field(const uint8_t *f, size_t len)
{
	struct ref_info ri;

	cr_assert_eq(ref_parse(f, len, &ri), 0);
	return ref_get16(f + ri.l4off + (ri.proto == PKT_UDP ? 6 : 16));
}

static uint16_t ip_field(const uint8_t *f)
{
	return ref_get16(f + 14 + 10);
}

/*
 * Make a checksum field come out as zero (TCP 0x0000, UDP 0xffff, IPv4
 * header 0x0000) by adding the current checksum to a word it covers:
 *   - the original's L4 checksum: a parked payload word,
 *   - the sliced packet's L4 checksum: a kept payload word,
 *   - the original's IPv4 header checksum: the IP ID,
 *   - the sliced packet's IPv4 header checksum: the IP ID.
 */
Test(edges, checksum_fields_at_zero)
{
	uint8_t in[PKT_MAX], sl[PKT_MAX];
	struct ref_info ri;
	char name[256];

	h_configure(256, 7, 8, 2);
	for (int v6 = 0; v6 < 2; v6++)
		for (size_t p = 0; p < ARRAY_SIZE(l4s); p++) {
			struct pkt_spec s = { .size = 500, .v6 = v6,
					      .proto = l4s[p], .seed = 9 };
			uint16_t zero = l4s[p] == PKT_UDP ? 0xffff : 0;
			size_t len = pkt_build(&s, in);

			cr_assert_eq(ref_parse(in, len, &ri), 0);
			add16(in + ri.payoff + 8, l4_field(in, len));
			ref_fix_csums(in, len);
			cr_assert_eq(l4_field(in, len), zero);
			snprintf(name, sizeof(name), "original L4 checksum %#x: %s",
				 zero, pkt_name(&s));
			roundtrip(name, in, len);

			len = pkt_build(&s, in);
			x_sliced(in, len, 7, h_part_base(), 1, sl);
			add16(in + ri.payoff, l4_field(sl, ri.payoff + 7 + 16));
			ref_fix_csums(in, len);
			x_sliced(in, len, 7, h_part_base(), 1, sl);
			cr_assert_eq(l4_field(sl, ri.payoff + 7 + 16), zero);
			snprintf(name, sizeof(name), "sliced L4 checksum %#x: %s",
				 zero, pkt_name(&s));
			roundtrip(name, in, len);
			if (v6)
				continue;

			len = pkt_build(&s, in);
			add16(in + 14 + 4, ip_field(in));
			ref_fix_csums(in, len);
			cr_assert_eq(ip_field(in), 0);
			snprintf(name, sizeof(name), "original IPv4 checksum 0: %s",
				 pkt_name(&s));
			roundtrip(name, in, len);

			len = pkt_build(&s, in);
			x_sliced(in, len, 7, h_part_base(), 1, sl);
			add16(in + 14 + 4, ip_field(sl));
			ref_fix_csums(in, len);
			x_sliced(in, len, 7, h_part_base(), 1, sl);
			cr_assert_eq(ip_field(sl), 0);
			snprintf(name, sizeof(name), "sliced IPv4 checksum 0: %s",
				 pkt_name(&s));
			roundtrip(name, in, len);
		}
}

/* The largest keep behind the largest L4 header still slices. */
Test(edges, keep_max)
{
	uint8_t in[PKT_MAX];

	h_configure(256, NFSL_KEEP_MAX, 8, 2);
	for (int v6 = 0; v6 < 2; v6++)
		for (size_t p = 0; p < ARRAY_SIZE(l4s); p++) {
			struct pkt_spec s = { .size = 1514, .v6 = v6,
					      .proto = l4s[p], .tcp_opt = 40 };
			size_t len;

			if (l4s[p] == PKT_UDP)
				s.tcp_opt = 0;
			len = pkt_build(&s, in);
			roundtrip(pkt_name(&s), in, len);
		}
}

/* A keep the loader would refuse: where header + kept bytes do not fit the
 * checksum scratch, the slicer backs out, the packet passes untouched and
 * the claimed slot is given back. */
Test(edges, keep_beyond_max)
{
	struct nfsl_counters failed = { .slice_failed = 1 };
	struct pkt_spec s = { .size = 1514, .proto = PKT_TCP, .tcp_opt = 40 };
	uint8_t in[PKT_MAX], sliced[PKT_MAX];
	size_t len = pkt_build(&s, in);
	struct nfsl_slot slot;
	uint32_t slen;

	h_configure(256, NFSL_KEEP_MAX + 1, 8, 2);
	x_slice_untouched(pkt_name(&s), in, len, V_XDP_PASS, &failed);
	h_slot_read(h_part_base(), &slot);
	cr_expect_eq(slot.ctl, NFSL_CTL(1, 0), "slot ctl %#llx",
		     (unsigned long long)slot.ctl);

	s.proto = PKT_UDP; /* 8 + 193 bytes fit */
	s.tcp_opt = 0;
	len = pkt_build(&s, in);
	x_slice_ok(pkt_name(&s), in, len, h_part_base() + 1, 1, NULL, sliced,
		   &slen);
	x_splice_ok(pkt_name(&s), sliced, slen, in, len);
}
