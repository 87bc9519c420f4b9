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

/* Domain configuration (threshold, keep, partitions, expiry, MAC key).
 * Mmapable so that the AF_XDP splice reads cfg_gen without a system call
 * (userspace/lib/xsk/splice.c); written only through bpf(2) (userspace/lib/nfsl/cfg.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
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

#endif /* NFSL_MAPS_H */
