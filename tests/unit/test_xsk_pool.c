// SPDX-License-Identifier: GPL-2.0
/*
 * The AF_XDP datapath's lock-careful structures, in user space, no root:
 *   xsk_pool   the two-level frame allocator (userspace/lib/xsk/nfsl_xsk_pool.h):
 *              exact order against a reference model (LIFO, refill under
 *              the cache, drain of the oldest at 1.5x), short gets from an
 *              empty pool, and threads trading frames for half a second
 *              with every frame owned by one holder at a time;
 *   xsk_rxarr  shRing's in-order release (nfsl_xsk_rxarr.h): runs from the
 *              head only, the head-of-line stall, word and 2^32 wrap-around
 *              against a model, and threads finishing out of order;
 *   xsk_wset   the I/O working-set tracker (nfsl_xsk_wset.h): exact counts,
 *              windows that forget, and no frame of an old window counted
 *              in a later one while workers run.
 * NFSL_XSK_BENCH=1 build/test_datapath --filter 'xsk_pool/bench' (and
 * xsk_rxarr/bench, xsk_wset/bench) prints their costs, quoted in
 * docs/benchmarks-xsk.md "Library microbenchmarks".
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <criterion/criterion.h>

#include "xsk/nfsl_xsk_pool.h"
#include "xsk/nfsl_xsk_rxarr.h"
#include "xsk/nfsl_xsk_wset.h"
#include "util/util.h"

TestSuite(xsk_pool, .timeout = 20);
TestSuite(xsk_rxarr, .timeout = 20);
TestSuite(xsk_wset, .timeout = 20);

#define FS 2048u /* frame size of the tests */
#define F(i) ((__u64)(i) * FS)

/* xorshift64*: each thread its own. */
static __u64 rnd(__u64 *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

static __u32 rnd_below(__u64 *s, __u32 n)
{
	return (__u32)(rnd(s) % n);
}

/* ======================================================================
 * xsk_pool
 * ====================================================================== */

static void expect_frames(const __u64 *got, const __u64 *want, __u32 n,
			  const char *what)
{
	for (__u32 i = 0; i < n; i++)
		cr_assert_eq(got[i], want[i], "%s: frame %u is 0x%llx, want 0x%llx",
			     what, i, (unsigned long long)got[i],
			     (unsigned long long)want[i]);
}

Test(xsk_pool, seed_count_order)
{
	struct nfsl_xsk_pool p;
	__u64 out[8], want[8];

	cr_assert_eq(nfsl_xsk_pool_init(&p, 0), -EINVAL);
	cr_assert_eq(nfsl_xsk_pool_init(&p, 8), 0);
	cr_assert_eq(nfsl_xsk_pool_count(&p), 0);
	cr_assert_eq(nfsl_xsk_pool_get(&p, out, 4), 0, "empty pool gives nothing");
	cr_assert_eq(nfsl_xsk_pool_seed(&p, 0, 5, FS), 0);
	cr_assert_eq(nfsl_xsk_pool_count(&p), 5);
	cr_assert_eq(nfsl_xsk_pool_seed(&p, F(5), 4, FS), -ENOSPC);
	cr_assert_eq(nfsl_xsk_pool_count(&p), 5, "a refused seed adds nothing");
	cr_assert_eq(nfsl_xsk_pool_seed(&p, F(5), 3, FS), 0);
	cr_assert_eq(nfsl_xsk_pool_count(&p), 8);

	/* Seeded order: each seed on top, its first frame first. */
	cr_assert_eq(nfsl_xsk_pool_get(&p, out, 4), 4);
	want[0] = F(5), want[1] = F(6), want[2] = F(7), want[3] = F(0);
	expect_frames(out, want, 4, "seeded order");
	/* LIFO: in[n-1] is the newest. */
	out[0] = F(7);
	out[1] = F(5);
	cr_assert_eq(nfsl_xsk_pool_put(&p, out, 2), 2);
	cr_assert_eq(nfsl_xsk_pool_get(&p, out, 3), 3);
	want[0] = F(5), want[1] = F(7), want[2] = F(1);
	expect_frames(out, want, 3, "pool LIFO");
	cr_assert_eq(nfsl_xsk_pool_get(&p, out, 8), 3, "short when it runs out");
	cr_assert_eq(nfsl_xsk_pool_count(&p), 0);
	nfsl_xsk_pool_fini(&p);
}

/* Pool of @n frames F(0).. handed out in that order. */
static void pool_with(struct nfsl_xsk_pool *p, __u32 n)
{
	cr_assert_eq(nfsl_xsk_pool_init(p, n), 0);
	cr_assert_eq(nfsl_xsk_pool_seed(p, 0, n, FS), 0);
}

Test(xsk_pool, cache_lifo)
{
	struct nfsl_xsk_pool p;
	struct nfsl_xsk_cache c;
	__u64 out[4], in[2];

	pool_with(&p, 64);
	cr_assert_eq(nfsl_xsk_cache_init(&c, &p, 4), 0);
	cr_assert_eq(nfsl_xsk_cache_get(&c, out, 1), 1);
	cr_assert_eq(out[0], F(0));
	cr_assert_eq(nfsl_xsk_cache_count(&c), 4, "refilled to its size");
	cr_assert_eq(nfsl_xsk_cache_get(&c, out, 2), 2);
	cr_assert_eq(out[0], F(1));
	cr_assert_eq(out[1], F(2));
	in[0] = F(0);
	nfsl_xsk_cache_put(&c, in, 1);
	cr_assert_eq(nfsl_xsk_cache_get(&c, out, 1), 1);
	cr_assert_eq(out[0], F(0), "the frame freed last comes back first");
	in[0] = F(1), in[1] = F(0);
	nfsl_xsk_cache_put(&c, in, 2);
	cr_assert_eq(nfsl_xsk_cache_get(&c, out, 4), 4);
	cr_assert_eq(out[0], F(0));
	cr_assert_eq(out[1], F(1));
	cr_assert_eq(out[2], F(3), "then the frames it held, newest first");
	cr_assert_eq(out[3], F(4));
	cr_assert_eq(c.refills, 1);
	nfsl_xsk_cache_put(&c, out, 4);
	nfsl_xsk_cache_put(&c, in + 1, 0);
	nfsl_xsk_cache_fini(&c);
	cr_assert_eq(nfsl_xsk_pool_count(&p), 64 - 1 /* F(2) still out */);
	nfsl_xsk_pool_fini(&p);
}

/* Refills come in one batch, enough for the request plus @size, and the
 * frames keep the pool's order. */
Test(xsk_pool, refill_batch)
{
	struct nfsl_xsk_pool p;
	struct nfsl_xsk_cache c;
	__u64 out[20];
	__u32 next = 0;

	pool_with(&p, 100);
	cr_assert_eq(nfsl_xsk_cache_init(&c, &p, 8), 0);
	static const struct {
		__u32 n, cache_after, pool_after, refills;
	} steps[] = {
		{ 1, 8, 91, 1 },   /* refill 9: 1 + size */
		{ 8, 0, 91, 1 },   /* from the cache alone */
		{ 3, 8, 80, 2 },   /* refill 11 */
		{ 20, 8, 60, 3 },  /* 8 cached, refill 12 + 8 */
	};
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		cr_assert_eq(nfsl_xsk_cache_get(&c, out, steps[s].n), steps[s].n);
		for (__u32 i = 0; i < steps[s].n; i++)
			cr_assert_eq(out[i], F(next + i), "step %zu frame %u", s, i);
		next += steps[s].n;
		cr_assert_eq(nfsl_xsk_cache_count(&c), steps[s].cache_after,
			     "step %zu: cache %u", s, nfsl_xsk_cache_count(&c));
		cr_assert_eq(nfsl_xsk_pool_count(&p), steps[s].pool_after,
			     "step %zu: pool %u", s, nfsl_xsk_pool_count(&p));
		cr_assert_eq(c.refills, steps[s].refills, "step %zu", s);
	}
	nfsl_xsk_cache_fini(&c);
	cr_assert_eq(nfsl_xsk_pool_count(&p), 100 - next);
	nfsl_xsk_pool_fini(&p);
}

