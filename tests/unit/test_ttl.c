// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * TTL eviction (userspace/lib/nfsl/ttl.h, issue 10 §2): the scan over a store and
 * park log in memory, written as the slicer writes them (nfsl_slot_take,
 * nfsl_park_log_write): expired against young entries, payloads released
 * or parked again meanwhile, restored ones, log overruns, attempts that
 * parked nothing, an entry still being written, several partitions; then
 * threads releasing, claiming and scanning at once, where every payload
 * must end exactly once and no eviction may free a payload younger than
 * the TTL; then the real slicer's log and clock under BPF_PROG_TEST_RUN
 * and a scan of the real maps, whose evicted payload the splicer drops as
 * stale.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include "check.h"
#include "harness.h"
#include "nfsl_store.h"
#include "pkt.h"
#include "nfsl/ttl.h"
#include "util/util.h"

/* ---- a store and park log in memory ---------------------------------- */

#define MS 1000000ull /* ns */
#define TTL_US 10000  /* 10 ms, the default */
#define EXPIRY 2

/* One simulated domain: @ncpus x @nparts partitions of @part slots. */
struct sim {
	struct nfsl_config cfg;
	struct nfsl_slot *store;
	struct nfsl_park_rec *log;
	struct nfsl_mgr_counters cnt;
	__u32 *seq; /* each partition's clock (struct nfsl_alloc seq) */
	struct nfsl_ttl t;
};

static void sim_init(struct sim *m, __u32 part, __u32 ncpus, __u32 nparts)
{
	memset(m, 0, sizeof(*m));
	m->cfg.part_slots = part;
	m->cfg.ncpus = ncpus;
	m->cfg.nparts = nparts;
	m->cfg.slots = part * ncpus * nparts;
	m->cfg.expiry = EXPIRY;
	m->store = calloc(m->cfg.slots, sizeof(*m->store));
	m->log = calloc(m->cfg.slots, sizeof(*m->log));
	m->seq = calloc(ncpus * nparts, sizeof(*m->seq));
	cr_assert(m->store && m->log && m->seq);
	cr_assert_eq(nfsl_ttl_open_mem(&m->t, &m->cfg, m->store, m->log, &m->cnt), 0);
}

static void sim_fini(struct sim *m)
{
	nfsl_ttl_close(&m->t);
	free(m->store);
	free(m->log);
	free(m->seq);
}

/*
 * One slice attempt of partition @g at @now (ns) on slot @k of it, as the
 * slicer makes it: the clock first, the claim, the slot's parked_ns, the
 * log entry. @log false: the attempt claims but logs nothing (as one
 * aborted). Returns the generation taken, 0 when the slot was busy (the
 * attempt parked nothing).
 */
static __u32 sim_park(struct sim *m, __u32 g, __u32 k, __u64 now, bool log)
{
	__u32 L = m->cfg.part_slots, seq = ++m->seq[g], idx = g * L + k, gen;
	struct nfsl_slot *s = &m->store[idx];

	if (nfsl_slot_take(s, EXPIRY, seq, L, &gen) == NFSL_CLAIM_BUSY)
		return 0;
	s->parked_ns = now;
	if (log)
		nfsl_park_log_write(&m->log[g * L + seq % L], seq, idx, gen, now);
	return gen;
}

static int sim_scan(struct sim *m, __u64 now, struct nfsl_ttl_result *r)
{
	return nfsl_ttl_scan_heads(&m->t, m->seq, now, TTL_US, r);
}

static bool busy(struct sim *m, __u32 idx, __u32 gen)
{
	return nfsl_slot_busy(&m->store[idx], gen);
}

TestSuite(ttl_mem, .timeout = 60);

/* Entries older than the TTL are evicted, oldest first; the walk stops at
 * the first young one and says when it turns old; the next scan goes on
 * from there. */
