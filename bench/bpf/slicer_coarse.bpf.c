// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The slicer as it was before TTL eviction (issue 10 §2), for
 * nfslice-bench-datapath only: the coarse clock (bpf_ktime_get_coarse_ns,
 * a jiffy's resolution) for the parked time and no park log. The
 * production slicer minus this is what the precise clock and the log cost
 * per packet (docs/benchmarks.md "Parking clock and park log").
 */
#define NFSL_PARK_CLOCK() bpf_ktime_get_coarse_ns()
#define NFSL_PARK_LOG 0
#include "slicer.bpf.c"
