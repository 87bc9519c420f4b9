// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The slicer with the precise clock but without the park log, for
 * nfslice-bench-datapath only: against slicer_coarse.bpf.c it prices the
 * clock, against the production slicer the log (docs/benchmarks.md
 * "Parking clock and park log").
 */
#define NFSL_PARK_LOG 0
#include "slicer.bpf.c"