Test(ttl_mem, expired_vs_young)
{
	struct nfsl_ttl_result r;
	struct sim m;

	sim_init(&m, 16, 1, 1);
	for (__u32 k = 0; k < 10; k++)
		cr_assert_eq(sim_park(&m, 0, k, 100 * MS + k * MS, true), 1);
	/* at 114 ms, parkings at 100..104 ms are 10 ms old or more */
	cr_assert_eq(sim_scan(&m, 114 * MS, &r), 0);
	cr_expect_eq(r.ttl_us, TTL_US);
	cr_expect_eq(r.evicted, 5);
	cr_expect_eq(r.walked, 5);
	cr_expect_eq(r.next_ns, 115 * MS, "next due %llu", (unsigned long long)r.next_ns);
	for (__u32 k = 0; k < 10; k++)
		cr_expect_eq(busy(&m, k, 1), k >= 5, "slot %u", k);
	/* the same time again: nothing more, nothing read twice */
	cr_assert_eq(sim_scan(&m, 114 * MS, &r), 0);
	cr_expect_eq(r.evicted + r.walked, 0);
	cr_assert_eq(sim_scan(&m, 200 * MS, &r), 0);
	cr_expect_eq(r.evicted, 5);
	cr_expect_eq(r.next_ns, 0, "nothing left");
	cr_expect_eq(m.cnt.evicted_ttl, 10);
	cr_expect_eq(m.cnt.ttl_walked, 10);
	cr_expect_eq(m.cnt.ttl_scans, 3);
	cr_expect_eq(m.cnt.ttl_overrun + m.cnt.ttl_raced, 0);
	/* a splicer that comes now finds the payload gone: stale */
	cr_expect_not(nfsl_slot_release(&m.store[0], 1));
	sim_fini(&m);
}

/* A payload spliced (released) before the scan is not touched; neither
 * is the slot's next payload, parked meanwhile under a new generation
 * and still young, although the old entry names its slot. */
Test(ttl_mem, released_and_reclaimed)
{
	struct nfsl_ttl_result r;
	struct sim m;

	sim_init(&m, 4, 1, 1);
	cr_assert_eq(sim_park(&m, 0, 0, 100 * MS, true), 1);
	cr_assert_eq(sim_park(&m, 0, 1, 100 * MS + 1, true), 1);
	cr_assert(nfsl_slot_release(&m.store[0], 1));
	cr_assert(nfsl_slot_release(&m.store[1], 1));
	cr_assert_eq(sim_park(&m, 0, 1, 119 * MS, true), 2);
	cr_assert_eq(sim_scan(&m, 120 * MS, &r), 0);
	cr_expect_eq(r.evicted, 0);
	cr_expect_eq(r.walked, 2);
	cr_expect_eq(r.raced, 0);
	cr_expect_eq(m.store[0].ctl, NFSL_CTL(1, 0));
	cr_expect(busy(&m, 1, 2), "the new payload stays");
	cr_expect_eq(r.next_ns, 129 * MS);
	sim_fini(&m);
}

/* Restore (userspace/lib/nfsl/ckpt) writes a saved generation into a slot: one that
 * equals an old entry's does not make that entry's eviction apply, since
 * the parked time differs. */
Test(ttl_mem, restored_same_generation)
{
	struct nfsl_ttl_result r;
	struct sim m;

	sim_init(&m, 4, 1, 1);
	cr_assert_eq(sim_park(&m, 0, 0, 100 * MS, true), 1);
	m.store[0].parked_ns = 150 * MS; /* restored: gen 1 again, other time */
	cr_assert_eq(sim_scan(&m, 200 * MS, &r), 0);
	cr_expect_eq(r.evicted, 0);
	cr_expect_eq(r.raced, 1);
	cr_expect(busy(&m, 0, 1));
	cr_expect_eq(m.cnt.ttl_raced, 1);
	sim_fini(&m);
}

/*
 * The scanner falls behind: the slicer went round its partition's log
 * (part_slots attempts) before the scan read the first entries. Those are
 * counted as overrun and left (their payloads to wrap-count expiry); what
 * the log still holds is scanned.
 */
