// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Baselines for the splicer's per-packet cost (issue #2, bench/datapath_*.c):
 *   bench_tc_empty  nothing: the bias of the run-time statistics
 *   bench_tc_parse  the header parser of the splicer (nfsl_parse.h)
 *   bench_tc_store  the bare splice: bpf_skb_change_tail to the original
 *                   length, then bpf_skb_store_bytes of the parked payload
 *                   over the token, from the slot the slicer just filled.
 *                   No token check, no checksum, no header rewrite, no
 *                   slot release (the driver frees the slot afterwards);
 *                   a locked add at the end pays for the stores still in
 *                   flight, as the splicer's release CAS does for its own
 *                   (see bench_copy in bench_xdp.bpf.c).
 * The maps are the domain's (nfsl_maps.h); the driver reuses the slicer's
 * map fds, as the splicer does, so bench_tc_store reads the very slot the
 * splicer would.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "nfsl_maps.h"
#include "nfsl_parse.h"

/* Set by the driver through the skeleton's mmapped .bss before each run. */
__u32 bench_slot; /* slot holding the payload of the packet under test */
__u32 bench_sink; /* keeps the parser's result alive */
__u64 bench_fence; /* target of the locked add after the store */

SEC("tc")
int bench_tc_empty(struct __sk_buff *skb)
{
	return TC_ACT_OK;
}

SEC("tc")
int bench_tc_parse(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct nfsl_pkt p = {};

	if (!nfsl_parse(data, data_end, &p))
		bench_sink = p.payoff + p.dscp;
	return TC_ACT_OK;
}

SEC("tc")
int bench_tc_store(struct __sk_buff *skb)
{
	__u32 idx = bench_slot, len, tok_off;
	struct nfsl_slot *s;

	s = bpf_map_lookup_elem(&nfsl_store, &idx);
	if (!s || skb->len < NFSL_TOKEN_LEN)
		return TC_ACT_OK;
	len = s->len;
	if (len < 1 || len > NFSL_PAYLOAD_MAX)
		return TC_ACT_OK;
	/* The token is the last NFSL_TOKEN_LEN bytes; the payload goes there. */
	tok_off = skb->len - NFSL_TOKEN_LEN;
	if (bpf_skb_change_tail(skb, tok_off + len, 0) ||
	    bpf_skb_store_bytes(skb, tok_off, s->payload, len, 0))
		return TC_ACT_SHOT;
	__sync_fetch_and_add(&bench_fence, 1);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
