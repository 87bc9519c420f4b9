// SPDX-License-Identifier: GPL-2.0
/*
 * The srTCM NF (userspace/lib/nf/qos.c), in user space, no root:
 *   - every packet's color against RFC 2697 §3-§4 written here
 *     independently: tokens counted from the meter's start time in 128-bit
 *     arithmetic (the k-th token at k/CIR s), given to Tc then Te, over
 *     random packet sizes, inter-arrival times (0 to hours) and bursts;
 *   - the original IP length (orig_len) metered, not the frame's;
 *   - yellow and red re-marking: the DSCP set, ECN kept, the IPv4 header
 *     checksum right, IPv6 traffic class; never DSCP 63;
 *   - the per-worker split of CIR, CBS and EBS; options and their errors;
 *     frames it cannot meter pass unchanged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "nf/nfsl_nf_qos.h"
#include "nfsl_consts.h"
#include "check.h"
#include "pkt.h"
#include "ref.h"

TestSuite(nf_qos, .timeout = 60);

#define NS 1000000000ull
#define MAXF 2048

enum { GREEN, YELLOW, RED };

static __u64 rnd(__u64 *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* ======================================================================
 * RFC 2697, independently
 * ====================================================================== */

struct rfc_meter {
	__u64 cir, cbs, ebs;
	__u64 tc, te;
	__u64 t0;
	unsigned __int128 arrived; /* tokens since t0 */
	bool started;
};

static void rfc_init(struct rfc_meter *m, __u64 cir, __u64 cbs, __u64 ebs)
{
	*m = (struct rfc_meter){ .cir = cir, .cbs = cbs, .ebs = ebs, .tc = cbs, .te = ebs };
}

/* §3: "Tc and Te are initially full"; "the token count Tc is incremented
 * by one CIR times per second up to CBS, and if Tc is less than CBS, Te is
 * not incremented" (else up to EBS). §4 color-blind: Tc - B >= 0 green,
 * else Te - B >= 0 yellow, else red, decrementing the bucket that paid. */
static int rfc_color(struct rfc_meter *m, __u64 now, __u64 b)
{
	if (!m->started) {
		m->started = true;
		m->t0 = now;
	} else {
		unsigned __int128 total = (unsigned __int128)(now - m->t0) * m->cir / NS;
		unsigned __int128 n = total - m->arrived, to_c, to_e;

		m->arrived = total;
		to_c = n < m->cbs - m->tc ? n : m->cbs - m->tc;
		m->tc += to_c;
		n -= to_c;
		to_e = n < m->ebs - m->te ? n : m->ebs - m->te;
		m->te += to_e;
	}
	if (m->tc >= b) {
		m->tc -= b;
		return GREEN;
	}
	if (m->te >= b) {
		m->te -= b;
		return YELLOW;
	}
	return RED;
}

/* ======================================================================
 * Helpers
 * ====================================================================== */

static int qos_open(void **sh, const char *const *kv, unsigned int nworkers, char *err)
{
	struct nfsl_nf_conf conf = { .kv = kv, .nworkers = nworkers, .ndevs = 2 };

	*sh = NULL;
	return nfsl_nf_qos.init(sh, &conf, err, 256);
}

static void *qos_must(const char *const *kv, unsigned int nworkers)
{
	char err[256];
	void *sh;

	cr_assert_eq(qos_open(&sh, kv, nworkers, err), 0, "init: %s", err);
	return sh;
}

/* DSCP of the parsed frame @f. */
static __u8 dscp_of(const __u8 *f, size_t len)
{
	struct ref_info ri;

	cr_assert_eq(ref_parse(f, len, &ri), 0);
	return ri.dscp;
}

/*
 * The frame after the NF: green unchanged; a re-marked one differs from
 * @before in the DSCP (to @dscp) and, for IPv4, the header checksum only,
 * with ECN kept and a valid packet (tests/unit/ref.c).
 */