Test(ttl_mem, overrun)
{
	struct nfsl_ttl_result r;
	struct sim m;
	__u32 L = 8;

	sim_init(&m, L, 1, 1);
	cr_assert_eq(sim_scan(&m, 1 * MS, &r), 0); /* starts at attempt 1 */
	/* 20 attempts: 3 parks in slot 2 and 20 in slot 3, never released;
	 * the others in slot 0, each released */
	for (__u32 a = 1; a <= 20; a++) {
		__u32 k = a == 3 ? 2 : 0, gen;

		if (a == 20)
			k = 3;
		gen = sim_park(&m, 0, k, 100 * MS + a, true);
		cr_assert_neq(gen, 0, "attempt %u", a);
		if (k == 0)
			cr_assert(nfsl_slot_release(&m.store[k], gen));
	}
	cr_assert_eq(sim_scan(&m, 200 * MS, &r), 0);
	cr_expect_eq(r.overrun, 12, "attempts 1-12 overwritten");
	cr_expect_eq(r.walked, 8);
	cr_expect_eq(r.evicted, 1, "attempt 20");
	cr_expect(busy(&m, 2, 1), "attempt 3 lost its entry: left to expiry");
	cr_expect_not(busy(&m, 3, 1));
	sim_fini(&m);
}

/* A fresh scanner (nfslice evict, a restarted daemon) starts at the oldest
 * entry the log holds, not at attempt 1. */
Test(ttl_mem, fresh_scanner_reads_the_whole_log)
{
	struct nfsl_ttl_result r;
	struct sim m;
	__u32 L = 8;

	sim_init(&m, L, 1, 1);
	for (__u32 a = 1; a <= 30; a++) {
		__u32 gen = sim_park(&m, 0, (a - 1) % L, 100 * MS + a, true);

		if (a <= 28)
			cr_assert(nfsl_slot_release(&m.store[(a - 1) % L], gen));
	}
	cr_assert_eq(sim_scan(&m, 200 * MS, &r), 0);
	cr_expect_eq(r.overrun, 0);
	cr_expect_eq(r.walked, L);
	cr_expect_eq(r.evicted, 2);
	sim_fini(&m);
}

/* Attempts that parked nothing (the slot was busy: skipped_full, or the
 * slice aborted) leave an older turn's entry at their place: passed over,
 * never taken for theirs. */
Test(ttl_mem, attempts_that_parked_nothing)
{
	struct nfsl_ttl_result r;
	struct sim m;
	__u32 L = 4;

	sim_init(&m, L, 1, 1);
	for (__u32 a = 1; a <= 4; a++) /* 1-4: all four slots held */
		cr_assert_eq(sim_park(&m, 0, a - 1, 100 * MS, true), 1);
	cr_assert_eq(sim_park(&m, 0, 0, 101 * MS, true), 0, "5: slot 0 busy");
	cr_assert_eq(sim_park(&m, 0, 1, 101 * MS, true), 0, "6: slot 1 busy");
	cr_assert(nfsl_slot_release(&m.store[2], 1));
	cr_assert_eq(sim_park(&m, 0, 2, 102 * MS, false), 2, "7: aborted, no entry");
	cr_assert(nfsl_slot_release(&m.store[2], 2));
	cr_assert_eq(sim_park(&m, 0, 2, 103 * MS, true), 3, "8");
	/* the log holds attempts 5..8: 5, 6, 7 hold turn 1's entries */
	cr_assert_eq(sim_scan(&m, 200 * MS, &r), 0);
	cr_expect_eq(r.walked, 4);
	cr_expect_eq(r.evicted, 1, "attempt 8 only");
	cr_expect_eq(r.overrun, 0);
	cr_expect(busy(&m, 0, 1) && busy(&m, 1, 1) && busy(&m, 3, 1),
		  "slots 0, 1, 3 lost their entries to the turn: left to expiry");
	sim_fini(&m);
}

/* The newest attempt may be between its clock tick and its log entry: the
 * scan stops there and reads it the next time, once written. */
Test(ttl_mem, entry_being_written)
{
	struct nfsl_ttl_result r;
	struct sim m;

	sim_init(&m, 8, 1, 1);
	cr_assert_eq(sim_park(&m, 0, 0, 100 * MS, true), 1);
	cr_assert_eq(sim_park(&m, 0, 1, 100 * MS, false), 1); /* attempt 2: no entry yet */
	cr_assert_eq(sim_scan(&m, 200 * MS, &r), 0);
	cr_expect_eq(r.evicted, 1);
	cr_expect_eq(r.walked, 1, "attempt 2 not passed over");
	nfsl_park_log_write(&m.log[2], 2, 1, 1, 100 * MS);
	cr_assert_eq(sim_scan(&m, 200 * MS, &r), 0);
	cr_expect_eq(r.evicted, 1, "attempt 2, once logged");
	cr_expect_not(busy(&m, 1, 1));
	/* half-written: seq 0 while the fields change */
	cr_assert_eq(sim_park(&m, 0, 2, 100 * MS, true), 1);
	m.log[3].seq = 0;
	cr_assert_eq(sim_scan(&m, 200 * MS, &r), 0);
	cr_expect_eq(r.walked, 0);
	sim_fini(&m);
}

