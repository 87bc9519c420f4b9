/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fw: a stateless 5-tuple firewall NF (issue 9; docs/nf.md "Firewall").
 *
 * An ordered ACL, first match wins: each rule matches a source and a
 * destination prefix (IPv4 or IPv6), a source and a destination port range
 * and a protocol (exact or any), and says allow or deny. A frame no rule
 * matches takes default=allow|deny (allow unless told). Only IPv4/IPv6
 * UDP/TCP packets are classified: every frame nfsl_parse() does not take
 * for one (ARP, ICMP, other protocols, IP fragments, IPv6 routing or
 * fragment headers, truncated or inconsistent headers) takes
 * nonip=allow|deny (allow unless told; a strict firewall says deny). The
 * NF reads the Ethernet, VLAN, IP and L4 headers and no further: the ports
 * are the first 4 bytes of L4, so it classifies sliced headers as it does
 * full frames, and a frame need not hold the payload its IP length claims.
 *
 * Options (struct nfsl_nf_conf kv): rules=PATH (required), default=allow|deny,
 * nonip=allow|deny. A later key overrides an earlier one.
 *
 * Rules file: one rule a line, fields separated by blanks; '#' starts a
 * comment; blank lines are skipped. ClassBench filter lines (Taylor &
 * Turner, "ClassBench: a packet classification benchmark", INFOCOM 2005)
 * load once an action is appended:
 *
 *   [@]SRC DST SPORT DPORT PROTO [FLAGS] ACTION
 *
 *   SRC, DST  A.B.C.D/LEN (0..32), A.B.C.D (= /32), an IPv6 address with or
 *             without /LEN (0..128), or any / * (every address of both
 *             families). Host bits below LEN are ignored (10.1.2.3/8 is
 *             10.0.0.0/8). A rule's two addresses are of one family; a
 *             rule with both `any` matches IPv4 and IPv6 packets.
 *   SPORT, DPORT  LO : HI (ClassBench), LO:HI, N, or any / *; 0..65535,
 *             LO <= HI, both ends included.
 *   PROTO     0xPP/0xFF (exact), 0x00/0x00 (any), tcp, udp, a number
 *             0..255 (exact), or any / *. Only TCP (6) and UDP (17)
 *             packets are classified, so a rule for another protocol never
 *             matches.
 *   FLAGS     ClassBench's TCP flags field 0xHHHH/0x0000, accepted only
 *             with mask 0 (flags are not matched).
 *   ACTION    allow or deny.
 *
 *   @10.0.0.0/8 192.168.1.0/24 0 : 65535 80 : 80 0x06/0xFF allow
 *   any 2001:db8::/32 any 53 udp deny
 *
 * Rule i of the file (0-based, in order) is the rule i the classifier
 * reports. At most NFSL_FW_MAX_RULES rules, lines of at most
 * NFSL_FW_MAX_LINE bytes. An empty file is valid: every classified frame
 * takes the default. scripts/fwgen.py writes ClassBench-like rule sets
 * and traces for them.
 *
 * Classifier (fw_cls.c): not a linear scan but a HyperSplit decision tree
 * per family (Qi et al., INFOCOM 2009: binary splits at rule boundaries,
 * leaves of at most 8 rules), separated into 2 or 4 trees as EffiCuts
 * (Vamanan et al., SIGCOMM 2010) when one tree would copy wide rules past
 * its memory budget, with priority pruning across trees (as tuple space
 * search, Srinivasan et al., SIGCOMM 1999); a burst's keys walk the tree
 * in step so their cache misses overlap. Why this and not tuple space
 * search or bit vectors: fw_cls.c.
 *
 * Measured (10,000 rules: the classifier against a linear first match,
 * memory, build time; command and table): docs/nf.md "Firewall".
 */
#ifndef NFSL_NF_FW_H
#define NFSL_NF_FW_H

#include <stdio.h>
#include <linux/types.h>

#include "nf/nfsl_nf.h"

#define NFSL_FW_MAX_RULES (1u << 20)
#define NFSL_FW_MAX_LINE 1024

#define NFSL_FW_ALLOW 0
#define NFSL_FW_DENY 1

/* Address families a rule applies to (a mask). */
#define NFSL_FW_V4 1
#define NFSL_FW_V6 2

/*
 * One rule. Addresses are four 32-bit words in host byte order, most
 * significant first (IPv4: word 0 only, the rest 0), with the bits below
 * the prefix length zero. Port ranges are closed, host order.
 */
struct nfsl_fw_rule {
	__u32 src[4], dst[4];
	__u8 src_len, dst_len; /* prefix lengths, bits: 0..32 or 0..128 */
	__u8 family;           /* NFSL_FW_V4, NFSL_FW_V6 or both */
	__u8 proto;            /* IP protocol, when !proto_any */
	__u8 proto_any;
	__u8 action;           /* NFSL_FW_ALLOW or NFSL_FW_DENY */
	__u16 sport_lo, sport_hi;
	__u16 dport_lo, dport_hi;
	__u32 line;            /* line in the rules file, 1-based; 0 if none */
};

