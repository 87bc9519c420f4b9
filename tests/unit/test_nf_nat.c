// SPDX-License-Identifier: GPL-2.0
/*
 * The nat NF (userspace/lib/nf/nat.c, nfsl_nf_nat.h) as a pure function over bursts
 * with a fake clock: translation both ways judged byte for byte against
 * frames built with the translated addresses and checksums from the
 * reference (ref.c, RFC 1071 from scratch), port allocation, filtering of
 * unsolicited frames, idle expiry, a full table, per-worker port ranges and
 * misrouted replies, CHECKSUM_PARTIAL seeds, sliced headers (the NAT's
 * incremental update composes with the splicer's into the frame a NAT of
 * the full packet gives), the configuration's errors, and garbage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>

#include "nfsl_csum.h"
#include "nfsl_hdr.h"
#include "nf/nfsl_nf_nat.h"
#include "ref.h"

#define FR_MAX 2048
#define NS 1000000000ull
#define T0 (1000 * NS) /* the fake clock's start: not 0, not small */
#define EXT "192.0.2.1"
#define LAN 0
#define WAN 1

TestSuite(nf_nat, .timeout = 120);

/* --- frames ------------------------------------------------------------- */

struct fspec {
	uint8_t proto;       /* 17 or 6 */
	const char *src, *dst;
	uint16_t sport, dport;
	uint16_t paylen;     /* L4 payload bytes */
	bool nocsum;         /* UDP checksum 0 */
	uint8_t vlan;        /* one 802.1Q tag */
	uint8_t ip_opt;      /* IPv4 option bytes, multiple of 4 */
	uint8_t tcp_opt;     /* TCP option bytes, multiple of 4 */
	uint8_t seed;        /* payload pattern */
};

static uint32_t ip4(const char *s)
{
	struct in_addr a;

	cr_assert_eq(inet_pton(AF_INET, s, &a), 1, "bad test address %s", s);
	return a.s_addr;
}

/* Ethernet (+ VLAN) / IPv4 / UDP or TCP / payload into @f, checksums from
 * the reference. Returns the frame length. */