/* Partitions (CPUs x destinations) have clocks and logs of their own. */
Test(ttl_mem, partitions)
{
	struct nfsl_ttl_result r;
	struct sim m;

	sim_init(&m, 4, 2, 3);
	for (__u32 g = 0; g < 6; g++)
		for (__u32 k = 0; k <= g % 4; k++)
			cr_assert_eq(sim_park(&m, g, k, (100 + g) * MS, true), 1);
	/* at 113 ms partitions 0-3 (parked 100-103 ms) are old, 4-5 young */
	cr_assert_eq(sim_scan(&m, 113 * MS, &r), 0);
	cr_expect_eq(r.evicted, 1 + 2 + 3 + 4);
	cr_expect_eq(r.next_ns, 114 * MS);
	for (__u32 g = 0; g < 6; g++)
		for (__u32 k = 0; k <= g % 4; k++)
			cr_expect_eq(busy(&m, g * 4 + k, 1), g >= 4, "partition %u slot %u", g, k);
	cr_assert_eq(sim_scan(&m, 116 * MS, &r), 0);
	cr_expect_eq(r.evicted, 1 + 2);
	sim_fini(&m);
}

/* A partition's clock that goes back (its state reset, as tests and
 * benchmarks do) makes the scanner start afresh, not wait for it. */
Test(ttl_mem, clock_reset)
{
	struct nfsl_ttl_result r;
	struct sim m;

	sim_init(&m, 8, 1, 1);
	for (__u32 k = 0; k < 6; k++)
		cr_assert_eq(sim_park(&m, 0, k, 100 * MS, true), 1);
	cr_assert_eq(sim_scan(&m, 200 * MS, &r), 0);
	cr_expect_eq(r.evicted, 6);
	m.seq[0] = 0;
	memset(m.log, 0, m.cfg.slots * sizeof(*m.log));
	cr_assert_eq(sim_park(&m, 0, 0, 300 * MS, true), 2);
	cr_assert_eq(sim_scan(&m, 400 * MS, &r), 0);
	cr_expect_eq(r.evicted, 1);
	sim_fini(&m);
}

Test(ttl_mem, api_edges)
{
	struct nfsl_ttl_result r;
	struct nfsl_config bad = { .part_slots = 8, .ncpus = 2, .slots = 8 };
	struct nfsl_ttl t;
	struct sim m;

	cr_expect_eq(nfsl_ttl_open_mem(&t, &bad, NULL, NULL, NULL), -EINVAL);
	nfsl_ttl_close(&t); /* after a failed open, and twice */
	nfsl_ttl_close(&t);
	sim_init(&m, 4, 1, 1);
	cr_expect_eq(nfsl_ttl_scan_heads(&m.t, m.seq, 0, 0, &r), -EINVAL);
	cr_expect_eq(nfsl_ttl_interval_ns(10000), 2500000, "10 ms: every 2.5 ms");
	cr_expect_eq(nfsl_ttl_interval_ns(1), 100000, "at least 100 us");
	sim_fini(&m);
}

/* ---- concurrency ------------------------------------------------------ */

/*
 * A slicer thread parks payloads (FIFO over one partition, Alg. 1, with
 * wrap-count expiry), splicer threads release 70% of them after a random
 * time up to twice the TTL (the rest the NF "dropped"), two scanner
 * threads evict with their own read positions, all on one store, with
 * real time. Afterwards every payload must have ended exactly once
 * (released, TTL-evicted, or evicted by the slicer's expiry) unless it is
 * still parked, and every TTL eviction must have freed the very payload
 * its entry named, at least the TTL after it was parked.
 */
#define C_SLOTS 512
#define C_MAXGEN 512
#define C_TTL_US 300
#define C_RELEASERS 2
#define C_SCANNERS 2
#define C_QUEUE 8192

struct c_tok {
	__u32 slot, gen;
	__u64 due_ns; /* release at; 0: never (dropped) */
};

