/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/* Constants shared by the BPF datapath, the loader and the tests. */
#ifndef NFSL_CONSTS_H
#define NFSL_CONSTS_H

/* DSCP 0b111111 ("experimental/local use", RFC 2474): marks a sliced
 * packet, as NFSlicer §III-B does. Outside traffic may use it too; the
 * token MAC, not the DSCP, decides what is ours. */
#define NFSL_DSCP_SLICED 63

/*
 * EtherType of a drop notice (PayloadPark §6.2.4 "explicit drop", park
 * deployment): an NF server that drops a sliced header sends it back to
 * the slicing host with this EtherType (802 local experimental 1) in place
 * of IPv4's or IPv6's, its IP header and token otherwise as it was. The
 * slicer on the NF port frees the slot the token names (a notice whose
 * token does not verify frees nothing) and drops the frame: no stack ever
 * takes it for IP. No VLAN tag.
 */
#define NFSL_ETH_P_NOTICE 0x88B5

/* Bytes appended to a sliced packet: slot, generation, MAC. */
#define NFSL_TOKEN_LEN 16

/* Largest payload one slot parks, in bytes. A slot is 2 KiB: 32 B of
 * metadata + 2016 B of payload, enough for any frame a non-frags XDP
 * program sees on veth (MTU <= ~3500 is refused above ~2000 B payloads:
 * those pass unsliced and count as skipped_big). */
#define NFSL_SLOT_SIZE 2048
#define NFSL_SLOT_META 32
#define NFSL_PAYLOAD_MAX (NFSL_SLOT_SIZE - NFSL_SLOT_META)

/* The slicer's run priority in a libxdp dispatcher: above any other
 * program's (libxdp's default is 50), so it runs last (bpf/slicer.bpf.c). */
#define NFSL_SLICER_RUN_PRIO 10000

/* Most payload bytes `keep` may leave in the packet (PayloadPark §7's
 * decoupling boundary). Bounded so the checksum scratch fits the BPF stack. */
#define NFSL_KEEP_MAX 192
/* Headers of a sliced frame (Ethernet up to the end of L4) lie in its
 * first NFSL_HDR_MAX bytes: what the splicer pulls into the linear part of
 * a non-linear skb. Frames with longer headers are not sliced. */
#define NFSL_HDR_MAX 256
/* Largest L4 header (TCP with 40 B of options). */
#define NFSL_L4HDR_MAX 60

/* Defaults of `nfslice attach` (issue #2). */
#define NFSL_DEF_THRESHOLD 256 /* frame bytes */
#define NFSL_DEF_KEEP 0        /* payload bytes */
#define NFSL_DEF_SLOTS 4096
#define NFSL_DEF_EXPIRY 2      /* allocator wrap-arounds, PayloadPark Alg. 1 */
/* Age limit of a cached route verdict (bpf/nfsl_route.h), ms: how long a
 * route change that no one reported (no nfsliced, a conntrack entry that
 * came or went) may go unseen. 200 ms is at most one minimum TCP RTO
 * (Linux TCP_RTO_MIN) of a flow's packets passed unsliced or dropped by a
 * guard, and costs one lookup per flow and CPU every 200 ms. */
#define NFSL_DEF_ROUTE_CACHE_MS 200
#define NFSL_MAX_ROUTE_CACHE_MS 10000
#define NFSL_MAX_SLOTS (1u << 20)
#define NFSL_MAX_EXPIRY 255
#define NFSL_MAX_IFACES 16
/* Store partitions per CPU: the domain interfaces', and one per NF port. */
#define NFSL_MAX_PARTS (NFSL_MAX_IFACES + 1)
/* Residency histogram (slice to splice, recorded by the splicer: struct
 * nfsl_residency): bucket 0 counts residencies below 1 us, bucket i >= 1
 * those in [2^(i-1), 2^i) us, the last everything longer (2^30 us: 18
 * min). */
#define NFSL_RES_BUCKETS 32
/* One splice in NFSL_RES_SAMPLE is recorded: each CPU's every 8th (its
 * spliced counter a multiple of 8), whatever the residency. A clock read costs
 * 34 ns here (SRSO thunks on helper calls: docs/platform.md), 8% of the
 * splicer at 1514 B; one in eight keeps the histogram under 1%. */
