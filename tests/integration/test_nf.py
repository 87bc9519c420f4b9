# SPDX-License-Identifier: GPL-2.0
"""The NFs of userspace/lib/nf in nfslice-nf, with slicing (issue 9).

Inline (nfxsk.py's gen - DUT - sink rig; the NF on the slicing host,
`--name`: it gets sliced headers and splices before it sends):

1. functional equivalence (PayloadPark §6.2.6): for fw, nat, lb, qos and
   the chain fw,nat,lb (each followed by l2fwd, which addresses the frames
   to the far end), what the far side captures with slicing on equals,
   byte for byte and in count, what it captures with slicing off; the NF
   counters are the same both ways, no payload is evicted or stale, the
   store is empty after. fw and the chain for every --rx mode (privring
   and smallpriv take nat only with one worker: the chain runs there with
   one), the others with rxbisect. The firewall's ACL is ~1000 rules of
   scripts/fwgen.py plus a few rules for the test's own flows, its traffic
   5-tuples of fwgen.py's trace, whose verdicts fwgen.py's linear first
   match (--first-match) predicts: an oracle apart from the classifier.
   In nat's test the sink answers every frame and the replies cross the
   NF too, compared at the gen the same way. The tests with nat send from one TX queue (fixture one_queue: nat's port
   choice follows the arrival order, which two queues do not keep).
2. qos meters the original length: with CBS and EBS a few packets deep and
   a CIR that adds no token during the test, 20 sliced 1428 B packets are
   5 green, 3 yellow and 12 red (a meter of the ~60 B headers would find
   them all green), with byte counters of 1428 each, as unsliced.
3. explicit drop inline: the firewall denies ~30% of the flows; the NF
   frees each denied sliced header's slot at once (released = denied
   sliced), the store is empty right after, nothing is evicted.

Park (nfpark.py: a slicing host with two NF ports, an NF server behind
each running nfslice-nf ...,l2fwd):

4. the same firewall on NF server A with --drop-notice: explicit_drop =
   the denied sliced headers, no bad_notice, the store empty right after,
   the server gets exactly the allowed packets, intact; without
   --drop-notice their payloads stay parked (busy = denied sliced);
   qos on an NF server meters the original length from the token.
5. two NF servers: with B stopped (SIGSTOP) and payloads of its flows
   parked, a burst toward A of more than the whole per-CPU store share
   evicts none of them: once B continues they arrive intact; the same
   burst toward B's own part does evict them (control).
6. forged drop notices (EtherType 0x88B5 into the NF port: random tokens,
   a real token with a bad MAC, garbage, a replayed notice) free nothing
   and count bad_notice, while a genuine one frees its slot.
7. functional equivalence in park (PayloadPark §6.2.6): l2fwd, fw, nat,
   lb, qos and fw,nat,lb (each followed by l2fwd, --drop-notice) on NF
   server A, in every --rx mode: what the server captures with the domain
   attached equals, byte for byte and in count, what it captures without
   one (the slicing host only routes), and that is what 1. checks (the
   allowed frames, from EXT_IP, one backend per flow ...); the NF
   counters are the same both ways; with slicing on the slicer sliced
   every BIG frame and nothing else, each payload came back spliced or
   freed by a notice (one per dropped sliced header, no bad_notice), none
   evicted or stale, the store empty. The NF links have two queues and
   the client sends each flow from CPU dport % 2, which nfpark's XPS
   turns into NF server A's RX queue, so privring and smallpriv run 2
   workers too; nat and the chain keep the inline cases (CHAIN_CASES:
   1 worker with privring and smallpriv) and one queue (everything from
   CPU 0), as one_queue does inline. Every worker gets frames.

Every test starts from a clean rig and leaves one (fixtures xr and pr:
processes stopped, domains detached), also when it fails.
"""
import functools
import os
import random
import signal
import socket
import struct
from collections import namedtuple

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

import nfpark
from nfsl import pkt as nfpkt
from nfsl.rig import PY, ROOT, describe, poll, run, settle
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


def clean(r, devs):
    """Stop R's processes, detach its slicing host's domains, take XDP
    programs off DEVS (role, dev)."""
    for p in list(r.procs):
        r.stop(p)
    d = r.pin_dir("x").parent
    if d.is_dir():
        for dom in sorted(d.iterdir()):
            r.nfslice("detach", "--name", dom.name)
    for role, dev in devs:
        if r.xdp_prog(role, dev):
            r.ip(role, "link", "set", "dev", dev, "xdp", "off")


@pytest.fixture
def xr(rig):
    """The inline rig, clean after the test."""
    yield rig
    clean(rig, (("dut", "d0"), ("dut", "d1")))


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
    clean(park, (("nfa", "nf0"), ("nfb", "nf0")))


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


def fw_frames(fw_flows):
    """The firewall's traffic: the trace flows, the gen's own IPv4 and
    IPv6 flows to the sink (two of each family denied by OWN_RULES)."""
    return (build(fw_flows, seed=11) +
            build(own_flows(dport0=7101), seed=12) +
            build(own_flows(v6=True, n=6, dport0=7103), seed=13))


