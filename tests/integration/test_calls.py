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
# A tail that fails the token pre-check is passed before the configuration
# is looked up: nothing at all.
FOREIGN = {}


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


def test_few_packets_per_row_warned():
    """-n 1 with the default rounds gives a median of 21 cold single runs
    (it read the slicer at 4.9x the copy where -r 1000 reads 1.0-1.2x):
    the driver says so, and not when the rows hold 1000 packets."""
    if os.geteuid():
        pytest.skip("needs root (BPF_PROG_TEST_RUN)")
    args = [DRIVER, "-q", "-N", "-s", "64", "-p", "udp", "-P", "xdp-empty", "-n", "1"]
    r = subprocess.run(args + ["-r", "21"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert ("warning: 21 rounds x 1 packets per block = 21 packets per row: too few "
            "for a median; give more rounds (-r 1000 with -n 1)") in r.stderr
    r = subprocess.run(args[:-2] + ["-n", "100", "-r", "10"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr  # 1000 packets per row


def test_guard_rows():
    """The FORWARD guard's rows (bench/datapath_guard.c): an unsliced frame
    accepted toward a domain interface (the early accept) and elsewhere
    (parse and token check; the driver fails if the guard drops it), each
    net of an empty netfilter program."""
    if os.geteuid():
        pytest.skip("needs root (BPF_PROG_TEST_RUN)")
    r = subprocess.run([DRIVER, "-q", "-N", "-l", "0", "-r", "5", "-n", "200", "-s", "64,1514",
                        "-p", "both", "-P", "guard-fwd,guard-fwd-domain"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = {}
    for ln in r.stdout.splitlines():
        f = ln.split()
        if len(f) > 3 and f[2] in ("nf-empty", "guard-fwd", "guard-fwd-domain"):
            rows[(int(f[0]), f[1], f[2])] = float(f[3])
    assert set(rows) == {(s, p, g) for s in (64, 1514) for p in ("udp", "tcp")
                         for g in ("nf-empty", "guard-fwd", "guard-fwd-domain")}
