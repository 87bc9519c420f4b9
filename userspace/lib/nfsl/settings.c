// SPDX-License-Identifier: GPL-2.0
/*
 * What a domain changes on its interfaces and namespace besides its
 * programs, and gives back at detach: the GRO features that would merge
 * sliced datagrams (issue #7), nf_conntrack_tcp_be_liberal. See settings.h.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "nfsl/settings.h"
#include "nfsl/errors.h"
#include "nfsl/netdev.h"
#include "nfsl/pins.h"

/* GRO features that merge sliced datagrams into aggregates the splicer
 * cannot splice (issue #7): attach turns them off, detach restores them. */
static const struct {
	const char *name;
	__u32 flag;
} gro_features[] = {
	{ "rx-udp-gro-forwarding", NFSL_IF_UDP_GRO_FWD_OFF },
	{ "rx-gro-list", NFSL_IF_GRO_LIST_OFF },
};

int nfsl_gro_off(struct nfsl_iface *ifc, const char *ifname)
{
	for (size_t i = 0; i < sizeof(gro_features) / sizeof(gro_features[0]); i++) {
		int err, on = nfsl_if_feature(ifname, gro_features[i].name, -1);

		if (on == -ENOENT || on == -EOPNOTSUPP || on == 0)
			continue; /* the kernel or driver has no such merge */
		err = on < 0 ? on : nfsl_if_feature(ifname, gro_features[i].name, 0);
		if (err)
			return nfsl_err("cannot turn %s off on %s: %s (it would merge "
					"sliced datagrams the splicer cannot splice)",
					gro_features[i].name, ifname, strerror(-err));
		ifc->flags |= gro_features[i].flag;
		fprintf(stderr, "nfslice: note: %s turned off on %s while the domain "
			"is attached (GRO would merge sliced datagrams)\n",
			gro_features[i].name, ifname);
	}
	return 0;
}

void nfsl_gro_restore(const struct nfsl_iface *ifc)
{
	char ifname[IF_NAMESIZE];

	if (!if_indextoname(ifc->ifindex, ifname))
		return;
	for (size_t i = 0; i < sizeof(gro_features) / sizeof(gro_features[0]); i++)
		if (ifc->flags & gro_features[i].flag)
			nfsl_if_feature(ifname, gro_features[i].name, 1);
}

/*
 * TCP connections conntrack tracks in this namespace that may still carry
 * packets (any state but TIME_WAIT and CLOSE), from /proc/net/nf_conntrack
 * (per namespace); 0 when conntrack is not there. Those that crossed while
 * the domain sliced hold windows learned from sliced lengths.
 */
static int ct_live_tcp(void)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/net/nf_conntrack", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " tcp ") && !strstr(line, " TIME_WAIT ") &&
		    !strstr(line, " CLOSE "))
			n++;
	fclose(f);
	return n;
}

/*
 * Restore nf_conntrack_tcp_be_liberal if this domain set it, unless another
 * domain of the namespace remains (that one inherits the duty) or TCP
 * connections are still tracked: their windows were learned from sliced
 * (shorter) segments, so strict tracking would mark their next packets
 * invalid, and an invalid reply escapes masquerade's reverse translation,
 * reaches the router's own stack and comes back as a reset (seen under a
 * download across detach and attach: tests/integration/test_restore_load.py).
 */
void nfsl_ct_liberal_release(const char *name, const struct nfsl_config *cfg)
{
	char nsdir[PATH_MAX];
	struct dirent *e;
	DIR *dh;
	int live;

	if (!(cfg->flags & NFSL_CFG_CT_LIBERAL_SET))
		return;
	if (!nfsl_netns_dir(nsdir, sizeof(nsdir)) && (dh = opendir(nsdir))) {
		while ((e = readdir(dh))) {
			struct nfsl_domain o;

			if (e->d_name[0] == '.' || !strcmp(e->d_name, name) ||
			    nfsl_domain_open(&o, e->d_name))
				continue;
			o.cfg.flags |= NFSL_CFG_CT_LIBERAL_SET;
			nfsl_write_config(o.dir, &o.cfg);
			nfsl_domain_close(&o);
			closedir(dh);
			return;
		}
		closedir(dh);
	}
	live = ct_live_tcp();
	if (live) {
		fprintf(stderr, "nfslice: note: left net.netfilter.nf_conntrack_tcp_be_liberal=1: "
			"%d TCP connections tracked here may have crossed sliced, and strict "
			"tracking would reset them; set it to 0 when they have ended\n", live);
		return;
	}
	nfsl_sysctl(NFSL_SYSCTL_CT_LIBERAL, NULL, 0);
}

/* Set nf_conntrack_tcp_be_liberal to 1 in this namespace if it is 0: the
 * sliced TCP segments are shorter than the sequence space they stand for,
 * so strict window tracking marks the receiver's ACKs invalid and NAT
 * stops translating them. */
int nfsl_ct_liberal_take(struct nfsl_config *cfg)
{
	int old = 1, err = nfsl_sysctl(NFSL_SYSCTL_CT_LIBERAL, &old, -1);

	if (err == -ENOENT)
		return 0; /* no conntrack in this kernel: nothing tracks windows */
	if (!err && !old)
		err = nfsl_sysctl(NFSL_SYSCTL_CT_LIBERAL, NULL, 1);
	if (err)
		return nfsl_err("cannot set net.netfilter.nf_conntrack_tcp_be_liberal=1: "
				"%s (sliced TCP through conntrack would stall; "
				"--no-ct-liberal skips this)", strerror(-err));
	if (!old) {
		cfg->flags |= NFSL_CFG_CT_LIBERAL_SET;
		fprintf(stderr, "nfslice: note: set net.netfilter.nf_conntrack_tcp_be_liberal=1 "
			"in this network namespace until detach (sliced TCP segments "
			"are shorter than their sequence space)\n");
	}
	return 0;
}
