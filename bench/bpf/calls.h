/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Counting build of the slicer and the splicer, for nfslice-bench-datapath
 * --calls only (docs/benchmarks.md "Helper calls per packet"): every
 * helper, kfunc and map lookup the program's source makes is counted, by
 * kind, into nfsl_calls[] (.bss, read by the driver after one test run),
 * then made as in the production object. Each call out of a BPF program
 * pays a return thunk here (~20 ns, SRSO); a lookup of an ARRAY or
 * PERCPU_ARRAY map the verifier inlines (no call: counted apart, as
 * NFSL_CALL_LOOKUP_INL), as it does bpf_get_smp_processor_id and
 * bpf_loop (whose callback is then a BPF-to-BPF call per iteration).
 * Not counted: the conntrack kfuncs of nfsl_route.h (their extern
 * declarations would expand too), called only for a packet the FIB
 * delivers locally. Tracing the kernel's helpers (fentry, kprobes) is refused on this VM,
 * hence counting in the program. Include before the program's source.
 */
#ifndef NFSL_BENCH_CALLS_H
#define NFSL_BENCH_CALLS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "calls_kinds.h"

__u64 nfsl_calls[NFSL_CALL_NR];

#define NFSL_COUNTED(k, call) ({ nfsl_calls[(k)]++; call; })

/* The map's type, from libbpf's __uint(type, T): int (*type)[T]. */
#define NFSL_MAP_TYPE(m) (sizeof(*(m)->type) / sizeof(int))
#define NFSL_MAP_INLINED(m)                                                    \
	(NFSL_MAP_TYPE(m) == BPF_MAP_TYPE_ARRAY || NFSL_MAP_TYPE(m) == BPF_MAP_TYPE_PERCPU_ARRAY)

#define bpf_map_lookup_elem(m, k)                                              \
	NFSL_COUNTED(NFSL_MAP_INLINED(m) ? NFSL_CALL_LOOKUP_INL : NFSL_CALL_LOOKUP, \
		     (bpf_map_lookup_elem)(m, k))
#define bpf_ktime_get_ns() NFSL_COUNTED(NFSL_CALL_CLOCK, (bpf_ktime_get_ns)())
#define bpf_ktime_get_coarse_ns() NFSL_COUNTED(NFSL_CALL_CLOCK, (bpf_ktime_get_coarse_ns)())
#define bpf_csum_diff(...) NFSL_COUNTED(NFSL_CALL_CSUM, (bpf_csum_diff)(__VA_ARGS__))
#define bpf_xdp_load_bytes(...) NFSL_COUNTED(NFSL_CALL_LOAD, (bpf_xdp_load_bytes)(__VA_ARGS__))
#define bpf_skb_load_bytes(...) NFSL_COUNTED(NFSL_CALL_LOAD, (bpf_skb_load_bytes)(__VA_ARGS__))
#define bpf_xdp_store_bytes(...) NFSL_COUNTED(NFSL_CALL_STORE, (bpf_xdp_store_bytes)(__VA_ARGS__))
#define bpf_skb_store_bytes(...) NFSL_COUNTED(NFSL_CALL_STORE, (bpf_skb_store_bytes)(__VA_ARGS__))
#define bpf_xdp_adjust_tail(...) NFSL_COUNTED(NFSL_CALL_TAIL, (bpf_xdp_adjust_tail)(__VA_ARGS__))
#define bpf_skb_change_tail(...) NFSL_COUNTED(NFSL_CALL_TAIL, (bpf_skb_change_tail)(__VA_ARGS__))
#define bpf_skb_pull_data(...) NFSL_COUNTED(NFSL_CALL_OTHER, (bpf_skb_pull_data)(__VA_ARGS__))
#define bpf_fib_lookup(...) NFSL_COUNTED(NFSL_CALL_FIB, (bpf_fib_lookup)(__VA_ARGS__))
#define bpf_check_mtu(...) NFSL_COUNTED(NFSL_CALL_MTU, (bpf_check_mtu)(__VA_ARGS__))
#define bpf_ringbuf_reserve(...) NFSL_COUNTED(NFSL_CALL_RINGBUF, (bpf_ringbuf_reserve)(__VA_ARGS__))
#define bpf_ringbuf_submit(...) NFSL_COUNTED(NFSL_CALL_RINGBUF, (bpf_ringbuf_submit)(__VA_ARGS__))
#define bpf_xdp_get_buff_len(...) NFSL_COUNTED(NFSL_CALL_OTHER, (bpf_xdp_get_buff_len)(__VA_ARGS__))
#define bpf_loop(...) NFSL_COUNTED(NFSL_CALL_LOOP, (bpf_loop)(__VA_ARGS__))
#define bpf_tail_call(...) NFSL_COUNTED(NFSL_CALL_TAILCALL, (bpf_tail_call)(__VA_ARGS__))
#define bpf_get_smp_processor_id() NFSL_COUNTED(NFSL_CALL_INLINED, (bpf_get_smp_processor_id)())

#endif /* NFSL_BENCH_CALLS_H */
