/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Symmetric flow hash: both directions of a connection get the same value,
 * so steering by it sends a flow's requests and replies to the same worker
 * (what a NAT or a stateful firewall on that worker needs; RSS with a
 * symmetric key does the same on a NIC). Used by the XDP steering program
 * (bpf/steer.bpf.c) and by shRing's software dispatch in userspace/lib/xsk, so both
 * pick the same worker for a packet.
 *
 * The 5-tuple is folded order-independently (addresses XORed, ports
 * XORed) and mixed with murmur3's 32-bit finaliser. Not keyed: it spreads
 * load, it does not defend against an adversary choosing tuples.
 */
#ifndef NFSL_FLOW_H
#define NFSL_FLOW_H

#include "nfsl_parse.h"

NFSL_INLINE __u32 nfsl_fmix32(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

/*
 * nfsl_flow_hash - symmetric hash of the packet @p parsed from
 * [@data, @data_end) by nfsl_parse(). Returns 0 when the headers are out
 * of bounds (never for a packet nfsl_parse() accepted).
 */
NFSL_INLINE __u32 nfsl_flow_hash(void *data, void *data_end,
				 const struct nfsl_pkt *p)
{
	__u32 h = p->proto;
	__be16 *ports = data + p->l4off;

	if ((void *)(ports + 2) > data_end)
		return 0;
	if (p->v6) {
		struct ipv6hdr *ip6 = data + p->l3off;

		if ((void *)(ip6 + 1) > data_end)
			return 0;
		const __u8 *sa = (const __u8 *)&ip6->saddr;
		const __u8 *da = (const __u8 *)&ip6->daddr;

		NFSL_UNROLL
		for (int i = 0; i < 4; i++)
			h = nfsl_fmix32(h ^ nfsl_load32(sa + 4 * i) ^
					nfsl_load32(da + 4 * i));
	} else {
		struct iphdr *iph = data + p->l3off;

		if ((void *)(iph + 1) > data_end)
			return 0;
		h = nfsl_fmix32(h ^ iph->saddr ^ iph->daddr);
	}
	return nfsl_fmix32(h ^ (__u32)(ports[0] ^ ports[1]));
}

/* Worker in [0, @n) for hash @h: multiply-shift, no division. */
NFSL_INLINE __u32 nfsl_flow_pick(__u32 h, __u32 n)
{
	return (__u32)(((__u64)h * n) >> 32);
}

/*
 * nfsl_port_owner - the worker in [0, @n) that owns port @port when the
 * ports from @start up are split into @n equal ranges, in order (the last
 * one takes the remainder): a NAT's external ports per worker, so the
 * replies of a translated flow, steered by their destination port, reach
 * the worker holding it (issue 9). Ports below @start belong to no flow:
 * worker 0 (which drops them as unsolicited).
 */
NFSL_INLINE __u32 nfsl_port_owner(__u16 port, __u16 start, __u32 n)
{
	__u32 range;

	if (port < start || n <= 1)
		return 0;
	range = (65536u - start) / n;
	if (!range)
		return 0;
	return (port - start) / range < n ? (port - start) / range : n - 1;
}

#endif /* NFSL_FLOW_H */
