/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Slot allocation and release on the store, shared by the XDP/tc engines
 * and the AF_XDP engine (which reaches the store through an mmap).
 *
 * Each CPU allocates from its own partition of part_slots slots (no shared
 * cursor). Allocation is FIFO with PayloadPark's wrap-count expiry (Alg. 1,
 * lines 11-20; NFSlicer §III-C "payload timeouts"), made cache-hot (the I/O
 * working-set lesson, Pismenny ch. 4 §4.2):
 *
 * Hot window. The cursor wraps within an active window [0, win) at the
 * start of the partition, not over the whole partition, so a slot is
 * reused as soon as the window comes round and the store's working set is
 * the window, not part_slots x 2 KiB (4 MiB per CPU with the default 4096
 * slots on two CPUs, more than the L2). The window starts at NFSL_WIN_MIN
 * slots (config win_min) and
 *   - grows when payloads in flight fill it: two busy slots in a row
 *     double it (up to the whole partition) and the cursor goes on at the
 *     first slot of the part just added (free, unless a payload was left
 *     there when the window last shrank: see below);
 *   - steps over a single busy slot (a payload the NF still holds, or
 *     dropped: it expires as below) to the next slot;
 *   - shrinks back slowly: after NFSL_WIN_CLEAN passes in a row that found
 *     at most one slot in NFSL_WIN_BUSY_DIV busy, it halves (never below
 *     the minimum). Payloads beyond the new end are not touched: the
 *     splicer frees them as usual, and one the NF dropped stays parked
 *     until the window grows over it again, where it is evicted at the
 *     first visit if it has expired (a lazy sweep: its slot is not needed
 *     before).
 * A packet passes on unsliced (skipped_full) when NFSL_WIN_PROBES slots
 * were busy. With the window as large as the partition this is exactly
 * Alg. 1's FIFO: one slot tried per packet, a busy one passes it on.
 *
 * Expiry by age. Every partition counts its slice attempts (struct
 * nfsl_alloc seq, its clock) and a slot keeps the count at which it was
 * taken (born). A busy slot the cursor meets is evicted when it is
 * expiry x part_slots attempts old: exactly when Alg. 1's FIFO would evict
 * it (at the expiry-th time the cursor comes round, every attempt moving
 * the cursor by one), never earlier, however the window moved meanwhile.
 * So a payload still in flight survives as long as with the FIFO store,
 * and the wrap count stays visible in the control word: a busy slot's
 * expiry count is the number of partition turns it has left, updated when
 * the cursor meets it.
 *
 * Release may run on any CPU: the control word changes only by
 * compare-and-swap, and the generation guards against reuse, so a splicer
 * that copied a payload while it was being evicted notices and drops.
 * Only the CPU owning a partition takes its slots and writes born.
 */
#ifndef NFSL_STORE_H
#define NFSL_STORE_H

#include "nfsl_structs.h"

enum nfsl_claim {
	NFSL_CLAIM_FREE,    /* slot was free: taken */
	NFSL_CLAIM_EVICTED, /* slot's payload had expired: evicted, slot taken */
	NFSL_CLAIM_BUSY,    /* slot busy, payload not expired: not taken */
};

#define NFSL_READ_ONCE_U64(x) (*(volatile __u64 *)&(x))

/* Hot window (above): default smallest window, in slots (128 KiB, an
 * eighth of this platform's 1 MiB L2; 16 to 128 slots measured alike on
 * traffic, 512 no better than the FIFO: docs/benchmarks.md "Store hot and
 * cold"); passes in a row, mostly free, before it halves; "mostly free":
 * at most one slot in NFSL_WIN_BUSY_DIV met busy in a pass. */
#define NFSL_WIN_MIN 64
#define NFSL_WIN_CLEAN 2
#define NFSL_WIN_BUSY_DIV 8
/* Slots tried per packet at most (one when the window is the partition). */
#define NFSL_WIN_PROBES 4

/*
 * Allocation state of one CPU's partition (the per-CPU nfsl_cursor map).
 * All zero is the initial state: cursor at the first slot, window at its
 * minimum.
 */
struct nfsl_alloc {
	__u32 cur;   /* next slot to try, relative to the partition */
	__u32 win;   /* active window [0, win); 0: not sized yet */
	__u32 seq;   /* slice attempts so far, wrapping: the expiry clock */
	__u32 busy;  /* busy slots met in the current pass */
	__u32 clean; /* passes in a row that found the window mostly free */
};

/* Window size for @win of a partition of @part slots, config @win_min. */
NFSL_INLINE __u32 nfsl_win_size(__u32 win, __u32 win_min, __u32 part)
{
	__u32 lo = win_min ? win_min : NFSL_WIN_MIN;

	if (lo > part)
		lo = part;
	if (win < lo)
		return lo;
	return win > part ? part : win;
}

