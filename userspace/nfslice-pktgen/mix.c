// SPDX-License-Identifier: GPL-2.0
/*
 * Size mix files and the size sequence made from them.
 *
 * Format (docs/pktgen.md "Size mixes"): one 'SIZE WEIGHT' pair per line,
 * SIZE a frame length in bytes without FCS, WEIGHT a positive number (at
 * most MIX_WEIGHT_MAX, a fraction allowed), the share of frames of that
 * size being WEIGHT / sum of weights, both in decimal digits (util/value.h:
 * no hex, octal or exponent); '#' starts a comment, blank lines are
 * ignored, a size may appear once.
 *
 * The frame program walks a sequence of up to PKTGEN_MAX_SEQ sizes, over
 * and over. It holds every size in proportion to its weight: exactly when
 * the weights are whole numbers summing to at most PKTGEN_MAX_SEQ (the
 * sequence is then the largest multiple of that sum that fits), else
 * PKTGEN_MAX_SEQ entries by largest remainder. The entries are shuffled
 * (Fisher-Yates, fixed seed: runs are reproducible), so sizes interleave
 * frame by frame instead of running size by size.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "util/value.h"

#define MIX_SEED 0x6e66736c69636521ULL

/* The largest WEIGHT: 256 of them still add up to a finite total. */
#define MIX_WEIGHT_MAX 1e9

static int bad_line(const char *file, unsigned int ln, const char *text)
{
	return pg_err("%s:%u: expected 'SIZE WEIGHT' (frame bytes, relative weight > 0), got "
		      "'%s': give SIZE a whole number and WEIGHT a number above 0 up to %.0f "
		      "such as 30 or 2.5, in decimal digits (no leading 0, 0x or exponent)",
		      file, ln, text, MIX_WEIGHT_MAX);
}

static int parse_line(const char *file, unsigned int ln, const char *text, __u32 lo,
		      __u32 hi, const char *range_why, struct pg_mix *m)
{
	const char *p = text + strspn(text, " \t");
	char buf[512], *save = NULL, *size_s, *weight_s;
	__u64 size;
	double w;

	if (!*p)
		return 0;
	snprintf(buf, sizeof(buf), "%s", p);
	size_s = strtok_r(buf, " \t", &save);
	weight_s = strtok_r(NULL, " \t", &save);
	/* util/value.h: decimal digits, never hex, octal or an exponent */
	if (!weight_s || strtok_r(NULL, " \t", &save) ||
	    nfsl_parse_u64(size_s, 0, UINT64_MAX, &size) ||
	    nfsl_parse_decimal(weight_s, 0, MIX_WEIGHT_MAX, &w) || w == 0)
		return bad_line(file, ln, p);
	if (size < lo || size > hi)
		return pg_err("%s:%u: size %llu is out of range: %s", file, ln,
			      (unsigned long long)size, range_why);
	for (__u32 i = 0; i < m->n; i++)
		if (m->size[i] == size)
			return pg_err("%s:%u: size %llu is listed already on line %u: "
				      "give each size once", file, ln, (unsigned long long)size,
				      m->line[i]);
	if (m->n == PG_MIX_MAX)
		return pg_err("%s:%u: more than %d sizes: merge some", file, ln,
			      PG_MIX_MAX);
	m->size[m->n] = (__u32)size;
	m->weight[m->n] = w;
	m->line[m->n] = ln;
	m->n++;
	return 0;
}

int pg_mix_load(const char *file, __u32 lo, __u32 hi, const char *range_why,
		struct pg_mix *m)
{
	char line[512];
	unsigned int ln = 0;
	FILE *f = fopen(file, "r");
	int err = 0;

	memset(m, 0, sizeof(*m));
	if (!f)
		return pg_err("cannot open mix file '%s': %s", file, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, '#');

		ln++;
		if (!strchr(line, '\n') && !feof(f)) {
			err = pg_err("%s:%u: line longer than %zu characters", file, ln,
				     sizeof(line) - 2);
			goto out;
		}
		if (c)
			*c = '\0';
		line[strcspn(line, "\r\n")] = '\0';
		err = parse_line(file, ln, line, lo, hi, range_why, m);
		if (err)
			goto out;
	}
	if (ferror(f)) {
		err = pg_err("cannot read mix file '%s': %s", file, strerror(errno));
		goto out;
	}
	if (!m->n)
		err = pg_err("%s: no sizes: write one 'SIZE WEIGHT' line per frame "
			     "size, e.g. '64 30'", file);
out:
	fclose(f);
	if (err) /* no half-read mix for a caller to use */
		memset(m, 0, sizeof(*m));
	return err;
}

static __u64 splitmix64(__u64 *s)
{
	__u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Entries per size: exact multiples, or largest remainder over MAX_SEQ. */
static __u32 apportion(const struct pg_mix *m, __u32 *cnt)
{
	double total = 0, frac[PG_MIX_MAX];
	bool whole = true;
	__u32 len, given = 0;

	for (__u32 i = 0; i < m->n; i++) {
		total += m->weight[i];
		whole &= m->weight[i] == floor(m->weight[i]);
	}
	if (whole && total <= PKTGEN_MAX_SEQ) {
		__u32 k = PKTGEN_MAX_SEQ / (__u32)total;

		for (__u32 i = 0; i < m->n; i++)
			cnt[i] = (__u32)m->weight[i] * k;
		return (__u32)total * k;
	}
	len = PKTGEN_MAX_SEQ;
	for (__u32 i = 0; i < m->n; i++) {
		double share = m->weight[i] / total * len;

		cnt[i] = (__u32)share;
		frac[i] = share - cnt[i];
		given += cnt[i];
	}
	while (given < len) {
		__u32 best = 0;

		for (__u32 i = 1; i < m->n; i++)
			if (frac[i] > frac[best])
				best = i;
		cnt[best]++;
		frac[best] = -1;
		given++;
	}
	return len;
}

int pg_mix_sequence(struct pg_mix *m, double *avg_len)
{
	__u32 cnt[PG_MIX_MAX], len, k = 0;
	__u64 seed = MIX_SEED;
	double bytes = 0;

	len = apportion(m, cnt);
	m->seq = calloc(len, sizeof(*m->seq));
	if (!m->seq)
		return pg_err("out of memory");
	for (__u32 i = 0; i < m->n; i++) {
		if (!cnt[i])
			pg_warn("mix: size %u (line %u) gets no frame of the %u-frame "
				"sequence: its weight is below 1/%u of the total",
				m->size[i], m->line[i], len, len);
		for (__u32 j = 0; j < cnt[i]; j++)
			m->seq[k++] = m->size[i];
		bytes += (double)cnt[i] * m->size[i];
	}
	for (__u32 i = len - 1; i > 0; i--) {
		__u32 j = splitmix64(&seed) % (i + 1);
		__u16 t = m->seq[i];

		m->seq[i] = m->seq[j];
		m->seq[j] = t;
	}
	m->seq_len = len;
	*avg_len = bytes / len;
	return 0;
}
