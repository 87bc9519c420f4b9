// SPDX-License-Identifier: GPL-2.0
/*
 * lb: Maglev L4 load balancer (nfsl_nf_lb.h; docs/nf.md "Load balancer").
 *
 * Per frame: parse (include/nfsl_parse.h), look the 5-tuple up in this
 * worker's connection table, else in the shared Maglev table, rewrite the
 * destination address to the backend's with incremental checksum updates
 * (include/nfsl_csum.h), and send the frame out per the out= rule.
 *
 * Why DNAT and not Maglev's GRE encapsulation or a MAC rewrite: the NF
 * works on sliced headers, and both alternatives break what the splicer
 * needs. Encapsulation adds an outer IP header in front of the one the
 * splicer parses and grows the frame past the headers the slicer left
 * room for; a MAC rewrite (direct server return) needs the backends on
 * the NF's L2 segment with the VIP on a loopback, which a bump-in-the-wire
 * between two devices does not give. A destination rewrite keeps the
 * frame's layout, so the splicer finds its token where it left it and
 * folds the NF's checksum change into the restored packet (nfsl_splice.h:
 * the L4 checksum is updated incrementally, "what a NAT rewrote stays
 * accounted for"). With vip= the replies are rewritten back (source
 * backend -> VIP) without state, so clients see the VIP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf/nfsl_nf_lb.h"
#include "util/params.h"
#include "util/value.h"
#include "nfsl_parse.h"
#include "nfsl_flow.h"
#include "nfsl_hdr.h"
#include "nfsl_siphash.h"

#define LB_EMPTY 0xffffu /* an entry not yet filled */
#define LB_WAYS 8        /* connection table: entries per bucket */
#define LB_MAX_CONNS (1u << 24)

/* out= */
#define LB_OUT_OTHER -1 /* the other device of two, the same of one */
#define LB_OUT_IN -2    /* the device the frame came in on */

/* One backend set and its Maglev table; immutable once published. */
struct lb_table {
	__u32 gen;
	unsigned int n;
	struct nfsl_nf_lb_backend *be; /* sorted by name: the turn order */
	__u32 *members;                /* addresses, host order, sorted */
	__u16 entry[NFSL_NF_LB_M];     /* index into be[] */
};

struct lb_worker;

struct lb_shared {
	_Atomic(struct lb_table *) cur;
	/* Serialises set_backends, the control-plane readers and the worker
	 * list; never taken by a burst. */
	pthread_mutex_t lock;
	struct lb_worker *workers;
	__be32 vip; /* 0: none */
	int out;    /* LB_OUT_* or a device index */
	__u32 conns;
	__u64 timeout_ns;
};

/* A connection entry: 32 bytes, 8 to a bucket (four cache lines). */
struct lb_conn {
	__be32 saddr, daddr;
	__be16 sport, dport;
	__u8 proto, used;
	__u16 pad;
	__be32 backend;
	__u32 gen;     /* table generation the backend was last checked in */
	__u64 last_ns; /* last packet */
};

struct lb_worker {
	/* The table this worker's burst reads (a hazard pointer): the
	 * writer frees a replaced table only when no worker holds it. */
	_Atomic(struct lb_table *) hazard;
	struct lb_worker *next;
	struct lb_shared *sh;
	struct lb_conn *conn; /* NULL with conns=0 */
	__u32 mask;           /* buckets - 1 */
	struct nfsl_nf_lb_counters c;
};

/* ---------------------------------------------------------------------
 * Hashes
 * --------------------------------------------------------------------- */

/* Fixed keys: every load balancer given the same backends builds the same
 * table (Maglev §3.4), so the permutations are not secret. */
static const __u64 lb_k1[2] = { 0x6d61676c65762d31ull, 0x6f66667365742d31ull };
static const __u64 lb_k2[2] = { 0x6d61676c65762d32ull, 0x736b69702d2d2d32ull };

/* SipHash-2-4 chained over the name's bytes, 8 at a time read little
 * endian, the length first: the same value on every host. */
static __u64 lb_name_hash(const char *s, const __u64 k[2])
{
	size_t len = strlen(s);
	__u64 h = nfsl_siphash24_u64(k[0], k[1], len);

	for (size_t i = 0; i < len; i += 8) {
		__u64 m = 0;

		for (size_t j = 0; j < 8 && i + j < len; j++)
			m |= (__u64)(__u8)s[i + j] << (8 * j);
		h = nfsl_siphash24_u64(k[0], k[1], h ^ m);
	}
	return h;
}

