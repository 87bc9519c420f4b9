// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Multi-buffer frames (issue 20 item 1): the slicer is an xdp.frags
 * program. A frame whose payload lies partly or wholly in frags is sliced
 * when the payload fits a slot and the sliced header (headers, kept bytes,
 * token) lies in the linear part; the shrink frees every frag, and the
 * splicer gives the frame back byte for byte. A payload larger than a slot
 * passes whole (skipped_big), headers beyond the linear part pass whole
 * (unparsed), and a replayed header whose token lies in a frag is dropped.
 * The test run puts the first xdp_md.data_end bytes in the linear part and
 * the rest in frags (Linux 6.18; a frame larger than a page always).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "ref.h"
#include "nfsl_steer.h"
#include "steer.skel.h"

TestSuite(frags, .init = h_setup, .fini = h_teardown, .timeout = 60);

static const struct pkt_spec kinds[] = {
	{ .proto = PKT_UDP },
	{ .proto = PKT_TCP, .tcp_opt = 12 },
	{ .v6 = 1, .proto = PKT_UDP },
	{ .v6 = 1, .proto = PKT_TCP, .tcp_opt = 12 },
	{ .proto = PKT_UDP, .vlans = 1, .ip_opt = 8 },
};

/* Run @in with @lin bytes linear and expect XDP_PASS, the frame whole and
 * the counters (reset first) exactly @want. */
static void passes_whole(const char *what, const uint8_t *in, size_t len, uint32_t lin,
			 const struct nfsl_counters *want)
{
	static uint8_t out[PKT_JUMBO];
	uint32_t olen;
	int v;

	h_reset();
	v = h_slice_lin(in, len, lin, out, sizeof(out), &olen);
	cr_expect_eq(v, V_XDP_PASS, "%s: verdict %d, want XDP_PASS", what, v);
	x_bytes(what, out, olen, in, len);
	h_expect_counters(want, what);
}

/* Payloads up to a slot, split between the linear part and frags at every
 * place from the least the sliced header needs to one byte before the
 * end: sliced as a linear frame would be, the output linear (no frag
 * left), spliced back byte for byte; keep 0 and 64. One byte less linear:
 * passed whole, counted unparsed. */
Test(frags, slot_payload_sliced_and_spliced)
{
	static const uint32_t keeps[] = { 0, 64 };
	static uint8_t in[PKT_MAX], sliced[PKT_MAX];
	struct nfsl_counters unparsed = { .unparsed = 1 };
	int n = 0;

	h_set_mtu(H_IF_OUT, 3000);
	for (size_t k = 0; k < ARRAY_SIZE(keeps); k++) {
		h_configure(200, keeps[k], 8, 2);
		for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
			struct pkt_spec s = kinds[i];
			uint32_t hdr = pkt_hdr_len(&s), need = hdr + keeps[k] + NFSL_TOKEN_LEN;
			uint32_t sizes[] = { 300, 1514, hdr + NFSL_PAYLOAD_MAX };

			for (size_t z = 0; z < ARRAY_SIZE(sizes); z++) {
				uint32_t lins[] = { need, need + 1, need + 7, sizes[z] / 2,
						    sizes[z] - 1 };
				char what[200];
				uint32_t slen;
				size_t len;

				s.size = sizes[z];
				len = pkt_build(&s, in);
				cr_assert_gt(len, 0);
				for (size_t l = 0; l < ARRAY_SIZE(lins); l++) {
					if (lins[l] < need || lins[l] >= len)
						continue;
					snprintf(what, sizeof(what), "%s keep %u, %u B linear",
						 pkt_name(&s), keeps[k], lins[l]);
					h_reset();
					H.xdp_linear = lins[l];
					x_slice_ok(what, in, len, h_part_base(), 1, NULL, sliced,
						   &slen);
					cr_expect_eq(H.xdp_out_linear, slen,
						     "%s: sliced header keeps %u B in frags", what,
						     slen - H.xdp_out_linear);
					H.xdp_linear = 0;
					x_splice_ok(what, sliced, slen, in, len);
					n++;
				}
				snprintf(what, sizeof(what), "%s keep %u, %u B linear", pkt_name(&s),
					 keeps[k], need - 1);
				passes_whole(what, in, len, need - 1, &unparsed);
			}
		}
	}
	cr_log_info("multi-buffer slices: %d cases", n);
}

/* Payloads larger than a slot, up to a 9014 B frame, in frags: passed
 * whole, byte for byte, skipped_big; whatever the split, and also when the
 * kernel makes the frags itself (a frame larger than a page). */