@pytest.mark.parametrize("mode,workers", FW_CASES, ids=FW_IDS)
def test_fw_equivalence(xr, fw, mode, workers):
    """fw: slicing on = off, and both = the oracle's verdicts (the allowed
    frames, MACs swapped, nothing else). NF counters: allowed and denied
    as predicted; with slicing on, released = the denied BIG frames."""
    rules, _, flows = fw
    frames = fw_frames(flows)
    want = predicted(frames)
    off, on = equivalence(xr, "fw", ("--rules", rules), frames, len(want),
                          workers, mode)
    diff = nfpkt.first_difference(off.got, want)
    assert diff is None, f"fw ({mode}): not the allowed frames: {diff}"
    c = on.rep["nf_counters"]["fw"]
    ndeny = sum(fl.deny for _, fl in frames)
    assert (c["allowed"], c["denied"]) == (len(want), ndeny), c
    assert on.rep["total"]["released"] == \
        sum(fl.deny and is_big(f) for f, fl in frames), on.rep["total"]


CHAIN_CASES = [("rxbisect", 2), ("shring", 2), ("privring", 1),
               ("smallpriv", 1)]
CHAIN_IDS = [f"{m}-{w}w" for m, w in CHAIN_CASES]


@pytest.mark.parametrize("mode,workers", CHAIN_CASES, ids=CHAIN_IDS)
def test_chain_equivalence(one_queue, fw, mode, workers):
    """fw,nat,lb: slicing on = off. Of the trace flows, the gen's flows to
    the sink and to the VIP, the allowed ones arrive with the external
    address as their source, the VIP's at one backend per flow."""
    rules, backends, flows = fw
    frames = (build(flows, seed=21) + build(own_flows(dport0=7101), seed=22)
              + build(own_flows(dst=VIP, dport0=7001, sport0=42000),
                      seed=23))
    allowed = [(f, fl) for f, fl in frames if not fl.deny]
    off, on = equivalence(one_queue, "fw,nat,lb",
                          ("--rules", rules, *NAT_OPTS, "--backends",
                           backends, *LB_OPTS),
                          frames, len(allowed), workers, mode)
    check_nat_lb(off.got, allowed, f"chain ({mode})")
    c = on.rep["nf_counters"]
    assert c["fw"]["denied"] == len(frames) - len(allowed), c
    assert c["nat"]["translated_out"] == len(allowed), c


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


@pytest.mark.parametrize("mode,workers", CHAIN_CASES, ids=CHAIN_IDS)
def test_nat_equivalence(one_queue, mode, workers):
    """nat in every --rx mode (rxbisect and shring with 2 workers, the WAN
    steered by port; privring and smallpriv with 1: their queues cannot
    follow a flow): the gen's flows
    leave from EXT_IP, the sink's replies to EXT_IP:port reach the gen at
    its own address and port; slicing on = off both ways."""
    frames = (build(own_flows(n=16, dport0=7201), seed=31) +
              build(own_flows(n=8, dport0=7301, sport0=43000), seed=32))

    def replies(got):
        """A reply to every frame GOT, to EXT_IP and the port nat chose,
        of its size; the payload seeded by the frame's own (not by the
        port or the capture order: the gen's frames are the same in every
        run)."""
        out = []
        for g in got:
            p = nfpkt.parse(g)
            fl = Flow(False, p.proto, SINK4, EXT_IP, p.dport, p.sport, False)
            out += [f for f, _ in build([fl], MACS["s0"], MACS["d1"],
                                        seed=p.payload[:8], small=0,
                                        big=len(p.payload))]
        return out

    off, on = equivalence(one_queue, "nat", NAT_OPTS, frames, len(frames),
                          workers, mode, replies=replies, rev_expect=len(frames))
    check_nat_lb(off.got, frames, "nat")
    # one external port per flow, kept by all its frames
    flow_of = {nfpkt.parse(f).payload: fl for f, fl in frames}
    ext = {}
    for g in off.got:
        p = nfpkt.parse(g)
        fl = flow_of[p.payload]
        assert ext.setdefault(fl, p.sport) == p.sport, (fl, p)
    assert len(set(ext.values())) == len(ext) == len(set(flow_of.values()))
    # every reply at the gen's own address and port
    back = sorted((socket.inet_ntoa(p.src), p.sport, socket.inet_ntoa(p.dst),
                   p.dport) for p in map(nfpkt.parse, off.rev))
    assert back == sorted((SINK4, fl.dport, GEN4, fl.sport)
                          for _, fl in frames), back
    c = on.rep["nf_counters"]["nat"]
    assert (c["translated_out"], c["translated_in"], c["unsolicited"],
            c["misrouted"], c["table_full"]) == \
        (len(frames), len(frames), 0, 0, 0), c


def test_chain_replies_reverse(one_queue, fw):
    """fw,nat,lb with replies: a backend's reply comes back through the
    chain in reverse (lb gives it the VIP as its source before nat finds
    the flow by it) and reaches the gen from the VIP at its own address and
    port; slicing on = off both ways. In chain order nat would drop every
    reply as unsolicited (its remote end is the VIP, the reply's source is
    the backend)."""
    rules, backends, _ = fw
    flows = [fl for fl in own_flows(n=8, dst=VIP, dport0=7001, sport0=44000)
             if not fl.deny]
    frames = build(flows, seed=41)

    def replies(got):
        """A reply from the backend each frame GOT reached, to EXT_IP and
        the port nat chose, of its size."""
        out = []
        for g in got:
            p = nfpkt.parse(g)
            fl = Flow(False, p.proto, socket.inet_ntoa(p.dst), EXT_IP, p.dport,
                      p.sport, False)
            out += [f for f, _ in build([fl], MACS["s0"], MACS["d1"],
                                        seed=p.payload[:8], small=0,
                                        big=len(p.payload))]
        return out

    off, on = equivalence(one_queue, "fw,nat,lb",
                          ("--rules", rules, *NAT_OPTS, "--backends",
                           backends, *LB_OPTS),
                          frames, len(frames), replies=replies,
                          rev_expect=len(frames))
    back = sorted((socket.inet_ntoa(p.src), p.sport, socket.inet_ntoa(p.dst),
                   p.dport) for p in map(nfpkt.parse, off.rev))
    assert back == sorted((VIP, fl.dport, GEN4, fl.sport)
                          for _, fl in frames), back
    c = on.rep["nf_counters"]
    assert (c["nat"]["translated_in"], c["nat"]["unsolicited"]) == \
        (len(frames), 0), c


