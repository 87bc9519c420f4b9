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
 * NAT changes the destination after XDP, in conntrack at prerouting. A
 * packet the FIB would deliver locally (the reply to a masqueraded flow, or
 * one for a DNAT rule's local address) is looked up in conntrack
 * (bpf_xdp_ct_lookup): if its connection is NATed, the FIB is asked again
 * for the address the kernel will really send it to. What the lookup cannot
 * see: the first packet of a DNATed connection (no entry yet: passes
 * unsliced, safe), and a DNAT from a forwarded address to a local one (the
 * FIB says forward, so it is sliced), like policy routing by a mark set
 * after XDP or a route changed since.
 *
 * So the verdict is a hint: what it misjudges is stopped where it would
 * leave, by the guards (bpf/guard.bpf.c: TCX egress of every other
 * interface, netfilter LOCAL_IN), dropped and counted escaped_dropped.
 * A wrong verdict costs an unsliced packet or a counted drop, never a
 * truncated one (docs/design.md "Where a packet is sliced").
 */
#ifndef NFSL_ROUTE_H
#define NFSL_ROUTE_H

#include <linux/netfilter.h>

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

/* Conntrack kfuncs (net/netfilter/nf_conntrack_bpf.c, Linux >= 6.0) and
 * the few nf_conn fields read, relocated by CO-RE against the kernel's BTF. */
struct bpf_ct_opts___nfsl {
	__s32 netns_id;
	__s32 error;
	__u8 l4proto;
	__u8 dir;
	__u8 reserved[2];
};

struct nf_conntrack_man {
	union nf_inet_addr u3;
} __attribute__((preserve_access_index));

struct nf_conntrack_tuple {
	struct nf_conntrack_man src;
} __attribute__((preserve_access_index));

struct nf_conntrack_tuple_hash {
	struct nf_conntrack_tuple tuple;
} __attribute__((preserve_access_index));

struct nf_conn {
	unsigned long status;
	struct nf_conntrack_tuple_hash tuplehash[2];
} __attribute__((preserve_access_index));

extern struct nf_conn *bpf_xdp_ct_lookup(struct xdp_md *ctx,
					 struct bpf_sock_tuple *tuple, __u32 tuple__sz,
					 struct bpf_ct_opts___nfsl *opts,
					 __u32 opts__sz) __ksym __weak;
extern void bpf_ct_release(struct nf_conn *ct) __ksym __weak;

/* 0: no FIB and no conntrack lookup, every frame of a domain interface
 * for its own MAC is sliced: the benchmark's slicer_nofib
 * (bench/bpf/slicer_nofib.bpf.c), which prices the lookup; never attach
 * such a slicer. */
#ifndef NFSL_ROUTE_FIB
#define NFSL_ROUTE_FIB 1
#endif

#define NFSL_IPS_NAT_MASK 0x30 /* IPS_SRC_NAT | IPS_DST_NAT */

/*
 * nfsl_ct_nat_dst - where conntrack's NAT will send the packet of @fib:
 * the source address of the connection's other direction. Returns true
 * and rewrites @fib's destination when the connection is NATed.
 */
static __always_inline bool nfsl_ct_nat_dst(struct xdp_md *ctx,
					    struct bpf_fib_lookup *fib)
{
	struct bpf_ct_opts___nfsl opts = { .netns_id = -1, .l4proto = fib->l4_protocol };
	struct bpf_sock_tuple t = {};
	struct nf_conn *ct;
	bool nat = false;
	__u32 size;

	if (!bpf_xdp_ct_lookup || !bpf_ct_release)
		return false; /* kernel without conntrack kfuncs */
	if (fib->family == NFSL_AF_INET) {
		t.ipv4.saddr = fib->ipv4_src;
		t.ipv4.daddr = fib->ipv4_dst;
		t.ipv4.sport = fib->sport;
		t.ipv4.dport = fib->dport;
		size = sizeof(t.ipv4);
	} else {
		__builtin_memcpy(t.ipv6.saddr, fib->ipv6_src, 16);
		__builtin_memcpy(t.ipv6.daddr, fib->ipv6_dst, 16);
		t.ipv6.sport = fib->sport;
		t.ipv6.dport = fib->dport;
		size = sizeof(t.ipv6);
	}
	ct = bpf_xdp_ct_lookup(ctx, &t, size, &opts, sizeof(opts));
	if (!ct)
		return false;
	if (ct->status & NFSL_IPS_NAT_MASK) {
		/* opts.dir: the direction the packet's tuple matched */
		union nf_inet_addr a = opts.dir ? ct->tuplehash[0].tuple.src.u3
						: ct->tuplehash[1].tuple.src.u3;

		if (fib->family == NFSL_AF_INET)
			fib->ipv4_dst = a.ip;
		else
			__builtin_memcpy(fib->ipv6_dst, a.ip6, 16);
		nat = true;
	}
	bpf_ct_release(ct);
	return nat;
}

/*
 * nfsl_iface_idx - index of @ifindex in the domain's interfaces and NF
 * ports (cfg->ifaces[]), or NFSL_MAX_IFACES when it is none of them: a
 * linear search of up to cfg->nifaces entries. The slicer searches its
 * ingress once per packet and hands the index on (nfsl_route,
 * nfsl_tenant_of). An index, not the entry: a pointer out of the loop
 * would multiply the verifier's states by the loop's exits (it hit the
 * 1M instruction limit), an index the verifier need not know precisely
 * does not.
 */
static __always_inline __u32 nfsl_iface_idx(const struct nfsl_config *cfg, __u32 ifindex)
{
	for (__u32 i = 0; i < NFSL_MAX_IFACES; i++) {
		if (i >= cfg->nifaces)
			break;
		if (cfg->ifaces[i].ifindex == ifindex)
			return i;
	}
	return NFSL_MAX_IFACES;
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
 * nfsl_route - decide whether the packet @p of @ctx, which entered on the
 * domain's interface cfg->ifaces[@in] (nfsl_iface_idx of its ingress),
 * may be sliced; when it may, *@dst is the store partition of its egress
 * (nfsl_iface.part). Returns enum nfsl_route. Cost: one FIB lookup without the neighbour
 * table (BPF_FIB_LOOKUP_SKIP_NEIGH, Linux >= 6.3), paid only by packets
 * large enough to slice.
 */
static __always_inline int nfsl_route(struct xdp_md *ctx,
				      const struct nfsl_config *cfg,
				      const struct nfsl_pkt *p, __u32 in, __u32 *dst)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct bpf_fib_lookup fib = {};
	__be16 *ports = data + p->l4off;
	__u32 out;
	long rc;

	if (in >= NFSL_MAX_IFACES || (cfg->ifaces[in].flags & NFSL_IF_NF_PORT))
		return NFSL_ROUTE_OTHER;
	if ((void *)((struct ethhdr *)data + 1) > data_end ||
	    !nfsl_for_us(data, &cfg->ifaces[in]))
		return NFSL_ROUTE_L2;
	if (!NFSL_ROUTE_FIB)
		return NFSL_ROUTE_SLICE;
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
	if (rc == BPF_FIB_LKUP_RET_NOT_FWDED && nfsl_ct_nat_dst(ctx, &fib)) {
		fib.ifindex = ctx->ingress_ifindex;
		rc = bpf_fib_lookup(ctx, &fib, sizeof(fib),
				    BPF_FIB_LOOKUP_SKIP_NEIGH);
	}
	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS:
	case BPF_FIB_LKUP_RET_NO_NEIGH:
		out = nfsl_iface_idx(cfg, fib.ifindex);
		if (out >= NFSL_MAX_IFACES)
			return NFSL_ROUTE_OTHER;
		*dst = cfg->ifaces[out].part;
		return NFSL_ROUTE_SLICE;
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
