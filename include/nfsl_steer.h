/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Steering of received frames to the AF_XDP sockets of a user-space NF:
 * the maps shared by bpf/steer.bpf.c and userspace/lib/xsk (docs/xsk.md).
 *
 * Every (interface, RX queue) the NF serves is a group of 1..n sockets
 * bound to that queue: one for privRing and shRing, one per worker for
 * rxBisect (thesis §6.1: the sockets' RX rings are the bisected reception
 * rings Bx, the queue's one fill ring the allocation ring Ax). The group
 * owns n consecutive XSKMAP keys from base; a frame goes to key
 * base + nfsl_flow_pick(nfsl_flow_hash(frame), n).
 */
#ifndef NFSL_STEER_H
#define NFSL_STEER_H

#include "nfsl_flow.h"

/* XSKMAP entries: sockets of one NF process, all groups together. */
#define NFSL_XSK_MAX_SOCKS 1024
/* Groups (interface, queue) one NF serves. */
#define NFSL_XSK_MAX_GROUPS 256

struct nfsl_steer_key {
	__u32 ifindex;
	__u32 queue; /* RX queue index */
};

/* How a group picks a socket for a frame. */
enum nfsl_steer_mode {
	NFSL_STEER_FLOW,  /* symmetric 5-tuple hash (nfsl_flow_hash) */
	NFSL_STEER_DPORT, /* destination port range (nfsl_port_owner): a
			   * NAT's WAN side, so replies reach the worker that
			   * allocated the port */
};

struct nfsl_steer_grp {
	__u32 base;       /* first XSKMAP key of the group */
	__u32 nsock;      /* sockets in the group; 0: pass to the kernel */
	__u32 mode;       /* enum nfsl_steer_mode */
	__u32 start_port; /* NFSL_STEER_DPORT: first port of the ranges */
};

/* Per-CPU counters of the steering program. */
#define NFSL_STEER_COUNTERS(X)                                                 \
	X(steered)  /* redirected to a socket */                               \
	X(no_group) /* (interface, queue) the NF does not serve: passed */    \
	X(not_ip)   /* not UDP/TCP over IPv4/IPv6 (ARP, ICMP...): passed */    \
	X(no_sock)  /* the group's socket was gone (shutdown): passed */      \
	X(multibuf) /* a multi-buffer (jumbo) frame a socket without          \
		     * XDP_USE_SG cannot take (the kernel would drop it): passed */

struct nfsl_steer_counters {
#define NFSL_X_FIELD(name) __u64 name;
	NFSL_STEER_COUNTERS(NFSL_X_FIELD)
#undef NFSL_X_FIELD
};

/* The socket (0..@n-1) of a group of @n for the packet @p, by @mode. */
NFSL_INLINE __u32 nfsl_steer_pick(void *data, void *data_end, const struct nfsl_pkt *p,
				  __u32 mode, __u32 start_port, __u32 n)
{
	__be16 *ports = data + p->l4off;

	if (mode == NFSL_STEER_DPORT) {
		if ((void *)(ports + 2) > data_end)
			return 0;
		return nfsl_port_owner(nfsl_ntohs(ports[1]), start_port, n);
	}
	return nfsl_flow_pick(nfsl_flow_hash(data, data_end, p), n);
}

#endif /* NFSL_STEER_H */
