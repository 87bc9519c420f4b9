# SPDX-License-Identifier: GPL-2.0
"""The rigs, fixtures and helpers of the NF tests (test_nf*.py): the inline
rig (nfxsk.XRig) and the park rig (nfpark), the fw rule set, frame
builders, and the runs that compare slicing on and off."""
import os
import random
import signal
import socket
import struct
from collections import namedtuple
import nfpark

import pytest

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from nfsl import pkt as nfpkt
from nfsl.rig import PY, ROOT, describe, run
from nfxsk import GEN4, GEN6, MACS, NF, SINK4, SINK6, XRig, swap_macs


DOMAIN = "nf"
WORKERS = 2
BIG, SMALL = 1400, 100      # payload bytes: sliced / below the threshold
EXT_IP = "198.51.100.7"     # nat's external address (routed out of d1)
VIP = "203.0.113.10"        # lb's service address (routed out of d1)
BACKENDS = ("10.223.2.11", "10.223.2.12", "10.223.2.13")
FW_SEED = 9
FWGEN = ROOT / "scripts" / "fwgen.py"
# Timeouts far beyond the test's length: no flow expires while it runs.
NAT_OPTS = ("--ext-ip", EXT_IP, "--expire", 600)
LB_OPTS = ("--nf-opt", f"lb.vip={VIP},lb.timeout=600")
# The chain on one device (park): nat takes every source for the LAN, not
# only 10/8 (the firewall's trace flows come from anywhere).
PARK_CHAIN_OPTS = ("--nf-opt", f"{LB_OPTS[1]},nat.lan_net=0.0.0.0/0")
# A remote port of nat's second worker (of 2, ports from 1024): with one
# device nat steers every frame by destination port (docs/nf.md "NAT").
NAT_W1_PORT = 40001
# qos, everything green: ~8 Gbit/s and 100 MB buckets.
QOS_GREEN = ("--cir", "1G", "--cbs", "100M", "--ebs", "100M")
# Queues of the park rig's NF links: privring and smallpriv need one per
# worker.
PARK_QUEUES = WORKERS

Flow = namedtuple("Flow", "v6 proto src dst sport dport deny")


# ================================================================= rigs ==
@pytest.fixture(scope="module")
def rig():
    if not NF.exists():
        pytest.fail(f"{NF} is missing: build it with make")
    r = XRig("nf", queues=2).up()
    try:
        # Any destination leaves through d1 toward the sink: the
        # firewall's generated 5-tuples, nat's and lb's addresses are
        # sliced (the slicer slices what the kernel would route out of a
        # domain interface).
        r.ip("dut", "route", "add", "default", "via", SINK4, "dev", "d1")
        r.ip("dut", "-6", "route", "add", "default", "via", SINK6, "dev",
             "d1")
    except BaseException:
        r.destroy()
        raise
    yield r
    r.destroy()


@pytest.fixture
def xr(rig):
    """The inline rig, clean after the test."""
    yield rig
    rig.reset()


@pytest.fixture
def one_queue(xr):
    """The inline rig with the gen and the sink sending on one TX queue
    (ethtool -L tx 1), for tests with nat: it gives a new flow the next
    free port of its worker, so the frames must reach each worker in the
    same order in every run. From two queues they do not (veth: a frame
    arrives on the queue its sender chose, by flow hash, and a worker
    takes bursts of both queues as they come), and the ports and all that
    depends on them (lb's choice after nat) would differ, slicing or not.
    Both queues are back after the test."""
    for role, dev in (("gen", "g0"), ("sink", "s0")):
        xr.sh(role, "ethtool", "-L", dev, "tx", 1)
    yield xr
    for role, dev in (("gen", "g0"), ("sink", "s0")):
        xr.sh(role, "ethtool", "-L", dev, "tx", xr.queues, check=False)


@pytest.fixture(scope="module")
def park():
    if not NF.exists():
        pytest.fail(f"{NF} is missing: build it with make")
    r = nfpark.PRig("nfpk", queues=PARK_QUEUES).up()
    yield r
    r.destroy()