static struct {
	struct sim m;
	__u64 parked[C_SLOTS][C_MAXGEN]; /* parked time of (slot, gen) */
	__u8 ends[C_SLOTS][C_MAXGEN];    /* how often (slot, gen) ended */
	__u32 head;                      /* the partition's clock, shared */
	struct c_tok q[C_QUEUE];         /* tokens in flight */
	unsigned int qhead, qtail;
	pthread_mutex_t qlock;
	volatile bool stop;
	__u64 bad_age, evicted, released, expired, scan_errors;
} C;

static void c_end(__u32 slot, __u32 gen)
{
	__atomic_fetch_add(&C.ends[slot][gen], 1, __ATOMIC_RELAXED);
}

static void *c_slicer(void *arg)
{
	unsigned int rnd = 1;
	__u32 seq = 0;

	for (;;) {
		__u32 k, gen, idx, g0;
		__u64 now;
		int r;

		seq++;
		k = seq % C_SLOTS;
		idx = k;
		now = nfsl_now_ns();
		g0 = NFSL_CTL_GEN(__atomic_load_n(&C.m.store[idx].ctl, __ATOMIC_ACQUIRE));
		if (g0 + 1 >= C_MAXGEN) /* the tables are full: done */
			break;
		/* The clock ticks before the claim (nfsl_alloc_slot). */
		__atomic_store_n(&C.head, seq, __ATOMIC_RELEASE);
		r = nfsl_slot_take(&C.m.store[idx], EXPIRY, seq, C_SLOTS, &gen);
		if (r != NFSL_CLAIM_BUSY) {
			if (r == NFSL_CLAIM_EVICTED) {
				c_end(idx, gen - 1);
				__atomic_fetch_add(&C.expired, 1, __ATOMIC_RELAXED);
			}
			C.parked[idx][gen] = now;
			C.m.store[idx].parked_ns = now;
			nfsl_park_log_write(&C.m.log[seq % C_SLOTS], seq, idx, gen, now);
			rnd = rnd * 1103515245 + 12345;
			pthread_mutex_lock(&C.qlock);
			if (C.qtail - C.qhead < C_QUEUE) {
				struct c_tok *t = &C.q[C.qtail++ % C_QUEUE];

				t->slot = idx;
				t->gen = gen;
				t->due_ns = (rnd >> 16) % 10 < 3
						    ? 0
						    : now + (rnd >> 8) % (2 * C_TTL_US * 1000);
			}
			pthread_mutex_unlock(&C.qlock);
		}
		/* ~1 slice per us: the log holds about half a ms */
		for (__u64 t = nfsl_now_ns(); nfsl_now_ns() - t < 1000;)
			;
	}
	C.stop = true;
	return NULL;
}

