// SPDX-License-Identifier: GPL-2.0
/*
 * The rtnetlink watcher (issue 19 §1): one NETLINK_ROUTE socket in each
 * network namespace that has domains, subscribed to links, addresses,
 * routes (IPv4, IPv6), rules and nexthops. Every change there that can
 * move a route goes through mgr_route_changed; a link added or removed
 * also brings the guards of the namespace's domains in line at once
 * (nfsl_guard_sync: a guard on the new interface before a header routed
 * there can leave), under the host-wide lock taken without waiting (held
 * by another process: retried every second until it is free).
 * A plain socket: neither libmnl nor libnl is a dependency.
 *
 * The socket and the namespace's fd hold the namespace: so the watcher
 * lets go of it once what it was found by (its /run/netns name, its
 * process) is gone, and the namespace can exit, its domains then removed
 * by the gc (nfsl_netns_probe).
 */
#define _GNU_SOURCE /* setns */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "nfsliced.h"
#include "nfsl/domains.h"
#include "nfsl/guard.h"
#include "nfsl/netns.h"
#include "nfsl/route.h"
#include "util/util.h"

#ifndef RTNLGRP_NEXTHOP
#define RTNLGRP_NEXTHOP 32
#endif
#ifndef RTM_NEWNEXTHOP
#define RTM_NEWNEXTHOP 104
#define RTM_DELNEXTHOP 105
#endif

/* One watched namespace; its slot's index + MGR_LINKS_TAG is its epoll
 * tag. */
struct watch {
	__u64 cookie;
	int nsfd, nl;  /* the namespace, the netlink socket in it; -1: free slot */
	char path[64 + NAME_MAX]; /* what opened it: /run/netns/NAME, /proc/PID/ns/net */
	__u64 ino;     /* its nsfs inode */
	bool seen;     /* still has a domain (refresh) */
	bool pending;  /* guards to sync: a link changed, or just watched */
	__u64 changes; /* route-affecting changes seen */
};

static struct watch ws[MGR_LINKS_MAX];
static int loop_ep = -1;

/*
 * mgr_route_changed - the one place every route-affecting change of @w's
 * namespace (route, rule, address, nexthop, link, MTU: RTM_NEW* / DEL* of
 * those groups; one call per batch of messages read) is reported: the
 * route verdict cache of each of its domains is invalidated (issue 19
 * item 2, nfsl_route_gen_bump_at), so a cached verdict is stale at most
 * until this runs.
 */
static void mgr_route_changed(struct watch *w)
{
	struct nfsl_dom_entry *v;
	size_t n;

	w->changes++;
	if (nfsl_domains_collect(&v, &n))
		return;
	for (size_t k = 0; k < n; k++)
		if (v[k].cookie == w->cookie)
			nfsl_route_gen_bump_at(v[k].dir, NULL);
	free(v);
}

static void watch_close(struct watch *w)
{
	if (w->nl >= 0) {
		epoll_ctl(loop_ep, EPOLL_CTL_DEL, w->nl, NULL);
		close(w->nl);
	}
	if (w->nsfd >= 0)
		close(w->nsfd);
	memset(w, 0, sizeof(*w));
	w->nl = w->nsfd = -1;
}

/* A netlink socket in the namespace @nsfd opens, subscribed to every
 * group that can move a route. fd or -errno. */
static int nl_open(int nsfd)
{
	static const int extra[] = { RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE, RTNLGRP_NEXTHOP };
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR |
			     RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE,
	};
	int back = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC), fd, err = 0;

	if (back < 0)
		return -errno;
	if (setns(nsfd, CLONE_NEWNET)) {
		err = -errno;
		close(back);
		return err;
	}
	/* The socket belongs to the namespace it is made in. */
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		err = -errno;
	for (size_t i = 0; !err && i < sizeof(extra) / sizeof(extra[0]); i++)
		if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &extra[i],
			       sizeof(extra[i])))
			err = -errno;
	if (setns(back, CLONE_NEWNET) && !err)
		err = -errno;
	close(back);
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

/* Watch the namespace of @cookie, found in @l, in a free slot. False when
 * @l does not have it or it cannot be watched. */
static bool watch_open(__u64 cookie, const struct nfsl_netns_list *l)
{
	const struct nfsl_netns *ns = nfsl_netns_by_cookie(l, cookie);
	struct watch *w = NULL;
	int i;

	for (i = 0; i < MGR_LINKS_MAX && !w; i++)
		if (ws[i].nl < 0)
			w = &ws[i];
	if (!ns)
		return false; /* no process or name holds it: the gc's business */
	if (!w)
		return true;
	w->nsfd = open(ns->path, O_RDONLY | O_CLOEXEC);
	w->nl = w->nsfd < 0 ? -errno : nl_open(w->nsfd);
	if (w->nl >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = MGR_LINKS_TAG + (w - ws) };

		if (!epoll_ctl(loop_ep, EPOLL_CTL_ADD, w->nl, &ev)) {
			w->cookie = cookie;
			w->ino = ns->ino;
			snprintf(w->path, sizeof(w->path), "%s", ns->path);
			w->seen = w->pending = true;
			mgr_log(MGR_INFO, "watching the links and routes of namespace %s",
				ns->name[0] ? ns->name : ns->path);
			return true;
		}
	}
	mgr_log(MGR_WARNING, "cannot watch the links of namespace %s: %s; new interfaces "
		"there get their guard from nfslice repair", ns->path,
		strerror(w->nl < 0 ? -w->nl : errno));
	watch_close(w);
	return false; /* tried again in 10 s */
}

