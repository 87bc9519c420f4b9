/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RxArr: the in-order release of a shared receive ring (Pismenny's thesis
 * §5.1.3, Listing 5.1). With shRing, several workers process the frames
 * of one RX ring, each the frames dispatched to it, and finish them out of
 * order; but the ring's buffers go back to the device (here: the AF_XDP
 * fill ring) in reception order only, as far as the first frame not yet
 * finished. A worker that stalls on one frame therefore holds back every
 * later frame of every worker: the head-of-line blocking of §5.1.5 that
 * rxBisect removes.
 *
 * Positions are reception sequence numbers: __u32, one per frame taken
 * from the shared ring, in the order received, wrapping at 2^32. RxArr
 * keeps one bit per position modulo @size (a power of two) and the head:
 * the first position not yet returned by an advance.
 *
 *   done     a worker marks the positions it finished: one atomic OR per
 *            64-bit word of positions in its batch, not one per position
 *            (Listing 5.1 lines 16-26);
 *   advance  under the lock: the longest run of done positions from the
 *            head (find-first-set on the inverted word, Listing 5.1 lines
 *            29-37, from the head's bit on), cleared atomically, the head
 *            moved past it. The caller then returns that many frames to
 *            the fill ring, in reception order.
 *
 * Invariant (the caller's to keep): at most @size positions are
 * outstanding, i.e. a position p is taken from the ring only while
 * p - head < size (nfsl_xsk_rxarr_room; @size = the RX ring's entries).
 * Each outstanding position is marked done exactly once. Breaking either
 * corrupts the bitmap silently (a bit set for two laps at once).
 *
 * Memory order: done is a release, advance an acquire of each word, so a
 * frame's processing happens before the advance that returns it. The head
 * is stored with release after its bits are cleared, so whoever reads the
 * head (acquire) and then takes new positions finds them clear.
 *
 * Cost: done, one atomic OR per word touched (a burst of 64 positions
 * spread over a 2048-entry ring touches several; in order, one or two);
 * advance, a lock plus one load and one atomic AND per 64 positions
 * returned (measured: docs/benchmarks-xsk.md "Library microbenchmarks").
 * Across CPUs the bitmap's and the lock's cache lines move between the
 * workers on every burst: that traffic is shRing's synchronization cost
 * (§5.2).
 *
 * Departures from Listing 5.1: its line 17 tests == where != is meant
 * (flush the accumulated bits when the word changes), and its lines 31-33
 * look from bit 0 of the word rather than from the head's bit; here the
 * word is shifted to the head first. A @max bounds one advance, for a
 * fill ring with less room than the run.
 */
#ifndef NFSL_XSK_RXARR_H
#define NFSL_XSK_RXARR_H

#include <pthread.h>
#include <linux/types.h>

/* Written by the advancing worker: a cache line of its own, ahead of the
 * bitmap in the same allocation. */
struct nfsl_xsk_rxarr_ctl {
	pthread_spinlock_t lock;
	__u32 head; /* first position not returned; written under the lock
		     * (release), read anywhere (acquire) */
} __attribute__((aligned(64)));

struct nfsl_xsk_rxarr {
	struct nfsl_xsk_rxarr_ctl *ctl;
	__u64 *bits;  /* bit (p & mask) of word (p & mask) / 64: p done */
	__u32 size;   /* positions tracked: a power of two, 1..2^31 */
	__u32 mask;   /* size - 1 */
};

/*
 * nfsl_xsk_rxarr_init - track @size positions (a power of two, 1..2^31;
 * the RX ring's entries), head 0, none done. Returns 0, -EINVAL, -ENOMEM.
 * nfsl_xsk_rxarr_fini - free it.
 */
int nfsl_xsk_rxarr_init(struct nfsl_xsk_rxarr *a, __u32 size);
void nfsl_xsk_rxarr_fini(struct nfsl_xsk_rxarr *a);

/* nfsl_xsk_rxarr_reset - forget every mark and put the head at @head.
 * Only with no position outstanding and no other thread inside. */
void nfsl_xsk_rxarr_reset(struct nfsl_xsk_rxarr *a, __u32 head);

/*
 * nfsl_xsk_rxarr_done - mark the @n positions of @pos done, in any order
 * (positions sharing a 64-bit word in a row cost one atomic OR). Any
 * thread, no lock.
 */
void nfsl_xsk_rxarr_done(struct nfsl_xsk_rxarr *a, const __u32 *pos, __u32 n);

/*
 * nfsl_xsk_rxarr_advance - under the lock, return up to @max of the
 * positions done in a row from the head: their count, and the first (the
 * old head) in *@first; the head moves past them and their marks are
 * cleared. 0: the head's position is not done yet (or @max is 0). The
 * caller returns that many frames to the fill ring, in order.
 * nfsl_xsk_rxarr_tryadvance - the same if the lock is free; -EBUSY (nothing
 * done) when another thread holds it, which will return the run itself.
 * nfsl_xsk_rxarr_advance_excl - the same without the lock, for a caller
 * that keeps every advance of @a under a lock of its own (the fill
 * ring's).
 */
__u32 nfsl_xsk_rxarr_advance(struct nfsl_xsk_rxarr *a, __u32 *first, __u32 max);
int nfsl_xsk_rxarr_tryadvance(struct nfsl_xsk_rxarr *a, __u32 *first,
			      __u32 max);
__u32 nfsl_xsk_rxarr_advance_excl(struct nfsl_xsk_rxarr *a, __u32 *first,
				  __u32 max);

/* The head now (acquire): every position before it has been returned. */
static inline __u32 nfsl_xsk_rxarr_head(const struct nfsl_xsk_rxarr *a)
{
	return __atomic_load_n(&a->ctl->head, __ATOMIC_ACQUIRE);
}

/* Positions that may be taken from the ring from @next (the next reception
 * position) on without breaking the invariant: size - (next - head). */
static inline __u32 nfsl_xsk_rxarr_room(const struct nfsl_xsk_rxarr *a,
					__u32 next)
{
	return a->size - (next - nfsl_xsk_rxarr_head(a));
}

#endif /* NFSL_XSK_RXARR_H */
