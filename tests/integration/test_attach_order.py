# SPDX-License-Identifier: GPL-2.0
"""Attach and detach under traffic: never a truncated datagram.

A DUT routes between three client-side and three server-side veths; all six
are one slicing domain. Sequence-numbered 1400 B UDP datagrams flow both
ways on three paths (six flows, at most 20,000 datagrams in all) while
`nfslice attach` and later `nfslice detach` run.

    cli  c1 ==== a1 \\             / b1 ==== s1  srv
         c2 ==== a2  +-- dut ----+  b2 ==== s2
         c3 ==== a3 /             \\ b3 ==== s3

Attaching interface by interface (splicer, then slicer, on each in turn)
lets a slicer cut payloads while the egress interface has no splicer yet:
those headers reach the receiver truncated (868-2,070 per attach with six
interfaces in issue 7); detaching likewise (230-509). Attaching every
splicer before any slicer, and detaching every slicer first, draining, then
the splicers, closes both windows. Both directions of traffic make either
interface order expose them.

Asserted: every datagram received is whole and exact (0 truncated, 0
corrupt); losses, if any, are counted somewhere (receiver socket drops,
interface drops, nfslice drop counters); slicing really happened between
attach and detach; after detach nothing of nfslice is left on the six
interfaces. The numbers are printed (pytest -s or -rA shows them).
"""
import json
import signal
import time

import pytest

from nfsl.rig import NFSLICE, poll
from nfsl.tap import Lab, summarize

PATHS = (1, 2, 3)
SIZE = 1400                 # UDP payload: 1442 B frames, sliced at 256 B
RATE = 2000                 # datagrams/s per endpoint (3 flows each): the
                            # cap lasts 15 s, several times what the run
                            # needs (attach of six interfaces: ~1.5 s)
CAP = 60000 // 6            # datagrams per flow at most: 60k in all
PORT_FWD, PORT_REV = 5201, 5202
# Traffic seen on the DUT before attach, after it, and after detach, in
# frames crossing the DUT (polled on its interface counters).
WARMUP = 600
SLICED_MIN = 900
AFTER_DETACH = 600
DROP_COUNTERS = ("stale", "too_big", "dropped_gso", "splice_failed")


def ip_of(side, i, host):
    """Address of HOST (1: the DUT, 2: the end host) on path I."""
    return f"10.213.{i if side == 'c' else 10 + i}.{host}"


def mac(side, i, host):
    """Fixed MAC of that interface (locally administered)."""
    return f"02:13:{ord(side):02x}:{i:02x}:00:{host:02x}"


def build(lab):
    """The topology of the module docstring, static neighbours."""
    lab.add("cli", "dut", "srv")
    lab.sysctl("dut", "net.ipv4.ip_forward=1")
    for i in PATHS:
        lab.veth("cli", f"c{i}", "dut", f"a{i}", mac=mac("c", i, 2),
                 peer_mac=mac("c", i, 1))
        lab.veth("dut", f"b{i}", "srv", f"s{i}", mac=mac("s", i, 1),
                 peer_mac=mac("s", i, 2))
        lab.addr("cli", f"c{i}", f"{ip_of('c', i, 2)}/24")
        lab.addr("dut", f"a{i}", f"{ip_of('c', i, 1)}/24")
        lab.addr("dut", f"b{i}", f"{ip_of('s', i, 1)}/24")
        lab.addr("srv", f"s{i}", f"{ip_of('s', i, 2)}/24")
        lab.ip("cli", "route", "add", f"10.213.{10 + i}.0/24", "via",
               ip_of("c", i, 1))
        lab.ip("srv", "route", "add", f"10.213.{i}.0/24", "via",
               ip_of("s", i, 1))
        for role, dev, addr, lladdr in (
                ("cli", f"c{i}", ip_of("c", i, 1), mac("c", i, 1)),
                ("dut", f"a{i}", ip_of("c", i, 2), mac("c", i, 2)),
                ("dut", f"b{i}", ip_of("s", i, 2), mac("s", i, 2)),
                ("srv", f"s{i}", ip_of("s", i, 1), mac("s", i, 1))):
            lab.ip(role, "neigh", "replace", addr, "lladdr", lladdr, "dev",
                   dev, "nud", "permanent")


@pytest.fixture(scope="module")
def lab():
    """The six-interface DUT; removed whatever happens."""
    lab = Lab("ao", NFSLICE)
    try:
        build(lab)
        yield lab
    finally:
        errors = lab.destroy()
        assert not errors, "cleanup: " + "\n".join(errors)


DUT_IFS = [f"a{i}" for i in PATHS] + [f"b{i}" for i in PATHS]
ALL_IFS = [("cli", f"c{i}") for i in PATHS] + \
          [("dut", d) for d in DUT_IFS] + [("srv", f"s{i}") for i in PATHS]


def forwarded(lab):
    """Frames the DUT sent out of its six interfaces so far."""
    return sum(lab.link("dut", d)["stats64"]["tx"]["packets"]
               for d in DUT_IFS)