/* Past 1.5 x size the cache drains its oldest frames down to size and
 * keeps the newest. */
Test(xsk_pool, drain_keeps_newest)
{
	struct nfsl_xsk_pool p;
	struct nfsl_xsk_cache c;
	__u64 f[7], out[7];

	for (int one_by_one = 0; one_by_one < 2; one_by_one++) {
		pool_with(&p, 64);
		cr_assert_eq(nfsl_xsk_cache_init(&c, &p, 4), 0); /* drains at 7 */
		cr_assert_eq(nfsl_xsk_pool_get(&p, f, 7), 7);
		if (one_by_one) {
			for (int i = 0; i < 6; i++) {
				nfsl_xsk_cache_put(&c, &f[i], 1);
				cr_assert_eq(c.drains, 0, "6 frames: no drain");
			}
			nfsl_xsk_cache_put(&c, &f[6], 1);
		} else {
			nfsl_xsk_cache_put(&c, f, 7);
		}
		cr_assert_eq(c.drains, 1);
		cr_assert_eq(nfsl_xsk_cache_count(&c), 4);
		cr_assert_eq(nfsl_xsk_pool_count(&p), 64 - 7 + 3);
		cr_assert_eq(nfsl_xsk_cache_get(&c, out, 4), 4);
		for (int i = 0; i < 4; i++)
			cr_assert_eq(out[i], f[6 - i], "kept the newest, LIFO");
		cr_assert_eq(nfsl_xsk_pool_get(&p, out, 3), 3);
		for (int i = 0; i < 3; i++)
			cr_assert_eq(out[i], f[2 - i],
				     "the oldest went to the pool, newest on top");
		nfsl_xsk_cache_fini(&c);
		nfsl_xsk_pool_fini(&p);
	}
}

/* A worker gets fewer than asked when the pool is empty; frames cached
 * by another worker are not taken. */
Test(xsk_pool, empty_pool_short)
{
	struct nfsl_xsk_pool p;
	struct nfsl_xsk_cache a, b;
	__u64 fa[12], fb[4];

	pool_with(&p, 10);
	cr_assert_eq(nfsl_xsk_cache_init(&a, &p, 8), 0);
	cr_assert_eq(nfsl_xsk_cache_init(&b, &p, 8), 0);
	cr_assert_eq(nfsl_xsk_cache_get(&a, fa, 12), 10);
	cr_assert_eq(nfsl_xsk_pool_count(&p), 0);
	cr_assert_eq(nfsl_xsk_cache_get(&b, fb, 4), 0);
	nfsl_xsk_cache_put(&a, fa, 5);
	cr_assert_eq(nfsl_xsk_cache_count(&a), 5, "5 <= 1.5 x 8: kept");
	cr_assert_eq(nfsl_xsk_cache_get(&b, fb, 4), 0, "another cache's frames");
	cr_assert_eq(nfsl_xsk_cache_get(&a, fa, 12), 5, "its own 5, pool dry");
	nfsl_xsk_cache_put(&a, fa, 10);
	cr_assert_eq(nfsl_xsk_cache_count(&a), 10);
	nfsl_xsk_cache_fini(&a);
	cr_assert_eq(nfsl_xsk_pool_count(&p), 10, "fini gives everything back");
	cr_assert_eq(nfsl_xsk_cache_get(&b, fb, 4), 4);
	cr_assert_eq(nfsl_xsk_cache_count(&b), 6, "refilled what there was");
	nfsl_xsk_cache_put(&b, fb, 4);
	nfsl_xsk_cache_fini(&b);
	cr_assert_eq(nfsl_xsk_pool_count(&p), 10);
	nfsl_xsk_pool_fini(&p);
}

/*
 * Reference model of the allocator, written from the header's contract:
 * plain arrays, index 0 the bottom. get: when the cache holds fewer than
 * n, move min(size + n - held, pool) frames from the pool's top to under
 * the cache's bottom, in the pool's order; then pop from the top. put:
 * push; above 1.5 x size, move the bottom frames to the pool's top, oldest
 * first, until size remain. (Calls of at most NFSL_XSK_CACHE_BURST.)
 */
#define M_FRAMES 512
struct m_stack {
	__u64 f[M_FRAMES];
	__u32 n;
};

static void m_get(struct m_stack *pool, struct m_stack *c, __u32 size,
		  __u64 *out, __u32 n, __u32 *got)
{
	if (c->n < n) {
		__u32 k = size + n - c->n;

		if (k > pool->n)
			k = pool->n;
		memmove(c->f + k, c->f, c->n * sizeof(c->f[0]));
		memcpy(c->f, pool->f + pool->n - k, k * sizeof(c->f[0]));
		pool->n -= k;
		c->n += k;
	}
	*got = n < c->n ? n : c->n;
	for (__u32 i = 0; i < *got; i++)
		out[i] = c->f[--c->n];
}

static void m_put(struct m_stack *pool, struct m_stack *c, __u32 size,
		  const __u64 *in, __u32 n)
{
	memcpy(c->f + c->n, in, n * sizeof(in[0]));
	c->n += n;
	if (c->n > size + size / 2) {
		__u32 k = c->n - size;

		memcpy(pool->f + pool->n, c->f, k * sizeof(c->f[0]));
		pool->n += k;
		memmove(c->f, c->f + k, size * sizeof(c->f[0]));
		c->n = size;
	}
}

