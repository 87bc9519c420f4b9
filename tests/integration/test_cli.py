# SPDX-License-Identifier: GPL-2.0
"""The nfslice CLI: errors, status/stats JSON, pins, namespaces, cleanup.

Errors must name the problem and the fix and exit 1 (2 for bad usage), and
must change nothing. attach/detach must leave the interfaces exactly as
`ip link` and `tc` showed them before. One rig for the module; each test
attaches its own domain and detaches it (the rig finalizer detaches
whatever a failing test left).
"""
import json
import os

import pytest

from nfrig import COUNTERS, describe, name, poll, run

PREFIX = name("cli")
PIN_NAMES = {"store", "config", "counters", "cursor", "splicer", "netns"}


@pytest.fixture(scope="module")
def rig(rigs):
    """The module's rig, with no slicing domain."""
    return rigs(PREFIX)


@pytest.fixture
def clean(rig):
    """Assert, before and after the test, that DUT interfaces are bare.

    Every test starts from interfaces without XDP and without clsact, and
    must leave them so (tests that attach detach themselves).
    """
    def leftovers():
        found = []
        for dev in ("dut0", "dut1"):
            if rig.xdp("dut", dev) is not None:
                found.append(f"XDP left on {dev}")
            if "clsact" in rig.qdisc_kinds("dut", dev):
                found.append(f"clsact left on {dev}")
        return found
    assert leftovers() == []
    yield rig
    found = leftovers()
    if found:
        # Report it, but clean up first so the next tests do not fail
        # for this one's leftovers.
        rig.detach_all()
        for dev in ("dut0", "dut1"):
            rig.exec("dut", "ip", "link", "set", "dev", dev, "xdp", "off")
            rig.exec("dut", "tc", "qdisc", "del", "dev", dev, "clsact")
    assert found == []


@pytest.fixture
def domain(clean):
    """Factory: domain(NAME, *IFACES) attaches in the DUT; detached after.

    Tests may detach it themselves; anything still attached at the end is
    detached here so the next test starts clean.
    """
    rig = clean
    names = []

    def attach(name, *ifaces, opts=()):
        names.append(name)
        return rig.attach(*ifaces, name=name, opts=opts)

    yield attach
    for name in names:
        if rig.pin_dir(name).exists():
            rig.detach(name)


def possible_cpus():
    """Number of possible CPUs (what libbpf sizes per-CPU maps by)."""
    n = 0
    with open("/sys/devices/system/cpu/possible") as f:
        for part in f.read().strip().split(","):
            lo, _, hi = part.partition("-")
            n += int(hi or lo) - int(lo) + 1
    return n


def assert_error(cp, rc, *needles):
    """CP failed with exit status RC and its stderr contains every NEEDLE."""
    assert cp.returncode == rc, f"exit {cp.returncode}, stderr: {cp.stderr}"
    assert cp.stdout == "", f"an error printed to stdout: {cp.stdout}"
    for n in needles:
        assert n in cp.stderr, f"{n!r} not in stderr: {cp.stderr}"


# ------------------------------------------------------------- errors --
def test_unknown_interface(clean):
    """An interface missing in this namespace is named, with `ip link`."""
    cp = clean.nfslice("attach", "--name", "x", "dut0", "nope0")
    assert_error(cp, 1, "unknown interface 'nope0' in this network namespace",
                 "ip link")
    assert not clean.pin_dir("x").exists()


def test_name_already_attached(clean, domain):
    """A second attach of a NAME says so, with the detach command."""
    domain("same", "dut0")
    cp = clean.nfslice("attach", "--name", "same", "dut1")
    assert_error(cp, 1, "domain 'same' is already attached in this network "
                 "namespace", "detach it first: nfslice detach --name same")
    # The first domain is untouched and nothing reached dut1.
    assert [i["name"] for i in clean.status("same")["interfaces"]] == ["dut0"]
    assert clean.xdp("dut", "dut1") is None


def test_interface_in_another_domain(clean, domain):
    """An interface can slice for one domain only."""
    domain("first", "dut0")
    cp = clean.nfslice("attach", "--name", "second", "dut1", "dut0")
    assert_error(cp, 1, "interface 'dut0' already belongs to a slicing domain",
                 "detach that domain first")
    assert not clean.pin_dir("second").exists()
    assert clean.xdp("dut", "dut1") is None


