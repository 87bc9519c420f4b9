# SPDX-License-Identifier: GPL-2.0
"""The rig, fixtures and helpers of the AF_XDP NF tests (test_xsk*.py):
the module's nfxsk.XRig, crafted frames, the NF's totals and the check
that nothing of the NF's is left on the interfaces."""
import pytest

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from nfsl import pkt as nfpkt
from nfxsk import GEN4, GEN6, MACS, NF, PKTGEN, ROOT, SINK4, SINK6, THRESHOLD, XRig


MODES = ("privring", "smallpriv", "shring", "rxbisect")
DOMAIN = "xk"
WORKERS = 2
FLOWS = 6               # flows per (family, protocol) in the crafted lists
BIG, SMALL = 1400, 100  # payload bytes: sliced / below the threshold
XDP_PASS_OBJ = ROOT / "build" / ".output" / "xdp_pass.bpf.o"


# ----------------------------------------------------------------- rig --
@pytest.fixture(scope="module")
def rig():
    for exe in (NF, PKTGEN):
        if not exe.exists():
            pytest.fail(f"{exe} is missing: build it with make")
    r = XRig("xk", queues=2).up()
    yield r
    r.destroy()


@pytest.fixture
def xr(rig):
    """The module's rig, clean after the test: no process of ours
    running, no domain attached, no XDP program on d0/d1."""
    yield rig
    rig.reset()


def delta(after, before):
    """Counters of domain stats AFTER minus BEFORE (ints only)."""
    return {k: v - before.get(k, 0) for k, v in after.items()
            if isinstance(v, int) and not isinstance(v, bool)}


def crafted(seed=8):
    """gen -> sink frames: FLOWS flows of each family and protocol, each
    one BIG and one SMALL segment (seeded payloads, scapy checksums). Only
    the BIG ones reach the slicing threshold."""
    import random
    rng = random.Random(seed)
    frames = []
    for v6 in (False, True):
        for proto in ("udp", "tcp"):
            for i in range(FLOWS):
                sport = 41000 + 100 * v6 + 10 * (proto == "tcp") + i
                seq = 1000
                for n in (BIG, SMALL):
                    l3 = (IPv6(src=GEN6, dst=SINK6, hlim=64) if v6 else
                          IP(src=GEN4, dst=SINK4, ttl=64, id=len(frames)))
                    l4 = (UDP(sport=sport, dport=7001) if proto == "udp" else
                          TCP(sport=sport, dport=7001, seq=seq, ack=1,
                              flags="PA", window=1024))
                    frames.append(bytes(
                        Ether(src=MACS["g0"], dst=MACS["d0"]) / l3 / l4 /
                        Raw(rng.randbytes(n))))
                    seq += n
    big = sum(len(nfpkt.parse(f).payload) == BIG for f in frames)
    assert big == len(frames) // 2 and \
        all(len(f) < THRESHOLD for f in frames
            if len(nfpkt.parse(f).payload) == SMALL)
    return frames


def nf_total_clean(rep, n, what):
    """The NF received and sent exactly N frames, dropped none."""
    t = rep["total"]
    got = {k: t[k] for k in ("rx", "tx", "drops", "tx_full", "stale",
                             "too_big", "no_room")}
    assert got == {"rx": n, "tx": n, "drops": 0, "tx_full": 0, "stale": 0,
                   "too_big": 0, "no_room": 0}, f"{what}: {rep}"
    assert rep["steer"]["steered"] == n, f"{what}: steer {rep['steer']}"


def assert_unhooked(r, name=None):
    """After the NF exited: no steering left. In a domain, its chain map
    is empty and the slicer is still on d0 and d1; else d0 and d1 have no
    XDP program at all."""
    if name:
        assert r.chain(name) == [], f"chain map of {name}: {r.chain(name)}"
        assert [r.xdp_prog("dut", d) for d in ("d0", "d1")] == \
            ["nfsl_slicer"] * 2
    else:
        assert [r.xdp_prog("dut", d) for d in ("d0", "d1")] == [None, None]
