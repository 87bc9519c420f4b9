# SPDX-License-Identifier: GPL-2.0
"""The nfslice CLI: errors, status/stats JSON, pins, namespaces, cleanup,
and operating it as xdp-loader or bpftool (issue 7 section 3): list and gc
across namespaces, status's health exit code and repair, an orphaned
nfslice, capabilities, --version, help VERB, errors as JSON.

Errors must name the problem and the fix and exit 1 (2 for bad usage, 3 is
status's "damaged"), and must change nothing. attach/detach must leave the interfaces exactly as
`ip link` and `tc` showed them before. One rig for the module; each test
attaches its own domain and detaches it (the rig finalizer detaches
whatever a failing test left).
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import nfrig
from nfrig import (BPFFS, COUNTERS, MGR_COUNTERS, NETNS_DIR, NFSLICE, PY,
                   ROOT, describe, must, name, poll, run)

PREFIX = name("cli")
PIN_NAMES = {"store", "config", "counters", "cursor", "splicer", "netns",
             "chain", "parklog", "mgr_counters", "residency", "tenant_cursor",
             "tenant_counters", "tenant_prefix", "tenant_vlan", "events"}


@pytest.fixture(scope="module")
def rig(rigs):
    """The module's rig, with no slicing domain."""
    return rigs(PREFIX)


