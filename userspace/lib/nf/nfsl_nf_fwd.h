/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fwd: IP forwarding to a next hop as an NF of nfslice-nf (nfsl_nf.h;
 * docs/nf.md "Forwarding", docs/xsk.md), what a router does with a frame
 * after its NFs: the destination MAC becomes the next hop's on the
 * device the frame leaves by (the other of two, or the same one), the
 * source MAC that device's own, and the IPv4 TTL / IPv6 hop limit drops
 * by one (RFC 1812 §5.3.1, with the incremental checksum update of RFC
 * 1624); a frame whose TTL would reach 0 is dropped and counted (no ICMP
 * time exceeded: the NF has no kernel path to send it).
 *
 * One next hop per device (a point-to-point link, or the default gateway
 * of a one-armed router): fwd.macD=MAC, or fwd.viaD=IPv4, whose MAC comes
 * from the kernel's neighbour table (/proc/net/arp) when nfslice-nf starts
 * and again every second (worker 0, between bursts), so a gateway that
 * changes its MAC is followed. A FIB lookup per destination is out of
 * scope: the next hop is given.
 *
 * The neighbour table also tells l2fwd (basic.c) when a frame it forwards
 * cannot reach anyone: on two devices it sends a frame out of one addressed
 * to the MAC that sent it on the other; when that MAC is a neighbour of the
 * other device only, nobody on the outgoing link takes it (a router).
 */
#ifndef NFSL_NF_FWD_H
#define NFSL_NF_FWD_H

#include <linux/types.h>

#include "nf/nfsl_nf.h"

#define NFSL_NF_FWD_COUNTERS(X)                                               \
	X(forwarded)    /* sent to the next hop, TTL decremented */           \
	X(ttl_exceeded) /* TTL / hop limit 1 or 0: dropped (RFC 1812) */      \
	X(not_ip)       /* not IP UDP/TCP to nfsl_parse(): dropped */          \
	X(next_hop_changed) /* a viaD= next hop's MAC changed in the neighbour \
			     * table, read again every second */

struct nfsl_nf_fwd_counters {
#define NFSL_X_FIELD(name) __u64 name;
	NFSL_NF_FWD_COUNTERS(NFSL_X_FIELD)
#undef NFSL_X_FIELD
};

extern const struct nfsl_nf_ops nfsl_nf_fwd;

/* IPv4 neighbours of the NF's devices, as the kernel knew them at start. */
#define NFSL_NF_NEIGH_MAX 256
struct nfsl_nf_neigh {
	unsigned int n;
	struct {
		__u8 mac[6];
		__u8 dev;  /* index into the NF's devices */
		__u32 ip;  /* network order */
	} e[NFSL_NF_NEIGH_MAX];
};

/*
 * nfsl_nf_neigh_load - the complete entries of @path (the format of
 * /proc/net/arp; NULL: that file) on the devices @devs (@ndevs names) into
 * @t. Returns 0 or -errno (the file cannot be read).
 */
int nfsl_nf_neigh_load(struct nfsl_nf_neigh *t, const char *path, const char *const *devs,
		       unsigned int ndevs);

/* nfsl_nf_neigh_on - is @mac a neighbour of device @dev in @t? */
bool nfsl_nf_neigh_on(const struct nfsl_nf_neigh *t, const __u8 *mac, unsigned int dev);

/* nfsl_nf_neigh_mac - the MAC of neighbour @ip (network order) on @dev:
 * 0 and @mac filled, or -ENOENT. */
int nfsl_nf_neigh_mac(const struct nfsl_nf_neigh *t, __u32 ip, unsigned int dev, __u8 *mac);

#endif /* NFSL_NF_FWD_H */