static void expect_marked(const char *what, const __u8 *before, const __u8 *after, size_t len,
			  int dscp)
{
	struct ref_info rb, ra;
	const char *bad;

	if (dscp < 0) {
		cr_assert(!memcmp(before, after, len), "%s: a green frame changed", what);
		return;
	}
	cr_assert_eq(ref_parse(before, len, &rb), 0);
	cr_assert_eq(ref_parse(after, len, &ra), 0);
	cr_assert_eq(ra.dscp, dscp, "%s: DSCP %u, want %d", what, ra.dscp, dscp);
	cr_assert_neq(ra.dscp, NFSL_DSCP_SLICED);
	cr_assert_eq(ra.ecn, rb.ecn, "%s: ECN", what);
	bad = ref_check(after, len, true);
	cr_assert_null(bad, "%s: %s", what, bad);
	for (size_t i = 0; i < len; i++) {
		bool tos = rb.v6 ? i == rb.l3off || i == rb.l3off + 1
				 : i == rb.l3off + 1 || i == rb.l3off + 10 || i == rb.l3off + 11;

		if (!tos)
			cr_assert_eq(after[i], before[i], "%s: byte %zu changed", what, i);
	}
	if (rb.v6) /* version and flow label kept */
		cr_assert(after[rb.l3off] >> 4 == 6 &&
			  (after[rb.l3off + 1] & 0xf) == (before[rb.l3off + 1] & 0xf));
}

/* ======================================================================
 * Against the RFC
 * ====================================================================== */

struct run_cfg {
	const char *cir, *cbs, *ebs; /* options */
	__u64 rate, c, e;            /* the same in bytes/s and bytes */
	__u64 gap_scale;             /* typical inter-arrival, ns; 1: the
				      * arithmetic's bounds, all green */
};

