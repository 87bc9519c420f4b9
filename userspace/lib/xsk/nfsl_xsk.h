/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nfsl_xsk: the AF_XDP datapath of user-space NFs (docs/xsk.md).
 *
 * One memory area holds every frame of the NF (the UMEM); every (interface,
 * RX queue) served is a group with its own libxdp xsk_umem over that same
 * area (libxdp 1.3.1 lets only the first (interface, queue) of one xsk_umem
 * take more than one socket: docs/platform.md), its fill and completion
 * ring, and 1..n sockets. A frame's address is its offset in the area, the
 * same in every group, so a frame received on one interface can be sent
 * from another and comes back to one shared pool (nfsl_xsk_pool.h).
 *
 * Receive architectures (--rx), Pismenny's thesis:
 *   privring   one socket per queue, its fill ring as deep as its RX ring
 *              (Bx): each worker's buffers are its own (§4.1's baseline);
 *   smallpriv  the same with a fill ring of Ax entries (the small-ring
 *              yardstick of §6.3);
 *   shring     one socket per queue whose RX ring all workers share; frames
 *              are dispatched to workers by flow and go back to the fill
 *              ring only in reception order (RxArr, §5.1.3, Listing 5.1),
 *              so a stalled worker blocks everyone's refill: the
 *              head-of-line pathology of §5.1.5;
 *   rxbisect   one socket per worker bound to every queue: the queue's
 *              fill ring is the shared allocation ring Ax (Ax entries), the
 *              workers' RX rings the bisected reception rings Bx (Bx
 *              entries), steered per flow by bpf/steer.bpf.c (§6.1). The
 *              fill and completion rings are served by whichever worker
 *              gets their trylock; freed frames go to a two-level
 *              allocator (§6.1.2).
 *
 * Inline deployment (a domain given): the steering program is chained
 * after the domain's slicer, the NF gets sliced headers, and every frame
 * sent is spliced first from the store (nfsl_xsk_splice.h), since AF_XDP
 * transmit bypasses tc egress where the splicer runs (NFSlicer §IV's NIC
 * emulation).
 *
 * Threads: nfsl_xsk_open/close from one thread; each worker's burst
 * functions from that worker's thread only; nfsl_xsk_snapshot from any.
 */
#ifndef NFSL_XSK_H
#define NFSL_XSK_H

#include <pthread.h>
#include <stdbool.h>
#include <xdp/xsk.h>

#include "nfsl_steer.h"
#include "xsk/nfsl_xsk_pool.h"
#include "xsk/nfsl_xsk_rxarr.h"
#include "xsk/nfsl_xsk_wset.h"
#include "xsk/nfsl_xsk_splice.h"

#define NFSL_XSK_FRAME 2048u    /* bytes per UMEM frame */
#define NFSL_XSK_MAX_DEVS 2     /* interfaces of one NF */
#define NFSL_XSK_MAX_WORKERS 64
#define NFSL_XSK_BURST 64       /* frames per rx/tx burst */
#define NFSL_XSK_DEF_AX 256     /* fill ring (Ax) entries */
#define NFSL_XSK_DEF_BX 2048    /* RX ring (Bx) entries */

enum nfsl_xsk_rx {
	NFSL_XSK_PRIVRING,
	NFSL_XSK_SMALLPRIV,
	NFSL_XSK_SHRING,
	NFSL_XSK_RXBISECT,
};

/* Name of @rx ("privring", ...); nfsl_xsk_rx_parse: -EINVAL if unknown. */
const char *nfsl_xsk_rx_name(enum nfsl_xsk_rx rx);
int nfsl_xsk_rx_parse(const char *s, enum nfsl_xsk_rx *rx);

