// SPDX-License-Identifier: GPL-2.0
/*
 * nfsl_xsk setup and teardown: the UMEM area, one xsk_umem per (interface,
 * queue) group over it, the sockets of each receive architecture, the
 * workers' state (nfsl_xsk.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "nfsl/domain.h"
#include "xsk/nfsl_xsk_int.h"

static const char *const rx_names[] = {
	[NFSL_XSK_PRIVRING] = "privring",
	[NFSL_XSK_SMALLPRIV] = "smallpriv",
	[NFSL_XSK_SHRING] = "shring",
	[NFSL_XSK_RXBISECT] = "rxbisect",
};

const char *nfsl_xsk_rx_name(enum nfsl_xsk_rx rx)
{
	return (unsigned int)rx < 4 ? rx_names[rx] : "?";
}

int nfsl_xsk_rx_parse(const char *s, enum nfsl_xsk_rx *rx)
{
	for (unsigned int i = 0; i < 4; i++) {
		if (!strcmp(s, rx_names[i])) {
			*rx = i;
			return 0;
		}
	}
	return -EINVAL;
}

static bool pow2(__u32 v)
{
	return v && !(v & (v - 1));
}

static __u32 roundup_pow2(__u32 v)
{
	__u32 p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* RX queues of @ifname (ETHTOOL_GCHANNELS: rx or combined), at least 1,
 * and its MTU. */
static int dev_info(const char *ifname, __u32 *nq, __u32 *mtu)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr = {};
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr)) {
		err = -errno;
		goto out;
	}
	*mtu = ifr.ifr_mtu;
	ifr.ifr_data = (void *)&ch;
	*nq = 1;
	if (!ioctl(fd, SIOCETHTOOL, &ifr)) {
		__u32 n = ch.rx_count + ch.combined_count;

		if (n)
			*nq = n;
	}
out:
	close(fd);
	return err;
}

/* Fill ring (Ax) entries of a group for the architecture. */
static __u32 fill_size(const struct nfsl_xsk_opts *o)
{
	return o->rx == NFSL_XSK_PRIVRING ? o->bx : o->ax;
}

static int create_sock(struct nfsl_xsk *x, struct nfsl_xsk_group *g,
		       struct nfsl_xsk_sock *s, char *err, size_t errlen)
{
	struct xsk_socket_config cfg = {
		.rx_size = x->o.bx,
		.tx_size = NFSL_XSK_TX_SIZE,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP,
	};
	/* The 2nd..Nth socket of a group shares the first one's fill and
	 * completion rings: libxdp leaves these untouched (docs/platform.md). */
	struct xsk_ring_prod unused_fill;
	struct xsk_ring_cons unused_comp;
	bool first = g->nsock == 0;
	int rc;

	s->g = g;
	pthread_mutex_init(&s->tx_lock, NULL);
	/* A queue freed by a socket that just closed can be busy for about a
	 * second (docs/platform.md): retry a few times. */
	for (int tries = 0;; tries++) {
		rc = xsk_socket__create_shared(&s->xsk, x->devname[g->dev], g->queue,
					       g->umem, &s->rx, &s->tx,
					       first ? &g->fill : &unused_fill,
					       first ? &g->comp : &unused_comp, &cfg);
		if (rc != -EBUSY || tries >= 20)
			break;
		usleep(100 * 1000);
	}
	if (rc)
		return nfsl_errf(err, errlen, rc, "cannot bind an AF_XDP socket to %s queue %u: %s%s",
			    x->devname[g->dev], g->queue, strerror(-rc),
			    rc == -EBUSY ? " (another AF_XDP socket holds the queue)" : "");
	s->fd = xsk_socket__fd(s->xsk);
	g->socks[g->nsock++] = s;
	return 0;
}