@pytest.fixture
def clean(rig):
    """Assert, before and after the test, that DUT interfaces are bare.

    Every test starts from interfaces without XDP, TCX or clsact, and
    must leave them so (tests that attach detach themselves).
    """
    def leftovers():
        found = []
        for dev in ("dut0", "dut1"):
            if rig.xdp("dut", dev) is not None:
                found.append(f"XDP left on {dev}")
            if "clsact" in rig.qdisc_kinds("dut", dev):
                found.append(f"clsact left on {dev}")
            if rig.tcx_egress("dut", dev):
                found.append(f"TCX egress program left on {dev}")
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

    def attach(name, *ifaces, opts=(), env=None):
        names.append(name)
        if env is None:
            return rig.attach(*ifaces, name=name, opts=opts)
        must(rig.nfslice("attach", "--name", name, *opts, *ifaces,
                         env={**os.environ, **env}))
        return rig.status(name)

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
    it misses (CAP_DAC_OVERRIDE too: nobody is not root), why it needs
    them, and how to get them."""
    cp = clean.nfslice(*args, nobody=True)
    assert_error(cp, 1, f"nfslice {args[0]}: missing capabilit",
                 "CAP_DAC_OVERRIDE, " + caps + " (",
                 "run it as root (e.g. with sudo)",
                 "AmbientCapabilities=", "CAP_DAC_OVERRIDE as a user other "
                 "than root: the lock file /run/nfslice.lock")
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
    # Decimal only: base 0 read "010" as 8 and took "0x100" (issue 17 §4).
    (("--threshold", "0x100"), ("--threshold '0x100' is not valid: give a "
                                "whole number of BYTES from 0 to 65535, in "
                                "decimal digits",)),
    (("--slots", "+64"), ("--slots '+64' is not valid",)),
    (("--slots", " 64"), ("--slots ' 64' is not valid",)),
    (("--keep", "-0"), ("--keep '-0' is not valid",)),
], ids=["slots", "mode", "keep", "no-value", "unknown-option", "no-iface",
        "hex", "plus", "blank", "minus"])
def test_bad_usage(clean, args, needles):
    """Bad option values are named with the accepted range: exit 2."""
    ifaces = ("dut0",) if args else ()
    # Options after the interface: getopt permutes, and a value-less
    # option must be the last word to be value-less.
    cp = clean.nfslice("attach", "--name", "bad", *ifaces, *args)
    assert_error(cp, 2, *needles)
    assert not clean.pin_dir("bad").exists()


NAME_RULE = ("use 1-63 letters, digits, '_', '-' or '.' ('.' anywhere but "
             "first, so not '.', '..' or '...')")


@pytest.mark.parametrize("cmd", ["attach", "status", "detach", "stats", "set",
                                 "evict", "tenants", "events", "upgrade",
                                 "checkpoint", "restore", "repair"])
@pytest.mark.parametrize("bad", ["a/b", ".", "..", "...", ".x", "x" * 64, ""])
def test_invalid_domain_name(cmd, bad):
    """A NAME that cannot be a pin directory is bad usage (exit 2) in every
    command, refused before anything is opened, with the one rule, which
    says '.' is allowed (issue 17 §4). No rig: nothing is touched."""
    cp = run([NFSLICE, cmd, "--name", bad,
              *(("dut0",) if cmd == "attach" else ())])
    assert_error(cp, 2, f"nfslice {cmd}: --name '{bad}' is not valid: "
                 + NAME_RULE)


@pytest.mark.parametrize("good", ["-x", "a.b", "x.", "A_9-z", "x" * 63])
def test_valid_domain_names(clean, good):
    """Names the rule allows reach the domain lookup: '-x' (a value of
    --name, not an option), dots after the first character, 63 chars."""
    cp = clean.nfslice("status", "--name", good)
    assert_error(cp, 1, f"no domain '{good}' is attached in this network "
                 "namespace")


def test_name_rule_is_one_rule():
    """nfslice-nf --name states the same rule as nfslice, as bad usage."""
    cp = run([ROOT / "build" / "nfslice-nf", "--dev", "lo", "--name", "..."])
    assert_error(cp, 2, "nfslice-nf: --name '...' is not valid: " + NAME_RULE)


def test_too_few_slots(clean):
    """Fewer slots than CPU partitions: the minimum is named; bad usage
    (exit 2), nothing left behind.

    Skipped on a one-CPU machine, where one slot is a valid store.
    """
    ncpus = possible_cpus()
    if ncpus < 2:
        pytest.skip("one CPU: --slots 1 is valid")
    cp = clean.nfslice("attach", "--name", "few", "--slots", "1", "dut0")
    assert_error(cp, 2, "--slots 1 is too small",
                 f"each of the {ncpus} CPUs allocates from its own partition",
                 f"give at least {ncpus}")
    assert not clean.pin_dir("few").exists()


def test_slots_rounding_stated(clean):
    """--slots that is no multiple of the partitions is rounded down, as
    --help says, and attach says so with the count used; status shows it.

    Skipped on a one-CPU machine, where every count is a multiple.
    """
    ncpus = possible_cpus()
    if ncpus < 2:
        pytest.skip("one CPU: every --slots is a multiple of the partitions")
    help_ = must(run([NFSLICE, "attach", "--help"]))
    assert "rounded down to a multiple of their number" in help_
    try:
        cp = clean.nfslice("attach", "--name", "round", "--slots",
                           str(ncpus + 1), "dut0")
        assert cp.returncode == 0, describe(cp)
        assert (f"nfslice: note: --slots {ncpus + 1} rounded down to {ncpus}: "
                f"{ncpus} partitions ({ncpus} CPUs x 1) of 1 slots each"
                in cp.stderr), describe(cp)
        assert clean.status("round")["slots"] == ncpus
    finally:
        if clean.pin_dir("round").exists():
            clean.detach("round")


def test_numbers_are_decimal(clean, domain):
    """A leading zero is decimal: --threshold 0300 is 300 bytes, not
    octal 192 (issue 17 §4)."""
    st = domain("dec", "dut0", opts=("--threshold", "0300", "--slots",
                                     "064"))
    assert (st["threshold"], st["slots"]) == (300, 64), st


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
def test_stats_count_alone_is_bad_usage():
    """--count without --interval printed once and ignored N: now bad
    usage (exit 2) naming the fix, as text and as JSON."""
    assert_error(run([NFSLICE, "stats", "--count", "2"]), 2,
                 "nfslice stats: --count 2 needs --interval SECONDS (e.g. "
                 "--interval 1 --count 2: 2 prints a second apart)")
    json_error(run([NFSLICE, "stats", "--count", "2", "--json"]), 2,
               "--count 2 needs --interval SECONDS")


def test_stats_interval_count_prints_count_blocks(clean, domain):
    """stats --interval 1 --count 2 prints two blocks, the first included
    (it printed three)."""
    domain("cnt", "dut0")
    cp = clean.nfslice("stats", "--name", "cnt", "--interval", "1",
                       "--count", "2")
    assert cp.returncode == 0, describe(cp)
    assert cp.stdout.count("domain cnt: ") == 2, cp.stdout
    cp = clean.nfslice("stats", "--name", "cnt", "--interval", "1",
                       "--count", "2", "--json")
    lines = cp.stdout.splitlines()
    assert cp.returncode == 0 and len(lines) == 2, describe(cp)
    assert "rates" not in json.loads(lines[0])
    assert "rates" in json.loads(lines[1])


@pytest.mark.parametrize("quota, needle", [
    ("gold=200%", "--quota gold=200% is not valid: give N% of each "
                  "partition (0-100) or N slots of the store"),
    ("gold", "--quota 'gold' is not valid: give NAME=Q"),
    ("=5%", "--quota '=5%' is not valid: give NAME=Q"),
])
def test_set_bad_quota_is_usage(quota, needle):
    """A malformed --quota is bad usage (exit 2; it was 1), refused
    before any domain is opened."""
    assert_error(run([NFSLICE, "set", "--name", "nodomain", "--quota", quota]),
                 2, needle, "See 'nfslice set --help'.")


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
        # TCX where the kernel has it (6.6+; this one does): no qdisc.
        assert i["egress_hook"] == "tcx"
        assert rig.tcx_egress("dut", i["name"]) == [i["tc_prog_id"]]
        assert rig.egress_filters("dut", i["name"]) == []
        assert "clsact" not in rig.qdisc_kinds("dut", i["name"])
    # One splicer program, shared by every interface of the domain.
    assert st["interfaces"][0]["tc_prog_id"] == st["interfaces"][1]["tc_prog_id"]


def test_stats_json(clean, domain):
    """stats --json: exactly the counters (the datapath's and the TTL
    scan's), the name, slots and slots_busy."""
    domain("sj", "dut0", "dut1")
    s = clean.stats("sj")
    assert set(s) == {"name", "slots", "slots_busy", *COUNTERS,
                      *MGR_COUNTERS}
    assert all(s[k] == 0 for k in MGR_COUNTERS), s
    assert s["name"] == "sj"
    assert s["slots"] == clean.status("sj")["slots"]
    assert s["slots_busy"] == 0
    # No TCP/UDP crossed the rig yet (the endpoints' IPv6 router
    # solicitations may count as unparsed).
    assert {k: s[k] for k in COUNTERS if k != "unparsed"} == \
        dict.fromkeys((k for k in COUNTERS if k != "unparsed"), 0)
    # --interval/--count: one line per print, each a JSON object; --count
    # counts every print, the first included.
    cp = clean.nfslice("stats", "--name", "sj", "--json", "--interval", "1",
                       "--count", "2")
    lines = cp.stdout.splitlines()
    assert cp.returncode == 0 and len(lines) == 2, cp
    second = json.loads(lines[1])
    assert set(second) == {"name", "slots", "slots_busy", "interval_s",
                           "rates", *COUNTERS, *MGR_COUNTERS}
    assert set(second["rates"]) == {*COUNTERS, *MGR_COUNTERS}


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
        assert rig.tcx_egress("dut", dev) == []
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
        assert rig.tcx_egress("dut", dev) == []
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
    """A clsact qdisc that was there before attach survives detach (the
    clsact fallback, NFSLICE_EGRESS=clsact, of kernels without TCX)."""
    rig = clean
    rig.check("dut", "tc", "qdisc", "add", "dev", "dut1", "clsact")
    try:
        must(rig.nfslice("attach", "--name", "keepq", "dut0", "dut1",
                         env={**os.environ, "NFSLICE_EGRESS": "clsact"}))
        st = rig.status("keepq")
        for i in st["interfaces"]:
            assert i["egress_hook"] == "clsact", i
            filters = [f for f in rig.egress_filters("dut", i["name"])
                       if "options" in f]
            assert [f["options"]["prog"]["id"] for f in filters] == \
                [i["tc_prog_id"]]
            assert rig.tcx_egress("dut", i["name"]) == []
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


# ------------------------------------------ version, help, JSON errors --
TOOLS = (Path(NFSLICE), ROOT / "build" / "nfslice-pktgen",
         ROOT / "build" / "nfslice-delay")


def git_describe():
    """`git describe` of the checkout, as the build saw it; None outside
    git."""
    cp = run(["git", "-C", ROOT, "describe", "--tags", "--always", "--dirty"])
    return cp.stdout.strip() if cp.returncode == 0 else None


def test_version():
    """Every tool prints "TOOL VERSION" on stdout and exits 0; the three
    print one version, from one place (userspace/lib/util/version.c plus the
    build's git describe)."""
    versions = set()
    for tool in TOOLS:
        cp = run([tool, "--version"])
        assert cp.returncode == 0 and cp.stderr == "", describe(cp)
        prog, _, version = cp.stdout.rstrip("\n").partition(" ")
        assert prog == tool.name and version, describe(cp)
        versions.add(version)
    assert len(versions) == 1, versions
    version = versions.pop()
    # "0.1.0", and in a git checkout "0.1.0 (git DESCRIBE)" (the build's
    # commit: others may have committed since, so only its form).
    assert re.fullmatch(r"\d+\.\d+\.\d+( \(git [\w.+-]+\))?", version), version
    if git_describe() is not None:
        assert " (git " in version, version
    # The man page carries it too.
    cp = run([NFSLICE, "--man"])
    assert f'"nfslice {version}"' in cp.stdout


@pytest.mark.parametrize("args", [("version",), ("-V",), ("--version",)],
                         ids=["version", "-V", "--version"])
def test_version_as_bpftool(args):
    """`nfslice version`, `-V` and `--version` print the same line, as
    bpftool's `version` and `-V` do; `version --json` one object; the
    other tools take -V too (issue 17 §4)."""
    cp = run([NFSLICE, *args])
    assert cp.returncode == 0 and cp.stderr == "", describe(cp)
    assert cp.stdout == run([NFSLICE, "--version"]).stdout
    assert re.fullmatch(r"nfslice \d+\.\d+\.\d+( \(git [\w.+-]+\))?\n",
                        cp.stdout), cp.stdout
    obj = json.loads(must(run([NFSLICE, *args, "--json"])))
    assert obj == {"name": "nfslice",
                   "version": cp.stdout[len("nfslice "):].rstrip("\n")}
    for tool in TOOLS[1:]:
        a, b = run([tool, "-V"]), run([tool, "--version"])
        assert a.returncode == 0 and a.stdout == b.stdout, describe(a)
    assert_error(run([NFSLICE, "version", "extra"]), 2,
                 "nfslice: version: unexpected argument 'extra'; usage: "
                 "nfslice version [--json]")


@pytest.mark.parametrize("verb, usage", [
    ("help", "Usage: nfslice help [COMMAND]\n"),
    ("version", "Usage: nfslice version [--json]\n")])
def test_help_help(verb, usage):
    """`nfslice help help` and `help version` show those verbs' usage, as
    `bpftool help` users expect; the program's usage names both."""
    cp = run([NFSLICE, "help", verb])
    assert cp.returncode == 0 and cp.stdout.startswith(usage), describe(cp)
    assert ("nfslice help [COMMAND] | version | -h, --help | -V, --version"
            in must(run([NFSLICE, "help"])))


@pytest.mark.parametrize("verb", ["attach", "detach", "repair", "status",
                                  "stats", "list", "gc"])
def test_help_verb(verb):
    """`nfslice help VERB` is `nfslice VERB --help`: stdout, exit 0."""
    a, b = run([NFSLICE, "help", verb]), run([NFSLICE, verb, "--help"])
    assert a.returncode == b.returncode == 0, (describe(a), describe(b))
    assert a.stdout == b.stdout and a.stdout.startswith(
        f"Usage: nfslice {verb} "), describe(a)


def test_help_lists_commands_and_exit_codes():
    """`nfslice help` is `nfslice --help`: every command, every exit code,
    `help COMMAND` and --version; an unknown VERB is bad usage."""
    a, b = run([NFSLICE, "help"]), run([NFSLICE, "--help"])
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout
    for verb in ("attach", "detach", "repair", "status", "stats", "list",
                 "gc"):
        assert f"\n  {verb} " in a.stdout, verb
    exit_status = a.stdout.split("Exit status:\n")[1]
    for code in range(4):
        assert f"  {code}  " in exit_status, code
    assert "nfslice help COMMAND" in a.stdout and "--version" in a.stdout
    assert_error(run([NFSLICE, "help", "nope"]), 2,
                 "unknown command 'nope'")
    # The man page has the same exit codes.
    man = run([NFSLICE, "--man"]).stdout
    assert ".SH EXIT STATUS" in man and ".B 3\n" in man


def json_error(cp, code, *needles):
    """CP printed exactly one JSON error object {"error", "code"} on
    stdout, nothing on stderr, and exited CODE; its message."""
    assert cp.returncode == code, describe(cp)
    assert cp.stderr == "", describe(cp)
    assert cp.stdout.count("\n") == 1, describe(cp)
    obj = json.loads(cp.stdout)
    assert set(obj) == {"error", "code"} and obj["code"] == code, obj
    for n in needles:
        assert n in obj["error"], (n, obj)
    return obj["error"]


@pytest.mark.parametrize("args, code, needles", [
    (("status", "--name", "ghost", "--json"), 1,
     ("no domain 'ghost' is attached",)),
    (("stats", "--name", "ghost", "--json"), 1,
     ("no domain 'ghost' is attached",)),
    (("status", "--json", "--color"), 2,
     ("unknown option '--color'", "See 'nfslice status --help'")),
    (("stats", "--json", "--interval", "0"), 2,
     ("--interval '0' is not valid",)),
    (("nope", "--json"), 2, ("unknown command 'nope'",)),
    # The writer escapes: a name with a double quote and a backslash.
    (("status", "--name", 'a"b\\c', "--json"), 2,
     ('--name \'a"b\\c\' is not valid',)),
], ids=["status-no-domain", "stats-no-domain", "unknown-option",
        "bad-value", "unknown-command", "escaped"])
def test_json_errors(clean, args, code, needles):
    """Under --json an error is one object on stdout, {"error": MESSAGE,
    "code": EXIT}, the exit status the same as without --json."""
    json_error(clean.nfslice(*args), code, *needles)


def test_json_error_capability(clean):
    """The capability refusal is a JSON error too."""
    cp = clean.nfslice("list", "--json", nobody=True)
    json_error(cp, 1, "nfslice list: missing capabilities CAP_DAC_OVERRIDE, "
               "CAP_SYS_ADMIN, CAP_BPF")


# ---------------------------------------------------------- capabilities --
@pytest.mark.parametrize("drop, args, missing", [
    ("net_admin", ("attach", "--name", "nocap", "dut0"), "CAP_NET_ADMIN"),
    ("sys_admin", ("attach", "--name", "nocap", "dut0"), "CAP_SYS_ADMIN"),
    ("sys_admin", ("status", "--name", "nocap"), "CAP_SYS_ADMIN"),
    # CAP_SYS_ADMIN stands for CAP_BPF (the kernel's bpf_capable()).
    ("sys_admin,-bpf", ("stats", "--name", "nocap"), "CAP_BPF"),
], ids=["attach-net_admin", "attach-sys_admin", "status-sys_admin",
        "stats-bpf"])
def test_missing_capability_named(clean, drop, args, missing):
    """Root without a capability: refused before anything is done, the
    message names exactly what is missing (no "must run as root")."""
    cp = clean.exec("dut", "setpriv", f"--bounding-set=-{drop}",
                    f"--inh-caps=-{drop}", NFSLICE, *args)
    assert_error(cp, 1, f"nfslice {args[0]}: missing capability {missing} (",
                 "run it as root")
    assert not clean.pin_dir("nocap").exists()
    assert clean.xdp("dut", "dut0") is None


# A user other than root with the capabilities README names (issue 17
# §4): CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN and CAP_DAC_OVERRIDE; through
# `ip netns exec` also CAP_SYS_PTRACE and CAP_SYS_CHROOT.
USER_CAPS = "+bpf,+net_admin,+sys_admin,+dac_override"


def as_user(caps):
    """setpriv arguments: uid/gid 65534 keeping CAPS (effective through
    the ambient set)."""
    return ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            f"--inh-caps={caps}", f"--ambient-caps={caps}")


