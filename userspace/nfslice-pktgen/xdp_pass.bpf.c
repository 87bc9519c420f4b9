// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer programs of nfslice-pktgen (--peer-xdp): a veth takes frames that
 * XDP sends into it only while its peer runs an XDP program (docs/platform.md).
 *   xdp_pass  hands every frame on to the peer's network stack
 *   xdp_drop  drops every frame: measures the generator without the cost of
 *             the receiving stack (which runs on the generator's CPU)
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

SEC("xdp")
int xdp_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
