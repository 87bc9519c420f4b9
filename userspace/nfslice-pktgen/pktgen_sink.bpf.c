// SPDX-License-Identifier: GPL-2.0
/*
 * Receiver for tests of nfslice-pktgen (tests/integration/test_pktgen.py):
 * an XDP program that checks and counts what arrives, then drops it.
 *
 * Maps (the test reads them with bpftool):
 *   sink_stats    one struct sink_stats
 *   sink_sizes    frames per frame length (key: length in bytes)
 *   sink_flows    frames per L4 source port (key: port, host order)
 *   sink_seen     bitmap of the --stamp sequence numbers seen (below
 *                 SINK_SEQ_MAX), for missing / duplicate numbers
 *   sink_samples  the first SINK_SAMPLES frames, whole (up to 2048 B)
 *
 * Every UDP/TCP frame has its IPv4 header checksum and its L4 checksum
 * verified over the whole packet. The stamp is read where nfslice-pktgen
 * writes it: 16 bytes at the start of the L4 payload, a 64-bit sequence
 * number then a 64-bit CLOCK_MONOTONIC timestamp (ns), both big-endian; a
 * zero timestamp means the frame carries no stamp.
 *
 * One receive queue: the veth runs this program in one NAPI context at a
 * time, so plain updates of the stats suffice.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "nfsl_parse.h"
#include "nfsl_csum.h"

#define SINK_SEQ_MAX (1u << 20)
#define SINK_SAMPLES 64
#define SINK_SAMPLE_LEN 2048
#define SINK_BUF 4096
#define SINK_MAX_IP 3200 /* longest IP packet checked */

struct sink_stats {
	__u64 packets;     /* every frame */
	__u64 bytes;       /* their lengths */
	__u64 unparsed;    /* not a well-formed IPv4/IPv6 + UDP/TCP frame */
	__u64 ip_csum_bad; /* IPv4 header checksum wrong */
	__u64 l4_csum_ok;  /* UDP/TCP checksum verified */
	__u64 l4_csum_bad; /* UDP/TCP checksum wrong */
	__u64 l4_csum_none; /* UDP checksum 0 (none) */
	__u64 stamped;     /* frames with a stamp (nonzero timestamp) */
	__u64 seq_dup;     /* stamp sequence numbers seen before */
	__u64 seq_big;     /* sequence numbers >= SINK_SEQ_MAX (not tracked) */
	__u64 seq_end;     /* highest sequence number seen + 1 */
	__u64 lat_sum;     /* sum of (arrival - stamp) ns */
	__u64 lat_min;
	__u64 lat_max;
	__u64 first_ns;    /* arrival of the first frame (bpf_ktime_get_ns) */
	__u64 last_ns;     /* arrival of the last frame */
};

struct sink_sample {
	__u32 len; /* frame length; data holds the first SINK_SAMPLE_LEN bytes */
	__u8 data[SINK_SAMPLE_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sink_stats);
} sink_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SINK_BUF);
	__type(key, __u32);
	__type(value, __u64);
} sink_sizes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} sink_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SINK_SEQ_MAX / 64);
	__type(key, __u32);
	__type(value, __u64);
} sink_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SINK_SAMPLES);
	__type(key, __u32);
	__type(value, struct sink_sample);
} sink_samples SEC(".maps");

/* Scratch copy of the IP packet for the checksums. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[SINK_BUF]);
} sink_buf SEC(".maps");

static __always_inline void count_in(void *map, __u32 key)
{
	__u64 one = 1, *v = bpf_map_lookup_elem(map, &key);

	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bpf_map_update_elem(map, &key, &one, BPF_NOEXIST);
}

static __always_inline void sample(struct xdp_md *ctx, __u32 idx, __u32 len)
{
	struct sink_sample *s = bpf_map_lookup_elem(&sink_samples, &idx);
	__u32 n = len;

	if (!s)
		return;
	s->len = len;
	if (n > SINK_SAMPLE_LEN)
		n = SINK_SAMPLE_LEN;
	barrier_var(n); /* bound the register the helper gets */
	if (n >= 1 && n <= SINK_SAMPLE_LEN)
		bpf_xdp_load_bytes(ctx, 0, s->data, n);
}

