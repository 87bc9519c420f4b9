# SPDX-License-Identifier: GPL-2.0
"""Outside traffic already marked DSCP 63, the mark of a sliced packet.

DSCP 63 is "experimental/local use" (RFC 2474): anybody may send it, so the
token's MAC, not the DSCP, decides what nfslice splices (docs/design.md). A
small DSCP-63 packet (below the threshold, never sliced) reaches a splicer
with a mark but no token of ours: it must pass unchanged and count as
bad_token, once, at that splicer. A large DSCP-63 packet is sliced like any
other and must come back with its DSCP 63. Both directions, IPv4 and IPv6;
the captures are compared with a run without slicing, byte for byte.
"""
import pytest

from nfsl.pkt import (DSCP_SLICED, THRESHOLD, Flow, assert_delivered,
                   assert_same_frames, client_frames, parse, predict,
                   roundtrip)
from nfsl.rig import COUNTERS, MGR_COUNTERS, name

PREFIX = name("d63")
DOMAIN = "d63"
SEED_FWD = 0x64736370
SEED_REV = 0x33363363

def frames(env):
    """The DSCP-63 client packets: small UDP first, then large UDP/TCP."""
    small = client_frames(env, SEED_FWD, sizes=(64, 100, 200, 255),
                          flows=(Flow(False, "udp", 41001, 5201),
                                 Flow(True, "udp", 41011, 5201)),
                          dscp=DSCP_SLICED)
    large = client_frames(env, SEED_FWD + 1, sizes=(256, 700, 1514),
                          flows=(Flow(False, "udp", 41002, 5201),
                                 Flow(False, "tcp", 41003, 5201),
                                 Flow(True, "udp", 41012, 5201),
                                 Flow(True, "tcp", 41013, 8080)),
                          dscp=DSCP_SLICED)
    return small + large


def run_once(rigs, tmp, tag, slicing):
    """One run in a fresh rig, with or without slicing; (Roundtrip, stats)."""
    rig = rigs(PREFIX)
    rig.silence_endpoints()
    rig.prime_neighbors()
    if slicing:
        rig.attach("dut0", "dut1", name=DOMAIN)
    rt = roundtrip(rig, frames(rig.env), tmp, tag, SEED_REV)
    return rt, rig.stats(DOMAIN) if slicing else None


@pytest.fixture(scope="module")
def runs(rigs, tmp_path_factory):
    """(baseline, sliced, stats): the same traffic without and with slicing."""
    tmp = tmp_path_factory.mktemp("d63")
    off, _ = run_once(rigs, tmp, "off", False)
    on, stats = run_once(rigs, tmp, "on", True)
    return off, on, stats


def split(frames):
    """Indices of the frames below and at/above the threshold."""
    small = [i for i, f in enumerate(frames) if len(f) < THRESHOLD]
    large = [i for i, f in enumerate(frames) if len(f) >= THRESHOLD]
    return small, large


def pick(frames, idx):
    """The frames at indices IDX."""
    return [frames[i] for i in idx]


def test_all_marked_and_delivered(runs):
    """Every packet crosses both ways, with and without slicing, marked 63."""
    off, on, _ = runs
    for rt, what in ((off, "unsliced"), (on, "sliced")):
        assert_delivered(rt.fwd_sent, rt.fwd_got, f"client->server ({what})")
        assert_delivered(rt.rev_sent, rt.rev_got, f"server->client ({what})")
        for fr in rt.fwd_sent + rt.rev_sent:
            assert parse(fr).dscp == DSCP_SLICED
    small, large = split(off.fwd_sent)
    assert len(small) == 8 and len(large) == 12


def assert_delivered_as_unsliced(off, on, large):
    """The small (or LARGE) DSCP-63 packets of both directions arrived with
    DSCP 63, frame for frame as in the run without nfslice."""
    kind = "large" if large else "small"
    for d in ("fwd", "rev"):
        small, big = split(getattr(on, f"{d}_sent"))
        mine = big if large else small
        got = pick(getattr(on, f"{d}_got"), mine)
        assert all(parse(f).dscp == DSCP_SLICED for f in got)
        assert_same_frames(got, pick(getattr(off, f"{d}_got"), mine),
                           f"{kind} DSCP-63 packets ({d})")


def test_small_dscp63_passes_unchanged(runs):
    """Small DSCP-63 packets: untouched, each counted once as bad_token."""
    off, on, stats = runs
    assert_delivered_as_unsliced(off, on, large=False)
    n_small = sum(len(split(f)[0]) for f in (on.fwd_sent, on.rev_sent))
    # Skipped by the slicer (too small), then not ours at the splicer of
    # the egress interface: one bad_token per packet, nothing dropped.
    assert stats["skipped_small"] == n_small
    assert stats["bad_token"] == n_small
    assert (stats["replayed"], stats["stale"]) == (0, 0)


def test_large_dscp63_sliced_and_restored(runs):
    """Large DSCP-63 packets are sliced and spliced back with DSCP 63."""
    off, on, stats = runs
    assert_delivered_as_unsliced(off, on, large=True)
    want = predict(on.fwd_sent + on.rev_sent)
    assert want["sliced"] == 24
    assert {k: stats[k] for k in ("sliced", "spliced", "parked_bytes",
                                  "stale", "too_big", "replayed",
                                  "skipped_full", "skipped_big", "evicted")} \
        == {"sliced": 24, "spliced": 24, "parked_bytes": want["parked_bytes"],
            "stale": 0, "too_big": 0, "replayed": 0, "skipped_full": 0,
            "skipped_big": 0, "evicted": 0}
    assert stats["slots_busy"] == 0
    assert set(stats) == {"name", "slots", "slots_busy", *COUNTERS,
                          *MGR_COUNTERS, "route_cache_hit_rate"}
