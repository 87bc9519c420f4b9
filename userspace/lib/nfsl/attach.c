// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice attach's engine: load the slicer (XDP, libxdp dispatcher:
 * ingress.c) and the splicer (TCX egress, else tc clsact: egress.c) on
 * every interface of a domain, the guards on every other one (guard.c), with ONE store pinned in the domain's
 * directory (pins.c); a failed attach leaves nothing behind (detach.c).
 * See attach.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsl/attach.h"
#include "nfsl/detach.h"
#include "nfsl/egress.h"
#include "nfsl/errors.h"
#include "nfsl/guard.h"
#include "nfsl/ingress.h"
#include "nfsl/netdev.h"
#include "nfsl/pins.h"
#include "nfsl/retired.h"
#include "nfsl/route.h"
#include "nfsl/settings.h"
#include "nfsl/tenant.h"
#include "util/params.h"
#include "slicer.skel.h"
#include "splicer.skel.h"

static __u32 count_nf_ports(const struct nfsl_config *cfg)
{
	__u32 n = 0;

	for (__u32 i = 0; i < cfg->nifaces; i++)
		n += !!(cfg->ifaces[i].flags & NFSL_IF_NF_PORT);
	return n;
}

static int mkdir_p(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(path, 0700) && errno != EEXIST ? -errno : 0;
}

static int load_splicer(const char *dir, struct nfsl_config *cfg,
			struct splicer_bpf **out)
{
	char path[PATH_MAX + 32];
	struct splicer_bpf *sp;
	int err;

	sp = splicer_bpf__open();
	if (!sp)
		return -errno;
	err = nfsl_use_domain_maps(sp->obj, dir, cfg->slots);
	if (!err)
		err = splicer_bpf__load(sp);
	if (err) {
		nfsl_err("loading the splicer failed (%s): this kernel lacks a feature "
			 "nfslice needs (BTF, BPF atomics, mmapable arrays, bpf_check_mtu: "
			 "Linux >= 5.18); NFSLICE_VERBOSE=1 shows the verifier log",
			 strerror(-err));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_SPLICER);
	err = bpf_program__pin(sp->progs.nfsl_splicer, path);
	if (!err)
		err = nfsl_write_config(dir, cfg);
out:
	if (err)
		splicer_bpf__destroy(sp);
	else
		*out = sp;
	return err;
}

/* Add interface @name to @cfg with @flags, checking it can join. */
static int add_iface(struct nfsl_config *cfg, const char *name, __u32 flags)
{
	struct nfsl_iface *ifc;
	char upper[IF_NAMESIZE];
	__u32 prog_id;
	int ifindex, err;

	if (cfg->nifaces >= NFSL_MAX_IFACES)
		return nfsl_err("a domain has at most %d interfaces and NF ports",
				NFSL_MAX_IFACES);
	ifindex = if_nametoindex(name);
	if (!ifindex)
		return nfsl_err("unknown interface '%s' in this network namespace "
				"(list them with: ip link)", name);
	for (__u32 j = 0; j < cfg->nifaces; j++)
		if (cfg->ifaces[j].ifindex == (__u32)ifindex)
			return nfsl_err("interface '%s' is given twice; list each "
					"interface once, as a domain interface or as "
					"an --nf-port", name);
	ifc = &cfg->ifaces[cfg->nifaces];
	ifc->ifindex = ifindex;
	ifc->flags = flags;
	if (nfsl_slicer_attached(ifindex, &prog_id))
		return nfsl_err("interface '%s' already belongs to a slicing domain "
				"(see nfslice list); detach that domain first", name);
	/* An NF port runs the slicer too, for drop notices only. */
	if (nfsl_slicer_check_foreign(ifindex, name))
		return -1;
	if (flags & NFSL_IF_NF_PORT)
		goto out;
	err = nfsl_if_upper(ifindex, upper, sizeof(upper));
	if (err > 0)
		return nfsl_err("interface '%s' has the upper device '%s' (macvlan, "
				"ipvlan, bridge, bond...): frames for it pass the slicer "
				"of '%s' and are received where no splicer runs. Attach "
				"the domain to '%s' instead, or remove it", name, upper,
				name, upper);
	if (err < 0)
		return nfsl_err("cannot list the devices stacked on '%s': %s", name,
				strerror(-err));
	err = nfsl_if_lower(ifindex);
	if (err > 0 && nfsl_slicer_attached(err, &prog_id)) {
		if_indextoname(err, upper);
		return nfsl_err("interface '%s' sits on '%s', which belongs to a slicing "
				"domain: its frames pass that slicer first, and its XDP "
				"program would keep the kernel from ever removing it. "
				"Attach only one of them", name, upper);
	}
	err = nfsl_if_mac(name, ifc->mac);
	if (err)
		return nfsl_err("cannot read the MAC address of '%s': %s", name,
				strerror(-err));
out:
	cfg->nifaces++;
	return 0;
}

