# SPDX-License-Identifier: GPL-2.0
"""Tenants (issue 10 section 5): the store partitioned between tenants.

The rig is test_ttl.py's hairpin on kernel defaults: the DUT sends the
client's traffic through NF port dut2 to x2, an NF server whose kernel
forwards nothing. There test_ttl.py's holding script sends every IPv4
datagram to PORT_B back after HOLD seconds (its checksum completed), on to
the server through dut1, where the splicer restores it; IPv6 datagrams
(tenant a's flood) die at x2, so their payloads stay parked. Both senders
run on CPU 0: one partition of the store, the worst case for isolation.

- A tenant's flood never evicts another tenant's payloads: tenant b (dst
  SRV4) parks NB datagrams whose headers x2 holds; tenant a (dst SRV6)
  floods 1000 datagrams meanwhile, far more than the store. With tenants,
  every one of b's datagrams comes back spliced byte for byte, none stale,
  and the flood's evictions are all a's own; the same run without tenants
  loses every one of b's payloads to the flood (stale), which shows the
  test can fail.
- Dynamic quotas (nfsliced --tenant-interval): a floods, b idle: a's quota
  grows to all that the others' floors leave; then b's held traffic
  demands more than its share too: the quotas settle at the weighted
  max-min split (weights 1:3) of what the floors leave, exactly.
- Runtime changes: --quota and --tenants through nfslice set, refused
  when they do not fit or change the tenants, with the generation bumped.

The domains are attached with --ttl 0: an nfsliced elsewhere on the host
(every one scans every domain) must not evict what x2 holds.
"""
import json
import os
import sys
import time
from pathlib import Path

if __name__ != "__main__":
    from nfinv import SRV4, SRV6, assert_intact, nets, router  # noqa: F401
    from nfsl.rig import PY, describe, poll
    from nfload import Daemon
    from test_ttl import hairpin, possible_cpus

THIS = Path(__file__).resolve()
TTL_PY = THIS.parent / "test_ttl.py"
SIZE = 1000          # UDP payload bytes: 1042/1062 B frames, sliced
PORT_B, PORT_A = 7401, 7402
NB = 12              # b's held datagrams (its region holds 16)
PART = 64            # slots per partition (2 per CPU: domain, NF port)
HOLD = 3.0           # s x2 holds b's headers


def tenants_file(tmp, *lines):
    f = tmp / "tenants"
    f.write_text("".join(ln + "\n" for ln in lines))
    return str(f)


def tenants(net, name):
    """`nfslice tenants --json`: {tenant name: its object}, and the whole."""
    cp = net.nfslice("tenants", "--name", name, "--json")
    assert cp.returncode == 0, describe(cp)
    doc = json.loads(cp.stdout)
    return {t["tenant"]: t for t in doc["tenants"]}, doc


def held_rig(nets, tag):
    """The hairpin with x2 forwarding nothing, and the holding script."""
    net = nets(router, tag, extra=1)
    hairpin(net)
    net.sysctl("x2", "net.ipv4.ip_forward", 0)
    net.sysctl("x2", "net.ipv6.conf.all.forwarding", 0)
    dut2 = net.link("dut", "dut2")["address"]
    hold = net.spawn("x2", PY, TTL_PY, "hold", "x20", dut2, HOLD, PORT_B)
    assert hold.stdout.readline().strip() == "ready", hold
    return net


def attach(net, name, *opts):
    net.attach("--nf-port", "dut2", "--ttl", "0", "--keep", "8",
               "--slots", PART * 2 * possible_cpus(), *opts, "dut0", "dut1",
               name=name)


def send_cpu0(net, host, port, count, first=0, seed=61):
    cp = net.sh("cli", "taskset", "-c", "0", PY, str(THIS.parent / "nfinv.py"),
                "send", host, port, "--count", count, "--size", SIZE,
                "--seed", seed, "--first", first, timeout=120)
    res = json.loads(cp.stdout.splitlines()[-1])
    assert res["sent"] == count, res
    return res


