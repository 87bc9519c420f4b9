// SPDX-License-Identifier: GPL-2.0
/*
 * Receive bursts of the four architectures (nfsl_xsk.h) and the service of
 * fill and completion rings.
 *
 * privring, smallpriv, rxbisect: a worker reads its own RX rings (Bx).
 * The fill (Ax) and completion rings of a group are served once per burst
 * by whichever worker takes their trylock (a privring group has one
 * worker, so its lock is never contended); a worker that finds it held
 * goes on (thesis §6.1.2: no fixed allocating core, no per-packet lock).
 *
 * shring (§5.1.3, Listing 5.1): one RX ring per queue for all workers.
 * Whoever takes the group's RX lock dispatches its frames by flow to the
 * workers' dispatch rings (the per-core completion rings of the thesis,
 * written here by software since the kernel has one RX ring per socket)
 * and numbers them with their reception position. A worker takes its
 * frames from its dispatch ring and marks their positions done in the
 * RxArr bitmap; under the ring lock the maximal run of done positions from
 * the head is then returned to the fill ring, in reception order. A
 * stalled worker's positions stay undone, so the fill ring is not refilled
 * past them and every worker starves: the pathology of §5.1.5.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfsl_flow.h"
#include "xsk/nfsl_xsk_int.h"

static inline __u64 frame_base(__u64 addr)
{
	return addr & ~(__u64)(NFSL_XSK_FRAME - 1);
}

void nfsl_xsk_frames_free(struct nfsl_xsk_worker *w, const __u64 *addr, unsigned int n)
{
	__u64 base[NFSL_XSK_BURST];

	while (n) {
		unsigned int k = n < NFSL_XSK_BURST ? n : NFSL_XSK_BURST;

		for (unsigned int i = 0; i < k; i++)
			base[i] = frame_base(addr[i]);
		nfsl_xsk_cache_put(&w->cache, base, k);
		addr += k;
		n -= k;
	}
}

/* Post up to @want frames from the worker's cache to @g's fill ring.
 * Caller owns the fill ring. Returns the frames posted. */
static __u32 fill_post(struct nfsl_xsk_worker *w, struct nfsl_xsk_group *g, __u32 want)
{
	__u64 buf[NFSL_XSK_BURST], now = nfsl_now_ns();
	__u32 done = 0;

	/* Every posted frame taken: since the last refill the kernel may have
	 * had no buffer for a frame (rx_fill_empty). How long that refill is
	 * ago says whether the owner was late (a gap in its CPU) or the burst
	 * was larger than the ring. */
	if (g->last_fill_ns && xsk_prod_nb_free(&g->fill, g->fill_size) >= g->fill_size) {
		w->st.fill_dry++;
		w->st.dry_wait_us += (now - g->last_fill_ns) / 1000;
	}
	g->last_fill_ns = now;

	while (done < want) {
		__u32 room = xsk_prod_nb_free(&g->fill, want - done);
		__u32 n, got, idx;

		if (room > want - done)
			room = want - done;
		n = room < NFSL_XSK_BURST ? room : NFSL_XSK_BURST;
		if (!n)
			break;
		got = nfsl_xsk_cache_get(&w->cache, buf, n);
		if (!got || xsk_ring_prod__reserve(&g->fill, got, &idx) != got) {
			nfsl_xsk_cache_put(&w->cache, buf, got);
			break;
		}
		for (__u32 i = 0; i < got; i++)
			*xsk_ring_prod__fill_addr(&g->fill, idx + i) = buf[i];
		xsk_ring_prod__submit(&g->fill, got);
		done += got;
		if (got < n)
			break; /* pool empty: every frame is in use */
	}
	return done;
}

/* Fill @g's fill ring to the full (caller owns it; shring uses this only
 * to prime the ring at open). */
void nfsl_xsk_fill_refill(struct nfsl_xsk_worker *w, struct nfsl_xsk_group *g)
{
	if (fill_post(w, g, g->fill_size))
		w->st.refills++;
}

