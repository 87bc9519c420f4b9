# SPDX-License-Identifier: GPL-2.0
"""The guards (issue 19 section 1): the invariant does not rest on the
route check.

The slicer slices what bpf_fib_lookup says leaves through a domain
interface; two holes it has today, both deterministic, send the sliced
header elsewhere:

- policy routing by a mark nftables sets at prerouting (after XDP: the
  FIB lookup sees no mark): the kernel routes the header out of an
  interface that is not the domain's, where no splicer runs;
- a DNAT at prerouting from a forwarded address to a local one: the
  header is delivered to a local socket.

With the guards (TCX egress of every other interface, netfilter LOCAL_IN)
nothing arrives truncated, and every such header is dropped and counted
escaped_dropped, with a drop event. Guards follow the interfaces: nfsliced
puts one on an interface made after attach at once, nfslice repair does
without it; detach removes every guard link; an unsliced packet passes a
guard byte for byte.

Topologies: nfinv.router() with one extra link dut2 - x2 (10.77.3.0/24),
kernel defaults, per-run namespace names.
"""
import json

import pytest

from nfinv import (DUT4_IN, SRV4, SRV6, assert_intact, counters,  # noqa: F401
                   nets, router)
from nfload import Daemon
from nfsl.rig import PY, describe, poll

X2, X2_6 = "10.77.3.2", "fd00:77:3::2"
MARK_TABLE = 100
SIZE, COUNT = 1000, 20  # sliced: above the 256 B threshold


def status(net, name):
    cp = net.nfslice("status", "--name", name, "--json")
    assert cp.returncode in (0, 3), describe(cp)
    return json.loads(cp.stdout)


def guarded(st):
    """{interface name: link id} of status ST's guards."""
    return {g["name"]: g["link_id"] for g in st["guards"]["interfaces"]}


def mark_route_via_x2(net, dev="dut2"):
    """Datagrams to SRV4 / SRV6 port 7100.. get a mark at prerouting, and
    marked traffic is routed to x2 (which holds SRV4 and SRV6 as its own
    addresses, so it receives them): the slicer's FIB lookup, without the
    mark, says dut1."""
    net.nft("dut", """
table inet nfiv_mark {
    chain prerouting {
        type filter hook prerouting priority mangle; policy accept;
        udp dport 7100-7199 meta mark set 0x42
    }
}
""")
    for fam, host, via, plen in (("-4", SRV4, X2, 32),
                                 ("-6", SRV6, X2_6, 128)):
        net.ip("dut", fam, "rule", "add", "fwmark", "0x42", "table",
               MARK_TABLE)
        net.ip("dut", fam, "route", "add", f"{host}/{plen}", "via", via,
               "dev", dev, "table", MARK_TABLE)
        net.ip("x2", fam, "addr", "add", f"{host}/{plen}", "dev", "lo")


def events(net, name, n):
    """The domain's next N drop events (already in the ring), as dicts."""
    cp = net.nfslice("events", "--name", name, "--json", "--count", n,
                     "--duration", 5)
    assert cp.returncode == 0, describe(cp)
    return [json.loads(ln) for ln in cp.stdout.splitlines() if ln]


def assert_escaped(net, name, port, dev, host=SRV4, role="x2", dst=None):
    """COUNT sliced datagrams cli -> HOST:PORT, sent on through DEV toward
    ROLE: ROLE gets nothing (no truncated header), each is dropped by a
    guard, counted and reported (event on DEV, to DST: HOST unless a NAT
    changed it)."""
    before = net.stats(name)
    rx = net.receiver(role, port, COUNT, SIZE, 7, idle=1.5)
    sent = net.send("cli", host, port, COUNT, SIZE, 7)
    assert sent["sent"] == COUNT, sent
    res = net.result(rx)
    assert (res["truncated"], res["intact"]) == (0, 0), \
        f"headers sent through {dev} reached {role}: {res}"
    st = net.stats(name)
    got = {k: st[k] - before[k] for k in ("sliced", "escaped_dropped")}
    assert got == {"sliced": COUNT, "escaped_dropped": COUNT}, st
    ev = events(net, name, COUNT)
    assert [(e["reason"], e["ifname"], e["dst"], e["dport"]) for e in ev] == \
        [("escaped_dropped", dev, dst or host, port)] * COUNT, ev