@pytest.fixture
def pr(park):
    """The park rig, clean after the test (a stopped NF is continued
    first, so it can exit)."""
    yield park
    for p in list(park.procs):
        try:
            os.kill(p.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    park.reset((("nfa", "nf0"), ("nfb", "nf0")))


# ========================================================= rules, flows ==
def _sane(addr):
    """An IPv4 address a router forwards as unicast, outside the rigs'."""
    a = socket.inet_aton(addr)
    return a[0] not in (0, 10, 127) and a[0] < 224 and \
        a[:3] not in (bytes([198, 51, 100]), bytes([203, 0, 113]))


# The test's own flows at known verdicts, ahead of fwgen.py's rules (first
# match wins): ports 7107-7108 to the sinks and 7007-7008 to the VIP are
# denied, the rest of the rigs' addresses take the default (allow).
OWN_RULES = f"""\
# test_nf.py: the flows of the rigs themselves
{GEN4} {SINK4} any 7107:7108 any deny
{GEN6} {SINK6} any 7107:7108 any deny
{GEN4} {VIP} any 7007:7008 any deny
{nfpark.CLI4} {nfpark.SRV4} any 7107:7108 any deny
{nfpark.CLI4} {VIP} any 7007:7008 any deny
"""


@pytest.fixture(scope="module")
def fw(tmp_path_factory):
    """The firewall: (rules file, backends file, trace flows). ~1000 rules
    of fwgen.py after OWN_RULES; 90 flows of fwgen.py's trace (IPv4, UDP
    and TCP, routable addresses), 30 the oracle denies, 60 it allows."""
    tmp = tmp_path_factory.mktemp("nf")
    gen, trace = tmp / "gen.rules", tmp / "gen.trace"
    for args in (("rules", "-n", 1000, "--deny", 0.3, "--seed", FW_SEED,
                  "-o", gen),
                 ("trace", "--rules", gen, "-n", 3000, "--hit", 0.9,
                  "--first-match", "--seed", FW_SEED, "-o", trace)):
        cp = run([PY, FWGEN, *args], timeout=60)
        assert cp.returncode == 0, describe(cp)
    actions = [ln.split()[-1] for ln in gen.read_text().splitlines()
               if ln.strip() and not ln.lstrip().startswith("#")]
    assert len(actions) == 1000 and set(actions) == {"allow", "deny"}
    rules = tmp / "fw.rules"
    rules.write_text(OWN_RULES + gen.read_text())
    seen, deny, allow = set(), [], []
    for ln in trace.read_text().splitlines():
        src, dst, sport, dport, proto, rule = ln.split()
        proto, rule = int(proto), int(rule)
        key = (src, dst, int(sport), int(dport), proto)
        if proto not in (6, 17) or not (_sane(src) and _sane(dst)) or \
                key in seen:
            continue
        seen.add(key)
        denied = rule >= 0 and actions[rule] == "deny"
        f = Flow(False, "tcp" if proto == 6 else "udp", src, dst,
                 int(sport), int(dport), denied)
        (deny if denied else allow).append(f)
    assert len(deny) >= 30 and len(allow) >= 60, (len(deny), len(allow))
    flows = [f for pair in zip(allow[0:60:2], allow[1:60:2], deny[:30])
             for f in pair]
    backends = tmp / "backends"
    backends.write_text("# test_nf.py: three backends\n" +
                        "".join(f"{b}\n" for b in BACKENDS))
    return rules, backends, flows


def own_flows(v6=False, n=8, dst=None, sport0=41000, dport0=7101,
              src=None):
    """N flows of the gen (UDP and TCP alternating) to DST (the sink),
    destination ports DPORT0.. (OWN_RULES denies 7107, 7108, 7007, 7008)."""
    src = src or (GEN6 if v6 else GEN4)
    dst = dst or (SINK6 if v6 else SINK4)
    out = []
    for i in range(n):
        dport = dport0 + i
        deny = (7107 <= dport <= 7108 and dst != VIP) or \
            (dst == VIP and 7007 <= dport <= 7008)
        out.append(Flow(v6, "udp" if i % 2 == 0 else "tcp", src, dst,
                        sport0 + i, dport, deny))
    return out


def build(flows, src_mac=MACS["g0"], dst_mac=MACS["d0"], seed=1, small=3,
          big=BIG):
    """Frames of FLOWS: one BIG (sliced) each, and every SMALL-th flow a
    SMALL one too (not sliced); seeded payloads, scapy's checksums.
    Returns [(frame, flow)]."""
    rng = random.Random(seed)
    out = []
    for i, f in enumerate(flows):
        seq = 1000 + i
        for n in (big, SMALL) if small and i % small == 0 else (big,):
            l3 = (IPv6(src=f.src, dst=f.dst, hlim=64) if f.v6 else
                  IP(src=f.src, dst=f.dst, ttl=64, id=len(out) + 1))
            l4 = (UDP(sport=f.sport, dport=f.dport) if f.proto == "udp" else
                  TCP(sport=f.sport, dport=f.dport, seq=seq, ack=1,
                      flags="PA", window=1024))
            out.append((bytes(Ether(src=src_mac, dst=dst_mac) / l3 / l4 /
                              Raw(rng.randbytes(n))), f))
            seq += n
    return out


def is_big(frame):
    return len(nfpkt.parse(frame).payload) == BIG


def delta(after, before):
    return {k: v - before.get(k, 0) for k, v in after.items()
            if isinstance(v, int) and not isinstance(v, bool)}


def ip4_rewrite(frame, tos=None, ttl_dec=0):
    """FRAME (IPv4) with its TOS byte set to TOS and/or TTL lowered by
    TTL_DEC, the header checksum recomputed."""
    f = bytearray(frame)
    ihl = (f[14] & 0xF) * 4
    if tos is not None:
        f[15] = tos
    f[22] -= ttl_dec
    f[24:26] = b"\0\0"
    f[24:26] = struct.pack("!H", ~nfpkt.ones_sum(bytes(f[14:14 + ihl]))
                           & 0xFFFF)
    return bytes(f)


# ========================================================== inline runs ==
class Result(namedtuple("Result", "got rev rep dom")):
    """One run: frames at the sink (GOT), at the gen (REV: replies), the
    NF's final report, the domain's counters over the run (None: off)."""


def inline_run(xr, chain, opts, frames, expect, on, workers=WORKERS,
               mode="rxbisect", replies=None, rev_expect=0):
    """nfslice-nf --nf CHAIN,l2fwd (with_l2fwd) OPTS (domain DOMAIN
    attached when ON), FRAMES sent from the gen, EXPECT frames captured at
    the sink; with REPLIES (captured -> frames from the sink), those sent
    back and REV_EXPECT captured at the gen. A Result."""
    name = DOMAIN if on else None
    if on:
        xr.attach(DOMAIN)
        st0 = xr.stats(DOMAIN)
    nf = xr.start_nf("--workers", workers, "--rx", mode, "--nf",
                     with_l2fwd(chain), *opts, name=name)
    rev = []
    try:
        cap = xr.capture(expect)
        xr.send_frames(frames)
        got = cap.finish(10)
        if replies is not None:
            back = replies(got)
            cap = xr.capture(rev_expect, role="gen", dev="g0")
            nfpkt.send(xr, "sink", "s0", back, xr.tmp / "replies.pcap")
            rev = cap.finish(10)
    finally:
        rep = nf.stop()
    return Result(sorted(got), sorted(rev), rep,
                  run_domain(xr, st0) if on else None)


def with_l2fwd(chain):
    """CHAIN followed by l2fwd, which addresses the frames to the far end
    (l2fwd alone: itself; twice would swap the MACs back)."""
    return chain if chain == "l2fwd" else f"{chain},l2fwd"


def run_domain(rig, st0):
    """Domain DOMAIN's counters since ST0 and its slots_busy now; then
    detached (the end of a run with slicing on)."""
    st = rig.stats(DOMAIN)
    dom = delta(st, st0)
    dom["slots_busy"] = st["slots_busy"]
    rig.detach(DOMAIN)
    return dom


def equivalence(xr, chain, opts, frames, expect, workers=WORKERS,
                mode="rxbisect", replies=None, rev_expect=0, run=inline_run):
    """RUN (inline_run(), or park_run() in the park rig XR) with slicing
    off, then on; asserts what both see the same way: the same frames in
    count and bytes, the same NF counters, and with slicing on every BIG
    frame sliced, none evicted or stale, the store empty, every payload
    accounted for. Returns (off, on) Results."""
    what = f"{chain} ({mode}, {workers} workers)"
    sent = [f for f, _ in frames]
    off = run(xr, chain, opts, sent, expect, False, workers, mode, replies,
              rev_expect)
    on = run(xr, chain, opts, sent, expect, True, workers, mode, replies,
             rev_expect)
    for r, tag in ((off, "off"), (on, "on")):
        assert len(r.got) == expect, \
            f"{what}, slicing {tag}: {len(r.got)} of {expect} frames at " \
            f"the sink; NF {r.rep['total']} {r.rep['nf_counters']}; " \
            f"domain {r.dom}"
        assert len(r.rev) == rev_expect, \
            f"{what}, slicing {tag}: {len(r.rev)} of {rev_expect} replies " \
            f"at the gen; NF {r.rep['total']} {r.rep['nf_counters']}"
        t = r.rep["total"]
        assert t["tx"] == expect + rev_expect and \
            (t["stale"], t["too_big"], t["no_room"], t["tx_full"]) == \
            (0, 0, 0, 0), f"{what}, slicing {tag}: NF sent {t}"
    diff = nfpkt.first_difference(on.got, off.got)
    assert diff is None, \
        f"{what}: the sink got other frames with slicing on: {diff}"
    diff = nfpkt.first_difference(on.rev, off.rev)
    assert diff is None, \
        f"{what}: the gen got other replies with slicing on: {diff}"
    assert on.rep["nf_counters"] == off.rep["nf_counters"], \
        f"{what}: NF counters on {on.rep['nf_counters']} != off " \
        f"{off.rep['nf_counters']}"
    nbig = sum(map(is_big, sent + on.rev))
    d = on.dom
    assert (d["sliced"], d["evicted"], d["stale"], d["skipped_full"]) == \
        (nbig, 0, 0, 0), f"{what}: {nbig} BIG frames sent; domain {d}"
    assert d["slots_busy"] == 0, f"{what}: slots left busy: {d}"
    t = on.rep["total"]
    # Every payload parked came back: spliced (inline by the NF, in park by
    # the slicing host's splicer) or freed with the header the NF dropped
    # (inline released by the NF, in park by the NF's drop notice).
    assert t["spliced"] + t["released"] + d["spliced"] + \
        d["explicit_drop"] == d["sliced"] and \
        (t["notices"], d["bad_notice"]) == (d["explicit_drop"], 0), \
        f"{what}: NF {t}, domain {d}"
    return off, on


def predicted(frames):
    """What l2fwd delivers of FRAMES the chain does not change: the
    frames whose flow is not denied, MACs swapped."""
    return sorted(swap_macs(f) for f, fl in frames if not fl.deny)


# ------------------------------------------------ 1. functional equivalence --
FW_CASES = [("privring", 2), ("smallpriv", 2), ("shring", 2),
            ("rxbisect", 2)]
FW_IDS = [f"{m}-{w}w" for m, w in FW_CASES]


CHAIN_CASES = [("rxbisect", 2), ("shring", 2), ("privring", 1),
               ("smallpriv", 1)]
CHAIN_IDS = [f"{m}-{w}w" for m, w in CHAIN_CASES]


def check_nat_ports(got, sent):
    """GOT (sink) from NAT: one external port per flow of SENT ((frame,
    Flow) pairs), kept by all its frames, no two flows on one port."""
    flow_of = {nfpkt.parse(f).payload: fl for f, fl in sent}
    ext = {}
    for g in got:
        p = nfpkt.parse(g)
        fl = flow_of[p.payload]
        assert ext.setdefault(fl, p.sport) == p.sport, (fl, p)
    assert len(set(ext.values())) == len(ext) == len(set(flow_of.values()))


def check_nat_lb(got, sent, what):
    """GOT (sink) holds SENT's payloads, each from EXT_IP; those SENT to the
    VIP at a backend, one per flow, all three used if there are enough
    flows; the others to their own destination."""
    by_payload = {nfpkt.parse(f).payload: fl for f, fl in sent}
    assert len(by_payload) == len(sent)
    backend_of = {}
    for g in got:
        p = nfpkt.parse(g)
        fl = by_payload.pop(p.payload, None)
        assert fl is not None, f"{what}: a frame nobody sent: {g.hex()[:120]}"
        assert socket.inet_ntoa(p.src) == EXT_IP, f"{what}: {fl} -> {p}"
        dst = socket.inet_ntoa(p.dst)
        if fl.dst == VIP:
            assert dst in BACKENDS, f"{what}: {fl} -> {dst}"
            assert backend_of.setdefault(fl, dst) == dst, \
                f"{what}: {fl} went to {backend_of[fl]} and {dst}"
        else:
            assert dst == fl.dst, f"{what}: {fl} -> {dst}"
    assert not by_payload, f"{what}: missing {list(by_payload.values())}"


# ---------------------------------- 2. qos meters the original length --
QOS_N, QOS_GREEN_N, QOS_YELLOW_N = 20, 5, 3
IPLEN = 20 + 8 + BIG        # IPv4 + UDP + payload: 1428 B


# ================================================================= park ==
def park_frames(flows, seed, small=3):
    """build() for the client: FLOWS' frames to the slicing host's c0."""
    return build(flows, nfpark.MACS["cli0"], nfpark.MACS["c0"], seed=seed,
                 small=small)


def at_server(frame):
    """FRAME as the server receives it: the slicing host routed it twice
    (to the NF server, back to the server): TTL - 2, its MACs."""
    f = ip4_rewrite(frame, ttl_dec=2)
    return bytes.fromhex(nfpark.MACS["srv0"].replace(":", "") +
                         nfpark.MACS["s0"].replace(":", "")) + f[12:]


def park_fw_flows(fw):
    """Trace flows plus the client's own flows to the server (two denied)."""
    _, _, flows = fw
    return flows + own_flows(src=nfpark.CLI4, dst=nfpark.SRV4, dport0=7101)
