// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice attach / detach: load the slicer (XDP, libxdp dispatcher) and the
 * splicer (TCX egress, else tc clsact: loader/egress.c) on every interface
 * of a domain, with ONE store
 * pinned in the domain's directory; and undo all of it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <time.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "nfslice.h"
#include "nfsl/tenant.h"
#include "nfsl/cfg.h"
#include "nfsl/domain.h"
#include "nfsl/retired.h"
#include "netdev.h"
#include "nfsl/ttl.h"
#include "slicer.skel.h"
#include "splicer.skel.h"

struct attach_opts {
	const char *name;
	const char *nf_ports; /* comma-separated interface names, or NULL */
	const char *tenants;  /* tenants file (userspace/lib/nfsl/tenant.h), or NULL */
	__u32 threshold, keep, slots, expiry;
	__u32 ttl; /* ms, 0: off */
	int mode; /* index into modes[] */
	bool no_ct_liberal;
	bool events; /* write drop events (NFSL_CFG_EVENTS) */
};

/* GRO features that merge sliced datagrams into aggregates the splicer
 * cannot splice (issue #7): attach turns them off, detach restores them. */
static const struct {
	const char *name;
	__u32 flag;
} gro_features[] = {
	{ "rx-udp-gro-forwarding", NFSL_IF_UDP_GRO_FWD_OFF },
	{ "rx-gro-list", NFSL_IF_GRO_LIST_OFF },
};

static const char *const modes[] = { "native", "skb", NULL };

static const struct attach_opts attach_defaults = {
	.name = "default",
	.threshold = NFSL_DEF_THRESHOLD,
	.keep = NFSL_DEF_KEEP,
	.slots = NFSL_DEF_SLOTS,
	.expiry = NFSL_DEF_EXPIRY,
	.ttl = NFSL_DEF_TTL_MS,
};

/* Pins of the shared maps, in bpf object order. */
static const char *const map_pins[] = {
	NFSL_PIN_STORE, NFSL_PIN_CONFIG, NFSL_PIN_COUNTERS, NFSL_PIN_CURSOR,
};

static __u32 count_nf_ports(const struct nfsl_config *cfg)
{
	__u32 n = 0;

	for (__u32 i = 0; i < cfg->nifaces; i++)
		n += !!(cfg->ifaces[i].flags & NFSL_IF_NF_PORT);
	return n;
}

int pin_at(struct bpf_map *map, const char *dir, const char *name)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bpf_map__set_pin_path(map, path);
}

int use_domain_maps(struct bpf_map *const maps[4], const char *dir,
			   __u32 slots)
{
	int err;

	for (int i = 0; i < 4; i++) {
		char path[PATH_MAX + 32];
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		int fd;

		err = pin_at(maps[i], dir, map_pins[i]);
		if (err)
			return err;
		/* A pin made by an older nfslice (a config map that is not
		 * mmapable) is reused with its own flags, else libbpf refuses
		 * it as incompatible. */
		snprintf(path, sizeof(path), "%s/%s", dir, map_pins[i]);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			err = bpf_map__set_map_flags(maps[i], info.map_flags);
		close(fd);
		if (err)
			return err;
	}
	return bpf_map__set_max_entries(maps[0], slots);
}

int use_slicer_maps(struct slicer_bpf *sl, const char *dir, __u32 slots)
{
	int err = use_domain_maps(SKEL_MAPS(sl), dir, slots);

	if (!err)
		err = pin_at(sl->maps.nfsl_chain, dir, NFSL_PIN_CHAIN);
	if (!err)
		err = pin_at(sl->maps.nfsl_parklog, dir, NFSL_PIN_PARKLOG);
	if (!err)
		err = pin_at(sl->maps.nfsl_mgr_cnt, dir, NFSL_PIN_MGR_COUNTERS);
	if (!err)
		err = pin_at(sl->maps.nfsl_tcursor, dir, NFSL_PIN_TENANT_CURSOR);
	if (!err)
		err = pin_at(sl->maps.nfsl_tcnt, dir, NFSL_PIN_TENANT_COUNTERS);
	if (!err)
		err = pin_at(sl->maps.nfsl_tpfx, dir, NFSL_PIN_TENANT_PREFIX);
	if (!err)
		err = pin_at(sl->maps.nfsl_tvlan, dir, NFSL_PIN_TENANT_VLAN);
	if (!err)
		err = pin_at(sl->maps.nfsl_events, dir, NFSL_PIN_EVENTS);
	/* The park log has the store's geometry (nfsl_alloc_slot). */
	return err ? err : bpf_map__set_max_entries(sl->maps.nfsl_parklog, slots);
}

