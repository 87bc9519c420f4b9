// SPDX-License-Identifier: GPL-2.0
/*
 * The guards of a domain: load once, link on every interface that needs
 * one, pin the links, keep them in line with the interfaces. See guard.h.
 *
 * The build's libbpf (1.1) and UAPI headers predate TCX links and
 * netfilter programs, so their numbers are here and the netfilter link is
 * made with bpf(2) directly (as egress.c does for TCX).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if_arp.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsl/domain.h"
#include "nfsl/errors.h"
#include "nfsl/guard.h"
#include "nfsl/pins.h"
#include "util/log.h"
#include "guard.skel.h"

/* enum bpf_prog_type, bpf_attach_type, bpf_link_type of Linux >= 6.4/6.6. */
#define NFSL_PROG_TYPE_NETFILTER 32
#define NFSL_ATTACH_NETFILTER 45
#define NFSL_ATTACH_TCX_EGRESS 47
#define NFSL_LINK_TYPE_TCX 11
/* NFPROTO_IPV4, NFPROTO_IPV6; NF_INET_LOCAL_IN, NF_INET_FORWARD. */
#define NFSL_NFPROTO_IPV4 2
#define NFSL_NFPROTO_IPV6 10
#define NFSL_NF_LOCAL_IN 1
#define NFSL_NF_FORWARD 2
/* The first priority a BPF netfilter link may take (NF_IP_PRI_FIRST is
 * refused): why first, bpf/guard.bpf.c nfsl_guard_nf. */
#define NFSL_GUARD_NF_PRIO (INT_MIN + 1)
#ifndef ARPHRD_IP6GRE
#define ARPHRD_IP6GRE 823 /* linux/if_arp.h; glibc's lacks it */
#endif

/* The pins in <dir>/guard/: programs, then links. */
#define PIN_TC "tc"
#define PIN_TC_L3 "tc_l3"
#define PIN_NF "nf"
#define PIN_NF4 "nf4"
#define PIN_NF6 "nf6"
#define PIN_FW4 "fw4"
#define PIN_FW6 "fw6"
#define PIN_IF "if" /* if<ifindex>: the TCX link of that interface */

enum nfsl_guard_kind nfsl_guard_kind(int ifindex)
{
	struct ifreq ifr = {};
	int fd, type;

	if (!if_indextoname(ifindex, ifr.ifr_name))
		return NFSL_GUARD_NONE;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NFSL_GUARD_NONE;
	type = ioctl(fd, SIOCGIFHWADDR, &ifr) ? -1 : ifr.ifr_hwaddr.sa_family;
	if (type == ARPHRD_ETHER) {
		/* An ifb (the link-rate shaping of the park topology, tc
		 * mirred into it) is a transit: its guard would drop headers
		 * on their way back to a domain interface. */
		struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };

		ifr.ifr_data = (void *)&di;
		if (!ioctl(fd, SIOCETHTOOL, &ifr) && !strcmp(di.driver, "ifb"))
			type = -2;
	}
	close(fd);
	switch (type) {
	case -2:
		return NFSL_GUARD_IFB;
	case ARPHRD_ETHER:
	case ARPHRD_LOOPBACK:
		return NFSL_GUARD_ETH;
	case ARPHRD_NONE:    /* tun, wireguard */
	case ARPHRD_RAWIP:
	case ARPHRD_TUNNEL:  /* ipip */
	case ARPHRD_TUNNEL6: /* ip6tnl */
	case ARPHRD_SIT:
	case ARPHRD_IPGRE:
	case ARPHRD_IP6GRE:
		return NFSL_GUARD_L3;
	default:
		return NFSL_GUARD_NONE;
	}
}

const char *nfsl_guard_kind_name(enum nfsl_guard_kind k)
{
	return k == NFSL_GUARD_ETH ? "eth" : k == NFSL_GUARD_L3 ? "l3" :
	       k == NFSL_GUARD_IFB ? "ifb" : "none";
}

static void guard_path(char *buf, size_t len, const char *dir, const char *pin)
{
	snprintf(buf, len, "%s/" NFSL_PIN_GUARD "/%s", dir, pin);
}

