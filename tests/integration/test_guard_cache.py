# SPDX-License-Identifier: GPL-2.0
"""Stale route verdicts under the guards (issue 19 sections 1 and 2).

With the route verdict cache on, the slicer may slice on a verdict the
kernel's routes no longer back: a route moved, an interface made a moment
ago, an address that makes the destination local. No daemon reports the
change here (nfsliced is not running; the cache's age is 10 s), so the
cached verdict is stale on purpose. What it may cost is an unsliced packet
or a header a guard drops and counts, never a truncated one:

- route moved out of the domain: the FORWARD guard drops the sliced
  headers (escaped_dropped, one event each naming the egress), x2 gets
  nothing truncated; after `set --route-flush` the same flow passes
  unsliced and whole;
- the same toward an interface made after attach, which has no TCX guard
  yet (status: damaged): the FORWARD guard needs no per-interface state;
- the destination became one of the DUT's own addresses: the LOCAL_IN
  guard drops the headers before the socket, which gets none truncated;
- with nfsliced running, a route moved under paced traffic: its rtnetlink
  watcher bumps the route generation, every datagram is accounted for
  exactly (arrived whole at one of the two receivers, or dropped and
  counted), none truncated, and the flow ends unsliced at x2.

Topology: nfinv.router() with the extra link dut2 - x2, kernel defaults,
per-run namespace names.
"""
import json

import pytest

from nfinv import HERE, SRV4, SRV6, nets, router  # noqa: F401
from nfload import Daemon
from nfsl.rig import PY, describe, poll

N = 10          # datagrams per batch
SIZE = 1000     # UDP payload bytes: sliced (threshold 256 B)
SPORT = 40211   # one flow across the batches: one cache entry
X2 = {4: "10.77.3.2", 6: "fd00:77:3::2"}
# The flow was masqueraded out of dut1: the first of its packets the
# kernel routes out of another interface is dropped by NAT, which ends the
# connection (nf_nat_oif_changed, net/netfilter/nf_nat_core.c); the next
# start a new one. With or without nfslice: one datagram per moved flow.
NAT_OIF = 1
SRV = {4: SRV4, 6: SRV6}


def status(net, name):
    cp = net.nfslice("status", "--name", name, "--json")
    assert cp.returncode in (0, 3), describe(cp)
    return json.loads(cp.stdout)


def batch(net, role, fam, port, first, seed=31):
    """N datagrams of the one flow cli:SPORT -> SRV[fam]:PORT, received in
    ROLE: (receiver result, datagrams sent)."""
    rx = net.receiver(role, port, N, SIZE, seed, idle=1.0)
    # On CPU 0 always: the cache is per CPU, and veth runs the slicer on
    # the sender's CPU.
    cp = net.sh("cli", "taskset", "-c", "0", PY, HERE, "send", SRV[fam],
                port, "--count", N, "--size", SIZE, "--seed", seed,
                "--first", first, "--sport", SPORT)
    return net.result(rx), json.loads(cp.stdout.splitlines()[-1])["sent"]


def delta(before, after, *keys):
    return {k: after[k] - before[k] for k in keys}


def escaped_events(net, name, n):
    cp = net.nfslice("events", "--name", name, "--json", "--count", n,
                     "--duration", 5)
    assert cp.returncode == 0, describe(cp)
    return [json.loads(ln) for ln in cp.stdout.splitlines() if ln]


def move_to_x2(net, fam, via="dut2"):
    """The server's address now lives in x2, routed through VIA (a /32 or
    /128 more specific than the route through dut1)."""
    plen = 32 if fam == 4 else 128
    net.ip("x2", "addr", "add", f"{SRV[fam]}/{plen}", "dev", "lo")
    net.ip("dut", f"-{fam}", "route", "add", f"{SRV[fam]}/{plen}", "via",
           X2[fam], "dev", via)
    net.ping("dut", SRV[fam])   # the new next hop's neighbour entry


