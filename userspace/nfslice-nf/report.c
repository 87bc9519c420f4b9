// SPDX-License-Identifier: GPL-2.0
/* nfslice-nf reports: per worker, totals, working set, kernel counters. */
#include <stdio.h>
#include <string.h>

#include "util/json_writer.h"
#include "nf.h"

void nf_report_sample(struct nf_report *r)
{
	nfsl_xsk_snapshot(r->x, &r->ws, &r->ks);
	if (r->ws.posted > r->peak_posted)
		r->peak_posted = r->ws.posted;
	if (r->ws.inflight > r->peak_inflight)
		r->peak_inflight = r->ws.inflight;
	if (r->ws.written > r->peak_written)
		r->peak_written = r->ws.written;
}

static void sum(struct nfsl_xsk *x, struct nfsl_xsk_wstats *t)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < nfsl_xsk_nworkers(x); i++) {
		const struct nfsl_xsk_wstats *s = nfsl_xsk_worker_stats(nfsl_xsk_worker(x, i));

#define NFSL_X_ADD(name) t->name += __atomic_load_n(&s->name, __ATOMIC_RELAXED);
		NFSL_XSK_WORKER_COUNTERS(NFSL_X_ADD)
#undef NFSL_X_ADD
	}
}

static void json_counters(struct json_writer *w, const struct nfsl_xsk_wstats *s)
{
	jsonw_start_object(w);
#define NFSL_X_JSON(name) jsonw_uint_field(w, #name, __atomic_load_n(&s->name, __ATOMIC_RELAXED));
	NFSL_XSK_WORKER_COUNTERS(NFSL_X_JSON)
#undef NFSL_X_JSON
	jsonw_end_object(w);
}

#define NF_MAX_COUNTERS 32

/* NF @k's counters summed over the workers. Returns how many. */
static unsigned int nf_counters(const struct nf_report *r, int k, const char **names,
				__u64 *vals)
{
	const struct nfsl_nf_ops *ops = r->nfs->ops[k];
	unsigned int n = 0;

	if (!ops->counters)
		return 0;
	for (int w = 0; w < nfsl_xsk_nworkers(r->x); w++) {
		__u64 v[NF_MAX_COUNTERS];

		n = ops->counters(r->mine[w][k], names, v, NF_MAX_COUNTERS);
		for (unsigned int i = 0; i < n; i++)
			vals[i] = (w ? vals[i] : 0) + v[i];
	}
	return n;
}

static void report_json(struct nf_report *r, const struct nfsl_xsk_wstats *tot,
			const struct nfsl_steer_counters *sc)
{
	struct nfsl_xsk *x = r->x;
	struct json_writer w;

	jsonw_init(&w, stdout);
	jsonw_start_object(&w);
	jsonw_bool_field(&w, "final", r->final);
	jsonw_float_field_fmt(&w, "elapsed_s", "%.3f", r->elapsed_s);
	jsonw_string_field(&w, "rx", nfsl_xsk_rx_name(r->o->rx));
	jsonw_string_field(&w, "nf", r->chain);
	jsonw_uint_field(&w, "workers", nfsl_xsk_nworkers(x));
	if (r->o->name)
		jsonw_string_field(&w, "domain", r->o->name);
	else
		jsonw_null_field(&w, "domain");
	jsonw_name(&w, "total");
	json_counters(&w, tot);
	jsonw_name(&w, "per_worker");
	jsonw_start_array(&w);
	for (int i = 0; i < nfsl_xsk_nworkers(x); i++)
		json_counters(&w, nfsl_xsk_worker_stats(nfsl_xsk_worker(x, i)));
	jsonw_end_array(&w);
	jsonw_name(&w, "working_set");
	jsonw_start_object(&w);
	jsonw_uint_field(&w, "posted", r->ws.posted);
	jsonw_uint_field(&w, "inflight", r->ws.inflight);
	jsonw_uint_field(&w, "written", r->ws.written);
	jsonw_uint_field(&w, "pool", r->ws.pool);
	jsonw_uint_field(&w, "window_ns", r->ws.window_ns);
	jsonw_uint_field(&w, "peak_posted", r->peak_posted);
	jsonw_uint_field(&w, "peak_inflight", r->peak_inflight);
	jsonw_uint_field(&w, "peak_written", r->peak_written);
	jsonw_end_object(&w);
	jsonw_name(&w, "kernel");
	jsonw_start_object(&w);
	jsonw_uint_field(&w, "rx_dropped", r->ks.rx_dropped);
	jsonw_uint_field(&w, "rx_invalid", r->ks.rx_invalid);
	jsonw_uint_field(&w, "tx_invalid", r->ks.tx_invalid);
	jsonw_uint_field(&w, "rx_ring_full", r->ks.rx_ring_full);
	jsonw_uint_field(&w, "rx_fill_empty", r->ks.rx_fill_empty);
	jsonw_uint_field(&w, "tx_ring_empty", r->ks.tx_ring_empty);
	jsonw_end_object(&w);
	jsonw_name(&w, "nf_counters");
	jsonw_start_object(&w);
	for (int k = 0; k < r->nfs->n; k++) {
		const char *names[NF_MAX_COUNTERS];
		__u64 vals[NF_MAX_COUNTERS];
		unsigned int n = nf_counters(r, k, names, vals);

		if (!r->nfs->ops[k]->counters)
			continue; /* rxdrop: the totals say it all */
		jsonw_name(&w, r->nfs->ops[k]->name);
		jsonw_start_object(&w);
		for (unsigned int i = 0; i < n; i++)
			jsonw_uint_field(&w, names[i], vals[i]);
		jsonw_end_object(&w);
	}
	jsonw_end_object(&w);
	jsonw_name(&w, "steer");
	jsonw_start_object(&w);
#define NFSL_X_JSON(name) jsonw_uint_field(&w, #name, sc->name);
	NFSL_STEER_COUNTERS(NFSL_X_JSON)
#undef NFSL_X_JSON
	jsonw_end_object(&w);
	jsonw_end_object(&w); /* ends the line */
	fflush(stdout);
}

