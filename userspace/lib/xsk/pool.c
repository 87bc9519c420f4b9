// SPDX-License-Identifier: GPL-2.0
/* Two-level UMEM frame allocator: see nfsl_xsk_pool.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xsk/nfsl_xsk_pool.h"

#ifdef NFSL_XSK_POOL_MUTEX
typedef pthread_mutex_t pool_lock_t;
#define lock_init(l) pthread_mutex_init(l, NULL)
#define lock_destroy(l) pthread_mutex_destroy(l)
#define lock(l) pthread_mutex_lock(l)
#define unlock(l) pthread_mutex_unlock(l)
#else
typedef pthread_spinlock_t pool_lock_t;
#define lock_init(l) pthread_spin_init(l, PTHREAD_PROCESS_PRIVATE)
#define lock_destroy(l) pthread_spin_destroy(l)
#define lock(l) pthread_spin_lock(l)
#define unlock(l) pthread_spin_unlock(l)
#endif

/* Every worker writes these under the lock: they start a cache line, and
 * the allocation holds nothing else. */
struct nfsl_xsk_pool_stack {
	pool_lock_t lock;
	__u32 n; /* frames[0..n-1] free, top at n-1; written under the lock,
		  * read without it by nfsl_xsk_pool_count (relaxed) */
	__u64 frames[];
};

static inline __u32 min_u32(__u32 a, __u32 b)
{
	return a < b ? a : b;
}

static inline __u32 stack_n(const struct nfsl_xsk_pool_stack *s)
{
	return __atomic_load_n(&s->n, __ATOMIC_RELAXED);
}

static inline void stack_set_n(struct nfsl_xsk_pool_stack *s, __u32 n)
{
	__atomic_store_n(&s->n, n, __ATOMIC_RELAXED);
}

/* --- debug: every seeded frame free (0) or handed out (1) --------------- */

#ifdef NFSL_XSK_POOL_DEBUG
static void __attribute__((noreturn)) dbg_fail(const char *what, __u64 addr)
{
	fprintf(stderr, "nfsl_xsk_pool: frame 0x%llx %s\n",
		(unsigned long long)addr, what);
	abort();
}

static __u8 *dbg_state(struct nfsl_xsk_pool *p, __u64 addr)
{
	__u64 i;

	if (!p->dbg_out || addr < p->dbg_first)
		dbg_fail("was never seeded", addr);
	i = (addr - p->dbg_first) / p->dbg_stride;
	if (i >= p->dbg_n)
		dbg_fail("was never seeded", addr);
	return &p->dbg_out[i];
}

static void dbg_take(struct nfsl_xsk_pool *p, const __u64 *a, __u32 n)
{
	for (__u32 i = 0; i < n; i++)
		if (__atomic_exchange_n(dbg_state(p, a[i]), 1, __ATOMIC_RELAXED))
			dbg_fail("handed out twice", a[i]);
}

static void dbg_give(struct nfsl_xsk_pool *p, const __u64 *a, __u32 n)
{
	for (__u32 i = 0; i < n; i++)
		if (!__atomic_exchange_n(dbg_state(p, a[i]), 0, __ATOMIC_RELAXED))
			dbg_fail("freed twice (or freed while free)", a[i]);
}

static int dbg_seed(struct nfsl_xsk_pool *p, __u64 first, __u32 n,
		    __u32 stride)
{
	if (!p->dbg_out) {
		if (!stride)
			dbg_fail("seeded with stride 0", first);
		p->dbg_out = calloc(p->cap, 1);
		if (!p->dbg_out)
			return -ENOMEM;
		p->dbg_first = first;
		p->dbg_stride = stride;
	} else if (stride != p->dbg_stride ||
		   first != p->dbg_first + (__u64)p->dbg_n * stride) {
		dbg_fail("seeded out of the first seed's progression", first);
	}
	p->dbg_n += n;
	return 0;
}
#else
static inline void dbg_take(struct nfsl_xsk_pool *p, const __u64 *a, __u32 n) {}
static inline void dbg_give(struct nfsl_xsk_pool *p, const __u64 *a, __u32 n) {}
static inline int dbg_seed(struct nfsl_xsk_pool *p, __u64 first, __u32 n,
			   __u32 stride)
{
	return 0;
}
#endif

/* --- the shared pool --------------------------------------------------- */

