/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TTL eviction: free the slots of payloads parked longer than the
 * domain's TTL (config ttl_us), on top of the datapath's wrap-count
 * expiry (issue 10 §2; PayloadPark §3.3's payload evictor, here by time;
 * NFSlicer §III-C c, payload timeouts). Wrap-count expiry evicts a
 * payload only when its partition turns (expiry x part_slots slice
 * attempts), so on a quiet partition a payload the NF dropped stays
 * parked for ever; the TTL bounds its stay in time.
 *
 * Cheap: O(expired entries) per scan, never O(store). The slicer writes
 * a park log in parking order (struct nfsl_park_rec, one entry per slice
 * at partition base + seq % part_slots, docs/format.md "Park log"); a
 * scan reads each partition's entries from where it stopped last time to
 * the partition's clock (nfsl_cursor seq), oldest first, and stops at the
 * first entry younger than the TTL. Each entry older than the TTL is
 * evicted only if its slot still holds that payload (nfsl_slot_evict:
 * ctl, parked time, ctl again, compare-and-swap), so payloads spliced,
 * released or parked again meanwhile are never touched, and a splicer
 * that copied an evicted payload drops it as stale.
 *
 * An entry the slicer overwrote before a scan read it (its partition made
 * part_slots attempts in less than TTL + scan interval) is counted
 * (ttl_overrun) and its payload left to wrap-count expiry, which then
 * comes within expiry x (TTL + interval) anyway. Payloads parked by an
 * older slicer (no log) or restored from a checkpoint have no entry: they
 * too are left to expiry.
 *
 * Scan every TTL / 4 (nfsl_ttl_interval_ns): a payload then stays at most
 * 1.25 TTL. Several scanners (nfsliced, `nfslice evict`) may work on one
 * domain at once; each keeps its own read positions, and the compare-and-
 * swap frees every payload once. One struct nfsl_ttl belongs to one
 * thread at a time.
 */
#ifndef NFSL_TTL_H
#define NFSL_TTL_H

#include <stdbool.h>
#include <stddef.h>

#include "nfsl/domain.h"

/* TTL of a new domain (nfslice attach --ttl), ms (issue 10 §2). NFSlicer
 * §III-C sizes payload timeouts by the NF's acceptable tail latency (10x
 * its average service time); the slice-to-splice times measured here are
 * tens of us idle and a few ms at p99 with a 2 ms NF delay
 * (docs/benchmarks-latency.md), well below 10 ms. */
#define NFSL_DEF_TTL_MS 10

/* One evicted payload, as nfsl_ttl_scan reports it to on_evict. */
struct nfsl_ttl_evicted {
	__u32 slot;      /* store index */
	__u32 gen;       /* generation the token carried */
	__u64 parked_ns; /* when it was parked, CLOCK_MONOTONIC ns */
	__u64 age_ns;    /* scan time - parked_ns, ns (>= the TTL) */
	__u32 len;       /* parked payload bytes */
	__u32 ifindex;   /* interface it arrived on */
};

typedef void (*nfsl_ttl_evict_fn)(void *arg, const struct nfsl_ttl_evicted *ev);

/* What one scan did. Counts are of park log entries (one per slice). */
struct nfsl_ttl_result {
	__u32 ttl_us;    /* TTL applied, us; 0: TTL off, nothing scanned */
	__u64 evicted;   /* busy slots freed: parked longer than the TTL */
	__u64 walked;    /* entries read and passed (evicted or not) */
	__u64 overrun;   /* entries overwritten before they were read */
	__u64 raced;     /* expired entries whose slot changed under the
			  * scan (restored, or changing without rest): left */
	__u64 next_ns;   /* CLOCK_MONOTONIC ns at which the oldest entry
			  * left unread turns TTL-old; 0: none left */
};

/* Read position of one allocation partition. */
struct nfsl_ttl_part {
	__u32 rd;     /* partition clock of the next entry to read */
	bool started; /* rd is set (else: the oldest entry the log holds) */
};

/*
 * Scanner state of one domain. nfsl_ttl_open fills it; the caller may set
 * ttl_us, on_evict and arg afterwards.
 */
