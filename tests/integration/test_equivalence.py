# SPDX-License-Identifier: GPL-2.0
"""Functional equivalence (PayloadPark §6.2.6): slicing changes nothing.

A fixed list of client -> server packets (UDP and TCP, IPv4 and IPv6, frame
sizes on both sides of the 256 B threshold, seeded payloads) crosses the
DUT's kernel NFs (forwarding, nftables ACL, masquerade NAT), and answers to
the same flows cross back server -> client. The same traffic is sent in a
fresh rig without slicing and in a fresh rig with `nfslice attach dut0
dut1`: what the endpoints capture must be identical byte for byte, every
packet must arrive, and the counters must show exactly the slicing the
packet list implies. Fresh rigs give fresh conntrack tables, so the NAT
picks the same ports both times.
"""
import pytest

from nfsl.pkt import (Capture, assert_delivered, assert_same_frames,
                   client_frames, corner_frames, parse, predict, roundtrip,
                   send)
from nfsl.rig import COUNTERS, MGR_COUNTERS, name

PREFIX = name("eq")
SEED_FWD = 0x6E66736C  # payloads of the client's packets
SEED_REV = 0x73706C63  # payloads of the server's answers
DOMAIN = "eq"


def run_once(rigs, tmp, tag, opts=None):
    """One run in a fresh rig: slicing off (OPTS None) or attached with OPTS.

    Returns the Roundtrip, and the domain's status and stats when slicing.
    """
    rig = rigs(PREFIX)
    rig.silence_endpoints()
    rig.prime_neighbors()
    status = stats = None
    if opts is not None:
        status = rig.attach("dut0", "dut1", name=DOMAIN, opts=opts)
    rt = roundtrip(rig, client_frames(rig.env, SEED_FWD), tmp, tag, SEED_REV)
    if opts is not None:
        stats = rig.stats(DOMAIN)
    return rt, status, stats


@pytest.fixture(scope="module")
def baseline(rigs, tmp_path_factory):
    """The captures of the run without slicing (computed once)."""
    rt, _, _ = run_once(rigs, tmp_path_factory.mktemp("eq"), "off")
    return rt


def test_unsliced_baseline_delivers_everything(baseline):
    """Without slicing every packet crosses, in order, payload intact.

    The comparisons below are only meaningful if the reference is complete.
    """
    assert len(baseline.fwd_sent) == 52  # 6 flows x 9 sizes - 2 (v6/TCP 64 B)
    assert_delivered(baseline.fwd_sent, baseline.fwd_got, "client->server")
    assert_delivered(baseline.rev_sent, baseline.rev_got, "server->client")
    # The list straddles the threshold in both directions.
    for frames in (baseline.fwd_sent, baseline.rev_sent):
        p = predict(frames)
        assert p["sliced"] > 0 and p["skipped_small"] > 0