@pytest.mark.parametrize("host", [SRV4, SRV6])
def test_guard_stops_header_policy_routed_by_mark(nets, host):
    """A mark set at prerouting routes sliced headers out of dut2, which
    is not the domain's: dut2's guard drops all 20 (escaped_dropped 20, 20
    events), x2 receives no truncated datagram. Today x2 gets 20
    truncated ones."""
    net = nets(router, "gm", 1)
    mark_route_via_x2(net)
    net.attach("dut0", "dut1", "--events", name="gm")
    assert guarded(status(net, "gm"))["dut2"] > 0
    assert_escaped(net, "gm", 7100, "dut2", host)


def test_guard_stops_local_delivery_after_dnat(nets):
    """A DNAT at prerouting turns datagrams to SRV4 (routed out of dut1,
    so sliced) into datagrams to the DUT's own address: the LOCAL_IN guard
    drops all 20 before the socket (escaped_dropped 20, 20 events); small
    ones, never sliced, arrive whole. Today the socket gets 20 truncated
    ones."""
    net = nets(router, "gd")
    net.nft("dut", f"""
table ip nfiv_dnat {{
    chain prerouting {{
        type nat hook prerouting priority dstnat; policy accept;
        ip daddr {SRV4} udp dport 7200 dnat to {DUT4_IN}
    }}
}}
""")
    net.attach("dut0", "dut1", "--events", name="gd")
    st = status(net, "gd")
    assert st["guards"]["local_in"]["ipv4_link_id"] > 0, st
    assert st["guards"]["local_in"]["ipv6_link_id"] > 0, st
    rx = net.receiver("dut", 7200, 5, 100, 3)
    net.send("cli", SRV4, 7200, 5, 100, 3)
    assert_intact(net.result(rx), 5, "unsliced datagrams delivered locally")
    assert_escaped(net, "gd", 7200, "dut0", role="dut", dst=DUT4_IN)


def new_link(net):
    """dut9 - x2 made after attach (x2 as router(extra=1) makes it, but
    with the link on dut9); the mark routes there."""
    net.add_ns("x2")
    net.veth("dut", "dut9", "x2", "x20")
    net.addr("dut", "dut9", "10.77.3.1", "fd00:77:3::1")
    net.addr("x2", "x20", X2, X2_6)
    net.ip("x2", "route", "add", "default", "via", "10.77.3.1")
    net.ip("x2", "-6", "route", "add", "default", "via", "fd00:77:3::1")
    net.ping("dut", X2, X2_6)
    mark_route_via_x2(net, "dut9")


def test_new_interface_guarded_by_nfsliced(nets, tmp_path):
    """An interface made after attach gets its guard from nfsliced (its
    rtnetlink watcher) within a second or two, and a header marked there
    is dropped and counted."""
    net = nets(router, "gn")
    net.attach("dut0", "dut1", "--events", name="gn")
    d = Daemon(tmp_path)
    try:
        # The daemon watches the namespace once it has seen the domain.
        poll(lambda: "watching the links" in d.text(), 10,
             "nfsliced watching the namespace's links")
        new_link(net)
        # At once, unless another run holds the host lock: the watcher
        # then retries every second (the FORWARD guard covers dut9 until).
        poll(lambda: guarded(status(net, "gn")).get("dut9"), 30,
             "a guard on dut9 from nfsliced")
        assert "guard link" in d.text(), d.text()
    finally:
        d.stop()
    assert status(net, "gn")["healthy"] is True
    assert_escaped(net, "gn", 7101, "dut9")


def test_new_interface_guarded_by_repair(nets):
    """Without nfsliced, status calls the domain damaged (exit 3: a guard
    missing on dut9) and repair puts it there."""
    net = nets(router, "gr")
    net.attach("dut0", "dut1", "--events", name="gr")
    new_link(net)
    cp = net.nfslice("status", "--name", "gr")
    assert cp.returncode == 3, describe(cp)
    assert "guard missing (TCX egress)" in cp.stdout, cp.stdout
    cp = net.nfslice("repair", "--name", "gr")
    assert cp.returncode == 0, describe(cp)
    assert "nfslice: guard attached to dut9 (eth)" in cp.stdout, cp.stdout
    st = status(net, "gr")
    assert st["healthy"] is True and guarded(st)["dut9"] > 0, st
    assert_escaped(net, "gr", 7102, "dut9")


def bpftool_link(net, link_id):
    return net.sh("dut", "bpftool", "-j", "link", "show", "id", link_id,
                  check=False)


