# SPDX-License-Identifier: GPL-2.0
"""What the docs state that the code decides (issue 17 §4): the counter
lists of README.md and docs/format.md against the X-macros of
include/nfsl_structs.h, and the drop event ring's record count against
NFSL_EVENTS_BYTES and struct nfsl_event. No rig: text and a compiler.
"""
import re
import subprocess

from nfsl.rig import COUNTERS, MGR_COUNTERS, ROOT

STRUCTS = ROOT / "include" / "nfsl_structs.h"


def xmacro(name):
    """The names listed by X-macro NAME of include/nfsl_structs.h, in
    order."""
    text = STRUCTS.read_text()
    m = re.search(rf"#define {name}\(X\)(.*?)\n\n", text, re.S)
    assert m, name
    return re.findall(r"\bX\((\w+)\)", m.group(1))


def test_readme_counter_list_is_the_code():
    """README's "Counters (`stats`)" paragraph names every datapath
    counter, then every TTL scan counter, in the order stats prints them
    (it lacked events_lost and skipped_csum)."""
    text = (ROOT / "README.md").read_text()
    para = text.split("Counters (`stats`): ", 1)[1].split("Their meaning", 1)[0]
    datapath, _, rest = para.partition("then the TTL scan's")
    mgr = rest.partition("plus")[0]
    assert re.findall(r"`(\w+)`", datapath) == xmacro("NFSL_COUNTERS")
    assert re.findall(r"`(\w+)`", mgr) == xmacro("NFSL_MGR_COUNTERS")


def test_format_counter_tables_are_the_code():
    """docs/format.md's counter tables, and the tests' own lists, are the
    X-macros."""
    text = (ROOT / "docs" / "format.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \|", text.split("## Counters", 1)[1]
                      .split("\n## ", 1)[0], re.M)
    assert rows == xmacro("NFSL_COUNTERS") + xmacro("NFSL_MGR_COUNTERS")
    assert list(COUNTERS) == xmacro("NFSL_COUNTERS")
    assert list(MGR_COUNTERS) == xmacro("NFSL_MGR_COUNTERS")


def test_event_ring_size_is_the_code():
    """The ring's record count in the docs and in nfsl_consts.h is
    NFSL_EVENTS_BYTES / (sizeof(struct nfsl_event) + 8 B header, rounded
    to 8), as the kernel's ring buffer stores records (was: 4096 in the
    header's comment, 3640 in the docs)."""
    exe = ROOT / "build" / "test_event_size"    # tests/integration/c/
    size, ring = map(int, subprocess.run([exe], capture_output=True,
                                         text=True, check=True).stdout.split())
    records = ring // ((size + 8 + 7) // 8 * 8)
    fmt = (ROOT / "docs" / "format.md").read_text()
    assert (f"{ring // 1024} KiB: {records} records of {size} B + 8 B "
            "header") in fmt
    assert f"The ring holds {records} records" in \
        (ROOT / "docs" / "manager.md").read_text()
    consts = (ROOT / "include" / "nfsl_consts.h").read_text()
    said = re.search(r"(\d+) events of (\d+) B \+ 8 B header", consts)
    assert said and (int(said[1]), int(said[2])) == (records, size), said


def test_readme_states_both_cost_ratios():
    """README states slicing's cost against no program and against a bare
    XDP_PASS, with the cause and the command and commit that measured it
    (it said "about 25%" where the demo showed 75-88% less)."""
    text = " ".join((ROOT / "README.md").read_text().split())
    assert "about 25%" not in text
    for needle in ("of the rig without any program",
                   "of the same rig with a bare XDP_PASS program",
                   "XDP turns TSO/GSO off on the peer and veth copies every "
                   "segment", "`bench/exp_iperf.py --runs 3 --offloads kernel "
                   "--dirs c2s --no-profile --duration 3` on commit",
                   "0.111x of no program and 0.751x of XDP_PASS",
                   "park topology behind a 100 Mbit/s link"):
        assert needle in text, needle
    platform = " ".join((ROOT / "docs" / "platform.md").read_text().split())
    assert "~0.93x with a bare XDP_PASS" not in platform
    assert "0.14-0.21x of no program with the kernel's offloads" in platform