# Every --rx mode, 2 workers (privring and smallpriv: a queue each).
MODES = ("rxbisect", "shring", "privring", "smallpriv")


@pytest.mark.parametrize("mode", MODES)
def test_lb_equivalence(xr, fw, mode):
    """lb (Maglev, 3 backends, a VIP): the VIP's flows reach one backend
    each, other traffic passes untouched; slicing on = off."""
    _, backends, _ = fw
    vip = own_flows(n=24, dst=VIP, dport0=7001, sport0=44000)
    vip = [fl._replace(deny=False) for fl in vip]
    frames = build(vip, seed=41) + build(own_flows(dport0=7201), seed=42)
    off, on = equivalence(xr, "lb", ("--backends", backends, *LB_OPTS),
                          frames, len(frames), mode=mode)
    used = {socket.inet_ntoa(nfpkt.parse(g).dst) for g in off.got}
    assert set(BACKENDS) <= used, used
    passed = sorted(swap_macs(f) for f, fl in frames if fl.dst != VIP)
    got_passed = sorted(g for g in off.got
                        if socket.inet_ntoa(nfpkt.parse(g).dst) == SINK4)
    assert got_passed == passed
    c = on.rep["nf_counters"]["lb"]
    nvip = sum(fl.dst == VIP for _, fl in frames)
    assert c["table_hits"] + c["conn_hits"] == nvip and \
        c["passed"] == len(frames) - nvip, c


@pytest.mark.parametrize("mode", MODES)
def test_qos_equivalence(xr, mode):
    """qos with a CIR far above the traffic: every frame green, IPv4 and
    IPv6, sliced and small; slicing on = off; green_bytes = the original
    IP lengths (the sliced headers' would be ~60 B each)."""
    frames = (build(own_flows(n=12, dport0=7201), seed=51) +
              build(own_flows(v6=True, n=12, dport0=7201), seed=52))
    off, on = equivalence(xr, "qos", QOS_GREEN, frames, len(frames), mode=mode)
    assert off.got == sorted(swap_macs(f) for f, _ in frames)
    iplen = sum(len(f) - 14 for f, _ in frames)
    c = on.rep["nf_counters"]["qos"]
    assert (c["green"], c["yellow"], c["red"], c["green_bytes"]) == \
        (len(frames), 0, 0, iplen), c


# ---------------------------------- 2. qos meters the original length --
QOS_N, QOS_GREEN_N, QOS_YELLOW_N = 20, 5, 3
IPLEN = 20 + 8 + BIG        # IPv4 + UDP + payload: 1428 B


def test_qos_meters_original_length(xr):
    """srTCM (one worker, so the buckets are not split), CBS = 5 and EBS =
    3 packets of 1428 IP bytes, CIR 8 B/s (< 100 B of tokens during the
    test): of 20 sliced datagrams of one flow, 5 green, 3 yellow (DSCP 12,
    spliced intact), 12 red (dropped: their slots released) -- exactly as
    without slicing. Metered by the ~60 B header instead, all would be
    green."""
    fl = Flow(False, "udp", GEN4, SINK4, 45000, 7401, False)
    frames = [(f, fl) for f, _ in build([fl] * QOS_N, seed=61, small=0)]
    opts = ("--cir", 8, "--cbs", QOS_GREEN_N * IPLEN, "--ebs",
            QOS_YELLOW_N * IPLEN)
    keep = QOS_GREEN_N + QOS_YELLOW_N
    off, on = equivalence(xr, "qos", opts, frames, keep, workers=1)
    want = sorted([swap_macs(f) for f, _ in frames[:QOS_GREEN_N]] +
                  [ip4_rewrite(swap_macs(f), tos=12 << 2)
                   for f, _ in frames[QOS_GREEN_N:keep]])
    diff = nfpkt.first_difference(on.got, want)
    assert diff is None, f"qos: not the green and yellow frames: {diff}"
    c = on.rep["nf_counters"]["qos"]
    nred = QOS_N - keep
    assert (c["green"], c["yellow"], c["red"]) == \
        (QOS_GREEN_N, QOS_YELLOW_N, nred), c
    assert (c["green_bytes"], c["yellow_bytes"], c["red_bytes"]) == \
        (QOS_GREEN_N * IPLEN, QOS_YELLOW_N * IPLEN, nred * IPLEN), c
    assert on.rep["total"]["released"] == nred, on.rep["total"]


