# SPDX-License-Identifier: GPL-2.0
"""The calls out of the slicer and the splicer per packet (issue 19 item 4),
counted by nfslice-bench-datapath --calls (docs/benchmarks.md "Helper calls
per packet"): exact counts of one packet per case, by kind."""
import os
import subprocess

import pytest

from nfsl.rig import ROOT

DRIVER = os.path.join(ROOT, "build", "nfslice-bench-datapath")

# kind -> count, per path; kinds not named are 0.
# The first packet of a flow misses the route verdict cache (the FIB
# lookup), the next hit it; the cache's two array lookups are inlined.
SLICER = {"clock": 1, "load": 1, "tail": 1, "CALLS": 3, "lookup-inl": 10,
          "cpu-inl": 1, "tailcall": 1}
SLICER_MISS = dict(SLICER, fib=1, CALLS=4)
# The splicer reads the MTU in place (nfsl_skb_fits_mtu), no bpf_check_mtu.
SPLICER = {"store": 1, "tail": 1, "CALLS": 2, "lookup-inl": 3}
FOREIGN = {"lookup-inl": 1}


def run_calls():
    if os.geteuid():
        pytest.skip("needs root (BPF_PROG_TEST_RUN)")
    r = subprocess.run([DRIVER, "-q", "-N", "-K", "-s", "64,1514", "-p", "both"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    head = lines[0].split()
    assert head[:3] == ["path", "bytes", "l4"]
    rows = {}
    for ln in lines[1:]:
        f = ln.split()
        rows[(f[0], int(f[1]), f[2])] = dict(zip(head[3:], map(int, f[3:])))
    return head[3:], rows


def test_calls_per_packet():
    kinds, rows = run_calls()
    want = {}
    for l4 in ("udp", "tcp"):
        want[("slicer-miss", 1514, l4)] = SLICER_MISS
        want[("slicer", 1514, l4)] = SLICER
        want[("splicer", 1514, l4)] = SPLICER
        for size in (64, 1514):
            want[("splicer-foreign", size, l4)] = FOREIGN
    # TCP with timestamps (12 B of options): summed in place, no load of
    # them and no bpf_csum_diff
    want[("slicer+ts", 1514, "tcp")] = SLICER
    want[("splicer+ts", 1514, "tcp")] = SPLICER
    assert set(rows) == set(want)
    for key, w in want.items():
        assert rows[key] == {k: w.get(k, 0) for k in kinds}, key