Test(xsk_pool, model)
{
	static const __u32 sizes[] = { 0, 1, 4, 32, 100 };
	__u64 seed = 0x9e3779b97f4a7c15ULL;

	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		__u32 size = sizes[si];
		struct nfsl_xsk_pool p;
		struct nfsl_xsk_cache c[2];
		static struct m_stack mp, mc[2];
		__u64 held[M_FRAMES], out[NFSL_XSK_CACHE_BURST],
			want[NFSL_XSK_CACHE_BURST];
		__u32 nheld = 0;

		pool_with(&p, M_FRAMES);
		memset(&mp, 0, sizeof(mp));
		memset(mc, 0, sizeof(mc));
		for (__u32 i = 0; i < M_FRAMES; i++)
			mp.f[i] = F(M_FRAMES - 1 - i);
		mp.n = M_FRAMES;
		for (int k = 0; k < 2; k++)
			cr_assert_eq(nfsl_xsk_cache_init(&c[k], &p, size), 0);

		for (int op = 0; op < 20000; op++) {
			int k = rnd_below(&seed, 2);
			/* mostly small bursts, sometimes up to the cap */
			__u32 n = 1 + (rnd_below(&seed, 8) ? rnd_below(&seed, 40) :
				       rnd_below(&seed, NFSL_XSK_CACHE_BURST));

			if (rnd_below(&seed, 2)) {
				__u32 got, mgot;

				got = nfsl_xsk_cache_get(&c[k], out, n);
				m_get(&mp, &mc[k], size, want, n, &mgot);
				cr_assert_eq(got, mgot, "size %u op %d: got %u, model %u",
					     size, op, got, mgot);
				expect_frames(out, want, got, "get against the model");
				memcpy(held + nheld, out, got * sizeof(out[0]));
				nheld += got;
			} else {
				if (n > nheld)
					n = nheld;
				/* n random frames of those held, in random order */
				for (__u32 i = 0; i < n; i++) {
					__u32 j = i + rnd_below(&seed, nheld - i);
					__u64 t = held[i];

					held[i] = held[j];
					held[j] = t;
				}
				nfsl_xsk_cache_put(&c[k], held, n);
				m_put(&mp, &mc[k], size, held, n);
				memmove(held, held + n, (nheld - n) * sizeof(held[0]));
				nheld -= n;
			}
			cr_assert_eq(nfsl_xsk_cache_count(&c[k]), mc[k].n,
				     "size %u op %d: cache count", size, op);
			cr_assert_eq(nfsl_xsk_pool_count(&p), mp.n,
				     "size %u op %d: pool count", size, op);
			cr_assert_eq(nfsl_xsk_cache_count(&c[0]) +
				     nfsl_xsk_cache_count(&c[1]) +
				     nfsl_xsk_pool_count(&p) + nheld, M_FRAMES,
				     "frames conserved");
		}
		nfsl_xsk_cache_put(&c[0], held, nheld);
		nfsl_xsk_cache_fini(&c[0]);
		nfsl_xsk_cache_fini(&c[1]);
		cr_assert_eq(nfsl_xsk_pool_count(&p), M_FRAMES);
		nfsl_xsk_pool_fini(&p);
	}
}

/* Every frame of the pool exactly once: @p holds all @n of F(0..n-1). */
static void expect_all_once(struct nfsl_xsk_pool *p, __u32 n)
{
	__u64 *all = malloc(n * sizeof(*all));
	__u8 *seen = calloc(n, 1);

	cr_assert(all && seen);
	cr_assert_eq(nfsl_xsk_pool_count(p), n, "pool holds %u of %u frames",
		     nfsl_xsk_pool_count(p), n);
	cr_assert_eq(nfsl_xsk_pool_get(p, all, n), n);
	for (__u32 i = 0; i < n; i++) {
		__u64 idx = all[i] / FS;

		cr_assert(all[i] % FS == 0 && idx < n, "stray frame 0x%llx",
			  (unsigned long long)all[i]);
		cr_assert(!seen[idx], "frame %llu twice", (unsigned long long)idx);
		seen[idx] = 1;
	}
	cr_assert_eq(nfsl_xsk_pool_put(p, all, n), n);
	free(all);
	free(seen);
}

/* Calls beyond NFSL_XSK_CACHE_BURST go in chunks. */
Test(xsk_pool, big_bursts)
{
	struct nfsl_xsk_pool p;
	struct nfsl_xsk_cache c;
	static __u64 f[2000];

	pool_with(&p, 2000);
	cr_assert_eq(nfsl_xsk_cache_init(&c, &p, 8), 0);
	cr_assert_eq(nfsl_xsk_cache_get(&c, f, 1000), 1000);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(f[i], F(i));
	nfsl_xsk_cache_put(&c, f, 1000);
	cr_assert_leq(nfsl_xsk_cache_count(&c), 12);
	cr_assert_eq(nfsl_xsk_cache_count(&c) + nfsl_xsk_pool_count(&p), 2000);
	cr_assert_eq(nfsl_xsk_cache_get(&c, f, 2000), 2000);
	cr_assert_eq(nfsl_xsk_pool_count(&p) + nfsl_xsk_cache_count(&c), 0);
	nfsl_xsk_cache_put(&c, f, 2000);
	nfsl_xsk_cache_fini(&c);
	expect_all_once(&p, 2000);
	nfsl_xsk_pool_fini(&p);
}

/*
 * Threads get and put random bursts through their caches for ~0.5 s, and
 * hand frames to each other through a bag (allocated by one, freed by
 * another: rxbisect). own[] says who holds each frame; every take checks
 * the frame was free, every give that the giver held it. At the end every
 * frame is in the pool exactly once.
 */
#define C_FRAMES 4096
#define C_HOLD 512
#define C_BAG 256
#define BAG_OWNER 255

static struct {
	struct nfsl_xsk_pool pool;
	_Atomic __u8 own[C_FRAMES];  /* 0 free, thread + 1, BAG_OWNER */
	atomic_uint errors;
	atomic_ulong ops, traded;
	pthread_mutex_t bag_lock;
	__u64 bag[C_BAG];
	__u32 nbag;
	__u64 deadline;
	int nthreads;
	__u32 cache_size;
} cc;

static void own_move(__u64 addr, __u8 from, __u8 to)
{
	__u64 idx = addr / FS;
	__u8 was = from;

	if (addr % FS || idx >= C_FRAMES) {
		atomic_fetch_add(&cc.errors, 1);
		return;
	}
	if (!atomic_compare_exchange_strong(&cc.own[idx], &was, to))
		atomic_fetch_add(&cc.errors, 1);
}

static void *pool_worker(void *arg)
{
	__u8 me = (__u8)(uintptr_t)arg + 1;
	__u64 seed = 0x1234567ULL * me, held[C_HOLD], buf[64];
	struct nfsl_xsk_cache c;
	__u32 nheld = 0;
	unsigned long ops = 0;

	if (nfsl_xsk_cache_init(&c, &cc.pool, cc.cache_size)) {
		atomic_fetch_add(&cc.errors, 1);
		return NULL;
	}
	while (nfsl_now_ns() < cc.deadline) {
		__u32 n = 1 + rnd_below(&seed, 64), r = rnd_below(&seed, 16);

		if (r < 7 && nheld + n <= C_HOLD) {
			__u32 got = nfsl_xsk_cache_get(&c, held + nheld, n);

			for (__u32 i = 0; i < got; i++)
				own_move(held[nheld + i], 0, me);
			nheld += got;
		} else if (r < 14) {
			if (n > nheld)
				n = nheld;
			/* free from the middle, not only the newest */
			__u32 at = nheld - n ? rnd_below(&seed, nheld - n + 1) : 0;

			memcpy(buf, held + at, n * sizeof(buf[0]));
			memmove(held + at, held + at + n,
				(nheld - at - n) * sizeof(held[0]));
			nheld -= n;
			for (__u32 i = 0; i < n; i++)
				own_move(buf[i], me, 0);
			nfsl_xsk_cache_put(&c, buf, n);
		} else if (r == 14) {
			/* into the bag */
			pthread_mutex_lock(&cc.bag_lock);
			while (nheld && cc.nbag < C_BAG && n--) {
				own_move(held[--nheld], me, BAG_OWNER);
				cc.bag[cc.nbag++] = held[nheld];
			}
			pthread_mutex_unlock(&cc.bag_lock);
		} else {
			/* out of the bag, freed here */
			__u32 k = 0;

			pthread_mutex_lock(&cc.bag_lock);
			while (cc.nbag && k < n) {
				buf[k] = cc.bag[--cc.nbag];
				own_move(buf[k++], BAG_OWNER, me);
			}
			pthread_mutex_unlock(&cc.bag_lock);
			for (__u32 i = 0; i < k; i++)
				own_move(buf[i], me, 0);
			nfsl_xsk_cache_put(&c, buf, k);
			atomic_fetch_add(&cc.traded, k);
		}
		ops++;
	}
	for (__u32 i = 0; i < nheld; i++)
		own_move(held[i], me, 0);
	nfsl_xsk_cache_put(&c, held, nheld);
	nfsl_xsk_cache_fini(&c);
	atomic_fetch_add(&cc.ops, ops);
	return NULL;
}