def test_guards_shown_pass_unsliced_and_go_with_detach(nets):
    """status shows a guard on lo and dut2, both local-delivery ones and
    both routing ones;
    unsliced datagrams through dut2 (routed there: skipped_route) pass its
    guard byte for byte; detach removes every guard link."""
    net = nets(router, "gs", 1)
    net.attach("dut0", "dut1", name="gs")
    st = status(net, "gs")
    g = guarded(st)
    assert set(g) == {"lo", "dut2"} and all(g.values()), st
    text = net.nfslice("status", "--name", "gs").stdout
    assert "  guards   tcx egress on lo, dut2; local delivery (netfilter " \
        "LOCAL_IN) ipv4 ipv6; routing (netfilter FORWARD) ipv4 ipv6\n" \
        in text, text
    rx = net.receiver("x2", 7300, COUNT, SIZE, 9)
    net.send("cli", X2, 7300, COUNT, SIZE, 9)
    assert_intact(net.result(rx), COUNT, "unsliced through dut2's guard")
    after = net.stats("gs")
    assert counters(after, "sliced", "escaped_dropped") == \
        {"sliced": 0, "escaped_dropped": 0}, after
    ids = list(g.values()) + [st["guards"][h][f"ipv{v}_link_id"]
                              for h in ("local_in", "forward") for v in (4, 6)]
    assert all(ids), st
    for i in ids:
        assert bpftool_link(net, i).returncode == 0, i
    net.detach("gs")
    for i in ids:
        cp = bpftool_link(net, i)
        assert cp.returncode != 0, f"link {i} left after detach: {cp.stdout}"


def test_guard_l3_on_tun(nets):
    """A device without an Ethernet header (a tun; this kernel has no ipip,
    gre or wireguard modules) gets the L3 guard: headers marked into it
    are dropped at its egress (escaped_dropped 20, 20 events on tun9)."""
    net = nets(router, "gt", 1)
    net.sh("dut", "ip", "tuntap", "add", "dev", "tun9", "mode", "tun")
    net.ip("dut", "link", "set", "tun9", "up")
    net.nft("dut", """
table inet nfiv_mark {
    chain prerouting {
        type filter hook prerouting priority mangle; policy accept;
        udp dport 7100-7199 meta mark set 0x42
    }
}
""")
    net.ip("dut", "rule", "add", "fwmark", "0x42", "table", MARK_TABLE)
    net.ip("dut", "route", "add", f"{SRV4}/32", "dev", "tun9", "table",
           MARK_TABLE)
    net.attach("dut0", "dut1", "--events", name="gt")
    kinds = {g["name"]: (g["kind"], g["link_id"] > 0)
             for g in status(net, "gt")["guards"]["interfaces"]}
    assert kinds["tun9"] == ("l3", True), kinds
    assert_escaped(net, "gt", 7103, "tun9")


# Open the tun device argv[1] (IFF_TUN | IFF_NO_PI) and read until killed.
TUN_READER = """
import fcntl, os, struct, sys
fd = os.open("/dev/net/tun", os.O_RDWR)
fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", sys.argv[1].encode(), 0x1001))
print("ready", flush=True)
while True:
    os.read(fd, 65536)
"""


@pytest.mark.parametrize("dev", ["dut2", "tun9"])
def test_tcx_guard_stops_redirected_header(nets, dev):
    """A tc mirred action on dut0's ingress redirects datagrams to port
    7104 straight to DEV's egress: no routing, no netfilter (the FORWARD
    guard never sees them), so DEV's own TCX guard (eth on dut2, l3 on a
    tun) drops the 20 sliced headers, counted and reported on DEV."""
    net = nets(router, "gx", 1)
    if dev == "tun9":
        # A reader holds the tun (carrier on): mirred drops toward a
        # device without carrier before its egress hook.
        rd = net.spawn("dut", PY, "-c", TUN_READER, "tun9")
        assert rd.stdout.readline().strip() == "ready"
        net.ip("dut", "link", "set", "tun9", "up")
        poll(lambda: "LOWER_UP" in net.sh("dut", "ip", "link", "show",
                                          "tun9", check=False).stdout,
             5, "tun9 up, held by its reader")
    net.attach("dut0", "dut1", "--events", name="gx")
    net.sh("dut", "tc", "qdisc", "add", "dev", "dut0", "clsact")
    net.sh("dut", "tc", "filter", "add", "dev", "dut0", "ingress", "protocol",
           "ip", "prio", "1", "u32", "match", "ip", "protocol", "17", "0xff",
           "match", "ip", "dport", "7104", "0xffff", "action", "mirred",
           "egress", "redirect", "dev", dev)
    assert_escaped(net, "gx", 7104, dev)
