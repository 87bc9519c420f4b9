// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Frames the slicer must not touch, a katran-style table: other protocols,
 * fragments, IPv6 routing / fragment headers, truncated or inconsistent
 * headers. Not sliced, counted unparsed, byte-identical.
 */
#include <errno.h>
#include <string.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "ref.h"

TestSuite(unparsed, .init = h_setup, .fini = h_teardown, .timeout = 30);

static size_t mk_arp(uint8_t *f)
{
	static const uint8_t arp[] = { 0, 1, 8, 0, 6, 4, 0, 1 };

	memset(f, 0, 60);
	memset(f, 0xff, 6);
	f[6] = 2;
	ref_put16(f + 12, 0x0806);
	memcpy(f + 14, arp, sizeof(arp));
	return 60;
}

static size_t mk(uint8_t *f, struct pkt_spec s)
{
	size_t len = pkt_build(&s, f);

	cr_assert_gt(len, 0);
	return len;
}

/* 600 B packets with extra fields */
#define V4UDP(...) \
	((struct pkt_spec){ .size = 600, .proto = PKT_UDP, __VA_ARGS__ })
#define V4TCP(...) \
	((struct pkt_spec){ .size = 600, .proto = PKT_TCP, __VA_ARGS__ })
#define V6UDP(...) \
	((struct pkt_spec){ .size = 600, .v6 = 1, .proto = PKT_UDP, __VA_ARGS__ })

static void fix_ip4(uint8_t *f, uint32_t l3)
{
	ref_put16(f + l3 + 10, 0);
	ref_put16(f + l3 + 10, ~ref_fold(ref_sum(f + l3, (f[l3] & 0xf) * 4, 0)));
}

static size_t mk_icmp(uint8_t *f)
{
	return mk(f, (struct pkt_spec){ .size = 600, .proto = PKT_ICMP });
}
static size_t mk_frag_mf(uint8_t *f) { return mk(f, V4UDP(.frag_off = 0x2000)); }
static size_t mk_frag_off(uint8_t *f) { return mk(f, V4UDP(.frag_off = 0x00b9)); }
static size_t mk_frag_last(uint8_t *f) { return mk(f, V4TCP(.frag_off = 0x0001)); }
static size_t mk_v6_frag(uint8_t *f)
{
	return mk(f, V6UDP(.n_ext = 1, .ext = { PKT_EXT_FRAG }));
}
static size_t mk_v6_routing(uint8_t *f)
{
	return mk(f, V6UDP(.n_ext = 1, .ext = { PKT_EXT_ROUTING }));
}
static size_t mk_v6_hbh_routing(uint8_t *f)
{
	return mk(f, V6UDP(.n_ext = 2, .ext = { PKT_EXT_HBH, PKT_EXT_ROUTING }));
}
/* Frames cut short: the first @n bytes of a good 600 B frame */
static size_t mk_cut(uint8_t *f, struct pkt_spec s, size_t n)
{
	mk(f, s);
	return n;
}

static size_t mk_eth_only(uint8_t *f) { return mk_cut(f, V4UDP(), 14); }
static size_t mk_vlan_cut(uint8_t *f) { return mk_cut(f, V4UDP(.vlans = 2), 20); }
static size_t mk_ip4_half(uint8_t *f) { return mk_cut(f, V4UDP(), 24); }
static size_t mk_ip6_half(uint8_t *f) { return mk_cut(f, V6UDP(), 34); }
static size_t mk_ip4_opts_cut(uint8_t *f)
{
	return mk_cut(f, V4UDP(.ip_opt = 40), 14 + 40);
}

/* TCP header cut by the end of the frame, IP length still 586 */
static size_t mk_tcp_cut_frame(uint8_t *f) { return mk_cut(f, V4TCP(), 44); }

/* TCP header cut by the IP length: 10 bytes of TCP */
static size_t mk_tcp_cut_len(uint8_t *f)
{
	mk(f, V4TCP());
	ref_put16(f + 16, 30);
	fix_ip4(f, 14);
	return 44;
}

static size_t mk_udp_cut_len(uint8_t *f)
{
	mk(f, V4UDP());
	ref_put16(f + 16, 24);
	fix_ip4(f, 14);
	return 38;
}

static size_t mk_ip_len_big(uint8_t *f)
{
	mk(f, V4UDP());
	ref_put16(f + 16, 600 - 14 + 10);
	fix_ip4(f, 14);
	return 600;
}

static size_t mk_ip6_len_big(uint8_t *f)
{
	mk(f, V6UDP());
	ref_put16(f + 18, 600 - 54 + 1);
	return 600;
}

static size_t mk_ip6_len_zero(uint8_t *f)
{
	mk(f, V6UDP());
	ref_put16(f + 18, 0); /* jumbogram */
	return 600;
}

static size_t mk_udp_len_short(uint8_t *f)
{
	mk(f, V4UDP());
	ref_put16(f + 34 + 4, 600 - 34 - 4);
	return 600;
}

