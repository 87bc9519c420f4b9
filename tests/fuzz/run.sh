#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run each libFuzzer target of tests/fuzz/ for SECONDS (after make -C
# tests/fuzz): from its seed corpus tests/fuzz/corpus/TARGET (read only)
# and the corpus it grew before in build/fuzz/corpus/TARGET (where new
# inputs go), one process per target, FUZZ_JOBS (default: the CPUs) at
# a time, 10 s at most per input. Prints per target the
# executions, the coverage (cov: edges, ft: features) of libFuzzer's last
# line and its corpus; a crash, a leak, a sanitizer report, a broken
# property or a slow input fails the target (its input saved as
# build/fuzz/TARGET-crash-*, the log in build/fuzz/TARGET.log).
#   tests/fuzz/run.sh [SECONDS [TARGET...]]   (default 60 s, every target)
# Exit status: 0 when every target ran clean, 1 otherwise.
set -uo pipefail

cd "$(dirname "$0")/../.."
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then # every target: tests/fuzz/fuzz_TARGET.c
	for src in tests/fuzz/fuzz_*.c; do
		t=${src##*/fuzz_}
		targets+=("${t%.c}")
	done
fi

# fuzz1 TARGET: run TARGET for $secs s (its log in build/fuzz/TARGET.log,
# its exit status in build/fuzz/TARGET.rc).
fuzz1() {
	local t=$1 st
	mkdir -p "build/fuzz/corpus/$t"
	"build/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
		-artifact_prefix="build/fuzz/$t-" "build/fuzz/corpus/$t" "tests/fuzz/corpus/$t" \
		>"build/fuzz/$t.log" 2>&1
	st=$?
	echo $st >"build/fuzz/$t.rc"
}

# One process per target, FUZZ_JOBS (default: the CPUs) at a time: each
# still gets a CPU for its SECONDS, the run takes 1/FUZZ_JOBS of the time.
jobs=${FUZZ_JOBS:-$(nproc)}
rc=0
run=()
for t in "${targets[@]}"; do
	if [ ! -x "build/fuzz/fuzz_$t" ]; then
		echo "fuzz_$t: not built: make -C tests/fuzz" >&2
		rc=1
		continue
	fi
	rm -f "build/fuzz/$t.rc"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	fuzz1 "$t" &
	run+=("$t")
done
wait

for t in "${run[@]}"; do
	log=build/fuzz/$t.log
	st=$(cat "build/fuzz/$t.rc" 2>/dev/null || echo 1)
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|INITED|pulse|NEW|REDUCE)' "$log" | tail -n 1)
	cov=$(sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\) corp: \([^ ]*\).*/cov \1 ft \2 corpus \3/p' \
		<<<"$last")
	if [ "$st" -eq 0 ]; then
		printf 'fuzz_%-8s %10s runs in %ss, %s: ok\n' "$t" "${runs:-?}" "$secs" "${cov:-?}"
	else
		printf 'fuzz_%-8s %10s runs, %s: FAILED (exit %d), see %s\n' "$t" "${runs:-?}" \
			"${cov:-?}" "$st" "$log"
		grep -E 'ERROR|SUMMARY|runtime error|property broken|Test unit written' "$log" |
			head -n 5 | sed 's/^/    /'
		rc=1
	fi
done
exit $rc
