/* SPDX-License-Identifier: GPL-2.0 */
/* nfslice upgrade's engine (upgrade.c). */
#ifndef NFSL_UPGRADE_H
#define NFSL_UPGRADE_H

#include <stdbool.h>
#include <linux/types.h>

/* What an upgrade replaced, and when each step ended (ns,
 * CLOCK_MONOTONIC). */
struct nfsl_upgrade_result {
	int nsplicers, nslicers;
	__u64 t_start, t_locked, t_loaded, t_splicers, t_slicers;
};

/*
 * nfsl_upgrade - replace the slicer and splicer of domain @name of the
 * caller's network namespace with this build's programs, under the
 * host-wide lock, keeping its pinned store, key, configuration, counters,
 * cursors and chain map: every splicer in place first, then every slicer
 * in one step each (each printed unless @quiet). Refuses a damaged domain
 * (nothing changed). Returns 0 or -1 after a message; @res filled.
 */
int nfsl_upgrade(const char *name, bool quiet, struct nfsl_upgrade_result *res);

#endif /* NFSL_UPGRADE_H */
