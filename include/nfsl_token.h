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

#endif /* NFSL_TOKEN_H */
