/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Network functions of nfslice-nf (docs/xsk.md, issue 9): pure functions
 * over bursts of frames, testable without sockets, root or a clock.
 *
 * An NF reads and rewrites headers in place and gives each frame a
 * verdict: the device index to send it from, or NFSL_NF_DROP. It never
 * reads past the L4 header plus the domain's keep bytes, so it runs
 * unchanged on full frames and on sliced headers (NFSlicer §V Table I,
 * PayloadPark §6.1: shallow NFs), and learns the original IP length of a
 * sliced frame from the datapath (orig_len), never from its own bytes.
 *
 * State: init builds what the workers share (a classifier, a Maglev
 * table), read-only while traffic runs; worker builds each worker's own
 * (connection tables, NAT ports, meters), so a burst takes no lock.
 * Steering sends both directions of a flow to one worker
 * (include/nfsl_flow.h), which is what per-worker connection state needs.
 */
#ifndef NFSL_NF_H
#define NFSL_NF_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define NFSL_NF_DROP 0xffff
/* The program the NFs run in, for their warnings. */
#define NFSL_NF_PROG "nfslice-nf"
#define NFSL_NF_MAX_CHAIN 8

struct nfsl_nf_pkt {
	__u8 *data;     /* Ethernet frame */
	__u32 len;      /* its bytes (a sliced header's, when sliced) */
	__u32 orig_len; /* IP length of the packet before slicing, bytes;
			 * the frame's own IP length when it is not sliced;
			 * filled only for NFs that ask (ops.orig_len) */
	__u16 in;       /* device index it arrived on */
	__u16 out;      /* verdict: device index to send from, NFSL_NF_DROP */
};

/* What a burst knows besides its frames. */
struct nfsl_nf_ctx {
	__u64 now_ns;          /* CLOCK_MONOTONIC, or a test's clock */
	unsigned int worker;   /* this worker, 0..nworkers-1 */
	unsigned int nworkers;
	unsigned int ndevs;    /* devices of the datapath (1 or 2) */
};

/* Options of one NF, as nfslice-nf parsed them: NAME=VALUE strings
 * (e.g. "rules=/etc/fw.rules"), the NF parses its own. */
struct nfsl_nf_conf {
	const char *const *kv; /* NULL-terminated */
	unsigned int nworkers;
	unsigned int ndevs;
	const char *const *devs; /* the ndevs interface names, device index order;
				  * NULL in tests that have none */
};

struct nfsl_nf_ops {
	const char *name;
	const char *help; /* one line: what it does and its options */
	bool orig_len;    /* it reads nfsl_nf_pkt.orig_len (else left 0) */
	/* Shared state from @conf; *@shared may stay NULL. Returns 0 or
	 * -errno with a message naming the problem and the fix in @err. */
	int (*init)(void **shared, const struct nfsl_nf_conf *conf, char *err,
		    size_t errlen);
	/* Worker @w's own state; NULL when the NF keeps none. */
	void *(*worker)(void *shared, unsigned int w, unsigned int nworkers);
	/* Process @n frames: set each one's out (and rewrite headers). Frames
	 * already dropped (out == NFSL_NF_DROP on entry, by an earlier NF of a
	 * chain) are left alone. */
	void (*burst)(void *shared, void *mine, struct nfsl_nf_pkt *p, unsigned int n,
		      const struct nfsl_nf_ctx *ctx);
	void (*worker_fini)(void *mine);
	/* Worker state @mine's counters, for reports: up to @max names (static
	 * strings) and values; returns how many. Read from another thread
	 * while the worker runs: values may be a burst behind. */
	unsigned int (*counters)(void *mine, const char **names, __u64 *vals,
				 unsigned int max);
	void (*fini)(void *shared);
};

/*
 * nfsl_nf_list - the body of an NF's counters op: copy the @n values @v,
 * named @all, into @names and @vals, at most @max. Returns how many. For
 * counters kept as a struct of __u64 fields in X-macro order, @v is the
 * struct and @all the names the same X-macro makes.
 */
static inline unsigned int nfsl_nf_list(const char *const *all, const __u64 *v,
					unsigned int n, const char **names, __u64 *vals,
					unsigned int max)
{
	unsigned int k;

	for (k = 0; k < n && k < max; k++) {
		names[k] = all[k];
		vals[k] = v[k];
	}
	return k;
}

/* Every NF --nf can name, NULL-terminated; nfsl_nf_find: by name or NULL. */
extern const struct nfsl_nf_ops *const nfsl_nf_all[];
const struct nfsl_nf_ops *nfsl_nf_find(const char *name);

#endif /* NFSL_NF_H */
