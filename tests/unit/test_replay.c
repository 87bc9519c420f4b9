// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Issue 17 §1.1-1.2: a header of the domain arriving again on a domain
 * interface is a replay whatever its DSCP, ports or addresses, and a header
 * signed by a key the domain retired is stale, never outside traffic, in
 * the tc splicer and in the AF_XDP splice alike.
 */
#include <string.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "ref.h"
#include "nfsl/domain.h"
#include "xsk/nfsl_xsk_splice.h"
#include "util/util.h"

TestSuite(replay, .init = h_setup, .fini = h_teardown, .timeout = 30);

static const uint8_t l4s[] = { PKT_UDP, PKT_TCP };

/* Offsets of an untagged frame (pkt.c builds no VLAN unless asked). */
#define ETH_LEN 14

/* The IPv4 header checksum of the header at @ip, recomputed in place. */
static void ip4_csum(uint8_t *ip)
{
	uint32_t sum = 0;

	ip[10] = ip[11] = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
}

/* What an attacker does to a captured sliced header: DSCP to @dscp, the
 * destination port to 9 (discard), the header checksum made right again. */
static void remark(uint8_t *f, bool v6, uint8_t dscp)
{
	uint8_t *ip = f + ETH_LEN, *l4 = ip + (v6 ? 40 : 20);

	if (v6) {
		ip[0] = (uint8_t)(0x60 | dscp >> 2);
		ip[1] = (uint8_t)((ip[1] & 0x3f) | (dscp & 3) << 6);
	} else {
		ip[1] = (uint8_t)(dscp << 2 | (ip[1] & 3));
		ip4_csum(ip);
	}
	l4[2] = 0;
	l4[3] = 9;
}

/* A re-marked (DSCP 0, 10, 46) and re-addressed replay of a live header is
 * dropped as replayed; the genuine header then splices byte-exact. Once
 * its payload is gone, the same replay passes the slicer (it parks
 * nothing) and every splicer drops it as stale. */
Test(replay, any_dscp)
{
	static const uint8_t dscps[] = { 0, 10, 46 };
	struct nfsl_counters replayed = { .replayed = 1 }, small = { .skipped_small = 1 },
			     stale = { .stale = 1 };
	uint8_t in[PKT_MAX], sliced[PKT_MAX], evil[PKT_MAX];
	uint32_t slen;

	for (int v6 = 0; v6 < 2; v6++)
		for (size_t p = 0; p < sizeof(l4s); p++)
			for (size_t d = 0; d < sizeof(dscps); d++) {
				struct pkt_spec s = { .size = 1000, .v6 = v6, .proto = l4s[p],
						      .seed = (uint8_t)d };
				size_t len = pkt_build(&s, in);

				h_reset();
				x_slice_ok(pkt_name(&s), in, len, h_part_base(), 1, NULL, sliced,
					   &slen);
				memcpy(evil, sliced, slen);
				remark(evil, v6, dscps[d]);
				x_slice_untouched("re-marked live", evil, slen, V_XDP_DROP,
						  &replayed);
				x_splice_ok("genuine after the replay", sliced, slen, in, len);
				x_slice_untouched("re-marked, payload gone", evil, slen, V_XDP_PASS,
						  &small);
				x_splice_untouched("re-marked, payload gone", evil, slen,
						   V_TC_SHOT, &stale);
			}
}

/* Ordinary traffic whose last 16 bytes name a live slot and generation
 * but carry no MAC of ours is no replay: the MAC decides, at any DSCP. */
Test(replay, forged_mac_passes)
{
	struct nfsl_counters small = { .skipped_small = 1 };
	struct pkt_spec s = { .size = 1000, .proto = PKT_UDP };
	struct pkt_spec o = { .size = 200, .proto = PKT_UDP, .seed = 3 };
	uint8_t in[PKT_MAX], sliced[PKT_MAX], other[PKT_MAX];
	size_t len = pkt_build(&s, in), olen = pkt_build(&o, other);
	uint32_t slen;

	x_slice_ok("live", in, len, h_part_base(), 1, NULL, sliced, &slen);
	memcpy(other + olen - 16, sliced + slen - 16, 8); /* slot word, gen */
	memset(other + olen - 8, 0xa5, 8);               /* not our MAC */
	x_slice_untouched("forged", other, olen, V_XDP_PASS, &small);
	x_splice_ok("genuine", sliced, slen, in, len);
}

/* A header held across a key change: stale (dropped) while the old key is
 * retired and its grace runs; after the grace it is no longer known. */
