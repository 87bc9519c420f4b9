// SPDX-License-Identifier: GPL-2.0
/* A domain's health, its config against the kernel: see health.h. */
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "nfsl/health.h"
#include "nfsl/egress.h"
#include "nfsl/ingress.h"

const char *nfsl_health_ifname(const struct nfsl_health *h,
			       const struct nfsl_config *cfg, __u32 i, char *buf,
			       size_t len)
{
	if (h->ifs[i].name[0])
		return h->ifs[i].name;
	snprintf(buf, len, "ifindex %u", cfg->ifaces[i].ifindex);
	return buf;
}

static void problem(struct nfsl_health *h, const char *what, const char *ifname)
{
	if (h->nproblems < NFSL_MAX_PROBLEMS)
		snprintf(h->problems[h->nproblems++], sizeof(h->problems[0]), "%s: %s",
			 ifname, what);
}

/* The guards: one problem naming every interface without one, one for
 * local delivery. */
static void guard_health(const struct nfsl_domain *d, struct nfsl_health *h)
{
	struct nfsl_guard_state *g = &h->guards;
	char names[96] = "";
	size_t n = 0;

	nfsl_guard_state(d->dir, &d->cfg, g);
	for (unsigned int i = 0; i < g->nifs; i++) {
		if (g->ifs[i].link_id || g->ifs[i].kind == NFSL_GUARD_NONE ||
		    g->ifs[i].kind == NFSL_GUARD_IFB)
			continue;
		if (n < sizeof(names))
			n += snprintf(names + n, sizeof(names) - n, "%s%s", n ? ", " : "",
				      g->ifs[i].name);
	}
	if (g->nmissing) {
		h->missing = true;
		problem(h, "guard missing (TCX egress)", names);
	}
	if (!g->nf[NFSL_GUARD_IN4] || !g->nf[NFSL_GUARD_IN6]) {
		h->missing = true;
		problem(h, "guard missing (netfilter LOCAL_IN)", "local delivery");
	}
	if (!g->nf[NFSL_GUARD_FW4] || !g->nf[NFSL_GUARD_FW6]) {
		h->missing = true;
		problem(h, "guard missing (netfilter FORWARD)", "routing");
	}
}

unsigned int nfsl_domain_health(const struct nfsl_domain *d, struct nfsl_health *h)
{
	const struct nfsl_config *c = &d->cfg;
	char buf[32];

	memset(h, 0, sizeof(*h));
	for (__u32 i = 0; i < c->nifaces && i < NFSL_MAX_IFACES; i++) {
		const struct nfsl_iface *ifc = &c->ifaces[i];
		struct nfsl_iface_state *st = &h->ifs[i];
		const char *ifname;

		st->gone = !if_indextoname(ifc->ifindex, st->name);
		if (st->gone)
			st->name[0] = '\0';
		ifname = nfsl_health_ifname(h, c, i, buf, sizeof(buf));
		if (st->gone) {
			h->gone = true;
			problem(h, "interface gone (deleted, or moved to another "
				"network namespace)", ifname);
			continue;
		}
		st->xdp = nfsl_slicer_attached(ifc->ifindex, &st->xdp_id);
		if (!st->xdp) {
			h->missing = true;
			problem(h, "slicer missing (XDP)", ifname);
		}
		if (ifc->flags & NFSL_IF_NF_PORT)
			continue; /* a slicer for drop notices, no splicer */
		st->tc_id = nfsl_splicer_attached(ifc->ifindex);
		if (!st->tc_id) {
			h->missing = true;
			problem(h, "splicer missing (tc egress)", ifname);
		}
	}
	guard_health(d, h);
	return h->nproblems;
}
