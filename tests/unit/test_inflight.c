// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * What may happen to a sliced packet between slicer and splicer, and must
 * come out right after splice: a NAT rewriting address and port, a router
 * decrementing the TTL and marking ECN CE, an NF (an ALG) resizing the kept
 * payload, a VLAN tag pushed, and Ethernet padding added on the wire. The
 * splicer updates the checksum incrementally (RFC 1624), so every such
 * change stays accounted for; the expected packet is the original with the
 * same change, its checksums computed from scratch by the reference.
 */
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "ref.h"

TestSuite(inflight, .init = h_setup, .fini = h_teardown, .timeout = 30);

static const struct pkt_spec specs[] = {
	{ .size = 1000, .proto = PKT_UDP },
	{ .size = 1000, .proto = PKT_UDP, .udp_nocsum = 1 },
	{ .size = 1514, .proto = PKT_TCP, .tcp_opt = 12 },
	{ .size = 777, .proto = PKT_TCP, .vlans = 1, .ip_opt = 8 },
	{ .size = 1000, .v6 = 1, .proto = PKT_UDP },
	{ .size = 1514, .v6 = 1, .proto = PKT_TCP },
	{ .size = 555, .v6 = 1, .proto = PKT_TCP, .n_ext = 1 },
};
static const uint32_t keeps[] = { 0, 1, 7, 64 };

/* An in-flight change: @incremental does it to the sliced packet as a
 * kernel would, @scratch to the original with checksums recomputed.
 * Both return the new length. */
struct change {
	const char *name;
	size_t (*incremental)(uint8_t *f, size_t len, int i);
	size_t (*scratch)(uint8_t *f, size_t len, int i);
};

static uint8_t *l4_csum(uint8_t *f, const struct ref_info *ri)
{
	return f + ri->l4off + (ri->proto == PKT_UDP ? 6 : 16);
}

/* The kernel's NAT: new source address and port, the IPv4 header checksum
 * and the L4 checksum updated per 16-bit word (csum_replace); a UDP
 * checksum of 0 stays 0, a result of 0 is sent as 0xffff. */
static const uint8_t nat_a4[4] = { 192, 168, 7, 9 };
static const uint8_t nat_a6[16] = { 0x20, 0x01, 0x0d, 0xb8, [14] = 0xbe,
				    [15] = 0xef };

static size_t nat_incremental(uint8_t *f, size_t len, int i)
{
	const uint8_t *addr;
	uint8_t *l3, *src;
	struct ref_info ri;
	uint16_t ipc, c, port = 40000 + i;
	bool udp, use;

	cr_assert_eq(ref_parse(f, len, &ri), 0);
	addr = ri.v6 ? nat_a6 : nat_a4;
	l3 = f + ri.l3off;
	src = l3 + (ri.v6 ? 8 : 12);
	udp = ri.proto == PKT_UDP;
	c = ref_get16(l4_csum(f, &ri));
	use = !(udp && c == 0);
	ipc = ref_get16(l3 + 10);
	for (uint32_t w = 0; w < (ri.v6 ? 16u : 4u); w += 2) {
		uint16_t o = ref_get16(src + w), n = ref_get16(addr + w);

		if (!ri.v6)
			ipc = ref_update16(ipc, o, n);
		c = ref_update16(c, o, n);
		ref_put16(src + w, n);
	}
	c = ref_update16(c, ref_get16(f + ri.l4off), port);
	ref_put16(f + ri.l4off, port);
	if (!ri.v6)
		ref_put16(l3 + 10, ipc);
	if (use)
		ref_put16(l4_csum(f, &ri), udp && c == 0 ? 0xffff : c);
	return len;
}

static size_t nat_scratch(uint8_t *f, size_t len, int i)
{
	struct ref_info ri;

	cr_assert_eq(ref_parse(f, len, &ri), 0);
	memcpy(f + ri.l3off + (ri.v6 ? 8 : 12), ri.v6 ? nat_a6 : nat_a4,
	       ri.v6 ? 16 : 4);
	ref_put16(f + ri.l4off, 40000 + i);
	ref_fix_csums(f, len);
	return len;
}

/* A router's edit of the L3 header at @l3: TTL / hop limit - 1
 * (ip_decrease_ttl) and ECN CE (RFC 3168); no checksum update. */
static void router_edit(uint8_t *l3, bool v6)
{
	if (v6) {
		l3[7]--;
		l3[1] |= 0x30;
	} else {
		l3[8]--;
		l3[1] |= 3;
	}
}

/* A router, the IPv4 header checksum updated incrementally (RFC 1624). */
static size_t router_incremental(uint8_t *f, size_t len, int i)
{
	struct ref_info ri;
	uint8_t *l3;
	uint16_t o0, o8, c;

	cr_assert_eq(ref_parse(f, len, &ri), 0);
	l3 = f + ri.l3off;
	o0 = ref_get16(l3);
	o8 = ref_get16(l3 + 8);
	router_edit(l3, ri.v6);
	if (!ri.v6) {
		c = ref_update16(ref_get16(l3 + 10), o0, ref_get16(l3));
		c = ref_update16(c, o8, ref_get16(l3 + 8));
		ref_put16(l3 + 10, c);
	}
	return len;
}