static void report_text(struct nf_report *r, const struct nfsl_xsk_wstats *tot,
			const struct nfsl_steer_counters *sc)
{
	struct nfsl_xsk *x = r->x;

	printf("%s%.1f s  %s %s, %d workers%s%s\n", r->final ? "final " : "", r->elapsed_s,
	       r->chain, nfsl_xsk_rx_name(r->o->rx), nfsl_xsk_nworkers(x),
	       r->o->name ? ", domain " : "", r->o->name ? r->o->name : "");
	printf("  worker        rx        tx     drops   tx_full   spliced  stale+big  released   notices\n");
	for (int i = 0; i <= nfsl_xsk_nworkers(x); i++) {
		const struct nfsl_xsk_wstats *s =
			i < nfsl_xsk_nworkers(x) ? nfsl_xsk_worker_stats(nfsl_xsk_worker(x, i))
						 : tot;
		char name[16];

		snprintf(name, sizeof(name), i < nfsl_xsk_nworkers(x) ? "%d" : "total", i);
		printf("  %-6s %9llu %9llu %9llu %9llu %9llu %10llu %9llu %9llu\n", name,
		       (unsigned long long)s->rx, (unsigned long long)s->tx,
		       (unsigned long long)s->drops, (unsigned long long)s->tx_full,
		       (unsigned long long)s->spliced,
		       (unsigned long long)(s->stale + s->too_big + s->no_room),
		       (unsigned long long)s->released, (unsigned long long)s->notices);
	}
	printf("  working set (frames): posted %llu, in circulation %llu, written in %llu ms %llu, "
	       "pool %llu (peaks %llu / %llu / %llu)\n",
	       (unsigned long long)r->ws.posted, (unsigned long long)r->ws.inflight,
	       (unsigned long long)(r->ws.window_ns / 1000000), (unsigned long long)r->ws.written,
	       (unsigned long long)r->ws.pool, (unsigned long long)r->peak_posted,
	       (unsigned long long)r->peak_inflight, (unsigned long long)r->peak_written);
	printf("  kernel: rx_dropped %llu, rx_ring_full %llu, rx_fill_empty %llu; steered %llu, "
	       "to kernel %llu\n",
	       (unsigned long long)r->ks.rx_dropped, (unsigned long long)r->ks.rx_ring_full,
	       (unsigned long long)r->ks.rx_fill_empty, (unsigned long long)sc->steered,
	       (unsigned long long)(sc->no_group + sc->not_ip + sc->no_sock + sc->multibuf));
	for (int k = 0; k < r->nfs->n; k++) {
		const char *names[NF_MAX_COUNTERS];
		__u64 vals[NF_MAX_COUNTERS];
		unsigned int n = nf_counters(r, k, names, vals);

		if (!n)
			continue;
		printf("  %s:", r->nfs->ops[k]->name);
		for (unsigned int i = 0; i < n; i++)
			printf("%s %s %llu", i ? "," : "", names[i], (unsigned long long)vals[i]);
		printf("\n");
	}
	fflush(stdout);
}

void nf_report(struct nf_report *r)
{
	struct nfsl_steer_counters sc;
	struct nfsl_xsk_wstats tot;

	nf_report_sample(r);
	sum(r->x, &tot);
	nfsl_xsk_steer_stats(r->x, &sc);
	if (r->o->json)
		report_json(r, &tot, &sc);
	else
		report_text(r, &tot, &sc);
}
