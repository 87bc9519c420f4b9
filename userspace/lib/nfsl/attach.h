/* SPDX-License-Identifier: GPL-2.0 */
/* nfslice attach's engine (attach.c). */
#ifndef NFSL_ATTACH_H
#define NFSL_ATTACH_H

#include <stdbool.h>
#include <linux/types.h>

/* What to attach: nfslice attach's options, as given. */
struct nfsl_attach_req {
	const char *name;     /* domain name */
	const char *nf_ports; /* comma-separated interface names, or NULL */
	const char *tenants;  /* tenants file (tenant.h), or NULL */
	__u32 threshold, keep, slots, expiry; /* bytes, bytes, slots, wraps */
	__u32 ttl;            /* ms, 0: off */
	__u32 route_cache_ms; /* age limit of cached route verdicts, ms; 0: no cache */
	int mode;             /* XDP mode: 0 native, 1 skb */
	bool no_ct_liberal;   /* leave nf_conntrack_tcp_be_liberal alone */
	bool events;          /* write drop events (NFSL_CFG_EVENTS) */
};

/*
 * nfsl_attach - attach domain @r->name to the @argc interfaces @argv (and
 * the NF ports of @r) in the caller's network namespace, under the
 * host-wide lock: the config (key, geometry, interfaces, tenants), the
 * namespace probe, the splicer pinned, every splicer (GRO merges off)
 * before any slicer, be_liberal set (unless @r->no_ct_liberal), the tenant
 * rules. Prints the domain and its pins. Returns 0, -1 after a message, or
 * NFSL_EXIT_USAGE when the user's input was wrong (slots too few, the
 * tenants file); a failed attach leaves nothing behind.
 */
int nfsl_attach(const struct nfsl_attach_req *r, int argc, char **argv);

#endif /* NFSL_ATTACH_H */
