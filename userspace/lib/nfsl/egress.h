/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The splicer's egress hook (egress.c): TCX where the kernel has it
 * (Linux >= 6.6), else a direct-action filter on a tc clsact qdisc.
 * All in the caller's network namespace.
 */
#ifndef NFSL_EGRESS_H
#define NFSL_EGRESS_H

#include <linux/types.h>
#include "nfsl/domain.h"

/* Name of the splicer program, to find ours among an egress hook's. */
#define NFSL_SPLICER_PROG "nfsl_splicer"

/* Attach @prog_fd to @ifindex's egress: TCX where the kernel has it
 * (NFSL_IF_TCX set in *@flags), else a tc clsact filter
 * (NFSL_IF_CREATED_CLSACT when the qdisc was made for it). 0 or -errno. */
int nfsl_egress_attach(int ifindex, int prog_fd, __u32 *flags);

/* Replace our splicer on @ifc's egress with @prog_fd in one step. 0 or
 * -errno (-ENOENT: no splicer of ours there). */
int nfsl_egress_replace(const struct nfsl_iface *ifc, int prog_fd);

/* Remove our splicer from @ifc's egress (TCX or clsact filter) and the
 * clsact qdisc if attach made it. */
void nfsl_egress_detach(const struct nfsl_iface *ifc);

/* Id of our splicer on @ifindex's egress (TCX or tc), 0 when absent. */
__u32 nfsl_splicer_attached(int ifindex);

#endif /* NFSL_EGRESS_H */
