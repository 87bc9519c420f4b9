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

/* Frames for another MAC (a macvlan upper, promiscuous mode, multicast)
 * are received by someone else, in a namespace our lookup does not see. */
static __always_inline bool nfsl_for_us(const struct ethhdr *eth,
					const struct nfsl_iface *in)
{
	return nfsl_load32(eth->h_dest) == nfsl_load32(in->mac) &&
	       *(const __u16 *)(eth->h_dest + 4) == *(const __u16 *)(in->mac + 4);
}

/*
 * nfsl_route_key - fill the lookup input of the packet @p of @ctx into
 * @fib: ingress, family, L4 protocol and ports (fib rules may match
 * sport/dport/ipproto), tos (IPv4) or flowclass and flow label (IPv6),
 * addresses. tot_len stays 0: it is no part of the route, only of its MTU
 * check. Returns 0, or -1 when the headers are out of the frame.
 */
static __always_inline int nfsl_route_key(struct xdp_md *ctx, const struct nfsl_pkt *p,
					  struct bpf_fib_lookup *fib)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__be16 *ports = data + p->l4off;

	if ((void *)(ports + 2) > data_end)
		return -1;
	fib->ifindex = ctx->ingress_ifindex;
	fib->l4_protocol = p->proto;
	fib->sport = ports[0];
	fib->dport = ports[1];
	if (p->v6) {
		struct ipv6hdr *ip6 = data + p->l3off;

		if ((void *)(ip6 + 1) > data_end)
			return -1;
		fib->family = NFSL_AF_INET6;
		fib->flowinfo = *(__be32 *)ip6 & nfsl_htonl(0x0fffffff);
		__builtin_memcpy(fib->ipv6_src, &ip6->saddr, 16);
		__builtin_memcpy(fib->ipv6_dst, &ip6->daddr, 16);
	} else {
		struct iphdr *iph = data + p->l3off;

		if ((void *)(iph + 1) > data_end)
			return -1;
		fib->family = NFSL_AF_INET;
		fib->tos = iph->tos;
		fib->ipv4_src = iph->saddr;
		fib->ipv4_dst = iph->daddr;
	}
	return 0;
}

/* What a lookup decided besides its verdict: kept by the verdict cache. */
struct nfsl_route_out {
	__u32 part; /* store partition of the egress (NFSL_ROUTE_SLICE) */
	__u32 mtu;  /* egress MTU the kernel checked, 0: none was checked */
	__u32 nat;  /* conntrack's NAT rewrote the destination first */
};

/*
 * nfsl_route_lookup - the kernel's verdict on @fib (nfsl_route_key's
 * input, tot_len set): one FIB lookup without the neighbour table
 * (BPF_FIB_LOOKUP_SKIP_NEIGH, Linux >= 6.3), a conntrack lookup and a
 * second FIB lookup when the first says local. Returns enum nfsl_route,
 * with @o filled.
 */
static __always_inline int nfsl_route_lookup(struct xdp_md *ctx, const struct nfsl_config *cfg,
					     struct bpf_fib_lookup *fib, struct nfsl_route_out *o)
{
	__u32 out;
	long rc;

	rc = bpf_fib_lookup(ctx, fib, sizeof(*fib), BPF_FIB_LOOKUP_SKIP_NEIGH);
	if (rc == BPF_FIB_LKUP_RET_NOT_FWDED && nfsl_ct_nat_dst(ctx, fib)) {
		o->nat = 1;
		fib->ifindex = ctx->ingress_ifindex;
		rc = bpf_fib_lookup(ctx, fib, sizeof(*fib), BPF_FIB_LOOKUP_SKIP_NEIGH);
	}
	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS:
	case BPF_FIB_LKUP_RET_NO_NEIGH:
		o->mtu = fib->mtu_result; /* the MTU checked (Linux >= 5.12) */
		out = nfsl_iface_idx(cfg, fib->ifindex);
		if (out >= NFSL_MAX_IFACES)
			return NFSL_ROUTE_OTHER;
		o->part = cfg->ifaces[out].part;
		return NFSL_ROUTE_SLICE;
	case BPF_FIB_LKUP_RET_NOT_FWDED:
	case BPF_FIB_LKUP_RET_FWD_DISABLED:
		return NFSL_ROUTE_LOCAL;
	case BPF_FIB_LKUP_RET_FRAG_NEEDED:
		o->mtu = fib->mtu_result;
		return NFSL_ROUTE_MTU;
	default:
		return rc < 0 ? NFSL_ROUTE_ERR : NFSL_ROUTE_OTHER;
	}
}

