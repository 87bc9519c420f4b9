// SPDX-License-Identifier: GPL-2.0
/*
 * The target interface and its veth peer, read with rtnetlink: index, MTU,
 * MAC, state, and for a veth the peer's index, namespace (IFLA_LINK_NETNSID
 * when it is elsewhere), MAC and XDP program. A peer in another namespace is
 * read through IFLA_TARGET_NETNSID where the kernel allows it.
 *
 * XDP_TX into a veth needs a native XDP program on the peer, else the veth
 * drops every frame (docs/platform.md "veth and XDP"). --peer-xdp auto/drop
 * attaches userspace/nfslice-pktgen/xdp_pass.bpf.c's xdp_pass/xdp_drop to a peer in this
 * namespace that has none, for the run only (a BPF link: pg_peer_restore()
 * or the end of the process removes it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "pg.h"
#include "util/rtnl.h"
#include "xdp_pass.skel.h"

struct pg_ifinfo {
	int ifindex;
	char name[IF_NAMESIZE];
	char kind[16];
	__u32 mtu;
	bool up;
	__u8 mac[6];
	int link;       /* IFLA_LINK: a veth's peer index, 0 if none */
	int link_nsid;  /* IFLA_LINK_NETNSID, -1 if absent (same namespace) */
	__u32 xdp_drv;  /* native XDP program id */
	bool xdp_skb;   /* a generic (skb) XDP program is attached */
};

static void parse_linkinfo(const struct rtattr *nest, struct pg_ifinfo *info)
{
	struct rtattr *tb[IFLA_INFO_MAX + 1];

	nfsl_rtnl_nested(nest, tb, IFLA_INFO_MAX);
	if (tb[IFLA_INFO_KIND])
		snprintf(info->kind, sizeof(info->kind), "%.*s",
			 (int)RTA_PAYLOAD(tb[IFLA_INFO_KIND]), (char *)RTA_DATA(tb[IFLA_INFO_KIND]));
}

static void parse_xdp(const struct rtattr *nest, struct pg_ifinfo *info)
{
	struct rtattr *tb[IFLA_XDP_MAX + 1];
	__u8 mode = 0;
	__u32 id = 0;

	nfsl_rtnl_nested(nest, tb, IFLA_XDP_MAX);
	if (tb[IFLA_XDP_ATTACHED])
		mode = *(__u8 *)RTA_DATA(tb[IFLA_XDP_ATTACHED]);
	if (tb[IFLA_XDP_PROG_ID])
		id = *(__u32 *)RTA_DATA(tb[IFLA_XDP_PROG_ID]);
	if (tb[IFLA_XDP_DRV_PROG_ID])
		info->xdp_drv = *(__u32 *)RTA_DATA(tb[IFLA_XDP_DRV_PROG_ID]);
	if (tb[IFLA_XDP_SKB_PROG_ID])
		info->xdp_skb = true;
	if (mode == XDP_ATTACHED_DRV)
		info->xdp_drv = id;
	else if (mode == XDP_ATTACHED_SKB)
		info->xdp_skb = true;
}

static int fill_ifinfo(const struct ifinfomsg *ifi, struct rtattr *const *tb, void *arg)
{
	struct pg_ifinfo *info = arg;

	info->ifindex = ifi->ifi_index;
	info->up = ifi->ifi_flags & IFF_UP;
	if (tb[IFLA_IFNAME])
		snprintf(info->name, sizeof(info->name), "%s", (char *)RTA_DATA(tb[IFLA_IFNAME]));
	if (tb[IFLA_MTU])
		info->mtu = *(__u32 *)RTA_DATA(tb[IFLA_MTU]);
	if (tb[IFLA_ADDRESS] && RTA_PAYLOAD(tb[IFLA_ADDRESS]) == 6)
		memcpy(info->mac, RTA_DATA(tb[IFLA_ADDRESS]), 6);
	if (tb[IFLA_LINK])
		info->link = *(__s32 *)RTA_DATA(tb[IFLA_LINK]);
	if (tb[IFLA_LINK_NETNSID])
		info->link_nsid = *(__s32 *)RTA_DATA(tb[IFLA_LINK_NETNSID]);
	if (tb[IFLA_LINKINFO])
		parse_linkinfo(tb[IFLA_LINKINFO], info);
	if (tb[IFLA_XDP])
		parse_xdp(tb[IFLA_XDP], info);
	return 0;
}

/*
 * rtnl_getlink - RTM_GETLINK of @ifindex, in namespace @nsid (relative to
 * ours) or in ours (@nsid < 0). Returns 0 or a negative errno.
 */
static int rtnl_getlink(int ifindex, int nsid, struct pg_ifinfo *info)
{
	memset(info, 0, sizeof(*info));
	info->link_nsid = -1;
	return nfsl_rtnl_links(ifindex, nsid, fill_ifinfo, info);
}

