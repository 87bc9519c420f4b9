// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The slicer without its FIB lookup, for nfslice-bench-datapath only: what
 * the route check (bpf/nfsl_route.h) costs is the slicer minus this. The
 * check keeps its cheap part (ingress interface of the domain, frame for
 * its own MAC) and then answers "slice" without bpf_fib_lookup and without
 * the conntrack lookup of FIB-local packets. Never attach it: it would
 * slice packets that leave where no splicer waits.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "nfsl_route.h"

static __always_inline int nfsl_route_nofib(struct xdp_md *ctx,
					    const struct nfsl_config *cfg,
					    const struct nfsl_pkt *p, __u32 *dst)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	const struct nfsl_iface *in;

	in = nfsl_iface_find(cfg, ctx->ingress_ifindex);
	if (!in || (in->flags & NFSL_IF_NF_PORT))
		return NFSL_ROUTE_OTHER;
	if ((void *)((struct ethhdr *)data + 1) > data_end ||
	    !nfsl_for_us(data, in))
		return NFSL_ROUTE_L2;
	return NFSL_ROUTE_SLICE;
}

/* The slicer's own source, its route check replaced (nfsl_route.h is
 * already included, so its guard keeps the real one out). */
#define nfsl_route(ctx, cfg, p, dst) nfsl_route_nofib(ctx, cfg, p, dst)
#include "slicer.bpf.c"