static void against_rfc(const struct run_cfg *rc, bool mark_red, __u64 seed, int packets)
{
	char o1[64], o2[64], o3[64];
	const char *kv[] = { o1, o2, o3, mark_red ? "red=mark" : "red=drop", NULL };
	struct pkt_spec s4 = { .size = 90, .proto = PKT_UDP, .ecn = 2 };
	struct pkt_spec s6 = { .size = 120, .v6 = 1, .proto = PKT_TCP, .ecn = 1, .dscp = 10 };
	__u8 t4[MAXF], t6[MAXF], f[64][MAXF];
	size_t l4 = pkt_build(&s4, t4), l6 = pkt_build(&s6, t6);
	struct nfsl_nf_qos_counters c, want = {};
	struct nfsl_nf_pkt p[64];
	struct rfc_meter m;
	__u64 now = rnd(&seed) % NS;
	void *sh, *w;
	int sent = 0, col[64];

	snprintf(o1, sizeof(o1), "cir=%s", rc->cir);
	snprintf(o2, sizeof(o2), "cbs=%s", rc->cbs);
	snprintf(o3, sizeof(o3), "ebs=%s", rc->ebs);
	sh = qos_must(kv, 1);
	w = nfsl_nf_qos.worker(sh, 0, 1);
	rfc_init(&m, rc->rate, rc->c, rc->e);
	while (sent < packets) {
		unsigned int n = 1 + rnd(&seed) % 32;
		struct nfsl_nf_ctx ctx = { .now_ns = now, .nworkers = 1, .ndevs = 2 };

		for (unsigned int i = 0; i < n; i++) {
			bool v6 = rnd(&seed) % 4 == 0;
			__u32 b = 40 + rnd(&seed) % 1461; /* 40..1500 IP bytes */

			memcpy(f[i], v6 ? t6 : t4, v6 ? l6 : l4);
			p[i] = (struct nfsl_nf_pkt){ .data = f[i], .len = v6 ? l6 : l4, .orig_len = b,
						     .in = 0, .out = 1 };
			col[i] = rfc_color(&m, now, b);
			if (col[i] == GREEN)
				want.green++, want.green_bytes += b;
			else if (col[i] == YELLOW)
				want.yellow++, want.yellow_bytes += b;
			else
				want.red++, want.red_bytes += b;
		}
		nfsl_nf_qos.burst(sh, w, p, n, &ctx);
		for (unsigned int i = 0; i < n; i++) {
			bool v6 = p[i].len == l6;
			const __u8 *t = v6 ? t6 : t4;
			char what[96];

			snprintf(what, sizeof(what), "packet %d (%u B at %llu ns)", sent + i,
				 p[i].orig_len, (unsigned long long)now);
			if (col[i] == RED && !mark_red) {
				cr_assert_eq(p[i].out, NFSL_NF_DROP, "%s: red, not dropped", what);
				continue;
			}
			cr_assert_eq(p[i].out, 1, "%s: dropped, color %d", what, col[i]);
			expect_marked(what, t, f[i], p[i].len,
				      col[i] == GREEN ? -1 : col[i] == YELLOW ? 12 : 14);
		}
		sent += n;
		/* mostly around the rate of the mean packet, sometimes a
		 * pause, sometimes long idle, sometimes the same instant */
		switch (rnd(&seed) % 16) {
		case 0:
			break;
		case 1:
			now += rnd(&seed) % (3600 * NS);
			break;
		case 2:
			now += rnd(&seed) % (100 * rc->gap_scale + 1);
			break;
		default:
			now += rnd(&seed) % (2 * n * rc->gap_scale + 1);
		}
	}
	if (getenv("NFSL_NF_VERBOSE") && *getenv("NFSL_NF_VERBOSE") == '1')
		printf("nf_qos: cir=%s cbs=%s ebs=%s red=%s: %d packets green %llu yellow %llu "
		       "red %llu, as RFC 2697\n", rc->cir, rc->cbs, rc->ebs, mark_red ? "mark" : "drop",
		       sent, (unsigned long long)want.green, (unsigned long long)want.yellow,
		       (unsigned long long)want.red);
	nfsl_nf_qos_counters(w, &c);
	cr_assert(!memcmp(&c, &want, sizeof(c)), "counters: green %llu yellow %llu red %llu",
		  (unsigned long long)c.green, (unsigned long long)c.yellow,
		  (unsigned long long)c.red);
	/* the mix must exercise the colors the buckets allow (a bucket of 0
	 * gives none of its color) for the comparison to mean much */
	if (rc->gap_scale > 1)
		cr_assert(!want.green == !rc->c && !want.yellow == !rc->e && want.red,
			  "cir=%s: green %llu yellow %llu red %llu", rc->cir,
			  (unsigned long long)want.green, (unsigned long long)want.yellow,
			  (unsigned long long)want.red);
	nfsl_nf_qos.worker_fini(w);
	nfsl_nf_qos.fini(sh);
}

Test(nf_qos, colors_match_rfc2697)
{
	/* gap_scale: ns a 770-B mean packet takes at CIR, a bit less */
	static const struct run_cfg cfgs[] = {
		{ "1000", "3000", "3000", 1000, 3000, 3000, 700000000ull },
		{ "7", "1500", "1500", 7, 1500, 1500, 100000000000ull },
		{ "10Mbit", "15000", "30000", 1250000, 15000, 30000, 560000 },
		{ "1250k", "15k", "30k", 1250000, 15000, 30000, 560000 },
		{ "999999937", "1500", "3000", 999999937, 1500, 3000, 700 },
		{ "10Gbit", "100k", "0", 1250000000, 100000, 0, 560 },
		{ "1M", "0", "5000", 1000000, 0, 5000, 700000 },
		{ "3B", "1500B", "1501", 3, 1500, 1501, 230000000000ull },
		{ "1099511627776", "4294967295", "4294967295", 1ull << 40, 0xffffffffull,
		  0xffffffffull, 1 },
		{ "1099511627776", "1500", "1500", 1ull << 40, 1500, 1500, 2 },
	};
	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		against_rfc(&cfgs[i], false, 1000 + i, 30000);
		against_rfc(&cfgs[i], true, 2000 + i, 30000);
	}
}

