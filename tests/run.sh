#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the whole suite after `make all unit fuzz-build` (what `make test` does):
#   1. unit: Criterion, slicer/splicer through BPF_PROG_TEST_RUN (build/test_datapath)
#   2. integration: pytest in network-namespace rigs it builds and removes,
#      PYTEST_JOBS test files at a time (default: the CPUs; pytest-xdist,
#      --dist loadgroup: a file's tests run in order in one process, its
#      rigs shared as written, and the files that start nfsliced one after
#      another (conftest.py); PYTEST_JOBS=0 runs them in this process);
#      then the files that time their own pacing (mark solo), alone
#   3. fuzz: each libFuzzer target of tests/fuzz/ for FUZZ_SMOKE seconds
#      (default 3) from its seed corpus: a crash fails the run
# Exit status is non-zero if any part fails. Needs root.
set -uo pipefail

cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "tests/run.sh: the tests load BPF programs and build network namespaces: run as root" >&2
	exit 1
fi

rc=0
echo "== unit tests (Criterion, BPF_PROG_TEST_RUN)"
build/test_datapath || rc=1

echo "== integration tests (pytest, netns rigs)"
# Debian's pytest and scapy live with /usr/bin/python3 (docs/platform.md).
# Every rig's namespaces carry its process's run id (nfsl.rig.name), so two
# files running side by side never touch each other's.
/usr/bin/python3 -m pytest -ra -p no:cacheprovider -n "${PYTEST_JOBS:-$(nproc)}" \
	--dist loadgroup -m "not solo" tests/integration || rc=1
/usr/bin/python3 -m pytest -ra -p no:cacheprovider -m solo tests/integration || rc=1

echo "== fuzz targets (libFuzzer, ${FUZZ_SMOKE:-3} s each)"
tests/fuzz/run.sh "${FUZZ_SMOKE:-3}" || rc=1

exit $rc
