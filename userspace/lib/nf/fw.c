// SPDX-License-Identifier: GPL-2.0
/*
 * fw: the stateless firewall NF (nfsl_nf_fw.h; docs/nf.md "Firewall"):
 * options, frame parsing with nfsl_parse, verdicts and per-worker counters.
 * The classifier is fw_cls.c, the rules file fw_rules.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "nfsl_parse.h"
#include "nf/nfsl_nf_fw.h"
#include "util/params.h"

struct fw_shared {
	struct nfsl_fw *fw;
	unsigned int nrules;
	__u8 *action;   /* per rule, NFSL_FW_ALLOW or NFSL_FW_DENY */
	__u8 dflt;      /* for frames no rule matches */
	__u8 nonip;     /* for frames that are not IPv4/IPv6 UDP/TCP */
};

/* Written by the worker's thread only, with relaxed atomic stores (plain
 * moves on x86, no locked add) so a report thread may read them. */
struct fw_worker {
	__u64 allowed, denied, nonip, dflt;
	unsigned int nrules;
	__u64 hits[]; /* per rule */
};

/* fw's KEY=VALUE options (docs/nf.md "Firewall"), read by nfsl_kv_parse;
 * the actions' index is their NFSL_FW_ value. */
static const char *const fw_actions[] = { "allow", "deny", NULL };

struct fw_kv {
	const char *rules;
	int dflt, nonip; /* NFSL_FW_ALLOW or NFSL_FW_DENY */
};

#define FW_KOFF(f) offsetof(struct fw_kv, f)
static const struct nfsl_opt fw_keys[] = {
	{ "rules", NFSL_OPT_STR, FW_KOFF(rules), .metavar = "PATH" },
	{ "default", NFSL_OPT_ENUM, FW_KOFF(dflt), .choices = fw_actions,
	  .metavar = "allow|deny", .bad = ": write default=allow or default=deny" },
	{ "nonip", NFSL_OPT_ENUM, FW_KOFF(nonip), .choices = fw_actions,
	  .metavar = "allow|deny", .bad = ": write nonip=allow or nonip=deny" },
	{ NULL },
};

static void fw_fini(void *shared)
{
	struct fw_shared *s = shared;

	if (!s)
		return;
	nfsl_fw_free(s->fw);
	free(s->action);
	free(s);
}

static int fw_init(void **shared, const struct nfsl_nf_conf *conf, char *err, size_t errlen)
{
	struct fw_shared *s;
	struct nfsl_fw_rules rs = {};
	struct fw_kv k = { .dflt = NFSL_FW_ALLOW, .nonip = NFSL_FW_ALLOW };
	const char *path;
	__u8 dflt, nonip;
	char msg[512];
	int rc;

	*shared = NULL;
	if (nfsl_kv_parse(fw_keys, conf->kv, &k, msg, sizeof(msg))) {
		snprintf(err, errlen, "fw: %s", msg);
		return -EINVAL;
	}
	path = k.rules;
	dflt = k.dflt;
	nonip = k.nonip;
	if (!path || !*path) {
		snprintf(err, errlen, "fw: no rules file: give rules=PATH (format in "
			 "docs/nf.md#firewall; an empty file allows everything)");
		return -EINVAL;
	}
	rc = nfsl_fw_rules_load(path, &rs, msg, sizeof(msg));
	if (rc) {
		snprintf(err, errlen, "fw: %s", msg);
		return rc;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->action = malloc(rs.n ? rs.n : 1))) {
		snprintf(err, errlen, "fw: out of memory for %u rules of %s", rs.n, path);
		free(s);
		nfsl_fw_rules_free(&rs);
		return -ENOMEM;
	}
	rc = nfsl_fw_build(&s->fw, rs.r, rs.n, msg, sizeof(msg));
	if (rc) {
		snprintf(err, errlen, "fw: %s: %s", path, msg);
		nfsl_fw_rules_free(&rs);
		fw_fini(s);
		return rc;
	}
	for (unsigned int i = 0; i < rs.n; i++)
		s->action[i] = rs.r[i].action;
	s->nrules = rs.n;
	s->dflt = dflt;
	s->nonip = nonip;
	nfsl_fw_rules_free(&rs);
	*shared = s;
	return 0;
}

static void *fw_worker(void *shared, unsigned int w, unsigned int nworkers)
{
	struct fw_shared *s = shared;
	struct fw_worker *m;

	m = calloc(1, sizeof(*m) + (size_t)s->nrules * sizeof(m->hits[0]));
	if (m)
		m->nrules = s->nrules;
	return m;
}

static void fw_worker_fini(void *mine)
{
	free(mine);
}

/* The key of frame @f: 0, or -1 when it is not an IPv4/IPv6 UDP/TCP
 * packet whose headers lie in its @len bytes. The frame may hold less than
 * its IP length says (a sliced header, a snapshot): only the headers must
 * be there, so the frame length is not held against the IP length. */