int nfsl_xsk_pool_init(struct nfsl_xsk_pool *p, __u32 cap)
{
	struct nfsl_xsk_pool_stack *s;
	size_t len;

	memset(p, 0, sizeof(*p));
	if (!cap || cap > (1u << 31))
		return -EINVAL;
	len = sizeof(*s) + (size_t)cap * sizeof(s->frames[0]);
	s = aligned_alloc(64, (len + 63) & ~(size_t)63);
	if (!s)
		return -ENOMEM;
	if (lock_init(&s->lock)) {
		free(s);
		return -ENOMEM;
	}
	s->n = 0;
	p->s = s;
	p->cap = cap;
	return 0;
}

void nfsl_xsk_pool_fini(struct nfsl_xsk_pool *p)
{
	if (p->s) {
		lock_destroy(&p->s->lock);
		free(p->s);
	}
	free(p->dbg_out);
	memset(p, 0, sizeof(*p));
}

int nfsl_xsk_pool_seed(struct nfsl_xsk_pool *p, __u64 first, __u32 n,
		       __u32 stride)
{
	struct nfsl_xsk_pool_stack *s = p->s;
	int err = 0;

	if (!stride && n > 1)
		return -EINVAL;
	lock(&s->lock);
	if (n > p->cap - s->n) {
		err = -ENOSPC;
		goto out;
	}
	err = dbg_seed(p, first, n, stride);
	if (err)
		goto out;
	/* @first on top: handed out first. */
	for (__u32 i = 0; i < n; i++)
		s->frames[s->n + i] = first + (__u64)(n - 1 - i) * stride;
	stack_set_n(s, s->n + n);
out:
	unlock(&s->lock);
	return err;
}

__u32 nfsl_xsk_pool_count(const struct nfsl_xsk_pool *p)
{
	return stack_n(p->s);
}

__u32 nfsl_xsk_pool_get(struct nfsl_xsk_pool *p, __u64 *out, __u32 n)
{
	struct nfsl_xsk_pool_stack *s = p->s;
	__u32 k;

	if (!n || !stack_n(s))
		return 0;
	lock(&s->lock);
	k = min_u32(n, s->n);
	for (__u32 i = 0; i < k; i++)
		out[i] = s->frames[s->n - 1 - i];
	stack_set_n(s, s->n - k);
	unlock(&s->lock);
	dbg_take(p, out, k);
	return k;
}

__u32 nfsl_xsk_pool_put(struct nfsl_xsk_pool *p, const __u64 *in, __u32 n)
{
	struct nfsl_xsk_pool_stack *s = p->s;
	__u32 k;

	if (!n)
		return 0;
	dbg_give(p, in, n);
	lock(&s->lock);
	k = min_u32(n, p->cap - s->n);
	memcpy(&s->frames[s->n], in, (size_t)k * sizeof(*in));
	stack_set_n(s, s->n + k);
	unlock(&s->lock);
	return k;
}

/* --- per-worker caches ------------------------------------------------- */

/* Only the owner writes bot and top; relaxed stores (plain moves) let a
 * stats thread read them (nfsl_xsk_cache_count) without a data race. */
static inline void set_top(struct nfsl_xsk_cache *c, __u32 v)
{
	__atomic_store_n(&c->top, v, __ATOMIC_RELAXED);
}

static inline void set_bot(struct nfsl_xsk_cache *c, __u32 v)
{
	__atomic_store_n(&c->bot, v, __ATOMIC_RELAXED);
}

int nfsl_xsk_cache_init(struct nfsl_xsk_cache *c, struct nfsl_xsk_pool *p,
			__u32 size)
{
	__u32 want, cap = 1;

	memset(c, 0, sizeof(*c));
	if (!p || !p->s || size > (1u << 24))
		return -EINVAL;
	want = size + size / 2 + NFSL_XSK_CACHE_BURST;
	while (cap < want)
		cap <<= 1;
	c->f = aligned_alloc(64, (size_t)cap * sizeof(*c->f));
	if (!c->f)
		return -ENOMEM;
	c->pool = p;
	c->mask = cap - 1;
	c->size = size;
	c->thresh = size + size / 2;
	return 0;
}

/* The cache's slots [@from, @from + @k) (indices before masking) to the
 * flat array @a, and back. */
static inline void ring_read(const struct nfsl_xsk_cache *c, __u32 from,
			     __u64 *a, __u32 k)
{
	__u32 start = from & c->mask;
	__u32 first = min_u32(k, c->mask + 1 - start);

	memcpy(a, &c->f[start], (size_t)first * sizeof(*a));
	memcpy(a + first, c->f, (size_t)(k - first) * sizeof(*a));
}

