// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice-bench-datapath --calls: the calls out of the slicer and the
 * splicer per packet, by kind (docs/benchmarks.md "Helper calls per
 * packet"). Runs the counting builds (bench/bpf/calls.h) once per case on
 * the domain of the timed runs: the slicer on the case's frame, first
 * missing its route verdict cache (slicer-miss: the FIB lookup), then
 * hitting it (slicer: every later packet of the flow), the splicer on what
 * it sliced, and the splicer on the unsliced frame with a trailer that is
 * no token of ours (its not-ours path). Exact counts of one packet each,
 * not samples.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/tcp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "datapath.h"
#include "nfsl_csum.h"
#include "nfsl_token.h"
#include "bpf/calls_kinds.h"

#include "slicer.skel.h"
#include "slicer_calls.skel.h"
#include "splicer_calls.skel.h"

static const char *const kind_names[NFSL_CALL_NR] = {
	[NFSL_CALL_CLOCK] = "clock",     [NFSL_CALL_LOOKUP] = "lookup",
	[NFSL_CALL_CSUM] = "csum_diff",  [NFSL_CALL_LOAD] = "load",
	[NFSL_CALL_STORE] = "store",     [NFSL_CALL_TAIL] = "tail",
	[NFSL_CALL_FIB] = "fib",         [NFSL_CALL_MTU] = "mtu",
	[NFSL_CALL_RINGBUF] = "ringbuf",
	[NFSL_CALL_OTHER] = "other",     [NFSL_CALL_CALLS] = "CALLS",
	[NFSL_CALL_LOOKUP_INL] = "lookup-inl", [NFSL_CALL_INLINED] = "cpu-inl",
	[NFSL_CALL_LOOP] = "bpf_loop",   [NFSL_CALL_TAILCALL] = "tailcall",
};

/* Run @fd once on @in (@len bytes) with its counters @calls zeroed; the
 * sum of the real calls into @calls[NFSL_CALL_CALLS]. */
static int count_run(struct bench *b, enum hook hook, int fd, __u64 *calls, const void *in,
		     unsigned int len, unsigned int *out_len, __u32 *ret)
{
	int err;

	memset(calls, 0, NFSL_CALL_NR * sizeof(*calls));
	err = dp_run_once(b, hook, fd, in, len, out_len, ret, NULL);
	if (err)
		return pr_err("test run failed: %s", strerror(-err)), err;
	for (int k = 0; k < NFSL_CALL_CALLS; k++)
		calls[NFSL_CALL_CALLS] += calls[k];
	return 0;
}

static void print_row(const char *path, const struct bcase *c, const __u64 *calls)
{
	printf("%-15s %5u %-4s", path, c->size, c->proto == IPPROTO_TCP ? "tcp" : "udp");
	for (int k = 0; k < NFSL_CALL_NR; k++)
		printf(" %*llu", (int)strlen(kind_names[k]) > 3 ? (int)strlen(kind_names[k]) : 3,
		       (unsigned long long)calls[k]);
	printf("\n");
}

/* @c's TCP frame with the options a Linux segment carries (NOP, NOP,
 * timestamps: 12 B) after the fixed header, its payload 12 B shorter,
 * the checksum valid; into @f. Returns the payload's offset. */
static unsigned int with_timestamps(const struct bcase *c, __u8 *f)
{
	static const __u8 opts[12] = { 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2 };
	unsigned int l4 = ETH_HLEN + (c->v6 ? 40 : 20), l4len = c->size - l4;
	struct tcphdr *tcp = (struct tcphdr *)(f + l4);
	__u32 s;

	memcpy(f, c->pkt, c->size);
	memcpy(f + l4 + sizeof(*tcp), opts, sizeof(opts));
	tcp->doff = (sizeof(*tcp) + sizeof(opts)) / 4;
	tcp->check = 0;
	/* pseudo header: the addresses, the protocol, the L4 length */
	s = c->v6 ? nfsl_csum_bytes(f + ETH_HLEN + 8, 32, 0) : nfsl_csum_bytes(f + ETH_HLEN + 12, 8, 0);
	s = nfsl_csum_add(s, htons(IPPROTO_TCP));
	s = nfsl_csum_add(s, htons(l4len));
	tcp->check = ~nfsl_csum_fold(nfsl_csum_bytes(tcp, l4len, s));
	return l4 + sizeof(*tcp) + sizeof(opts);
}

/* Slice @in (@len bytes, payload at @payoff) with the counting slicer,
 * splice the result back with the counting splicer, and print both rows
 * (@sname, @pname; no splicer row when @pname is NULL). 0, or -1 when
 * either did not do its work. */
static int count_pair(struct bench *b, struct bcase *c, struct slicer_calls_bpf *sl,
		      struct splicer_calls_bpf *sp, const __u8 *in, unsigned int len,
		      unsigned int payoff, const char *sname, const char *pname)
{
	static __u8 sliced[PKT_BUF];
	unsigned int slen, olen;
	__u32 ret;

	if (count_run(b, HOOK_XDP, bpf_program__fd(sl->progs.nfsl_slicer), sl->bss->nfsl_calls,
		      in, len, &slen, &ret))
		return -1;
	if (ret != XDP_PASS || slen != payoff + NFSL_TOKEN_LEN) {
		pr_err("the counting slicer did not slice the %u B frame (%s)", len, sname);
		return -1;
	}
	print_row(sname, c, sl->bss->nfsl_calls);
	memcpy(sliced, b->out, slen);
	if (count_run(b, HOOK_TC, bpf_program__fd(sp->progs.nfsl_splicer), sp->bss->nfsl_calls,
		      sliced, slen, &olen, &ret))
		return -1;
	if (ret != (__u32)TC_ACT_UNSPEC || olen != len || memcmp(b->out, in, len)) {
		pr_err("the counting splicer did not splice the %u B frame (%s)", len, pname);
		return -1;
	}
	if (pname)
		print_row(pname, c, sp->bss->nfsl_calls);
	return 0;
}

/* Open and load the counting slicer and splicer on @b's domain maps. */
static int load_counting(struct bench *b, struct slicer_calls_bpf **sl, struct splicer_calls_bpf **sp)
{
	int err;

	*sl = slicer_calls_bpf__open();
	*sp = splicer_calls_bpf__open();
	if (!*sl || !*sp)
		return pr_err("cannot open the counting builds: %s", strerror(errno)), -1;
	if (dp_reuse_maps((*sl)->maps.nfsl_store, (*sl)->maps.nfsl_config,
			  (*sl)->maps.nfsl_counters, (*sl)->maps.nfsl_cursor, b->sl) ||
	    dp_reuse_maps((*sp)->maps.nfsl_store, (*sp)->maps.nfsl_config,
			  (*sp)->maps.nfsl_counters, (*sp)->maps.nfsl_cursor, b->sl))
		return -1;
	err = slicer_calls_bpf__load(*sl);
	if (!err)
		err = splicer_calls_bpf__load(*sp);
	if (err)
		return pr_err("cannot load the counting builds: %s", strerror(-err)), -1;
	return 0;
}

int dp_calls(struct bench *b)
{
	struct slicer_calls_bpf *sl = NULL;
	struct splicer_calls_bpf *sp = NULL;
	static __u8 foreign[PKT_BUF];
	unsigned int len;
	int err = -1, fsp;
	__u32 ret;

	if (load_counting(b, &sl, &sp))
		goto out;
	fsp = bpf_program__fd(sp->progs.nfsl_splicer);
	printf("%-15s %5s %-4s", "path", "bytes", "l4");
	for (int k = 0; k < NFSL_CALL_NR; k++)
		printf(" %3s", kind_names[k]);
	printf("\n");
	for (unsigned int i = 0; i < b->ncases; i++) {
		struct bcase *c = &b->cases[i];

		if (c->sliced) {
			if (count_pair(b, c, sl, sp, c->pkt, c->size, c->payoff, "slicer-miss",
				       NULL) ||
			    count_pair(b, c, sl, sp, c->pkt, c->size, c->payoff, "slicer",
				       "splicer"))
				goto out;
			if (c->proto == IPPROTO_TCP &&
			    count_pair(b, c, sl, sp, foreign, c->size, with_timestamps(c, foreign),
				       "slicer+ts", "splicer+ts"))
				goto out;
		}
		/* Not ours: a trailer whose slot word names a parked length
		 * no slice has (0), so that no pre-check lets it through. */
		memcpy(foreign, c->pkt, c->size);
		memset(foreign + c->size - NFSL_TOKEN_LEN, 0xa5, NFSL_TOKEN_LEN);
		memset(foreign + c->size - NFSL_TOKEN_LEN, 0, 4);
		if (count_run(b, HOOK_TC, fsp, sp->bss->nfsl_calls, foreign, c->size, &len, &ret))
			goto out;
		if (ret != (__u32)TC_ACT_UNSPEC || len != c->size) {
			pr_err("the counting splicer did not pass the unsliced %u B frame", c->size);
			goto out;
		}
		print_row("splicer-foreign", c, sp->bss->nfsl_calls);
	}
	err = 0;
out:
	splicer_calls_bpf__destroy(sp);
	slicer_calls_bpf__destroy(sl);
	return err;
}