static void run_pool_threads(int nthreads, __u32 cache_size, __u64 ns)
{
	pthread_t t[8];

	memset(&cc, 0, sizeof(cc));
	pthread_mutex_init(&cc.bag_lock, NULL);
	pool_with(&cc.pool, C_FRAMES);
	cc.nthreads = nthreads;
	cc.cache_size = cache_size;
	cc.deadline = nfsl_now_ns() + ns;
	for (int i = 0; i < nthreads; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, pool_worker,
					    (void *)(uintptr_t)i), 0);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	for (__u32 i = 0; i < cc.nbag; i++)
		own_move(cc.bag[i], BAG_OWNER, 0);
	cr_assert_eq(nfsl_xsk_pool_put(&cc.pool, cc.bag, cc.nbag), cc.nbag);
	cr_assert_eq(atomic_load(&cc.errors), 0,
		     "%u frames held twice or freed by a non-holder",
		     atomic_load(&cc.errors));
	cr_assert_gt(atomic_load(&cc.ops), 1000, "threads barely ran");
	cr_assert_gt(atomic_load(&cc.traded), 0, "no frame changed threads");
	for (__u32 i = 0; i < C_FRAMES; i++)
		cr_assert_eq(atomic_load(&cc.own[i]), 0, "frame %u still owned", i);
	expect_all_once(&cc.pool, C_FRAMES);
	nfsl_xsk_pool_fini(&cc.pool);
	pthread_mutex_destroy(&cc.bag_lock);
}

Test(xsk_pool, concurrent_4_threads)
{
	run_pool_threads(4, 64, 500000000ULL);
}

/* Size 0: every call goes to the pool's lock; 2 threads on 2 CPUs. */
Test(xsk_pool, concurrent_uncached)
{
	run_pool_threads(2, 0, 200000000ULL);
}

#ifdef NFSL_XSK_POOL_DEBUG
/* Only in a build of userspace/lib/xsk/pool.c with -DNFSL_XSK_POOL_DEBUG. */
Test(xsk_pool, debug_double_free, .signal = SIGABRT)
{
	struct nfsl_xsk_pool p;
	struct nfsl_xsk_cache c;
	__u64 f;

	pool_with(&p, 8);
	cr_assert_eq(nfsl_xsk_cache_init(&c, &p, 2), 0);
	cr_assert_eq(nfsl_xsk_cache_get(&c, &f, 1), 1);
	nfsl_xsk_cache_put(&c, &f, 1);
	nfsl_xsk_cache_put(&c, &f, 1); /* aborts */
}

Test(xsk_pool, debug_stray_frame, .signal = SIGABRT)
{
	struct nfsl_xsk_pool p;
	__u64 f = F(100);

	pool_with(&p, 8);
	nfsl_xsk_pool_put(&p, &f, 1); /* aborts */
}
#endif

/* ---- micro-benchmark (NFSL_XSK_BENCH=1) ------------------------------- */

#define B_RING 1024 /* frames in flight from the allocating thread */
static struct {
	struct nfsl_xsk_pool pool;
	_Alignas(64) atomic_uint prod;
	_Alignas(64) atomic_uint cons;
	_Alignas(64) __u64 ring[B_RING];
	__u64 frames; /* to move */
	__u32 size, burst;
	atomic_int go;
	__u64 ns[2];
} bb;

/* Allocator side of the flow: get 64, pass them on. */
static void *bench_alloc(void *arg)
{
	struct nfsl_xsk_cache c;
	__u64 f[64], done = 0, t0;

	nfsl_pin_cpu(0);
	nfsl_xsk_cache_init(&c, &bb.pool, bb.size);
	while (!atomic_load(&bb.go))
		;
	t0 = nfsl_now_ns();
	while (done < bb.frames) {
		__u32 p = atomic_load_explicit(&bb.prod, memory_order_relaxed), got;
		__u32 n = bb.frames - done < 64 ? bb.frames - done : 64;

		while (p - atomic_load_explicit(&bb.cons, memory_order_acquire) >
		       B_RING - 64)
			;
		got = nfsl_xsk_cache_get(&c, f, n);
		for (__u32 i = 0; i < got; i++)
			bb.ring[(p + i) % B_RING] = f[i];
		atomic_store_explicit(&bb.prod, p + got, memory_order_release);
		done += got;
	}
	bb.ns[0] = nfsl_now_ns() - t0;
	nfsl_xsk_cache_fini(&c);
	return NULL;
}

/* Freeing side: take what arrived, put it. */
static void *bench_free(void *arg)
{
	struct nfsl_xsk_cache c;
	__u64 f[64], done = 0, t0;

	nfsl_pin_cpu(1);
	nfsl_xsk_cache_init(&c, &bb.pool, bb.size);
	while (!atomic_load(&bb.go))
		;
	t0 = nfsl_now_ns();
	while (done < bb.frames) {
		__u32 q = atomic_load_explicit(&bb.cons, memory_order_relaxed);
		__u32 avail = atomic_load_explicit(&bb.prod, memory_order_acquire) - q;

		if (avail > 64)
			avail = 64;
		if (avail > bb.frames - done)
			avail = bb.frames - done;
		for (__u32 i = 0; i < avail; i++)
			f[i] = bb.ring[(q + i) % B_RING];
		atomic_store_explicit(&bb.cons, q + avail, memory_order_release);
		nfsl_xsk_cache_put(&c, f, avail);
		done += avail;
	}
	bb.ns[1] = nfsl_now_ns() - t0;
	nfsl_xsk_cache_fini(&c);
	return NULL;
}

/* Both threads get bb.burst frames and put them back. */
static void *bench_sym(void *arg)
{
	int me = (int)(uintptr_t)arg;
	struct nfsl_xsk_cache c;
	__u64 f[64], done = 0, t0;

	nfsl_pin_cpu(me);
	nfsl_xsk_cache_init(&c, &bb.pool, bb.size);
	while (!atomic_load(&bb.go))
		;
	t0 = nfsl_now_ns();
	while (done < bb.frames) {
		__u32 got = nfsl_xsk_cache_get(&c, f, bb.burst);

		nfsl_xsk_cache_put(&c, f, got);
		done += got;
	}
	bb.ns[me] = nfsl_now_ns() - t0;
	nfsl_xsk_cache_fini(&c);
	return NULL;
}

/* ns per frame moved by each thread (the slower one). */
static double bench_two(void *(*a)(void *), void *(*b)(void *), __u32 size,
			__u32 burst, __u64 frames)
{
	pthread_t t[2];

	memset(&bb, 0, sizeof(bb));
	pool_with(&bb.pool, 8192);
	bb.size = size;
	bb.burst = burst;
	bb.frames = frames;
	pthread_create(&t[0], NULL, a, (void *)0);
	pthread_create(&t[1], NULL, b, (void *)1);
	atomic_store(&bb.go, 1);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	cr_assert_eq(nfsl_xsk_pool_count(&bb.pool), 8192);
	nfsl_xsk_pool_fini(&bb.pool);
	return (double)(bb.ns[0] > bb.ns[1] ? bb.ns[0] : bb.ns[1]) / frames;
}

