// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice-bench-datapath: per-packet cost of the slicer and the splicer
 * under BPF_PROG_TEST_RUN next to bare baselines (bench/datapath.h). This
 * file: the programs measured and the order of the steps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "datapath.h"
#include "util/log.h"
#include "util/util.h"

#include "slicer.skel.h"
#include "slicer_nofib.skel.h"
#include "slicer_coarse.skel.h"
#include "slicer_nolog.skel.h"
#include "slicer_replay63.skel.h"
#include "splicer_nores.skel.h"
#include "splicer.skel.h"
#include "bench_xdp.skel.h"
#include "bench_tc.skel.h"

const struct bench_desc benches[B_NR] = {
	[B_XDP_EMPTY] = {"xdp-empty", HOOK_XDP, 0, -1, -1, 0, B_LIVE_EMPTY},
	[B_XDP_PARSE] = {"xdp-parse", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, B_LIVE_PARSE},
	[B_XDP_ROUTE] = {"xdp-route", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, -1},
	[B_XDP_CALL] = {"xdp-call", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, -1},
	[B_XDP_CLOCK] = {"xdp-clock", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, -1},
	[B_XDP_CLOCK_COARSE] = {"xdp-clock-coarse", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, -1},
	[B_XDP_COPY] = {"xdp-copy", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, B_LIVE_COPY},
	[B_XDP_COPY_NOFENCE] = {"xdp-copy-nofence", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, -1},
	[B_XDP_COPY_WARM] = {"xdp-copy-warm", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, -1},
	[B_XDP_COPY_COLD] = {"xdp-copy-cold", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, -1},
	/* The slicers against the bare copy into the FIFO store's next slot:
	 * the reference of issue #7 §5 (target 1.3x); xdp-copy is the copy
	 * into the slot the hot slicer takes (docs/benchmarks.md). */
	[B_SLICER] = {"slicer", HOOK_XDP, 0, B_XDP_EMPTY, B_XDP_COPY_COLD, 1.3, B_LIVE_SLICER},
	[B_SLICER_NOFIB] = {"slicer-nofib", HOOK_XDP, 0, B_XDP_EMPTY, B_XDP_COPY_COLD, 0, -1},
	/* The route verdict cache (issue 19 item 2): see comparisons. */
	[B_SLICER_NOCACHE] = {"slicer-nocache", HOOK_XDP, 0, B_XDP_EMPTY, B_XDP_COPY_COLD, 0, -1},
	[B_SLICER_COLD] = {"slicer-cold", HOOK_XDP, 0, B_XDP_EMPTY, B_XDP_COPY_COLD, 0, -1},
	/* The parking clock and the park log (issue 10 §2): see comparisons. */
	[B_SLICER_COARSE] = {"slicer-coarse", HOOK_XDP, 0, B_XDP_EMPTY, B_XDP_COPY_COLD, 0, -1},
	[B_SLICER_NOLOG] = {"slicer-nolog", HOOK_XDP, 0, B_XDP_EMPTY, B_XDP_COPY_COLD, 0, -1},
	[B_SLICER_TENANTS] = {"slicer-tenants", HOOK_XDP, 0, B_XDP_EMPTY, B_XDP_COPY_COLD, 0, -1},
	/* Drop events (issue 10 §4): see comparisons. */
	[B_SLICER_SKIP] = {"slicer-skip", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, -1},
	[B_SLICER_SKIP_EV] = {"slicer-skip-events", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, -1},
	/* The replay check at any DSCP (issue 17 §1.1): see comparisons. */
	[B_SLICER_REPLAY63] = {"slicer-replay63", HOOK_XDP, 0, B_XDP_EMPTY, B_XDP_COPY_COLD, 0, -1},
	[B_TC_EMPTY] = {"tc-empty", HOOK_TC, 0, -1, -1, 0, -1},
	[B_TC_PARSE] = {"tc-parse", HOOK_TC, 0, B_TC_EMPTY, -1, 0, -1},
	[B_TC_STORE] = {"tc-store", HOOK_TC, BF_SLICED, B_TC_EMPTY, -1, 0, -1},
	/* The splicers against a bare grow and copy back (issue 19: 1.3x). */
	[B_SPLICER] = {"splicer", HOOK_TC, 0, B_TC_EMPTY, B_TC_STORE, 1.3, -1},
	[B_SPLICER_NORES] = {"splicer-nores", HOOK_TC, 0, B_TC_EMPTY, B_TC_STORE, 0, -1},
	[B_SPLICER_EV] = {"splicer-events", HOOK_TC, 0, B_TC_EMPTY, B_TC_STORE, 0, -1},
	[B_TC_STORE_LAG] = {"tc-store-lag", HOOK_TC, BF_SLICED | BF_LAG, B_TC_EMPTY, -1, 0, -1},
	[B_SPLICER_LAG] = {"splicer-lag", HOOK_TC, BF_SLICED | BF_LAG, B_TC_EMPTY, B_TC_STORE_LAG,
			   1.3, -1},
	/* The splicer on an unsliced frame whose last 16 bytes are random,
	 * new each packet: what ordinary traffic pays (issue 19 §3: at most
	 * 30 ns over tc-empty). */
	[B_SPLICER_FOREIGN] = {"splicer-foreign", HOOK_TC, 0, B_TC_EMPTY, -1, 0, -1},
	/* The netfilter guard at FORWARD (issue 19 §1), bench/datapath_guard.c. */
	[B_NF_EMPTY] = {"nf-empty", HOOK_NF, 0, -1, -1, 0, -1},
	[B_GUARD_FWD] = {"guard-fwd", HOOK_NF, 0, B_NF_EMPTY, -1, 0, -1},
	[B_GUARD_FWD_DOMAIN] = {"guard-fwd-domain", HOOK_NF, 0, B_NF_EMPTY, -1, 0, -1},
	[B_LIVE_EMPTY] = {"live-xdp-empty", HOOK_XDP, BF_LIVE, -1, -1, 0, -1},
	[B_LIVE_PARSE] = {"live-xdp-parse", HOOK_XDP, BF_LIVE, B_LIVE_EMPTY, -1, 0, -1},
	[B_LIVE_COPY] = {"live-xdp-copy", HOOK_XDP, BF_LIVE, B_LIVE_EMPTY, -1, 0, -1},
	[B_LIVE_SLICER] = {"live-slicer", HOOK_XDP, BF_LIVE, B_LIVE_EMPTY, B_LIVE_COPY, 0, -1},
};

