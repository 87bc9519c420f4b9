/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Runtime changes of a domain's configuration, without detaching and
 * without losing parked payloads (issue 10 §3; docs/manager.md "Runtime
 * configuration"): the fields the datapath reads per packet and that no
 * parked payload depends on. The splicer finds a payload through its token
 * and slot alone, so a new keep or threshold applies to the next packet
 * sliced and the ones in flight splice as before; a new expiry or TTL
 * applies to every busy slot from the next visit of the allocator or
 * scan.
 *
 * Two writers never race: a change takes the host-wide lock
 * (nfsl_domains_lock), reads the configuration, checks the generation the
 * writer last saw if it gave one, writes, and bumps cfg_gen.
 */
#ifndef NFSL_CFG_H
#define NFSL_CFG_H

#include <stdbool.h>
#include <stddef.h>

#include "nfsl/domain.h"

/* Changes of one request: a field applies when its has_ flag is set. */
struct nfsl_cfg_change {
	bool has_threshold, has_keep, has_expiry, has_ttl, has_events;
	__u32 threshold; /* frame bytes, 0..65535 */
	__u32 keep;      /* payload bytes, 0..NFSL_KEEP_MAX */
	__u32 expiry;    /* allocator turns, 1..NFSL_MAX_EXPIRY */
	__u32 ttl_ms;    /* ms, 0 = no TTL eviction, ..NFSL_MAX_TTL_MS */
	__u32 events;    /* 1: write drop events (NFSL_CFG_EVENTS), 0: not */
};

/* Largest TTL: 60 s (the manager's scan runs every TTL / 4). */
#define NFSL_MAX_TTL_MS 60000

/* Any change at all? */
bool nfsl_cfg_change_any(const struct nfsl_cfg_change *c);

/*
 * nfsl_cfg_change_check - are @c's values in range? Returns 0, or -ERANGE
 * with a message in @err naming the field, its range and unit.
 */
int nfsl_cfg_change_check(const struct nfsl_cfg_change *c, char *err, size_t errlen);

/*
 * nfsl_config_change - apply @c to the domain at pin directory @dir: under
 * the host-wide lock, read its config; when @if_gen is not NULL and
 * differs from the config's cfg_gen, change nothing (-ESTALE: another
 * writer came first; read again and retry); else apply, bump cfg_gen and
 * write. *@out (may be NULL) gets the configuration as written (or as
 * found, on -ESTALE). Returns 0, -ERANGE (bad value), -ESTALE, -ENOENT (no
 * such domain), other -errno (the message, if any, in @err).
 */
int nfsl_config_change(const char *dir, const struct nfsl_cfg_change *c, const __u32 *if_gen,
		       struct nfsl_config *out, char *err, size_t errlen);

/* A change of the domain's open config d->cfg (message in @err on error). */
typedef int (*nfsl_config_fn)(struct nfsl_domain *d, const void *arg, char *err,
			      size_t errlen);

/*
 * nfsl_config_update - the one runtime change every writer makes (set,
 * tenant quotas, nfsliced): under the host-wide lock, read the config of
 * the domain at @dir, refuse a stale @if_gen (-ESTALE), apply @change, bump
 * cfg_gen and write. *@out (may be NULL) as nfsl_config_change. Returns 0,
 * -ESTALE, -ENOENT, @change's error, or another -errno, with @err set.
 */
int nfsl_config_update(const char *dir, const __u32 *if_gen, nfsl_config_fn change,
		       const void *arg, struct nfsl_config *out, char *err, size_t errlen);

/*
 * nfsl_config_update_locked - the same for a caller that holds the
 * host-wide lock already (nfsl_domains_lock): a migration's switch makes
 * several changes of two domains in a row and must not wait for another
 * session's lock between them (that wait would be unsliced time).
 */
int nfsl_config_update_locked(const char *dir, const __u32 *if_gen, nfsl_config_fn change,
			      const void *arg, struct nfsl_config *out, char *err,
			      size_t errlen);

#endif /* NFSL_CFG_H */
