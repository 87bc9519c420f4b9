// SPDX-License-Identifier: GPL-2.0
/* Results of nfslice-bench-datapath (bench/datapath.h): the table on
 * stdout, all results as JSON and CSV. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <netinet/in.h>

#include "datapath.h"
#include "util/json_writer.h"
#include "nfsl_store.h"

/* Issue 19 §3: the splicer on a frame that is not ours, at most this many
 * ns over an empty tc program. */
#define NOT_OURS_MAX_NS 30.0

/* Order of the rows in the printed table. */
/* clang-format off */
static const int row_order[] = {
	B_XDP_EMPTY, B_XDP_PARSE, B_XDP_ROUTE, B_XDP_CALL, B_XDP_CLOCK, B_XDP_CLOCK_COARSE,
	B_XDP_COPY, B_XDP_COPY_NOFENCE, B_XDP_COPY_WARM, B_XDP_COPY_COLD, B_SLICER, B_SLICER_NOFIB,
	B_SLICER_NOCACHE, B_SLICER_COLD, B_SLICER_COARSE, B_SLICER_NOLOG, B_SLICER_TENANTS, B_SLICER_SKIP,
	B_SLICER_SKIP_EV, B_SLICER_REPLAY63, B_TC_EMPTY, B_TC_PARSE, B_TC_STORE, B_SPLICER, B_SPLICER_NORES,
	B_SPLICER_EV, B_TC_STORE_LAG, B_SPLICER_LAG, B_SPLICER_FOREIGN, B_NF_EMPTY, B_GUARD_FWD,
	B_GUARD_FWD_DOMAIN,
};
/* clang-format on */

static const char *proto_name(const struct bcase *c)
{
	if (c->v6)
		return c->proto == IPPROTO_UDP ? "udp6" : "tcp6";
	return c->proto == IPPROTO_UDP ? "udp" : "tcp";
}

static void cpu_model(char *buf, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !p)
			continue;
		p += 2;
		p[strcspn(p, "\n")] = 0;
		snprintf(buf, len, "%s", p);
		for (p = buf; *p; p++) /* it goes into CSV as is */
			if (*p == '"' || *p == '\\' || *p == ',')
				*p = ' ';
		break;
	}
	fclose(f);
}

static const char *met_str(const struct summary *s)
{
	if (!s->target || isnan(s->ratio))
		return "-";
	return s->ratio <= s->target ? "yes" : "no";
}

/* A results file: opened for writing, or NULL after saying why. */
static FILE *open_out(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		pr_err("cannot write %s: %s", path, strerror(errno));
	return f;
}