/* The domain interfaces (@argc names) then the NF ports (comma-separated
 * @nf_ports), into @cfg. */
static int collect_ifaces(struct nfsl_config *cfg, int argc, char **argv,
			  const char *nf_ports, int mode)
{
	char buf[NFSL_MAX_IFACES * (IF_NAMESIZE + 1)], *tok, *save = NULL;

	for (int i = 0; i < argc; i++)
		if (add_iface(cfg, argv[i], mode ? NFSL_IF_SKB_MODE : 0))
			return -1;
	if (!nf_ports)
		return 0;
	if (strlen(nf_ports) >= sizeof(buf))
		return nfsl_err("--nf-port: too many interfaces (at most %d in all)",
				NFSL_MAX_IFACES);
	snprintf(buf, sizeof(buf), "%s", nf_ports);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (add_iface(cfg, tok, NFSL_IF_NF_PORT))
			return -1;
	return 0;
}

/* May domain @r->name be attached here, with @r->slots on this host's
 * CPUs? Returns 0, or -1 after a message (*@usage: the user's input). */
static int attach_check(const struct nfsl_attach_req *r, const char *dir, bool *usage)
{
	int ncpus;

	if (!faccessat(AT_FDCWD, dir, F_OK, AT_EACCESS))
		return nfsl_err("domain '%s' is already attached in this network namespace "
				"(pins in %s); detach it first: nfslice detach --name %s",
				r->name, dir, r->name);
	nfsl_retired_prune(); /* lists whose grace ended: ours is kept */
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0 || ncpus > NFSL_MAX_CPUS)
		return nfsl_err("cannot use %d CPUs (at most %d)", ncpus, NFSL_MAX_CPUS);
	if (r->slots < (__u32)ncpus) {
		*usage = true;
		return nfsl_err("--slots %u is too small: each of the %d CPUs allocates "
				"from its own partition, so give at least %d",
				r->slots, ncpus, ncpus);
	}
	return 0;
}

/* The domain's configuration in @cfg: its key, geometry and interfaces;
 * the tenants of @r->tenants parsed into *@spec (malloc'd) and counted in.
 * Returns 0, or -1 after a message (*@usage: the user's input). */
