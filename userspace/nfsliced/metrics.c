// SPDX-License-Identifier: GPL-2.0
/*
 * nfsliced's metrics: the Prometheus text exposition format (version
 * 0.0.4) on http://127.0.0.1:PORT/metrics, served by libmicrohttpd's own
 * thread. Each scrape reads the pins afresh, so what it shows is what
 * `nfslice stats` shows at that moment: every datapath counter, the store
 * occupancy and the configuration of every domain on the host, labelled
 * with its network namespace (the name it has under /run/netns, "" when
 * none, and its cookie) and the domain's name (docs/manager.md "Metrics").
 * Prometheus' conventions (prometheus.io/docs/practices/naming): base
 * units (seconds, bytes) in the name, counters ending in _total.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <microhttpd.h>

#include "nfsliced.h"
#include "nfsl/domains.h"
#include "nfsl/residency.h"
#include "nfsl/tenant.h"

static struct MHD_Daemon *httpd;

atomic_ulong mgr_requests, mgr_gc_removed, mgr_scrapes;

/* A growing text buffer. */
struct text {
	char *s;
	size_t len, cap;
	bool oom;
};

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		if (t->oom)
			return;
		va_start(ap, fmt);
		n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < t->cap - t->len) {
			t->len += n;
			return;
		}
		t->cap = t->cap ? 2 * t->cap : 65536;
		t->s = realloc(t->s, t->cap);
		t->oom = !t->s;
	}
}

