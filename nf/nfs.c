// SPDX-License-Identifier: GPL-2.0
/*
 * The NFs of the AF_XDP datapath's benchmarks (thesis §6.3): rxdrop and
 * l2fwd. Pure functions over a burst (nf.h).
 */
#include <string.h>

#include "nf.h"

/* rxdrop: receive and drop, the cost of reception alone. */
static void rxdrop(struct nf_pkt *p, unsigned int n, unsigned int ndevs)
{
	for (unsigned int i = 0; i < n; i++)
		p[i].out = NF_DROP;
}

/* l2fwd: swap the Ethernet addresses and send the frame back out of the
 * device it came from, or out of the other one when there are two (DPDK
 * l2fwd's port pairing). Frames shorter than an Ethernet header are
 * dropped. */
static void l2fwd(struct nf_pkt *p, unsigned int n, unsigned int ndevs)
{
	for (unsigned int i = 0; i < n; i++) {
		__u8 tmp[6];

		if (p[i].len < 14) {
			p[i].out = NF_DROP;
			continue;
		}
		memcpy(tmp, p[i].data, 6);
		memcpy(p[i].data, p[i].data + 6, 6);
		memcpy(p[i].data + 6, tmp, 6);
		p[i].out = ndevs == 2 ? p[i].in ^ 1 : p[i].in;
	}
}

static const struct nf_ops nf_rxdrop = { "rxdrop", rxdrop };
static const struct nf_ops nf_l2fwd = { "l2fwd", l2fwd };

const struct nf_ops *const nf_all[] = { &nf_rxdrop, &nf_l2fwd, NULL };
