// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The slicer as it was before issue 17 §1.1, for nfslice-bench-datapath
 * only: the replay check on DSCP-63 frames alone. The production slicer
 * minus this is what checking every frame for a header of ours costs, on
 * sliced and on unsliced packets (docs/benchmarks.md "Replay check").
 */
#define NFSL_REPLAY_ANY_DSCP 0
#include "slicer.bpf.c"