def flood_then_return(net, name):
    """b parks NB, a floods 1000 while x2 holds b's; the receiver's result
    and the stats once every b header came back."""
    rx = net.receiver("srv", PORT_B, NB, SIZE, 61, idle=HOLD + 5)
    send_cpu0(net, SRV4, PORT_B, NB)
    poll(lambda: net.stats(name)["sliced"] == NB, 5, "b's datagrams parked")
    t0 = time.monotonic()
    send_cpu0(net, SRV6, PORT_A, 1000, seed=62)
    st = net.stats(name)
    # The flood ended before x2 sent b's headers back: they met whatever
    # the flood did to the store.
    assert st["spliced"] + st["stale"] == 0 and time.monotonic() - t0 < HOLD, st
    res = net.result(rx, timeout=HOLD + 30)
    last = []

    def back():
        last[:] = [net.stats(name)]
        return last[0]["spliced"] + last[0]["stale"] == NB
    poll(back, 10, "every one of b's headers back at the splicer")
    return res, last[0]


def test_flood_never_evicts_another_tenant(nets, tmp_path):
    net = held_rig(nets, "tfl")
    spec = tenants_file(tmp_path, f"b quota=25% dst={SRV4}/32",
                        f"a quota=25% dst={SRV6}/128")
    attach(net, "tfl", "--tenants", spec)
    res, st = flood_then_return(net, "tfl")
    assert_intact(res, NB, "b's datagrams after a's flood, with tenants")
    ten, doc = tenants(net, "tfl")
    assert (doc["part_slots"], ten["b"]["quota"], ten["a"]["quota"],
            ten["default"]["quota"]) == (PART, 16, 16, 32), doc
    a, b = ten["a"], ten["b"]
    assert (b["attempts"], b["sliced"], b["evicted"], b["skipped_quota"]) == \
        (NB, NB, 0, 0), b
    assert a["attempts"] == 1000 and a["sliced"] + a["skipped_quota"] == 1000, a
    # a filled its 16 slots and went on evicting its own payloads (expiry
    # 2: each at 32 of a's attempts); over quota it passed unsliced.
    assert a["evicted"] > 0 and a["skipped_quota"] > 0 and a["busy"] == 16, a
    assert (st["stale"], st["spliced"], st["evicted"], st["skipped_quota"],
            st["sliced"]) == (0, NB, a["evicted"], a["skipped_quota"],
                              NB + a["sliced"]), st
    assert (b["busy"], ten["default"]["busy"], ten["default"]["attempts"]) == \
        (0, 0, 0), ten

    # The same without tenants: the flood ages and evicts b's payloads.
    net.detach("tfl")
    attach(net, "tfl")
    res, st = flood_then_return(net, "tfl")
    assert res["intact"] == 0 and res["truncated"] == 0 and \
        res["corrupt"] == 0, res
    assert (st["stale"], st["spliced"]) == (NB, 0), st


