/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Token codec: build and verify the 16-byte token of a sliced packet
 * (NFSlicer §III-C index + generation, plus a keyed MAC so forged tokens
 * never splice a payload onto a foreign header).
 */
#ifndef NFSL_TOKEN_H
#define NFSL_TOKEN_H

#include "nfsl_structs.h"
#include "nfsl_siphash.h"

/* MAC input: the little-endian word slot | gen << 32. */
NFSL_INLINE __u64 nfsl_token_mac(const __u64 key[2], __u32 slot, __u32 gen)
{
	return nfsl_siphash24_u64(key[0], key[1],
				  (__u64)slot | ((__u64)gen << 32));
}

/* Fill @t for (@slot, @gen) under @key. */
NFSL_INLINE void nfsl_token_make(struct nfsl_token *t, const __u64 key[2],
				 __u32 slot, __u32 gen)
{
	t->slot = nfsl_htonl(slot);
	t->gen = nfsl_htonl(gen);
	t->mac = nfsl_cpu_to_le64(nfsl_token_mac(key, slot, gen));
}

/* True when @t carries a MAC this @key issued (one 64-bit compare, no
 * early exit on the first differing byte). */
NFSL_INLINE bool nfsl_token_verify(const struct nfsl_token *t,
				   const __u64 key[2])
{
	return t->mac == nfsl_cpu_to_le64(nfsl_token_mac(key, nfsl_ntohl(t->slot),
							 nfsl_ntohl(t->gen)));
}

/*
 * The token memo: the token a slicer issued for a slot, kept in the slot's
 * unused payload bytes (after the parked ones, 8-byte aligned), so that a
 * splicer can tell the token is ours by comparing it instead of computing
 * its MAC again (~55 ns in BPF). The MAC depends on the slot word, the
 * generation and the key alone (nfsl_token_mac), so a token equal to the
 * memo of its own word and generation, written under the key in use,
 * carries the MAC nfsl_token_verify would compute: the answer is the
 * same. The key enters the memo (mac ^ key[0] ^ key[1]): after a restore
 * changed the key, a memo left by the old one matches no token, which
 * then goes the slow way (and is found stale under the retired key). A
 * payload too long for a memo (NFSL_MEMO_PLEN_MAX), one imported by a
 * restore or a copy-mode migration (which copy the parked bytes only) and
 * a token under key_old simply take the MAC.
 */
struct nfsl_token_memo {
	__u64 mac_x; /* the token's mac field ^ key[0] ^ key[1] */
	__u32 word;  /* the token's slot word, host order */
	__u32 gen;   /* the token's generation, host order */
};

/* Offset of the memo of a payload of @plen bytes in its slot's payload[]. */
#define NFSL_MEMO_OFF(plen) (((plen) + 7u) & ~7u)
/* The longest payload that leaves room for its memo, bytes. */
#define NFSL_MEMO_PLEN_MAX (NFSL_PAYLOAD_MAX - sizeof(struct nfsl_token_memo))

/* Write the memo of @t, just issued under @key, into @s: after the
 * payload is in place (the memo lies after it) and before the header
 * carrying @t leaves. */
NFSL_INLINE void nfsl_token_memo_write(struct nfsl_slot *s, const struct nfsl_token *t,
				       const __u64 key[2])
{
	__u32 word = nfsl_ntohl(t->slot), off = NFSL_MEMO_OFF(NFSL_TOKEN_PLEN(word));
	struct nfsl_token_memo m = {
		.mac_x = t->mac ^ key[0] ^ key[1],
		.word = word,
		.gen = nfsl_ntohl(t->gen),
	};

	if (off > NFSL_MEMO_PLEN_MAX)
		return;
	__builtin_memcpy(s->payload + off, &m, sizeof(m));
}

/* True when @t is the token whose memo @s holds under @key: then @t
 * verifies under @key (see above). False says nothing: take the MAC. */
NFSL_INLINE bool nfsl_token_memo_ok(const struct nfsl_token *t, const struct nfsl_slot *s,
				    const __u64 key[2])
{
	__u32 word = nfsl_ntohl(t->slot), off = NFSL_MEMO_OFF(NFSL_TOKEN_PLEN(word));
	struct nfsl_token_memo m;

	if (off > NFSL_MEMO_PLEN_MAX)
		return false;
	__builtin_memcpy(&m, s->payload + off, sizeof(m));
	return m.word == word && m.gen == nfsl_ntohl(t->gen) &&
	       (m.mac_x ^ key[0] ^ key[1]) == t->mac;
}

#endif /* NFSL_TOKEN_H */
