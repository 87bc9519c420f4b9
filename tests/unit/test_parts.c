// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Store partitions per destination (config nparts, PayloadPark §6.2.3's
 * static slices per NF server): what is sliced toward an NF port takes its
 * slots from that port's share of the CPU's partition, what leaves through
 * a domain interface from share 0, so a burst toward one NF server never
 * evicts another's payloads. Through the slicer under BPF_PROG_TEST_RUN:
 * the harness routes its packets out of H_IF_OUT, declared here as an NF
 * port (share 1) or as a domain interface (share 0).
 */
#include <arpa/inet.h>
#include <string.h>
#include <criterion/criterion.h>

#include "harness.h"
#include "nfsl_structs.h"
#include "pkt.h"

TestSuite(parts, .init = h_setup, .fini = h_teardown, .timeout = 60);

#define PART 8 /* slots per share */

/* Two shares per CPU; H_IF_OUT is the NF port of share 1 when @nf_port. */
static void parts_config(bool nf_port)
{
	h_configure(256, 0, PART, 1);
	H.cfg.nparts = 2;
	H.cfg.slots = PART * H.ncpus * 2;
	H.cfg.win_min = PART; /* FIFO inside a share: eviction order is plain */
	H.cfg.ifaces[1].flags = nf_port ? NFSL_IF_NF_PORT : 0;
	H.cfg.ifaces[1].part = nf_port ? 1 : 0;
	h_write_config();
}

/* Slice one packet; return the slot index its token names. */
static uint32_t slice(int k)
{
	struct pkt_spec s = { .size = 400, .proto = PKT_UDP, .seed = k };
	uint8_t in[PKT_MAX], out[PKT_MAX];
	size_t len = pkt_build(&s, in);
	uint32_t olen, idx;

	cr_assert_eq(h_slice(in, len, out, &olen), V_XDP_PASS);
	cr_assert_lt(olen, len, "packet %d not sliced", k);
	memcpy(&idx, out + olen - NFSL_TOKEN_LEN, 4);
	return NFSL_TOKEN_IDX(ntohl(idx));
}

Test(parts, each_destination_its_share)
{
	uint32_t base = H.cpu * 2 * PART;

	cr_assert_geq(H_STORE_SLOTS, PART * 2 * H.ncpus, "store too small for %d CPUs", H.ncpus);
	parts_config(true);
	for (int k = 0; k < PART; k++) {
		uint32_t idx = slice(k);

		cr_assert(idx >= base + PART && idx < base + 2 * PART,
			  "toward the NF port: slot %u outside share 1 [%u, %u)", idx, base + PART,
			  base + 2 * PART);
	}
	parts_config(false); /* resets the store: H_IF_OUT now a domain interface */
	for (int k = 0; k < PART; k++) {
		uint32_t idx = slice(k);

		cr_assert(idx >= base && idx < base + PART,
			  "through a domain interface: slot %u outside share 0 [%u, %u)", idx, base,
			  base + PART);
	}
}

Test(parts, burst_never_evicts_another_share)
{
	uint32_t base = H.cpu * 2 * PART;
	struct nfsl_slot before[PART], after;
	struct nfsl_counters c;

	cr_assert_geq(H_STORE_SLOTS, PART * 2 * H.ncpus, "store too small for %d CPUs", H.ncpus);
	/* Share 0 full of parked payloads (domain interface)... */
	parts_config(false);
	for (int k = 0; k < PART; k++)
		slice(k);
	for (int i = 0; i < PART; i++)
		h_slot_read(base + i, &before[i]);
	/* ...then a burst of 5 shares' worth toward the NF port, without
	 * touching the store (parts_config would reset it). */
	H.cfg.ifaces[1].flags = NFSL_IF_NF_PORT;
	H.cfg.ifaces[1].part = 1;
	h_write_config();
	for (int k = 0; k < 5 * PART; k++) {
		uint32_t idx = slice(100 + k);

		cr_assert(idx >= base + PART && idx < base + 2 * PART, "slot %u outside share 1", idx);
	}
	h_counters(&c);
	/* expiry 1: share 1's slots were evicted as the cursor came round... */
	cr_expect_eq(c.evicted, 4 * PART, "evicted %llu", (unsigned long long)c.evicted);
	/* ...and share 0's payloads are all still there, untouched. */
	for (int i = 0; i < PART; i++) {
		h_slot_read(base + i, &after);
		cr_assert_eq(after.ctl, before[i].ctl, "share 0 slot %d changed by the burst", i);
		cr_assert_eq(memcmp(after.payload, before[i].payload, before[i].len), 0);
	}
}
