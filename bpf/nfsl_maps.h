/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Maps of a slicing domain. Slicer and splicer objects both declare them;
 * the loader pins them under the domain's directory and every program of
 * the domain reuses the pins, so all interfaces share ONE store.
 */
#ifndef NFSL_MAPS_H
#define NFSL_MAPS_H

#include "nfsl_structs.h"

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

/* Per-CPU FIFO allocation cursor inside the CPU's store partition. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
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

/* Next slot of this CPU's partition, FIFO (PayloadPark Alg. 1 line 4). */
static __always_inline __u32 nfsl_next_slot(const struct nfsl_config *cfg)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id(), *cur, i;
	__u32 part = cfg->part_slots, ncpus = cfg->ncpus;

	cur = bpf_map_lookup_elem(&nfsl_cursor, &zero);
	if (!cur || !part || !ncpus)
		return 0;
	if (cpu >= ncpus)
		cpu %= ncpus;
	i = *cur;
	if (i >= part)
		i = 0;
	*cur = i + 1 < part ? i + 1 : 0;
	return cpu * part + i;
}

#endif /* NFSL_MAPS_H */
