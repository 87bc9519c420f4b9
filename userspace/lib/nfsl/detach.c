// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice detach's engine: the programs off in the order that never lets
 * a sliced header leave without a splicer, the settings back, the pins
 * removed. See detach.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nfsl/detach.h"
#include "nfsl/egress.h"
#include "nfsl/errors.h"
#include "nfsl/ingress.h"
#include "nfsl/settings.h"

/* Wait until the headers sliced before the slicers went away have come
 * back to a splicer: busy slots reach 0, stop falling for 100 ms (those
 * headers were lost: their slots would only expire), or 2 s passed. */
static void drain(const struct nfsl_domain *d)
{
	__u32 busy, last = ~0u;
	int still = 0;

	for (int i = 0; i < 400 && still < 20; i++) {
		if (nfsl_domain_busy_slots(d, &busy) || !busy)
			return;
		still = busy < last ? 0 : still + 1;
		if (busy < last)
			last = busy;
		usleep(5000);
	}
}

int nfsl_unload(const struct nfsl_config *cfg, const struct nfsl_domain *d)
{
	char ifname[IF_NAMESIZE];
	int failed = 0;

	for (__u32 i = 0; i < cfg->nifaces && i < NFSL_MAX_IFACES; i++) {
		const struct nfsl_iface *ifc = &cfg->ifaces[i];
		int err;

		/* NF ports too: their slicer takes the drop notices. */
		err = nfsl_slicer_detach(ifc->ifindex);
		if (!err)
			continue;
		if (!if_indextoname(ifc->ifindex, ifname))
			snprintf(ifname, sizeof(ifname), "ifindex %u", ifc->ifindex);
		nfsl_err("the slicer stays on %s: %s. Its splicers stay too, so no "
			 "header leaves unspliced; remove what holds it (an upper "
			 "device, another XDP user: see ip -d link show %s) and run "
			 "detach again", ifname, strerror(-err), ifname);
		failed = 1;
	}
	if (failed)
		return -1;
	if (d)
		drain(d);
	for (__u32 i = 0; i < cfg->nifaces && i < NFSL_MAX_IFACES; i++) {
		if (cfg->ifaces[i].flags & NFSL_IF_NF_PORT)
			continue;
		nfsl_egress_detach(&cfg->ifaces[i]);
		nfsl_gro_restore(&cfg->ifaces[i]);
	}
	return 0;
}

void nfsl_remove_pins(const char *dir)
{
	int err = nfsl_domain_remove(dir);

	if (err)
		nfsl_err("cannot remove all of %s: %s", dir, strerror(-err));
}

int nfsl_detach_locked(const char *name, bool no_drain)
{
	struct nfsl_domain d;
	int err;

	err = nfsl_domain_open(&d, name);
	if (err == -ENOENT && d.dir[0] && !faccessat(AT_FDCWD, d.dir, F_OK, AT_EACCESS)) {
		/* Half-made domain (attach killed before its config): no
		 * program was attached yet; remove its pins. */
		nfsl_remove_pins(d.dir);
		printf("nfslice: removed incomplete domain '%s'\n", name);
		err = 0;
		goto out;
	}
	if (err == -ENOENT) {
		/* Idempotent, as a removal should be. */
		printf("nfslice: no domain '%s' in this network namespace; nothing "
		       "to detach\n", name);
		err = 0;
		goto out;
	}
	if (err) {
		nfsl_err_domain(err, name);
		goto out;
	}
	/* --no-drain: the node leaves the return path now (copy-mode
	 * migration: the new instance splices the old headers). */
	err = nfsl_unload(&d.cfg, no_drain ? NULL : &d);
	if (!err) {
		nfsl_ct_liberal_release(name, &d.cfg);
		nfsl_remove_pins(d.dir);
		printf("nfslice: domain '%s' detached\n", name);
	}
	nfsl_domain_close(&d);
out:
	return err ? -1 : 0;
}


int nfsl_detach(const char *name, bool no_drain)
{
	int err, lock;

	lock = nfsl_lock_domains();
	if (lock < 0)
		return -1;
	err = nfsl_detach_locked(name, no_drain);
	close(lock);
	return err;
}