struct nfsl_xsk_opts {
	const char *devs[NFSL_XSK_MAX_DEVS]; /* interface names */
	int ndevs;
	int workers;         /* 1..NFSL_XSK_MAX_WORKERS */
	enum nfsl_xsk_rx rx;
	__u32 ax, bx;        /* ring entries, powers of two; 0: defaults */
	__u32 frames;        /* UMEM frames; 0: what the rings can hold */
	const char *domain;  /* inline: the slicing domain, or NULL */
	__u64 wset_ns;       /* working-set window; 0: 100 ms (§4.2) */
	/* Steer frames arriving on device port_dev - 1 (0: none) by
	 * destination port range from port_start (NFSL_STEER_DPORT: a NAT's
	 * WAN side); the others by flow. */
	int port_dev;
	__u16 port_start;
	/* Park (no domain here): a sliced header the NF drops goes back out
	 * of the device it came from as a drop notice (NFSL_ETH_P_NOTICE),
	 * so the slicing host frees its slot at once (PayloadPark §6.2.4). */
	bool drop_notice;
};

/* A frame handed to the NF. */
struct nfsl_xsk_desc {
	__u64 addr; /* offset in the area */
	__u32 len;  /* bytes */
	__u16 dev;  /* index into opts.devs it arrived on */
	__u16 out;  /* set by the NF for tx: device index */
	/* inline: the token check made on receive (nfsl_xsk_frame_orig_len),
	 * which tx and drop take instead of checking again; zero from rx */
	struct nfsl_xsk_tok tok;
};

/* Per-worker counters (frames). */
#define NFSL_XSK_WORKER_COUNTERS(X)                                            \
	X(rx)        /* frames received */                                     \
	X(tx)        /* frames sent */                                         \
	X(drops)     /* dropped by the NF */                                   \
	X(tx_full)   /* dropped: TX ring full */                               \
	X(spliced)   /* inline: payload put back before sending */             \
	X(stale)     /* inline: payload gone, header dropped */                \
	X(too_big)   /* inline: spliced frame above the MTU, dropped */        \
	X(no_room)   /* inline: frame too small for the payload, dropped */    \
	X(released)  /* inline: slot freed for a header the NF dropped */      \
	X(notices)   /* park: drop notices sent back for dropped headers */    \
	X(csum_done) /* L4 checksums completed (CHECKSUM_PARTIAL seeds) */    \
	X(refills)   /* fill ring refills this worker did */                   \
	X(fill_busy) /* fill ring held by another worker (rxbisect, shring) */ \
	X(fill_dry)  /* refills that found every posted frame taken */         \
	X(dry_wait_us) /* us since the refill before each fill_dry one */

struct nfsl_xsk_wstats {
#define NFSL_X_FIELD(name) __u64 name;
	NFSL_XSK_WORKER_COUNTERS(NFSL_X_FIELD)
#undef NFSL_X_FIELD
};

struct nfsl_xsk;
struct nfsl_xsk_worker;

/*
 * nfsl_xsk_open - set up the datapath described by @o: UMEM, groups,
 * sockets, steering (chained after the domain's slicer, or attached to the
 * interfaces), and the workers' state (no threads: the caller runs
 * nfsl_xsk_worker_rx/tx from its own). Returns 0 and *@out, or -errno with
 * a message in @err (@errlen bytes): -ENODEV unknown interface, -EINVAL
 * bad options (ring sizes not powers of two, more privring workers than
 * queues), -ENOENT domain not attached, -EEXIST another XDP program on an
 * interface outside a domain, -EBUSY a queue taken by another socket.
 */
int nfsl_xsk_open(const struct nfsl_xsk_opts *o, struct nfsl_xsk **out,
		  char *err, size_t errlen);

/*
 * nfsl_xsk_stop_steering - remove every socket from the XSKMAP (new frames
 * go to the kernel path from now on) and unhook the steering program.
 * First step of a clean shutdown; idempotent.
 */
void nfsl_xsk_stop_steering(struct nfsl_xsk *x);

/*
 * nfsl_xsk_close - free everything: sockets, UMEM, the steering program.
 * Call after the workers have stopped and drained (nfsl_xsk_worker_drain).
 * Frames still holding sliced headers have their slots freed first.
 */
void nfsl_xsk_close(struct nfsl_xsk *x);

