/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Header parser for the slicer and the splicer: Ethernet, up to two VLAN
 * tags (802.1Q / 802.1ad), IPv4 with options, IPv6 with up to two
 * hop-by-hop / destination-options headers, then UDP or TCP.
 * Works on [data, data_end) in BPF (every access bounds-checked for the
 * verifier) and in user space.
 */
#ifndef NFSL_PARSE_H
#define NFSL_PARSE_H

#include "nfsl_compat.h"
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <linux/tcp.h>

/* Offsets are bytes from the start of the frame. */
struct nfsl_pkt {
	__u32 l3off;  /* IP header */
	__u32 l4off;  /* UDP/TCP header */
	__u32 payoff; /* first payload byte */
	__u32 l3end;  /* end of the IP packet; < frame length if padded */
	__u8 v6;      /* IPv6, else IPv4 */
	__u8 proto;   /* IPPROTO_UDP or IPPROTO_TCP */
	__u8 dscp;    /* DSCP of the IP header */
	__u8 ecn;     /* the two ECN bits beside it */
	__u16 vlan;   /* VID of the outer VLAN tag; 0: untagged */
};

struct nfsl_vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

#define NFSL_IP_MF 0x2000
#define NFSL_IP_OFFSET 0x1fff

NFSL_INLINE int nfsl_parse_l4(void *data, void *data_end, struct nfsl_pkt *p)
{
	__u32 l4len = p->l3end - p->l4off;

	if (p->proto == IPPROTO_UDP) {
		struct udphdr *udp = data + p->l4off;

		if ((void *)(udp + 1) > data_end)
			return -1;
		if (nfsl_ntohs(udp->len) != l4len)
			return -1;
		p->payoff = p->l4off + sizeof(*udp);
	} else if (p->proto == IPPROTO_TCP) {
		struct tcphdr *tcp = data + p->l4off;
		__u32 hl;

		if ((void *)(tcp + 1) > data_end)
			return -1;
		hl = tcp->doff * 4;
		if (hl < sizeof(*tcp) || hl > l4len)
			return -1;
		p->payoff = p->l4off + hl;
	} else {
		return -1;
	}
	return 0;
}

NFSL_INLINE int nfsl_parse_ipv4(void *data, void *data_end, struct nfsl_pkt *p)
{
	struct iphdr *iph = data + p->l3off;
	__u32 hl, tot;

	if ((void *)(iph + 1) > data_end || iph->version != 4)
		return -1;
	hl = iph->ihl * 4;
	tot = nfsl_ntohs(iph->tot_len);
	if (hl < sizeof(*iph) || tot < hl)
		return -1;
	if (iph->frag_off & nfsl_htons(NFSL_IP_MF | NFSL_IP_OFFSET))
		return -1; /* fragments carry no (whole) L4 header */
	p->v6 = 0;
	p->proto = iph->protocol;
	p->dscp = iph->tos >> 2;
	p->ecn = iph->tos & 3;
	p->l4off = p->l3off + hl;
	p->l3end = p->l3off + tot;
	return 0;
}

/* Extension headers skipped: hop-by-hop (0) and destination options (60).
 * Routing headers change the pseudo-header address, fragments split the
 * L4 header: those and all others are not sliced. */
NFSL_INLINE int nfsl_parse_ipv6(void *data, void *data_end, struct nfsl_pkt *p)
{
	struct ipv6hdr *ip6 = data + p->l3off;
	__u32 off = p->l3off + sizeof(*ip6);
	__u8 nh, tc;

	if ((void *)(ip6 + 1) > data_end || ip6->version != 6)
		return -1;
	if (ip6->payload_len == 0)
		return -1; /* jumbogram or empty */
	nh = ip6->nexthdr;
	p->v6 = 1;
	tc = (ip6->priority << 4) | (ip6->flow_lbl[0] >> 4);
	p->dscp = tc >> 2;
	p->ecn = tc & 3;
	p->l3end = off + nfsl_ntohs(ip6->payload_len);
	NFSL_UNROLL
	for (int i = 0; i < 2; i++) {
		__u8 *ext = data + off;

		if (nh != 0 && nh != 60)
			break;
		if ((void *)(ext + 2) > data_end)
			return -1;
		nh = ext[0];
		off += (ext[1] + 1) * 8;
	}
	p->proto = nh;
	p->l4off = off;
	return 0;
}

/*
 * nfsl_parse_l3 - the IP and L4 headers from @p->l3off on, the L3 protocol
 * being @proto (ETH_P_IP or ETH_P_IPV6, network order), in a frame of
 * @frame_len bytes whose first bytes are [data, data_end). Returns 0 or -1
 * as nfsl_parse_len. Alone it parses a packet of a device without an
 * Ethernet header (l3off 0: ipip, gre, wireguard, tun).
 */
NFSL_INLINE int nfsl_parse_l3(void *data, void *data_end, __u32 frame_len, __u16 proto,
			      struct nfsl_pkt *p)
{
	int err;

	if (proto == nfsl_htons(ETH_P_IP))
		err = nfsl_parse_ipv4(data, data_end, p);
	else if (proto == nfsl_htons(ETH_P_IPV6))
		err = nfsl_parse_ipv6(data, data_end, p);
	else
		return -1;
	if (err || p->l3end > frame_len || p->l4off > p->l3end)
		return -1;
	return nfsl_parse_l4(data, data_end, p);
}

/*
 * nfsl_parse_len - find the IP and L4 headers of a frame of @frame_len
 * bytes whose first bytes are [data, data_end): the headers must lie there,
 * the rest may not (a tc program sees a non-linear skb's linear part only;
 * the frame is skb->len long).
 * Returns 0 for a well-formed Ethernet/VLAN/IPv4|IPv6/UDP|TCP packet whose
 * headers all lie in [data, data_end) and whose IP and UDP lengths agree
 * with the frame; -1 for everything else (other protocols, fragments,
 * extension headers not handled, truncated or inconsistent headers, headers
 * beyond data_end).
 */
NFSL_INLINE int nfsl_parse_len(void *data, void *data_end, __u32 frame_len,
			       struct nfsl_pkt *p)
{
	struct ethhdr *eth = data;
	__u16 proto;

	if ((void *)(eth + 1) > data_end)
		return -1;
	proto = eth->h_proto;
	p->l3off = sizeof(*eth);
	NFSL_UNROLL
	for (int i = 0; i < 2; i++) {
		struct nfsl_vlan_hdr *vh = data + p->l3off;

		if (proto != nfsl_htons(ETH_P_8021Q) &&
		    proto != nfsl_htons(ETH_P_8021AD))
			break;
		if ((void *)(vh + 1) > data_end)
			return -1;
		if (!i)
			p->vlan = nfsl_ntohs(vh->tci) & 0xfff;
		proto = vh->encap_proto;
		p->l3off += sizeof(*vh);
	}
	return nfsl_parse_l3(data, data_end, frame_len, proto, p);
}

/* nfsl_parse - nfsl_parse_len of a linear frame [data, data_end). */
NFSL_INLINE int nfsl_parse(void *data, void *data_end, struct nfsl_pkt *p)
{
	return nfsl_parse_len(data, data_end, data_end - data, p);
}

#endif /* NFSL_PARSE_H */
