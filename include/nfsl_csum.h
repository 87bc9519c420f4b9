/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Internet checksum arithmetic for slice and splice (RFC 1071, RFC 1624).
 *
 * All sums are ones' complement sums of 16-bit words as they sit in memory
 * ("memory order", like Linux's __wsum), so a folded sum is stored back into
 * a checksum field as is. Values that are not in the packet (lengths,
 * protocol) enter as nfsl_htons(v).
 *
 * The parked payload's sum is never computed over the payload: a received
 * checksum makes pseudo-header + L4 header + payload sum to -0, so the
 * payload's contribution is the complement of the rest (docs/design.md "Packet
 * after slicing"). Both directions are then incremental updates (RFC 1624
 * Eqn. 3), which also keeps a checksum right after a NAT rewrote addresses
 * and ports between slice and splice.
 */
#ifndef NFSL_CSUM_H
#define NFSL_CSUM_H

#include "nfsl_compat.h"

/* 32-bit ones' complement addition (end-around carry). Summed in 64
 * bits and the carry added back: no branch. BPF has no set-on-carry, so
 * the usual s + (s < a) is a conditional jump taken on the data (a carry
 * about every other add, mispredicted as often: ~20 cycles each, a dozen
 * adds per slice and splice). (2^32 - 1) * 2 + carry fits in 32 bits. */
NFSL_INLINE __u32 nfsl_csum_add(__u32 a, __u32 b)
{
	__u64 s = (__u64)a + b;

	return (__u32)s + (__u32)(s >> 32);
}

/* Fold a 32-bit partial sum to 16 bits. */
NFSL_INLINE __u16 nfsl_csum_fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

/* Contribution of a folded sum computed as if at an even offset, for data
 * that really starts at L4 offset @off: odd offsets swap bytes (RFC 1071 §2B). */
NFSL_INLINE __u16 nfsl_csum_at(__u16 sum, __u32 off)
{
	return (off & 1) ? (__u16)((sum << 8) | (sum >> 8)) : sum;
}

/*
 * nfsl_csum_bytes - ones' complement sum of @len bytes at @buf plus @seed.
 * A trailing odd byte counts as the first byte of a zero-padded word.
 * In BPF @buf must be stack, map value or checked packet memory.
 */
#ifdef __bpf__
NFSL_INLINE __u32 nfsl_csum_bytes(const void *buf, __u32 len, __u32 seed)
{
	return (__u32)bpf_csum_diff(NULL, 0, (void *)buf, len, seed);
}
#else
NFSL_INLINE __u32 nfsl_csum_bytes(const void *buf, __u32 len, __u32 seed)
{
	const __u8 *p = buf;
	__u64 s = seed;
	__u16 w;

	for (; len >= 2; len -= 2, p += 2) {
		memcpy(&w, p, 2);
		s += w;
	}
	if (len) {
		w = 0;
		memcpy(&w, p, 1);
		s += w;
	}
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	return (__u32)s;
}
#endif

/*
 * nfsl_csum_words - ones' complement sum of @n 32-bit words at @p plus @seed,
 * in registers (no helper call). Summing memory-order 32-bit words and
 * folding gives the same sum as summing memory-order 16-bit words, since
 * 2^16 = 1 (mod 0xffff). @n must be a constant; @p needs no alignment.
 */
NFSL_INLINE __u32 nfsl_csum_words(const void *p, int n, __u32 seed)
{
	__u64 s = seed;

	NFSL_UNROLL
	for (int i = 0; i < n; i++)
		s += nfsl_load32((const __u8 *)p + 4 * i);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	return (__u32)s;
}

/* RFC 1624 Eqn. 3 for one 32-bit word of a checksummed header:
 * HC' = ~(~HC + ~m + m'). @csum, @old, @new in memory order. */
NFSL_INLINE __u16 nfsl_csum_update32(__u16 csum, __u32 old, __u32 new)
{
	__u32 s = (__u16)~csum;

	s = nfsl_csum_add(s, ~old);
	s = nfsl_csum_add(s, new);
	return (__u16)~nfsl_csum_fold(s);
}

/* Sum of the length words that change when the L4 length goes from
 * @old_len to @new_len: the pseudo-header length (IPv4 16-bit, IPv6 32-bit:
 * same contribution below 64 KiB) and, for UDP, the header's length field. */
NFSL_INLINE __u32 nfsl_csum_len_delta(__u32 old_len, __u32 new_len, bool udp)
{
	__u32 d = nfsl_csum_add((__u16)~nfsl_htons(old_len), nfsl_htons(new_len));

	return udp ? nfsl_csum_add(d, d) : d;
}