Test(frags, jumbo_payload_passes_whole)
{
	static uint8_t in[PKT_JUMBO];
	struct nfsl_counters big = { .skipped_big = 1 };

	h_configure(200, 0, 8, 2);
	h_set_mtu(H_IF_OUT, 9000);
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		struct pkt_spec s = kinds[i];
		uint32_t hdr = pkt_hdr_len(&s);
		uint32_t sizes[] = { hdr + NFSL_PAYLOAD_MAX + 1, 4000, 9014 + 4 * s.vlans };

		for (size_t z = 0; z < ARRAY_SIZE(sizes); z++) {
			uint32_t lins[] = { 0, 200, hdr + 1 };
			char what[200];
			size_t len;

			s.size = sizes[z];
			len = pkt_build(&s, in);
			cr_assert_gt(len, 0);
			for (size_t l = 0; l < ARRAY_SIZE(lins); l++) {
				snprintf(what, sizeof(what), "%s, %u B linear", pkt_name(&s),
					 lins[l]);
				passes_whole(what, in, len, lins[l], &big);
			}
		}
	}
}

/* Headers that end beyond the linear part: passed whole, unparsed. */
Test(frags, headers_beyond_linear)
{
	static uint8_t in[PKT_JUMBO];
	struct nfsl_counters unparsed = { .unparsed = 1 };

	h_configure(200, 0, 8, 2);
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		struct pkt_spec s = kinds[i];
		uint32_t hdr = pkt_hdr_len(&s), lins[] = { 14, 30, hdr - 1 };
		uint32_t sizes[] = { 1514, 9014 };

		for (size_t z = 0; z < ARRAY_SIZE(sizes); z++) {
			size_t len;

			s.size = sizes[z];
			len = pkt_build(&s, in);
			for (size_t l = 0; l < ARRAY_SIZE(lins); l++) {
				char what[200];

				snprintf(what, sizeof(what), "%s, %u B linear", pkt_name(&s),
					 lins[l]);
				passes_whole(what, in, len, lins[l], &unparsed);
			}
		}
	}
}

/*
 * A sliced header sent back in, stretched to a jumbo frame: junk between
 * its kept bytes and its token, IP and L4 lengths to match, the token in
 * a frag. The splicers read the token at the IP packet's end, so it must
 * not pass: dropped as replayed, wherever the split.
 */
Test(frags, replay_token_in_frag)
{
	static uint8_t in[PKT_MAX], sliced[PKT_MAX], big[PKT_JUMBO];
	struct nfsl_counters replayed = { .replayed = 1 };

	h_configure(200, 0, 8, 2);
	for (size_t i = 0; i < 4; i++) {
		struct pkt_spec s = kinds[i];
		uint32_t hdr, slen, blen = 8000, lins[] = { 0, 100 };
		struct ref_info ri;
		uint8_t *ip;
		size_t len;

		s.size = 1514;
		len = pkt_build(&s, in);
		h_reset();
		x_slice_ok(pkt_name(&s), in, len, h_part_base(), 1, NULL, sliced, &slen);
		cr_assert_eq(ref_parse(sliced, slen, &ri), 0);
		hdr = slen - NFSL_TOKEN_LEN;
		memcpy(big, sliced, hdr);
		memset(big + hdr, 0x5a, blen - slen);
		memcpy(big + blen - NFSL_TOKEN_LEN, sliced + hdr, NFSL_TOKEN_LEN);
		ip = big + ri.l3off;
		if (s.v6) {
			ref_put16(ip + 4, blen - ri.l3off - 40);
		} else {
			ref_put16(ip + 2, blen - ri.l3off);
			ref_put16(ip + 10, 0);
			ref_put16(ip + 10, ~ref_fold(ref_sum(ip, 20, 0)));
		}
		if (s.proto == PKT_UDP)
			ref_put16(big + ri.l4off + 4, blen - ri.l4off);
		for (size_t l = 0; l < ARRAY_SIZE(lins); l++) {
			static uint8_t out[PKT_JUMBO];
			char what[200];
			uint32_t olen;
			int v;

			snprintf(what, sizeof(what), "%s stretched to %u B, %u B linear",
				 pkt_name(&s), blen, lins[l]);
			h_reset();
			v = h_slice_lin(big, blen, lins[l], out, sizeof(out), &olen);
			cr_expect_eq(v, V_XDP_DROP, "%s: verdict %d, want XDP_DROP", what, v);
			h_expect_counters(&replayed, what);
		}
	}
}

/*
 * On an NF port: a drop notice whose token lies in a frag frees its slot
 * (explicit_drop); a jumbo frame passes untouched, nothing counted.
 */
