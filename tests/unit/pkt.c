// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Test packet builder. Headers carry fixed addresses and ports; the payload
 * is a position-dependent pattern so a byte parked or restored in the wrong
 * place shows. Checksums come from the reference (ref.c).
 */
#include <stdio.h>
#include <string.h>

#include "pkt.h"
#include "ref.h"

static const uint8_t pkt_mac[12] = { 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1 };
static const uint8_t pkt_ip4[8] = { 10, 0, 0, 1, 10, 0, 0, 2 };
static const uint8_t pkt_ip6[32] = {
	0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
	0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
};

size_t pkt_hdr_len(const struct pkt_spec *s)
{
	size_t n = 14 + 4 * s->vlans;

	n += s->v6 ? 40 + 8 * s->n_ext : 20 + s->ip_opt;
	if (s->proto == PKT_TCP)
		n += 20 + s->tcp_opt;
	else
		n += 8; /* UDP, ICMP echo */
	return n;
}

static void pkt_put32(uint8_t *p, uint32_t v)
{
	ref_put16(p, v >> 16);
	ref_put16(p + 2, v & 0xffff);
}

/* IPv4 options: a router alert, then NOPs, then end of list. */
static void pkt_ip_opts(uint8_t *p, size_t n)
{
	if (!n)
		return;
	memset(p, 1, n);
	p[0] = 0x94;
	p[1] = 4;
	p[2] = 0;
	p[3] = 0;
	p[n - 1] = 0;
}

/* TCP options: MSS, then NOP NOP timestamps while they fit, then NOPs. */
static void pkt_tcp_opts(uint8_t *p, size_t n)
{
	size_t i = 0;

	memset(p, 1, n);
	if (n >= 4) {
		p[0] = 2;
		p[1] = 4;
		ref_put16(p + 2, 1460);
		i = 4;
	}
	for (; i + 12 <= n; i += 12) {
		p[i + 2] = 8;
		p[i + 3] = 10;
		pkt_put32(p + i + 4, 0x11223344);
		pkt_put32(p + i + 8, 0x55667788);
	}
}

static size_t pkt_ip6_exts(const struct pkt_spec *s, uint8_t *p)
{
	for (int i = 0; i < s->n_ext; i++, p += 8) {
		p[0] = i + 1 < s->n_ext ? s->ext[i + 1] : s->proto;
		p[1] = 0; /* (length + 1) * 8 = 8 bytes */
		switch (s->ext[i]) {
		case PKT_EXT_HBH:
		case PKT_EXT_DST:
			p[2] = 1; /* PadN over the 6 option bytes */
			p[3] = 4;
			break;
		case PKT_EXT_ROUTING:
			p[2] = 4; /* segment routing, segments left 0 */
			break;
		case PKT_EXT_FRAG:
			ref_put16(p + 2, 1); /* offset 0, more fragments */
			pkt_put32(p + 4, 0xabcd);
			break;
		}
	}
	return 8 * s->n_ext;
}