static int create_group(struct nfsl_xsk *x, struct nfsl_xsk_group *g, char *err,
			size_t errlen)
{
	struct xsk_umem_config ucfg = {
		.fill_size = fill_size(&x->o),
		.frame_size = NFSL_XSK_FRAME,
	};
	int nsock = x->o.rx == NFSL_XSK_RXBISECT ? x->nworkers : 1;
	int rc;

	/* Completions of every socket of the group land in one ring. */
	ucfg.comp_size = roundup_pow2(nsock * NFSL_XSK_TX_SIZE);
	g->fill_size = ucfg.fill_size;
	g->comp_size = ucfg.comp_size;
	pthread_spin_init(&g->ring_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&g->rx_lock, PTHREAD_PROCESS_PRIVATE);
	rc = xsk_umem__create(&g->umem, x->area, x->area_len, &g->fill, &g->comp, &ucfg);
	if (rc)
		return nfsl_errf(err, errlen, rc, "cannot register the UMEM for %s queue %u: %s",
			    x->devname[g->dev], g->queue, strerror(-rc));
	if (x->o.rx == NFSL_XSK_SHRING) {
		/* Positions outstanding: at most the frames posted to the
		 * fill ring and not yet returned (fill_size). */
		rc = nfsl_xsk_rxarr_init(&g->rxarr, g->fill_size);
		if (rc)
			return nfsl_errf(err, errlen, rc, "cannot allocate the RxArr bitmap");
		for (int w = 0; w < x->nworkers; w++) {
			size_t sz = sizeof(*g->cr[w]) + g->fill_size * sizeof(g->cr[w]->e[0]);

			g->cr[w] = aligned_alloc(64, (sz + 63) & ~(size_t)63);
			if (!g->cr[w])
				return nfsl_errf(err, errlen, -ENOMEM, "out of memory");
			memset(g->cr[w], 0, sz);
			g->cr[w]->mask = g->fill_size - 1;
		}
	}
	return 0;
}

/* Frames the rings can hold at once, plus the workers' caches. */
static __u32 frames_needed(const struct nfsl_xsk *x, int nsocks)
{
	__u64 n = 0;

	for (int i = 0; i < x->ngroups; i++)
		n += x->groups[i].fill_size;
	n += (__u64)nsocks * (x->o.bx + NFSL_XSK_TX_SIZE);
	n += (__u64)x->nworkers * (NFSL_XSK_CACHE * 2 + NFSL_XSK_BURST);
	return n > (1u << 22) ? (1u << 22) : (__u32)n;
}

/* Assign sockets to workers, per architecture:
 *   privring, smallpriv: group q of each device belongs to worker q % W;
 *   rxbisect: every group has one socket per worker;
 *   shring:   every group has one socket, every worker takes part. */
static int wire_workers(struct nfsl_xsk *x, char *err, size_t errlen)
{
	for (int gi = 0; gi < x->ngroups; gi++) {
		struct nfsl_xsk_group *g = &x->groups[gi];

		for (int k = 0; k < g->nsock; k++) {
			struct nfsl_xsk_sock *s = g->socks[k];
			int wid = x->o.rx == NFSL_XSK_RXBISECT ? k
				  : (int)(g->queue % x->nworkers);
			struct nfsl_xsk_worker *w = &x->workers[wid];

			if (x->o.rx == NFSL_XSK_SHRING) {
				s->tx_shared = true;
				for (int i = 0; i < x->nworkers; i++) {
					struct nfsl_xsk_worker *v = &x->workers[i];

					if (v->nshg >= NFSL_XSK_MAX_SOCKS_W)
						return nfsl_errf(err, errlen, -E2BIG, "too many queues");
					v->shg[v->nshg++] = g;
					v->pfd[v->npfd++] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
					if (!v->txs[g->dev])
						v->txs[g->dev] = s;
				}
				continue;
			}
			if (w->nrx >= NFSL_XSK_MAX_SOCKS_W)
				return nfsl_errf(err, errlen, -E2BIG, "too many queues for worker %d", wid);
			w->rxs[w->nrx++] = s;
			w->pfd[w->npfd++] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
			if (!w->txs[g->dev])
				w->txs[g->dev] = s;
		}
	}
	return 0;
}