static inline void ring_write(struct nfsl_xsk_cache *c, __u32 from,
			      const __u64 *a, __u32 k)
{
	__u32 start = from & c->mask;
	__u32 first = min_u32(k, c->mask + 1 - start);

	memcpy(&c->f[start], a, (size_t)first * sizeof(*a));
	memcpy(c->f, a + first, (size_t)(k - first) * sizeof(*a));
}

void nfsl_xsk_cache_fini(struct nfsl_xsk_cache *c)
{
	struct nfsl_xsk_pool_stack *s;
	__u32 k;

	if (!c->pool)
		return;
	s = c->pool->s;
	k = c->top - c->bot;
	if (k) {
		/* Oldest first: the newest end on top of the pool. */
		lock(&s->lock);
		k = min_u32(k, c->pool->cap - s->n);
		ring_read(c, c->bot, &s->frames[s->n], k);
		stack_set_n(s, s->n + k);
		unlock(&s->lock);
	}
	free(c->f);
	memset(c, 0, sizeof(*c));
}

/*
 * One locked batch from the pool's top to under the cache's bottom, in the
 * pool's order, so that the pool's newest frame ends next to the cache's
 * oldest: enough for @need more frames than cached with @size left over.
 * Returns how many it moved.
 */
static __u32 refill(struct nfsl_xsk_cache *c, __u32 need)
{
	struct nfsl_xsk_pool_stack *s = c->pool->s;
	__u32 cnt = c->top - c->bot;
	__u32 want = min_u32(c->size + need, c->mask + 1 - cnt);
	__u32 k;

	/* An empty pool is common when every frame is out: look before
	 * taking the lock (a frame freed meanwhile waits for the next call). */
	if (!stack_n(s))
		return 0;
	lock(&s->lock);
	k = min_u32(want, s->n);
	ring_write(c, c->bot - k, &s->frames[s->n - k], k);
	stack_set_n(s, s->n - k);
	unlock(&s->lock);
	set_bot(c, c->bot - k);
	c->refills++;
	return k;
}

/* One locked batch of the oldest frames beyond @size to the pool's top. */
static void drain(struct nfsl_xsk_cache *c)
{
	struct nfsl_xsk_pool_stack *s = c->pool->s;
	__u32 k = c->top - c->bot - c->size;

	lock(&s->lock);
	/* More than cap free frames: some were freed twice. Drop the excess
	 * rather than overrun (the debug build aborts at the second free). */
	k = min_u32(k, c->pool->cap - s->n);
	ring_read(c, c->bot, &s->frames[s->n], k);
	stack_set_n(s, s->n + k);
	unlock(&s->lock);
	set_bot(c, c->top - c->size);
	c->drains++;
}

__u32 nfsl_xsk_cache_get(struct nfsl_xsk_cache *c, __u64 *out, __u32 n)
{
	__u32 got = 0;

	while (got < n) {
		__u32 cnt = c->top - c->bot, k, top, mask;
		int dry = 0;

		if (cnt < n - got) {
			__u32 want = n - got - cnt;

			dry = refill(c, want) < min_u32(c->size + want,
							c->mask + 1 - cnt);
			cnt = c->top - c->bot;
			if (!cnt)
				break;
		}
		k = min_u32(cnt, n - got);
		top = c->top;
		mask = c->mask;
		/* A loop, not memcpy: bursts are short, and newest first. */
		for (__u32 i = 0; i < k; i++)
			out[got + i] = c->f[(top - 1 - i) & mask];
		set_top(c, top - k);
		got += k;
		if (dry)
			break;
	}
	dbg_take(c->pool, out, got);
	return got;
}

void nfsl_xsk_cache_put(struct nfsl_xsk_cache *c, const __u64 *in, __u32 n)
{
	dbg_give(c->pool, in, n);
	while (n) {
		/* Room is never 0: after a drain the cache holds size frames,
		 * at most capacity - NFSL_XSK_CACHE_BURST. */
		__u32 top = c->top, mask = c->mask;
		__u32 k = min_u32(n, mask + 1 - (top - c->bot));

		for (__u32 i = 0; i < k; i++)
			c->f[(top + i) & mask] = in[i];
		set_top(c, top + k);
		in += k;
		n -= k;
		if (c->top - c->bot > c->thresh)
			drain(c);
	}
}