@pytest.mark.parametrize("via, caps", [
    ("nsenter", USER_CAPS),
    ("netns", USER_CAPS + ",+sys_ptrace,+sys_chroot")])
def test_user_with_documented_caps(clean, via, caps):
    """uid 65534 with the documented capabilities attaches, sees (status,
    stats, list) and detaches a domain; it failed with "cannot lock
    /run/nfslice.lock: Permission denied" and "no domain ... attached"."""
    ns = clean.ns("dut")
    pre = (("nsenter", f"--net=/var/run/netns/{ns}") if via == "nsenter"
           else ("ip", "netns", "exec", ns))

    def user(*args):
        return run([*pre, *as_user(caps), NFSLICE, *args])
    try:
        must(user("attach", "--name", "usr", "dut0"))
        assert clean.status("usr")["interfaces"][0]["name"] == "dut0"
        st = json.loads(must(user("status", "--name", "usr", "--json")))
        assert st["healthy"] is True, st
        assert json.loads(must(user("stats", "--name", "usr", "--json"))
                          )["slots"] == st["slots"]
        assert "usr" in must(user("list"))
        assert must(user("detach", "--name", "usr")) == \
            "nfslice: domain 'usr' detached\n"
    finally:
        if clean.pin_dir("usr").exists():
            clean.detach("usr")


