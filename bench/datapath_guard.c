// SPDX-License-Identifier: GPL-2.0
/*
 * The FORWARD guard's rows of nfslice-bench-datapath (issue 19 item 1,
 * bpf/guard.bpf.c nfsl_guard_nf): what the netfilter guard costs every
 * routed packet of a domain's namespace, next to an empty netfilter
 * program (nf-empty), both run at NF_INET_FORWARD by BPF_PROG_TEST_RUN,
 * whose out device is the namespace's lo:
 *   guard-fwd-domain  a guard whose domain has lo among its interfaces:
 *                     the early accept that every packet forwarded to a
 *                     domain interface or NF port pays;
 *   guard-fwd         the domain's own guard (lo is none of its
 *                     interfaces): the parse and token check of a packet
 *                     routed elsewhere, on the case's unsliced frame.
 */
#include <errno.h>
#include <string.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "datapath.h"
#include "nfsl/guard.h"
#include "bench_nf.skel.h"
#include "guard.skel.h"

/* A guard on the slicer's store and counters; its config the slicer's
 * too, or (@own_config) one of its own. */
static int open_guard(struct bench *b, struct guard_bpf **g, bool own_config)
{
	int err;

	*g = guard_bpf__open();
	if (!*g)
		return pr_err("cannot open the guard object: %s", strerror(errno)), -1;
	err = nfsl_nf_prog_type((*g)->progs.nfsl_guard_nf);
	if (err)
		return pr_err("cannot type the netfilter guard: %s", strerror(-err)), -1;
	if (dp_reuse_maps((*g)->maps.nfsl_store, own_config ? NULL : (*g)->maps.nfsl_config,
			  (*g)->maps.nfsl_counters, NULL, b->sl))
		return -1;
	err = guard_bpf__load(*g);
	if (err)
		return pr_err("cannot load the guard (netfilter programs need Linux >= 6.4): %s",
			      strerror(-err)), -1;
	return 0;
}

int dp_setup_guards(struct bench *b)
{
	struct nfsl_config t = b->cfg;
	unsigned int lo = if_nametoindex("lo");
	__u32 zero = 0;
	int err;

	b->bn = bench_nf_bpf__open();
	if (!b->bn)
		return pr_err("cannot open the netfilter baseline: %s", strerror(errno)), -1;
	err = nfsl_nf_prog_type(b->bn->progs.bench_nf_empty);
	if (!err)
		err = bench_nf_bpf__load(b->bn);
	if (err)
		return pr_err("cannot load the netfilter baseline: %s", strerror(-err)), -1;
	if (open_guard(b, &b->gd, false) || open_guard(b, &b->gdd, true))
		return -1;
	if (!lo || t.nifaces >= NFSL_MAX_IFACES)
		return pr_err("no room for lo in the domain of guard-fwd-domain"), -1;
	memset(&t.ifaces[t.nifaces], 0, sizeof(t.ifaces[0]));
	t.ifaces[t.nifaces++].ifindex = lo;
	if (bpf_map_update_elem(bpf_map__fd(b->gdd->maps.nfsl_config), &zero, &t, BPF_ANY))
		return pr_err("cannot configure guard-fwd-domain: %s", strerror(errno)), -1;
	return 0;
}

void dp_destroy_guards(struct bench *b)
{
	guard_bpf__destroy(b->gdd);
	guard_bpf__destroy(b->gd);
	bench_nf_bpf__destroy(b->bn);
}

int dp_guard_fd(const struct bench *b, int id)
{
	switch (id) {
	case B_NF_EMPTY:
		return bpf_program__fd(b->bn->progs.bench_nf_empty);
	case B_GUARD_FWD:
		return bpf_program__fd(b->gd->progs.nfsl_guard_nf);
	default:
		return bpf_program__fd(b->gdd->progs.nfsl_guard_nf);
	}
}

int dp_nf_block(struct bench *b, const struct bcase *c, int fd, unsigned int iters,
		__u64 *dur)
{
	struct nfsl_nf_test_state st = { .hook = 2 /* NF_INET_FORWARD */, .pf = c->v6 ? 10 : 2 };
	/* clang-format off */
	LIBBPF_OPTS(bpf_test_run_opts, t,
		.data_in = c->pkt,
		.data_size_in = c->size,
		.ctx_in = &st,
		.ctx_size_in = sizeof(st),
	);
	/* clang-format on */

	for (unsigned int i = 0; i < iters; i++) {
		if (bpf_prog_test_run_opts(fd, &t))
			return pr_err("netfilter test run failed: %s", strerror(errno)), -errno;
		if (t.retval != 1 /* NF_ACCEPT */)
			return pr_err("the guard dropped an unsliced %u B frame (verdict %u)",
				      c->size, t.retval), -EPROTO;
		*dur += t.duration;
	}
	return 0;
}