# ------------------------------------------------ 3. explicit drops inline --
def test_fw_inline_releases_denied(xr, fw):
    """The firewall denies 30 of 90 trace flows (~33%), slicing on: the NF
    frees the slot of every denied sliced header at once (released =
    denied BIG frames), the store is empty while the NF still runs, no
    payload was evicted or went stale."""
    rules, _, flows = fw
    frames = build(flows, seed=71)
    denied_big = sum(fl.deny and is_big(f) for f, fl in frames)
    nallow = sum(not fl.deny for _, fl in frames)
    assert denied_big == 30
    xr.attach(DOMAIN)
    st0 = xr.stats(DOMAIN)
    nf = xr.start_nf("--workers", WORKERS, "--rx", "rxbisect", "--nf",
                     "fw,l2fwd", "--rules", rules, name=DOMAIN)
    try:
        cap = xr.capture(nallow)
        xr.send_frames([f for f, _ in frames])
        got = cap.finish(10)
        st = poll(lambda: (lambda s: s if s["slots_busy"] == 0 else None)(
            xr.stats(DOMAIN)), 2, "an empty store")
    finally:
        rep = nf.stop()
    d = delta(st, st0)
    t = rep["total"]
    c = rep["nf_counters"]["fw"]
    what = f"NF {t} fw {c}; domain {d}"
    assert len(got) == nallow, what
    assert (c["denied"], t["released"]) == \
        (sum(fl.deny for _, fl in frames), denied_big), what
    assert (d["sliced"], d["evicted"], d["stale"]) == \
        (sum(map(is_big, (f for f, _ in frames))), 0, 0), what
    assert t["spliced"] + t["released"] == d["sliced"], what


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


def park_fw_run(pr, fw, notice):
    """The firewall on NF server A (--drop-notice if NOTICE); the client's
    frames through it; (frames, captured at the server, NF report, domain
    counters once the allowed frames arrived)."""
    rules = fw[0]
    frames = park_frames(park_fw_flows(fw), seed=81)
    nallow = sum(not fl.deny for _, fl in frames)
    pr.attach_park(DOMAIN)
    st0 = pr.stats(DOMAIN)
    nf = pr.start_nf("nfa", "--rx", "rxbisect", "--nf", "fw,l2fwd",
                     "--rules", rules, *(("--drop-notice",) if notice else ()))
    try:
        cap = pr.capture(nallow, role="srv", dev="srv0")
        pr.send("cli", "cli0", [f for f, _ in frames])
        got = cap.finish(10)
        denied_big = sum(fl.deny and is_big(f) for f, fl in frames)
        if notice:
            poll(lambda: pr.stats(DOMAIN)["explicit_drop"] -
                 st0["explicit_drop"] >= denied_big, 3,
                 f"{denied_big} drop notices taken")
        st = settle(lambda: pr.stats(DOMAIN), timeout=2)
    finally:
        rep = nf.stop()
    d = delta(st, st0)
    d["slots_busy"] = st["slots_busy"]
    return frames, sorted(got), rep, d


def test_park_drop_notice_frees_slots(pr, fw):
    """--drop-notice on NF server A: every denied sliced header comes back
    as a notice and frees its slot (explicit_drop = denied BIG, no
    bad_notice), the store is empty right after, the server gets exactly
    the allowed packets, intact."""
    frames, got, rep, d = park_fw_run(pr, fw, True)
    denied_big = sum(fl.deny and is_big(f) for f, fl in frames)
    want = sorted(at_server(f) for f, fl in frames if not fl.deny)
    what = f"NF {rep['total']} {rep['nf_counters']}; domain {d}"
    diff = nfpkt.first_difference(got, want)
    assert diff is None, f"not the allowed frames at the server: {diff}; " \
        f"{what}"
    assert rep["total"]["notices"] == denied_big, what
    assert (d["explicit_drop"], d["bad_notice"], d["slots_busy"]) == \
        (denied_big, 0, 0), what
    assert (d["sliced"], d["spliced"], d["evicted"], d["stale"]) == \
        (sum(is_big(f) for f, _ in frames), sum(
            is_big(f) and not fl.deny for f, fl in frames), 0, 0), what


def test_park_without_drop_notice_slots_wait(pr, fw):
    """The same without --drop-notice: the denied headers' payloads stay
    parked (busy = denied BIG right after, nothing freed explicitly) until
    expiry; the allowed packets arrive all the same."""
    frames, got, rep, d = park_fw_run(pr, fw, False)
    denied_big = sum(fl.deny and is_big(f) for f, fl in frames)
    want = sorted(at_server(f) for f, fl in frames if not fl.deny)
    what = f"NF {rep['total']}; domain {d}"
    assert got == want, what
    assert rep["total"]["notices"] == 0, what
    assert (d["explicit_drop"], d["bad_notice"], d["slots_busy"]) == \
        (0, 0, denied_big), what


def test_park_qos_meters_original_length(pr):
    """qos on NF server A (no store there): it meters a sliced header by
    the original length the token carries: 5 green, 3 yellow, 12 red of
    20 sliced 1428 B packets, byte counters of 1428 each; red headers come
    back as notices and free their slots."""
    fl = Flow(False, "udp", nfpark.CLI4, nfpark.SRV4, 45000, 7401, False)
    frames = [f for f, _ in park_frames([fl] * QOS_N, seed=91, small=0)]
    keep = QOS_GREEN_N + QOS_YELLOW_N
    pr.attach_park(DOMAIN)
    st0 = pr.stats(DOMAIN)
    nf = pr.start_nf("nfa", "--rx", "rxbisect", "--nf", "qos,l2fwd",
                     "--cir", 8, "--cbs", QOS_GREEN_N * IPLEN, "--ebs",
                     QOS_YELLOW_N * IPLEN, "--drop-notice")
    try:
        cap = pr.capture(keep, role="srv", dev="srv0")
        pr.send("cli", "cli0", frames)
        got = cap.finish(10)
        st = poll(lambda: (lambda s: s if s["slots_busy"] == 0 else None)(
            pr.stats(DOMAIN)), 3, "an empty store")
    finally:
        rep = nf.stop()
    c = rep["nf_counters"]["qos"]
    d = delta(st, st0)
    nred = QOS_N - keep
    what = f"qos {c}; NF {rep['total']}; domain {d}"
    assert (c["green_bytes"], c["yellow_bytes"], c["red_bytes"]) == \
        (QOS_GREEN_N * IPLEN, QOS_YELLOW_N * IPLEN, nred * IPLEN), what
    want = sorted([at_server(f) for f in frames[:QOS_GREEN_N]] +
                  [ip4_rewrite(at_server(f), tos=12 << 2)
                   for f in frames[QOS_GREEN_N:keep]])
    diff = nfpkt.first_difference(sorted(got), want)
    assert diff is None, f"{what}: {diff}"
    assert (d["explicit_drop"], d["bad_notice"], d["evicted"]) == \
        (nred, 0, 0), what


