// SPDX-License-Identifier: GPL-2.0
/* RxArr, in-order release of a shared receive ring: see nfsl_xsk_rxarr.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xsk/nfsl_xsk_rxarr.h"

static size_t nwords(__u32 size)
{
	return size < 64 ? 1 : size / 64;
}

int nfsl_xsk_rxarr_init(struct nfsl_xsk_rxarr *a, __u32 size)
{
	size_t bytes;
	void *mem;

	memset(a, 0, sizeof(*a));
	if (!size || size > (1u << 31) || (size & (size - 1)))
		return -EINVAL;
	/* The control line, then the bitmap from the next line on. */
	bytes = sizeof(*a->ctl) + ((nwords(size) * 8 + 63) & ~(size_t)63);
	mem = aligned_alloc(64, bytes);
	if (!mem)
		return -ENOMEM;
	memset(mem, 0, bytes);
	a->ctl = mem;
	if (pthread_spin_init(&a->ctl->lock, PTHREAD_PROCESS_PRIVATE)) {
		free(mem);
		a->ctl = NULL;
		return -ENOMEM;
	}
	a->bits = (__u64 *)(a->ctl + 1);
	a->size = size;
	a->mask = size - 1;
	return 0;
}

void nfsl_xsk_rxarr_fini(struct nfsl_xsk_rxarr *a)
{
	if (a->ctl) {
		pthread_spin_destroy(&a->ctl->lock);
		free(a->ctl);
	}
	memset(a, 0, sizeof(*a));
}

void nfsl_xsk_rxarr_reset(struct nfsl_xsk_rxarr *a, __u32 head)
{
	memset(a->bits, 0, nwords(a->size) * 8);
	__atomic_store_n(&a->ctl->head, head, __ATOMIC_RELEASE);
}

void nfsl_xsk_rxarr_done(struct nfsl_xsk_rxarr *a, const __u32 *pos, __u32 n)
{
	__u32 w = 0;
	__u64 acc = 0;

	for (__u32 i = 0; i < n; i++) {
		__u32 idx = pos[i] & a->mask;

		if (acc && idx >> 6 != w) {
			__atomic_fetch_or(&a->bits[w], acc, __ATOMIC_RELEASE);
			acc = 0;
		}
		w = idx >> 6;
		acc |= 1ULL << (idx & 63);
	}
	if (acc)
		__atomic_fetch_or(&a->bits[w], acc, __ATOMIC_RELEASE);
}

__u32 nfsl_xsk_rxarr_advance_excl(struct nfsl_xsk_rxarr *a, __u32 *first,
				  __u32 max)
{
	/* A run ends at bit 63 of a word, or at the ring's end when the whole
	 * ring fits in one word: there the next position is bit 0 again. */
	__u32 lim = a->size < 64 ? a->size : 64;
	__u32 head = a->ctl->head, got = 0;

	if (max > a->size)
		max = a->size;
	*first = head;
	while (got < max) {
		__u32 idx = (head + got) & a->mask, sh = idx & 63, run;
		__u64 *wp = &a->bits[idx >> 6];
		__u64 v = __atomic_load_n(wp, __ATOMIC_ACQUIRE) >> sh;

		/* Done bits in a row from the head's: ffs of the inverse. */
		run = ~v ? (__u32)__builtin_ctzll(~v) : 64;
		if (run > max - got)
			run = max - got;
		if (!run)
			break;
		__atomic_fetch_and(wp, run == 64 ? 0 : ~(((1ULL << run) - 1) << sh),
				   __ATOMIC_RELAXED);
		got += run;
		if (sh + run < lim)
			break; /* stopped at a position not done */
	}
	if (got)
		__atomic_store_n(&a->ctl->head, head + got, __ATOMIC_RELEASE);
	return got;
}

__u32 nfsl_xsk_rxarr_advance(struct nfsl_xsk_rxarr *a, __u32 *first, __u32 max)
{
	__u32 got;

	pthread_spin_lock(&a->ctl->lock);
	got = nfsl_xsk_rxarr_advance_excl(a, first, max);
	pthread_spin_unlock(&a->ctl->lock);
	return got;
}

int nfsl_xsk_rxarr_tryadvance(struct nfsl_xsk_rxarr *a, __u32 *first,
			      __u32 max)
{
	__u32 got;

	if (pthread_spin_trylock(&a->ctl->lock)) {
		*first = nfsl_xsk_rxarr_head(a);
		return -EBUSY;
	}
	got = nfsl_xsk_rxarr_advance_excl(a, first, max);
	pthread_spin_unlock(&a->ctl->lock);
	return (int)got;
}
