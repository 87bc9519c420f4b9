// SPDX-License-Identifier: GPL-2.0
/*
 * A foreign XDP program: what another XDP user loads on a device nfslice
 * also wants (test_uppers.py: on an upper device; test_invariant_link.py:
 * one that makes the kernel refuse nfslice's detach). One program in
 * section "xdp", so `ip link set DEV xdp obj O sec xdp` finds it.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int foreign_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
