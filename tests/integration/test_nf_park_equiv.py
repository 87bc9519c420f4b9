# SPDX-License-Identifier: GPL-2.0
"""The NFs of userspace/lib/nf in nfslice-nf, with slicing (test_nf.py says
what every test checks): park (7): functional equivalence of l2fwd, fw, nat,
the chain, lb and qos with slicing on and off. Rigs, fixtures and helpers:
nf_fixtures.py."""
import functools
import os
import socket
import nfpark

import pytest

from nfsl import pkt as nfpkt
from nfsl.rig import poll
from nf_fixtures import (
    BACKENDS, CHAIN_CASES, CHAIN_IDS, DOMAIN, FW_CASES, FW_IDS, LB_OPTS,
    NAT_OPTS, NAT_W1_PORT, PARK_CHAIN_OPTS, PARK_QUEUES, QOS_GREEN, Result,
    VIP, at_server, check_nat_lb, check_nat_ports, equivalence, fw, is_big,
    own_flows, park, park_frames, park_fw_flows, pr, rig, run_domain,
    with_l2fwd, xr)


# ------------------------------------- 7. functional equivalence in park --
def park_queue_cpus():
    """For each RX queue q of the NF servers, a CPU this process may send
    from whose frames reach q (nfpark: CPU c -> queue c % PARK_QUEUES), or
    None."""
    mine = sorted(os.sched_getaffinity(0))
    return [next((c for c in mine if c % PARK_QUEUES == q), None)
            for q in range(PARK_QUEUES)]


def park_cpus(frames, spread):
    """The CPU each of FRAMES is sent from: with SPREAD, the one of queue
    dport % PARK_QUEUES (a flow keeps its queue); else the first queue's,
    for all (one queue: every worker sees its frames in the order sent,
    which nat's port choice follows, as one_queue inline)."""
    cpus = park_queue_cpus()
    return [cpus[nfpkt.parse(f).dport % PARK_QUEUES if spread else 0]
            for f in frames]


def park_run(pr, chain, opts, frames, expect, on, workers, mode,
             replies=None, rev_expect=0, spread=True):
    """equivalence()'s run in the park rig: nfslice-nf --workers WORKERS
    --rx MODE --nf CHAIN,l2fwd --drop-notice OPTS on NF server A, which
    knows nothing of the store; with ON, domain DOMAIN attached to the
    slicing host (c0, s0; NF ports p0, p1), without it the slicing host
    only routes. FRAMES from the client, from the CPUs of park_cpus(FRAMES,
    SPREAD); EXPECT frames captured at the server; with slicing on, the
    NF stops once the store is empty (every notice taken). A Result
    (forward only: no REPLIES)."""
    assert replies is None and rev_expect == 0, "park_run: forward only"
    if on:
        pr.attach_park(DOMAIN)
        st0 = pr.stats(DOMAIN)
    nf = pr.start_nf("nfa", "--workers", workers, "--rx", mode, "--nf",
                     with_l2fwd(chain), "--drop-notice", *opts)
    try:
        cap = pr.capture(expect, role="srv", dev="srv0")
        pr.send("cli", "cli0", frames, cpu=park_cpus(frames, spread))
        got = cap.finish(10)
        if on:
            try:
                poll(lambda: pr.stats(DOMAIN)["slots_busy"] == 0, 3,
                     "an empty store")
            except AssertionError:
                pass    # equivalence() says so, with the counters
    finally:
        rep = nf.stop()
    return Result(sorted(got), [], rep, run_domain(pr, st0) if on else None)


def park_equivalence(pr, chain, opts, frames, expect, mode, workers,
                     spread=True):
    """equivalence() in the park rig (park_run()); also asserts that the
    slicer sliced the BIG frames and skipped the others as small, and that
    every worker received frames, slicing off and on. (off, on)."""
    if spread and mode in ("privring", "smallpriv") and \
            None in park_queue_cpus()[:workers]:
        pytest.skip(f"{mode} with {workers} workers needs frames on "
                    f"{workers} RX queues of the NF server; the park rig "
                    f"picks the queue by the sender's CPU, and this process "
                    f"may run on CPUs {sorted(os.sched_getaffinity(0))} "
                    f"only")
    off, on = equivalence(pr, chain, opts, frames, expect, workers, mode,
                          run=functools.partial(park_run, spread=spread))
    what = f"park {chain} ({mode}, {workers} workers)"
    nbig = sum(is_big(f) for f, _ in frames)
    assert (on.dom["sliced"], on.dom["skipped_small"]) == \
        (nbig, len(frames) - nbig), f"{what}: domain {on.dom}"
    for r, tag in ((off, "off"), (on, "on")):
        rx = [w["rx"] for w in r.rep["per_worker"]]
        assert len(rx) == workers and all(rx) and sum(rx) == len(frames), \
            f"{what}, slicing {tag}: frames received per worker {rx}"
    return off, on


