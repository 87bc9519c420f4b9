// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice-bench-datapath: per-packet cost of the slicer (XDP) and the
 * splicer (tc) under BPF_PROG_TEST_RUN, next to baselines that do only the
 * bare work (issue #2, docs/benchmarks.md):
 *
 *   xdp-empty     nothing: bias of the run-time statistics (XDP)
 *   xdp-parse     header parser only (nfsl_parse.h)
 *   xdp-copy      bpf_xdp_load_bytes of the payload into the store slot the
 *                 slicer would take next (its per-CPU cursor), no claim,
 *                 then a locked add so its cache misses count in its time
 *   xdp-copy-nofence  the same without the locked add
 *   xdp-copy-warm the same copy, always into one slot
 *   slicer        nfsl_slicer on a fresh packet
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
 * the baselines reuse the slicer's maps. The process pins itself to one
 * CPU and moves into a fresh network namespace, so live-frames packets that
 * the programs pass to the stack can only reach a loopback that is down.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsl_csum.h"
#include "nfsl_parse.h"
#include "nfsl_store.h"
#include "nfsl_token.h"

#include "slicer.skel.h"
#include "splicer.skel.h"
#include "bench_xdp.skel.h"
#include "bench_tc.skel.h"

#define MAX_SIZES 8
#define MAX_ROUNDS 1000
#define PKT_BUF 4096
#define SLICED_BUF 256
#define LIVE_BATCH 256 /* largest batch of a live-frames run */

enum hook { HOOK_XDP, HOOK_TC };

enum bench_id {
	B_XDP_EMPTY,
	B_XDP_PARSE,
	B_XDP_COPY,
	B_XDP_COPY_NOFENCE,
	B_XDP_COPY_WARM,
	B_SLICER,
	B_TC_EMPTY,
	B_TC_PARSE,
	B_TC_STORE,
	B_SPLICER,
	B_TC_STORE_LAG,
	B_SPLICER_LAG,
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

static const struct bench_desc benches[B_NR] = {
	[B_XDP_EMPTY] = {"xdp-empty", HOOK_XDP, 0, -1, -1, 0, B_LIVE_EMPTY},
	[B_XDP_PARSE] = {"xdp-parse", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, B_LIVE_PARSE},
	[B_XDP_COPY] = {"xdp-copy", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, B_LIVE_COPY},
	[B_XDP_COPY_NOFENCE] = {"xdp-copy-nofence", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, -1},
	[B_XDP_COPY_WARM] = {"xdp-copy-warm", HOOK_XDP, 0, B_XDP_EMPTY, -1, 0, -1},
	[B_SLICER] = {"slicer", HOOK_XDP, 0, B_XDP_EMPTY, B_XDP_COPY, 1.5, B_LIVE_SLICER},
	[B_TC_EMPTY] = {"tc-empty", HOOK_TC, 0, -1, -1, 0, -1},
	[B_TC_PARSE] = {"tc-parse", HOOK_TC, 0, B_TC_EMPTY, -1, 0, -1},
	[B_TC_STORE] = {"tc-store", HOOK_TC, BF_SLICED, B_TC_EMPTY, -1, 0, -1},
	[B_SPLICER] = {"splicer", HOOK_TC, 0, B_TC_EMPTY, B_TC_STORE, 2.0, -1},
	[B_TC_STORE_LAG] = {"tc-store-lag", HOOK_TC, BF_SLICED | BF_LAG, B_TC_EMPTY, -1, 0, -1},
	[B_SPLICER_LAG] = {"splicer-lag", HOOK_TC, BF_SLICED | BF_LAG, B_TC_EMPTY, B_TC_STORE_LAG,
			   2.0, -1},
	[B_LIVE_EMPTY] = {"live-xdp-empty", HOOK_XDP, BF_LIVE, -1, -1, 0, -1},
	[B_LIVE_PARSE] = {"live-xdp-parse", HOOK_XDP, BF_LIVE, B_LIVE_EMPTY, -1, 0, -1},
	[B_LIVE_COPY] = {"live-xdp-copy", HOOK_XDP, BF_LIVE, B_LIVE_EMPTY, -1, 0, -1},
	[B_LIVE_SLICER] = {"live-slicer", HOOK_XDP, BF_LIVE, B_LIVE_EMPTY, B_LIVE_COPY, 0, -1},
};

/* Order of the rows in the printed table. */
/* clang-format off */
static const int row_order[] = {
	B_XDP_EMPTY, B_XDP_PARSE, B_XDP_COPY, B_XDP_COPY_NOFENCE, B_XDP_COPY_WARM, B_SLICER,
	B_TC_EMPTY, B_TC_PARSE, B_TC_STORE, B_SPLICER, B_TC_STORE_LAG, B_SPLICER_LAG,
};
/* clang-format on */

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
	bool sel[B_NR]; /* programs to measure (with their bias and baselines) */
	const char *json;
	const char *csv;
	bool quiet;
};

/* One packet under test: a size and a protocol. */
struct bcase {
	unsigned int size;
	__u8 proto;
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
	struct splicer_bpf *sp;
	struct bench_xdp_bpf *bx;
	struct bench_tc_bpf *bt;
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
};

static void pr_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "nfslice-bench-datapath: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int prog_fd(struct bench *b, int id)
{
	switch (id) {
	case B_XDP_EMPTY:
	case B_LIVE_EMPTY:
		return bpf_program__fd(b->bx->progs.bench_xdp_empty);
	case B_XDP_PARSE:
	case B_LIVE_PARSE:
		return bpf_program__fd(b->bx->progs.bench_xdp_parse);
	case B_XDP_COPY:
	case B_LIVE_COPY:
		return bpf_program__fd(b->bx->progs.bench_xdp_copy);
	case B_XDP_COPY_NOFENCE:
		return bpf_program__fd(b->bx->progs.bench_xdp_copy_nofence);
	case B_XDP_COPY_WARM:
		return bpf_program__fd(b->bx->progs.bench_xdp_copy_warm);
	case B_SLICER:
	case B_LIVE_SLICER:
		return bpf_program__fd(b->sl->progs.nfsl_slicer);
	case B_TC_EMPTY:
		return bpf_program__fd(b->bt->progs.bench_tc_empty);
	case B_TC_PARSE:
		return bpf_program__fd(b->bt->progs.bench_tc_parse);
	case B_TC_STORE:
	case B_TC_STORE_LAG:
		return bpf_program__fd(b->bt->progs.bench_tc_store);
	default:
		return bpf_program__fd(b->sp->progs.nfsl_splicer);
	}
}

/* Kernel run-time statistics of a program: total ns and runs so far. */
static int prog_stats(int fd, __u64 *ns, __u64 *cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		pr_err("cannot read program info: %s", strerror(errno));
		return -1;
	}
	*ns = info.run_time_ns;
	*cnt = info.run_cnt;
	return 0;
}

