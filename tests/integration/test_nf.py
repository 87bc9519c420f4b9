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
import socket

import pytest

from nfsl import pkt as nfpkt
from nfsl.rig import poll
from nfxsk import GEN4, MACS, SINK4, swap_macs
from nf_fixtures import (
    BACKENDS, CHAIN_CASES, CHAIN_IDS, DOMAIN, EXT_IP, FW_CASES, FW_IDS, Flow,
    IPLEN, LB_OPTS, NAT_OPTS, QOS_GREEN, QOS_GREEN_N, QOS_N, QOS_YELLOW_N,
    VIP, WORKERS, build, check_nat_lb, check_nat_ports, delta, equivalence,
    fw, ip4_rewrite, is_big, one_queue, own_flows, predicted, rig, xr)


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
    check_nat_ports(off.got, frames)
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