@pytest.mark.parametrize("args, caps", [
    (("attach", "--name", "np", "dut0"),
     "CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_BPF"),
    (("detach", "--name", "np"), "CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_BPF"),
    (("repair", "--name", "np"), "CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_BPF"),
    (("status", "--name", "np"), "CAP_SYS_ADMIN, CAP_BPF"),
    (("stats", "--name", "np"), "CAP_BPF"),
    (("list",), "CAP_SYS_ADMIN, CAP_BPF"),
    (("gc",), "CAP_SYS_ADMIN, CAP_BPF"),
], ids=lambda a: a[0] if isinstance(a, tuple) else "")
def test_not_root(clean, args, caps):
    """As nobody (no capabilities), every command names the capabilities
    it misses, why it needs them, and how to get them."""
    cp = clean.nfslice(*args, nobody=True)
    assert_error(cp, 1, f"nfslice {args[0]}: missing capabilit",
                 caps + " (", "run it as root (e.g. with sudo)",
                 "AmbientCapabilities=")
    assert not clean.pin_dir("np").exists()


@pytest.mark.parametrize("args", [
    ("attach", "--name", "nb", "dut0"), ("detach", "--name", "nb"),
    ("status", "--name", "nb"), ("stats", "--name", "nb"),
], ids=lambda a: a[0])
def test_no_bpffs(clean, args):
    """A bpffs location that is no bpffs is named, with the mount command."""
    cp = clean.nfslice(*args, env={"NFSLICE_BPFFS": "/tmp"})
    assert_error(cp, 1, "no bpffs at /tmp", "mount -t bpf bpf /tmp")
    assert not clean.pin_dir("nb").exists()


@pytest.mark.parametrize("args, needles", [
    (("--slots", "12x"), ("--slots '12x' is not valid",
                          "give a whole number of N from 1 to")),
    (("--mode", "foo"), ("--mode 'foo' is not valid",
                         "choose one of native, skb")),
    (("--keep", "999"), ("--keep '999' is not valid",
                         "give a whole number of BYTES from 0 to 192")),
    (("--threshold",), ("option --threshold needs a value",)),
    (("--color", "red"), ("unknown option '--color'",
                          "See 'nfslice attach --help'")),
    ((), ("missing IFACE...", "Usage: nfslice attach")),
], ids=["slots", "mode", "keep", "no-value", "unknown-option", "no-iface"])
def test_bad_usage(clean, args, needles):
    """Bad option values are named with the accepted range: exit 2."""
    ifaces = ("dut0",) if args else ()
    # Options after the interface: getopt permutes, and a value-less
    # option must be the last word to be value-less.
    cp = clean.nfslice("attach", "--name", "bad", *ifaces, *args)
    assert_error(cp, 2, *needles)
    assert not clean.pin_dir("bad").exists()


@pytest.mark.parametrize("cmd", ["attach", "status", "detach"])
def test_invalid_domain_name(clean, cmd):
    """A NAME that cannot be a pin directory is refused, with the rule."""
    cp = clean.nfslice(cmd, "--name", "a/b", *(("dut0",) if cmd == "attach"
                                               else ()))
    assert_error(cp, 1, "invalid domain name 'a/b'",
                 "use 1-63 letters, digits, '_', '-' or '.'")


def test_too_few_slots(clean):
    """Fewer slots than CPU partitions: the minimum is named (exit 1).

    Skipped on a one-CPU machine, where one slot is a valid store.
    """
    ncpus = possible_cpus()
    if ncpus < 2:
        pytest.skip("one CPU: --slots 1 is valid")
    cp = clean.nfslice("attach", "--name", "few", "--slots", "1", "dut0")
    assert_error(cp, 1, "--slots 1 is too small",
                 f"each of the {ncpus} CPUs allocates from its own partition",
                 f"give at least {ncpus}")
    assert not clean.pin_dir("few").exists()


