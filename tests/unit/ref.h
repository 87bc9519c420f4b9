/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Reference implementations the unit tests judge the datapath by. They
 * share no code with include/ on purpose: the Internet checksum is summed
 * byte-wise in network order (RFC 1071 §4.1), the parser walks the frame
 * by its own rules, and SipHash-2-4 takes any byte string (the paper's
 * reference algorithm), so a bug in the codec cannot hide in its judge.
 */
#ifndef NFSL_TEST_REF_H
#define NFSL_TEST_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the headers of a frame are, as the reference parser sees them. */
struct ref_info {
	uint32_t l3off;  /* IP header */
	uint32_t l4off;  /* UDP/TCP header */
	uint32_t payoff; /* first payload byte */
	uint32_t l3end;  /* end of the IP packet */
	uint8_t v6;
	uint8_t proto;   /* L4 protocol after the extension headers */
	uint8_t dscp;
	uint8_t ecn;
};

/* Ones' complement sum of big-endian 16-bit words, not folded; an odd last
 * byte is the high byte of a zero-padded word. */
uint64_t ref_sum(const uint8_t *p, size_t len, uint64_t acc);
/* Fold to 16 bits (end-around carry). */
uint16_t ref_fold(uint64_t acc);

/* RFC 1624 Eqn. 3: checksum @c after a 16-bit word went from @old to @new
 * (all values as read from the packet, big-endian). */
uint16_t ref_update16(uint16_t c, uint16_t old, uint16_t new);

uint16_t ref_get16(const uint8_t *p);
void ref_put16(uint8_t *p, uint16_t v);

/* Parse Eth / 0-2 VLAN / IPv4 | IPv6 (+HBH, DSTOPTS) / UDP | TCP.
 * Returns 0 when it found an L4 header inside the frame. */
int ref_parse(const uint8_t *f, size_t len, struct ref_info *ri);

/* Folded sum over pseudo-header + L4 segment, checksum field included:
 * 0xffff when the L4 checksum is right (RFC 1071). */
uint16_t ref_l4_vsum(const uint8_t *f, const struct ref_info *ri);

/* Recompute the IPv4 header checksum and the L4 checksum of @f in place.
 * A UDP checksum of 0 (none) stays 0. */
void ref_fix_csums(uint8_t *f, size_t len);

/*
 * ref_check - would a receiving stack accept @f? Checks that the IP length
 * covers the frame exactly (@allow_pad: or less, Ethernet padding), UDP
 * length, IPv4 header checksum, and L4 checksum (UDP 0 accepted for IPv4).
 * Returns NULL when valid, else what is wrong.
 */
const char *ref_check(const uint8_t *f, size_t len, bool allow_pad);

/* SipHash-2-4 of @len bytes at @m under the 16-byte key @k; writes the
 * 8 output bytes as the specification lists them. */
void ref_siphash24(const uint8_t k[16], const uint8_t *m, size_t len,
		   uint8_t out[8]);

#endif /* NFSL_TEST_REF_H */
