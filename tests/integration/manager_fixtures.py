# SPDX-License-Identifier: GPL-2.0
"""The rig, fixtures and helpers of the nfsliced tests (test_manager*.py):
the module's rig, a daemon started for one test, and `nfslice set`
through it."""
import os

import pytest

from nfload import Daemon
from nfsl.rig import name


DOMAIN = "mgr"


@pytest.fixture(scope="module")
def rig(rigs):
    """A rig whose DUT slices on both veths (domain "mgr")."""
    rig = rigs(name("mgr"))
    rig.attach("dut0", "dut1", name=DOMAIN)
    rig.prime_neighbors()
    return rig


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path)
    yield d
    d.stop()


def nfslice_set(rig, env, *args):
    """nfslice set --name mgr ARGS --json in the DUT; CompletedProcess."""
    return rig.nfslice("set", "--name", DOMAIN, *args, "--json",
                       env={**os.environ, **env})


def sliced(rig):
    return rig.stats(DOMAIN)["sliced"]
