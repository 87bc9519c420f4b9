/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * "Is this header one of ours?", as the tc programs of a domain ask it: the
 * splicer (bpf/splicer.bpf.c) before it splices, the guards
 * (bpf/guard.bpf.c) before they drop a header that would escape. One
 * recognition for both, so a guard stops exactly what a splicer would
 * have spliced (or dropped as stale): the token's pre-check and MAC under
 * the domain's key, key_old or a retired key (nfsl_token_find), the skb's
 * headers found whether linear or not (nfsl_skb_parse), every segment of a
 * GSO skb looked at (nfsl_gso_ours), and the drop event of an skb
 * (nfsl_event_tc).
 */
#ifndef NFSL_OURS_H
#define NFSL_OURS_H

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "nfsl_maps.h"
#include "nfsl_splice.h"
#include "nfsl_events.h"

/* What a tc program of ours passes on goes on to the hook's next program:
 * TCX_NEXT under TCX; under cls_bpf direct action "next filter", then
 * pass. TC_ACT_OK would end the hook here, skipping later TCX programs and
 * every clsact filter. */
#define NFSL_TC_NEXT TC_ACT_UNSPEC

/*
 * Keys the domain retired, still recognised for a grace period (struct
 * nfsl_retired, issue 17 §1.2): pinned as <bpffs>/nfslice/@retired/
 * ns<cookie>-<domain>/keys (userspace/lib/nfsl/retired.h), so that it outlives a detach
 * and a domain attached again under the same name finds it. Mmapable for
 * the AF_XDP engine's splice.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsl_retired);
} nfsl_retired SEC(".maps");

enum nfsl_find { NFSL_NOT_OURS, NFSL_OURS, NFSL_RETIRED };

/*
 * nfsl_token_find - is @tok (the last 16 bytes of the IP packet) one of our
 * tokens? (nfsl_token_index, nfsl_token_in_store, nfsl_token_ours_cfg: the
 * domain's key, or the previous instance's after a copy-mode migration;
 * nfsl_token_retired: a key the domain retired lately, its payload gone)
 * @slot: out: the slot it names, NULL when outside the store (or not
 *        ours)
 */
static __always_inline enum nfsl_find nfsl_token_find(const struct nfsl_config *cfg,
						      const struct nfsl_token *tok,
						      struct nfsl_slot **slot)
{
	struct nfsl_retired *r;
	__u32 idx, zero = 0;

	*slot = NULL;
	if (!nfsl_token_index(tok, &idx))
		return NFSL_NOT_OURS;
	if (nfsl_token_in_store(idx, cfg->slots)) {
		*slot = bpf_map_lookup_elem(&nfsl_store, &idx);
		if (nfsl_token_ours_cfg(tok, *slot, cfg))
			return NFSL_OURS;
	}
	r = bpf_map_lookup_elem(&nfsl_retired, &zero);
	if (r && nfsl_retired_any(r) && nfsl_token_retired(tok, r, bpf_ktime_get_ns()))
		return NFSL_RETIRED;
	return NFSL_NOT_OURS;
}

/*
 * nfsl_token_drop - @tok is in a header about to be dropped: free the slot
 * it names if it is ours (the payload is evicted: nothing will splice it).
 * Returns 1 when the token is ours or of a retired key, else 0.
 */
static __always_inline __u32 nfsl_token_drop(const struct nfsl_config *cfg,
					     const struct nfsl_token *tok)
{
	struct nfsl_slot *s = NULL;

	switch (nfsl_token_find(cfg, tok, &s)) {
	case NFSL_OURS:
		if (s)
			nfsl_slot_release(s, nfsl_ntohl(tok->gen));
		return 1;
	case NFSL_RETIRED:
		return 1;
	default:
		return 0;
	}
}

/*
 * nfsl_skb_parse - find the headers of @skb into @p: an Ethernet frame, or
 * with @l3 (a constant) an IP packet of a device without an Ethernet
 * header (skb->protocol tells which IP). Parsed against skb->len: the
 * payload (and the token) may lie in page frags; only headers beyond the
 * linear part need a pull (NFSL_HDR_MAX bytes at most). Returns 0, or -1
 * when the packet is not one nfsl_parse_len takes (then it cannot be one
 * of ours).
 */