int use_splicer_maps(struct splicer_bpf *sp, const char *dir, __u32 slots)
{
	char retired[PATH_MAX];
	int err = use_domain_maps(SKEL_MAPS(sp), dir, slots);

	if (!err)
		err = pin_at(sp->maps.nfsl_events, dir, NFSL_PIN_EVENTS);
	if (!err)
		err = pin_at(sp->maps.nfsl_residency, dir, NFSL_PIN_RESIDENCY);
	/* The retired keys outlive the domain (retired.h): a list left by
	 * a domain of this name detached lately is taken over. */
	if (!err)
		err = nfsl_retired_mkdir(dir);
	if (!err)
		err = nfsl_retired_path(retired, sizeof(retired), dir);
	return err ? err : bpf_map__set_pin_path(sp->maps.nfsl_retired, retired);
}

static int write_config(const char *dir, const struct nfsl_config *cfg)
{
	char path[PATH_MAX + 32];
	__u32 zero = 0;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_CONFIG);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(fd, &zero, cfg, 0))
		err = -errno;
	close(fd);
	return err;
}

const char *nfsl_slicer_attached(int ifindex, __u32 *prog_id)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	const char *mode = NULL;
	struct xdp_program *p;

	if (libxdp_get_error(mp) || !mp)
		return NULL;
	p = xdp_multiprog__is_legacy(mp) ? xdp_multiprog__main_prog(mp)
					 : xdp_multiprog__next_prog(NULL, mp);
	for (; p; p = xdp_multiprog__next_prog(p, mp)) {
		if (!strcmp(xdp_program__name(p), NFSL_SLICER_PROG)) {
			mode = xdp_multiprog__attach_mode(mp) == XDP_MODE_SKB
				       ? "skb" : "native";
			*prog_id = xdp_program__id(p);
			break;
		}
		if (xdp_multiprog__is_legacy(mp))
			break;
	}
	xdp_multiprog__close(mp);
	return mode;
}

/* Remove our slicer from @ifindex and check it is gone. Returns 0, or
 * -errno (-EBUSY when the kernel still shows it) naming why not. */
static int detach_xdp(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;
	__u32 id;
	int err = 0;

	if (!libxdp_get_error(mp) && mp) {
		p = xdp_multiprog__is_legacy(mp) ? xdp_multiprog__main_prog(mp)
						 : xdp_multiprog__next_prog(NULL, mp);
		for (; p; p = xdp_multiprog__next_prog(p, mp)) {
			if (!strcmp(xdp_program__name(p), NFSL_SLICER_PROG)) {
				err = xdp_program__detach(p, ifindex,
							  xdp_multiprog__attach_mode(mp), 0);
				break;
			}
			if (xdp_multiprog__is_legacy(mp))
				break;
		}
		xdp_multiprog__close(mp);
	}
	if (nfsl_slicer_attached(ifindex, &id))
		return err ? err : -EBUSY;
	return 0;
}

/* Turn the GRO features that merge sliced datagrams off on @ifc, and
 * remember which were on. */
static int gro_off(struct nfsl_iface *ifc, const char *ifname)
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

static void gro_restore(const struct nfsl_iface *ifc)
{
	char ifname[IF_NAMESIZE];

	if (!if_indextoname(ifc->ifindex, ifname))
		return;
	for (size_t i = 0; i < sizeof(gro_features) / sizeof(gro_features[0]); i++)
		if (ifc->flags & gro_features[i].flag)
			nfsl_if_feature(ifname, gro_features[i].name, 1);
}

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

/*
 * Take the programs off in the order that never lets a sliced header leave
 * without a splicer: every slicer first (checked gone), then, once the
 * headers in flight have drained (@d given), every splicer, and the GRO
 * features back. Returns 0, or -1 when a slicer would not go: then the
 * splicers stay too, and the caller keeps the pins, so a later detach can
 * finish the job.
 */
