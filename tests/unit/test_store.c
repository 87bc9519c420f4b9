// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The store's hot window (include/nfsl_store.h, docs/format.md "Store"):
 * which slot each slice takes, how the window grows with payloads in
 * flight and shrinks back, and expiry by age, which never evicts a payload
 * earlier than the FIFO store would (expiry x partition slice attempts on
 * its CPU), wherever the window has moved meanwhile. Through the slicer and
 * the splicer under BPF_PROG_TEST_RUN, on one CPU's partition; plus the
 * slot-level rule (nfsl_slot_take) in user space.
 */
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "nfsl_store.h"
#include "pkt.h"

TestSuite(store, .init = h_setup, .fini = h_teardown, .timeout = 60);

#define WIN 4 /* config win_min of the tests: a window of 4 slots */

/* A packet the test slices, kept for its splice. */
struct held {
	uint8_t in[PKT_MAX], sl[PKT_MAX];
	size_t len;
	uint32_t slen;
};
#define NHELD 128
static struct held hp[NHELD];

static uint32_t part; /* slots of this CPU's partition */
static uint32_t gens[H_STORE_SLOTS]; /* takes of each slot so far */

/* Domain with @win_min and @expiry over the largest partitions the test
 * store allows (32 slots on 2 CPUs). */
static void store_setup(uint32_t win_min, uint32_t expiry)
{
	part = H_STORE_SLOTS / H.ncpus;
	cr_assert_geq(part, 16, "needs 16 slots per partition (%d CPUs)", H.ncpus);
	h_configure(256, 0, part, expiry);
	H.cfg.win_min = win_min;
	h_write_config();
	memset(gens, 0, sizeof(gens));
}

/* Slice packet @k into hp[@k] and expect slot @slot of the partition with
 * the next generation of that slot, and @extra counters besides. */
static void slice_at(int k, uint32_t slot, const struct nfsl_counters *extra)
{
	struct pkt_spec s = { .size = 300 + (k % 64) * 7, .proto = PKT_UDP,
			      .seed = k };
	char what[64];

	hp[k % NHELD].len = pkt_build(&s, hp[k % NHELD].in);
	snprintf(what, sizeof(what), "slice %d into slot %u", k, slot);
	cr_assert(x_slice_ok(what, hp[k % NHELD].in, hp[k % NHELD].len,
			     h_part_base() + slot, ++gens[slot], extra,
			     hp[k % NHELD].sl, &hp[k % NHELD].slen),
		  "%s", what);
}

static void splice_back(int k)
{
	char what[32];

	snprintf(what, sizeof(what), "splice %d", k);
	cr_assert(x_splice_ok(what, hp[k % NHELD].sl, hp[k % NHELD].slen,
			      hp[k % NHELD].in, hp[k % NHELD].len),
		  "%s", what);
}

/* This CPU's allocation state. */
static struct nfsl_alloc alloc_state(void)
{
	/* per-CPU values, each rounded up to 8 bytes */
	uint8_t v[NFSL_MAX_CPUS][(sizeof(struct nfsl_alloc) + 7) & ~7ul];
	struct nfsl_alloc a;
	__u32 zero = 0;

	cr_assert_eq(bpf_map_lookup_elem(H.cursor, &zero, v), 0);
	memcpy(&a, v[H.cpu], sizeof(a));
	return a;
}

static uint64_t slot_ctl(uint32_t slot)
{
	struct nfsl_slot s;

	h_slot_read(h_part_base() + slot, &s);
	return s.ctl;
}

/* Nothing in flight: the window's slots come round again and again, the
 * rest of the partition is never touched (the store stays cache-hot). */
Test(store, hot_reuse)
{
	store_setup(WIN, 2);
	for (int k = 0; k < 13; k++) {
		slice_at(k, k % WIN, NULL);
		splice_back(k);
	}
	cr_expect_eq(alloc_state().win, WIN);
	for (uint32_t i = WIN; i < part; i++)
		cr_expect_eq(slot_ctl(i), 0, "slot %u touched", i);
}

/* Payloads in flight fill the window: two busy slots in a row double it
 * and the cursor goes on in the part just added, so with everything held
 * the slots are taken in FIFO order, none skipped, up to the whole
 * partition; then the FIFO store's rule applies (expiry 2: the packet
 * meeting a busy slot one turn old passes unsliced). */
Test(store, grows_with_inflight)
{
	struct nfsl_counters full = { .skipped_full = 1 };
	uint32_t wins[] = { [4] = 8, [8] = 16, [16] = 32 };
	struct pkt_spec s = { .size = 900, .proto = PKT_UDP, .seed = 99 };
	uint8_t in[PKT_MAX];
	size_t len = pkt_build(&s, in);

	store_setup(WIN, 2);
	for (uint32_t k = 0; k < part; k++) {
		slice_at(k, k, NULL);
		if (k < 20 && wins[k])
			cr_expect_eq(alloc_state().win, wins[k],
				     "window after %u slices", k + 1);
	}
	cr_expect_eq(alloc_state().win, part);
	x_slice_untouched("whole partition in flight", in, len, V_XDP_PASS,
			  &full);
	cr_expect_eq(slot_ctl(0), NFSL_CTL(1, 1), "one turn left");
	for (uint32_t k = 0; k < part; k++)
		splice_back(k);
}