def test_unknown_command(clean):
    """An unknown command is bad usage too."""
    assert_error(clean.nfslice("atach", "dut0"), 2,
                 "unknown command 'atach'", "Commands:")


def test_detach_unknown_domain(clean):
    """Detach is idempotent: a domain that is not there is nothing to do."""
    cp = clean.nfslice("detach", "--name", "ghost")
    assert cp.returncode == 0, describe(cp)
    assert cp.stdout == ("nfslice: no domain 'ghost' in this network "
                         "namespace; nothing to detach\n")


# --------------------------------------------------- status and stats --
def test_status_json(clean, domain):
    """status --json: config, pins that exist, both hooks on both veths."""
    rig = clean
    domain("st", "dut0", "dut1")
    st = rig.status("st")
    # The pin directory is the one the netns cookie names (docs/platform.md:
    # per-netns pins in the host's bpffs).
    assert st["name"] == "st"
    assert st["dir"] == str(rig.pin_dir("st"))
    assert set(st["pins"]) == PIN_NAMES
    for pin, path in st["pins"].items():
        assert path == f"{st['dir']}/{pin}"
        assert os.path.isfile(path), f"pin {path} missing"
    assert (st["threshold"], st["keep"], st["expiry"]) == (256, 0, 2)
    # 4096 slots split evenly among the per-CPU partitions.
    assert st["partitions"] == possible_cpus()
    assert st["slots"] == 4096 // st["partitions"] * st["partitions"]
    # attach set be_liberal (the rig leaves the kernel default 0)
    assert st["ct_liberal_set"] is True
    assert [i["name"] for i in st["interfaces"]] == ["dut0", "dut1"]
    for i in st["interfaces"]:
        assert i["xdp"] == "native" and i["tc_egress"] is True
        assert i["nf_port"] is False
        # The ids nfslice reports are the programs the kernel has there.
        assert i["xdp_prog_id"] == rig.xdp("dut", i["name"])["prog"]["id"]
        filters = [f for f in rig.egress_filters("dut", i["name"])
                   if "options" in f]
        assert [f["options"]["prog"]["id"] for f in filters] == \
            [i["tc_prog_id"]]
    # One splicer program, shared by every interface of the domain.
    assert st["interfaces"][0]["tc_prog_id"] == st["interfaces"][1]["tc_prog_id"]


def test_stats_json(clean, domain):
    """stats --json: exactly the counters, the name, slots and slots_busy."""
    domain("sj", "dut0", "dut1")
    s = clean.stats("sj")
    assert set(s) == {"name", "slots", "slots_busy", *COUNTERS}
    assert s["name"] == "sj"
    assert s["slots"] == clean.status("sj")["slots"]
    assert s["slots_busy"] == 0
    # No TCP/UDP crossed the rig yet (the endpoints' IPv6 router
    # solicitations may count as unparsed).
    assert {k: s[k] for k in COUNTERS if k != "unparsed"} == \
        dict.fromkeys((k for k in COUNTERS if k != "unparsed"), 0)
    # --interval/--count: one line per print, each a JSON object.
    cp = clean.nfslice("stats", "--name", "sj", "--json", "--interval", "1",
                       "--count", "1")
    lines = cp.stdout.splitlines()
    assert cp.returncode == 0 and len(lines) == 2, cp
    second = json.loads(lines[1])
    assert set(second) == {"name", "slots", "slots_busy", "interval_s",
                           "rates", *COUNTERS}
    assert set(second["rates"]) == set(COUNTERS)


