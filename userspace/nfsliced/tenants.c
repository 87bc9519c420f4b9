// SPDX-License-Identifier: GPL-2.0
/*
 * nfsliced's dynamic tenant quotas (issue 10 §5; userspace/lib/nfsl/tenant.h): every
 * --tenant-interval, for each domain whose tenants are in dynamic mode
 * (nfslice set --tenant-mode dynamic), the demand of each tenant in one
 * partition by Little's law (attempted slices x residency, measured over
 * the interval, on the CPU where it is highest), the quotas by weighted
 * max-min with the tenants' floors (SuperNIC §4.4 shares by DRF over
 * measured demand; with the store as the one resource that is weighted
 * max-min), written as one runtime change (lock, generation: a writer
 * that came first wins, and the next interval tries again) when a quota
 * moves by at least 1/NFSL_TENANT_STEP of a partition. PayloadPark §6.2.3
 * leaves this reallocation as future work; its static slices are the
 * static mode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsliced.h"
#include "nfsl/domains.h"
#include "nfsl/residency.h"
#include "nfsl/tenant.h"
#include "util/util.h"

/* Quotas move only by at least a partition / NFSL_TENANT_STEP slots: each
 * move strands payloads in slots that change tenant (freed by splice or
 * TTL), so small moves are not worth it. */
#define NFSL_TENANT_STEP 64
/* Residency assumed for a tenant that parked nothing in an interval, when
 * the domain's histogram has nothing either: 1 ms (docs/benchmarks-latency.md
 * measures tens of us idle, ms under an NF delay). */
#define NFSL_TENANT_W_DEFAULT_S 0.001

struct balancer {
	char dir[PATH_MAX];
	__u64 at_ns;    /* time of the sample below, 0: none yet */
	__u64 attempts[NFSL_MAX_CPUS * NFSL_MAX_TENANTS];
	__u64 sliced[NFSL_MAX_CPUS * NFSL_MAX_TENANTS];
	__u64 res_count, res_sum_us; /* residency histogram at the sample */
	bool seen;
};

/* Counts since the last sample; a domain attached again under the same
 * name starts from 0. */
static __u64 since(__u64 cur, __u64 prev)
{
	return cur >= prev ? cur - prev : cur;
}

static struct balancer *bal;
static size_t nbal;

atomic_ulong mgr_tenant_moves;

static struct balancer *balancer_of(const char *dir)
{
	struct balancer *grown;

	for (size_t i = 0; i < nbal; i++)
		if (!strcmp(bal[i].dir, dir))
			return &bal[i];
	grown = realloc(bal, (nbal + 1) * sizeof(*bal));
	if (!grown)
		return NULL;
	bal = grown;
	memset(&bal[nbal], 0, sizeof(*bal));
	snprintf(bal[nbal].dir, sizeof(bal[nbal].dir), "%s", dir);
	return &bal[nbal++];
}

/* Mean residency (s) of the payloads spliced since the last sample, from
 * the splicer's histogram; @b keeps the counts. 0: none spliced. */
static double mean_residency(struct balancer *b)
{
	struct nfsl_residency h;
	__u64 count = 0;
	double w = 0;

	if (nfsl_domain_residency(b->dir, &h))
		return 0;
	for (int i = 0; i < NFSL_RES_BUCKETS; i++)
		count += h.bucket[i];
	if (count > b->res_count)
		w = (double)(h.sum_us - b->res_sum_us) / (count - b->res_count) / 1e6;
	b->res_count = count;
	b->res_sum_us = h.sum_us;
	return w;
}

