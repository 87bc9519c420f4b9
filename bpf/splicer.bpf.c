// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * nfslice splicer: tc (clsact) egress program of every domain interface.
 *
 * Finds the token at the end of a packet, verifies its MAC, and puts the
 * parked payload, the original DSCP (unless the NF re-marked it) and the
 * lengths back, with the L4 checksum updated incrementally (RFC 1624) so
 * rewrites a NAT made meanwhile stay right (NFSlicer §III-B "splice
 * operation", PayloadPark §3.3 "Merge", Alg. 2). Frees the slot.
 * A sliced packet is recognised by its token, whatever its DSCP: an NF may
 * re-mark it (a QoS marker does); DSCP 63 is only a hint.
 *   - no token of ours: passed untouched (counted bad_token if DSCP 63);
 *   - token verifies, slot moved on: payload evicted, dropped (stale);
 *   - token verifies under a key the domain retired within its grace
 *     period (detach, restore, migration): dropped (stale, stale_retired);
 *   - spliced packet larger than the interface MTU: dropped (too_big);
 *   - a GRO aggregate of sliced packets (which cannot be spliced in place):
 *     every segment's slot freed, dropped (dropped_gso);
 *   - a helper failing: dropped (splice_failed).
 * Never is a sliced header sent on without its payload.
 * The codec (token check, checksum, header rewrite) is include/nfsl_splice.h,
 * shared with the AF_XDP engine's TX path (userspace/lib/xsk/splice.c); this file adds
 * the skb access, the MTU check (nfsl_kern.h) and the counters.
 */
#include "nfsl_ours.h"
#include "nfsl_kern.h"

/* Residency of spliced payloads, us: log2 buckets and their sum
 * (NFSL_RES_BUCKETS, nfsl_consts.h), per CPU; pinned as "residency".
 * Its price per packet: docs/manager.md "Metrics"; the
 * benchmark builds the splicer without it (bench/bpf/splicer_nores.bpf.c). */
#ifndef NFSL_RESIDENCY
#define NFSL_RESIDENCY 1
#endif
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsl_residency);
} nfsl_residency SEC(".maps");

/* Count a payload parked at @parked_ns (CLOCK_MONOTONIC) spliced now. */
static __always_inline void nfsl_residency_add(__u64 parked_ns)
{
	__u64 now = bpf_ktime_get_ns(), us = now > parked_ns ? (now - parked_ns) / 1000 : 0;
	__u32 b = 0, zero = 0;
	struct nfsl_residency *h;
	__u64 v = us;

	/* b = bit length of us (0 for 0), by halving: no clz in BPF. */
	if (v >> 16) { b += 16; v >>= 16; }
	if (v >> 8) { b += 8; v >>= 8; }
	if (v >> 4) { b += 4; v >>= 4; }
	if (v >> 2) { b += 2; v >>= 2; }
	if (v >> 1) { b += 1; v >>= 1; }
	b += v;
	if (b >= NFSL_RES_BUCKETS || us >> 32)
		b = NFSL_RES_BUCKETS - 1;
	h = bpf_map_lookup_elem(&nfsl_residency, &zero);
	if (h) {
		h->bucket[b & (NFSL_RES_BUCKETS - 1)]++;
		h->sum_us += us;
	}
}

static __always_inline int nfsl_splice(struct __sk_buff *skb,
				       const struct nfsl_config *cfg,
				       struct nfsl_counters *cnt,
				       const struct nfsl_pkt *p)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u32 gen, len, tok_off, new_l3;
	struct nfsl_slot *s = NULL;
	__u64 parked_ns;
	__u16 *csum_field, csum;
	struct nfsl_token tok, *t;
	__u8 flags;

	if (!nfsl_splice_token_off(p, &tok_off))
		goto not_ours;
	/* Read in place, no helper call (~20 ns each here), where the token
	 * lies in the linear part (0x3fff: the verifier's bound on packet
	 * offsets); from page frags through the helper. */
	t = data + (tok_off & 0x3fff);
	if (tok_off <= 0x3fff && (void *)(t + 1) <= data_end)
		__builtin_memcpy(&tok, t, sizeof(tok));
	else if (bpf_skb_load_bytes(skb, tok_off, &tok, sizeof(tok)))
		goto not_ours;
	switch (nfsl_token_find(cfg, &tok, &s)) {
	case NFSL_OURS:
		break;
	case NFSL_RETIRED:
		goto stale; /* its store or key is gone */
	default:
		goto not_ours;
	}

	gen = nfsl_ntohl(tok.gen);
	if (!s || !nfsl_slot_busy(s, gen))
		goto stale;
	len = s->len;
	flags = s->flags;
	parked_ns = s->parked_ns; /* valid if the release below succeeds */
	if (!nfsl_splice_len_ok(len))
		goto stale;

	new_l3 = tok_off + len - p->l3off;
	if (!nfsl_skb_fits_mtu(skb, new_l3)) {
		nfsl_slot_release(s, gen);
		cnt->too_big++;
		if (nfsl_events_on(cfg))
			nfsl_event_tc(skb, NFSL_EV_OFFS(p), tok_off, NFSL_EV_INFO(p, NFSL_EV_TOO_BIG));
		return TC_ACT_SHOT;
	}

	csum_field = data + p->l4off + nfsl_l4_csum_off(p->proto);
	if ((void *)(csum_field + 1) > data_end)
		goto failed; /* parsed headers are linear: never */
	csum = nfsl_splice_l4_csum(data, data_end, p, &tok, *csum_field, len,
				   s->csum, flags);

	/* Grow first (the token stays in place); a failure leaves the packet
	 * as it was, and the header is never sent without its payload. */
	if (bpf_skb_change_tail(skb, tok_off + len, 0))
		goto failed;
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	if (nfsl_write_spliced(data, data_end, p, s->dscp, new_l3, csum, flags) ||
	    bpf_skb_store_bytes(skb, tok_off, s->payload, len, 0))
		goto failed;
	/* Seqlock-style: the copy counts only if the slot still held our
	 * generation the whole time. */
	if (!nfsl_slot_release(s, gen))
		goto stale;
	cnt->spliced++;
	if (NFSL_RESIDENCY && !(cnt->spliced & (NFSL_RES_SAMPLE - 1)))
		nfsl_residency_add(parked_ns);
	return NFSL_TC_NEXT;

