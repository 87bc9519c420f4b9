# SPDX-License-Identifier: GPL-2.0
"""Upper devices (macvlan, vxlan) on a domain interface.

    cli  c0 ==== d0 [dut] d1 ==== s0  srv        (d0, d1: the domain)
                 |
                 +-- up0: macvlan on d0, or vxlan with `dev d0`

Why detach used to leave the slicer behind (issue 7, measured here on
027b010): the kernel refuses every change of a device's XDP program, the
removal too, while one of its upper devices has an XDP program of its own
(net/core/dev.c dev_xdp_attach: "Cannot attach when an upper device already
has a program", -EEXIST on RTM_SETLINK IFLA_XDP fd -1). macvlan and vxlan
(`dev d0` links it as an upper) both count. libxdp's xdp_program__detach
retries 11 times and gives up with -EEXIST; nfslice ignored that return
value, removed the splicers and the pins and said "detached", exit 0. The
slicer stayed on d0, still holding the store, and cut every large datagram
while no splicer ran anywhere: all of them arrived truncated. Re-attach
then fails ("d0 already belongs to a slicing domain") and detach finds no
domain: nothing recovers short of removing the XDP program by hand. An
upper without an XDP program does not block the removal.

Asserted:
- attach refuses an interface with a macvlan or a vxlan (`dev d0`) on it,
  naming the upper and the interface, and leaves nothing behind;
- an upper added after attach, with or without an XDP program of its own:
  detach either removes everything (exit 0, no XDP and no splicer on d0/d1)
  or exits non-zero naming d0; in no case does a datagram arrive truncated
  afterwards; once the blocker is gone, detach succeeds and cleans up.
"""

import pytest

from nfsl.rig import NFSLICE, ROOT, settle
from nfsl.tap import Lab, summarize

PORT = 5201
N = 50
SIZE = 1400
MAC = {"c0": "02:14:01:00:00:02", "d0": "02:14:01:00:00:01",
       "d1": "02:14:02:00:00:01", "s0": "02:14:02:00:00:02"}
IP = {"c0": "10.214.1.2", "d0": "10.214.1.1", "d1": "10.214.2.1",
      "s0": "10.214.2.2"}


@pytest.fixture(scope="module")
def xdp_pass():
    """A foreign XDP_PASS object (what another XDP user on the upper
    device would load): tests/integration/bpf/foreign_pass.bpf.c, built by
    make."""
    obj = ROOT / "build" / ".output" / "foreign_pass.bpf.o"
    assert obj.exists(), f"{obj} missing: build it with make"
    return obj


@pytest.fixture(scope="module")
def lab():
    """cli - dut - srv, routed, static neighbours; removed whatever
    happens."""
    lab = Lab("up", NFSLICE)
    try:
        lab.add("cli", "dut", "srv")
        lab.veth("cli", "c0", "dut", "d0", mac=MAC["c0"], peer_mac=MAC["d0"])
        lab.veth("dut", "d1", "srv", "s0", mac=MAC["d1"], peer_mac=MAC["s0"])
        for role, dev in (("cli", "c0"), ("dut", "d0"), ("dut", "d1"),
                          ("srv", "s0")):
            lab.addr(role, dev, f"{IP[dev]}/24")
        lab.sysctl("dut", "net.ipv4.ip_forward=1")
        lab.ip("cli", "route", "add", "default", "via", IP["d0"])
        lab.ip("srv", "route", "add", "default", "via", IP["d1"])
        for role, dev, peer in (("cli", "c0", "d0"), ("dut", "d0", "c0"),
                                ("dut", "d1", "s0"), ("srv", "s0", "d1")):
            lab.ip(role, "neigh", "replace", IP[peer], "lladdr", MAC[peer],
                   "dev", dev, "nud", "permanent")
        yield lab
    finally:
        errors = lab.destroy()
        assert not errors, "cleanup: " + "\n".join(errors)


@pytest.fixture
def clean(lab):
    """Per test: afterwards remove up0 (with its program), every domain
    and whatever a broken detach left on d0/d1 (XDP, clsact), so the next
    test starts from the bare topology. The test asserts on detach; this
    only cleans."""
    yield lab
    lab.ip("dut", "link", "del", "up0", check=False)
    lab.purge("dut")
    for dev in ("d0", "d1"):
        lab.ip("dut", "link", "set", "dev", dev, "xdp", "off", check=False)
        lab.host("tc", "-n", lab.ns("dut"), "qdisc", "del", "dev", dev,
                 "clsact", check=False)


def add_upper(lab, kind, xdp_obj=None):
    """up0 on d0: a macvlan (bridge mode) or a vxlan with `dev d0`; with
    XDP_OBJ, a foreign XDP program on it (generic mode)."""
    if kind == "macvlan":
        lab.ip("dut", "link", "add", "up0", "link", "d0", "type", "macvlan",
               "mode", "bridge")
    else:
        lab.ip("dut", "link", "add", "up0", "type", "vxlan", "id", "42",
               "dev", "d0", "local", IP["d0"], "dstport", "4789")
    lab.ip("dut", "link", "set", "up0", "up")
    if xdp_obj:
        lab.ip("dut", "link", "set", "dev", "up0", "xdpgeneric", "obj",
               str(xdp_obj), "sec", "xdp")