struct nfsl_xsk_worker *nfsl_xsk_worker(struct nfsl_xsk *x, int i);
int nfsl_xsk_nworkers(const struct nfsl_xsk *x);
/* Start of the area: frame @addr is at nfsl_xsk_area(x) + addr. */
__u8 *nfsl_xsk_area(const struct nfsl_xsk *x);

/*
 * nfsl_xsk_worker_wait - sleep in poll() until one of the worker's RX
 * rings has frames or @timeout_ms passes (never spin: docs/xsk.md
 * "Fairness"). Returns > 0 when there may be frames, 0 on timeout.
 */
int nfsl_xsk_worker_wait(struct nfsl_xsk_worker *w, int timeout_ms);

/*
 * nfsl_xsk_worker_rx - receive up to @max frames into @d (the rx burst of
 * the configured architecture; it also serves the fill and completion
 * rings when this worker holds them). Returns the number of frames.
 */
unsigned int nfsl_xsk_worker_rx(struct nfsl_xsk_worker *w,
				struct nfsl_xsk_desc *d, unsigned int max);

/*
 * nfsl_xsk_worker_tx - send the @n frames of @d on their d[i].out
 * interface (inline: each spliced first; one whose payload is gone is
 * dropped and counted). Frames that cannot be sent are freed. Returns the
 * number queued for transmission.
 */
unsigned int nfsl_xsk_worker_tx(struct nfsl_xsk_worker *w,
				struct nfsl_xsk_desc *d, unsigned int n);

/*
 * nfsl_xsk_worker_drop - the NF dropped these @n frames: free them
 * (inline: a sliced header's slot is freed at once, counted released;
 * park with drop_notice: a sliced header goes back as a drop notice).
 */
void nfsl_xsk_worker_drop(struct nfsl_xsk_worker *w,
			  const struct nfsl_xsk_desc *d, unsigned int n);

/*
 * nfsl_xsk_worker_drain - after nfsl_xsk_stop_steering: wait (up to
 * @timeout_ms) for this worker's transmissions to complete. Returns the
 * frames still outstanding (0: drained).
 */
unsigned int nfsl_xsk_worker_drain(struct nfsl_xsk_worker *w, int timeout_ms);

const struct nfsl_xsk_wstats *nfsl_xsk_worker_stats(const struct nfsl_xsk_worker *w);

/* I/O working set (thesis §4.2), frames. */
struct nfsl_xsk_wset_snap {
	__u64 posted;    /* in fill rings (given to the kernel) */
	__u64 inflight;  /* posted + in RX rings + in the NF or TX */
	__u64 written;   /* distinct frames received in the last window */
	__u64 pool;      /* frames of the UMEM */
	__u64 window_ns; /* the window */
};

/* Kernel counters of one socket (XDP_STATISTICS), summed over sockets. */
struct nfsl_xsk_kstats {
	__u64 rx_dropped, rx_invalid, tx_invalid, rx_ring_full,
		rx_fill_empty, tx_ring_empty;
};

/*
 * nfsl_xsk_snapshot - working set and kernel counters now. Also rolls the
 * working-set window when it is due (call it at least every window).
 */
void nfsl_xsk_snapshot(struct nfsl_xsk *x, struct nfsl_xsk_wset_snap *ws,
		       struct nfsl_xsk_kstats *ks);

/*
 * nfsl_xsk_frame_orig_len - nfsl_xsk_orig_len() of the frame @d on the
 * NF's store (inline), or the frame's own IP length without a domain,
 * bytes. Inline, the token check it makes is kept in @d->tok, so that
 * nfsl_xsk_worker_tx and nfsl_xsk_worker_drop of @d do not verify the
 * token again (one check per packet, issue 18 item 6). @x is not const:
 * a token under neither key may refresh the store's copy of the keys.
 */
__u32 nfsl_xsk_frame_orig_len(struct nfsl_xsk *x, struct nfsl_xsk_desc *d);

/* The steering program's counters, summed over CPUs. Returns 0 or -errno. */
int nfsl_xsk_steer_stats(const struct nfsl_xsk *x, struct nfsl_steer_counters *out);

#endif /* NFSL_XSK_H */
