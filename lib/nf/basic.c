// SPDX-License-Identifier: GPL-2.0
/*
 * The NFs of the AF_XDP datapath's benchmarks (thesis §6.3): rxdrop, the
 * cost of reception alone, and l2fwd (nfsl_nf.h).
 */
#include <string.h>

#include "nfsl_nf.h"

static void rxdrop(void *shared, void *mine, struct nfsl_nf_pkt *p, unsigned int n,
		   const struct nfsl_nf_ctx *ctx)
{
	for (unsigned int i = 0; i < n; i++)
		p[i].out = NFSL_NF_DROP;
}

/* Swap the Ethernet addresses and send the frame back out of the device
 * it came from, or out of the other one of two (DPDK l2fwd's port
 * pairing). Frames shorter than an Ethernet header are dropped. */
static void l2fwd(void *shared, void *mine, struct nfsl_nf_pkt *p, unsigned int n,
		  const struct nfsl_nf_ctx *ctx)
{
	for (unsigned int i = 0; i < n; i++) {
		__u8 tmp[6];

		if (p[i].out == NFSL_NF_DROP)
			continue;
		if (p[i].len < 14) {
			p[i].out = NFSL_NF_DROP;
			continue;
		}
		memcpy(tmp, p[i].data, 6);
		memcpy(p[i].data, p[i].data + 6, 6);
		memcpy(p[i].data + 6, tmp, 6);
		p[i].out = ctx->ndevs == 2 ? p[i].in ^ 1 : p[i].in;
	}
}

const struct nfsl_nf_ops nfsl_nf_rxdrop = {
	.name = "rxdrop",
	.help = "drop every frame (reception cost alone)",
	.burst = rxdrop,
};

const struct nfsl_nf_ops nfsl_nf_l2fwd = {
	.name = "l2fwd",
	.help = "swap MACs, send back out (or out of the other of two devices)",
	.burst = l2fwd,
};