static double bench_one(__u32 size, __u32 burst, __u64 frames)
{
	struct nfsl_xsk_pool p;
	struct nfsl_xsk_cache c;
	__u64 f[64], t0, done = 0;

	pool_with(&p, 8192);
	nfsl_xsk_cache_init(&c, &p, size);
	t0 = nfsl_now_ns();
	while (done < frames) {
		__u32 got = nfsl_xsk_cache_get(&c, f, burst);

		nfsl_xsk_cache_put(&c, f, got);
		done += got;
	}
	t0 = nfsl_now_ns() - t0;
	nfsl_xsk_cache_fini(&c);
	nfsl_xsk_pool_fini(&p);
	return (double)t0 / frames;
}

/* ns per frame: one get and one put of it, best of 5 runs. */
Test(xsk_pool, bench, .timeout = 120)
{
	static const char *const what[] = {
		"1 thread, get 1 + put 1, size 256 (cache hit)",
		"1 thread, get 64 + put 64, size 256",
		"1 thread, get 1 + put 1, size 0 (lock per call)",
		"2 threads, alloc -> free flow, size 256, bursts 64",
		"2 threads, get 64 + put 64, size 0",
		"2 threads, get 1 + put 1, size 0 (lock per call)",
	};
	double best[6];

	if (!getenv("NFSL_XSK_BENCH"))
		cr_skip_test("set NFSL_XSK_BENCH=1 to run the benchmark");
	for (int run = 0; run < 5; run++) {
		double r[6] = {
			bench_one(256, 1, 20000000),
			bench_one(256, 64, 50000000),
			bench_one(0, 1, 10000000),
			bench_two(bench_alloc, bench_free, 256, 64, 20000000),
			bench_two(bench_sym, bench_sym, 0, 64, 10000000),
			bench_two(bench_sym, bench_sym, 0, 1, 2000000),
		};

		for (int i = 0; i < 6; i++)
			if (!run || r[i] < best[i])
				best[i] = r[i];
	}
	printf("xsk_pool bench (%s), ns per frame (its get and put), best of 5:\n",
#ifdef NFSL_XSK_POOL_MUTEX
	       "mutex"
#else
	       "spinlock"
#endif
	);
	for (int i = 0; i < 6; i++)
		printf("  %-52s %7.2f\n", what[i], best[i]);
}

/* ======================================================================
 * xsk_rxarr
 * ====================================================================== */

static void done_range(struct nfsl_xsk_rxarr *a, __u32 from, __u32 n)
{
	for (__u32 i = 0; i < n; i++) {
		__u32 p = from + i;

		nfsl_xsk_rxarr_done(a, &p, 1);
	}
}

static void expect_adv(struct nfsl_xsk_rxarr *a, __u32 max, __u32 first,
		       __u32 n, const char *what)
{
	__u32 f = 0xdeadbeef, got = nfsl_xsk_rxarr_advance(a, &f, max);

	cr_assert_eq(got, n, "%s: advanced %u, want %u", what, got, n);
	cr_assert_eq(f, first, "%s: first %u, want %u", what, f, first);
	cr_assert_eq(nfsl_xsk_rxarr_head(a), first + n, "%s: head", what);
}

Test(xsk_rxarr, init)
{
	struct nfsl_xsk_rxarr a;

	cr_assert_eq(nfsl_xsk_rxarr_init(&a, 0), -EINVAL);
	cr_assert_eq(nfsl_xsk_rxarr_init(&a, 96), -EINVAL);
	cr_assert_eq(nfsl_xsk_rxarr_init(&a, 0x80000001u), -EINVAL);
	cr_assert_eq(nfsl_xsk_rxarr_init(&a, 2048), 0);
	cr_assert_eq(nfsl_xsk_rxarr_head(&a), 0);
	cr_assert_eq(nfsl_xsk_rxarr_room(&a, 0), 2048);
	cr_assert_eq(nfsl_xsk_rxarr_room(&a, 2000), 48);
	expect_adv(&a, ~0u, 0, 0, "nothing done");
	nfsl_xsk_rxarr_fini(&a);
}

Test(xsk_rxarr, in_order_batch)
{
	struct nfsl_xsk_rxarr a;
	__u32 pos[10];

	cr_assert_eq(nfsl_xsk_rxarr_init(&a, 64), 0);
	for (int i = 0; i < 10; i++)
		pos[i] = i;
	nfsl_xsk_rxarr_done(&a, pos, 10);
	expect_adv(&a, ~0u, 0, 10, "10 in order");
	expect_adv(&a, ~0u, 10, 0, "then none");
	nfsl_xsk_rxarr_fini(&a);
}

/* The head-of-line property: one position not done holds back every later
 * one, however many are done; @max bounds one advance. */
Test(xsk_rxarr, stalled_position_blocks)
{
	struct nfsl_xsk_rxarr a;
	__u32 p = 3;

	cr_assert_eq(nfsl_xsk_rxarr_init(&a, 2048), 0);
	done_range(&a, 4, 1000);
	expect_adv(&a, ~0u, 0, 0, "0..3 not done");
	done_range(&a, 0, 3);
	expect_adv(&a, ~0u, 0, 3, "up to the stalled 3");
	for (int i = 0; i < 5; i++)
		expect_adv(&a, ~0u, 3, 0, "stalled");
	cr_assert_eq(nfsl_xsk_rxarr_room(&a, 1004), 2048 - 1001);
	nfsl_xsk_rxarr_done(&a, &p, 1);
	expect_adv(&a, 100, 3, 100, "bounded by max");
	expect_adv(&a, ~0u, 103, 1004 - 103, "the rest");
	nfsl_xsk_rxarr_fini(&a);
}

/* A full ring's worth at once, laps, words and the 2^32 wrap of positions. */
Test(xsk_rxarr, wrap_around)
{
	struct nfsl_xsk_rxarr a;
	__u64 seed = 7;
	__u32 pos[512];

	cr_assert_eq(nfsl_xsk_rxarr_init(&a, 256), 0);
	for (__u32 lap = 0; lap < 3; lap++) {
		for (__u32 i = 0; i < 256; i++)
			pos[i] = lap * 256 + i;
		for (__u32 i = 255; i > 0; i--) {
			__u32 j = rnd_below(&seed, i + 1), t = pos[i];

			pos[i] = pos[j], pos[j] = t;
		}
		nfsl_xsk_rxarr_done(&a, pos, 256);
		expect_adv(&a, ~0u, lap * 256, 256, "a full lap in random order");
	}
	/* Across 2^32: 512 positions from 2^32 - 256 on, all done but the
	 * 17th after the wrap. */
	nfsl_xsk_rxarr_fini(&a);
	cr_assert_eq(nfsl_xsk_rxarr_init(&a, 512), 0);
	nfsl_xsk_rxarr_reset(&a, 0xffffff00u);
	for (__u32 i = 0, n = 0; i < 512; i++)
		if (0xffffff00u + i != 16)
			pos[n++] = 0xffffff00u + i;
	nfsl_xsk_rxarr_done(&a, pos, 511);
	expect_adv(&a, ~0u, 0xffffff00u, 256 + 16, "across 2^32 up to 16");
	pos[0] = 16;
	nfsl_xsk_rxarr_done(&a, pos, 1);
	expect_adv(&a, ~0u, 16, 512 - 256 - 16, "the rest");
	cr_assert_eq(nfsl_xsk_rxarr_head(&a), 256);
	nfsl_xsk_rxarr_fini(&a);
}