not_ours:
	if (p->dscp == NFSL_DSCP_SLICED) {
		cnt->bad_token++;
		if (nfsl_events_on(cfg))
			nfsl_event_tc(skb, NFSL_EV_OFFS(p), 0, NFSL_EV_INFO(p, NFSL_EV_BAD_TOKEN));
	}
	return NFSL_TC_NEXT;
stale:
	cnt->stale++;
	if (nfsl_events_on(cfg))
		nfsl_event_tc(skb, NFSL_EV_OFFS(p), tok_off, NFSL_EV_INFO(p, NFSL_EV_STALE));
	return TC_ACT_SHOT;
failed:
	nfsl_slot_release(s, gen);
	cnt->splice_failed++;
	return TC_ACT_SHOT;
}

/* A GSO skb whose segments carry our tokens (nfsl_gso_ours): every such
 * slot freed, the aggregate dropped. attach turns those GRO features off
 * on domain interfaces, so this is the backstop. */
static __always_inline int nfsl_gso(struct __sk_buff *skb,
				    const struct nfsl_config *cfg,
				    struct nfsl_counters *cnt,
				    const struct nfsl_pkt *p)
{
	__u32 ours = nfsl_gso_ours(skb, cfg, p);

	if (!ours)
		return NFSL_TC_NEXT;
	cnt->dropped_gso += ours;
	return TC_ACT_SHOT;
}

/*
 * Is @skb surely not ours, told before the parse and any counter
 * (nfsl_splice_quick_token)? Its token fails the pre-check, or names no
 * slot of the store while the domain has no retired key lately (a
 * retired key may have issued any index: then nfsl_token_find asks). The
 * not-ours path of most traffic: no helper call, no per-CPU lookup, and
 * for the half of random tails that fail nfsl_token_index not even the
 * configuration's (@cfg is looked up only when needed; NULL: no domain).
 * False also when the quick path does not apply (then the full way).
 */
static __always_inline bool nfsl_quick_not_ours(struct __sk_buff *skb,
						struct nfsl_config **cfg)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	const struct nfsl_token *t;
	struct nfsl_retired *r;
	__u32 idx, zero = 0;

	t = nfsl_splice_quick_token(data, data_end, skb->len);
	if (t && !nfsl_token_index(t, &idx) && !skb->gso_size)
		return true; /* the GSO walk looks at every segment */
	*cfg = nfsl_get_config();
	if (!*cfg || !(*cfg)->slots)
		return true; /* no store: nothing is ours */
	if (!t || skb->gso_size || nfsl_token_in_store(idx, (*cfg)->slots))
		return false;
	r = bpf_map_lookup_elem(&nfsl_retired, &zero);
	return !r || !nfsl_retired_any(r);
}

SEC("tc")
int nfsl_splicer(struct __sk_buff *skb)
{
	struct nfsl_config *cfg = NULL;
	struct nfsl_counters *cnt;
	struct nfsl_pkt p = {};

	if (nfsl_quick_not_ours(skb, &cfg) || !cfg)
		return NFSL_TC_NEXT;
	cnt = nfsl_get_counters();
	if (!cnt || nfsl_skb_parse(skb, &p, false))
		return NFSL_TC_NEXT;
	if (skb->gso_size)
		return nfsl_gso(skb, cfg, cnt, &p);
	return nfsl_splice(skb, cfg, cnt, &p);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
