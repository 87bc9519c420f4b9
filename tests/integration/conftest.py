# SPDX-License-Identifier: GPL-2.0
"""Fixtures of the nfslice integration suite.

Every test module builds its own rigs (scripts/rig.sh) and namespaces under
names of this run, nfrig.name(STEM) = "nfit-RUN-STEM" (RUN: a random id per
pytest run), which no other run, demo or benchmark on the machine takes, and
removes them in fixture finalizers: also when a test fails or is
interrupted. At the end of the session nothing of this run may be left
(nfrig.leftovers()): anything found is reported, removed, and fails the run.
The rigs run on kernel defaults (offloads as the kernel sets them, conntrack
untouched): what nfslice needs there, `nfslice attach` does itself.
Helpers: nfrig.py (rig, namespaces, nfslice CLI), nfpkt.py (crafted
packets).
"""
import os
import shutil
import signal

import pytest

from nfsl import rig as nfrig
from nfsl import tap as nftap
from nfsl.rig import NFSLICE, RIG_SH, Rig


def pytest_sessionstart(session):
    """Refuse to run without root or without the built CLI.

    A skip would hide a broken build behind a green run: fail loudly and
    name the fix instead.
    """
    problems = []
    if os.geteuid() != 0:
        problems.append("run as root: the tests build network namespaces "
                        "and load BPF programs")
    if not os.access(NFSLICE, os.X_OK):
        problems.append(f"{NFSLICE} is missing: build it with make")
    if not os.access(RIG_SH, os.X_OK):
        problems.append(f"{RIG_SH} is missing")
    for tool in ("ip", "tc", "nft", "ss", "tcpdump", "setpriv", "nsenter",
                 "bpftool", "curl", "iperf3"):
        if shutil.which(tool) is None:
            problems.append(f"{tool} is missing: run scripts/install-deps.sh")
    if problems:
        pytest.exit("integration tests cannot run: " + "; ".join(problems),
                    returncode=1)
    # A CI timeout sends SIGTERM: turn it into the KeyboardInterrupt pytest
    # answers by running the fixture finalizers, which remove the rigs.
    signal.signal(signal.SIGTERM, _interrupt)


# Test files that start nfsliced: the daemon manages every domain on the
# host (TTL eviction, metrics, gc), so two of them at once would evict and
# count each other's payloads. Under pytest-xdist (tests/run.sh) they run
# one after another in one worker.
HOST_DAEMON_FILES = {"test_bcc", "test_daemon_clients", "test_guard",
                     "test_guard_cache",
                     "test_manager", "test_manager_state", "test_migrate",
                     "test_retired", "test_tenants", "test_ttl", "test_unit"}
# Test files that time the generator's own pacing (pktgen's --burst-us and
# rate, the delay line, the latency sink, the rate-shaped topologies): the
# mark "solo" has tests/run.sh run them after the others, alone on the
# host, as a CPU shared with another test file would make them late.
SOLO_FILES = {"test_pktgen", "test_delay", "test_latency_sink",
              "test_topologies"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under `-n N --dist loadgroup` a file's tests run in order in one
    worker (its module rigs built once, as written): each file is an
    xdist group, and HOST_DAEMON_FILES are one group together. SOLO_FILES
    get the mark "solo" (before -m selects by it)."""
    for item in items:
        mod = item.module.__name__.rsplit(".", 1)[-1]
        group = "nfsliced" if mod in HOST_DAEMON_FILES else mod
        item.add_marker(pytest.mark.xdist_group(group))
        if mod in SOLO_FILES:
            item.add_marker(pytest.mark.solo)


def pytest_report_header(config):
    """Name this run's namespaces in the header (to find leftovers)."""
    return f"namespaces and rigs of this run: {nfrig.RUN_PREFIX}*"


def pytest_sessionfinish(session, exitstatus):
    """Check that the fixtures removed everything this run created.

    Leftovers are a cleanup bug: they are listed, removed (only names of
    this run, only pins of its namespaces) and fail the session.
    """
    # Retired keys are kept for their grace period after a detach; gc
    # removes them once their namespace is gone (the product's own
    # cleanup, exercised here): only what it leaves counts.
    nfrig.collect_retired()
    found = nfrig.leftovers()
    if not found:
        return
    nfrig.remove_leftovers()
    still = nfrig.leftovers()
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    msg = ("integration tests left behind (now removed):\n  " +
           "\n  ".join(found))
    if still:
        msg += "\ncould not remove:\n  " + "\n  ".join(still)
    if tr is not None:
        tr.write("\n")
        tr.write_sep("=", "leftovers", red=True)
        tr.write_line(msg, red=True)
    else:
        print(msg)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _interrupt(signum, frame):
    """SIGTERM handler: interrupt the session like Ctrl-C."""
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="module")
def rigs():
    """Factory of rigs for one test module: rigs(STEM) -> a built Rig.

    The rig's PREFIX is nfrig.name(STEM) ("nfit-RUN-STEM"; a STEM given as
    "nfit-foo" becomes "nfit-RUN-foo"): address its namespaces with
    rig.ns(ROLE), never by a literal name. Building a rig with the STEM of
    one built earlier in the module removes the earlier one first (a fresh
    rig: new conntrack table, same NAT ports). Every rig, with its processes and slicing domains, is
    removed when the module ends, whatever the outcome of its tests.
    """
    made = {}

    def make(stem):
        prefix = nfrig.name(stem)
        old = made.pop(prefix, None)
        if old is not None:
            old.destroy()
        rig = Rig(prefix)
        made[prefix] = rig
        return rig.up()

    yield make
    errors = []
    for rig in made.values():
        errors += rig.destroy()
    # A detach that fails in cleanup is an nfslice bug worth seeing; the
    # pins were removed by hand anyway (Rig.destroy).
    assert not errors, "cleanup: " + "\n".join(errors)


@pytest.fixture
def nicrig(request):
    """nftap.nic_lab() (cli - nic - dut - nic - srv), its namespaces named
    after the test module, removed (namespaces, processes, pins) whatever
    the test's outcome."""
    stem = request.module.__name__.removeprefix("test_")[:8]
    lab = nftap.Lab(stem, NFSLICE)
    try:
        nftap.nic_lab(lab)
        yield lab
    finally:
        problems = lab.destroy()
        assert not problems, problems
