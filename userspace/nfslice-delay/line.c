// SPDX-License-Identifier: GPL-2.0
/* The delay line's FIFO of held frames and its hold-time statistics. */
#include <errno.h>
#include <stdlib.h>

#include "delay.h"

int dl_line_init(struct dl_line *l, __u32 size)
{
	*l = (struct dl_line){.size = size};
	l->ring = calloc(size, sizeof(*l->ring));
	return l->ring ? 0 : -ENOMEM;
}

void dl_line_free(struct dl_line *l)
{
	free(l->ring);
	l->ring = NULL;
}

int dl_stats_init(struct dl_stats *s)
{
	*s = (struct dl_stats){.hold_min_ns = ~0ULL};
	s->hist = calloc(DL_HIST_BUCKETS, sizeof(*s->hist));
	return s->hist ? 0 : -ENOMEM;
}

void dl_stats_free(struct dl_stats *s)
{
	free(s->hist);
	s->hist = NULL;
}

void dl_stats_hold(struct dl_stats *s, __u64 ns)
{
	__u64 us = ns / 1000;

	s->hist[us < DL_HIST_BUCKETS ? us : DL_HIST_BUCKETS - 1]++;
	s->hold_sum_ns += ns;
	if (ns < s->hold_min_ns)
		s->hold_min_ns = ns;
	if (ns > s->hold_max_ns)
		s->hold_max_ns = ns;
}

__u64 dl_stats_quantile_us(const struct dl_stats *s, double q)
{
	__u64 n = 0, rank, seen = 0;
	__u32 i;

	for (i = 0; i < DL_HIST_BUCKETS; i++)
		n += s->hist[i];
	if (!n)
		return 0;
	/* Nearest rank: the smallest hold with at least q*n frames at or below. */
	rank = (__u64)(q * n + 0.999999);
	if (rank < 1)
		rank = 1;
	for (i = 0; i < DL_HIST_BUCKETS; i++) {
		seen += s->hist[i];
		if (seen >= rank)
			return i;
	}
	return DL_HIST_BUCKETS - 1;
}