def traffic(lab):
    """N datagrams cli -> srv through d0 and d1 (wire-like frames, full
    checksums); the receiver's summary."""
    rcv = lab.helper("srv", "udp", "--bind", f"{IP['s0']},{PORT}",
                     "--expect", "1")
    snd = lab.helper("cli", "udp", "--flow", f"1,{IP['c0']},{IP['s0']},{PORT}",
                     "--count", str(N), "--rate", "1000", "--size", str(SIZE),
                     "--go", "--raw", f"c0,{MAC['c0']},{MAC['d0']}")
    lab.finish(snd, 20)
    return summarize(lab.finish(rcv, 10), [1])


def leftovers(lab):
    """nfslice programs still on d0/d1: ["d0: XDP ...", "d1: splicer"]."""
    left = []
    for dev in ("d0", "d1"):
        x = lab.link("dut", dev).get("xdp")
        if x:
            left.append(f"{dev}: XDP prog {x.get('prog', x)}")
        if [f for f in lab.tc_egress("dut", dev)
                if f.get("options", {}).get("bpf_name", "").startswith("nfsl")]:
            left.append(f"{dev}: splicer")
    return left


@pytest.mark.parametrize("kind", ["macvlan", "vxlan"])
def test_attach_refuses_upper(clean, kind):
    """An upper on d0 (a macvlan, or a vxlan with `dev d0`): attach fails,
    names up0 and d0, leaves nothing."""
    lab = clean
    add_upper(lab, kind)
    cp = lab.nfslice("dut", "attach", "d0", "d1")
    out = cp.stdout + cp.stderr
    left = leftovers(lab)
    status = lab.nfslice("dut", "status")
    assert cp.returncode != 0, (
        f"attach accepted d0 with the {kind} up0 on it: {out.strip()}")
    assert "up0" in cp.stderr and "d0" in cp.stderr, (
        f"the error should name the upper device (up0) and d0: {cp.stderr}")
    assert not left, f"a refused attach left {left}"
    assert status.returncode != 0, "a refused attach left a domain"


@pytest.mark.parametrize("kind", ["macvlan", "vxlan"])
def test_attach_refuses_upper_of_a_domain(clean, kind):
    """A second domain on up0 while d0 (its lower) is in a domain: refused,
    naming up0 and d0 (its XDP program would make d0's slicer unremovable);
    the first domain is untouched and still detaches."""
    lab = clean
    cp = lab.nfslice("dut", "attach", "d0", "d1")
    assert cp.returncode == 0, cp.stderr
    try:
        add_upper(lab, kind)
        cp = lab.nfslice("dut", "attach", "--name", "upper", "--mode", "skb",
                         "up0")
        assert cp.returncode == 1, cp.stdout + cp.stderr
        assert "'up0' sits on 'd0'" in cp.stderr, cp.stderr
        assert lab.link("dut", "up0").get("xdp") is None
    finally:
        lab.ip("dut", "link", "del", "up0", check=False)
        cp = lab.nfslice("dut", "detach")
    assert cp.returncode == 0, cp.stderr
    assert not leftovers(lab)


@pytest.mark.parametrize("kind,foreign_xdp", [
    pytest.param("macvlan", False, id="macvlan"),
    pytest.param("macvlan", True, id="macvlan-with-xdp"),
    pytest.param("vxlan", True, id="vxlan-with-xdp"),
])
def test_detach_with_upper_added_after_attach(clean, xdp_pass, kind,
                                              foreign_xdp):
    """detach: all gone, or a loud failure naming d0; never truncation."""
    lab = clean
    cp = lab.nfslice("dut", "attach", "d0", "d1")
    assert cp.returncode == 0, f"attach: {cp.stderr}"
    before = traffic(lab)
    stats = settle(lambda: lab.stats("dut"))
    assert before["good"] == N and stats["spliced"] == N, (before, stats)

    add_upper(lab, kind, xdp_pass if foreign_xdp else None)
    cp = lab.nfslice("dut", "detach")
    out = (cp.stdout + cp.stderr).strip()
    left = leftovers(lab)
    after = traffic(lab)
    msg = (f"{kind}{' with an XDP program' if foreign_xdp else ''} added on "
           f"d0 after attach; detach exit {cp.returncode}; left on the "
           f"interfaces: {left}; traffic after detach: {after}; detach said: "
           f"{out[-600:]!r}")
    if cp.returncode == 0:
        assert not left, "detach said it succeeded but left " + msg
    else:
        assert "d0" in cp.stderr, "a failed detach must name d0: " + msg
    assert after["truncated"] == 0, "truncated datagrams after detach: " + msg
    assert after["good"] == N and after["corrupt"] == 0, msg

    if cp.returncode != 0:
        # The blocker gone, a second detach must finish the job.
        lab.ip("dut", "link", "set", "dev", "up0", "xdpgeneric", "off")
        cp2 = lab.nfslice("dut", "detach")
        assert cp2.returncode == 0, (
            f"detach after removing up0's program: {cp2.stderr}; " + msg)
        assert not leftovers(lab), (leftovers(lab), msg)
        again = traffic(lab)
        assert again["good"] == N and again["truncated"] == 0, (again, msg)
