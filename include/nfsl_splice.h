/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The splice codec: recognise one of our tokens, compute the spliced
 * packet's L4 checksum and rewrite its headers (NFSlicer §III-B "splice
 * operation", PayloadPark §3.3 "Merge" / Alg. 2, RFC 1624). Pure code on
 * pointers, no helpers: the tc splicer (bpf/splicer.bpf.c) and the AF_XDP
 * engine's TX path (userspace/lib/xsk/splice.c) are its two engines and add only how
 * they reach the packet and the store, so both keep the same invariants
 * (docs/format.md "Token").
 *
 * Order of use, both engines:
 *   (nfsl_splice_quick_token  before the parse, for most frames: the token
 *                           the parse would find, for the two checks
 *                           below; failing them: not ours, no parse)
 *   nfsl_splice_token_off   where the token would be (else: not ours)
 *   nfsl_token_index        cheap pre-check, the slot index (else: not ours)
 *   nfsl_token_in_store     the index names a slot of the store (else: not
 *                           ours under key or key_old, no MAC)
 *   (look the slot up)
 *   nfsl_token_ours_cfg     generation not ahead of the slot's, MAC
 *                           under key (or key_old: copy-mode migration)
 *   nfsl_token_retired      else: MAC under a key the domain retired
 *                           less than a grace period ago (then: stale,
 *                           drop), else: not ours
 *   nfsl_slot_busy, nfsl_splice_len_ok   (else: stale, drop)
 *   nfsl_splice_l4_csum     the new L4 checksum, from the packet as it is
 *   copy the payload over the token, nfsl_write_spliced
 *   nfsl_slot_release       (fails: stale, drop the copy: seqlock style)
 */
#ifndef NFSL_SPLICE_H
#define NFSL_SPLICE_H

#include "nfsl_hdr.h"
#include "nfsl_token.h"
#include "nfsl_store.h"

/*
 * nfsl_splice_token_off - offset of the token in the frame of @p: the last
 * NFSL_TOKEN_LEN bytes of the IP packet, found through the IP length so
 * Ethernet padding never moves it. False when the L4 payload is shorter
 * than a token (then it is not ours).
 */
NFSL_INLINE bool nfsl_splice_token_off(const struct nfsl_pkt *p, __u32 *off)
{
	if (p->l3end < p->payoff + NFSL_TOKEN_LEN)
		return false;
	*off = p->l3end - NFSL_TOKEN_LEN;
	return true;
}

/*
 * nfsl_token_index - first half of the pre-check that every token we issued
 * passes and most other bytes fail, before the MAC (~55 ns in BPF): a
 * generation was issued (non-zero) and the slot word's parked length is
 * one a slice can have (NFSL_TOKEN_LEN < len <= NFSL_PAYLOAD_MAX).
 * @idx: out: the slot index (host order)
 */
NFSL_INLINE bool nfsl_token_index(const struct nfsl_token *t, __u32 *idx)
{
	__u32 word = nfsl_ntohl(t->slot), plen = NFSL_TOKEN_PLEN(word);

	*idx = NFSL_TOKEN_IDX(word);
	return t->gen && plen > NFSL_TOKEN_LEN && plen <= NFSL_PAYLOAD_MAX;
}

/*
 * nfsl_token_in_store - may a token naming slot @idx have been issued
 * under the domain's key or key_old, whose store has @slots slots? Only
 * if the slot exists: attach issues no other index, restore takes only a
 * store of the same size and a copy-mode migration only a larger one
 * (ckpt.c, migrate_copy.c). So a token beyond the store is not ours under
 * those keys, known at the cost of a compare instead of a MAC (~55 ns in
 * BPF): random trailing bytes pass nfsl_token_index about half the time,
 * then name a slot of a 4096-slot store once in 256 (20 index bits). A
 * key the domain retired may have issued any index (a larger store
 * before): nfsl_token_retired still asks those. The slot's generation
 * cannot serve as a pre-check too: a token behind it is stale, and must
 * be found ours to be dropped rather than leave truncated.
 */
NFSL_INLINE bool nfsl_token_in_store(__u32 idx, __u32 slots)
{
	return idx < slots;
}

/*
 * nfsl_splice_quick_token - the token slot of a frame, found before the
 * full parse (nfsl_parse_len, ~15 ns in BPF) so that what is not ours can
 * be told by nfsl_token_index and nfsl_token_in_store alone: an untagged
 * IPv4 or IPv6 frame [@data, @data_end) of @frame_len bytes whose IP
 * length ends it exactly (no padding) and whose DSCP is not 63 (those go
 * the full way, to be counted bad_token). Where such a frame has a token,
 * the full parse puts it there too (nfsl_splice_token_off: the IP
 * packet's last NFSL_TOKEN_LEN bytes); a frame the parse refuses is not
 * ours either way. Returns the token in place, or NULL when the quick
 * path does not apply (then parse). Not for a GSO skb: its last bytes
 * are its last segment's token only.
 */
