# SPDX-License-Identifier: GPL-2.0
"""make demo (scripts/demo.sh) shows what slicing costs and where it pays
(issue 17 §4): three columns - no program, a bare XDP_PASS, slicing - with
goodput against both baselines, and the NF's bytes per delivered byte.
Short runs (--duration 1), its own rig prefix; the park part (about a
minute, bench/exp_linkrate.py) is skipped here (--no-park) and checked
by hand (docs/rig.md "The demo" has its numbers).
"""
import re

from nfsl.rig import ROOT, describe, name, run


def test_demo_three_columns():
    cp = run([ROOT / "scripts" / "demo.sh", "--duration", "1", "--no-park",
              "--prefix", name("demo")], timeout=600)
    assert cp.returncode == 0, describe(cp)
    out = cp.stdout
    assert re.search(r"\n\s+no program\s+XDP_PASS only\s+with slicing\n",
                     out), out
    rows = dict((m[1].strip(), m[2].split()) for m in re.finditer(
        r"\n  (  NF bytes per delivered byte|  goodput / XDP_PASS only"
        r"|result)\s+(.*)", out))
    assert rows["result"] == ["PASS", "PASS", "PASS"], out
    assert out.count("goodput / XDP_PASS only") == 3, out   # the TCP tests
    assert out.count("goodput / no program") == 5, out
    for m in re.finditer(r"NF bytes per delivered byte\s+(\S+)\s+(\S+)\s+"
                         r"(\S+)", out):
        plain, xdp, sliced = map(float, m.groups())
        assert plain > 0.9 and xdp > 0.9 and sliced < 0.1, m[0]
    assert "most of it is any XDP program's cost on a veth" in \
        " ".join(out.split()), out
