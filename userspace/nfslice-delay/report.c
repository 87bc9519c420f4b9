// SPDX-License-Identifier: GPL-2.0
/* Result of a delay-line run, as text or as one JSON object (--json). */
#include <stdio.h>

#include "delay.h"
#include "util/json_writer.h"

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
		struct json_writer w;

		jsonw_init(&w, stdout);
		jsonw_start_object(&w);
		jsonw_string_field(&w, "dev", o->dev);
		jsonw_uint_field(&w, "delay_us", o->delay_us);
		jsonw_uint_field(&w, "queue", l->size);
		jsonw_float_field_fmt(&w, "elapsed_s", "%.3f", s->elapsed_s);
		jsonw_uint_field(&w, "frames_in", s->in);
		jsonw_uint_field(&w, "frames_out", s->out);
		jsonw_uint_field(&w, "bytes_out", s->bytes_out);
		jsonw_uint_field(&w, "dropped_full", s->dropped_full);
		jsonw_uint_field(&w, "dropped_big", s->dropped_big);
		jsonw_uint_field(&w, "write_errors", s->write_err);
		jsonw_uint_field(&w, "left", s->left);
		jsonw_uint_field(&w, "max_held", s->max_held);
		jsonw_name(&w, "hold_us");
		jsonw_start_object(&w);
		jsonw_float_field_fmt(&w, "min", "%.1f", min);
		jsonw_float_field_fmt(&w, "mean", "%.1f", mean);
		jsonw_uint_field(&w, "p50", p50);
		jsonw_uint_field(&w, "p99", p99);
		jsonw_float_field_fmt(&w, "max", "%.1f", us(s->hold_max_ns));
		jsonw_end_object(&w);
		jsonw_end_object(&w);
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