def test_user_without_dac_override_told_the_fix(clean, domain):
    """Without CAP_DAC_OVERRIDE a user other than root is refused before
    anything, told which capability and why: not "no domain attached"
    while one is."""
    domain("usr2", "dut0")
    cp = run(["nsenter", f"--net=/var/run/netns/{clean.ns('dut')}",
              *as_user("+bpf,+net_admin,+sys_admin"), NFSLICE, "stats",
              "--name", "usr2"])
    assert_error(cp, 1, "nfslice stats: missing capability CAP_DAC_OVERRIDE "
                 "(CAP_BPF opens the pinned maps; CAP_DAC_OVERRIDE as a user "
                 "other than root: the lock file /run/nfslice.lock, the bpffs "
                 "directories and the pins are root's and private",
                 "AmbientCapabilities=CAP_BPF CAP_NET_ADMIN CAP_SYS_ADMIN "
                 "CAP_DAC_OVERRIDE with User=")
    assert "no domain" not in cp.stderr


def test_unopenable_pins_are_not_absent(clean, domain):
    """Pins nfslice may not open (EACCES) are a permission error that
    names the fix, never "no domain ... attached": root without
    CAP_DAC_OVERRIDE facing a domain directory of another owner."""
    domain("perm", "dut0")
    d = clean.pin_dir("perm")
    try:
        run(["chown", "65534", d], timeout=10)
        os.chmod(d, 0o700)
        cp = clean.exec("dut", "setpriv", "--inh-caps=-dac_override,"
                        "-dac_read_search,-fowner", "--bounding-set="
                        "-dac_override,-dac_read_search,-fowner",
                        NFSLICE, "stats", "--name", "perm")
        assert_error(cp, 1, "domain 'perm' is attached, but its pins cannot "
                     "be opened: Permission denied", "run nfslice as root, "
                     "or give this user CAP_DAC_OVERRIDE")
        assert "no domain" not in cp.stderr
    finally:
        run(["chown", "0", d], timeout=10)