static int unload(const struct nfsl_config *cfg, const struct nfsl_domain *d)
{
	char ifname[IF_NAMESIZE];
	int failed = 0;

	for (__u32 i = 0; i < cfg->nifaces && i < NFSL_MAX_IFACES; i++) {
		const struct nfsl_iface *ifc = &cfg->ifaces[i];
		int err;

		/* NF ports too: their slicer takes the drop notices. */
		err = detach_xdp(ifc->ifindex);
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
		gro_restore(&cfg->ifaces[i]);
	}
	return 0;
}

/* Remove the pins and the directories of the domain at @dir. */
static void remove_pins(const char *dir)
{
	int err = nfsl_domain_remove(dir);

	if (err)
		nfsl_err("cannot remove all of %s: %s", dir, strerror(-err));
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
static void ct_liberal_release(const char *name, const struct nfsl_config *cfg)
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
			write_config(o.dir, &o.cfg);
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

/* Attach, detach, repair and gc of any domain on the host run one at a
 * time: two attaches of one NAME would otherwise both proceed and the
 * loser's teardown remove the winner's pins. Returns the lock fd or -1. */
static int lock_domains(void)
{
	int fd = nfsl_domains_lock();

	if (fd < 0)
		nfsl_err("cannot lock %s: %s", NFSL_LOCK_FILE, nfsl_lock_strerror(fd));
	return fd < 0 ? -1 : fd;
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
	err = use_splicer_maps(sp, dir, cfg->slots);
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
		err = write_config(dir, cfg);
out:
	if (err)
		splicer_bpf__destroy(sp);
	else
		*out = sp;
	return err;
}

/* Each interface gets its own instance of the slicer (libxdp links one
 * program into one dispatcher); all instances share the domain's maps. */
static int attach_xdp(int ifindex, const char *dir, __u32 slots, int mode)
{
	struct xdp_program *prog = NULL;
	struct slicer_bpf *sl;
	int err;

	sl = slicer_bpf__open();
	if (!sl)
		return -errno;
	err = use_slicer_maps(sl, dir, slots);
	if (err)
		goto out;
	prog = xdp_program__from_bpf_obj(sl->obj, "xdp");
	err = libxdp_get_error(prog);
	if (err) {
		prog = NULL;
		goto out;
	}
	nfsl_quiet_libs = true;
	err = xdp_program__attach(prog, ifindex,
				  mode ? XDP_MODE_SKB : XDP_MODE_NATIVE, 0);
	nfsl_quiet_libs = false;
out:
	xdp_program__close(prog);
	slicer_bpf__destroy(sl);
	return err;
}

/* libxdp falls back to a single program per interface when the kernel
 * refuses its dispatcher (e.g. freplace programs not permitted): say so,
 * since other XDP programs then cannot run beside the slicer. */
static void warn_legacy(const struct nfsl_config *cfg)
{
	char ifname[IF_NAMESIZE];

	for (__u32 i = 0; i < cfg->nifaces; i++) {
		struct xdp_multiprog *mp;

		if (cfg->ifaces[i].flags & NFSL_IF_NF_PORT)
			continue;
		mp = xdp_multiprog__get_from_ifindex(cfg->ifaces[i].ifindex);
		if (!libxdp_get_error(mp) && mp && xdp_multiprog__is_legacy(mp) &&
		    if_indextoname(cfg->ifaces[i].ifindex, ifname))
			fprintf(stderr,
				"nfslice: note: the kernel refused the libxdp dispatcher on %s, "
				"so the slicer is the only XDP program there "
				"(NFSLICE_VERBOSE=1 shows why)\n", ifname);
		if (!libxdp_get_error(mp))
			xdp_multiprog__close(mp);
	}
}

/* Name a foreign XDP program that runs alone on @ifindex (no dispatcher),
 * which the slicer cannot join. Returns 0 or -1 after the message. */
static int check_foreign_xdp(int ifindex, const char *ifname)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;
	int err = 0;

	if (libxdp_get_error(mp) || !mp)
		return 0;
	p = xdp_multiprog__is_legacy(mp) ? xdp_multiprog__main_prog(mp) : NULL;
	if (p && strcmp(xdp_program__name(p), NFSL_SLICER_PROG))
		err = nfsl_err("interface '%s' already runs the XDP program '%s' (id %u) "
			       "outside a libxdp dispatcher, so the slicer cannot run "
			       "beside it; remove it first (xdp-loader unload %s --all, "
			       "or ip link set dev %s xdp off)", ifname,
			       xdp_program__name(p), xdp_program__id(p), ifname, ifname);
	xdp_multiprog__close(mp);
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
	if (check_foreign_xdp(ifindex, name))
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

/* Set nf_conntrack_tcp_be_liberal to 1 in this namespace if it is 0: the
 * sliced TCP segments are shorter than the sequence space they stand for,
 * so strict window tracking marks the receiver's ACKs invalid and NAT
 * stops translating them. */
static int ct_liberal_take(struct nfsl_config *cfg)
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

static int run_attach(void *o, int argc, char **argv)
{
	struct attach_opts *opt = o;
	struct nfsl_tenant_spec *spec = NULL;
	struct nfsl_config cfg = {};
	struct splicer_bpf *sp = NULL;
	char dir[PATH_MAX], ifname[IF_NAMESIZE];
	bool made = false, usage = false;
	int ncpus, err, lock = -1;

	err = nfsl_domain_dir(dir, sizeof(dir), opt->name);
	if (err)
		return nfsl_err_domain(err, opt->name);
	lock = lock_domains();
	if (lock < 0)
		return -1;
	err = -1;
	if (!faccessat(AT_FDCWD, dir, F_OK, AT_EACCESS)) {
		nfsl_err("domain '%s' is already attached in this network namespace "
			 "(pins in %s); detach it first: nfslice detach --name %s",
			 opt->name, dir, opt->name);
		goto out;
	}
	nfsl_retired_prune(); /* lists whose grace ended: ours is kept */
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0 || ncpus > NFSL_MAX_CPUS) {
		nfsl_err("cannot use %d CPUs (at most %d)", ncpus, NFSL_MAX_CPUS);
		goto out;
	}
	if (opt->slots < (__u32)ncpus) {
		nfsl_err("--slots %u is too small: each of the %d CPUs allocates "
			 "from its own partition, so give at least %d",
			 opt->slots, ncpus, ncpus);
		usage = true;
		goto out;
	}

	err = nfsl_config_init(&cfg, opt->threshold, opt->keep, opt->slots,
			       opt->expiry, ncpus);
	if (err) {
		nfsl_err("cannot make the domain's configuration: %s (the MAC key "
			 "comes from getrandom)", strerror(-err));
		goto out;
	}
	cfg.ttl_us = opt->ttl * 1000;
	if (opt->events)
		cfg.flags |= NFSL_CFG_EVENTS;
	err = -1;
	if (collect_ifaces(&cfg, argc, argv, opt->nf_ports, opt->mode))
		goto out;
	if (nfsl_config_split(&cfg)) {
		nfsl_err("--slots %u is too small: each of the %d CPUs splits its share "
			 "among the domain interfaces and each NF port, so give at "
			 "least %u", opt->slots, ncpus, ncpus * (1 + count_nf_ports(&cfg)));
		usage = true;
		goto out;
	}
	/* Every partition gets as many slots: the rest of --slots is not
	 * used (as --help says), and said here. */
	if (cfg.slots != opt->slots)
		fprintf(stderr, "nfslice: note: --slots %u rounded down to %u: %u partitions "
			"(%d CPUs x %u) of %u slots each\n", opt->slots, cfg.slots,
			cfg.ncpus * cfg.nparts, ncpus, cfg.nparts, cfg.part_slots);
	/* Tenants are in the config before the first slicer runs: their
	 * number and regions are fixed from the first packet on; their rules
	 * go into the slicer's maps once it has made them (below). */
	if (opt->tenants) {
		char msg[512];

		spec = malloc(sizeof(*spec));
		if (!spec) {
			nfsl_err("out of memory");
			goto out;
		}
		if (nfsl_tenants_parse(opt->tenants, spec, msg, sizeof(msg)) ||
		    nfsl_tenants_config(&cfg, spec, msg, sizeof(msg))) {
			nfsl_err("--tenants: %s", msg);
			usage = true; /* the file is the user's input */
			goto out;
		}
	}

	err = mkdir_p(dir);
	if (err) {
		nfsl_err("cannot create %s: %s", dir, strerror(-err));
		goto out;
	}
	made = true;
	/* The namespace probe first: whatever happens next, nfslice gc can
	 * tell whether this domain's namespace still exists. */
	err = nfsl_netns_probe_create(dir);
	if (err)
		fprintf(stderr, "nfslice: note: no namespace probe (%s): nfslice gc "
			"cannot tell when this namespace is gone, and will keep "
			"the domain's pins\n", strerror(-err));
	/* The config names every interface before any is touched, so a
	 * detach after an interrupted attach finds them all. */
	err = load_splicer(dir, &cfg, &sp);
	if (err)
		goto out;
	/* Every splicer before any slicer: a header sliced on one interface
	 * may leave through any other at once (issue #7). */
	for (__u32 i = 0; i < cfg.nifaces; i++) {
		struct nfsl_iface *ifc = &cfg.ifaces[i];

		if (ifc->flags & NFSL_IF_NF_PORT)
			continue;
		if_indextoname(ifc->ifindex, ifname);
		err = gro_off(ifc, ifname);
		if (!err)
			err = write_config(dir, &cfg);
		if (!err) {
			err = nfsl_egress_attach(ifc->ifindex,
					bpf_program__fd(sp->progs.nfsl_splicer),
					&ifc->flags);
			if (err)
				nfsl_err("attaching the splicer to %s (tc egress) failed: %s",
					 ifname, strerror(-err));
		}
		if (!err)
			err = write_config(dir, &cfg);
		if (err)
			goto out;
	}
	if (!opt->no_ct_liberal) {
		err = ct_liberal_take(&cfg);
		if (!err)
			err = write_config(dir, &cfg);
		if (err)
			goto out;
	}
	for (__u32 i = 0; i < cfg.nifaces; i++) {
		const struct nfsl_iface *ifc = &cfg.ifaces[i];

		if_indextoname(ifc->ifindex, ifname);
		err = attach_xdp(ifc->ifindex, dir, cfg.slots, opt->mode);
		if (err == -ERANGE)
			nfsl_err("attaching the slicer to %s failed: its MTU (or its veth "
				 "peer's) is too large for XDP without frags; lower it, "
				 "e.g. ip link set dev %s mtu 1500", ifname, ifname);
		else if (err)
			nfsl_err("attaching the slicer to %s (XDP %s) failed: %s%s",
				 ifname, modes[opt->mode], strerror(-err),
				 opt->mode ? "" : "; try --mode skb if the driver has no native XDP");
		if (err)
			goto out;
	}
	if (spec) {
		err = nfsl_tenants_write_rules(dir, spec);
		if (err) {
			nfsl_err("cannot write the tenant rules: %s", strerror(-err));
			goto out;
		}
	}
	warn_legacy(&cfg);
	printf("nfslice: domain '%s' attached to", opt->name);
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	if (opt->nf_ports)
		printf(", NF ports %s", opt->nf_ports);
	printf(" (%u slots, threshold %u B, keep %u B, expiry %u, ttl %u ms, XDP %s)\npins: %s\n",
	       cfg.slots, cfg.threshold, cfg.keep, cfg.expiry, opt->ttl, modes[opt->mode], dir);
out:
	free(spec);
	splicer_bpf__destroy(sp);
	if (err && made && !unload(&cfg, NULL)) {
		ct_liberal_release(opt->name, &cfg);
		remove_pins(dir);
	}
	close(lock);
	return err ? (usage ? NFSL_EXIT_USAGE : -1) : 0;
}

