// SPDX-License-Identifier: GPL-2.0
/*
 * The firewall's classifier (nfsl_nf_fw.h): HyperSplit trees, one per
 * family unless the rules need EffiCuts' separation, walked a burst at a
 * time.
 *
 * A rule is a box in D dimensions of closed 32-bit ranges: IPv4 D = 5
 * (source, destination, source port, destination port, protocol), IPv6
 * D = 11 (each address as four 32-bit words: a prefix is exactly the
 * product of "exact" words, one partial word and "any" words). Each family
 * has its own classifier; a rule of both (any any) is in both.
 *
 * Tree: HyperSplit (Qi, Xu, Yang, Li, "Packet classification algorithms:
 * from theory to practice", INFOCOM 2009): a binary tree whose node splits
 * one dimension at one point, key < point left, else right; a leaf holds at
 * most FW_BINTH rules in priority order, scanned linearly. The split is the
 * rule boundary, over all dimensions, that minimises twice the larger
 * child plus the rules copied to both sides: balance keeps the tree
 * shallow, the copy term keeps it small (minimising the larger child
 * alone copied 5x as many rules and was slower). A node whose first rule
 * covers its whole box ends there: later rules cannot win in it (HiCuts'
 * redundancy removal, Gupta & McKeown, Hot Interconnects 1999).
 *
 * Shape: wide rules (a /0 or a /8 among /32s, ports 1024:65535) straddle
 * the splits among the narrow ones inside them and are copied into many
 * leaves. The build tries one tree within a budget of FW_BUDGET copies per
 * rule; if that budget (or depth FW_MAXDEPTH) cuts leaves short, it also
 * builds EffiCuts' separable trees (Vamanan, Voskuilen, Vijaykumar,
 * SIGCOMM 2010): two, by whether the destination prefix is small (at
 * least FW_SMALL bits), and four, by both addresses; it keeps the shape
 * whose mean lookup work (lookup_cost, over points inside FW_SAMPLES rules)
 * is least. One tree usually wins: on this VM a second walk costs more than
 * the copies it saves (10,000 ClassBench-like rules: one tree ~80-120 ns, 4
 * trees ~200 ns). With several trees a lookup walks those whose smallest
 * rule index beats the best match so far and stops scanning a leaf at the
 * first rule with a larger index (priority pruning, as tuple space search
 * prunes its tuples: Srinivasan, Suri, Varghese, SIGCOMM 1999).
 *
 * Lookup: a walk alone is a chain of dependent loads (~20 nodes of 8 B,
 * mostly L2 hits), so cls_match_group walks FW_GROUP keys of a burst in
 * step, a level at a time, with a branch-free step (a leaf stays put):
 * the loads of different keys overlap (four trees over 10,000 rules: ~300
 * ns a key one at a time, ~210 in step).
 *
 * Why not the others: tuple space search needs one hash probe per
 * (prefix length, prefix length, port class) tuple, of which ClassBench
 * ACLs have hundreds, and a frame that matches late or nothing probes them
 * all; bit vectors (Lakshman & Stiliadis, SIGCOMM 1998) read N bits per
 * dimension (10,000 rules: 5 x 1.25 KB per frame); HiCuts/HyperCuts cut
 * into equal parts, which copies range rules more than splits at rule
 * boundaries do; RFC (Gupta & McKeown, SIGCOMM 1999) looks up in a
 * constant 13 loads, but its cross-product tables grow with the product
 * of the distinct ranges of the fields they join, and its build takes a
 * bitmap of all the rules per table entry.
 *
 * Bounds: leaf rules are at most FW_BUDGET_BYTES per family and shape
 * (a budget that runs out leaves longer leaves: slower, never wrong), the
 * tree at most FW_MAXDEPTH deep. 10,000 ClassBench-like rules: 10-15 MB,
 * built in 0.15-0.4 s; 100,000: 116 MB, 3 s.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf/nfsl_nf_fw.h"

#define FW_MAXD 11
#define FW_TREES 4
#define FW_BINTH 8
#define FW_SMALL 16
#define FW_MAXDEPTH 64
#define FW_BUDGET 32             /* rule copies per rule, in all at least */
#define FW_BUDGET_MIN (1 << 16)   /* copies, and at most */
#define FW_BUDGET_BYTES (128 << 20) /* of leaf rules (44 B IPv4, 92 B IPv6) */
#define FW_SAMPLES 2048
#define FW_COST_TREE 8
#define FW_COST_RULE 2

