# SPDX-License-Identifier: GPL-2.0
"""Link changes around a domain (issue 7 section 1).

- The egress MTU lowered after attach: a datagram larger than the egress
  MTU is not sliced (skipped_mtu), so the kernel does what it does without
  nfslice: ICMP "fragmentation needed" / "packet too big" (the sender
  learns the path MTU, then gets EMSGSIZE), or fragmentation. Today such
  packets are sliced and then dropped silently as too_big.
- UDP GRO forwarding: attach turns rx-udp-gro-forwarding and rx-gro-list
  off on the domain's interfaces and detach restores them. Turned on again
  after attach, GRO merges sliced datagrams: such an aggregate must be
  dropped at the splicer and counted dropped_gso per segment, never sent
  on truncated (today every datagram arrives as 16 bytes).
- Upper devices: attach refuses an interface with an upper (macvlan,
  vxlan) and names it; detach checks the programs are gone and fails
  loudly when one is left (today it says "detached", exits 0 and leaves
  the slicer behind).

Topologies: nfinv.router(), kernel defaults, per-run namespace names.
"""
import pytest

from nfinv import (CLI4, CLI6, SRV4, SRV6, assert_intact,  # noqa: F401
                   counters, nets, router)
from nfsl.rig import ROOT, describe

# A foreign XDP program (tests/integration/bpf/foreign_pass.bpf.c, make).
FOREIGN_PASS = ROOT / "build" / ".output" / "foreign_pass.bpf.o"

GRO_FEATURES = ("rx-udp-gro-forwarding", "rx-gro-list")


# ------------------------------------------------------------------- MTU --
def test_egress_mtu_lowered_after_attach(nets):
    """dut1's MTU drops from 1500 to 1280 after attach; the client sends
    1400 B datagrams (1428/1448 B packets, below the 1500 B MTU the domain
    had at attach):

    - IPv4 without DF (IP_PMTUDISC_DONT) first: the DUT fragments, all 10
      arrive whole;
    - with DF (IP_PMTUDISC_DO), IPv4 and IPv6: the first datagram brings
      back ICMP and the sender's path MTU becomes 1280; the next two fail
      with EMSGSIZE (exactly what happens without nfslice);
    - IPv6, path MTU known now: the client fragments, all 10 arrive whole.

    Nothing arrives truncated; the 12 unfragmented datagrams larger than
    the egress MTU that reached the DUT are counted skipped_mtu, none is
    sliced or dropped as too_big."""
    net = nets(router, "mtu")
    net.attach("dut0", "dut1", name="mtu")
    net.ip("dut", "link", "set", "dut1", "mtu", 1280)
    port, size, seed = 7003, 1400, 31
    # The receiver ends at 20 datagrams; its idle limit only bounds a
    # failure, and must outlast the probes' ICMP round trips on a busy
    # machine (at 1 s it closed between the IPv4 and IPv6 sends, and the
    # IPv6 datagrams met ECONNREFUSED).
    rx = net.receiver("srv", port, 20, size, seed, idle=10)
    # Before any ICMP taught the client the path MTU: whole 1428 B
    # packets without DF reach the DUT.
    frag4 = net.send("cli", SRV4, port, 10, size, seed, "--pmtu", "dont")
    probes = {h: net.send("cli", h, port, 3, size, seed, "--pmtu", "do",
                          "--probe-mtu", "--first", 100 + 10 * i)
              for i, h in enumerate((SRV4, SRV6))}
    for h, p in probes.items():
        assert (p["mtu_after"], p["sent"], p["errors"]) == \
            (1280, 1, {"EMSGSIZE": 2}), \
            f"DF datagrams to {h}: no ICMP came back to the sender ({p})"
    frag6 = net.send("cli", SRV6, port, 10, size, seed, "--pmtu", "want",
                     "--first", 10)
    assert (frag4["sent"], frag6["sent"]) == (10, 10), (frag4, frag6)
    res = net.result(rx)
    assert_intact(res, 20, "fragmented datagrams")
    st = net.stats("mtu")
    assert counters(st, "skipped_mtu", "sliced", "too_big") == \
        {"skipped_mtu": 12, "sliced": 0, "too_big": 0}, st


# ------------------------------------------------------------------- GRO --
def test_attach_turns_udp_gro_forwarding_off(nets):
    """rx-udp-gro-forwarding and rx-gro-list switched on before attach are
    off on both domain interfaces while attached and on again after
    detach."""
    net = nets(router, "grof")
    devs = ("dut0", "dut1")

    def state():
        return {d: {f: net.features("dut", d)[f] for f in GRO_FEATURES}
                for d in devs}
    for d in devs:
        net.sh("dut", "ethtool", "-K", d, "gro", "on",
               "rx-udp-gro-forwarding", "on", "rx-gro-list", "on")
    on = {d: {f: "on" for f in GRO_FEATURES} for d in devs}
    assert state() == on
    net.attach("dut0", "dut1", name="grof")
    assert state() == {d: {f: "off" for f in GRO_FEATURES} for d in devs}, \
        "attach left UDP GRO forwarding on a domain interface"
    net.detach("grof")
    assert state() == on, "detach did not restore the GRO features"