void nfsl_nf_lb_perm(const char *name, __u32 *offset, __u32 *skip)
{
	*offset = lb_name_hash(name, lb_k1) % NFSL_NF_LB_M;
	*skip = lb_name_hash(name, lb_k2) % (NFSL_NF_LB_M - 1) + 1;
}

/* murmur3's finaliser chained over the tuple in host order (the same on
 * every host); seeded apart from the steering hash so that the workers a
 * flow is steered to and its table entry are unrelated. */
__u32 nfsl_nf_lb_hash(const struct nfsl_nf_lb_tuple *t)
{
	__u32 h = nfsl_fmix32(0x9e3779b9u ^ t->proto);

	h = nfsl_fmix32(h ^ ntohl(t->saddr));
	h = nfsl_fmix32(h ^ ntohl(t->daddr));
	return nfsl_fmix32(h ^ ((__u32)ntohs(t->sport) << 16 | ntohs(t->dport)));
}

/* ---------------------------------------------------------------------
 * Table
 * --------------------------------------------------------------------- */

/*
 * lb_populate - Maglev §3.4 Pseudocode 1. Backends take turns in the
 * order of @be; at its turn a backend claims the first entry of its
 * permutation not yet taken (walking on from where its last turn stopped:
 * next[i]); the table is full after M claims. The permutation is walked
 * as offset + j * skip mod M instead of being stored (M x N words).
 *
 * Weights (our extension; the paper has equal shares): a backend of
 * weight w takes a turn in a round when its credit, raised by w each
 * round, reaches the largest weight W (then W is taken off), so it
 * claims w/W as many entries as the heaviest. With equal weights every
 * backend takes every turn: exactly the paper's algorithm. Weight 0
 * takes none.
 */
static void lb_populate(const struct nfsl_nf_lb_backend *be, unsigned int n,
			__u16 *entry, __u32 *pos, __u32 *skip, __u32 *credit)
{
	__u32 wmax = 0, filled = 0;

	for (unsigned int i = 0; i < n; i++) {
		nfsl_nf_lb_perm(be[i].name, &pos[i], &skip[i]);
		credit[i] = 0;
		if (be[i].weight > wmax)
			wmax = be[i].weight;
	}
	for (__u32 j = 0; j < NFSL_NF_LB_M; j++)
		entry[j] = LB_EMPTY;
	for (;;) {
		for (unsigned int i = 0; i < n; i++) {
			__u32 c = pos[i];

			if (!be[i].weight)
				continue;
			credit[i] += be[i].weight;
			if (credit[i] < wmax)
				continue;
			credit[i] -= wmax;
			while (entry[c] != LB_EMPTY) {
				c += skip[i];
				if (c >= NFSL_NF_LB_M)
					c -= NFSL_NF_LB_M;
			}
			entry[c] = i;
			c += skip[i];
			pos[i] = c >= NFSL_NF_LB_M ? c - NFSL_NF_LB_M : c;
			if (++filled == NFSL_NF_LB_M)
				return;
		}
	}
}

static int lb_cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct nfsl_nf_lb_backend *)a)->name,
		      ((const struct nfsl_nf_lb_backend *)b)->name);
}

static int lb_cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

static bool lb_is_member(const struct lb_table *t, __be32 addr)
{
	__u32 a = ntohl(addr);

	return bsearch(&a, t->members, t->n, sizeof(a), lb_cmp_u32) != NULL;
}

static void lb_table_free(struct lb_table *t)
{
	if (!t)
		return;
	free(t->be);
	free(t->members);
	free(t);
}

static const char *lb_ntoa(__be32 a, char *buf)
{
	return inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
}

/* Check a backend set; names default to the address. Returns 0 or -errno
 * with a message. */