def test_dynamic_quotas_follow_demand(nets, tmp_path):
    net = held_rig(nets, "tdy")
    spec = tenants_file(tmp_path,
                        f"b quota=10% min=10% weight=3 dst={SRV4}/32",
                        f"a quota=10% min=10% weight=1 dst={SRV6}/128",
                        "default min=10%")
    attach(net, "tdy", "--tenants", spec)
    cp = net.nfslice("set", "--name", "tdy", "--tenant-mode", "dynamic",
                     "--json")
    assert cp.returncode == 0 and \
        json.loads(cp.stdout)["tenant_mode"] == "dynamic", describe(cp)
    floor = int(0.10 * PART)                       # 6 slots
    daemon = Daemon(tmp_path, "--tenant-interval", "100", "--gc-interval", "0")
    flood = pacer = None
    try:
        # a floods (its headers die at x2), b idle: a's demand exceeds
        # what is there, b's and default's are 0: they keep their floors.
        flood = net.spawn("cli", "taskset", "-c", "0", PY, THIS, "pace",
                          SRV6, PORT_A, 2000, 30, SIZE)
        want1 = {"a": PART - 2 * floor, "b": floor, "default": floor}
        got = []

        def quotas_are(want):
            t, _ = tenants(net, "tdy")
            got[:] = [{k: v["quota"] for k, v in t.items()}]
            return got[0] == want
        try:
            poll(lambda: quotas_are(want1), 15, f"quotas {want1}")
        except AssertionError as e:
            raise AssertionError(f"{e}: last {got}; {daemon.text()[-2000:]}")
        # b's held traffic demands more than its share as well: weighted
        # max-min (1:3) of the 64 - 3 x 6 = 46 slots above the floors:
        # a 6 + 11.5, b 6 + 34.5, default 6; rounded down, the slot left
        # to the heaviest (b).
        pacer = net.spawn("cli", "taskset", "-c", "0", PY, THIS, "pace",
                          SRV4, PORT_B, 500, 30, SIZE)
        want2 = {"a": 17, "b": 41, "default": floor}
        try:
            poll(lambda: quotas_are(want2), 15, f"quotas {want2}")
        except AssertionError as e:
            raise AssertionError(f"{e}: last {got}; {daemon.text()[-2000:]}")
        assert "quota" in daemon.text() and "tenant a" in daemon.text()
    finally:
        for p in (flood, pacer):
            if p:
                net.stop(p)
        assert daemon.stop() == 0


def test_set_quotas_at_runtime(nets, tmp_path):
    net = nets(router, "tse")
    spec = tenants_file(tmp_path, "gold quota=40% weight=2 dev=dut0",
                        f"silver quota=100 dst={SRV4}/32")
    net.attach("--ttl", "0", "--slots", 512 * possible_cpus(), "--tenants",
               spec, "dut0", "dut1", name="tse")
    t, doc = tenants(net, "tse")
    assert (doc["mode"], doc["gen"]) == ("static", 0), doc
    silver = 100 // possible_cpus()
    assert (t["gold"]["quota"], t["silver"]["quota"], t["silver"]["base"],
            t["default"]["quota"]) == \
        (204, silver, 204, 512 - 204 - silver), t
    cp = net.nfslice("set", "--name", "tse", "--quota", "gold=50%", "--json")
    assert cp.returncode == 0, describe(cp)
    out = json.loads(cp.stdout)
    assert (out["gen"], out["quotas"]["gold"],
            out["quotas"]["default"]) == (1, 256, 512 - 256 - silver), out
    # Refusals name the problem; nothing changes.
    for args, msg in (
            (("--quota", "gold=95%"), "add up to more than the 512 slots"),
            (("--quota", "bronze=1%"), "NAME a tenant of the domain"),
            (("--quota", "default=1%"), "other than default"),
            (("--quota", "gold=7x"), "give N% of each partition"),
            (("--tenants", tenants_file(tmp_path, "silver quota=1%")),
             "the tenants are fixed at attach"),
            (("--quota", "gold=1%", "--threshold", "300"), "two commands"),
            (("--quota", "gold=1%", "--if-gen", "0"), "changed since generation 0")):
        cp = net.nfslice("set", "--name", "tse", *args)
        assert cp.returncode != 0 and msg in cp.stderr, (args, describe(cp))
    t, doc = tenants(net, "tse")
    assert (doc["gen"], t["gold"]["quota"]) == (1, 256), doc
    # A new file: new quotas and rules, the same tenants.
    cp = net.nfslice("set", "--name", "tse", "--tenants", tenants_file(
        tmp_path, "gold quota=10% dst=10.9.0.0/16", "silver quota=10%"),
        "--if-gen", "1")
    assert cp.returncode == 0, describe(cp)
    t, doc = tenants(net, "tse")
    assert (doc["gen"], t["gold"]["quota"], t["silver"]["quota"],
            t["gold"]["weight"]) == (2, 51, 51, 1), doc
    net.detach("tse")
    cp = net.nfslice("attach", "--name", "tsx", "--tenants",
                     tenants_file(tmp_path, "x quota=1% dev=nosuch0"), "dut0")
    assert cp.returncode != 0 and "dev=nosuch0: not a domain interface" in \
        cp.stderr, describe(cp)
    cp = net.nfslice("list", "--json")
    assert cp.returncode == 0 and "tsx" not in cp.stdout, describe(cp)


