// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The slicer without its FIB lookup, for nfslice-bench-datapath only: what
 * the route check (bpf/nfsl_route.h) costs is the slicer minus this. The
 * check keeps its cheap part (ingress interface of the domain, frame for
 * its own MAC) and then answers "slice" without bpf_fib_lookup and without
 * the conntrack lookup of FIB-local packets. Never attach it: it would
 * slice packets that leave where no splicer waits.
 */
#define NFSL_ROUTE_FIB 0
#include "slicer.bpf.c"
