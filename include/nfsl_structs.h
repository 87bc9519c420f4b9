/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Data structures shared by the BPF datapath and user space: token, slot,
 * counters, config. Defined once here (docs/design.md "Layout").
 */
#ifndef NFSL_STRUCTS_H
#define NFSL_STRUCTS_H

#include "nfsl_compat.h"
#include "nfsl_consts.h"

/*
 * Token appended to a sliced packet, as the last NFSL_TOKEN_LEN bytes of the
 * IP packet (located through the IP length, so Ethernet padding never moves
 * it). Slot index + generation follow NFSlicer §III-C; the MAC makes only
 * tokens this domain issued count (SipHash-2-4 over slot and generation,
 * keyed with the domain's random secret).
 */
struct nfsl_token {
	__be32 slot; /* slot word: store index and parked length, below */
	__be32 gen;  /* slot generation when the payload was parked */
	__le64 mac;  /* SipHash-2-4 output, little-endian as the spec gives it */
};

/*
 * The token's slot word: the store index in the low 20 bits (NFSL_MAX_SLOTS
 * is 2^20) and the parked payload's length, in bytes (<= NFSL_PAYLOAD_MAX,
 * 2016), in the high 12. The length lets an NF server that knows nothing
 * of the store (park) meter the packet's original IP length (a QoS meter,
 * issue 9); the MAC covers it with the index.
 */
#define NFSL_TOKEN_IDX_BITS 20
#define NFSL_TOKEN_WORD(idx, plen) ((__u32)(idx) | (__u32)(plen) << NFSL_TOKEN_IDX_BITS)
#define NFSL_TOKEN_IDX(word) ((word) & ((1u << NFSL_TOKEN_IDX_BITS) - 1))
#define NFSL_TOKEN_PLEN(word) ((word) >> NFSL_TOKEN_IDX_BITS)

/*
 * Slot control word, changed only with compare-and-swap:
 *   bits 63..32  generation (bumped by every claim)
 *   bits 31..0   expiry count; 0 = free (PayloadPark Alg. 1 "EXP")
 */
#define NFSL_CTL(gen, exp) (((__u64)(gen) << 32) | (__u32)(exp))
#define NFSL_CTL_GEN(ctl) ((__u32)((ctl) >> 32))
#define NFSL_CTL_EXP(ctl) ((__u32)(ctl))

/* One parked payload and its metadata (docs/design.md "Words": slot). */
struct nfsl_slot {
	__u64 ctl;       /* generation << 32 | expiry count, see NFSL_CTL */
	__u64 parked_ns; /* bpf_ktime_get_ns() (CLOCK_MONOTONIC, ns) when
			  * parked: TTL eviction and residency; written after
			  * the claim, before the park log entry */
	__u16 len;       /* parked payload bytes */
	__u16 csum;      /* ones' complement sum of the parked bytes, RFC 1071,
			  * in memory order, at their original L4 offset */
	__u8 dscp;       /* original DSCP (6 bits), restored on splice */
	__u8 flags;      /* NFSL_SLOT_F_* */
	__u16 tenant;    /* tenant whose share holds it (issue 10 §5), written
			  * at the claim when the domain has tenants */
	__u32 ifindex;   /* interface the payload arrived on */
	__u32 born;      /* allocation clock of its CPU's partition when
			  * parked (struct nfsl_alloc seq): expiry by age */
	__u8 payload[NFSL_PAYLOAD_MAX];
};

/*
 * Datapath counters, one set per CPU, summed by `nfslice stats`.
 * X-macro so the struct, the CLI names and the JSON keys are one list.
 */