/* A sliced header of 80 B that was a 1500-B packet is metered as 1500. */
Test(nf_qos, meters_orig_len)
{
	static const char *const kv[] = { "cir=1000", "cbs=3000", "ebs=1500", NULL };
	struct pkt_spec s = { .size = 1514, .proto = PKT_UDP };
	__u8 full[MAXF], sl[MAXF], f[4][MAXF];
	size_t len = pkt_build(&s, full), slen = x_sliced(full, len, 0, 1, 1, sl);
	void *sh = qos_must(kv, 1), *w = nfsl_nf_qos.worker(sh, 0, 1);
	struct nfsl_nf_ctx ctx = { .now_ns = 5 * NS, .nworkers = 1, .ndevs = 2 };
	struct nfsl_nf_qos_counters c;
	struct nfsl_nf_pkt p[4];

	cr_assert_lt(slen, 80);
	for (int i = 0; i < 4; i++) {
		memcpy(f[i], sl, slen);
		p[i] = (struct nfsl_nf_pkt){ .data = f[i], .len = slen, .orig_len = 1500, .out = 1 };
	}
	nfsl_nf_qos.burst(sh, w, p, 4, &ctx);
	/* 1500 + 1500 = CBS: two green, then EBS pays one, then red */
	expect_marked("1st", sl, f[0], slen, -1);
	expect_marked("2nd", sl, f[1], slen, -1);
	expect_marked("3rd", sl, f[2], slen, 12);
	cr_assert_eq(p[3].out, NFSL_NF_DROP);
	nfsl_nf_qos_counters(w, &c);
	cr_assert_eq(c.green_bytes, 3000);
	cr_assert_eq(c.yellow_bytes, 1500);
	cr_assert_eq(c.red_bytes, 1500);
	/* the report's view (nfsl_nf_ops.counters) */
	const char *names[32];
	__u64 vals[32];

	cr_assert_eq(nfsl_nf_qos.counters(w, names, vals, 32), 7);
	cr_assert_str_eq(names[4], "yellow_bytes");
	cr_assert_eq(vals[4], 1500);
	/* the yellow one still carries its token: the splicer keeps DSCP 12 */
	cr_assert(!memcmp(f[2] + slen - NFSL_TOKEN_LEN, sl + slen - NFSL_TOKEN_LEN, NFSL_TOKEN_LEN));
	nfsl_nf_qos.worker_fini(w);
	nfsl_nf_qos.fini(sh);

	/* orig_len 0 (not filled): the frame's own IP length, 1500 */
	sh = qos_must(kv, 1);
	w = nfsl_nf_qos.worker(sh, 0, 1);
	for (int i = 0; i < 3; i++) {
		memcpy(f[0], full, len);
		p[0] = (struct nfsl_nf_pkt){ .data = f[0], .len = len, .out = 1 };
		nfsl_nf_qos.burst(sh, w, p, 1, &ctx);
	}
	nfsl_nf_qos_counters(w, &c);
	cr_assert(c.green == 2 && c.yellow == 1 && c.green_bytes == 3000);
	nfsl_nf_qos.worker_fini(w);
	nfsl_nf_qos.fini(sh);
}