static int frame_key(__u8 *f, __u32 len, struct nfsl_fw_key *k)
{
	struct nfsl_pkt p;

	if (nfsl_parse_len(f, f + len, ~0u, &p))
		return -1;
	/* nfsl_parse_len checked the L4 header lies within len. */
	k->v6 = p.v6;
	k->proto = p.proto;
	k->sport = (__u16)f[p.l4off] << 8 | f[p.l4off + 1];
	k->dport = (__u16)f[p.l4off + 2] << 8 | f[p.l4off + 3];
	if (p.v6) {
		const __u8 *a = f + p.l3off + 8;

		for (int w = 0; w < 4; w++) {
			k->src[w] = (__u32)a[4 * w] << 24 | a[4 * w + 1] << 16 |
				    a[4 * w + 2] << 8 | a[4 * w + 3];
			k->dst[w] = (__u32)a[16 + 4 * w] << 24 | a[16 + 4 * w + 1] << 16 |
				    a[16 + 4 * w + 2] << 8 | a[16 + 4 * w + 3];
		}
	} else {
		const __u8 *a = f + p.l3off + 12;

		k->src[0] = (__u32)a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3];
		k->dst[0] = (__u32)a[4] << 24 | a[5] << 16 | a[6] << 8 | a[7];
	}
	return 0;
}

#define FW_CHUNK 64

/* Single writer: a relaxed load and store, no read-modify-write. */
static inline void bump(__u64 *c, __u64 by)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + by, __ATOMIC_RELAXED);
}

static inline __u64 peek(const __u64 *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static void fw_burst(void *shared, void *mine, struct nfsl_nf_pkt *p, unsigned int n,
		     const struct nfsl_nf_ctx *ctx)
{
	const struct fw_shared *s = shared;
	struct fw_worker *m = mine;
	struct nfsl_fw_key k[FW_CHUNK];
	unsigned int idx[FW_CHUNK];
	int rule[FW_CHUNK];
	/* Counted here, added once: no store per frame to the worker's
	 * state (which is NULL when the tool could not allocate it). */
	__u64 deny = 0, seen = 0, nonip = 0, dflt = 0;

	for (unsigned int base = 0; base < n; base += FW_CHUNK) {
		unsigned int end = n - base < FW_CHUNK ? n : base + FW_CHUNK, nk = 0;

		for (unsigned int i = base; i < end; i++) {
			if (p[i].out == NFSL_NF_DROP)
				continue;
			if (!frame_key(p[i].data, p[i].len, &k[nk])) {
				idx[nk++] = i;
				continue;
			}
			seen++;
			nonip++;
			if (s->nonip == NFSL_FW_DENY) {
				p[i].out = NFSL_NF_DROP;
				deny++;
			}
		}
		nfsl_fw_match_burst(s->fw, k, nk, rule);
		seen += nk;
		for (unsigned int j = 0; j < nk; j++) {
			__u8 a;

			if (rule[j] < 0) {
				a = s->dflt;
				dflt++;
			} else {
				a = s->action[rule[j]];
				if (m)
					bump(&m->hits[rule[j]], 1);
			}
			if (a == NFSL_FW_DENY) {
				p[idx[j]].out = NFSL_NF_DROP;
				deny++;
			}
		}
	}
	if (m) {
		bump(&m->allowed, seen - deny);
		bump(&m->denied, deny);
		bump(&m->nonip, nonip);
		bump(&m->dflt, dflt);
	}
}

void nfsl_nf_fw_counters(void *mine, __u64 *allowed, __u64 *denied)
{
	const struct fw_worker *m = mine;

	*allowed = m ? peek(&m->allowed) : 0;
	*denied = m ? peek(&m->denied) : 0;
}

void nfsl_nf_fw_detail(void *mine, __u64 *nonip, __u64 *dflt, const __u64 **hits,
		       unsigned int *nrules)
{
	const struct fw_worker *m = mine;

	*nonip = m ? peek(&m->nonip) : 0;
	*dflt = m ? peek(&m->dflt) : 0;
	*hits = m ? m->hits : NULL;
	*nrules = m ? m->nrules : 0;
}

/* For nfslice-nf's reports; the per-rule hits are too many for a line. */
static unsigned int fw_counter_list(void *mine, const char **names, __u64 *vals,
				    unsigned int max)
{
	static const char *const n[] = { "allowed", "denied", "nonip", "default" };
	const struct fw_worker *m = mine;
	__u64 v[4] = {};

	if (m) {
		v[0] = peek(&m->allowed);
		v[1] = peek(&m->denied);
		v[2] = peek(&m->nonip);
		v[3] = peek(&m->dflt);
	}
	return nfsl_nf_list(n, v, 4, names, vals, max);
}

const struct nfsl_nf_ops nfsl_nf_fw = {
	.name = "fw",
	.help = "stateless 5-tuple ACL, first match wins: rules=PATH [default=allow|deny] "
		"[nonip=allow|deny] (docs/nf.md#firewall)",
	.init = fw_init,
	.worker = fw_worker,
	.burst = fw_burst,
	.worker_fini = fw_worker_fini,
	.counters = fw_counter_list,
	.fini = fw_fini,
};
