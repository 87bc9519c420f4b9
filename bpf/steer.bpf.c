// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * nfslice steering: hands received UDP/TCP frames to the AF_XDP sockets of
 * a user-space NF (nfslice-nf, userspace/lib/xsk), everything else to the kernel.
 *
 * On an interface of a slicing domain it runs after the slicer, which
 * tail-calls it (the slicer's chain map, bpf/slicer.bpf.c): so the NF gets
 * the sliced header, never a frame the slicer has not seen. Elsewhere it
 * is the interface's XDP program. The socket is picked per flow with the
 * symmetric hash of include/nfsl_flow.h among the sockets bound to the
 * frame's (interface, RX queue) (include/nfsl_steer.h); a frame whose
 * socket is gone falls back to the kernel (bpf_redirect_map's default
 * action), which is what lets the NF shut down without loss.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xdp/xdp_helpers.h>

#include "nfsl_flow.h"
#include "nfsl_steer.h"

/* When attached on its own (no slicer): before programs of the default
 * priority, and the next one runs when we pass. */
struct {
	__uint(priority, 40);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(nfsl_steer);

/* The NF's sockets: key base + worker of a group (nfsl_steer_grp). */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, NFSL_XSK_MAX_SOCKS);
	__type(key, __u32);
	__type(value, __u32);
} nfsl_xsks SEC(".maps");

/* (interface, RX queue) -> the group of sockets bound to it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NFSL_XSK_MAX_GROUPS);
	__type(key, struct nfsl_steer_key);
	__type(value, struct nfsl_steer_grp);
} nfsl_groups SEC(".maps");

/* What happened to the frames, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsl_steer_counters);
} nfsl_steer_stats SEC(".maps");

/* Multi-buffer (BPF_F_XDP_HAS_FRAGS) as the slicer that tail-calls it
 * (a program array holds programs of one kind only); so it also attaches
 * alone at any MTU. */
SEC("xdp.frags")
int nfsl_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct nfsl_steer_key k = { .ifindex = ctx->ingress_ifindex,
				    .queue = ctx->rx_queue_index };
	struct nfsl_steer_counters *cnt;
	struct nfsl_steer_grp *g;
	struct nfsl_pkt p = {};
	__u32 zero = 0, key;
	long act;

	cnt = bpf_map_lookup_elem(&nfsl_steer_stats, &zero);
	if (!cnt)
		return XDP_PASS;
	g = bpf_map_lookup_elem(&nfsl_groups, &k);
	if (!g || !g->nsock) {
		cnt->no_group++;
		return XDP_PASS;
	}
	/* Redirected, a frame with frags would be dropped by the kernel
	 * (the sockets are bound without XDP_USE_SG): the kernel gets it. */
	if (bpf_xdp_get_buff_len(ctx) > (__u64)(data_end - data)) {
		cnt->multibuf++;
		return XDP_PASS;
	}
	if (nfsl_parse(data, data_end, &p)) {
		cnt->not_ip++;
		return XDP_PASS;
	}
	key = g->base;
	if (g->nsock > 1)
		key += nfsl_steer_pick(data, data_end, &p, g->mode, g->start_port, g->nsock);
	act = bpf_redirect_map(&nfsl_xsks, key, XDP_PASS);
	if (act == XDP_REDIRECT)
		cnt->steered++;
	else
		cnt->no_sock++;
	return act;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