static size_t build(uint8_t *f, const struct fspec *s)
{
	size_t off = 14, l3, l4, hl = 20 + s->ip_opt;
	size_t l4h = s->proto == 17 ? 8 : 20 + s->tcp_opt;
	uint32_t a;

	memset(f, 0, FR_MAX);
	memcpy(f, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	if (s->vlan) {
		ref_put16(f + 12, 0x8100);
		ref_put16(f + 14, s->vlan);
		off += 4;
	}
	ref_put16(f + off - 2, 0x0800);
	l3 = off;
	l4 = l3 + hl;
	f[l3] = 0x40 | hl / 4;
	f[l3 + 1] = 0x10;
	ref_put16(f + l3 + 2, hl + l4h + s->paylen);
	ref_put16(f + l3 + 4, 0x1234);
	ref_put16(f + l3 + 6, 0x4000); /* DF */
	f[l3 + 8] = 64;
	f[l3 + 9] = s->proto;
	a = ip4(s->src);
	memcpy(f + l3 + 12, &a, 4);
	a = ip4(s->dst);
	memcpy(f + l3 + 16, &a, 4);
	memset(f + l3 + 20, 1, s->ip_opt); /* NOPs */
	ref_put16(f + l4, s->sport);
	ref_put16(f + l4 + 2, s->dport);
	if (s->proto == 17) {
		ref_put16(f + l4 + 4, l4h + s->paylen);
		ref_put16(f + l4 + 6, s->nocsum ? 0 : 1); /* 1: to be computed */
	} else {
		ref_put16(f + l4 + 4, 0x0102);
		ref_put16(f + l4 + 8, 0x0304);
		f[l4 + 12] = (l4h / 4) << 4;
		f[l4 + 13] = 0x18; /* PSH ACK */
		ref_put16(f + l4 + 14, 65535);
		memset(f + l4 + 20, 1, s->tcp_opt);
	}
	for (size_t i = 0; i < s->paylen; i++)
		f[l4 + l4h + i] = (uint8_t)(i * 7 + s->seed * 13 + 1);
	ref_fix_csums(f, l4 + l4h + s->paylen);
	return l4 + l4h + s->paylen;
}

/* The frame @s with source (@src) or destination address and port
 * replaced: what a NAT must output, from scratch. */
static size_t expect(uint8_t *f, struct fspec s, bool src, const char *addr, uint16_t port)
{
	if (src) {
		s.src = addr;
		s.sport = port;
	} else {
		s.dst = addr;
		s.dport = port;
	}
	return build(f, &s);
}

/* The reply of @s: addresses and ports swapped. */
static struct fspec reply(struct fspec s)
{
	const char *a = s.src;
	uint16_t p = s.sport;

	s.src = s.dst;
	s.dst = a;
	s.sport = s.dport;
	s.dport = p;
	return s;
}

static void same(const char *what, const uint8_t *got, const uint8_t *want, size_t len)
{
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(got[i], want[i], "%s: byte %zu is %#04x, want %#04x", what, i,
			     got[i], want[i]);
}

static uint16_t l4port(const uint8_t *f, bool src)
{
	struct ref_info ri;

	cr_assert_eq(ref_parse(f, FR_MAX, &ri), 0);
	return ref_get16(f + ri.l4off + (src ? 0 : 2));
}

/* --- the NF ------------------------------------------------------------- */

#define NT_MAXW 8

struct nt {
	const struct nfsl_nf_ops *ops;
	void *shared;
	void *mine[NT_MAXW];
	unsigned int nw, ndevs;
};

/* Init from the NULL-terminated @kv; returns init's code, the message in
 * @err. */
static int nt_try(struct nt *n, unsigned int nw, unsigned int ndevs, const char *const *kv,
		  char *err, size_t errlen)
{
	struct nfsl_nf_conf conf = { .kv = kv, .nworkers = nw, .ndevs = ndevs };

	memset(n, 0, sizeof(*n));
	n->ops = nfsl_nf_find("nat");
	cr_assert_not_null(n->ops, "nat is not in nfsl_nf_all");
	n->nw = nw;
	n->ndevs = ndevs;
	err[0] = 0;
	return n->ops->init(&n->shared, &conf, err, errlen);
}

static void nt_open(struct nt *n, unsigned int nw, unsigned int ndevs, const char *const *kv)
{
	char err[256];
	int rc = nt_try(n, nw, ndevs, kv, err, sizeof(err));

	cr_assert_eq(rc, 0, "init: %d %s", rc, err);
	cr_assert_leq(nw, NT_MAXW);
	for (unsigned int w = 0; w < nw; w++) {
		n->mine[w] = n->ops->worker(n->shared, w, nw);
		cr_assert_not_null(n->mine[w], "worker %u", w);
	}
}

static void nt_close(struct nt *n)
{
	for (unsigned int w = 0; w < n->nw; w++)
		n->ops->worker_fini(n->mine[w]);
	n->ops->fini(n->shared);
}

/* One frame through worker @w at @now; returns the verdict. */
static __u16 nt_run(struct nt *n, unsigned int w, uint8_t *f, size_t len, __u16 in, __u64 now)
{
	struct nfsl_nf_pkt p = { .data = f, .len = len, .in = in, .out = 0 };
	struct nfsl_nf_ctx ctx = { .now_ns = now, .worker = w, .nworkers = n->nw, .ndevs = n->ndevs };

	n->ops->burst(n->shared, n->mine[w], &p, 1, &ctx);
	cr_assert_eq(p.len, len, "the NAT changed a frame's length");
	return p.out;
}

static struct nfsl_nf_nat_counters nt_ctr(struct nt *n, unsigned int w)
{
	struct nfsl_nf_nat_counters c;

	nfsl_nf_nat_counters(n->mine[w], &c);
	return c;
}

static const char *const kv_default[] = { "ext_ip=" EXT, NULL };

/* --- translation -------------------------------------------------------- */

static const struct fspec out_specs[] = {
	{ .proto = 17, .src = "10.0.0.5", .dst = "198.51.100.7", .sport = 40000, .dport = 53, .paylen = 100 },
	{ .proto = 17, .src = "10.1.2.3", .dst = "203.0.113.9", .sport = 5353, .dport = 4433, .paylen = 1401, .vlan = 7, .ip_opt = 8 },
	{ .proto = 6, .src = "10.0.0.5", .dst = "198.51.100.7", .sport = 40000, .dport = 443, .paylen = 1000 },
	{ .proto = 6, .src = "10.9.8.7", .dst = "203.0.113.200", .sport = 65535, .dport = 80, .paylen = 0, .tcp_opt = 12, .vlan = 1 },
	{ .proto = 6, .src = "10.255.255.254", .dst = "8.8.8.8", .sport = 1, .dport = 22, .paylen = 33, .ip_opt = 4, .tcp_opt = 40 },
};

/* Out and back, UDP and TCP: every byte as built from scratch, the
 * checksums valid by full recomputation, the payload untouched. */
Test(nf_nat, translate_both_ways)
{
	struct nt n;
	uint8_t f[FR_MAX], want[FR_MAX];

	nt_open(&n, 1, 2, kv_default);
	for (size_t i = 0; i < sizeof(out_specs) / sizeof(out_specs[0]); i++) {
		const struct fspec *s = &out_specs[i];
		struct fspec r = reply(*s);
		size_t len = build(f, s);
		uint16_t port = 1024 + i;
		char what[64];

		snprintf(what, sizeof(what), "case %zu out", i);
		cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0), WAN, "%s: verdict", what);
		cr_assert_null(ref_check(f, len, false), "%s: %s", what, ref_check(f, len, false));
		cr_assert_eq(expect(want, *s, true, EXT, port), len);
		same(what, f, want, len);

		/* the reply, to the external address and port */
		r.dst = EXT;
		r.dport = port;
		len = build(f, &r);
		snprintf(what, sizeof(what), "case %zu in", i);
		cr_assert_eq(nt_run(&n, 0, f, len, WAN, T0 + NS), LAN, "%s: verdict", what);
		cr_assert_null(ref_check(f, len, false), "%s: %s", what, ref_check(f, len, false));
		cr_assert_eq(expect(want, r, false, s->src, s->sport), len);
		same(what, f, want, len);
	}
	struct nfsl_nf_nat_counters c = nt_ctr(&n, 0);

	cr_assert_eq(c.translated_out, 5);
	cr_assert_eq(c.translated_in, 5);
	cr_assert_eq(c.new_flows, 5);
	cr_assert_eq(c.unsolicited + c.table_full + c.misrouted + c.not_ip + c.expired, 0);
	nt_close(&n);
}

/* UDP without a checksum keeps none, both ways. */
Test(nf_nat, udp_no_checksum_stays_zero)
{
	struct fspec s = { .proto = 17, .src = "10.0.0.9", .dst = "198.51.100.1", .sport = 7, .dport = 9,
			   .paylen = 64, .nocsum = true };
	struct fspec r = reply(s);
	uint8_t f[FR_MAX], want[FR_MAX];
	struct nt n;
	size_t len;

	nt_open(&n, 1, 2, kv_default);
	len = build(f, &s);
	cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0), WAN);
	expect(want, s, true, EXT, 1024);
	same("out", f, want, len);
	cr_assert_eq(ref_get16(f + 14 + 20 + 6), 0);
	r.dst = EXT;
	r.dport = 1024;
	len = build(f, &r);
	cr_assert_eq(nt_run(&n, 0, f, len, WAN, T0), LAN);
	expect(want, r, false, s.src, s.sport);
	same("in", f, want, len);
	cr_assert_eq(ref_get16(f + 14 + 20 + 6), 0);
	nt_close(&n);
}

