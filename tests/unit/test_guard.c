// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The guard's verdicts (bpf/guard.bpf.c nfsl_guard, TCX egress of an
 * interface that is not the domain's; issue 19 §1), table-driven through
 * BPF_PROG_TEST_RUN with the domain's maps shared with the slicer and the
 * splicer: a packet without a token of ours passes untouched (TC_NEXT), a
 * sliced header of ours (or under a retired key, or in any segment of a
 * GSO skb) is dropped, its slot freed and counted escaped_dropped.
 */
#include <arpa/inet.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "nfsl/guard.h"
#include "util/util.h"
#include "guard.skel.h"

static struct guard_bpf *g;

/* The harness's domain, and the guard object on its maps (the netfilter
 * program typed by nfsl_nf_prog_type: libbpf 1.1 knows no SEC("netfilter")). */
static void g_setup(void)
{
	h_setup();
	g = guard_bpf__open();
	cr_assert_not_null(g);
	bpf_map__set_max_entries(g->maps.nfsl_store, H_STORE_SLOTS);
	cr_assert_eq(nfsl_nf_prog_type(g->progs.nfsl_guard_nf), 0);
	cr_assert_eq(bpf_map__reuse_fd(g->maps.nfsl_store, H.store) ||
		     bpf_map__reuse_fd(g->maps.nfsl_config, H.config) ||
		     bpf_map__reuse_fd(g->maps.nfsl_counters, H.counters) ||
		     bpf_map__reuse_fd(g->maps.nfsl_cursor, H.cursor) ||
		     bpf_map__reuse_fd(g->maps.nfsl_events, H.events) ||
		     bpf_map__reuse_fd(g->maps.nfsl_retired, H.retired), 0);
	cr_assert_eq(guard_bpf__load(g), 0, "the guard does not load");
}

static void g_teardown(void)
{
	guard_bpf__destroy(g);
	g = NULL;
	h_teardown();
}

TestSuite(guard, .init = g_setup, .fini = g_teardown, .timeout = 30);

/* Run the guard on @in (a GSO skb of @gso_size B segments if non-zero);
 * its verdict, the packet after it in @out. */
static int g_run(const uint8_t *in, uint32_t len, uint32_t gso_size, uint8_t *out,
		 uint32_t *olen)
{
	struct __sk_buff skb = { .gso_size = gso_size, .gso_segs = gso_size ? 2 : 0 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = len,
		    .data_out = out, .data_size_out = PKT_MAX, .ctx_in = &skb,
		    .ctx_size_in = sizeof(skb));

	cr_assert_eq(bpf_prog_test_run_opts(bpf_program__fd(g->progs.nfsl_guard), &o), 0);
	*olen = o.data_size_out;
	return o.retval;
}

enum gcase { G_SMALL, G_RANDOM, G_OURS, G_RETIRED, G_GSO_ONE, G_GSO_NONE };

static const struct {
	const char *name;
	enum gcase c;
	int verdict;
	__u64 escaped; /* escaped_dropped after it */
	bool freed;    /* the sliced slot is free after it */
} cases[] = {
	{ "no token (payload shorter than one)", G_SMALL, V_TC_OK, 0, false },
	{ "random tail, DSCP 63", G_RANDOM, V_TC_OK, 0, false },
	{ "sliced header of ours", G_OURS, V_TC_SHOT, 1, true },
	{ "token of a retired key", G_RETIRED, V_TC_SHOT, 1, false },
	{ "GSO skb, our token ending segment 1 of 2", G_GSO_ONE, V_TC_SHOT, 1, true },
	{ "GSO skb, no token", G_GSO_NONE, V_TC_OK, 0, false },
};

/* One case on @v6 / @proto: builds the packet, runs the guard, checks the
 * verdict, the bytes of what passes, the counter and the slot. */
