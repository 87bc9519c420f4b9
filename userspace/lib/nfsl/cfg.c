// SPDX-License-Identifier: GPL-2.0
/* Runtime configuration changes of a domain (cfg.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "nfsl/cfg.h"

bool nfsl_cfg_change_any(const struct nfsl_cfg_change *c)
{
	return c->has_threshold || c->has_keep || c->has_expiry || c->has_ttl || c->has_events;
}

int nfsl_cfg_change_check(const struct nfsl_cfg_change *c, char *err, size_t errlen)
{
	if (c->has_threshold && c->threshold > 65535)
		goto range;
	if (c->has_keep && c->keep > NFSL_KEEP_MAX)
		goto range;
	if (c->has_expiry && (c->expiry < 1 || c->expiry > NFSL_MAX_EXPIRY))
		goto range;
	if (c->has_ttl && c->ttl_ms > NFSL_MAX_TTL_MS)
		goto range;
	if (c->has_events && c->events > 1)
		goto range;
	return 0;
range:
	snprintf(err, errlen,
		 "out of range: threshold is 0..65535 frame bytes, keep 0..%u payload "
		 "bytes, expiry 1..%u allocator turns, ttl 0..%u ms (0: no TTL), "
		 "events 0 or 1",
		 NFSL_KEEP_MAX, NFSL_MAX_EXPIRY, NFSL_MAX_TTL_MS);
	return -ERANGE;
}

int nfsl_config_update_locked(const char *dir, const __u32 *if_gen, nfsl_config_fn change,
			      const void *arg, struct nfsl_config *out, char *err, size_t errlen)
{
	struct nfsl_domain d;
	__u32 zero = 0;
	int rc;

	*err = '\0';
	rc = nfsl_domain_open_dir(&d, dir);
	if (rc)
		return rc;
	if (if_gen && *if_gen != d.cfg.cfg_gen) {
		snprintf(err, errlen,
			 "the configuration changed since generation %u (now %u): read it "
			 "again and retry", *if_gen, d.cfg.cfg_gen);
		rc = -ESTALE;
		goto out;
	}
	rc = change(&d, arg, err, errlen);
	if (rc)
		goto out;
	d.cfg.cfg_gen++;
	/* One write of the whole value: each field is an aligned 32-bit word
	 * the datapath reads on its own. */
	if (bpf_map_update_elem(d.config_fd, &zero, &d.cfg, BPF_ANY)) {
		rc = -errno;
		snprintf(err, errlen, "cannot write the configuration: %s", strerror(-rc));
		d.cfg.cfg_gen--;
	}
out:
	if (out)
		*out = d.cfg;
	nfsl_domain_close(&d);
	return rc;
}

int nfsl_config_update(const char *dir, const __u32 *if_gen, nfsl_config_fn change,
		       const void *arg, struct nfsl_config *out, char *err, size_t errlen)
{
	int lock, rc;

	*err = '\0';
	lock = nfsl_domains_lock();
	if (lock < 0) {
		snprintf(err, errlen, "cannot lock %s: %s", NFSL_LOCK_FILE,
			 nfsl_lock_strerror(lock));
		return lock;
	}
	rc = nfsl_config_update_locked(dir, if_gen, change, arg, out, err, errlen);
	close(lock);
	return rc;
}

static int apply_change(struct nfsl_domain *d, const void *arg, char *err, size_t errlen)
{
	const struct nfsl_cfg_change *c = arg;

	if (c->has_threshold)
		d->cfg.threshold = c->threshold;
	if (c->has_keep)
		d->cfg.keep = c->keep;
	if (c->has_expiry)
		d->cfg.expiry = c->expiry;
	if (c->has_ttl)
		d->cfg.ttl_us = c->ttl_ms * 1000;
	if (c->has_events)
		d->cfg.flags = c->events ? d->cfg.flags | NFSL_CFG_EVENTS
					 : d->cfg.flags & ~NFSL_CFG_EVENTS;
	return 0;
}

int nfsl_config_change(const char *dir, const struct nfsl_cfg_change *c, const __u32 *if_gen,
		       struct nfsl_config *out, char *err, size_t errlen)
{
	int rc = nfsl_cfg_change_check(c, err, errlen);

	if (rc)
		return rc;
	return nfsl_config_update(dir, if_gen, apply_change, c, out, err, errlen);
}