static __always_inline int nfsl_skb_parse(struct __sk_buff *skb, struct nfsl_pkt *p, bool l3)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u32 want;

#define NFSL_SKB_PARSE()                                                       \
	(l3 ? nfsl_parse_l3(data, data_end, skb->len, skb->protocol, p)       \
	    : nfsl_parse_len(data, data_end, skb->len, p))
	if (!NFSL_SKB_PARSE())
		return 0;
	want = skb->len < NFSL_HDR_MAX ? skb->len : NFSL_HDR_MAX;
	if (data + want <= data_end || bpf_skb_pull_data(skb, want))
		return -1;
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	return NFSL_SKB_PARSE() ? -1 : 0;
#undef NFSL_SKB_PARSE
}

/*
 * nfsl_skb_token_drop - nfsl_token_drop of the token at @off of @skb (the
 * domain's config looked up here): 1 when ours (its slot freed), else 0.
 * A global function, verified once: every inline copy of the MAC check
 * costs the verifier some 100k instructions, paid at every attach.
 */
__noinline int nfsl_skb_token_drop(struct __sk_buff *skb, __u32 off)
{
	struct nfsl_config *cfg = nfsl_get_config();
	struct nfsl_token tok;

	if (!skb || !cfg || bpf_skb_load_bytes(skb, off, &tok, sizeof(tok)))
		return 0;
	return nfsl_token_drop(cfg, &tok);
}

/* A drop event of the packet @skb leaving (nfsl_events.h): @tok_off, where
 * its token lies (0: none). A global function, verified once. */
__noinline int nfsl_event_tc(struct __sk_buff *skb, __u32 offs, __u32 tok_off, __u32 info)
{
	struct nfsl_event *e;

	if (!skb)
		return 0;
	e = nfsl_event_fill(skb, NFSL_EV_SKB, skb->ifindex, skb->len, offs, tok_off, info);
	if (e)
		bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Most segments of one GRO aggregate (UDP_GRO_CNT_MAX, MAX_SKB_FRAGS). */
#define NFSL_GSO_SEGS_MAX 64

struct nfsl_gso_walk {
	struct __sk_buff *skb;
	const struct nfsl_config *cfg;
	__u32 payoff, l3end, seg; /* first payload byte, end, segment bytes */
	__u32 ours;               /* segments carrying one of our tokens */
};

/* Where segment @i of @w ends (its token's end), or 0 when it holds no
 * token: the walk stops. */
static __always_inline __u32 nfsl_gso_seg_end(const struct nfsl_gso_walk *w, __u32 i)
{
	__u32 end = w->payoff + (i + 1) * w->seg;

	if (end > w->l3end)
		end = w->l3end;
	return end < w->payoff + NFSL_TOKEN_LEN ? 0 : end;
}

/* bpf_loop callback: free the slot named by segment @i's token, if ours. */
static long nfsl_gso_seg(__u32 i, void *arg)
{
	struct nfsl_gso_walk *w = arg;
	__u32 end = nfsl_gso_seg_end(w, i);

	if (!end)
		return 1;
	if (nfsl_skb_token_drop(w->skb, end - NFSL_TOKEN_LEN))
		w->ours++;
	return end == w->l3end;
}

/*
 * nfsl_gso_ours - a GSO skb (a GRO aggregate from UDP GRO forwarding,
 * rx-gro-list) keeps only the first segment's headers (@p); each
 * segment's payload, its token at the end, follows the last. It cannot be
 * spliced in place, and segmented later it would leave as truncated
 * headers. Frees the slot of every segment carrying one of our tokens and
 * returns how many do (0: none of its segments is ours: pass it).
 */
static __always_inline __u32 nfsl_gso_ours(struct __sk_buff *skb,
					   const struct nfsl_config *cfg,
					   const struct nfsl_pkt *p)
{
	struct nfsl_gso_walk w = {
		.skb = skb, .cfg = cfg, .payoff = p->payoff, .l3end = p->l3end,
		.seg = skb->gso_size,
	};

	bpf_loop(NFSL_GSO_SEGS_MAX, nfsl_gso_seg, &w, 0);
	return w.ours;
}

#endif /* NFSL_OURS_H */
