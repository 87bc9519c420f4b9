// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice-bench-ttl - what one TTL scan (userspace/lib/nfsl/ttl.h, issue 10 §2)
 * costs per N slots (default 65536), through nfsl_ttl_open and
 * nfsl_ttl_scan as nfsliced calls them, on maps made as nfslice attach
 * makes a domain's (mmapable BPF arrays for the store, park log and
 * mgr_counters; the config; the per-CPU cursors), one allocation
 * partition per possible CPU:
 *   expired-busy     every entry older than the TTL, its payload still
 *                    parked: the scan evicts them all
 *   expired-spliced  every entry older than the TTL, its payload spliced
 *                    long ago: the scan reads each entry and its slot's
 *                    control word, evicts nothing (what a scan of a domain
 *                    under traffic mostly meets)
 *   young            every entry younger than the TTL: the scan stops at
 *                    each partition's first entry
 * Each rep fills the store, the log and the cursors (not timed), opens a
 * fresh scanner, which starts at the oldest entry each log holds, and
 * times one scan; "cold" first evicts store and log from the caches
 * (clflush), as the slots of payloads parked a TTL ago mostly are. Output:
 * median [p25 .. p75] ns per scan and per entry read; --json for a JSON
 * object.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsl/domain.h"
#include "util/json_writer.h"
#include "nfsl_store.h"
#include "nfsl/ttl.h"
#include "util/util.h"

#define TTL_US 10000
#define MAX_REPS 1001

enum kind { EXPIRED_BUSY, EXPIRED_SPLICED, YOUNG, NKINDS };
static const char *const kind_name[] = { "expired-busy", "expired-spliced", "young" };

struct bench {
	struct nfsl_domain d;
	struct nfsl_slot *store;
	struct nfsl_park_rec *log;
	size_t store_len, log_len;
	__u32 slots, part, ncpus;
	__u32 gen;
};

static int array(const char *name, __u32 vsize, __u32 n, bool mmapable)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = mmapable ? BPF_F_MMAPABLE : 0);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, name, 4, vsize, n, &o);

	if (fd < 0)
		fprintf(stderr, "nfslice-bench-ttl: cannot create map %s (%u x %u B): %s\n", name,
			n, vsize, strerror(errno));
	return fd;
}

/* The domain's maps, as attach makes them, with @slots slots. */
static int setup(struct bench *b, __u32 slots)
{
	struct nfsl_config *c = &b->d.cfg;
	__u32 zero = 0;
	int possible = libbpf_num_possible_cpus();

	if (possible <= 0 || possible > NFSL_MAX_CPUS)
		return -1;
	b->ncpus = possible;
	b->part = slots / b->ncpus;
	b->slots = b->part * b->ncpus;
	memset(c, 0, sizeof(*c));
	c->slots = b->slots;
	c->part_slots = b->part;
	c->ncpus = b->ncpus;
	c->nparts = 1;
	c->expiry = NFSL_DEF_EXPIRY;
	c->ttl_us = TTL_US;
	b->d.store_fd = array("nfsl_store", sizeof(struct nfsl_slot), b->slots, true);
	b->d.parklog_fd = array("nfsl_parklog", sizeof(struct nfsl_park_rec), b->slots, true);
	b->d.mgr_fd = array("nfsl_mgr_cnt", sizeof(struct nfsl_mgr_counters), 1, true);
	b->d.config_fd = array("nfsl_config", sizeof(*c), 1, false);
	b->d.cursor_fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "nfsl_cursor", 4,
					sizeof(struct nfsl_alloc), NFSL_MAX_PARTS, NULL);
	b->d.counters_fd = -1;
	if (b->d.store_fd < 0 || b->d.parklog_fd < 0 || b->d.mgr_fd < 0 || b->d.config_fd < 0 ||
	    b->d.cursor_fd < 0 || bpf_map_update_elem(b->d.config_fd, &zero, c, BPF_ANY))
		return -1;
	b->store_len = (size_t)b->slots * sizeof(*b->store);
	b->log_len = (size_t)b->slots * sizeof(*b->log);
	b->store = mmap(NULL, b->store_len, PROT_READ | PROT_WRITE, MAP_SHARED, b->d.store_fd, 0);
	b->log = mmap(NULL, b->log_len, PROT_READ | PROT_WRITE, MAP_SHARED, b->d.parklog_fd, 0);
	return b->store == MAP_FAILED || b->log == MAP_FAILED ? -1 : 0;
}

