// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The slicer's route verdict cache (issue 19 item 2; bpf/nfsl_route.h)
 * through BPF_PROG_TEST_RUN: a packet whose whole lookup input matches an
 * entry of the current route generation and age hits, anything else
 * misses and is looked up; the MTU check stays exact per packet; with the
 * cache off (route_cache_us 0) nothing is cached or counted. And the
 * library's generation bump (nfsl/route.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>
#include <bpf/bpf.h>

#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "nfsl/route.h"

TestSuite(route_cache, .init = h_setup, .fini = h_teardown, .timeout = 30);

/* IPv4 frame offsets of pkt_build without VLANs or options. */
#define OFF_TOS 15
#define OFF_SADDR 26
#define OFF_DADDR 30
#define OFF_SPORT 34
#define OFF_DPORT 36
/* IPv6: the traffic class and flow label word, the addresses, the ports */
#define OFF6_FLOW 14
#define OFF6_DADDR 38
#define OFF6_SPORT 54

static void cache_on(uint32_t age_us)
{
	h_configure(256, 0, 8, 2);
	H.cfg.route_cache_us = age_us;
	h_write_config();
}

/* Slice @in (expect it sliced: XDP_PASS, shorter) and return the
 * counters. */
static void slice_one(const char *what, const uint8_t *in, size_t len)
{
	uint8_t out[PKT_MAX];
	uint32_t olen;

	cr_assert_eq(h_slice(in, len, out, &olen), V_XDP_PASS, "%s", what);
	cr_assert_lt(olen, len, "%s: not sliced", what);
}

static void sleep_ms(long ms)
{
	struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };

	nanosleep(&t, NULL);
}

/* The second packet's change, and whether it may hit the first one's
 * entry. */
struct variant {
	const char *name;
	int v6;
	int off;        /* byte of the frame to change, -1: none */
	int ingress;    /* 1: enters on the other domain interface */
	int flush;      /* 1: the route generation is bumped in between */
	long sleep_ms;  /* wait in between */
	uint32_t age_us;
	int hit;
};

static const struct variant variants[] = {
	{ "same IPv4 packet", 0, -1, 0, 0, 0, 1000000, 1 },
	{ "same IPv6 packet", 1, -1, 0, 0, 0, 1000000, 1 },
	{ "other source port", 0, OFF_SPORT + 1, 0, 0, 0, 1000000, 0 },
	{ "other destination port", 0, OFF_DPORT + 1, 0, 0, 0, 1000000, 0 },
	{ "other source address", 0, OFF_SADDR + 3, 0, 0, 0, 1000000, 0 },
	{ "other destination address", 0, OFF_DADDR + 3, 0, 0, 0, 1000000, 0 },
	{ "other tos", 0, OFF_TOS, 0, 0, 0, 1000000, 0 },
	{ "other IPv6 destination", 1, OFF6_DADDR + 15, 0, 0, 0, 1000000, 0 },
	{ "other IPv6 flow label", 1, OFF6_FLOW + 3, 0, 0, 0, 1000000, 0 },
	{ "other IPv6 source port", 1, OFF6_SPORT + 1, 0, 0, 0, 1000000, 0 },
	{ "other ingress", 0, -1, 1, 0, 0, 1000000, 0 },
	{ "generation bumped", 0, -1, 0, 1, 0, 1000000, 0 },
	/* 30 ms > 5 ms age + a coarse clock tick (<= 10 ms, HZ >= 100) */
	{ "aged entry", 0, -1, 0, 0, 30, 5000, 0 },
	{ "30 ms, within a 1 s age", 0, -1, 0, 0, 30, 1000000, 1 },
};

/* Two packets of one flow, the second changed as @v says: the first is
 * a miss, the second a hit or a miss, both sliced (every variant still
 * routes out of a domain interface). */
Test(route_cache, hit_or_miss)
{
	for (size_t i = 0; i < ARRAY_SIZE(variants); i++) {
		const struct variant *v = &variants[i];
		struct pkt_spec s = { .size = 1000, .v6 = v->v6, .proto = PKT_UDP };
		struct nfsl_counters want = { .sliced = 2, .route_cache_miss = 2 - v->hit,
					      .route_cache_hit = v->hit };
		uint8_t in[PKT_MAX];
		size_t len = pkt_build(&s, in);
		int if_in = H.if_in;

		cache_on(v->age_us);
		want.parked_bytes = 2 * (len - pkt_hdr_len(&s));
		slice_one(v->name, in, len);
		if (v->off >= 0)
			in[v->off] ^= 0x04;
		if (v->flush)
			h_route_flush();
		if (v->sleep_ms)
			sleep_ms(v->sleep_ms);
		if (v->ingress) {
			/* nfut-out as a domain ingress with the packets' MAC */
			memcpy(H.cfg.ifaces[1].mac, h_mac_in, 6);
			h_write_config();
			H.if_in = H.if_out;
		}
		slice_one(v->name, in, len);
		H.if_in = if_in;
		h_expect_counters(&want, v->name);
	}
}

/* A hit compares this packet's length with the egress MTU the entry
 * keeps: a larger packet of a cached flow passes for PMTU, a smaller one
 * after it is sliced again; an entry made by a packet too large for the
 * MTU lets no smaller packet hit (the route is unknown). */
