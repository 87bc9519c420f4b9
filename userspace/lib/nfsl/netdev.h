/* SPDX-License-Identifier: GPL-2.0 */
/* Interface facts and settings attach reads and changes, in the caller's
 * network namespace. All return 0 (or the value named) or -errno. */
#ifndef NFSL_NETDEV_H
#define NFSL_NETDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* MAC address of @ifname. */
int nfsl_if_mac(const char *ifname, __u8 mac[6]);

/*
 * nfsl_if_feature - read or set the netdev feature @name (ethtool's name,
 * e.g. "rx-udp-gro-forwarding") of @ifname.
 * @set: -1 to read, 0 to turn off, 1 to turn on
 * Returns the active state (0/1) when reading, 0 after setting, -ENOENT
 * when the kernel has no such feature, other -errno.
 */
int nfsl_if_feature(const char *ifname, const char *name, int set);

/*
 * nfsl_if_upper - a device stacked on @ifindex: a macvlan/ipvlan/vlan whose
 * lower it is, or the bridge/bond it is enslaved to. Frames for an upper
 * are received by the upper (maybe in another namespace) after the slicer
 * ran on the lower. Returns 1 with its name in @upper, 0 when none.
 */
int nfsl_if_upper(int ifindex, char *upper, size_t len);

/* nfsl_if_lower - the device @ifindex is stacked on (a macvlan's, ipvlan's,
 * vlan's or vxlan's lower device in this namespace), 0 when none. */
int nfsl_if_lower(int ifindex);

/*
 * nfsl_sysctl - read the integer sysctl at @path (/proc/sys/...: the
 * caller's network namespace for net.*) into *@old (if not NULL) and, when
 * @val >= 0, write @val.
 */
int nfsl_sysctl(const char *path, int *old, int val);

#define NFSL_SYSCTL_CT_LIBERAL "/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal"

#endif /* NFSL_NETDEV_H */
