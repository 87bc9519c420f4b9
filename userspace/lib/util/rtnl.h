/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one rtnetlink client of the tools: RTM_GETLINK of one link, or of
 * every link of the caller's network namespace (a dump), each answer
 * handed to a callback with its attributes indexed by type (in the
 * manner of libmnl's mnl_attr_parse; RFC 3549, rtnetlink(7)).
 */
#ifndef NFSL_UTIL_RTNL_H
#define NFSL_UTIL_RTNL_H

#include <linux/if_link.h>
#include <linux/rtnetlink.h>

/* Attributes of one link (IFLA_*), NULL where absent. */
typedef struct rtattr *nfsl_rtnl_attrs[IFLA_MAX + 1];

/*
 * nfsl_rtnl_link_fn - called for each RTM_NEWLINK answer: @ifi the link's
 * header, @tb its attributes. Returns 0 to go on, else the walk stops and
 * nfsl_rtnl_links returns that value.
 */
typedef int (*nfsl_rtnl_link_fn)(const struct ifinfomsg *ifi, struct rtattr *const *tb,
				 void *arg);

/*
 * nfsl_rtnl_links - RTM_GETLINK of @ifindex (> 0; in the namespace @nsid
 * relative to ours, IFLA_TARGET_NETNSID, when @nsid >= 0), or a dump of
 * every link of this namespace (@ifindex 0), calling @fn per link.
 * Returns what @fn returned to stop, 0 after the last link, -EPROTO when a
 * single link was asked for and none came, or the kernel's -errno.
 */
int nfsl_rtnl_links(int ifindex, int nsid, nfsl_rtnl_link_fn fn, void *arg);

/* nfsl_rtnl_nested - the attributes nested in @nest into @tb (@max + 1
 * entries, NULL where absent; types above @max ignored). */
void nfsl_rtnl_nested(const struct rtattr *nest, struct rtattr **tb, int max);

#endif /* NFSL_UTIL_RTNL_H */