def _pace(argv):
    """pace HOST PORT PPS SECONDS SIZE: UDP datagrams at PPS for SECONDS
    (1 ms bursts), the payload nfinv.py's datagram 0 pattern."""
    import socket
    host, port, pps, secs, size = argv[0], int(argv[1]), int(argv[2]), \
        float(argv[3]), int(argv[4])
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.connect((host, port))
    data = b"nfiv" + bytes(size - 4)
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < secs:
        due = int((time.monotonic() - start) * pps) + 1
        while sent < due:
            try:
                s.send(data)
            except OSError:
                pass
            sent += 1
        time.sleep(0.001)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["pace"]:
        sys.exit(_pace(sys.argv[2:]))
    sys.exit("usage: test_tenants.py pace HOST PORT PPS SECONDS SIZE")


def test_tenants_input_refused(nets, tmp_path):
    """A FIFO or /dev/zero as --tenants used to hang attach; an empty or a
    binary file attached with the default tenant only; quota=0x10 and
    quota=1e3 were 16 and 1000 slots; --quota a=1%,a=2% took the last. Each is refused at once, exit 2 (a usage error), naming
    the fix; nothing is attached or changed."""
    net = nets(router, "tsi")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    empty = tmp_path / "empty"
    empty.write_text("# no tenants yet\n")
    binary = tmp_path / "binary"
    binary.write_bytes(b"gold quota=1%\n\x7fELF\x02\x01\x01\x00")
    hexq = tmp_path / "hex"
    hexq.write_text("gold quota=10%\nsilver quota=0x10 # 16 slots?\n")
    expq = tmp_path / "exp"
    expq.write_text("gold quota=1e3\n")
    for path, msg in (
            ("/dev/zero", "/dev/zero is a character device: give a regular text "
             "file, one tenant per line"),
            (str(fifo), f"{fifo} is a FIFO: give a regular text file"),
            (str(empty), "declares no tenant: add a line NAME quota=N%"),
            (str(binary), ":2: byte 0x02 at column 5 is not text"),
            # strtod read these as 16 and 1000 slots (util/value.h)
            (str(hexq), f"{hexq}:2: quota=0x10: give N% of each partition "
             "(0-100) or N slots of the store (0-1048576), in decimal digits: "
             "a whole number of slots, a percentage with a fraction allowed "
             "(12.5%); no leading 0, 0x or exponent"),
            (str(expq), f"{expq}:1: quota=1e3: give N% of each partition")):
        cp = net.nfslice("attach", "--name", "tsi", "--tenants", path, "dut0",
                         timeout=10)
        assert cp.returncode == 2 and msg in cp.stderr, (path, describe(cp))
    cp = net.nfslice("list", "--json")
    assert cp.returncode == 0 and "tsi" not in cp.stdout, describe(cp)
    net.attach("--ttl", "0", "--tenants", tenants_file(
        tmp_path, "gold quota=10%", "silver quota=10%"), "dut0", "dut1",
        name="tsi")
    t0, _ = tenants(net, "tsi")
    for args, msg in (
            (("--quota", "gold=1%,silver=2%,gold=2%"),
             "--quota: tenant 'gold' is given twice: give each tenant once"),
            (("--quota", "gold=7x"), "give N% of each partition"),
            (("--tenants", str(empty)), "declares no tenant")):
        cp = net.nfslice("set", "--name", "tsi", *args)
        assert cp.returncode == 2 and msg in cp.stderr, (args, describe(cp))
    t, doc = tenants(net, "tsi")
    assert doc["gen"] == 0 and t == t0, doc
    net.detach("tsi")
