# SPDX-License-Identifier: GPL-2.0
"""The slicer decides with the route (issue 7 section 1).

A sliced header must never leave where no splicer runs. The slicer looks up
the route of every packet it could slice (bpf_fib_lookup from the ingress
interface) and slices only when the egress is a domain interface or a
declared NF port (`nfslice attach --nf-port IFACE`); otherwise the packet
passes whole and a counter says why:

  local delivery (an address of the NF host)        skipped_local
  egress outside the domain (veth, vxlan, macvlan)  skipped_route
  destination MAC not the ingress interface's own   skipped_l2

Every test sends a fixed number of large datagrams (IPv4 and IPv6), checks
each one arrived byte for byte (nothing truncated: today's code delivers
16-byte tokens instead) and compares the counters exactly. Topologies:
nfinv.router() on kernel defaults, with per-run namespace names.
"""
import hashlib
import os

import pytest

from nfinv import (DUT4_IN, DUT6_IN, HERE, NEW_COUNTERS, SRV4,  # noqa: F401
                   SRV6, assert_intact, counters, nets, router)
from nfsl.rig import PY, describe

N = 10          # datagrams per family
SIZE = 1000     # UDP payload bytes: a 1042/1062 B frame, well above 256
PORT = 7001


def test_stats_has_new_counters(nets):
    """`nfslice stats --json` reports a reason for every pass and drop."""
    net = nets(router, "cnt")
    net.attach("dut0", "dut1", name="cnt")
    st = net.stats("cnt")
    missing = [k for k in NEW_COUNTERS if k not in st]
    assert not missing, f"stats lack {missing}: {st}"
    assert all(st[k] == 0 for k in NEW_COUNTERS), st


def test_one_interface_domain_local_delivery(nets):
    """Domain {dut0}: datagrams to the DUT's own addresses reach its socket
    whole (today: 16 B each), counted skipped_local, none sliced."""
    net = nets(router, "loc")
    net.attach("dut0", name="loc")
    res, sent = net.flow("cli", "dut", [DUT4_IN, DUT6_IN], PORT, N, SIZE, 11)
    assert [s["sent"] for s in sent] == [N, N], sent
    assert_intact(res, 2 * N, "client -> DUT's own address")
    st = net.stats("loc")
    assert counters(st, "skipped_local", "sliced", "spliced",
                    "skipped_route") == \
        {"skipped_local": 2 * N, "sliced": 0, "spliced": 0,
         "skipped_route": 0}, st


def test_one_interface_domain_local_tcp(nets, tmp_path):
    """Domain {dut0}: a 4 MB HTTP upload (TCP) to a server on the DUT
    itself arrives intact (sha256), IPv4 and IPv6; its segments pass
    unsliced (skipped_local), none is sliced. Today the DUT's socket gets
    16-byte tokens for payloads and the upload fails or is corrupt."""
    net = nets(router, "ltcp")
    data = os.urandom(4 << 20)
    blob = tmp_path / "blob"
    blob.write_bytes(data)
    net.spawn("dut", PY, HERE, "httpsink", 8081, quiet=True)
    net.wait_listen("dut", 8081, proto="tcp")
    net.attach("dut0", name="ltcp")
    for host in (DUT4_IN, f"[{DUT6_IN}]"):
        cp = net.sh("cli", "curl", "-sS", "--fail", "--max-time", "10",
                    "--speed-limit", "200000", "--speed-time", "3", "-H",
                    "Expect:", "-T", blob, f"http://{host}:8081/up",
                    check=False, timeout=30)
        assert cp.returncode == 0, f"upload to {host}:\n{describe(cp)}"
        assert cp.stdout.split() == [str(len(data)),
                                     hashlib.sha256(data).hexdigest()], \
            f"upload to {host}: the DUT got {cp.stdout.strip()}"
    st = net.stats("ltcp")
    assert st["sliced"] == 0, st
    assert st["skipped_local"] > 2 * len(data) // 1500, st


def test_one_interface_domain_forwarded_out(nets):
    """Domain {dut0}: datagrams routed out of dut1 (no splicer there)
    arrive whole at the server, counted skipped_route, none sliced."""
    net = nets(router, "one")
    net.attach("dut0", name="one")
    res, _ = net.flow("cli", "srv", [SRV4, SRV6], PORT, N, SIZE, 12)
    assert_intact(res, 2 * N, "client -> server out of dut1")
    st = net.stats("one")
    assert counters(st, "skipped_route", "sliced", "skipped_local") == \
        {"skipped_route": 2 * N, "sliced": 0, "skipped_local": 0}, st


# ---------------------------------------------- egress outside the domain --
X4, X6 = "10.77.3.2", "fd00:77:3::2"    # far end of dut2 (router extra=1)
VX4, VX6 = "10.77.9.2", "fd00:77:9::2"      # the server's end of the vxlan


def out_veth(net):
    """A third veth dut2 - x20, not in the domain; target: x2."""
    return "x2", [X4, X6]


def out_vxlan(net):
    """A vxlan DUT - server whose underlay is routed over dut1 (in the
    domain); the inner packets leave through vx0, which is not. No `dev`:
    that would make vx0 an upper of dut1, which attach refuses. Target:
    the server's vxlan address."""
    for role, local, remote in (("dut", "10.77.2.1", SRV4),
                                ("srv", SRV4, "10.77.2.1")):
        net.ip(role, "link", "add", "vx0", "type", "vxlan", "id", 42,
               "local", local, "remote", remote, "dstport", 4789)
    net.addr("dut", "vx0", "10.77.9.1", "fd00:77:9::1")
    net.addr("srv", "vx0", VX4, VX6)
    net.ping("dut", VX4, VX6)
    return "srv", [VX4, VX6]


