# SPDX-License-Identifier: GPL-2.0
"""TTL eviction (issue 10 section 2): `nfslice evict`, the one-shot TTL scan.

Wrap-count expiry (PayloadPark Alg. 1) evicts a payload only when its
partition turns: after a burst, the payloads of headers an NF dropped stay
parked for ever. The TTL scan (userspace/lib/nfsl/ttl.h; nfsliced runs it every
TTL / 4, `nfslice evict` once) frees every payload parked longer than the
TTL whose slot still holds it, reading only the slicer's park log entries
older than the TTL.

- An NF (nftables in the DUT) drops 30% of the sliced headers: their
  payloads stay busy; a scan with a TTL they have not reached frees
  nothing; once the domain's TTL has passed, `nfslice evict` frees exactly
  them (evicted_ttl = the NF's drops), no slot stays busy, and every
  header the NF passed was spliced byte for byte.
- A header delayed beyond the TTL (by the NF server behind an NF port, as
  test_invariant.py's hairpin, where this file run as a script holds
  every datagram of the flow before it sends it back: netem is not in this
  kernel, docs/topologies.md) is dropped as stale when it comes back,
  never spliced with the payload now in its slot: its payload was evicted
  and the slot parked another datagram's meanwhile (--keep 8 keeps each
  datagram's number in its header, so a wrong splice would be corrupt).

The domains are attached with --ttl 0 (off) and scanned with `nfslice
evict --ttl MS`: an nfsliced running on the host (the manager scans every
domain with a TTL) must not evict before the test looks.

Topologies: nfinv.router() on kernel defaults, per-run namespace names,
removed whatever the outcome. No fixed sleeps: every wait polls a state.
"""
import collections
import json
import select
import socket
import sys
import time
from pathlib import Path

if __name__ != "__main__":
    from nfinv import (HERE, SRV4, SRV6, assert_intact,  # noqa: F401
                       counters, nets, router)
    from nfsl.rig import PY, describe, poll, possible_cpus

SIZE = 1000     # UDP payload bytes: 1042/1062 B frames, sliced
PORT = 7301
THIS = Path(__file__).resolve()


def evict(net, name, *opts):
    """`nfslice evict --json` in the DUT: its object (asserted exit 0)."""
    cp = net.nfslice("evict", "--name", name, "--json", *opts)
    assert cp.returncode == 0, describe(cp)
    return json.loads(cp.stdout)


def nft_drops(net, counter):
    """Packets of the DUT's named nftables COUNTER of table inet nfttl."""
    cp = net.sh("dut", "nft", "-j", "list", "counter", "inet", "nfttl",
                counter)
    for obj in json.loads(cp.stdout)["nftables"]:
        if "counter" in obj:
            return obj["counter"]["packets"]
    raise AssertionError(f"no counter {counter}: {cp.stdout}")


