/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * SipHash-2-4 (Aumasson & Bernstein, 2012) of one 64-bit word, written from
 * the specification: the token MAC (docs/design.md "token"). Compiles for BPF and
 * user space. ~55 ns in BPF, ~20 ns in user space (docs/platform.md).
 */
#ifndef NFSL_SIPHASH_H
#define NFSL_SIPHASH_H

#include "nfsl_compat.h"

#define NFSL_ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define NFSL_SIPROUND(v0, v1, v2, v3)                                          \
	do {                                                                   \
		v0 += v1; v1 = NFSL_ROTL64(v1, 13); v1 ^= v0;                  \
		v0 = NFSL_ROTL64(v0, 32);                                      \
		v2 += v3; v3 = NFSL_ROTL64(v3, 16); v3 ^= v2;                  \
		v0 += v3; v3 = NFSL_ROTL64(v3, 21); v3 ^= v0;                  \
		v2 += v1; v1 = NFSL_ROTL64(v1, 17); v1 ^= v2;                  \
		v2 = NFSL_ROTL64(v2, 32);                                      \
	} while (0)

/*
 * nfsl_siphash24_u64 - SipHash-2-4 of an 8-byte message.
 * @k0, @k1: key, the two little-endian 64-bit halves of the 16-byte key
 * @m:       message, the little-endian reading of its 8 bytes
 * Returns the 64-bit tag (its little-endian bytes are the spec's output).
 */
NFSL_INLINE __u64 nfsl_siphash24_u64(__u64 k0, __u64 k1, __u64 m)
{
	__u64 v0 = k0 ^ 0x736f6d6570736575ULL;
	__u64 v1 = k1 ^ 0x646f72616e646f6dULL;
	__u64 v2 = k0 ^ 0x6c7967656e657261ULL;
	__u64 v3 = k1 ^ 0x7465646279746573ULL;
	const __u64 b = 8ULL << 56; /* length byte, no tail bytes */

	v3 ^= m;
	NFSL_SIPROUND(v0, v1, v2, v3);
	NFSL_SIPROUND(v0, v1, v2, v3);
	v0 ^= m;

	v3 ^= b;
	NFSL_SIPROUND(v0, v1, v2, v3);
	NFSL_SIPROUND(v0, v1, v2, v3);
	v0 ^= b;

	v2 ^= 0xff;
	NFSL_SIPROUND(v0, v1, v2, v3);
	NFSL_SIPROUND(v0, v1, v2, v3);
	NFSL_SIPROUND(v0, v1, v2, v3);
	NFSL_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

#endif /* NFSL_SIPHASH_H */
