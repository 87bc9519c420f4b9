/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Two-level UMEM frame allocator (Pismenny's thesis §6.1.2 "Allocation
 * Mechanism", as DPDK's mempool with its per-lcore cache): one shared pool
 * of free frames behind a lock, and one cache per worker that only its
 * worker touches. A worker takes frames from its cache and frees into it;
 * the cache goes to the pool only in batches, when it runs short (refill
 * up to its expected size) or grows past 1.5x that size (drain back down
 * to it). A frame allocated by one worker may be freed by another (rxbisect:
 * a frame from one queue's fill ring lands in any worker's RX ring); the
 * batches amortize the lock over tens of frames.
 *
 * Frames are __u64 addresses: offsets in the UMEM area, as libxdp's
 * xsk_ring_prod__fill_addr() takes them. Neither level looks inside them.
 *
 * Order (the I/O working set, thesis §4.2): both levels are LIFO stacks.
 * nfsl_xsk_cache_get hands out the most recently freed frame first, so
 * frames that the CPU and the NIC (DDIO) touched last, still in the LLC,
 * are reused first and cold frames stay cold. A drain sends the OLDEST
 * frames of the cache (its bottom) to the pool and keeps the newest; a
 * refill takes the newest frames of the pool (its top) and puts them under
 * the cache's own, so they are handed out after every frame the cache
 * held. The cache's stack sits, conceptually, on top of the pool's.
 *
 * Shapes:
 *   pool   cap frames at most (the UMEM's frame count): an array used as a
 *          stack, its lock, its count. One per UMEM.
 *   cache  a circular array of capacity >= 1.5 x size + NFSL_XSK_CACHE_BURST
 *          (rounded up to a power of two), used as a double-ended stack:
 *          get and put at the top, drains from the bottom, refills under
 *          the bottom. One per worker; embed it in the worker's own struct
 *          (no two workers' caches in one cache line).
 *
 * Starvation: frames in one worker's cache are invisible to the others.
 * Up to 1.5 x size frames can sit in each cache, so a UMEM needs
 * nworkers x (1.5 x size) frames beyond what its fill and RX rings hold for
 * nfsl_xsk_cache_get never to come back short while frames are idle.
 *
 * Threads: the pool functions from any thread; a cache's functions from
 * its owner thread only (or under the caller's own lock), except
 * nfsl_xsk_cache_count.
 *
 * Lock: a pthread spinlock, the cheaper or equal here: the critical
 * sections are shorter than a futex sleep and wake-up, and the cache's
 * batches make the lock rare; a spinlock costs more only when its holder
 * is preempted: run at most one worker per CPU. Build pool.c with
 * -DNFSL_XSK_POOL_MUTEX for the mutex. Measurements (command, commit):
 * docs/benchmarks-xsk.md "Library microbenchmarks".
 *
 * Debug: built with -DNFSL_XSK_POOL_DEBUG, the library tracks every seeded
 * frame as free or handed out (one atomic byte per frame) and aborts with a
 * message when a frame is handed out twice, freed twice, or freed without
 * having been seeded. The struct layouts do not change with it.
 */
#ifndef NFSL_XSK_POOL_H
#define NFSL_XSK_POOL_H

#include <linux/types.h>

/* Most frames one cache call moves at once without looping: a cache's
 * capacity is at least 1.5 x size + NFSL_XSK_CACHE_BURST. Larger calls
 * work too, in chunks. */
#define NFSL_XSK_CACHE_BURST 256u

/* The shared stack: lock, count and frames, in cache lines of their own
 * (pool.c). */
struct nfsl_xsk_pool_stack;

struct nfsl_xsk_pool {
	struct nfsl_xsk_pool_stack *s;
	__u32 cap;
	/* NFSL_XSK_POOL_DEBUG: state of each seeded frame (1: handed out). */
	__u8 *dbg_out;
	__u64 dbg_first;
	__u32 dbg_stride, dbg_n;
};

struct nfsl_xsk_cache {
	struct nfsl_xsk_pool *pool;
	__u64 *f;         /* frames at f[i & mask] for i in [bot, top) */
	__u32 mask;       /* capacity - 1 */
	__u32 bot, top;   /* free-running; frames cached: top - bot */
	__u32 size;       /* expected size: what a refill aims at */
	__u32 thresh;     /* drain when more than this (1.5 x size) */
	__u64 refills;    /* locked batches taken from the pool */
	__u64 drains;     /* locked batches given back to it */
};

/*
 * nfsl_xsk_pool_init - an empty pool for at most @cap frames (1..2^31).
 * Returns 0, -EINVAL (@cap out of range), -ENOMEM.
 * nfsl_xsk_pool_fini - free it (frames still cached elsewhere are simply
 * forgotten; the UMEM is the caller's).
 */
int nfsl_xsk_pool_init(struct nfsl_xsk_pool *p, __u32 cap);
void nfsl_xsk_pool_fini(struct nfsl_xsk_pool *p);

/*
 * nfsl_xsk_pool_seed - add the @n frames @first, @first + @stride, ...,
 * @first + (@n - 1) x @stride on top of the pool, so that they are handed
 * out next, in that order (@first first). Returns 0, -EINVAL (@stride 0
 * for several frames), or -ENOSPC when they do not fit (nothing added).
 * The debug build tracks one arithmetic progression: a second seed must
 * continue the first one (same stride, next address), and an address
 * anywhere in a frame counts as that frame ((addr - first) / stride).
 */
int nfsl_xsk_pool_seed(struct nfsl_xsk_pool *p, __u64 first, __u32 n,
		       __u32 stride);

/* Free frames in the pool now (not counting the caches'): exact when no
 * other thread uses the pool, an instantaneous estimate otherwise. */
__u32 nfsl_xsk_pool_count(const struct nfsl_xsk_pool *p);

/*
 * nfsl_xsk_pool_get - take up to @n frames from the pool in one locked
 * batch, newest first, into @out. Returns how many (fewer when it runs
 * out). For a thread without a cache (setup, teardown, a control thread);
 * a worker uses its cache.
 * nfsl_xsk_pool_put - give @n frames back in one locked batch (@in[n-1]
 * becomes the newest). Returns how many it took: fewer than @n only when
 * the pool would hold more than cap frames, which means frames were freed
 * twice (the excess is dropped; the debug build aborts first).
 */
__u32 nfsl_xsk_pool_get(struct nfsl_xsk_pool *p, __u64 *out, __u32 n);
__u32 nfsl_xsk_pool_put(struct nfsl_xsk_pool *p, const __u64 *in, __u32 n);

/*
 * nfsl_xsk_cache_init - an empty cache over @p that aims at @size frames
 * (0: no caching, every call goes to the pool; at most 2^24). Returns 0,
 * -EINVAL, -ENOMEM.
 * nfsl_xsk_cache_fini - give every cached frame back to the pool (one
 * locked batch) and free the cache.
 */
int nfsl_xsk_cache_init(struct nfsl_xsk_cache *c, struct nfsl_xsk_pool *p,
			__u32 size);
void nfsl_xsk_cache_fini(struct nfsl_xsk_cache *c);

/*
 * nfsl_xsk_cache_get - take @n frames into @out, newest first: from the
 * cache while it has them; when it holds fewer than @n, first one locked
 * refill from the pool of enough frames to serve @n and leave @size
 * cached. Returns how many it got: fewer than @n only when the pool ran
 * out too (frames in other workers' caches are not taken).
 * Cost: a few ns per frame from the cache; one lock and a copy of up to
 * @size + @n frames per refill.
 */
__u32 nfsl_xsk_cache_get(struct nfsl_xsk_cache *c, __u64 *out, __u32 n);

/*
 * nfsl_xsk_cache_put - free the @n frames of @in into the cache (@in[n-1]
 * is handed out first by the next get). When the cache then holds more
 * than 1.5 x @size, its oldest frames go back to the pool in one locked
 * batch until @size remain.
 */
void nfsl_xsk_cache_put(struct nfsl_xsk_cache *c, const __u64 *in, __u32 n);

/* Frames in the cache now: exact from its owner; from another thread (a
 * stats thread summing free frames) an estimate, 0..capacity. */
static inline __u32 nfsl_xsk_cache_count(const struct nfsl_xsk_cache *c)
{
	__u32 n = __atomic_load_n(&c->top, __ATOMIC_RELAXED) -
		  __atomic_load_n(&c->bot, __ATOMIC_RELAXED);

	return n <= c->mask + 1 ? n : 0;
}

#endif /* NFSL_XSK_POOL_H */