def test_nf_drops_no_slot_left_after_ttl(nets):
    """30% of the sliced headers dropped by the NF: after the TTL, one
    `nfslice evict` frees exactly their payloads, nothing else."""
    n = 150                       # datagrams per family
    ttl = ("--ttl", "200")
    net = nets(router, "tdr")
    net.attach("dut0", "dut1", name="tdr")
    st = json.loads(net.nfslice("status", "--name", "tdr", "--json").stdout)
    assert st["ttl_ms"] == 10, f"attach's default TTL: {st}"
    net.detach("tdr")
    net.attach("--ttl", "0", "dut0", "dut1", name="tdr")
    st = json.loads(net.nfslice("status", "--name", "tdr", "--json").stdout)
    assert st["ttl_ms"] == 0, st
    cp = net.nfslice("evict", "--name", "tdr", "--json")
    assert cp.returncode == 2 and "no TTL" in json.loads(cp.stdout)["error"], \
        describe(cp)
    net.nft("dut", """
table inet nfttl {
    counter dropped { }
    chain forward {
        type filter hook forward priority filter - 10; policy accept;
        ip dscp 63 numgen random mod 10 < 3 counter name "dropped" drop
        ip6 dscp 63 numgen random mod 10 < 3 counter name "dropped" drop
    }
}
""")
    res, sent = net.flow("cli", "srv", [SRV4, SRV6], PORT, n, SIZE, 31,
                         idle=0.5)
    assert [s["sent"] for s in sent] == [n, n], sent
    dropped = nft_drops(net, "dropped")
    assert 0 < dropped < 2 * n, dropped
    assert_intact(res, 2 * n - dropped, "NF dropping 30%")
    st = net.stats("tdr")
    assert counters(st, "sliced", "spliced", "slots_busy", "evicted",
                    "stale") == \
        {"sliced": 2 * n, "spliced": 2 * n - dropped, "slots_busy": dropped,
         "evicted": 0, "stale": 0}, st
    # A TTL the payloads have not reached frees nothing.
    young = evict(net, "tdr", "--ttl", "60000")
    assert (young["evicted"], young["slots_busy"]) == (0, dropped), young
    # A TTL of 200 ms: poll until it has passed for every one.
    got = []

    def freed():
        r = evict(net, "tdr", *ttl)
        got.append(r)
        return r["slots_busy"] == 0
    poll(freed, 10, "no slot busy after the TTL")
    assert sum(r["evicted"] for r in got) == dropped, got
    assert all(p["age_us"] >= 200000 for r in got for p in r["payloads"]), got
    assert all(p["ifname"] == "dut0" for r in got for p in r["payloads"]), got
    st = net.stats("tdr")
    assert counters(st, "evicted_ttl", "evicted", "stale", "spliced",
                    "slots_busy", "ttl_overrun", "ttl_raced") == \
        {"evicted_ttl": dropped, "evicted": 0, "stale": 0,
         "spliced": 2 * n - dropped, "slots_busy": 0, "ttl_overrun": 0,
         "ttl_raced": 0}, st
    assert st["ttl_scans"] == 1 + len(got), st
    # Text output names the domain, the TTL and the counts.
    cp = net.nfslice("evict", "--name", "tdr", *ttl)
    assert cp.returncode == 0 and \
        "domain 'tdr': ttl 200.000 ms: evicted 0 payloads" in cp.stdout, \
        describe(cp)


def hairpin(net):
    """The DUT sends client traffic to x2 (an NF server behind NF port
    dut2, policy route on iif dut0); x2 routes it back on dut2, the DUT
    forwards it out of dut1 (test_invariant.py test_nf_port_hairpin)."""
    for fam, via in (("-4", "10.77.3.2"), ("-6", "fd00:77:3::2")):
        net.ip("dut", fam, "rule", "add", "iif", "dut0", "lookup", 100,
               "pref", 100)
        net.ip("dut", fam, "route", "add", "default", "via", via, "dev",
               "dut2", "table", 100)
    net.sysctl("x2", "net.ipv4.ip_forward", 1)
    net.sysctl("x2", "net.ipv6.conf.all.forwarding", 1)
    net.sysctl("x2", "net.ipv4.conf.all.send_redirects", 0)
    net.ping("cli", SRV4, SRV6)     # the path works (and is resolved)


