// SPDX-License-Identifier: GPL-2.0
/* nfslice repair's engine: see repair.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "nfsl/repair.h"
#include "nfsl/egress.h"
#include "nfsl/errors.h"
#include "nfsl/guard.h"
#include "nfsl/health.h"
#include "nfsl/ingress.h"
#include "nfsl/netdev.h"
#include "nfsl/pins.h"
#include "nfsl/route.h"
#include "nfsl/settings.h"

/* Every missing splicer of @d back (the pinned one, @splicer), the GRO
 * features off again. Returns how many were attached, or -1 (printed). */
static int repair_splicers(struct nfsl_domain *d, const struct nfsl_health *h, int splicer)
{
	char buf[32];
	int err, done = 0;

	for (__u32 i = 0; i < d->cfg.nifaces; i++) {
		struct nfsl_iface *ifc = &d->cfg.ifaces[i];
		const char *ifname = nfsl_health_ifname(h, &d->cfg, i, buf, sizeof(buf));

		if (ifc->flags & NFSL_IF_NF_PORT)
			continue;
		if (nfsl_gro_off(ifc, ifname) || nfsl_write_config(d->dir, &d->cfg))
			return -1;
		if (h->ifs[i].tc_id)
			continue;
		err = nfsl_egress_attach(ifc->ifindex, splicer, &ifc->flags);
		if (!err)
			err = nfsl_write_config(d->dir, &d->cfg);
		if (err)
			return nfsl_err("attaching the splicer to %s (tc egress) failed: %s",
					ifname, strerror(-err));
		printf("nfslice: splicer re-attached to %s\n", ifname);
		done++;
	}
	return done;
}

/* be_liberal set again if the domain had set it: 1 when it was, else 0. */
static int repair_ct_liberal(const struct nfsl_config *cfg)
{
	int now = 1;

	if (!(cfg->flags & NFSL_CFG_CT_LIBERAL_SET))
		return 0;
	if (nfsl_sysctl(NFSL_SYSCTL_CT_LIBERAL, &now, -1) || now ||
	    nfsl_sysctl(NFSL_SYSCTL_CT_LIBERAL, NULL, 1))
		return 0;
	printf("nfslice: net.netfilter.nf_conntrack_tcp_be_liberal set to 1 again\n");
	return 1;
}

/* Every missing slicer of @d back. Returns how many, or -1 (printed). */
static int repair_slicers(const struct nfsl_domain *d, const struct nfsl_health *h)
{
	char buf[32];
	int err, done = 0;

	for (__u32 i = 0; i < d->cfg.nifaces; i++) {
		const struct nfsl_iface *ifc = &d->cfg.ifaces[i];
		const char *ifname = nfsl_health_ifname(h, &d->cfg, i, buf, sizeof(buf));
		int mode = ifc->flags & NFSL_IF_SKB_MODE ? 1 : 0;

		if (h->ifs[i].xdp)
			continue;
		err = nfsl_slicer_attach(ifc->ifindex, d->dir, d->cfg.slots, mode, NULL);
		if (err)
			return nfsl_err("attaching the slicer to %s (XDP %s) failed: %s; its "
					"splicer stays, so nothing leaves unspliced", ifname,
					nfsl_xdp_mode_name(mode), strerror(-err));
		printf("nfslice: slicer re-attached to %s (XDP %s)\n", ifname,
		       nfsl_xdp_mode_name(mode));
		done++;
	}
	return done;
}

/* Repair @d under the lock: the steps in attach's order, then the check.
 * 0 or -1 (printed). */
static int repair_domain(struct nfsl_domain *d, const char *name)
{
	char path[PATH_MAX + 32];
	struct nfsl_health h;
	int n, splicer, done = 0;
	__u64 ino;

	nfsl_domain_health(d, &h);
	if (h.gone) {
		for (unsigned int i = 0; i < h.nproblems; i++)
			nfsl_err("domain '%s': %s", name, h.problems[i]);
		return nfsl_err("repair cannot bring an interface back: detach the domain "
				"(nfslice detach --name %s) and attach it to the interfaces it "
				"has now", name);
	}
	snprintf(path, sizeof(path), "%s/%s", d->dir, NFSL_PIN_SPLICER);
	splicer = bpf_obj_get(path);
	if (splicer < 0)
		return nfsl_err("the splicer pin %s is missing (%s): repair needs it; detach "
				"the domain and attach it again", path, strerror(errno));
	/* Every splicer before any slicer (as attach). */
	n = repair_splicers(d, &h, splicer);
	close(splicer);
	if (n < 0)
		return -1;
	done += n + repair_ct_liberal(&d->cfg);
	/* The guards (before any slicer, as attach): on an interface that
	 * appeared since, off one that became a domain interface. */
	n = nfsl_guard_sync(d->dir, &d->cfg, false);
	if (n < 0)
		return -1;
	done += n;
	n = repair_slicers(d, &h);
	if (n < 0)
		return -1;
	done += n;
	/* Whatever changed on the interfaces, the slicers look it up again. */
	if (nfsl_route_gen_bump(d, NULL))
		nfsl_warn("nfslice: warning: ", "cannot bump the route generation: route "
			  "verdicts cached before the repair hold for up to the domain's "
			  "--route-cache-age");
	if (nfsl_netns_probe(d->dir, &ino) == -ENOENT && !nfsl_netns_probe_create(d->dir)) {
		printf("nfslice: namespace probe added (for nfslice gc)\n");
		done++;
	}
	if (nfsl_domain_health(d, &h)) {
		for (unsigned int i = 0; i < h.nproblems; i++)
			nfsl_err("domain '%s' is still damaged: %s", name, h.problems[i]);
		return -1;
	}
	if (done)
		printf("nfslice: domain '%s' repaired\n", name);
	else
		printf("nfslice: domain '%s' is whole; nothing to repair\n", name);
	return 0;
}

int nfsl_repair(const char *name)
{
	struct nfsl_domain d;
	int err, lock;

	lock = nfsl_lock_domains();
	if (lock < 0)
		return -1;
	err = nfsl_domain_open(&d, name);
	if (err) {
		nfsl_err_domain(err, name);
	} else {
		err = repair_domain(&d, name);
		nfsl_domain_close(&d);
	}
	close(lock);
	return err ? -1 : 0;
}
