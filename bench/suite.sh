#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark suite behind `make bench` (issue #3), in order:
#   1. datapath cost: slicer/splicer ns/packet vs bare baselines (bench/run.sh),
#      and the slicer's packet by packet (-n 1 -r 1000)
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
# Results (JSON, CSV, PNG) go to bench/results/, each experiment's output to
# bench/results/suite-NAME.log. It ends with one table: every target the
# experiments state (target, measured, met or NOT met; bench/suite_targets.py)
# and each experiment's wall time.
#
# Usage: bench/suite.sh [--quick]   (QUICK=1 in the environment: the same)
# QUICK is the smoke mode, every experiment in its --quick form and
# narrower still: the datapath at 1514 B only, 5 rounds, no live-frames
# check; latency at loads 0 and 0.9; iperf3 without its perf profile;
# exp_xsk with its steal part (2 pairs) instead of the low-load trial;
# exp_nf the firewall's NDR pair and the mix (no fig12); exp_migrate
# upgrade, ckpt and copy, holding 1000 payloads. Under 5 minutes here
# (3 min 58 s, docs/benchmarks.md "The suite"). The full suite takes about 37 minutes. Run as root after `make`.
#
# Exit status: 0 every experiment ran (whether or not its targets were met:
# read the table), 1 an experiment failed to run (the others still run; the
# table marks it FAILED), 2 usage. Targets NOT met never change the status.
set -uo pipefail

cd "$(dirname "$0")/.."
quick=0
case "${1:-}" in
--quick) quick=1 ;;
"") ;;
-h | --help)
	sed -n '/^# Usage:/,/^# Exit status/{s/^# \{0,1\}//;p}' "$0"
	sed -n '/^# Exit status/,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0" | tail -n +2
	exit 0
	;;
*)
	echo "bench/suite.sh: unknown argument '$1': give --quick or nothing (or QUICK=1)" >&2
	exit 2
	;;
esac
[ "${QUICK:-0}" = 1 ] && quick=1
if [ "$(id -u)" -ne 0 ]; then
	echo "bench/suite.sh: needs root (BPF, network namespaces): run it with sudo" >&2
	exit 1
fi
py=/usr/bin/python3
results=bench/results
mkdir -p "$results"

# step NAME COMMAND...: run it, its output to the terminal and to
# $results/suite-NAME.log, its wall time and exit status remembered.
names=() times=() codes=()
step() {
	local name=$1 t0=$SECONDS rc
	shift
	echo "== bench: $name: $*"
	"$@" 2>&1 | tee "$results/suite-$name.log"
	rc=${PIPESTATUS[0]}
	names+=("$name")
	times+=($((SECONDS - t0)))
	codes+=("$rc")
	[ "$rc" = 0 ] || echo "== bench: $name FAILED (exit $rc), see $results/suite-$name.log"
}

t_all=$SECONDS
if [ $quick = 1 ]; then
	q=(--quick)
	step datapath bench/run.sh --rounds 5 --sizes 1514 --no-live
else
	q=()
	step datapath bench/run.sh
fi
# The slicer's target packet by packet too (issue 19): programs interleaved
# one packet at a time, 1000 rounds (fewer are noise).
step datapath-n1 env NFSL_BENCH_OUT=datapath_n1 bench/run.sh -q -N -l 0 -r 1000 -n 1 \
	-s 1514 -p both -P slicer,xdp-copy-cold
step throughput "$py" bench/exp_throughput.py "${q[@]}"
step linkrate "$py" bench/exp_linkrate.py "${q[@]}"
if [ $quick = 1 ]; then
	step latency "$py" bench/exp_latency.py --quick --loads 0,0.9
	step sizing "$py" bench/exp_sizing.py --quick
	step iperf "$py" bench/exp_iperf.py --quick --no-profile
	step xsk "$py" bench/exp_xsk.py --quick
	step nf "$py" bench/exp_nf.py --quick --nfs fw --parts ndr mix
	step migrate "$py" bench/exp_migrate.py --quick --held 1000 --ops upgrade,ckpt,copy
else
	step latency "$py" bench/exp_latency.py
	step sizing "$py" bench/exp_sizing.py
	step iperf "$py" bench/exp_iperf.py
	step xsk "$py" bench/exp_xsk.py
	step nf "$py" bench/exp_nf.py
	step migrate "$py" bench/exp_migrate.py
fi

echo
echo "bench: all results in $results/"
logs=()
for n in "${names[@]}"; do
	logs+=("$n=$results/suite-$n.log")
done
"$py" bench/suite_targets.py "${logs[@]}"
rc=0
echo
echo "experiment   wall s  ran"
for i in "${!names[@]}"; do
	if [ "${codes[$i]}" = 0 ]; then
		ran=yes
	else
		ran="FAILED (exit ${codes[$i]})"
		rc=1
	fi
	printf '%-12s %6s  %s\n' "${names[$i]}" "${times[$i]}" "$ran"
done
echo "suite: $((SECONDS - t_all)) s$([ $quick = 1 ] && echo " (quick)"); exit $rc:" \
	"$([ $rc = 0 ] && echo "every experiment ran (targets do not change it)" ||
		echo "an experiment failed to run")"
exit $rc
