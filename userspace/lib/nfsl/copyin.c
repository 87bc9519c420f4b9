// SPDX-License-Identifier: GPL-2.0
/* The new instance's side of a copy-mode migration (copyin.h). */
#include <string.h>
#include <unistd.h>

#include "nfsl/errors.h"
#include "nfsl/cfg.h"
#include "nfsl/copyin.h"
#include "nfsl/retired.h"
#include "util/util.h"

/* A configuration change of the domain at @dir (cfg.h), under the
 * host-wide lock: *@lock when it is held (>= 0: the switch takes it once,
 * so that no other session's command waits between its writes), else
 * taken for the write. */
static int cfg_write(const char *dir, const int *lock, nfsl_config_fn change, const void *arg)
{
	char err[256];
	int rc = lock && *lock >= 0 ?
			 nfsl_config_update_locked(dir, NULL, change, arg, NULL, err, sizeof(err)) :
			 nfsl_config_update(dir, NULL, change, arg, NULL, err, sizeof(err));

	return rc ? nfsl_err("%s: %s", dir, *err ? err : strerror(-rc)) : 0;
}

static int apply_threshold(struct nfsl_domain *d, const void *arg, char *err, size_t errlen)
{
	d->cfg.threshold = *(const __u32 *)arg;
	return 0;
}

/* The threshold of the domain at @dir, in place: a map write, so the
 * switch between the instances takes microseconds. */
int nfsl_mig_threshold(const char *dir, const int *lock, __u32 threshold)
{
	return cfg_write(dir, lock, apply_threshold, &threshold);
}

static int apply_key_old(struct nfsl_domain *d, const void *arg, char *err, size_t errlen)
{
	const struct nfsl_key_old_change *c = arg;

	if (c->set)
		memcpy(d->cfg.key_old, c->key, sizeof(d->cfg.key_old));
	if (c->start) {
		d->cfg.threshold = c->threshold;
		d->cfg.flags |= NFSL_CFG_KEY_OLD;
	}
	if (c->clear && (d->cfg.flags & NFSL_CFG_KEY_OLD)) {
		/* A header of the old instance released after this is stale
		 * for a grace period, not outside traffic (retired.h). */
		int rc = nfsl_retire_key(d->dir, d->cfg.key_old, nfsl_retire_grace_ms(&d->cfg));

		if (rc)
			return nfsl_errf(err, errlen, rc, "cannot retire the old instance's key: %s",
					 strerror(-rc));
		d->cfg.flags &= ~NFSL_CFG_KEY_OLD;
	}
	if (c->wipe)
		memset(d->cfg.key_old, 0, sizeof(d->cfg.key_old));
	return 0;
}

int nfsl_mig_key_old(const char *dir, const int *lock, const struct nfsl_key_old_change *c)
{
	return cfg_write(dir, lock, apply_key_old, c);
}

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
			 __u64 ttl_ns, struct nfsl_follow *f)
{
	__u32 pending = n; /* refs[0, pending): not done yet */

	for (;;) {
		__u64 now = nfsl_now_ns(), pass;
		bool last = now - t_start >= (__u64)wait_ms * 1000000;

		for (__u32 k = 0; k < pending;) {
			struct nfsl_ckpt_ref *r = &refs[k];
			struct nfsl_slot *s = &news[r->index];
			__u32 *why;

			if (!nfsl_slot_busy(s, r->gen)) {
				why = &f->spliced;
			} else if (olds && !nfsl_slot_busy((struct nfsl_slot *)&olds[r->index], r->gen)) {
				why = &f->stale;
			} else if (ttl_ns && now > r->parked_ns && now - r->parked_ns >= ttl_ns) {
				why = &f->expired;
			} else if (last) {
				why = &f->left;
			} else {
				k++;
				continue;
			}
			if (why != &f->spliced) {
				int e = nfsl_slot_evict(s, r->gen, r->parked_ns);

				if (e == NFSL_EVICT_GONE)
					why = &f->spliced;
				else if (e == NFSL_EVICT_RACED)
					why = &f->raced;
			}
			(*why)++;
			*r = refs[--pending]; /* done: the last pending one here */
		}
		if (!pending || last)
			return;
		/* A pass reads two cache lines per copy (~10 ms for 64k):
		 * rest 4 passes' time, at least 1 ms, so that following takes
		 * at most a fifth of a CPU from the splicers on it. */
		pass = (nfsl_now_ns() - now) / 1000;
		usleep(pass * 4 > 1000 ? pass * 4 : 1000);
	}
}