static void *c_splicer(void *arg)
{
	while (!C.stop) {
		struct c_tok t = { 0 };
		bool have = false;

		pthread_mutex_lock(&C.qlock);
		if (C.qhead != C.qtail) {
			struct c_tok *h = &C.q[C.qhead % C_QUEUE];

			if (!h->due_ns || h->due_ns <= nfsl_now_ns()) {
				t = *h;
				C.qhead++;
				have = true;
			}
		}
		pthread_mutex_unlock(&C.qlock);
		if (have && t.due_ns && nfsl_slot_release(&C.m.store[t.slot], t.gen)) {
			c_end(t.slot, t.gen);
			__atomic_fetch_add(&C.released, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

/* Criterion's assertions belong to the test's thread: the others count. */
static void c_evicted(void *arg, const struct nfsl_ttl_evicted *ev)
{
	if (ev->slot >= C_SLOTS || ev->gen >= C_MAXGEN ||
	    C.parked[ev->slot][ev->gen] != ev->parked_ns || ev->age_ns < C_TTL_US * 1000ull) {
		__atomic_fetch_add(&C.bad_age, 1, __ATOMIC_RELAXED);
		return;
	}
	c_end(ev->slot, ev->gen);
	__atomic_fetch_add(&C.evicted, 1, __ATOMIC_RELAXED);
}

static void *c_scanner(void *arg)
{
	struct nfsl_ttl *t = arg;

	t->on_evict = c_evicted;
	while (!C.stop) {
		struct nfsl_ttl_result r;
		__u32 head = __atomic_load_n(&C.head, __ATOMIC_ACQUIRE);

		if (nfsl_ttl_scan_heads(t, &head, nfsl_now_ns(), C_TTL_US, &r))
			__atomic_fetch_add(&C.scan_errors, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

Test(ttl_mem, concurrent_release_claim_scan, .timeout = 120)
{
	pthread_t sl, sp[C_RELEASERS], sc[C_SCANNERS];
	struct nfsl_ttl ts[C_SCANNERS];
	__u64 never = 0, twice = 0;

	memset(&C, 0, sizeof(C));
	pthread_mutex_init(&C.qlock, NULL);
	sim_init(&C.m, C_SLOTS, 1, 1);
	for (int i = 0; i < C_SCANNERS; i++)
		cr_assert_eq(nfsl_ttl_open_mem(&ts[i], &C.m.cfg, C.m.store, C.m.log, &C.m.cnt), 0);
	for (int i = 0; i < C_SCANNERS; i++)
		pthread_create(&sc[i], NULL, c_scanner, &ts[i]);
	for (int i = 0; i < C_RELEASERS; i++)
		pthread_create(&sp[i], NULL, c_splicer, NULL);
	pthread_create(&sl, NULL, c_slicer, NULL);
	pthread_join(sl, NULL);
	for (int i = 0; i < C_RELEASERS; i++)
		pthread_join(sp[i], NULL);
	for (int i = 0; i < C_SCANNERS; i++) {
		pthread_join(sc[i], NULL);
		nfsl_ttl_close(&ts[i]);
	}
	for (__u32 s = 0; s < C_SLOTS; s++) {
		__u64 ctl = C.m.store[s].ctl;
		__u32 cur = NFSL_CTL_GEN(ctl);

		for (__u32 g = 1; g <= cur; g++) {
			/* the payload parked last may still be parked */
			__u8 want = g == cur && NFSL_CTL_EXP(ctl) ? 0 : 1;

			never += C.ends[s][g] < want;
			twice += C.ends[s][g] > want;
		}
	}
	cr_log_info("ttl concurrency: %llu released, %llu TTL-evicted, %llu expired; scans %llu, "
		    "overrun %llu, raced %llu",
		    (unsigned long long)C.released, (unsigned long long)C.evicted,
		    (unsigned long long)C.expired, (unsigned long long)C.m.cnt.ttl_scans,
		    (unsigned long long)C.m.cnt.ttl_overrun,
		    (unsigned long long)C.m.cnt.ttl_raced);
	cr_expect_eq(twice, 0, "%llu payloads ended twice (freed after being taken again)",
		     (unsigned long long)twice);
	cr_expect_eq(never, 0, "%llu payloads never ended", (unsigned long long)never);
	cr_expect_eq(C.bad_age, 0, "%llu evictions of payloads younger than the TTL, or not "
		     "the entry's", (unsigned long long)C.bad_age);
	cr_expect_eq(C.scan_errors, 0);
	cr_expect_gt(C.evicted, 1000, "the TTL evicted %llu", (unsigned long long)C.evicted);
	cr_expect_gt(C.released, 1000);
	cr_expect_eq(C.m.cnt.evicted_ttl, C.evicted);
	sim_fini(&C.m);
}

/* ---- the slicer's log and clock, the scan of the real maps -------------- */

TestSuite(ttl, .init = h_setup, .fini = h_teardown, .timeout = 60);

static size_t ttl_pkt(uint8_t *buf, int seed)
{
	struct pkt_spec s = { .size = 1000, .proto = PKT_UDP, .seed = seed };

	return pkt_build(&s, buf);
}

/* Every slice gets its log entry (x_slice_ok checks it), with a time of
 * CLOCK_MONOTONIC to the ns: two slices a test run apart differ (the
 * coarse clock would give both the same jiffy), and both lie between the
 * clock reads around them. An attempt that finds no slot logs nothing. */
Test(ttl, slicer_logs_each_slice_on_the_precise_clock)
{
	struct nfsl_counters full = { .skipped_full = 1 };
	uint8_t in[PKT_MAX], out[PKT_MAX];
	struct nfsl_park_rec e;
	struct nfsl_slot s0, s1;
	__u64 t0, t1;
	size_t len;
	uint32_t olen, idx;

	h_configure(256, 0, 2, 2);
	H.cfg.win_min = 2;
	h_write_config();
	len = ttl_pkt(in, 1);
	t0 = nfsl_now_ns();
	cr_assert(x_slice_ok("first", in, len, h_part_base(), 1, NULL, out, &olen));
	cr_assert(x_slice_ok("second", in, len, h_part_base() + 1, 1, NULL, out, &olen));
	t1 = nfsl_now_ns();
	h_slot_read(h_part_base(), &s0);
	h_slot_read(h_part_base() + 1, &s1);
	cr_expect(t0 <= s0.parked_ns && s0.parked_ns < s1.parked_ns && s1.parked_ns <= t1,
		  "parked %llu then %llu, between %llu and %llu",
		  (unsigned long long)s0.parked_ns, (unsigned long long)s1.parked_ns,
		  (unsigned long long)t0, (unsigned long long)t1);
	/* both slots busy: attempt 3 parks nothing, its entry (index 3 % 2)
	 * keeps attempt 1's */
	x_slice_untouched("store full", in, len, V_XDP_PASS, &full);
	idx = h_part_base() + 1;
	cr_assert_eq(bpf_map_lookup_elem(H.parklog, &idx, &e), 0);
	cr_expect_eq(e.seq, 1);
}

/*
 * The scan on the domain's own maps (config TTL, cursors, park log,
 * mgr_counters, as nfsliced and nfslice evict open them): a payload the
 * NF dropped is evicted once it is older than the TTL; its sliced header
 * arriving late is dropped as stale, never spliced; a payload spliced in
 * time is not touched.
 */
Test(ttl, scan_of_the_domain_maps)
{
	uint8_t in[2][PKT_MAX], sl[2][PKT_MAX];
	struct nfsl_counters stale = { .stale = 1 };
	struct nfsl_domain d = {
		.store_fd = H.store, .config_fd = H.config, .counters_fd = H.counters,
		.cursor_fd = H.cursor, .parklog_fd = H.parklog, .mgr_fd = H.mgr,
	};
	struct nfsl_mgr_counters mc;
	struct nfsl_ttl_result r;
	struct nfsl_ttl t;
	size_t len[2];
	uint32_t slen[2], zero = 0;
	__u64 now;

	H.cfg.ttl_us = 5000;
	h_write_config();
	for (int i = 0; i < 2; i++) {
		len[i] = ttl_pkt(in[i], i);
		cr_assert(x_slice_ok("park", in[i], len[i], h_part_base() + i, 1, NULL, sl[i],
				     &slen[i]));
	}
	cr_assert(x_splice_ok("spliced in time", sl[1], slen[1], in[1], len[1]));
	d.cfg = H.cfg;
	cr_assert_eq(nfsl_ttl_open(&t, &d), 0);
	now = nfsl_now_ns();
	cr_assert_eq(nfsl_ttl_scan(&t, now, &r), 0);
	cr_expect_eq(r.ttl_us, 5000, "the config's TTL");
	cr_expect_eq(r.evicted, 0, "younger than 5 ms");
	cr_expect_gt(r.next_ns, now);
	/* a second after the first turned old: both are */
	cr_assert_eq(nfsl_ttl_scan(&t, r.next_ns + 1000 * MS, &r), 0);
	cr_expect_eq(r.evicted, 1);
	cr_expect_eq(r.walked, 2);
	cr_assert(x_splice_untouched("late header", sl[0], slen[0], V_TC_SHOT, &stale));
	cr_assert_eq(bpf_map_lookup_elem(H.mgr, &zero, &mc), 0);
	cr_expect_eq(mc.evicted_ttl, 1);
	cr_expect_eq(mc.ttl_scans, 2);
	cr_expect_eq(mc.ttl_walked, 2);
	/* TTL off in the config: nothing scanned */
	H.cfg.ttl_us = 0;
	h_write_config();
	cr_assert_eq(nfsl_ttl_scan(&t, now + 3600 * 1000 * MS, &r), 0);
	cr_expect_eq(r.ttl_us, 0);
	nfsl_ttl_close(&t);
	/* no park log: a domain attached by an older nfslice */
	d.parklog_fd = -1;
	cr_expect_eq(nfsl_ttl_open(&t, &d), -ENOENT);
}
