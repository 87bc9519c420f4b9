// SPDX-License-Identifier: GPL-2.0
/*
 * Transmit bursts, drops and the drain at shutdown (nfsl_xsk.h).
 *
 * Inline deployment: AF_XDP transmit goes through __dev_direct_xmit, past
 * tc egress where the splicer runs (docs/platform.md "What passes tc
 * egress"), so every frame is spliced here, from the store's mmap, with
 * the tc splicer's own codec (nfsl_xsk_splice.h). A header whose payload
 * is gone, or that would not fit, is dropped and counted: never sent
 * truncated.
 *
 * Checksums: a frame a local socket sent over veth with TX checksum offload
 * (the kernel default) reaches XDP, and so the NF, with its L4 checksum
 * still to be computed: the field holds the pseudo-header seed
 * (CHECKSUM_PARTIAL). The kernel path would complete it on the way out;
 * AF_XDP transmit builds a new skb from bare bytes and would send the seed,
 * which the receiver drops. So such a frame is completed here, as the
 * device would have: found as the slicer finds it (the field equals the
 * seed of the frame's own length and does not verify as a full checksum).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <linux/if_ether.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nfsl_csum.h"
#include "nfsl_hdr.h"
#include "xsk/nfsl_xsk_int.h"

/* Make the kernel send what is queued on @s (copy mode transmits inside
 * sendto, a bounded batch per call: call again while it says EAGAIN). */