struct nfsl_ttl {
	struct nfsl_slot *store;         /* mmap of the store, read-write */
	const struct nfsl_park_rec *log; /* mmap of the park log, read-only */
	struct nfsl_mgr_counters *cnt;   /* mmap of mgr_counters, NULL: none */
	size_t store_len, log_len, cnt_len; /* mapped bytes, 0: not mapped */
	__u32 slots;      /* store entries the log may name */
	__u32 part_slots; /* slots (and log entries) of each partition */
	__u32 ncpus, nparts; /* partitions: ncpus x nparts, cpu-major */
	__u32 store_id;   /* the store map's id: a domain detached and
			   * attached again under its name has another */
	int config_fd, cursor_fd; /* own copies; -1 in memory mode */
	int possible_cpus;        /* per-CPU values of a cursor lookup */
	struct nfsl_ttl_part *parts; /* ncpus x nparts */
	__u32 *heads;     /* scratch: each partition's clock */
	void *percpu;     /* scratch: one per-CPU cursor lookup */
	/* Set by the caller. */
	__u32 ttl_us;     /* TTL, us; 0: the domain's config ttl_us, read
			   * at every scan (so nfslice set --ttl applies) */
	nfsl_ttl_evict_fn on_evict; /* called per eviction, NULL: none */
	void *arg;        /* on_evict's first argument */
};

/*
 * nfsl_ttl_open - scanner state @t for the domain @d (open, see
 * nfsl_domain_open): maps its store (read-write: evictions swap slot
 * control words), park log and mgr_counters, and keeps copies of the
 * config and cursor fds, so @d may be closed afterwards. The first scan
 * starts at the oldest entry each partition's log holds.
 * Returns 0; -ENOENT when the domain has no park log (attached by an
 * older nfslice: nfslice upgrade --name NAME adds it); -EINVAL when its
 * maps do not match this build's slot or log entry or its geometry;
 * -ENOMEM; other -errno of mmap or bpf. On failure @t holds nothing.
 */
int nfsl_ttl_open(struct nfsl_ttl *t, const struct nfsl_domain *d);

/*
 * nfsl_ttl_open_mem - scanner state over a store and park log in memory
 * (tests, benchmarks): @cfg gives part_slots, ncpus, nparts and slots;
 * @cnt (may be NULL) gets the counts. Scan with nfsl_ttl_scan_heads.
 * Returns 0, -EINVAL (geometry), -ENOMEM.
 */
int nfsl_ttl_open_mem(struct nfsl_ttl *t, const struct nfsl_config *cfg, struct nfsl_slot *store,
		      const struct nfsl_park_rec *log, struct nfsl_mgr_counters *cnt);

/*
 * nfsl_ttl_scan - one scan at @now_ns (CLOCK_MONOTONIC ns, nfsl_now_ns()):
 * evict every payload whose log entry says it was parked at least the TTL
 * (t->ttl_us, else the domain's config ttl_us) before @now_ns and whose
 * slot still holds it; adds the counts to the domain's mgr_counters and
 * to *@res. Cost: a bpf syscall for the config (none with t->ttl_us
 * set), one per destination partition (its CPUs' clocks), and
 * O(entries that aged past the TTL since the last scan); all in the
 * caller's process, nothing in the datapath. Returns 0 (also with the TTL off: res->ttl_us 0), or
 * -errno reading the config or the cursors (nothing evicted).
 */
int nfsl_ttl_scan(struct nfsl_ttl *t, __u64 now_ns, struct nfsl_ttl_result *res);

/*
 * nfsl_ttl_scan_heads - the scan itself, with each partition's clock
 * given: @heads[cpu x nparts + dst] (struct nfsl_alloc seq of that CPU's
 * partition dst) and the TTL @ttl_us (> 0). nfsl_ttl_scan reads them from
 * the domain. Returns 0, or -EINVAL for a TTL of 0.
 */
int nfsl_ttl_scan_heads(struct nfsl_ttl *t, const __u32 *heads, __u64 now_ns, __u32 ttl_us,
			struct nfsl_ttl_result *res);

/* Release what nfsl_ttl_open* took; safe twice and after a failed open. */
void nfsl_ttl_close(struct nfsl_ttl *t);

/*
 * nfsl_ttl_interval_ns - how often to scan for a TTL of @ttl_us: a
 * quarter of it (a payload then stays at most 1.25 TTL), at least 100 us.
 */
__u64 nfsl_ttl_interval_ns(__u32 ttl_us);

#endif /* NFSL_TTL_H */