#define NFSL_COUNTERS(X)                                                       \
	X(sliced)        /* payloads parked */                                 \
	X(spliced)       /* payloads restored */                               \
	X(skipped_small) /* frame < threshold or payload <= keep + token */    \
	X(skipped_full)  /* no usable slot: passed unsliced */                 \
	X(skipped_quota) /* no usable slot in the tenant's share: passed */    \
	X(skipped_big)   /* payload > NFSL_PAYLOAD_MAX: passed unsliced */     \
	X(evicted)       /* busy slots reclaimed at expiry 0 (Alg. 1) */       \
	X(stale)         /* valid token, payload evicted: dropped */           \
	X(bad_token)     /* DSCP 63 but token does not verify: passed */       \
	X(replayed)      /* our valid token arriving from outside: dropped */  \
	X(too_big)       /* spliced frame would exceed egress MTU: dropped */  \
	X(unparsed)      /* not Eth/VLAN/IPv4/IPv6/UDP/TCP, fragment, malformed */ \
	X(skipped_route) /* route leaves the domain (or no route): passed */   \
	X(skipped_local) /* delivered locally / not forwarded: passed */       \
	X(skipped_l2)    /* not for the interface's own MAC (uppers): passed */\
	X(skipped_mtu)   /* original packet > egress MTU: passed for PMTU */   \
	X(dropped_gso)   /* segments of a GRO aggregate of sliced packets */   \
	X(slice_failed)  /* a helper failed while slicing: passed unsliced */  \
	X(splice_failed) /* a helper failed while splicing: dropped */         \
	X(explicit_drop) /* NF dropped a sliced header: slot freed by notice */\
	X(bad_notice)    /* drop notice not ours or payload gone: dropped */   \
	X(parked_bytes)  /* payload bytes kept out of the NF */                \
	X(events_lost)   /* drop events the full ring buffer refused */       \
	X(skipped_csum)  /* CHECKSUM_PARTIAL, sliced seed = full checksum */ \
			 /* under two generations: passed unsliced */  \
	X(route_cache_hit)  /* route verdicts the slicer's cache gave */      \
	X(route_cache_miss) /* route lookups made with the cache on */        \
	X(escaped_dropped) /* guard: a sliced header leaving through an */  \
			 /* interface without a splicer, or delivered */    \
			 /* locally: slot freed, dropped (bpf/guard.bpf.c) */

struct nfsl_counters {
#define NFSL_X_FIELD(name) __u64 name;
	NFSL_COUNTERS(NFSL_X_FIELD)
#undef NFSL_X_FIELD
};

/*
 * Park log: one entry per slice, in the order a partition parks (issue 10
 * §2; docs/format.md "Park log"). The slicer writes the entry of the slice
 * attempt with partition clock seq (struct nfsl_alloc seq) at log index
 * partition base + seq % part_slots, the same geometry as the store, so
 * the TTL scan (userspace/lib/nfsl/ttl.h) reads each partition oldest first and
 * stops at the first entry younger than the TTL: O(expired), not O(store).
 * An attempt that parked nothing leaves the entry of an older turn there.
 * Written seqlock-style (nfsl_park_log_write): seq 0 first, then the
 * fields, then seq, so a reader that finds the same seq before and after
 * the fields read one entry whole.
 */
struct nfsl_park_rec {
	__u64 parked_ns; /* the slot's parked_ns (CLOCK_MONOTONIC, ns) */
	__u32 slot;      /* store index */
	__u32 gen;       /* generation the payload was parked with */
	__u32 seq;       /* partition clock of the attempt; 0 while written */
	__u32 pad;
};

/*
 * Counters of the evictions user space makes (the TTL scan of nfsliced
 * and `nfslice evict`), in the domain's pinned mgr_counters map (one
 * entry, mmapable). They cannot go into the per-CPU nfsl_counters: user
 * space can only rewrite a per-CPU value whole, racing with the datapath's
 * increments. Every writer adds with atomic operations through an mmap.
 * X-macro: struct, CLI names and JSON keys are one list.
 */
#define NFSL_MGR_COUNTERS(X)                                                   \
	X(evicted_ttl)  /* busy slots freed: parked longer than the TTL */     \
	X(ttl_scans)    /* TTL scans run */                                    \
	X(ttl_walked)   /* park log entries the scans read */                  \
	X(ttl_overrun)  /* entries overwritten before a scan read them: */     \
			/* their payloads are left to wrap-count expiry */     \
	X(ttl_raced)    /* expired entries whose slot changed under the scan */

/* Fixed size, so later counters take reserved words and a pinned map of
 * an older build stays readable. */
#define NFSL_MGR_COUNTERS_WORDS 32
#define NFSL_X_ONE(name) +1
#define NFSL_NR_MGR_COUNTERS (0 NFSL_MGR_COUNTERS(NFSL_X_ONE))

struct nfsl_mgr_counters {
#define NFSL_X_FIELD(name) __u64 name;
	NFSL_MGR_COUNTERS(NFSL_X_FIELD)
#undef NFSL_X_FIELD
	__u64 reserved[NFSL_MGR_COUNTERS_WORDS - NFSL_NR_MGR_COUNTERS];
};

/* The splicer's residency histogram, one per CPU (pinned "residency"):
 * spliced payloads by slice-to-splice time in log2 buckets of us
 * (NFSL_RES_BUCKETS) and the sum of those times (a Prometheus histogram's
 * _sum); one value, so one map lookup per splice. */
