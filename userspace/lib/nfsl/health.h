/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A domain's health (health.c): every interface of its config there, every
 * slicer (XDP) and splicer (egress) attached, a guard on every other
 * interface and on local delivery (guard.h), as the kernel shows them in
 * the caller's network namespace. nfslice status and list show it, repair
 * restores what is missing, upgrade needs a whole domain.
 */
#ifndef NFSL_HEALTH_H
#define NFSL_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <net/if.h>
#include "nfsl/domain.h"
#include "nfsl/guard.h"

/* One interface of a domain as the kernel shows it now, in the caller's
 * network namespace. */
struct nfsl_iface_state {
	char name[IF_NAMESIZE]; /* "" when gone */
	bool gone;              /* no such ifindex: deleted or moved away */
	const char *xdp;        /* slicer mode, NULL when missing */
	__u32 xdp_id, tc_id;    /* program ids, 0 when missing */
};

/* A domain's health: every interface there, every slicer and splicer
 * attached. */
#define NFSL_MAX_PROBLEMS (2 * NFSL_MAX_IFACES + 4)
struct nfsl_health {
	struct nfsl_iface_state ifs[NFSL_MAX_IFACES];
	unsigned int nproblems;
	bool gone;    /* an interface is gone: repair cannot help */
	bool missing; /* a slicer, splicer or guard is missing: repair
		       * restores it */
	struct nfsl_guard_state guards; /* the guards (guard.h) */
	char problems[NFSL_MAX_PROBLEMS][128];
};

/* Check domain @d (its config and pins) against the kernel, in the
 * caller's network namespace. Returns the number of problems. */
unsigned int nfsl_domain_health(const struct nfsl_domain *d, struct nfsl_health *h);

/* The name of interface @i of @h for messages: "dut0", "ifindex 7" (in
 * @buf of @len bytes when gone). */
const char *nfsl_health_ifname(const struct nfsl_health *h,
			       const struct nfsl_config *cfg, __u32 i, char *buf,
			       size_t len);

#endif /* NFSL_HEALTH_H */