struct nfsl_fw_rules {
	struct nfsl_fw_rule *r;
	unsigned int n;
};

/* What the classifier looks at in a packet: addresses as in a rule. */
struct nfsl_fw_key {
	__u32 src[4], dst[4];
	__u16 sport, dport; /* host order */
	__u8 proto;
	__u8 v6;            /* IPv6, else IPv4 (words 1..3 ignored) */
};

/*
 * nfsl_fw_rules_read - parse the rules in @f; @name names it in errors.
 * Returns 0 with @out filled (free with nfsl_fw_rules_free; n may be 0),
 * -EINVAL for a malformed line, -E2BIG beyond NFSL_FW_MAX_RULES, -ENOMEM,
 * or -EIO; @err then holds "NAME:LINE: what is wrong; the fix".
 */
int nfsl_fw_rules_read(FILE *f, const char *name, struct nfsl_fw_rules *out,
		       char *err, size_t errlen);
/* nfsl_fw_rules_load - nfsl_fw_rules_read of the file at @path; -errno of
 * fopen with the path named when it cannot be opened. */
int nfsl_fw_rules_load(const char *path, struct nfsl_fw_rules *out, char *err,
		       size_t errlen);
void nfsl_fw_rules_free(struct nfsl_fw_rules *rs);
/* nfsl_fw_rule_str - @r as one line of the rules file (no newline), which
 * reads back to the same rule (but its line). Returns snprintf's count. */
int nfsl_fw_rule_str(const struct nfsl_fw_rule *r, char *buf, size_t len);

/* The classifier: built once from a rule array, read-only afterwards, so
 * any number of threads may look up concurrently. */
struct nfsl_fw;

/*
 * nfsl_fw_build - classifier over @n rules @r (copied as needed; @r may be
 * freed afterwards). Returns 0, -ENOMEM or -E2BIG (more than
 * NFSL_FW_MAX_RULES), with a message in @err.
 */
int nfsl_fw_build(struct nfsl_fw **fw, const struct nfsl_fw_rule *r,
		  unsigned int n, char *err, size_t errlen);
void nfsl_fw_free(struct nfsl_fw *fw);

/* Build knobs, for tests and experiments; a zero field takes the default
 * (and trees 0 lets the build choose the shape). */
struct nfsl_fw_tune {
	unsigned int trees;  /* 1, 2 or 4 trees per family */
	unsigned int budget; /* rule copies per rule, without the floor of 2^16 */
	unsigned int binth;  /* rules per leaf before a split */
};
/* nfsl_fw_build with @tune (NULL: defaults); -EINVAL for trees not 0, 1,
 * 2 or 4. */
int nfsl_fw_build_tuned(struct nfsl_fw **fw, const struct nfsl_fw_rule *r, unsigned int n,
			const struct nfsl_fw_tune *tune, char *err, size_t errlen);

/* nfsl_fw_match - index of the first rule matching @k, or -1. */
int nfsl_fw_match(const struct nfsl_fw *fw, const struct nfsl_fw_key *k);
/* nfsl_fw_match_burst - nfsl_fw_match of @n keys into @rule, faster than
 * one at a time (the walks of several keys overlap their cache misses). */
void nfsl_fw_match_burst(const struct nfsl_fw *fw, const struct nfsl_fw_key *k,
			 unsigned int n, int *rule);

/* Shape of a built classifier, per family (0 IPv4, 1 IPv6). */
struct nfsl_fw_info {
	unsigned int rules[2];      /* rules of the family */
	unsigned int trees[2];
	unsigned int nodes[2];      /* inner nodes and leaves */
	unsigned int leaf_rules[2]; /* rule copies in the leaves */
	unsigned int max_depth[2];
	size_t bytes;               /* memory of the lookup structures */
};
void nfsl_fw_info(const struct nfsl_fw *fw, struct nfsl_fw_info *info);

/*
 * The NF (ops in registry.c). nfsl_nf_fw_counters - frames worker state
 * @mine allowed and denied so far (frames dropped before the firewall are
 * not counted); the worker's own thread writes them, so a reader on another
 * thread sees values at most a burst old.
 */
extern const struct nfsl_nf_ops nfsl_nf_fw;
void nfsl_nf_fw_counters(void *mine, __u64 *allowed, __u64 *denied);

/* Finer counters of worker state @mine: frames that took the nonip action,
 * frames no rule matched (the default), and hits of rule i in
 * (*hits)[i], i < *nrules (read those with __atomic_load_n(..,
 * __ATOMIC_RELAXED) while the worker runs). */
void nfsl_nf_fw_detail(void *mine, __u64 *nonip, __u64 *dflt,
		       const __u64 **hits, unsigned int *nrules);

#endif /* NFSL_NF_FW_H */