static int lb_check(struct nfsl_nf_lb_backend *be, unsigned int n, char *err, size_t errlen)
{
	char a[INET_ADDRSTRLEN];
	bool weighted = false;

	if (n > NFSL_NF_LB_MAX_BACKENDS) {
		snprintf(err, errlen, "%u backends, at most %u fit a table of %u entries with "
			 "under 1%% imbalance (Maglev: M > 100 N); give fewer",
			 n, NFSL_NF_LB_MAX_BACKENDS, NFSL_NF_LB_M);
		return -E2BIG;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (!memchr(be[i].name, '\0', sizeof(be[i].name))) {
			snprintf(err, errlen, "backend %u: name longer than %d bytes; shorten it",
				 i + 1, NFSL_NF_LB_NAME_MAX - 1);
			return -EINVAL;
		}
		if (!be[i].addr) {
			snprintf(err, errlen, "backend %u: 0.0.0.0 is no backend; give its address", i + 1);
			return -EINVAL;
		}
		if (be[i].weight > NFSL_NF_LB_MAX_WEIGHT) {
			snprintf(err, errlen, "backend %u (%s): weight %u above %u; scale the weights down",
				 i + 1, lb_ntoa(be[i].addr, a), be[i].weight, NFSL_NF_LB_MAX_WEIGHT);
			return -EINVAL;
		}
		if (!be[i].name[0])
			lb_ntoa(be[i].addr, be[i].name);
		weighted |= be[i].weight > 0;
		for (unsigned int j = 0; j < i; j++) {
			if (be[j].addr == be[i].addr) {
				snprintf(err, errlen, "backend %u repeats the address %s of backend %u; "
					 "list each backend once (weight= for a larger share)",
					 i + 1, lb_ntoa(be[i].addr, a), j + 1);
				return -EINVAL;
			}
			if (!strcmp(be[j].name, be[i].name)) {
				snprintf(err, errlen, "backend %u repeats the name '%s' of backend %u; "
					 "names pick the permutation and must differ",
					 i + 1, be[i].name, j + 1);
				return -EINVAL;
			}
		}
	}
	if (!weighted) {
		snprintf(err, errlen, n ? "every backend has weight 0; give one a weight > 0"
					: "no backends; list at least one");
		return -EINVAL;
	}
	return 0;
}

/* Build a table of generation @gen from a copy of @b. */
static int lb_table_build(const struct nfsl_nf_lb_backend *b, unsigned int n, __u32 gen,
			  struct lb_table **out, char *err, size_t errlen)
{
	struct lb_table *t = calloc(1, sizeof(*t));
	__u32 *scratch = NULL;
	int rc = -ENOMEM;

	if (!t)
		goto nomem;
	t->gen = gen;
	t->n = n;
	t->be = calloc(n ? n : 1, sizeof(*t->be));
	t->members = calloc(n ? n : 1, sizeof(*t->members));
	scratch = calloc(3 * (size_t)(n ? n : 1), sizeof(*scratch));
	if (!t->be || !t->members || !scratch)
		goto nomem;
	memcpy(t->be, b, n * sizeof(*b));
	rc = lb_check(t->be, n, err, errlen);
	if (rc)
		goto fail;
	/* Turn order by name: the table depends on the set, not on the order
	 * it was listed in. */
	qsort(t->be, n, sizeof(*t->be), lb_cmp_name);
	for (unsigned int i = 0; i < n; i++)
		t->members[i] = ntohl(t->be[i].addr);
	qsort(t->members, n, sizeof(*t->members), lb_cmp_u32);
	lb_populate(t->be, n, t->entry, scratch, scratch + n, scratch + 2 * n);
	free(scratch);
	*out = t;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory for a table of %u backends", n);
fail:
	free(scratch);
	lb_table_free(t);
	return rc;
}

/* ---------------------------------------------------------------------
 * Backends file
 * --------------------------------------------------------------------- */

static int lb_parse_line(char *line, const char *path, unsigned int ln,
			 struct nfsl_nf_lb_backend *b, char *err, size_t errlen)
{
	char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
	struct nfsl_ip ip;

	memset(b, 0, sizeof(*b));
	b->weight = 1;
	if (nfsl_parse_ip(tok, AF_INET, &ip)) {
		snprintf(err, errlen, "%s:%u: '%s' is not an IPv4 address; start the line with "
			 "one in dotted quad, e.g. 10.0.0.1", path, ln, tok);
		return -EINVAL;
	}
	if (!ip.v4.s_addr) {
		snprintf(err, errlen, "%s:%u: 0.0.0.0 is no backend address; give the "
			 "backend's", path, ln);
		return -EINVAL;
	}
	b->addr = ip.v4.s_addr;
	while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
		__u64 w;