/*
 * Random rounds against a model for ring sizes 1..1024, from a head just
 * below 2^32: take new positions (never more than the room), mark random
 * outstanding ones done in random order, advance with a random max; the
 * advance must return exactly the run of done positions from the head.
 */
Test(xsk_rxarr, model)
{
	static const __u32 sizes[] = { 1, 2, 8, 32, 64, 128, 1024 };
	__u64 seed = 42;

	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		__u32 size = sizes[si], head = 0u - 3000, next = head;
		struct nfsl_xsk_rxarr a;
		__u8 *done = calloc(size, 1); /* model: position p at p % size */
		__u32 *out = malloc(size * sizeof(*out)), nout = 0;
		__u32 *pend = malloc(size * sizeof(*pend)), npend = 0;
		__u64 returned = 0;

		cr_assert_eq(nfsl_xsk_rxarr_init(&a, size), 0);
		nfsl_xsk_rxarr_reset(&a, head);
		for (int round = 0; round < 20000; round++) {
			__u32 room = nfsl_xsk_rxarr_room(&a, next), k, max, run;

			cr_assert_eq(room, size - (next - head));
			k = room ? rnd_below(&seed, room + 1) : 0;
			for (__u32 i = 0; i < k; i++)
				pend[npend++] = next++;
			/* a random subset of the pending, in random order */
			k = npend ? rnd_below(&seed, npend + 1) : 0;
			nout = 0;
			for (__u32 i = 0; i < k; i++) {
				__u32 j = rnd_below(&seed, npend);

				out[nout++] = pend[j];
				done[pend[j] % size] = 1;
				pend[j] = pend[--npend];
			}
			nfsl_xsk_rxarr_done(&a, out, nout);
			max = rnd_below(&seed, 4) ? ~0u : rnd_below(&seed, size + 1);
			for (run = 0; run < max && run < next - head &&
				      done[(head + run) % size]; run++)
				;
			expect_adv(&a, max, head, run, "against the model");
			for (__u32 i = 0; i < run; i++)
				done[(head + i) % size] = 0;
			head += run;
			returned += run;
		}
		cr_assert_gt(returned, 2000, "size %u: too few returned", size);
		nfsl_xsk_rxarr_fini(&a);
		free(done);
		free(out);
		free(pend);
	}
}

Test(xsk_rxarr, tryadvance_busy)
{
	struct nfsl_xsk_rxarr a;
	__u32 f;

	cr_assert_eq(nfsl_xsk_rxarr_init(&a, 64), 0);
	done_range(&a, 0, 5);
	pthread_spin_lock(&a.ctl->lock);
	cr_assert_eq(nfsl_xsk_rxarr_tryadvance(&a, &f, ~0u), -EBUSY);
	cr_assert_eq(nfsl_xsk_rxarr_head(&a), 0, "busy: nothing returned");
	pthread_spin_unlock(&a.ctl->lock);
	cr_assert_eq(nfsl_xsk_rxarr_tryadvance(&a, &f, ~0u), 5);
	cr_assert_eq(f, 0);
	cr_assert_eq(nfsl_xsk_rxarr_tryadvance(&a, &f, ~0u), 0);
	nfsl_xsk_rxarr_fini(&a);
}

/* ns per position, one thread: done in bursts of 64 and an advance per
 * burst; in order, or as one of 4 workers sharing the ring round-robin
 * sees it (its 64 positions spread over 256: 4 words, 4 atomic ORs). */
Test(xsk_rxarr, bench)
{
	struct nfsl_xsk_rxarr a;
	__u32 pos[64], first, next = 0;
	__u64 t0, n = 20000000;

	if (!getenv("NFSL_XSK_BENCH"))
		cr_skip_test("set NFSL_XSK_BENCH=1 to run the benchmark");
	cr_assert_eq(nfsl_xsk_rxarr_init(&a, 2048), 0);
	t0 = nfsl_now_ns();
	for (__u64 done = 0; done < n; done += 64, next += 64) {
		for (__u32 i = 0; i < 64; i++)
			pos[i] = next + i;
		nfsl_xsk_rxarr_done(&a, pos, 64);
		cr_assert_eq(nfsl_xsk_rxarr_advance(&a, &first, ~0u), 64);
	}
	printf("xsk_rxarr bench: in-order bursts of 64: %.2f ns per position\n",
	       (double)(nfsl_now_ns() - t0) / n);
	t0 = nfsl_now_ns();
	for (__u64 done = 0; done < n; done += 256, next += 256) {
		for (__u32 w = 0; w < 4; w++) {
			for (__u32 i = 0; i < 64; i++)
				pos[i] = next + w + 4 * i;
			nfsl_xsk_rxarr_done(&a, pos, 64);
			nfsl_xsk_rxarr_advance(&a, &first, ~0u);
		}
		cr_assert_eq(nfsl_xsk_rxarr_head(&a), next + 256);
	}
	printf("xsk_rxarr bench: 4 workers' bursts of 64: %.2f ns per position\n",
	       (double)(nfsl_now_ns() - t0) / n);
	nfsl_xsk_rxarr_fini(&a);
}

/*
 * shRing as threads: each takes a burst of positions from the shared ring
 * (never more than the room), keeps some pending across rounds (out of
 * order, stalls), marks the others done, and advances (locked or trylock,
 * like Listing 5.1 after every burst). Every run returned must consist of
 * positions marked done, and the runs together must tile the positions
 * taken, in order, across 2^32.
 */
#define R_SIZE 1024
#define R_TOTAL (1u << 19)
#define R_START (0u - (R_TOTAL / 2))
#define R_LOG (R_TOTAL)

static struct {
	struct nfsl_xsk_rxarr a;
	pthread_spinlock_t rx_lock; /* the shared RX ring's consumer */
	__u32 next, end;
	_Atomic __u8 marked[R_TOTAL]; /* by offset from R_START */
	atomic_uint bad, busy;
	atomic_int stuck; /* no room for a second with nothing pending */
	atomic_uint nlog;
	__u32 log_first[R_LOG], log_n[R_LOG];
} rc;

static void r_advance(int locked)
{
	__u32 first;
	int got;

	if (locked)
		got = (int)nfsl_xsk_rxarr_advance(&rc.a, &first, ~0u);
	else
		got = nfsl_xsk_rxarr_tryadvance(&rc.a, &first, ~0u);
	if (got == -EBUSY) {
		atomic_fetch_add(&rc.busy, 1);
		return;
	}
	if (got <= 0)
		return;
	for (int i = 0; i < got; i++)
		if (!atomic_load(&rc.marked[first + i - R_START]))
			atomic_fetch_add(&rc.bad, 1);
	__u32 k = atomic_fetch_add(&rc.nlog, 1);

	rc.log_first[k] = first;
	rc.log_n[k] = got;
}

