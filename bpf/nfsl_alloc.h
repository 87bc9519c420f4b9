/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The slicer's slot allocator (PayloadPark Alg. 1 in the store's hot
 * window, include/nfsl_store.h) and the tenants' allocation state.
 */
#ifndef NFSL_ALLOC_H
#define NFSL_ALLOC_H

#include "nfsl_maps.h"

/* Tenants (issue 10 §5, struct nfsl_tenant): each tenant's allocation
 * state in each partition of this CPU, key dst x NFSL_MAX_TENANTS +
 * tenant; pinned as "tenant_cursor". */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NFSL_MAX_PARTS * NFSL_MAX_TENANTS);
	__type(key, __u32);
	__type(value, struct nfsl_alloc);
} nfsl_tcursor SEC(".maps");

/* What nfsl_alloc_slot took. */
struct nfsl_take {
	__u32 idx;   /* store index of the slot */
	__u32 gen;   /* its generation: the token's */
	__u32 seq;   /* the attempt's partition clock (struct nfsl_alloc seq) */
	__u32 log;   /* index of the attempt's park log entry: partition
		      * base + seq % part_slots (struct nfsl_park_rec) */
	int claim;   /* NFSL_CLAIM_FREE or NFSL_CLAIM_EVICTED */
};

/* Where this CPU's attempt allocates: partition @dst of its share. */
struct nfsl_where {
	struct nfsl_alloc *pa; /* the partition's state (nfsl_cursor) */
	__u32 base;            /* store index of its first slot */
	__u32 part;            /* its size, slots (config part_slots) */
	__u32 dst;             /* the partition, within config nparts */
	__u32 logseq;          /* the attempt's partition clock */
};

/* Fill @wh for partition @dst of this CPU and tick the partition clock;
 * -1 when the domain has no store. */
static __always_inline int nfsl_alloc_where(const struct nfsl_config *cfg, __u32 dst,
					    struct nfsl_where *wh)
{
	__u32 cpu = bpf_get_smp_processor_id(), ncpus = cfg->ncpus;
	__u32 nparts = cfg->nparts ? cfg->nparts : 1;

	if (dst >= nparts || dst >= NFSL_MAX_PARTS)
		dst = 0;
	wh->pa = bpf_map_lookup_elem(&nfsl_cursor, &dst);
	wh->part = cfg->part_slots;
	if (!wh->pa || !wh->part || !ncpus)
		return -1;
	if (cpu >= ncpus)
		cpu %= ncpus;
	wh->dst = dst;
	wh->base = (cpu * nparts + dst) * wh->part;
	wh->logseq = ++wh->pa->seq;
	return 0;
}

/*
 * The walk of PayloadPark Alg. 1 lines 4-20 in the hot window of a region
 * (@rbase, @rsize slots) of partition @wh, with allocation state @a and
 * clock @now. @tenants: take only free slots and @tenant's own (another
 * tenant's busy slot, left by a quota change, is never taken), and mark
 * the slot taken with @tenant; a constant at each call.
 */