def out_macvlan(net):
    """The DUT reaches x2 through a macvlan mv0 on dut2 (neither in the
    domain): dut2's addresses move to mv0. Target: x2."""
    net.ip("dut", "addr", "flush", "dev", "dut2")
    net.ip("dut", "link", "add", "mv0", "link", "dut2", "type", "macvlan",
           "mode", "bridge")
    net.addr("dut", "mv0", "10.77.3.1", "fd00:77:3::1")
    net.ping("dut", X4, X6)
    return "x2", [X4, X6]


@pytest.mark.parametrize("make_egress", [out_veth, out_vxlan, out_macvlan],
                         ids=["veth", "vxlan", "macvlan"])
def test_egress_outside_domain(nets, make_egress):
    """Domain {dut0, dut1}; the route leaves through an interface outside
    it: the datagrams pass unsliced (skipped_route) and arrive whole."""
    net = nets(router, "out", extra=1)
    dst, hosts = make_egress(net)
    net.attach("dut0", "dut1", name="out")
    res, _ = net.flow("cli", dst, hosts, PORT, N, SIZE, 13)
    assert_intact(res, 2 * N, f"client -> {hosts} outside the domain")
    st = net.stats("out")
    assert counters(st, "skipped_route", "sliced", "skipped_local") == \
        {"skipped_route": 2 * N, "sliced": 0, "skipped_local": 0}, st


def test_foreign_destination_mac(nets):
    """A macvlan added on dut0 after attach (in a namespace of its own, in
    dut0's subnet, so the route from dut0 would allow slicing): frames for
    its MAC are not the DUT's; they pass unsliced (skipped_l2)."""
    net = nets(router, "l2")
    net.attach("dut0", "dut1", name="l2")
    net.add_ns("mvn")
    net.ip("dut", "link", "add", "mvl", "link", "dut0", "type", "macvlan",
           "mode", "bridge")
    net.ip("dut", "link", "set", "mvl", "netns", net.ns("mvn"))
    net.addr("mvn", "mvl", "10.77.1.3", "fd00:77:1::3")
    net.ping("cli", "10.77.1.3", "fd00:77:1::3")
    try:
        res, _ = net.flow("cli", "mvn", ["10.77.1.3", "fd00:77:1::3"], PORT,
                          N, SIZE, 14)
        st = net.stats("l2")
    finally:
        # An upper on a domain interface: remove it before the finalizer
        # detaches (attach refuses uppers; detach must not be left behind).
        net.remove_ns("mvn")
    assert_intact(res, 2 * N, "client -> macvlan on dut0")
    assert counters(st, "skipped_l2", "sliced") == \
        {"skipped_l2": 2 * N, "sliced": 0}, st


# ------------------------------------------------------------------ NF port --
def test_nf_port_hairpin(nets):
    """--nf-port dut2: a link to a remote NF server (x2) that routes the
    headers back. The DUT sends client traffic to x2 (policy route on iif
    dut0); x2 returns it on dut2, the DUT forwards it out of dut1 to the
    server. The slicer on dut0 slices (the egress is the NF port), only
    headers cross dut2, the splicer on dut1 restores every datagram."""
    net = nets(router, "nfp", extra=1)
    for fam, via in (("-4", "10.77.3.2"), ("-6", "fd00:77:3::2")):
        net.ip("dut", fam, "rule", "add", "iif", "dut0", "lookup", 100,
               "pref", 100)
        net.ip("dut", fam, "route", "add", "default", "via", via, "dev",
               "dut2", "table", 100)
    net.sysctl("x2", "net.ipv4.ip_forward", 1)
    net.sysctl("x2", "net.ipv6.conf.all.forwarding", 1)
    net.sysctl("x2", "net.ipv4.conf.all.send_redirects", 0)
    net.ping("cli", SRV4, SRV6)     # the path works (and is resolved)
    net.attach("--nf-port", "dut2", "dut0", "dut1", name="nfp")
    xdp, tc = net.programs("dut", "dut2")
    assert xdp and tc == [], \
        "an NF port gets the slicer (for drop notices only), no splicer"
    assert xdp["prog"]["name"] == "nfsl_slicer", xdp
    rx0 = net.link_stats("x2", "x20")["rx"]["bytes"]
    res, _ = net.flow("cli", "srv", [SRV4, SRV6], PORT, N, SIZE, 15)
    assert_intact(res, 2 * N, "client -> x2 (NF) -> server")
    st = net.stats("nfp")
    assert counters(st, "sliced", "spliced", "skipped_route", "stale") == \
        {"sliced": 2 * N, "spliced": 2 * N, "skipped_route": 0,
         "stale": 0}, st
    # Only headers crossed to the NF server: 20 B IPv4 / 40 B IPv6 + 8 B
    # UDP + 16 B token + Ethernet, far below the 1000 B payloads.
    rx = net.link_stats("x2", "x20")["rx"]["bytes"] - rx0
    assert rx < 2 * N * 200, f"x2 received {rx} B for {2 * N} headers"
