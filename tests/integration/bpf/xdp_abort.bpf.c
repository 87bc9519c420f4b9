// SPDX-License-Identifier: GPL-2.0
/*
 * An XDP program that aborts every frame: test_bcc.py counts the
 * xdp_exception events nfslice-drops reports for it.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_abort(struct xdp_md *ctx)
{
	return XDP_ABORTED;
}

char LICENSE[] SEC("license") = "GPL";