/* The CHECKSUM_PARTIAL seed of @f's L4 checksum field (Linux
 * ~csum_tcpudp_magic(): the folded pseudo-header sum), from scratch. */
static uint16_t ref_seed(const uint8_t *f)
{
	struct ref_info ri;
	uint8_t ph[12];

	cr_assert_eq(ref_parse(f, FR_MAX, &ri), 0);
	memcpy(ph, f + ri.l3off + 12, 8);
	ph[8] = 0;
	ph[9] = ri.proto;
	ref_put16(ph + 10, ri.l3end - ri.l4off);
	return ref_fold(ref_sum(ph, 12, 0));
}

/* A UDP checksum the update computes as 0 leaves as 0xffff (RFC 768), never
 * as "no checksum": every value of one payload word, both ways. On the way,
 * the one full checksum per direction that equals the pseudo-header seed is
 * taken for a seed and left a seed (nat_rewrite; nfslice-nf's TX path
 * completes it): the documented 1 in 65,536. */
Test(nf_nat, udp_computed_zero_sent_as_ones)
{
	struct fspec s = { .proto = 17, .src = "10.0.0.9", .dst = "198.51.100.1", .sport = 7, .dport = 9,
			   .paylen = 2 };
	struct fspec r = reply(s);
	uint8_t f[FR_MAX];
	unsigned int ones = 0, seeds = 0;
	struct nt n;

	nt_open(&n, 1, 2, kv_default);
	r.dst = EXT;
	r.dport = 1024;
	for (uint32_t v = 0; v < 65536; v++) {
		for (int dir = 0; dir < 2; dir++) {
			size_t len = build(f, dir ? &r : &s);
			uint8_t *l4 = f + 14 + 20;

			ref_put16(l4 + 8, v);
			ref_put16(l4 + 6, 1);
			ref_fix_csums(f, len);
			bool seed = ref_get16(l4 + 6) == ref_seed(f);

			cr_assert_eq(nt_run(&n, 0, f, len, dir ? WAN : LAN, T0), dir ? LAN : WAN);
			cr_assert_neq(ref_get16(l4 + 6), 0, "payload %#x dir %d: checksum 0", v, dir);
			if (seed) {
				cr_assert_eq(ref_get16(l4 + 6), ref_seed(f));
				seeds++;
				continue;
			}
			cr_assert_null(ref_check(f, len, false), "payload %#x dir %d", v, dir);
			ones += ref_get16(l4 + 6) == 0xffff;
		}
	}
	cr_assert_geq(ones, 2, "the case never came up");
	cr_assert_leq(seeds, 2);
	nt_close(&n);
}

/* CHECKSUM_PARTIAL frames (a local sender over veth) carry the
 * pseudo-header seed: after the NAT the seed of the new pseudo-header, so
 * the device that completes it still recognises it. */
Test(nf_nat, partial_checksum_seed_follows)
{
	struct nt n;
	uint8_t f[FR_MAX];

	nt_open(&n, 1, 2, kv_default);
	for (int tcp = 0; tcp < 2; tcp++) {
		struct fspec s = { .proto = tcp ? 6 : 17, .src = "10.0.0.2", .dst = "198.51.100.2",
				   .sport = 1000 + tcp, .dport = 2000, .paylen = 300 };
		struct fspec r = reply(s);
		size_t len = build(f, &s), coff = 14 + 20 + (tcp ? 16 : 6);

		ref_put16(f + coff, ref_seed(f));
		cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0), WAN);
		cr_assert_eq(ref_get16(f + coff), ref_seed(f), "tcp %d out: field %#x, seed %#x", tcp,
			     ref_get16(f + coff), ref_seed(f));
		ref_fix_csums(f, len); /* what the device does */
		cr_assert_null(ref_check(f, len, false));
		cr_assert_eq(l4port(f, true), 1024 + tcp);

		r.dst = EXT;
		r.dport = 1024 + tcp;
		len = build(f, &r);
		ref_put16(f + coff, ref_seed(f));
		cr_assert_eq(nt_run(&n, 0, f, len, WAN, T0), LAN);
		cr_assert_eq(ref_get16(f + coff), ref_seed(f), "tcp %d in", tcp);
		cr_assert_eq(l4port(f, false), s.sport);
	}
	nt_close(&n);
}

/* --- flows -------------------------------------------------------------- */

/* Ports in order from start_port; a flow keeps its port; 1000 flows each
 * answered back to their own host and port. */
Test(nf_nat, allocation_order_and_many_flows)
{
	static const char *const kv[] = { "ext_ip=" EXT, "start_port=20000", NULL };
	uint8_t f[FR_MAX], want[FR_MAX];
	char src[32], dst[32];
	struct fspec s[1000];
	struct nt n;

	nt_open(&n, 1, 2, kv);
	for (int i = 0; i < 1000; i++) {
		/* distinct in one field at a time: host, port, remote, protocol */
		snprintf(src, sizeof(src), "10.0.%d.%d", i / 250, 1 + i % 250);
		snprintf(dst, sizeof(dst), "198.51.100.%d", i % 7);
		s[i] = (struct fspec){ .proto = i % 3 ? 17 : 6, .src = strdup(src), .dst = strdup(dst),
				       .sport = 1000 + i % 5, .dport = 53 + i % 2, .paylen = i % 50 };
		size_t len = build(f, &s[i]);

		cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0 + i), WAN);
		cr_assert_eq(l4port(f, true), 20000 + i, "flow %d got port %u", i, l4port(f, true));
	}
	/* again, in reverse: the same ports, no new flow */
	for (int i = 999; i >= 0; i--) {
		size_t len = build(f, &s[i]);

		cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0 + NS), WAN);
		cr_assert_eq(l4port(f, true), 20000 + i);
	}
	for (int i = 0; i < 1000; i++) {
		struct fspec r = reply(s[i]);
		size_t len;

		r.dst = EXT;
		r.dport = 20000 + i;
		len = build(f, &r);
		cr_assert_eq(nt_run(&n, 0, f, len, WAN, T0 + 2 * NS), LAN, "reply %d", i);
		expect(want, r, false, s[i].src, s[i].sport);
		same("reply", f, want, len);
	}
	struct nfsl_nf_nat_counters c = nt_ctr(&n, 0);

	cr_assert_eq(c.new_flows, 1000);
	cr_assert_eq(c.translated_out, 2000);
	cr_assert_eq(c.translated_in, 1000);
	for (int i = 0; i < 1000; i++) {
		free((char *)s[i].src);
		free((char *)s[i].dst);
	}
	nt_close(&n);
}

