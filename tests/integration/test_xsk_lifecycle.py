# SPDX-License-Identifier: GPL-2.0
"""nfslice-nf's AF_XDP datapath (test_xsk.py says what every test checks):
its life cycle. 5. shutdown under traffic, 6. bad arguments, 7. SIGKILL
and restart, taking over stale steering. Rig and helpers:
xsk_fixtures.py."""
import signal
import struct

import pytest

from nfsl import pkt as nfpkt
from nfsl.rig import poll, run
from nfxsk import ROOT, SINK4, datagram, l4_valid, swap_macs
from xsk_fixtures import (
    DOMAIN, WORKERS, XDP_PASS_OBJ, assert_unhooked, crafted, delta,
    nf_total_clean, rig, xr)


# ------------------------------------------- 5. shutdown under traffic --
SHUT_N = 6000
SHUT_RATE = 6000
SHUT_CASES = (("privring", signal.SIGTERM, False),
              ("smallpriv", signal.SIGINT, True),
              ("shring", signal.SIGTERM, True),
              ("rxbisect", signal.SIGINT, False))


@pytest.mark.parametrize("mode,sig,v6", SHUT_CASES,
                         ids=[f"{m}-{s.name}-{'v6' if v else 'v4'}"
                              for m, s, v in SHUT_CASES])
def test_shutdown_under_traffic(xr, mode, sig, v6):
    """SHUT_N stamped 1000 B frames at SHUT_RATE pps through the domain;
    the NF is signalled once a third was sliced. The sink gets every frame
    exactly once, intact: spliced by the NF before it left, by the tc
    splicer after (kernel forwarding). Then no chain entry, no steering
    program."""
    xr.attach(DOMAIN)
    st0 = xr.stats(DOMAIN)
    nf = xr.start_nf("--workers", WORKERS, "--rx", mode, name=DOMAIN)
    prog = xr.chain_prog_id(DOMAIN)
    cap = xr.capture(SHUT_N, bpf="udp dst port 5201")
    pg, out = xr.pktgen("--flows", 16, "--size", 1000, "--rate", SHUT_RATE,
                        "--count", SHUT_N, "--stamp",
                        *(("--ipv6",) if v6 else ()), background=True)
    poll(lambda: xr.stats(DOMAIN)["sliced"] - st0["sliced"] >= SHUT_N // 3,
         10, f"{SHUT_N // 3} frames sliced")
    rep = nf.stop(sig)
    pg.wait(timeout=30)
    xr.forget(pg)
    got = cap.finish(15)
    txt = out.read_text()
    assert pg.returncode == 0, txt
    seqs, bad = [], []
    for f in got:
        p = nfpkt.parse(f)
        seqs.append(struct.unpack(">Q", p.payload[:8])[0])
        if len(f) != 1000 or any(p.payload[16:]) or not l4_valid(f):
            bad.append(f.hex())
    st = delta(xr.stats(DOMAIN), st0)
    t = rep["total"]
    what = f"{mode}, {sig.name}: NF {t}, domain {st}"
    assert not bad, f"{what}: {len(bad)} frames changed, e.g. {bad[0][:200]}"
    assert sorted(seqs) == list(range(SHUT_N)), \
        f"{what}: {len(seqs)} frames, {len(set(seqs))} distinct of {SHUT_N}"
    assert st["sliced"] == SHUT_N and st["stale"] == 0, what
    assert t["spliced"] + st["spliced"] == SHUT_N, what
    # Stopped in the middle: both paths carried frames.
    assert t["spliced"] > 0 and st["spliced"] > 0, what
    assert (t["stale"], t["too_big"], t["no_room"], t["tx_full"],
            t["drops"]) == (0, 0, 0, 0, 0), what
    assert xr.stats(DOMAIN)["slots_busy"] == 0
    assert_unhooked(xr, DOMAIN)
    cp = run(["bpftool", "prog", "show", "id", prog])
    assert cp.returncode != 0, \
        f"the NF's steering program {prog} outlived it: {cp.stdout}"
    assert xr.status(DOMAIN)["healthy"] is True


# --------------------------------------------------------- 6. bad args --
def _xdp_pass_on_d1(r):
    """A foreign XDP program on d1 (pktgen's xdp_pass)."""
    r.ip("dut", "link", "set", "dev", "d1", "xdpdrv", "obj", XDP_PASS_OBJ,
         "sec", "xdp", "program", "xdp_pass")


def _slicer_on_both(r):
    r.attach(DOMAIN)


def _slicer_on_d0(r):
    r.attach(DOMAIN, devs=("d0",))