static int check_opts(struct nfsl_xsk *x, char *err, size_t errlen)
{
	struct nfsl_xsk_opts *o = &x->o;

	if (o->ndevs < 1 || o->ndevs > NFSL_XSK_MAX_DEVS)
		return nfsl_errf(err, errlen, -EINVAL, "give one or two interfaces (--dev IFACE[,IFACE])");
	if (o->workers < 1 || o->workers > NFSL_XSK_MAX_WORKERS)
		return nfsl_errf(err, errlen, -EINVAL, "workers must be 1..%d", NFSL_XSK_MAX_WORKERS);
	if (!o->ax)
		o->ax = NFSL_XSK_DEF_AX;
	if (!o->bx)
		o->bx = NFSL_XSK_DEF_BX;
	if (!pow2(o->ax) || !pow2(o->bx) || o->ax < 64 || o->bx < 64 || o->ax > 65536 ||
	    o->bx > 65536)
		return nfsl_errf(err, errlen, -EINVAL,
			    "ring sizes must be powers of two in 64..65536 (--ax %u --bx %u)",
			    o->ax, o->bx);
	if (!o->wset_ns)
		o->wset_ns = 100 * 1000 * 1000ull;
	for (int d = 0; d < o->ndevs; d++) {
		int rc;

		if (strlen(o->devs[d]) >= IF_NAMESIZE || !(x->ifindex[d] = if_nametoindex(o->devs[d])))
			return nfsl_errf(err, errlen, -ENODEV,
				    "no interface %s in this network namespace: see ip link, or run "
				    "nfslice-nf where it is (ip netns exec NS nfslice-nf ...)",
				    o->devs[d]);
		snprintf(x->devname[d], IF_NAMESIZE, "%s", o->devs[d]);
		rc = dev_info(o->devs[d], &x->nqueues[d], &x->mtu[d]);
		if (rc)
			return nfsl_errf(err, errlen, rc, "cannot read %s: %s", o->devs[d], strerror(-rc));
		if ((o->rx == NFSL_XSK_PRIVRING || o->rx == NFSL_XSK_SMALLPRIV) &&
		    x->nqueues[d] < (__u32)o->workers)
			return nfsl_errf(err, errlen, -EINVAL,
				    "--rx %s gives each worker its own RX queue, but %s has %u for %d workers: "
				    "create it with numrxqueues %d or more, or use --rx rxbisect or shring",
				    nfsl_xsk_rx_name(o->rx), o->devs[d], x->nqueues[d], o->workers,
				    o->workers);
	}
	if (o->ndevs == 2 && x->ifindex[0] == x->ifindex[1])
		return nfsl_errf(err, errlen, -EINVAL, "the two interfaces are the same (%s)", o->devs[0]);
	return 0;
}

/*
 * A sliced header waiting in an RX ring keeps its payload parked; a CPU's
 * part of the store lets expiry x part_slots slices pass before it evicts
 * one (docs/format.md "Store"). Rings that can hold more headers than that
 * turn them stale under overload: say so, with the fix.
 */
static void store_warn(const struct nfsl_xsk *x, int nsocks)
{
	const struct nfsl_config *c = &x->store.cfg;
	__u64 held = (__u64)nsocks * x->o.bx, lasts = (__u64)c->part_slots * c->expiry;

	/* stderr, not nfsl_msg: under --json that collects errors for the
	 * closing object, and this is only a warning */
	if (held > lasts)
		fprintf(stderr,
			"nfsl_xsk: warning: the RX rings hold up to %llu headers, but domain %s "
			"evicts a payload after %llu slices on its CPU (%u slots per partition x "
			"expiry %u): under overload headers turn stale; attach it with more "
			"--slots (or give --bx a smaller ring)\n",
			(unsigned long long)held, x->o.domain, (unsigned long long)lasts,
			c->part_slots, c->expiry);
}

/* Open step 2: one group per (interface, RX queue), and the sockets they
 * need (*@nsocks). Returns 0 or -errno with a message. */
static int groups_plan(struct nfsl_xsk *x, int *nsocks, char *err, size_t errlen)
{
	for (int d = 0; d < x->ndevs; d++)
		x->ngroups += x->nqueues[d];
	x->groups = calloc(x->ngroups, sizeof(*x->groups));
	x->workers = calloc(x->nworkers, sizeof(*x->workers));
	if (!x->groups || !x->workers)
		return nfsl_errf(err, errlen, -ENOMEM, "out of memory");
	*nsocks = 0;
	for (int d = 0, gi = 0; d < x->ndevs; d++) {
		for (__u32 q = 0; q < x->nqueues[d]; q++, gi++) {
			x->groups[gi].dev = d;
			x->groups[gi].ifindex = x->ifindex[d];
			x->groups[gi].queue = q;
			x->groups[gi].fill_size = fill_size(&x->o);
			*nsocks += x->o.rx == NFSL_XSK_RXBISECT ? x->nworkers : 1;
		}
	}
	if (*nsocks > NFSL_XSK_MAX_SOCKS)
		return nfsl_errf(err, errlen, -E2BIG, "%d sockets needed, at most %d", *nsocks,
				 NFSL_XSK_MAX_SOCKS);
	return 0;
}

/* Open step 3: one area for every frame of the NF, the pool that hands
 * them out, the working-set tracker and each worker's frame cache. */
