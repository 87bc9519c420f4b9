// SPDX-License-Identifier: GPL-2.0
/* Statistics of nfslice-bench-datapath (bench/datapath.h): net cost per
 * round, bias, quantiles and ratios to the baselines. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datapath.h"
/* ---- statistics ------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Quantile @q of the n values at @v (sorted in place), linear interpolation. */
static double quantile(double *v, unsigned int n, double q)
{
	double pos, frac;
	unsigned int i;

	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	pos = q * (n - 1);
	i = (unsigned int)pos;
	frac = pos - i;
	return i + 1 < n ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
}


bool dp_applies(const struct bench *b, const struct bcase *c, int id)
{
	const struct bench_desc *d = &benches[id];

	if (!b->o.sel[id] || ((d->flags & BF_LIVE) && !b->o.live))
		return false;
	if ((d->flags & BF_LAG) && !b->o.lag)
		return false;
	return !(d->flags & BF_SLICED) || c->sliced;
}

/* Net cost of bench @id in round @r: raw minus the bias bench's raw. */
/*
 * Net cost of bench @id in round @r: its raw cost minus the bias, the
 * median over all rounds of the empty program of the same hook on the same
 * packet. The bias is a constant of the machine (two clock reads around
 * the program); a median keeps one noisy empty block from shifting a round.
 */
double dp_net(const struct bcase *c, int id, unsigned int r)
{
	int bias = benches[id].bias;

	return bias < 0 ? c->raw[id][r] : c->raw[id][r] - c->bias_raw[bias];
}

double dp_net_dur(const struct bcase *c, int id, unsigned int r)
{
	int bias = benches[id].bias;

	return bias < 0 ? c->dur[id][r] : c->dur[id][r] - c->bias_dur[bias];
}

/* Compute the bias medians once all rounds are in. */
void dp_finish_bias(struct bench *b)
{
	double v[MAX_ROUNDS];
	unsigned int i, r;
	int k;

	for (i = 0; i < b->ncases; i++) {
		struct bcase *c = &b->cases[i];

		for (k = 0; k < B_NR; k++) {
			if (benches[k].bias >= 0)
				continue;
			for (r = 0; r < b->o.rounds; r++)
				v[r] = c->raw[k][r];
			c->bias_raw[k] = quantile(v, b->o.rounds, 0.5);
			for (r = 0; r < b->o.rounds; r++)
				v[r] = c->dur[k][r];
			c->bias_dur[k] = quantile(v, b->o.rounds, 0.5);
		}
	}
}

/* Baseline of @id for @c: the bare copy / store when the packet is sliced;
 * none when it is not (slicer and splicer then only parse, a few ns whose
 * ratio to the parser's few ns is noise: compare the two rows instead). */
static int baseline_of(const struct bcase *c, int id, double *target)
{
	*target = 0;
	if (!c->sliced)
		return -1;
	*target = benches[id].target;
	return benches[id].baseline;
}

void dp_compare(const struct bench *b, const struct bcase *c, const struct comparison *k,
		struct compared *out)
{
	unsigned int R = b->o.rounds;
	double d[MAX_ROUNDS], q[MAX_ROUNDS];

	memset(out, 0, sizeof(*out));
	if (!c->sliced || !dp_applies(b, c, k->a) || !dp_applies(b, c, k->b))
		return;
	for (unsigned int r = 0; r < R; r++) {
		double x = dp_net(c, k->a, r), y = dp_net(c, k->b, r);

		d[r] = x - y;
		q[r] = x / y;
	}
	out->diff = quantile(d, R, 0.5);
	out->d25 = quantile(d, R, 0.25);
	out->d75 = quantile(d, R, 0.75);
	out->ratio = quantile(q, R, 0.5);
	out->r25 = quantile(q, R, 0.25);
	out->r75 = quantile(q, R, 0.75);
	out->valid = true;
}

void dp_summarize(const struct bench *b, const struct bcase *c, int id, struct summary *s)
{
	unsigned int R = b->o.rounds, r, n = 0;
	double v[MAX_ROUNDS], w[MAX_ROUNDS];
	int bl;

	memset(s, 0, sizeof(*s));
	s->baseline = -1;
	s->ratio = s->r25 = s->r75 = s->rmin = s->rmax = s->rmed = NAN;
	if (!dp_applies(b, c, id))
		return;
	s->valid = true;
	for (r = 0; r < R; r++)
		v[n++] = dp_net(c, id, r);
	s->min = quantile(v, n, 0);
	s->p25 = quantile(v, n, 0.25);
	s->med = quantile(v, n, 0.5);
	s->p75 = quantile(v, n, 0.75);
	s->max = quantile(v, n, 1);
	for (r = 0; r < R; r++)
		w[r] = c->raw[id][r];
	s->raw = quantile(w, R, 0.5);
	if (benches[id].bias >= 0)
		s->bias = c->bias_raw[benches[id].bias];
	if (!(benches[id].flags & BF_LIVE)) {
		for (r = 0; r < R; r++)
			w[r] = dp_net_dur(c, id, r);
		s->dur = quantile(w, R, 0.5);
	} else {
		s->dur = NAN;
	}

	bl = baseline_of(c, id, &s->target);
	if (bl < 0 || !dp_applies(b, c, bl))
		return;
	s->baseline = bl;
	for (r = 0; r < R; r++)
		v[r] = dp_net(c, bl, r);
	s->rmed = s->med / quantile(v, R, 0.5);
	for (r = 0; r < R; r++)
		w[r] = dp_net(c, id, r) / dp_net(c, bl, r);
	s->ratio = quantile(w, R, 0.5);
	s->rmin = quantile(w, R, 0);
	s->r25 = quantile(w, R, 0.25);
	s->r75 = quantile(w, R, 0.75);
	s->rmax = quantile(w, R, 1);
}
