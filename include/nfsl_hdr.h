/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Header rewrites of slice and splice, on headers the caller has checked
 * lie inside the packet. Shared by the BPF engines and user space.
 */
#ifndef NFSL_HDR_H
#define NFSL_HDR_H

#include "nfsl_parse.h"
#include "nfsl_csum.h"

/*
 * nfsl_ip_rewrite - set the DSCP (the ECN bits stay) and the IP length.
 * @l3:    IPv4 (20 B checked) or IPv6 (40 B checked) header
 * @dscp:  6-bit DSCP
 * @l3len: new length of the whole IP packet, bytes
 * The IPv4 header checksum is updated incrementally (RFC 1624), so a
 * NAT's earlier rewrite of the addresses stays accounted for.
 */
NFSL_INLINE void nfsl_ip_rewrite(void *l3, bool v6, __u8 dscp, __u32 l3len)
{
	if (!v6) {
		struct iphdr *iph = l3;
		__u32 old, new;

		nfsl_memcpy(&old, iph, 4);
		iph->tos = (dscp << 2) | (iph->tos & 3);
		iph->tot_len = nfsl_htons(l3len);
		nfsl_memcpy(&new, iph, 4);
		iph->check = nfsl_csum_update32(iph->check, old, new);
	} else {
		struct ipv6hdr *ip6 = l3;

		/* Traffic class = priority (4 bits) : flow_lbl[0] high nibble;
		 * DSCP is its top 6 bits, ECN the next 2. */
		ip6->priority = dscp >> 2;
		ip6->flow_lbl[0] = ((dscp & 3) << 6) | (ip6->flow_lbl[0] & 0x3f);
		ip6->payload_len = nfsl_htons(l3len - sizeof(*ip6));
	}
}

/* Offset of the checksum field inside the L4 header. */
NFSL_INLINE __u32 nfsl_l4_csum_off(__u8 proto)
{
	return proto == IPPROTO_UDP ? offsetof(struct udphdr, check)
				    : offsetof(struct tcphdr, check);
}

/*
 * nfsl_l4_rewrite - write the L4 length (UDP only) and checksum.
 * @l4: UDP (8 B checked) or TCP (20 B checked) header
 */
NFSL_INLINE void nfsl_l4_rewrite(void *l4, __u8 proto, __u32 l4len, __u16 csum)
{
	if (proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;

		udp->len = nfsl_htons(l4len);
		udp->check = csum;
	} else {
		((struct tcphdr *)l4)->check = csum;
	}
}

/* Sum of the pseudo-header without its length word (RFC 768/793/8200),
 * in registers straight from the packet; and the IPv4 header checksum
 * (0 for IPv6). */
NFSL_INLINE int nfsl_pseudo_sum(void *data, void *data_end,
				  const struct nfsl_pkt *p, __u32 *sum, __u16 *ip_csum)
{
	__u32 s = nfsl_htons(p->proto);

	if (p->v6) {
		struct ipv6hdr *ip6 = data + p->l3off;

		if ((void *)(ip6 + 1) > data_end)
			return -1;
		*sum = nfsl_csum_words(&ip6->saddr, 8, s);
		*ip_csum = 0;
	} else {
		struct iphdr *iph = data + p->l3off;

		if ((void *)(iph + 1) > data_end)
			return -1;
		*sum = nfsl_csum_words(&iph->saddr, 2, s);
		*ip_csum = iph->check;
	}
	return 0;
}

#endif /* NFSL_HDR_H */