/*
 * nfsl_win_pass - the cursor went past the end of window @win: account the
 * pass that ended and return the window of the next one (halved after
 * NFSL_WIN_CLEAN mostly free passes, never below @lo).
 */
NFSL_INLINE __u32 nfsl_win_pass(struct nfsl_alloc *a, __u32 win, __u32 lo)
{
	if (a->busy * NFSL_WIN_BUSY_DIV <= win) {
		if (++a->clean >= NFSL_WIN_CLEAN && win > lo) {
			win = win / 2 > lo ? win / 2 : lo;
			a->clean = 0;
		}
	} else {
		a->clean = 0;
	}
	a->busy = 0;
	return win;
}

/*
 * nfsl_slot_claim - try to take slot @s for a new payload, Alg. 1 in its
 * original form: one expiry count per call (a visit of a FIFO cursor over
 * the whole partition). The slicer uses nfsl_slot_take.
 * @expiry: wrap-arounds the new payload survives (>= 1)
 * @gen:    out: generation the token must carry
 * Returns enum nfsl_claim.
 */
NFSL_INLINE int nfsl_slot_claim(struct nfsl_slot *s, __u32 expiry, __u32 *gen)
{
	__u64 old = NFSL_READ_ONCE_U64(s->ctl);
	__u32 exp = NFSL_CTL_EXP(old);
	__u32 g = NFSL_CTL_GEN(old) + 1;

	if (exp > 1) {
		/* Losing this race to a release only delays the eviction. */
		__sync_val_compare_and_swap(&s->ctl, old, old - 1);
		return NFSL_CLAIM_BUSY;
	}
	if (__sync_val_compare_and_swap(&s->ctl, old, NFSL_CTL(g, expiry)) != old)
		return NFSL_CLAIM_BUSY;
	*gen = g;
	return exp ? NFSL_CLAIM_EVICTED : NFSL_CLAIM_FREE;
}

/*
 * nfsl_slot_take - try to take slot @s for a new payload at time @now of
 * its partition's clock (struct nfsl_alloc seq): Alg. 1 with the wrap
 * count measured by age, @turn (the partition's size) attempts a turn.
 * @expiry: turns the new payload survives (>= 1)
 * @gen:    out: generation the token must carry
 * A busy slot younger than @expiry turns is not taken (its expiry count
 * drops to the turns it has left); an older one is evicted and taken.
 * Returns enum nfsl_claim.
 */
NFSL_INLINE int nfsl_slot_take(struct nfsl_slot *s, __u32 expiry, __u32 now,
			       __u32 turn, __u32 *gen)
{
	__u64 old = NFSL_READ_ONCE_U64(s->ctl);
	__u32 exp = NFSL_CTL_EXP(old);
	__u32 g = NFSL_CTL_GEN(old) + 1;

	if (exp) {
		__u32 age = now - s->born;

		if ((__u64)age < (__u64)expiry * turn) {
			__u32 left = expiry - age / turn;

			/* Losing this race to a release changes nothing. */
			if (left < exp)
				__sync_val_compare_and_swap(
					&s->ctl, old,
					NFSL_CTL(NFSL_CTL_GEN(old), left));
			return NFSL_CLAIM_BUSY;
		}
	}
	if (__sync_val_compare_and_swap(&s->ctl, old, NFSL_CTL(g, expiry)) != old)
		return NFSL_CLAIM_BUSY;
	s->born = now;
	*gen = g;
	return exp ? NFSL_CLAIM_EVICTED : NFSL_CLAIM_FREE;
}

/*
 * nfsl_slot_regen - move our claim of slot @s from generation @gen to the
 * next one, for a token of another generation (the slicer's way out of an
 * ambiguous checksum seed, nfsl_seed_ambiguous). Returns true with *@next,
 * false when the slot no longer holds @gen.
 */
NFSL_INLINE bool nfsl_slot_regen(struct nfsl_slot *s, __u32 gen, __u32 *next)
{
	__u64 old = NFSL_READ_ONCE_U64(s->ctl);

	if (NFSL_CTL_GEN(old) != gen || !NFSL_CTL_EXP(old) ||
	    __sync_val_compare_and_swap(&s->ctl, old, NFSL_CTL(gen + 1, NFSL_CTL_EXP(old))) != old)
		return false;
	*next = gen + 1;
	return true;
}

/*
 * nfsl_slot_busy - does slot @s still hold the payload of generation @gen?
 */
NFSL_INLINE bool nfsl_slot_busy(struct nfsl_slot *s, __u32 gen)
{
	__u64 ctl = NFSL_READ_ONCE_U64(s->ctl);

	return NFSL_CTL_GEN(ctl) == gen && NFSL_CTL_EXP(ctl) != 0;
}