static void one(size_t k, int v6, uint8_t proto)
{
	struct pkt_spec s = { .size = 1000, .v6 = v6, .proto = proto, .seed = 3 };
	uint8_t in[PKT_MAX], sliced[PKT_MAX], pkt[PKT_MAX], out[PKT_MAX];
	uint32_t slen = 0, plen, olen, seg = 400, idx = 0;
	struct nfsl_counters c;
	struct nfsl_slot slot;
	size_t len;
	char what[160];
	int verdict;

	snprintf(what, sizeof(what), "%s, %s", cases[k].name, pkt_name(&s));
	h_configure(256, 0, H_STORE_SLOTS / H.ncpus, 2);
	len = pkt_build(&s, in);
	/* A live token (busy slot idx) for the cases that carry one. */
	x_slice_ok(what, in, len, h_part_base(), 1, NULL, sliced, &slen);
	idx = NFSL_TOKEN_IDX(ntohl(*(uint32_t *)(sliced + slen - 16)));
	memcpy(pkt, in, len);
	plen = len;
	switch (cases[k].c) {
	case G_SMALL:
		s.size = pkt_hdr_len(&s) + 10;
		plen = pkt_build(&s, pkt);
		break;
	case G_RANDOM:
		s.dscp = 63;
		plen = pkt_build(&s, pkt);
		break;
	case G_OURS:
		memcpy(pkt, sliced, slen);
		plen = slen;
		break;
	case G_RETIRED:
		memcpy(pkt, sliced, slen);
		plen = slen;
		h_retire_key(nfsl_now_ns() + 10000000000ull);
		break;
	case G_GSO_ONE: /* two segments of @seg payload bytes */
	case G_GSO_NONE:
		s.size = pkt_hdr_len(&s) + 2 * seg;
		plen = pkt_build(&s, pkt);
		if (cases[k].c == G_GSO_ONE)
			memcpy(pkt + pkt_hdr_len(&s) + seg - 16, sliced + slen - 16, 16);
		break;
	}
	verdict = g_run(pkt, plen, cases[k].c >= G_GSO_ONE ? seg : 0, out, &olen);
	cr_expect_eq(verdict, cases[k].verdict, "%s: verdict %d", what, verdict);
	if (verdict == V_TC_OK)
		x_bytes(what, out, olen, pkt, plen);
	h_counters(&c);
	cr_expect_eq(c.escaped_dropped, cases[k].escaped, "%s: escaped_dropped %llu", what,
		     (unsigned long long)c.escaped_dropped);
	cr_expect_eq(c.spliced + c.stale + c.bad_token, 0, "%s", what);
	h_slot_read(idx, &slot);
	cr_expect_eq(NFSL_CTL_EXP(slot.ctl) == 0, cases[k].freed, "%s: slot %u ctl %llx", what,
		     idx, (unsigned long long)slot.ctl);
}

Test(guard, verdicts)
{
	static const uint8_t l4s[] = { PKT_UDP, PKT_TCP };

	for (size_t k = 0; k < ARRAY_SIZE(cases); k++)
		for (int v6 = 0; v6 < 2; v6++)
			for (size_t p = 0; p < ARRAY_SIZE(l4s); p++)
				one(k, v6, l4s[p]);
}

/* Not ours once the retired key's grace is over: the guard passes it
 * (as the splicer then does), nothing counted. */
Test(guard, retired_key_after_grace)
{
	struct pkt_spec s = { .size = 1200, .proto = PKT_UDP };
	uint8_t in[PKT_MAX], sliced[PKT_MAX], out[PKT_MAX];
	uint32_t slen, olen;
	struct nfsl_counters c;
	size_t len = pkt_build(&s, in);

	x_slice_ok("retired", in, len, h_part_base(), 1, NULL, sliced, &slen);
	h_retire_key(nfsl_now_ns() - 1);
	cr_expect_eq(g_run(sliced, slen, 0, out, &olen), V_TC_OK);
	h_counters(&c);
	cr_expect_eq(c.escaped_dropped, 0);
}

#define G_LOCAL_IN 1 /* NF_INET_LOCAL_IN */
#define G_FORWARD 2  /* NF_INET_FORWARD: the test run's out device is lo */

/* Run the netfilter guard on the frame @in (its IP packet: the test run
 * strips the Ethernet header) at @hook; its verdict. */
static int g_run_nf(const uint8_t *in, uint32_t len, int v6, uint8_t hook)
{
	struct nfsl_nf_test_state st = { .hook = hook, .pf = v6 ? 10 : 2 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = len,
		    .ctx_in = &st, .ctx_size_in = sizeof(st));
	int err = bpf_prog_test_run_opts(bpf_program__fd(g->progs.nfsl_guard_nf), &o);

	cr_assert_eq(err, 0, "netfilter test run: %s", strerror(-err));
	return o.retval;
}

/* A fresh domain; the frame of @s into @in (*@len bytes) and its slice
 * into @sliced (*@slen bytes). Returns the slot the token names. */