# ------------------------------------------------------- list and gc --
def list_json(rig):
    """`nfslice list --json` (run in the DUT): {dir: domain}."""
    return {d["dir"]: d for d in json.loads(must(rig.nfslice("list",
                                                            "--json")))}


@pytest.fixture
def spare_ns(clean):
    """Factory: spare_ns(STEM) makes namespace nfrig.name(STEM) with a veth
    pair v0/v1 (up) and returns (name, cookie). Namespaces and the pins of
    their cookies are removed after the test, whatever happened."""
    made = []

    def make(stem):
        ns = name(stem)
        must(run(["ip", "netns", "add", ns]))
        made.append(ns)
        for cmd in (["link", "add", "v0", "type", "veth", "peer", "name",
                     "v1"], ["link", "set", "v0", "up"],
                    ["link", "set", "v1", "up"]):
            must(run(["ip", "-n", ns, *cmd]))
        cookie = nfrig.netns_cookie_of(ns)
        nfrig.COOKIES.add(cookie)
        made.append(cookie)
        return ns, cookie

    yield make
    for x in made:
        if isinstance(x, str):
            if (NETNS_DIR / x).exists():
                run(["ip", "netns", "exec", x, NFSLICE, "detach", "--name",
                     "spare"], timeout=60)
                run(["ip", "netns", "delete", x])
        else:
            # A domain whose namespace went: its pins, by hand (gc would
            # take every gone namespace's, other runs' too).
            shutil.rmtree(BPFFS / "nfslice" / f"ns{x}", ignore_errors=True)


def attach_in(ns, *ifaces, name="spare"):
    """Attach domain NAME in namespace NS (ip netns exec); assert success."""
    must(run(["ip", "netns", "exec", ns, NFSLICE, "attach", "--name", name,
              *ifaces], timeout=60))