static void *rxarr_worker(void *arg)
{
	__u64 seed = 99 + (uintptr_t)arg;
	__u32 pend[4096], npend = 0, out[4096];
	__u64 idle_since = 0;

	while (!atomic_load(&rc.stuck)) {
		__u32 k = 0, p = 0, nout = 0;
		int more;

		pthread_spin_lock(&rc.rx_lock);
		more = rc.next != rc.end;
		if (more) {
			k = 1 + rnd_below(&seed, 64);
			if (k > nfsl_xsk_rxarr_room(&rc.a, rc.next))
				k = nfsl_xsk_rxarr_room(&rc.a, rc.next);
			if (k > rc.end - rc.next)
				k = rc.end - rc.next;
			p = rc.next;
			rc.next += k;
		}
		pthread_spin_unlock(&rc.rx_lock);
		if (!more && !npend)
			break;
		if (!k && !npend) {
			/* Everything taken is done by this thread: waiting for
			 * the others' advances, or for a lost mark. */
			if (!idle_since)
				idle_since = nfsl_now_ns();
			else if (nfsl_now_ns() - idle_since > 1000000000ULL)
				atomic_store(&rc.stuck, 1);
		} else {
			idle_since = 0;
		}
		for (__u32 i = 0; i < k; i++)
			pend[npend++] = p + i;
		/* finish some, in random order; all when the ring is full */
		for (__u32 i = 0; i < npend;) {
			if (k && rnd_below(&seed, 8) == 0) {
				i++; /* stays pending: a stall */
				continue;
			}
			out[nout++] = pend[i];
			pend[i] = pend[--npend];
		}
		for (__u32 i = nout; i > 1; i--) {
			__u32 j = rnd_below(&seed, i), t = out[i - 1];

			out[i - 1] = out[j], out[j] = t;
		}
		for (__u32 i = 0; i < nout; i++)
			atomic_store(&rc.marked[out[i] - R_START], 1);
		nfsl_xsk_rxarr_done(&rc.a, out, nout);
		r_advance(rnd_below(&seed, 2));
	}
	return NULL;
}

static int cmp_run(const void *x, const void *y)
{
	__u32 a = *(const __u32 *)x - R_START, b = *(const __u32 *)y - R_START;

	return a < b ? -1 : a > b;
}

Test(xsk_rxarr, concurrent_out_of_order)
{
	pthread_t t[3];
	static __u32 runs[R_LOG][2];
	__u32 n, at = R_START;

	memset(&rc, 0, sizeof(rc));
	cr_assert_eq(nfsl_xsk_rxarr_init(&rc.a, R_SIZE), 0);
	nfsl_xsk_rxarr_reset(&rc.a, R_START);
	pthread_spin_init(&rc.rx_lock, PTHREAD_PROCESS_PRIVATE);
	rc.next = R_START;
	rc.end = R_START + R_TOTAL;
	for (uintptr_t i = 0; i < 3; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, rxarr_worker, (void *)i), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(atomic_load(&rc.stuck), 0,
		     "no advance for a second with every position done");
	r_advance(1); /* what the last advances left: all done by now */
	cr_assert_eq(atomic_load(&rc.bad), 0,
		     "%u positions returned before they were done",
		     atomic_load(&rc.bad));
	cr_assert_eq(nfsl_xsk_rxarr_head(&rc.a), rc.end, "head %u, end %u",
		     nfsl_xsk_rxarr_head(&rc.a), rc.end);
	n = atomic_load(&rc.nlog);
	for (__u32 i = 0; i < n; i++)
		runs[i][0] = rc.log_first[i], runs[i][1] = rc.log_n[i];
	qsort(runs, n, sizeof(runs[0]), cmp_run);
	for (__u32 i = 0; i < n; i++) {
		cr_assert_eq(runs[i][0], at, "run %u starts at %u, want %u", i,
			     runs[i][0], at);
		at += runs[i][1];
	}
	cr_assert_eq(at, rc.end, "runs end at %u", at);
	cr_log_info("rxarr: %u runs of %u positions, %u trylocks busy", n,
		    R_TOTAL, atomic_load(&rc.busy));
	nfsl_xsk_rxarr_fini(&rc.a);
}

/* ======================================================================
 * xsk_wset
 * ====================================================================== */

#define HEADROOM 256 /* an address inside the frame counts as the frame */

static void mark_range(struct nfsl_xsk_wset_worker *w, __u32 from, __u32 n)
{
	for (__u32 i = 0; i < n; i++)
		nfsl_xsk_wset_mark(w, F(from + i) + HEADROOM);
}

Test(xsk_wset, init)
{
	struct nfsl_xsk_wset s;
	__u64 ns = 1;

	cr_assert_eq(nfsl_xsk_wset_init(&s, 1, 64, 3000, 0, 0), -EINVAL);
	cr_assert_eq(nfsl_xsk_wset_init(&s, 0, 64, FS, 0, 0), -EINVAL);
	cr_assert_eq(nfsl_xsk_wset_init(&s, 1, 0, FS, 0, 0), -EINVAL);
	cr_assert_eq(nfsl_xsk_wset_init(&s, 1, 100, FS, 0, 5), 0);
	cr_assert_eq(s.window_ns, NFSL_XSK_WSET_WINDOW_NS);
	cr_assert_eq(nfsl_xsk_wset_last(&s, &ns), 0);
	cr_assert_eq(ns, 0);
	/* 100 frames: not a multiple of 64 */
	nfsl_xsk_wset_begin(nfsl_xsk_wset_worker(&s, 0));
	mark_range(nfsl_xsk_wset_worker(&s, 0), 0, 101); /* frame 100 is out */
	cr_assert_eq(nfsl_xsk_wset_roll(&s, 5 + 1000), 100);
	cr_assert_eq(nfsl_xsk_wset_last(&s, &ns), 100);
	cr_assert_eq(ns, 1000);
	nfsl_xsk_wset_fini(&s);
}

Test(xsk_wset, exact_counts)
{
	struct nfsl_xsk_wset s;
	struct nfsl_xsk_wset_worker *w0, *w1;
	__u64 ns;

	cr_assert_eq(nfsl_xsk_wset_init(&s, 2, 1024, FS, 0, 0), 0);
	w0 = nfsl_xsk_wset_worker(&s, 0);
	w1 = nfsl_xsk_wset_worker(&s, 1);
	/* window 0: 0..99 and 50..149, some twice, some out of range */
	nfsl_xsk_wset_begin(w0);
	mark_range(w0, 0, 100);
	mark_range(w0, 0, 10);
	nfsl_xsk_wset_begin(w1);
	mark_range(w1, 50, 100);
	nfsl_xsk_wset_mark(w1, F(1024));
	nfsl_xsk_wset_mark(w1, F(5000));
	nfsl_xsk_wset_mark(w1, ~0ULL);
	cr_assert_eq(nfsl_xsk_wset_roll(&s, 100000000), 150);
	cr_assert_eq(nfsl_xsk_wset_last(&s, &ns), 150);
	cr_assert_eq(ns, 100000000);
	/* window 1: w0 alone, 10 frames; w1 idle */
	nfsl_xsk_wset_begin(w0);
	mark_range(w0, 0, 10);
	cr_assert_eq(nfsl_xsk_wset_roll(&s, 200000000), 10, "the last window forgot");
	/* windows 2, 3: idle */
	cr_assert_eq(nfsl_xsk_wset_roll(&s, 300000000), 0);
	cr_assert_eq(nfsl_xsk_wset_roll(&s, 400000000), 0);
	/* window 4: w1 back after 4 windows idle, 3 frames */
	nfsl_xsk_wset_begin(w1);
	mark_range(w1, 500, 3);
	cr_assert_eq(nfsl_xsk_wset_roll(&s, 500000000), 3);
	/* every frame; window 6 reuses w1's bitmap of window 0 (cleared) */
	for (int r = 0; r < 4; r++) {
		nfsl_xsk_wset_begin(w0);
		nfsl_xsk_wset_begin(w1);
		mark_range(w0, 0, 512);
		mark_range(w1, 512, 512);
		cr_assert_eq(nfsl_xsk_wset_roll(&s, 600000000 + r), 1024);
	}
	nfsl_xsk_wset_fini(&s);
}