@pytest.mark.parametrize("mode,workers", FW_CASES, ids=FW_IDS)
def test_park_l2fwd_equivalence(pr, mode, workers):
    """l2fwd alone on NF server A: slicing on = off = every frame at the
    server as the slicing host routes it (TTL - 2, its MACs), sliced and
    small; with slicing on every payload spliced, no drop notice."""
    frames = park_frames(own_flows(n=16, src=nfpark.CLI4, dst=nfpark.SRV4,
                                   dport0=7201), seed=121)
    off, on = park_equivalence(pr, "l2fwd", (), frames, len(frames), mode,
                               workers)
    diff = nfpkt.first_difference(off.got, sorted(at_server(f)
                                                  for f, _ in frames))
    assert diff is None, f"l2fwd ({mode}): not the frames sent: {diff}"
    assert (on.dom["spliced"], on.dom["explicit_drop"]) == \
        (on.dom["sliced"], 0), on.dom


@pytest.mark.parametrize("mode,workers", FW_CASES, ids=FW_IDS)
def test_park_fw_equivalence(pr, fw, mode, workers):
    """fw on NF server A (the trace flows and the client's own, 32 of 98
    denied): slicing on = off = the oracle's allowed frames at the server
    (TTL - 2, its MACs); allowed and denied as predicted both ways; with
    slicing on, one drop notice per denied BIG frame frees its slot
    (explicit_drop), the allowed BIG frames are spliced."""
    rules, _, _ = fw
    frames = park_frames(park_fw_flows(fw), seed=131)
    want = sorted(at_server(f) for f, fl in frames if not fl.deny)
    off, on = park_equivalence(pr, "fw", ("--rules", rules), frames,
                               len(want), mode, workers)
    diff = nfpkt.first_difference(off.got, want)
    assert diff is None, f"fw ({mode}): not the allowed frames: {diff}"
    c = on.rep["nf_counters"]["fw"]
    ndeny = sum(fl.deny for _, fl in frames)
    assert (c["allowed"], c["denied"]) == (len(want), ndeny), c
    assert (on.dom["explicit_drop"], on.dom["spliced"]) == \
        (sum(fl.deny and is_big(f) for f, fl in frames),
         sum(not fl.deny and is_big(f) for f, fl in frames)), on.dom


@pytest.mark.parametrize("mode,workers", CHAIN_CASES, ids=CHAIN_IDS)
def test_park_nat_equivalence(pr, mode, workers):
    """nat on NF server A (one device: LAN by source, every frame steered
    by destination port with 2 workers; the flows' ports reach both):
    slicing on = off; every frame at the server from EXT_IP, one external
    port per flow, kept by all its frames, no two flows on one port;
    translated_out = every frame, nothing unsolicited or dropped."""
    frames = (park_frames(own_flows(n=16, src=nfpark.CLI4,
                                    dst=nfpark.SRV4, dport0=7201), seed=141)
              + park_frames(own_flows(n=8, src=nfpark.CLI4, dst=nfpark.SRV4,
                                      dport0=NAT_W1_PORT, sport0=43000),
                            seed=142))
    off, on = park_equivalence(pr, "nat", NAT_OPTS, frames, len(frames),
                               mode, workers, spread=False)
    check_nat_lb(off.got, frames, f"nat ({mode})")
    check_nat_ports(off.got, frames)
    c = on.rep["nf_counters"]["nat"]
    assert (c["translated_out"], c["translated_in"], c["unsolicited"],
            c["misrouted"], c["table_full"]) == (len(frames), 0, 0, 0, 0), c


