// SPDX-License-Identifier: GPL-2.0
/* Result of a delay-line run, as text or as one JSON object (--json). */
#include <stdio.h>

#include "delay.h"

static double us(__u64 ns)
{
	return ns / 1000.0;
}

void dl_report(const struct dl_opts *o, const struct dl_line *l, const struct dl_stats *s)
{
	__u64 released = s->out + s->write_err;
	double min = released ? us(s->hold_min_ns) : 0;
	double mean = released ? us(s->hold_sum_ns) / released : 0;
	__u64 p50 = dl_stats_quantile_us(s, 0.50);
	__u64 p99 = dl_stats_quantile_us(s, 0.99);

	if (o->json) {
		printf("{\"dev\":\"%s\",\"delay_us\":%u,\"queue\":%u,\"elapsed_s\":%.3f,"
		       "\"frames_in\":%llu,\"frames_out\":%llu,\"bytes_out\":%llu,"
		       "\"dropped_full\":%llu,\"dropped_big\":%llu,\"write_errors\":%llu,"
		       "\"left\":%llu,\"max_held\":%u,"
		       "\"hold_us\":{\"min\":%.1f,\"mean\":%.1f,\"p50\":%llu,\"p99\":%llu,"
		       "\"max\":%.1f}}\n",
		       o->dev, o->delay_us, l->size, s->elapsed_s, (unsigned long long)s->in,
		       (unsigned long long)s->out, (unsigned long long)s->bytes_out,
		       (unsigned long long)s->dropped_full, (unsigned long long)s->dropped_big,
		       (unsigned long long)s->write_err, (unsigned long long)s->left, s->max_held,
		       min, mean, (unsigned long long)p50, (unsigned long long)p99,
		       us(s->hold_max_ns));
		return;
	}
	printf("%s: %s, delay %u us, %.3f s\n", DL_NAME, o->dev, o->delay_us, s->elapsed_s);
	printf("  frames: %llu in, %llu out (%llu bytes), %llu dropped with the "
	       "line full, %llu too big, %llu write errors, %llu left at exit\n",
	       (unsigned long long)s->in, (unsigned long long)s->out,
	       (unsigned long long)s->bytes_out, (unsigned long long)s->dropped_full,
	       (unsigned long long)s->dropped_big, (unsigned long long)s->write_err,
	       (unsigned long long)s->left);
	printf("  hold us: min %.1f mean %.1f p50 %llu p99 %llu max %.1f; "
	       "most held at once %u of %u\n",
	       min, mean, (unsigned long long)p50, (unsigned long long)p99, us(s->hold_max_ns),
	       s->max_held, l->size);
}