struct nfsl_residency {
	__u64 bucket[NFSL_RES_BUCKETS];
	__u64 sum_us;
};

/*
 * Drop events (issue 10 §4; docs/format.md "Drop events"): with the domain
 * flag NFSL_CFG_EVENTS, slicer and splicer write one record per packet
 * they drop or decline to slice for a reason worth a name into the ring
 * buffer pinned as "events" (NFSL_EVENTS_BYTES); `nfslice events` prints
 * them. A full ring counts events_lost and the packet goes on as without.
 */
#define NFSL_EVENT_REASONS(X)                                                  \
	X(STALE, stale)     /* splicer: token verifies, payload evicted: dropped */ \
	X(TOO_BIG, too_big) /* splicer: spliced frame > egress MTU: dropped */ \
	X(REPLAYED, replayed) /* slicer: our token arriving from outside: dropped */ \
	X(BAD_TOKEN, bad_token) /* splicer: DSCP 63, token not ours: passed */ \
	X(SKIPPED_ROUTE, skipped_route) /* slicer: route leaves the domain: passed */ \
	X(SKIPPED_MTU, skipped_mtu) /* slicer: packet > egress MTU: passed for PMTU */ \
	X(ESCAPED, escaped_dropped) /* guard: our header escaping: dropped */

/* Reasons are numbered from 1 in list order; each is named as the counter
 * it also counts in. */
enum nfsl_event_reason {
	NFSL_EV_NONE,
#define NFSL_X_ENUM(id, name) NFSL_EV_##id,
	NFSL_EVENT_REASONS(NFSL_X_ENUM)
#undef NFSL_X_ENUM
	NFSL_EV_MAX
};

struct nfsl_event {
	__u64 ts_ns;     /* bpf_ktime_get_ns(): CLOCK_MONOTONIC, ns */
	__u32 ifindex;   /* slicer: ingress; splicer: egress interface */
	__u8 reason;     /* enum nfsl_event_reason */
	__u8 proto;      /* IPPROTO_UDP or IPPROTO_TCP */
	__u8 v6;         /* addresses are IPv6; else IPv4 in their first 4 B */
	__u8 dscp;       /* DSCP of the IP header as seen */
	__u8 saddr[16];  /* network order */
	__u8 daddr[16];
	__be16 sport;    /* network order */
	__be16 dport;
	__u32 len;       /* frame length as seen, bytes */
	__u32 slot;      /* token's store index (stale, replayed, bad_token;
			  * else 0) */
	__u32 gen;       /* token's generation (likewise) */
};

/* One interface of the domain, remembered for the slicer's route check,
 * detach and status. */
struct nfsl_iface {
	__u32 ifindex;
	__u32 flags; /* NFSL_IF_* */
	__u8 mac[6]; /* its own MAC: frames for other MACs (uppers) pass */
	__u8 part;   /* store partition of what is sliced toward it: 0 for a
		      * domain interface, k for the k-th NF port */
	__u8 tenant; /* tenant of what arrives on it, unless a VLAN or
		      * destination-prefix rule says otherwise (issue 10 §5) */
};

/*
 * A tenant's share of the store (issue 10 §5; PayloadPark §6.2.3's static
 * memory slices, here per tenant): the region [base, base + size) of
 * every allocation partition (each CPU's, per destination), walked by an
 * allocator of its own (nfsl_tcursor) with a clock of its own, so a
 * tenant's burst never ages, evicts or takes another tenant's payloads.
 * size is its quota; traffic over it passes unsliced (skipped_quota),
 * never dropped. nfsliced's dynamic mode moves the regions toward measured
 * demand by weighted max-min (userspace/lib/nfsl/tenant.h).
 */
struct nfsl_tenant {
	__u32 base;   /* first slot of its region in each partition */
	__u32 size;   /* slots of its region in each partition: the quota */
	__u32 weight; /* dynamic mode: weight of its max-min share, >= 1 */
	__u32 min;    /* dynamic mode: slots per partition it always keeps */
	char name[16]; /* NUL-terminated; tenant 0 is "default" */
};

/* Per-CPU counters of one tenant (nfsl_tcnt, pinned "tenant_counters").
 * X-macro: struct, CLI names and JSON keys are one list. */
#define NFSL_TENANT_COUNTERS(X)                                                \
	X(attempts)      /* packets the route let slice: its demand */         \
	X(sliced)        /* payloads parked in its share */                    \
	X(skipped_quota) /* no usable slot in its share: passed unsliced */    \
	X(evicted)       /* its own expired payloads reclaimed (Alg. 1) */