		if (!strncmp(tok, "weight=", 7)) {
			if (nfsl_parse_u64(tok + 7, 0, NFSL_NF_LB_MAX_WEIGHT, &w)) {
				snprintf(err, errlen, "%s:%u: '%s': the weight is an integer 0..%u "
					 "(0 drains the backend), e.g. weight=2",
					 path, ln, tok, NFSL_NF_LB_MAX_WEIGHT);
				return -EINVAL;
			}
			b->weight = w;
		} else if (!strncmp(tok, "name=", 5)) {
			if (!tok[5] || strlen(tok + 5) >= sizeof(b->name)) {
				snprintf(err, errlen, "%s:%u: '%s': a name is 1..%d bytes without "
					 "blanks, e.g. name=web1", path, ln, tok,
					 NFSL_NF_LB_NAME_MAX - 1);
				return -EINVAL;
			}
			strcpy(b->name, tok + 5);
		} else {
			snprintf(err, errlen, "%s:%u: '%s' is not weight=W or name=NAME; a line is "
				 "'ADDR [weight=W] [name=NAME]'", path, ln, tok);
			return -EINVAL;
		}
	}
	return 0;
}

int nfsl_nf_lb_load(const char *path, struct nfsl_nf_lb_backend **out, unsigned int *n,
		    char *err, size_t errlen)
{
	struct nfsl_nf_lb_backend *be = NULL;
	unsigned int cnt = 0, ln = 0, *lines = NULL;
	char line[512], a[INET_ADDRSTRLEN];
	FILE *f = fopen(path, "r");
	int rc = 0;

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "backends=%s: %s; give the path of a readable file "
			 "of one backend a line", path, strerror(errno));
		return rc;
	}
	be = calloc(NFSL_NF_LB_MAX_BACKENDS, sizeof(*be));
	lines = calloc(NFSL_NF_LB_MAX_BACKENDS, sizeof(*lines));
	if (!be || !lines) {
		rc = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *p = line;

		ln++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%u: line longer than %zu bytes; one backend "
				 "a line", path, ln, sizeof(line) - 2);
			rc = -EINVAL;
			goto out;
		}
		if (hash)
			*hash = '\0';
		p += strspn(p, " \t\r\n");
		if (!*p)
			continue;
		if (cnt == NFSL_NF_LB_MAX_BACKENDS) {
			snprintf(err, errlen, "%s:%u: more than %u backends; a table of %u entries "
				 "balances at most that many within 1%%", path, ln,
				 NFSL_NF_LB_MAX_BACKENDS, NFSL_NF_LB_M);
			rc = -E2BIG;
			goto out;
		}
		rc = lb_parse_line(p, path, ln, &be[cnt], err, errlen);
		if (rc)
			goto out;
		if (!be[cnt].name[0])
			lb_ntoa(be[cnt].addr, be[cnt].name);
		for (unsigned int j = 0; j < cnt; j++) {
			if (be[j].addr == be[cnt].addr) {
				snprintf(err, errlen, "%s:%u: %s is already on line %u; list each "
					 "backend once (weight= for a larger share)", path, ln,
					 lb_ntoa(be[cnt].addr, a), lines[j]);
				rc = -EINVAL;
				goto out;
			}
			if (!strcmp(be[j].name, be[cnt].name)) {
				snprintf(err, errlen, "%s:%u: the name '%s' is already on line %u; "
					 "names pick the permutation and must differ", path, ln,
					 be[cnt].name, lines[j]);
				rc = -EINVAL;
				goto out;
			}
		}
		lines[cnt++] = ln;
	}
	if (ferror(f)) {
		rc = -EIO;
		snprintf(err, errlen, "%s: read error after line %u", path, ln);
		goto out;
	}
	rc = lb_check(be, cnt, err, errlen);
	if (rc) {
		/* prefix the file: the message names no line here */
		char msg[256];

		snprintf(msg, sizeof(msg), "%s", err);
		snprintf(err, errlen, "%s: %s", path, msg);
	}
out:
	fclose(f);
	free(lines);
	if (rc) {
		free(be);
		return rc;
	}
	*out = be;
	*n = cnt;
	return 0;
}

/* ---------------------------------------------------------------------
 * Publishing a table to the workers
 * --------------------------------------------------------------------- */

/* The current table, held until lb_release: announce it, then check it is
 * still current (seq_cst: the writer's swap and scan cannot both miss). */
static struct lb_table *lb_hold(struct lb_shared *sh, struct lb_worker *w)
{
	struct lb_table *t = atomic_load(&sh->cur);

	for (;;) {
		struct lb_table *again;

		atomic_store(&w->hazard, t);
		again = atomic_load(&sh->cur);
		if (again == t)
			return t;
		t = again;
	}
}