# ---------------------------------------------------------- namespaces --
def test_found_by_netns_exec_and_nsenter(clean):
    """A domain is the same whether reached by ip netns exec or nsenter.

    `ip netns exec` runs nfslice in a fresh mount namespace; nsenter --net
    keeps the host's. Both must find the pins in the host's bpffs.
    """
    rig = clean
    # Attached through nsenter, seen through both.
    cp = rig.nfslice("attach", "--name", "ns", "dut0", "dut1", via="nsenter")
    assert cp.returncode == 0, cp.stderr
    try:
        a = rig.nfslice_json("status", "--name", "ns", via="netns")
        b = rig.nfslice_json("status", "--name", "ns", via="nsenter")
        assert a == b and a["dir"] == str(rig.pin_dir("ns"))
        sa = rig.nfslice_json("stats", "--name", "ns", via="netns")
        sb = rig.nfslice_json("stats", "--name", "ns", via="nsenter")
        assert sa["slots"] == sb["slots"] == a["slots"]
    finally:
        # Detached through the other way.
        cp = rig.nfslice("detach", "--name", "ns", via="netns")
    assert cp.returncode == 0, cp.stderr
    assert not rig.pin_dir("ns").exists()

    # And the other way round.
    rig.attach("dut0", name="ns2")
    try:
        b = rig.nfslice_json("status", "--name", "ns2", via="nsenter")
        assert b["dir"] == str(rig.pin_dir("ns2"))
    finally:
        cp = rig.nfslice("detach", "--name", "ns2", via="nsenter")
    assert cp.returncode == 0, cp.stderr
    assert not rig.pin_dir("ns2").exists()


def test_same_name_in_two_namespaces(clean):
    """One NAME in two network namespaces: two domains, detached apart."""
    rig = clean
    rig.attach("dut0", name="twin", where="dut")
    rig.attach("cli0", name="twin", where="cli")
    try:
        d, c = rig.status("twin", "dut"), rig.status("twin", "cli")
        assert d["dir"] == str(rig.pin_dir("twin", "dut"))
        assert c["dir"] == str(rig.pin_dir("twin", "cli"))
        assert d["dir"] != c["dir"]
        assert [i["name"] for i in d["interfaces"]] == ["dut0"]
        assert [i["name"] for i in c["interfaces"]] == ["cli0"]

        rig.detach("twin", "cli")
        assert not rig.pin_dir("twin", "cli").exists()
        assert rig.xdp("cli", "cli0") is None
        # The DUT's domain of the same name is untouched.
        assert rig.status("twin", "dut") == d
        assert all(os.path.isfile(p) for p in d["pins"].values())
        assert rig.xdp("dut", "dut0")["prog"]["id"] == \
            d["interfaces"][0]["xdp_prog_id"]
    finally:
        for where in ("cli", "dut"):
            if rig.pin_dir("twin", where).exists():
                rig.detach("twin", where)
    assert not rig.pin_dir("twin", "dut").exists()


# ------------------------------------------------------------- cleanup --
@pytest.fixture
def jumbo_veth(clean):
    """A veth pair big0/big1 with MTU 9000 in the DUT: XDP refuses it."""
    rig = clean
    rig.check("dut", "ip", "link", "add", "big0", "mtu", "9000", "type",
              "veth", "peer", "name", "big1", "mtu", "9000")
    try:
        rig.check("dut", "ip", "link", "set", "big0", "up")
        rig.check("dut", "ip", "link", "set", "big1", "up")
        yield "big0"
    finally:
        rig.check("dut", "ip", "link", "del", "big0")


def test_failed_attach_leaves_nothing(clean, jumbo_veth):
    """An attach failing on its second interface undoes the first one."""
    rig = clean
    assert rig.qdisc_kinds("dut", jumbo_veth) == ["noqueue"]
    cp = rig.nfslice("attach", "--name", "broken", "dut0", jumbo_veth)
    assert_error(cp, 1, f"attaching the slicer to {jumbo_veth} failed",
                 "MTU", f"ip link set dev {jumbo_veth} mtu 1500")
    assert not rig.pin_dir("broken").exists()
    for dev in ("dut0", jumbo_veth):
        assert rig.xdp("dut", dev) is None, f"XDP left on {dev}"
        assert "clsact" not in rig.qdisc_kinds("dut", dev), \
            f"attach left its clsact qdisc on {dev}"
        assert rig.egress_filters("dut", dev) == []
    cp = rig.nfslice("detach", "--name", "broken")
    assert cp.returncode == 0 and "nothing to detach" in cp.stdout, \
        describe(cp)


def prog_exists(prog_id):
    """Whether the kernel still holds BPF program PROG_ID."""
    return run(["bpftool", "prog", "show", "id", prog_id]).returncode == 0


