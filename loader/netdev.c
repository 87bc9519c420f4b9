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
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>

#include "netdev.h"

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

int nfsl_if_mtu(const char *ifname, __u32 *mtu)
{
	struct ifreq ifr = {};
	int err = if_ioctl(ifname, SIOCGIFMTU, &ifr);

	if (!err)
		*mtu = ifr.ifr_mtu;
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
static void linkinfo(struct rtattr *info, bool *veth, int *vxlan_link)
{
	int len = RTA_PAYLOAD(info), dlen;
	bool vxlan = false;
	struct rtattr *a, *d;

	for (a = RTA_DATA(info); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == IFLA_INFO_KIND) {
			*veth = !strcmp(RTA_DATA(a), "veth");
			vxlan = !strcmp(RTA_DATA(a), "vxlan");
		} else if (a->rta_type == IFLA_INFO_DATA && vxlan) {
			dlen = RTA_PAYLOAD(a);
			for (d = RTA_DATA(a); RTA_OK(d, dlen); d = RTA_NEXT(d, dlen))
				if (d->rta_type == IFLA_VXLAN_LINK)
					*vxlan_link = *(int *)RTA_DATA(d);
		}
	}
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
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		.ifi = { .ifi_family = AF_UNSPEC },
	};
	char buf[32768];
	int fd, err = 0, found = 0;
	bool done = false;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (send(fd, &req, sizeof(req), 0) < 0) {
		err = -errno;
		goto out;
	}
	while (!done) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (n < 0) {
			err = -errno;
			goto out;
		}
		for (nh = (void *)buf; NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
			struct ifinfomsg *ifi = NLMSG_DATA(nh);
			int alen = IFLA_PAYLOAD(nh), link = 0, master = 0;
			bool other_ns = false, veth = false;
			int vxlan_link = 0;
			const char *name = NULL;
			struct rtattr *a;

			if (nh->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (nh->nlmsg_type == NLMSG_ERROR) {
				err = -EIO;
				goto out;
			}
			for (a = IFLA_RTA(ifi); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
				if (a->rta_type == IFLA_IFNAME)
					name = RTA_DATA(a);
				else if (a->rta_type == IFLA_LINK)
					link = *(int *)RTA_DATA(a);
				else if (a->rta_type == IFLA_MASTER)
					master = *(int *)RTA_DATA(a);
				else if (a->rta_type == IFLA_LINK_NETNSID)
					other_ns = true;
				else if (a->rta_type == IFLA_LINKINFO)
					linkinfo(a, &veth, &vxlan_link);
			}
			if (ifi->ifi_index == ifindex && lower && !other_ns &&
			    !veth && (link || vxlan_link))
				*lower = link ? link : vxlan_link;
			if (found || !name)
				continue;
			/* a veth's IFLA_LINK is its peer, not a lower device */
			if (ifi->ifi_index != ifindex && !other_ns &&
			    ((link == ifindex && !veth) || vxlan_link == ifindex)) {
				snprintf(upper, len, "%s", name);
				found = 1;
			} else if (ifi->ifi_index == ifindex && master) {
				if_indextoname(master, upper);
				found = 1;
			}
		}
	}
out:
	close(fd);
	return err ? err : found;
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