/* A router, every checksum recomputed from scratch. */
static size_t router_scratch(uint8_t *f, size_t len, int i)
{
	struct ref_info ri;

	cr_assert_eq(ref_parse(f, len, &ri), 0);
	router_edit(f + ri.l3off, ri.v6);
	ref_fix_csums(f, len);
	return len;
}

/* An ALG: the first kept byte grows to two (odd i) or goes away (even i,
 * when there is one), shifting the token and the parked bytes by one, so
 * the parity of their L4 offset flips. Lengths updated, checksums
 * recomputed; the same edit on the original is the expected packet. */
static size_t alg_edit(uint8_t *f, size_t len, int i)
{
	struct ref_info ri;
	uint8_t *l3;

	cr_assert_eq(ref_parse(f, len, &ri), 0);
	if (i & 1 || !H.cfg.keep) {
		memmove(f + ri.payoff + 1, f + ri.payoff, len - ri.payoff);
		f[ri.payoff] = 0xa5;
		len++;
	} else {
		memmove(f + ri.payoff, f + ri.payoff + 1, len - ri.payoff - 1);
		len--;
	}
	l3 = f + ri.l3off;
	if (ri.v6)
		ref_put16(l3 + 4, len - ri.l3off - 40);
	else
		ref_put16(l3 + 2, len - ri.l3off);
	if (ri.proto == PKT_UDP)
		ref_put16(f + ri.l4off + 4, len - ri.l4off);
	ref_fix_csums(f, len);
	return len;
}

/* A VLAN tag pushed in front of the others (tc vlan push, a bridge). */
static size_t vlan_push(uint8_t *f, size_t len, int i)
{
	memmove(f + 16, f + 12, len - 12);
	ref_put16(f + 12, 0x8100);
	ref_put16(f + 14, 0x0123);
	return len + 4;
}

static size_t no_change(uint8_t *f, size_t len, int i)
{
	return len;
}

/* Padding or a trailer after the IP packet of the sliced frame (a short
 * frame padded to 60 B, or trailer bytes): the token is found through the
 * IP length and the spliced frame has no padding. */
static size_t pad_sliced(uint8_t *f, size_t len, int i)
{
	size_t n = len < 60 ? 60 - len : 6;

	memset(f + len, i & 1 ? 0xee : 0, n);
	return len + n;
}

static const struct change changes[] = {
	{ "NAT", nat_incremental, nat_scratch },
	{ "router", router_incremental, router_scratch },
	{ "ALG resizes kept payload", alg_edit, alg_edit },
	{ "VLAN push", vlan_push, vlan_push },
	{ "padding", pad_sliced, no_change },
};

Test(inflight, changes)
{
	uint8_t in[PKT_MAX], sliced[PKT_MAX], want[PKT_MAX];
	char name[256];
	int n = 0;

	for (size_t c = 0; c < ARRAY_SIZE(changes); c++)
		for (size_t k = 0; k < ARRAY_SIZE(keeps); k++) {
			h_configure(256, keeps[k], 8, 2);
			for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
				size_t len = pkt_build(&specs[i], in), wlen;
				uint32_t slen;
				const char *err;

				snprintf(name, sizeof(name), "%s, keep %u: %s",
					 changes[c].name, keeps[k],
					 pkt_name(&specs[i]));
				h_reset();
				x_slice_ok(name, in, len, h_part_base(), 1, NULL,
					   sliced, &slen);
				slen = changes[c].incremental(sliced, slen, i);
				err = ref_check(sliced, slen, true);
				cr_expect_null(err, "%s: changed sliced packet: %s",
					       name, err);
				memcpy(want, in, len);
				wlen = changes[c].scratch(want, len, i);
				x_splice_ok(name, sliced, slen, want, wlen);
				err = ref_check(want, wlen, false);
				cr_expect_null(err, "%s: expected packet: %s", name,
					       err);
				n++;
			}
		}
	cr_log_info("in-flight changes: %d cases", n);
}

/* A padded sliced header arriving from outside is still a replay. */
Test(inflight, padded_replay)
{
	struct nfsl_counters replayed = { .replayed = 1 };
	struct pkt_spec s = { .size = 300, .proto = PKT_UDP };
	uint8_t in[PKT_MAX], sliced[PKT_MAX];
	size_t len = pkt_build(&s, in);
	uint32_t slen;

	x_slice_ok("padded replay", in, len, h_part_base(), 1, NULL, sliced,
		   &slen);
	cr_assert_lt(slen, 60);
	slen = pad_sliced(sliced, slen, 0);
	x_slice_untouched("padded replay", sliced, slen, V_XDP_DROP, &replayed);
}