/* WAN frames without their flow are dropped: no flow on the port, another
 * remote host or port, another protocol, another destination address, a
 * port below start_port (VigNAT's check against spoofing; RFC 4787
 * address-and-port-dependent filtering). Nothing is rewritten. */
Test(nf_nat, unsolicited_dropped)
{
	struct fspec s = { .proto = 17, .src = "10.0.0.5", .dst = "198.51.100.7", .sport = 40000,
			   .dport = 53, .paylen = 20 };
	struct fspec ok = reply(s), bad[6];
	uint8_t f[FR_MAX], g[FR_MAX];
	struct nt n;
	size_t len;

	nt_open(&n, 1, 2, kv_default);
	len = build(f, &s);
	cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0), WAN);
	ok.dst = EXT;
	ok.dport = 1024;
	for (int i = 0; i < 6; i++)
		bad[i] = ok;
	bad[0].dport = 1025;      /* no flow there */
	bad[1].src = "198.51.100.8"; /* another host */
	bad[2].sport = 54;        /* another port */
	bad[3].proto = 6;         /* TCP to a UDP flow's port */
	bad[4].dst = "192.0.2.2"; /* not our address */
	bad[5].dport = 80;        /* below start_port */
	for (int i = 0; i < 6; i++) {
		len = build(f, &bad[i]);
		memcpy(g, f, len);
		cr_assert_eq(nt_run(&n, 0, f, len, WAN, T0), NFSL_NF_DROP, "case %d passed", i);
		same("dropped frame", f, g, len);
		cr_assert_eq(nt_ctr(&n, 0).unsolicited, (__u64)i + 1);
	}
	len = build(f, &ok);
	cr_assert_eq(nt_run(&n, 0, f, len, WAN, T0), LAN);
	cr_assert_eq(nt_ctr(&n, 0).translated_in, 1);
	nt_close(&n);
}

/* Idle timeout by the fake clock: a flow seen at t lives at t + expire and
 * is gone after; any translated frame, either way, refreshes it; its port
 * is free again. start_port=65534: two ports, so reuse shows. */
Test(nf_nat, idle_expiry)
{
	static const char *const kv[] = { "ext_ip=" EXT, "start_port=65534", "expire_ms=1500", NULL };
	const __u64 exp = 1500 * 1000000ull;
	struct fspec a = { .proto = 17, .src = "10.0.0.1", .dst = "198.51.100.1", .sport = 1, .dport = 53 };
	struct fspec b = a, c = a, ra, rb;
	uint8_t f[FR_MAX];
	struct nt n;
	size_t len;
	__u64 t;

	b.sport = 2;
	c.sport = 3;
	c.dport = 54;
	nt_open(&n, 1, 2, kv);
	len = build(f, &a);
	cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0), WAN);
	cr_assert_eq(l4port(f, true), 65534);
	len = build(f, &b);
	cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0 + exp / 2), WAN);
	cr_assert_eq(l4port(f, true), 65535);
	len = build(f, &c);
	cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0 + exp / 2), NFSL_NF_DROP, "no port left");

	ra = reply(a);
	ra.dst = EXT;
	ra.dport = 65534;
	rb = reply(b);
	rb.dst = EXT;
	rb.dport = 65535;
	/* a reply at exactly the timeout: alive, and refreshed */
	t = T0 + exp;
	len = build(f, &ra);
	cr_assert_eq(nt_run(&n, 0, f, len, WAN, t), LAN, "a flow idle exactly expire_ns expired");
	cr_assert_eq(nt_ctr(&n, 0).expired, 0);
	/* b was last seen at T0 + exp/2: gone 1 ns past its timeout */
	len = build(f, &rb);
	cr_assert_eq(nt_run(&n, 0, f, len, WAN, T0 + exp / 2 + exp), LAN);
	len = build(f, &rb);
	cr_assert_eq(nt_run(&n, 0, f, len, WAN, T0 + exp / 2 + 2 * exp + 1), NFSL_NF_DROP);
	cr_assert_eq(nt_ctr(&n, 0).expired, 2, "both flows expired by then");
	cr_assert_eq(nt_ctr(&n, 0).unsolicited, 1);

	/* ports free again: c gets a's (freed first), a anew gets b's */
	t = T0 + exp / 2 + 2 * exp + 2;
	len = build(f, &c);
	cr_assert_eq(nt_run(&n, 0, f, len, LAN, t), WAN);
	cr_assert_eq(l4port(f, true), 65534);
	len = build(f, &a);
	cr_assert_eq(nt_run(&n, 0, f, len, LAN, t), WAN);
	cr_assert_eq(l4port(f, true), 65535);
	/* the old reply to 65534 now meets c's flow, from another port: dropped */
	len = build(f, &ra);
	cr_assert_eq(nt_run(&n, 0, f, len, WAN, t), NFSL_NF_DROP);

	/* outbound traffic alone keeps a flow: c every 0.9 timeouts, 10 times */
	for (int i = 1; i <= 10; i++) {
		len = build(f, &c);
		cr_assert_eq(nt_run(&n, 0, f, len, LAN, t + i * (exp * 9 / 10)), WAN);
		cr_assert_eq(l4port(f, true), 65534, "c lost its port at %d", i);
	}
	cr_assert_eq(nt_ctr(&n, 0).expired, 3, "a expired meanwhile, c never");
	cr_assert_eq(nt_ctr(&n, 0).new_flows, 4);
	nt_close(&n);
}

