// SPDX-License-Identifier: GPL-2.0
/*
 * The frame program of nfslice-pktgen (userspace/nfslice-pktgen/, docs/pktgen.md).
 *
 * User space runs it with BPF_PROG_RUN in live-frames mode
 * (BPF_F_TEST_XDP_LIVE_FRAMES, the technique of xdp-trafficgen): the kernel
 * puts the template frame into pages of a page pool, runs the program on
 * each, and turns every XDP_TX into a transmit out of the interface named
 * by the context's ingress_ifindex. Recycled pages keep what was written
 * into them and only their packet pointers are reset: what this program
 * wrote, and what an XDP program on the receiving veth wrote, since a veth
 * hands the page itself on (nfslice's slicer rewrites the headers there and
 * writes its token). So every run rewrites the first PKTGEN_HEAD_LEN bytes
 * of a synthetic frame from the template, writes every field that varies
 * from frame to frame, and sets the frame length from whatever the page
 * held before (grow or shrink).
 *
 * Frames:
 *   fixed  the template as given; per frame only the source port (--flows),
 *          the stamp (--stamp) and then the L4 checksum are written
 *   mix    also the length, from a sequence of sizes (map tmpls): IP and
 *          UDP lengths, IPv4 header checksum and the L4 sum come precomputed
 *   pcap   every frame copied whole from map frames, in file order
 * The payload of synthetic frames is zero, so the L4 checksum needs only
 * the precomputed sum plus the words that vary (RFC 1624 style).
 *
 * Two raw tracepoint programs count what the driver did with the frames
 * (sent, dropped) and transmit errors before it, for this process only.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "nfsl_csum.h"
#include "pktgen.h"

/* Set by user space before load (the skeleton's .rodata). */
const volatile __u32 cfg_mode = PKTGEN_FIXED;
const volatile __u32 cfg_seq_len = 1;  /* entries of tmpls / frames used */
const volatile __u32 cfg_flows = 1;    /* source ports cfg_sport.. */
const volatile __u32 cfg_sport = 1024; /* first source port, host order */
const volatile __u32 cfg_l4_sum;       /* fixed mode: pktgen_tmpl.l4_sum */
const volatile __u32 cfg_ifindex;      /* the target interface */
const volatile __u32 cfg_tgid;         /* the generator's process */
const volatile bool cfg_ipv6;
const volatile bool cfg_udp = true;
const volatile bool cfg_stamp;
/* Synthetic frames: their first bytes (headers, zero payload). */
const volatile __u8 cfg_head[PKTGEN_HEAD_LEN];
const volatile __u32 cfg_head_len;

struct pktgen_stats stats;
static __u32 seq_pos;  /* next entry of tmpls / frames */
static __u32 flow_pos; /* next flow (source port offset) */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PKTGEN_MAX_SEQ);
	__type(key, __u32);
	__type(value, struct pktgen_tmpl);
} tmpls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to the pcap's frames before load */
	__type(key, __u32);
	__type(value, struct pktgen_frame);
} frames SEC(".maps");

static __always_inline __u32 l4_off(void)
{
	return ETH_HLEN + (cfg_ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr));
}

static __always_inline __u32 l4_hlen(void)
{
	return cfg_udp ? sizeof(struct udphdr) : sizeof(struct tcphdr);
}

/* Give the frame length @len: grow or shrink from whatever it is now. */
static __always_inline int set_len(struct xdp_md *ctx, __u32 len)
{
	int delta = (int)len - (int)(ctx->data_end - ctx->data);

	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return -1;
	return 0;
}

/* Rewrite the first bytes of a synthetic frame from the template (see the
 * top of this file for why). */
static __always_inline int restore_head(struct xdp_md *ctx)
{
	/* The mask tells the verifier the length's upper bits are zero (a
	 * pointer difference is an unknown scalar to it), so the bounds below
	 * hold for the helper's length argument. */
	__u64 n = (ctx->data_end - ctx->data) & 0xffff;

	if (n > (__u64)cfg_head_len)
		n = cfg_head_len;
	if (n < 1 || n > PKTGEN_HEAD_LEN)
		return -1;
	return bpf_xdp_store_bytes(ctx, 0, (void *)cfg_head, n);
}