def test_udp_gro_forwarding_on_after_attach(nets):
    """Someone turns GRO + rx-udp-gro-forwarding on dut0 after attach. The
    client sends 2 x 1000 datagrams of 1000 B with UDP GSO (trains of 40):
    GRO on dut0 merges the sliced datagrams. Every datagram either arrives
    whole or is dropped and counted dropped_gso; none arrives truncated
    and every parked payload is accounted for (spliced or dropped_gso)."""
    net = nets(router, "gro")
    net.attach("dut0", "dut1", name="gro")
    net.sh("dut", "ethtool", "-K", "dut0", "gro", "on",
           "rx-udp-gro-forwarding", "on")
    total = 2000
    res, sent = net.flow("cli", "srv", [SRV4, SRV6], 7004, total // 2, 1000,
                         32, send_opts=("--gso", 40))
    assert [s["sent"] for s in sent] == [total // 2] * 2, sent
    st = net.stats("gro")
    assert res["truncated"] == 0, (
        f"{res['truncated']} of {total} datagrams arrived truncated "
        f"(lengths {sorted(set(res['trunc_lens']))}); stats {st}")
    assert (res["corrupt"], res["duplicate"]) == (0, 0), res
    dropped = st.get("dropped_gso")
    assert dropped is not None, f"no dropped_gso counter: {st}"
    assert res["intact"] + dropped == total, (res, st)
    assert st["sliced"] == st["spliced"] + dropped == total, st
    assert st["spliced"] == res["intact"], st


# ------------------------------------------------------------------ uppers --
def add_upper(net, kind, name="up0", lower="dut1"):
    """An upper device NAME of LOWER in the DUT: a macvlan, or a vxlan
    bound to it (dev LOWER)."""
    if kind == "macvlan":
        net.ip("dut", "link", "add", name, "link", lower, "type", "macvlan",
               "mode", "bridge")
    else:
        net.ip("dut", "link", "add", name, "type", "vxlan", "id", 42,
               "local", "10.77.2.1", "remote", SRV4, "dstport", 4789, "dev",
               lower)
    net.ip("dut", "link", "set", name, "up")


@pytest.mark.parametrize("kind", ["macvlan", "vxlan"])
def test_attach_refuses_interface_with_upper(nets, kind):
    """dut1 has an upper device up0: attach fails, names up0, and leaves
    no program and no pins behind."""
    net = nets(router, "upr")
    add_upper(net, kind)
    cp = net.nfslice("attach", "--name", "upr", "dut0", "dut1")
    assert cp.returncode != 0, \
        f"attach accepted dut1 with the {kind} upper up0:\n{describe(cp)}"
    assert "up0" in cp.stderr, f"the error does not name up0:\n{describe(cp)}"
    for d in ("dut0", "dut1", "up0"):
        assert net.programs("dut", d) == (None, []), f"{d} kept a program"
    assert net.nfslice("status", "--name", "upr").returncode != 0


def test_detach_fails_loudly_when_a_program_stays(nets):
    """After attach, a macvlan up0 appears on dut1 with an XDP program of
    its own: the kernel then refuses to change dut1's XDP program. detach
    must not report success while the slicer is still on dut1 (today it
    does, and the pins are gone: nothing can remove it any more). While
    it stays, traffic it slices is still spliced; once up0 is gone, detach
    again removes everything."""
    net = nets(router, "dtc")
    net.attach("dut0", "dut1", name="dtc")
    add_upper(net, "macvlan")
    net.ip("dut", "link", "set", "up0", "xdpgeneric", "obj",
           FOREIGN_PASS, "sec", "xdp")

    def left():
        progs = {d: net.programs("dut", d) for d in ("dut0", "dut1")}
        return sorted(d for d, p in progs.items() if p != (None, []))
    cp = net.nfslice("detach", "--name", "dtc")
    stayed = left()
    if stayed:
        assert cp.returncode != 0, \
            f"detach reported success, programs left on {stayed}:\n" \
            f"{describe(cp)}"
        assert "dut1" in cp.stderr, \
            f"the error does not name dut1:\n{describe(cp)}"
        # The slicer on dut1 still slices what the server sends the
        # client: a splicer must still be there to restore it.
        res, _ = net.flow("srv", "cli", [CLI4, CLI6], 7006, 10, 1000, 33)
        assert_intact(res, 20, "server -> client after a failed detach")
    net.ip("dut", "link", "del", "up0")
    if stayed:
        cp = net.nfslice("detach", "--name", "dtc")
        assert cp.returncode == 0 and not left(), \
            f"detach again, up0 gone: programs left on {left()}\n" \
            f"{describe(cp)}"
