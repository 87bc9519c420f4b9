// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Drop events (issue 10 §4; bpf/nfsl_events.h, struct nfsl_event) under
 * BPF_PROG_TEST_RUN: with the domain flag on, each drop or skip worth a
 * name writes exactly one record, field by field as the packet and its
 * token say (stale, too_big, replayed, bad_token, skipped_route,
 * skipped_mtu); with the flag off, none; a full ring drops events, never
 * packets, and counts events_lost.
 */
#include <arpa/inet.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "nfsl_structs.h"
#include "pkt.h"

TestSuite(events, .init = h_setup, .fini = h_teardown, .timeout = 60);

#define EV_MAX 64

struct ev_sink {
	struct nfsl_event ev[EV_MAX];
	unsigned int n;  /* records copied */
	unsigned int seen; /* records read */
};

static int ev_collect(void *ctx, void *data, size_t size)
{
	struct ev_sink *k = ctx;

	cr_expect_eq(size, sizeof(struct nfsl_event), "record of %zu B", size);
	if (k->n < EV_MAX)
		memcpy(&k->ev[k->n++], data, sizeof(struct nfsl_event));
	k->seen++;
	return 0;
}

/* Every record in the ring now, oldest first, into @k (emptied first). */
static void ev_drain(struct ev_sink *k)
{
	struct ring_buffer *rb;

	memset(k, 0, sizeof(*k));
	rb = ring_buffer__new(H.events, ev_collect, k, NULL);
	cr_assert_not_null(rb, "cannot read the events ring buffer");
	cr_assert_geq(ring_buffer__consume(rb), 0);
	ring_buffer__free(rb);
}

static void events_on(bool on)
{
	H.cfg.flags = on ? H.cfg.flags | NFSL_CFG_EVENTS : H.cfg.flags & ~NFSL_CFG_EVENTS;
	h_write_config();
}

/* Expect @e to describe packet @s (pkt.c's fixed addresses and ports) seen
 * on @ifindex, @len bytes long, for @reason, with token @slot/@gen. */
static void ev_expect(const struct nfsl_event *e, const struct pkt_spec *s, __u32 ifindex,
		      __u32 len, __u8 reason, __u32 slot, __u32 gen, __u8 dscp)
{
	static const __u8 ip4[2][4] = { { 10, 0, 0, 1 }, { 10, 0, 0, 2 } };
	__u8 want[2][16] = {};

	if (s->v6) {
		want[0][0] = want[1][0] = 0xfd;
		want[0][15] = 1;
		want[1][15] = 2;
	} else {
		memcpy(want[0], ip4[0], 4);
		memcpy(want[1], ip4[1], 4);
	}
	cr_expect_eq(e->reason, reason, "%s: reason %u, want %u", pkt_name(s), e->reason, reason);
	cr_expect_eq(e->ifindex, ifindex, "%s: ifindex %u, want %u", pkt_name(s), e->ifindex,
		     ifindex);
	cr_expect_eq(e->len, len, "%s: len %u, want %u", pkt_name(s), e->len, len);
	cr_expect_eq(e->v6, s->v6);
	cr_expect_eq(e->proto, s->proto);
	cr_expect_eq(e->dscp, dscp, "%s: dscp %u, want %u", pkt_name(s), e->dscp, dscp);
	cr_expect_arr_eq(e->saddr, want[0], 16, "%s: source address", pkt_name(s));
	cr_expect_arr_eq(e->daddr, want[1], 16, "%s: destination address", pkt_name(s));
	cr_expect_eq(ntohs(e->sport), 1234);
	cr_expect_eq(ntohs(e->dport), 5678);
	cr_expect_eq(e->slot, slot, "%s: slot %u, want %u", pkt_name(s), e->slot, slot);
	cr_expect_eq(e->gen, gen, "%s: gen %u, want %u", pkt_name(s), e->gen, gen);
	cr_expect_neq(e->ts_ns, 0);
}

/* Splicer: stale (spliced twice), bad_token (MAC flipped), too_big (egress
 * MTU lowered after slicing), for IPv4 UDP and IPv6 TCP. */
Test(events, splicer)
{
	struct nfsl_counters stale = { .stale = 1 }, bad = { .bad_token = 1 },
			     too_big = { .too_big = 1 };
	uint8_t in[PKT_MAX], sliced[PKT_MAX], forged[PKT_MAX];
	struct ev_sink k;
	uint32_t slen, base;

	H.ifindex = H.if_out;
	for (int v6 = 0; v6 < 2; v6++) {
		struct pkt_spec s = { .size = 1400, .v6 = v6, .proto = v6 ? PKT_TCP : PKT_UDP };
		size_t len = pkt_build(&s, in);

		h_configure(256, 0, 8, 2);
		events_on(true);
		base = h_part_base();
		x_slice_ok(pkt_name(&s), in, len, base, 1, NULL, sliced, &slen);
		x_splice_ok(pkt_name(&s), sliced, slen, in, len);
		ev_drain(&k);
		cr_expect_eq(k.seen, 0, "a splice wrote %u events", k.seen);

		x_splice_untouched("second splice", sliced, slen, V_TC_SHOT, &stale);
		memcpy(forged, sliced, slen);
		forged[slen - 1] ^= 1; /* last MAC byte */
		x_splice_untouched("MAC flipped", forged, slen, V_TC_OK, &bad);
		x_slice_ok(pkt_name(&s), in, len, base + 1, 1, NULL, sliced, &slen);
		h_set_mtu(H_IF_OUT, 1300); /* IPv6 needs >= 1280 */
		x_splice_untouched("MTU 1300", sliced, slen, V_TC_SHOT, &too_big);
		h_set_mtu(H_IF_OUT, 1500);

		ev_drain(&k);
		cr_assert_eq(k.seen, 3, "%s: %u events, want 3", pkt_name(&s), k.seen);
		ev_expect(&k.ev[0], &s, H.if_out, slen, NFSL_EV_STALE, base, 1, NFSL_DSCP_SLICED);
		ev_expect(&k.ev[1], &s, H.if_out, slen, NFSL_EV_BAD_TOKEN, 0, 0,
			  NFSL_DSCP_SLICED);
		ev_expect(&k.ev[2], &s, H.if_out, slen, NFSL_EV_TOO_BIG, base + 1, 1,
			  NFSL_DSCP_SLICED);
	}
	H.ifindex = 0;
}