static __always_inline int nfsl_alloc_walk(const struct nfsl_config *cfg,
					   const struct nfsl_where *wh, struct nfsl_alloc *a,
					   __u32 rbase, __u32 rsize, __u32 now, bool tenants,
					   __u32 tenant, struct nfsl_take *t)
{
	__u32 lo = nfsl_win_size(0, cfg->win_min, rsize);
	__u32 w = nfsl_win_size(a->win, cfg->win_min, rsize);
	__u32 cur = a->cur, run = 0;

	if (cur >= w) { /* a pass ended (or the window shrank under it) */
		w = nfsl_win_pass(a, w, lo);
		cur = 0;
	}
	NFSL_UNROLL
	for (int i = 0; i < NFSL_WIN_PROBES; i++) {
		struct nfsl_slot *s;
		int r;

		t->idx = wh->base + rbase + cur;
		s = bpf_map_lookup_elem(&nfsl_store, &t->idx);
		if (!s)
			break;
		if (tenants && s->tenant != tenant && NFSL_CTL_EXP(NFSL_READ_ONCE_U64(s->ctl)))
			r = NFSL_CLAIM_BUSY; /* another tenant's payload */
		else
			r = nfsl_slot_take(s, cfg->expiry, now, rsize, &t->gen);
		if (r != NFSL_CLAIM_BUSY) {
			if (tenants)
				s->tenant = tenant;
			a->cur = cur + 1;
			a->win = w;
			t->claim = r;
			t->seq = wh->logseq;
			t->log = wh->base + wh->logseq % wh->part;
			return 0;
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
	return -1;
}

/*
 * nfsl_alloc_slot - take a slot of this CPU's partition for a new payload
 * (PayloadPark Alg. 1 lines 4-20 in the store's hot window, nfsl_store.h),
 * in a domain without tenants. Returns 0 with the slot taken in *@t
 * (t->idx: look it up in nfsl_store), or -1 when every slot tried was busy
 * and young (the packet passes unsliced).
 * @dst: the destination partition (nfsl_iface.part of the egress: 0, or
 * the NF port's), each CPU's share of the store being split into nparts
 * so that a burst toward one NF server never evicts another's payloads
 * (PayloadPark §6.2.3, static slices).
 * The partition's clock (nfsl_cursor seq) counts every attempt: the park
 * log's order (struct nfsl_park_rec), and the payloads' age.
 * A CPU beyond the configured partitions (never with ncpus = possible
 * CPUs, as attach sets it) shares partition cpu % ncpus, with a clock of
 * its own: the age of the other CPU's payloads is then not exact.
 */
static __always_inline int nfsl_alloc_slot(const struct nfsl_config *cfg, __u32 dst,
					   struct nfsl_take *t)
{
	struct nfsl_where wh;

	if (nfsl_alloc_where(cfg, dst, &wh))
		return -1;
	return nfsl_alloc_walk(cfg, &wh, wh.pa, 0, wh.part, wh.logseq, false, 0, t);
}

/*
 * nfsl_alloc_tenant - nfsl_alloc_slot in a domain with tenants (config
 * ntenants, issue 10 §5): the slot comes from @tenant's region of the
 * partition (struct nfsl_tenant), walked and aged by the tenant's own
 * cursor and clock (nfsl_tcursor), and another tenant's busy slot there is
 * never taken. The partition's clock still counts every attempt (the park
 * log's order).
 * A global function: the verifier checks it once with unknown arguments,
 * not once for each path of the slicer that reaches it. Inlined, its
 * branches doubled the slicer's states (505k instructions processed, 10 s
 * to load here); the call costs ~20 ns per packet, so domains without
 * tenants keep the inlined nfsl_alloc_slot.
 */
__noinline int nfsl_alloc_tenant(const struct nfsl_config *cfg, __u32 dst, __u32 tenant,
				 struct nfsl_take *t)
{
	const struct nfsl_tenant *tn;
	struct nfsl_alloc *ta;
	__u32 rbase, rsize, k;
	struct nfsl_where wh;

	if (!cfg || !t || nfsl_alloc_where(cfg, dst, &wh))
		return -1;
	tenant &= NFSL_MAX_TENANTS - 1;
	k = wh.dst * NFSL_MAX_TENANTS + tenant;
	ta = bpf_map_lookup_elem(&nfsl_tcursor, &k);
	if (!ta)
		return -1;
	tn = &cfg->tenants[tenant];
	/* Read once; a region half rewritten by a quota change stays inside
	 * the partition. */
	rbase = *(volatile const __u32 *)&tn->base;
	rsize = *(volatile const __u32 *)&tn->size;
	if (rbase >= wh.part)
		return -1;
	if (rsize > wh.part - rbase)
		rsize = wh.part - rbase;
	if (!rsize)
		return -1;
	return nfsl_alloc_walk(cfg, &wh, ta, rbase, rsize, ++ta->seq, true, tenant, t);
}

#endif /* NFSL_ALLOC_H */