def test_list_every_namespace(clean, domain, spare_ns):
    """list shows the domains of every namespace, from any namespace: the
    namespace by cookie and /run/netns name, the interfaces by name
    (resolved inside it), health ok; text and JSON agree."""
    rig = clean
    domain("lst", "dut0", "dut1")
    ns, cookie = spare_ns("cli-lst")
    attach_in(ns, "v0")
    # Seen alike from the DUT and from the host (other runs' domains may
    # come and go meanwhile: only ours are compared).
    seen = list_json(rig)
    host = {d["dir"]: d for d in json.loads(must(run([NFSLICE, "list",
                                                      "--json"])))}
    spare_dir = str(BPFFS / "nfslice" / f"ns{cookie}" / "spare")
    for d in (str(rig.pin_dir("lst")), spare_dir):
        assert seen[d] == host[d]
    dut = seen[str(rig.pin_dir("lst"))]
    assert dut["name"] == "lst" and dut["healthy"] is True, dut
    assert dut["problems"] == [] and dut["complete"] is True
    assert dut["netns"] == {"cookie": rig.cookies["dut"],
                            "inode": os.stat(NETNS_DIR / rig.ns("dut")).st_ino,
                            "name": rig.ns("dut"), "state": "alive",
                            "probe": True, "reachable": True}
    assert [(i["name"], i["present"], i["xdp"], i["tc_egress"])
            for i in dut["interfaces"]] == [("dut0", True, "native", True),
                                            ("dut1", True, "native", True)]
    spare = seen[spare_dir]
    assert spare["netns"]["name"] == ns and spare["netns"]["state"] == "alive"
    assert [i["name"] for i in spare["interfaces"]] == ["v0"]
    # The text form: one line per domain, header first.
    lines = must(rig.nfslice("list")).splitlines()
    assert lines[0].split()[:2] == ["NAME", "NETNS"]
    row = [ln for ln in lines if ln.startswith("lst ")]
    assert len(row) == 1 and f"ns{rig.cookies['dut']} {rig.ns('dut')}" in \
        row[0] and "dut0,dut1" in row[0] and row[0].endswith(" ok"), lines


def wait_gone(rig, d):
    """Poll list until the domain at pin directory D reports its namespace
    gone (the kernel tears a deleted namespace down asynchronously)."""
    poll(lambda: list_json(rig)[str(d)]["netns"]["state"] == "gone", 20,
         f"the namespace of {d} to be reported gone", interval=0.2)


def test_gc_removes_domains_of_deleted_namespaces(clean, domain, spare_ns):
    """A namespace deleted under its domain: list says gone, gc --dry-run
    names it and removes nothing, gc removes its pins (and the emptied
    ns<cookie> directory); the domains of live namespaces stay whole."""
    rig = clean
    domain("keep", "dut0", "dut1")
    ns, cookie = spare_ns("cli-gc")
    attach_in(ns, "v0", "v1")
    d = BPFFS / "nfslice" / f"ns{cookie}" / "spare"
    assert d.is_dir()
    # Nothing of ours to collect while every namespace lives (another
    # run's gone namespaces may be collected: gc is host-wide).
    out = json.loads(must(rig.nfslice("gc", "--json")))
    assert set(out) == {"dry_run", "removed", "unknown", "holding"}
    assert out["dry_run"] is False
    mine = {str(d), str(rig.pin_dir("keep"))}
    assert not mine & {r["dir"] for r in out["removed"] + out["unknown"]}
    assert d.is_dir()
    must(run(["ip", "netns", "delete", ns]))
    wait_gone(rig, d)
    gone = list_json(rig)[str(d)]
    assert gone["healthy"] is False and gone["netns"]["name"] is None
    assert "nfslice gc" in gone["problems"][0]
    # --dry-run: said, not done.
    cp = rig.nfslice("gc", "--dry-run")
    assert f"nfslice: would remove domain 'spare' of a network namespace " \
        f"that is gone (ns{cookie}): {d}\n" in must(cp), cp
    assert d.is_dir()
    out = json.loads(must(rig.nfslice("gc", "--json")))
    assert {"name": "spare", "dir": str(d), "cookie": cookie} in \
        out["removed"], out
    assert not d.exists() and not d.parent.exists()
    # The live domain is untouched and healthy.
    st = rig.status("keep")
    assert st["healthy"] is True
    assert all(os.path.isfile(p) for p in st["pins"].values())
    # And gc is idempotent.
    out = json.loads(must(rig.nfslice("gc", "--json")))
    assert str(d) not in {r["dir"] for r in out["removed"]}


