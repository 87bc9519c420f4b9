// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Baseline of the netfilter guard's per-packet cost (bench/datapath_guard.c):
 *   bench_nf_empty  accept: the bias of the run-time statistics for a
 *                   netfilter program (typed by the driver: libbpf 1.1
 *                   knows no SEC("netfilter"))
 */
#include <linux/bpf.h>
#include <linux/netfilter.h>
#include <bpf/bpf_helpers.h>

SEC("netfilter")
int bench_nf_empty(void *ctx)
{
	return NF_ACCEPT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
