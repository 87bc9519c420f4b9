/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nfslice-bench-datapath: per-packet cost of the slicer (XDP) and the
 * splicer (tc) under BPF_PROG_TEST_RUN, next to baselines that do only the
 * bare work (issue #2, docs/benchmarks.md):
 *
 *   xdp-empty     nothing: bias of the run-time statistics (XDP)
 *   xdp-parse     header parser only (nfsl_parse.h)
 *   xdp-route     header parser and the slicer's route check (nfsl_route.h:
 *                 bpf_fib_lookup), no slicing
 *   xdp-call      one call of a helper that does nothing (the price of a
 *                 call into the kernel and back)
 *   xdp-clock     one bpf_ktime_get_ns(): the slicer's parking clock
 *   xdp-clock-coarse  one bpf_ktime_get_coarse_ns(): the clock it replaced
 *   xdp-copy      bpf_xdp_load_bytes of the payload into the store slot the
 *                 slicer would take next (its per-CPU cursor, in the hot
 *                 window), no claim, then a locked add so its cache misses
 *                 count in its time
 *   xdp-copy-nofence  the same without the locked add
 *   xdp-copy-warm the same copy, always into one slot
 *   xdp-copy-cold the same copy with the cursor of slicer-cold: FIFO over
 *                 the whole partition, each slot last written a
 *                 partition's worth of packets earlier
 *   slicer        nfsl_slicer on a fresh packet
 *   slicer-nofib  the same slicer with its route check short-circuited
 *                 after the interface and MAC checks (bench/bpf/
 *                 slicer_nofib.bpf.c): no bpf_fib_lookup
 *   slicer-nocache the slicer with its route verdict cache off (attach
 *                 --route-cache off: a FIB lookup per packet), on its own
 *                 config and cursor; slicer has it on (a hit per packet
 *                 but one per 200 ms: the same flow throughout)
 *   slicer-cold   the slicer on its own cursor and config, window = the
 *                 whole partition (win_min = part_slots): the FIFO store
 *                 as it was before the hot window, on the same store
 *   slicer-coarse the slicer as before TTL eviction (issue 10 §2): the
 *                 coarse clock (a jiffy) for the parked time, no park log
 *                 (bench/bpf/slicer_coarse.bpf.c)
 *   splicer-nores the splicer without its residency histogram
 *                 (bench/bpf/splicer_nores.bpf.c)
 *   slicer-tenants the slicer in a domain with 3 tenants (issue 10 §5),
 *                 the packet's tenant by a destination-prefix rule (the
 *                 LPM lookup), on its own config and cursor
 *   slicer-replay63 the slicer with the replay check on DSCP-63 frames
 *                 only, as before issue 17 §1.1 (bench/bpf/
 *                 slicer_replay63.bpf.c): what checking every frame costs
 *   slicer-nolog  the slicer with the precise clock, no park log
 *                 (bench/bpf/slicer_nolog.bpf.c); the comparisons after
 *                 the table price the clock and the log (dp_compare)
 *   tc-empty      nothing: bias of the run-time statistics (tc)
 *   tc-parse      header parser only
 *   tc-store      bpf_skb_change_tail + bpf_skb_store_bytes of the parked
 *                 payload into a freshly sliced packet
 *   splicer       nfsl_splicer on a freshly sliced packet
 *   *-lag         the same two with LAG packets parked in between (the slot
 *                 has gone cold, as after an NF's latency)
 *
 * Method: every packet is one BPF_PROG_TEST_RUN with repeat=1, because the
 * slicer shrinks its packet and repeat does not reset it, and the splicer
 * needs a freshly sliced packet. The cost of a program is its run_time_ns /
 * run_cnt from the kernel's BPF statistics (bpf_enable_stats), minus the
 * same figure for an empty program of the same hook (the two clock reads
 * around every run; median over the rounds).
 * Programs run in blocks of ITERS packets, every block of every program once
 * per round in a shuffled order, so machine noise hits all alike; the
 * result is the median over the rounds. Cross-checks: the test_run duration
 * field (minus the empty program's), and for XDP programs live-frames runs
 * (BPF_F_TEST_XDP_LIVE_FRAMES), one batch of fresh pages per call.
 *
 * The domain maps are configured as `nfslice attach` does; the splicer and
 * the baselines reuse the slicer's maps (the cold pair: the store and the
 * counters only). The allocation state (window, cursor) of the slicer is
 * reset after a block that parks many payloads at once (lag, live frames),
 * as if its window had shrunk back, so other blocks find it as traffic
 * with few payloads in flight leaves it. The process pins itself to one
 * CPU and moves into a fresh network namespace of its own, where packets
 * enter on one veth of the domain and the FIB sends them out of another
 * (the slicer slices only what leaves through a domain interface), so
 * live-frames packets that the programs pass to the stack stay there.
 *
 * One file per job:
 *   datapath_main.c    the programs measured (benches[]), order of the steps
 *   datapath_opts.c    options and --help
 *   datapath_setup.c   the domain (objects, maps, config), the store
 *   datapath_cases.c   the packets, one per size and protocol, sliced or not
 *   datapath_run.c     test runs, blocks of one program, rounds
 *   datapath_stats.c   net cost, bias, quantiles, ratios to the baselines
 *   datapath_report.c  table, JSON and CSV
 */
#ifndef NFSL_BENCH_DATAPATH_H
#define NFSL_BENCH_DATAPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "util/cli.h"
#include "nfsl_structs.h"

#define DP_NAME "nfslice-bench-datapath"

#define MAX_SIZES 8
#define MAX_ROUNDS 1000
#define PKT_BUF 4096
#define SLICED_BUF 256
#define LIVE_BATCH 256 /* largest batch of a live-frames run */
#define DP_ROUTE_SLICE 0 /* NFSL_ROUTE_SLICE of bpf/nfsl_route.h */

enum hook { HOOK_XDP, HOOK_TC, HOOK_NF };

/* Destination MAC of the packets: the domain's ingress interface. */
static const __u8 bench_mac_in[6] = { 0x02, 0, 0, 0, 0, 0x02 };

enum bench_id {
	B_XDP_EMPTY,
	B_XDP_PARSE,
	B_XDP_ROUTE,
	B_XDP_CALL,
	B_XDP_CLOCK,
	B_XDP_CLOCK_COARSE,
	B_XDP_COPY,
	B_XDP_COPY_NOFENCE,
	B_XDP_COPY_WARM,
	B_XDP_COPY_COLD,
	B_SLICER,
	B_SLICER_NOFIB,
	B_SLICER_NOCACHE,
	B_SLICER_COLD,
	B_SLICER_COARSE,
	B_SLICER_NOLOG,
	B_SLICER_TENANTS,
	B_SLICER_SKIP,
	B_SLICER_SKIP_EV,
	B_SLICER_REPLAY63,
	B_TC_EMPTY,
	B_TC_PARSE,
	B_TC_STORE,
	B_SPLICER,
	B_SPLICER_NORES,
	B_SPLICER_EV,
	B_TC_STORE_LAG,
	B_SPLICER_LAG,
	B_SPLICER_FOREIGN,
	B_NF_EMPTY,
	B_GUARD_FWD,
	B_GUARD_FWD_DOMAIN,
	B_LIVE_EMPTY,
	B_LIVE_PARSE,
	B_LIVE_COPY,
	B_LIVE_SLICER,
	B_NR
};

#define BF_SLICED 0x1 /* needs a packet the slicer slices */
#define BF_LAG 0x2 /* splice LAG packets after slicing them */
#define BF_LIVE 0x4 /* live-frames cross-check of another bench */

struct bench_desc {
	const char *name;
	enum hook hook;
	unsigned int flags;
	int bias; /* bench whose cost is subtracted, -1: none (raw) */
	int baseline; /* bench the ratio is taken against, -1: none */
	double target; /* largest acceptable ratio, 0: none */
	int live; /* B_LIVE_* bench that cross-checks this one, -1: none */
};
extern const struct bench_desc benches[B_NR];


/* Skeletons (build/.output/NAME.skel.h). */
struct slicer_bpf;
struct slicer_nofib_bpf;
struct slicer_coarse_bpf;
struct slicer_nolog_bpf;
struct slicer_replay63_bpf;
struct splicer_nores_bpf;
struct splicer_bpf;
struct bench_xdp_bpf;
struct bench_tc_bpf;

struct opts {
	unsigned int rounds;
	unsigned int warmup;
	unsigned int iters;
	unsigned int live_repeat;
	unsigned int lag;
	int cpu;
	unsigned int nsizes;
	unsigned int sizes[MAX_SIZES];
	bool udp, tcp;
	bool live;
	bool flush; /* evict the store from the caches before each block */
	unsigned int win_min; /* config win_min of the (hot) slicer, 0: default */
	unsigned int nifaces; /* entries of the config's interface table, 2.. */
	bool v6; /* IPv6 packets, else IPv4 */
	bool sel[B_NR]; /* programs to measure (with their bias and baselines) */
	const char *json;
	const char *csv;
	bool quiet;
	bool calls; /* --calls: count the calls per packet, no timing */
};

/* One packet under test: a size and a protocol. */
struct bcase {
	unsigned int size;
	__u8 proto;
	bool v6;
	unsigned int payoff;
	bool sliced; /* the slicer slices it (size >= threshold) */
	__u8 pkt[PKT_BUF];
	__u8 tc_in[SLICED_BUF]; /* what tc-empty / tc-parse run on */
	unsigned int tc_in_len;
	/* per bench, per round: mean ns per run over the block (dur: from the
	 * test_run duration field, NAN for live frames) */
	double *raw[B_NR];
	double *dur[B_NR];
	/* per bias bench: median over the rounds of raw and duration */
	double bias_raw[B_NR], bias_dur[B_NR];
};

/* A sliced packet waiting for its splice. */
struct sliced {
	__u8 buf[SLICED_BUF];
	unsigned int len;
	__u32 slot, gen;
};

struct bench {
	struct opts o;
	struct slicer_bpf *sl;
	struct slicer_bpf *slc; /* slicer-cold: own config and cursor */
	struct slicer_bpf *slt; /* slicer-tenants: own config and cursor */
	struct slicer_bpf *snc; /* slicer-nocache: own config and cursor */
	struct slicer_bpf *sks; /* slicer-skip(-events): egress outside the
				 * domain, own config, cursor and events */
	struct ring_buffer *evrb; /* sks's drop events, drained per block */
	unsigned long long evn;   /* events drained */
	struct slicer_nofib_bpf *sn;
	struct slicer_coarse_bpf *sco; /* slicer-coarse */
	struct slicer_nolog_bpf *snl;  /* slicer-nolog */
	struct slicer_replay63_bpf *srp; /* slicer-replay63 */
	struct splicer_nores_bpf *spn; /* splicer-nores */
	struct splicer_bpf *sp;
	struct bench_xdp_bpf *bx;
	struct bench_xdp_bpf *bxc; /* xdp-copy-cold: on slicer-cold's maps */
	struct bench_tc_bpf *bt;
	struct bench_nf_bpf *bn;    /* nf-empty */
	struct guard_bpf *gd, *gdd; /* guard-fwd, guard-fwd-domain */
	struct nfsl_config cfg;
	struct nfsl_slot *store; /* mmap of nfsl_store */
	size_t store_len;
	int stats_fd;
	int ncpus;
	struct bcase *cases;
	unsigned int ncases;
	struct sliced *ring;
	__u8 out[PKT_BUF];
	struct nfsl_counters cnt0, cnt1;
	double elapsed;
	int if_in, if_out; /* the private namespace's domain interfaces */
};

struct summary {
	double med, p25, p75, min, max; /* net ns/packet */
	double raw, bias, dur; /* medians: raw, bias, duration-based net */
	/* vs baseline: median and spread of the per-round ratios (both
	 * programs ran in the same round, so noise that hits a round cancels),
	 * and for reference the ratio of the two medians */
	double ratio, r25, r75, rmin, rmax, rmed;
	int baseline;
	double target;
	bool valid;
};

/* "nfslice-bench-datapath: MESSAGE" on stderr. */
#define pr_err(...) ((void)nfsl_msg(DP_NAME ": ", __VA_ARGS__))

/* datapath_opts.c */
int dp_parse_opts(struct opts *o, int argc, char **argv);

/* datapath_setup.c */
int dp_setup_netns(struct bench *b);
int dp_setup_domain(struct bench *b);
int dp_read_counters(struct bench *b, struct nfsl_counters *sum);
void dp_release_all(struct bench *b);
int dp_reset_alloc(struct bench *b);
int dp_flush_store(struct bench *b);
struct bpf_map;
int dp_reuse_maps(struct bpf_map *store, struct bpf_map *config, struct bpf_map *counters,
		  struct bpf_map *cursor, struct slicer_bpf *sl);

/* datapath_guard.c: the FORWARD guard's rows */
int dp_setup_guards(struct bench *b);
void dp_destroy_guards(struct bench *b);
int dp_guard_fd(const struct bench *b, int id);
int dp_nf_block(struct bench *b, const struct bcase *c, int fd, unsigned int iters,
		__u64 *dur);

/* datapath_calls.c: the calls per packet, by kind (--calls). 0 or -1. */
int dp_calls(struct bench *b);

/* datapath_cases.c */
int dp_setup_cases(struct bench *b);

/* datapath_run.c */
int dp_run_once(struct bench *b, enum hook hook, int fd, const void *in, unsigned int len,
		unsigned int *out_len, __u32 *retval, __u32 *duration);
int dp_slice_one(struct bench *b, struct bcase *c, struct sliced *s);
void dp_release_sliced(struct bench *b, const struct sliced *s);
int dp_run_all(struct bench *b);

/* Two programs compared round by round on one packet: the difference of
 * their net costs and the ratio, medians (and quartiles) of the per-round
 * values, so noise that hits a round cancels. */
struct comparison {
	int a, b;         /* benches: a against b */
	const char *what; /* what a has that b has not */
};
extern const struct comparison comparisons[];
extern const unsigned int ncomparisons;

struct compared {
	double diff, d25, d75; /* ns/packet, a - b */
	double ratio, r25, r75; /* a / b */
	bool valid;
};

/* datapath_stats.c */
void dp_compare(const struct bench *b, const struct bcase *c, const struct comparison *k,
		struct compared *out);
bool dp_applies(const struct bench *b, const struct bcase *c, int id);
double dp_net(const struct bcase *c, int id, unsigned int r);
double dp_net_dur(const struct bcase *c, int id, unsigned int r);
void dp_finish_bias(struct bench *b);
void dp_summarize(const struct bench *b, const struct bcase *c, int id, struct summary *s);

/* datapath_report.c */
int dp_write_json(const struct bench *b, const char *path);
int dp_write_csv(const struct bench *b, const char *path);
void dp_print_table(const struct bench *b);

#endif /* NFSL_BENCH_DATAPATH_H */