/* The guards of every domain of @w's namespace in line with its links
 * now; left pending when another process holds the lock. */
static void watch_sync(struct watch *w)
{
	struct nfsl_dom_entry *v;
	int lock, back;
	size_t n;

	lock = open(NFSL_LOCK_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB)) {
		if (lock >= 0)
			close(lock);
		return;
	}
	back = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (back >= 0 && !setns(w->nsfd, CLONE_NEWNET) && !nfsl_domains_collect(&v, &n)) {
		for (size_t k = 0; k < n; k++) {
			struct nfsl_domain d;
			int done;

			if (v[k].cookie != w->cookie || nfsl_domain_open_dir(&d, v[k].dir))
				continue;
			done = nfsl_guard_sync(d.dir, &d.cfg, true);
			nfsl_domain_close(&d);
			if (done > 0)
				mgr_log(MGR_NOTICE, "domain %s: %d guard link%s added or removed",
					v[k].name, done, done > 1 ? "s" : "");
			else if (done < 0)
				mgr_log(MGR_WARNING, "domain %s: the guards could not be brought "
					"in line; run nfslice repair --name %s", v[k].name,
					v[k].name);
		}
		free(v);
		w->pending = false;
	}
	if (back >= 0) {
		if (setns(back, CLONE_NEWNET))
			mgr_log(MGR_ERR, "cannot return to nfsliced's network namespace: %s",
				strerror(errno));
		close(back);
	}
	close(lock);
}

/* Cookies of namespaces a scan did not find (gone, or held by an fd
 * only), not looked for again for 10 s: a scan enters every namespace. */
static struct {
	__u64 cookie, until;
} miss[MGR_LINKS_MAX];

static bool missed(__u64 cookie, __u64 now)
{
	for (int i = 0; i < MGR_LINKS_MAX; i++)
		if (miss[i].cookie == cookie && now < miss[i].until)
			return true;
	return false;
}

static void miss_add(__u64 cookie, __u64 now)
{
	int j = 0;

	for (int i = 0; i < MGR_LINKS_MAX; i++)
		if (miss[i].until < miss[j].until)
			j = i; /* the oldest entry goes */
	miss[j].cookie = cookie;
	miss[j].until = now + 10000000000ull;
}

/* Is what @w's namespace was found by still there, the same namespace? */
static bool watch_held(const struct watch *w)
{
	struct stat st;

	return !stat(w->path, &st) && st.st_ino == w->ino;
}

void mgr_links_refresh(int ep)
{
	__u64 now = nfsl_now_ns();
	struct nfsl_netns_list l = {};
	struct nfsl_dom_entry *v;
	bool scanned = false;
	size_t n;

	if (loop_ep < 0) {
		for (int i = 0; i < MGR_LINKS_MAX; i++)
			ws[i].nl = ws[i].nsfd = -1;
		loop_ep = ep;
	}
	if (nfsl_domains_collect(&v, &n))
		return;
	for (int i = 0; i < MGR_LINKS_MAX; i++) {
		if (ws[i].nl >= 0 && !watch_held(&ws[i]))
			watch_close(&ws[i]); /* let the namespace exit */
		ws[i].seen = false;
	}
	for (size_t k = 0; k < n; k++) {
		bool have = false;

		for (int i = 0; i < MGR_LINKS_MAX && !have; i++)
			if (ws[i].nl >= 0 && ws[i].cookie == v[k].cookie)
				have = ws[i].seen = true;
		if (have || missed(v[k].cookie, now))
			continue;
		/* Which namespace a cookie is: entering each, so only when a
		 * new one appears. */
		if (!scanned)
			scanned = !nfsl_netns_scan(&l);
		if (scanned && !watch_open(v[k].cookie, &l))
			miss_add(v[k].cookie, now);
	}
	free(v);
	if (scanned)
		nfsl_netns_free(&l);
	for (int i = 0; i < MGR_LINKS_MAX; i++) {
		if (ws[i].nl < 0)
			continue;
		if (!ws[i].seen)
			watch_close(&ws[i]);
		else if (ws[i].pending)
			watch_sync(&ws[i]);
	}
}

bool mgr_links_event(__u64 tag)
{
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct watch *w;
	ssize_t len = 0;

	if (tag < MGR_LINKS_TAG || tag >= MGR_LINKS_TAG + MGR_LINKS_MAX)
		return false;
	w = &ws[tag - MGR_LINKS_TAG];
	while (w->nl >= 0 && (len = recv(w->nl, buf, sizeof(buf), 0)) > 0) {
		bool changed = false;

		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			switch (h->nlmsg_type) {
			case RTM_NEWLINK: /* a new interface, a rename, an MTU */
			case RTM_DELLINK:
				w->pending = true;
				/* fall through */
			case RTM_NEWADDR:
			case RTM_DELADDR:
			case RTM_NEWROUTE:
			case RTM_DELROUTE:
			case RTM_NEWRULE:
			case RTM_DELRULE:
			case RTM_NEWNEXTHOP:
			case RTM_DELNEXTHOP:
				changed = true;
				break;
			default:
				break;
			}
		}
		if (changed)
			mgr_route_changed(w);
	}
	/* ENOBUFS: messages lost; a link may be among them. */
	if (len < 0 && errno == ENOBUFS) {
		w->pending = true;
		mgr_route_changed(w);
	}
	if (w->pending)
		watch_sync(w);
	return true;
}

void mgr_links_stop(void)
{
	for (int i = 0; i < MGR_LINKS_MAX && loop_ep >= 0; i++)
		if (ws[i].nl >= 0)
			watch_close(&ws[i]);
}