/*
 * Every partition parked part_slots payloads, one per attempt, at T0 + k
 * ns, in slots 0.. of the partition, as the slicer would have: slot
 * control words, parked times, log entries and the partitions' clocks.
 */
static int fill(struct bench *b, enum kind k, __u64 t0)
{
	size_t vsize = (sizeof(struct nfsl_alloc) + 7) & ~(size_t)7;
	char *cur = calloc(b->ncpus, vsize);
	__u32 zero = 0;
	int err = 0;

	if (!cur)
		return -ENOMEM;
	b->gen++;
	for (__u32 g = 0; g < b->ncpus; g++) {
		for (__u32 i = 0; i < b->part; i++) {
			__u32 idx = g * b->part + i, seq = i + 1;
			struct nfsl_slot *s = &b->store[idx];

			s->ctl = NFSL_CTL(b->gen, k == EXPIRED_SPLICED ? 0 : NFSL_DEF_EXPIRY);
			s->parked_ns = t0 + i;
			nfsl_park_log_write(&b->log[g * b->part + seq % b->part], seq, idx, b->gen,
					    t0 + i);
		}
		((struct nfsl_alloc *)(cur + g * vsize))->seq = b->part;
	}
	if (bpf_map_update_elem(b->d.cursor_fd, &zero, cur, BPF_ANY))
		err = -errno;
	free(cur);
	return err;
}

static void flush(const void *p, size_t len)
{
#if defined(__x86_64__) || defined(__i386__)
	for (const char *c = p, *end = c + len; c < end; c += 64)
		__builtin_ia32_clflush(c);
	__builtin_ia32_mfence();
#endif
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double q(double *v, unsigned int n, double at)
{
	double pos = at * (n - 1);
	unsigned int i = pos;

	return i + 1 < n ? v[i] + (v[i + 1] - v[i]) * (pos - i) : v[i];
}

struct result {
	double p25, med, p75; /* ns per scan */
	__u64 walked, evicted;
};

/* @reps scans of kind @k, caches flushed first when @cold. */
static int measure(struct bench *b, enum kind k, bool cold, unsigned int reps,
		   struct result *out)
{
	static double ns[MAX_REPS];
	struct nfsl_ttl_result r = { 0 };

	for (unsigned int i = 0; i < reps; i++) {
		__u64 t0 = nfsl_now_ns(), now, a, z;
		struct nfsl_ttl t;
		int err = fill(b, k, t0);

		if (!err)
			err = nfsl_ttl_open(&t, &b->d);
		if (err) {
			fprintf(stderr, "nfslice-bench-ttl: %s\n", strerror(-err));
			return err;
		}
		/* expired: every entry a TTL old; young: none */
		now = k == YOUNG ? t0 : t0 + b->part + TTL_US * 1000ull;
		if (cold) {
			flush(b->store, b->store_len);
			flush(b->log, b->log_len);
		}
		a = nfsl_now_ns();
		err = nfsl_ttl_scan(&t, now, &r);
		z = nfsl_now_ns();
		nfsl_ttl_close(&t);
		if (err) {
			fprintf(stderr, "nfslice-bench-ttl: scan: %s\n", strerror(-err));
			return err;
		}
		ns[i] = z - a;
	}
	qsort(ns, reps, sizeof(ns[0]), cmp);
	out->p25 = q(ns, reps, 0.25);
	out->med = q(ns, reps, 0.5);
	out->p75 = q(ns, reps, 0.75);
	out->walked = r.walked;
	out->evicted = r.evicted;
	return 0;
}

static unsigned long arg(const char *name, const char *v, unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long x = strtoul(v, &end, 10);

	if (*end || !*v || x < lo || x > hi) {
		fprintf(stderr, "nfslice-bench-ttl: %s: '%s' is not a number in %lu..%lu\n", name,
			v, lo, hi);
		exit(2);
	}
	return x;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: nfslice-bench-ttl [--slots N] [--reps N] [--cpu N] [--json]\n"
		   "What one TTL scan (userspace/lib/nfsl/ttl.h) costs on a domain of N slots (default\n"
		   "65536), one partition per possible CPU, TTL 10 ms: every entry expired and\n"
		   "its payload still parked (all evicted), every entry expired and its payload\n"
		   "spliced (none evicted), every entry young; caches warm and flushed (cold).\n"
		   "Median [p25 .. p75] over --reps scans (default 21), ns per scan and per\n"
		   "entry read. Needs root (BPF maps). Exit 0, 1 on a failure, 2 on bad usage.\n");
}