/* A burst begun before a roll marks the window that ended: counted there
 * or not at all, never in a later window. */
Test(xsk_wset, lagging_burst)
{
	struct nfsl_xsk_wset s;
	struct nfsl_xsk_wset_worker *w;

	cr_assert_eq(nfsl_xsk_wset_init(&s, 1, 256, FS, 0, 0), 0);
	w = nfsl_xsk_wset_worker(&s, 0);
	nfsl_xsk_wset_begin(w);
	mark_range(w, 0, 5);
	cr_assert_eq(nfsl_xsk_wset_roll(&s, 1), 5);
	mark_range(w, 100, 30); /* same burst, after the roll */
	cr_assert_eq(nfsl_xsk_wset_roll(&s, 2), 0, "not in the next window");
	cr_assert_eq(nfsl_xsk_wset_roll(&s, 3), 0);
	nfsl_xsk_wset_begin(w); /* epoch 3: bitmap of window 0 again */
	mark_range(w, 200, 2);
	cr_assert_eq(nfsl_xsk_wset_roll(&s, 4), 2, "window 0's bitmap cleared");
	nfsl_xsk_wset_fini(&s);
}

Test(xsk_wset, tick)
{
	struct nfsl_xsk_wset s;
	__u64 ns;

	cr_assert_eq(nfsl_xsk_wset_init(&s, 1, 64, 4096, 1000, 10000), 0);
	nfsl_xsk_wset_begin(nfsl_xsk_wset_worker(&s, 0));
	nfsl_xsk_wset_mark(nfsl_xsk_wset_worker(&s, 0), 4096 * 7 + 4095);
	nfsl_xsk_wset_mark(nfsl_xsk_wset_worker(&s, 0), 4096 * 7);
	cr_assert_eq(nfsl_xsk_wset_tick(&s, 10999), 0, "not due");
	cr_assert_eq(nfsl_xsk_wset_last(&s, NULL), 0);
	cr_assert_eq(nfsl_xsk_wset_tick(&s, 11000), 1, "due");
	cr_assert_eq(nfsl_xsk_wset_last(&s, &ns), 1, "frame 7 once");
	cr_assert_eq(ns, 1000);
	cr_assert_eq(nfsl_xsk_wset_tick(&s, 11500), 0);
	cr_assert_eq(nfsl_xsk_wset_tick(&s, 12300), 1, "a late tick");
	cr_assert_eq(nfsl_xsk_wset_last(&s, &ns), 0);
	cr_assert_eq(ns, 1300);
	nfsl_xsk_wset_fini(&s);
}

/* ns per frame marked: begin once per burst of 64, frames at random over
 * 4096 (a 512-byte bitmap) and over 65536 (8 KiB). */
Test(xsk_wset, bench)
{
	static __u64 addr[1 << 16];
	struct nfsl_xsk_wset s;
	__u64 seed = 5, t0, n = 50000000;

	if (!getenv("NFSL_XSK_BENCH"))
		cr_skip_test("set NFSL_XSK_BENCH=1 to run the benchmark");
	for (__u32 nframes = 4096; nframes <= 65536; nframes *= 16) {
		struct nfsl_xsk_wset_worker *w;

		cr_assert_eq(nfsl_xsk_wset_init(&s, 1, nframes, FS, 0, 0), 0);
		w = nfsl_xsk_wset_worker(&s, 0);
		for (__u32 i = 0; i < 1 << 16; i++)
			addr[i] = F(rnd_below(&seed, nframes)) + HEADROOM;
		t0 = nfsl_now_ns();
		for (__u64 done = 0; done < n; done += 64) {
			nfsl_xsk_wset_begin(w);
			for (__u32 i = 0; i < 64; i++)
				nfsl_xsk_wset_mark(w, addr[(done + i) & 0xffff]);
		}
		printf("xsk_wset bench: %u frames: %.2f ns per mark\n", nframes,
		       (double)(nfsl_now_ns() - t0) / n);
		cr_assert_leq(nfsl_xsk_wset_roll(&s, 1), nframes);
		nfsl_xsk_wset_fini(&s);
	}
}

/*
 * Two workers mark set A (600 frames) burst after burst while the main
 * thread rolls every ~1 ms; then they switch to set B (20 other frames).
 * Every window counts at most |A| and, once both workers' first B burst is
 * in an earlier window, at most |B|: no frame of an old window leaks into
 * a later one (a leak of A would count hundreds).
 */
#define W_FRAMES 2048
#define W_A 600
#define W_B 20
#define W_WINDOWS 240
#define W_SWITCH 120

static struct {
	struct nfsl_xsk_wset s;
	atomic_int phase; /* 0: A, 1: B, 2: stop */
	__u64 switch_epoch[2];
	atomic_ulong bursts[2];
} wc;

static void *wset_worker(void *arg)
{
	int me = (int)(uintptr_t)arg;
	struct nfsl_xsk_wset_worker *w = nfsl_xsk_wset_worker(&wc.s, me);
	int switched = 0, ph;

	while ((ph = atomic_load(&wc.phase)) != 2) {
		nfsl_xsk_wset_begin(w);
		if (ph == 1 && !switched) {
			wc.switch_epoch[me] = w->cur;
			switched = 1;
		}
		if (ph == 0)
			mark_range(w, me * (W_A / 2), W_A / 2 + 10); /* overlap */
		else
			mark_range(w, 1000 + me * 5, W_B - 5);
		atomic_fetch_add(&wc.bursts[me], 1);
	}
	return NULL;
}

Test(xsk_wset, concurrent_no_leak)
{
	static __u64 count[W_WINDOWS], epoch[W_WINDOWS];
	struct timespec ms = { 0, 1000000 };
	pthread_t t[2];
	__u64 sw, full_b = 0;

	memset(&wc, 0, sizeof(wc));
	cr_assert_eq(nfsl_xsk_wset_init(&wc.s, 2, W_FRAMES, FS, 0, 0), 0);
	for (uintptr_t i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, wset_worker, (void *)i), 0);
	for (int i = 0; i < W_WINDOWS; i++) {
		if (i == W_SWITCH)
			atomic_store(&wc.phase, 1);
		nanosleep(&ms, NULL); /* paces the windows; nothing waits on it */
		epoch[i] = *wc.s.epoch;
		count[i] = nfsl_xsk_wset_roll(&wc.s, i + 1);
	}
	atomic_store(&wc.phase, 2);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	cr_assert_gt(atomic_load(&wc.bursts[0]), 0);
	cr_assert_gt(atomic_load(&wc.bursts[1]), 0);
	sw = wc.switch_epoch[0] > wc.switch_epoch[1] ? wc.switch_epoch[0]
						     : wc.switch_epoch[1];
	for (int i = 0; i < W_WINDOWS; i++) {
		cr_assert_leq(count[i], W_A + W_B, "window %d: %llu", i,
			      (unsigned long long)count[i]);
		if (epoch[i] > sw) {
			cr_assert_leq(count[i], W_B, "window %d after the switch "
				      "counts %llu > %d: an old window leaked", i,
				      (unsigned long long)count[i], W_B);
			full_b += count[i] == W_B;
		}
	}
	cr_assert_gt(full_b, 0, "no window after the switch saw all of B");
	nfsl_xsk_wset_fini(&wc.s);
}
