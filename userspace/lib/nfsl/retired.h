/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Retired keys of a domain (issue 17 §1.2; struct nfsl_retired,
 * include/nfsl_structs.h). A header an NF holds across a key change (a
 * detach and attach under the same name, a restore of another checkpoint,
 * the end of a drain or copy-mode migration) carries a token under a key
 * the domain no longer uses. Without this list the splicer would take it
 * for outside traffic and send it on truncated; with it the header is
 * dropped as stale for a grace period (nfsl_retire_grace_ms).
 *
 * The list is one pinned map per (network namespace, domain name),
 * <bpffs>/nfslice/@retired/ns<cookie>-<name>/keys, outside the domain's
 * directory so that it outlives a detach: the splicers of the domain use it
 * (bpf/splicer.bpf.c, userspace/lib/xsk/splice.c), and the next attach under the same
 * name in the same namespace reuses it. A detach moves the domain's
 * namespace probe (domain.h, NFSL_PIN_NETNS) next to it. Namespace cookies
 * are never reused, so a list is never found by a namespace it was not
 * made in. nfsl_retired_prune removes the lists of domains not attached
 * whose grace periods all ended or whose namespace is gone (attach, gc
 * and nfsliced's gc call it).
 */
#ifndef NFSL_RETIRED_H
#define NFSL_RETIRED_H

#include <stddef.h>
#include "nfsl_structs.h"

/* Directory of the lists, under <bpffs>/nfslice. ('@' is no domain name
 * character: nfsl_name_check.) */
#define NFSL_RETIRED_DIR "@retired"
/* The list's pin in its directory. */
#define NFSL_RETIRED_KEYS "keys"

/*
 * nfsl_retired_keep_probe - move the namespace probe of the domain at @dir
 * (being removed) next to its list, so that nfsl_retired_prune learns
 * when the namespace is gone. Returns 0 (also when there is no probe) or
 * -errno.
 */
int nfsl_retired_keep_probe(const char *dir);

/*
 * nfsl_retired_path - pin path of the list of the domain whose pin
 * directory is @dir (<bpffs>/nfslice/ns<cookie>/<name>). Returns 0,
 * -EINVAL when @dir is not of that form, -ENAMETOOLONG.
 */
int nfsl_retired_path(char *buf, size_t len, const char *dir);

/* mkdir of <bpffs>/nfslice/@retired and of the list's directory for the
 * domain at @dir (a map can be pinned there). Returns 0 or -errno. */
int nfsl_retired_mkdir(const char *dir);

/*
 * nfsl_retire_grace_ms - how long a key retired from @cfg's domain is
 * recognised, in ms: the longer of NFSL_RETIRE_GRACE_MS (60 s, NFs that hold
 * headers for seconds) and the domain's TTL (a header may be held as long
 * as its payload may be parked).
 */
__u64 nfsl_retire_grace_ms(const struct nfsl_config *cfg);

/*
 * nfsl_retire_key - add @key to the retired list of the domain at @dir,
 * recognised for @grace_ms from now (a key already there gets the later
 * end). The list is created and pinned if it does not exist yet. A zero key
 * (a wiped key_old) is ignored. With every entry live, the one whose grace
 * ends first is replaced. Returns 0 or -errno (-EPROTO: the pinned list has
 * another build's layout).
 */
int nfsl_retire_key(const char *dir, const __u64 key[2], __u64 grace_ms);

/*
 * nfsl_retire_domain_keys - nfsl_retire_key of the key and, while it is
 * honoured, the key_old of @cfg, the configuration of the domain at @dir,
 * for nfsl_retire_grace_ms(@cfg). Returns 0 or the first -errno.
 */
int nfsl_retire_domain_keys(const char *dir, const struct nfsl_config *cfg);

/*
 * nfsl_retired_live - how many keys the list of the domain at @dir holds
 * in their grace period now; *@left_ns: the longest grace left, ns (0 when
 * none). Returns the count (0 when there is no list), or -errno.
 */
int nfsl_retired_live(const char *dir, __u64 *left_ns);

/*
 * nfsl_retired_prune - remove every list (keys and probe) whose domain is
 * not attached and whose grace periods all ended or whose namespace is gone
 * (its probe says so), then @retired if it is empty.
 * Returns how many lists were removed, or -errno.
 */
int nfsl_retired_prune(void);

#endif /* NFSL_RETIRED_H */