# (id, setup, args, exit status, words the message must hold)
BAD = (
    ("rx-bogus", None, ("--dev", "d0,d1", "--rx", "bogus"), 2,
     ("bogus", "privring", "rxbisect")),
    ("ax-not-pow2", None, ("--dev", "d0,d1", "--rx", "smallpriv", "--ax",
                           "100"), 2, ("--ax 100", "powers of two")),
    ("privring-3-workers", None, ("--dev", "d0,d1", "--rx", "privring",
                                  "--workers", "3"), 2,
     ("d0 has 2", "3 workers", "numrxqueues 3", "rxbisect")),
    ("name-missing", None, ("--dev", "d0,d1", "--name", "missing"), 2,
     ("no domain missing", "nfslice attach --name missing")),
    ("dev-missing", None, ("--dev", "no-such"), 2,
     ("no interface no-such", "namespace")),
    ("second-dev-missing", None, ("--dev", "d0,no-such"), 2,
     ("no interface no-such",)),
    ("foreign-xdp", _xdp_pass_on_d1, ("--dev", "d0,d1"), 1,
     ("d1", "xdp_pass", "detach it first")),
    ("sliced-without-name", _slicer_on_both, ("--dev", "d0,d1"), 1,
     ("d0", "nfsl_slicer", "--name")),
    ("cpu-not-ours", None, ("--dev", "d0,d1", "--cpu", "1000",
                            "--duration", "1"), 2,
     ("--cpu 1000", "cannot run on CPU 1000", "give one of the CPUs",
      "/sys/devices/system/cpu/online")),
    ("dev-outside-domain", _slicer_on_d0, ("--dev", "d0,d1", "--name",
                                           DOMAIN), 2,
     ("d1 is not a sliced interface of domain " + DOMAIN, "nfslice attach")),
)


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_arguments(xr, case):
    """Refused with the right exit status and a message naming the problem
    and the fix; what was on the interfaces before is there after, nothing
    of the NF's (no steering program, no chain entry)."""
    _, setup, args, rc, words = case
    if setup:
        setup(xr)
    before = {d: (xr.link("dut", d).get("xdp") or {}).get("prog", {})
              .get("id") for d in ("d0", "d1")}
    cp = xr.nf_cmd(*args)
    msg = cp.stderr.strip()
    assert cp.returncode == rc, f"exit {cp.returncode}: {msg}"
    assert msg.startswith("nfslice-nf: ") and "\n" not in msg, msg
    missing = [w for w in words if w not in msg]
    assert not missing, f"the message lacks {missing}: {msg}"
    after = {d: (xr.link("dut", d).get("xdp") or {}).get("prog", {})
             .get("id") for d in ("d0", "d1")}
    assert after == before, f"XDP programs changed: {before} -> {after}"
    if xr.pin_dir(DOMAIN).exists():
        assert xr.chain(DOMAIN) == []
    if "nfslice attach" in msg:
        # A command the message suggests must be one nfslice accepts: its
        # options exist (attach takes interfaces as arguments).
        hint = msg[msg.index("nfslice attach"):]
        for opt in [w.strip("().,;'") for w in hint.split()
                    if w.startswith("--")]:
            assert opt in _attach_options(), \
                f"the message suggests 'nfslice attach {opt}', an option " \
                f"attach does not have: {msg}"


def _attach_options():
    from nfsl.rig import NFSLICE
    out = run([NFSLICE, "attach", "--help"]).stdout
    return {w.split("=")[0] for w in out.split() if w.startswith("--")}


# --------------------------------------------- 7. SIGKILL, then restart --
STEER_OBJ = ROOT / "build" / ".output" / "steer.bpf.o"
KILL_N = 200    # datagrams sent while the NF is dead
GAP_PORT = 7003


def _gap_traffic(xr, what):
    """KILL_N 1000 B datagrams from a kernel socket while no NF runs: every
    one reaches the sink intact (the kernel forwards them; in a domain the
    tc splicer puts the payloads back), none lost to a dead steering
    program."""
    cap = xr.capture(KILL_N, bpf=f"udp dst port {GAP_PORT}")
    res = xr.udpsend(SINK4, GAP_PORT, KILL_N, 1000, flows=4, seed=3)
    got = cap.finish(15)
    assert res["sent"] == KILL_N and len(got) == KILL_N, \
        f"{what}: {len(got)} of {KILL_N} datagrams arrived while the NF " \
        f"was dead; sender {res}"
    assert sorted(nfpkt.parse(f).payload for f in got) == \
        sorted(datagram(3, i, 1000) for i in range(KILL_N)), what


