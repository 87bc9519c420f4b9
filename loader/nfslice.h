/* SPDX-License-Identifier: GPL-2.0 */
/* Commands of the nfslice CLI and the helpers they share. */
#ifndef NFSL_NFSLICE_H
#define NFSL_NFSLICE_H

#include <stdbool.h>
#include "cli.h"
#include "log.h"
#include "params.h"

extern const struct nfsl_cmd nfsl_cmd_attach, nfsl_cmd_detach,
	nfsl_cmd_status, nfsl_cmd_stats;

/* Print "nfslice: <msg>" to stderr; returns -1 for `return nfsl_err(...)`. */
#define nfsl_err(...) nfsl_msg("nfslice: ", __VA_ARGS__)

/* Explain a failure to find the domain's pins (-ENOENT: no bpffs or no
 * domain), naming the fix. Returns -1. */
int nfsl_err_domain(int err, const char *name);

/* Fail unless running as root. Returns 0 or -1 after printing the fix. */
int nfsl_require_root(void);

/* Name of the XDP program in the dispatcher, to find ours again. */
#define NFSL_SLICER_PROG "nfsl_slicer"

/* Attach mode of our slicer on @ifindex: "native", "skb", or NULL when it
 * is not attached there; *@prog_id gets its id. */
const char *nfsl_slicer_attached(int ifindex, __u32 *prog_id);

/* Id of our splicer on @ifindex's tc egress hook, 0 when absent. */
__u32 nfsl_splicer_attached(int ifindex);

#endif /* NFSL_NFSLICE_H */