Test(replay, retired_key_stale)
{
	struct nfsl_counters stale = { .stale = 1 }, bad = { .bad_token = 1 };
	uint8_t in[PKT_MAX], sliced[PKT_MAX];
	uint32_t slen;

	for (int v6 = 0; v6 < 2; v6++)
		for (size_t p = 0; p < sizeof(l4s); p++) {
			struct pkt_spec s = { .size = 1200, .v6 = v6, .proto = l4s[p] };
			size_t len = pkt_build(&s, in);

			h_configure(256, 0, H_STORE_SLOTS / H.ncpus, 2);
			x_slice_ok(pkt_name(&s), in, len, h_part_base(), 1, NULL, sliced, &slen);
			h_retire_key(nfsl_now_ns() + 10000000000ull);
			x_splice_untouched("retired key, in grace", sliced, slen, V_TC_SHOT, &stale);
			h_retire_key(0);
			x_splice_untouched("no retired key", sliced, slen, V_TC_OK, &bad);
		}
}

/* A retired key may have signed any index (its store may have been
 * larger): a token beyond the store under a retired key in grace is still
 * stale, in the tc and the AF_XDP splice (nfsl_token_in_store exempts
 * only the domain's own keys); under the domain's key it is not ours. */
Test(replay, retired_key_beyond_store)
{
	struct nfsl_counters stale = { .stale = 1 }, bad = { .bad_token = 1 };
	struct nfsl_domain d = { .config_fd = -1, .counters_fd = -1, .cursor_fd = -1 };
	struct pkt_spec s = { .size = 1200, .proto = PKT_UDP };
	uint8_t in[PKT_MAX], sliced[PKT_MAX], frame[2048];
	size_t len = pkt_build(&s, in);
	struct nfsl_xsk_store xs;
	struct ref_info ri;
	uint32_t slen, flen;
	void *m;

	x_slice_ok("beyond", in, len, h_part_base(), 1, NULL, sliced, &slen);
	cr_assert_eq(ref_parse(sliced, slen, &ri), 0);
	h_token(NFSL_TOKEN_WORD(H_STORE_SLOTS + 5, 1000), 1, sliced + ri.l3end - NFSL_TOKEN_LEN);
	x_splice_untouched("own key", sliced, slen, V_TC_OK, &bad);
	h_retire_key(nfsl_now_ns() + 10000000000ull);
	x_splice_untouched("retired key, in grace", sliced, slen, V_TC_SHOT, &stale);
	d.store_fd = H.store;
	d.cfg = H.cfg;
	cr_assert_eq(nfsl_xsk_store_open(&xs, &d), 0);
	m = mmap(NULL, sizeof(struct nfsl_retired), PROT_READ, MAP_SHARED, H.retired, 0);
	cr_assert_neq(m, MAP_FAILED);
	xs.retired = m;
	memcpy(frame, sliced, slen);
	flen = slen;
	cr_expect_eq(nfsl_xsk_splice(&xs, frame, &flen, sizeof(frame), 1500),
		     NFSL_XSK_SPLICE_STALE);
	nfsl_xsk_store_close(&xs);
}

/* A grace period that ended: the key is not honoured any more. */
Test(replay, retired_key_expired)
{
	struct nfsl_counters bad = { .bad_token = 1 };
	struct pkt_spec s = { .size = 1200, .proto = PKT_UDP };
	uint8_t in[PKT_MAX], sliced[PKT_MAX];
	size_t len = pkt_build(&s, in);
	uint32_t slen;

	x_slice_ok("expired", in, len, h_part_base(), 1, NULL, sliced, &slen);
	h_retire_key(nfsl_now_ns() - 1);
	x_splice_untouched("grace over", sliced, slen, V_TC_OK, &bad);
}

/* The AF_XDP splice reads the same list from its mapping. */
Test(replay, retired_key_xsk)
{
	struct nfsl_domain d = { .config_fd = -1, .counters_fd = -1, .cursor_fd = -1 };
	struct pkt_spec s = { .size = 1200, .proto = PKT_TCP };
	uint8_t in[PKT_MAX], sliced[PKT_MAX], frame[2048];
	size_t len = pkt_build(&s, in);
	struct nfsl_xsk_store xs;
	uint32_t slen, flen;
	void *m;

	x_slice_ok("xsk", in, len, h_part_base(), 1, NULL, sliced, &slen);
	h_retire_key(nfsl_now_ns() + 10000000000ull);
	d.store_fd = H.store;
	d.cfg = H.cfg;
	cr_assert_eq(nfsl_xsk_store_open(&xs, &d), 0);
	m = mmap(NULL, sizeof(struct nfsl_retired), PROT_READ, MAP_SHARED, H.retired, 0);
	cr_assert_neq(m, MAP_FAILED);
	xs.retired = m; /* what nfsl_xsk_store_open maps from the pin */
	memcpy(frame, sliced, slen);
	flen = slen;
	cr_expect_eq(nfsl_xsk_splice(&xs, frame, &flen, sizeof(frame), 1500),
		     NFSL_XSK_SPLICE_STALE);
	cr_expect_eq(flen, slen);
	cr_expect_eq(memcmp(frame, sliced, slen), 0, "a stale frame is left as it was");
	h_retire_key(0);
	cr_expect_eq(nfsl_xsk_splice(&xs, frame, &flen, sizeof(frame), 1500),
		     NFSL_XSK_SPLICE_NOT_SLICED);
	nfsl_xsk_store_close(&xs); /* unmaps the list too */
}