# -------------------------------------- 5. two NF servers, two parts --
PARK_SLOTS = 384            # 2 CPUs x 3 parts x 64 slots
PARK_PARKED = 32            # payloads of flows through B, parked
SEND_CPU = 0                # the client sends (and the slicer runs) here


def two_servers_run(pr, burst_to_b):
    """B stopped with PARK_PARKED payloads of its flows parked; a burst of
    more than the whole per-CPU share (expiry x share + 1 part) toward A
    (toward B itself if BURST_TO_B); B continued. Returns (B's frames
    captured at the server, the burst's, domain counters, NF reports,
    burst size)."""
    pr.attach_park(DOMAIN, "--slots", PARK_SLOTS)
    status = pr.status(DOMAIN)
    part, nparts = status["partition_slots"], status["dest_partitions"]
    assert (nparts, part * nparts * status["partitions"]) == \
        (3, PARK_SLOTS), status
    burst_n = status["expiry"] * part * nparts + part + 1
    st0 = pr.stats(DOMAIN)
    nfa = pr.start_nf("nfa", "--rx", "rxbisect", "--nf", "l2fwd")
    nfb = pr.start_nf("nfb", "--rx", "rxbisect", "--nf", "l2fwd")
    fb = Flow(False, "udp", nfpark.CLI4, nfpark.SRV4_B, 46000, 7501, False)
    parked = [f for f, _ in park_frames([fb] * PARK_PARKED, 101, small=0)]
    dst = nfpark.SRV4_B if burst_to_b else nfpark.SRV4
    burst = [f for f, _ in park_frames(
        [Flow(False, "udp", nfpark.CLI4, dst, 47000 + i % 16, 7601, False)
         for i in range(burst_n)], 102, small=0)]
    os.kill(nfb.proc.pid, signal.SIGSTOP)
    got_a = []
    try:
        pr.send("cli", "cli0", parked, cpu=SEND_CPU)
        poll(lambda: pr.stats(DOMAIN)["slots_busy"] >= PARK_PARKED, 3,
             f"{PARK_PARKED} payloads parked for B")
        capb = pr.capture(PARK_PARKED, role="srv", dev="srv0",
                          bpf="udp dst port 7501")
        if not burst_to_b:
            capa = pr.capture(burst_n, role="srv", dev="srv0",
                              bpf="udp dst port 7601")
        pr.send("cli", "cli0", burst, cpu=SEND_CPU)
        if not burst_to_b:
            got_a = capa.finish(15)
        mid = pr.stats(DOMAIN)
    finally:
        os.kill(nfb.proc.pid, signal.SIGCONT)
    if burst_to_b:
        # B sends back what its ring held; nothing more is coming
        settle(lambda: pr.stats(DOMAIN), timeout=3)
        got_b = capb.finish(0.5)
    else:
        got_b = capb.finish(10)
    st = settle(lambda: pr.stats(DOMAIN), timeout=2)
    seq = pr.part_seq(DOMAIN)
    reps = (nfa.stop(), nfb.stop())
    d = delta(st, st0)
    d["slots_busy"] = st["slots_busy"]
    # What the burst is measured against: the slicer ran on SEND_CPU, B's
    # payloads are in part 2 (p1's), the burst went to part 1 (p0's) or
    # 2, and it is more than the whole share of the CPU (3 parts) times
    # the expiry: a store without parts would have evicted B's payloads.
    # Checked by the tests after their results (which say more).
    share = part * nparts
    want = {(SEND_CPU, 2): PARK_PARKED + (burst_n if burst_to_b else 0),
            (SEND_CPU, 1): 0 if burst_to_b else burst_n}
    seen = {k: v for k, v in seq.items() if v}

    def where():
        assert {k: seq.get(k) for k in want} == want and \
            burst_n > status["expiry"] * share and \
            sum(seq.values()) == PARK_PARKED + burst_n, \
            f"slice attempts by (CPU, part): {seen}, want {want}; burst " \
            f"{burst_n}; expiry {status['expiry']}, {share} slots a CPU"
    return parked, burst, got_b, got_a, delta(mid, st0), d, reps, where