/* Completed transmissions of @g go back to the worker's cache (caller
 * owns the completion ring). */
void nfsl_xsk_comp_drain(struct nfsl_xsk_worker *w, struct nfsl_xsk_group *g)
{
	__u32 idx, n;

	while ((n = xsk_ring_cons__peek(&g->comp, NFSL_XSK_BURST, &idx))) {
		__u64 addr[NFSL_XSK_BURST];

		for (__u32 i = 0; i < n; i++)
			addr[i] = *xsk_ring_cons__comp_addr(&g->comp, idx + i);
		xsk_ring_cons__release(&g->comp, n);
		atomic_fetch_sub_explicit(&g->tx_pending, n, memory_order_relaxed);
		nfsl_xsk_frames_free(w, addr, n);
	}
}

/* One burst's service of @g's fill and completion rings, if free. */
static void service(struct nfsl_xsk_worker *w, struct nfsl_xsk_group *g)
{
	if (pthread_spin_trylock(&g->ring_lock)) {
		w->st.fill_busy++;
		return;
	}
	nfsl_xsk_comp_drain(w, g);
	nfsl_xsk_fill_refill(w, g);
	pthread_spin_unlock(&g->ring_lock);
}

static inline void take(struct nfsl_xsk_worker *w, struct nfsl_xsk_desc *d, __u64 addr,
			__u32 len, int dev)
{
	d->addr = addr;
	d->len = len;
	d->dev = dev;
	d->out = dev;
	d->tok.ours = 0; /* no check carried yet */
	nfsl_xsk_wset_mark(w->ws, addr);
}

/* privring, smallpriv, rxbisect: the worker's own RX rings (Bx). */
static unsigned int rx_own(struct nfsl_xsk_worker *w, struct nfsl_xsk_desc *d,
			   unsigned int max)
{
	unsigned int got = 0;

	for (int i = 0; i < w->nrx; i++) {
		struct nfsl_xsk_sock *s = w->rxs[(w->rr + i) % w->nrx];
		__u32 idx, n = 0;

		if (got < max)
			n = xsk_ring_cons__peek(&s->rx, max - got, &idx);
		for (__u32 k = 0; k < n; k++) {
			const struct xdp_desc *x = xsk_ring_cons__rx_desc(&s->rx, idx + k);

			take(w, &d[got++], x->addr, x->len, s->g->dev);
		}
		if (n)
			xsk_ring_cons__release(&s->rx, n);
		service(w, s->g);
	}
	w->rr++;
	return got;
}

/* shring step 1: move frames of @g's shared RX ring to the workers'
 * dispatch rings, by flow (the NIC's RSS of the thesis). */
static void sh_dispatch(struct nfsl_xsk_worker *w, struct nfsl_xsk_group *g)
{
	struct nfsl_xsk_sock *s = g->socks[0];
	int nw = w->x->nworkers;
	__u64 woke = 0;
	__u32 idx, n, k;

	if (pthread_spin_trylock(&g->rx_lock))
		return; /* another worker dispatches */
	n = xsk_ring_cons__peek(&s->rx, 256, &idx);
	for (k = 0; k < n; k++) {
		const struct xdp_desc *x = xsk_ring_cons__rx_desc(&s->rx, idx + k);
		__u8 *frame = w->x->area + x->addr;
		struct nfsl_pkt p = {};
		struct nfsl_xsk_cr *cr;
		__u32 t = 0, prod;

		if (nw > 1 && !nfsl_parse(frame, frame + x->len, &p))
			t = nfsl_steer_pick(frame, frame + x->len, &p,
					    w->x->o.port_dev == g->dev + 1 ? NFSL_STEER_DPORT
									   : NFSL_STEER_FLOW,
					    w->x->o.port_start, nw);
		if (!nfsl_xsk_rxarr_room(&g->rxarr, g->rx_seq))
			break; /* never: the fill ring bounds the positions */
		cr = g->cr[t];
		prod = atomic_load_explicit(&cr->prod, memory_order_relaxed);
		if (prod - atomic_load_explicit(&cr->cons, memory_order_acquire) > cr->mask)
			break; /* that worker is far behind: leave the rest queued */
		cr->e[prod & cr->mask] = (struct nfsl_xsk_cr_ent){ .addr = x->addr, .len = x->len,
							     .pos = g->rx_seq++ };
		atomic_store_explicit(&cr->prod, prod + 1, memory_order_release);
		woke |= 1ull << t;
	}
	if (k)
		xsk_ring_cons__release(&s->rx, k);
	pthread_spin_unlock(&g->rx_lock);
	/* A worker asleep in poll() sees the shared RX ring empty now: wake
	 * the ones that got frames. */
	woke &= ~(1ull << w->id);
	for (int t = 0; woke; t++, woke >>= 1) {
		__u64 one = 1;

		if ((woke & 1) && write(w->x->workers[t].efd, &one, sizeof(one)) < 0)
			continue; /* counter saturated: it is awake anyway */
	}
}