int nfsl_nf_prog_type(struct bpf_program *prog)
{
	int err = bpf_program__set_type(prog, NFSL_PROG_TYPE_NETFILTER);

	return err ? err : bpf_program__set_expected_attach_type(prog, NFSL_ATTACH_NETFILTER);
}

int nfsl_guard_load(const char *dir, __u32 slots)
{
	static const char *const pins[] = { PIN_TC, PIN_TC_L3, PIN_NF };
	char path[PATH_MAX + 64];
	struct guard_bpf *g;
	struct bpf_program *progs[3];
	int err;

	guard_path(path, sizeof(path), dir, PIN_NF);
	if (!access(path, F_OK))
		return 0;
	snprintf(path, sizeof(path), "%s/" NFSL_PIN_GUARD, dir);
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	g = guard_bpf__open();
	if (!g)
		return -errno;
	progs[0] = g->progs.nfsl_guard;
	progs[1] = g->progs.nfsl_guard_l3;
	progs[2] = g->progs.nfsl_guard_nf;
	err = nfsl_nf_prog_type(progs[2]);
	if (!err)
		err = nfsl_use_domain_maps(g->obj, dir, slots);
	if (!err)
		err = guard_bpf__load(g);
	for (int i = 0; i < 3 && !err; i++) {
		guard_path(path, sizeof(path), dir, pins[i]);
		err = bpf_program__pin(progs[i], path);
	}
	guard_bpf__destroy(g);
	return err == -EINVAL ? -EOPNOTSUPP : err;
}

/* The link pinned at @path, if any: its fd and (TCX) ifindex, else -1. */
static int link_get(const char *path, __u32 *ifindex)
{
	struct {
		__u32 type, id, prog_id, pad;
		__u32 ifindex, attach_type; /* union's tcx (Linux >= 6.6) */
		__u8 rest[256];
	} info = {};
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(path);

	if (fd < 0)
		return -1;
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		close(fd);
		return -1;
	}
	*ifindex = info.type == NFSL_LINK_TYPE_TCX ? info.ifindex : 0;
	return fd;
}