def test_park_two_servers_burst_keeps_other_part(pr):
    """A burst toward A never evicts what waits for B: B stopped holds the
    headers of PARK_PARKED sliced packets; a burst toward A larger than
    the whole per-CPU share (so it would wrap a store without parts more
    than expiry times) passes through A; then B continues and every one
    of its packets arrives intact (no eviction, nothing stale)."""
    parked, burst, got_b, got_a, mid, d, reps, where = \
        two_servers_run(pr, False)
    what = f"domain after the burst {mid}, at the end {d}; NF A " \
        f"{reps[0]['total']}, NF B {reps[1]['total']}"
    assert (mid["sliced"], mid["slots_busy"]) == \
        (len(parked) + len(burst), len(parked)), what
    assert sorted(got_a) == sorted(at_server(f) for f in burst), what
    assert sorted(got_b) == sorted(at_server(f) for f in parked), what
    assert (d["evicted"], d["stale"], d["skipped_full"], d["slots_busy"]) \
        == (0, 0, 0, 0), what
    where()


def test_park_burst_in_same_part_evicts(pr):
    """Control of the test above: the same burst toward B's own part (B
    still stopped) does evict the parked payloads, which go stale once B
    sends their headers back: the eviction the parts prevent is real."""
    parked, burst, got_b, got_a, mid, d, reps, where = \
        two_servers_run(pr, True)
    what = f"domain after the burst {mid}, at the end {d}; NF B " \
        f"{reps[1]['total']}"
    assert d["evicted"] >= len(parked) and d["stale"] >= len(parked), what
    assert got_b == [], what
    where()


# ----------------------------------------------------- 6. forged notices --
def notice_of(header):
    """The drop notice nfslice-nf would send for the sliced HEADER as the
    NF server received it: addresses swapped, EtherType 0x88B5."""
    return header[6:12] + header[0:6] + b"\x88\xb5" + header[14:]


def with_token(header, token):
    """HEADER with its token (the last 16 bytes of the IP packet)
    replaced."""
    end = 14 + struct.unpack("!H", header[16:18])[0]
    return header[:end - 16] + token + header[end:]


def test_park_forged_notice_frees_nothing(pr):
    """Headers of 10 sliced packets reach NF server A, where nothing runs:
    their payloads stay parked. Into the NF port then go notices with
    random tokens, one with a real token whose MAC is wrong, one whose
    body is garbage: none frees a slot, the token-bearing ones count
    bad_notice. A genuine notice frees its slot (explicit_drop); sent
    again, it frees nothing (bad_notice)."""
    pr.attach_park(DOMAIN)
    st0 = pr.stats(DOMAIN)
    fl = Flow(False, "udp", nfpark.CLI4, nfpark.SRV4, 48000, 7701, False)
    frames = [f for f, _ in park_frames([fl] * 10, 111, small=0)]
    cap = pr.capture(10, role="nfa", dev="nf0")
    pr.send("cli", "cli0", frames)
    hdrs = cap.finish(10)
    assert len(hdrs) == 10 and all(nfpkt.parse(h).dscp == 63 for h in hdrs), \
        [h.hex() for h in hdrs]
    busy = pr.stats(DOMAIN)["slots_busy"]
    assert busy == 10

    def after(notices, tag):
        pr.send("nfa", "nf0", notices, tag=tag)
        return settle(lambda: pr.stats(DOMAIN), timeout=1)

    rng = random.Random(112)
    forged = [notice_of(with_token(hdrs[i], rng.randbytes(16)))
              for i in range(5)]
    # a real slot word and generation, a MAC one bit off
    tok = bytearray(hdrs[5][14 + struct.unpack("!H", hdrs[5][16:18])[0]
                            - 16:][:16])
    tok[15] ^= 1
    forged.append(notice_of(with_token(hdrs[5], bytes(tok))))
    st = after(forged, "forged")
    d = delta(st, st0)
    assert (d["bad_notice"], d["explicit_drop"], st["slots_busy"]) == \
        (6, 0, 10), f"after 6 forged notices: {st}"
    garbage = notice_of(hdrs[6])[:14] + rng.randbytes(80)
    st = after([garbage], "garbage")
    d = delta(st, st0)
    assert (d["explicit_drop"], st["slots_busy"]) == (0, 10), \
        f"after a notice of garbage: {st}"
    bad = d["bad_notice"]
    st = after([notice_of(hdrs[7])], "genuine")
    d = delta(st, st0)
    assert (d["explicit_drop"], d["bad_notice"], st["slots_busy"]) == \
        (1, bad, 9), f"after a genuine notice: {st}"
    st = after([notice_of(hdrs[7])], "replayed")
    d = delta(st, st0)
    assert (d["explicit_drop"], d["bad_notice"], st["slots_busy"]) == \
        (1, bad + 1, 9), f"after the genuine notice again: {st}"


# ------------------------------------- 7. functional equivalence in park --
def park_queue_cpus():
    """For each RX queue q of the NF servers, a CPU this process may send
    from whose frames reach q (nfpark: CPU c -> queue c % PARK_QUEUES), or
    None."""
    mine = sorted(os.sched_getaffinity(0))
    return [next((c for c in mine if c % PARK_QUEUES == q), None)
            for q in range(PARK_QUEUES)]


def park_cpus(frames, spread):
    """The CPU each of FRAMES is sent from: with SPREAD, the one of queue
    dport % PARK_QUEUES (a flow keeps its queue); else the first queue's,
    for all (one queue: every worker sees its frames in the order sent,
    which nat's port choice follows, as one_queue inline)."""
    cpus = park_queue_cpus()
    return [cpus[nfpkt.parse(f).dport % PARK_QUEUES if spread else 0]
            for f in frames]