static void lb_release(struct lb_worker *w)
{
	atomic_store_explicit(&w->hazard, NULL, memory_order_release);
}

int nfsl_nf_lb_set_backends(void *shared, const struct nfsl_nf_lb_backend *b,
			    unsigned int n, char *err, size_t errlen)
{
	struct lb_shared *sh = shared;
	struct lb_table *t, *old;
	int rc;

	pthread_mutex_lock(&sh->lock);
	old = atomic_load(&sh->cur);
	rc = lb_table_build(b, n, old->gen + 1, &t, err, errlen);
	if (rc) {
		pthread_mutex_unlock(&sh->lock);
		return rc;
	}
	atomic_store(&sh->cur, t);
	/* A burst is short (a few microseconds): wait it out. */
	for (struct lb_worker *w = sh->workers; w; w = w->next)
		while (atomic_load(&w->hazard) == old)
			sched_yield();
	lb_table_free(old);
	pthread_mutex_unlock(&sh->lock);
	return 0;
}

int nfsl_nf_lb_reload(void *shared, const char *path, char *err, size_t errlen)
{
	struct nfsl_nf_lb_backend *be;
	unsigned int n;
	int rc = nfsl_nf_lb_load(path, &be, &n, err, errlen);

	if (rc)
		return rc;
	rc = nfsl_nf_lb_set_backends(shared, be, n, err, errlen);
	free(be);
	return rc;
}

static __be32 lb_lookup(const struct lb_table *t, __u32 h)
{
	return t->be[t->entry[h % NFSL_NF_LB_M]].addr;
}

__be32 nfsl_nf_lb_pick(void *shared, const struct nfsl_nf_lb_tuple *tu)
{
	struct lb_shared *sh = shared;
	__be32 a;

	pthread_mutex_lock(&sh->lock);
	a = lb_lookup(atomic_load(&sh->cur), nfsl_nf_lb_hash(tu));
	pthread_mutex_unlock(&sh->lock);
	return a;
}

__u32 nfsl_nf_lb_table(void *shared, __be32 *entry)
{
	struct lb_shared *sh = shared;
	struct lb_table *t;
	__u32 gen;

	pthread_mutex_lock(&sh->lock);
	t = atomic_load(&sh->cur);
	for (__u32 j = 0; j < NFSL_NF_LB_M; j++)
		entry[j] = t->be[t->entry[j]].addr;
	gen = t->gen;
	pthread_mutex_unlock(&sh->lock);
	return gen;
}

void nfsl_nf_lb_counters(const void *mine, struct nfsl_nf_lb_counters *c)
{
	const struct lb_worker *w = mine;

	memset(c, 0, sizeof(*c));
	if (!w)
		return;
#define NFSL_X_COPY(name) c->name = __atomic_load_n(&w->c.name, __ATOMIC_RELAXED);
	NFSL_NF_LB_COUNTERS(NFSL_X_COPY)
#undef NFSL_X_COPY
}

/* The counters op of nfsl_nf_ops: names and values for reports. */
static unsigned int lb_counter_list(void *mine, const char **names, __u64 *vals,
				     unsigned int max)
{
#define NFSL_X_NAME(name) #name,
	static const char *const all[] = { NFSL_NF_LB_COUNTERS(NFSL_X_NAME) };
#undef NFSL_X_NAME
	struct nfsl_nf_lb_counters c;

	nfsl_nf_lb_counters(mine, &c);
	return nfsl_nf_list(all, (const __u64 *)&c, sizeof(c) / sizeof(__u64), names, vals, max);
}

/* ---------------------------------------------------------------------
 * Options
 * --------------------------------------------------------------------- */

/* vip=: an IPv4 address other than 0.0.0.0, into a __be32. */
static int lb_vip(const char *arg, void *field)
{
	struct nfsl_ip ip;

	if (nfsl_parse_ip(arg, AF_INET, &ip) || !ip.v4.s_addr)
		return -EINVAL;
	*(__be32 *)field = ip.v4.s_addr;
	return 0;
}

/* backends=: a path, not empty. */
static const char *lb_nonempty(const char *arg)
{
	return *arg ? NULL : "empty";
}

_Static_assert(LB_MAX_CONNS == 16777216, "conns= message below");

/* The options as given, before out= is read against the devices. */
struct lb_kv {
	const char *backends, *out;
	__be32 vip;
	__u64 conns, timeout_ns;
};

