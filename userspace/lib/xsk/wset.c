// SPDX-License-Identifier: GPL-2.0
/* I/O working set tracker: see nfsl_xsk_wset.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xsk/nfsl_xsk_wset.h"

#define NO_EPOCH (~0ULL)

static size_t map_words(__u32 nframes)
{
	return (nframes + 63) / 64;
}

/* Words from one bitmap to the next: whole cache lines. */
static size_t map_stride(__u32 nframes)
{
	return (map_words(nframes) + 7) & ~(size_t)7;
}

int nfsl_xsk_wset_init(struct nfsl_xsk_wset *set, __u32 nworkers,
		       __u32 nframes, __u32 frame_size, __u64 window_ns,
		       __u64 now_ns)
{
	size_t stride = map_stride(nframes);
	__u32 shift = 0;

	memset(set, 0, sizeof(*set));
	if (!nworkers || nworkers > 1024 || !nframes || !frame_size ||
	    (frame_size & (frame_size - 1)))
		return -EINVAL;
	while ((1u << shift) < frame_size)
		shift++;
	set->epoch = aligned_alloc(64, 64);
	set->w = aligned_alloc(64, nworkers * sizeof(*set->w));
	set->mem = aligned_alloc(64, (size_t)nworkers * 3 * stride * 8);
	if (!set->epoch || !set->w || !set->mem) {
		nfsl_xsk_wset_fini(set);
		return -ENOMEM;
	}
	*set->epoch = 0;
	memset(set->w, 0, nworkers * sizeof(*set->w));
	memset(set->mem, 0, (size_t)nworkers * 3 * stride * 8);
	for (__u32 i = 0; i < nworkers; i++) {
		struct nfsl_xsk_wset_worker *w = &set->w[i];

		for (int b = 0; b < 3; b++) {
			w->bits[b] = set->mem + ((size_t)i * 3 + b) * stride;
			w->held[b] = b ? NO_EPOCH : 0;
		}
		w->map = w->bits[0];
		w->cur = 0;
		w->shift = shift;
		w->nframes = nframes;
		w->epoch = set->epoch;
	}
	pthread_mutex_init(&set->lock, NULL);
	set->nworkers = nworkers;
	set->nframes = nframes;
	set->frame_size = frame_size;
	set->window_ns = window_ns ? window_ns : NFSL_XSK_WSET_WINDOW_NS;
	set->start_ns = now_ns;
	return 0;
}

void nfsl_xsk_wset_fini(struct nfsl_xsk_wset *set)
{
	if (set->nworkers)
		pthread_mutex_destroy(&set->lock);
	free(set->epoch);
	free(set->w);
	free(set->mem);
	memset(set, 0, sizeof(*set));
}

void nfsl_xsk_wset_switch(struct nfsl_xsk_wset_worker *w, __u64 epoch)
{
	int b = epoch % 3;

	/* Nobody reads bits[b] now: the roller read it last when it closed
	 * window epoch - 3, two rolls before this epoch began. */
	memset(w->bits[b], 0, map_words(w->nframes) * 8);
	__atomic_store_n(&w->held[b], epoch, __ATOMIC_RELEASE);
	w->map = w->bits[b];
	w->cur = epoch;
}

static __u64 roll_locked(struct nfsl_xsk_wset *set, __u64 now_ns)
{
	size_t nw = map_words(set->nframes);
	__u64 e = *set->epoch, count = 0;
	const __u64 *maps[set->nworkers];
	__u32 n = 0;
	int b = e % 3;

	/* Workers that begin a burst from now on write the next window. */
	__atomic_store_n(set->epoch, e + 1, __ATOMIC_RELEASE);
	for (__u32 i = 0; i < set->nworkers; i++)
		if (__atomic_load_n(&set->w[i].held[b], __ATOMIC_ACQUIRE) == e)
			maps[n++] = set->w[i].bits[b];
	for (size_t k = 0; k < nw; k++) {
		__u64 acc = 0;

		for (__u32 i = 0; i < n; i++)
			acc |= __atomic_load_n(&maps[i][k], __ATOMIC_RELAXED);
		count += __builtin_popcountll(acc);
	}
	set->last = count;
	set->last_ns = now_ns - set->start_ns;
	set->start_ns = now_ns;
	return count;
}

__u64 nfsl_xsk_wset_roll(struct nfsl_xsk_wset *set, __u64 now_ns)
{
	__u64 count;

	pthread_mutex_lock(&set->lock);
	count = roll_locked(set, now_ns);
	pthread_mutex_unlock(&set->lock);
	return count;
}

int nfsl_xsk_wset_tick(struct nfsl_xsk_wset *set, __u64 now_ns)
{
	int due;

	pthread_mutex_lock(&set->lock);
	due = now_ns - set->start_ns >= set->window_ns;
	if (due)
		roll_locked(set, now_ns);
	pthread_mutex_unlock(&set->lock);
	return due;
}

__u64 nfsl_xsk_wset_last(struct nfsl_xsk_wset *set, __u64 *window_ns)
{
	__u64 last;

	pthread_mutex_lock(&set->lock);
	last = set->last;
	if (window_ns)
		*window_ns = set->last_ns;
	pthread_mutex_unlock(&set->lock);
	return last;
}
