// SPDX-License-Identifier: GPL-2.0
/*
 * Steering decisions shared by bpf/steer.bpf.c and userspace/lib/xsk's shRing
 * dispatch (include/nfsl_flow.h, include/nfsl_steer.h): the flow hash is
 * symmetric, picks stay in range and spread, and the NAT port ranges cover
 * every port from the start exactly once.
 */
#include <arpa/inet.h>
#include <string.h>
#include <criterion/criterion.h>

#include "nfsl_steer.h"

#define FRAME 128

/* Ethernet + IPv4 or IPv6 + UDP (@proto: 17) or TCP, in @f. */
static void build(__u8 *f, bool v6, __u8 proto, __u32 a, __u32 b, __u16 sp, __u16 dp)
{
	__u8 *l3 = f + 14, *l4;

	memset(f, 0, FRAME);
	f[12] = v6 ? 0x86 : 0x08;
	f[13] = v6 ? 0xdd : 0x00;
	if (v6) {
		l3[0] = 0x60;
		*(__u16 *)(l3 + 4) = htons(FRAME - 14 - 40);
		l3[6] = proto;
		l3[7] = 64;
		memcpy(l3 + 8 + 12, &a, 4);
		memcpy(l3 + 24 + 12, &b, 4);
		l4 = l3 + 40;
	} else {
		l3[0] = 0x45;
		*(__u16 *)(l3 + 2) = htons(FRAME - 14);
		l3[8] = 64;
		l3[9] = proto;
		memcpy(l3 + 12, &a, 4);
		memcpy(l3 + 16, &b, 4);
		l4 = l3 + 20;
	}
	*(__u16 *)l4 = htons(sp);
	*(__u16 *)(l4 + 2) = htons(dp);
	if (proto == IPPROTO_UDP)
		*(__u16 *)(l4 + 4) = htons(FRAME - (l4 - f));
	else
		l4[12] = 5 << 4;
}

static __u32 hash_of(__u8 *f)
{
	struct nfsl_pkt p = {};

	cr_assert_eq(nfsl_parse(f, f + FRAME, &p), 0);
	return nfsl_flow_hash(f, f + FRAME, &p);
}

Test(flow, symmetric_and_spread)
{
	__u32 count[4] = {};
	__u8 f[FRAME], r[FRAME];

	for (int i = 0; i < 4000; i++) {
		bool v6 = i & 1;
		__u8 proto = i & 2 ? IPPROTO_TCP : IPPROTO_UDP;
		__u32 a = htonl(0x0a000000 + i * 7919), b = htonl(0xc0a80000 + i * 104729);
		__u16 sp = 1024 + i * 31, dp = 80 + i % 3;

		build(f, v6, proto, a, b, sp, dp);
		build(r, v6, proto, b, a, dp, sp); /* the reply */
		cr_assert_eq(hash_of(f), hash_of(r), "case %d: reply hashes elsewhere", i);
		count[nfsl_flow_pick(hash_of(f), 4)]++;
	}
	/* 4000 flows over 4 workers: each gets 1000 +- a generous 20% */
	for (int w = 0; w < 4; w++)
		cr_expect(count[w] > 800 && count[w] < 1200, "worker %d got %u of 4000", w, count[w]);
}

Test(flow, port_ranges)
{
	for (__u32 n = 1; n <= 8; n++) {
		for (__u32 start = 0; start <= 60000; start += 6000) {
			__u32 last = 0;

			for (__u32 port = 0; port < 65536; port++) {
				__u32 o = nfsl_port_owner(port, start, n);

				cr_assert_lt(o, n);
				if (port < start) {
					cr_assert_eq(o, 0);
					continue;
				}
				/* ranges in order, each owner one contiguous range */
				cr_assert(o == last || o == last + 1, "n %u start %u port %u: %u after %u",
					  n, start, port, o, last);
				last = o;
			}
			cr_assert_eq(last, n - 1, "n %u start %u: last owner %u", n, start, last);
		}
	}
}

Test(flow, steer_pick_by_mode)
{
	__u8 f[FRAME];
	struct nfsl_pkt p = {};

	build(f, false, IPPROTO_UDP, htonl(0x01020304), htonl(0x05060708), 5000, 40000);
	cr_assert_eq(nfsl_parse(f, f + FRAME, &p), 0);
	cr_assert_eq(nfsl_steer_pick(f, f + FRAME, &p, NFSL_STEER_DPORT, 1024, 4),
		     nfsl_port_owner(40000, 1024, 4));
	cr_assert_eq(nfsl_steer_pick(f, f + FRAME, &p, NFSL_STEER_FLOW, 0, 4),
		     nfsl_flow_pick(nfsl_flow_hash(f, f + FRAME, &p), 4));
}
