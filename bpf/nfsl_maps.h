/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Maps of a slicing domain. Slicer and splicer objects both declare them;
 * the loader pins them under the domain's directory and every program of
 * the domain reuses the pins, so all interfaces share ONE store.
 */
#ifndef NFSL_MAPS_H
#define NFSL_MAPS_H

#include "nfsl_structs.h"
#include "nfsl_store.h"

/* The store: parked payloads, one slot each; mmapable for the AF_XDP engine
 * and for `nfslice stats` occupancy. Resized at attach (--slots). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, NFSL_DEF_SLOTS);
	__type(key, __u32);
	__type(value, struct nfsl_slot);
} nfsl_store SEC(".maps");

/* Domain configuration (threshold, keep, partitions, expiry, MAC key). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsl_config);
} nfsl_config SEC(".maps");

/* Per-CPU datapath counters, summed by `nfslice stats`. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsl_counters);
} nfsl_counters SEC(".maps");

/* Per-CPU allocation state of each of the CPU's store partitions (key:
 * the partition, config nparts): cursor, hot window, expiry clock (struct
 * nfsl_alloc, nfsl_store.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NFSL_MAX_PARTS);
	__type(key, __u32);
	__type(value, struct nfsl_alloc);
} nfsl_cursor SEC(".maps");

static __always_inline struct nfsl_config *nfsl_get_config(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&nfsl_config, &zero);
}

static __always_inline struct nfsl_counters *nfsl_get_counters(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&nfsl_counters, &zero);
}

/* What nfsl_alloc_slot took. */
struct nfsl_take {
	__u32 idx;   /* store index of the slot */
	__u32 gen;   /* its generation: the token's */
	__u32 seq;   /* the attempt's partition clock (struct nfsl_alloc seq) */
	__u32 log;   /* index of the attempt's park log entry: partition
		      * base + seq % part_slots (struct nfsl_park_rec) */
	int claim;   /* NFSL_CLAIM_FREE or NFSL_CLAIM_EVICTED */
};

/*
 * nfsl_alloc_slot - take a slot of this CPU's partition for a new payload
 * (PayloadPark Alg. 1 lines 4-20 in the store's hot window, nfsl_store.h).
 * Returns the slot, with what identifies it in *@t; or NULL when every
 * slot tried was busy and young (the packet passes unsliced).
 * @dst: the destination partition (nfsl_iface.part of the egress: 0, or
 * the NF port's), each CPU's share of the store being split into nparts
 * so that a burst toward one NF server never evicts another's payloads
 * (PayloadPark §6.2.3, static slices).
 * @tenant, @ta: in a domain with tenants (config ntenants), the packet's
 * tenant and its allocation state in this partition (nfsl_tcursor): the
 * slot comes from the tenant's region of the partition (struct
 * nfsl_tenant), walked and aged by the tenant's own cursor and clock, and
 * another tenant's busy slot there (left by a quota change) is never taken
 * (issue 10 §5). @ta NULL: no tenants, the whole partition.
 * The partition's clock (nfsl_cursor seq) counts every attempt either way:
 * the park log's order (struct nfsl_park_rec).
 * A CPU beyond the configured partitions (never with ncpus = possible
 * CPUs, as attach sets it) shares partition cpu % ncpus, with a clock of
 * its own: the age of the other CPU's payloads is then not exact.
 */
static __always_inline struct nfsl_slot *
nfsl_alloc_slot(const struct nfsl_config *cfg, __u32 dst, __u32 tenant, struct nfsl_alloc *ta,
		struct nfsl_take *t)
{
	__u32 cpu = bpf_get_smp_processor_id(), base, now, cur, w, lo, logseq;
	__u32 part = cfg->part_slots, ncpus = cfg->ncpus, run = 0;
	__u32 nparts = cfg->nparts ? cfg->nparts : 1;
	__u32 rbase = 0, rsize;
	struct nfsl_alloc *a, *pa;

	if (dst >= nparts)
		dst = 0;
	pa = bpf_map_lookup_elem(&nfsl_cursor, &dst);
	if (!pa || !part || !ncpus)
		return NULL;
	if (cpu >= ncpus)
		cpu %= ncpus;
	base = (cpu * nparts + dst) * part;
	logseq = ++pa->seq;
	rsize = part;
	a = pa;
	now = logseq;
	if (ta) {
		const struct nfsl_tenant *tn = &cfg->tenants[tenant & (NFSL_MAX_TENANTS - 1)];

		/* Read once; a region half rewritten by a quota change stays
		 * inside the partition. */
		rbase = *(volatile const __u32 *)&tn->base;
		rsize = *(volatile const __u32 *)&tn->size;
		if (rbase >= part)
			return NULL;
		if (rsize > part - rbase)
			rsize = part - rbase;
		if (!rsize)
			return NULL;
		a = ta;
		now = ++a->seq;
	}
	lo = nfsl_win_size(0, cfg->win_min, rsize);
	w = nfsl_win_size(a->win, cfg->win_min, rsize);
	cur = a->cur;
	if (cur >= w) { /* a pass ended (or the window shrank under it) */
		w = nfsl_win_pass(a, w, lo);
		cur = 0;
	}
	NFSL_UNROLL
	for (int i = 0; i < NFSL_WIN_PROBES; i++) {
		struct nfsl_slot *s;
		int r;

		t->idx = base + rbase + cur;
		s = bpf_map_lookup_elem(&nfsl_store, &t->idx);
		if (!s)
			break;
		if (ta && s->tenant != tenant && NFSL_CTL_EXP(NFSL_READ_ONCE_U64(s->ctl)))
			r = NFSL_CLAIM_BUSY; /* another tenant's payload */
		else
			r = nfsl_slot_take(s, cfg->expiry, now, rsize, &t->gen);
		if (r != NFSL_CLAIM_BUSY) {
			if (ta)
				s->tenant = tenant;
			a->cur = cur + 1;
			a->win = w;
			t->claim = r;
			t->seq = logseq;
			t->log = base + logseq % part;
			return s;
		}
		a->busy++;
		if (w >= rsize) { /* the whole region: Alg. 1, one slot */
			cur++;
			break;
		}
		if (++run < 2) { /* step over one busy slot */
			if (++cur >= w) {
				w = nfsl_win_pass(a, w, lo);
				cur = 0;
			}
			continue;
		}
		/* Two in a row: payloads in flight fill the window. Double it
		 * and go on at the first slot of the part just added. */
		cur = w;
		w = w * 2 < rsize ? w * 2 : rsize;
		a->clean = 0;
		run = 0;
	}
	a->cur = cur;
	a->win = w;
	return NULL;
}

#endif /* NFSL_MAPS_H */
