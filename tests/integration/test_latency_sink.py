# SPDX-License-Identifier: GPL-2.0
"""bench/bpf/latency_sink.bpf.c and scripts/nfsl/lat.py (the latency benchmark's
receiver): stamped frames from nfslice-pktgen into a veth whose peer runs
the sink; every measuring frame counted, timed, checksum-verified; other
UDP frames counted apart; the histogram's buckets as latlib reads them.

Builds its own namespace NS = nfit-RUN-lat (veth la0 <-> la1; nfrig.name())
and removes it.
"""
import os
import subprocess

import pytest

from nfsl import lat as latlib
from nfsl.rig import ROOT, must, name, poll, run

NS = name("lat")


@pytest.fixture(scope="module")
def veths():
    for f in (latlib.PKTGEN, latlib.SINK_OBJ):
        if not os.path.exists(f):
            pytest.fail(f"{f} is missing: build with make")
    run(["ip", "netns", "del", NS])
    try:
        must(run(["ip", "netns", "add", NS]))
        must(run(["ip", "-n", NS, "link", "add", "la0", "type", "veth", "peer",
                  "name", "la1"]))
        for d in ("la0", "la1"):
            must(run(["ip", "-n", NS, "link", "set", "dev", d, "up"]))
        yield NS
    finally:
        run(["ip", "netns", "del", NS])


def gen(sport, count, size=1514, rate=20000, stamp=True):
    cmd = latlib.pktgen_cmd(NS, "la0", 0, size, rate, 10, dport=5201, sport=sport,
                            stamp=stamp, count=count)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p


def test_bucket_bounds():
    # Bucket lower bounds increase, and each bucket's bound maps back to it
    # with the same formula as the BPF program.
    def bucket(ns):
        if ns < 64:
            return ns
        m = ns.bit_length() - 1
        return min(64 + (m - 6) * 32 + ((ns >> (m - 5)) & 31), latlib.LAT_BUCKETS - 1)
    lows = [latlib.bucket_low(i) for i in range(latlib.LAT_BUCKETS)]
    assert lows == sorted(set(lows))
    for i in (0, 63, 64, 65, 95, 96, 500, 1000):
        assert bucket(lows[i]) == i
        assert bucket(lows[i + 1] - 1) == i
    h = [0] * latlib.LAT_BUCKETS
    h[bucket(50_000)] = 99
    h[bucket(2_000_000)] = 1
    assert abs(latlib.percentile(h, 0.5) - 50_000) < 50_000 / 32
    assert latlib.percentile(h, 0.999) > 1_900_000


def test_stamped_frames_timed_and_verified(veths):
    with latlib.LatencySink(NS, "la1", 5201, 40000, tag="test") as sink:
        a = sink.snapshot()
        gen(40000, 2000)              # measuring stream
        gen(1024, 500, stamp=False)   # other traffic
        gen(40000, 300, size=60)      # small measuring frames

        def all_in():       # every one of the 2800 frames counted
            d = latlib.snap_diff(a, sink.snapshot())
            st = d["stats"]
            return d if st["packets"] + st["other"] >= 2800 else None
        d = poll(all_in, 5, "2800 frames at the sink")
    s = d["stats"]
    assert s["packets"] == 2300 and s["stamped"] == 2300
    assert s["csum_ok"] == 2300 and s["csum_bad"] == 0
    assert s["other"] == 500
    assert sum(d["hist"]) == 2300
    assert s["len_min"] == 60 and s["len_max"] == 1514
    r = latlib.summarize(d)
    # Straight into the peer: a few us up to the end of a 1 ms pacing burst.
    assert 0.1 < r["p50_us"] < 5000, r
    assert r["p99_us"] < 20000, r


def test_detach_leaves_nothing(veths):
    sink = latlib.LatencySink(NS, "la1", 5201, tag="test2").attach()
    sink.detach()
    out = must(run(["ip", "-n", NS, "link", "show", "dev", "la1"]))
    assert "xdp" not in out
    assert not os.path.exists(sink.dir)