def park_run(pr, chain, opts, frames, expect, on, workers, mode,
             replies=None, rev_expect=0, spread=True):
    """equivalence()'s run in the park rig: nfslice-nf --workers WORKERS
    --rx MODE --nf CHAIN,l2fwd --drop-notice OPTS on NF server A, which
    knows nothing of the store; with ON, domain DOMAIN attached to the
    slicing host (c0, s0; NF ports p0, p1), without it the slicing host
    only routes. FRAMES from the client, from the CPUs of park_cpus(FRAMES,
    SPREAD); EXPECT frames captured at the server; with slicing on, the
    NF stops once the store is empty (every notice taken). A Result
    (forward only: no REPLIES)."""
    assert replies is None and rev_expect == 0, "park_run: forward only"
    if on:
        pr.attach_park(DOMAIN)
        st0 = pr.stats(DOMAIN)
    nf = pr.start_nf("nfa", "--workers", workers, "--rx", mode, "--nf",
                     with_l2fwd(chain), "--drop-notice", *opts)
    try:
        cap = pr.capture(expect, role="srv", dev="srv0")
        pr.send("cli", "cli0", frames, cpu=park_cpus(frames, spread))
        got = cap.finish(10)
        if on:
            try:
                poll(lambda: pr.stats(DOMAIN)["slots_busy"] == 0, 3,
                     "an empty store")
            except AssertionError:
                pass    # equivalence() says so, with the counters
    finally:
        rep = nf.stop()
    return Result(sorted(got), [], rep, run_domain(pr, st0) if on else None)


def park_equivalence(pr, chain, opts, frames, expect, mode, workers,
                     spread=True):
    """equivalence() in the park rig (park_run()); also asserts that the
    slicer sliced the BIG frames and skipped the others as small, and that
    every worker received frames, slicing off and on. (off, on)."""
    if spread and mode in ("privring", "smallpriv") and \
            None in park_queue_cpus()[:workers]:
        pytest.skip(f"{mode} with {workers} workers needs frames on "
                    f"{workers} RX queues of the NF server; the park rig "
                    f"picks the queue by the sender's CPU, and this process "
                    f"may run on CPUs {sorted(os.sched_getaffinity(0))} "
                    f"only")
    off, on = equivalence(pr, chain, opts, frames, expect, workers, mode,
                          run=functools.partial(park_run, spread=spread))
    what = f"park {chain} ({mode}, {workers} workers)"
    nbig = sum(is_big(f) for f, _ in frames)
    assert (on.dom["sliced"], on.dom["skipped_small"]) == \
        (nbig, len(frames) - nbig), f"{what}: domain {on.dom}"
    for r, tag in ((off, "off"), (on, "on")):
        rx = [w["rx"] for w in r.rep["per_worker"]]
        assert len(rx) == workers and all(rx) and sum(rx) == len(frames), \
            f"{what}, slicing {tag}: frames received per worker {rx}"
    return off, on


@pytest.mark.parametrize("mode,workers", FW_CASES, ids=FW_IDS)
def test_park_l2fwd_equivalence(pr, mode, workers):
    """l2fwd alone on NF server A: slicing on = off = every frame at the
    server as the slicing host routes it (TTL - 2, its MACs), sliced and
    small; with slicing on every payload spliced, no drop notice."""
    frames = park_frames(own_flows(n=16, src=nfpark.CLI4, dst=nfpark.SRV4,
                                   dport0=7201), seed=121)
    off, on = park_equivalence(pr, "l2fwd", (), frames, len(frames), mode,
                               workers)
    diff = nfpkt.first_difference(off.got, sorted(at_server(f)
                                                  for f, _ in frames))
    assert diff is None, f"l2fwd ({mode}): not the frames sent: {diff}"
    assert (on.dom["spliced"], on.dom["explicit_drop"]) == \
        (on.dom["sliced"], 0), on.dom


@pytest.mark.parametrize("mode,workers", FW_CASES, ids=FW_IDS)
def test_park_fw_equivalence(pr, fw, mode, workers):
    """fw on NF server A (the trace flows and the client's own, 32 of 98
    denied): slicing on = off = the oracle's allowed frames at the server
    (TTL - 2, its MACs); allowed and denied as predicted both ways; with
    slicing on, one drop notice per denied BIG frame frees its slot
    (explicit_drop), the allowed BIG frames are spliced."""
    rules, _, _ = fw
    frames = park_frames(park_fw_flows(fw), seed=131)
    want = sorted(at_server(f) for f, fl in frames if not fl.deny)
    off, on = park_equivalence(pr, "fw", ("--rules", rules), frames,
                               len(want), mode, workers)
    diff = nfpkt.first_difference(off.got, want)
    assert diff is None, f"fw ({mode}): not the allowed frames: {diff}"
    c = on.rep["nf_counters"]["fw"]
    ndeny = sum(fl.deny for _, fl in frames)
    assert (c["allowed"], c["denied"]) == (len(want), ndeny), c
    assert (on.dom["explicit_drop"], on.dom["spliced"]) == \
        (sum(fl.deny and is_big(f) for f, fl in frames),
         sum(not fl.deny and is_big(f) for f, fl in frames)), on.dom