static size_t mk_udp_len_long(uint8_t *f)
{
	mk(f, V6UDP());
	ref_put16(f + 54 + 4, 600 - 54 + 2);
	return 600;
}

static size_t mk_tcp_doff_big(uint8_t *f)
{
	mk(f, (struct pkt_spec){ .size = 14 + 20 + 40, .proto = PKT_TCP });
	f[34 + 12] = 15 << 4; /* 60 B header in a 40 B segment */
	return 74;
}

static size_t mk_tcp_doff_small(uint8_t *f)
{
	mk(f, V4TCP());
	f[34 + 12] = 4 << 4;
	return 600;
}

static size_t mk_ihl_small(uint8_t *f)
{
	mk(f, V4UDP());
	f[14] = 0x44;
	return 600;
}

static size_t mk_ihl_beyond(uint8_t *f)
{
	mk(f, (struct pkt_spec){ .size = 14 + 28 + 16, .proto = PKT_UDP });
	f[14] = 0x4f; /* 60 B header in a 44 B packet */
	fix_ip4(f, 14);
	return 14 + 28 + 16;
}

static size_t mk_ip_version(uint8_t *f)
{
	mk(f, V4UDP());
	f[14] = 0x65; /* IPv4 ethertype, version 6 */
	return 600;
}

static size_t mk_three_vlans(uint8_t *f)
{
	size_t len = mk(f, (struct pkt_spec){ .size = 596, .proto = PKT_UDP,
					      .vlans = 2 });

	memmove(f + 24, f + 20, len - 20); /* a third 802.1Q tag */
	ref_put16(f + 20, 0x8100);
	ref_put16(f + 22, 102);
	return len + 4;
}

static const struct raw_case {
	const char *name;
	size_t (*make)(uint8_t *f);
} unparsed_cases[] = {
	{ "ARP", mk_arp },
	{ "ICMP", mk_icmp },
	{ "IPv4 fragment, MF set", mk_frag_mf },
	{ "IPv4 fragment, offset 185", mk_frag_off },
	{ "IPv4 last fragment (TCP)", mk_frag_last },
	{ "IPv6 fragment header", mk_v6_frag },
	{ "IPv6 routing header", mk_v6_routing },
	{ "IPv6 hop-by-hop + routing header", mk_v6_hbh_routing },
	{ "Ethernet header only", mk_eth_only },
	{ "second VLAN tag cut", mk_vlan_cut },
	{ "IPv4 header cut in half", mk_ip4_half },
	{ "IPv6 header cut in half", mk_ip6_half },
	{ "IPv4 options cut", mk_ip4_opts_cut },
	{ "TCP header cut by the frame", mk_tcp_cut_frame },
	{ "TCP header cut by the IP length", mk_tcp_cut_len },
	{ "UDP header cut by the IP length", mk_udp_cut_len },
	{ "IPv4 total length > frame", mk_ip_len_big },
	{ "IPv6 payload length > frame", mk_ip6_len_big },
	{ "IPv6 payload length 0", mk_ip6_len_zero },
	{ "UDP length < IP payload", mk_udp_len_short },
	{ "UDP length > IP payload", mk_udp_len_long },
	{ "TCP data offset beyond the segment", mk_tcp_doff_big },
	{ "TCP data offset < 5", mk_tcp_doff_small },
	{ "IPv4 IHL < 5", mk_ihl_small },
	{ "IPv4 IHL beyond the packet", mk_ihl_beyond },
	{ "IPv4 ethertype, version 6", mk_ip_version },
	{ "three VLAN tags", mk_three_vlans },
};

/* Not sliced, counted unparsed, byte-identical; the splicer passes them on
 * without counting (they are not DSCP-63 packets it could own). */
Test(unparsed, table)
{
	struct nfsl_counters unparsed = { .unparsed = 1 }, none = { 0 };
	uint8_t in[PKT_MAX], out[PKT_MAX];
	uint32_t olen;
	int v;

	h_configure(0, 0, 8, 2); /* slice everything that parses */
	for (size_t i = 0; i < ARRAY_SIZE(unparsed_cases); i++) {
		const struct raw_case *c = &unparsed_cases[i];
		size_t len = c->make(in);

		x_slice_untouched(c->name, in, len, V_XDP_PASS, &unparsed);
		/* A tc test run refuses to build an skb whose network header
		 * is cut short (EINVAL); the stack would not send one. */
		if (h_splice_run(in, len, out, &olen, &v) == -EINVAL)
			continue;
		x_splice_untouched(c->name, in, len, V_TC_OK, &none);
	}
	/* Control: the same config slices a well-formed frame, into the
	 * first slot with generation 1: no frame above claimed a slot. */
	x_slice_ok("control", in, mk(in, V4UDP()), h_part_base(), 1, NULL, out,
		   &olen);
}
