/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The slicer's ingress hook (ingress.c): XDP through the libxdp dispatcher,
 * in the caller's network namespace.
 */
#ifndef NFSL_INGRESS_H
#define NFSL_INGRESS_H

#include <linux/types.h>
#include "nfsl/domain.h"

/* Name of the XDP program in the dispatcher, to find ours again. */
#define NFSL_SLICER_PROG "nfsl_slicer"

/* The name of XDP attach mode @mode (0 native, 1 skb), as --mode spells it. */
static inline const char *nfsl_xdp_mode_name(int mode)
{
	return mode ? "skb" : "native";
}

/* Attach mode of our slicer on @ifindex: "native", "skb", or NULL when it
 * is not attached there; *@prog_id gets its id. */
const char *nfsl_slicer_attached(int ifindex, __u32 *prog_id);

/* Attach the slicer to @ifindex in XDP mode @mode (0 native, 1 skb) on the
 * maps of the domain at @dir (@slots its store). A new instance through
 * libxdp, unless *@alone_fd (may be NULL) holds one already running alone
 * on another interface of the domain: that one is attached, as libxdp
 * would without its dispatcher. After a libxdp attach *@alone_fd gets the
 * new instance if it runs alone (the kernel refused the dispatcher), else
 * stays -1; the caller closes it. Returns 0 or -errno (-ERANGE: the MTU
 * is too large for XDP). */
int nfsl_slicer_attach(int ifindex, const char *dir, __u32 slots, int mode, int *alone_fd);

/* Remove our slicer from @ifindex and check it is gone. Returns 0, or
 * -errno (-EBUSY when the kernel still shows it) naming why not. */
int nfsl_slicer_detach(int ifindex);

/* Swap the slicer on @ifc (of domain @d) for *@new_fd, in one step
 * (XDP_FLAGS_REPLACE); when *@new_fd is -1, for a fresh instance of this
 * build's, loaded here and left in *@new_fd for the domain's other
 * interfaces (the caller closes it). *@old_id and *@new_id get the
 * programs' ids. Returns 0, or -errno (-ENOENT: no slicer of ours alone
 * there). */
int nfsl_slicer_replace(const struct nfsl_iface *ifc, const struct nfsl_domain *d,
			__u32 *old_id, __u32 *new_id, int *new_fd);

/* libxdp falls back to a single program per interface when the kernel
 * refuses its dispatcher (e.g. freplace programs not permitted): say so
 * for each interface of @cfg where it did, since other XDP programs then
 * cannot run beside the slicer. */
void nfsl_slicer_warn_legacy(const struct nfsl_config *cfg);

/* Name a foreign XDP program that runs alone on @ifindex (@ifname; no
 * dispatcher), which the slicer cannot join. Returns 0 or -1 after the
 * message. */
int nfsl_slicer_check_foreign(int ifindex, const char *ifname);

#endif /* NFSL_INGRESS_H */
