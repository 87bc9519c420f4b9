/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Drop events (issue 10 §4; docs/format.md "Drop events"): slicer and
 * splicer name what they drop or decline to slice, for `nfslice events`
 * and nfslice-drops. Off unless the domain flag NFSL_CFG_EVENTS is set;
 * each program emits through a global function of its own (nfsl_event_xdp,
 * nfsl_event_tc), so the verifier checks the record's filling once and
 * the caller's paths do not multiply.
 */
#ifndef NFSL_EVENTS_H
#define NFSL_EVENTS_H

#include "nfsl_maps.h"
#include "nfsl_parse.h"

/* The events (struct nfsl_event), shared by slicer and splicer; pinned as
 * "events". A full ring drops the event, never the packet (events_lost). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, NFSL_EVENTS_BYTES);
} nfsl_events SEC(".maps");

/* Scalars handed to the global functions (five arguments at most): the
 * header offsets, and what the parser found with the event's reason. */
#define NFSL_EV_OFFS(p) ((__u32)(p)->l3off | (__u32)(p)->l4off << 16)
#define NFSL_EV_INFO(p, reason)                                                \
	((__u32)(p)->v6 | (__u32)(p)->proto << 8 | (__u32)(p)->dscp << 16 |  \
	 (__u32)(reason) << 24)

/* Where nfsl_event_fill reads the packet: an xdp_md, an __sk_buff, a
 * dynptr (netfilter programs: bpf/guard.bpf.c). */
enum { NFSL_EV_SKB, NFSL_EV_XDP, NFSL_EV_DYNPTR };

static __always_inline bool nfsl_events_on(const struct nfsl_config *cfg)
{
	return cfg->flags & NFSL_CFG_EVENTS;
}

/*
 * Reserve and fill an event of packet @ctx (an xdp_md, an __sk_buff or a
 * struct bpf_dynptr, as @src says: NFSL_EV_XDP, _SKB, _DYNPTR, a constant
 * at each call) seen on @ifindex, @len bytes long:
 * addresses and ports at the offsets in @offs, reason and header facts in
 * @info, the token's slot and generation from the 16 bytes at @tok_off
 * (0: none). A field the packet does not hold stays 0. Returns the record
 * to submit, or NULL when the ring is full (counted events_lost).
 */
static __always_inline struct nfsl_event *nfsl_event_fill(void *ctx, int src, __u32 ifindex,
							  __u32 len, __u32 offs, __u32 tok_off,
							  __u32 info)
{
	__u32 l3 = offs & 0xffff, l4 = offs >> 16, v6 = info & 1;
	struct nfsl_counters *cnt;
	struct nfsl_token tok;
	struct nfsl_event *e;
	int err = 0;

	e = bpf_ringbuf_reserve(&nfsl_events, sizeof(*e), 0);
	if (!e) {
		cnt = nfsl_get_counters();
		if (cnt)
			cnt->events_lost++;
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->ifindex = ifindex;
	e->len = len;
	e->v6 = v6;
	e->proto = info >> 8;
	e->dscp = info >> 16;
	e->reason = info >> 24;
#define NFSL_EV_LOAD(off, to, n)                                               \
	(src == NFSL_EV_XDP ? bpf_xdp_load_bytes(ctx, off, to, n) :             \
	 src == NFSL_EV_SKB ? bpf_skb_load_bytes(ctx, off, to, n) :             \
			      bpf_dynptr_read(to, n, ctx, off, 0))
	/* One helper call per contiguous run: each call pays the SRSO
	 * return thunk here (docs/platform.md). saddr and daddr are adjacent
	 * in both headers and in the record. */
	_Static_assert(offsetof(struct nfsl_event, daddr) ==
			       offsetof(struct nfsl_event, saddr) + 16,
		       "saddr, daddr adjacent");
	if (v6) {
		err |= NFSL_EV_LOAD(l3 + offsetof(struct ipv6hdr, saddr), e->saddr, 32);
	} else {
		__u32 a[2] = {};

		err |= NFSL_EV_LOAD(l3 + offsetof(struct iphdr, saddr), a, 8);
		__builtin_memcpy(e->saddr, &a[0], 4);
		__builtin_memcpy(e->daddr, &a[1], 4);
	}
	err |= NFSL_EV_LOAD(l4, &e->sport, 4); /* sport, dport */
	if (tok_off && !NFSL_EV_LOAD(tok_off, &tok, sizeof(tok))) {
		e->slot = NFSL_TOKEN_IDX(nfsl_ntohl(tok.slot));
		e->gen = nfsl_ntohl(tok.gen);
	}
#undef NFSL_EV_LOAD
	(void)err; /* a field that did not load stays 0 */
	return e;
}

#endif /* NFSL_EVENTS_H */
