// SPDX-License-Identifier: GPL-2.0
/*
 * The NFs of the AF_XDP datapath's benchmarks (thesis §6.3): rxdrop, the
 * cost of reception alone, and l2fwd (nfsl_nf.h), which warns when the
 * frames it sends reach nobody (a router: use fwd, fwd.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cli.h"
#include "nf/nfsl_nf.h"
#include "nf/nfsl_nf_fwd.h"
#include "util/params.h"

static void rxdrop(void *shared, void *mine, struct nfsl_nf_pkt *p, unsigned int n,
		   const struct nfsl_nf_ctx *ctx)
{
	for (unsigned int i = 0; i < n; i++)
		p[i].out = NFSL_NF_DROP;
}

/* l2fwd on two devices, where the kernel's neighbour table can tell a
 * frame that reaches nobody (nfsl_nf_fwd.h): the neighbours at start, and
 * whether the warning was given. */
struct l2fwd_shared {
	struct nfsl_nf_neigh nt;
	const char *devs[2];
	int warned;
};

struct l2fwd_worker {
	__u64 misdirected; /* sent out of one device to a neighbour of the other only */
};

/* l2fwd's one KEY=VALUE option, read by nfsl_kv_parse: the test hook
 * neigh= (a neighbour table file instead of the kernel's). */
static const struct nfsl_opt l2fwd_keys[] = {
	{ "neigh", NFSL_OPT_STR, 0, .metavar = "PATH" },
	{ NULL },
};

static int l2fwd_init(void **shared, const struct nfsl_nf_conf *conf, char *err,
		      size_t errlen)
{
	const char *neigh = NULL;
	struct l2fwd_shared *sh;

	if (nfsl_kv_parse(l2fwd_keys, conf->kv, &neigh, err, errlen))
		return -EINVAL;
	/* One device: the frame goes back where its sender is. */
	if (conf->ndevs != 2 || !conf->devs)
		return 0;
	sh = calloc(1, sizeof(*sh));
	if (!sh) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	sh->devs[0] = conf->devs[0];
	sh->devs[1] = conf->devs[1];
	/* Unreadable: no check, as before (the NF itself works). */
	nfsl_nf_neigh_load(&sh->nt, neigh, conf->devs, 2);
	*shared = sh;
	return 0;
}

static void l2fwd_fini(void *shared)
{
	free(shared);
}

static void *l2fwd_worker_new(void *shared, unsigned int w, unsigned int nworkers)
{
	return calloc(1, sizeof(struct l2fwd_worker));
}

static void l2fwd_worker_fini(void *mine)
{
	free(mine);
}

static unsigned int l2fwd_counter_list(void *mine, const char **names, __u64 *vals,
				       unsigned int max)
{
	static const char *const all[] = { "misdirected" };
	__u64 v = mine ? __atomic_load_n(&((struct l2fwd_worker *)mine)->misdirected,
					 __ATOMIC_RELAXED) : 0;

	return nfsl_nf_list(all, &v, 1, names, vals, max);
}

/* Swap the Ethernet addresses and send the frame back out of the device
 * it came from, or out of the other one of two (DPDK l2fwd's port
 * pairing). Frames shorter than an Ethernet header are dropped. On two
 * devices, a frame addressed to a neighbour of the device it came in by
 * and not of the one it leaves by reaches nobody (a router's links):
 * counted, and said once on stderr. */
static void l2fwd(void *shared, void *mine, struct nfsl_nf_pkt *p, unsigned int n,
		  const struct nfsl_nf_ctx *ctx)
{
	struct l2fwd_shared *sh = shared;
	struct l2fwd_worker *me = mine;
	__u64 bad = 0;

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
		if (!sh || p[i].out == p[i].in || !nfsl_nf_neigh_on(&sh->nt, p[i].data, p[i].in) ||
		    nfsl_nf_neigh_on(&sh->nt, p[i].data, p[i].out))
			continue;
		bad++;
		if (!__atomic_exchange_n(&sh->warned, 1, __ATOMIC_RELAXED))
			nfsl_warn(NFSL_NF_PROG ": warning: ",
				  "l2fwd sends frames out of %s addressed to "
				  "%02x:%02x:%02x:%02x:%02x:%02x, a neighbour of %s only: nobody on "
				  "%s's link takes them (l2fwd swaps the MACs; as a router use "
				  "--nf fwd, docs/xsk.md); counted in nf_counters l2fwd misdirected",
				  sh->devs[p[i].out & 1], p[i].data[0], p[i].data[1], p[i].data[2],
				  p[i].data[3], p[i].data[4], p[i].data[5], sh->devs[p[i].in & 1],
				  sh->devs[p[i].out & 1]);
	}
	if (me && bad)
		__atomic_store_n(&me->misdirected, me->misdirected + bad, __ATOMIC_RELAXED);
}

const struct nfsl_nf_ops nfsl_nf_rxdrop = {
	.name = "rxdrop",
	.help = "drop every frame (reception cost alone)",
	.burst = rxdrop,
};

const struct nfsl_nf_ops nfsl_nf_l2fwd = {
	.name = "l2fwd",
	.help = "swap MACs, send back out (or out of the other of two devices: "
		"not a router, see fwd)",
	.init = l2fwd_init,
	.worker = l2fwd_worker_new,
	.burst = l2fwd,
	.worker_fini = l2fwd_worker_fini,
	.counters = l2fwd_counter_list,
	.fini = l2fwd_fini,
};
