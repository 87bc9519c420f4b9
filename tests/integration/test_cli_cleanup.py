# SPDX-License-Identifier: GPL-2.0
"""The nfslice CLI (test_cli.py says what every test of it checks): what attach
and detach leave behind (failed attach, detach, a clsact it did not create),
the kernel defaults attach changes and restores, --version, help and errors
as JSON. One rig for the module (cli_fixtures.py)."""
import json
import os
import re
from pathlib import Path

import pytest

from nfsl.rig import NFSLICE, ROOT, describe, must, poll, run
from cli_fixtures import CT_LIBERAL, assert_error, clean, json_error, rig


# ------------------------------------------------------------- cleanup --
@pytest.fixture
def noxdp_dev(clean):
    """A macvlan noxdp0 on dut1 in the DUT: it has no native XDP, so the
    slicer's attach fails there. (A veth at MTU 9000 did until the slicer
    became multi-buffer, issue 20: it attaches at any MTU now.)"""
    rig = clean
    rig.check("dut", "ip", "link", "add", "noxdp0", "link", "dut1", "type",
              "macvlan", "mode", "bridge")
    try:
        rig.check("dut", "ip", "link", "set", "noxdp0", "up")
        yield "noxdp0"
    finally:
        rig.check("dut", "ip", "link", "del", "noxdp0")


def test_failed_attach_leaves_nothing(clean, noxdp_dev):
    """An attach failing on its second interface undoes the first one."""
    rig = clean
    assert rig.qdisc_kinds("dut", noxdp_dev) == ["noqueue"]
    cp = rig.nfslice("attach", "--name", "broken", "dut0", noxdp_dev)
    assert_error(cp, 1, f"attaching the slicer to {noxdp_dev} (XDP native) failed",
                 "try --mode skb")
    assert not rig.pin_dir("broken").exists()
    for dev in ("dut0", noxdp_dev):
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