static __u32 link_id(int fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* The netfilter link of @prog at @hook of family @pf. fd or -errno. */
static int nf_link_create(int prog, __u32 pf, __u32 hook)
{
	union {
		union bpf_attr attr;
		struct {
			__u32 prog_fd, target_fd, attach_type, flags;
			__u32 pf, hooknum;
			__s32 priority;
			__u32 nf_flags;
		} nf;
	} a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.nf.prog_fd = prog;
	a.nf.attach_type = NFSL_ATTACH_NETFILTER;
	a.nf.pf = pf;
	a.nf.hooknum = hook;
	a.nf.priority = NFSL_GUARD_NF_PRIO;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

/* Pin the new link @fd at @path (closing it). 0 or -errno. */
static int link_pin(int fd, const char *path)
{
	int err;

	if (fd < 0)
		return fd;
	err = bpf_obj_pin(fd, path) ? -errno : 0;
	close(fd);
	return err;
}

/* The netfilter guards (LOCAL_IN, FORWARD; IPv4, IPv6) linked if
 * missing: how many were. */
static const struct {
	const char *pin;
	__u32 pf, hook;
} nf_links[NFSL_GUARD_NF_NR] = {
	[NFSL_GUARD_IN4] = { PIN_NF4, NFSL_NFPROTO_IPV4, NFSL_NF_LOCAL_IN },
	[NFSL_GUARD_IN6] = { PIN_NF6, NFSL_NFPROTO_IPV6, NFSL_NF_LOCAL_IN },
	[NFSL_GUARD_FW4] = { PIN_FW4, NFSL_NFPROTO_IPV4, NFSL_NF_FORWARD },
	[NFSL_GUARD_FW6] = { PIN_FW6, NFSL_NFPROTO_IPV6, NFSL_NF_FORWARD },
};

static int sync_nf(const char *dir)
{
	char path[PATH_MAX + 64];
	int prog, err = 0, done = 0;
	__u32 unused;

	guard_path(path, sizeof(path), dir, PIN_NF);
	prog = bpf_obj_get(path);
	if (prog < 0)
		return -errno;
	for (size_t i = 0; i < NFSL_GUARD_NF_NR && !err; i++) {
		int fd;

		guard_path(path, sizeof(path), dir, nf_links[i].pin);
		fd = link_get(path, &unused);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		unlink(path);
		err = link_pin(nf_link_create(prog, nf_links[i].pf, nf_links[i].hook), path);
		if (err)
			nfsl_err("linking the %s guard (netfilter %s, %s) failed: %s; it needs "
				 "Linux >= 6.4 with CONFIG_NETFILTER_BPF_LINK",
				 nf_links[i].hook == NFSL_NF_FORWARD ? "routing" : "local-delivery",
				 nf_links[i].hook == NFSL_NF_FORWARD ? "FORWARD" : "LOCAL_IN",
				 nf_links[i].pf == NFSL_NFPROTO_IPV4 ? "IPv4" : "IPv6",
				 strerror(-err));
		else
			done++;
	}
	close(prog);
	return err ? err : done;
}

/* Does pin @name stay? With @cfg NULL none does; else all but the
 * guards of interfaces gone or now in @cfg. */
static bool pin_stays(const char *name, const struct nfsl_config *cfg)
{
	char ifname[IF_NAMESIZE], *end;
	unsigned long ifindex;

	if (!cfg)
		return false;
	if (strncmp(name, PIN_IF, 2))
		return true;
	ifindex = strtoul(name + 2, &end, 10);
	return *end || !ifindex ||
	       (if_indextoname(ifindex, ifname) && nfsl_iface_idx(cfg, ifindex) >= NFSL_MAX_IFACES);
}

/* Unpin what pin_stays(@cfg) lets go in @dir/guard/: how many; *@err the
 * first -errno. */
static int unpin(const char *dir, const struct nfsl_config *cfg, int *err)
{
	char path[PATH_MAX + 64];
	struct dirent *e;
	int done = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/" NFSL_PIN_GUARD, dir);
	d = opendir(path);
	if (!d) {
		*err = errno == ENOENT ? 0 : -errno;
		return 0;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || pin_stays(e->d_name, cfg))
			continue;
		guard_path(path, sizeof(path), dir, e->d_name);
		if (!unlink(path))
			done++;
		else if (!*err)
			*err = -errno;
	}
	closedir(d);
	return done;
}

/* Is the link pinned at @path (if<@ifindex>) on @ifindex? Its fd, else -1
 * (a stale pin is removed). */
static int tcx_link(const char *path, __u32 ifindex)
{
	__u32 on = 0;
	int fd = link_get(path, &on);

	if (fd >= 0 && on == ifindex)
		return fd;
	if (fd >= 0)
		close(fd);
	unlink(path);
	return -1;
}

int nfsl_guard_sync(const char *dir, const struct nfsl_config *cfg, bool quiet)
{
	char path[PATH_MAX + 64], pin[32];
	struct if_nameindex *ifs;
	int prog[3] = { -1, -1, -1 }, err, done;

	err = nfsl_guard_load(dir, cfg->slots);
	if (err)
		return nfsl_err("loading the guards failed: %s (they need TCX and netfilter "
				"programs: Linux >= 6.6); NFSLICE_VERBOSE=1 shows the "
				"verifier log", strerror(-err));
	guard_path(path, sizeof(path), dir, PIN_TC);
	prog[NFSL_GUARD_ETH] = bpf_obj_get(path);
	guard_path(path, sizeof(path), dir, PIN_TC_L3);
	prog[NFSL_GUARD_L3] = bpf_obj_get(path);
	ifs = if_nameindex();
	done = unpin(dir, cfg, &err);
	err = 0; /* a pin that would not go: its link stays, harmless */
	for (struct if_nameindex *i = ifs; i && i->if_index && !err; i++) {
		enum nfsl_guard_kind k;
		int fd;

		if (nfsl_iface_idx(cfg, i->if_index) < NFSL_MAX_IFACES)
			continue;
		snprintf(pin, sizeof(pin), PIN_IF "%u", i->if_index);
		guard_path(path, sizeof(path), dir, pin);
		fd = tcx_link(path, i->if_index);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		k = nfsl_guard_kind(i->if_index);
		if (k == NFSL_GUARD_IFB)
			continue;
		if (k == NFSL_GUARD_NONE) {
			fprintf(stderr, "nfslice: note: no guard on %s: its link type is "
				"neither Ethernet nor IP (docs/design.md \"Where a packet "
				"is sliced\")\n", i->if_name);
			continue;
		}
		err = link_pin(bpf_link_create(prog[k], i->if_index, NFSL_ATTACH_TCX_EGRESS,
					       NULL), path);
		if (err) {
			nfsl_err("attaching the guard to %s (TCX egress) failed: %s%s",
				 i->if_name, strerror(-err),
				 err == -EINVAL ? "; guards need TCX (Linux >= 6.6)" : "");
			break;
		}
		if (!quiet)
			printf("nfslice: guard attached to %s (%s)\n", i->if_name,
			       nfsl_guard_kind_name(k));
		done++;
	}
	if_freenameindex(ifs);
	for (int k = 1; k < 3; k++)
		if (prog[k] >= 0)
			close(prog[k]);
	if (!err) {
		err = sync_nf(dir);
		if (err >= 0)
			return done + err;
	}
	return err < 0 ? err : -EIO;
}

void nfsl_guard_state(const char *dir, const struct nfsl_config *cfg,
		      struct nfsl_guard_state *st)
{
	char path[PATH_MAX + 64], pin[32];
	struct if_nameindex *ifs = if_nameindex();
	__u32 unused;
	int fd;

	memset(st, 0, sizeof(*st));
	guard_path(path, sizeof(path), dir, PIN_NF);
	st->loaded = !access(path, F_OK);
	for (size_t i = 0; i < NFSL_GUARD_NF_NR; i++) {
		guard_path(path, sizeof(path), dir, nf_links[i].pin);
		fd = link_get(path, &unused);
		st->nf[i] = fd >= 0 ? link_id(fd) : 0;
		if (fd >= 0)
			close(fd);
	}
	for (struct if_nameindex *i = ifs; i && i->if_index && st->nifs < NFSL_GUARD_MAX; i++) {
		typeof(st->ifs[0]) *g = &st->ifs[st->nifs];
		__u32 on = 0;

		if (nfsl_iface_idx(cfg, i->if_index) < NFSL_MAX_IFACES)
			continue;
		g->ifindex = i->if_index;
		snprintf(g->name, sizeof(g->name), "%s", i->if_name);
		g->kind = nfsl_guard_kind(i->if_index);
		snprintf(pin, sizeof(pin), PIN_IF "%u", i->if_index);
		guard_path(path, sizeof(path), dir, pin);
		fd = link_get(path, &on);
		if (fd >= 0 && on == i->if_index)
			g->link_id = link_id(fd);
		if (fd >= 0)
			close(fd);
		if (g->link_id)
			st->nguarded++;
		else if (g->kind == NFSL_GUARD_IFB)
			;
		else if (g->kind == NFSL_GUARD_NONE)
			st->nbare++;
		else
			st->nmissing++;
		st->nifs++;
	}
	if (ifs)
		if_freenameindex(ifs);
}

int nfsl_guard_remove(const char *dir)
{
	char path[PATH_MAX + 64];
	int err = 0;

	unpin(dir, NULL, &err);
	snprintf(path, sizeof(path), "%s/" NFSL_PIN_GUARD, dir);
	if (rmdir(path) && errno != ENOENT && !err)
		err = -errno;
	return err;
}

bool nfsl_guard_release(const char *dir)
{
	char path[PATH_MAX + 64];
	__u64 ino;

	for (size_t i = 0; i < NFSL_GUARD_NF_NR; i++) {
		guard_path(path, sizeof(path), dir, nf_links[i].pin);
		unlink(path);
	}
	/* The namespace is dismantled by a kernel worker, soon after. */
	for (int i = 0; i < 20; i++) {
		if (nfsl_netns_probe(dir, &ino) == 0)
			return true;
		usleep(50000);
	}
	return false;
}
