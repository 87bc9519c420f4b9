/* SPDX-License-Identifier: GPL-2.0 */
/*
 * I/O working set tracker (Pismenny's thesis §4.2): how many distinct UMEM
 * frames the kernel wrote (received into) during the last window, 100 ms
 * by default. That is the memory the NIC's DMA (with DDIO: the LLC) has to
 * hold for the receive path; privRing, shRing and rxBisect differ in it.
 *
 * Frames are counted by index: addr / frame_size (frame_size a power of
 * two, so a shift; an address anywhere in a frame, e.g. after the
 * headroom, counts as that frame). Addresses beyond the UMEM's frames are
 * ignored.
 *
 * Shapes: each worker has its own struct nfsl_xsk_wset_worker (one cache
 * line, allocated apart from the others) and three bitmaps of one bit per
 * frame (nframes / 8 bytes each), used in turn: the window being written,
 * the one the roller reads, the one to be cleared. A worker marks frames
 * with a plain load and store to its own bitmap: no atomic read-modify-
 * write, no cache line written by two threads.
 *
 *   worker, once per burst     nfsl_xsk_wset_begin(w): one acquire load of
 *                              the epoch; when it changed, clear the
 *                              bitmap of the new window (nframes / 8 bytes,
 *                              once per window) and publish which epoch it
 *                              holds;
 *   worker, per frame received nfsl_xsk_wset_mark(w, addr): a shift, a
 *                              compare, an OR into its bitmap;
 *   stats thread, per window   nfsl_xsk_wset_roll(set, now): advance the
 *                              epoch, then OR the finished window's bitmaps
 *                              of the workers that wrote in it, popcount,
 *                              publish (nfsl_xsk_wset_last). The bitmaps are
 *                              cleared by their own workers when they come
 *                              round again, never by the roller.
 *
 * The race at the window's edge: a worker reads the epoch once per burst,
 * so a burst that began before a roll marks its frames in the window that
 * just ended, possibly while the roller reads that bitmap. Those marks are
 * counted in the ended window or not at all: never in a later one (the
 * worker clears a bitmap before it writes a new window into it, and the
 * roller reads only bitmaps tagged with the window it closes). So a
 * window's count is low by at most the frames of one burst per worker
 * (NFSL_XSK_BURST, 64), against working sets of hundreds to thousands of
 * frames: an estimate, as any sampled counter of a running datapath is. A
 * worker that does not run during a window (asleep in poll) contributes
 * nothing to it, which is right: it received nothing.
 *
 * Cost per frame: the mark (measured: docs/benchmarks-xsk.md "Library
 * microbenchmarks"); per burst: one load of
 * the shared epoch, a line that changes once per window. Per window:
 * nworkers x nframes / 64 loads for the roller, nframes / 8 bytes cleared
 * by each active worker.
 *
 * Threads: begin and mark from the worker that owns w only; roll, tick
 * and last from any thread (they serialize on a mutex).
 */
#ifndef NFSL_XSK_WSET_H
#define NFSL_XSK_WSET_H

#include <pthread.h>
#include <linux/types.h>

#define NFSL_XSK_WSET_WINDOW_NS 100000000ULL /* default window, 100 ms */

struct nfsl_xsk_wset_worker {
	/* The worker's (read by it per frame, written once per window). */
	__u64 *map;          /* bitmap of the window being written */
	__u64 cur;           /* its epoch */
	__u32 shift;         /* log2(frame_size) */
	__u32 nframes;
	const __u64 *epoch;  /* the set's */
	__u64 *bits[3];      /* window e is written in bits[e % 3] */
	/* Read by the roller: the epoch each bitmap holds (release by the
	 * worker after clearing, acquire by the roller). */
	__u64 held[3];
} __attribute__((aligned(64)));

struct nfsl_xsk_wset {
	__u64 *epoch;        /* current window; own cache line */
	struct nfsl_xsk_wset_worker *w; /* nworkers, each its own line */
	__u64 *mem;          /* every bitmap, one allocation */
	__u32 nworkers;
	__u32 nframes;
	__u32 frame_size;
	__u64 window_ns;
	/* Under lock. */
	pthread_mutex_t lock;
	__u64 start_ns;      /* when the current window began */
	__u64 last;          /* frames written in the last finished window */
	__u64 last_ns;       /* its length */
};

/*
 * nfsl_xsk_wset_init - a tracker for @nworkers (1..1024) workers over
 * @nframes frames of @frame_size bytes (a power of two), windows of @window_ns
 * (0: NFSL_XSK_WSET_WINDOW_NS); the first window begins at @now_ns.
 * Returns 0, -EINVAL, -ENOMEM.
 * nfsl_xsk_wset_fini - free it.
 */
int nfsl_xsk_wset_init(struct nfsl_xsk_wset *set, __u32 nworkers,
		       __u32 nframes, __u32 frame_size, __u64 window_ns,
		       __u64 now_ns);
void nfsl_xsk_wset_fini(struct nfsl_xsk_wset *set);

/* Worker @i's tracker (0 <= @i < nworkers). */
static inline struct nfsl_xsk_wset_worker *
nfsl_xsk_wset_worker(struct nfsl_xsk_wset *set, __u32 i)
{
	return &set->w[i];
}

/* Slow path of nfsl_xsk_wset_begin: a new window. */
void nfsl_xsk_wset_switch(struct nfsl_xsk_wset_worker *w, __u64 epoch);

/* Once per burst, before its marks. */
static inline void nfsl_xsk_wset_begin(struct nfsl_xsk_wset_worker *w)
{
	__u64 e = __atomic_load_n(w->epoch, __ATOMIC_ACQUIRE);

	if (__builtin_expect(e != w->cur, 0))
		nfsl_xsk_wset_switch(w, e);
}

/* The kernel wrote the frame at UMEM offset @addr (a frame received). */
static inline void nfsl_xsk_wset_mark(struct nfsl_xsk_wset_worker *w,
				      __u64 addr)
{
	__u64 i = addr >> w->shift, *p;

	if (__builtin_expect(i >= w->nframes, 0))
		return;
	p = &w->map[i / 64];
	/* Relaxed atomic load and store, not a read-modify-write: plain moves,
	 * and no data race with the roller reading the word. */
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) | 1ULL << (i % 64),
			 __ATOMIC_RELAXED);
}

/*
 * nfsl_xsk_wset_roll - end the current window at @now_ns: count the
 * distinct frames marked in it, publish the count (nfsl_xsk_wset_last) and
 * begin the next. Returns the count.
 * nfsl_xsk_wset_tick - roll if a window has passed since the current one
 * began (@now_ns - start >= window); returns 1 when it rolled. For a
 * stats thread that wakes at least once per window.
 */
__u64 nfsl_xsk_wset_roll(struct nfsl_xsk_wset *set, __u64 now_ns);
int nfsl_xsk_wset_tick(struct nfsl_xsk_wset *set, __u64 now_ns);

/* Frames written in the last finished window (0 before the first roll),
 * and its length in *@window_ns when not NULL. */
__u64 nfsl_xsk_wset_last(struct nfsl_xsk_wset *set, __u64 *window_ns);

#endif /* NFSL_XSK_WSET_H */