static uint32_t g_slice(const struct pkt_spec *s, uint8_t *in, size_t *len, uint8_t *sliced,
			uint32_t *slen)
{
	h_configure(256, 0, H_STORE_SLOTS / H.ncpus, 2);
	*len = pkt_build(s, in);
	x_slice_ok(pkt_name(s), in, *len, h_part_base(), 1, NULL, sliced, slen);
	return NFSL_TOKEN_IDX(ntohl(*(uint32_t *)(sliced + *slen - 16)));
}

/* Local delivery (netfilter LOCAL_IN): a sliced header of ours dropped
 * (NF_DROP 0), its slot freed, counted; under a retired key dropped; a
 * random tail and a packet too short for a token accepted (NF_ACCEPT 1). */
Test(guard, local_in)
{
	static const uint8_t l4s[] = { PKT_UDP, PKT_TCP };

	for (int v6 = 0; v6 < 2; v6++)
		for (size_t p = 0; p < ARRAY_SIZE(l4s); p++) {
			struct pkt_spec s = { .size = 1000, .v6 = v6, .proto = l4s[p] };
			uint8_t in[PKT_MAX], sliced[PKT_MAX];
			struct nfsl_counters c;
			struct nfsl_slot slot;
			uint32_t slen, idx;
			size_t len;

			idx = g_slice(&s, in, &len, sliced, &slen);
			cr_expect_eq(g_run_nf(in, len, v6, G_LOCAL_IN), 1, "%s: random tail", pkt_name(&s));
			cr_expect_eq(g_run_nf(sliced, slen, v6, G_LOCAL_IN), 0, "%s: ours", pkt_name(&s));
			h_slot_read(idx, &slot);
			cr_expect_eq(NFSL_CTL_EXP(slot.ctl), 0, "%s: slot not freed", pkt_name(&s));
			h_counters(&c);
			cr_expect_eq(c.escaped_dropped, 1, "%s", pkt_name(&s));
			h_retire_key(nfsl_now_ns() + 10000000000ull);
			cr_expect_eq(g_run_nf(sliced, slen, v6, G_LOCAL_IN), 0, "%s: retired", pkt_name(&s));
			h_counters(&c);
			cr_expect_eq(c.escaped_dropped, 2, "%s", pkt_name(&s));
			s.size = pkt_hdr_len(&s) + 10;
			len = pkt_build(&s, in);
			cr_expect_eq(g_run_nf(in, len, v6, G_LOCAL_IN), 1, "%s: short", pkt_name(&s));
		}
}

/* Routing (netfilter FORWARD): a sliced header routed out of an interface
 * that is not the domain's (lo here) is dropped, its slot freed, counted;
 * routed out of a domain interface (lo made one) it goes on untouched to
 * that interface's splicer, its slot still parked. */
Test(guard, forward)
{
	for (int v6 = 0; v6 < 2; v6++) {
		struct pkt_spec s = { .size = 1000, .v6 = v6, .proto = PKT_UDP };
		uint8_t in[PKT_MAX], sliced[PKT_MAX];
		struct nfsl_counters c;
		struct nfsl_slot slot;
		uint32_t slen, idx;
		size_t len;

		idx = g_slice(&s, in, &len, sliced, &slen);
		H.cfg.ifaces[1].ifindex = 1; /* lo: a domain interface */
		h_write_config();
		cr_expect_eq(g_run_nf(sliced, slen, v6, G_FORWARD), 1, "%s: to the domain", pkt_name(&s));
		h_slot_read(idx, &slot);
		cr_expect_neq(NFSL_CTL_EXP(slot.ctl), 0, "%s: slot freed", pkt_name(&s));
		H.cfg.ifaces[1].ifindex = H.if_out;
		h_write_config();
		cr_expect_eq(g_run_nf(sliced, slen, v6, G_FORWARD), 0, "%s: elsewhere", pkt_name(&s));
		h_slot_read(idx, &slot);
		cr_expect_eq(NFSL_CTL_EXP(slot.ctl), 0, "%s: slot not freed", pkt_name(&s));
		h_counters(&c);
		cr_expect_eq(c.escaped_dropped, 1, "%s", pkt_name(&s));
		cr_expect_eq(g_run_nf(in, len, v6, G_FORWARD), 1, "%s: unsliced", pkt_name(&s));
	}
}
