// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * nfsl_csum_add compiled for BPF as the datapath compiles it, for the
 * unit test codec/csum_add_bpf_branchless (never attached): a chain of
 * ones' complement adds of values the compiler cannot know.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "nfsl_csum.h"

SEC("xdp")
int nfsl_csum_add_probe(struct xdp_md *ctx)
{
	__u32 a = ctx->data, b = ctx->data_end, c = ctx->ingress_ifindex;

	return nfsl_csum_add(nfsl_csum_add(a, b), nfsl_csum_add(c, a ^ b));
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