/* A full table drops new flows (counted) and keeps serving the ones it
 * has; room comes back with expiry. */
Test(nf_nat, table_full)
{
	static const char *const kv[] = { "ext_ip=" EXT, "max_flows=3", "expire=2", NULL };
	struct fspec s = { .proto = 6, .src = "10.0.0.1", .dst = "198.51.100.1", .dport = 80, .paylen = 10 };
	uint8_t f[FR_MAX], g[FR_MAX];
	struct nt n;
	size_t len;

	nt_open(&n, 1, 2, kv);
	for (int i = 0; i < 5; i++) {
		s.sport = 5000 + i;
		len = build(f, &s);
		memcpy(g, f, len);
		if (i < 3) {
			cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0), WAN);
			cr_assert_eq(l4port(f, true), 1024 + i);
		} else {
			cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0), NFSL_NF_DROP, "flow %d passed", i);
			same("refused frame", f, g, len);
		}
	}
	cr_assert_eq(nt_ctr(&n, 0).table_full, 2);
	cr_assert_eq(nt_ctr(&n, 0).new_flows, 3);
	s.sport = 5001; /* an existing flow still goes */
	len = build(f, &s);
	cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0 + NS), WAN);
	cr_assert_eq(l4port(f, true), 1025);
	s.sport = 5004; /* after 2 s idle two flows are gone: room */
	len = build(f, &s);
	cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0 + 2 * NS + 1), WAN);
	cr_assert_eq(l4port(f, true), 1027, "the never used port first");
	cr_assert_eq(nt_ctr(&n, 0).expired, 2);
	nt_close(&n);
}

/* --- workers ------------------------------------------------------------ */

/* The ranges of nfsl_nf_nat_port_range are disjoint, in order, cover
 * [start_port, 65535], and agree with nfsl_nf_nat_port_owner (the
 * steering's formula) port by port. */
Test(nf_nat, port_ranges_disjoint_and_covering)
{
	static const __u16 starts[] = { 1, 1024, 32768, 60000, 65000, 65528 };

	for (size_t k = 0; k < sizeof(starts) / sizeof(starts[0]); k++) {
		for (unsigned int nw = 1; nw <= 8; nw++) {
			__u32 next = starts[k];

			for (unsigned int w = 0; w < nw; w++) {
				__u32 lo, hi;

				nfsl_nf_nat_port_range(starts[k], w, nw, &lo, &hi);
				cr_assert_eq(lo, next, "start %u nw %u w %u: gap or overlap", starts[k], nw, w);
				cr_assert_geq(hi, lo);
				for (__u32 p = lo; p <= hi; p++)
					cr_assert_eq(nfsl_nf_nat_port_owner(p, starts[k], nw), w,
						     "start %u nw %u: port %u", starts[k], nw, p);
				next = hi + 1;
			}
			cr_assert_eq(next, 65536u, "start %u nw %u: ports left over", starts[k], nw);
		}
	}
}

/* What workers really allocate: each only from its range, until every
 * port from start_port is used exactly once. */
Test(nf_nat, workers_allocate_their_ranges)
{
	static const char *const kv[] = { "ext_ip=" EXT, "start_port=65000", NULL };
	static __u8 seen[65536];
	uint8_t f[FR_MAX];
	char src[32];
	struct nt n;

	for (unsigned int nw = 1; nw <= 7; nw += 3) {
		memset(seen, 0, sizeof(seen));
		nt_open(&n, nw, 2, kv);
		for (unsigned int w = 0; w < nw; w++) {
			__u32 lo, hi;

			nfsl_nf_nat_port_range(65000, w, nw, &lo, &hi);
			for (__u32 i = 0;; i++) {
				struct fspec s = { .proto = 17, .src = src, .dst = "198.51.100.1",
						   .sport = 1 + i, .dport = 53 };
				size_t len;
				__u16 v, p;

				snprintf(src, sizeof(src), "10.0.%u.1", w);
				len = build(f, &s);
				v = nt_run(&n, w, f, len, LAN, T0);
				if (v == NFSL_NF_DROP) {
					cr_assert_eq(i, hi - lo + 1, "nw %u w %u: full after %u of %u",
						     nw, w, i, hi - lo + 1);
					break;
				}
				p = l4port(f, true);
				cr_assert_eq(p, lo + i, "nw %u w %u: port %u", nw, w, p);
				cr_assert_eq(nfsl_nf_nat_port_owner(p, 65000, nw), w);
				cr_assert_eq(seen[p]++, 0, "port %u twice", p);
			}
			cr_assert_eq(nt_ctr(&n, w).table_full, 1);
		}
		for (__u32 p = 65000; p < 65536; p++)
			cr_assert_eq(seen[p], 1, "nw %u: port %u never allocated", nw, p);
		nt_close(&n);
	}
}

/* A reply steered to a worker that does not own its port is dropped and
 * counted there; at the owner it goes through. */