/* Mix mode: length fields of the synthetic frame from sequence entry @t. */
static __always_inline int set_lengths(struct xdp_md *ctx,
				       const struct pktgen_tmpl *t)
{
	void *data, *data_end;

	if (set_len(ctx, t->len) || restore_head(ctx))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + l4_off() + sizeof(struct udphdr) > data_end)
		return -1;
	if (cfg_ipv6) {
		struct ipv6hdr *ip6 = data + ETH_HLEN;

		ip6->payload_len = t->l3_len;
	} else {
		struct iphdr *iph = data + ETH_HLEN;

		iph->tot_len = t->l3_len;
		iph->check = t->ip_csum;
	}
	if (cfg_udp) {
		struct udphdr *udp = data + l4_off();

		udp->len = t->udp_len;
	}
	return 0;
}

/* Pcap mode: the next frame of the file, whole. */
static __always_inline int pcap_frame(struct xdp_md *ctx)
{
	struct pktgen_frame *f;
	__u32 idx = seq_pos, len;

	if (cfg_seq_len == 1)
		return 0; /* the template is the only frame: nothing changes */
	if (++seq_pos >= cfg_seq_len)
		seq_pos = 0;
	f = bpf_map_lookup_elem(&frames, &idx);
	if (!f)
		return -1;
	len = f->len;
	if (len < ETH_HLEN || len > PKTGEN_MAX_FRAME)
		return -1;
	if (set_len(ctx, len))
		return -1;
	return bpf_xdp_store_bytes(ctx, 0, f->data, len) ? -1 : 0;
}

SEC("xdp")
int pktgen(struct xdp_md *ctx)
{
	const struct pktgen_tmpl *t;
	void *data, *data_end, *l4;
	__u64 seq = stats.runs++;
	__u32 sum = cfg_l4_sum;
	__u16 sport;

	if (cfg_mode == PKTGEN_PCAP) {
		if (pcap_frame(ctx))
			goto err;
		goto tx;
	}
	if (cfg_mode == PKTGEN_MIX) {
		__u32 idx = pktgen_mix_next(&seq_pos, &flow_pos, cfg_seq_len, cfg_flows);

		t = bpf_map_lookup_elem(&tmpls, &idx);
		if (!t || set_lengths(ctx, t))
			goto err;
		sum = t->l4_sum;
	} else {
		if (restore_head(ctx))
			goto err;
		if (cfg_flows == 1 && !cfg_stamp)
			goto tx; /* the template frame as it is */
	}

	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	l4 = data + l4_off();
	if (l4 + l4_hlen() + (cfg_stamp ? PKTGEN_STAMP_LEN : 0) > data_end)
		goto err;

	sport = bpf_htons(cfg_sport + pktgen_flow_next(&flow_pos, cfg_flows));
	pktgen_l4_finish(l4, cfg_udp, sum, sport, cfg_stamp, bpf_cpu_to_be64(seq),
			 cfg_stamp ? bpf_cpu_to_be64(bpf_ktime_get_ns()) : 0);
tx:
	stats.tx++;
	return XDP_TX;
err:
	stats.errors++;
	return XDP_DROP;
}

/* Just what the tracepoint programs read: CO-RE finds the field. */
struct net_device {
	int ifindex;
} __attribute__((preserve_access_index));

static __always_inline bool ours(const struct net_device *dev)
{
	return (bpf_get_current_pid_tgid() >> 32) == cfg_tgid &&
	       BPF_CORE_READ(dev, ifindex) == (int)cfg_ifindex;
}

/*
 * A bulk transmit of queued frames (XDP_TX of live frames goes through the
 * devmap bulk queue): @sent taken by the driver, @drops refused (a veth
 * refuses all when its peer has no XDP program, and what its ring cannot
 * hold). XDP_TX sends out of the receiving device, so from == to; frames an
 * XDP program on the peer redirects elsewhere in our softirq do not count.
 */
SEC("raw_tp/xdp_devmap_xmit")
int BPF_PROG(pktgen_devmap_xmit, const struct net_device *from_dev,
	     const struct net_device *to_dev, int sent, int drops, int err)
{
	if (from_dev != to_dev || !ours(to_dev))
		return 0;
	stats.drv_sent += sent;
	stats.drv_drops += drops;
	stats.drv_calls++;
	return 0;
}

/* A frame refused before the driver (e.g. longer than the MTU allows). */
SEC("raw_tp/xdp_redirect_err")
int BPF_PROG(pktgen_redirect_err, const struct net_device *dev)
{
	if (ours(dev))
		stats.redir_err++;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