struct nfsl_tenant_counters {
#define NFSL_X_FIELD(name) __u64 name;
	NFSL_TENANT_COUNTERS(NFSL_X_FIELD)
#undef NFSL_X_FIELD
};

/* Key of the destination-prefix rules (nfsl_tpfx, an LPM trie): IPv6, or
 * IPv4 mapped into ::ffff:0:0/96 with 96 added to its prefix length. */
struct nfsl_tenant_pfx {
	__u32 prefixlen;
	__u8 addr[16];
};

/* Domain configuration, one entry, written by the loader at attach. */
struct nfsl_config {
	__u32 threshold;  /* smallest frame (bytes) worth slicing */
	__u32 keep;       /* payload bytes left in the packet */
	__u32 slots;      /* slots in use: part_slots * ncpus * nparts */
	__u32 part_slots; /* slots in each allocation partition (per CPU and
			   * per destination, see nparts) */
	__u32 ncpus;      /* partitions */
	__u32 expiry;     /* wrap-arounds a busy slot survives (Alg. 1) */
	__u32 flags;      /* NFSL_CFG_* */
	__u32 nifaces;    /* domain interfaces and NF ports in ifaces[] */
	__u64 key[2];     /* SipHash-2-4 key, random per domain */
	struct nfsl_iface ifaces[NFSL_MAX_IFACES];
	__u32 win_min;    /* smallest allocation window in slots, 0: NFSL_WIN_MIN
			   * (nfsl_store.h); part_slots: plain FIFO */
	__u32 nparts;     /* partitions of each CPU's share: 1 + NF ports, so
			   * payloads toward one NF server never evict
			   * another's (PayloadPark §6.2.3); 0 reads as 1 */
	__u32 ttl_us;     /* TTL of a parked payload, us, applied by the
			   * TTL scan (userspace/lib/nfsl/ttl.h: nfsliced, nfslice
			   * evict) on top of wrap-count expiry; 0: off */
	__u32 cfg_gen;    /* configuration generation: bumped by every runtime
			   * change (userspace/lib/nfsl/cfg.h), 0 at attach */
	__u32 ntenants;   /* tenants, the default one included (fixed at
			   * attach); 0: none, the whole partition is one share */
	__u32 tenant_flags; /* NFSL_TEN_* */
	struct nfsl_tenant tenants[NFSL_MAX_TENANTS];
	__u64 key_old[2]; /* SipHash-2-4 key of the instance a copy-mode
			   * migration imported payloads from; honoured by
			   * the splicers only with NFSL_CFG_KEY_OLD */
	__u32 route_cache_us; /* age limit of a cached route verdict, us
			       * (bpf/nfsl_route.h); 0: no cache, every
			       * packet looked up (attach --route-cache off) */
	__u32 pad_rc;
};

/*
 * Keys a domain retired and still recognises (issue 17 §1.2), one map
 * value (pinned outside the domain's directory, so that it outlives a
 * detach: userspace/lib/nfsl/retired.h). An entry counts while now < until_ns; a
 * free entry has until_ns 0. Writers fill the key before until_ns.
 */
struct nfsl_retired_key {
	__u64 key[2];   /* SipHash-2-4 key the domain used */
	__u64 until_ns; /* CLOCK_MONOTONIC end of its grace period, ns */
};

struct nfsl_retired {
	struct nfsl_retired_key keys[NFSL_MAX_RETIRED];
};

/*
 * nfsl_iface_idx - index of @ifindex in the domain's interfaces and NF
 * ports (cfg->ifaces[]), or NFSL_MAX_IFACES when it is none of them: a
 * linear search of up to cfg->nifaces entries. The slicer searches its
 * ingress once per packet and hands the index on (nfsl_route,
 * nfsl_tenant_of); the FORWARD guard searches a routed packet's egress,
 * user space a name it was given (guard.c, tenant.c).
 * An index, not the entry: a pointer out of the loop
 * would multiply the verifier's states by the loop's exits (it hit the
 * 1M instruction limit), an index the verifier need not know precisely
 * does not.
 */
NFSL_INLINE __u32 nfsl_iface_idx(const struct nfsl_config *cfg, __u32 ifindex)
{
	for (__u32 i = 0; i < NFSL_MAX_IFACES; i++) {
		if (i >= cfg->nifaces)
			break;
		if (cfg->ifaces[i].ifindex == ifindex)
			return i;
	}
	return NFSL_MAX_IFACES;
}

#endif /* NFSL_STRUCTS_H */
