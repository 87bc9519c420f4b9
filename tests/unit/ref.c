// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Reference checksum, parser, checker and SipHash-2-4 for the unit tests.
 * Written for clarity, not speed, and independently of include/.
 */
#include <string.h>

#include "ref.h"

uint16_t ref_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

void ref_put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

uint64_t ref_sum(const uint8_t *p, size_t len, uint64_t acc)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		acc += ref_get16(p + i);
	if (len & 1)
		acc += (uint64_t)p[len - 1] << 8;
	return acc;
}

uint16_t ref_fold(uint64_t acc)
{
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint16_t)acc;
}

uint16_t ref_update16(uint16_t c, uint16_t old, uint16_t new)
{
	return ~ref_fold((uint64_t)(uint16_t)~c + (uint16_t)~old + new);
}

int ref_parse(const uint8_t *f, size_t len, struct ref_info *ri)
{
	uint32_t off = 14, type, l4len;
	int tags = 0;

	memset(ri, 0, sizeof(*ri));
	if (len < 14)
		return -1;
	type = ref_get16(f + 12);
	while ((type == 0x8100 || type == 0x88a8) && tags < 2) {
		if (off + 4 > len)
			return -1;
		type = ref_get16(f + off + 2);
		off += 4;
		tags++;
	}
	ri->l3off = off;
	if (type == 0x0800) {
		uint32_t ihl, tot;

		if (off + 20 > len || f[off] >> 4 != 4)
			return -1;
		ihl = (f[off] & 0xf) * 4;
		tot = ref_get16(f + off + 2);
		if (ihl < 20 || tot < ihl)
			return -1;
		ri->dscp = f[off + 1] >> 2;
		ri->ecn = f[off + 1] & 3;
		ri->proto = f[off + 9];
		ri->l4off = off + ihl;
		ri->l3end = off + tot;
	} else if (type == 0x86dd) {
		uint32_t nh, tc;

		if (off + 40 > len || f[off] >> 4 != 6)
			return -1;
		tc = (f[off] & 0xf) << 4 | f[off + 1] >> 4;
		ri->v6 = 1;
		ri->dscp = tc >> 2;
		ri->ecn = tc & 3;
		ri->l3end = off + 40 + ref_get16(f + off + 4);
		nh = f[off + 6];
		off += 40;
		while (nh == 0 || nh == 60) { /* hop-by-hop, destination opts */
			if (off + 2 > len)
				return -1;
			nh = f[off];
			off += (f[off + 1] + 1) * 8;
		}
		ri->proto = nh;
		ri->l4off = off;
	} else {
		return -1;
	}
	if (ri->l3end > len || ri->l4off > ri->l3end)
		return -1;
	l4len = ri->l3end - ri->l4off;
	if (ri->proto == 17) {
		if (l4len < 8)
			return -1;
		ri->payoff = ri->l4off + 8;
	} else if (ri->proto == 6) {
		uint32_t doff;

		if (l4len < 20)
			return -1;
		doff = (f[ri->l4off + 12] >> 4) * 4;
		if (doff < 20 || doff > l4len)
			return -1;
		ri->payoff = ri->l4off + doff;
	} else {
		return -1;
	}
	return 0;
}

static uint64_t ref_pseudo(const uint8_t *f, const struct ref_info *ri)
{
	uint32_t l4len = ri->l3end - ri->l4off;
	uint64_t acc;

	if (ri->v6) /* RFC 8200 §8.1: 32-bit length, 24 zero bits, next hdr */
		acc = ref_sum(f + ri->l3off + 8, 32, 0) + (l4len >> 16) +
		      (l4len & 0xffff);
	else /* RFC 768/793: 16-bit length, zero byte, protocol */
		acc = ref_sum(f + ri->l3off + 12, 8, 0) + l4len;
	return acc + ri->proto;
}