/* A single busy slot (a payload the NF holds, or dropped) is stepped
 * over; the window does not grow for it. */
Test(store, steps_over_one)
{
	store_setup(WIN, 2);
	for (int k = 0; k < WIN; k++)
		slice_at(k, k, NULL);
	for (int k = 0; k < WIN; k++)
		if (k != 1)
			splice_back(k); /* packet 1 stays in flight */
	for (int k = WIN; k < WIN + 9; k++) {
		static const uint32_t order[] = { 0, 2, 3 };

		slice_at(k, order[(k - WIN) % 3], NULL);
		splice_back(k);
	}
	cr_expect_eq(alloc_state().win, WIN);
	for (uint32_t i = WIN; i < part; i++)
		cr_expect_eq(slot_ctl(i), 0, "slot %u touched", i);
	splice_back(1);
}

/*
 * Expiry by age in a small window: a payload the NF never returns is
 * evicted when it is expiry x partition (2 x 32) slice attempts old, the
 * FIFO store's lifetime, although the cursor comes round to it every third
 * attempt; its expiry count shows the turns it has left.
 */
Test(store, expiry_by_age)
{
	struct nfsl_counters evicted = { .evicted = 1 }, stale = { .stale = 1 };
	static const uint32_t order[] = { 1, 2, 3 };
	uint32_t life = 2 * H_STORE_SLOTS / H.ncpus;
	int k;

	store_setup(WIN, 2);
	slice_at(0, 0, NULL); /* attempt 1: never spliced */
	for (k = 1; k <= (int)life - 1; k++) {
		/* attempt k + 1 visits slot 0 when k % 3 == 1, age k */
		slice_at(k, order[(k - 1) % 3], NULL);
		splice_back(k);
		if (k % 3 == 1)
			cr_expect_eq(slot_ctl(0),
				     NFSL_CTL(1, k < (int)part ? 2 : 1),
				     "age %d: turns left", k);
	}
	cr_assert_eq(k % 3, 1, "the next attempt visits slot 0");
	/* attempt life + 1: slot 0 is life attempts old */
	slice_at(k, 0, &evicted);
	splice_back(k);
	x_splice_untouched("evicted payload", hp[0].sl, hp[0].slen, V_TC_SHOT,
			   &stale);
	cr_expect_eq(alloc_state().win, WIN);
}

/*
 * Growing never evicts early. Expiry 1: the FIFO store evicts a payload
 * one turn (32 attempts) after parking it. The growing window meets the
 * held payloads of slots 0 and 1 at attempts 5, 9 and 17, one turn or
 * less old: they stay; at attempt 33 slot 0 is one turn old and goes.
 */
Test(store, growing_never_evicts_early)
{
	struct nfsl_counters evicted = { .evicted = 1 };

	store_setup(WIN, 1);
	for (uint32_t k = 0; k < part; k++)
		slice_at(k, k, NULL);
	slice_at(part, 0, &evicted);
	for (uint32_t k = 1; k <= part; k++)
		splice_back(k);
}

/*
 * A payload left beyond a window that shrank is not touched: it survives
 * longer than its expiry (the splicer may still free it) until the window
 * grows over it again, which evicts it at that first visit (the lazy
 * sweep). Expiry 2, partition 32: lifetime 64 attempts.
 */
Test(store, outside_window_then_swept)
{
	struct nfsl_counters evicted = { .evicted = 1 }, stale = { .stale = 1 };
	static const uint32_t pass8[] = { 0, 1, 2, 3, 5, 6, 7 };
	struct nfsl_counters c;
	int a;

	store_setup(WIN, 2);
	/* attempts 1-8 hold slots 0-7 (the window grows to 8 at attempt 5,
	 * which parks Y in slot 4); all but Y come back */
	for (a = 1; a <= 8; a++)
		slice_at(a, a - 1, NULL);
	for (a = 1; a <= 8; a++)
		if (a != 5)
			splice_back(a);
	/* two passes over [0, 8) that find only Y busy (at most one slot in
	 * 8: mostly free), stepping over it; the window halves to 4 */
	for (a = 9; a <= 22; a++) {
		slice_at(a, pass8[(a - 9) % 7], NULL);
		splice_back(a);
	}
	for (a = 23; a <= 102; a++) {
		slice_at(a, (a - 23) % 4, NULL);
		splice_back(a);
	}
	cr_expect_eq(alloc_state().win, WIN);
	h_counters(&c);
	cr_expect_eq(c.evicted, 0);
	cr_expect_eq(slot_ctl(4), NFSL_CTL(1, 2), "Y kept beyond the window");
	/* attempts 103-106 hold slots 0-3; 107 finds them busy, doubles the
	 * window and meets Y, 102 attempts old: evicted, slot taken */
	for (a = 103; a <= 106; a++)
		slice_at(a, a - 103, NULL);
	slice_at(107, 4, &evicted);
	x_splice_untouched("Y after the sweep", hp[5].sl, hp[5].slen,
			   V_TC_SHOT, &stale);
	for (a = 103; a <= 107; a++)
		splice_back(a);
}

