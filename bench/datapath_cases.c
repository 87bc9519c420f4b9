// SPDX-License-Identifier: GPL-2.0
/*
 * The cases of nfslice-bench-datapath (bench/datapath.h): one packet per
 * size and protocol, and whether the slicer slices it (a test run on the
 * domain datapath_setup.c made).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <netinet/in.h>
#include <bpf/libbpf.h>

#include "datapath.h"
#include "nfsl_csum.h"
#include "util/util.h"

#include "slicer.skel.h"

/* Ethernet / IPv4 (@c->v6: IPv6) / UDP or TCP frame of @size bytes with
 * valid checksums and a payload pattern, as it would arrive from a wire. */
static void build_pkt(struct bcase *c)
{
	static const __u8 saddr6[16] = { 0xfd, 0, 0, 0x18, [15] = 1 };
	static const __u8 daddr6[16] = { 0xfd, 0, 0, 0x18, [15] = 2 };
	struct ethhdr *eth = (struct ethhdr *)c->pkt;
	struct iphdr *iph = (struct iphdr *)(eth + 1);
	struct ipv6hdr *ip6 = (struct ipv6hdr *)(eth + 1);
	unsigned int l3hdr = c->v6 ? sizeof(*ip6) : sizeof(*iph);
	void *l4 = (__u8 *)(eth + 1) + l3hdr;
	unsigned int l4hdr =
		c->proto == IPPROTO_UDP ? sizeof(struct udphdr) : sizeof(struct tcphdr);
	unsigned int l4len = c->size - sizeof(*eth) - l3hdr, i;
	__u16 *csum;
	__u32 s;

	memset(c->pkt, 0, sizeof(c->pkt));
	memcpy(eth->h_dest, bench_mac_in, ETH_ALEN);
	memcpy(eth->h_source, "\x02\x00\x00\x00\x00\x01", ETH_ALEN);
	if (c->v6) {
		eth->h_proto = htons(ETH_P_IPV6);
		ip6->version = 6;
		ip6->payload_len = htons(l4len);
		ip6->nexthdr = c->proto;
		ip6->hop_limit = 64;
		memcpy(&ip6->saddr, saddr6, 16); /* fd00:18::1, ULA */
		memcpy(&ip6->daddr, daddr6, 16);
		s = nfsl_csum_bytes(&ip6->saddr, 32, 0);
	} else {
		eth->h_proto = htons(ETH_P_IP);
		iph->version = 4;
		iph->ihl = 5;
		iph->tot_len = htons(c->size - sizeof(*eth));
		iph->id = htons(0x1234);
		iph->frag_off = htons(0x4000); /* DF */
		iph->ttl = 64;
		iph->protocol = c->proto;
		iph->saddr = htonl(0xc6120001); /* 198.18.0.1, RFC 2544 range */
		iph->daddr = htonl(0xc6120002);
		iph->check = ~nfsl_csum_fold(nfsl_csum_bytes(iph, sizeof(*iph), 0));
		s = nfsl_csum_bytes(&iph->saddr, 8, 0);
	}

	if (c->proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;

		udp->source = htons(4000);
		udp->dest = htons(5000);
		udp->len = htons(l4len);
		csum = &udp->check;
	} else {
		struct tcphdr *tcp = l4;

		tcp->source = htons(4000);
		tcp->dest = htons(5000);
		tcp->seq = htonl(1000);
		tcp->ack_seq = htonl(2000);
		tcp->doff = 5;
		tcp->ack = 1;
		tcp->psh = 1;
		tcp->window = htons(65535);
		csum = &tcp->check;
	}
	c->payoff = sizeof(*eth) + l3hdr + l4hdr;
	for (i = c->payoff; i < c->size; i++)
		c->pkt[i] = (__u8)(i * 7 + 3);

	s = nfsl_csum_add(s, htons(c->proto));
	s = nfsl_csum_add(s, htons(l4len));
	s = nfsl_csum_bytes(l4, l4len, s);
	*csum = nfsl_csum_final(~nfsl_csum_fold(s), c->proto == IPPROTO_UDP);
}

/* Prepare the packet of every case and find out which ones get sliced. */
int dp_setup_cases(struct bench *b)
{
	unsigned int i, p, k, n = 0;
	struct sliced s;
	int err;

	b->ncases = b->o.nsizes * (b->o.udp + b->o.tcp);
	b->cases = calloc(b->ncases, sizeof(*b->cases));
	if (!b->cases)
		return -ENOMEM;
	for (i = 0; i < b->o.nsizes; i++) {
		for (p = 0; p < 2; p++) {
			struct bcase *c;
			unsigned int len;
			__u32 ret;

			if ((p == 0 && !b->o.udp) || (p == 1 && !b->o.tcp))
				continue;
			c = &b->cases[n++];
			c->size = b->o.sizes[i];
			c->proto = p == 0 ? IPPROTO_UDP : IPPROTO_TCP;
			c->v6 = b->o.v6;
			build_pkt(c);
			for (k = 0; k < B_NR; k++) {
				c->raw[k] = calloc(b->o.rounds, sizeof(double));
				c->dur[k] = calloc(b->o.rounds, sizeof(double));
				if (!c->raw[k] || !c->dur[k])
					return -ENOMEM;
			}
			err = dp_run_once(b, HOOK_XDP, bpf_program__fd(b->sl->progs.nfsl_slicer), c->pkt,
				       c->size, &len, &ret, NULL);
			if (err) {
				pr_err("slicer test run failed: %s", strerror(-err));
				return err;
			}
			c->sliced = len < c->size;
			dp_release_all(b);
			/* tc-empty / tc-parse run on what the splicer sees. */
			if (c->sliced) {
				err = dp_slice_one(b, c, &s);
				if (err)
					return err;
				dp_release_sliced(b, &s);
				memcpy(c->tc_in, s.buf, s.len);
				c->tc_in_len = s.len;
			} else {
				c->tc_in_len = c->size < SLICED_BUF ? c->size : SLICED_BUF;
				memcpy(c->tc_in, c->pkt, c->tc_in_len);
			}
		}
	}
	return 0;
}
