// SPDX-License-Identifier: GPL-2.0
/*
 * Latency receiver of the benchmark suite (bench/exp_latency.py,
 * bench/exp_sizing.py, loaded by scripts/nfsl/lat.py): an XDP program on the
 * receiving veth (the server's, behind the DUT) that timestamps every frame
 * of the measuring stream on arrival and puts its one-way latency into a
 * histogram.
 *
 * The stamp is nfslice-pktgen's --stamp: 16 bytes at the start of the L4
 * payload, a 64-bit sequence number then the 64-bit TX time
 * (bpf_ktime_get_ns(), CLOCK_MONOTONIC), both big-endian (docs/pktgen.md).
 * Generator and receiver run on the same host, so arrival time
 * bpf_ktime_get_ns() minus the TX time is the one-way latency, on one clock.
 * `nfslice attach --keep 16` keeps these bytes in the sliced header, so a
 * sliced packet carries its stamp through the NF as well.
 *
 * Which frames: IPv4/IPv6 UDP or TCP frames whose destination port equals
 * lat_cfg.dport and source port lat_cfg.sport (0 = any) are the measuring
 * stream: latency into lat_hist, sequence numbers for loss, and the L4
 * checksum verified over the whole packet (a sliced packet that was not
 * spliced back, or spliced with the wrong payload, fails it: this is the
 * "payload intact" check). Other UDP/TCP frames (the load stream) are
 * counted; with lat_cfg.drop set, measuring and load frames are dropped
 * here (nothing behind listens; the stack would only answer with ICMP), and
 * everything else (ARP, ND, ...) always passes.
 *
 * Histogram (lat_hist, LAT_BUCKETS u64 counters, key = bucket): log-linear,
 * 32 sub-buckets per power of two (resolution 1/32, ~3%):
 *   ns < 64:  bucket = ns
 *   else:     m = floor(log2 ns), bucket = 64 + (m - 6) * 32 + ((ns >> (m - 5)) & 31)
 *             whose lower bound is (32 + sub) << (m - 5)
 * The last bucket also takes everything above it (~ 2^35 ns).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "nfsl_parse.h"
#include "nfsl_csum.h"

#define LAT_BUCKETS 1024
#define LAT_BUF 4096
#define LAT_MAX_IP 3200

struct lat_cfg {
	__u16 dport; /* measuring stream: destination port (host order), 0 any */
	__u16 sport; /* and source port, 0 any */
	__u32 drop;  /* drop UDP/TCP frames after counting them */
};

struct lat_stats {
	__u64 packets;    /* measuring-stream frames */
	__u64 bytes;      /* their frame lengths */
	__u64 stamped;    /* of which carried a stamp (nonzero TX time) */
	__u64 lat_sum;    /* sum of latencies, ns */
	__u64 lat_min;
	__u64 lat_max;
	__u64 negative;   /* arrival before TX time (never, on one clock) */
	__u64 seq_end;    /* highest sequence number + 1 */
	__u64 csum_ok;    /* L4 checksum verified over the whole packet */
	__u64 csum_bad;   /* L4 checksum wrong: payload not intact */
	__u64 len_min;    /* frame lengths seen */
	__u64 len_max;
	__u64 other;      /* other UDP/TCP frames (load stream) */
	__u64 other_bytes;
	__u64 passed;     /* non-UDP/TCP frames passed to the stack */
	__u64 first_ns;   /* arrival of the first / last measured frame */
	__u64 last_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lat_cfg);
} lat_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lat_stats);
} lat_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LAT_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} lat_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[LAT_BUF]);
} lat_buf SEC(".maps");

static __always_inline __u32 msb64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

static __always_inline __u32 lat_bucket(__u64 ns)
{
	__u32 m, b;

	if (ns < 64)
		return ns;
	m = msb64(ns);
	b = 64 + (m - 6) * 32 + ((ns >> (m - 5)) & 31);
	return b < LAT_BUCKETS ? b : LAT_BUCKETS - 1;
}

