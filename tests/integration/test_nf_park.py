# SPDX-License-Identifier: GPL-2.0
"""The NFs of userspace/lib/nf in nfslice-nf, with slicing (test_nf.py says
what every test checks): park (4-6): drop notices free slots, qos meters the
original length, two NF servers in two parts, forged notices. Rigs, fixtures
and helpers: nf_fixtures.py."""
import os
import random
import signal
import struct
import nfpark

from nfsl import pkt as nfpkt
from nfsl.rig import poll, settle
from nf_fixtures import (
    DOMAIN, Flow, IPLEN, QOS_GREEN_N, QOS_N, QOS_YELLOW_N, at_server, delta,
    fw, ip4_rewrite, is_big, park, park_frames, park_fw_flows, pr)


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
    # A frame sent on SEND_CPU can still be sliced on the other CPU: when
    # the kernel's own frames on cli0 (IPv6 neighbour discovery, MLD) had
    # the veth's NAPI poll running there as it entered the ring. Such
    # strays (a few at most) only shrink the burst on SEND_CPU, which must
    # still exceed the expiry times the CPU's share.
    share = part * nparts
    on = {p: seq.get((SEND_CPU, p), 0) for p in range(nparts)}
    strays = sum(seq.values()) - sum(on.values())
    seen = {k: v for k, v in seq.items() if v}

    def where():
        if burst_to_b:      # the burst in B's part 2, nothing in part 1
            ok = on[1] == 0 and on[2] - PARK_PARKED > status["expiry"] * share
        else:               # B's payloads in part 2, the burst in part 1
            ok = on[2] <= PARK_PARKED and on[1] > status["expiry"] * share
        assert ok and on[0] == 0 and strays <= 4 and \
            sum(seq.values()) == PARK_PARKED + burst_n, \
            f"slice attempts by (CPU, part): {seen}; SEND_CPU {SEND_CPU}, " \
            f"B's {PARK_PARKED} in part 2, burst {burst_n} to part " \
            f"{2 if burst_to_b else 1}; expiry {status['expiry']}, " \
            f"{share} slots a CPU"
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