static int attach_config(const struct nfsl_attach_req *r, struct nfsl_config *cfg, int argc,
			 char **argv, struct nfsl_tenant_spec **spec, bool *usage)
{
	int ncpus = libbpf_num_possible_cpus(), err;
	char msg[512];

	err = nfsl_config_init(cfg, r->threshold, r->keep, r->slots, r->expiry, ncpus);
	if (err)
		return nfsl_err("cannot make the domain's configuration: %s (the MAC key "
				"comes from getrandom)", strerror(-err));
	cfg->ttl_us = r->ttl * 1000;
	cfg->route_cache_us = r->route_cache_ms * 1000;
	if (r->events)
		cfg->flags |= NFSL_CFG_EVENTS;
	if (collect_ifaces(cfg, argc, argv, r->nf_ports, r->mode))
		return -1;
	if (nfsl_config_split(cfg)) {
		*usage = true;
		return nfsl_err("--slots %u is too small: each of the %d CPUs splits its share "
				"among the domain interfaces and each NF port, so give at "
				"least %u", r->slots, ncpus, ncpus * (1 + count_nf_ports(cfg)));
	}
	/* Every partition gets as many slots: the rest of --slots is not
	 * used (as --help says), and said here. */
	if (cfg->slots != r->slots)
		fprintf(stderr, "nfslice: note: --slots %u rounded down to %u: %u partitions "
			"(%d CPUs x %u) of %u slots each\n", r->slots, cfg->slots,
			cfg->ncpus * cfg->nparts, ncpus, cfg->nparts, cfg->part_slots);
	/* Tenants are in the config before the first slicer runs: their
	 * number and regions are fixed from the first packet on; their rules
	 * go into the slicer's maps once it has made them (attach_slicers). */
	if (!r->tenants)
		return 0;
	*spec = malloc(sizeof(**spec));
	if (!*spec)
		return nfsl_err("out of memory");
	if (nfsl_tenants_parse(r->tenants, *spec, msg, sizeof(msg)) ||
	    nfsl_tenants_config(cfg, *spec, msg, sizeof(msg))) {
		*usage = true; /* the file is the user's input */
		return nfsl_err("--tenants: %s", msg);
	}
	return 0;
}

/* Every splicer before any slicer: a header sliced on one interface may
 * leave through any other at once (issue #7). The config names every
 * interface before any is touched (and each change as it is made), so a
 * detach after an interrupted attach finds them all. 0 or -1. */
static int attach_splicers(const char *dir, struct nfsl_config *cfg, const struct splicer_bpf *sp)
{
	char ifname[IF_NAMESIZE];
	int err;

	for (__u32 i = 0; i < cfg->nifaces; i++) {
		struct nfsl_iface *ifc = &cfg->ifaces[i];

		if (ifc->flags & NFSL_IF_NF_PORT)
			continue;
		if_indextoname(ifc->ifindex, ifname);
		err = nfsl_gro_off(ifc, ifname);
		if (!err)
			err = nfsl_write_config(dir, cfg);
		if (!err) {
			err = nfsl_egress_attach(ifc->ifindex,
						 bpf_program__fd(sp->progs.nfsl_splicer),
						 &ifc->flags);
			if (err)
				nfsl_err("attaching the splicer to %s (tc egress) failed: %s",
					 ifname, strerror(-err));
		}
		if (!err)
			err = nfsl_write_config(dir, cfg);
		if (err)
			return -1;
	}
	return 0;
}

/* A slicer on every interface (NF ports too: their slicer takes the drop
 * notices), then the tenants' rules into the maps they made. 0 or -1. */
static int attach_slicers(const char *dir, const struct nfsl_config *cfg, int mode,
			  const struct nfsl_tenant_spec *spec)
{
	char ifname[IF_NAMESIZE];
	int err = 0, alone_fd = -1;

	for (__u32 i = 0; i < cfg->nifaces && !err; i++) {
		const struct nfsl_iface *ifc = &cfg->ifaces[i];

		if_indextoname(ifc->ifindex, ifname);
		err = nfsl_slicer_attach(ifc->ifindex, dir, cfg->slots, mode, &alone_fd);
		if (err == -ERANGE)
			/* The slicer is multi-buffer (xdp.frags): a kernel or driver
			 * that still refuses the MTU lacks multi-buffer XDP. */
			nfsl_err("attaching the slicer to %s failed: its MTU (or its veth "
				 "peer's) is too large for XDP here: frames beyond a page need "
				 "multi-buffer XDP (frags: Linux >= 5.18, in veth and a few NIC "
				 "drivers); lower the MTU, e.g. ip link set dev %s mtu 1500, or "
				 "use a kernel and driver with XDP frags", ifname, ifname);
		else if (err)
			nfsl_err("attaching the slicer to %s (XDP %s) failed: %s%s",
				 ifname, nfsl_xdp_mode_name(mode), strerror(-err),
				 mode ? "" : "; try --mode skb if the driver has no native XDP");
	}
	if (alone_fd >= 0)
		close(alone_fd);
	if (err)
		return -1;
	err = spec ? nfsl_tenants_write_rules(dir, spec) : 0;
	if (err)
		return nfsl_err("cannot write the tenant rules: %s", strerror(-err));
	return 0;
}