#define NFSL_RES_SAMPLE 8
#define NFSL_MAX_CPUS 256
/* Tenants (issue 10 §5): at most 8, tenant 0 the default one (what no rule
 * claims); destination-prefix rules at most NFSL_MAX_TENANT_PREFIXES. */
#define NFSL_MAX_TENANTS 8
#define NFSL_MAX_TENANT_PREFIXES 256
#define NFSL_VLAN_IDS 4096

/*
 * Retired keys (issue 17 §1.2): a key the domain stopped using (detach,
 * restore of another checkpoint, the end of a migration) is kept this long,
 * so that a header it signed and an NF released late is still known as
 * ours and dropped as stale, never sent on truncated. The grace period is
 * the longer of NFSL_RETIRE_GRACE_MS and the domain's TTL. At most
 * NFSL_MAX_RETIRED keys are kept; a newer one replaces the one whose grace
 * ends first.
 */
#define NFSL_RETIRE_GRACE_MS 60000
#define NFSL_MAX_RETIRED 8

/* Slot flags. */
#define NFSL_SLOT_F_ODD 0x1    /* parked bytes started at an odd L4 offset */
#define NFSL_SLOT_F_NOCSUM 0x2 /* UDP without checksum (0): keep it 0 */
#define NFSL_SLOT_F_V6 0x4     /* parked from an IPv6 packet */
/* The received L4 / IPv4 header checksum was 0xffff, the other zero of
 * ones' complement: splice writes 0xffff back where it computes 0x0000, so
 * slice then splice is byte-exact (RFC 1624 §3). */
#define NFSL_SLOT_F_L4FFFF 0x8
#define NFSL_SLOT_F_IPFFFF 0x10
/* Parked from a packet whose L4 checksum was still to be computed
 * (CHECKSUM_PARTIAL: the field held the pseudo-header seed); the slot's
 * csum is the parked bytes' real sum. */
#define NFSL_SLOT_F_PARTIAL 0x20

/* Interface flags kept in the config for detach. */
#define NFSL_IF_SKB_MODE 0x1      /* XDP attached in generic (skb) mode */
#define NFSL_IF_CREATED_CLSACT 0x2 /* the clsact qdisc was created by us */
/* An NF port (--nf-port): a link to remote NF servers; headers may leave
 * through it sliced and come back. No slicer, no splicer there. */
#define NFSL_IF_NF_PORT 0x4
/* GRO features attach turned off (restored on detach): UDP GRO would merge
 * sliced datagrams into aggregates the splicer cannot splice. */
#define NFSL_IF_UDP_GRO_FWD_OFF 0x8
#define NFSL_IF_GRO_LIST_OFF 0x10
/* The splicer is attached with TCX (Linux >= 6.6: no qdisc, nothing
 * grafted), not as a tc clsact filter (userspace/lib/nfsl/egress.c). */
#define NFSL_IF_TCX 0x20

/* Domain flags. */
/* attach set net.netfilter.nf_conntrack_tcp_be_liberal from 0 to 1 */
#define NFSL_CFG_CT_LIBERAL_SET 0x1
/* write drop events (struct nfsl_event) into the "events" ring buffer */
#define NFSL_CFG_EVENTS 0x2
/* Also honour tokens that verify under config key_old (the previous
 * instance's key), on the slots a copy-mode migration imported (issue 10
 * §7; docs/cli.md "Migration (copy mode)"). The slicer always slices
 * under key. Set after key_old is written, cleared before it is wiped. */
#define NFSL_CFG_KEY_OLD 0x4

/* Size of the drop events ring buffer, bytes (a power of 2 and a multiple
 * of the page size): 3640 events of 64 B + 8 B header (docs/format.md
 * "Drop events"; tests/integration/test_docs.py checks the count). */
#define NFSL_EVENTS_BYTES (256 * 1024)

/* Tenant flags (config tenant_flags). */
#define NFSL_TEN_PREFIX 0x1  /* destination-prefix rules exist: look them up */
#define NFSL_TEN_VLAN 0x2    /* VLAN rules exist: look the outer VID up */
#define NFSL_TEN_DYNAMIC 0x4 /* nfsliced moves quotas toward demand */

/* tc filter handle and priority of the splicer. */
#define NFSL_TC_HANDLE 0x5e1
#define NFSL_TC_PRIO 0x5e1

#endif /* NFSL_CONSTS_H */