#define KOFF(f) offsetof(struct lb_kv, f)
static const struct nfsl_opt lb_keys[] = {
	{ "backends", NFSL_OPT_STR, KOFF(backends), .metavar = "PATH", .required = true,
	  .check = lb_nonempty, .bad = " is empty; give the path of the backends file" },
	{ "vip", NFSL_OPT_CUSTOM, KOFF(vip), .parse = lb_vip, .metavar = "ADDR",
	  .bad = " is not an IPv4 address; give the service address, e.g. vip=192.0.2.10" },
	{ "conns", NFSL_OPT_U64, KOFF(conns), 0, LB_MAX_CONNS, .metavar = "N",
	  .bad = ": give the connection entries per worker, 0..16777216 (0: no "
		 "connection table), e.g. conns=65536" },
	{ "timeout", NFSL_OPT_DURATION64, KOFF(timeout_ns), 1, UINT64_MAX, .unit = NFSL_NS,
	  .bare = NFSL_S, .metavar = "DURATION",
	  .bad = ": give the idle timeout of a connection, > 0, in s (default unit), ms, us, "
		 "ns, m or h, e.g. timeout=60 or timeout=500ms" },
	{ "out", NFSL_OPT_STR, KOFF(out), .metavar = "other|in|DEV" },
	{ NULL },
};

