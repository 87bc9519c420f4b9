// SPDX-License-Identifier: GPL-2.0
/* RTM_GETLINK over a NETLINK_ROUTE socket: see rtnl.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/netlink.h>

#include "util/rtnl.h"

#define RTNL_BUF 32768

static void index_attrs(struct rtattr *a, int len, struct rtattr **tb, int max)
{
	memset(tb, 0, (max + 1) * sizeof(*tb));
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type <= max)
			tb[a->rta_type] = a;
}

void nfsl_rtnl_nested(const struct rtattr *nest, struct rtattr **tb, int max)
{
	index_attrs(RTA_DATA(nest), RTA_PAYLOAD(nest), tb, max);
}

/* The request: one link (with its namespace id), or a dump. */
static int send_getlink(int fd, int ifindex, int nsid)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
		char attrs[RTA_SPACE(sizeof(__s32))];
	} req = {};
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct rtattr *a;

	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.ifi));
	req.nh.nlmsg_type = RTM_GETLINK;
	req.nh.nlmsg_flags = NLM_F_REQUEST | (ifindex ? 0 : NLM_F_DUMP);
	req.nh.nlmsg_seq = 1;
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = ifindex;
	if (ifindex && nsid >= 0) {
		a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
		a->rta_type = IFLA_TARGET_NETNSID;
		a->rta_len = RTA_LENGTH(sizeof(__s32));
		*(__s32 *)RTA_DATA(a) = nsid;
		req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_SPACE(sizeof(__s32));
	}
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return 0;
}

/* The answers of one recv: 1 when the last one came (NLMSG_DONE, or the
 * one link asked for), 0 for more, < 0 an error or @fn's stop value (in
 * *@stop). */
static int walk_answers(char *buf, int len, bool one, nfsl_rtnl_link_fn fn, void *arg,
			int *stop)
{
	nfsl_rtnl_attrs tb;
	struct nlmsghdr *nh;

	for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (unsigned int)len);
	     nh = NLMSG_NEXT(nh, len)) {
		struct ifinfomsg *ifi = NLMSG_DATA(nh);

		if (nh->nlmsg_type == NLMSG_DONE)
			return 1;
		if (nh->nlmsg_type == NLMSG_ERROR) {
			int e = ((struct nlmsgerr *)NLMSG_DATA(nh))->error;

			return e ? e : -EIO;
		}
		if (nh->nlmsg_type != RTM_NEWLINK)
			continue;
		index_attrs(IFLA_RTA(ifi), IFLA_PAYLOAD(nh), tb, IFLA_MAX);
		*stop = fn(ifi, tb, arg);
		if (*stop || one)
			return 1;
	}
	return one ? -EPROTO : 0;
}

int nfsl_rtnl_links(int ifindex, int nsid, nfsl_rtnl_link_fn fn, void *arg)
{
	int fd, err, stop = 0;
	char *buf;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	buf = malloc(RTNL_BUF);
	err = buf ? send_getlink(fd, ifindex, nsid) : -ENOMEM;
	while (!err) {
		int n = recv(fd, buf, RTNL_BUF, 0);

		err = n < 0 ? -errno : walk_answers(buf, n, ifindex > 0, fn, arg, &stop);
	}
	free(buf);
	close(fd);
	return err < 0 ? err : stop;
}
