# SPDX-License-Identifier: GPL-2.0
"""Fixtures of the nfslice integration suite.

Every test module builds its own rigs (scripts/rig.sh) under a PREFIX that
starts with "nfit-" and no other user of the machine takes, and removes them
in fixture finalizers: also when a test fails or is interrupted. Helpers:
nfrig.py (rig, namespaces, nfslice CLI), nfpkt.py (crafted packets).
"""
import os
import shutil
import signal

import pytest

from nfrig import NFSLICE, RIG_SH, Rig


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


def _interrupt(signum, frame):
    """SIGTERM handler: interrupt the session like Ctrl-C."""
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="module")
def rigs():
    """Factory of rigs for one test module: rigs(PREFIX) -> a built Rig.

    Building a rig with the PREFIX of one built earlier in the module
    removes the earlier one first (a fresh rig: new conntrack table, same
    NAT ports). Every rig, with its processes and slicing domains, is
    removed when the module ends, whatever the outcome of its tests.
    """
    made = {}

    def make(prefix):
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
