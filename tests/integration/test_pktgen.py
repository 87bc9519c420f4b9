# SPDX-License-Identifier: GPL-2.0
"""nfslice-pktgen: counts, sizes, flows, mixes, stamps, pcap replay, pacing.

The module builds its own namespaces (names of this run, nfrig.name()) and
removes them at the end, also on failure:
  NS  nfit-RUN-pg      pg0 <-> pg1   generator on pg0, the sink
                                     (pktgen_sink) on pg1 counts and
                                     checks every frame
                       pg2 <-> pg3   pg3 without XDP: --peer-xdp auto / off
                       pgd0 <-> pgd1 both down: "interface is down"
                       pgj0 <-> pgj1 MTU 9000, no XDP: jumbo frames (the
                                     socket path), caught on pgj1 by
                                     pg_recv.py and checked byte for byte
  FAR nfit-RUN-pg-far  pgf1          the peer of NS's pgf0, in another
                                     namespace: the warning for a peer
                                     elsewhere
The sink is loaded fresh for every test that reads it (pins in a private
bpffs mount of the module); it verifies the L4 checksum of every frame (and
the header checksum of an IPv4 one) and the stamp sequence numbers, and
keeps the first 64 frames.
Every generator run is bounded by --count or --duration.
"""
import contextlib
import itertools
import json
import resource
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from nfsl.pkt import l4_sum, parse, write_pcap
from nfsl.rig import ROOT, describe, must, name, poll, run

PKTGEN = ROOT / "build" / "nfslice-pktgen"
RECV = Path(__file__).with_name("pg_recv.py")
SINK_OBJ = ROOT / "build" / ".output" / "pktgen_sink.bpf.o"
MIX = ROOT / "userspace" / "nfslice-pktgen" / "mixes" / "enterprise.mix"
NS, FAR = name("pg"), name("pg-far")


def ns_run(*args, ns=NS, timeout=30):
    return run(["ip", "netns", "exec", ns, *map(str, args)], timeout=timeout)


def ip(*args, ns=NS):
    return must(run(["ip", "-n", ns, *map(str, args)]))


def link(dev, ns=NS):
    return json.loads(must(run(["ip", "-j", "-s", "-n", ns, "link", "show",
                                "dev", dev])))[0]


