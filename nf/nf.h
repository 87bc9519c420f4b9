/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nfslice-nf: a user-space NF on AF_XDP sockets (lib/xsk, docs/xsk.md).
 *
 * An NF is a pure function over a burst of frames: it reads and rewrites
 * headers in place and gives each frame a verdict, the device to send it
 * out of or NF_DROP. It never reads past the L4 header (plus the domain's
 * keep bytes), so it runs unchanged on full and on sliced frames, and is
 * testable without sockets or root.
 */
#ifndef NF_H
#define NF_H

#include <stdbool.h>
#include <linux/types.h>

#include "nfsl_xsk.h"

#define NF_NAME "nfslice-nf"
#define NF_DROP 0xffff

struct nf_pkt {
	__u8 *data; /* Ethernet frame */
	__u32 len;  /* bytes */
	__u16 in;   /* device index it arrived on */
	__u16 out;  /* verdict: device index to send from, or NF_DROP */
};

struct nf_ops {
	const char *name;
	/* Process @n frames that arrived on a datapath of @ndevs devices. */
	void (*burst)(struct nf_pkt *p, unsigned int n, unsigned int ndevs);
};

/* The NFs --nf can name; NULL-terminated. */
extern const struct nf_ops *const nf_all[];

/* Options of nfslice-nf. */
struct nf_opts {
	char *dev;          /* IFACE[,IFACE] */
	__u32 workers;
	int rx;             /* enum nfsl_xsk_rx */
	int nf;             /* index into nf_all */
	char *name;         /* domain: inline slicing */
	__u32 ax, bx, frames;
	__u32 interval;     /* seconds between reports, 0: none */
	__u32 duration;     /* seconds, 0: until SIGINT/SIGTERM */
	__u32 cpu;          /* CPU for the workers, UINT32_MAX: any */
	char *stall;        /* WORKER:AFTER_MS:FOR_MS */
	char *slow;         /* WORKER:USEC */
	bool json;
};

/* What the workers counted and the datapath saw, for a report. */
struct nf_report {
	const struct nf_opts *o;
	struct nfsl_xsk *x;
	double elapsed_s;
	bool final;
	/* peaks of the working set over the run, frames */
	__u64 peak_posted, peak_inflight, peak_written;
	struct nfsl_xsk_wset_snap ws; /* last sample */
	struct nfsl_xsk_kstats ks;
};

/* nf_report_sample - take a working-set sample (every 100 ms: it rolls
 * the window) and keep the peaks. nf_report - print a report (text, or a
 * JSON object on one line with --json) with a fresh sample. */
void nf_report_sample(struct nf_report *r);
void nf_report(struct nf_report *r);

#endif /* NF_H */