def if_drops(lab):
    """Drops on every interface of the topology (rx + tx dropped)."""
    n = 0
    for role, dev in ALL_IFS:
        s = lab.link(role, dev)["stats64"]
        n += s["rx"]["dropped"] + s["tx"]["dropped"]
    return n


def endpoints(lab):
    """Start both endpoints (waiting for SIGUSR1); (cli, srv) Popens."""
    cli = ["udp", "--size", str(SIZE), "--count", str(CAP), "--rate",
           str(RATE)]
    srv = list(cli)
    for i in PATHS:
        c, s = ip_of("c", i, 2), ip_of("s", i, 2)
        cli += ["--bind", f"{c},{PORT_REV}",
                "--flow", f"{i},{c},{s},{PORT_FWD}", "--expect", str(10 + i)]
        srv += ["--bind", f"{s},{PORT_FWD}",
                "--flow", f"{10 + i},{s},{c},{PORT_REV}", "--expect", str(i)]
    return lab.helper("cli", *cli), lab.helper("srv", *srv)


def grow(lab, base, n, what, timeout=10):
    """Wait until the DUT forwarded N more frames than BASE; the count."""
    return poll(lambda: (lambda f: f if f >= base + n else None)(
        forwarded(lab)), timeout, what)


@pytest.mark.parametrize("order", [
    pytest.param(DUT_IFS, id="client-side-first"),
    pytest.param(DUT_IFS[3:] + DUT_IFS[:3], id="server-side-first"),
])
def test_attach_detach_under_traffic(lab, order):
    """0 truncated datagrams across an attach and a detach under traffic."""
    drops0 = if_drops(lab)
    cli, srv = endpoints(lab)
    for p in (cli, srv):
        lab.signal(p, signal.SIGUSR1)
    f0 = forwarded(lab)
    grow(lab, f0, WARMUP, "traffic through the DUT before attach")

    t0 = time.monotonic()
    cp = lab.nfslice("dut", "attach", *order)
    t_attach = time.monotonic() - t0
    assert cp.returncode == 0, f"attach failed: {cp.stderr}"
    poll(lambda: lab.stats("dut")["sliced"] >= SLICED_MIN, 10,
         f"{SLICED_MIN} datagrams sliced after attach")
    stats = lab.stats("dut")

    f1 = forwarded(lab)
    t1 = time.monotonic()
    cp = lab.nfslice("dut", "detach")
    t_detach = time.monotonic() - t1
    detach_out = cp.stdout + cp.stderr
    assert cp.returncode == 0, f"detach failed: {detach_out}"
    grow(lab, f1, AFTER_DETACH, "traffic through the DUT after detach")
    for p in (cli, srv):
        lab.signal(p, signal.SIGUSR2)
    rep = {"cli": lab.finish(cli, 20), "srv": lab.finish(srv, 20)}

    sent = {**{int(k): v for k, v in rep["cli"]["sent"].items()},
            **{int(k): v for k, v in rep["srv"]["sent"].items()}}
    got = {"fwd": summarize(rep["srv"], PATHS),
           "rev": summarize(rep["cli"], [10 + i for i in PATHS])}
    truncated = sum(g["truncated"] for g in got.values())
    corrupt = sum(g["corrupt"] for g in got.values())
    good = sum(g["good"] for g in got.values())
    total = sum(sent.values())
    lost = total - good - truncated - corrupt
    # Truncated datagrams by phase (one clock: CLOCK_MONOTONIC is the
    # host's in every network namespace).
    at = rep["cli"]["truncated_at"] + rep["srv"]["truncated_at"]
    during_attach = sum(1 for x in at if x < t1)
    during_detach = len(at) - during_attach
    counted = (rep["cli"]["socket_drops"] + rep["srv"]["socket_drops"] +
               if_drops(lab) - drops0 +
               sum(stats.get(k, 0) for k in DROP_COUNTERS))
    numbers = (f"order {' '.join(order)}: sent {total} (cap {6 * CAP}), "
               f"good {good}, truncated {truncated} (fwd "
               f"{got['fwd']['truncated']}, rev {got['rev']['truncated']}; "
               f"{during_attach} from attach on, {during_detach} from detach "
               f"on), "
               f"corrupt {corrupt}, lost {lost}, drops counted {counted}; "
               f"attach {t_attach:.3f} s, detach {t_detach:.3f} s; stats "
               f"before detach {json.dumps(stats)}; received lengths "
               f"{rep['srv']['lens']} / {rep['cli']['lens']}")
    print(numbers)
    assert all(v < CAP for v in sent.values()), (
        "the senders ran out of datagrams before the end: " + numbers)
    assert truncated == 0, "truncated datagrams received: " + numbers
    assert corrupt == 0, numbers
    assert lost <= counted, "losses nobody counted: " + numbers
    assert stats["sliced"] >= SLICED_MIN, numbers
    for d in DUT_IFS:
        assert lab.link("dut", d).get("xdp") is None, (
            f"XDP left on {d} after detach: {detach_out}")
        assert not [f for f in lab.tc_egress("dut", d)
                    if f.get("options", {}).get("bpf_name", "").startswith(
                        "nfsl")], f"splicer left on {d}: {detach_out}"