NFSL_INLINE const struct nfsl_token *nfsl_splice_quick_token(void *data, void *data_end,
							     __u32 frame_len)
{
	const struct ethhdr *eth = data;
	const __u8 *ip = (const __u8 *)(eth + 1);
	__u32 l3len, dscp, off = frame_len - NFSL_TOKEN_LEN;
	const struct nfsl_token *t;

	if ((void *)(ip + sizeof(struct ipv6hdr)) > data_end)
		return NULL;
	if (eth->h_proto == nfsl_htons(ETH_P_IP)) {
		l3len = (__u32)ip[2] << 8 | ip[3];
		dscp = ip[1] >> 2;
	} else if (eth->h_proto == nfsl_htons(ETH_P_IPV6)) {
		l3len = sizeof(struct ipv6hdr) + ((__u32)ip[4] << 8 | ip[5]);
		dscp = (ip[0] & 0xf) << 2 | ip[1] >> 6;
	} else {
		return NULL;
	}
	if (dscp == NFSL_DSCP_SLICED || sizeof(*eth) + l3len != frame_len ||
	    frame_len < sizeof(*eth) + sizeof(struct ipv6hdr))
		return NULL;
	/* 0x3fff: the verifier's bound on packet offsets */
	t = data + (off & 0x3fff);
	if (off > 0x3fff || (void *)(t + 1) > data_end)
		return NULL;
	return t;
}

/*
 * nfsl_token_orig_len - the IP length, in bytes, of the packet a sliced
 * header @p carrying token @t was cut from: its IP length, less the token,
 * plus the parked length the token names. Unverified (no key): for a
 * meter on an NF server apart from the store, not for splicing.
 */
NFSL_INLINE __u32 nfsl_token_orig_len(const struct nfsl_pkt *p, const struct nfsl_token *t)
{
	return p->l3end - p->l3off - NFSL_TOKEN_LEN + NFSL_TOKEN_PLEN(nfsl_ntohl(t->slot));
}

/*
 * nfsl_token_ours - second half of the pre-check, then the MAC: is @t one
 * of the tokens issued under @key?
 * @s: the slot @t names, NULL when its index lies beyond the store (a token
 *     that verifies then is stale: its payload cannot be there)
 * The token's generation must not be ahead of the slot's current one
 * (a generation is issued only by taking the slot); an older one may still
 * verify and is then stale.
 */
NFSL_INLINE bool nfsl_token_ours(const struct nfsl_token *t, struct nfsl_slot *s,
				 const __u64 key[2])
{
	if (s && (int)(NFSL_CTL_GEN(NFSL_READ_ONCE_U64(s->ctl)) - nfsl_ntohl(t->gen)) < 0)
		return false;
	return nfsl_token_verify(t, key);
}

/*
 * nfsl_token_ours_cfg - nfsl_token_ours under the domain's key, or, while
 * @cfg has NFSL_CFG_KEY_OLD, under its key_old: a header the previous
 * instance sliced, whose payload a copy-mode migration imported into the
 * same slot with the same generation (docs/cli.md "Migration (copy
 * mode)"). A token under neither key is not ours. The second MAC is paid
 * only by tokens the first refuses while the flag is set.
 */
NFSL_INLINE bool nfsl_token_ours_cfg(const struct nfsl_token *t, struct nfsl_slot *s,
				     const struct nfsl_config *cfg)
{
	if (s && nfsl_token_memo_ok(t, s, cfg->key))
		return true; /* the MAC nfsl_token_ours would compute */
	if (nfsl_token_ours(t, s, cfg->key))
		return true;
	return (cfg->flags & NFSL_CFG_KEY_OLD) && nfsl_token_ours(t, s, cfg->key_old);
}

/*
 * nfsl_token_retired - does @t verify under one of the keys in @r whose
 * grace period has not ended at @now (CLOCK_MONOTONIC, ns)? Such a token
 * names a payload of a store or key the domain no longer has: the header
 * is stale (issue 17 §1.2). Asked only of tokens that failed
 * nfsl_token_ours_cfg; costs one MAC per live retired key (none when the
 * domain retired none lately).
 */
NFSL_INLINE bool nfsl_token_retired(const struct nfsl_token *t, const struct nfsl_retired *r,
				    __u64 now)
{
	for (__u32 i = 0; i < NFSL_MAX_RETIRED; i++) {
		const struct nfsl_retired_key *k = &r->keys[i];

		if (now < NFSL_READ_ONCE_U64(k->until_ns) && nfsl_token_verify(t, k->key))
			return true;
	}
	return false;
}

/* Has @r any key whose grace period may not have ended? (Spares the
 * clock read when the domain retired no key lately.) */