/*
 * nfsl_slot_release - free slot @s if it still holds generation @gen.
 * Call after copying the payload out: false means the payload was evicted
 * (and may have been overwritten) meanwhile, so the copy must be dropped.
 * A concurrent expiry decrement only makes the loop retry.
 */
NFSL_INLINE bool nfsl_slot_release(struct nfsl_slot *s, __u32 gen)
{
	NFSL_UNROLL
	for (int i = 0; i < 4; i++) {
		__u64 old = NFSL_READ_ONCE_U64(s->ctl);

		if (NFSL_CTL_GEN(old) != gen || NFSL_CTL_EXP(old) == 0)
			return false;
		if (__sync_val_compare_and_swap(&s->ctl, old, NFSL_CTL(gen, 0)) == old)
			return true;
	}
	return false;
}

/*
 * Ordering of the park log's seqlock (below). BPF has no fence
 * instruction: a compiler barrier keeps the stores in program order,
 * which is all x86's TSO needs. On a weakly ordered CPU a reader may then
 * take a torn entry for a whole one; the eviction checks the entry
 * against the slot (generation and parked time to the ns), so such an
 * entry at worst misses its eviction and leaves it to expiry.
 */
#ifdef __bpf__
#define NFSL_WMB() asm volatile("" ::: "memory")
#else
#define NFSL_WMB() __atomic_thread_fence(__ATOMIC_RELEASE)
#define NFSL_RMB() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif

/*
 * nfsl_park_log_write - record in park log entry @e that the slice
 * attempt @seq of its partition parked generation @gen in store slot
 * @slot at @parked_ns (the slot's parked_ns, already written). seq 0
 * first, so a reader never takes half an entry for a whole one.
 */
NFSL_INLINE void nfsl_park_log_write(struct nfsl_park_rec *e, __u32 seq, __u32 slot, __u32 gen,
				     __u64 parked_ns)
{
	*(volatile __u32 *)&e->seq = 0;
	NFSL_WMB();
	e->parked_ns = parked_ns;
	e->slot = slot;
	e->gen = gen;
	NFSL_WMB();
	*(volatile __u32 *)&e->seq = seq;
}

#ifndef __bpf__
/*
 * nfsl_park_log_read - copy park log entry @e into @out. Returns false
 * when a writer changed it meanwhile (out->seq is then the seq found
 * first; the fields are not to be used).
 */
NFSL_INLINE bool nfsl_park_log_read(const struct nfsl_park_rec *e, struct nfsl_park_rec *out)
{
	__u32 seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);

	out->parked_ns = *(volatile const __u64 *)&e->parked_ns;
	out->slot = *(volatile const __u32 *)&e->slot;
	out->gen = *(volatile const __u32 *)&e->gen;
	out->seq = seq;
	NFSL_RMB();
	return *(volatile const __u32 *)&e->seq == seq;
}

enum nfsl_evict {
	NFSL_EVICT_DONE,  /* the payload was evicted: slot freed */
	NFSL_EVICT_GONE,  /* the slot no longer holds it (spliced, dropped,
			   * expired, taken again): nothing to do */
	NFSL_EVICT_RACED, /* the slot holds that generation under another
			   * parked time (a restore), or kept changing: left */
};

/*
 * nfsl_slot_evict - free slot @s if it still holds the payload of
 * generation @gen parked at @parked_ns (a park log entry's), for the TTL
 * scan (PayloadPark §3.3 evictor, by time). Race-free against the slicer's
 * claim and the splicer's release: read ctl, then parked_ns, then ctl
 * again, and compare-and-swap ctl to free only if it did not change, so
 * a payload released meanwhile (or released and parked again) is never
 * freed; a splicer copying it when the swap wins finds the generation
 * freed at its release and drops the copy (stale), as with expiry. An
 * allocator updating the busy slot's expiry count only makes it retry.
 * Returns enum nfsl_evict.
 */
NFSL_INLINE int nfsl_slot_evict(struct nfsl_slot *s, __u32 gen, __u64 parked_ns)
{
	for (int i = 0; i < 4; i++) {
		__u64 c1 = __atomic_load_n(&s->ctl, __ATOMIC_ACQUIRE), c2;
		__u64 at;

		if (NFSL_CTL_GEN(c1) != gen || !NFSL_CTL_EXP(c1))
			return NFSL_EVICT_GONE;
		at = __atomic_load_n(&s->parked_ns, __ATOMIC_ACQUIRE);
		c2 = __atomic_load_n(&s->ctl, __ATOMIC_ACQUIRE);
		if (c2 != c1)
			continue;
		if (at != parked_ns)
			return NFSL_EVICT_RACED;
		if (__sync_val_compare_and_swap(&s->ctl, c1, NFSL_CTL(gen, 0)) == c1)
			return NFSL_EVICT_DONE;
	}
	return NFSL_EVICT_RACED;
}
#endif /* !__bpf__ */

#endif /* NFSL_STORE_H */