Test(route_cache, mtu_exact_per_packet)
{
	struct pkt_spec s = { .size = 1000, .proto = PKT_UDP };
	struct nfsl_counters mtu = { .skipped_mtu = 1, .route_cache_hit = 1 };
	struct nfsl_counters big_miss = { .skipped_mtu = 1, .route_cache_miss = 1 };
	struct nfsl_counters hit = { .route_cache_hit = 1 }, miss = { .route_cache_miss = 1 };
	uint8_t in[PKT_MAX], out[PKT_MAX];
	size_t len;
	uint32_t olen;

	h_set_mtu(H_IF_OUT, 1400);
	cache_on(1000000);
	len = pkt_build(&s, in);
	x_slice_ok("986 B, MTU 1400: miss", in, len, h_part_base(), 1, &miss, out, &olen);
	s.size = 1514;
	len = pkt_build(&s, in);
	x_slice_untouched("1500 B of the cached flow, MTU 1400", in, len, V_XDP_PASS, &mtu);
	s.size = 1414;
	len = pkt_build(&s, in);
	x_slice_ok("1400 B of the cached flow: a hit", in, len, h_part_base() + 1, 1, &hit,
		   out, &olen);

	h_reset();
	s.size = 1514;
	len = pkt_build(&s, in);
	x_slice_untouched("1500 B first, MTU 1400: miss", in, len, V_XDP_PASS, &big_miss);
	x_slice_untouched("1500 B again: a hit of the MTU entry", in, len, V_XDP_PASS, &mtu);
	s.size = 1000;
	len = pkt_build(&s, in);
	x_slice_ok("986 B after it: looked up", in, len, h_part_base(), 1, &miss, out, &olen);
}

/* With the cache off every packet is looked up: no hit, no miss counted,
 * and a route change applies to the next packet without any flush. */
Test(route_cache, off_never_hits)
{
	struct pkt_spec s = { .size = 1000, .proto = PKT_UDP };
	struct nfsl_counters none = { 0 }, mtu = { .skipped_mtu = 1 };
	uint8_t in[PKT_MAX], out[PKT_MAX];
	size_t len = pkt_build(&s, in);
	uint32_t olen;

	cache_on(0);
	for (int i = 0; i < 4; i++)
		x_slice_ok("cache off", in, len, h_part_base() + i, 1, &none, out, &olen);
	cr_assert_eq(system("ip link set dev " H_IF_OUT " mtu 900"), 0);
	x_slice_untouched("cache off, MTU now 900, no flush", in, len, V_XDP_PASS, &mtu);
}

/* With the cache on, a change no one reported stays unseen until the
 * generation is bumped: what nfslice and nfsliced bump it for. */
Test(route_cache, stale_until_flushed)
{
	struct pkt_spec s = { .size = 1000, .proto = PKT_UDP };
	struct nfsl_counters hit = { .route_cache_hit = 1 };
	struct nfsl_counters mtu = { .skipped_mtu = 1, .route_cache_miss = 1 };
	uint8_t in[PKT_MAX], out[PKT_MAX];
	size_t len = pkt_build(&s, in);
	uint32_t olen;

	cache_on(1000000);
	slice_one("first", in, len);
	cr_assert_eq(system("ip link set dev " H_IF_OUT " mtu 900"), 0);
	x_slice_ok("MTU 900 unreported: the cached verdict", in, len, h_part_base() + 1, 1, &hit,
		   out, &olen);
	h_route_flush();
	x_slice_untouched("after the flush", in, len, V_XDP_PASS, &mtu);
}

/* nfsl_route_gen_bump on a bpffs directory of its own: atomic +1 each
 * call, the errors its docstring names. */
static char gdir[96];

static void gdir_make(void)
{
	snprintf(gdir, sizeof(gdir), "/sys/fs/bpf/nfsl-unit-rgen-%d", getpid());
	cr_assert_eq(mkdir(gdir, 0700), 0, "%s: %s", gdir, strerror(errno));
}

static void gdir_remove(void)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/" NFSL_PIN_ROUTE_GEN, gdir);
	unlink(path);
	rmdir(gdir);
}

/* Pin an mmapable array of one @value_size B value as the generation. */
static void pin_gen(__u32 value_size)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	char path[160];
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rgen", 4, value_size, 1, &o);

	cr_assert_geq(fd, 0, "map: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/" NFSL_PIN_ROUTE_GEN, gdir);
	unlink(path);
	cr_assert_eq(bpf_obj_pin(fd, path), 0, "pin: %s", strerror(errno));
	close(fd);
}

TestSuite(route_gen, .init = gdir_make, .fini = gdir_remove, .timeout = 10);

Test(route_gen, bump_and_errors)
{
	__u64 gen = 99;

	cr_expect_eq(nfsl_route_gen_bump_at(gdir, &gen), -ENOENT, "no pin");
	pin_gen(4);
	cr_expect_eq(nfsl_route_gen_bump_at(gdir, &gen), -EPROTO, "a 4-byte value");
	pin_gen(8);
	for (__u64 want = 1; want <= 3; want++) {
		cr_assert_eq(nfsl_route_gen_bump_at(gdir, &gen), 0);
		cr_expect_eq(gen, want);
	}
	{
		struct nfsl_domain d = { 0 };

		snprintf(d.dir, sizeof(d.dir), "%s", gdir);
		cr_assert_eq(nfsl_route_gen_bump(&d, NULL), 0);
		cr_assert_eq(nfsl_route_gen_read(&d, &gen), 0);
		cr_expect_eq(gen, 4, "the bump through the domain");
	}
}
