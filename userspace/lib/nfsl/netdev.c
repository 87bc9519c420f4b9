// SPDX-License-Identifier: GPL-2.0
/*
 * What attach needs to know and change about an interface, all in the
 * caller's network namespace: MTU, MAC, upper devices (rtnetlink), GRO
 * features (ethtool ioctl) and the conntrack sysctl. See netdev.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>

#include "nfsl/netdev.h"
#include "util/rtnl.h"

#ifdef __clang__
/* The ethtool requests embed structs that end in a flexible array as
 * headers (a GNU extension, as ethtool(8) does). */
#pragma clang diagnostic ignored "-Wgnu-variable-sized-type-not-at-end"
#endif

static int if_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr)
{
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
	if (ioctl(fd, req, ifr))
		err = -errno;
	close(fd);
	return err;
}

int nfsl_if_mac(const char *ifname, __u8 mac[6])
{
	struct ifreq ifr = {};
	int err = if_ioctl(ifname, SIOCGIFHWADDR, &ifr);

	if (!err)
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return err;
}

/* Index of the feature @name in the ETH_SS_FEATURES string set, or -errno. */
static int feature_index(const char *ifname, const char *name)
{
	struct {
		struct ethtool_sset_info hdr;
		__u32 len;
	} info = { .hdr = { .cmd = ETHTOOL_GSSET_INFO,
			    .sset_mask = 1ULL << ETH_SS_FEATURES } };
	struct ethtool_gstrings *strs;
	struct ifreq ifr = {};
	int err, idx = -ENOENT;

	ifr.ifr_data = (void *)&info;
	err = if_ioctl(ifname, SIOCETHTOOL, &ifr);
	if (err)
		return err;
	strs = calloc(1, sizeof(*strs) + (size_t)info.len * ETH_GSTRING_LEN);
	if (!strs)
		return -ENOMEM;
	strs->cmd = ETHTOOL_GSTRINGS;
	strs->string_set = ETH_SS_FEATURES;
	strs->len = info.len;
	ifr.ifr_data = (void *)strs;
	err = if_ioctl(ifname, SIOCETHTOOL, &ifr);
	for (__u32 i = 0; !err && i < strs->len; i++)
		if (!strncmp((char *)strs->data + i * ETH_GSTRING_LEN, name,
			     ETH_GSTRING_LEN))
			idx = i;
	free(strs);
	return err ? err : idx;
}

int nfsl_if_feature(const char *ifname, const char *name, int set)
{
	struct {
		struct ethtool_gfeatures hdr;
		struct ethtool_get_features_block blk[8];
	} get = { .hdr = { .cmd = ETHTOOL_GFEATURES, .size = 8 } };
	struct {
		struct ethtool_sfeatures hdr;
		struct ethtool_set_features_block blk[8];
	} put = { .hdr = { .cmd = ETHTOOL_SFEATURES, .size = 8 } };
	struct ifreq ifr = {};
	int idx, err;
	__u32 bit;

	idx = feature_index(ifname, name);
	if (idx < 0)
		return idx;
	if (idx >= 8 * 32)
		return -ERANGE;
	bit = 1u << (idx % 32);
	ifr.ifr_data = (void *)&get;
	err = if_ioctl(ifname, SIOCETHTOOL, &ifr);
	if (err)
		return err;
	if (set < 0)
		return !!(get.blk[idx / 32].active & bit);
	/* SFEATURES wants exactly the kernel's word count, which GFEATURES
	 * reported back in .size. */
	if (get.hdr.size > 8 || (__u32)idx / 32 >= get.hdr.size)
		return -ERANGE;
	put.hdr.size = get.hdr.size;
	put.blk[idx / 32].valid = bit;
	put.blk[idx / 32].requested = set ? bit : 0;
	ifr.ifr_data = (void *)&put;
	err = if_ioctl(ifname, SIOCETHTOOL, &ifr);
	/* ETHTOOL_SFEATURES returns a positive flag set when the result
	 * differs from the request; the ioctl itself reports success. */
	return err;
}

