/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The new instance's side of a copy-mode migration (nfslice migrate
 * --mode copy here, nfslice adopt on another host): the switch's
 * configuration writes and following the imported payloads until they
 * are gone (issue 10 §7; UNO §3.3.2).
 */
#ifndef NFSL_COPYIN_H
#define NFSL_COPYIN_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>
#include "nfsl/ckpt.h"
#include "nfsl_store.h"

/* The threshold of the domain at @dir, in place (a map write: the switch
 * takes microseconds), under the host-wide lock: *@lock when held (>= 0,
 * the switch takes it once), else taken for the write. 0 or -1 (printed). */
int nfsl_mig_threshold(const char *dir, const int *lock, __u32 threshold);

/* What the copy-mode configuration writes change (nfsl_config_update). */
struct nfsl_key_old_change {
	bool set;         /* key_old = key (the flag as it is: nothing
			   * verifies under it before the next write) */
	__u64 key[2];
	bool start;       /* slice (the old threshold) and honour key_old */
	bool clear;       /* stop honouring key_old */
	bool wipe;        /* zero key_old (after clear: nothing reads it) */
	__u32 threshold;
};

/* Apply @c to the domain at @dir (locking as nfsl_mig_threshold). */
int nfsl_mig_key_old(const char *dir, const int *lock, const struct nfsl_key_old_change *c);

/* The imported payloads as they end (copy mode, step 7). */
struct nfsl_follow {
	__u32 spliced; /* freed on the new instance: spliced under key_old,
			* or their slot's drop notice */
	__u32 stale;   /* spliced by the old splicer after the copy: the copy
			* freed (no header names it any more) */
	__u32 expired; /* their header never came: freed at the TTL */
	__u32 left;    /* still parked when the wait ended: freed then */
	__u32 raced;   /* changed under the eviction: left to expiry */
};

/*
 * Follow the @n imported payloads @refs in the new store @news until each
 * is gone or @wait_ms passed from @t_start: a copy whose payload the old
 * store @olds (the detached instance's, still mapped; NULL when it is on
 * another host) no longer holds under that generation was spliced (or
 * evicted) there, and no header will claim it: freed at once; one older than @ttl_ns (0: none) freed as
 * the TTL scan would; the rest freed at the end. Frees by the TTL scan's
 * compare-and-swap (nfsl_slot_evict), so a copy being spliced meanwhile is
 * never freed under the splicer.
 */
void nfsl_follow_imports(struct nfsl_slot *news, const struct nfsl_slot *olds,
			 struct nfsl_ckpt_ref *refs, __u32 n, __u64 t_start, __u32 wait_ms,
			 __u64 ttl_ns, struct nfsl_follow *f);

/*
 * nfslice adopt's standard input (userspace/lib/nfsl/adopt_stream.c; docs/format.md):
 * nfsl_adopt_read_full - exactly @n bytes of @fd into @b, or fewer at EOF:
 * the count, or -errno.
 * nfsl_adopt_read_image - the image: a little-endian __u64 length (at most
 * @max), then that many bytes into *@buf (malloc'd, the caller frees it
 * whatever the result). 0 or -errno (-EPROTO: cut short or too long).
 * nfsl_adopt_drop_stale - the copies the old splicer made stale, as the
 * sender reads them off the old store once the old instance is detached
 * ((index, generation) pairs of little-endian __u32 until EOF; an index
 * at or beyond @nslots is ignored): each freed at once in @slots and
 * taken out of @refs (*@n of them) as nfsl_follow_imports does. One pass
 * over @refs, the named ones looked up by index. 0, or -ENOMEM (nothing
 * freed: the rest waits for the TTL or the wait's end).
 */
ssize_t nfsl_adopt_read_full(int fd, void *b, size_t n);
int nfsl_adopt_read_image(int fd, __u64 max, char **buf, size_t *size);
int nfsl_adopt_drop_stale(int fd, struct nfsl_slot *slots, __u32 nslots,
			  struct nfsl_ckpt_ref *refs, __u32 *n, struct nfsl_follow *f);

#endif /* NFSL_COPYIN_H */
