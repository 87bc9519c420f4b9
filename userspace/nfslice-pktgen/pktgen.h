/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * What nfslice-pktgen's user space (userspace/nfslice-pktgen/) and its frame program
 * (userspace/nfslice-pktgen/pktgen.bpf.c) share: the frame sequence entries and the counters.
 */
#ifndef NFSL_PKTGEN_H
#define NFSL_PKTGEN_H

#include <linux/types.h>

#include "nfsl_csum.h"

/* Entries of the size sequence of a mix (docs/pktgen.md "Size mixes"). */
#define PKTGEN_MAX_SEQ 4096
/*
 * Largest live frame: live frames live in one 4 KiB page beside the kernel's
 * headroom (256 B + its page head) and tailroom (skb_shared_info), which
 * leaves room for 3 KiB. The kernel refuses live mode for more (EINVAL,
 * also for a BPF_F_XDP_HAS_FRAGS program: net/bpf/test_run.c "disallow
 * live data mode for jumbo frames"), so larger synthetic frames take the
 * socket path (userspace/nfslice-pktgen/sock.c) and pcap frames stop here.
 */
#define PKTGEN_MAX_FRAME 3072
/*
 * Bytes of a synthetic frame rewritten from the template on every run: the
 * L2-L4 headers and the first payload bytes, as far as a slicer's token can
 * reach (14 + 40 + 20 + nfslice's largest --keep, 192, + its 16-byte token).
 */
#define PKTGEN_HEAD_LEN 288
/* Sequence number + TX timestamp at the start of the payload (--stamp). */
#define PKTGEN_STAMP_LEN 16

enum pktgen_mode {
	PKTGEN_FIXED, /* one synthetic frame size */
	PKTGEN_MIX,   /* synthetic frames, sizes from the sequence map */
	PKTGEN_PCAP,  /* frames of a pcap file, from the frames map */
};

/*
 * One entry of the size sequence: the fields of the synthetic frame that
 * depend on its length, precomputed by user space. Memory order = as the
 * bytes sit in the frame.
 */
struct pktgen_tmpl {
	__u16 len;     /* frame bytes, without FCS */
	__u16 l3_len;  /* IPv4 total length / IPv6 payload length, memory order */
	__u16 ip_csum; /* IPv4 header checksum for that length, memory order */
	__u16 udp_len; /* UDP length field, memory order (TCP: 0) */
	/* Ones' complement sum (not folded, not inverted) of the L4 pseudo
	 * header and the L4 segment with source port, checksum and stamp 0. */
	__u32 l4_sum;
	__u32 pad;
};

/* One frame of a pcap file. */
struct pktgen_frame {
	__u32 len;
	__u8 data[PKTGEN_MAX_FRAME];
};

/*
 * Counters of a run (the frame program's .bss). Only the generator's thread
 * runs the program and the tracepoint programs count only its own work, so
 * the counters are plain (no atomics, no per-CPU copies).
 */
struct pktgen_stats {
	__u64 runs;      /* frames the program was run on */
	__u64 tx;        /* frames it returned XDP_TX for */
	__u64 errors;    /* frames it dropped: template missing, tail adjust */
	__u64 drv_sent;  /* frames the driver took (xdp:xdp_devmap_xmit) */
	__u64 drv_drops; /* frames the driver refused (same tracepoint) */
	__u64 drv_calls; /* bulk transmits seen by that tracepoint */
	__u64 redir_err; /* frames refused before the driver (xdp:xdp_redirect_err) */
};

/*
 * The per-frame steps both senders take (the frame program for live frames,
 * sock.c for the socket path), so both send the same frames in the same
 * order.
 */

/*
 * pktgen_mix_next - the sequence entry of the next frame of a mix, and the
 * flow shift: one flow further per pass over the sequence, so every flow
 * meets every size even if the flow count and the sequence length have a
 * common divisor. @pos, @flow: the sender's cursors.
 */
NFSL_INLINE __u32 pktgen_mix_next(__u32 *pos, __u32 *flow, __u32 seq_len,
				  __u32 flows)
{
	__u32 idx = *pos;

	if (++*pos >= seq_len) {
		*pos = 0;
		if (++*flow >= flows)
			*flow = 0;
	}
	return idx;
}

/* pktgen_flow_next - the flow of this frame (0..@flows-1), round robin. */
NFSL_INLINE __u32 pktgen_flow_next(__u32 *flow, __u32 flows)
{
	__u32 f = *flow;

	if (flows > 1 && ++*flow >= flows)
		*flow = 0;
	return f;
}

/*
 * pktgen_l4_finish - the fields of a synthetic frame that vary per frame,
 * at its L4 header @l4 (UDP if @udp, else TCP): the source port @sport
 * (memory order), with @stamp the sequence number @seq_be and TX time
 * @ns_be (CLOCK_MONOTONIC ns; both big-endian, PKTGEN_STAMP_LEN bytes
 * right after the L4 header), and the L4 checksum from @sum, the
 * template's sum without them (struct pktgen_tmpl.l4_sum; RFC 1624 style,
 * the payload is zero). The caller checked that the bytes are there.
 */
NFSL_INLINE void pktgen_l4_finish(void *l4, bool udp, __u32 sum, __u16 sport,
				  bool stamp, __u64 seq_be, __u64 ns_be)
{
	__u16 *check = (__u16 *)((__u8 *)l4 + (udp ? 6 : 16));

	*(__u16 *)l4 = sport; /* source port: offset 0 in UDP and TCP */
	sum = nfsl_csum_add(sum, sport);
	if (stamp) {
		__u64 *st = (__u64 *)((__u8 *)l4 + (udp ? 8 : 20));

		st[0] = seq_be;
		st[1] = ns_be;
		sum = nfsl_csum_add(sum, (__u32)seq_be);
		sum = nfsl_csum_add(sum, (__u32)(seq_be >> 32));
		sum = nfsl_csum_add(sum, (__u32)ns_be);
		sum = nfsl_csum_add(sum, (__u32)(ns_be >> 32));
	}
	*check = nfsl_csum_final((__u16)~nfsl_csum_fold(sum), udp);
}

#endif /* NFSL_PKTGEN_H */