/* Node: thresh and meta. An inner node splits dimension DIM at thresh:
 * its children are nodes IDX (key < thresh) and IDX + 1. A leaf holds
 * thresh rules from leaf rule IDX on. */
#define FW_LEAF 0x80000000u
#define FW_DIM_SHIFT 27
#define FW_DIM_MASK 0xfu
#define FW_IDX 0x07ffffffu
#define FW_NONE 0xffffffffu

struct fw_node {
	__u32 thresh;
	__u32 meta;
};

struct fw_tree {
	__u32 root;
	__u32 minid; /* its smallest rule index */
};

/* One family's classifier. A leaf rule is 2 * nd + 1 words: per dimension
 * lo and hi - lo (so a range test is one subtraction and one unsigned
 * compare), then the rule's index. */
struct fw_cls {
	unsigned int nd;
	unsigned int ntrees;
	struct fw_tree tree[FW_TREES];
	struct fw_node *nodes;
	__u32 *lr;
	unsigned int nnodes, nlr, maxdepth, nrules;
};

struct nfsl_fw {
	struct fw_cls c[2]; /* IPv4, IPv6 */
	unsigned int nrules;
};

/* ---------------------------------------------------------------- build */

struct brule {
	__u32 lo[FW_MAXD], hi[FW_MAXD];
	__u32 id;
};

struct item {
	__u32 node, n, depth;
	__u32 *ids; /* indices into the family's brule array, ascending */
	__u32 lo[FW_MAXD], hi[FW_MAXD];
};

struct builder {
	unsigned int nd;
	const struct brule *br;
	struct fw_node *nodes;
	unsigned int nnodes, ncap;
	__u32 *lr;
	unsigned int nlr, lrcap; /* in leaf rules */
	struct item *q;
	size_t qhead, qtail, qcap;
	size_t copies, budget;   /* rule copies in queued items and leaves */
	__u32 *sl, *sh, *tmp;    /* scratch, one per rule of the family */
	unsigned int maxdepth, binth;
	bool forced;             /* a leaf cut short by budget or depth */
};

/* nfsl_fw_tune with the defaults filled in. */
struct tune {
	unsigned int trees, budget, binth;
	bool budget_exact; /* no floor of FW_BUDGET_MIN */
};

/* Sort @n words of @a (@tmp as long): insertion for few, else LSD radix
 * by bytes, skipping a byte all share (port and protocol values have
 * zero high bytes). The build sorts rule ends at every node; qsort's
 * indirect compare was 80% of it. */
