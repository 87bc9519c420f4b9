// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/* The splicer counting its calls (bench/bpf/calls.h), for
 * nfslice-bench-datapath --calls only. */
#include "calls.h"
#include "splicer.bpf.c"
