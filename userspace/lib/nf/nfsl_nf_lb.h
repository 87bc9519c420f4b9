/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lb: a Maglev L4 load balancer as an NF of nfslice-nf (nfsl_nf.h,
 * docs/nf.md "Load balancer").
 *
 * New flows go to a backend by Maglev consistent hashing (Eisenbud et al.,
 * "Maglev: A Fast and Reliable Software Network Load Balancer", NSDI'16,
 * §3.4): a lookup table of NFSL_NF_LB_M entries, filled by the paper's
 * population algorithm from one permutation per backend, indexed by a hash
 * of the 5-tuple. A per-worker connection table (§3.3.3) keeps a flow on
 * the backend it started on while it stays active, also across a change
 * of the backend set. The packet's destination address is rewritten to the
 * backend's (DNAT), the IPv4 and L4 checksums updated incrementally
 * (RFC 1624).
 *
 * The table is built once per backend set and shared read-only by the
 * workers: every worker maps a new flow to the same backend, so a flow
 * whose packets reach two workers (or two load balancers with the same
 * backend file) is still sent to one backend.
 */
#ifndef NFSL_NF_LB_H
#define NFSL_NF_LB_H

#include <stddef.h>
#include <linux/types.h>

#include "nf/nfsl_nf.h"

/* Lookup table size: prime (each permutation then visits every entry) and
 * well above 100 x the backend count, the paper's rule for an imbalance
 * under 1% (§3.4, §5.3). */
#define NFSL_NF_LB_M 65537u
#define NFSL_NF_LB_MAX_BACKENDS 655u  /* M / 100 */
#define NFSL_NF_LB_MAX_WEIGHT 1000u
#define NFSL_NF_LB_NAME_MAX 64        /* bytes, with the terminating NUL */

/* Defaults of the kv options. */
#define NFSL_NF_LB_DEF_CONNS 65536u          /* connection entries per worker */
#define NFSL_NF_LB_DEF_TIMEOUT_NS 60000000000ull /* idle timeout: 60 s */

struct nfsl_nf_lb_backend {
	__be32 addr;   /* IPv4 address, network order */
	__u32 weight;  /* 0..NFSL_NF_LB_MAX_WEIGHT: share of the table relative
			* to the others; 0 drains it (no new flows, its
			* connections stay) */
	char name[NFSL_NF_LB_NAME_MAX]; /* hashed into its permutation; the
					 * address in dotted quad when "" */
};

/* A flow as the Maglev table hashes it; addresses and ports network order. */
struct nfsl_nf_lb_tuple {
	__be32 saddr, daddr;
	__be16 sport, dport;
	__u8 proto;
};

/* Per-worker counters, in frames. */
#define NFSL_NF_LB_COUNTERS(X)                                                  \
	X(new_flows)  /* Maglev lookups for a 5-tuple with no connection     \
		       * entry (its first frame, or evicted) */              \
	X(table_hits) /* frames sent by a Maglev lookup: new_flows +         \
		       * expired + reassigned, or all with conns=0 */        \
	X(conn_hits)  /* frames sent by a live connection entry */          \
	X(expired)    /* Maglev lookups for an entry idle >= timeout */      \
	X(reassigned) /* Maglev lookups for an entry whose backend left */   \
	X(evicted)    /* live entries pushed out of a full bucket */         \
	X(reverse)    /* vip= set: frames from a backend, source -> VIP */   \
	X(passed)     /* IPv4 UDP/TCP not to be balanced: untouched */       \
	X(not_v4)     /* IPv6 UDP/TCP: untouched */                         \
	X(not_ip)     /* not IP UDP/TCP to nfsl_parse() (ARP, ICMP,         \
		       * fragments, malformed): untouched */

struct nfsl_nf_lb_counters {
#define NFSL_X_FIELD(name) __u64 name;
	NFSL_NF_LB_COUNTERS(NFSL_X_FIELD)
#undef NFSL_X_FIELD
};

extern const struct nfsl_nf_ops nfsl_nf_lb;

/*
 * nfsl_nf_lb_load - read a backends file (format in docs/nf.md "Load
 * balancer"): one backend a line, "ADDR [weight=W] [name=NAME]", '#'
 * comments and blank lines allowed.
 * @path:  the file
 * @out:   on success a malloc'ed array of *@n backends, in file order
 * Returns 0, or -errno with "PATH:LINE: what is wrong; the fix" in @err
 * (-ENOENT and others from fopen, -EINVAL for the content, -E2BIG for more
 * than NFSL_NF_LB_MAX_BACKENDS).
 */
int nfsl_nf_lb_load(const char *path, struct nfsl_nf_lb_backend **out, unsigned int *n,
		    char *err, size_t errlen);

/*
 * nfsl_nf_lb_set_backends - replace the backend set of a running lb.
 * @shared: what nfsl_nf_lb.init made
 * @b, @n:  the new set (any order: the table depends on the set only)
 * Builds the new Maglev table, publishes it to the workers and frees the
 * old one once no worker reads it (each worker finishes its burst on the
 * table it started with). Flows of backends that stay keep their
 * connection entries; flows of removed backends go to the new table at
 * their next packet. Safe while workers run; callers are serialised.
 * Returns 0, or -EINVAL (duplicate address or name, no backend of weight
 * > 0, weight too large), -E2BIG, -ENOMEM with a message in @err; on an
 * error the old set stays.
 */
int nfsl_nf_lb_set_backends(void *shared, const struct nfsl_nf_lb_backend *b,
			    unsigned int n, char *err, size_t errlen);

/* nfsl_nf_lb_reload - nfsl_nf_lb_load then nfsl_nf_lb_set_backends. */
int nfsl_nf_lb_reload(void *shared, const char *path, char *err, size_t errlen);

/*
 * nfsl_nf_lb_perm - the Maglev permutation of the backend named @name:
 * entry j of its preference list is (offset + j * skip) mod M, with
 * offset = h1(name) mod M and skip = h2(name) mod (M - 1) + 1 (§3.4);
 * h1, h2 are SipHash-2-4 chains over the name under two fixed keys.
 */
void nfsl_nf_lb_perm(const char *name, __u32 *offset, __u32 *skip);

/*
 * nfsl_nf_lb_hash - the 5-tuple hash that indexes the table (entry =
 * hash mod M) and the connection table. Not symmetric (the two directions
 * of a flow are different flows to a load balancer) and independent of
 * the steering hash (include/nfsl_flow.h).
 */
__u32 nfsl_nf_lb_hash(const struct nfsl_nf_lb_tuple *t);

/* nfsl_nf_lb_pick - the backend the current table gives @t (the
 * connection table aside); network order. */
__be32 nfsl_nf_lb_pick(void *shared, const struct nfsl_nf_lb_tuple *t);

/*
 * nfsl_nf_lb_table - copy the current table: @entry[j] = the address of
 * the backend of entry j, for j < NFSL_NF_LB_M. Returns the table's
 * generation (1 for the set init loaded, +1 per set_backends).
 */
__u32 nfsl_nf_lb_table(void *shared, __be32 *entry);

/* nfsl_nf_lb_counters - worker @mine's counters, each read atomically
 * while the worker runs (a burst behind at most); zeros for NULL. */
void nfsl_nf_lb_counters(const void *mine, struct nfsl_nf_lb_counters *c);

#endif /* NFSL_NF_LB_H */