/* What the precise clock and the park log cost the slicer per packet. */
const struct comparison comparisons[] = {
	{ B_XDP_CLOCK, B_XDP_CLOCK_COARSE, "precise clock alone" },
	{ B_SLICER, B_SLICER_COARSE, "precise clock + park log" },
	{ B_SLICER_NOLOG, B_SLICER_COARSE, "precise clock" },
	{ B_SLICER, B_SLICER_NOLOG, "park log" },
	{ B_SPLICER, B_SPLICER_NORES, "residency histogram" },
	{ B_SLICER_TENANTS, B_SLICER, "tenants (prefix rule)" },
	{ B_SLICER_SKIP_EV, B_SLICER_SKIP, "drop event written (route skip)" },
	{ B_SPLICER_EV, B_SPLICER, "drop events on, none written" },
	{ B_SLICER, B_SLICER_REPLAY63, "replay check at any DSCP" },
	{ B_SLICER_NOCACHE, B_SLICER, "route lookup over a cache hit" },
};
const unsigned int ncomparisons = sizeof(comparisons) / sizeof(comparisons[0]);

static int pin_cpu(struct opts *o)
{
	int err;

	if (o->cpu < 0)
		o->cpu = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	err = nfsl_pin_cpu(o->cpu);
	if (err) {
		pr_err("cannot pin to CPU %d: %s", o->cpu, strerror(-err));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench b = {.stats_fd = -1};
	unsigned int i, k;
	int ret = 1;

	if (dp_parse_opts(&b.o, argc, argv))
		return 2;
	if (!isatty(STDERR_FILENO))
		b.o.quiet = true;
	if (geteuid()) {
		pr_err("needs root (BPF_PROG_TEST_RUN, bpf_enable_stats)");
		return 1;
	}
	nfsl_log_init(NFSL_LOG_WARN);
	if (pin_cpu(&b.o))
		goto out;
	/* A namespace of the driver's own: its veths are the domain, and the
	 * live-frames packets the programs pass to the stack stay in it. */
	if (unshare(CLONE_NEWNET)) {
		pr_err("cannot create a network namespace: %s", strerror(errno));
		goto out;
	}
	if (dp_setup_netns(&b))
		goto out;
	if (dp_setup_domain(&b) || dp_setup_guards(&b))
		goto out;
	if (b.o.lag >= b.cfg.part_slots) {
		pr_err("--lag %u must be below the partition size %u", b.o.lag, b.cfg.part_slots);
		goto out;
	}
	if (b.o.live && b.o.live_repeat > b.cfg.part_slots) {
		pr_err("--live-repeat %u must not exceed the partition size %u", b.o.live_repeat,
		       b.cfg.part_slots);
		goto out;
	}
	b.ring = calloc(b.o.lag ? b.o.lag : 1, sizeof(*b.ring));
	if (!b.ring)
		goto out;
	b.stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (b.stats_fd < 0) {
		pr_err("cannot enable BPF run-time statistics: %s", strerror(errno));
		goto out;
	}
	if (dp_setup_cases(&b))
		goto out;
	if (b.o.calls) {
		ret = dp_calls(&b) ? 1 : 0;
		goto out;
	}
	if (dp_read_counters(&b, &b.cnt0))
		goto out;
	if (dp_run_all(&b))
		goto out;
	dp_finish_bias(&b);
	if (dp_read_counters(&b, &b.cnt1))
		goto out;
	if (b.cnt1.skipped_full != b.cnt0.skipped_full || b.cnt1.stale != b.cnt0.stale ||
	    b.cnt1.evicted != b.cnt0.evicted || b.cnt1.bad_token != b.cnt0.bad_token) {
		pr_err("unexpected datapath counters: skipped_full %llu, stale %llu, "
		       "evicted %llu, bad_token %llu",
		       (unsigned long long)(b.cnt1.skipped_full - b.cnt0.skipped_full),
		       (unsigned long long)(b.cnt1.stale - b.cnt0.stale),
		       (unsigned long long)(b.cnt1.evicted - b.cnt0.evicted),
		       (unsigned long long)(b.cnt1.bad_token - b.cnt0.bad_token));
		goto out;
	}
	dp_print_table(&b);
	if (b.o.json && dp_write_json(&b, b.o.json))
		goto out;
	if (b.o.csv && dp_write_csv(&b, b.o.csv))
		goto out;
	ret = 0;
out:
	if (b.stats_fd >= 0)
		close(b.stats_fd);
	if (b.store)
		munmap(b.store, b.store_len);
	if (b.cases) {
		for (i = 0; i < b.ncases; i++) {
			for (k = 0; k < B_NR; k++) {
				free(b.cases[i].raw[k]);
				free(b.cases[i].dur[k]);
			}
		}
		free(b.cases);
	}
	free(b.ring);
	bench_xdp_bpf__destroy(b.bxc);
	bench_xdp_bpf__destroy(b.bx);
	bench_tc_bpf__destroy(b.bt);
	dp_destroy_guards(&b);
	splicer_bpf__destroy(b.sp);
	slicer_nofib_bpf__destroy(b.sn);
	slicer_nolog_bpf__destroy(b.snl);
	splicer_nores_bpf__destroy(b.spn);
	slicer_coarse_bpf__destroy(b.sco);
	slicer_replay63_bpf__destroy(b.srp);
	slicer_bpf__destroy(b.slc);
	slicer_bpf__destroy(b.slt);
	slicer_bpf__destroy(b.snc);
	ring_buffer__free(b.evrb);
	slicer_bpf__destroy(b.sks);
	slicer_bpf__destroy(b.sl);
	return ret;
}
