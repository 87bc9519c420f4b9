// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * nfslice guards: a sliced header never leaves unspliced, whatever the
 * route said (issue 19 §1; docs/design.md "Where a packet is sliced").
 *
 * The slicer slices what bpf_fib_lookup says leaves through a domain
 * interface or NF port (nfsl_route.h); that verdict is a hint: policy
 * routing by a mark set after XDP, a DNAT to a local address, a route or
 * interface changed since (or a cached verdict, stale for a bounded time)
 * can send the header elsewhere. Where it would then leave, a guard stops
 * it:
 *   - nfsl_guard, nfsl_guard_l3: TCX egress of every interface of the
 *     domain's namespace that is neither a domain interface nor an NF
 *     port (lo and other domains' interfaces included: their splicer does
 *     not know our key); nfsl_guard_l3 for devices without an Ethernet
 *     header (ipip, gre, sit, wireguard, tun);
 *   - nfsl_guard_nf: netfilter LOCAL_IN, IPv4 and IPv6: local delivery;
 *     and FORWARD, IPv4 and IPv6: every routed packet whose egress is not
 *     a domain interface or NF port, so that an interface made a moment
 *     ago, before nfsliced or repair put its TCX guard there, is covered
 *     too (the invariant rests on no daemon).
 * A packet that carries one of our tokens (the domain's key, key_old or a
 * retired key, whatever its DSCP; any segment of a GSO skb: recognised as
 * the splicer does, nfsl_ours.h) is dropped, the slot it names freed, and
 * counted escaped_dropped (one per header), with a drop event
 * NFSL_EV_ESCAPED. Everything else goes on untouched.
 * One object per domain: its programs are verified once and attached to
 * every interface (userspace/lib/nfsl/guard.c).
 */
#include <linux/netfilter.h>

#include "nfsl_ours.h"
#include "nfsl_kern.h"

/* The guard's verdict on @skb, parsed into @p: drop when it carries our
 * headers, else on to the next program. */
static __always_inline int nfsl_guard_skb(struct __sk_buff *skb, bool l3)
{
	struct nfsl_config *cfg = nfsl_get_config();
	struct nfsl_counters *cnt = nfsl_get_counters();
	struct nfsl_pkt p = {};
	__u32 ours, tok_off = 0;

	if (!cfg || !cnt || !cfg->slots || nfsl_skb_parse(skb, &p, l3))
		return NFSL_TC_NEXT;
	if (skb->gso_size)
		ours = nfsl_gso_ours(skb, cfg, &p);
	else if (nfsl_splice_token_off(&p, &tok_off))
		ours = nfsl_skb_token_drop(skb, tok_off);
	else
		return NFSL_TC_NEXT;
	if (!ours)
		return NFSL_TC_NEXT;
	cnt->escaped_dropped += ours;
	if (nfsl_events_on(cfg))
		nfsl_event_tc(skb, NFSL_EV_OFFS(&p), tok_off, NFSL_EV_INFO(&p, NFSL_EV_ESCAPED));
	return TC_ACT_SHOT;
}

/* Egress of an interface with an Ethernet header (lo too). */
SEC("tc")
int nfsl_guard(struct __sk_buff *skb)
{
	return nfsl_guard_skb(skb, false);
}

/* Egress of a device whose packets start at the IP header. */
SEC("tc")
int nfsl_guard_l3(struct __sk_buff *skb)
{
	return nfsl_guard_skb(skb, true);
}

/* ---- local delivery: netfilter (BPF_PROG_TYPE_NETFILTER, Linux >= 6.4) */

struct nf_hook_state {
	__u8 hook;
	struct net_device *out;
} __attribute__((preserve_access_index));

struct bpf_nf_ctx {
	const struct nf_hook_state *state;
	struct sk_buff *skb;
} __attribute__((preserve_access_index));

