# SPDX-License-Identifier: GPL-2.0
"""nfslice-nf on a router (issue 17 §4): the rig of nfxsk.py with the
sink's MAC its own (not the gen's), so the DUT is a router between two
links, as docs/xsk.md sets one up.

1. --nf fwd with the next hops from the DUT's neighbour table
   (fwd.via0=GEN, fwd.via1=SINK) carries a kernel TCP transfer gen ->
   sink whole (bytes and SHA-256 at the sink), every frame counted
   forwarded;
2. --nf l2fwd there reaches nobody (it swaps MACs: a gen -> sink frame
   leaves d1 addressed to the gen): it says so once on stderr and counts
   every such frame (misdirected), where it was silent;
3. an unresolvable next hop is refused at start (exit 2), naming ping and
   fwd.mac1=MAC.

One rig for the module, 1 queue per veth, 1 worker, privring.
"""
import hashlib

import pytest

from nfxsk import GEN4, NF, PKTGEN, SINK4, XRig, stream

SINK_MAC = "02:23:03:00:00:02"
PORT = 7401


@pytest.fixture(scope="module")
def rig():
    for exe in (NF, PKTGEN):
        if not exe.exists():
            pytest.fail(f"{exe} is missing: build it with make")
    r = XRig("xf", queues=1).up()
    try:
        # A router's two links: the sink's MAC is its own.
        r.ip("sink", "link", "set", "dev", "s0", "address", SINK_MAC)
        r.ip("dut", "neigh", "flush", "dev", "d1")
        r.ip("gen", "neigh", "flush", "dev", "g0")
        r.prime()
        yield r
    finally:
        r.destroy()


@pytest.fixture
def xr(rig):
    yield rig
    for p in list(rig.procs):
        rig.stop(p)
    for dev in ("d0", "d1"):
        if rig.xdp_prog("dut", dev):
            rig.ip("dut", "link", "set", "dev", dev, "xdp", "off")


def test_fwd_routes_tcp(xr):
    """fwd carries TCP through the router, byte for byte."""
    nbytes = 300_000
    nf = xr.start_nf("--nf", "fwd", "--nf-opt",
                     f"fwd.via0={GEN4},fwd.via1={SINK4}")
    sent, got = xr.tcp_transfer(SINK4, PORT, nbytes, seed=5)
    rep = nf.stop()
    assert got["bytes"] == nbytes, (sent, got)
    assert got["sha256"] == hashlib.sha256(stream(5, nbytes)).hexdigest()
    c = rep["nf_counters"]["fwd"]
    assert c["forwarded"] == rep["total"]["tx"] > 0, rep
    assert (c["ttl_exceeded"], c["not_ip"]) == (0, 0), c
    assert "warning" not in nf.stderr(), nf.stderr()


def test_l2fwd_on_a_router_warns(xr):
    """l2fwd on the router: frames reach nobody; said once, counted."""
    n = 20
    before = xr.snmp("sink", "Udp")
    nf = xr.start_nf("--nf", "l2fwd")
    res = xr.udpsend(SINK4, PORT, n, 200)
    assert res["sent"] == n, res
    rep = nf.stop()
    after = xr.snmp("sink", "Udp")
    assert after["InDatagrams"] == before["InDatagrams"], (before, after)
    assert rep["nf_counters"]["l2fwd"]["misdirected"] == n, rep
    err = nf.stderr()
    assert err.count("warning") == 1, err
    assert ("nfslice-nf: warning: l2fwd sends frames out of d1 addressed to "
            "02:23:00:00:00:02, a neighbour of d0 only: nobody on d1's link "
            "takes them (l2fwd swaps the MACs; as a router use --nf fwd, "
            "docs/xsk.md)") in err, err


def test_fwd_unresolved_next_hop(xr):
    """A next hop the kernel has not resolved is refused before anything."""
    cp = xr.nf_cmd("--dev", "d0,d1", "--nf", "fwd", "--nf-opt",
                   f"fwd.via0={GEN4},fwd.via1=10.223.2.77")
    assert cp.returncode == 2, cp
    assert ("--nf fwd: via1=10.223.2.77: no neighbour 10.223.2.77 on d1: make "
            "the kernel resolve it first (ping -c1 10.223.2.77) or give "
            "mac1=MAC") in cp.stderr, cp.stderr
    assert xr.xdp_prog("dut", "d0") is None
