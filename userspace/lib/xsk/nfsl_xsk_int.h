/* SPDX-License-Identifier: GPL-2.0 */
/* nfsl_xsk internals shared by userspace/lib/xsk/xsk.c, steer.c, rx.c and tx.c. */
#ifndef NFSL_XSK_INT_H
#define NFSL_XSK_INT_H

#include <net/if.h>
#include <poll.h>
#include <stdatomic.h>
#include <time.h>

#include "xsk/nfsl_xsk.h"
#include "util/util.h"

#define NFSL_XSK_TX_SIZE 512u   /* TX ring entries per socket */
#define NFSL_XSK_CACHE 256u     /* per-worker frame cache target (2-level pool) */
#define NFSL_XSK_MAX_SOCKS_W 64 /* sockets one worker receives from */

struct nfsl_xsk_group;

struct nfsl_xsk_sock {
	struct xsk_socket *xsk;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	struct nfsl_xsk_group *g;
	__u32 key;  /* XSKMAP key */
	int fd;
	bool tx_shared;             /* shring: all workers send here */
	pthread_mutex_t tx_lock; /* taken only when tx_shared; a mutex, since
				  * the kick (a sendto) runs under it */
};

/* shring: frames the dispatcher handed to one worker (the thesis' per-core
 * completion ring). One producer at a time (under the group's rx_lock),
 * one consumer (the worker). */
struct nfsl_xsk_cr_ent {
	__u64 addr;
	__u32 len;
	__u32 pos; /* reception position in the shared ring (RxArr) */
};

struct nfsl_xsk_cr {
	_Alignas(64) atomic_uint prod;
	_Alignas(64) atomic_uint cons;
	__u32 mask;             /* entries - 1: as many as the fill ring */
	struct nfsl_xsk_cr_ent e[];
};

/* One (interface, RX queue): its xsk_umem over the shared area, fill (Ax)
 * and completion rings, and its sockets. */
struct nfsl_xsk_group {
	int dev;
	__u32 ifindex, queue;
	struct xsk_umem *umem;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	__u32 fill_size, comp_size;
	atomic_uint tx_pending; /* sent by its sockets, not yet completed */
	__u32 fill_owed;        /* shring: returned positions not yet posted */
	atomic_int return_req;  /* shring: a worker asks the ring's holder
				 * to return done positions (sh_return) */
	/* Owner of fill and completion rings: trylock per burst (rxbisect,
	 * shring), uncontended for privring (one worker per group). */
	pthread_spinlock_t ring_lock;
	__u64 last_fill_ns;     /* last fill_post (fill ring owner only) */
	int nsock;
	struct nfsl_xsk_sock *socks[NFSL_XSK_MAX_WORKERS];
	/* shring */
	pthread_spinlock_t rx_lock; /* the shared RX ring's consumer */
	struct nfsl_xsk_rxarr rxarr;
	__u32 rx_seq;               /* next reception position */
	struct nfsl_xsk_cr *cr[NFSL_XSK_MAX_WORKERS];
};

struct nfsl_xsk_worker {
	struct nfsl_xsk *x;
	int id;
	struct nfsl_xsk_cache cache;
	int nrx;
	struct nfsl_xsk_sock *rxs[NFSL_XSK_MAX_SOCKS_W]; /* sockets it receives from */
	int nshg;
	struct nfsl_xsk_group *shg[NFSL_XSK_MAX_SOCKS_W]; /* shring groups */
	struct nfsl_xsk_sock *txs[NFSL_XSK_MAX_DEVS]; /* where it sends, per device */
	int npfd;
	struct pollfd pfd[NFSL_XSK_MAX_SOCKS_W];
	unsigned int rr; /* first socket of the next burst */
	int efd;         /* shring: eventfd the dispatcher wakes it with */
	struct nfsl_xsk_wset_worker *ws;
	struct nfsl_xsk_wstats st;
};

struct nfsl_xsk {
	struct nfsl_xsk_opts o;
	int ndevs;
	char devname[NFSL_XSK_MAX_DEVS][IF_NAMESIZE];
	__u32 ifindex[NFSL_XSK_MAX_DEVS];
	__u32 nqueues[NFSL_XSK_MAX_DEVS];
	__u32 mtu[NFSL_XSK_MAX_DEVS];
	/* the UMEM area */
	__u8 *area;
	size_t area_len;
	__u32 nframes;
	struct nfsl_xsk_pool pool;
	int ngroups;
	struct nfsl_xsk_group *groups;
	int nsocks;
	struct nfsl_xsk_sock *socks;
	int nworkers;
	struct nfsl_xsk_worker *workers;
	struct nfsl_xsk_wset wset;
	/* steering */
	struct steer_bpf *steer;
	int chain_fd;          /* domain's chain map, or -1 */
	int steer_link[NFSL_XSK_MAX_DEVS]; /* no domain: the bpf_link fd
				* attaching it to each interface, owned by this
				* process (the kernel detaches it when the
				* process dies, SIGKILL included), or -1 */
	bool steer_attached;   /* attached to the interfaces (no domain) */
	bool steering;
	/* inline */
	bool inline_splice;
	struct nfsl_xsk_store store;
};

/* steer.c */
int nfsl_xsk_steer_start(struct nfsl_xsk *x, char *err, size_t errlen);
void nfsl_xsk_steer_stop(struct nfsl_xsk *x);
void nfsl_xsk_steer_close(struct nfsl_xsk *x);

/* rx.c / tx.c */
void nfsl_xsk_fill_refill(struct nfsl_xsk_worker *w, struct nfsl_xsk_group *g);
void nfsl_xsk_comp_drain(struct nfsl_xsk_worker *w, struct nfsl_xsk_group *g);
void nfsl_xsk_frames_free(struct nfsl_xsk_worker *w, const __u64 *addr, unsigned int n);

#endif /* NFSL_XSK_INT_H */