/* Slicer: replayed (our sliced header arriving again), skipped_route (the
 * egress is not a domain interface), skipped_mtu (egress MTU below the
 * packet). */
Test(events, slicer)
{
	struct nfsl_counters replayed = { .replayed = 1 }, route = { .skipped_route = 1 },
			     mtu = { .skipped_mtu = 1 };
	uint8_t in[PKT_MAX], sliced[PKT_MAX];
	struct ev_sink k;
	uint32_t slen, base;

	for (int v6 = 0; v6 < 2; v6++) {
		struct pkt_spec s = { .size = 1514, .v6 = v6, .proto = v6 ? PKT_UDP : PKT_TCP };
		size_t len = pkt_build(&s, in);

		h_configure(256, 0, 8, 2);
		events_on(true);
		base = h_part_base();
		x_slice_ok(pkt_name(&s), in, len, base, 1, NULL, sliced, &slen);
		x_slice_untouched("replayed", sliced, slen, V_XDP_DROP, &replayed);
		h_set_mtu(H_IF_OUT, 1499);
		x_slice_untouched("MTU 1499", in, len, V_XDP_PASS, &mtu);
		h_set_mtu(H_IF_OUT, 1500);
		H.cfg.nifaces = 1; /* H_IF_OUT leaves the domain */
		h_write_config();
		x_slice_untouched("route out of the domain", in, len, V_XDP_PASS, &route);

		ev_drain(&k);
		cr_assert_eq(k.seen, 3, "%s: %u events, want 3", pkt_name(&s), k.seen);
		ev_expect(&k.ev[0], &s, H.if_in, slen, NFSL_EV_REPLAYED, base, 1,
			  NFSL_DSCP_SLICED);
		ev_expect(&k.ev[1], &s, H.if_in, len, NFSL_EV_SKIPPED_MTU, 0, 0, 0);
		ev_expect(&k.ev[2], &s, H.if_in, len, NFSL_EV_SKIPPED_ROUTE, 0, 0, 0);
	}
}

/* Off (the default): the same drops, counted, and no record. */
Test(events, off)
{
	struct nfsl_counters stale = { .stale = 1 }, replayed = { .replayed = 1 };
	struct pkt_spec s = { .size = 800, .proto = PKT_UDP };
	uint8_t in[PKT_MAX], sliced[PKT_MAX];
	size_t len = pkt_build(&s, in);
	struct ev_sink k;
	uint32_t slen;

	h_configure(256, 0, 8, 2);
	x_slice_ok("off", in, len, h_part_base(), 1, NULL, sliced, &slen);
	x_slice_untouched("replayed, off", sliced, slen, V_XDP_DROP, &replayed);
	x_splice_ok("off", sliced, slen, in, len);
	x_splice_untouched("stale, off", sliced, slen, V_TC_SHOT, &stale);
	ev_drain(&k);
	cr_expect_eq(k.seen, 0, "%u events with events off", k.seen);
}

/* A ring nobody reads fills: every packet is still dropped and counted
 * stale, the events beyond the ring's room count events_lost, and
 * events_lost + records = drops. */
Test(events, ring_full)
{
	const unsigned int n = NFSL_EVENTS_BYTES / 64 + 200; /* > ring room */
	struct pkt_spec s = { .size = 600, .proto = PKT_UDP };
	uint8_t in[PKT_MAX], sliced[PKT_MAX], out[PKT_MAX];
	size_t len = pkt_build(&s, in);
	struct nfsl_counters c;
	struct ev_sink k;
	uint32_t slen, olen;

	h_configure(256, 0, 8, 2);
	events_on(true);
	x_slice_ok("ring", in, len, h_part_base(), 1, NULL, sliced, &slen);
	x_splice_ok("ring", sliced, slen, in, len);
	for (unsigned int i = 0; i < n; i++)
		cr_assert_eq(h_splice(sliced, slen, out, &olen), V_TC_SHOT);
	h_counters(&c);
	cr_expect_eq(c.stale, n, "stale %llu, want %u", (unsigned long long)c.stale, n);
	cr_expect_gt(c.events_lost, 0, "the ring never filled");
	ev_drain(&k);
	cr_expect_eq(k.seen + c.events_lost, n, "%u records + %llu lost != %u drops", k.seen,
		     (unsigned long long)c.events_lost, n);
	/* room again: the next drop is recorded */
	cr_assert_eq(h_splice(sliced, slen, out, &olen), V_TC_SHOT);
	ev_drain(&k);
	cr_expect_eq(k.seen, 1);
}