def test_header_delayed_beyond_ttl_is_stale(nets):
    """Headers held 2.5 s by the NF server: their payloads evicted after
    the 100 ms TTL, their slots parked other datagrams meanwhile; when
    they come back they are dropped as stale, never spliced with those."""
    n = 16
    net = nets(router, "tdl", extra=1)
    hairpin(net)
    # The NF server no longer forwards: the holding script does.
    net.sysctl("x2", "net.ipv4.ip_forward", 0)
    dut2 = net.link("dut", "dut2")["address"]
    hold = net.spawn("x2", PY, THIS, "hold", "x20", dut2, "2.5", PORT)
    assert hold.stdout.readline().strip() == "ready", hold
    # The sender on CPU 0, the NF port's partition of its share 16 slots:
    # the second flow parks where the first one's payloads were.
    net.attach("--nf-port", "dut2", "--ttl", "0", "--keep", "8",
               "--slots", 16 * 2 * possible_cpus(), "dut0", "dut1",
               name="tdl")
    rx = net.receiver("srv", PORT, n, SIZE, 41, idle=6.0)

    def send(first):
        cp = net.sh("cli", "taskset", "-c", "0", PY, HERE, "send", SRV4,
                    PORT, "--count", n, "--size", SIZE, "--seed", 41,
                    "--first", first)
        assert json.loads(cp.stdout.splitlines()[-1])["sent"] == n, cp

    send(0)
    got = []

    def evicted_all():
        got.append(evict(net, "tdl", "--ttl", "100"))
        return sum(r["evicted"] for r in got) == n
    poll(evicted_all, 2.0, "the first flow's payloads evicted after the TTL "
         "(before their headers come back)")
    st = net.stats("tdl")
    assert (st["stale"], st["spliced"], st["slots_busy"]) == (0, 0, 0), st
    send(n)                         # parked where the first flow's were
    res = net.result(rx, timeout=30)
    last = []

    def all_back():
        last[:] = [net.stats("tdl")]
        return last[0]["stale"] + last[0]["spliced"] == 2 * n
    try:
        poll(all_back, 10, "every header back at the splicer")
    except AssertionError as e:
        raise AssertionError(f"{e}: stats {last}, receiver {res}") from None
    st = last[0]
    assert_intact(res, n, "second flow, after the first one's eviction")
    assert counters(st, "sliced", "stale", "spliced", "evicted_ttl",
                    "evicted", "bad_token", "skipped_full") == \
        {"sliced": 2 * n, "stale": n, "spliced": n, "evicted_ttl": n,
         "evicted": 0, "bad_token": 0, "skipped_full": 0}, st


def _udp4_complete(frame, ihl):
    """FRAME (Ethernet, IPv4 with IHL header bytes, UDP) with its UDP
    checksum computed: a local socket's datagram over veth arrives with
    only the pseudo-header seed in it (CHECKSUM_PARTIAL), which a device
    on the way completes; sent again as raw bytes it must be complete."""
    f = bytearray(frame)
    l4 = 14 + ihl
    f[l4 + 6:l4 + 8] = b"\0\0"
    seg = bytes(f[26:34]) + b"\0\x11" + bytes(f[l4 + 4:l4 + 6]) + bytes(f[l4:])
    if len(seg) % 2:
        seg += b"\0"
    s = sum(int.from_bytes(seg[i:i + 2], "big") for i in range(0, len(seg), 2))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    f[l4 + 6:l4 + 8] = ((~s & 0xffff) or 0xffff).to_bytes(2, "big")
    return bytes(f)


def _hold(argv):
    """hold IFACE DST_MAC SECONDS PORT: every IPv4 UDP frame to PORT that
    IFACE receives for this host's MAC is sent back out of IFACE to
    DST_MAC, SECONDS after it arrived, in order, its UDP checksum
    completed (the NF server of test_header_delayed_beyond_ttl_is_stale;
    its kernel forwards nothing)."""
    iface, dst = argv[0], bytes.fromhex(argv[1].replace(":", ""))
    delay, port = float(argv[2]), int(argv[3])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind((iface, 0x0800))
    src = s.getsockname()[4]
    held = collections.deque()
    print("ready", flush=True)
    while True:
        now = time.monotonic()
        while held and held[0][0] <= now:
            s.send(dst + src + held.popleft()[1][12:])
        wait = held[0][0] - now if held else 1.0
        if not select.select([s], [], [], max(wait, 0))[0]:
            continue
        frame, addr = s.recvfrom(65535)
        ihl = (frame[14] & 0xf) * 4 if len(frame) > 14 else 0
        if addr[2] != socket.PACKET_HOST or len(frame) < 14 + ihl + 8 or \
                frame[23] != socket.IPPROTO_UDP or \
                int.from_bytes(frame[16 + ihl:18 + ihl], "big") != port:
            continue
        held.append((time.monotonic() + delay, _udp4_complete(frame, ihl)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["hold"]:
        sys.exit(_hold(sys.argv[2:]))
    sys.exit("usage: test_ttl.py hold IFACE DST_MAC SECONDS PORT")
