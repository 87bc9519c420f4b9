# SPDX-License-Identifier: GPL-2.0
"""The slicer's route verdict cache (issue 19 item 2; docs/format.md
"Where a packet is sliced").

`nfslice attach --route-cache off` keeps the per-packet lookup: status
says so and stats never count a hit. With the cache on, a route change
reported through the CLI's bump (`nfslice set --route-flush`) takes effect
on the next packet: the route to the server moved to an interface outside
the domain, the next datagrams of the same flow pass unsliced and arrive
byte for byte, although the age limit (10 s here) has not passed.
Topology: nfinv.router() with one extra link dut2 - x2.
"""
import json

from nfinv import (SRV4, SRV6, assert_intact, counters,  # noqa: F401
                   nets, router)
from nfsl.rig import describe

N = 10          # datagrams per family
SIZE = 1000     # UDP payload bytes: well above the 256 B threshold
PORT = 7011
SPORT = 40111   # one flow per family across both sends


def test_route_cache_off(nets):
    """--route-cache off: status shows it, every datagram is sliced and
    arrives whole, and no verdict is counted as a hit or a miss."""
    net = nets(router, "rcoff")
    net.attach("dut0", "dut1", "--route-cache", "off", name="rcoff")
    cp = net.nfslice("status", "--name", "rcoff", "--json")
    st = json.loads(cp.stdout)
    assert (st["route_cache"], st["route_cache_age_ms"]) == (False, 0), st
    cp = net.nfslice("status", "--name", "rcoff")
    assert "route cache off" in cp.stdout, describe(cp)
    res, _ = net.flow("cli", "srv", [SRV4, SRV6], PORT, N, SIZE, 21,
                      send_opts=("--sport", SPORT))
    assert_intact(res, 2 * N, "client -> server, cache off")
    s = net.stats("rcoff")
    assert counters(s, "sliced", "route_cache_hit", "route_cache_miss",
                    "route_cache_hit_rate") == \
        {"sliced": 2 * N, "route_cache_hit": 0, "route_cache_miss": 0,
         "route_cache_hit_rate": None}, s
    cp = net.nfslice("stats", "--name", "rcoff")
    assert "route cache off" in cp.stdout, describe(cp)


def test_route_flush_applies_next_packet(nets):
    """Cache on, 10 s age: the flow is sliced from cached verdicts; the
    route to the server moves to dut2 (outside the domain) and `nfslice
    set --route-flush` bumps the generation: the next datagrams of the same
    flows pass unsliced (skipped_route) and arrive whole at x2."""
    net = nets(router, "rcfl", extra=1)
    net.attach("dut0", "dut1", "--route-cache-age", "10000", name="rcfl")
    st = json.loads(net.nfslice("status", "--name", "rcfl", "--json").stdout)
    assert (st["route_cache"], st["route_cache_age_ms"]) == (True, 10000), st
    res, _ = net.flow("cli", "srv", [SRV4, SRV6], PORT, N, SIZE, 22,
                      send_opts=("--sport", SPORT))
    assert_intact(res, 2 * N, "client -> server, cache on")
    s1 = net.stats("rcfl")
    assert s1["sliced"] == 2 * N, s1
    assert s1["route_cache_hit"] + s1["route_cache_miss"] == 2 * N, s1
    assert s1["route_cache_hit"] > 0, s1
    assert s1["route_cache_hit_rate"] == \
        round(s1["route_cache_hit"] / (2 * N), 4), s1

    # The server's addresses now live behind dut2, in x2.
    net.ip("x2", "addr", "add", f"{SRV4}/32", "dev", "x20")
    net.ip("x2", "addr", "add", f"{SRV6}/128", "dev", "x20", "nodad")
    net.ip("dut", "route", "add", f"{SRV4}/32", "via", "10.77.3.2")
    net.ip("dut", "-6", "route", "add", f"{SRV6}/128", "via", "fd00:77:3::2")
    net.ping("dut", SRV4, SRV6)     # the new next hop's neighbour entries
    gens = []
    for _ in range(2):
        cp = net.nfslice("set", "--name", "rcfl", "--route-flush", "--json")
        assert cp.returncode == 0, describe(cp)
        gens.append(json.loads(cp.stdout)["route_gen"])
    assert gens[1] == gens[0] + 1, gens
    cp = net.nfslice("set", "--name", "rcfl", "--route-flush")
    assert cp.returncode == 0 and \
        "cached route verdicts flushed" in cp.stdout, describe(cp)

    res, sent = net.flow("cli", "x2", [SRV4, SRV6], PORT, N, SIZE, 23,
                         send_opts=("--sport", SPORT))
    assert [x["sent"] for x in sent] == [N, N], sent
    # Nothing truncated or corrupt. The flows were masqueraded out of
    # dut1: the first datagram of each the kernel routes out of dut2 is
    # dropped by NAT, which ends the connection (nf_nat_oif_changed,
    # net/netfilter/nf_nat_core.c), with or without nfslice: one per family.
    assert (res["truncated"], res["corrupt"], res["duplicate"],
            res["intact"]) == (0, 0, 0, 2 * N - 2), res
    s2 = net.stats("rcfl")
    assert counters(s2, "sliced", "skipped_route") == \
        {"sliced": 2 * N, "skipped_route": 2 * N}, s2
    assert s2["route_cache_miss"] - s1["route_cache_miss"] >= 2, (s1, s2)
    assert s2["route_cache_hit"] + s2["route_cache_miss"] == 4 * N, s2