/* Verify the L4 checksum of the parsed packet @p over the whole packet. */
static __always_inline void verify(struct xdp_md *ctx, struct lat_stats *st,
				   const struct nfsl_pkt *p)
{
	__u32 zero = 0, iplen = p->l3end - p->l3off;
	__u32 l4 = p->l4off - p->l3off, l4len = p->l3end - p->l4off, sum;
	__u8 *buf = bpf_map_lookup_elem(&lat_buf, &zero);
	__u16 csum;

	barrier_var(iplen);
	barrier_var(l4);
	barrier_var(l4len);
	if (!buf || iplen < 1 || iplen > LAT_MAX_IP || l4 > 128 || l4len < 1 ||
	    l4len > LAT_MAX_IP)
		return;
	if (bpf_xdp_load_bytes(ctx, p->l3off, buf, iplen))
		return;
	if (!p->v6)
		sum = nfsl_csum_bytes(buf + 12, 8, 0);
	else
		sum = nfsl_csum_bytes(buf + 8, 32, 0);
	sum = nfsl_csum_add(sum, bpf_htons(p->proto));
	sum = nfsl_csum_add(sum, bpf_htons(l4len));
	csum = *(__u16 *)(buf + l4 + (p->proto == IPPROTO_UDP ? 6 : 16));
	if (p->proto == IPPROTO_UDP && csum == 0)
		return; /* no checksum: cannot tell */
	if (nfsl_csum_fold(nfsl_csum_bytes(buf + l4, l4len, sum)) == 0xffff)
		__sync_fetch_and_add(&st->csum_ok, 1);
	else
		__sync_fetch_and_add(&st->csum_bad, 1);
}

SEC("xdp")
int latency_sink(struct xdp_md *ctx)
{
	__u64 now = bpf_ktime_get_ns(); /* arrival, first thing */
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 zero = 0, len = data_end - data, b;
	struct lat_stats *st = bpf_map_lookup_elem(&lat_stats, &zero);
	struct lat_cfg *cfg = bpf_map_lookup_elem(&lat_cfg, &zero);
	struct nfsl_pkt p = {};
	__u16 sport, dport;
	__u64 seq, ts, lat, *h;
	__u8 *l4;

	if (!st || !cfg)
		return XDP_PASS;
	if (nfsl_parse(data, data_end, &p)) {
		__sync_fetch_and_add(&st->passed, 1);
		return XDP_PASS;
	}
	l4 = data + p.l4off;
	if ((void *)(l4 + 4) > data_end)
		return XDP_PASS;
	sport = bpf_ntohs(*(__u16 *)l4);
	dport = bpf_ntohs(*(__u16 *)(l4 + 2));
	if ((cfg->dport && dport != cfg->dport) ||
	    (cfg->sport && sport != cfg->sport)) {
		__sync_fetch_and_add(&st->other, 1);
		__sync_fetch_and_add(&st->other_bytes, len);
		return cfg->drop ? XDP_DROP : XDP_PASS;
	}

	__sync_fetch_and_add(&st->packets, 1);
	__sync_fetch_and_add(&st->bytes, len);
	if (!st->len_min || len < st->len_min)
		st->len_min = len;
	if (len > st->len_max)
		st->len_max = len;
	if (!st->first_ns)
		st->first_ns = now;
	st->last_ns = now;

	if (p.l3end >= p.payoff + 16 && data + p.payoff + 16 <= data_end) {
		__u8 *s = data + p.payoff;

		seq = bpf_be64_to_cpu(*(__u64 *)s);
		ts = bpf_be64_to_cpu(*(__u64 *)(s + 8));
		if (ts) {
			__sync_fetch_and_add(&st->stamped, 1);
			if (seq + 1 > st->seq_end)
				st->seq_end = seq + 1;
			if (now < ts) {
				__sync_fetch_and_add(&st->negative, 1);
			} else {
				lat = now - ts;
				__sync_fetch_and_add(&st->lat_sum, lat);
				if (!st->lat_min || lat < st->lat_min)
					st->lat_min = lat;
				if (lat > st->lat_max)
					st->lat_max = lat;
				b = lat_bucket(lat);
				h = bpf_map_lookup_elem(&lat_hist, &b);
				if (h)
					__sync_fetch_and_add(h, 1);
			}
		}
	}
	verify(ctx, st, &p);
	return cfg->drop ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