Test(nf_nat, misrouted_reply)
{
	struct fspec s = { .proto = 17, .src = "10.0.0.5", .dst = "198.51.100.7", .sport = 40000,
			   .dport = 53, .paylen = 20 };
	struct fspec r = reply(s);
	uint8_t f[FR_MAX];
	struct nt n;
	__u32 lo, hi;
	size_t len;

	nt_open(&n, 4, 2, kv_default);
	nfsl_nf_nat_port_range(1024, 2, 4, &lo, &hi);
	len = build(f, &s);
	cr_assert_eq(nt_run(&n, 2, f, len, LAN, T0), WAN);
	cr_assert_eq(l4port(f, true), lo);
	r.dst = EXT;
	r.dport = lo;
	for (unsigned int w = 0; w < 4; w++) {
		len = build(f, &r);
		cr_assert_eq(nt_run(&n, w, f, len, WAN, T0), w == 2 ? LAN : NFSL_NF_DROP, "worker %u", w);
		cr_assert_eq(nt_ctr(&n, w).misrouted, (__u64)(w != 2));
		cr_assert_eq(nt_ctr(&n, w).unsolicited, 0);
		if (w == 2)
			cr_assert_eq(l4port(f, false), 40000);
	}
	nt_close(&n);
}

/* One device: the LAN is the source prefix lan_net, and both directions
 * leave where they came in. */
Test(nf_nat, one_device_by_prefix)
{
	static const char *const kv[] = { "ext_ip=" EXT, "lan_net=172.16.0.0/12", NULL };
	struct fspec s = { .proto = 6, .src = "172.20.1.2", .dst = "10.0.0.1", .sport = 999, .dport = 80 };
	struct fspec r = reply(s);
	uint8_t f[FR_MAX];
	struct nt n;
	size_t len;

	nt_open(&n, 1, 1, kv);
	len = build(f, &s);
	cr_assert_eq(nt_run(&n, 0, f, len, 0, T0), 0);
	cr_assert_eq(l4port(f, true), 1024);
	r.dst = EXT;
	r.dport = 1024;
	len = build(f, &r);
	cr_assert_eq(nt_run(&n, 0, f, len, 0, T0), 0);
	cr_assert_eq(l4port(f, false), 999);
	cr_assert_null(ref_check(f, len, false));
	/* a non-LAN source with no flow: unsolicited */
	r.dport = 1025;
	len = build(f, &r);
	cr_assert_eq(nt_run(&n, 0, f, len, 0, T0), NFSL_NF_DROP);
	cr_assert_eq(nt_ctr(&n, 0).unsolicited, 1);
	nt_close(&n);
}

/* lan=1,wan=0 swaps the sides. */
Test(nf_nat, sides_swapped)
{
	static const char *const kv[] = { "ext_ip=" EXT, "lan=1", NULL };
	struct fspec s = { .proto = 17, .src = "10.0.0.5", .dst = "198.51.100.7", .sport = 4, .dport = 5 };
	uint8_t f[FR_MAX];
	struct nt n;
	size_t len;

	nt_open(&n, 1, 2, kv);
	len = build(f, &s);
	cr_assert_eq(nt_run(&n, 0, f, len, 0, T0), NFSL_NF_DROP, "a LAN frame on the WAN device");
	len = build(f, &s);
	cr_assert_eq(nt_run(&n, 0, f, len, 1, T0), 0);
	nt_close(&n);
}

/* --- sliced headers ----------------------------------------------------- */

/*
 * A sliced header (headers + @keep payload bytes + a 16-byte token, IP and
 * UDP lengths and checksums of the short packet, as the slicer makes it)
 * goes through the NAT, then the splicer's steps (nfsl_splice_csum with the
 * parked bytes' sum, nfsl_ip_rewrite): the result must be byte for byte
 * the full packet through the NAT. The token is left alone.
 */
static void sliced_case(struct fspec s, uint16_t keep, unsigned int seed)
{
	static const uint8_t token[16] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	uint8_t full[FR_MAX], sl[FR_MAX], want[FR_MAX];
	struct ref_info ri;
	struct nt n;
	size_t flen, slen, hdr, park;
	__u32 l3len, cur_l4, new_l4, tok_off;
	__u16 tsum, psum, c, v;
	bool udp = s.proto == 17;

	s.seed = seed;
	nt_open(&n, 1, 2, kv_default);
	flen = build(full, &s);
	cr_assert_eq(ref_parse(full, flen, &ri), 0);
	hdr = ri.payoff + keep;
	park = flen - hdr;
	/* the slicer's output */
	memcpy(sl, full, hdr);
	memcpy(sl + hdr, token, 16);
	slen = hdr + 16;
	ref_put16(sl + ri.l3off + 2, slen - ri.l3off);
	if (udp)
		ref_put16(sl + ri.l4off + 4, slen - ri.l4off);
	ref_fix_csums(sl, slen);
	cr_assert_null(ref_check(sl, slen, false));
	l3len = slen - ri.l3off;
	cr_assert(l3len >= 60 && l3len <= 80, "IP length %u", l3len);

	cr_assert_eq(nt_run(&n, 0, full, flen, LAN, T0), WAN);
	cr_assert_eq(nt_run(&n, 0, sl, slen, LAN, T0), WAN);
	cr_assert_null(ref_check(sl, slen, false), "NATed header: %s", ref_check(sl, slen, false));
	same("token", sl + hdr, token, 16);
	same("kept bytes", sl + ri.payoff, full + ri.payoff, keep);
	cr_assert_eq(expect(want, s, true, EXT, 1024), flen);
	same("full", full, want, flen);

	/* splice: the token out, the parked bytes and lengths in */
	tok_off = hdr - ri.l4off;
	cur_l4 = slen - ri.l4off;
	new_l4 = flen - ri.l4off;
	tsum = nfsl_csum_at(nfsl_csum_fold(nfsl_csum_words(token, 4, 0)), tok_off);
	psum = nfsl_csum_at(nfsl_csum_fold(nfsl_csum_bytes(want + hdr, park, 0)), tok_off);
	memcpy(&c, sl + ri.l4off + (udp ? 6 : 16), 2);
	v = nfsl_splice_csum(c, cur_l4, new_l4, udp, tsum, psum);
	memcpy(sl + hdr, want + hdr, park);
	nfsl_ip_rewrite(sl + ri.l3off, false, sl[ri.l3off + 1] >> 2, flen - ri.l3off);
	nfsl_l4_rewrite(sl + ri.l4off, s.proto, new_l4, v);
	same("spliced", sl, full, flen);
	nt_close(&n);
}