/*
 * shring step 3: return the done run from the head to the fill ring
 * (Listing 5.1 lines 29-37). The listing spins on the lock; here a worker
 * that finds it held leaves a request instead, which the holder serves
 * before it leaves: workers may outnumber CPUs (all on one, in the
 * benchmarks), and a preempted holder must not make the others spin.
 */
static void sh_return(struct nfsl_xsk_worker *w, struct nfsl_xsk_group *g)
{
	__u32 first, n;

	do {
		atomic_store(&g->return_req, 1);
		if (pthread_spin_trylock(&g->ring_lock))
			return; /* the holder sees the request */
		while (atomic_exchange(&g->return_req, 0)) {
			n = nfsl_xsk_rxarr_advance_excl(&g->rxarr, &first, UINT32_MAX);
			g->fill_owed += n;
			nfsl_xsk_comp_drain(w, g);
			if (g->fill_owed) {
				__u32 posted = fill_post(w, g, g->fill_owed);

				g->fill_owed -= posted;
				if (posted)
					w->st.refills++;
			}
		}
		pthread_spin_unlock(&g->ring_lock);
		/* a request left after our last look, by a worker whose
		 * trylock failed before our unlock */
	} while (atomic_load(&g->return_req));
}

static unsigned int rx_shared(struct nfsl_xsk_worker *w, struct nfsl_xsk_desc *d,
			      unsigned int max)
{
	unsigned int got = 0;

	for (int i = 0; i < w->nshg; i++) {
		struct nfsl_xsk_group *g = w->shg[(w->rr + i) % w->nshg];
		struct nfsl_xsk_cr *cr = g->cr[w->id];
		__u32 pos[NFSL_XSK_BURST], cons, prod, n = 0;

		sh_dispatch(w, g);
		cons = atomic_load_explicit(&cr->cons, memory_order_relaxed);
		prod = atomic_load_explicit(&cr->prod, memory_order_acquire);
		while (cons != prod && got < max && n < NFSL_XSK_BURST) {
			struct nfsl_xsk_cr_ent *e = &cr->e[cons & cr->mask];

			take(w, &d[got++], e->addr, e->len, g->dev);
			pos[n++] = e->pos;
			cons++;
		}
		atomic_store_explicit(&cr->cons, cons, memory_order_release);
		/* Received and re-armed (Listing 5.1 lines 16-26). */
		if (n)
			nfsl_xsk_rxarr_done(&g->rxarr, pos, n);
		sh_return(w, g);
	}
	w->rr++;
	return got;
}

unsigned int nfsl_xsk_worker_rx(struct nfsl_xsk_worker *w, struct nfsl_xsk_desc *d,
				unsigned int max)
{
	unsigned int n;

	if (max > NFSL_XSK_BURST)
		max = NFSL_XSK_BURST;
	nfsl_xsk_wset_begin(w->ws);
	n = w->nshg ? rx_shared(w, d, max) : rx_own(w, d, max);
	w->st.rx += n;
	return n;
}
