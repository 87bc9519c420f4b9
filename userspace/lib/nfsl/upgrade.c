// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice upgrade's engine: replace the slicer and splicer of a running domain with
 * this build's programs (issue 10 §6), reusing the pinned store, key,
 * configuration, counters, cursors and chain map.
 *
 * Never two slicers in series: on an interface the kernel holds one XDP
 * program, and XDP_FLAGS_REPLACE swaps the old for the new in one step
 * (bpf_xdp_attach with old_prog_fd: it fails, changing nothing, if another
 * program took the hook meanwhile). Never a slicer without a splicer:
 * every splicer is replaced first, in place (tc filter replace, the same
 * handle and priority), and the new splicer reads the tokens of the old
 * slicer (same store, key and token format), so at every moment each
 * interface has exactly one slicer and one splicer.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsl/upgrade.h"
#include "nfsl/egress.h"
#include "nfsl/errors.h"
#include "nfsl/health.h"
#include "nfsl/ingress.h"
#include "nfsl/pins.h"
#include "util/util.h"
#include "splicer.skel.h"

/* Load this build's splicer on the domain's maps. */
static int load_splicer_new(const struct nfsl_domain *d, struct splicer_bpf **out)
{
	struct splicer_bpf *sp = splicer_bpf__open();
	int err;

	if (!sp)
		return -errno;
	err = nfsl_use_domain_maps(sp->obj, d->dir, d->cfg.slots);
	if (!err)
		err = splicer_bpf__load(sp);
	if (err) {
		splicer_bpf__destroy(sp);
		return err;
	}
	*out = sp;
	return 0;
}

/* Pin the new splicer in place of the old one: pin beside, rename over
 * (the pin never goes missing for repair or detach). */
static int repin_splicer(const char *dir, struct bpf_program *prog)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_SPLICER);
	snprintf(tmp, sizeof(tmp), "%s_new", path); /* bpffs refuses names with a dot */
	unlink(tmp);
	err = bpf_program__pin(prog, tmp);
	if (err)
		return err;
	if (rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
	}
	return err;
}

/* Every splicer of @d replaced by @sp's, in place, then pinned. Returns
 * 0 or -1 (printed); counts them in @res. */
static int upgrade_splicers(const struct nfsl_domain *d, const struct nfsl_health *h,
			    const struct splicer_bpf *sp, struct nfsl_upgrade_result *res)
{
	char buf[32];
	int err;

	for (__u32 i = 0; i < d->cfg.nifaces; i++) {
		const struct nfsl_iface *ifc = &d->cfg.ifaces[i];

		if (ifc->flags & NFSL_IF_NF_PORT)
			continue;
		err = nfsl_egress_replace(ifc, bpf_program__fd(sp->progs.nfsl_splicer));
		if (err)
			return nfsl_err("replacing the splicer on %s failed (%s) after %d of the "
					"domain's splicers were replaced: the old and new splicers "
					"read the same tokens, so the domain works; run upgrade again",
					nfsl_health_ifname(h, &d->cfg, i, buf, sizeof(buf)),
					strerror(-err), res->nsplicers);
		res->nsplicers++;
	}
	err = repin_splicer(d->dir, sp->progs.nfsl_splicer);
	if (err)
		return nfsl_err("pinning the new splicer failed (%s); it is attached, but "
				"repair would re-attach the old one", strerror(-err));
	return 0;
}

/* Every slicer of @d (NF ports too: their slicer takes the drop notices)
 * swapped for a new one, each printed unless @quiet. 0 or -1 (printed). */
static int upgrade_slicers(const struct nfsl_domain *d, const struct nfsl_health *h, bool quiet,
			   struct nfsl_upgrade_result *res)
{
	int err = 0, new_fd = -1;
	char buf[32];

	/* One new instance for every interface: the old ones run alone. */
	for (__u32 i = 0; i < d->cfg.nifaces && !err; i++) {
		const struct nfsl_iface *ifc = &d->cfg.ifaces[i];
		const char *ifname = nfsl_health_ifname(h, &d->cfg, i, buf, sizeof(buf));
		__u32 old_id = 0, new_id = 0;

		err = nfsl_slicer_replace(ifc, d, &old_id, &new_id, &new_fd);
		if (err == -ENOENT)
			nfsl_err("the XDP program on %s is not nfslice's slicer alone (a "
				 "dispatcher, or another program): upgrade swaps a slicer it "
				 "finds attached by itself; detach and attach instead", ifname);
		else if (err)
			nfsl_err("replacing the slicer on %s failed (%s); the old one "
				 "runs there with the new splicer", ifname, strerror(-err));
		else if (!quiet)
			printf("nfslice: %s: slicer %u -> %u\n", ifname, old_id, new_id);
		if (!err)
			res->nslicers++;
	}
	if (new_fd >= 0)
		close(new_fd);
	return err ? -1 : 0;
}

/* Upgrade the open domain @d: a whole one, the new splicer loaded, the
 * splicers, then the slicers. 0 or -1 (printed). */
static int upgrade_domain(const struct nfsl_domain *d, const char *name, bool quiet,
			  struct nfsl_upgrade_result *res)
{
	struct splicer_bpf *sp = NULL;
	struct nfsl_health h;
	int err;

	/* A damaged domain first gets repaired: upgrade replaces programs, it
	 * does not add missing ones. */
	if (nfsl_domain_health(d, &h)) {
		for (unsigned int i = 0; i < h.nproblems; i++)
			nfsl_err("domain '%s': %s", name, h.problems[i]);
		return nfsl_err("upgrade needs a whole domain: run nfslice repair --name %s "
				"first (nothing was changed)", name);
	}
	err = load_splicer_new(d, &sp);
	if (err)
		return nfsl_err("loading the new splicer failed (%s): nothing was changed; "
				"NFSLICE_VERBOSE=1 shows the verifier log", strerror(-err));
	res->t_loaded = nfsl_now_ns();
	err = upgrade_splicers(d, &h, sp, res);
	if (!err) {
		res->t_splicers = nfsl_now_ns();
		err = upgrade_slicers(d, &h, quiet, res);
	}
	if (!err)
		res->t_slicers = nfsl_now_ns();
	splicer_bpf__destroy(sp);
	return err;
}

int nfsl_upgrade(const char *name, bool quiet, struct nfsl_upgrade_result *res)
{
	struct nfsl_domain d;
	int err, lock;

	memset(res, 0, sizeof(*res));
	res->t_start = nfsl_now_ns();
	lock = nfsl_domains_lock();
	if (lock < 0)
		return nfsl_err("cannot lock %s: %s", NFSL_LOCK_FILE, nfsl_lock_strerror(lock));
	res->t_locked = nfsl_now_ns();
	err = nfsl_domain_open(&d, name);
	if (err) {
		nfsl_err_domain(err, name);
	} else {
		err = upgrade_domain(&d, name, quiet, res);
		nfsl_domain_close(&d);
	}
	close(lock);
	return err ? -1 : 0;
}