/* From IFLA_LINKINFO: is it a veth (whose IFLA_LINK is its peer), and the
 * lower device of a vxlan (IFLA_VXLAN_LINK, not in IFLA_LINK). */
static void linkinfo(const struct rtattr *info, bool *veth, int *vxlan_link)
{
	struct rtattr *tb[IFLA_INFO_MAX + 1], *vx[IFLA_VXLAN_MAX + 1];
	const char *kind;

	nfsl_rtnl_nested(info, tb, IFLA_INFO_MAX);
	if (!tb[IFLA_INFO_KIND])
		return;
	kind = RTA_DATA(tb[IFLA_INFO_KIND]);
	*veth = !strcmp(kind, "veth");
	if (strcmp(kind, "vxlan") || !tb[IFLA_INFO_DATA])
		return;
	nfsl_rtnl_nested(tb[IFLA_INFO_DATA], vx, IFLA_VXLAN_MAX);
	if (vx[IFLA_VXLAN_LINK])
		*vxlan_link = *(int *)RTA_DATA(vx[IFLA_VXLAN_LINK]);
}

/* What link_walk looks for, and what it found. */
struct walk {
	int ifindex;
	char *upper;
	size_t len;
	int *lower;
	int found;
};

static int walk_one(const struct ifinfomsg *ifi, struct rtattr *const *tb, void *arg)
{
	struct walk *w = arg;
	int link = tb[IFLA_LINK] ? *(int *)RTA_DATA(tb[IFLA_LINK]) : 0;
	int master = tb[IFLA_MASTER] ? *(int *)RTA_DATA(tb[IFLA_MASTER]) : 0;
	bool other_ns = tb[IFLA_LINK_NETNSID], veth = false;
	int vxlan_link = 0;

	if (tb[IFLA_LINKINFO])
		linkinfo(tb[IFLA_LINKINFO], &veth, &vxlan_link);
	if (ifi->ifi_index == w->ifindex && w->lower && !other_ns && !veth &&
	    (link || vxlan_link))
		*w->lower = link ? link : vxlan_link;
	if (w->found || !tb[IFLA_IFNAME])
		return 0;
	/* a veth's IFLA_LINK is its peer, not a lower device */
	if (ifi->ifi_index != w->ifindex && !other_ns &&
	    ((link == w->ifindex && !veth) || vxlan_link == w->ifindex)) {
		snprintf(w->upper, w->len, "%s", (char *)RTA_DATA(tb[IFLA_IFNAME]));
		w->found = 1;
	} else if (ifi->ifi_index == w->ifindex && master) {
		if_indextoname(master, w->upper);
		w->found = 1;
	}
	return 0;
}

/*
 * Walk every link of this namespace (RTM_GETLINK dump) and name the first
 * that sits on @ifindex: a link whose IFLA_LINK is @ifindex in the same
 * namespace (macvlan, ipvlan, vlan, veth peers excepted), a vxlan over
 * it (IFLA_VXLAN_LINK), or the master @ifindex is enslaved to (bridge,
 * bond); with @lower, also the device @ifindex itself sits on.
 */
static int link_walk(int ifindex, char *upper, size_t len, int *lower)
{
	struct walk w = { .ifindex = ifindex, .upper = upper, .len = len, .lower = lower };
	int err = nfsl_rtnl_links(0, -1, walk_one, &w);

	return err < 0 ? err : w.found;
}

int nfsl_sysctl(const char *path, int *old, int val)
{
	char buf[32];
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0) {
		err = n < 0 ? -errno : -EIO;
		goto out;
	}
	buf[n] = '\0';
	if (old)
		*old = atoi(buf);
	if (val >= 0) {
		n = snprintf(buf, sizeof(buf), "%d\n", val);
		if (pwrite(fd, buf, n, 0) != n)
			err = -errno;
	}
out:
	close(fd);
	return err;
}

int nfsl_if_upper(int ifindex, char *upper, size_t len)
{
	return link_walk(ifindex, upper, len, NULL);
}

int nfsl_if_lower(int ifindex)
{
	char upper[IF_NAMESIZE];
	int lower = 0, err = link_walk(ifindex, upper, sizeof(upper), &lower);

	return err < 0 ? err : lower;
}
