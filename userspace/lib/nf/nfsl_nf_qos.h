/* SPDX-License-Identifier: GPL-2.0 */
/*
 * qos: a single rate three color marker (srTCM, RFC 2697) in color-blind
 * mode as an NF of nfslice-nf (nfsl_nf.h; docs/nf.md "QoS meter").
 *
 * Each packet is metered by its ORIGINAL IP length (nfsl_nf_pkt.orig_len:
 * for a sliced header the length before slicing, not the ~80 bytes the NF
 * holds) against two token buckets filled at CIR: green passes unchanged,
 * yellow is re-marked with a DSCP (RFC 2474), red is dropped or re-marked.
 * Time is the burst's ctx->now_ns only.
 *
 * One meter per worker, metering that worker's share of the aggregate:
 * worker w of n gets CIR, CBS and EBS divided by n (the remainders to the
 * lowest workers, so the shares add up to the configuration). Exact for
 * one worker; with several, a worker whose flows exceed its share meters
 * them against its share even if another worker is idle (steering spreads
 * flows, not bytes, evenly). A meter the workers shared would need a lock
 * or atomics per packet on state nfsl_nf.h keeps read-only while traffic
 * runs.
 */
#ifndef NFSL_NF_QOS_H
#define NFSL_NF_QOS_H

#include <linux/types.h>

#include "nf/nfsl_nf.h"

/* Defaults of the kv options (RFC 2597 Assured Forwarding class 1:
 * AF12 and AF13, the higher drop precedences). */
#define NFSL_NF_QOS_DEF_YELLOW_DSCP 12
#define NFSL_NF_QOS_DEF_RED_DSCP 14

/* Bounds that keep the token arithmetic in 64 bits. */
#define NFSL_NF_QOS_MAX_CIR (1ull << 40) /* bytes/s (8.8 Tbit/s) */
#define NFSL_NF_QOS_MAX_BURST 0xffffffffull /* CBS, EBS: bytes */

/* Per-worker counters: frames and their metered (original IP) bytes. */
#define NFSL_NF_QOS_COUNTERS(X)                                                 \
	X(green)        /* passed unchanged */                                \
	X(yellow)       /* re-marked yellow_dscp= */                          \
	X(red)          /* dropped, or re-marked red_dscp= with red=mark */   \
	X(green_bytes)                                                        \
	X(yellow_bytes)                                                       \
	X(red_bytes)                                                          \
	X(unmetered)    /* not IP UDP/TCP to nfsl_parse(): passed unchanged \
			 * (no IP length to meter, no DSCP to set) */

struct nfsl_nf_qos_counters {
#define NFSL_X_FIELD(name) __u64 name;
	NFSL_NF_QOS_COUNTERS(NFSL_X_FIELD)
#undef NFSL_X_FIELD
};

extern const struct nfsl_nf_ops nfsl_nf_qos;

/* nfsl_nf_qos_counters - worker @mine's counters, each read atomically
 * while the worker runs (a burst behind at most); zeros for NULL. */
void nfsl_nf_qos_counters(const void *mine, struct nfsl_nf_qos_counters *c);

#endif /* NFSL_NF_QOS_H */