/* The netfilter program reads the packet through a dynptr (its context
 * has no __sk_buff: no direct packet access, no bpf_skb_load_bytes); the
 * kernel allows these kfuncs for BPF_PROG_TYPE_NETFILTER. */
extern int bpf_dynptr_from_skb(struct __sk_buff *skb, __u64 flags,
			       struct bpf_dynptr *ptr__uninit) __ksym;

/*
 * nfsl_nf_parse - the headers of the IP packet (l3off 0) in @dp, @len
 * bytes, into @p, as nfsl_parse_l3 finds them (IPv4 with options, not a
 * fragment; IPv6 with up to two hop-by-hop / destination-options headers;
 * UDP or TCP), read with bpf_dynptr_read (the verifier bounds no variable
 * offset into a copy). Returns 0 or -1 (not a packet we slice).
 */
static __always_inline int nfsl_nf_parse(const struct bpf_dynptr *dp, __u32 len,
					 struct nfsl_pkt *p)
{
	union {
		struct iphdr v4;
		struct ipv6hdr v6;
		__u8 ext[2];
		__u8 tcp[14];
	} h;
	__u32 off;
	__u8 nh;

	if (bpf_dynptr_read(&h, sizeof(h.v4), dp, 0, 0))
		return -1;
	if (h.v4.version == 4) {
		off = h.v4.ihl * 4;
		if (off < sizeof(h.v4) ||
		    h.v4.frag_off & nfsl_htons(NFSL_IP_MF | NFSL_IP_OFFSET))
			return -1;
		p->l3end = nfsl_ntohs(h.v4.tot_len);
		p->dscp = h.v4.tos >> 2;
		nh = h.v4.protocol;
	} else {
		if (bpf_dynptr_read(&h, sizeof(h.v6), dp, 0, 0) || h.v6.version != 6 ||
		    !h.v6.payload_len)
			return -1;
		p->v6 = 1;
		p->dscp = ((h.v6.priority << 4) | (h.v6.flow_lbl[0] >> 4)) >> 2;
		p->l3end = sizeof(h.v6) + nfsl_ntohs(h.v6.payload_len);
		nh = h.v6.nexthdr;
		off = sizeof(h.v6);
		for (int i = 0; i < 2 && (nh == 0 || nh == 60); i++) {
			if (bpf_dynptr_read(h.ext, 2, dp, off, 0))
				return -1;
			nh = h.ext[0];
			off += (h.ext[1] + 1) * 8;
		}
	}
	p->proto = nh;
	p->l4off = off;
	if (p->l3end > len || off > p->l3end)
		return -1;
	if (nh == IPPROTO_UDP) {
		p->payoff = off + sizeof(struct udphdr);
	} else if (nh == IPPROTO_TCP) {
		if (bpf_dynptr_read(h.tcp, sizeof(h.tcp), dp, off, 0))
			return -1;
		p->payoff = off + (h.tcp[12] >> 4) * 4; /* doff */
	} else {
		return -1;
	}
	return p->payoff > p->l3end ? -1 : 0;
}

struct nfsl_nf_walk {
	struct bpf_dynptr dp;
	const struct nfsl_config *cfg;
	__u32 payoff, l3end, seg, ours; /* as struct nfsl_gso_walk */
};

/* bpf_loop callback: nfsl_gso_seg through the dynptr. */
static long nfsl_nf_seg(__u32 i, void *arg)
{
	struct nfsl_nf_walk *w = arg;
	__u32 end = w->payoff + (i + 1) * w->seg;
	struct nfsl_token tok;

	if (end > w->l3end)
		end = w->l3end;
	if (end < w->payoff + NFSL_TOKEN_LEN)
		return 1;
	/* ++, not += its result: a sum the verifier tracks exactly keeps
	 * the loop's states apart (1M instructions). */
	if (!bpf_dynptr_read(&tok, sizeof(tok), &w->dp, end - NFSL_TOKEN_LEN, 0) &&
	    nfsl_token_drop(w->cfg, &tok))
		w->ours++;
	return end == w->l3end;
}