/* The pins' directory, the namespace probe (whatever happens next, nfslice
 * gc can tell whether this domain's namespace still exists), the splicer
 * and the config, then the programs. 0 or -1 (printed); *@made once the
 * directory is there (a failure from then on is undone). */
static int attach_domain(const struct nfsl_attach_req *r, const char *dir,
			 struct nfsl_config *cfg, const struct nfsl_tenant_spec *spec, bool *made)
{
	struct splicer_bpf *sp = NULL;
	int err = mkdir_p(dir);

	if (err)
		return nfsl_err("cannot create %s: %s", dir, strerror(-err));
	*made = true;
	err = nfsl_netns_probe_create(dir);
	if (err)
		fprintf(stderr, "nfslice: note: no namespace probe (%s): nfslice gc "
			"cannot tell when this namespace is gone, and will keep "
			"the domain's pins\n", strerror(-err));
	err = load_splicer(dir, cfg, &sp);
	if (!err)
		err = attach_splicers(dir, cfg, sp);
	/* The guards before any slicer too: the route check is a hint, they
	 * keep a header it misjudged from leaving (guard.h). */
	if (!err && nfsl_guard_sync(dir, cfg, true) < 0)
		err = -1;
	if (!err && !r->no_ct_liberal) {
		err = nfsl_ct_liberal_take(cfg);
		if (!err)
			err = nfsl_write_config(dir, cfg);
	}
	if (!err)
		err = attach_slicers(dir, cfg, r->mode, spec);
	/* Generation 1 from the first packet on: what any entry of a cache
	 * (empty now) must match. */
	if (!err && (err = nfsl_route_gen_bump_at(dir, NULL)))
		nfsl_err("cannot write the route generation: %s", strerror(-err));
	splicer_bpf__destroy(sp);
	return err ? -1 : 0;
}

static void attach_report(const struct nfsl_attach_req *r, const struct nfsl_config *cfg,
			  int argc, char **argv, const char *dir)
{
	printf("nfslice: domain '%s' attached to", r->name);
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	if (r->nf_ports)
		printf(", NF ports %s", r->nf_ports);
	printf(" (%u slots, threshold %u B, keep %u B, expiry %u, ttl %u ms, XDP %s)\npins: %s\n",
	       cfg->slots, cfg->threshold, cfg->keep, cfg->expiry, r->ttl,
	       nfsl_xdp_mode_name(r->mode), dir);
}

int nfsl_attach(const struct nfsl_attach_req *r, int argc, char **argv)
{
	struct nfsl_tenant_spec *spec = NULL;
	struct nfsl_config cfg = {};
	char dir[PATH_MAX];
	bool made = false, usage = false;
	int err, lock;

	err = nfsl_domain_dir(dir, sizeof(dir), r->name);
	if (err)
		return nfsl_err_domain(err, r->name);
	lock = nfsl_lock_domains();
	if (lock < 0)
		return -1;
	err = attach_check(r, dir, &usage);
	if (!err)
		err = attach_config(r, &cfg, argc, argv, &spec, &usage);
	if (!err)
		err = attach_domain(r, dir, &cfg, spec, &made);
	if (!err) {
		nfsl_slicer_warn_legacy(&cfg);
		attach_report(r, &cfg, argc, argv, dir);
	}
	free(spec);
	if (err && made && !nfsl_unload(&cfg, NULL)) {
		nfsl_ct_liberal_release(r->name, &cfg);
		nfsl_remove_pins(dir);
	}
	close(lock);
	return err ? (usage ? NFSL_EXIT_USAGE : -1) : 0;
}