/*
 * The route verdict cache (issue 19 item 2; docs/format.md "Where a packet
 * is sliced"): per CPU, direct-mapped, NFSL_RC_ENTRIES entries indexed by
 * a hash of the lookup input, the whole input compared on a hit. An array
 * because its lookup is inlined by the verifier (a hash map costs a
 * helper call and its own hashing: docs/benchmarks.md "Route verdict
 * cache"); per CPU so that an entry is never read half written. The key
 * is struct bpf_fib_lookup's input words as nfsl_route_key fills them
 * (bytes 0-47, tot_len 0): everything XDP's FIB lookup takes. XDP's
 * bpf_fib_lookup has no mark (the skb's mark does not exist yet; only
 * BPF_FIB_LOOKUP_MARK of tc programs, Linux >= 6.10, takes one), so
 * mark-based rules never match here with or without the cache.
 * An entry holds until user space bumps the domain's route generation
 * (nfsl_route_gen, pinned "route_gen": nfsl_route_gen_bump) or its age
 * passes cfg->route_cache_us, on the slicer's parking clock (read once per
 * packet for both: a clock read is a helper call, ~20-40 ns here). The MTU check stays exact per packet: an entry keeps
 * the egress MTU and every hit compares this packet's length with it.
 */
#define NFSL_RC_ENTRIES 4096 /* a power of two: 256 KiB per CPU */
#define NFSL_RC_KEY_WORDS 6 /* 48 bytes of struct bpf_fib_lookup */
#define NFSL_RC_NAT 0x80     /* verdict bit: conntrack's NAT rewrote the dst */

struct nfsl_rc_entry {
	__u64 key[NFSL_RC_KEY_WORDS];
	__u64 made_ns; /* the slicer's parking clock when filled */
	__u32 gen;     /* route generation it was filled under */
	__u16 mtu;     /* egress MTU checked, 0: none (local, unreachable) */
	__u8 verdict;  /* enum nfsl_route | NFSL_RC_NAT; ERR: no entry */
	__u8 part;     /* store partition of the egress */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NFSL_RC_ENTRIES);
	__type(key, __u32);
	__type(value, struct nfsl_rc_entry);
} nfsl_rcache SEC(".maps");

/* The domain's route generation: user space adds 1 through an mmap on
 * every change that may change a verdict (nfsl_route_gen_bump). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} nfsl_route_gen SEC(".maps");

_Static_assert(offsetof(struct bpf_fib_lookup, ipv6_dst) + 16 == NFSL_RC_KEY_WORDS * 8,
	       "the cache key is the FIB lookup's input");

static __always_inline __u32 nfsl_rc_hash(const __u64 *k)
{
	__u64 x = k[0] ^ k[1] ^ k[2] ^ k[3] ^ k[4] ^ k[5];

	x ^= x >> 32;
	return ((__u32)x * 0x9e3779b1u) >> 20; /* top 12 bits: NFSL_RC_ENTRIES */
}

_Static_assert(NFSL_RC_ENTRIES == 1 << 12, "nfsl_rc_hash takes 12 bits");

/*
 * nfsl_route_cached - the verdict of nfsl_route_lookup for @fib (key
 * filled, tot_len 0) and a packet of @len IP bytes, from the cache when
 * an entry of this key, generation and age is there; else looked up and
 * filled in. @now: the slicer's parking clock (ns). Counts
 * route_cache_hit / route_cache_miss in @cnt.
 */