/* The drop event of a packet delivered locally, or routed to @out
 * (nfsl_event_tc's). */
static __always_inline void nfsl_event_nf(struct bpf_dynptr *dp, struct sk_buff *skb,
					  const struct nfsl_pkt *p, __u32 tok_off, __u32 out)
{
	struct net_device *dev = skb->dev;
	struct nfsl_event *e;

	e = nfsl_event_fill(dp, NFSL_EV_DYNPTR, out ? out : dev ? dev->ifindex : 0, skb->len,
			    NFSL_EV_OFFS(p), tok_off, NFSL_EV_INFO(p, NFSL_EV_ESCAPED));
	if (e)
		bpf_ringbuf_submit(e, 0);
}

/*
 * Local delivery, at NF_INET_LOCAL_IN (IPv4 and IPv6), at the first
 * priority a BPF link may take (NF_IP_PRI_FIRST + 1: the loader's
 * NFSL_GUARD_NF_PRIO). A socket sees a packet only after every LOCAL_IN
 * hook accepted it (ip_local_deliver_finish), so any priority would keep
 * the header from sockets; the first one also keeps it from every other
 * hook's user: an NFQUEUE or NFLOG rule of the INPUT chain would hand the
 * truncated header to user space, a TPROXY/socket match of mangle would
 * act on it. Defragmentation is done before LOCAL_IN (ip_local_deliver),
 * and conntrack or NAT state the header made on the way in only ages out.
 * Routing, at NF_INET_FORWARD (IPv4 and IPv6), same priority: a packet
 * whose egress (state->out, after policy routing and DNAT) is a domain
 * interface or NF port goes on (its splicer or NF takes it), any other is
 * judged here. The TCX guards stay for what no FORWARD hook sees (a
 * bpf_redirect into another interface).
 */
SEC("netfilter")
int nfsl_guard_nf(struct bpf_nf_ctx *ctx)
{
	struct nfsl_config *cfg = nfsl_get_config();
	struct nfsl_counters *cnt = nfsl_get_counters();
	struct nfsl_nf_walk w = {};
	struct sk_buff *skb = ctx->skb;
	struct skb_shared_info *sh;
	struct nfsl_pkt p = {};
	__u16 gso_size = 0;
	__u32 tok_off = 0, out = 0;

	if (!cfg || !cnt || !cfg->slots)
		return NF_ACCEPT;
	if (ctx->state->hook == NF_INET_FORWARD) {
		struct net_device *od = ctx->state->out;

		out = od ? od->ifindex : 0;
		if (nfsl_iface_idx(cfg, out) < NFSL_MAX_IFACES)
			return NF_ACCEPT; /* its splicer, or the NF port's NF */
	}
	if (bpf_dynptr_from_skb((struct __sk_buff *)skb, 0, &w.dp) ||
	    nfsl_nf_parse(&w.dp, skb->len, &p))
		return NF_ACCEPT;
	w.cfg = cfg;
	w.payoff = p.payoff;
	w.l3end = p.l3end;
	sh = (void *)(skb->head + skb->end);
	bpf_probe_read_kernel(&gso_size, sizeof(gso_size), &sh->gso_size);
	if (gso_size) {
		w.seg = gso_size;
		bpf_loop(NFSL_GSO_SEGS_MAX, nfsl_nf_seg, &w, 0);
	} else {
		w.seg = p.l3end - p.payoff; /* one segment: the packet */
		tok_off = p.l3end - NFSL_TOKEN_LEN;
		nfsl_nf_seg(0, &w);
	}
	if (!w.ours)
		return NF_ACCEPT;
	cnt->escaped_dropped += w.ours;
	if (nfsl_events_on(cfg))
		nfsl_event_nf(&w.dp, skb, &p, tok_off, out);
	return NF_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
