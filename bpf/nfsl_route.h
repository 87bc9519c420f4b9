/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Where will this packet leave? The slicer asks the kernel's FIB before it
 * slices, because a sliced header must only go where a splicer (or an NF
 * port, whose headers come back) waits for it: local delivery, a tunnel or
 * any interface outside the domain would receive a truncated packet
 * (issue #7, docs/format.md "Where a packet is sliced").
 *
 * The lookup is the kernel's own (bpf_fib_lookup, as the forwarding path
 * does it from the ingress interface, with fib rules), and also checks the
 * original length against the egress MTU, so packets the kernel would
 * fragment or answer with ICMP "fragmentation needed" / "packet too big"
 * stay whole and get exactly that treatment.
 *
 * What it cannot see: a DNAT rule (nftables prerouting) that changes the
 * destination after XDP. The lookup uses the pre-NAT destination: a packet
 * DNATed from a forwarded address to a local one would reach the local
 * socket sliced; one DNATed from a local address to a forwarded one passes
 * unsliced (safe, just not sliced). docs/format.md says so.
 */
#ifndef NFSL_ROUTE_H
#define NFSL_ROUTE_H

#include "nfsl_maps.h"
#include "nfsl_parse.h"

#define NFSL_AF_INET 2
#define NFSL_AF_INET6 10

enum nfsl_route {
	NFSL_ROUTE_SLICE, /* leaves through a domain interface or NF port */
	NFSL_ROUTE_L2,    /* not addressed to the interface's own MAC */
	NFSL_ROUTE_LOCAL, /* delivered locally, or not forwarded */
	NFSL_ROUTE_OTHER, /* leaves elsewhere, or is dropped by the route */
	NFSL_ROUTE_MTU,   /* larger than the egress MTU */
	NFSL_ROUTE_ERR,   /* the lookup itself failed */
};

/* Entry of @ifindex in the domain's interfaces and NF ports, or NULL. */
static __always_inline const struct nfsl_iface *
nfsl_iface_find(const struct nfsl_config *cfg, __u32 ifindex)
{
	for (__u32 i = 0; i < NFSL_MAX_IFACES; i++) {
		if (i >= cfg->nifaces)
			break;
		if (cfg->ifaces[i].ifindex == ifindex)
			return &cfg->ifaces[i];
	}
	return NULL;
}

/* Frames for another MAC (a macvlan upper, promiscuous mode, multicast)
 * are received by someone else, in a namespace our lookup does not see. */
static __always_inline bool nfsl_for_us(const struct ethhdr *eth,
					const struct nfsl_iface *in)
{
	return nfsl_load32(eth->h_dest) == nfsl_load32(in->mac) &&
	       *(const __u16 *)(eth->h_dest + 4) == *(const __u16 *)(in->mac + 4);
}

/*
 * nfsl_route - decide whether the packet @p of @ctx may be sliced.
 * Returns enum nfsl_route. Cost: one FIB lookup without the neighbour
 * table (BPF_FIB_LOOKUP_SKIP_NEIGH, Linux >= 6.3), paid only by packets
 * large enough to slice.
 */
static __always_inline int nfsl_route(struct xdp_md *ctx,
				      const struct nfsl_config *cfg,
				      const struct nfsl_pkt *p)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	const struct nfsl_iface *in;
	struct bpf_fib_lookup fib = {};
	__be16 *ports = data + p->l4off;
	long rc;

	in = nfsl_iface_find(cfg, ctx->ingress_ifindex);
	if (!in || (in->flags & NFSL_IF_NF_PORT))
		return NFSL_ROUTE_OTHER;
	if ((void *)((struct ethhdr *)data + 1) > data_end ||
	    !nfsl_for_us(data, in))
		return NFSL_ROUTE_L2;
	if ((void *)(ports + 2) > data_end)
		return NFSL_ROUTE_ERR;

	fib.ifindex = ctx->ingress_ifindex;
	fib.l4_protocol = p->proto;
	fib.sport = ports[0];
	fib.dport = ports[1];
	fib.tot_len = p->l3end - p->l3off;
	if (p->v6) {
		struct ipv6hdr *ip6 = data + p->l3off;

		if ((void *)(ip6 + 1) > data_end)
			return NFSL_ROUTE_ERR;
		fib.family = NFSL_AF_INET6;
		fib.flowinfo = *(__be32 *)ip6 & nfsl_htonl(0x0fffffff);
		__builtin_memcpy(fib.ipv6_src, &ip6->saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, &ip6->daddr, 16);
	} else {
		struct iphdr *iph = data + p->l3off;

		if ((void *)(iph + 1) > data_end)
			return NFSL_ROUTE_ERR;
		fib.family = NFSL_AF_INET;
		fib.tos = iph->tos;
		fib.ipv4_src = iph->saddr;
		fib.ipv4_dst = iph->daddr;
	}

	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), BPF_FIB_LOOKUP_SKIP_NEIGH);
	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS:
	case BPF_FIB_LKUP_RET_NO_NEIGH:
		return nfsl_iface_find(cfg, fib.ifindex) ? NFSL_ROUTE_SLICE
							 : NFSL_ROUTE_OTHER;
	case BPF_FIB_LKUP_RET_NOT_FWDED:
	case BPF_FIB_LKUP_RET_FWD_DISABLED:
		return NFSL_ROUTE_LOCAL;
	case BPF_FIB_LKUP_RET_FRAG_NEEDED:
		return NFSL_ROUTE_MTU;
	default:
		return rc < 0 ? NFSL_ROUTE_ERR : NFSL_ROUTE_OTHER;
	}
}

#endif /* NFSL_ROUTE_H */