/* One metric family's header. */
static void family(struct text *t, const char *name, const char *type, const char *help)
{
	put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The per-domain samples of every family, family by family (the format
 * wants one family's samples together). */
struct dom {
	struct nfsl_dom_entry e;
	char netns[2 * NAME_MAX + 1]; /* its name under /run/netns, escaped; "" none */
	struct nfsl_domain d;
	struct nfsl_counters c;
	struct nfsl_mgr_counters m;
	__u32 busy;
	bool ok;
	struct nfsl_tenant_state ts[NFSL_MAX_TENANTS];
	bool tenants; /* ts read: the domain has tenants */
};

#define LABELS "{netns=\"%s\",netns_cookie=\"%llu\",domain=\"%s\"}"
#define LABEL_ARGS(x) (x)->netns, (unsigned long long)(x)->e.cookie, (x)->e.name

/* The name under /run/netns of the namespace of the domain at @dir, into
 * @out as a label value (backslash, quote and newline escaped), or "":
 * the domain's namespace probe gives its nsfs inode, which stat(2) of the
 * bound name shows too. */
static void netns_name(const char *dir, char *out, size_t len)
{
	char path[PATH_MAX];
	struct dirent *f;
	struct stat st;
	__u64 ino = 0;
	DIR *d;

	out[0] = '\0';
	if (nfsl_netns_probe(dir, &ino) != 1 || !ino)
		return;
	d = opendir("/run/netns");
	if (!d)
		return;
	while ((f = readdir(d))) {
		size_t k = 0;

		if (f->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/run/netns/%s", f->d_name);
		if (stat(path, &st) || st.st_ino != ino)
			continue;
		for (const char *c = f->d_name; *c && k + 2 < len; c++) {
			if (*c == '\\' || *c == '"' || *c == '\n')
				out[k++] = '\\';
			out[k++] = *c == '\n' ? 'n' : *c;
		}
		out[k] = '\0';
		break;
	}
	closedir(d);
}

static void gauge_u32(struct text *t, struct dom *v, size_t n, const char *name,
		      const char *help, size_t off)
{
	family(t, name, "gauge", help);
	for (size_t i = 0; i < n; i++)
		if (v[i].ok)
			put(t, "%s" LABELS " %u\n", name, LABEL_ARGS(&v[i]),
			    *(const __u32 *)((const char *)&v[i].d.cfg + off));
}

/* A counter family per name of @names (@count), each domain's value the
 * k-th __u64 at @off in its struct dom. */
static void counter_families(struct text *t, struct dom *v, size_t n, const char *const *names,
			     size_t count, size_t off, const char *help)
{
	for (size_t k = 0; k < count; k++) {
		char name[96];

		snprintf(name, sizeof(name), "nfslice_%s_total", names[k]);
		family(t, name, "counter", help);
		for (size_t i = 0; i < n; i++)
			if (v[i].ok)
				put(t, "%s" LABELS " %llu\n", name, LABEL_ARGS(&v[i]),
				    (unsigned long long)((const __u64 *)((const char *)&v[i] +
									 off))[k]);
	}
}

#define TLABELS "{netns=\"%s\",netns_cookie=\"%llu\",domain=\"%s\",tenant=\"%s\"}"

/* Per tenant: occupancy, quota, counters (issue 10 §4, §5). */
static void tenant_families(struct text *t, struct dom *v, size_t n)
{
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
		{ "nfslice_tenant_slots_busy", "gauge", "store slots holding the tenant's payloads" },
		{ "nfslice_tenant_quota_slots", "gauge",
		  "the tenant's quota: slots of its region in all partitions" },
		{ "nfslice_tenant_weight", "gauge", "the tenant's weight in dynamic mode" },
#define X(f) { "nfslice_tenant_" #f "_total", "counter", "tenant counter " #f },
		NFSL_TENANT_COUNTERS(X)
#undef X
	};

	for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		family(t, fam[k].name, fam[k].type, fam[k].help);
		for (size_t i = 0; i < n; i++) {
			const struct nfsl_config *c = &v[i].d.cfg;
			__u32 parts = c->ncpus * (c->nparts ? c->nparts : 1);

			for (__u32 tn = 0; v[i].tenants && tn < c->ntenants; tn++) {
				const struct nfsl_tenant_state *s = &v[i].ts[tn];
				const __u64 *cnt = (const __u64 *)&s->cnt;
				unsigned long long x = k == 0 ? s->busy :
						       k == 1 ? (__u64)c->tenants[tn].size * parts :
						       k == 2 ? c->tenants[tn].weight : cnt[k - 3];

				put(t, "%s" TLABELS " %llu\n", fam[k].name, LABEL_ARGS(&v[i]),
				    c->tenants[tn].name, x);
			}
		}
	}
}

/* The domains on the host, each opened with its counters read (ok) and
 * its tenants when it has some; *@e the entries they point into. Returns
 * the array (free it and *@e) or NULL when out of memory. */
static struct dom *domains_read(struct nfsl_dom_entry **e, size_t *n)
{
	struct dom *v;

	if (nfsl_domains_collect(e, n))
		*n = 0;
	v = calloc(*n ? *n : 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < *n; i++) {
		v[i].e = (*e)[i];
		netns_name((*e)[i].dir, v[i].netns, sizeof(v[i].netns));
		v[i].ok = !nfsl_domain_open_dir(&v[i].d, (*e)[i].dir) &&
			  !nfsl_domain_counters(&v[i].d, &v[i].c) &&
			  !nfsl_domain_mgr_counters(&v[i].d, &v[i].m) &&
			  !nfsl_domain_busy_slots(&v[i].d, &v[i].busy);
		v[i].tenants = v[i].ok && v[i].d.cfg.ntenants &&
			       !nfsl_tenants_read(&v[i].d, v[i].ts, NULL, NULL, NULL);
	}
	return v;
}

/* nfslice_residency_seconds: each domain's histogram, in seconds. */
static void residency_family(struct text *t, const struct dom *v, size_t n)
{
	/* Base units: seconds (the splicer records microseconds). */
	family(t, "nfslice_residency_seconds", "histogram",
	       "slice to splice time of spliced payloads, seconds; the splicer records one "
	       "splice in 8 (each CPU's every 8th)");
	for (size_t i = 0; i < n; i++) {
		struct nfsl_residency h;
		__u64 cum = 0;

		if (!v[i].ok || nfsl_domain_residency(v[i].e.dir, &h))
			continue;
		for (unsigned int b = 0; b < NFSL_RES_BUCKETS - 1; b++) {
			cum += h.bucket[b];
			put(t, "nfslice_residency_seconds_bucket{netns=\"%s\",netns_cookie=\"%llu\","
			    "domain=\"%s\",le=\"%.6f\"} %llu\n", LABEL_ARGS(&v[i]),
			    nfsl_residency_le(b) / 1e6, (unsigned long long)cum);
		}
		cum += h.bucket[NFSL_RES_BUCKETS - 1];
		put(t, "nfslice_residency_seconds_bucket{netns=\"%s\",netns_cookie=\"%llu\","
		    "domain=\"%s\",le=\"+Inf\"} %llu\n", LABEL_ARGS(&v[i]), (unsigned long long)cum);
		put(t, "nfslice_residency_seconds_sum" LABELS " %.6f\n", LABEL_ARGS(&v[i]),
		    h.sum_us / 1e6);
		put(t, "nfslice_residency_seconds_count" LABELS " %llu\n", LABEL_ARGS(&v[i]),
		    (unsigned long long)cum);
	}
}

/* The store and configuration gauges of each domain. */
static void config_families(struct text *t, struct dom *v, size_t n)
{
	family(t, "nfslice_slots_busy", "gauge", "store slots holding a parked payload now");
	for (size_t i = 0; i < n; i++)
		if (v[i].ok)
			put(t, "nfslice_slots_busy" LABELS " %u\n", LABEL_ARGS(&v[i]), v[i].busy);
	gauge_u32(t, v, n, "nfslice_slots", "store slots of 2 KiB in use",
		  offsetof(struct nfsl_config, slots));
	gauge_u32(t, v, n, "nfslice_threshold_bytes", "smallest frame sliced, bytes",
		  offsetof(struct nfsl_config, threshold));
	gauge_u32(t, v, n, "nfslice_keep_bytes", "payload bytes left in a sliced packet",
		  offsetof(struct nfsl_config, keep));
	gauge_u32(t, v, n, "nfslice_expiry_turns",
		  "allocator wrap-arounds a busy slot survives (PayloadPark Alg. 1)",
		  offsetof(struct nfsl_config, expiry));
	family(t, "nfslice_ttl_seconds", "gauge", "TTL of a parked payload, seconds; 0 off");
	for (size_t i = 0; i < n; i++)
		if (v[i].ok)
			put(t, "nfslice_ttl_seconds" LABELS " %.6f\n", LABEL_ARGS(&v[i]),
			    v[i].d.cfg.ttl_us / 1e6);
	gauge_u32(t, v, n, "nfslice_config_generation",
		  "configuration generation, bumped by every runtime change",
		  offsetof(struct nfsl_config, cfg_gen));
}

/* What the daemon counts of itself. */
static void daemon_families(struct text *t)
{
	family(t, "nfsliced_requests_total", "counter", "control requests answered");
	put(t, "nfsliced_requests_total %lu\n", atomic_load(&mgr_requests));
	family(t, "nfsliced_gc_removed_total", "counter",
	       "domains of gone network namespaces removed");
	put(t, "nfsliced_gc_removed_total %lu\n", atomic_load(&mgr_gc_removed));
	family(t, "nfsliced_ttl_scans_total", "counter", "TTL scans of a domain's park log");
	put(t, "nfsliced_ttl_scans_total %lu\n", atomic_load(&mgr_ttl_scans));
	family(t, "nfsliced_ttl_evicted_total", "counter",
	       "payloads evicted for parking longer than their domain's TTL");
	put(t, "nfsliced_ttl_evicted_total %lu\n", atomic_load(&mgr_ttl_evicted));
	family(t, "nfsliced_tenant_moves_total", "counter",
	       "dynamic tenant quota changes written (all domains)");
	put(t, "nfsliced_tenant_moves_total %lu\n", atomic_load(&mgr_tenant_moves));
	family(t, "nfsliced_scrapes_total", "counter", "metrics scrapes served");
	put(t, "nfsliced_scrapes_total %lu\n", atomic_fetch_add(&mgr_scrapes, 1) + 1);
}

static void render(struct text *t)
{
	struct nfsl_dom_entry *e = NULL;
	struct dom *v;
	size_t n;

	v = domains_read(&e, &n);
	if (!v) {
		t->oom = true;
		free(e);
		return;
	}
	counter_families(t, v, n, nfsl_counter_names, NFSL_NR_COUNTERS,
			 offsetof(struct dom, c),
			 "nfslice datapath counter, summed over CPUs (docs/format.md \"Counters\")");
	counter_families(t, v, n, nfsl_mgr_counter_names, NFSL_NR_MGR_COUNTERS,
			 offsetof(struct dom, m),
			 "evictions user space made: the TTL scan (docs/format.md \"Counters\")");
	residency_family(t, v, n);
	config_families(t, v, n);
	tenant_families(t, v, n);
	family(t, "nfslice_domain_readable", "gauge",
	       "1 when the domain's pins could be read for this scrape");
	for (size_t i = 0; i < n; i++)
		put(t, "nfslice_domain_readable" LABELS " %d\n", LABEL_ARGS(&v[i]), v[i].ok);
	daemon_families(t);
	for (size_t i = 0; i < n; i++)
		nfsl_domain_close(&v[i].d);
	free(v);
	free(e);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *data,
			      size_t *size, void **state)
{
	struct MHD_Response *r;
	struct text t = {};
	enum MHD_Result ret;
	unsigned int code = MHD_HTTP_OK;

	if (strcmp(method, "GET")) {
		put(&t, "only GET /metrics\n");
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics")) {
		put(&t, "nfsliced serves /metrics only\n");
		code = MHD_HTTP_NOT_FOUND;
	} else {
		render(&t);
	}
	if (t.oom)
		return MHD_NO;
	r = MHD_create_response_from_buffer(t.len, t.s, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(t.s);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type",
				code == MHD_HTTP_OK ? "text/plain; version=0.0.4" : "text/plain");
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

int mgr_metrics_start(unsigned int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, port, NULL, NULL, answer, NULL,
				 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
				 MHD_OPTION_CONNECTION_LIMIT, 16U, MHD_OPTION_CONNECTION_TIMEOUT,
				 10U, MHD_OPTION_END);
	return httpd ? 0 : -EADDRINUSE;
}

void mgr_metrics_stop(void)
{
	if (httpd)
		MHD_stop_daemon(httpd);
	httpd = NULL;
}