/* One domain: sample, and move its quotas when demand says so. */
static void balance(struct balancer *b, __u64 now)
{
	static __u64 att[NFSL_MAX_CPUS * NFSL_MAX_TENANTS], sl[NFSL_MAX_CPUS * NFSL_MAX_TENANTS];
	static __u32 busy[NFSL_MAX_CPUS * NFSL_MAX_TENANTS];
	struct nfsl_tenant_state st[NFSL_MAX_TENANTS];
	double demand[NFSL_MAX_TENANTS] = {}, dt, w_dom;
	__u32 weight[NFSL_MAX_TENANTS], min[NFSL_MAX_TENANTS], out[NFSL_MAX_TENANTS];
	const struct nfsl_config *cfg;
	struct nfsl_domain d;
	__u32 nparts, n, gen, step;
	bool move = false;
	char err[256];
	int ncpus = libbpf_num_possible_cpus(), rc;

	if (ncpus <= 0 || ncpus > NFSL_MAX_CPUS || nfsl_domain_open_dir(&d, b->dir))
		return;
	cfg = &d.cfg;
	n = cfg->ntenants;
	if (!n || !(cfg->tenant_flags & NFSL_TEN_DYNAMIC)) {
		b->at_ns = 0; /* static: start afresh when it turns dynamic */
		goto out;
	}
	memset(busy, 0, sizeof(busy));
	if (nfsl_tenants_read(&d, st, att, sl, busy))
		goto out;
	w_dom = mean_residency(b);
	if (!b->at_ns)
		goto keep;
	dt = (now - b->at_ns) / 1e9;
	nparts = cfg->nparts ? cfg->nparts : 1;
	for (__u32 t = 0; t < n; t++) {
		for (int c = 0; c < ncpus && c < (int)cfg->ncpus; c++) {
			__u32 k = c * NFSL_MAX_TENANTS + t;
			double l = nfsl_tenant_demand(since(att[k], b->attempts[k]),
						      since(sl[k], b->sliced[k]), busy[k], dt,
						      w_dom > 0 ? w_dom : NFSL_TENANT_W_DEFAULT_S);

			/* A CPU's share holds nparts partitions: demand per
			 * partition, on the CPU that needs the most. */
			if (l / nparts > demand[t])
				demand[t] = l / nparts;
		}
		weight[t] = cfg->tenants[t].weight ? cfg->tenants[t].weight : 1;
		min[t] = cfg->tenants[t].min;
	}
	if (nfsl_maxmin(n, demand, weight, min, cfg->part_slots, out)) {
		mgr_log(MGR_WARNING, "%s: tenant floors exceed a partition: quotas left as they are",
			b->dir);
		goto keep;
	}
	step = cfg->part_slots / NFSL_TENANT_STEP ? cfg->part_slots / NFSL_TENANT_STEP : 1;
	for (__u32 t = 1; t < n; t++)
		if ((out[t] > cfg->tenants[t].size ? out[t] - cfg->tenants[t].size
						   : cfg->tenants[t].size - out[t]) >= step)
			move = true;
	if (move) {
		gen = cfg->cfg_gen;
		rc = nfsl_tenants_resize(b->dir, out, -1, &gen, NULL, err, sizeof(err));
		if (rc && rc != -ESTALE)
			mgr_log(MGR_WARNING, "%s: moving tenant quotas: %s", b->dir, err);
		if (!rc) {
			atomic_fetch_add(&mgr_tenant_moves, 1);
			for (__u32 t = 0; t < n; t++)
				mgr_log(MGR_INFO, "%s: tenant %s: demand %.1f slots/partition, "
					"quota %u -> %u", b->dir, cfg->tenants[t].name, demand[t],
					cfg->tenants[t].size, out[t]);
		}
	}
keep:
	memcpy(b->attempts, att, sizeof(att));
	memcpy(b->sliced, sl, sizeof(sl));
	b->at_ns = now;
out:
	nfsl_domain_close(&d);
}

void mgr_tenants_tick(__u64 now)
{
	struct nfsl_dom_entry *v;
	size_t n;

	if (nfsl_domains_collect(&v, &n))
		return;
	for (size_t i = 0; i < nbal; i++)
		bal[i].seen = false;
	for (size_t k = 0; k < n; k++) {
		struct balancer *b = balancer_of(v[k].dir);

		if (b) {
			b->seen = true;
			balance(b, now);
		}
	}
	free(v);
	for (size_t i = 0; i < nbal;) {
		if (bal[i].seen) {
			i++;
			continue;
		}
		bal[i] = bal[--nbal];
	}
}

void mgr_tenants_stop(void)
{
	free(bal);
	bal = NULL;
	nbal = 0;
}