static int area_open(struct nfsl_xsk *x, int nsocks, char *err, size_t errlen)
{
	int rc;

	x->nframes = x->o.frames ? x->o.frames : frames_needed(x, nsocks);
	x->area_len = (size_t)x->nframes * NFSL_XSK_FRAME;
	x->area = mmap(NULL, x->area_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (x->area == MAP_FAILED) {
		x->area = NULL;
		return nfsl_errf(err, errlen, -errno, "cannot map %zu bytes of UMEM: %s",
				 x->area_len, strerror(errno));
	}
	rc = nfsl_xsk_pool_init(&x->pool, x->nframes);
	if (!rc)
		rc = nfsl_xsk_pool_seed(&x->pool, 0, x->nframes, NFSL_XSK_FRAME);
	if (rc)
		return nfsl_errf(err, errlen, rc, "cannot allocate the frame pool");
	rc = nfsl_xsk_wset_init(&x->wset, x->nworkers, x->nframes, NFSL_XSK_FRAME, x->o.wset_ns,
				nfsl_now_ns());
	if (rc)
		return nfsl_errf(err, errlen, rc, "cannot allocate the working-set tracker");
	for (int i = 0; i < x->nworkers; i++) {
		x->workers[i].x = x;
		x->workers[i].id = i;
		x->workers[i].efd = -1;
		x->workers[i].ws = nfsl_xsk_wset_worker(&x->wset, i);
		rc = nfsl_xsk_cache_init(&x->workers[i].cache, &x->pool, NFSL_XSK_CACHE);
		if (rc)
			return nfsl_errf(err, errlen, rc, "cannot allocate a frame cache");
	}
	return 0;
}

/* Open step 4 (inline): map the domain's store, for the splice. */
static int store_attach(struct nfsl_xsk *x, char *err, size_t errlen)
{
	const char *name = x->o.domain;
	struct nfsl_domain d;
	int rc;

	rc = nfsl_domain_open(&d, name);
	if (rc)
		return nfsl_errf(err, errlen, rc,
				 rc == -ENOENT ? "no domain %s in this network namespace (nfslice attach --name %s ...)"
					       : "cannot open domain %s: %s",
				 name, rc == -ENOENT ? name : strerror(-rc));
	rc = nfsl_xsk_store_open(&x->store, &d);
	nfsl_domain_close(&d);
	if (rc)
		return nfsl_errf(err, errlen, rc, "cannot map the store of domain %s: %s", name,
				 strerror(-rc));
	x->inline_splice = true;
	return 0;
}

/* Open step 5: each group's UMEM and rings, and its sockets. */
static int sockets_open(struct nfsl_xsk *x, int nsocks, char *err, size_t errlen)
{
	int rc;

	x->socks = calloc(nsocks, sizeof(*x->socks));
	if (!x->socks)
		return nfsl_errf(err, errlen, -ENOMEM, "out of memory");
	for (int gi = 0; gi < x->ngroups; gi++) {
		struct nfsl_xsk_group *g = &x->groups[gi];
		int n = x->o.rx == NFSL_XSK_RXBISECT ? x->nworkers : 1;

		rc = create_group(x, g, err, errlen);
		if (rc)
			return rc;
		for (int k = 0; k < n; k++) {
			struct nfsl_xsk_sock *s = &x->socks[x->nsocks];

			s->key = x->nsocks;
			rc = create_sock(x, g, s, err, errlen);
			if (rc)
				return rc;
			x->nsocks++;
		}
	}
	return 0;
}

/* Open step 6 (shring): the eventfd a dispatcher wakes each worker with,
 * polled last. */
static int workers_wake(struct nfsl_xsk *x, char *err, size_t errlen)
{
	for (int i = 0; x->o.rx == NFSL_XSK_SHRING && i < x->nworkers; i++) {
		struct nfsl_xsk_worker *w = &x->workers[i];

		w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (w->efd < 0 || w->npfd >= NFSL_XSK_MAX_SOCKS_W)
			return nfsl_errf(err, errlen, w->efd < 0 ? -errno : -E2BIG,
					 "cannot create a worker's eventfd");
		/* last entry: nfsl_xsk_worker_wait reads it when it fires */
		w->pfd[w->npfd++] = (struct pollfd){ .fd = w->efd, .events = POLLIN };
	}
	return 0;
}

/* Open step 7: give the kernel its buffers before the first frame is
 * steered, each fill ring from the worker that will own it. */
static void fill_first(struct nfsl_xsk *x)
{
	for (int gi = 0; gi < x->ngroups; gi++) {
		struct nfsl_xsk_group *g = &x->groups[gi];
		int owner = g->socks[0] && x->o.rx != NFSL_XSK_RXBISECT &&
					    x->o.rx != NFSL_XSK_SHRING
				    ? (int)(g->queue % x->nworkers)
				    : 0;

		nfsl_xsk_fill_refill(&x->workers[owner], g);
	}
}

int nfsl_xsk_open(const struct nfsl_xsk_opts *o, struct nfsl_xsk **out, char *err,
		  size_t errlen)
{
	struct nfsl_xsk *x;
	int rc, nsocks = 0;

	x = calloc(1, sizeof(*x));
	if (!x)
		return nfsl_errf(err, errlen, -ENOMEM, "out of memory");
	x->o = *o;
	x->chain_fd = -1;
	for (int i = 0; i < NFSL_XSK_MAX_DEVS; i++)
		x->steer_link[i] = -1;
	x->ndevs = o->ndevs;
	x->nworkers = o->workers;
	/* each step returns 0 or -errno with its message in @err */
	rc = check_opts(x, err, errlen);
	if (!rc)
		rc = groups_plan(x, &nsocks, err, errlen);
	if (!rc)
		rc = area_open(x, nsocks, err, errlen);
	if (!rc && o->domain)
		rc = store_attach(x, err, errlen);
	if (!rc)
		rc = sockets_open(x, nsocks, err, errlen);
	if (!rc)
		rc = wire_workers(x, err, errlen);
	if (!rc)
		rc = workers_wake(x, err, errlen);
	if (!rc) {
		fill_first(x);
		rc = nfsl_xsk_steer_start(x, err, errlen);
	}
	if (rc) {
		nfsl_xsk_close(x);
		return rc;
	}
	if (x->inline_splice)
		store_warn(x, nsocks);
	*out = x;
	return 0;
}

void nfsl_xsk_stop_steering(struct nfsl_xsk *x)
{
	if (x && x->steering)
		nfsl_xsk_steer_stop(x);
}

void nfsl_xsk_close(struct nfsl_xsk *x)
{
	if (!x)
		return;
	nfsl_xsk_stop_steering(x);
	nfsl_xsk_steer_close(x);
	/* Headers the NF still holds (RX rings, shring dispatch rings) must
	 * not keep their payloads parked until expiry. */
	if (x->inline_splice) {
		for (int i = 0; i < x->nsocks; i++) {
			struct nfsl_xsk_sock *s = &x->socks[i];
			__u32 idx, n;

			if (!s->xsk)
				continue;
			n = xsk_ring_cons__peek(&s->rx, x->o.bx, &idx);
			for (__u32 k = 0; k < n; k++) {
				const struct xdp_desc *d = xsk_ring_cons__rx_desc(&s->rx, idx + k);

				nfsl_xsk_release(&x->store, x->area + d->addr, d->len);
			}
			xsk_ring_cons__release(&s->rx, n);
		}
		for (int gi = 0; gi < x->ngroups; gi++) {
			for (int w = 0; w < x->nworkers; w++) {
				struct nfsl_xsk_cr *cr = x->groups[gi].cr[w];

				if (!cr)
					continue;
				for (unsigned int c = cr->cons; c != cr->prod; c++) {
					struct nfsl_xsk_cr_ent *e = &cr->e[c & cr->mask];

					nfsl_xsk_release(&x->store, x->area + e->addr, e->len);
				}
			}
		}
		nfsl_xsk_store_close(&x->store);
	}
	for (int i = 0; i < x->nsocks; i++)
		if (x->socks[i].xsk)
			xsk_socket__delete(x->socks[i].xsk);
	for (int gi = 0; gi < x->ngroups; gi++) {
		struct nfsl_xsk_group *g = &x->groups[gi];

		if (g->umem)
			xsk_umem__delete(g->umem);
		if (x->o.rx == NFSL_XSK_SHRING) {
			nfsl_xsk_rxarr_fini(&g->rxarr);
			for (int w = 0; w < x->nworkers; w++)
				free(g->cr[w]);
		}
	}
	for (int i = 0; x->workers && i < x->nworkers; i++) {
		if (!x->workers[i].x)
			continue;
		nfsl_xsk_cache_fini(&x->workers[i].cache);
		if (x->workers[i].efd >= 0)
			close(x->workers[i].efd);
	}
	if (x->wset.w)
		nfsl_xsk_wset_fini(&x->wset);
	if (x->pool.s)
		nfsl_xsk_pool_fini(&x->pool);
	if (x->area)
		munmap(x->area, x->area_len);
	free(x->socks);
	free(x->groups);
	free(x->workers);
	free(x);
}

struct nfsl_xsk_worker *nfsl_xsk_worker(struct nfsl_xsk *x, int i)
{
	return i >= 0 && i < x->nworkers ? &x->workers[i] : NULL;
}

int nfsl_xsk_nworkers(const struct nfsl_xsk *x)
{
	return x->nworkers;
}

__u8 *nfsl_xsk_area(const struct nfsl_xsk *x)
{
	return x->area;
}

const struct nfsl_xsk_wstats *nfsl_xsk_worker_stats(const struct nfsl_xsk_worker *w)
{
	return &w->st;
}

int nfsl_xsk_worker_wait(struct nfsl_xsk_worker *w, int timeout_ms)
{
	int rc;

	/* shring: frames may wait in this worker's dispatch ring (another
	 * worker dispatched them and wakes us through efd), or in the shared
	 * RX ring for whoever dispatches next. */
	for (int i = 0; i < w->nshg; i++) {
		struct nfsl_xsk_cr *cr = w->shg[i]->cr[w->id];

		if (atomic_load_explicit(&cr->prod, memory_order_acquire) != cr->cons)
			return 1;
	}
	rc = poll(w->pfd, w->npfd, timeout_ms);
	if (rc > 0 && w->efd >= 0 && (w->pfd[w->npfd - 1].revents & POLLIN)) {
		__u64 v;

		if (read(w->efd, &v, sizeof(v)) < 0)
			return rc;
	}
	return rc;
}

/* rx_fill_ring_empty_descs counts per fill ring (per group), the others
 * per socket: @pool_wide says whether to take it from this socket. */
static void kstats_add(struct nfsl_xsk_kstats *ks, int fd, bool pool_wide)
{
	struct xdp_statistics st = {};
	socklen_t len = sizeof(st);

	if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &st, &len))
		return;
	ks->rx_dropped += st.rx_dropped;
	ks->rx_invalid += st.rx_invalid_descs;
	ks->tx_invalid += st.tx_invalid_descs;
	ks->rx_ring_full += st.rx_ring_full;
	if (pool_wide)
		ks->rx_fill_empty += st.rx_fill_ring_empty_descs;
	ks->tx_ring_empty += st.tx_ring_empty_descs;
}