static void kick(struct nfsl_xsk_sock *s)
{
	for (int i = 0; i < 64; i++) {
		if (__atomic_load_n(s->tx.consumer, __ATOMIC_ACQUIRE) == s->tx.cached_prod)
			return;
		if (sendto(s->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
			continue;
		if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS)
			return;
	}
}

/* Complete the L4 checksum of a frame that carries the pseudo-header seed
 * (above). Returns true when it did. */
static bool csum_complete(__u8 *frame, __u32 len)
{
	void *end = frame + len;
	struct nfsl_pkt p = {};
	__u32 pseudo, l4len, sum;
	__u16 *field, ip_csum, c;

	if (nfsl_parse(frame, end, &p) || nfsl_pseudo_sum(frame, end, &p, &pseudo, &ip_csum))
		return false;
	l4len = p.l3end - p.l4off;
	field = (__u16 *)(frame + p.l4off + nfsl_l4_csum_off(p.proto));
	if (*field != nfsl_csum_seed(pseudo, l4len))
		return false;
	sum = nfsl_csum_add(pseudo, nfsl_htons(l4len));
	if (nfsl_csum_fold(nfsl_csum_bytes(frame + p.l4off, l4len, sum)) == 0xffff)
		return false; /* a full checksum that equals the seed */
	*field = 0;
	c = ~nfsl_csum_fold(nfsl_csum_bytes(frame + p.l4off, l4len, sum));
	*field = nfsl_csum_final(c, p.proto == IPPROTO_UDP);
	return true;
}

/* Splice @d before it leaves (inline). Returns true if it may be sent. */
static bool tx_splice(struct nfsl_xsk_worker *w, struct nfsl_xsk_desc *d)
{
	struct nfsl_xsk *x = w->x;
	__u32 room = NFSL_XSK_FRAME - (d->addr & (NFSL_XSK_FRAME - 1));
	__u32 mtu = __atomic_load_n(&x->mtu[d->out], __ATOMIC_RELAXED);

	switch (nfsl_xsk_splice_tok(&x->store, x->area + d->addr, &d->len, room, mtu, &d->tok)) {
	case NFSL_XSK_SPLICE_NOT_SLICED:
		return true;
	case NFSL_XSK_SPLICE_SPLICED:
		w->st.spliced++;
		return true;
	case NFSL_XSK_SPLICE_TOO_BIG:
		w->st.too_big++;
		return false;
	case NFSL_XSK_SPLICE_NO_ROOM:
		w->st.no_room++;
		return false;
	default: /* STALE, BAD */
		w->st.stale++;
		return false;
	}
}

unsigned int nfsl_xsk_worker_tx(struct nfsl_xsk_worker *w, struct nfsl_xsk_desc *d,
				unsigned int n)
{
	struct nfsl_xsk *x = w->x;
	__u64 drop[NFSL_XSK_BURST];
	unsigned int queued = 0, ndrop = 0;

	if (n > NFSL_XSK_BURST)
		n = NFSL_XSK_BURST;
	for (int dev = 0; dev < x->ndevs; dev++) {
		struct nfsl_xsk_sock *s = w->txs[dev];
		unsigned int sel[NFSL_XSK_BURST], k = 0;
		__u32 idx, r = 0;

		for (unsigned int i = 0; i < n; i++) {
			if (d[i].out != dev)
				continue;
			if (!s || (x->inline_splice && !tx_splice(w, &d[i]))) {
				drop[ndrop++] = d[i].addr;
				continue;
			}
			if (csum_complete(x->area + d[i].addr, d[i].len))
				w->st.csum_done++;
			sel[k++] = i;
		}
		if (!k)
			continue;
		if (s->tx_shared)
			pthread_mutex_lock(&s->tx_lock);
		/* reserve is all or nothing: take what is free */
		r = xsk_prod_nb_free(&s->tx, k);
		if (r > k)
			r = k;
		if (r && xsk_ring_prod__reserve(&s->tx, r, &idx) == r) {
			for (__u32 j = 0; j < r; j++) {
				struct xdp_desc *t = xsk_ring_prod__tx_desc(&s->tx, idx + j);

				t->addr = d[sel[j]].addr;
				t->len = d[sel[j]].len;
			}
			atomic_fetch_add_explicit(&s->g->tx_pending, r, memory_order_relaxed);
			xsk_ring_prod__submit(&s->tx, r);
		} else {
			r = 0;
		}
		kick(s);
		if (s->tx_shared)
			pthread_mutex_unlock(&s->tx_lock);
		for (unsigned int j = r; j < k; j++) {
			drop[ndrop++] = d[sel[j]].addr;
			w->st.tx_full++;
		}
		queued += r;
		/* Completions: whoever holds the ring lock takes them. */
		if (!pthread_spin_trylock(&s->g->ring_lock)) {
			nfsl_xsk_comp_drain(w, s->g);
			pthread_spin_unlock(&s->g->ring_lock);
		}
	}
	if (ndrop)
		nfsl_xsk_frames_free(w, drop, ndrop);
	w->st.tx += queued;
	return queued;
}

/*
 * Turn the dropped frame @d into a drop notice if it looks like a sliced
 * header (DSCP 63, room for a token, no VLAN tag): EtherType
 * NFSL_ETH_P_NOTICE, addresses swapped, back out of the device it came
 * from. This host has no key to check the token: the slicing host does,
 * and a notice that does not verify frees nothing there.
 */
static bool to_notice(__u8 *frame, struct nfsl_xsk_desc *d)
{
	struct nfsl_pkt p = {};
	__u8 mac[6];

	if (nfsl_parse(frame, frame + d->len, &p) || p.l3off != sizeof(struct ethhdr) ||
	    p.dscp != NFSL_DSCP_SLICED || p.l3end < p.payoff + NFSL_TOKEN_LEN)
		return false;
	memcpy(mac, frame, 6);
	memcpy(frame, frame + 6, 6);
	memcpy(frame + 6, mac, 6);
	*(__be16 *)(frame + 12) = htons(NFSL_ETH_P_NOTICE);
	d->out = d->dev;
	return true;
}

void nfsl_xsk_worker_drop(struct nfsl_xsk_worker *w, const struct nfsl_xsk_desc *d,
			  unsigned int n)
{
	struct nfsl_xsk_desc notice[NFSL_XSK_BURST];
	__u64 addr[NFSL_XSK_BURST];
	unsigned int nn = 0, k = 0;

	if (n > NFSL_XSK_BURST)
		n = NFSL_XSK_BURST;
	for (unsigned int i = 0; i < n; i++) {
		if (w->x->o.drop_notice && !w->x->inline_splice) {
			notice[nn] = d[i];
			if (to_notice(w->x->area + d[i].addr, &notice[nn])) {
				nn++;
				continue;
			}
		}
		/* Explicit drop (PayloadPark §6.2.4): the payload's slot is
		 * freed now rather than at expiry. */
		if (w->x->inline_splice &&
		    nfsl_xsk_release_tok(&w->x->store, w->x->area + d[i].addr, d[i].len,
					 &d[i].tok) == 1)
			w->st.released++;
		addr[k++] = d[i].addr;
	}
	if (k)
		nfsl_xsk_frames_free(w, addr, k);
	w->st.drops += n;
	if (nn) {
		/* counted as dropped by the NF, and as notices; not as tx */
		unsigned int sent = nfsl_xsk_worker_tx(w, notice, nn);

		w->st.tx -= sent;
		w->st.notices += sent;
	}
}

unsigned int nfsl_xsk_worker_drain(struct nfsl_xsk_worker *w, int timeout_ms)
{
	__u64 t0 = nfsl_now_ns();
	unsigned int left;

	for (;;) {
		left = 0;
		for (int dev = 0; dev < w->x->ndevs; dev++) {
			struct nfsl_xsk_sock *s = w->txs[dev];

			if (!s)
				continue;
			if (s->tx_shared)
				pthread_mutex_lock(&s->tx_lock);
			kick(s);
			if (s->tx_shared)
				pthread_mutex_unlock(&s->tx_lock);
			pthread_spin_lock(&s->g->ring_lock);
			nfsl_xsk_comp_drain(w, s->g);
			pthread_spin_unlock(&s->g->ring_lock);
			left += atomic_load_explicit(&s->g->tx_pending, memory_order_relaxed);
		}
		if (!left || nfsl_now_ns() - t0 >= (__u64)timeout_ms * 1000000)
			return left;
		usleep(1000);
	}
}
