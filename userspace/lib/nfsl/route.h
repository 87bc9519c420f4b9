/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The slicer's route verdict cache, seen from user space (issue 19 item 2;
 * bpf/nfsl_route.h, docs/format.md "Where a packet is sliced"): the
 * generation that invalidates it.
 */
#ifndef NFSL_LIB_ROUTE_H
#define NFSL_LIB_ROUTE_H

#include <linux/types.h>

#include "nfsl/domain.h"

/*
 * nfsl_route_gen_bump - invalidate every route verdict the slicers of
 * domain @d cached (on every CPU and interface): adds 1 to the domain's
 * route generation (pin "route_gen", one __u64) with one atomic write
 * through an mmap, so concurrent bumps are never lost. The next packet
 * of every flow is looked up in the FIB (and conntrack) again. Call it
 * after every change that may change where a packet leaves or its MTU:
 * routes, rules, addresses, links, MTUs, nexthops, the domain's
 * interfaces. Cost: four system calls; nothing for a domain with the
 * cache off. *@gen (may be NULL) gets the new generation.
 * Returns 0, -ENOENT when the domain has no route_gen pin (attached by an
 * older nfslice: `nfslice upgrade` gives it one), -EPROTO when the pin is
 * no generation map, or another -errno of bpf(2) or mmap(2).
 */
int nfsl_route_gen_bump(const struct nfsl_domain *d, __u64 *gen);

/* The same for the domain whose pins are in directory @dir (attach, before
 * the domain can be opened). */
int nfsl_route_gen_bump_at(const char *dir, __u64 *gen);

/* nfsl_route_gen_read - the domain @d's route generation into *@gen.
 * Returns 0 or the errors of nfsl_route_gen_bump. */
int nfsl_route_gen_read(const struct nfsl_domain *d, __u64 *gen);

#endif /* NFSL_LIB_ROUTE_H */