int pg_link_get(const char *dev, struct pg_link *l)
{
	struct pg_ifinfo info, peer;
	unsigned int ifindex = if_nametoindex(dev);
	int err;

	memset(l, 0, sizeof(*l));
	l->peer_nsid = -1;
	if (!ifindex)
		return pg_err("unknown interface '%s' in this network namespace: see "
			      "'ip link' (or run inside its namespace with 'ip netns "
			      "exec NS')", dev);
	err = rtnl_getlink(ifindex, -1, &info);
	if (err)
		return pg_err("cannot read interface %s: %s", dev, strerror(-err));
	if (!info.up)
		return pg_err("interface %s is down: bring it up with 'ip link set "
			      "dev %s up'", dev, dev);
	l->ifindex = info.ifindex;
	memcpy(l->name, info.name, sizeof(l->name));
	memcpy(l->kind, info.kind, sizeof(l->kind));
	l->mtu = info.mtu;
	memcpy(l->mac, info.mac, 6);
	if (strcmp(info.kind, "veth") || info.link <= 0)
		return 0;

	l->peer_ifindex = info.link;
	l->peer_nsid = info.link_nsid;
	/* A peer elsewhere may not be readable (no peer namespace id, or not
	 * ours to read): then it stays unknown. */
	if (rtnl_getlink(info.link, info.link_nsid, &peer))
		return 0;
	l->peer_known = true;
	memcpy(l->peer_name, peer.name, sizeof(l->peer_name));
	memcpy(l->peer_mac, peer.mac, 6);
	l->peer_xdp_id = peer.xdp_drv;
	return 0;
}

static int fill_tx_dropped(const struct ifinfomsg *ifi, struct rtattr *const *tb,
			   void *arg)
{
	struct rtnl_link_stats64 st;

	if (!tb[IFLA_STATS64] || RTA_PAYLOAD(tb[IFLA_STATS64]) < sizeof(st))
		return -ENODATA;
	memcpy(&st, RTA_DATA(tb[IFLA_STATS64]), sizeof(st));
	*(__u64 *)arg = st.tx_dropped;
	return 0;
}

/*
 * pg_link_tx_dropped - the tx_dropped counter (IFLA_STATS64) of @ifindex in
 * this namespace into *@out: where a veth counts the frames it drops
 * without telling the sender (peer down, peer backlog full). Returns 0 or
 * a negative errno.
 */
int pg_link_tx_dropped(int ifindex, __u64 *out)
{
	return nfsl_rtnl_links(ifindex, -1, fill_tx_dropped, out);
}

struct pg_peer {
	struct xdp_pass_bpf *skel;
	int link_fd;
};

/*
 * pg_peer_prepare - make sure a veth peer takes our frames.
 * Sets *@state (PG_PEER_SKB on the socket path: a veth takes skbs whatever
 * its peer runs); attaches xdp_pass/xdp_drop when --peer-xdp says so and the
 * peer is here without a native XDP program (*@peer is then what
 * pg_peer_restore() removes). The attachment is a BPF link: it goes away
 * with the process however that ends. Warns once when frames will be
 * dropped. Returns 0, or -1 when attaching failed.
 */
int pg_peer_prepare(const struct pg_cfg *cfg, struct pg_peer **peer,
		    enum pg_peer_state *state)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = XDP_FLAGS_DRV_MODE);
	const struct pg_link *l = &cfg->link;
	bool drop = cfg->peer_xdp == PG_PEER_DROP;
	struct pg_peer *p = NULL;
	int err;

	*peer = NULL;
	if (cfg->path == PG_PATH_SOCKET && l->peer_ifindex) {
		*state = PG_PEER_SKB; /* skbs, not XDP frames: nothing to attach */
		return 0;
	}
	if (!l->peer_ifindex) {
		*state = PG_PEER_NONE;
		return 0;
	}
	if (l->peer_known && l->peer_xdp_id) {
		*state = PG_PEER_HAS_XDP;
		return 0;
	}
	if (l->peer_nsid >= 0) {
		*state = l->peer_known ? PG_PEER_NO_XDP : PG_PEER_UNKNOWN;
		if (l->peer_known)
			pg_warn("the peer of %s (%s, in another network namespace) has no "
				"native XDP program: the veth drops every frame until one "
				"runs there (e.g. ip link set dev %s xdpdrv object "
				"build/.output/xdp_pass.bpf.o program xdp_pass, in that "
				"namespace)", l->name, l->peer_name, l->peer_name);
		else
			pg_warn("the peer of %s is in another network namespace: frames "
				"are dropped unless it runs a native XDP program there",
				l->name);
		return 0;
	}
	if (cfg->peer_xdp == PG_PEER_OFF) {
		*state = PG_PEER_NO_XDP;
		pg_warn("the peer of %s (%s) has no native XDP program and --peer-xdp "
			"is off: the veth drops every frame", l->name, l->peer_name);
		return 0;
	}

	p = calloc(1, sizeof(*p));
	if (!p)
		return pg_err("out of memory");
	p->link_fd = -1;
	p->skel = xdp_pass_bpf__open();
	if (!p->skel) {
		err = -errno;
		goto fail;
	}
	bpf_program__set_autoload(drop ? p->skel->progs.xdp_pass
				       : p->skel->progs.xdp_drop, false);
	err = xdp_pass_bpf__load(p->skel);
	if (err)
		goto fail;
	p->link_fd = bpf_link_create(bpf_program__fd(drop ? p->skel->progs.xdp_drop
							  : p->skel->progs.xdp_pass),
				     l->peer_ifindex, BPF_XDP, &opts);
	if (p->link_fd < 0) {
		err = p->link_fd;
		goto fail;
	}
	*peer = p;
	*state = PG_PEER_ATTACHED;
	return 0;
fail:
	xdp_pass_bpf__destroy(p->skel);
	free(p);
	*state = PG_PEER_NO_XDP;
	return pg_err("cannot attach an XDP program to %s, the peer of %s: %s "
		      "(a generic XDP program there, or an MTU above ~3500, prevents "
		      "it; --peer-xdp off sends anyway)", l->peer_name, l->name,
		      strerror(-err));
}

void pg_peer_restore(struct pg_peer *p)
{
	if (!p)
		return;
	close(p->link_fd);
	xdp_pass_bpf__destroy(p->skel);
	free(p);
}
