/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inline splicing on the AF_XDP transmit path. AF_XDP transmit bypasses tc
 * egress, where the splicer runs, so an NF on AF_XDP sockets of the slicing
 * host puts the parked payloads back itself, in user space, from a
 * read-write mmap of the domain's store (BPF_F_MMAPABLE). It uses the
 * splice codec of the tc splicer (include/nfsl_splice.h) and keeps its
 * invariants (docs/format.md "Token"): a token is recognised by its MAC
 * whatever the DSCP, a header whose payload is gone is dropped, never sent
 * truncated, and a payload copied while its slot was evicted is dropped
 * (the slot is freed by compare-and-swap, seqlock style).
 *
 * Sources: NFSlicer §III-B "splice operation", PayloadPark §3.3 "Merge" /
 * Alg. 2 and §6.2.4 (explicit drop), RFC 1624 (incremental checksum).
 *
 * Threads: any number of threads may splice and release on one store at
 * once (and the datapath's slicers and splicers with them); open and close
 * from one.
 */
#ifndef NFSL_XSK_SPLICE_H
#define NFSL_XSK_SPLICE_H

#include <stddef.h>
#include "nfsl_structs.h"

struct nfsl_domain;

/* A domain's store as the AF_XDP engine sees it. */
struct nfsl_xsk_store {
	struct nfsl_slot *slots; /* the mapped store, read-write */
	__u32 nslots;            /* its max_entries: tokens naming a slot
				  * beyond are stale, as in the tc splicer */
	size_t map_len;          /* bytes mapped */
	struct nfsl_config cfg;  /* the domain's config (the keys): from the
				  * open, re-read from cfg_fd when a token
				  * verifies under neither key and the
				  * configuration changed (nfsl_xsk_cfg_refresh) */
	unsigned int cfg_seq;    /* seqcount of cfg's keys and flags: odd
				  * while a refresh writes them */
	int cfg_lock;            /* a refresh in progress (one writer) */
	int cfg_fd;              /* the config map, our own fd; -1: none */
	int fd;                  /* the store map, our own fd */
	const struct nfsl_config *cfg_map; /* the config map mapped read-only
				  * (BPF_F_MMAPABLE), for its cfg_gen without a
				  * system call; NULL: not mmapable (a domain
				  * attached by an older nfslice) */
	size_t cfg_map_len;      /* bytes mapped at cfg_map */
	__u32 cfg_gen;           /* the cfg_gen our cfg was read at */
	__u64 cfg_next_ns;       /* without cfg_map: no re-read before this
				  * CLOCK_MONOTONIC time (one per ms) */
	unsigned long rereads;   /* config re-reads (bpf(2) lookups) done */
	/* The domain's retired keys (userspace/lib/nfsl/retired.h), mapped read-only:
	 * a token under one of them is stale. NULL: the domain has none. */
	const struct nfsl_retired *retired;
};

/* Without an mmap of the config: at most one re-read per this many ns. */
#define NFSL_XSK_REREAD_NS 1000000ull

/* What nfsl_xsk_splice did with a frame. All but NOT_SLICED and SPLICED
 * mean: drop the frame. */
enum nfsl_xsk_splice_res {
	/* no token of ours: frame untouched, send it */
	NFSL_XSK_SPLICE_NOT_SLICED,
	/* payload put back, slot freed: send it */
	NFSL_XSK_SPLICE_SPLICED,
	/* token ours, payload gone (evicted, freed, or evicted while being
	 * copied): drop; the slot is left alone (someone else's now) */
	NFSL_XSK_SPLICE_STALE,
	/* spliced IP packet above @mtu: frame untouched, slot freed, drop */
	NFSL_XSK_SPLICE_TOO_BIG,
	/* spliced frame longer than @room: frame untouched, slot freed, drop */
	NFSL_XSK_SPLICE_NO_ROOM,
	/* *@len > @room: nothing done, drop. (Also headers the rewrite
	 * cannot reach, which a frame that parsed never has: slot freed.) */
	NFSL_XSK_SPLICE_BAD,
};

/*
 * One token check, carried with the frame from receive to transmit or drop
 * (issue 18 item 6): the token as verified under the store's keys, where
 * it was, and the keys' seqcount then. The splice and the release take it
 * instead of the MAC while the frame still holds those same bytes at the
 * place the parse finds its token, and the keys did not change; a header
 * whose NF moved or changed its token is checked again, as without.
 * Zero (ours == 0): no verdict carried. A token found under a retired key
 * (stale, whose grace may end) is not carried.
 */
struct nfsl_xsk_tok {
	struct nfsl_token tok; /* its bytes, as verified */
	__u32 cfg_seq;         /* nfsl_xsk_store.cfg_seq it verified under */
	__u16 off;             /* its offset in the frame, bytes */
	__u8 ours;             /* 1: verified under the keys; 0: none carried */
};

/*
 * nfsl_xsk_store_open - map the store of domain @d read-write.
 * The map's size comes from the kernel (value size x max_entries, rounded
 * up to pages as the kernel lays out an mmapable array); @d's config (its
 * MAC key) is copied, and its config map kept (when @d has one): a token
 * that verifies under neither key makes the splice read the config again
 * (one map lookup, a bpf(2) system call) when the configuration generation
 * (cfg_gen, read from a read-only mmap of the config map) moved since the
 * last read, so a key_old that a copy-mode migration sets while the NF
 * runs is honoured from the first header under it on (docs/cli.md
 * "Copy mode"), and random trailers that pass the token pre-check cost no
 * system call. A config map that is not mmapable (a domain attached by an
 * older nfslice) is re-read at most once per NFSL_XSK_REREAD_NS. @d may be closed
 * afterwards. A config rewritten with a new key needs a new open.
 * Returns 0, -EINVAL when the map is not a store (not an mmapable array of
 * struct nfsl_slot), or -errno of the map info, dup or mmap (-EACCES: the
 * fd was opened read-only; -EPERM: the map is frozen).
 */
int nfsl_xsk_store_open(struct nfsl_xsk_store *st, const struct nfsl_domain *d);

/* Unmap and close; safe on a zeroed or already closed store. */
void nfsl_xsk_store_close(struct nfsl_xsk_store *st);

/*
 * nfsl_xsk_splice - put back the parked payload of the frame about to be
 * sent, if it carries one of our tokens.
 * @frame: Ethernet frame (up to two VLAN tags) in a UMEM buffer of @room
 *         bytes; one buffer, not multi-buffer
 * @len:   in: frame bytes; out: the spliced frame's bytes (SPLICED only;
 *         Ethernet padding after the sliced IP packet is dropped)
 * @room:  bytes the buffer holds from @frame on
 * @mtu:   egress MTU: the largest IP packet, bytes (a VLAN tag does not
 *         count, as with the kernel's MTU)
 * Returns enum nfsl_xsk_splice_res. On STALE the frame's bytes may have
 * changed (a copy that raced an eviction); *@len is changed only on
 * SPLICED.
 */
int nfsl_xsk_splice(struct nfsl_xsk_store *st, __u8 *frame, __u32 *len, __u32 room,
		    __u32 mtu);

/* nfsl_xsk_splice with the check @t carried from receive (NULL: none). */
int nfsl_xsk_splice_tok(struct nfsl_xsk_store *st, __u8 *frame, __u32 *len, __u32 room,
			__u32 mtu, const struct nfsl_xsk_tok *t);

/*
 * nfsl_xsk_release - the NF dropped the frame [@frame, @frame + @len): if
 * it is a sliced header whose payload is still parked, free the slot now
 * rather than let it wait for expiry (explicit drop, PayloadPark §6.2.4).
 * Returns 1 when a slot was freed, 0 when the frame carries no token of
 * ours or its payload is gone already.
 */
int nfsl_xsk_release(struct nfsl_xsk_store *st, const __u8 *frame, __u32 len);

/* nfsl_xsk_release with the check @t carried from receive (NULL: none). */
int nfsl_xsk_release_tok(struct nfsl_xsk_store *st, const __u8 *frame, __u32 len,
			 const struct nfsl_xsk_tok *t);

/*
 * nfsl_xsk_orig_len - the IP length, in bytes, of the packet the frame
 * [@frame, @frame + @len) was sliced from: with the store (@st open,
 * inline) from the slot of a token that verifies; without (@st NULL: an NF
 * server in park, which has no key) from the parked length the token of a
 * DSCP-63 frame carries, unverified. Otherwise the frame's own IP length;
 * 0 when it is not IPv4/IPv6 UDP/TCP. For NFs that meter or account bytes
 * (a QoS meter) on sliced headers.
 */
__u32 nfsl_xsk_orig_len(struct nfsl_xsk_store *st, const __u8 *frame, __u32 len);

/* nfsl_xsk_orig_len that also records its token check in @t (with the
 * store: ours or not; @t zeroed when none is carried), for the splice or
 * release of the same frame. */
__u32 nfsl_xsk_orig_len_tok(struct nfsl_xsk_store *st, const __u8 *frame, __u32 len,
			    struct nfsl_xsk_tok *t);

#endif /* NFSL_XSK_SPLICE_H */
