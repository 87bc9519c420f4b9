/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * What nfslice-pktgen's user space (userspace/nfslice-pktgen/) and its frame program
 * (userspace/nfslice-pktgen/pktgen.bpf.c) share: the frame sequence entries and the counters.
 */
#ifndef NFSL_PKTGEN_H
#define NFSL_PKTGEN_H

#include <linux/types.h>

/* Entries of the size sequence of a mix (docs/pktgen.md "Size mixes"). */
#define PKTGEN_MAX_SEQ 4096
/*
 * Largest frame: live frames live in one 4 KiB page beside the kernel's
 * headroom (256 B + its page head) and tailroom (skb_shared_info), which
 * leaves room for 3 KiB.
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

#endif /* NFSL_PKTGEN_H */
