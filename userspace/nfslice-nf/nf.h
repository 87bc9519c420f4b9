/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nfslice-nf: user-space NFs (userspace/lib/nf) on AF_XDP sockets (userspace/lib/xsk),
 * docs/xsk.md.
 */
#ifndef NF_H
#define NF_H

#include <stdbool.h>
#include <linux/types.h>

#include "nf/nfsl_nf.h"
#include "xsk/nfsl_xsk.h"

#define NF_NAME "nfslice-nf"

/* The NFs a frame goes through, in order (--nf A,B,...). */
struct nf_chain {
	int n;
	const struct nfsl_nf_ops *ops[NFSL_NF_MAX_CHAIN];
	void *shared[NFSL_NF_MAX_CHAIN];
};

#define NF_MAX_KV 32

/* Options of nfslice-nf. */
struct nf_opts {
	char *dev;          /* IFACE[,IFACE] */
	__u32 workers;
	int rx;             /* enum nfsl_xsk_rx */
	char *nf;           /* NF[,NF...]: the chain */
	char *name;         /* domain: inline slicing */
	__u32 ax, bx, frames;
	__u32 interval;     /* seconds between reports, 0: none */
	__u32 duration;     /* seconds, 0: until SIGINT/SIGTERM */
	__u32 cpu;          /* CPU for the workers, if has_cpu; else any */
	bool has_cpu;       /* --cpu given */
	char *stall;        /* WORKER:AFTER_MS:FOR_MS */
	char *slow;         /* WORKER:USEC */
	bool json;
	bool drop_notice;   /* park: drop notices for dropped sliced headers */
	__u32 busy_poll;    /* us a worker keeps polling before it sleeps */
	/* options of the NFs (nf_opt_map in main.c): given as text, each NF
	 * parses and checks its own */
	char *nf_opt;       /* NF.KEY=VALUE[,NF.KEY=VALUE...] */
	char *rules, *fw_default, *ext_ip, *start_port, *max_flows, *expire,
		*backends, *cir, *cbs, *ebs;
};

/* What the workers counted and the datapath saw, for a report. */
struct nf_report {
	const struct nf_opts *o;
	const char *chain;  /* the NFs, as given */
	const struct nf_chain *nfs;
	void *mine[NFSL_XSK_MAX_WORKERS][NFSL_NF_MAX_CHAIN]; /* their worker states */
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