/* An L4 checksum of 0 means "none" for UDP: a computed 0 goes out as 0xffff
 * (RFC 768). */
NFSL_INLINE __u16 nfsl_csum_final(__u16 c, bool udp)
{
	return (udp && c == 0) ? 0xffff : c;
}

/*
 * nfsl_csum_seed - what the L4 checksum field holds while the checksum is
 * still to be computed (Linux CHECKSUM_PARTIAL: ~csum_tcpudp_magic(), the
 * folded pseudo-header sum): @pseudo without its length word, @l4len bytes.
 */
NFSL_INLINE __u16 nfsl_csum_seed(__u32 pseudo, __u32 l4len)
{
	return nfsl_csum_fold(nfsl_csum_add(pseudo, nfsl_htons(l4len)));
}

/*
 * nfsl_slice_csum - L4 checksum of the sliced packet.
 * @pseudo:   sum of the pseudo-header without its length word (addresses and
 *            protocol)
 * @hk:       sum of the L4 header as received (checksum field included) and
 *            of the kept payload bytes
 * @csum:     received L4 checksum (memory order)
 * @old_len:  L4 length before slicing, bytes
 * @new_len:  L4 length after slicing, bytes
 * @tok:      folded sum of the token at its L4 offset (nfsl_csum_at)
 * @parked:   out: folded sum of the parked bytes at their L4 offset
 * Returns the new checksum (memory order). If the received checksum was
 * wrong, @parked carries the error and splice reproduces it.
 */
NFSL_INLINE __u16 nfsl_slice_csum(__u32 pseudo, __u32 hk, __u16 csum,
				  __u32 old_len, __u32 new_len, bool udp,
				  __u16 tok, __u16 *parked)
{
	__u32 s = nfsl_csum_add(pseudo, nfsl_htons(old_len));

	s = nfsl_csum_add(s, hk);
	*parked = (__u16)~nfsl_csum_fold(s);
	/* C' = ~(P' + H' + K + T) with H' = H - C + C' (RFC 1624) */
	s = nfsl_csum_add(s, tok);
	s = nfsl_csum_add(s, nfsl_csum_len_delta(old_len, new_len, udp));
	s = nfsl_csum_add(s, (__u16)~csum);
	return nfsl_csum_final((__u16)~nfsl_csum_fold(s), udp);
}

/*
 * nfsl_seed_ambiguous - would the sliced header of a CHECKSUM_PARTIAL
 * packet be ambiguous? Its checksum field holds @seed, the seed of its
 * @new_len L4 bytes (nfsl_csum_seed); if that seed is also its full
 * checksum (1 case in 65536), nothing downstream can tell a header still
 * to complete from a completed one: an AF_XDP NF leaves it as it is, and
 * the splicer, taking it for a seed, would give the spliced packet a seed
 * that no device completes. @pseudo, @hk, @csum (the received field, the
 * original's seed), @old_len, @udp and @tok as nfsl_slice_csum.
 */
NFSL_INLINE bool nfsl_seed_ambiguous(__u32 pseudo, __u32 hk, __u16 csum, __u32 old_len,
				     __u32 new_len, bool udp, __u16 tok, __u16 seed)
{
	__u32 s = nfsl_csum_add(pseudo, nfsl_htons(new_len));

	s = nfsl_csum_add(s, hk);
	if (udp) /* the UDP length field, in @hk as received */
		s = nfsl_csum_add(s, nfsl_csum_len_delta(old_len, new_len, false));
	s = nfsl_csum_add(s, (__u16)~csum); /* the field: seed for seed */
	s = nfsl_csum_add(s, seed);
	s = nfsl_csum_add(s, tok);
	return nfsl_csum_fold(s) == 0xffff;
}

/*
 * nfsl_splice_csum - L4 checksum after the token is replaced by the parked
 * bytes (RFC 1624 Eqn. 3 on the current checksum, so NAT rewrites made
 * between slice and splice stay accounted for).
 * @csum:    current L4 checksum (memory order)
 * @cur_len: current L4 length, bytes; @new_len: after splice
 * @tok:     folded token sum at its current L4 offset
 * @parked:  folded parked-bytes sum at the same offset
 */
NFSL_INLINE __u16 nfsl_splice_csum(__u16 csum, __u32 cur_len, __u32 new_len,
				   bool udp, __u16 tok, __u16 parked)
{
	__u32 s = (__u16)~csum;

	s = nfsl_csum_add(s, nfsl_csum_len_delta(cur_len, new_len, udp));
	s = nfsl_csum_add(s, (__u16)~tok);
	s = nfsl_csum_add(s, parked);
	return nfsl_csum_final((__u16)~nfsl_csum_fold(s), udp);
}

#endif /* NFSL_CSUM_H */
