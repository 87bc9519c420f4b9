// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/* The slicer counting its calls (bench/bpf/calls.h), for
 * nfslice-bench-datapath --calls only. */
#include "calls.h"
#include "slicer.bpf.c"