/* Yellow and red marking on IPv4 (options, VLANs, ECN) and IPv6. */
Test(nf_qos, marking)
{
	static const struct pkt_spec specs[] = {
		{ .size = 200, .proto = PKT_UDP, .ecn = 3 },
		{ .size = 200, .proto = PKT_TCP, .ip_opt = 8, .vlans = 2, .ecn = 1, .dscp = 46 },
		{ .size = 200, .proto = PKT_UDP, .udp_nocsum = true, .dscp = NFSL_DSCP_SLICED },
		{ .size = 200, .v6 = 1, .proto = PKT_UDP, .ecn = 2, .dscp = 63 },
		{ .size = 220, .v6 = 1, .proto = PKT_TCP, .n_ext = 1, .ext = { PKT_EXT_HBH }, .ecn = 3 },
	};
	static const char *const drop[] = { "cir=1", "cbs=0", "ebs=100", NULL };
	static const char *const mark[] = { "cir=1", "cbs=0", "ebs=100", "red=mark", NULL };
	static const char *const own[] = { "cir=1", "cbs=0", "ebs=100", "red=mark", "red_dscp=46",
					   "yellow_dscp=0", NULL };
	const char *const *cfg[] = { drop, mark, own };
	const int yd[] = { 12, 12, 0 }, rd[] = { -1, 14, 46 };

	for (int k = 0; k < 3; k++) {
		for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
			void *sh = qos_must(cfg[k], 1), *w = nfsl_nf_qos.worker(sh, 0, 1);
			struct nfsl_nf_ctx ctx = { .nworkers = 1, .ndevs = 2 };
			__u8 t[MAXF], f[2][MAXF];
			size_t len = pkt_build(&specs[s], t);
			struct nfsl_nf_pkt p[2];

			for (int i = 0; i < 2; i++) {
				memcpy(f[i], t, len);
				p[i] = (struct nfsl_nf_pkt){ .data = f[i], .len = len, .orig_len = 100,
							     .out = 1 };
			}
			nfsl_nf_qos.burst(sh, w, p, 2, &ctx);
			expect_marked(pkt_name(&specs[s]), t, f[0], len, yd[k]);
			if (rd[k] < 0)
				cr_assert_eq(p[1].out, NFSL_NF_DROP);
			else
				expect_marked(pkt_name(&specs[s]), t, f[1], len, rd[k]);
			nfsl_nf_qos.worker_fini(w);
			nfsl_nf_qos.fini(sh);
		}
	}
}

/* Never DSCP 63: refused as an option, never written. */
Test(nf_qos, never_dscp_63)
{
	static const char *const bad[][5] = {
		{ "cir=1", "cbs=1", "ebs=1", "yellow_dscp=63", NULL },
		{ "cir=1", "cbs=1", "ebs=1", "red_dscp=63", NULL },
		{ "cir=1", "cbs=1", "ebs=1", "red_dscp=64", NULL },
	};
	static const char *const kv[] = { "cir=100000", "cbs=3000", "ebs=3000", "red=mark", NULL };
	struct pkt_spec s = { .size = 100, .proto = PKT_TCP, .dscp = NFSL_DSCP_SLICED };
	void *sh, *w;
	__u8 t[MAXF], f[MAXF];
	size_t len = pkt_build(&s, t);
	__u64 seed = 63, now = 0;
	char err[256];
	int marked = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(qos_open(&sh, bad[i], 1, err), -EINVAL);
		cr_assert(strstr(err, "give a DSCP 0..62"), "%s", err);
	}
	sh = qos_must(kv, 1);
	w = nfsl_nf_qos.worker(sh, 0, 1);
	for (int i = 0; i < 20000; i++) {
		struct nfsl_nf_ctx ctx = { .now_ns = now += rnd(&seed) % 20000000, .ndevs = 2 };
		struct nfsl_nf_pkt p = { .data = f, .len = len, .orig_len = 1500, .out = 0 };

		memcpy(f, t, len);
		nfsl_nf_qos.burst(sh, w, &p, 1, &ctx);
		if (memcmp(f, t, len)) {
			cr_assert_neq(dscp_of(f, len), NFSL_DSCP_SLICED);
			cr_assert_null(ref_check(f, len, true));
			marked++;
		}
	}
	cr_assert_gt(marked, 1000);
	nfsl_nf_qos.worker_fini(w);
	nfsl_nf_qos.fini(sh);
}

