#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark suite behind `make bench` (issue #3), in order:
#   1. datapath cost: slicer/splicer ns/packet vs bare baselines (bench/run.sh)
#   2. loss-free rate, goodput, CPU per core, data movement, sliced vs
#      unsliced, inline and park topologies (bench/exp_throughput.py)
#   3. park: loss-free goodput sliced vs unsliced against the link rate
#      (bench/exp_linkrate.py)
#   4. latency CDFs and latency vs load, NFSlicer's method (bench/exp_latency.py)
#   5. store sizing vs Little's law at a controlled NF delay (bench/exp_sizing.py)
#   6. iperf3 TCP through the rig on one CPU, no XDP / XDP_PASS / nfslice (bench/exp_iperf.py)
#   then nfslice-nf's receive architectures (exp_xsk.py), NFs and chains
#   (exp_nf.py), and upgrade / migration / checkpoint+restore under load
#   against the payloads outstanding (bench/exp_migrate.py, ~9 min, quick 1)
# Results (JSON, CSV, PNG) go to bench/results/. QUICK=1 (or --quick) is the
# smoke mode: every experiment in its short form, under 5 minutes in all; the
# full suite takes about 37 minutes (exp_iperf.py 12). Run as root after `make`.
set -euo pipefail

cd "$(dirname "$0")/.."
quick=()
if [ "${QUICK:-0}" = 1 ] || [ "${1:-}" = --quick ]; then
	quick=(--quick)
fi
py=/usr/bin/python3

bench/run.sh ${quick:+--rounds 5}
"$py" bench/exp_throughput.py "${quick[@]}"
"$py" bench/exp_linkrate.py "${quick[@]}"
"$py" bench/exp_latency.py "${quick[@]}"
"$py" bench/exp_sizing.py "${quick[@]}"
"$py" bench/exp_iperf.py "${quick[@]}"
"$py" bench/exp_xsk.py "${quick[@]}"
"$py" bench/exp_nf.py "${quick[@]}"
"$py" bench/exp_migrate.py "${quick[@]}"
echo "bench: all results in bench/results/"
