#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Datapath cost benchmark (issue #2): per-packet cost of the slicer and the
# splicer under BPF_PROG_TEST_RUN next to bare baselines, in ns/packet.
# Writes bench/results/datapath_cost.{json,csv} (NFSL_BENCH_OUT in the
# environment: another name than datapath_cost) and prints the table.
# Extra arguments go to the driver (see build/nfslice-bench-datapath --help),
# e.g. bench/run.sh --rounds 41 --sizes 1514.
# Build first: make -C bench (or `make bench`, which builds and runs).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
driver=$root/build/nfslice-bench-datapath
results=$root/bench/results

if [ "$(id -u)" -ne 0 ]; then
	echo "bench/run.sh: needs root (BPF_PROG_TEST_RUN, bpf_enable_stats)" >&2
	exit 1
fi
if [ ! -x "$driver" ]; then
	echo "bench/run.sh: $driver missing: run 'make -C bench' first" >&2
	exit 1
fi
mkdir -p "$results"

echo "bench: $driver $*"
out=${NFSL_BENCH_OUT:-datapath_cost}
"$driver" --json "$results/$out.json" --csv "$results/$out.csv" "$@"
echo "bench: results in ${results#"$root"/}/$out.{json,csv}"
