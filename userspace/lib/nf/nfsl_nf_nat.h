/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nat: traditional NAPT (RFC 3022 §2.2, "network address port
 * translation") with the behaviour of VigNAT (Zaostrovnykh et al., "A
 * Formally Verified NAT", SIGCOMM'17), as an NF of nfslice-nf (nfsl_nf.h,
 * docs/nf.md "NAT").
 *
 * Outbound (LAN -> WAN): a frame of a new internal 5-tuple gets the next
 * free external port of its worker; source address and port become
 * ext_ip and that port. Inbound (WAN -> LAN): a frame to ext_ip:port from
 * the remote end of the flow holding the port gets that flow's internal
 * address and port as destination; any other WAN frame is dropped
 * (unsolicited). A flow idle for longer than the timeout is forgotten and
 * its port freed.
 *
 * Several workers: each has its own flow table and its own port range,
 * the ports from start_port up split into nworkers equal ranges in order,
 * the last one taking the remainder (nfsl_nf_nat_port_range). Outbound
 * frames reach a worker by the symmetric flow hash (any steering that
 * sends one internal 5-tuple to one worker will do); WAN frames must be
 * steered by destination port with nfsl_nf_nat_port_owner (the steering
 * program's NFSL_STEER_DPORT mode), and a worker drops a WAN frame for a
 * port it does not own (misrouted).
 */
#ifndef NFSL_NF_NAT_H
#define NFSL_NF_NAT_H

#include "nfsl_flow.h"
#include "nf/nfsl_nf.h"

/* Per-worker counters, frames unless said otherwise. */
#define NFSL_NF_NAT_COUNTERS(X)                                                 \
	X(translated_out) /* LAN -> WAN frames translated and forwarded */    \
	X(translated_in)  /* WAN -> LAN replies translated and forwarded */   \
	X(new_flows)      /* flows created (one external port each) */        \
	X(expired)        /* flows forgotten after the idle timeout */        \
	X(unsolicited)    /* WAN frames matching no flow: dropped */          \
	X(table_full)     /* new flows refused, table full: dropped */        \
	X(misrouted)      /* WAN frames for another worker's port: dropped */ \
	X(not_ip)         /* not IPv4 UDP/TCP, or malformed: dropped */

struct nfsl_nf_nat_counters {
#define NFSL_X_FIELD(name) __u64 name;
	NFSL_NF_NAT_COUNTERS(NFSL_X_FIELD)
#undef NFSL_X_FIELD
};

/*
 * nfsl_nf_nat_port_owner - the worker in [0, @nworkers) whose range holds
 * external port @port (host order) when the ranges start at @start_port.
 * The steering program and the NF use this one formula
 * (include/nfsl_flow.h nfsl_port_owner): worker w of W owns
 * [start_port + w * R, start_port + (w + 1) * R), R = (65536 - start_port) / W,
 * the last worker up to 65535. Ports below @start_port belong to no flow
 * and go to worker 0, which drops them as unsolicited.
 */
static inline unsigned int nfsl_nf_nat_port_owner(__u16 port, __u16 start_port,
						  unsigned int nworkers)
{
	return nfsl_port_owner(port, start_port, nworkers);
}

/*
 * nfsl_nf_nat_port_range - the external ports [*@lo, *@hi] (host order,
 * inclusive) worker @w of @nworkers allocates from: exactly the ports
 * nfsl_nf_nat_port_owner gives it at or above @start_port. Needs
 * 65536 - @start_port >= @nworkers (one port per worker at least; init
 * refuses fewer).
 */
static inline void nfsl_nf_nat_port_range(__u16 start_port, unsigned int w,
					  unsigned int nworkers, __u32 *lo, __u32 *hi)
{
	__u32 r = nworkers > 1 ? (65536u - start_port) / nworkers : 65536u - start_port;

	*lo = start_port + w * r;
	*hi = w + 1 >= nworkers ? 65535u : *lo + r - 1;
}

extern const struct nfsl_nf_ops nfsl_nf_nat;

/*
 * nfsl_nf_nat_counters - copy the counters of worker state @mine (what the
 * NF's worker op returned) to @out; all zero for NULL. May run in another
 * thread than the worker: each value is read atomically, the set is not a
 * snapshot.
 */
void nfsl_nf_nat_counters(void *mine, struct nfsl_nf_nat_counters *out);

/*
 * For the datapath's steering (nfslice-nf): the device whose frames are
 * steered by destination port range (the WAN side; the one device when
 * there is one), and the first port of the ranges. @shared: nat's state.
 */
unsigned int nfsl_nf_nat_wan_dev(const void *shared);
__u16 nfsl_nf_nat_start_port(const void *shared);

#endif /* NFSL_NF_NAT_H */
