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
from nfinv import (CLI4, CLI6, DUT4_IN, DUT6_IN, NEW_COUNTERS, SRV4, SRV6,
                   assert_intact, counters, nets, router)  # noqa: F401

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