int main(int argc, char **argv)
{
	struct result res[NKINDS][2];
	unsigned int reps = 21, slots = 65536;
	struct bench b = { 0 };
	bool json = false;
	int cpu = -1, err;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--slots") && i + 1 < argc) {
			slots = arg("--slots", argv[++i], 64, NFSL_MAX_SLOTS);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = arg("--reps", argv[++i], 1, MAX_REPS);
		} else if (!strcmp(argv[i], "--cpu") && i + 1 < argc) {
			cpu = arg("--cpu", argv[++i], 0, NFSL_MAX_CPUS - 1);
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (cpu < 0)
		cpu = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	err = nfsl_pin_cpu(cpu);
	if (err) {
		fprintf(stderr, "nfslice-bench-ttl: cannot pin to CPU %d: %s\n", cpu,
			strerror(-err));
		return 1;
	}
	if (setup(&b, slots))
		return 1;
	for (int k = 0; k < NKINDS; k++)
		for (int cold = 0; cold < 2; cold++)
			if (measure(&b, k, cold, reps, &res[k][cold]))
				return 1;
	if (json) {
		struct json_writer w;

		jsonw_init(&w, stdout);
		jsonw_start_object(&w);
		jsonw_string_field(&w, "tool", "nfslice-bench-ttl");
		jsonw_uint_field(&w, "slots", b.slots);
		jsonw_uint_field(&w, "partitions", b.ncpus);
		jsonw_uint_field(&w, "ttl_us", TTL_US);
		jsonw_uint_field(&w, "reps", reps);
		jsonw_uint_field(&w, "cpu", cpu);
		jsonw_name(&w, "results");
		jsonw_start_array(&w);
		for (int k = 0; k < NKINDS; k++) {
			for (int cold = 0; cold < 2; cold++) {
				const struct result *r = &res[k][cold];

				jsonw_start_object(&w);
				jsonw_string_field(&w, "kind", kind_name[k]);
				jsonw_bool_field(&w, "cold", cold);
				jsonw_uint_field(&w, "walked", r->walked);
				jsonw_uint_field(&w, "evicted", r->evicted);
				jsonw_float_field_fmt(&w, "ns_median", "%.0f", r->med);
				jsonw_float_field_fmt(&w, "ns_p25", "%.0f", r->p25);
				jsonw_float_field_fmt(&w, "ns_p75", "%.0f", r->p75);
				jsonw_float_field_fmt(&w, "ns_per_entry", "%.2f",
						      r->walked ? r->med / r->walked : 0);
				jsonw_end_object(&w);
			}
		}
		jsonw_end_array(&w);
		jsonw_end_object(&w);
		return 0;
	}
	printf("TTL scan of %u slots (%u partitions of %u), TTL %u us, CPU %d, %u reps\n",
	       b.slots, b.ncpus, b.part, TTL_US, cpu, reps);
	printf("%-16s %-5s %8s %8s %14s %30s %12s\n", "kind", "cache", "walked", "evicted",
	       "us/scan", "[p25 .. p75]", "ns/entry");
	for (int k = 0; k < NKINDS; k++) {
		for (int cold = 0; cold < 2; cold++) {
			const struct result *r = &res[k][cold];

			printf("%-16s %-5s %8llu %8llu %14.1f [%12.1f .. %12.1f] %12.2f\n",
			       kind_name[k], cold ? "cold" : "warm", (unsigned long long)r->walked,
			       (unsigned long long)r->evicted, r->med / 1e3, r->p25 / 1e3,
			       r->p75 / 1e3, r->walked ? r->med / r->walked : 0);
		}
	}
	return 0;
}