def test_detach_removes_everything(clean):
    """After detach: no XDP, no filter, no clsact, no pins, no programs."""
    rig = clean
    st = rig.attach("dut0", "dut1", name="gone")
    ids = {i["xdp_prog_id"] for i in st["interfaces"]} | \
        {i["tc_prog_id"] for i in st["interfaces"]}
    assert all(prog_exists(i) for i in ids)
    out = rig.detach("gone")
    assert "domain 'gone' detached" in out
    for dev in ("dut0", "dut1"):
        assert rig.xdp("dut", dev) is None
        assert rig.egress_filters("dut", dev) == []
        assert "clsact" not in rig.qdisc_kinds("dut", dev)
    assert not rig.pin_dir("gone").exists()
    assert not any(os.path.exists(p) for p in st["pins"].values())
    # Programs are freed once the last reference (link, filter, pin) goes;
    # the kernel frees them after an RCU grace period.
    poll(lambda: not any(prog_exists(i) for i in ids), 5,
         "the domain's programs to be freed")
    assert_error(rig.nfslice("status", "--name", "gone"), 1,
                 "no domain 'gone' is attached")


def test_detach_keeps_a_clsact_it_did_not_create(clean):
    """A clsact qdisc that was there before attach survives detach."""
    rig = clean
    rig.check("dut", "tc", "qdisc", "add", "dev", "dut1", "clsact")
    try:
        rig.attach("dut0", "dut1", name="keepq")
        rig.detach("keepq")
        assert "clsact" in rig.qdisc_kinds("dut", "dut1")
        assert rig.egress_filters("dut", "dut1") == []
        assert "clsact" not in rig.qdisc_kinds("dut", "dut0")
    finally:
        rig.exec("dut", "tc", "qdisc", "del", "dev", "dut1", "clsact")


# --------------------------------------------------- kernel defaults --
CT_LIBERAL = "net.netfilter.nf_conntrack_tcp_be_liberal"


def test_attach_sets_ct_liberal_detach_restores(clean):
    """The rig leaves conntrack at the kernel's defaults. attach turns on
    liberal TCP window tracking in its namespace (conntrack would mark the
    ACKs of sliced TCP invalid) and detach restores the value it found;
    --no-ct-liberal leaves it alone (issue 7 section 2)."""
    rig = clean

    def liberal():
        return rig.check("dut", "sysctl", "-n", CT_LIBERAL).strip()
    assert liberal() == "0", "the rig changed the kernel's default"
    rig.attach("dut0", "dut1", name="ctl")
    try:
        assert liberal() == "1"
    finally:
        rig.detach("ctl")
    assert liberal() == "0"
    rig.attach("dut0", "dut1", name="ctl", opts=("--no-ct-liberal",))
    try:
        assert liberal() == "0"
    finally:
        rig.detach("ctl")
    assert liberal() == "0"


def features(rig, dev):
    """{feature: "on"|"off"} of DEV in the DUT (`ethtool -k`)."""
    out = rig.check("dut", "ethtool", "-k", dev)
    return dict(line.strip().split(": ")[:2] for line in out.splitlines()
                if ": " in line and not line.endswith(":"))


def test_attach_turns_off_gro_merging(clean):
    """The rig leaves offloads as the kernel sets them; attach turns off
    what would merge sliced datagrams (rx-udp-gro-forwarding,
    rx-gro-list) on the domain's interfaces."""
    rig = clean
    merge = ("rx-udp-gro-forwarding", "rx-gro-list")
    before = {dev: features(rig, dev) for dev in ("dut0", "dut1")}
    try:
        for dev in before:
            rig.check("dut", "ethtool", "-K", dev, "gro", "on", *[
                x for f in merge for x in (f, "on")])
        rig.attach("dut0", "dut1", name="gro")
        try:
            for dev in before:
                f = features(rig, dev)
                assert [f[x].split()[0] for x in merge] == ["off", "off"], \
                    (dev, f)
        finally:
            rig.detach("gro")
    finally:
        for dev, f in before.items():
            rig.exec("dut", "ethtool", "-K", dev, *[
                x for k in ("gro", *merge)
                for x in (k, f["generic-receive-offload" if k == "gro"
                               else k].split()[0])])