def assert_stale_then_flushed(net, name, fam, port, egress):
    """The flow's verdict is cached; after the move N datagrams are sliced
    on it and dropped by a guard at EGRESS (x2 receives nothing truncated);
    after --route-flush N pass unsliced and arrive whole at x2."""
    res, sent = batch(net, "x2", fam, port, N)
    assert sent == N
    assert (res["truncated"], res["intact"], res["corrupt"]) == (0, 0, 0), \
        f"stale verdict: x2 got {res}"
    st = net.stats(name)
    events = escaped_events(net, name, N)
    assert [(e["reason"], e["ifname"]) for e in events] == \
        [("escaped_dropped", egress)] * N, events
    cp = net.nfslice("set", "--name", name, "--route-flush")
    assert cp.returncode == 0, describe(cp)
    res, sent = batch(net, "x2", fam, port, 2 * N)
    assert (res["truncated"], res["corrupt"], res["intact"]) == \
        (0, 0, N - NAT_OIF), f"after the flush x2 got {res}"
    return st, net.stats(name)


@pytest.mark.parametrize("fam", [4, 6])
def test_stale_route_dropped_by_forward_guard(nets, fam):
    """Route moved to dut2, no bump: 10 headers sliced on the cached
    verdict are dropped at FORWARD (escaped_dropped 10, events name dut2),
    none reaches x2; after --route-flush 10 pass unsliced (skipped_route)
    and whole."""
    net = nets(router, f"gcr{fam}", 1)
    # The client's kernel labels each socket's flow at random (IPv6 auto
    # flow labels), and the flow label is part of the lookup and so of the
    # cache key: one label for the client's sockets, one cache entry for
    # the three batches. The DUT keeps its defaults.
    net.sh("cli", "sysctl", "-qw", "net.ipv6.auto_flowlabels=0")
    net.attach("dut0", "dut1", "--route-cache-age", "10000", "--events",
               name="gcr")
    res, _ = batch(net, "srv", fam, 7300, 0)
    assert (res["intact"], res["truncated"]) == (N, 0), res
    s0 = net.stats("gcr")
    assert (s0["sliced"], s0["escaped_dropped"]) == (N, 0), s0
    move_to_x2(net, fam)
    s1, s2 = assert_stale_then_flushed(net, "gcr", fam, 7300, "dut2")
    assert delta(s0, s1, "sliced", "escaped_dropped", "route_cache_hit") == \
        {"sliced": N, "escaped_dropped": N, "route_cache_hit": N}, s1
    assert delta(s1, s2, "sliced", "escaped_dropped", "skipped_route") == \
        {"sliced": 0, "escaped_dropped": 0, "skipped_route": N}, s2


def attach_and_cache(net, name, port):
    """Attach NAME (cache age 10 s, events) and slice one batch of the
    flow to srv: its verdict cached. The stats after it."""
    net.attach("dut0", "dut1", "--route-cache-age", "10000", "--events",
               name=name)
    res, _ = batch(net, "srv", 4, port, 0)
    assert (res["intact"], res["truncated"]) == (N, 0), res
    return net.stats(name)


def test_stale_route_to_new_interface(nets):
    """The route moves to dut9, made after attach: no TCX guard there yet
    (status exit 3 names it), and no daemon; the FORWARD guard drops the
    10 headers the stale verdict slices. Then repair guards dut9, and
    after the flush the flow passes unsliced and whole."""
    net = nets(router, "gcn")
    s0 = attach_and_cache(net, "gcn", 7301)
    net.add_ns("x2")
    net.veth("dut", "dut9", "x2", "x20")
    net.addr("dut", "dut9", "10.77.3.1")
    net.addr("x2", "x20", X2[4])
    net.ip("x2", "route", "add", "default", "via", "10.77.3.1")
    move_to_x2(net, 4, via="dut9")
    cp = net.nfslice("status", "--name", "gcn")
    assert cp.returncode == 3 and "guard missing (TCX egress)" in cp.stdout, \
        describe(cp)
    s1, s2 = assert_stale_then_flushed(net, "gcn", 4, 7301, "dut9")
    assert delta(s0, s1, "sliced", "escaped_dropped") == \
        {"sliced": N, "escaped_dropped": N}, s1
    assert delta(s1, s2, "sliced", "skipped_route") == \
        {"sliced": 0, "skipped_route": N}, s2
    cp = net.nfslice("repair", "--name", "gcn")
    assert cp.returncode == 0, describe(cp)
    assert status(net, "gcn")["healthy"] is True