uint16_t ref_l4_vsum(const uint8_t *f, const struct ref_info *ri)
{
	return ref_fold(ref_sum(f + ri->l4off, ri->l3end - ri->l4off,
				ref_pseudo(f, ri)));
}

static uint32_t ref_csum_off(const struct ref_info *ri)
{
	return ri->l4off + (ri->proto == 17 ? 6 : 16);
}

void ref_fix_csums(uint8_t *f, size_t len)
{
	struct ref_info ri;
	uint8_t *l3, *c;
	uint16_t v;

	if (ref_parse(f, len, &ri))
		return;
	l3 = f + ri.l3off;
	if (!ri.v6) {
		ref_put16(l3 + 10, 0);
		ref_put16(l3 + 10, ~ref_fold(ref_sum(l3, (l3[0] & 0xf) * 4, 0)));
	}
	c = f + ref_csum_off(&ri);
	if (ri.proto == 17 && ref_get16(c) == 0)
		return; /* no checksum */
	ref_put16(c, 0);
	v = ~ref_l4_vsum(f, &ri);
	if (ri.proto == 17 && v == 0)
		v = 0xffff; /* RFC 768: computed 0 is sent as all ones */
	ref_put16(c, v);
}

const char *ref_check(const uint8_t *f, size_t len, bool allow_pad)
{
	struct ref_info ri;
	const uint8_t *l3;

	if (ref_parse(f, len, &ri))
		return "headers do not parse";
	l3 = f + ri.l3off;
	if (ri.l3end != len && !(allow_pad && ri.l3end < len))
		return "IP length does not match the frame";
	if (!ri.v6 && ref_fold(ref_sum(l3, (l3[0] & 0xf) * 4, 0)) != 0xffff)
		return "bad IPv4 header checksum";
	if (ri.proto == 17) {
		if (ref_get16(f + ri.l4off + 4) != ri.l3end - ri.l4off)
			return "UDP length does not match the IP length";
		if (ref_get16(f + ref_csum_off(&ri)) == 0)
			return ri.v6 ? "UDP checksum 0 over IPv6" : NULL;
	}
	if (ref_l4_vsum(f, &ri) != 0xffff)
		return "bad L4 checksum";
	return NULL;
}

/* SipHash-2-4, after the reference description (Aumasson & Bernstein). */
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static uint64_t ref_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void ref_sipround(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = ROTL(v[1], 13);
	v[1] ^= v[0];
	v[0] = ROTL(v[0], 32);
	v[2] += v[3];
	v[3] = ROTL(v[3], 16);
	v[3] ^= v[2];
	v[0] += v[3];
	v[3] = ROTL(v[3], 21);
	v[3] ^= v[0];
	v[2] += v[1];
	v[1] = ROTL(v[1], 17);
	v[1] ^= v[2];
	v[2] = ROTL(v[2], 32);
}

void ref_siphash24(const uint8_t k[16], const uint8_t *m, size_t len,
		   uint8_t out[8])
{
	uint64_t k0 = ref_le64(k), k1 = ref_le64(k + 8), b, mi, r;
	uint64_t v[4] = {
		k0 ^ 0x736f6d6570736575ULL,
		k1 ^ 0x646f72616e646f6dULL,
		k0 ^ 0x6c7967656e657261ULL,
		k1 ^ 0x7465646279746573ULL,
	};
	uint8_t last[8] = { 0 };
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		mi = ref_le64(m + i);
		v[3] ^= mi;
		ref_sipround(v);
		ref_sipround(v);
		v[0] ^= mi;
	}
	memcpy(last, m + i, len - i);
	last[7] = (uint8_t)len;
	b = ref_le64(last);
	v[3] ^= b;
	ref_sipround(v);
	ref_sipround(v);
	v[0] ^= b;
	v[2] ^= 0xff;
	for (i = 0; i < 4; i++)
		ref_sipround(v);
	r = v[0] ^ v[1] ^ v[2] ^ v[3];
	for (i = 0; i < 8; i++)
		out[i] = (uint8_t)(r >> (8 * i));
}