Test(nf_nat, sliced_header_udp)
{
	for (unsigned int seed = 0; seed < 64; seed++)
		sliced_case((struct fspec){ .proto = 17, .src = "10.3.3.3", .dst = "198.51.100.30",
					    .sport = 3333 + seed, .dport = 443, .paylen = 1200 + seed },
			    16, seed);
}

Test(nf_nat, sliced_header_tcp)
{
	for (unsigned int seed = 0; seed < 64; seed++)
		sliced_case((struct fspec){ .proto = 6, .src = "10.3.3.3", .dst = "198.51.100.30",
					    .sport = 3333 + seed, .dport = 443, .paylen = 1400 - seed,
					    .tcp_opt = 12 },
			    8 + (seed & 1) * 4 /* even and odd kept lengths */ - (seed & 1) * 3, seed);
}

/* --- not for the NAT ---------------------------------------------------- */

/* IPv6, ICMP, fragments, ARP: dropped and counted, untouched. */
Test(nf_nat, not_ipv4_udp_tcp)
{
	struct fspec s = { .proto = 17, .src = "10.0.0.5", .dst = "198.51.100.7", .sport = 1, .dport = 2,
			   .paylen = 8 };
	uint8_t f[FR_MAX], g[FR_MAX];
	struct nt n;
	size_t len;

	nt_open(&n, 1, 2, kv_default);
	for (int i = 0; i < 4; i++) {
		len = build(f, &s);
		if (i == 0) {
			f[14 + 9] = 1; /* ICMP */
		} else if (i == 1) {
			ref_put16(f + 14 + 6, 0x2000); /* more fragments */
		} else if (i == 2) {
			ref_put16(f + 12, 0x0806); /* ARP */
		} else {
			/* IPv6 + UDP */
			memset(f + 14, 0, 48);
			ref_put16(f + 12, 0x86dd);
			f[14] = 0x60;
			ref_put16(f + 18, 8);
			f[20] = 17;
			f[21] = 64;
			ref_put16(f + 54 + 4, 8);
			len = 62;
		}
		memcpy(g, f, len);
		cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0), NFSL_NF_DROP, "case %d", i);
		same("untouched", f, g, len);
	}
	cr_assert_eq(nt_ctr(&n, 0).not_ip, 4);
	cr_assert_eq(nt_ctr(&n, 0).new_flows, 0);
	nt_close(&n);
}

/* Frames an earlier NF of the chain dropped stay dropped and uncounted. */
Test(nf_nat, dropped_on_entry_left_alone)
{
	struct fspec s = { .proto = 17, .src = "10.0.0.5", .dst = "198.51.100.7", .sport = 1, .dport = 2 };
	uint8_t f[FR_MAX], g[FR_MAX];
	struct nfsl_nf_pkt p;
	struct nfsl_nf_ctx ctx = { .now_ns = T0, .nworkers = 1, .ndevs = 2 };
	struct nt n;

	nt_open(&n, 1, 2, kv_default);
	p = (struct nfsl_nf_pkt){ .data = f, .len = build(f, &s), .in = LAN, .out = NFSL_NF_DROP };
	memcpy(g, f, p.len);
	n.ops->burst(n.shared, n.mine[0], &p, 1, &ctx);
	cr_assert_eq(p.out, NFSL_NF_DROP);
	same("untouched", f, g, p.len);
	cr_assert_eq(nt_ctr(&n, 0).new_flows + nt_ctr(&n, 0).not_ip, 0);
	nt_close(&n);
}

