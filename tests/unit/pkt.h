/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Test packet builder: Ethernet, up to two VLAN tags, IPv4 (with options,
 * fragment bits) or IPv6 (with extension headers), UDP / TCP (with options)
 * / ICMP, and a payload pattern, with checksums from the reference in ref.c.
 */
#ifndef NFSL_TEST_PKT_H
#define NFSL_TEST_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PKT_MAX 4096
#define PKT_JUMBO 9216 /* a jumbo frame's buffer (multi-buffer XDP tests) */

#define PKT_UDP 17
#define PKT_TCP 6
#define PKT_ICMP 1

/* IPv6 extension headers the builder knows (next-header values). */
#define PKT_EXT_HBH 0
#define PKT_EXT_ROUTING 43
#define PKT_EXT_FRAG 44
#define PKT_EXT_DST 60

struct pkt_spec {
	uint16_t size;     /* frame bytes, without FCS */
	uint16_t pad;      /* of which Ethernet padding after the IP packet */
	uint8_t v6;
	uint8_t proto;     /* PKT_UDP, PKT_TCP, PKT_ICMP (IPv4 only) */
	uint8_t vlans;     /* 0..2; the outer of two is 802.1ad */
	uint8_t ip_opt;    /* IPv4 option bytes, multiple of 4, <= 40 */
	uint8_t n_ext;     /* IPv6 extension headers, <= 2 */
	uint8_t ext[2];    /* their types, PKT_EXT_*, in order */
	uint8_t tcp_opt;   /* TCP option bytes, multiple of 4, <= 40 */
	uint8_t dscp;
	uint8_t ecn;
	uint16_t frag_off; /* IPv4 flags + fragment offset field, host order */
	bool udp_nocsum;   /* UDP checksum 0 */
	bool bad_csum;     /* L4 checksum deliberately wrong */
	uint8_t fill;      /* PKT_FILL_* */
	uint8_t seed;      /* payload pattern */
};

#define PKT_FILL_PATTERN 0 /* position-dependent bytes */
#define PKT_FILL_ZERO 1    /* all 0x00: the payload sums to +0 */
#define PKT_FILL_ONES 2    /* all 0xff: the payload sums to -0 */

/* Header bytes the spec asks for (Ethernet to the end of the L4 header). */
size_t pkt_hdr_len(const struct pkt_spec *s);

/* Drop the options @s asks for that its family and protocol cannot have
 * (TCP options without TCP, IPv4 options on IPv6, IPv6 extension headers
 * on IPv4), so one option table serves every kind of packet. */
void pkt_spec_fit(struct pkt_spec *s);

/* Build the frame into @buf (PKT_MAX bytes; PKT_JUMBO for a larger
 * s->size). Returns its length, or 0 when
 * the headers do not fit in s->size. */
size_t pkt_build(const struct pkt_spec *s, uint8_t *buf);

/* Readable one-line description of @s, for failure messages. */
const char *pkt_name(const struct pkt_spec *s);

/* Print @len bytes of @a and @b side by side where they differ (stderr). */
void pkt_diff(const char *what, const uint8_t *a, size_t alen,
	      const uint8_t *b, size_t blen);

#endif /* NFSL_TEST_PKT_H */