NFSL_INLINE bool nfsl_retired_any(const struct nfsl_retired *r)
{
	__u64 any = 0;

	for (__u32 i = 0; i < NFSL_MAX_RETIRED; i++)
		any |= NFSL_READ_ONCE_U64(r->keys[i].until_ns);
	return any != 0;
}

/* A slot length the slicer can have written (more than a token, at most a
 * slot's payload); anything else is treated as a payload gone. */
NFSL_INLINE bool nfsl_splice_len_ok(__u32 len)
{
	return len > NFSL_TOKEN_LEN && len <= NFSL_PAYLOAD_MAX;
}

/*
 * nfsl_splice_l4_csum - the L4 checksum of the spliced packet.
 * @data, @data_end: the sliced frame as it is now (headers of @p inside)
 * @p:     its parse; the token is the last NFSL_TOKEN_LEN bytes of its IP
 *         packet (nfsl_splice_token_off)
 * @t:     the token
 * @csum:  the L4 checksum field as it is now (memory order)
 * @len:   the slot's parked bytes (nfsl_splice_len_ok)
 * @psum:  the slot's csum, the parked bytes' sum at their L4 offset
 * @flags: the slot's NFSL_SLOT_F_*
 * Returns the field to write (memory order):
 *   - 0 when the original had no UDP checksum, or an NF cleared it (legal
 *     for IPv4, RFC 768);
 *   - a CHECKSUM_PARTIAL header nothing completed on the way (the field
 *     still holds the seed of the current length): the seed of the spliced
 *     length, for the final device to complete;
 *   - else the field updated incrementally (RFC 1624 Eqn. 3): token out,
 *     parked bytes and lengths in, so what a NAT rewrote stays accounted
 *     for; 0xffff where it arrived as 0xffff and 0x0000 is computed.
 */
NFSL_INLINE __u16 nfsl_splice_l4_csum(void *data, void *data_end, const struct nfsl_pkt *p,
				      const struct nfsl_token *t, __u16 csum, __u32 len,
				      __u16 psum, __u8 flags)
{
	__u32 tok_off = p->l3end - NFSL_TOKEN_LEN, cur_l4 = p->l3end - p->l4off;
	__u32 new_l4 = cur_l4 - NFSL_TOKEN_LEN + len, pseudo;
	bool udp = p->proto == IPPROTO_UDP;
	__u16 tsum, ip_csum;

	if ((flags & NFSL_SLOT_F_NOCSUM) || (udp && !csum))
		return 0;
	if ((flags & NFSL_SLOT_F_PARTIAL) &&
	    !nfsl_pseudo_sum(data, data_end, p, &pseudo, &ip_csum) &&
	    csum == nfsl_csum_seed(pseudo, cur_l4))
		return nfsl_csum_seed(pseudo, new_l4);
	tsum = nfsl_csum_at(nfsl_csum_fold(nfsl_csum_words(t, 4, 0)), tok_off - p->l4off);
	psum = nfsl_csum_at(psum, (tok_off - p->l4off) ^ !!(flags & NFSL_SLOT_F_ODD));
	csum = nfsl_splice_csum(csum, cur_l4, new_l4, udp, tsum, psum);
	if (!csum && (flags & NFSL_SLOT_F_L4FFFF))
		csum = 0xffff; /* the zero it had, byte for byte */
	return csum;
}

/*
 * nfsl_write_spliced - rewrite the IP and L4 headers of a spliced frame.
 * @data, @data_end: the frame, already grown to its spliced length
 * @p:     parse of the sliced frame (offsets still hold)
 * @dscp:  the slot's DSCP: restored only if the NF left DSCP 63; an NF that
 *         re-marked the packet (a QoS marker) keeps its marking
 * @l3len: spliced IP packet length, bytes
 * @csum:  L4 checksum field (nfsl_splice_l4_csum)
 * @flags: the slot's NFSL_SLOT_F_*: an IPv4 header checksum that arrived as
 *         0xffff leaves as 0xffff where 0x0000 is computed
 * Returns 0, or -1 when the headers do not lie in [data, data_end).
 */
NFSL_INLINE int nfsl_write_spliced(void *data, void *data_end, const struct nfsl_pkt *p,
				   __u8 dscp, __u32 l3len, __u16 csum, __u8 flags)
{
	void *l3 = data + p->l3off, *l4 = data + p->l4off;

	if (l3 + (p->v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) > data_end ||
	    l4 + sizeof(struct tcphdr) > data_end)
		return -1;
	nfsl_ip_rewrite(l3, p->v6, p->dscp == NFSL_DSCP_SLICED ? dscp : p->dscp, l3len);
	if (!p->v6 && (flags & NFSL_SLOT_F_IPFFFF) && !((struct iphdr *)l3)->check)
		((struct iphdr *)l3)->check = 0xffff;
	nfsl_l4_rewrite(l4, p->proto, l3len - (p->l4off - p->l3off), csum);
	return 0;
}

#endif /* NFSL_SPLICE_H */