/* Sum of the per-CPU datapath counters. */
static int read_counters(struct bench *b, struct nfsl_counters *sum)
{
	struct nfsl_counters *v;
	__u32 zero = 0;
	int i, err = 0;

	v = calloc(b->ncpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(b->sl->maps.nfsl_counters), &zero, v)) {
		err = -errno;
		pr_err("cannot read counters: %s", strerror(errno));
		goto out;
	}
	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < b->ncpus; i++) {
#define NFSL_X_SUM(name) sum->name += v[i].name;
		NFSL_COUNTERS(NFSL_X_SUM)
#undef NFSL_X_SUM
	}
out:
	free(v);
	return err;
}

/* ---- packets ---------------------------------------------------------- */

/* Ethernet / IPv4 / UDP or TCP frame of @size bytes with valid checksums
 * and a payload pattern, as it would arrive from a wire. */
static void build_pkt(struct bcase *c)
{
	struct ethhdr *eth = (struct ethhdr *)c->pkt;
	struct iphdr *iph = (struct iphdr *)(eth + 1);
	void *l4 = iph + 1;
	unsigned int l4hdr =
		c->proto == IPPROTO_UDP ? sizeof(struct udphdr) : sizeof(struct tcphdr);
	unsigned int l4len = c->size - sizeof(*eth) - sizeof(*iph), i;
	__u16 *csum;
	__u32 s;

	memset(c->pkt, 0, sizeof(c->pkt));
	memcpy(eth->h_dest, "\x02\x00\x00\x00\x00\x02", ETH_ALEN);
	memcpy(eth->h_source, "\x02\x00\x00\x00\x00\x01", ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	iph->version = 4;
	iph->ihl = 5;
	iph->tot_len = htons(c->size - sizeof(*eth));
	iph->id = htons(0x1234);
	iph->frag_off = htons(0x4000); /* DF */
	iph->ttl = 64;
	iph->protocol = c->proto;
	iph->saddr = htonl(0xc6120001); /* 198.18.0.1, RFC 2544 range */
	iph->daddr = htonl(0xc6120002);
	iph->check = ~nfsl_csum_fold(nfsl_csum_bytes(iph, sizeof(*iph), 0));

	if (c->proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;

		udp->source = htons(4000);
		udp->dest = htons(5000);
		udp->len = htons(l4len);
		csum = &udp->check;
	} else {
		struct tcphdr *tcp = l4;

		tcp->source = htons(4000);
		tcp->dest = htons(5000);
		tcp->seq = htonl(1000);
		tcp->ack_seq = htonl(2000);
		tcp->doff = 5;
		tcp->ack = 1;
		tcp->psh = 1;
		tcp->window = htons(65535);
		csum = &tcp->check;
	}
	c->payoff = sizeof(*eth) + sizeof(*iph) + l4hdr;
	for (i = c->payoff; i < c->size; i++)
		c->pkt[i] = (__u8)(i * 7 + 3);

	s = nfsl_csum_bytes(&iph->saddr, 8, 0);
	s = nfsl_csum_add(s, htons(c->proto));
	s = nfsl_csum_add(s, htons(l4len));
	s = nfsl_csum_bytes(l4, l4len, s);
	*csum = nfsl_csum_final(~nfsl_csum_fold(s), c->proto == IPPROTO_UDP);
}

/* ---- domain setup ----------------------------------------------------- */

static int reuse_maps(struct bpf_map *store, struct bpf_map *config, struct bpf_map *counters,
		      struct bpf_map *cursor, struct slicer_bpf *sl)
{
	if (bpf_map__reuse_fd(store, bpf_map__fd(sl->maps.nfsl_store)) ||
	    bpf_map__reuse_fd(config, bpf_map__fd(sl->maps.nfsl_config)) ||
	    bpf_map__reuse_fd(counters, bpf_map__fd(sl->maps.nfsl_counters)) ||
	    bpf_map__reuse_fd(cursor, bpf_map__fd(sl->maps.nfsl_cursor))) {
		pr_err("cannot reuse the slicer's maps: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Load the four objects and configure the domain as `nfslice attach` does. */
static int setup_domain(struct bench *b)
{
	struct nfsl_config *cfg = &b->cfg;
	__u32 zero = 0, part;
	int err;

	b->ncpus = libbpf_num_possible_cpus();
	if (b->ncpus <= 0 || b->ncpus > NFSL_MAX_CPUS) {
		pr_err("cannot use %d possible CPUs", b->ncpus);
		return -1;
	}
	memset(cfg, 0, sizeof(*cfg));
	cfg->threshold = NFSL_DEF_THRESHOLD;
	cfg->keep = NFSL_DEF_KEEP;
	cfg->ncpus = b->ncpus;
	cfg->part_slots = NFSL_DEF_SLOTS / b->ncpus;
	cfg->slots = cfg->part_slots * b->ncpus;
	cfg->expiry = NFSL_DEF_EXPIRY;
	cfg->max_l3 = 1500;
	if (getrandom(cfg->key, sizeof(cfg->key), 0) != sizeof(cfg->key)) {
		pr_err("cannot get a random MAC key: %s", strerror(errno));
		return -1;
	}

	b->sl = slicer_bpf__open();
	if (!b->sl) {
		pr_err("cannot open the slicer object: %s", strerror(errno));
		return -1;
	}
	bpf_map__set_max_entries(b->sl->maps.nfsl_store, NFSL_DEF_SLOTS);
	err = slicer_bpf__load(b->sl);
	if (err) {
		pr_err("cannot load the slicer: %s", strerror(-err));
		return -1;
	}
	if (bpf_map_update_elem(bpf_map__fd(b->sl->maps.nfsl_config), &zero, cfg, BPF_ANY)) {
		pr_err("cannot write the domain config: %s", strerror(errno));
		return -1;
	}

	b->sp = splicer_bpf__open();
	if (!b->sp) {
		pr_err("cannot open the splicer object: %s", strerror(errno));
		return -1;
	}
	if (reuse_maps(b->sp->maps.nfsl_store, b->sp->maps.nfsl_config, b->sp->maps.nfsl_counters,
		       b->sp->maps.nfsl_cursor, b->sl))
		return -1;
	err = splicer_bpf__load(b->sp);
	if (err) {
		pr_err("cannot load the splicer: %s", strerror(-err));
		return -1;
	}

	b->bt = bench_tc_bpf__open();
	if (!b->bt) {
		pr_err("cannot open the tc baselines: %s", strerror(errno));
		return -1;
	}
	if (reuse_maps(b->bt->maps.nfsl_store, b->bt->maps.nfsl_config, b->bt->maps.nfsl_counters,
		       b->bt->maps.nfsl_cursor, b->sl))
		return -1;
	err = bench_tc_bpf__load(b->bt);
	if (err) {
		pr_err("cannot load the tc baselines: %s", strerror(-err));
		return -1;
	}

	b->bx = bench_xdp_bpf__open();
	if (!b->bx) {
		pr_err("cannot open the XDP baselines: %s", strerror(errno));
		return -1;
	}
	if (reuse_maps(b->bx->maps.nfsl_store, b->bx->maps.nfsl_config, b->bx->maps.nfsl_counters,
		       b->bx->maps.nfsl_cursor, b->sl))
		return -1;
	err = bench_xdp_bpf__load(b->bx);
	if (err) {
		pr_err("cannot load the XDP baselines: %s", strerror(-err));
		return -1;
	}
	/* The warm copy uses the first slot of the next CPU's partition,
	 * which the slicer on this CPU never touches. */
	part = b->o.cpu % b->ncpus;
	b->bx->bss->bench_warm = ((part + 1) % b->ncpus) * cfg->part_slots;

	b->store_len = (size_t)NFSL_DEF_SLOTS * sizeof(struct nfsl_slot);
	b->store = mmap(NULL, b->store_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(b->sl->maps.nfsl_store), 0);
	if (b->store == MAP_FAILED) {
		b->store = NULL;
		pr_err("cannot mmap the store: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Free every busy slot, as splicers would; the driver does it between
 * measurements so the slicer always finds a free slot. */
static void release_all(struct bench *b)
{
	unsigned int i;

	for (i = 0; i < NFSL_DEF_SLOTS; i++) {
		__u64 ctl = NFSL_READ_ONCE_U64(b->store[i].ctl);

		if (NFSL_CTL_EXP(ctl))
			nfsl_slot_release(&b->store[i], NFSL_CTL_GEN(ctl));
	}
}

/*
 * Write back and evict the whole store from every cache level (clflush on
 * the user mapping of the map's pages), so the next block finds it in DRAM.
 */
static int flush_store(struct bench *b)
{
#if defined(__x86_64__) || defined(__i386__)
	const char *p = (const char *)b->store, *end = p + b->store_len;

	for (; p < end; p += 64)
		__builtin_ia32_clflush(p);
	__builtin_ia32_mfence();
	return 0;
#else
	pr_err("--flush needs x86 (clflush)");
	return -EOPNOTSUPP;
#endif
}

/* ---- one test run ----------------------------------------------------- */

/* Run @fd once on @in; the output lands in b->out. Returns 0 or -errno. */
static int run_once(struct bench *b, int fd, const void *in, unsigned int len,
		    unsigned int *out_len, __u32 *retval, __u32 *duration)
{
	/* clang-format off */
	LIBBPF_OPTS(bpf_test_run_opts, t,
		.data_in = in,
		.data_size_in = len,
		.data_out = b->out,
		.data_size_out = sizeof(b->out),
		.repeat = 1,
	);
	/* clang-format on */
	int err;

	*out_len = 0;
	*retval = 0;
	err = bpf_prog_test_run_opts(fd, &t);
	if (err)
		return -errno;
	*out_len = t.data_size_out;
	*retval = t.retval;
	if (duration)
		*duration = t.duration;
	return 0;
}

/* Slice the packet of @c (not measured) into @s. */
static int slice_one(struct bench *b, struct bcase *c, struct sliced *s)
{
	int fd = bpf_program__fd(b->sl->progs.nfsl_slicer);
	const struct nfsl_token *tok;
	unsigned int len;
	__u32 ret;
	int err;

	err = run_once(b, fd, c->pkt, c->size, &len, &ret, NULL);
	if (err) {
		pr_err("slicer test run failed: %s", strerror(-err));
		return err;
	}
	if (ret != XDP_PASS || len != c->payoff + NFSL_TOKEN_LEN) {
		pr_err("slicer did not slice a %u B packet (ret %u, %u B out): "
		       "is the store full?",
		       c->size, ret, len);
		return -EPROTO;
	}
	memcpy(s->buf, b->out, len);
	s->len = len;
	tok = (const struct nfsl_token *)(s->buf + len - NFSL_TOKEN_LEN);
	s->slot = ntohl(tok->slot);
	s->gen = ntohl(tok->gen);
	if (s->slot >= NFSL_DEF_SLOTS) {
		pr_err("slicer wrote slot %u, beyond the store", s->slot);
		return -EPROTO;
	}
	return 0;
}

static void release_sliced(struct bench *b, const struct sliced *s)
{
	nfsl_slot_release(&b->store[s->slot], s->gen);
}

/* ---- blocks ----------------------------------------------------------- */

/* Check the output of a measured run. */
static int check_out(struct bench *b, struct bcase *c, int id, unsigned int len, __u32 ret)
{
	switch (id) {
	case B_SLICER:
		if (ret != XDP_PASS || len != (c->sliced ? c->payoff + NFSL_TOKEN_LEN : c->size))
			goto bad;
		return 0;
	case B_SPLICER:
	case B_SPLICER_LAG:
		if (ret != TC_ACT_OK || len != c->size || memcmp(b->out, c->pkt, len))
			goto bad;
		return 0;
	case B_TC_STORE:
	case B_TC_STORE_LAG:
		if (ret != TC_ACT_OK || len != c->size ||
		    memcmp(b->out + c->payoff, c->pkt + c->payoff, len - c->payoff))
			goto bad;
		return 0;
	default:
		return 0;
	}
bad:
	pr_err("%s gave a wrong result for the %u B %s packet (ret %u, %u B)", benches[id].name,
	       c->size, c->proto == IPPROTO_UDP ? "UDP" : "TCP", ret, len);
	return -EPROTO;
}

/* XDP programs and the slicer on a fresh copy of the packet. */
static int xdp_iter(struct bench *b, struct bcase *c, int id, int fd, __u64 *dur)
{
	const struct nfsl_token *tok;
	unsigned int len;
	__u32 ret, d;
	int err;

	err = run_once(b, fd, c->pkt, c->size, &len, &ret, &d);
	if (err) {
		pr_err("%s test run failed: %s", benches[id].name, strerror(-err));
		return err;
	}
	*dur += d;
	if (check_out(b, c, id, len, ret))
		return -EPROTO;
	if (id == B_SLICER && c->sliced) {
		/* Free the slot as a splicer would, outside the measurement. */
		tok = (const struct nfsl_token *)(b->out + len - NFSL_TOKEN_LEN);
		if (ntohl(tok->slot) >= NFSL_DEF_SLOTS)
			return -EPROTO;
		nfsl_slot_release(&b->store[ntohl(tok->slot)], ntohl(tok->gen));
	}
	return 0;
}

/* One splice (splicer or tc-store) of @s, measured. */
static int splice_iter(struct bench *b, struct bcase *c, int id, int fd, struct sliced *s,
		       __u64 *dur)
{
	unsigned int len;
	__u32 ret, d;
	int err;

	b->bt->bss->bench_slot = s->slot;
	err = run_once(b, fd, s->buf, s->len, &len, &ret, &d);
	if (err) {
		pr_err("%s test run failed: %s", benches[id].name, strerror(-err));
		return err;
	}
	*dur += d;
	if (check_out(b, c, id, len, ret))
		return -EPROTO;
	if (id == B_TC_STORE || id == B_TC_STORE_LAG)
		release_sliced(b, s);
	return 0;
}

/*
 * Live frames: the kernel runs the program on a fresh copy of the packet per
 * repeat, back to back, without a syscall in between. A page the program
 * passed comes back to the page pool with its content as the program left
 * it (Documentation/bpf/bpf_prog_run.rst), so a call runs one batch only:
 * every packet of it starts on a newly initialised page.
 */
static int live_block(struct bench *b, struct bcase *c, int id, int fd)
{
	/* clang-format off */
	LIBBPF_OPTS(bpf_test_run_opts, t,
		.data_in = c->pkt,
		.data_size_in = c->size,
		.flags = BPF_F_TEST_XDP_LIVE_FRAMES,
	);
	/* clang-format on */
	struct nfsl_counters before, after;
	unsigned int done, n;
	int err;

	if (id == B_LIVE_SLICER && read_counters(b, &before))
		return -EIO;
	for (done = 0; done < b->o.live_repeat; done += n) {
		n = b->o.live_repeat - done;
		if (n > LIVE_BATCH)
			n = LIVE_BATCH;
		t.repeat = n;
		t.batch_size = n;
		if (bpf_prog_test_run_opts(fd, &t)) {
			err = -errno;
			pr_err("%s live-frames run failed: %s", benches[id].name, strerror(errno));
			return err;
		}
	}
	if (id != B_LIVE_SLICER)
		return 0;
	release_all(b);
	if (read_counters(b, &after))
		return -EIO;
	if (c->sliced && after.sliced - before.sliced != b->o.live_repeat) {
		pr_err("live-frames slicer sliced %llu of %u packets of %u B",
		       (unsigned long long)(after.sliced - before.sliced), b->o.live_repeat,
		       c->size);
		return -EPROTO;
	}
	return 0;
}

/* Measure bench @id on case @c for round @r (r < 0: warm-up, not kept). */
static int run_block(struct bench *b, struct bcase *c, int id, int r)
{
	const struct bench_desc *d = &benches[id];
	unsigned int iters = b->o.iters, lag = 0, i, n;
	int fd = prog_fd(b, id), err = 0;
	__u64 ns0, cnt0, ns1, cnt1, dur = 0;

	if (id == B_XDP_COPY || id == B_XDP_COPY_NOFENCE || id == B_XDP_COPY_WARM ||
	    id == B_LIVE_COPY)
		b->bx->bss->bench_payoff = c->payoff;
	if (d->flags & BF_LAG) {
		lag = b->o.lag;
		for (i = 0; i < lag; i++) {
			err = slice_one(b, c, &b->ring[i]);
			if (err)
				goto out;
		}
	}

	if (b->o.flush && id != B_XDP_EMPTY && id != B_TC_EMPTY && id != B_LIVE_EMPTY) {
		err = flush_store(b);
		if (err)
			goto out;
	}
	if (prog_stats(fd, &ns0, &cnt0)) {
		err = -EIO;
		goto out;
	}
	if (d->flags & BF_LIVE) {
		err = live_block(b, c, id, fd);
		iters = b->o.live_repeat;
	} else if (d->hook == HOOK_XDP) {
		for (i = 0; i < iters && !err; i++)
			err = xdp_iter(b, c, id, fd, &dur);
	} else if (id == B_TC_EMPTY || id == B_TC_PARSE) {
		unsigned int len;
		__u32 ret, du;

		for (i = 0; i < iters && !err; i++) {
			err = run_once(b, fd, c->tc_in, c->tc_in_len, &len, &ret, &du);
			dur += du;
		}
		if (err)
			pr_err("%s test run failed: %s", d->name, strerror(-err));
	} else if (!c->sliced) {
		/* Splicer on a packet too small to slice: parse and pass. */
		for (i = 0; i < iters && !err; i++) {
			unsigned int len;
			__u32 ret, du;

			err = run_once(b, fd, c->pkt, c->size, &len, &ret, &du);
			dur += du;
			if (!err &&
			    (ret != TC_ACT_OK || len != c->size || memcmp(b->out, c->pkt, len))) {
				pr_err("splicer changed an unsliced %u B packet", c->size);
				err = -EPROTO;
			}
		}
	} else {
		/* Slice (not measured), then splice the packet sliced @lag
		 * packets earlier: 0 = the one just sliced. */
		for (i = 0; i < iters && !err; i++) {
			struct sliced *s = &b->ring[lag ? i % lag : 0];

			if (!lag)
				err = slice_one(b, c, s);
			if (!err)
				err = splice_iter(b, c, id, fd, s, &dur);
			if (!err && lag)
				err = slice_one(b, c, s);
		}
	}
	if (err)
		goto out;
	if (prog_stats(fd, &ns1, &cnt1)) {
		err = -EIO;
		goto out;
	}
	n = cnt1 - cnt0;
	if (n != iters) {
		pr_err("%s ran %u times in a block of %u (is something else running it?)", d->name,
		       n, iters);
		err = -EPROTO;
		goto out;
	}
	if (r >= 0) {
		c->raw[id][r] = (double)(ns1 - ns0) / n;
		c->dur[id][r] = (d->flags & BF_LIVE) ? NAN : (double)dur / n;
	}
out:
	if (lag)
		release_all(b); /* the packets still parked in the ring */
	return err;
}

/* ---- statistics ------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Quantile @q of the n values at @v (sorted in place), linear interpolation. */
static double quantile(double *v, unsigned int n, double q)
{
	double pos, frac;
	unsigned int i;

	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	pos = q * (n - 1);
	i = (unsigned int)pos;
	frac = pos - i;
	return i + 1 < n ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
}

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

static bool applies(const struct bench *b, const struct bcase *c, int id)
{
	const struct bench_desc *d = &benches[id];

	if (!b->o.sel[id] || ((d->flags & BF_LIVE) && !b->o.live))
		return false;
	if ((d->flags & BF_LAG) && !b->o.lag)
		return false;
	return !(d->flags & BF_SLICED) || c->sliced;
}

/* Net cost of bench @id in round @r: raw minus the bias bench's raw. */
/*
 * Net cost of bench @id in round @r: its raw cost minus the bias, the
 * median over all rounds of the empty program of the same hook on the same
 * packet. The bias is a constant of the machine (two clock reads around
 * the program); a median keeps one noisy empty block from shifting a round.
 */
static double net(const struct bcase *c, int id, unsigned int r)
{
	int bias = benches[id].bias;

	return bias < 0 ? c->raw[id][r] : c->raw[id][r] - c->bias_raw[bias];
}

static double net_dur(const struct bcase *c, int id, unsigned int r)
{
	int bias = benches[id].bias;

	return bias < 0 ? c->dur[id][r] : c->dur[id][r] - c->bias_dur[bias];
}

/* Compute the bias medians once all rounds are in. */
static void finish_bias(struct bench *b)
{
	double v[MAX_ROUNDS];
	unsigned int i, r;
	int k;

	for (i = 0; i < b->ncases; i++) {
		struct bcase *c = &b->cases[i];

		for (k = 0; k < B_NR; k++) {
			if (benches[k].bias >= 0)
				continue;
			for (r = 0; r < b->o.rounds; r++)
				v[r] = c->raw[k][r];
			c->bias_raw[k] = quantile(v, b->o.rounds, 0.5);
			for (r = 0; r < b->o.rounds; r++)
				v[r] = c->dur[k][r];
			c->bias_dur[k] = quantile(v, b->o.rounds, 0.5);
		}
	}
}

/* Baseline of @id for @c: the bare copy / store when the packet is sliced;
 * none when it is not (slicer and splicer then only parse, a few ns whose
 * ratio to the parser's few ns is noise: compare the two rows instead). */
static int baseline_of(const struct bcase *c, int id, double *target)
{
	*target = 0;
	if (!c->sliced)
		return -1;
	*target = benches[id].target;
	return benches[id].baseline;
}

static void summarize(const struct bench *b, const struct bcase *c, int id, struct summary *s)
{
	unsigned int R = b->o.rounds, r, n = 0;
	double v[MAX_ROUNDS], w[MAX_ROUNDS];
	int bl;

	memset(s, 0, sizeof(*s));
	s->baseline = -1;
	s->ratio = s->r25 = s->r75 = s->rmin = s->rmax = s->rmed = NAN;
	if (!applies(b, c, id))
		return;
	s->valid = true;
	for (r = 0; r < R; r++)
		v[n++] = net(c, id, r);
	s->min = quantile(v, n, 0);
	s->p25 = quantile(v, n, 0.25);
	s->med = quantile(v, n, 0.5);
	s->p75 = quantile(v, n, 0.75);
	s->max = quantile(v, n, 1);
	for (r = 0; r < R; r++)
		w[r] = c->raw[id][r];
	s->raw = quantile(w, R, 0.5);
	if (benches[id].bias >= 0)
		s->bias = c->bias_raw[benches[id].bias];
	if (!(benches[id].flags & BF_LIVE)) {
		for (r = 0; r < R; r++)
			w[r] = net_dur(c, id, r);
		s->dur = quantile(w, R, 0.5);
	} else {
		s->dur = NAN;
	}

	bl = baseline_of(c, id, &s->target);
	if (bl < 0 || !applies(b, c, bl))
		return;
	s->baseline = bl;
	for (r = 0; r < R; r++)
		v[r] = net(c, bl, r);
	s->rmed = s->med / quantile(v, R, 0.5);
	for (r = 0; r < R; r++)
		w[r] = net(c, id, r) / net(c, bl, r);
	s->ratio = quantile(w, R, 0.5);
	s->rmin = quantile(w, R, 0);
	s->r25 = quantile(w, R, 0.25);
	s->r75 = quantile(w, R, 0.75);
	s->rmax = quantile(w, R, 1);
}

/* ---- output ----------------------------------------------------------- */

static const char *proto_name(const struct bcase *c)
{
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
		for (p = buf; *p; p++) /* it goes into JSON and CSV as is */
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

/* JSON numbers: null for NaN. */
static void jnum(FILE *f, const char *key, double v, bool comma)
{
	if (isnan(v))
		fprintf(f, "\"%s\":null%s", key, comma ? "," : "");
	else
		fprintf(f, "\"%s\":%.2f%s", key, v, comma ? "," : "");
}

static int write_json(const struct bench *b, const char *path)
{
	const struct nfsl_config *cfg = &b->cfg;
	struct utsname u;
	char model[128];
	unsigned int i, k;
	bool first = true;
	FILE *f;

	f = fopen(path, "w");
	if (!f) {
		pr_err("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	uname(&u);
	cpu_model(model, sizeof(model));
	fprintf(f, "{\"tool\":\"nfslice-bench-datapath\",\"unit\":\"ns/packet\",\n");
	fprintf(f,
		"\"machine\":{\"kernel\":\"%s\",\"cpu\":\"%s\",\"online_cpus\":%ld,"
		"\"possible_cpus\":%d,\"pinned_cpu\":%d},\n",
		u.release, model, sysconf(_SC_NPROCESSORS_ONLN), b->ncpus, b->o.cpu);
	fprintf(f,
		"\"config\":{\"threshold\":%u,\"keep\":%u,\"slots\":%u,\"part_slots\":%u,"
		"\"ncpus\":%u,\"expiry\":%u,\"max_l3\":%u},\n",
		cfg->threshold, cfg->keep, cfg->slots, cfg->part_slots, cfg->ncpus, cfg->expiry,
		cfg->max_l3);
	fprintf(f,
		"\"method\":{\"rounds\":%u,\"warmup_rounds\":%u,\"iters_per_block\":%u,"
		"\"lag\":%u,\"flush\":%s,\"live_repeat\":%u,\"live_batch\":%u,"
		"\"elapsed_s\":%.1f},\n",
		b->o.rounds, b->o.warmup, b->o.iters, b->o.lag, b->o.flush ? "true" : "false",
		b->o.live ? b->o.live_repeat : 0, LIVE_BATCH, b->elapsed);
	fprintf(f, "\"counters\":{");
#define NFSL_X_JSON(name)                                           \
	fprintf(f, "%s\"%s\":%llu", first ? "" : ",", #name,        \
		(unsigned long long)(b->cnt1.name - b->cnt0.name)); \
	first = false;
	NFSL_COUNTERS(NFSL_X_JSON)
#undef NFSL_X_JSON
	fprintf(f, "},\n\"results\":[");
	first = true;
	for (i = 0; i < b->ncases; i++) {
		const struct bcase *c = &b->cases[i];

		for (k = 0; k < B_NR; k++) {
			struct summary s;

			summarize(b, c, k, &s);
			if (!s.valid)
				continue;
			fprintf(f,
				"%s\n{\"size\":%u,\"proto\":\"%s\",\"program\":\"%s\","
				"\"hook\":\"%s\",\"sliced\":%s,",
				first ? "" : ",", c->size, proto_name(c), benches[k].name,
				benches[k].hook == HOOK_XDP ? "xdp" : "tc",
				c->sliced ? "true" : "false");
			first = false;
			jnum(f, "ns_median", s.med, true);
			jnum(f, "ns_p25", s.p25, true);
			jnum(f, "ns_p75", s.p75, true);
			jnum(f, "ns_min", s.min, true);
			jnum(f, "ns_max", s.max, true);
			jnum(f, "raw_median", s.raw, true);
			jnum(f, "bias_median", s.bias, true);
			jnum(f, "duration_net_median", s.dur, true);
			fprintf(f, "\"baseline\":%s%s%s,", s.baseline < 0 ? "" : "\"",
				s.baseline < 0 ? "null" : benches[s.baseline].name,
				s.baseline < 0 ? "" : "\"");
			jnum(f, "ratio", s.ratio, true);
			jnum(f, "ratio_of_medians", s.rmed, true);
			jnum(f, "ratio_p25", s.r25, true);
			jnum(f, "ratio_p75", s.r75, true);
			jnum(f, "ratio_min", s.rmin, true);
			jnum(f, "ratio_max", s.rmax, true);
			jnum(f, "target", s.target ? s.target : NAN, true);
			if (!s.target || isnan(s.ratio))
				fprintf(f, "\"met\":null,");
			else
				fprintf(f, "\"met\":%s,", s.ratio <= s.target ? "true" : "false");
			fprintf(f, "\"samples\":[");
			for (unsigned int r = 0; r < b->o.rounds; r++)
				fprintf(f, "%s%.2f", r ? "," : "", net(c, k, r));
			fprintf(f, "],\"duration_samples\":[");
			for (unsigned int r = 0; r < b->o.rounds; r++) {
				if (isnan(c->dur[k][r]))
					fprintf(f, "%snull", r ? "," : "");
				else
					fprintf(f, "%s%.2f", r ? "," : "", net_dur(c, k, r));
			}
			fprintf(f, "]}");
		}
	}
	fprintf(f, "\n]}\n");
	if (fclose(f)) {
		pr_err("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int write_csv(const struct bench *b, const char *path)
{
	unsigned int i, k;
	FILE *f;

	f = fopen(path, "w");
	if (!f) {
		pr_err("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	fprintf(f, "size,proto,program,hook,sliced,ns_median,ns_p25,ns_p75,ns_min,ns_max,"
		   "raw_median,bias_median,duration_net_median,live_net_median,baseline,"
		   "ratio,ratio_p25,ratio_p75,ratio_min,ratio_max,target,met\n");
	for (i = 0; i < b->ncases; i++) {
		const struct bcase *c = &b->cases[i];

		for (k = 0; k < B_NR; k++) {
			struct summary s, l;

			summarize(b, c, k, &s);
			if (!s.valid)
				continue;
			l.valid = false;
			if (benches[k].live >= 0)
				summarize(b, c, benches[k].live, &l);
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
	if (fclose(f)) {
		pr_err("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static void print_table(const struct bench *b)
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
	printf("%-5s %-5s %-16s %8s %17s %8s %8s  %-13s %-18s %-6s %s\n", "size", "proto",
	       "program", "ns/pkt", "[p25 .. p75]", "dur-xchk", "live", "baseline",
	       "ratio [p25..p75]", "target", "met");
	for (i = 0; i < b->ncases; i++) {
		const struct bcase *c = &b->cases[i];

		for (k = 0; k < sizeof(row_order) / sizeof(row_order[0]); k++) {
			int id = row_order[k];
			struct summary s, l;

			summarize(b, c, id, &s);
			if (!s.valid)
				continue;
			l.valid = false;
			if (benches[id].live >= 0)
				summarize(b, c, benches[id].live, &l);
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

		summarize(b, &b->cases[i], B_XDP_EMPTY, &x);
		summarize(b, &b->cases[i], B_TC_EMPTY, &t);
		printf(" %u%s ", b->cases[i].size, proto_name(&b->cases[i]));
		if (x.valid)
			printf("%.1f", x.med);
		printf("/");
		if (t.valid)
			printf("%.1f", t.med);
	}
	printf("\n");

	/* The targets of issue #2 are stated for full-size packets. */
	for (i = 0; i < b->ncases; i++) {
		const struct bcase *c = &b->cases[i];

		if (c->size != b->o.sizes[b->o.nsizes - 1] || !c->sliced)
			continue;
		for (k = 0; k < sizeof(row_order) / sizeof(row_order[0]); k++) {
			int id = row_order[k];
			struct summary s;

			summarize(b, c, id, &s);
			if (!s.valid || !s.target || isnan(s.ratio))
				continue;
			printf("target %u B %s: %s %.1f ns = %.2fx %s (target <= %.1fx): %s\n",
			       c->size, proto_name(c), benches[id].name, s.med, s.ratio,
			       benches[s.baseline].name, s.target,
			       s.ratio <= s.target ? "met" : "NOT met");
		}
	}
}

/* ---- main ------------------------------------------------------------- */

static __u64 rng_state = 0x9e3779b97f4a7c15ULL;

static __u64 rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int run_all(struct bench *b)
{
	unsigned int nblocks = b->ncases * B_NR, i, n;
	int total = (int)(b->o.warmup + b->o.rounds), r, err = 0;
	struct timespec t0, t1;
	unsigned int *order;

	order = calloc(nblocks, sizeof(*order));
	if (!order)
		return -ENOMEM;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (r = 0; r < total && !err; r++) {
		/* Every applicable block once, in a fresh shuffled order. */
		for (i = 0, n = 0; i < nblocks; i++)
			if (applies(b, &b->cases[i / B_NR], i % B_NR))
				order[n++] = i;
		for (i = n - 1; i > 0; i--) {
			unsigned int j = rng_next() % (i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i < n && !err; i++)
			err = run_block(b, &b->cases[order[i] / B_NR], order[i] % B_NR,
					r - (int)b->o.warmup);
		if (!b->o.quiet)
			fprintf(stderr, "\rround %d/%d", r + 1, total);
	}
	if (!b->o.quiet)
		fprintf(stderr, "\n");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	b->elapsed = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	free(order);
	return err;
}

/* Prepare the packet of every case and find out which ones get sliced. */
static int setup_cases(struct bench *b)
{
	unsigned int i, p, k, n = 0;
	struct sliced s;
	int err;

	b->ncases = b->o.nsizes * (b->o.udp + b->o.tcp);
	b->cases = calloc(b->ncases, sizeof(*b->cases));
	if (!b->cases)
		return -ENOMEM;
	for (i = 0; i < b->o.nsizes; i++) {
		for (p = 0; p < 2; p++) {
			struct bcase *c;
			unsigned int len;
			__u32 ret;

			if ((p == 0 && !b->o.udp) || (p == 1 && !b->o.tcp))
				continue;
			c = &b->cases[n++];
			c->size = b->o.sizes[i];
			c->proto = p == 0 ? IPPROTO_UDP : IPPROTO_TCP;
			build_pkt(c);
			for (k = 0; k < B_NR; k++) {
				c->raw[k] = calloc(b->o.rounds, sizeof(double));
				c->dur[k] = calloc(b->o.rounds, sizeof(double));
				if (!c->raw[k] || !c->dur[k])
					return -ENOMEM;
			}
			err = run_once(b, bpf_program__fd(b->sl->progs.nfsl_slicer), c->pkt,
				       c->size, &len, &ret, NULL);
			if (err) {
				pr_err("slicer test run failed: %s", strerror(-err));
				return err;
			}
			c->sliced = len < c->size;
			release_all(b);
			/* tc-empty / tc-parse run on what the splicer sees. */
			if (c->sliced) {
				err = slice_one(b, c, &s);
				if (err)
					return err;
				release_sliced(b, &s);
				memcpy(c->tc_in, s.buf, s.len);
				c->tc_in_len = s.len;
			} else {
				c->tc_in_len = c->size < SLICED_BUF ? c->size : SLICED_BUF;
				memcpy(c->tc_in, c->pkt, c->tc_in_len);
			}
		}
	}
	return 0;
}

static int parse_sizes(struct opts *o, const char *arg)
{
	char *dup = strdup(arg), *tok, *save = NULL, *end;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	o->nsizes = 0;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || v < 64 || v > 1514 || o->nsizes == MAX_SIZES) {
			pr_err("--sizes: '%s' is not a frame size in 64..1514 B "
			       "(at most %d sizes)",
			       tok, MAX_SIZES);
			err = -EINVAL;
			goto out;
		}
		o->sizes[o->nsizes++] = v;
	}
	if (!o->nsizes) {
		pr_err("--sizes: no size given");
		err = -EINVAL;
	}
out:
	free(dup);
	return err;
}

/* --programs: measure these, plus what they are compared with. */
static int parse_programs(struct opts *o, const char *arg)
{
	char *dup = strdup(arg), *tok, *save = NULL;
	int err = 0, k, i;

	if (!dup)
		return -ENOMEM;
	memset(o->sel, 0, sizeof(o->sel));
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < B_NR; k++)
			if (!(benches[k].flags & BF_LIVE) && !strcmp(tok, benches[k].name))
				break;
		if (k == B_NR) {
			pr_err("--programs: unknown program '%s' (see --help)", tok);
			err = -EINVAL;
			goto out;
		}
		o->sel[k] = true;
	}
	/* Close over bias, baselines (sliced: bare copy/store; unsliced: the
	 * parser) and live-frames partners. */
	for (i = 0; i < 3; i++) {
		for (k = 0; k < B_NR; k++) {
			const struct bench_desc *d = &benches[k];

			if (!o->sel[k])
				continue;
			if (d->bias >= 0)
				o->sel[d->bias] = true;
			if (d->baseline >= 0)
				o->sel[d->baseline] = true;
			if (d->live >= 0)
				o->sel[d->live] = true;
			if (k == B_SLICER)
				o->sel[B_XDP_PARSE] = true;
			if (k == B_LIVE_SLICER)
				o->sel[B_LIVE_PARSE] = true;
			if (k == B_SPLICER)
				o->sel[B_TC_PARSE] = true;
		}
	}
out:
	free(dup);
	return err;
}

static int parse_uint(const char *name, const char *arg, unsigned int lo, unsigned int hi,
		      unsigned int *v)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(arg, &end, 10);
	if (errno || *end || !*arg || x < lo || x > hi) {
		pr_err("--%s: '%s' is not a number in %u..%u", name, arg, lo, hi);
		return -EINVAL;
	}
	*v = x;
	return 0;
}

static const struct option long_opts[] = {
	{"rounds", required_argument, NULL, 'r'},
	{"warmup", required_argument, NULL, 'w'},
	{"iters", required_argument, NULL, 'n'},
	{"sizes", required_argument, NULL, 's'},
	{"proto", required_argument, NULL, 'p'},
	{"lag", required_argument, NULL, 'l'},
	{"live-repeat", required_argument, NULL, 'L'},
	{"no-live", no_argument, NULL, 'N'},
	{"flush", no_argument, NULL, 'F'},
	{"programs", required_argument, NULL, 'P'},
	{"cpu", required_argument, NULL, 'c'},
	{"json", required_argument, NULL, 'j'},
	{"csv", required_argument, NULL, 'C'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: nfslice-bench-datapath [OPTIONS]\n"
		"Per-packet cost of the nfslice slicer (XDP) and splicer (tc) under\n"
		"BPF_PROG_TEST_RUN, in ns/packet, next to bare baselines: header parse,\n"
		"bpf_xdp_load_bytes of the payload into the store slot the slicer would take\n"
		"next, and bpf_skb_change_tail + bpf_skb_store_bytes of it back. Each packet\n"
		"is one test run (repeat=1); the cost is the program's bpf_stats run_time_ns /\n"
		"run_cnt minus that of an empty program. Needs root. Results: median over\n"
		"rounds in ns/packet, and the ratio to the baseline.\n"
		"\n"
		"  -r, --rounds N       measured rounds (default 21)\n"
		"  -w, --warmup N       discarded warm-up rounds (default 1)\n"
		"  -n, --iters N        packets per block, one block per program and\n"
		"                       packet per round (default 1024)\n"
		"  -s, --sizes LIST     frame sizes in bytes, without FCS (default 64,512,1514)\n"
		"  -p, --proto P        udp, tcp or both (default both)\n"
		"  -l, --lag N          also splice N packets after slicing them, so the\n"
		"                       slot has gone cold (default 1024, 0: off;\n"
		"                       must be below the partition size)\n"
		"  -L, --live-repeat N  packets per live-frames cross-check block (default 256)\n"
		"  -N, --no-live        skip the live-frames cross-check\n"
		"  -F, --flush          evict the store from all caches (clflush) before\n"
		"                       each block: slots come from DRAM, not from L3\n"
		"  -P, --programs LIST  measure only these (plus their bias and baselines):\n"
		"                       xdp-empty, xdp-parse, xdp-copy, xdp-copy-nofence,\n"
		"                       xdp-copy-warm,\n"
		"                       slicer, tc-empty, tc-parse, tc-store, splicer,\n"
		"                       tc-store-lag, splicer-lag (default: all)\n"
		"  -c, --cpu N          CPU to pin to (default: the last online CPU)\n"
		"  -j, --json FILE      write all results as JSON\n"
		"  -C, --csv FILE       write all results as CSV\n"
		"  -q, --quiet          no progress on stderr\n"
		"  -h, --help           this text\n");
}

static int parse_opts(struct opts *o, int argc, char **argv)
{
	int c;

	o->rounds = 21;
	o->warmup = 1;
	o->iters = 1024;
	o->lag = 1024;
	o->live_repeat = LIVE_BATCH;
	o->live = true;
	o->udp = o->tcp = true;
	o->cpu = -1;
	o->nsizes = 3;
	o->sizes[0] = 64;
	o->sizes[1] = 512;
	o->sizes[2] = 1514;
	for (c = 0; c < B_NR; c++)
		o->sel[c] = true;

	while ((c = getopt_long(argc, argv, "r:w:n:s:p:l:L:NFP:c:j:C:qh", long_opts, NULL)) != -1) {
		unsigned int v;

		switch (c) {
		case 'r':
			if (parse_uint("rounds", optarg, 1, MAX_ROUNDS, &o->rounds))
				return -1;
			break;
		case 'w':
			if (parse_uint("warmup", optarg, 0, 100, &o->warmup))
				return -1;
			break;
		case 'n':
			if (parse_uint("iters", optarg, 1, 1000000, &o->iters))
				return -1;
			break;
		case 's':
			if (parse_sizes(o, optarg))
				return -1;
			break;
		case 'p':
			o->udp = !strcmp(optarg, "udp") || !strcmp(optarg, "both");
			o->tcp = !strcmp(optarg, "tcp") || !strcmp(optarg, "both");
			if (!o->udp && !o->tcp) {
				pr_err("--proto: '%s' is not udp, tcp or both", optarg);
				return -1;
			}
			break;
		case 'l':
			if (parse_uint("lag", optarg, 0, NFSL_DEF_SLOTS, &o->lag))
				return -1;
			break;
		case 'L':
			if (parse_uint("live-repeat", optarg, 1, NFSL_DEF_SLOTS, &o->live_repeat))
				return -1;
			break;
		case 'N':
			o->live = false;
			break;
		case 'F':
			o->flush = true;
			break;
		case 'P':
			if (parse_programs(o, optarg))
				return -1;
			break;
		case 'c':
			if (parse_uint("cpu", optarg, 0, NFSL_MAX_CPUS - 1, &v))
				return -1;
			o->cpu = v;
			break;
		case 'j':
			o->json = optarg;
			break;
		case 'C':
			o->csv = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'nfslice-bench-datapath --help'.\n");
			return -1;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	return 0;
}

static int pin_cpu(struct opts *o)
{
	cpu_set_t set;

	if (o->cpu < 0)
		o->cpu = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	CPU_ZERO(&set);
	CPU_SET(o->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		pr_err("cannot pin to CPU %d: %s", o->cpu, strerror(errno));
		return -1;
	}
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char **argv)
{
	struct bench b = {.stats_fd = -1};
	unsigned int i, k;
	int ret = 1;

	if (parse_opts(&b.o, argc, argv))
		return 2;
	if (!isatty(STDERR_FILENO))
		b.o.quiet = true;
	if (geteuid()) {
		pr_err("needs root (BPF_PROG_TEST_RUN, bpf_enable_stats)");
		return 1;
	}
	libbpf_set_print(libbpf_quiet);
	if (pin_cpu(&b.o))
		goto out;
	/* Live-frames packets the programs pass go up the stack of the
	 * current namespace: keep them in one with nothing but a loopback. */
	if (unshare(CLONE_NEWNET)) {
		pr_err("cannot create a network namespace: %s", strerror(errno));
		goto out;
	}
	if (setup_domain(&b))
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
	if (setup_cases(&b))
		goto out;
	if (read_counters(&b, &b.cnt0))
		goto out;
	if (run_all(&b))
		goto out;
	finish_bias(&b);
	if (read_counters(&b, &b.cnt1))
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
	print_table(&b);
	if (b.o.json && write_json(&b, b.o.json))
		goto out;
	if (b.o.csv && write_csv(&b, b.o.csv))
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
	bench_xdp_bpf__destroy(b.bx);
	bench_tc_bpf__destroy(b.bt);
	splicer_bpf__destroy(b.sp);
	slicer_bpf__destroy(b.sl);
	return ret;
}