@pytest.mark.parametrize("mode,workers", CHAIN_CASES, ids=CHAIN_IDS)
def test_park_nat_equivalence(pr, mode, workers):
    """nat on NF server A (one device: LAN by source, every frame steered
    by destination port with 2 workers; the flows' ports reach both):
    slicing on = off; every frame at the server from EXT_IP, one external
    port per flow, kept by all its frames, no two flows on one port;
    translated_out = every frame, nothing unsolicited or dropped."""
    frames = (park_frames(own_flows(n=16, src=nfpark.CLI4,
                                    dst=nfpark.SRV4, dport0=7201), seed=141)
              + park_frames(own_flows(n=8, src=nfpark.CLI4, dst=nfpark.SRV4,
                                      dport0=NAT_W1_PORT, sport0=43000),
                            seed=142))
    off, on = park_equivalence(pr, "nat", NAT_OPTS, frames, len(frames),
                               mode, workers, spread=False)
    check_nat_lb(off.got, frames, f"nat ({mode})")
    flow_of = {nfpkt.parse(f).payload: fl for f, fl in frames}
    ext = {}
    for g in off.got:
        p = nfpkt.parse(g)
        fl = flow_of[p.payload]
        assert ext.setdefault(fl, p.sport) == p.sport, (fl, p)
    assert len(set(ext.values())) == len(ext) == len(set(flow_of.values()))
    c = on.rep["nf_counters"]["nat"]
    assert (c["translated_out"], c["translated_in"], c["unsolicited"],
            c["misrouted"], c["table_full"]) == (len(frames), 0, 0, 0, 0), c


@pytest.mark.parametrize("mode,workers", CHAIN_CASES, ids=CHAIN_IDS)
def test_park_chain_equivalence(pr, fw, mode, workers):
    """fw,nat,lb on NF server A (nat: every source the LAN): slicing on =
    off. Of the trace flows and the client's flows to the server and to
    the VIP, the allowed ones arrive from EXT_IP, the VIP's at one backend
    per flow; denied as predicted, every allowed frame translated; one
    drop notice per denied BIG frame."""
    rules, backends, _ = fw
    frames = (park_frames(park_fw_flows(fw), seed=151) +
              park_frames(own_flows(src=nfpark.CLI4, dst=VIP, dport0=7001,
                                    sport0=42000), seed=152))
    allowed = [(f, fl) for f, fl in frames if not fl.deny]
    off, on = park_equivalence(pr, "fw,nat,lb",
                               ("--rules", rules, *NAT_OPTS, "--backends",
                                backends, *PARK_CHAIN_OPTS),
                               frames, len(allowed), mode, workers,
                               spread=False)
    check_nat_lb(off.got, allowed, f"chain ({mode})")
    c = on.rep["nf_counters"]
    assert c["fw"]["denied"] == len(frames) - len(allowed), c
    assert c["nat"]["translated_out"] == len(allowed), c
    assert on.dom["explicit_drop"] == \
        sum(fl.deny and is_big(f) for f, fl in frames), on.dom


@pytest.mark.parametrize("mode,workers", FW_CASES, ids=FW_IDS)
def test_park_lb_equivalence(pr, fw, mode, workers):
    """lb on NF server A: slicing on = off; the VIP's 24 flows reach one
    backend each, all three used; the flows to the server arrive as routed
    (TTL - 2, its MACs), untouched; table and connection hits = the VIP's
    frames, passed = the others."""
    _, backends, _ = fw
    vip = [fl._replace(deny=False) for fl in own_flows(
        n=24, src=nfpark.CLI4, dst=VIP, dport0=7001, sport0=44000)]
    frames = (park_frames(vip, seed=161) +
              park_frames(own_flows(src=nfpark.CLI4, dst=nfpark.SRV4,
                                    dport0=7201), seed=162))
    off, on = park_equivalence(pr, "lb", ("--backends", backends, *LB_OPTS),
                               frames, len(frames), mode, workers)
    by_dst = {}
    for g in off.got:
        by_dst.setdefault(socket.inet_ntoa(nfpkt.parse(g).dst), []).append(g)
    assert set(by_dst) == {*BACKENDS, nfpark.SRV4}, sorted(by_dst)
    assert by_dst[nfpark.SRV4] == sorted(at_server(f) for f, fl in frames
                                         if fl.dst != VIP)
    flow_of = {nfpkt.parse(f).payload: fl for f, fl in frames}
    backend_of = {}
    for b in BACKENDS:
        for g in by_dst[b]:
            fl = flow_of[nfpkt.parse(g).payload]
            assert fl.dst == VIP and backend_of.setdefault(fl, b) == b, \
                f"lb ({mode}): {fl} at {b} (and {backend_of.get(fl)})"
    assert len(backend_of) == len(vip), backend_of
    c = on.rep["nf_counters"]["lb"]
    nvip = sum(fl.dst == VIP for _, fl in frames)
    assert c["table_hits"] + c["conn_hits"] == nvip and \
        c["passed"] == len(frames) - nvip, c


@pytest.mark.parametrize("mode,workers", FW_CASES, ids=FW_IDS)
def test_park_qos_equivalence(pr, mode, workers):
    """qos with a CIR far above the traffic on NF server A: slicing on =
    off = every frame at the server as routed, sliced and small, all
    green; green_bytes = the original IP lengths (from the token for a
    sliced header, which is ~60 B)."""
    frames = park_frames(own_flows(n=24, src=nfpark.CLI4, dst=nfpark.SRV4,
                                   dport0=7201), seed=171)
    off, on = park_equivalence(pr, "qos", QOS_GREEN, frames, len(frames),
                               mode, workers)
    assert off.got == sorted(at_server(f) for f, _ in frames)
    c = on.rep["nf_counters"]["qos"]
    assert (c["green"], c["yellow"], c["red"], c["green_bytes"]) == \
        (len(frames), 0, 0, sum(len(f) - 14 for f, _ in frames)), c