@pytest.mark.parametrize("mode,workers", CHAIN_CASES, ids=CHAIN_IDS)
def test_park_chain_equivalence(pr, fw, mode, workers):
    """fw,nat,lb on NF server A (nat: every source the LAN): slicing on =
    off. Of the trace flows and the client's flows to the server and to
    the VIP, the allowed ones arrive from EXT_IP, the VIP's at one backend
    per flow; denied as predicted, every allowed frame translated; one
    drop notice per denied BIG frame."""
    rules, backends, _ = fw
    frames = (park_frames(park_fw_flows(fw), seed=151) +
              park_frames(own_flows(src=nfpark.CLI4, dst=VIP, dport0=7001,
                                    sport0=42000), seed=152))
    allowed = [(f, fl) for f, fl in frames if not fl.deny]
    off, on = park_equivalence(pr, "fw,nat,lb",
                               ("--rules", rules, *NAT_OPTS, "--backends",
                                backends, *PARK_CHAIN_OPTS),
                               frames, len(allowed), mode, workers,
                               spread=False)
    check_nat_lb(off.got, allowed, f"chain ({mode})")
    c = on.rep["nf_counters"]
    assert c["fw"]["denied"] == len(frames) - len(allowed), c
    assert c["nat"]["translated_out"] == len(allowed), c
    assert on.dom["explicit_drop"] == \
        sum(fl.deny and is_big(f) for f, fl in frames), on.dom


@pytest.mark.parametrize("mode,workers", FW_CASES, ids=FW_IDS)
def test_park_lb_equivalence(pr, fw, mode, workers):
    """lb on NF server A: slicing on = off; the VIP's 24 flows reach one
    backend each, all three used; the flows to the server arrive as routed
    (TTL - 2, its MACs), untouched; table and connection hits = the VIP's
    frames, passed = the others."""
    _, backends, _ = fw
    vip = [fl._replace(deny=False) for fl in own_flows(
        n=24, src=nfpark.CLI4, dst=VIP, dport0=7001, sport0=44000)]
    frames = (park_frames(vip, seed=161) +
              park_frames(own_flows(src=nfpark.CLI4, dst=nfpark.SRV4,
                                    dport0=7201), seed=162))
    off, on = park_equivalence(pr, "lb", ("--backends", backends, *LB_OPTS),
                               frames, len(frames), mode, workers)
    by_dst = {}
    for g in off.got:
        by_dst.setdefault(socket.inet_ntoa(nfpkt.parse(g).dst), []).append(g)
    assert set(by_dst) == {*BACKENDS, nfpark.SRV4}, sorted(by_dst)
    assert by_dst[nfpark.SRV4] == sorted(at_server(f) for f, fl in frames
                                         if fl.dst != VIP)
    flow_of = {nfpkt.parse(f).payload: fl for f, fl in frames}
    backend_of = {}
    for b in BACKENDS:
        for g in by_dst[b]:
            fl = flow_of[nfpkt.parse(g).payload]
            assert fl.dst == VIP and backend_of.setdefault(fl, b) == b, \
                f"lb ({mode}): {fl} at {b} (and {backend_of.get(fl)})"
    assert len(backend_of) == len(vip), backend_of
    c = on.rep["nf_counters"]["lb"]
    nvip = sum(fl.dst == VIP for _, fl in frames)
    assert c["table_hits"] + c["conn_hits"] == nvip and \
        c["passed"] == len(frames) - nvip, c


@pytest.mark.parametrize("mode,workers", FW_CASES, ids=FW_IDS)
def test_park_qos_equivalence(pr, mode, workers):
    """qos with a CIR far above the traffic on NF server A: slicing on =
    off = every frame at the server as routed, sliced and small, all
    green; green_bytes = the original IP lengths (from the token for a
    sliced header, which is ~60 B)."""
    frames = park_frames(own_flows(n=24, src=nfpark.CLI4, dst=nfpark.SRV4,
                                   dport0=7201), seed=171)
    off, on = park_equivalence(pr, "qos", QOS_GREEN, frames, len(frames),
                               mode, workers)
    assert off.got == sorted(at_server(f) for f, _ in frames)
    c = on.rep["nf_counters"]["qos"]
    assert (c["green"], c["yellow"], c["red"], c["green_bytes"]) == \
        (len(frames), 0, 0, sum(len(f) - 14 for f, _ in frames)), c