/* xorshift64*: a fixed sequence, so a failure repeats. */
static __u64 rnd(__u64 *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Random bytes of random lengths, and valid frames truncated, cut short in
 * their lengths or with random bytes changed, in bursts, from both sides,
 * on 2 workers with a small table and a clock that jumps: nothing crashes,
 * nothing is written past a frame's end, every verdict is a device or
 * DROP, every frame is counted once. */
Test(nf_nat, garbage_never_crashes)
{
	static const char *const kv[] = { "ext_ip=" EXT, "start_port=65500", "max_flows=8",
					  "expire_ms=5", NULL };
	struct fspec base[] = {
		{ .proto = 17, .src = "10.0.0.5", .dst = "198.51.100.7", .sport = 1, .dport = 2, .paylen = 30 },
		{ .proto = 6, .src = "10.0.0.5", .dst = "198.51.100.7", .sport = 1, .dport = 2, .paylen = 3, .tcp_opt = 8, .vlan = 3 },
		{ .proto = 17, .src = "198.51.100.7", .dst = EXT, .sport = 2, .dport = 65500, .paylen = 10 },
	};
	enum { GUARD = 64, BURST = 16 };
	static uint8_t buf[BURST][FR_MAX + GUARD];
	__u64 seed = 0x9e3779b97f4a7c15ull, now = T0, frames = 0;
	struct nfsl_nf_pkt p[BURST];
	struct nt n;

	nt_open(&n, 2, 2, kv);
	for (int round = 0; round < 20000; round++) {
		unsigned int w = rnd(&seed) & 1;
		struct nfsl_nf_ctx ctx = { .worker = w, .nworkers = 2, .ndevs = 2 };
		unsigned int nb = 1 + rnd(&seed) % BURST;

		for (unsigned int i = 0; i < nb; i++) {
			uint8_t *f = buf[i];
			__u64 r = rnd(&seed);
			size_t len;

			if (r & 1) {
				len = rnd(&seed) % 200;
				for (size_t k = 0; k < len; k++)
					f[k] = rnd(&seed);
				if (len > 14 && (r & 2))
					ref_put16(f + 12, 0x0800); /* get past Ethernet */
			} else {
				struct fspec s = base[(r >> 1) % 3];

				s.sport += (r >> 8) % 12;
				len = build(f, &s);
				if (r & 2) /* cut short */
					len = rnd(&seed) % (len + 1);
				for (int k = (r >> 4) & 3; k > 0 && len; k--)
					f[rnd(&seed) % len] = rnd(&seed);
			}
			memset(f + len, 0xa5, GUARD);
			p[i] = (struct nfsl_nf_pkt){ .data = f, .len = len, .in = (r >> 20) & 1 };
		}
		now += rnd(&seed) % 3000000; /* up to 3 ms */
		ctx.now_ns = now;
		n.ops->burst(n.shared, n.mine[w], p, nb, &ctx);
		for (unsigned int i = 0; i < nb; i++) {
			cr_assert(p[i].out == NFSL_NF_DROP || p[i].out < 2, "verdict %u", p[i].out);
			for (int k = 0; k < GUARD; k++)
				cr_assert_eq(p[i].data[p[i].len + k], 0xa5, "round %d: wrote past the end", round);
		}
		frames += nb;
	}
	__u64 counted = 0;

	for (unsigned int w = 0; w < 2; w++) {
		struct nfsl_nf_nat_counters c = nt_ctr(&n, w);

		counted += c.translated_out + c.translated_in + c.unsolicited + c.table_full +
			   c.misrouted + c.not_ip;
		cr_assert_gt(c.translated_out, 0, "worker %u translated nothing", w);
		cr_assert_gt(c.expired, 0, "worker %u expired nothing", w);
	}
	cr_assert_eq(counted, frames);
	nt_close(&n);
}

/* --- configuration ------------------------------------------------------ */

struct conf_case {
	const char *kv[4];
	unsigned int nw, ndevs;
	const char *says; /* the message names this */
};

/* Bad options: -EINVAL and a message naming the key, the value and the
 * fix. */
Test(nf_nat, config_errors)
{
	static const struct conf_case cases[] = {
		{ { NULL }, 1, 2, "ext_ip is required" },
		{ { "ext_ip=1.2.3" }, 1, 2, "ext_ip=1.2.3 is not an IPv4 address: give ext_ip=A.B.C.D" },
		{ { "ext_ip=" EXT, "start_port=0" }, 1, 2, "start_port=0 is not a port: give start_port=1..65535" },
		{ { "ext_ip=" EXT, "start_port=65536" }, 1, 2, "start_port=65536" },
		{ { "ext_ip=" EXT, "start_port=-1" }, 1, 2, "start_port=-1" },
		{ { "ext_ip=" EXT, "start_port=0x400" }, 1, 2, "start_port=0x400" },
		{ { "ext_ip=" EXT, "start_port=65534" }, 4, 2, "leaves 2 ports for 4 workers: give start_port=65532 or lower" },
		{ { "ext_ip=" EXT, "expire=0" }, 1, 2, "expire=0 is not a timeout: give a whole number of seconds" },
		{ { "ext_ip=" EXT, "expire_ms=" }, 1, 2, "expire_ms= is not a timeout: give a whole number of milliseconds" },
		{ { "ext_ip=" EXT, "expire=1", "expire_ms=5" }, 1, 2, "expire_ms=5: the timeout is already set" },
		{ { "ext_ip=" EXT, "max_flows=0" }, 1, 2, "max_flows=0 is not a flow count: give max_flows=1..65536" },
		{ { "ext_ip=" EXT, "max_flows=70000" }, 1, 2, "max_flows=70000" },
		{ { "ext_ip=" EXT, "lan=2" }, 1, 2, "lan=2 is not a device index: give lan=0 or 1" },
		{ { "ext_ip=" EXT, "wan=1" }, 1, 1, "wan=1 is not a device index: give wan=0 (the datapath has 1 device)" },
		{ { "ext_ip=" EXT, "lan=1", "wan=1" }, 1, 2, "lan=1 and wan=1 are one device" },
		{ { "ext_ip=" EXT, "lan_net=10.0.0.1/8" }, 1, 1, "lan_net=10.0.0.1/8 is not an IPv4 prefix: give lan_net=A.B.C.D/N" },
		{ { "ext_ip=" EXT, "lan_net=10.0.0.0/8" }, 1, 2, "lan_net applies to one device only" },
		{ { "ext_ip=" EXT, "port=5" }, 1, 2, "unknown option 'port': the options are ext_ip, start_port" },
		{ { "ext_ip" }, 1, 2, "'ext_ip' is not KEY=VALUE" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nt n;
		char err[256];
		int rc = nt_try(&n, cases[i].nw, cases[i].ndevs, cases[i].kv, err, sizeof(err));

		cr_assert_eq(rc, -EINVAL, "case %zu: %d (%s)", i, rc, err);
		cr_assert(strstr(err, cases[i].says), "case %zu: '%s' does not say '%s'", i, err,
			  cases[i].says);
	}
}

/* Good options take effect; the defaults are VigNAT's (start 1024,
 * 10 s). */
Test(nf_nat, config_defaults)
{
	struct fspec s = { .proto = 17, .src = "10.0.0.5", .dst = "198.51.100.7", .sport = 1, .dport = 2 };
	struct fspec r = reply(s);
	uint8_t f[FR_MAX];
	struct nt n;
	size_t len;

	nt_open(&n, 1, 2, kv_default);
	len = build(f, &s);
	cr_assert_eq(nt_run(&n, 0, f, len, LAN, T0), WAN);
	cr_assert_eq(l4port(f, true), 1024);
	r.dst = EXT;
	r.dport = 1024;
	len = build(f, &r);
	cr_assert_eq(nt_run(&n, 0, f, len, WAN, T0 + 10 * NS), LAN, "alive at 10 s");
	len = build(f, &r);
	cr_assert_eq(nt_run(&n, 0, f, len, WAN, T0 + 20 * NS + 1), NFSL_NF_DROP, "gone after 10 s idle");
	nt_close(&n);
}