size_t pkt_build(const struct pkt_spec *s, uint8_t *b)
{
	size_t l3, l4, pay, l3end = s->size - s->pad, i;
	struct ref_info ri = { 0 };
	uint8_t *c = NULL;
	uint16_t v;

	if (pkt_hdr_len(s) + s->pad > s->size || s->size > PKT_JUMBO)
		return 0;
	memset(b, 0, s->size);
	memcpy(b, pkt_mac, sizeof(pkt_mac));
	l3 = 12;
	for (i = 0; i < s->vlans; i++, l3 += 4) {
		ref_put16(b + l3, s->vlans == 2 && i == 0 ? 0x88a8 : 0x8100);
		ref_put16(b + l3 + 2, 100 + i);
	}
	ref_put16(b + l3, s->v6 ? 0x86dd : 0x0800);
	l3 += 2;

	if (!s->v6) {
		uint8_t *ip = b + l3;

		ip[0] = 0x40 | (20 + s->ip_opt) / 4;
		ip[1] = s->dscp << 2 | s->ecn;
		ref_put16(ip + 2, l3end - l3);
		ref_put16(ip + 4, 0x1234);
		ref_put16(ip + 6, s->frag_off);
		ip[8] = 64;
		ip[9] = s->proto;
		memcpy(ip + 12, pkt_ip4, 8);
		pkt_ip_opts(ip + 20, s->ip_opt);
		ref_put16(ip + 10, ~ref_fold(ref_sum(ip, 20 + s->ip_opt, 0)));
		l4 = l3 + 20 + s->ip_opt;
	} else {
		uint8_t *ip = b + l3, tc = s->dscp << 2 | s->ecn;

		ip[0] = 0x60 | tc >> 4;
		ip[1] = (tc & 0xf) << 4 | 0xa; /* flow label 0xabcde */
		ip[2] = 0xbc;
		ip[3] = 0xde;
		ref_put16(ip + 4, l3end - l3 - 40);
		ip[6] = s->n_ext ? s->ext[0] : s->proto;
		ip[7] = 64;
		memcpy(ip + 8, pkt_ip6, 32);
		l4 = l3 + 40 + pkt_ip6_exts(s, ip + 40);
	}

	if (s->proto == PKT_UDP) {
		ref_put16(b + l4, 1234);
		ref_put16(b + l4 + 2, 5678);
		ref_put16(b + l4 + 4, l3end - l4);
		c = b + l4 + 6;
		pay = l4 + 8;
	} else if (s->proto == PKT_TCP) {
		ref_put16(b + l4, 1234);
		ref_put16(b + l4 + 2, 5678);
		pkt_put32(b + l4 + 4, 0x01020304);
		pkt_put32(b + l4 + 8, 0x0a0b0c0d);
		b[l4 + 12] = (20 + s->tcp_opt) / 4 << 4;
		b[l4 + 13] = 0x18; /* PSH ACK */
		ref_put16(b + l4 + 14, 0xfaf0);
		pkt_tcp_opts(b + l4 + 20, s->tcp_opt);
		c = b + l4 + 16;
		pay = l4 + 20 + s->tcp_opt;
	} else {
		b[l4] = 8; /* ICMP echo request */
		ref_put16(b + l4 + 4, 0x77);
		ref_put16(b + l4 + 6, 1);
		pay = l4 + 8;
	}
	for (i = pay; i < l3end; i++) {
		if (s->fill == PKT_FILL_ZERO)
			b[i] = 0;
		else if (s->fill == PKT_FILL_ONES)
			b[i] = 0xff;
		else
			b[i] = (uint8_t)(s->seed + 13 * i + (i >> 7));
	}

	if (s->proto == PKT_ICMP) {
		ref_put16(b + l4 + 2, ~ref_fold(ref_sum(b + l4, l3end - l4, 0)));
		return s->size;
	}
	if (s->proto == PKT_UDP && s->udp_nocsum)
		return s->size;
	ri.l3off = l3;
	ri.l4off = l4;
	ri.l3end = l3end;
	ri.v6 = s->v6;
	ri.proto = s->proto;
	v = ~ref_l4_vsum(b, &ri);
	if (s->proto == PKT_UDP && v == 0)
		v = 0xffff;
	if (s->bad_csum) {
		v ^= 0x5a5a;
		if (v == 0 || v == 0xffff)
			v ^= 0x0101;
	}
	ref_put16(c, v);
	return s->size;
}

const char *pkt_name(const struct pkt_spec *s)
{
	static __thread char buf[160];
	const char *l4 = s->proto == PKT_UDP ? "udp" :
			 s->proto == PKT_TCP ? "tcp" : "icmp";

	snprintf(buf, sizeof(buf),
		 "%u B ipv%d/%s vlans %u ipopt %u ext %u tcpopt %u dscp %u "
		 "ecn %u%s%s%s%s",
		 s->size, s->v6 ? 6 : 4, l4, s->vlans, s->ip_opt, s->n_ext,
		 s->tcp_opt, s->dscp, s->ecn, s->udp_nocsum ? " nocsum" : "",
		 s->bad_csum ? " badcsum" : "", s->pad ? " padded" : "",
		 s->fill == PKT_FILL_ZERO ? " zeros" :
		 s->fill == PKT_FILL_ONES ? " ones" : "");
	return buf;
}

void pkt_diff(const char *what, const uint8_t *a, size_t alen,
	      const uint8_t *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen, shown = 0;

	fprintf(stderr, "%s: got %zu bytes, want %zu\n", what, alen, blen);
	for (size_t i = 0; i < n && shown < 16; i++) {
		if (a[i] == b[i])
			continue;
		fprintf(stderr, "  [%4zu] got %02x want %02x\n", i, a[i], b[i]);
		shown++;
	}
}

void pkt_spec_fit(struct pkt_spec *s)
{
	if (s->v6 || s->proto != PKT_TCP)
		s->tcp_opt = 0;
	if (s->v6)
		s->ip_opt = 0;
	else
		s->n_ext = 0;
}