/* Worker w of n meters CIR/n, CBS/n, EBS/n (remainders to the first). */
Test(nf_qos, per_worker_split)
{
	static const char *const kv[] = { "cir=1001", "cbs=3001", "ebs=2999", NULL };
	void *sh = qos_must(kv, 2);
	struct pkt_spec s = { .size = 100, .proto = PKT_UDP };
	__u8 t[MAXF], f[MAXF];
	size_t len = pkt_build(&s, t);

	for (unsigned int wi = 0; wi < 2; wi++) {
		void *w = nfsl_nf_qos.worker(sh, wi, 2);
		struct rfc_meter m;
		__u64 seed = 7 + wi, now = 0;

		rfc_init(&m, wi ? 500 : 501, wi ? 1500 : 1501, wi ? 1499 : 1500);
		for (int i = 0; i < 20000; i++) {
			struct nfsl_nf_ctx ctx = { .now_ns = now += rnd(&seed) % (2 * NS),
						   .worker = wi, .nworkers = 2, .ndevs = 2 };
			__u32 b = 20 + rnd(&seed) % 1481;
			struct nfsl_nf_pkt p = { .data = f, .len = len, .orig_len = b, .out = 0 };
			int col = rfc_color(&m, now, b), got;

			memcpy(f, t, len);
			nfsl_nf_qos.burst(sh, w, &p, 1, &ctx);
			got = p.out == NFSL_NF_DROP ? RED : memcmp(f, t, len) ? YELLOW : GREEN;
			cr_assert_eq(got, col, "worker %u packet %d: color %d, want %d", wi, i, got, col);
		}
		nfsl_nf_qos.worker_fini(w);
	}
	nfsl_nf_qos.fini(sh);
}

/* Frames nfsl_parse() refuses pass unchanged and unmetered; frames an
 * earlier NF dropped are left alone. */
Test(nf_qos, unmetered)
{
	static const char *const kv[] = { "cir=1", "cbs=0", "ebs=1", NULL };
	static const struct pkt_spec specs[] = {
		{ .size = 100, .proto = PKT_ICMP },
		{ .size = 100, .proto = PKT_UDP, .frag_off = 0x2000 },
		{ .size = 120, .v6 = 1, .proto = PKT_UDP, .n_ext = 1, .ext = { PKT_EXT_ROUTING } },
	};
	void *sh = qos_must(kv, 1), *w = nfsl_nf_qos.worker(sh, 0, 1);
	struct nfsl_nf_ctx ctx = { .ndevs = 2 };
	struct nfsl_nf_qos_counters c;
	__u8 t[MAXF], f[MAXF];
	__u64 n = 0, seed = 3;

	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		size_t full = pkt_build(&specs[s], t);

		for (size_t len = 0; len <= full; len++, n++) {
			struct nfsl_nf_pkt p = { .data = f, .len = len, .orig_len = 1500, .out = 1 };

			memcpy(f, t, len);
			nfsl_nf_qos.burst(sh, w, &p, 1, &ctx);
			cr_assert_eq(p.out, 1);
			cr_assert(!memcmp(f, t, len));
		}
	}
	for (int k = 0; k < 20000; k++, n++) {
		size_t len = rnd(&seed) % 100;
		struct nfsl_nf_pkt p = { .data = f, .len = len, .out = 1 };

		for (size_t i = 0; i < len; i++)
			f[i] = rnd(&seed);
		if (len > 14) { /* IPv4, but no UDP/TCP with right lengths */
			f[12] = 8;
			f[13] = 0;
			f[14] = 0x45;
			f[23] = 1;
		}
		nfsl_nf_qos.burst(sh, w, &p, 1, &ctx);
		cr_assert_eq(p.out, 1);
	}
	nfsl_nf_qos_counters(w, &c);
	cr_assert_eq(c.unmetered, n);
	cr_assert_eq(c.green + c.yellow + c.red, 0);

	struct pkt_spec s = { .size = 100, .proto = PKT_UDP };
	size_t len = pkt_build(&s, f);
	struct nfsl_nf_pkt p = { .data = f, .len = len, .out = NFSL_NF_DROP };

	nfsl_nf_qos.burst(sh, w, &p, 1, &ctx);
	nfsl_nf_qos_counters(w, &c);
	cr_assert_eq(c.green + c.yellow + c.red + c.unmetered, n, "a dropped frame is not metered");
	nfsl_nf_qos.worker_fini(w);
	nfsl_nf_qos.fini(sh);
}