@contextlib.contextmanager
def ns_popen(*args, ns=NS):
    """ARGS started in NS in the background (stdout, stderr piped, text);
    killed on the way out if still running."""
    p = subprocess.Popen(["ip", "netns", "exec", ns, *map(str, args)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def pktgen(*args, dev="pg0", ns=NS, timeout=30):
    """Run nfslice-pktgen --dev DEV ARGS in NS; CompletedProcess."""
    return ns_run(PKTGEN, "--dev", dev, *args, ns=ns, timeout=timeout)


def pktgen_json(*args, dev="pg0", ns=NS):
    """Run it with --json, assert exit 0 and return the result object."""
    cp = pktgen(*args, "--json", dev=dev, ns=ns)
    assert cp.returncode == 0, describe(cp)
    return json.loads(cp.stdout)


@pytest.fixture(scope="module")
def netns():
    """The module's namespaces and veths (see the module docstring)."""
    if not PKTGEN.exists() or not SINK_OBJ.exists():
        pytest.fail(f"{PKTGEN} or {SINK_OBJ} is missing: build with make")
    for n in (NS, FAR):
        run(["ip", "netns", "del", n])
    try:
        for n in (NS, FAR):
            must(run(["ip", "netns", "add", n]))
            # No IPv6 autoconfiguration chatter (router solicitations,
            # MLD reports) from the veths' own stacks into the sink.
            must(ns_run("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1", ns=n))
        ip("link", "add", "pg0", "type", "veth", "peer", "name", "pg1")
        ip("link", "add", "pg2", "type", "veth", "peer", "name", "pg3")
        ip("link", "add", "pgd0", "type", "veth", "peer", "name", "pgd1")
        ip("link", "add", "pgj0", "mtu", 9000, "type", "veth", "peer",
           "name", "pgj1", "mtu", 9000)
        ip("link", "add", "pgf0", "type", "veth", "peer", "name", "pgf1",
           "netns", FAR)
        for dev in ("lo", "pg0", "pg1", "pg2", "pg3", "pgf0", "pgj0", "pgj1"):
            ip("link", "set", "dev", dev, "up")
        ip("link", "set", "dev", "pgf1", "up", ns=FAR)
        yield
    finally:
        for n in (NS, FAR):
            run(["ip", "netns", "del", n])


@pytest.fixture(scope="module")
def bpffs():
    """A private bpffs mount for the sinks' pins, unmounted at the end."""
    d = Path(tempfile.mkdtemp(prefix="nfit-pg-bpffs-"))
    must(run(["mount", "-t", "bpf", "bpf", d]))
    try:
        yield d
    finally:
        run(["umount", d])
        d.rmdir()


class Sink:
    """userspace/nfslice-pktgen/pktgen_sink.bpf.c on pg1, read through its
    pinned maps."""

    def __init__(self, pins):
        self.pins = pins

    def dump(self, name):
        out = must(run(["bpftool", "-j", "map", "dump", "pinned",
                        self.pins / "maps" / name]))
        return [e["formatted"] for e in json.loads(out)]

    def stats(self):
        return self.dump("sink_stats")[0]["value"]

    def sizes(self):
        return {e["key"]: e["value"] for e in self.dump("sink_sizes")
                if e["value"]}

    def flows(self):
        return {e["key"]: e["value"] for e in self.dump("sink_flows")}

    def samples(self, n):
        """The first N frames that arrived, as bytes."""
        got = sorted(self.dump("sink_samples"), key=lambda e: e["key"])[:n]
        return [bytes(e["value"]["data"][:e["value"]["len"]]) for e in got]


@pytest.fixture
def sink(netns, bpffs):
    """A freshly loaded sink on pg1 (zero counters); removed after."""
    pins = bpffs / f"sink{time.monotonic_ns()}"
    pins.mkdir()
    try:
        must(run(["bpftool", "prog", "load", SINK_OBJ, pins / "prog",
                  "type", "xdp", "pinmaps", pins / "maps"]))
        must(run(["ip", "-force", "-n", NS, "link", "set", "dev", "pg1",
                  "xdpdrv", "pinned", pins / "prog"]))
        yield Sink(pins)
    finally:
        run(["ip", "-n", NS, "link", "set", "dev", "pg1", "xdp", "off"])
        shutil.rmtree(pins, ignore_errors=True)


def assert_all_arrived(res, st, n):
    """N frames went out, the driver took all, the sink got all intact."""
    assert res["transmitted"] == n and res["errors"] == 0, res
    assert res["driver_sent"] == n and res["driver_dropped"] == 0, res
    assert res["redirect_errors"] == 0, res
    assert st["packets"] == n, st
    assert st["unparsed"] == 0 and st["ip_csum_bad"] == 0, st
    assert st["l4_csum_ok"] == n and st["l4_csum_bad"] == 0, st


# ------------------------------------------------------------ arguments --
def test_help_states_units():
    cp = run([PKTGEN, "--help"])
    assert cp.returncode == 0, describe(cp)
    for text in ("Usage: nfslice-pktgen", "--size BYTES", "--rate PPS",
                 "--duration SECONDS", "without FCS", "on the wire",
                 "--peer-xdp MODE", "--path PATH", "above 3072 B", "Exit status"):
        assert text in cp.stdout, cp.stdout


# The fix a refused mix line states (userspace/nfslice-pktgen/mix.c).
MIX_FIX = ("give SIZE a whole number and WEIGHT a number above 0 up to "
           "1000000000 such as 30 or 2.5, in decimal digits (no leading 0, 0x "
           "or exponent)")


def _bad_files(d):
    files = {
        "bad.mix": "# ok so far\n64 10\n64 ten\n",
        "big.mix": "64 1\n2000 1\n",
        "dup.mix": "64 1\n128 2\n64 3\n",
        "empty.mix": "# nothing\n\n",
        # strtoul/strtod read these as 64 B and 16 or 1000 (util/value.h)
        "hexw.mix": "64 10\n128 0x10\n",
        "expw.mix": "64 1e3\n",
        "octs.mix": "# sizes\n\n064 1\n",
        "zerow.mix": "64 0\n",
        "three.mix": "64 1 2\n",
        "not.pcap": "hello, not a pcap file at all\n",
    }
    for name, text in files.items():
        (d / name).write_text(text)
    write_pcap(d / "short.pcap", [b"\x02" * 10])
    return d


@pytest.mark.parametrize("args, message", [
    ([], "--dev IFACE is missing"),
    (["--dev", "pg0"], "give --count N or --duration SECONDS"),
    (["--dev", "nope0", "--count", "1"], "unknown interface 'nope0'"),
    (["--dev", "pgd0", "--count", "1"], "interface pgd0 is down: bring it up"),
    (["--dev", "pg0", "--count", "0"], "--count '0' is not valid"),
    (["--dev", "pg0", "--count", "1", "--size", "59"],
     "give a whole number of BYTES from 60"),
    (["--dev", "pg0", "--count", "1", "--size", "1515"],
     "--size 1515 is out of range: UDP/IPv4 frames need at least 60 B, and "
     "pg0 (MTU 1500) takes at most 1514 B"),
    (["--dev", "pg0", "--count", "1", "--proto", "tcp", "--ipv6", "--stamp",
      "--size", "80"], "TCP/IPv6 frames with --stamp need at least 90 B"),
    (["--dev", "pg0", "--count", "1", "--size", "64", "--mix", "M/bad.mix"],
     "--size and --mix exclude each other"),
    (["--dev", "pg0", "--count", "1", "--mix", "M/missing.mix"],
     "cannot open mix file 'M/missing.mix': No such file"),
    (["--dev", "pg0", "--count", "1", "--mix", "M/bad.mix"],
     "M/bad.mix:3: expected 'SIZE WEIGHT'"),
    (["--dev", "pg0", "--count", "1", "--mix", "M/big.mix"],
     "M/big.mix:2: size 2000 is out of range"),
    (["--dev", "pg0", "--count", "1", "--mix", "M/dup.mix"],
     "M/dup.mix:3: size 64 is listed already on line 1"),
    (["--dev", "pg0", "--count", "1", "--mix", "M/empty.mix"], "no sizes"),
    (["--dev", "pg0", "--count", "1", "--mix", "M/hexw.mix"],
     "M/hexw.mix:2: expected 'SIZE WEIGHT' (frame bytes, relative weight > 0), "
     "got '128 0x10': " + MIX_FIX),
    (["--dev", "pg0", "--count", "1", "--mix", "M/expw.mix"],
     "M/expw.mix:1: expected 'SIZE WEIGHT' (frame bytes, relative weight > 0), "
     "got '64 1e3': " + MIX_FIX),
    (["--dev", "pg0", "--count", "1", "--mix", "M/octs.mix"],
     "M/octs.mix:3: expected 'SIZE WEIGHT' (frame bytes, relative weight > 0), "
     "got '064 1': " + MIX_FIX),
    (["--dev", "pg0", "--count", "1", "--mix", "M/zerow.mix"],
     "M/zerow.mix:1: expected 'SIZE WEIGHT'"),
    (["--dev", "pg0", "--count", "1", "--mix", "M/three.mix"],
     "M/three.mix:1: expected 'SIZE WEIGHT'"),
    (["--dev", "pg0", "--count", "1", "--pcap", "M/not.pcap"],
     "is not a pcap file"),
    (["--dev", "pg0", "--count", "1", "--pcap", "M/short.pcap"],
     "frame 1 is 10 bytes: frames of 14 to 1518 bytes"),
    (["--dev", "pg0", "--count", "1", "--pcap", "M/short.pcap", "--flows",
      "2"], "--flows does not apply to --pcap"),
    (["--dev", "pg0", "--count", "1", "--pcap", "M/short.pcap", "--path",
      "socket"], "--path socket does not apply to --pcap, whose frames go out "
     "as live frames: drop --path socket"),
    (["--dev", "pg0", "--count", "1", "--path", "xdp"],
     "choose one of auto, live, socket"),
    (["--dev", "pg0", "--count", "1", "--proto", "sctp"],
     "choose one of udp, tcp"),
    (["--dev", "pg0", "--count", "1", "--dst-ip", "10.1"],
     "--dst-ip '10.1' is not an IPv4 address"),
    (["--dev", "pg0", "--count", "1", "--dst-ip", "fd00::1"],
     "is an IPv6 address: add --ipv6"),
    (["--dev", "pg0", "--count", "1", "--dst-mac", "02:00:00:00:00"],
     "--dst-mac '02:00:00:00:00' is not a MAC address"),
    (["--dev", "pg0", "--count", "1", "--flows", "100", "--src-port",
      "65500"], "runs past port 65535"),
    (["--dev", "pg0", "--count", "1", "--batch", "300"],
     "give a whole number of N from 1 to 256"),
    (["--dev", "pg0", "--count", "1", "--rate", "1000", "--burst-us", "10"],
     "give a whole number of USEC from 20 to 1000000"),
    (["--dev", "pg0", "--count", "1", "--rate", "fast"],
     "--rate 'fast' is not valid"),
    (["--dev", "pg0", "--count", "1", "--frobnicate"],
     "unknown option '--frobnicate'"),
])
def test_bad_arguments(sink, tmp_path_factory, args, message):
    """Exit 2, one message naming problem and fix, and nothing sent."""
    d = _bad_files(tmp_path_factory.mktemp("args"))
    args = [a.replace("M/", f"{d}/") for a in args]
    message = message.replace("M/", f"{d}/")
    cp = ns_run(PKTGEN, *args)
    assert cp.returncode == 2, describe(cp)
    assert message in cp.stderr, describe(cp)
    assert cp.stdout == "", describe(cp)
    assert sink.stats()["packets"] == 0


# -------------------------------------------------------------- frames --
def test_count_exact_and_defaults(sink):
    """--count is exact; defaults: 60 B UDP/IPv4 to 10.211.2.2:5201 from
    10.211.1.2:1024, MACs of pg0 and its peer pg1."""
    res = pktgen_json("--count", "20000")
    st = sink.stats()
    assert_all_arrived(res, st, 20000)
    assert sink.sizes() == {60: 20000}
    assert sink.flows() == {1024: 20000}
    assert res["peer_xdp"] == "has_xdp" and res["held"] is True, res
    frame = sink.samples(1)[0]
    assert frame[0:6] == bytes.fromhex(link("pg1")["address"].replace(":", ""))
    assert frame[6:12] == bytes.fromhex(link("pg0")["address"].replace(":", ""))
    p = parse(frame)
    assert (p.proto, p.v6, p.sport, p.dport) == ("udp", False, 1024, 5201)
    assert (socket.inet_ntoa(p.src), socket.inet_ntoa(p.dst)) == \
        ("10.211.1.2", "10.211.2.2")


@pytest.mark.parametrize("proto, v6, size", [
    ("udp", False, 1514), ("tcp", False, 70), ("udp", True, 78),
    ("tcp", True, 1000)])
def test_sizes_flows_stamps(sink, proto, v6, size):
    """Every frame of SIZE, 16 flows exactly round robin, checksums right,
    stamp sequence numbers 0..N-1 each once (none missing or doubled)."""
    n, flows = 32000, 16
    res = pktgen_json("--count", n, "--size", size, "--flows", flows,
                      "--proto", proto, "--stamp", "--src-port", 4000,
                      *(("--ipv6",) if v6 else ()))
    st = sink.stats()
    assert_all_arrived(res, st, n)
    assert sink.sizes() == {size: n}
    assert sink.flows() == {4000 + i: n // flows for i in range(flows)}
    assert st["stamped"] == n and st["seq_end"] == n, st
    assert st["seq_dup"] == 0 and st["seq_big"] == 0, st
    # Latency stamp: CLOCK_MONOTONIC ns of this machine, sent just now.
    assert 0 < st["lat_min"] <= st["lat_max"] < 1_000_000_000, st
    # An independent look at a few frames: checksum over pseudo-header,
    # stamp layout (big-endian seq, then TX time), ports.
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    for i, frame in enumerate(sink.samples(8)):
        assert len(frame) == size
        p = parse(frame)
        assert p.proto == proto and p.v6 == v6 and p.sport == 4000 + i % flows
        src, dst = socket.inet_ntop(fam, p.src), socket.inet_ntop(fam, p.dst)
        l4 = frame[14 + (40 if v6 else 20):]
        assert l4_sum(v6, 6 if proto == "tcp" else 17, src, dst, l4) == 0xFFFF
        seq, ts = struct.unpack("!QQ", p.payload[:16])
        assert seq == i and ts > 0
        assert p.payload[16:] == bytes(len(p.payload) - 16)


def mix_weights():
    """SIZE -> WEIGHT of userspace/nfslice-pktgen/mixes/enterprise.mix."""
    w = {}
    for line in MIX.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            size, weight = line.split()
            w[int(size)] = float(weight)
    return w


def test_enterprise_mix_file():
    """PayloadPark Fig. 6: mean 882 B (+-2), 30% with < 160 UDP payload
    bytes (frame < 42 + 160 B)."""
    w = mix_weights()
    total = sum(w.values())
    mean = sum(s * x for s, x in w.items()) / total
    assert abs(mean - 882) <= 2, mean
    small = sum(x for s, x in w.items() if s - 42 < 160) / total
    assert abs(small - 0.30) < 1e-9, small


def test_mix_decimal_weights(sink, tmp_path):
    """Weights with a fraction, blanks and tabs around the fields, CRLF and
    a comment: not whole, so 4096 entries by largest remainder (2.5 : 0.5
    of 4096 is 3413.3 : 682.7, the remainder's entry to 128); one pass
    sends each entry once."""
    mix = tmp_path / "frac.mix"
    mix.write_bytes(b"\t64\t2.5  \r\n128 0.5 # small share\n")
    res = pktgen_json("--count", 4096, "--mix", mix)
    assert_all_arrived(res, sink.stats(), 4096)
    assert sink.sizes() == {64: 3413, 128: 683}


def test_mix_proportions_and_interleaving(sink):
    """100k frames of the enterprise mix: each size in its share (the mix's
    4000-entry sequence repeats exactly 25 times), sizes interleaved frame
    by frame, mean frame size 882 B."""
    n = 100000
    res = pktgen_json("--count", n, "--mix", MIX, "--flows", 4)
    st = sink.stats()
    assert_all_arrived(res, st, n)
    w = mix_weights()
    total = sum(w.values())
    got = sink.sizes()
    assert set(got) == set(w), got
    for size, weight in w.items():
        want = n * weight / total
        # exact by construction; allow a whisker for the statistics
        assert abs(got[size] - want) <= max(3, 0.005 * want), (size, got)
    assert abs(st["bytes"] / n - 882.06) < 0.5, st
    assert abs(res["avg_frame_bytes"] - 882.06) < 0.01, res
    first = [len(f) for f in sink.samples(64)]
    assert len(set(first)) >= 6, first
    longest = max(len(list(g)) for _, g in itertools.groupby(first))
    assert longest <= 8, first


def _pcap_frames():
    """Frames of every kind, all sent back byte for byte."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import ARP, Dot1Q, Ether
    from scapy.packet import Raw
    a, b = "02:aa:00:00:00:01", "02:bb:00:00:00:02"
    frames = [
        Ether(src=a, dst=b) / IP(src="10.0.0.1", dst="10.0.0.2") /
        UDP(sport=1, dport=2) / Raw(bytes(range(18))),
        Ether(src=a, dst=b) / IP(src="10.0.0.1", dst="10.0.0.2") /
        UDP(sport=3, dport=4) / Raw(bytes(i % 251 for i in range(1472))),
        Ether(src=a, dst=b) / IPv6(src="fd00::1", dst="fd00::2") /
        TCP(sport=5, dport=6, flags="S") / Raw(b"x" * 333),
        Ether(src=a, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc="10.0.0.1",
                                                    pdst="10.0.0.2"),
        Ether(src=a, dst=b) / Dot1Q(vlan=7) / IP(src="10.0.0.3",
                                                dst="10.0.0.4") /
        UDP(sport=7, dport=8) / Raw(b"vlan" * 100),
        Ether(src=a, dst=b, type=0x88B5) / Raw(b"\x01" * 47),  # odd length
        Ether(src=a, dst=b) / IP(src="10.0.0.1", dst="10.0.0.2") /
        UDP(sport=9, dport=10, chksum=0x1234) / Raw(b"bad checksum"),
    ]
    return [bytes(f) for f in frames]


def test_pcap_replay_byte_identical(sink, tmp_path):
    """--pcap sends the file's frames in order, round and round, each one
    byte for byte as written (also a big-endian, nanosecond pcap)."""
    frames = _pcap_frames()
    le = tmp_path / "le.pcap"
    write_pcap(le, frames)
    be = tmp_path / "be.pcap"
    with open(be, "wb") as f:
        f.write(struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack(">IIII", 1, i, len(fr), len(fr)) + fr)
    n = 3 * len(frames)
    res = pktgen_json("--pcap", le, "--count", n, "--rate", 100000)
    assert res["transmitted"] == n and res["driver_sent"] == n, res
    assert res["pcap_frames"] == len(frames), res
    res = pktgen_json("--pcap", be, "--count", len(frames))
    assert res["driver_sent"] == len(frames), res
    got = sink.samples(n + len(frames))
    want = [frames[i % len(frames)] for i in range(n)] + frames
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"frame {i}: {len(g)} B arrived, {len(w)} B sent"


# -------------------------------------------------------------- pacing --
def test_rate_limit(sink):
    """--rate 20000 for 2 s: the sink sees 20000 pps (+-5%) between its
    first and last frame; the generator mostly sleeps."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = pktgen_json("--rate", 20000, "--duration", 2)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    st = sink.stats()
    assert res["driver_dropped"] == 0, res
    assert abs(st["packets"] - 40000) <= 2000, st
    window = (st["last_ns"] - st["first_ns"]) / 1e9
    assert abs((st["packets"] - 1) / window - 20000) <= 1000, (st, window)
    assert abs(res["achieved_pps"] - 20000) <= 1000, res
    assert abs(res["elapsed_s"] - 2) < 0.1, res
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime +
                                               before.ru_stime)
    assert cpu < 0.5, f"generator used {cpu:.2f} s of CPU in 2 s"


@pytest.mark.parametrize("burst_us", [1000, 200])
def test_burst_us(sink, burst_us):
    """--burst-us: the frames due every USEC leave in one call. The first
    64 frames' TX stamps fall in groups (gaps > 50 us between calls) of at
    least rate x USEC frames; most calls are on time, so the median group
    is that size (20 frames at 1000 us, 4 at 200 us; a late call carries
    more)."""
    rate = 20000
    res = pktgen_json("--rate", rate, "--count", 4000, "--burst-us", burst_us,
                      "--stamp")
    st = sink.stats()
    assert_all_arrived(res, st, 4000)
    assert res["burst_us"] == burst_us, res
    stamps = [struct.unpack("!QQ", parse(f).payload[:16])[1]
              for f in sink.samples(64)]
    groups, size = [], 1
    for a, b in zip(stamps, stamps[1:]):
        if b - a > 50_000:
            groups.append(size)
            size = 1
        else:
            size += 1
    want = rate * burst_us // 1_000_000
    assert len(groups) >= 2 and min(groups) >= want, (groups, want)
    assert sorted(groups)[len(groups) // 2] < 2 * want, (groups, want)


def test_duration_bounds_an_unpaced_run(sink):
    """--duration 1 at full speed ends after about 1 s."""
    t = time.monotonic()
    res = pktgen_json("--duration", 1, "--size", 200)
    wall = time.monotonic() - t
    assert 1.0 <= res["elapsed_s"] < 1.1 and wall < 3, (res, wall)
    assert res["transmitted"] > 100000, res
    assert sink.stats()["packets"] == res["driver_sent"]


# ---------------------------------------------------------- veth peers --
def test_peer_xdp_auto_and_off(netns):
    """auto: xdp_pass on pg3 for the run only, frames arrive in pg3's
    stack; off: the veth drops them, the driver count says so."""
    assert "xdp" not in link("pg3")
    rx = link("pg3")["stats64"]["rx"]["packets"]
    res = pktgen_json("--count", 1000, dev="pg2")
    assert res["peer_xdp"] == "attached" and res["driver_sent"] == 1000, res
    assert "xdp" not in link("pg3")
    poll(lambda: link("pg3")["stats64"]["rx"]["packets"] - rx >= 1000, 5,
         "1000 frames counted on pg3")
    cp = pktgen("--count", 1000, "--peer-xdp", "off", "--json", dev="pg2")
    assert cp.returncode == 0, describe(cp)
    assert "--peer-xdp is off: the veth drops every frame" in cp.stderr
    res = json.loads(cp.stdout)
    assert res["peer_xdp"] == "no_xdp", res
    # Refused before the driver (xdp:xdp_redirect_err: this kernel checks
    # the veth's XDP features) or by it (xdp:xdp_devmap_xmit drops).
    assert res["driver_sent"] == 0, res
    assert res["driver_dropped"] + res["redirect_errors"] == 1000, res


def test_peer_elsewhere_warns(netns):
    """A peer in another namespace is left alone; without XDP there the
    generator warns once and counts the drops; dst MAC is still its MAC."""
    cp = pktgen("--count", 500, "--json", dev="pgf0")
    assert cp.returncode == 0, describe(cp)
    assert cp.stderr.count("in another network namespace") == 1, cp.stderr
    res = json.loads(cp.stdout)
    assert res["peer_xdp"] == "no_xdp" and res["peer"] == "pgf1", res
    assert res["driver_sent"] == 0, res
    assert res["driver_dropped"] + res["redirect_errors"] == 500, res
    assert res["dst_mac"] == link("pgf1", ns=FAR)["address"], res
    assert "xdp" not in link("pgf1", ns=FAR)


def test_sigterm_ends_run_and_restores_peer(netns):
    """SIGTERM ends a long run early: reported, exit 0, pg3 bare again."""
    with ns_popen(PKTGEN, "--dev", "pg2", "--duration", "20", "--rate",
                  "1000", "--json") as p:
        poll(lambda: "xdp" in link("pg3"), 5, "xdp_pass on pg3")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=5)
    assert p.returncode == 0, err
    res = json.loads(out)
    assert res["interrupted"] is True and res["elapsed_s"] < 5, res
    assert "xdp" not in link("pg3")


# --------------------------------------------------------- jumbo frames --
def expected_frame(macs, size, proto, v6, sport, stamp=b""):
    """The synthetic frame pktgen sends from MACS (src, dst) (userspace/
    nfslice-pktgen/packet.c), built independently with scapy, checksums
    computed by it."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    tcp = proto == "tcp"
    if v6:
        l3 = IPv6(src="fd00:211:1::2", dst="fd00:211:2::2", hlim=64,
                  nh=6 if tcp else 17)
    else:
        l3 = IP(src="10.211.1.2", dst="10.211.2.2", flags="DF", ttl=64, id=0,
                proto=6 if tcp else 17)
    l4 = (TCP(sport=sport, dport=5201, seq=1, ack=1, flags="PA",
              window=65535) if tcp else UDP(sport=sport, dport=5201))
    hdr = 14 + (40 if v6 else 20) + (20 if tcp else 8)
    eth = Ether(src=macs[0], dst=macs[1])
    return bytes(eth / l3 / l4 / Raw(stamp + bytes(size - hdr - len(stamp))))


def jumbo_run(n, *args):
    """pktgen --json ARGS on pgj0 while pg_recv.py catches on pgj1: the
    result, and the frames in arrival order (the catcher dropped none)."""
    with tempfile.TemporaryDirectory(prefix="nfit-pgj-") as d:
        out = Path(d) / "frames"
        with ns_popen("python3", RECV, "pgj1", n, out) as p:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
            res = pktgen_json("--count", n, *args, dev="pgj0")
            got, err = p.communicate(timeout=30)
        assert p.returncode == 0, err
        caught = json.loads(got)
        assert caught["drops"] == 0, caught
        data, frames, off = out.read_bytes(), [], 0
        while off < len(data):
            ln = struct.unpack_from("!I", data, off)[0]
            frames.append(data[off + 4:off + 4 + ln])
            off += 4 + ln
    assert len(frames) == caught["frames"]
    return res, frames


def assert_socket_sent(res, n):
    """N frames went through the socket path, the device took all."""
    assert res["path"] == "socket" and res["peer_xdp"] == "skb", res
    assert res["transmitted"] == n and res["errors"] == 0, res
    assert res["driver_sent"] == n and res["driver_dropped"] == 0, res


def assert_stamped_frames(frames, proto, v6, sport, flows, seq_len=0,
                          exact=None):
    """Frame i has stamp sequence number i and flow i % FLOWS (a mix of
    SEQ_LEN entries shifts the flows by one more at the last entry of each
    pass: pktgen.h pktgen_mix_next); the first EXACT frames (all by
    default) are byte for byte the template of their size: checksums,
    lengths, order all exact."""
    l4 = 14 + (40 if v6 else 20) + (20 if proto == "tcp" else 8)
    macs = (link("pgj0")["address"], link("pgj1")["address"])
    for i, fr in enumerate(frames):
        seq, ts = struct.unpack("!QQ", fr[l4:l4 + 16])
        assert seq == i and ts > 0, (i, seq)
        flow = (i + ((i + 1) // seq_len if seq_len else 0)) % flows
        assert struct.unpack("!H", fr[l4 - (20 if proto == "tcp" else 8):][:2]
                             )[0] == sport + flow, (i, flow)
        if exact is not None and i >= exact:
            continue
        want = expected_frame(macs, len(fr), proto, v6, sport + flow,
                              fr[l4:l4 + 16])
        assert fr == want, f"frame {i} ({len(fr)} B) differs from its template"


@pytest.mark.parametrize("proto, v6", [
    ("udp", False), ("tcp", False), ("udp", True), ("tcp", True)])
def test_jumbo_socket_path_exact(netns, proto, v6):
    """--size 9014 at MTU 9000 (above a live frame's page: the socket
    path): exactly N frames arrive, each byte for byte its template with
    valid checksums, 4 flows exactly round robin, stamps 0..N-1 in order."""
    n = 1000
    res, frames = jumbo_run(n, "--size", 9014, "--flows", 4, "--stamp",
                            "--proto", proto, "--src-port", 7000,
                            *(("--ipv6",) if v6 else ()))
    assert_socket_sent(res, n)
    assert len(frames) == n
    assert {len(f) for f in frames} == {9014}
    assert_stamped_frames(frames, proto, v6, 7000, 4)
    ports = [parse(f).sport for f in frames]
    assert {p: ports.count(p) for p in set(ports)} == \
        {7000 + i: n // 4 for i in range(4)}


def test_jumbo_mix_and_pacing(netns, tmp_path):
    """A mix of small and jumbo sizes goes through the socket path whole:
    one pass of its 4096-entry sequence sends each size in its exact share,
    interleaved, stamps and flows exact (the first 400 frames and the last
    of the pass byte for byte); --rate paces it."""
    mix = tmp_path / "jumbo.mix"
    mix.write_text("64 1\n1514 1\n9014 2\n")
    n = 4096
    res, frames = jumbo_run(n, "--mix", mix, "--stamp", "--flows", 4,
                            "--rate", 40000)
    assert_socket_sent(res, n)
    assert res["mode"] == "mix" and abs(res["avg_frame_bytes"] - 4901.5) < .01
    assert 0.09 < res["elapsed_s"] < 0.12, res  # 4096 frames at 40000 pps
    sizes = [len(f) for f in frames]
    assert {s: sizes.count(s) for s in set(sizes)} == \
        {64: 1024, 1514: 1024, 9014: 2048}
    assert len(set(sizes[:16])) == 3, sizes[:16]
    assert_stamped_frames(frames, "udp", False, 1024, 4, seq_len=n, exact=400)
    last = frames[-1]  # flow 4095 + 1 (the pass's shift) = 0 mod 4
    assert last == expected_frame((link("pgj0")["address"],
                                   link("pgj1")["address"]), len(last), "udp",
                                  False, 1024, last[42:58])


def test_jumbo_socket_drops_counted(netns):
    """The socket's verdicts are the counters: with pgj1 down the device
    refuses every frame (ENOBUFS), all counted as dropped, with a warning."""
    ip("link", "set", "dev", "pgj1", "down")
    try:
        cp = pktgen("--count", 100, "--size", 9014, "--json", dev="pgj0")
    finally:
        ip("link", "set", "dev", "pgj1", "up")
    assert cp.returncode == 0, describe(cp)
    res = json.loads(cp.stdout)
    assert res["transmitted"] == 100 and res["driver_sent"] == 0, res
    assert res["driver_dropped"] == 100, res
    assert "100 of 100 frames did not leave pgj0: the socket or the " \
        "device's tx_dropped counter reported them dropped" in cp.stderr, \
        cp.stderr


@pytest.mark.parametrize("args, message", [
    (["--size", "9015"], "--size 9015 is out of range: UDP/IPv4 frames need "
     "at least 60 B, and pgj0 (MTU 9000) takes at most 9014 B"),
    (["--mix", "M"], "size 9015 is out of range: UDP/IPv4 frames need at "
     "least 60 B, and pgj0 (MTU 9000) takes at most 9014 B"),
    (["--size", "4000", "--path", "live"], "--size 4000 is out of range: "
     "UDP/IPv4 frames need at least 60 B, and pgj0 (MTU 9000) takes at most "
     "3072 B as live frames (one 4 KiB page each; without --path live larger "
     "frames go through the socket path)"),
])
def test_jumbo_size_errors(netns, tmp_path, args, message):
    """Above the MTU + 14 is an error naming the MTU; --path live names the
    page limit and the way out. Exit 2, nothing on stdout."""
    mix = tmp_path / "big.mix"
    mix.write_text("64 1\n9015 1\n")
    cp = pktgen("--count", 1, *[str(mix) if a == "M" else a for a in args],
                dev="pgj0")
    assert cp.returncode == 2, describe(cp)
    assert message in cp.stderr, describe(cp)
    assert cp.stdout == ""