static int lb_opts(struct lb_shared *sh, const struct nfsl_nf_conf *conf, const char **path,
		   char *err, size_t errlen)
{
	struct lb_kv k = { .vip = sh->vip, .conns = sh->conns, .timeout_ns = sh->timeout_ns };
	__u64 x;

	if (nfsl_kv_parse(lb_keys, conf->kv, &k, err, errlen)) {
		if (!strncmp(err, "backends= is missing", 20))
			snprintf(err, errlen, "backends= is missing; give backends=PATH, a file of "
				 "one IPv4 address a line (docs/nf.md \"Load balancer\")");
		return -EINVAL;
	}
	*path = k.backends;
	sh->vip = k.vip;
	sh->conns = k.conns;
	sh->timeout_ns = k.timeout_ns;
	if (!k.out)
		return 0;
	if (!strcmp(k.out, "other")) {
		sh->out = LB_OUT_OTHER;
	} else if (!strcmp(k.out, "in")) {
		sh->out = LB_OUT_IN;
	} else if (!nfsl_parse_u64(k.out, 0, conf->ndevs ? conf->ndevs - 1 : 1, &x)) {
		sh->out = x;
	} else {
		snprintf(err, errlen, "out=%s: give other (the other device of two, the same of "
			 "one), in, or a device index below %u", k.out, conf->ndevs ? conf->ndevs : 2);
		return -EINVAL;
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * The NF
 * --------------------------------------------------------------------- */

static int lb_init(void **shared, const struct nfsl_nf_conf *conf, char *err, size_t errlen)
{
	struct nfsl_nf_lb_backend *be = NULL;
	struct lb_shared *sh = calloc(1, sizeof(*sh));
	struct lb_table *t;
	const char *path = NULL;
	unsigned int n;
	int rc;

	if (!sh) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	sh->out = LB_OUT_OTHER;
	sh->conns = NFSL_NF_LB_DEF_CONNS;
	sh->timeout_ns = NFSL_NF_LB_DEF_TIMEOUT_NS;
	rc = lb_opts(sh, conf, &path, err, errlen);
	if (!rc)
		rc = nfsl_nf_lb_load(path, &be, &n, err, errlen);
	if (!rc)
		rc = lb_table_build(be, n, 1, &t, err, errlen);
	free(be);
	if (rc) {
		free(sh);
		return rc;
	}
	atomic_init(&sh->cur, t);
	pthread_mutex_init(&sh->lock, NULL);
	*shared = sh;
	return 0;
}

static void lb_fini(void *shared)
{
	struct lb_shared *sh = shared;

	if (!sh)
		return;
	lb_table_free(atomic_load(&sh->cur));
	pthread_mutex_destroy(&sh->lock);
	free(sh);
}

static void *lb_worker_new(void *shared, unsigned int wi, unsigned int nworkers)
{
	struct lb_shared *sh = shared;
	struct lb_worker *w = calloc(1, sizeof(*w));
	__u32 n = 0;

	if (!w)
		return NULL;
	w->sh = sh;
	if (sh->conns) {
		/* a power of two of at least one bucket */
		for (n = LB_WAYS; n < sh->conns; n <<= 1)
			;
		/* buckets on cache-line boundaries: a lookup reads four lines */
		w->conn = aligned_alloc(64, n * sizeof(*w->conn));
		if (!w->conn) {
			free(w);
			return NULL;
		}
		memset(w->conn, 0, n * sizeof(*w->conn));
		w->mask = n / LB_WAYS - 1;
	}
	atomic_init(&w->hazard, NULL);
	pthread_mutex_lock(&sh->lock);
	w->next = sh->workers;
	sh->workers = w;
	pthread_mutex_unlock(&sh->lock);
	return w;
}

static void lb_worker_fini(void *mine)
{
	struct lb_worker *w = mine;
	struct lb_shared *sh;

	if (!w)
		return;
	sh = w->sh;
	pthread_mutex_lock(&sh->lock);
	for (struct lb_worker **pp = &sh->workers; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&sh->lock);
	free(w->conn);
	free(w);
}

static __u64 lb_age(__u64 now, __u64 last)
{
	return now > last ? now - last : 0;
}

/*
 * lb_conn_pick - the backend of flow @k (hash @h): its live connection
 * entry's, else the table's (and the entry made or refreshed). A bucket
 * holds LB_WAYS entries; a new flow takes a free or the least recently
 * used one. An entry's backend is re-checked against the set once per
 * table generation: a backend that left sends its flows to the table.
 */
static __be32 lb_conn_pick(struct lb_worker *w, const struct lb_table *t,
			   const struct nfsl_nf_lb_tuple *k, __u32 h, __u64 now,
			   struct nfsl_nf_lb_counters *d)
{
	struct lb_conn *b = w->conn + (size_t)(h & w->mask) * LB_WAYS, *e = NULL, *v = NULL;
	__u64 timeout = w->sh->timeout_ns;

	for (int i = 0; i < LB_WAYS; i++) {
		struct lb_conn *c = &b[i];

		if (!c->used) {
			if (!v || v->used)
				v = c;
			continue;
		}
		if (c->saddr == k->saddr && c->daddr == k->daddr && c->sport == k->sport &&
		    c->dport == k->dport && c->proto == k->proto) {
			e = c;
			break;
		}
		if (!v || (v->used && c->last_ns < v->last_ns))
			v = c;
	}
	if (e) {
		if (lb_age(now, e->last_ns) >= timeout) {
			d->expired++;
		} else if (e->gen != t->gen && !lb_is_member(t, e->backend)) {
			d->reassigned++;
		} else {
			e->gen = t->gen;
			e->last_ns = now;
			d->conn_hits++;
			return e->backend;
		}
	} else {
		e = v;
		if (e->used && lb_age(now, e->last_ns) < timeout)
			d->evicted++;
		d->new_flows++;
		*e = (struct lb_conn){ .saddr = k->saddr, .daddr = k->daddr, .sport = k->sport,
				       .dport = k->dport, .proto = k->proto, .used = 1 };
	}
	d->table_hits++;
	e->backend = lb_lookup(t, h);
	e->gen = t->gen;
	e->last_ns = now;
	return e->backend;
}

/*
 * lb_rewrite - set the IPv4 destination (@dst) or source address of the
 * parsed frame to @addr. The IPv4 header checksum and the L4 checksum
 * (the address is in its pseudo-header) are updated incrementally (RFC
 * 1624 Eqn. 3), so a sliced header's checksum stays the one of the sliced
 * packet and its payload and token are not read. A UDP checksum of 0
 * (none) stays 0. A frame in CHECKSUM_PARTIAL state (a local sender's,
 * docs/xsk.md: the field holds the pseudo-header seed and does not verify
 * as a full checksum) gets the seed of its new pseudo-header, which the TX
 * path completes.
 */
static void lb_rewrite(__u8 *data, __u8 *end, const struct nfsl_pkt *p, bool dst, __be32 addr)
{
	struct iphdr *iph = (struct iphdr *)(data + p->l3off);
	__u16 *l4c = (__u16 *)(data + p->l4off + nfsl_l4_csum_off(p->proto));
	__u32 l4len = p->l3end - p->l4off, pseudo;
	bool udp = p->proto == IPPROTO_UDP, partial = false;
	__be32 old = dst ? iph->daddr : iph->saddr;
	__u16 ipc;

	if (old == addr)
		return;
	if (!(udp && !*l4c) && !nfsl_pseudo_sum(data, end, p, &pseudo, &ipc) &&
	    *l4c == nfsl_csum_seed(pseudo, l4len)) {
		__u32 s = nfsl_csum_add(pseudo, nfsl_htons(l4len));

		partial = nfsl_csum_fold(nfsl_csum_bytes(data + p->l4off, l4len, s)) != 0xffff;
	}
	if (dst)
		iph->daddr = addr;
	else
		iph->saddr = addr;
	iph->check = nfsl_csum_update32(iph->check, old, addr);
	if (udp && !*l4c)
		return;
	if (partial && !nfsl_pseudo_sum(data, end, p, &pseudo, &ipc))
		*l4c = nfsl_csum_seed(pseudo, l4len);
	else
		*l4c = nfsl_csum_final(nfsl_csum_update32(*l4c, old, addr), udp);
}

static __u16 lb_out(const struct lb_shared *sh, const struct nfsl_nf_pkt *p,
		    const struct nfsl_nf_ctx *ctx)
{
	if (sh->out == LB_OUT_OTHER)
		return ctx->ndevs == 2 ? p->in ^ 1 : p->in;
	if (sh->out == LB_OUT_IN)
		return p->in;
	return sh->out;
}

static void lb_burst(void *shared, void *mine, struct nfsl_nf_pkt *p, unsigned int n,
		     const struct nfsl_nf_ctx *ctx)
{
	struct lb_shared *sh = shared;
	struct lb_worker *w = mine;
	struct nfsl_nf_lb_counters d = {};
	struct lb_table *t;

	if (!w) {
		/* the worker's state could not be allocated: no table is safe
		 * to read without announcing it, so send nothing */
		for (unsigned int i = 0; i < n; i++)
			p[i].out = NFSL_NF_DROP;
		return;
	}
	t = lb_hold(sh, w);
	for (unsigned int i = 0; i < n; i++) {
		__u8 *data = p[i].data, *end = data + p[i].len;
		struct nfsl_nf_lb_tuple k;
		struct nfsl_pkt pk;
		struct iphdr *iph;
		__be16 *ports;
		__be32 be;
		__u32 h;

		if (p[i].out == NFSL_NF_DROP)
			continue;
		if (nfsl_parse(data, end, &pk)) {
			d.not_ip++;
			continue;
		}
		if (pk.v6) {
			d.not_v4++;
			continue;
		}
		iph = (struct iphdr *)(data + pk.l3off);
		if (sh->vip ? iph->daddr != sh->vip : lb_is_member(t, iph->saddr)) {
			/* not for the service: a reply from a backend gets the
			 * VIP back as its source, anything else passes */
			if (sh->vip && lb_is_member(t, iph->saddr)) {
				lb_rewrite(data, end, &pk, false, sh->vip);
				p[i].out = lb_out(sh, &p[i], ctx);
				d.reverse++;
			} else {
				d.passed++;
			}
			continue;
		}
		ports = (__be16 *)(data + pk.l4off);
		k = (struct nfsl_nf_lb_tuple){ .saddr = iph->saddr, .daddr = iph->daddr,
					       .sport = ports[0], .dport = ports[1],
					       .proto = pk.proto };
		h = nfsl_nf_lb_hash(&k);
		if (w->conn) {
			be = lb_conn_pick(w, t, &k, h, ctx->now_ns, &d);
		} else {
			be = lb_lookup(t, h);
			d.table_hits++;
		}
		lb_rewrite(data, end, &pk, true, be);
		p[i].out = lb_out(sh, &p[i], ctx);
	}
	lb_release(w);
	/* One writer per worker: a plain read, an atomic store for readers. */
#define NFSL_X_ADD(name) __atomic_store_n(&w->c.name, w->c.name + d.name, __ATOMIC_RELAXED);
	NFSL_NF_LB_COUNTERS(NFSL_X_ADD)
#undef NFSL_X_ADD
}

const struct nfsl_nf_ops nfsl_nf_lb = {
	.name = "lb",
	.help = "Maglev L4 load balancer, DNAT to a backend: backends=PATH [vip=ADDR] "
		"[conns=65536] [timeout=60s] [out=other|in|DEV]",
	.init = lb_init,
	.worker = lb_worker_new,
	.burst = lb_burst,
	.worker_fini = lb_worker_fini,
	.counters = lb_counter_list,
	.fini = lb_fini,
};
