/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Slot allocation and release on the store, shared by the XDP/tc engines
 * and the AF_XDP engine (which reaches the store through an mmap).
 *
 * Allocation is FIFO per CPU partition with PayloadPark's wrap-count expiry
 * (Alg. 1, lines 11-20; NFSlicer §III-C "payload timeouts"): a slot still
 * busy when the cursor comes round loses one count and is evicted at zero.
 * Release may run on any CPU: the control word changes only by
 * compare-and-swap, and the generation guards against reuse, so a splicer
 * that copied a payload while it was being evicted notices and drops.
 */
#ifndef NFSL_STORE_H
#define NFSL_STORE_H

#include "nfsl_structs.h"

enum nfsl_claim {
	NFSL_CLAIM_FREE,    /* slot was free: taken */
	NFSL_CLAIM_EVICTED, /* slot was busy with expiry 1: evicted and taken */
	NFSL_CLAIM_BUSY,    /* slot busy (expiry decremented): not taken */
};

#define NFSL_READ_ONCE_U64(x) (*(volatile __u64 *)&(x))

/*
 * nfsl_slot_claim - try to take slot @s for a new payload.
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

#endif /* NFSL_STORE_H */
