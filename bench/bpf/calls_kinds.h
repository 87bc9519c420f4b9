/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Kinds of the calls the counting build counts (bench/bpf/calls.h), shared
 * with nfslice-bench-datapath --calls (bench/datapath_calls.c), which
 * prints them in this order.
 */
#ifndef NFSL_BENCH_CALLS_KINDS_H
#define NFSL_BENCH_CALLS_KINDS_H

enum nfsl_call_kind {
	NFSL_CALL_CLOCK,      /* bpf_ktime_get_ns, bpf_ktime_get_coarse_ns */
	NFSL_CALL_LOOKUP,     /* map lookup made as a call (hash, LPM) */
	NFSL_CALL_CSUM,       /* bpf_csum_diff */
	NFSL_CALL_LOAD,       /* bpf_xdp_load_bytes, bpf_skb_load_bytes */
	NFSL_CALL_STORE,      /* bpf_xdp_store_bytes, bpf_skb_store_bytes */
	NFSL_CALL_TAIL,       /* bpf_xdp_adjust_tail, bpf_skb_change_tail */
	NFSL_CALL_FIB,        /* bpf_fib_lookup */
	NFSL_CALL_MTU,        /* bpf_check_mtu */
	NFSL_CALL_RINGBUF,    /* bpf_ringbuf_reserve, bpf_ringbuf_submit */
	NFSL_CALL_OTHER,      /* bpf_skb_pull_data, bpf_xdp_get_buff_len */
	NFSL_CALL_CALLS,      /* the sum of the above: calls out of the program */
	NFSL_CALL_LOOKUP_INL, /* ARRAY / PERCPU_ARRAY lookup: inlined */
	NFSL_CALL_INLINED,    /* bpf_get_smp_processor_id: inlined */
	NFSL_CALL_LOOP,       /* bpf_loop: inlined, callback per iteration */
	NFSL_CALL_TAILCALL,   /* bpf_tail_call: a jump in the JIT, no call */
	NFSL_CALL_NR
};

#endif /* NFSL_BENCH_CALLS_KINDS_H */