Test(nf_qos, options)
{
	static const struct { const char *kv[6]; const char *want; } cases[] = {
		{ { "cbs=1", "ebs=1", NULL }, "cir= is missing" },
		{ { "cir=1", "ebs=1", NULL }, "cbs= is missing" },
		{ { "cir=1", "cbs=1", NULL }, "ebs= is missing" },
		{ { "cir=0", "cbs=1", "ebs=1", NULL }, "cir=0: give the committed information rate" },
		{ { "cir=12bit", "cbs=1", "ebs=1", NULL }, "cir=12bit" },
		{ { "cir=1.5M", "cbs=1", "ebs=1", NULL }, "cir=1.5M" },
		{ { "cir=10Mbps", "cbs=1", "ebs=1", NULL }, "cir=10Mbps" },
		{ { "cir=2000G", "cbs=1", "ebs=1", NULL }, "cir=2000G" },
		{ { "cir=1", "cbs=5G", "ebs=1", NULL }, "cbs=5G: give the committed burst size" },
		{ { "cir=1", "cbs=1", "ebs=1bit", NULL }, "ebs=1bit: give the excess burst size" },
		{ { "cir=1", "cbs=0", "ebs=0", NULL }, "cbs=0 and ebs=0" },
		{ { "cir=1", "cbs=1", "ebs=1", "red=pass", NULL }, "red=pass: give red=drop" },
		{ { "cir=1", "cbs=1", "ebs=1", "yellow_dscp=x", NULL }, "yellow_dscp=x" },
		{ { "cir=1", "cbs=1", "ebs=1", "mode=aware", NULL },
		  "unknown option 'mode': the options are cir=RATE, cbs=BYTES, ebs=BYTES" },
		{ { "cir", NULL }, "'cir' is not KEY=VALUE: give cir=RATE" },
		{ { "cir", "cbs=1", "ebs=1", "red_dscp=014", NULL }, "'cir' is not KEY=VALUE" },
		{ { "cir=1", "cbs=1", "ebs=1", "red_dscp=014", NULL },
		  "red_dscp=014: give a DSCP 0..62 (RFC 2474; 63 marks sliced packets and the "
		  "splicer would restore the original), e.g. red_dscp=14" },
		{ { "cir=010", "cbs=1", "ebs=1", NULL }, "cir=010: give the committed" },
	};
	char err[256];
	void *sh;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(qos_open(&sh, cases[i].kv, 1, err), -EINVAL, "case %zu accepted", i);
		cr_assert(strstr(err, cases[i].want), "case %zu: got '%s', want '%s'", i, err,
			  cases[i].want);
	}
	{
		const char *kv[] = { "cir=3", "cbs=1", "ebs=1", NULL };

		cr_assert_eq(qos_open(&sh, kv, 4, err), -EINVAL);
		cr_assert(strstr(err, "split over 4 workers"), "%s", err);
	}
	{
		const char *kv[] = { "cir=8bit", "cbs=1k", "ebs=2M", "red=mark", "red_dscp=0", NULL };

		cr_assert_eq(qos_open(&sh, kv, 1, err), 0, "%s", err);
		nfsl_nf_qos.fini(sh);
	}
	cr_assert_eq(nfsl_nf_find("qos"), &nfsl_nf_qos);
	cr_assert(nfsl_nf_qos.orig_len, "the datapath must fill orig_len");
}