/* win_min = the partition: the FIFO store of PayloadPark Alg. 1, one slot
 * tried per packet, evicted on the expiry-th turn. */
Test(store, whole_partition_is_fifo)
{
	struct nfsl_counters full = { .skipped_full = 1 };
	struct nfsl_counters evicted = { .evicted = 1 };
	uint8_t in[PKT_MAX];
	struct pkt_spec s = { .size = 900, .proto = PKT_UDP, .seed = 99 };
	size_t len = pkt_build(&s, in);

	store_setup(H_STORE_SLOTS / H.ncpus, 2);
	for (uint32_t k = 0; k < part; k++)
		slice_at(k, k, NULL);
	for (uint32_t k = 0; k < part; k++) {
		x_slice_untouched("busy, one turn old", in, len, V_XDP_PASS,
				  &full);
		cr_expect_eq(slot_ctl(k), NFSL_CTL(1, 1), "slot %u", k);
	}
	slice_at(part, 0, &evicted);
	for (uint32_t k = 1; k <= part; k++)
		splice_back(k);
}

/* nfsl_slot_take on its own: free, busy and young, the boundary age,
 * generation carried, the stale generation no longer releasable. */
Test(store_codec, slot_take)
{
	struct nfsl_slot s = { 0 };
	uint32_t gen = 0;

	cr_assert_eq(nfsl_slot_take(&s, 2, 100, 32, &gen), NFSL_CLAIM_FREE);
	cr_expect_eq(gen, 1);
	cr_expect_eq(s.ctl, NFSL_CTL(1, 2));
	cr_expect_eq(s.born, 100);
	cr_expect_eq(nfsl_slot_take(&s, 2, 131, 32, &gen), NFSL_CLAIM_BUSY);
	cr_expect_eq(s.ctl, NFSL_CTL(1, 2), "31 attempts: two turns left");
	cr_expect_eq(nfsl_slot_take(&s, 2, 132, 32, &gen), NFSL_CLAIM_BUSY);
	cr_expect_eq(s.ctl, NFSL_CTL(1, 1), "one turn old: one left");
	cr_expect_eq(nfsl_slot_take(&s, 2, 163, 32, &gen), NFSL_CLAIM_BUSY);
	cr_expect_eq(nfsl_slot_take(&s, 2, 164, 32, &gen), NFSL_CLAIM_EVICTED);
	cr_expect_eq(gen, 2);
	cr_expect_eq(s.ctl, NFSL_CTL(2, 2));
	cr_expect_eq(s.born, 164);
	cr_expect(!nfsl_slot_release(&s, 1), "evicted generation released");
	cr_expect(nfsl_slot_release(&s, 2));
	/* the clock wraps: ages are taken modulo 2^32 */
	s.ctl = NFSL_CTL(7, 0);
	cr_assert_eq(nfsl_slot_take(&s, 1, 0xfffffff0u, 16, &gen),
		     NFSL_CLAIM_FREE);
	cr_expect_eq(nfsl_slot_take(&s, 1, 0xffffffffu, 16, &gen),
		     NFSL_CLAIM_BUSY);
	cr_expect_eq(nfsl_slot_take(&s, 1, 0, 16, &gen), NFSL_CLAIM_EVICTED);
	cr_expect_eq(gen, 9);
}

/* Window bookkeeping at the end of a pass. */
Test(store_codec, window_pass)
{
	struct nfsl_alloc a = { 0 };
	uint32_t w = 64;

	cr_expect_eq(nfsl_win_size(0, 0, 2048), NFSL_WIN_MIN);
	cr_expect_eq(nfsl_win_size(0, 0, 16), 16, "never above the partition");
	cr_expect_eq(nfsl_win_size(4096, 8, 2048), 2048);
	a.busy = 64 / NFSL_WIN_BUSY_DIV + 1; /* not mostly free */
	cr_expect_eq(nfsl_win_pass(&a, w, 8), 64);
	cr_expect_eq(a.clean, 0);
	cr_expect_eq(a.busy, 0);
	for (int i = 1; i < NFSL_WIN_CLEAN; i++) {
		a.busy = 64 / NFSL_WIN_BUSY_DIV; /* mostly free */
		cr_expect_eq(nfsl_win_pass(&a, w, 8), 64);
	}
	cr_expect_eq(nfsl_win_pass(&a, w, 8), 32, "halved");
	cr_expect_eq(a.clean, 0);
	for (int i = 0; i < 20 * NFSL_WIN_CLEAN; i++)
		w = nfsl_win_pass(&a, w, 8);
	cr_expect_eq(w, 8, "never below the minimum");
}