@pytest.mark.parametrize("domain", (False, True), ids=("no-domain", "domain"))
def test_sigkill_restart(xr, domain):
    """nfslice-nf killed with SIGKILL (no cleanup of its own) restarts with
    the same command. Without a domain its steering was attached through
    bpf_links the process owned: the kernel detached it at the death (d0
    and d1 have no XDP program), so frames take the kernel path until the
    restart. In a domain the dead NF's program stays in the chain map,
    finds no socket and passes every frame on (tc splicer); the restart
    replaces it, saying it was a gone NF's, and the old program is freed.
    After the restart the crafted frames cross the new NF exactly."""
    name = DOMAIN if domain else None
    if domain:
        xr.attach(DOMAIN)
    args = ("--workers", WORKERS, "--rx", "rxbisect")
    nf = xr.start_nf(*args, name=name)
    old = xr.chain_prog_id(DOMAIN) if domain else None
    nf.kill(signal.SIGKILL)
    assert nf.proc.wait(timeout=10) == -signal.SIGKILL
    xr.forget(nf.proc)
    if domain:
        assert xr.chain_prog_id(DOMAIN) == old, "the chain entry went away"
    else:
        poll(lambda: [xr.xdp_prog("dut", d) for d in ("d0", "d1")] ==
             [None, None], 2, "the kernel detaching the dead NF's steering")
    _gap_traffic(xr, "dead NF")
    st0 = xr.stats(DOMAIN) if domain else None
    # In a domain, ready means the chain entry changed (it never emptied).
    nf = xr.start_nf(*args, name=name, ready=not domain)
    if domain:
        def replaced():
            assert nf.alive(), nf.describe()
            return xr.chain_prog_id(DOMAIN) != old
        poll(replaced, 15, "the restarted NF's steering in the chain")
        assert \
            f"replacing the steering program id {old} of an nfslice-nf " \
            "that is gone" in nf.stderr(), nf.describe()
        cp = run(["bpftool", "prog", "show", "id", old])
        assert cp.returncode != 0, f"the dead NF's program {old} lives on"
    frames = crafted()
    cap = xr.capture(len(frames))
    xr.send_frames(frames)
    got = cap.finish(10)
    rep = nf.stop()
    what = f"restarted NF, {'domain' if domain else 'no domain'}"
    assert len(got) == len(frames), f"{what}: {len(got)} arrived; {rep}"
    assert nfpkt.first_difference(sorted(got), sorted(
        swap_macs(f) for f in frames)) is None, what
    nf_total_clean(rep, len(frames), what)
    assert rep["total"]["spliced"] == (len(frames) // 2 if domain else 0), \
        f"{what}: {rep['total']}"
    if domain:
        st = delta(xr.stats(DOMAIN), st0)
        assert (st["sliced"], st["spliced"], st["stale"]) == \
            (len(frames) // 2, 0, 0), f"{what}: {st}"
    assert_unhooked(xr, name)


def test_takes_over_stale_steering(xr):
    """An nfsl_steer program left attached through netlink by an NF that
    died (what an nfslice-nf before bpf_links left after SIGKILL) and held
    by no process is taken over with a notice, and frames then cross the
    NF exactly."""
    for dev in ("d0", "d1"):
        xr.ip("dut", "link", "set", "dev", dev, "xdpdrv", "obj", STEER_OBJ,
              "sec", "xdp", "program", "nfsl_steer")
    stale = {d: xr.link("dut", d)["xdp"]["prog"]["id"] for d in ("d0", "d1")}
    nf = xr.start_nf("--workers", WORKERS, "--rx", "rxbisect", ready=False)

    def ours():
        assert nf.alive(), nf.describe()
        return all((xr.link("dut", d).get("xdp") or {}).get("prog", {}).get(
            "id", i) != i for d, i in stale.items())
    poll(ours, 15, "the NF's own steering on d0 and d1")
    for d, i in stale.items():
        assert f"{d}: took over from a steering program (id {i}) that no " \
            "process holds" in nf.stderr(), nf.describe()
    assert [xr.xdp_prog("dut", d) for d in ("d0", "d1")] == \
        ["nfsl_steer"] * 2
    frames = crafted()
    cap = xr.capture(len(frames))
    xr.send_frames(frames)
    got = cap.finish(10)
    rep = nf.stop()
    assert len(got) == len(frames), f"{len(got)} arrived; {rep}"
    nf_total_clean(rep, len(frames), "after the take-over")
    assert_unhooked(xr)