def test_stale_route_to_local_address(nets):
    """The server's address is added to the DUT itself: the cached verdict
    still slices, the LOCAL_IN guard drops the 10 headers before the DUT's
    socket (none truncated there); after the flush the flow is delivered
    locally, unsliced (skipped_local) and whole."""
    net = nets(router, "gcl")
    s0 = attach_and_cache(net, "gcl", 7302)
    net.ip("dut", "addr", "add", f"{SRV4}/32", "dev", "lo")
    res, sent = batch(net, "dut", 4, 7302, N)
    assert (res["truncated"], res["intact"]) == (0, 0), res
    s1 = net.stats("gcl")
    assert delta(s0, s1, "sliced", "escaped_dropped") == \
        {"sliced": N, "escaped_dropped": N}, s1
    events = escaped_events(net, "gcl", N)
    assert [(e["reason"], e["ifname"], e["dst"]) for e in events] == \
        [("escaped_dropped", "dut0", SRV4)] * N, events
    assert net.nfslice("set", "--name", "gcl",
                       "--route-flush").returncode == 0
    res, _ = batch(net, "dut", 4, 7302, 2 * N)
    assert (res["truncated"], res["intact"]) == (0, N), res
    s2 = net.stats("gcl")
    assert delta(s1, s2, "sliced", "skipped_local", "escaped_dropped") == \
        {"sliced": 0, "skipped_local": N, "escaped_dropped": 0}, s2


def test_route_moved_under_traffic_with_nfsliced(nets, tmp_path):
    """Paced traffic (400 datagrams, one every 2 ms) while the route to
    the server moves to dut2: nfsliced's watcher bumps the route
    generation (status route_gen moves), every datagram is accounted for
    exactly (whole at srv or at x2, dropped by a guard and counted, or the
    one NAT drops: NAT_OIF), none truncated anywhere, and the flow's last datagrams arrive at x2
    unsliced."""
    total, gap_us, port = 400, 2000, 7303
    net = nets(router, "gct", 1)
    net.attach("dut0", "dut1", "--route-cache-age", "10000", name="gct")
    d = Daemon(tmp_path)
    try:
        poll(lambda: "watching the links" in d.text(), 10,
             "nfsliced watching the namespace's links")
        net.ip("x2", "addr", "add", f"{SRV4}/32", "dev", "lo")
        net.ping("dut", X2[4])
        gen0 = status(net, "gct")["route_gen"]
        s0 = net.stats("gct")
        rx_srv = net.receiver("srv", port, total, SIZE, 33, idle=3.0)
        rx_x2 = net.receiver("x2", port, total, SIZE, 33, idle=3.0)
        tx = net.spawn("cli", "taskset", "-c", "0", PY, HERE, "send", SRV4,
                       port,
                       "--count", total, "--size", SIZE, "--seed", 33,
                       "--sport", SPORT, "--gap-us", gap_us)
        # Mid-stream: once 50 of them are sliced.
        poll(lambda: net.stats("gct")["sliced"] - s0["sliced"] >= 50, 10,
             "the first 50 datagrams sliced")
        net.ip("dut", "route", "add", f"{SRV4}/32", "via", X2[4], "dev",
               "dut2")
        poll(lambda: status(net, "gct")["route_gen"] > gen0, 5,
             "nfsliced bumping the route generation")
        sent = net.result(tx)["sent"]
        srv, x2 = net.result(rx_srv), net.result(rx_x2)
    finally:
        d.stop()
    assert sent == total
    assert (srv["truncated"], x2["truncated"], srv["corrupt"],
            x2["corrupt"]) == (0, 0, 0, 0), (srv, x2)
    s1 = net.stats("gct")
    got = delta(s0, s1, "sliced", "spliced", "escaped_dropped",
                "skipped_route")
    assert srv["intact"] > 0 and x2["intact"] > 0, (srv, x2, got)
    assert srv["intact"] + x2["intact"] + got["escaped_dropped"] + \
        NAT_OIF == total, (srv, x2, got)
    assert got["sliced"] == got["spliced"] + got["escaped_dropped"], got
    assert got["skipped_route"] == x2["intact"] + NAT_OIF, (x2, got)
