// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The splicer without its residency histogram, for nfslice-bench-datapath
 * only: against the production splicer it prices the histogram (a clock
 * read and a per-CPU histogram update on one splice in eight;
 * docs/manager.md "Metrics").
 */
#define NFSL_RESIDENCY 0
#include "splicer.bpf.c"
