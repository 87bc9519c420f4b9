// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * nfslice splicer: tc (clsact) egress program of every domain interface.
 *
 * Finds the token at the end of a DSCP-63 packet, verifies its MAC, and
 * puts the parked payload, the original DSCP and the lengths back, with the
 * L4 checksum updated incrementally (RFC 1624) so rewrites a NAT made
 * meanwhile stay right (NFSlicer §III-B "splice operation", PayloadPark
 * §3.3 "Merge", Alg. 2). Frees the slot.
 *   - token does not verify: not ours, passed untouched (bad_token);
 *   - token verifies, slot moved on: payload evicted, dropped (stale);
 *   - spliced packet larger than the interface MTU: dropped (too_big).
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "nfsl_maps.h"
#include "nfsl_hdr.h"
#include "nfsl_token.h"
#include "nfsl_store.h"

/* Rewrite IP and L4 headers for the spliced lengths. */
static __always_inline int nfsl_write_spliced(struct __sk_buff *skb,
					      const struct nfsl_pkt *p,
					      __u8 dscp, __u32 l3len, __u16 csum)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	void *l3 = data + p->l3off, *l4 = data + p->l4off;

	if (l3 + (p->v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) > data_end ||
	    l4 + sizeof(struct tcphdr) > data_end)
		return -1;
	nfsl_ip_rewrite(l3, p->v6, dscp, l3len);
	nfsl_l4_rewrite(l4, p->proto, l3len - (p->l4off - p->l3off), csum);
	return 0;
}

static __always_inline int nfsl_splice(struct __sk_buff *skb,
				       const struct nfsl_config *cfg,
				       struct nfsl_counters *cnt,
				       const struct nfsl_pkt *p)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u32 idx, gen, len, tok_off, cur_l4, new_l3, mtu;
	bool udp = p->proto == IPPROTO_UDP;
	__u16 *csum_field, csum, tsum, psum;
	struct nfsl_token tok;
	struct nfsl_slot *s;

	if (p->l3end < p->payoff + NFSL_TOKEN_LEN)
		goto not_ours;
	tok_off = p->l3end - NFSL_TOKEN_LEN;
	if (bpf_skb_load_bytes(skb, tok_off, &tok, sizeof(tok)) ||
	    !nfsl_token_verify(&tok, cfg->key))
		goto not_ours;

	idx = nfsl_ntohl(tok.slot);
	gen = nfsl_ntohl(tok.gen);
	s = bpf_map_lookup_elem(&nfsl_store, &idx);
	if (!s || !nfsl_slot_busy(s, gen))
		goto stale;
	len = s->len;
	if (len <= NFSL_TOKEN_LEN || len > NFSL_PAYLOAD_MAX)
		goto stale;

	new_l3 = tok_off + len - p->l3off;
	mtu = new_l3; /* in: L3 length to check; out: the device MTU */
	if (bpf_check_mtu(skb, 0, &mtu, 0, 0)) {
		nfsl_slot_release(s, gen);
		cnt->too_big++;
		return TC_ACT_SHOT;
	}

	csum_field = data + p->l4off + nfsl_l4_csum_off(p->proto);
	if ((void *)(csum_field + 1) > data_end)
		goto not_ours;
	csum = *csum_field;
	cur_l4 = p->l3end - p->l4off;
	if (s->flags & NFSL_SLOT_F_NOCSUM) {
		csum = 0; /* the original had none; we have no payload sum */
	} else {
		tsum = nfsl_csum_at(nfsl_csum_fold(nfsl_csum_words(&tok, 4, 0)),
				    tok_off - p->l4off);
		psum = nfsl_csum_at(s->csum, (tok_off - p->l4off) ^
					     !!(s->flags & NFSL_SLOT_F_ODD));
		csum = nfsl_splice_csum(csum, cur_l4, cur_l4 - NFSL_TOKEN_LEN + len,
					udp, tsum, psum);
	}

	/* Grow first (the token stays in place); a failure leaves the packet
	 * as it was, and the header is never sent without its payload. */
	if (bpf_skb_change_tail(skb, tok_off + len, 0) ||
	    nfsl_write_spliced(skb, p, s->dscp, new_l3, csum) ||
	    bpf_skb_store_bytes(skb, tok_off, s->payload, len, 0)) {
		nfsl_slot_release(s, gen);
		cnt->too_big++;
		return TC_ACT_SHOT;
	}
	/* Seqlock-style: the copy counts only if the slot still held our
	 * generation the whole time. */
	if (!nfsl_slot_release(s, gen))
		goto stale;
	cnt->spliced++;
	return TC_ACT_OK;

not_ours:
	cnt->bad_token++;
	return TC_ACT_OK;
stale:
	cnt->stale++;
	return TC_ACT_SHOT;
}

SEC("tc")
int nfsl_splicer(struct __sk_buff *skb)
{
	struct nfsl_config *cfg = nfsl_get_config();
	struct nfsl_counters *cnt = nfsl_get_counters();
	struct nfsl_pkt p = {};
	void *data, *data_end;

	if (!cfg || !cnt || !cfg->slots)
		return TC_ACT_OK;
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	if (nfsl_parse(data, data_end, &p)) {
		/* Headers may lie beyond the linear part: pull and retry. */
		if (data_end - data >= skb->len ||
		    bpf_skb_pull_data(skb, skb->len < 256 ? skb->len : 256))
			return TC_ACT_OK;
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		if (nfsl_parse(data, data_end, &p))
			return TC_ACT_OK;
	}
	if (p.dscp != NFSL_DSCP_SLICED)
		return TC_ACT_OK;
	return nfsl_splice(skb, cfg, cnt, &p);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