@pytest.mark.parametrize("opts, keep, mode", [
    ((), 0, "native"),
    # An odd keep puts the parked bytes at an odd L4 offset: the checksum
    # of the removed bytes must be byte-swapped on splice (RFC 1071).
    (("--keep", "7"), 7, "native"),
    # Generic XDP: the slicer sees an skb instead of an xdp_buff.
    (("--mode", "skb"), 0, "skb"),
], ids=["default", "keep7", "skb"])
def test_sliced_equals_unsliced(rigs, baseline, tmp_path, opts, keep, mode):
    """With slicing on, both endpoints capture exactly the unsliced frames."""
    rt, status, stats = run_once(rigs, tmp_path, "on", opts)
    assert [i["xdp"] for i in status["interfaces"]] == [mode, mode]
    assert status["keep"] == keep

    assert_delivered(rt.fwd_sent, rt.fwd_got, "client->server (sliced)")
    assert_same_frames(rt.fwd_got, baseline.fwd_got, "client->server")
    # The answers are built from the captures, so they are the same frames
    # as in the baseline exactly when the forward captures were.
    assert rt.rev_sent == baseline.rev_sent
    assert_delivered(rt.rev_sent, rt.rev_got, "server->client (sliced)")
    assert_same_frames(rt.rev_got, baseline.rev_got, "server->client")

    # Counters, exactly: every frame of at least 256 B was sliced on DUT
    # ingress (dut0 forward, dut1 reverse) and spliced on egress, the rest
    # skipped as small, nothing lost, evicted or left in the store.
    want = predict(rt.fwd_sent + rt.rev_sent, keep=keep)
    assert set(stats) == {"name", "slots", "slots_busy", *COUNTERS,
                          *MGR_COUNTERS, "route_cache_hit_rate"}
    # Every sliced frame had a route verdict, from the cache or not.
    assert stats["route_cache_hit"] + stats["route_cache_miss"] == \
        want["sliced"], stats
    got = {k: stats[k] for k in COUNTERS
           if k not in ("unparsed", "route_cache_hit", "route_cache_miss")}
    assert got == {
        "sliced": want["sliced"], "spliced": want["sliced"],
        "skipped_small": want["skipped_small"],
        "parked_bytes": want["parked_bytes"],
        "skipped_full": 0, "skipped_quota": 0, "skipped_big": 0,
        "evicted": 0, "stale": 0,
        "bad_token": 0, "replayed": 0, "too_big": 0,
        "skipped_route": 0, "skipped_local": 0, "skipped_l2": 0,
        "skipped_mtu": 0, "dropped_gso": 0, "slice_failed": 0,
        "splice_failed": 0, "explicit_drop": 0, "bad_notice": 0,
        "events_lost": 0, "skipped_csum": 0, "escaped_dropped": 0,
    }
    assert stats["slots_busy"] == 0


# --------------------------------------------------- checksum corners --
SEED_CORNER = 0x636B7331


def run_corners(rigs, tmp, tag, opts=None):
    """corner_frames() client -> server in a fresh rig; (sent, got, stats)."""
    rig = rigs(PREFIX)
    rig.silence_endpoints()
    rig.prime_neighbors()
    if opts is not None:
        rig.attach("dut0", "dut1", name=DOMAIN, opts=opts)
    frames = corner_frames(rig.env, SEED_CORNER)
    cap = Capture(rig, "srv", "srv0", len(frames), tmp / f"{tag}.pcap").start()
    send(rig, "cli", "cli0", frames, tmp / f"{tag}-sent.pcap")
    got = cap.finish()
    return frames, got, rig.stats(DOMAIN) if opts is not None else None


@pytest.fixture(scope="module")
def corner_baseline(rigs, tmp_path_factory):
    """The corner-case capture without slicing (computed once)."""
    return run_corners(rigs, tmp_path_factory.mktemp("corner"), "off")


@pytest.mark.parametrize("opts, keep", [((), 0), (("--keep", "7"), 7)],
                         ids=["default", "keep7"])
def test_checksum_corners(rigs, corner_baseline, tmp_path, opts, keep):
    """Checksums 0x0000 (TCP) / 0xFFFF (UDP) come out as without slicing.

    The slicer and the splicer update checksums incrementally; at the
    corner where the sum is 0xFFFF an update can yield -0 instead of +0
    (or the UDP "no checksum" 0). The frames must still be the unsliced
    ones, byte for byte.
    """
    base_sent, base_got, _ = corner_baseline
    assert_delivered(base_sent, base_got, "corner cases (unsliced)")
    # The capture really holds the corner: every "post" frame (the odd
    # ones, corner_frames alternates pre/post) arrives with checksum 0x0000
    # (TCP) or 0xFFFF (UDP).
    for fr in base_got[1::2]:
        p = parse(fr)
        l4 = 54 if p.v6 else 34
        csum = fr[l4 + (6 if p.proto == "udp" else 16):][:2]
        assert csum == (b"\xff\xff" if p.proto == "udp" else b"\0\0"), \
            f"{p.proto} frame of {len(fr)} B arrived with checksum {csum.hex()}"

    sent, got, stats = run_corners(rigs, tmp_path, "on", opts)
    assert sent == base_sent
    assert_delivered(sent, got, "corner cases (sliced)")
    assert_same_frames(got, base_got, "corner cases")
    want = predict(sent, keep=keep)
    assert (stats["sliced"], stats["spliced"], stats["stale"],
            stats["slots_busy"]) == (want["sliced"], want["sliced"], 0, 0)