def test_gc_keeps_a_namespace_held_by_a_file_descriptor(clean, spare_ns):
    """A namespace with no name and no process, alive only through an open
    file descriptor: list says alive (not reachable), gc keeps its domain;
    when the descriptor closes, the namespace goes and gc removes it."""
    rig = clean
    ns, cookie = spare_ns("cli-fd")
    attach_in(ns, "v0")
    d = BPFFS / "nfslice" / f"ns{cookie}" / "spare"
    holder = subprocess.Popen(
        [PY, "-c", "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); "
         "print('held', flush=True); sys.stdin.read()", NETNS_DIR / ns],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        must(run(["ip", "netns", "delete", ns]))
        dom = list_json(rig)[str(d)]
        assert dom["netns"]["state"] == "alive", dom
        assert dom["netns"]["reachable"] is False and dom["healthy"] is None
        out = json.loads(must(rig.nfslice("gc", "--json")))
        assert str(d) not in {r["dir"] for r in out["removed"]}, out
        assert d.is_dir()
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    wait_gone(rig, d)
    out = json.loads(must(rig.nfslice("gc", "--json")))
    assert str(d) in {r["dir"] for r in out["removed"]}, out
    assert not d.exists()


# ------------------------------------------------- health and repair --
HTTP_PORT = 8080   # forwarded by the rig's ACL (scripts/rig.sh)
FILE_BYTES = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def http_file(rig, tmp_path_factory):
    """An HTTP server in the server namespace with an 8 MB random file;
    yields its sha256."""
    www = tmp_path_factory.mktemp("www")
    data = os.urandom(FILE_BYTES)
    (www / "blob").write_bytes(data)
    proc = rig.spawn("srv", PY, "-m", "http.server", HTTP_PORT, "--bind",
                     "0.0.0.0", "--directory", www)
    rig.wait_listen("srv", HTTP_PORT)
    yield hashlib.sha256(data).hexdigest()
    rig.stop(proc)


def download(rig, sha256, tmp_path):
    """curl the file through the DUT (sliced on dut1, spliced on dut0);
    assert it arrived whole."""
    out = tmp_path / "blob"
    must(rig.exec("cli", "curl", "-sS", "--fail", "--max-time", "60",
                  "--speed-limit", "100000", "--speed-time", "5", "-o", out,
                  f"http://{rig.env['SRV_IP4']}:{HTTP_PORT}/blob",
                  timeout=90))
    assert hashlib.sha256(out.read_bytes()).hexdigest() == sha256
    out.unlink()


def status_rc(rig, name):
    """(exit status, parsed JSON) of `nfslice status --json` for NAME."""
    cp = rig.nfslice("status", "--name", name, "--json")
    try:
        return cp.returncode, json.loads(cp.stdout)
    except ValueError:
        raise AssertionError(describe(cp)) from None


@pytest.mark.parametrize("damage", ["tcx", "filter", "qdisc"])
def test_status_damaged_and_repair(clean, domain, http_file, tmp_path,
                                   damage):
    """The slicer of dut1 removed by hand (ip link set dev dut1 xdp off)
    and the splicer of dut0 (its TCX attachment; or, attached as the clsact
    fallback with NFSLICE_EGRESS=clsact, tc filter del or the whole clsact
    qdisc): status exits 3 naming both, with the fix; list says DAMAGED;
    repair re-attaches them (splicer first) with the pinned store and
    config, and a download through the DUT is then sliced and arrives
    whole."""
    rig = clean
    st = domain("dmg", "dut0", "dut1",
                env=None if damage == "tcx" else {"NFSLICE_EGRESS": "clsact"})
    download(rig, http_file, tmp_path)
    assert rig.status("dmg")["healthy"] is True
    must(rig.exec("dut", "ip", "link", "set", "dev", "dut1", "xdp", "off"))
    if damage == "tcx":
        rig.tcx_detach("dut", "dut0", st["interfaces"][0]["tc_prog_id"])
    elif damage == "filter":
        must(rig.exec("dut", "tc", "filter", "del", "dev", "dut0", "egress"))
    else:
        must(rig.exec("dut", "tc", "qdisc", "del", "dev", "dut0", "clsact"))
    rc, bad = status_rc(rig, "dmg")
    assert rc == 3 and bad["healthy"] is False, bad
    assert bad["problems"] == ["dut0: splicer missing (tc egress)",
                               "dut1: slicer missing (XDP)"], bad
    assert bad["fix"] == "restore the missing programs with: nfslice " \
        "repair --name dmg"
    text = rig.nfslice("status", "--name", "dmg")
    assert text.returncode == 3 and "health   DAMAGED" in text.stdout
    assert list_json(rig)[st["dir"]]["healthy"] is False
    # The text list row says DAMAGED; list itself exits 0.
    assert "DAMAGED" in must(rig.nfslice("list"))
    before = rig.stats("dmg")
    out = must(rig.nfslice("repair", "--name", "dmg"))
    assert out.splitlines() == [
        "nfslice: splicer re-attached to dut0",
        "nfslice: slicer re-attached to dut1 (XDP native)",
        "nfslice: domain 'dmg' repaired"], out
    after = rig.status("dmg")     # exit 0
    assert after["healthy"] is True and after["problems"] == []
    # The same store and configuration: the pins and counters survived.
    assert after["pins"] == st["pins"]
    assert {k: after[k] for k in ("slots", "threshold", "keep", "expiry")} \
        == {k: st[k] for k in ("slots", "threshold", "keep", "expiry")}
    assert rig.stats("dmg")["sliced"] >= before["sliced"]
    ids = {i["name"]: i for i in after["interfaces"]}
    assert ids["dut1"]["xdp_prog_id"] == rig.xdp("dut", "dut1")["prog"]["id"]
    # Traffic: sliced on dut1 again, spliced on dut0, intact.
    s0 = rig.stats("dmg")
    download(rig, http_file, tmp_path)
    s1 = rig.stats("dmg")
    assert s1["sliced"] - s0["sliced"] > 100, (s0, s1)
    assert s1["stale"] == s1["bad_token"] == 0, s1
    # Nothing left to repair; detach leaves the interfaces bare (the
    # clean fixture checks, the recreated clsact included).
    assert "nothing to repair" in must(rig.nfslice("repair", "--name",
                                                   "dmg"))


def test_status_interface_gone(clean, domain):
    """An interface of the domain deleted: status exits 3 naming it by
    ifindex; repair refuses (exit 1) and says to detach; detach works."""
    rig = clean
    must(rig.exec("dut", "ip", "link", "add", "gone0", "type", "veth",
                  "peer", "name", "gone1"))
    try:
        for dev in ("gone0", "gone1"):
            must(rig.exec("dut", "ip", "link", "set", dev, "up"))
        st = domain("gone", "dut0", "gone0")
        ifindex = st["interfaces"][1]["ifindex"]
    finally:
        rig.exec("dut", "ip", "link", "del", "gone0")
    rc, bad = status_rc(rig, "gone")
    assert rc == 3, bad
    assert bad["interfaces"][1] == {
        "name": None, "ifindex": ifindex, "present": False, "nf_port": False,
        "xdp": None, "xdp_prog_id": 0, "tc_egress": False, "tc_prog_id": 0,
        "egress_hook": "tcx"}
    assert bad["problems"] == [f"ifindex {ifindex}: interface gone "
                               "(deleted, or moved to another network "
                               "namespace)"]
    assert "detach" in bad["fix"]
    assert_error(rig.nfslice("repair", "--name", "gone"), 1,
                 f"ifindex {ifindex}: interface gone",
                 "nfslice detach --name gone")
    rig.detach("gone")


def test_repair_unknown_domain(clean):
    """repair of a domain that is not there: exit 1, the usual message."""
    assert_error(clean.nfslice("repair", "--name", "ghost"), 1,
                 "no domain 'ghost' is attached")


# ------------------------------------------------------ orphaned runs --
ORPHAN_PY = r"""
import os, subprocess, sys, time
out, args = sys.argv[1], sys.argv[2:]
launcher = os.getpid()
pid = os.fork()
if pid:                       # the launcher: waits for the middle only
    os.waitpid(pid, 0)
    sys.exit(0)
os.setsid()
middle = os.getpid()
if os.fork():                 # the middle: exits, orphaning its child
    os._exit(0)
while os.getppid() == middle:
    time.sleep(0.01)
with open(os.path.join(out, "ppid"), "w") as f:
    f.write(f"{os.getppid()} {launcher} {middle}")
cp = subprocess.run(args, capture_output=True, text=True)
for k, v in (("stdout", cp.stdout), ("stderr", cp.stderr),
             ("rc", str(cp.returncode))):
    with open(os.path.join(out, k), "w") as f:
        f.write(v)
os.rename(os.path.join(out, "rc"), os.path.join(out, "done"))
"""


def orphaned(rig, tmp_path, *args, env=None):
    """Run build/nfslice ARGS inside `ip netns exec DUT` as an orphan: a
    double fork, the launcher and `ip netns exec` gone before nfslice
    starts, so no ancestor leads to the host's mount namespace (as under
    a daemon or systemd). ENV is added to its environment. Returns (rc,
    stdout, stderr)."""
    out = tmp_path / "orphan"
    out.mkdir()
    launcher = rig.exec("dut", PY, "-c", ORPHAN_PY, out, NFSLICE, *args,
                        env=env)
    assert launcher.returncode == 0, describe(launcher)
    poll(lambda: (out / "done").exists(), 60, "the orphaned nfslice",
         interval=0.05)
    rc, stdout, stderr, lineage = (
        (out / k).read_text() for k in ("done", "stdout", "stderr", "ppid"))
    shutil.rmtree(out)
    # Its parent is PID 1 or a subreaper: neither of its launchers.
    ppid, launcher_pid, middle = lineage.split()
    assert ppid not in (launcher_pid, middle), lineage
    return int(rc), stdout, stderr


def test_orphaned_nfslice_finds_the_hosts_bpffs(clean, tmp_path):
    """nfslice orphaned inside `ip netns exec` (its own /sys, no bpffs,
    parent PID 1 or a subreaper): attach pins in the host's bpffs, where
    they outlive it; status from another orphan finds them; no "mount a
    bpffs" advice, since one is mounted."""
    rig = clean
    rc, out, err = orphaned(rig, tmp_path, "attach", "--name", "orph",
                            "dut0", "dut1")
    try:
        assert rc == 0, err
        assert "mount" not in err, err
        assert f"pins: {rig.pin_dir('orph')}" in out
        # The orphan's mount namespace is gone; the pins are not.
        assert all((rig.pin_dir("orph") / p).exists() for p in PIN_NAMES)
        rc, out, err = orphaned(rig, tmp_path, "status", "--name", "orph",
                                "--json")
        assert rc == 0, err
        assert json.loads(out)["dir"] == str(rig.pin_dir("orph"))
        assert rig.status("orph")["healthy"] is True
    finally:
        if rig.pin_dir("orph").exists():
            rig.detach("orph")


def test_orphan_without_bpffs_is_told_to_mount(clean, tmp_path):
    """Where there is really no bpffs (NFSLICE_BPFFS names a plain
    directory) the orphan gets the advice to mount one."""
    rc, out, err = orphaned(clean, tmp_path, "status",
                            env={"NFSLICE_BPFFS": "/tmp"})
    assert rc == 1 and out == "", (out, err)
    assert "no bpffs at /tmp" in err and "mount -t bpf bpf /tmp" in err, err
