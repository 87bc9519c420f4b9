// SPDX-License-Identifier: GPL-2.0
/*
 * Synthetic frames: Ethernet + IPv4 (DF, TTL 64) or IPv6 (hop limit 64) +
 * UDP or TCP (ACK|PSH, window 65535) + a zero payload. For every frame size
 * the length fields, the IPv4 header checksum and the ones' complement sum
 * of the L4 pseudo header and segment (source port, checksum and stamp
 * zero) go into a struct pktgen_tmpl; the frame program adds the source
 * port and the stamp to that sum per frame (include/nfsl_csum.h).
 */
#include <stdio.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include "nfsl_csum.h"
#include "pg.h"

/* Bytes of Ethernet + IP + L4 header. */
__u32 pg_hdr_len(const struct pg_pkt *pkt)
{
	return ETH_HLEN + (pkt->ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) +
	       (pkt->tcp ? sizeof(struct tcphdr) : sizeof(struct udphdr));
}

/* Sum of the pseudo header without its length word. */
static __u32 pseudo_sum(const struct pg_pkt *pkt)
{
	__u8 proto = pkt->tcp ? IPPROTO_TCP : IPPROTO_UDP;
	__u32 s;

	if (pkt->ipv6) {
		s = nfsl_csum_bytes(&pkt->src6, 16, 0);
		s = nfsl_csum_bytes(&pkt->dst6, 16, s);
	} else {
		s = nfsl_csum_bytes(&pkt->src4, 4, 0);
		s = nfsl_csum_bytes(&pkt->dst4, 4, s);
	}
	return nfsl_csum_add(s, htons(proto));
}

/*
 * pg_frame_build - the frame of @len bytes into @buf, source port of the
 * first flow, no stamp, checksums complete; its per-size fields into @t.
 * @len must hold the headers (pg_hdr_len).
 */
void pg_frame_build(const struct pg_pkt *pkt, __u32 len, __u8 *buf,
		    struct pktgen_tmpl *t)
{
	struct ethhdr *eth = (struct ethhdr *)buf;
	__u32 l3 = ETH_HLEN, l4, l4len;
	__u16 *csum;
	__u32 sum;

	memset(buf, 0, len);
	memset(t, 0, sizeof(*t));
	memcpy(eth->h_dest, pkt->dst_mac, 6);
	memcpy(eth->h_source, pkt->src_mac, 6);
	if (pkt->ipv6) {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)(buf + l3);

		eth->h_proto = htons(ETH_P_IPV6);
		l4 = l3 + sizeof(*ip6);
		ip6->version = 6;
		ip6->payload_len = htons(len - l4);
		ip6->nexthdr = pkt->tcp ? IPPROTO_TCP : IPPROTO_UDP;
		ip6->hop_limit = 64;
		ip6->saddr = pkt->src6;
		ip6->daddr = pkt->dst6;
		t->l3_len = ip6->payload_len;
	} else {
		struct iphdr *iph = (struct iphdr *)(buf + l3);

		eth->h_proto = htons(ETH_P_IP);
		l4 = l3 + sizeof(*iph);
		iph->version = 4;
		iph->ihl = 5;
		iph->tot_len = htons(len - l3);
		iph->frag_off = htons(0x4000); /* DF */
		iph->ttl = 64;
		iph->protocol = pkt->tcp ? IPPROTO_TCP : IPPROTO_UDP;
		iph->saddr = pkt->src4.s_addr;
		iph->daddr = pkt->dst4.s_addr;
		iph->check = ~nfsl_csum_fold(nfsl_csum_bytes(iph, sizeof(*iph), 0));
		t->l3_len = iph->tot_len;
		t->ip_csum = iph->check;
	}
	l4len = len - l4;
	if (pkt->tcp) {
		struct tcphdr *tcp = (struct tcphdr *)(buf + l4);

		tcp->dest = htons(pkt->dport);
		tcp->seq = htonl(1);
		tcp->ack_seq = htonl(1);
		tcp->doff = sizeof(*tcp) / 4;
		tcp->ack = 1;
		tcp->psh = 1;
		tcp->window = htons(65535);
		csum = &tcp->check;
	} else {
		struct udphdr *udp = (struct udphdr *)(buf + l4);

		udp->dest = htons(pkt->dport);
		udp->len = htons(l4len);
		t->udp_len = udp->len;
		csum = &udp->check;
	}
	/* Source port and checksum still 0: the sum the program starts from. */
	sum = nfsl_csum_add(pseudo_sum(pkt), htons(l4len));
	sum = nfsl_csum_bytes(buf + l4, l4len, sum);
	t->len = len;
	t->l4_sum = sum;

	*(__u16 *)(buf + l4) = htons(pkt->sport);
	sum = nfsl_csum_add(sum, htons(pkt->sport));
	*csum = nfsl_csum_final(~nfsl_csum_fold(sum), !pkt->tcp);
}