/* Close it; 0, or -1 after saying that it could not be written. */
static int close_out(FILE *f, const char *path)
{
	if (fclose(f)) {
		pr_err("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Summary of bench @id on @c and of its live-frames cross-check (@l
 * invalid when it has none). Returns whether @id applies to @c. */
static bool summarize_with_live(const struct bench *b, const struct bcase *c, int id,
				struct summary *s, struct summary *l)
{
	dp_summarize(b, c, id, s);
	l->valid = false;
	if (s->valid && benches[id].live >= 0)
		dp_summarize(b, c, benches[id].live, l);
	return s->valid;
}

int dp_write_json(const struct bench *b, const char *path)
{
	const struct nfsl_config *cfg = &b->cfg;
	struct json_writer w;
	struct utsname u;
	char model[128];
	unsigned int i, k;
	FILE *f;

	f = open_out(path);
	if (!f)
		return -1;
	uname(&u);
	cpu_model(model, sizeof(model));
	jsonw_init(&w, f);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "tool", DP_NAME);
	jsonw_string_field(&w, "unit", "ns/packet");
	jsonw_name(&w, "machine");
	jsonw_start_object(&w);
	jsonw_string_field(&w, "kernel", u.release);
	jsonw_string_field(&w, "cpu", model);
	jsonw_int_field(&w, "online_cpus", sysconf(_SC_NPROCESSORS_ONLN));
	jsonw_int_field(&w, "possible_cpus", b->ncpus);
	jsonw_int_field(&w, "pinned_cpu", b->o.cpu);
	jsonw_end_object(&w);
	jsonw_name(&w, "config");
	jsonw_start_object(&w);
	jsonw_uint_field(&w, "threshold", cfg->threshold);
	jsonw_uint_field(&w, "keep", cfg->keep);
	jsonw_uint_field(&w, "slots", cfg->slots);
	jsonw_uint_field(&w, "part_slots", cfg->part_slots);
	jsonw_uint_field(&w, "ncpus", cfg->ncpus);
	jsonw_uint_field(&w, "expiry", cfg->expiry);
	jsonw_uint_field(&w, "win_min", nfsl_win_size(0, cfg->win_min, cfg->part_slots));
	jsonw_uint_field(&w, "interfaces", cfg->nifaces);
	jsonw_end_object(&w);
	jsonw_name(&w, "method");
	jsonw_start_object(&w);
	jsonw_uint_field(&w, "rounds", b->o.rounds);
	jsonw_uint_field(&w, "warmup_rounds", b->o.warmup);
	jsonw_uint_field(&w, "iters_per_block", b->o.iters);
	jsonw_uint_field(&w, "lag", b->o.lag);
	jsonw_bool_field(&w, "flush", b->o.flush);
	jsonw_uint_field(&w, "live_repeat", b->o.live ? b->o.live_repeat : 0);
	jsonw_uint_field(&w, "live_batch", LIVE_BATCH);
	jsonw_float_field_fmt(&w, "elapsed_s", "%.1f", b->elapsed);
	jsonw_end_object(&w);
	jsonw_name(&w, "counters");
	jsonw_start_object(&w);
#define NFSL_X_JSON(name) jsonw_uint_field(&w, #name, b->cnt1.name - b->cnt0.name);
	NFSL_COUNTERS(NFSL_X_JSON)
#undef NFSL_X_JSON
	jsonw_end_object(&w);
	jsonw_name(&w, "results");
	jsonw_start_array(&w);
	for (i = 0; i < b->ncases; i++) {
		const struct bcase *c = &b->cases[i];

		for (k = 0; k < B_NR; k++) {
			struct summary s;

			dp_summarize(b, c, k, &s);
			if (!s.valid)
				continue;
			jsonw_start_object(&w);
			jsonw_uint_field(&w, "size", c->size);
			jsonw_string_field(&w, "proto", proto_name(c));
			jsonw_string_field(&w, "program", benches[k].name);
			jsonw_string_field(&w, "hook", benches[k].hook == HOOK_XDP ? "xdp" : "tc");
			jsonw_bool_field(&w, "sliced", c->sliced);
			/* NaN (not measured, no baseline) becomes null */
			jsonw_float_field_fmt(&w, "ns_median", "%.2f", s.med);
			jsonw_float_field_fmt(&w, "ns_p25", "%.2f", s.p25);
			jsonw_float_field_fmt(&w, "ns_p75", "%.2f", s.p75);
			jsonw_float_field_fmt(&w, "ns_min", "%.2f", s.min);
			jsonw_float_field_fmt(&w, "ns_max", "%.2f", s.max);
			jsonw_float_field_fmt(&w, "raw_median", "%.2f", s.raw);
			jsonw_float_field_fmt(&w, "bias_median", "%.2f", s.bias);
			jsonw_float_field_fmt(&w, "duration_net_median", "%.2f", s.dur);
			if (s.baseline < 0)
				jsonw_null_field(&w, "baseline");
			else
				jsonw_string_field(&w, "baseline", benches[s.baseline].name);
			jsonw_float_field_fmt(&w, "ratio", "%.2f", s.ratio);
			jsonw_float_field_fmt(&w, "ratio_of_medians", "%.2f", s.rmed);
			jsonw_float_field_fmt(&w, "ratio_p25", "%.2f", s.r25);
			jsonw_float_field_fmt(&w, "ratio_p75", "%.2f", s.r75);
			jsonw_float_field_fmt(&w, "ratio_min", "%.2f", s.rmin);
			jsonw_float_field_fmt(&w, "ratio_max", "%.2f", s.rmax);
			jsonw_float_field_fmt(&w, "target", "%.2f", s.target ? s.target : NAN);
			if (!s.target || isnan(s.ratio))
				jsonw_null_field(&w, "met");
			else
				jsonw_bool_field(&w, "met", s.ratio <= s.target);
			jsonw_name(&w, "samples");
			jsonw_start_array(&w);
			for (unsigned int r = 0; r < b->o.rounds; r++)
				jsonw_float_fmt(&w, "%.2f", dp_net(c, k, r));
			jsonw_end_array(&w);
			jsonw_name(&w, "duration_samples");
			jsonw_start_array(&w);
			for (unsigned int r = 0; r < b->o.rounds; r++)
				jsonw_float_fmt(&w, "%.2f",
						isnan(c->dur[k][r]) ? NAN : dp_net_dur(c, k, r));
			jsonw_end_array(&w);
			jsonw_end_object(&w);
		}
	}
	jsonw_end_array(&w);
	jsonw_name(&w, "comparisons");
	jsonw_start_array(&w);
	for (i = 0; i < b->ncases; i++) {
		for (k = 0; k < ncomparisons; k++) {
			struct compared m;

			dp_compare(b, &b->cases[i], &comparisons[k], &m);
			if (!m.valid)
				continue;
			jsonw_start_object(&w);
			jsonw_uint_field(&w, "size", b->cases[i].size);
			jsonw_string_field(&w, "proto", proto_name(&b->cases[i]));
			jsonw_string_field(&w, "program", benches[comparisons[k].a].name);
			jsonw_string_field(&w, "against", benches[comparisons[k].b].name);
			jsonw_string_field(&w, "what", comparisons[k].what);
			jsonw_float_field_fmt(&w, "ns_diff", "%.2f", m.diff);
			jsonw_float_field_fmt(&w, "ns_diff_p25", "%.2f", m.d25);
			jsonw_float_field_fmt(&w, "ns_diff_p75", "%.2f", m.d75);
			jsonw_float_field_fmt(&w, "ratio", "%.3f", m.ratio);
			jsonw_float_field_fmt(&w, "ratio_p25", "%.3f", m.r25);
			jsonw_float_field_fmt(&w, "ratio_p75", "%.3f", m.r75);
			jsonw_end_object(&w);
		}
	}
	jsonw_end_array(&w);
	jsonw_end_object(&w);
	return close_out(f, path);
}

int dp_write_csv(const struct bench *b, const char *path)
{
	unsigned int i, k;
	FILE *f;

	f = open_out(path);
	if (!f)
		return -1;
	fprintf(f, "size,proto,program,hook,sliced,ns_median,ns_p25,ns_p75,ns_min,ns_max,"
		   "raw_median,bias_median,duration_net_median,live_net_median,baseline,"
		   "ratio,ratio_p25,ratio_p75,ratio_min,ratio_max,target,met\n");
	for (i = 0; i < b->ncases; i++) {
		const struct bcase *c = &b->cases[i];

		for (k = 0; k < B_NR; k++) {
			struct summary s, l;

			if (!summarize_with_live(b, c, k, &s, &l))
				continue;
			fprintf(f, "%u,%s,%s,%s,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,", c->size,
				proto_name(c), benches[k].name,
				benches[k].hook == HOOK_XDP ? "xdp" : "tc", c->sliced, s.med, s.p25,
				s.p75, s.min, s.max, s.raw, s.bias);
			if (isnan(s.dur))
				fprintf(f, ",");
			else
				fprintf(f, "%.2f,", s.dur);
			if (l.valid)
				fprintf(f, "%.2f,", l.med);
			else
				fprintf(f, ",");
			fprintf(f, "%s,", s.baseline < 0 ? "" : benches[s.baseline].name);
			if (isnan(s.ratio))
				fprintf(f, ",,,,,");
			else
				fprintf(f, "%.3f,%.3f,%.3f,%.3f,%.3f,", s.ratio, s.r25, s.r75,
					s.rmin, s.rmax);
			if (s.target)
				fprintf(f, "%.1f,%s\n", s.target, met_str(&s));
			else
				fprintf(f, ",\n");
		}
	}
	return close_out(f, path);
}

void dp_print_table(const struct bench *b)
{
	char model[128], tgt[16], ratio[32], live[16], dur[16];
	struct utsname u;
	unsigned int i, k;

	uname(&u);
	cpu_model(model, sizeof(model));
	printf("nfslice datapath cost, ns/packet (BPF_PROG_TEST_RUN, repeat=1, bpf_stats "
	       "minus empty program)\n");
	printf("kernel %s, %s, %ld CPUs online, pinned to CPU %d; %u rounds x %u packets "
	       "per block, lag %u, %.1f s\n",
	       u.release, model, sysconf(_SC_NPROCESSORS_ONLN), b->o.cpu, b->o.rounds, b->o.iters,
	       b->o.lag, b->elapsed);
	printf("store: %u slots, %u per CPU partition; hot window from %u slots, cold "
	       "(slicer-cold, xdp-copy-cold): the whole partition\n",
	       b->cfg.slots, b->cfg.part_slots,
	       nfsl_win_size(0, b->cfg.win_min, b->cfg.part_slots));
	printf("%-5s %-5s %-16s %8s %17s %8s %8s  %-13s %-18s %-6s %s\n", "size", "proto",
	       "program", "ns/pkt", "[p25 .. p75]", "dur-xchk", "live", "baseline",
	       "ratio [p25..p75]", "target", "met");
	for (i = 0; i < b->ncases; i++) {
		const struct bcase *c = &b->cases[i];

		for (k = 0; k < sizeof(row_order) / sizeof(row_order[0]); k++) {
			int id = row_order[k];
			struct summary s, l;

			if (!summarize_with_live(b, c, id, &s, &l))
				continue;
			snprintf(dur, sizeof(dur), "%.1f", s.dur);
			if (l.valid)
				snprintf(live, sizeof(live), "%.1f", l.med);
			else
				snprintf(live, sizeof(live), "-");
			if (isnan(s.ratio))
				snprintf(ratio, sizeof(ratio), "-");
			else
				snprintf(ratio, sizeof(ratio), "%.2f [%.2f..%.2f]", s.ratio, s.r25,
					 s.r75);
			if (s.target)
				snprintf(tgt, sizeof(tgt), "<=%.1fx", s.target);
			else
				snprintf(tgt, sizeof(tgt), "-");
			printf("%-5u %-5s %-16s %8.1f [%6.1f .. %6.1f] %8s %8s  %-13s %-18s %-6s "
			       "%s\n",
			       c->size, proto_name(c), benches[id].name, s.med, s.p25, s.p75, dur,
			       live, s.baseline < 0 ? "-" : benches[s.baseline].name, ratio, tgt,
			       met_str(&s));
		}
	}
	printf("bias (empty program, raw ns/run), xdp / tc:");
	for (i = 0; i < b->ncases; i++) {
		struct summary x, t;

		dp_summarize(b, &b->cases[i], B_XDP_EMPTY, &x);
		dp_summarize(b, &b->cases[i], B_TC_EMPTY, &t);
		printf(" %u%s ", b->cases[i].size, proto_name(&b->cases[i]));
		if (x.valid)
			printf("%.1f", x.med);
		printf("/");
		if (t.valid)
			printf("%.1f", t.med);
	}
	printf("\n");

	/* Round by round, sliced packets only. */
	for (i = 0; i < b->ncases; i++) {
		for (k = 0; k < ncomparisons; k++) {
			const struct comparison *p = &comparisons[k];
			struct compared m;

			dp_compare(b, &b->cases[i], p, &m);
			if (!m.valid)
				continue;
			printf("%u B %s: %s (%s vs %s): %+.1f ns [%+.1f .. %+.1f], ratio %.3f "
			       "[%.3f .. %.3f]\n",
			       b->cases[i].size, proto_name(&b->cases[i]), p->what, benches[p->a].name,
			       benches[p->b].name, m.diff, m.d25, m.d75, m.ratio, m.r25, m.r75);
		}
	}

	/* The targets of issue #2 are stated for full-size packets. */
	for (i = 0; i < b->ncases; i++) {
		const struct bcase *c = &b->cases[i];
		struct summary s1;

		if (c->size != b->o.sizes[b->o.nsizes - 1] || !c->sliced)
			continue;
		for (k = 0; k < sizeof(row_order) / sizeof(row_order[0]); k++) {
			int id = row_order[k];
			struct summary s;

			dp_summarize(b, c, id, &s);
			if (!s.valid || !s.target || isnan(s.ratio))
				continue;
			printf("target %u B %s: %s %.1f ns = %.2fx %s (target <= %.1fx): %s\n",
			       c->size, proto_name(c), benches[id].name, s.med, s.ratio,
			       benches[s.baseline].name, s.target,
			       s.ratio <= s.target ? "met" : "NOT met");
		}
		/* Issue 19 §3: what ordinary traffic pays, in ns, not a ratio. */
		dp_summarize(b, c, B_SPLICER_FOREIGN, &s1);
		if (s1.valid)
			printf("target %u B %s: splicer-foreign %.1f ns over %s (target <= %.0f ns): "
			       "%s\n", c->size, proto_name(c), s1.med, benches[B_TC_EMPTY].name,
			       NOT_OURS_MAX_NS, s1.med <= NOT_OURS_MAX_NS ? "met" : "NOT met");
	}
}