static __always_inline void stamp(struct sink_stats *st, const __u8 *p)
{
	__u64 seq = bpf_be64_to_cpu(*(const __u64 *)p);
	__u64 ts = bpf_be64_to_cpu(*(const __u64 *)(p + 8));
	__u64 now = bpf_ktime_get_ns(), bit, old, *w;
	__u32 word;

	if (!ts)
		return;
	st->stamped++;
	if (seq + 1 > st->seq_end)
		st->seq_end = seq + 1;
	if (now >= ts) {
		__u64 lat = now - ts;

		st->lat_sum += lat;
		if (!st->lat_min || lat < st->lat_min)
			st->lat_min = lat;
		if (lat > st->lat_max)
			st->lat_max = lat;
	}
	if (seq >= SINK_SEQ_MAX) {
		st->seq_big++;
		return;
	}
	word = seq / 64;
	bit = 1ULL << (seq % 64);
	w = bpf_map_lookup_elem(&sink_seen, &word);
	if (!w)
		return;
	old = __sync_fetch_and_or(w, bit);
	if (old & bit)
		st->seq_dup++;
}

/* Count the flow of the parsed packet @p, verify its checksums, read its
 * stamp. */
static __always_inline void check(struct xdp_md *ctx, struct sink_stats *st,
				  const struct nfsl_pkt *p)
{
	__u32 zero = 0, iplen = p->l3end - p->l3off;
	__u32 l4 = p->l4off - p->l3off, l4len = p->l3end - p->l4off;
	__u32 pay = p->payoff - p->l3off, sum;
	__u8 *buf = bpf_map_lookup_elem(&sink_buf, &zero);
	__u16 csum;

	barrier_var(iplen);
	barrier_var(l4);
	barrier_var(l4len);
	barrier_var(pay);
	if (!buf || iplen < 1 || iplen > SINK_MAX_IP || l4 > 128 ||
	    l4len < 1 || l4len > SINK_MAX_IP || pay > SINK_MAX_IP)
		return;
	if (bpf_xdp_load_bytes(ctx, p->l3off, buf, iplen))
		return;
	count_in(&sink_flows, bpf_ntohs(*(__u16 *)(buf + l4)));
	if (!p->v6) {
		/* IPv4 header (l4 = its length, at least 20) sums to -0. */
		if (l4 < 20 || nfsl_csum_fold(nfsl_csum_bytes(buf, l4, 0)) != 0xffff)
			st->ip_csum_bad++;
		sum = nfsl_csum_bytes(buf + 12, 8, 0);
	} else {
		sum = nfsl_csum_bytes(buf + 8, 32, 0);
	}
	sum = nfsl_csum_add(sum, bpf_htons(p->proto));
	sum = nfsl_csum_add(sum, bpf_htons(l4len));
	csum = *(__u16 *)(buf + l4 + (p->proto == IPPROTO_UDP ? 6 : 16));
	if (p->proto == IPPROTO_UDP && csum == 0)
		st->l4_csum_none++;
	else if (nfsl_csum_fold(nfsl_csum_bytes(buf + l4, l4len, sum)) == 0xffff)
		st->l4_csum_ok++;
	else
		st->l4_csum_bad++;
	if (p->l3end - p->payoff >= 16 && pay + 16 <= SINK_MAX_IP)
		stamp(st, buf + pay);
}

SEC("xdp")
int pktgen_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 zero = 0, len = data_end - data;
	struct sink_stats *st = bpf_map_lookup_elem(&sink_stats, &zero);
	struct nfsl_pkt p = {};
	__u64 now = bpf_ktime_get_ns(), n;

	if (!st)
		return XDP_DROP;
	n = st->packets++;
	st->bytes += len;
	if (!st->first_ns)
		st->first_ns = now;
	st->last_ns = now;
	if (n < SINK_SAMPLES)
		sample(ctx, n, len);
	count_in(&sink_sizes, len < SINK_BUF ? len : SINK_BUF - 1);

	if (nfsl_parse(data, data_end, &p)) {
		st->unparsed++;
		return XDP_DROP;
	}
	check(ctx, st, &p);
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