void nfsl_xsk_snapshot(struct nfsl_xsk *x, struct nfsl_xsk_wset_snap *ws,
		       struct nfsl_xsk_kstats *ks)
{
	__u64 free_frames = nfsl_xsk_pool_count(&x->pool);

	memset(ws, 0, sizeof(*ws));
	memset(ks, 0, sizeof(*ks));
	for (int gi = 0; gi < x->ngroups; gi++) {
		struct nfsl_xsk_group *g = &x->groups[gi];

		/* fill.producer is ours, fill.consumer the kernel's. */
		ws->posted += __atomic_load_n(g->fill.producer, __ATOMIC_RELAXED) -
			      __atomic_load_n(g->fill.consumer, __ATOMIC_RELAXED);
	}
	for (int gi = 0; gi < x->ngroups; gi++) {
		for (int k = 0; k < x->groups[gi].nsock; k++)
			kstats_add(ks, x->groups[gi].socks[k]->fd, k == 0);
	}
	for (int i = 0; i < x->nworkers; i++)
		free_frames += nfsl_xsk_cache_count(&x->workers[i].cache);
	ws->pool = x->nframes;
	ws->inflight = free_frames > x->nframes ? 0 : x->nframes - free_frames;
	nfsl_xsk_wset_tick(&x->wset, nfsl_now_ns());
	ws->written = nfsl_xsk_wset_last(&x->wset, &ws->window_ns);
	for (int d = 0; d < x->ndevs; d++) {
		__u32 nq, mtu;

		/* The MTU the splice checks against follows the device. */
		if (!dev_info(x->devname[d], &nq, &mtu))
			__atomic_store_n(&x->mtu[d], mtu, __ATOMIC_RELAXED);
	}
}

__u32 nfsl_xsk_frame_orig_len(struct nfsl_xsk *x, struct nfsl_xsk_desc *d)
{
	return nfsl_xsk_orig_len_tok(x->inline_splice ? &x->store : NULL, x->area + d->addr,
				     d->len, &d->tok);
}