Test(frags, nf_port_multibuffer)
{
	static uint8_t in[PKT_JUMBO], sliced[PKT_MAX], out[PKT_JUMBO];
	struct nfsl_counters before, after, none = { 0 };
	struct pkt_spec s = { .size = 1514, .proto = PKT_UDP };
	uint32_t slen, olen;
	struct nfsl_slot sl;
	size_t len = pkt_build(&s, in);
	int v;

	h_configure(200, 0, 8, 2);
	x_slice_ok("notice source", in, len, h_part_base(), 1, NULL, sliced, &slen);
	H.cfg.ifaces[0].flags |= NFSL_IF_NF_PORT;
	h_write_config();
	sliced[12] = NFSL_ETH_P_NOTICE >> 8;
	sliced[13] = NFSL_ETH_P_NOTICE & 0xff;
	h_counters(&before);
	v = h_slice_lin(sliced, slen, slen - 8, out, sizeof(out), &olen);
	cr_expect_eq(v, V_XDP_DROP, "notice: verdict %d, want XDP_DROP", v);
	h_counters(&after);
	cr_expect_eq(after.explicit_drop - before.explicit_drop, 1,
		     "notice with its token in a frag: explicit_drop +%llu, want +1",
		     (unsigned long long)(after.explicit_drop - before.explicit_drop));
	cr_expect_eq(after.bad_notice, before.bad_notice, "notice counted bad");
	h_slot_read(h_part_base(), &sl);
	cr_expect_eq(sl.ctl, NFSL_CTL(1, 0), "slot %u not freed: ctl %#llx", h_part_base(),
		     (unsigned long long)sl.ctl);
	s.size = 9014;
	len = pkt_build(&s, in);
	passes_whole("jumbo frame on an NF port", in, len, 0, &none);
}

/* The steering's counters, summed over the CPUs. */
static void steer_counters(struct steer_bpf *st, struct nfsl_steer_counters *sum)
{
	struct nfsl_steer_counters v[NFSL_MAX_CPUS];
	__u32 zero = 0;

	cr_assert_eq(bpf_map_lookup_elem(bpf_map__fd(st->maps.nfsl_steer_stats), &zero, v), 0);
	memset(sum, 0, sizeof(*sum));
	for (int c = 0; c < H.ncpus; c++) {
#define X_ADD(name) sum->name += v[c].name;
		NFSL_STEER_COUNTERS(X_ADD)
#undef X_ADD
	}
}

/*
 * The AF_XDP steering, tail-called by the slicer, is an xdp.frags program
 * too (a program array takes one kind). Its sockets are bound without
 * XDP_USE_SG, so the kernel would drop a multi-buffer frame redirected to
 * them: it passes such frames to the kernel whole, counted multibuf, and
 * redirects the others as before (here to no socket: no_sock).
 */
Test(frags, steer_passes_multibuffer)
{
	static uint8_t in[PKT_JUMBO], out[PKT_JUMBO];
	struct nfsl_steer_key k = { .ifindex = H.if_in, .queue = 0 };
	struct nfsl_steer_grp g = { .base = 0, .nsock = 1 };
	struct nfsl_steer_counters c;
	struct {
		uint16_t size;
		uint32_t lin;
	} cases[] = { { 9014, 0 }, { 1514, 200 }, { 1514, 0 } };
	struct steer_bpf *st = steer_bpf__open_and_load();

	cr_assert_not_null(st, "the steering program does not load");
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(st->maps.nfsl_groups), &k, &g, BPF_ANY), 0);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct pkt_spec s = { .size = cases[i].size, .proto = PKT_UDP };
		size_t len = pkt_build(&s, in);
		struct xdp_md md = { .data_end = cases[i].lin ? cases[i].lin : len,
				     .ingress_ifindex = H.if_in };
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = len,
			    .data_out = out, .data_size_out = sizeof(out), .ctx_in = &md,
			    .ctx_size_in = sizeof(md));

		cr_assert_eq(bpf_prog_test_run_opts(bpf_program__fd(st->progs.nfsl_steer), &o), 0);
		cr_expect_eq(o.retval, V_XDP_PASS, "%u B, %u linear: verdict %u", cases[i].size,
			     cases[i].lin, o.retval);
		x_bytes("steered frame", out, o.data_size_out, in, len);
	}
	steer_counters(st, &c);
	cr_expect_eq(c.multibuf, 2, "multibuf %llu, want 2", (unsigned long long)c.multibuf);
	cr_expect_eq(c.no_sock, 1, "no_sock %llu, want 1", (unsigned long long)c.no_sock);
	cr_expect_eq(c.steered + c.not_ip + c.no_group, 0);
	steer_bpf__destroy(st);
}
