// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Baselines for the slicer's per-packet cost (issue #2, bench/datapath_*.c).
 * Each is the least an XDP program must do for one part of slicing, so the
 * driver can put the slicer's cost next to it under BPF_PROG_TEST_RUN:
 *   bench_xdp_empty      nothing: the bias of the run-time statistics
 *   bench_xdp_parse      the header parser of the slicer (nfsl_parse.h)
 *   bench_xdp_route      the parser and the slicer's route check
 *                        (nfsl_route.h: interface, MAC, bpf_fib_lookup, and
 *                        conntrack for FIB-local packets)
 *   bench_xdp_call       one call of a helper that does next to nothing
 *                        (bpf_xdp_get_buff_len): the price of a call and
 *                        return into the kernel, which the route check
 *                        pays about a dozen times (docs/benchmarks.md)
 *   bench_xdp_clock      one read of the slicer's parking clock,
 *                        bpf_ktime_get_ns (CLOCK_MONOTONIC, ns)
 *   bench_xdp_clock_coarse  one read of the coarse clock it replaced
 *                        (issue 10 §2; docs/benchmarks.md "Parking clock")
 *   bench_xdp_copy       bpf_xdp_load_bytes of the payload into the payload
 *                        of the slot the slicer takes next in its per-CPU
 *                        partition (bench_next_slot), then a locked add
 *                        (see bench_copy)
 *   bench_xdp_copy_nofence  the same without the locked add
 *   bench_xdp_copy_warm  the same copy, always into one slot (cache-warm)
 * The copies write into the domain's own store (the driver reuses the
 * slicer's map fds), and the rotating copy takes its slot from the slicer's
 * own per-CPU cursor, moving it as the slicer does when it finds the slot
 * free: whichever of the two runs, the next slot is the one touched a
 * window's worth of packets earlier (nfsl_store.h "Hot window"), so both
 * see the same memory at the same reuse distance. A second instance of this
 * object on the maps of a second slicer whose window is the whole
 * partition (config win_min = part_slots) is the cold copy, next to the
 * cold (FIFO) slicer. The copies claim nothing and write no metadata. All
 * programs return XDP_PASS, like the slicer.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "nfsl_maps.h"
#include "nfsl_parse.h"
#include "nfsl_route.h"

/* Set by the driver through the skeleton's mmapped .bss. */
__u32 bench_payoff; /* offset of the first payload byte in the frame */
__u32 bench_warm; /* slot of the warm copy */
__u32 bench_sink; /* keeps the parser's result alive */
__u64 bench_fence; /* target of the locked add after a copy */

SEC("xdp")
int bench_xdp_empty(struct xdp_md *ctx)
{
	return XDP_PASS;
}

SEC("xdp")
int bench_xdp_parse(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct nfsl_pkt p = {};

	/* Store the result, or the compiler drops the parse altogether. */
	if (!nfsl_parse(data, data_end, &p))
		bench_sink = p.payoff + p.dscp;
	return XDP_PASS;
}

SEC("xdp")
int bench_xdp_route(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct nfsl_config *cfg = nfsl_get_config();
	struct nfsl_counters *cnt = nfsl_get_counters();
	struct nfsl_pkt p = {};

	if (!cfg || !cnt || nfsl_parse(data, data_end, &p))
		return XDP_PASS;
	__u32 dst;

	bench_sink = nfsl_route(ctx, cfg, cnt, &p, nfsl_iface_idx(cfg, ctx->ingress_ifindex),
				bpf_ktime_get_ns(), &dst);
	return XDP_PASS;
}

SEC("xdp")
int bench_xdp_call(struct xdp_md *ctx)
{
	bench_sink = bpf_xdp_get_buff_len(ctx);
	return XDP_PASS;
}

SEC("xdp")
int bench_xdp_clock(struct xdp_md *ctx)
{
	bench_sink = bpf_ktime_get_ns();
	return XDP_PASS;
}

SEC("xdp")
int bench_xdp_clock_coarse(struct xdp_md *ctx)
{
	bench_sink = bpf_ktime_get_coarse_ns();
	return XDP_PASS;
}

/*
 * Copy the payload [bench_payoff, end of frame) into slot @idx.
 * @fence: end with a locked add (x86 lock add: it waits until every earlier
 * store has left the store buffer, i.e. until the copy's cache misses on the
 * cold slot are paid). Without it the program returns, and its run time
 * stops counting, while ~100 ns of misses of a 1514 B copy are still
 * pending: they land on whatever runs next. The slicer does ~200 ns of other
 * work after its copy, which drains it inside its own run time (a locked add
 * at the slicer's end changed nothing measurable), so the fenced copy is the
 * fair baseline; the unfenced one shows the difference.
 */
static __always_inline int bench_copy(struct xdp_md *ctx, __u32 idx, bool fence)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 off = bench_payoff, len = data_end - data;
	struct nfsl_slot *s;

	s = bpf_map_lookup_elem(&nfsl_store, &idx);
	if (!s || len <= off)
		return XDP_PASS;
	len -= off;
	if (len < 1 || len > NFSL_PAYLOAD_MAX)
		return XDP_PASS;
	bpf_xdp_load_bytes(ctx, off, s->payload, len);
	if (fence)
		__sync_fetch_and_add(&bench_fence, 1);
	return XDP_PASS;
}


/*
 * The slot nfsl_alloc_slot() takes next when it finds it free, with the
 * cursor moved as it moves it then (the window does not grow: the driver
 * keeps every slot free outside the lag and live blocks).
 */
static __always_inline __u32 bench_next_slot(const struct nfsl_config *cfg)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id(), cur, w;
	__u32 part = cfg->part_slots, ncpus = cfg->ncpus;
	struct nfsl_alloc *a;

	a = bpf_map_lookup_elem(&nfsl_cursor, &zero);
	if (!a || !part || !ncpus)
		return 0;
	if (cpu >= ncpus)
		cpu %= ncpus;
	w = nfsl_win_size(a->win, cfg->win_min, part);
	a->seq++;
	cur = a->cur;
	if (cur >= w) {
		w = nfsl_win_pass(a, w, nfsl_win_size(0, cfg->win_min, part));
		cur = 0;
	}
	a->cur = cur + 1;
	a->win = w;
	return cpu * part + cur;
}

SEC("xdp")
int bench_xdp_copy(struct xdp_md *ctx)
{
	struct nfsl_config *cfg = nfsl_get_config();

	if (!cfg)
		return XDP_PASS;
	return bench_copy(ctx, bench_next_slot(cfg), true);
}

SEC("xdp")
int bench_xdp_copy_nofence(struct xdp_md *ctx)
{
	struct nfsl_config *cfg = nfsl_get_config();

	if (!cfg)
		return XDP_PASS;
	return bench_copy(ctx, bench_next_slot(cfg), false);
}

SEC("xdp")
int bench_xdp_copy_warm(struct xdp_md *ctx)
{
	return bench_copy(ctx, bench_warm, true);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