struct detach_opts {
	const char *name; /* first: repair reads the same options as a name */
	bool no_drain;
};

static int run_detach(void *o, int argc, char **argv)
{
	const struct detach_opts *opt = o;
	int err, lock;

	lock = lock_domains();
	if (lock < 0)
		return -1;
	err = nfsl_detach_locked(opt->name, opt->no_drain);
	close(lock);
	return err;
}

int nfsl_detach_locked(const char *name, bool no_drain)
{
	struct nfsl_domain d;
	int err;

	err = nfsl_domain_open(&d, name);
	if (err == -ENOENT && d.dir[0] && !faccessat(AT_FDCWD, d.dir, F_OK, AT_EACCESS)) {
		/* Half-made domain (attach killed before its config): no
		 * program was attached yet; remove its pins. */
		remove_pins(d.dir);
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
	err = unload(&d.cfg, no_drain ? NULL : &d);
	if (!err) {
		ct_liberal_release(name, &d.cfg);
		remove_pins(d.dir);
		printf("nfslice: domain '%s' detached\n", name);
	}
	nfsl_domain_close(&d);
out:
	return err ? -1 : 0;
}

/*
 * Make a damaged domain whole again with its own store, configuration and
 * pinned splicer: every missing splicer first, then every missing slicer
 * (the order attach uses), the GRO features off again, be_liberal set again
 * if the domain had set it. An interface that is gone cannot come back:
 * repair refuses, and changes nothing.
 */
static int run_repair(void *o, int argc, char **argv)
{
	const char *name = *(const char **)o;
	char path[PATH_MAX + 32], buf[32];
	struct nfsl_health h;
	struct nfsl_domain d;
	int err, lock, splicer = -1, done = 0;
	__u64 ino;

	lock = lock_domains();
	if (lock < 0)
		return -1;
	err = nfsl_domain_open(&d, name);
	if (err) {
		nfsl_err_domain(err, name);
		goto out_unlock;
	}
	err = -1;
	nfsl_domain_health(&d, &h);
	if (h.gone) {
		for (unsigned int i = 0; i < h.nproblems; i++)
			nfsl_err("domain '%s': %s", name, h.problems[i]);
		nfsl_err("repair cannot bring an interface back: detach the domain "
			 "(nfslice detach --name %s) and attach it to the interfaces it "
			 "has now", name);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s", d.dir, NFSL_PIN_SPLICER);
	splicer = bpf_obj_get(path);
	if (splicer < 0) {
		nfsl_err("the splicer pin %s is missing (%s): repair needs it; detach "
			 "the domain and attach it again", path, strerror(errno));
		goto out;
	}
	/* Every splicer before any slicer (as attach). */
	for (__u32 i = 0; i < d.cfg.nifaces; i++) {
		struct nfsl_iface *ifc = &d.cfg.ifaces[i];
		const char *ifname = nfsl_health_ifname(&h, &d.cfg, i, buf, sizeof(buf));

		if (ifc->flags & NFSL_IF_NF_PORT)
			continue;
		if (gro_off(ifc, ifname) || write_config(d.dir, &d.cfg))
			goto out;
		if (h.ifs[i].tc_id)
			continue;
		err = nfsl_egress_attach(ifc->ifindex, splicer, &ifc->flags);
		if (!err)
			err = write_config(d.dir, &d.cfg);
		if (err) {
			nfsl_err("attaching the splicer to %s (tc egress) failed: %s",
				 ifname, strerror(-err));
			err = -1;
			goto out;
		}
		printf("nfslice: splicer re-attached to %s\n", ifname);
		done++;
	}
	if (d.cfg.flags & NFSL_CFG_CT_LIBERAL_SET) {
		int now = 1;

		if (!nfsl_sysctl(NFSL_SYSCTL_CT_LIBERAL, &now, -1) && !now &&
		    !nfsl_sysctl(NFSL_SYSCTL_CT_LIBERAL, NULL, 1)) {
			printf("nfslice: net.netfilter.nf_conntrack_tcp_be_liberal set "
			       "to 1 again\n");
			done++;
		}
	}
	for (__u32 i = 0; i < d.cfg.nifaces; i++) {
		const struct nfsl_iface *ifc = &d.cfg.ifaces[i];
		const char *ifname = nfsl_health_ifname(&h, &d.cfg, i, buf, sizeof(buf));
		int mode = ifc->flags & NFSL_IF_SKB_MODE ? 1 : 0;

		if (h.ifs[i].xdp)
			continue;
		err = attach_xdp(ifc->ifindex, d.dir, d.cfg.slots, mode);
		if (err) {
			nfsl_err("attaching the slicer to %s (XDP %s) failed: %s; its "
				 "splicer stays, so nothing leaves unspliced", ifname,
				 modes[mode], strerror(-err));
			err = -1;
			goto out;
		}
		printf("nfslice: slicer re-attached to %s (XDP %s)\n", ifname, modes[mode]);
		done++;
	}
	if (nfsl_netns_probe(d.dir, &ino) == -ENOENT && !nfsl_netns_probe_create(d.dir)) {
		printf("nfslice: namespace probe added (for nfslice gc)\n");
		done++;
	}
	err = 0;
	if (nfsl_domain_health(&d, &h)) {
		for (unsigned int i = 0; i < h.nproblems; i++)
			nfsl_err("domain '%s' is still damaged: %s", name, h.problems[i]);
		err = -1;
	} else if (done) {
		printf("nfslice: domain '%s' repaired\n", name);
	} else {
		printf("nfslice: domain '%s' is whole; nothing to repair\n", name);
	}
out:
	if (splicer >= 0)
		close(splicer);
	nfsl_domain_close(&d);
out_unlock:
	close(lock);
	return err ? -1 : 0;
}

static const struct nfsl_opt attach_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct attach_opts, name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default); one namespace's names are its own" },
	{ "threshold", NFSL_OPT_U32, offsetof(struct attach_opts, threshold), 0, 65535,
	  .metavar = "BYTES", .help = "slice frames of at least BYTES bytes (default 256)" },
	{ "keep", NFSL_OPT_U32, offsetof(struct attach_opts, keep), 0, NFSL_KEEP_MAX,
	  .metavar = "BYTES", .help = "payload bytes left after the L4 header (default 0, max 192)" },
	{ "slots", NFSL_OPT_U32, offsetof(struct attach_opts, slots), 1, NFSL_MAX_SLOTS,
	  .metavar = "N",
	  .help = "store slots of 2 KiB (default 4096), split into CPUs x (1 + NF ports) "
		  "equal partitions: rounded down to a multiple of their number" },
	{ "expiry", NFSL_OPT_U32, offsetof(struct attach_opts, expiry), 1, NFSL_MAX_EXPIRY,
	  .metavar = "N", .help = "allocator wrap-arounds a busy slot survives (default 2)" },
	{ "ttl", NFSL_OPT_DURATION, offsetof(struct attach_opts, ttl), 0, NFSL_MAX_TTL_MS,
	  .unit = NFSL_MS, .metavar = "MS",
	  .help = "evict payloads parked longer than MS ms, on top of --expiry (default 10, "
		  "0 off; applied by nfsliced's TTL scan or nfslice evict)" },
	{ "mode", NFSL_OPT_ENUM, offsetof(struct attach_opts, mode), .choices = modes,
	  .metavar = "MODE", .help = "XDP mode: native or skb (default native)" },
	{ "nf-port", NFSL_OPT_STR, offsetof(struct attach_opts, nf_ports),
	  .metavar = "IFACE[,IFACE]",
	  .help = "links to remote NF servers: sliced headers may leave through "
		  "them (and come back); the slicer there only takes drop notices, "
		  "no splicer" },
	{ "tenants", NFSL_OPT_STR, offsetof(struct attach_opts, tenants), .metavar = "FILE",
	  .help = "partition the store between the tenants FILE declares (quotas, "
		  "rules by dev, vlan, dst prefix; see nfslice tenants)" },
	{ "events", NFSL_OPT_FLAG, offsetof(struct attach_opts, events),
	  .help = "write drop events (stale, too_big, replayed, bad_token, route and "
		  "MTU skips) for nfslice events; nfslice set --events on|off later" },
	{ "no-ct-liberal", NFSL_OPT_FLAG, offsetof(struct attach_opts, no_ct_liberal),
	  .help = "leave net.netfilter.nf_conntrack_tcp_be_liberal as it is "
		  "(default: set it to 1 until detach; sliced TCP through "
		  "conntrack stalls without it)" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_attach = {
	.name = "attach",
	.args = "IFACE...",
	.min_args = 1,
	.max_args = NFSL_MAX_IFACES,
	.summary = "attach a slicing domain to interfaces",
	.description =
		"Loads the slicer (XDP, through the libxdp dispatcher, so other XDP\n"
		"programs keep running) on the ingress and the splicer (TCX, Linux >= 6.6;\n"
		"else a tc clsact filter) on the egress of every IFACE, all sharing one\n"
		"store of N slots pinned in\n"
		"/sys/fs/bpf/nfslice/ns<netns cookie>/NAME/ (see 'nfslice status').\n"
		"Frames of at least --threshold bytes have their UDP/TCP payload beyond\n"
		"--keep bytes parked; the packet goes on with DSCP 63 and a 16-byte\n"
		"token. Slots are taken FIFO per CPU; a busy slot is evicted after\n"
		"--expiry wrap-arounds (PayloadPark Alg. 1, NFSlicer §III-C), and\n"
		"once parked longer than --ttl ms by the TTL scan of nfsliced or\n"
		"nfslice evict (PayloadPark §3.3's evictor, by time: the slicer\n"
		"logs every slice with its time, CLOCK_MONOTONIC in ns). Every\n"
		"interface the network function may send on must be in the domain.\n"
		"The domain's directory also pins a namespace probe (netns: a BPF link\n"
		"to this network namespace that holds no reference on it), by which\n"
		"nfslice list and gc tell whether the namespace still exists.\n"
		"Errors: unknown interface, name already attached, no bpffs, a\n"
		"capability missing, kernel feature missing; a failed attach leaves\n"
		"nothing behind.",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = attach_table,
	.run = run_attach,
	.opts_size = sizeof(struct attach_opts),
	.defaults = &attach_defaults,
};

static const char *const detach_defaults = "default";
static const struct detach_opts detach_opt_defaults = { .name = "default" };

static const struct nfsl_opt repair_table[] = {
	{ "name", NFSL_OPT_STR, 0,
	  .check = nfsl_name_opt_check, .metavar = "NAME", .help = "domain name (default: default)" },
	{ NULL },
};

static const struct nfsl_opt detach_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct detach_opts, name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "no-drain", NFSL_OPT_FLAG, offsetof(struct detach_opts, no_drain),
	  .help = "take the splicers off right after the slicers, without waiting for "
		  "the headers in flight (up to 2 s): the node leaves the return path now "
		  "(migrate --mode copy; their payloads were copied to the new instance)" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_detach = {
	.name = "detach",
	.summary = "detach a slicing domain and remove its pins",
	.description =
		"Removes the slicer and the splicer from every interface of the domain,\n"
		"the clsact qdiscs nfslice created (the fallback of kernels without\n"
		"TCX), and the pinned maps. Payloads still\n"
		"parked are dropped with the store. Sets nf_conntrack_tcp_be_liberal\n"
		"back to 0 if attach had set it, unless TCP connections are still\n"
		"tracked in the namespace (their windows were learned from sliced\n"
		"segments: strict tracking would reset them; a note says so). Also\n"
		"cleans up after an attach that was interrupted. The slicers go first;\n"
		"the splicers stay until the headers sliced before have come back\n"
		"(busy slots at 0 or no longer falling for 100 ms, at most 2 s),\n"
		"unless --no-drain.",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = detach_table,
	.run = run_detach,
	.opts_size = sizeof(struct detach_opts),
	.defaults = &detach_opt_defaults,
};

const struct nfsl_cmd nfsl_cmd_repair = {
	.name = "repair",
	.summary = "re-attach a damaged domain's missing slicers and splicers",
	.description =
		"Makes domain NAME of this network namespace whole again when a slicer\n"
		"or a splicer was removed by hand (ip link set dev IFACE xdp off, tc\n"
		"filter del, tc qdisc del) or the GRO features were turned on again:\n"
		"it re-attaches the missing programs with the domain's own store,\n"
		"configuration and pinned splicer, every splicer before any slicer (as\n"
		"attach), so parked payloads and counters survive. It also sets\n"
		"nf_conntrack_tcp_be_liberal again if the domain had set it, and gives\n"
		"a domain attached by an older nfslice its namespace probe. An\n"
		"interface that is gone cannot be repaired: detach and attach again.\n"
		"A whole domain is left as it is (exit 0).",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = repair_table,
	.run = run_repair,
	.opts_size = sizeof(const char *),
	.defaults = &detach_defaults,
};
