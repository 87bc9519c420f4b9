# SPDX-License-Identifier: GPL-2.0
"""The fixtures and helpers of the nfslice CLI tests (test_cli*.py): the
module's rig, the `clean` check that DUT interfaces are bare before and
after a test, the `domain` factory, and the error assertions."""
import json
import os

import pytest

from nfsl.rig import describe, must, name, possible_cpus  # noqa: F401


PREFIX = name("cli")
PIN_NAMES = {"store", "config", "counters", "cursor", "splicer", "netns",
             "chain", "parklog", "mgr_counters", "residency", "tenant_cursor",
             "tenant_counters", "tenant_prefix", "tenant_vlan", "events",
             "route_gen"}


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


def assert_error(cp, rc, *needles):
    """CP failed with exit status RC and its stderr contains every NEEDLE."""
    assert cp.returncode == rc, f"exit {cp.returncode}, stderr: {cp.stderr}"
    assert cp.stdout == "", f"an error printed to stdout: {cp.stdout}"
    for n in needles:
        assert n in cp.stderr, f"{n!r} not in stderr: {cp.stderr}"


# --------------------------------------------------- kernel defaults --
CT_LIBERAL = "net.netfilter.nf_conntrack_tcp_be_liberal"


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


# ------------------------------------------------------- list and gc --
def list_json(rig):
    """`nfslice list --json` (run in the DUT): {dir: domain}."""
    return {d["dir"]: d for d in json.loads(must(rig.nfslice("list",
                                                            "--json")))}
