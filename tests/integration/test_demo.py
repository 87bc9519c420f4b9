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


def readme_quick_start():
    """The commands of README.md's "Quick start" section: its ```sh
    block, as a user pastes it."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Quick start", 1)[1].split("\n## ", 1)[0]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


def test_readme_quick_start():
    """README's quick start works as written (issue 18 §5): run with this
    run's prefix for its namespaces instead of "qs", it exits 0, the
    client's TCP test completes, and the stats it prints show every sliced
    packet spliced and nothing stale, as the README says."""
    prefix = name("qs")
    script = readme_quick_start()
    assert script.startswith("P=qs "), script
    script = f"cd {ROOT}\nP={prefix} " + script[len("P=qs "):]
    try:
        cp = run(["bash", "-e", "-c", script], timeout=120)
    finally:
        # The script's own iperf3 server, should it still wait, then the
        # namespaces the script made.
        for ns in ("a", "dut", "b"):
            for pid in run(["ip", "netns", "pids", f"{prefix}-{ns}"]
                           ).stdout.split():
                run(["kill", pid])
            run(["ip", "netns", "del", f"{prefix}-{ns}"])
    assert cp.returncode == 0, describe(cp)
    assert re.search(r"sec .* receiver\n", cp.stdout), describe(cp)
    stat = dict(re.findall(r"^  (\w+) +(\d+)$", cp.stdout, re.M))
    assert int(stat["sliced"]) > 0, describe(cp)
    assert stat["spliced"] == stat["sliced"], describe(cp)
    assert stat["stale"] == "0", describe(cp)
    assert "domain 'default' detached" in cp.stdout + cp.stderr, describe(cp)