static void sort_u32(__u32 *a, unsigned int n, __u32 *tmp)
{
	__u32 *src = a, *dst = tmp;

	if (n < 64) {
		for (unsigned int i = 1; i < n; i++) {
			__u32 x = a[i];
			unsigned int j = i;

			for (; j && a[j - 1] > x; j--)
				a[j] = a[j - 1];
			a[j] = x;
		}
		return;
	}
	for (int shift = 0; shift < 32; shift += 8) {
		unsigned int cnt[256] = {}, pos = 0;

		for (unsigned int i = 0; i < n; i++)
			cnt[(src[i] >> shift) & 0xff]++;
		if (cnt[(src[0] >> shift) & 0xff] == n)
			continue;
		for (int d = 0; d < 256; d++) {
			unsigned int c = cnt[d];

			cnt[d] = pos;
			pos += c;
		}
		for (unsigned int i = 0; i < n; i++)
			dst[cnt[(src[i] >> shift) & 0xff]++] = src[i];
		__u32 *t = src;

		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
}

/* Prefix @len of the 128-bit address @a (words) as per-word ranges. */
static void prefix_ranges(const __u32 *a, unsigned int len, unsigned int words,
			  __u32 *lo, __u32 *hi)
{
	for (unsigned int w = 0; w < words; w++) {
		unsigned int from = 32 * w;

		if (len >= from + 32) {
			lo[w] = hi[w] = a[w];
		} else if (len <= from) {
			lo[w] = 0;
			hi[w] = ~0u;
		} else {
			__u32 m = ~0u << (32 - (len - from));

			lo[w] = a[w] & m;
			hi[w] = lo[w] | ~m;
		}
	}
}

static void to_brule(const struct nfsl_fw_rule *r, __u32 id, int v6, struct brule *b)
{
	unsigned int w = v6 ? 4 : 1, k = 2 * w;

	prefix_ranges(r->src, r->src_len, w, b->lo, b->hi);
	prefix_ranges(r->dst, r->dst_len, w, b->lo + w, b->hi + w);
	b->lo[k] = r->sport_lo;
	b->hi[k] = r->sport_hi;
	b->lo[k + 1] = r->dport_lo;
	b->hi[k + 1] = r->dport_hi;
	b->lo[k + 2] = r->proto_any ? 0 : r->proto;
	b->hi[k + 2] = r->proto_any ? 255 : r->proto;
	b->id = id;
}

static int new_nodes(struct builder *b, unsigned int k, __u32 *first)
{
	if (b->nnodes + k > FW_IDX)
		return -E2BIG;
	if (b->nnodes + k > b->ncap) {
		unsigned int cap = b->ncap ? 2 * b->ncap : 1024;
		struct fw_node *n = realloc(b->nodes, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		b->nodes = n;
		b->ncap = cap;
	}
	*first = b->nnodes;
	b->nnodes += k;
	return 0;
}

static int push(struct builder *b, const struct item *it)
{
	/* qhead > 0: something to reclaim (an empty queue has no array: a
	 * memmove from NULL + 0 is undefined) */
	if (b->qtail == b->qcap && b->qhead && b->qhead >= b->qcap / 2) {
		/* the done half makes room: the queue holds one level or two */
		memmove(b->q, b->q + b->qhead, (b->qtail - b->qhead) * sizeof(*b->q));
		b->qtail -= b->qhead;
		b->qhead = 0;
	}
	if (b->qtail == b->qcap) {
		size_t cap = b->qcap ? 2 * b->qcap : 256;
		struct item *q = realloc(b->q, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		b->q = q;
		b->qcap = cap;
	}
	b->q[b->qtail++] = *it;
	b->copies += it->n;
	return 0;
}

static bool covers(const struct brule *r, const struct item *it, unsigned int nd)
{
	for (unsigned int d = 0; d < nd; d++)
		if (r->lo[d] > it->lo[d] || r->hi[d] < it->hi[d])
			return false;
	return true;
}

static int make_leaf(struct builder *b, struct item *it)
{
	unsigned int stride = 2 * b->nd + 1;

	if (b->nlr + it->n > FW_IDX)
		return -E2BIG;
	if (b->nlr + it->n > b->lrcap) {
		unsigned int cap = b->lrcap ? 2 * b->lrcap : 1024;
		__u32 *lr;

		while (cap < b->nlr + it->n)
			cap *= 2;
		lr = realloc(b->lr, (size_t)cap * stride * sizeof(*lr));
		if (!lr)
			return -ENOMEM;
		b->lr = lr;
		b->lrcap = cap;
	}
	for (unsigned int i = 0; i < it->n; i++) {
		const struct brule *r = &b->br[it->ids[i]];
		__u32 *o = b->lr + (size_t)(b->nlr + i) * stride;

		for (unsigned int d = 0; d < b->nd; d++) {
			o[2 * d] = r->lo[d];
			o[2 * d + 1] = r->hi[d] - r->lo[d];
		}
		o[2 * b->nd] = r->id;
	}
	b->nodes[it->node].thresh = it->n;
	b->nodes[it->node].meta = FW_LEAF | b->nlr;
	b->nlr += it->n;
	if (it->depth > b->maxdepth)
		b->maxdepth = it->depth;
	return 0;
}

/*
 * The split (*@dim, *@point: left key < point) of @it's rules that
 * minimises twice the larger child plus the rules copied to both sides,
 * ties to fewer copies, over all dimensions and all rule boundaries inside
 * the box. Returns false when no boundary lies inside (which cannot happen
 * for rules of which the first does not cover the box).
 */
static bool best_split(struct builder *b, const struct item *it, unsigned int *dim,
		       __u32 *point)
{
	unsigned int n = it->n, best = ~0u, bestsum = ~0u;
	bool found = false;

	for (unsigned int d = 0; d < b->nd; d++) {
		__u32 blo = it->lo[d], bhi = it->hi[d], last = blo;
		unsigned int a = 0, h = 0, ci = 0, cj = 0;

		if (blo == bhi)
			continue;
		for (unsigned int i = 0; i < n; i++) {
			const struct brule *r = &b->br[it->ids[i]];

			b->sl[i] = r->lo[d] > blo ? r->lo[d] : blo;
			b->sh[i] = r->hi[d] < bhi ? r->hi[d] : bhi;
		}
		sort_u32(b->sl, n, b->tmp);
		sort_u32(b->sh, n, b->tmp);
		/* The candidates, in order: starts above the box's start, and
		 * the points after ends below the box's end (merged). */
		for (;;) {
			__u32 p;
			unsigned int nl, nr, worst;

			while (ci < n && b->sl[ci] <= last)
				ci++;
			while (cj < n && b->sh[cj] < bhi && b->sh[cj] + 1 <= last)
				cj++;
			if (cj < n && b->sh[cj] >= bhi)
				cj = n;
			if (ci == n && cj == n)
				break;
			p = ci == n ? b->sh[cj] + 1 :
			    cj == n ? b->sl[ci] :
			    b->sl[ci] < b->sh[cj] + 1 ? b->sl[ci] : b->sh[cj] + 1;
			last = p;
			while (a < n && b->sl[a] < p)
				a++;
			while (h < n && b->sh[h] < p)
				h++;
			nl = a;
			nr = n - h;
			/* the larger child counts twice, each copy once */
			worst = 2 * (nl > nr ? nl : nr) + (nl + nr - n);
			if (worst < best || (worst == best && nl + nr < bestsum)) {
				best = worst;
				bestsum = nl + nr;
				*dim = d;
				*point = p;
				found = true;
			}
		}
	}
	return found;
}

static int split(struct builder *b, struct item *it, unsigned int d, __u32 p)
{
	struct item c[2];
	__u32 first;
	int err;

	err = new_nodes(b, 2, &first);
	if (err)
		return err;
	b->nodes[it->node].thresh = p;
	b->nodes[it->node].meta = (d << FW_DIM_SHIFT) | first;
	for (int s = 0; s < 2; s++) {
		c[s] = *it;
		c[s].node = first + s;
		c[s].depth = it->depth + 1;
		c[s].n = 0;
		c[s].ids = malloc(it->n * sizeof(__u32));
		if (!c[s].ids) {
			if (s)
				free(c[0].ids);
			return -ENOMEM;
		}
	}
	c[0].hi[d] = p - 1;
	c[1].lo[d] = p;
	for (unsigned int i = 0; i < it->n; i++) {
		const struct brule *r = &b->br[it->ids[i]];

		if (r->lo[d] < p)
			c[0].ids[c[0].n++] = it->ids[i];
		if (r->hi[d] >= p)
			c[1].ids[c[1].n++] = it->ids[i];
	}
	for (int s = 0; s < 2; s++) {
		err = push(b, &c[s]);
		if (err) {
			for (int t = s; t < 2; t++)
				free(c[t].ids);
			return err;
		}
	}
	return 0;
}

/* Breadth first, so a budget running out leaves long leaves evenly
 * rather than one subtree deep and the rest flat. */
static int grow(struct builder *b)
{
	int err = 0;

	while (b->qhead < b->qtail) {
		struct item it = b->q[b->qhead++];
		unsigned int d, k;
		__u32 p;

		b->copies -= it.n;
		/* Rules after one that covers the box never win in it. */
		for (k = 0; k < it.n; k++)
			if (covers(&b->br[it.ids[k]], &it, b->nd)) {
				it.n = k + 1;
				break;
			}
		if (err) {
			/* after an error, only free what is queued */
		} else if (it.n <= b->binth) {
			err = make_leaf(b, &it);
		} else if (it.depth < FW_MAXDEPTH && b->copies + b->nlr + 2 * it.n <= b->budget &&
			   best_split(b, &it, &d, &p)) {
			err = split(b, &it, d, p);
		} else {
			b->forced = true;
			err = make_leaf(b, &it);
		}
		free(it.ids);
	}
	return err;
}

static void cls_free(struct fw_cls *c)
{
	free(c->nodes);
	free(c->lr);
	memset(c, 0, sizeof(*c));
}

/*
 * Trees over the @nb rules @br of one family, rule i in tree @cat[i]
 * (< FW_TREES), into @c. *@forced tells whether the budget or the depth
 * limit cut a leaf short.
 */
static int build_trees(struct fw_cls *c, unsigned int nd, const struct brule *br,
		       unsigned int nb, const __u8 *cat, const struct tune *tune,
		       bool *forced)
{
	struct builder b = { .nd = nd, .br = br, .binth = tune->binth };
	struct item root[FW_TREES] = {};
	__u32 first;
	int err;

	memset(c, 0, sizeof(*c));
	c->nd = nd;
	c->nrules = nb;
	b.sl = malloc(nb * sizeof(__u32));
	b.sh = malloc(nb * sizeof(__u32));
	b.tmp = malloc(nb * sizeof(__u32));
	err = b.sl && b.sh && b.tmp ? 0 : -ENOMEM;
	/* Node 0: an empty leaf, where a lookup that a tree cannot improve
	 * parks its walk. */
	if (!err)
		err = new_nodes(&b, 1, &first);
	if (err)
		goto out;
	b.nodes[0] = (struct fw_node){ .thresh = 0, .meta = FW_LEAF };
	b.budget = (size_t)tune->budget * nb;
	if (!tune->budget_exact && b.budget < FW_BUDGET_MIN)
		b.budget = FW_BUDGET_MIN;
	if (b.budget > FW_BUDGET_BYTES / ((2 * nd + 1) * sizeof(__u32)))
		b.budget = FW_BUDGET_BYTES / ((2 * nd + 1) * sizeof(__u32));
	for (int t = 0; t < FW_TREES && !err; t++) {
		root[t].ids = malloc(nb * sizeof(__u32));
		if (!root[t].ids)
			err = -ENOMEM;
		for (unsigned int d = 0; d < nd; d++)
			root[t].hi[d] = ~0u;
		root[t].hi[nd - 3] = root[t].hi[nd - 2] = 0xffff;
		root[t].hi[nd - 1] = 0xff;
	}
	for (unsigned int i = 0; i < nb && !err; i++)
		root[cat[i]].ids[root[cat[i]].n++] = i;
	for (int t = 0; t < FW_TREES; t++) {
		if (!root[t].n || err) {
			free(root[t].ids);
			continue;
		}
		err = new_nodes(&b, 1, &root[t].node);
		if (!err) {
			c->tree[c->ntrees].root = root[t].node;
			c->tree[c->ntrees].minid = br[root[t].ids[0]].id;
			c->ntrees++;
			err = push(&b, &root[t]);
		}
		if (err)
			free(root[t].ids);
	}
	if (!err)
		err = grow(&b);
	for (size_t i = b.qhead; i < b.qtail; i++)
		free(b.q[i].ids);
	/* Walk the trees with the smallest rule first: a match there prunes
	 * the trees after it whose rules all come later. */
	for (unsigned int i = 1; i < c->ntrees; i++)
		for (unsigned int j = i; j && c->tree[j].minid < c->tree[j - 1].minid; j--) {
			struct fw_tree t = c->tree[j];

			c->tree[j] = c->tree[j - 1];
			c->tree[j - 1] = t;
		}
	c->nodes = b.nodes;
	c->lr = b.lr;
	c->nnodes = b.nnodes;
	c->nlr = b.nlr;
	c->maxdepth = b.maxdepth;
	b.nodes = NULL;
	b.lr = NULL;
	*forced = b.forced;
out:
	free(b.nodes);
	free(b.lr);
	free(b.q);
	free(b.sl);
	free(b.sh);
	free(b.tmp);
	if (err)
		cls_free(c);
	return err;
}

/*
 * Work of a lookup of the key @v in @c, in units of a node step: each
 * tree walked costs FW_COST_TREE (its loop, its leaf's first miss), each
 * node 1, each leaf rule tested FW_COST_RULE. Weights fitted to timings on
 * this 2-vCPU VM (nf_fw/bench): one tree of depth ~19 ~75 ns, four trees
 * of depth ~12 ~200 ns.
 */
static unsigned int lookup_cost(const struct fw_cls *c, const __u32 *v)
{
	unsigned int nd = c->nd, stride = 2 * nd + 1, cost = 0;
	__u32 best = FW_NONE;

	for (unsigned int t = 0; t < c->ntrees && c->tree[t].minid < best; t++) {
		__u32 i = c->tree[t].root;
		const __u32 *r;

		cost += FW_COST_TREE;
		while (!(c->nodes[i].meta & FW_LEAF)) {
			const struct fw_node *x = &c->nodes[i];

			i = (x->meta & FW_IDX) +
			    (v[(x->meta >> FW_DIM_SHIFT) & FW_DIM_MASK] >= x->thresh);
			cost++;
		}
		r = c->lr + (size_t)(c->nodes[i].meta & FW_IDX) * stride;
		for (__u32 j = c->nodes[i].thresh; j && r[2 * nd] < best; j--, r += stride) {
			bool hit = true;

			cost += FW_COST_RULE;
			for (unsigned int d = 0; d < nd; d++)
				hit &= v[d] - r[2 * d] <= r[2 * d + 1];
			if (hit)
				best = r[2 * nd];
		}
	}
	return cost;
}

/* Mean lookup_cost over keys inside up to FW_SAMPLES of the rules (spread
 * over the list, a pseudo-random point of each, the same every build). */
static double shape_cost(const struct fw_cls *c, const struct brule *br, unsigned int nb)
{
	unsigned int step = nb > FW_SAMPLES ? nb / FW_SAMPLES : 1, ns = 0;
	__u64 h = 0x9e3779b97f4a7c15ULL, sum = 0;
	__u32 v[FW_MAXD];

	for (unsigned int i = 0; i < nb; i += step, ns++) {
		for (unsigned int d = 0; d < c->nd; d++) {
			__u64 w = (__u64)br[i].hi[d] - br[i].lo[d] + 1;

			h = h * 6364136223846793005ULL + 1442695040888963407ULL;
			v[d] = br[i].lo[d] + (__u32)((h >> 32) % w);
		}
		sum += lookup_cost(c, v);
	}
	return ns ? (double)sum / ns : 0;
}

/* Tree of rule @r: 0 one tree for all; 1 by whether the destination is
 * small; 2 by whether the source and the destination are. */
static __u8 category(const struct nfsl_fw_rule *r, int sep)
{
	bool ss = r->src_len >= FW_SMALL, ds = r->dst_len >= FW_SMALL;

	return sep == 0 ? 0 : sep == 1 ? ds : ss | ds << 1;
}

static int cls_build(struct fw_cls *c, const struct nfsl_fw_rule *r, unsigned int n, int v6,
		     const struct tune *tune)
{
	unsigned int nd = v6 ? 11 : 5, nb = 0;
	__u32 fam = v6 ? NFSL_FW_V6 : NFSL_FW_V4;
	struct brule *br;
	__u8 *cat;
	bool forced;
	int err = 0;

	memset(c, 0, sizeof(*c));
	c->nd = nd;
	for (unsigned int i = 0; i < n; i++)
		nb += !!(r[i].family & fam);
	if (!nb)
		return 0;
	br = malloc(nb * sizeof(*br));
	cat = calloc(nb, 1);
	if (!br || !cat) {
		err = -ENOMEM;
		goto out;
	}
	nb = 0;
	for (unsigned int i = 0; i < n; i++)
		if (r[i].family & fam)
			to_brule(&r[i], i, v6, &br[nb++]);
	if (tune->trees) {
		int sep = tune->trees == 1 ? 0 : tune->trees == 2 ? 1 : 2;

		for (unsigned int i = 0, j = 0; i < n; i++)
			if (r[i].family & fam)
				cat[j++] = category(&r[i], sep);
		err = build_trees(c, nd, br, nb, cat, tune, &forced);
		goto out;
	}

	/* One tree, if it needs no cut short leaf: a single walk. */
	err = build_trees(c, nd, br, nb, cat, tune, &forced);
	if (err || !forced)
		goto out;

	/* Else separate as EffiCuts: by whether the destination is small,
	 * then by both addresses; keep the shape the cost model likes best. */
	double best = shape_cost(c, br, nb);

	for (int sep = 1; sep <= 2; sep++) {
		struct fw_cls alt;
		double cost;

		for (unsigned int i = 0, j = 0; i < n; i++)
			if (r[i].family & fam)
				cat[j++] = category(&r[i], sep);
		/* A shape that cannot be built (memory) is no loss: keep the
		 * one built. */
		if (build_trees(&alt, nd, br, nb, cat, tune, &forced))
			break;
		cost = shape_cost(&alt, br, nb);
		if (cost < best) {
			cls_free(c);
			*c = alt;
			best = cost;
		} else {
			cls_free(&alt);
		}
	}
out:
	free(br);
	free(cat);
	if (err)
		cls_free(c);
	return err;
}

int nfsl_fw_build_tuned(struct nfsl_fw **fw, const struct nfsl_fw_rule *r, unsigned int n,
			const struct nfsl_fw_tune *tune, char *err, size_t errlen)
{
	struct tune t = {
		.trees = tune ? tune->trees : 0,
		.budget = tune && tune->budget ? tune->budget : FW_BUDGET,
		.budget_exact = tune && tune->budget,
		.binth = tune && tune->binth ? tune->binth : FW_BINTH,
	};
	struct nfsl_fw *f;
	int rc;

	*fw = NULL;
	if (n > NFSL_FW_MAX_RULES) {
		snprintf(err, errlen, "%u rules, at most %u: split the rule set or merge rules",
			 n, NFSL_FW_MAX_RULES);
		return -E2BIG;
	}
	if (t.trees != 0 && t.trees != 1 && t.trees != 2 && t.trees != 4) {
		snprintf(err, errlen, "%u trees: give 1, 2, 4 or 0 (choose)", t.trees);
		return -EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory for the classifier");
		return -ENOMEM;
	}
	f->nrules = n;
	for (int v6 = 0; v6 < 2; v6++) {
		rc = cls_build(&f->c[v6], r, n, v6, &t);
		if (rc) {
			snprintf(err, errlen, "cannot build the %s classifier of %u rules: %s",
				 v6 ? "IPv6" : "IPv4", n, strerror(-rc));
			nfsl_fw_free(f);
			return rc;
		}
	}
	*fw = f;
	return 0;
}

int nfsl_fw_build(struct nfsl_fw **fw, const struct nfsl_fw_rule *r, unsigned int n,
		  char *err, size_t errlen)
{
	return nfsl_fw_build_tuned(fw, r, n, NULL, err, errlen);
}

void nfsl_fw_free(struct nfsl_fw *fw)
{
	if (!fw)
		return;
	cls_free(&fw->c[0]);
	cls_free(&fw->c[1]);
	free(fw);
}

void nfsl_fw_info(const struct nfsl_fw *fw, struct nfsl_fw_info *info)
{
	memset(info, 0, sizeof(*info));
	for (int f = 0; f < 2; f++) {
		const struct fw_cls *c = &fw->c[f];

		info->rules[f] = c->nrules;
		info->trees[f] = c->ntrees;
		info->nodes[f] = c->nnodes;
		info->leaf_rules[f] = c->nlr;
		info->max_depth[f] = c->maxdepth;
		info->bytes += (size_t)c->nnodes * sizeof(struct fw_node) +
			       (size_t)c->nlr * (2 * c->nd + 1) * sizeof(__u32);
	}
}

/* --------------------------------------------------------------- lookup */

/* The key as the family's dimensions. */
static __always_inline void key_dims(const struct nfsl_fw_key *k, __u32 *v, const int v6)
{
	if (v6) {
		for (int w = 0; w < 4; w++) {
			v[w] = k->src[w];
			v[4 + w] = k->dst[w];
		}
		v[8] = k->sport;
		v[9] = k->dport;
		v[10] = k->proto;
	} else {
		v[0] = k->src[0];
		v[1] = k->dst[0];
		v[2] = k->sport;
		v[3] = k->dport;
		v[4] = k->proto;
	}
}

static __always_inline __u32 leaf_scan(const struct fw_cls *c, const __u32 *v, __u32 node,
				       __u32 best, const int nd)
{
	const struct fw_node *x = &c->nodes[node];
	const __u32 *r = c->lr + (size_t)(x->meta & FW_IDX) * (2 * nd + 1);

	for (__u32 j = x->thresh; j; j--, r += 2 * nd + 1) {
		__u32 miss = 0;

		if (r[2 * nd] >= best)
			break;
		for (int d = 0; d < nd; d++)
			miss |= (v[d] - r[2 * d]) > r[2 * d + 1];
		if (!miss)
			return r[2 * nd];
	}
	return best;
}

/* One step down from node @i; a leaf stays where it is. Branch-free, so
 * the steps of several keys overlap. */
static __always_inline __u32 step(const struct fw_node *nodes, __u32 i, const __u32 *v,
				  __u32 *leaf)
{
	__u32 m = nodes[i].meta;
	__u32 c = (m & FW_IDX) + (v[(m >> FW_DIM_SHIFT) & FW_DIM_MASK] >= nodes[i].thresh);

	*leaf &= m;
	return m & FW_LEAF ? i : c;
}

#define FW_GROUP 16

/*
 * Match @n <= FW_GROUP keys of one family, @v[j] the dimensions of key j,
 * into @best. The walks of a tree advance together, a level at a time: the
 * node loads of different keys are independent, so their L2 latencies
 * overlap instead of adding up (a lone walk is a chain of dependent loads).
 */
static __always_inline void cls_match_group(const struct fw_cls *c, __u32 (*v)[FW_MAXD + 1],
					    unsigned int n, __u32 *best, const int nd)
{
	const struct fw_node *nodes = c->nodes;
	__u32 cur[FW_GROUP];

	for (unsigned int j = 0; j < n; j++)
		best[j] = FW_NONE;
	for (unsigned int t = 0; t < c->ntrees; t++) {
		__u32 leaf;

		for (unsigned int j = 0; j < n; j++)
			cur[j] = c->tree[t].minid < best[j] ? c->tree[t].root : 0;
		do {
			leaf = FW_LEAF;
			for (unsigned int j = 0; j < n; j++)
				cur[j] = step(nodes, cur[j], v[j], &leaf);
		} while (!leaf);
		for (unsigned int j = 0; j < n; j++)
			__builtin_prefetch(c->lr + (size_t)(nodes[cur[j]].meta & FW_IDX) *
					   (2 * nd + 1));
		for (unsigned int j = 0; j < n; j++)
			best[j] = leaf_scan(c, v[j], cur[j], best[j], nd);
	}
}

int nfsl_fw_match(const struct nfsl_fw *fw, const struct nfsl_fw_key *k)
{
	int rule;

	nfsl_fw_match_burst(fw, k, 1, &rule);
	return rule;
}

/* Match the group of @n keys @v of family @v6, results to rule[@idx[j]]. */
static void flush(const struct nfsl_fw *fw, int v6, __u32 (*v)[FW_MAXD + 1],
		  const unsigned int *idx, unsigned int n, int *rule)
{
	__u32 best[FW_GROUP];

	/* constant nd, so the leaf test unrolls */
	if (v6)
		cls_match_group(&fw->c[1], v, n, best, 11);
	else
		cls_match_group(&fw->c[0], v, n, best, 5);
	for (unsigned int j = 0; j < n; j++)
		rule[idx[j]] = best[j] == FW_NONE ? -1 : (int)best[j];
}

void nfsl_fw_match_burst(const struct nfsl_fw *fw, const struct nfsl_fw_key *k,
			 unsigned int n, int *rule)
{
	__u32 v[2][FW_GROUP][FW_MAXD + 1];
	unsigned int idx[2][FW_GROUP], ng[2] = {};

	/* Each family's keys in groups of FW_GROUP; the partial ones go
	 * with the last key. */
	for (unsigned int i = 0; i < n; i++) {
		int f = !!k[i].v6;

		key_dims(&k[i], v[f][ng[f]], f);
		idx[f][ng[f]++] = i;
		for (f = 0; f < 2; f++)
			if (ng[f] && (ng[f] == FW_GROUP || i + 1 == n)) {
				flush(fw, f, v[f], idx[f], ng[f], rule);
				ng[f] = 0;
			}
	}
}