static __always_inline int nfsl_route_cached(struct xdp_md *ctx, const struct nfsl_config *cfg,
					     struct nfsl_counters *cnt,
					     struct bpf_fib_lookup *fib, __u32 len, __u64 now,
					     __u32 *dst)
{
	const __u64 *k = (const __u64 *)fib;
	struct nfsl_route_out o = {};
	struct nfsl_rc_entry *e;
	__u32 zero = 0, idx = nfsl_rc_hash(k), v;
	__u64 *gen;

	gen = bpf_map_lookup_elem(&nfsl_route_gen, &zero);
	e = bpf_map_lookup_elem(&nfsl_rcache, &idx);
	if (!gen || !e)
		return NFSL_ROUTE_ERR;
	v = e->verdict & ~NFSL_RC_NAT;
	if (e->gen == (__u32)*gen && v != NFSL_ROUTE_ERR &&
	    now - e->made_ns < (__u64)cfg->route_cache_us * 1000 &&
	    e->key[0] == k[0] && e->key[1] == k[1] && e->key[2] == k[2] &&
	    e->key[3] == k[3] && e->key[4] == k[4] && e->key[5] == k[5]) {
		if (e->mtu && len > e->mtu) {
			cnt->route_cache_hit++;
			return NFSL_ROUTE_MTU;
		}
		/* Too big for it, the route is unknown: look up again. */
		if (v != NFSL_ROUTE_MTU) {
			cnt->route_cache_hit++;
			*dst = e->part;
			return v;
		}
	}
	cnt->route_cache_miss++;
	__builtin_memcpy(e->key, k, sizeof(e->key));
	e->gen = *gen;
	fib->tot_len = len;
	v = nfsl_route_lookup(ctx, cfg, fib, &o);
	/* The clock read before the lookup: an entry never outlives its age
	 * limit by the lookup's time. */
	e->made_ns = now;
	e->mtu = o.mtu;
	e->part = o.part;
	e->verdict = v | (o.nat ? NFSL_RC_NAT : 0);
	*dst = o.part;
	return v;
}

/*
 * nfsl_route - decide whether the packet @p of @ctx, which entered on the
 * domain's interface cfg->ifaces[@in] (nfsl_iface_idx of its ingress),
 * may be sliced; when it may, *@dst is the store partition of its egress
 * (nfsl_iface.part). Returns enum nfsl_route. Cost: nfsl_route_lookup,
 * paid only by packets large enough to slice; with cfg->route_cache_us,
 * mostly a hit of the verdict cache instead (nfsl_route_cached, counted
 * in @cnt), aged on @now (the parking clock, ns).
 */
static __always_inline int nfsl_route(struct xdp_md *ctx, const struct nfsl_config *cfg,
				      struct nfsl_counters *cnt, const struct nfsl_pkt *p,
				      __u32 in, __u64 now, __u32 *dst)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct bpf_fib_lookup fib = {};
	struct nfsl_route_out o = {};
	int v;

	if (in >= NFSL_MAX_IFACES || (cfg->ifaces[in].flags & NFSL_IF_NF_PORT))
		return NFSL_ROUTE_OTHER;
	if ((void *)((struct ethhdr *)data + 1) > data_end ||
	    !nfsl_for_us(data, &cfg->ifaces[in]))
		return NFSL_ROUTE_L2;
	if (!NFSL_ROUTE_FIB)
		return NFSL_ROUTE_SLICE;
	if (nfsl_route_key(ctx, p, &fib))
		return NFSL_ROUTE_ERR;
	if (cfg->route_cache_us)
		return nfsl_route_cached(ctx, cfg, cnt, &fib, p->l3end - p->l3off, now, dst);
	fib.tot_len = p->l3end - p->l3off;
	v = nfsl_route_lookup(ctx, cfg, &fib, &o);
	*dst = o.part;
	return v;
}

#endif /* NFSL_ROUTE_H */
