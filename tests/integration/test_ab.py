# SPDX-License-Identifier: GPL-2.0
"""bench/ab.sh, its report bench/ab_report.py, and the end of
bench/suite.sh (issue 19 item 5): usage errors exit 2 with a message that
names the problem and the fix, a commit that does not build (or whose
build is interrupted) exits 1 (143) and leaves no worktree, the A/B
report's numbers and verdicts on canned driver CSVs, the suite's target
table on canned experiment output, and the suite's exit status (0 with
targets NOT met, 1 when an experiment fails to run) with stand-in
experiments. No rig, no BPF, nothing built: about a second.
"""
import csv
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from nfsl.rig import ROOT, bench_module

ab_report = bench_module("ab_report")
suite_targets = bench_module("suite_targets")

AB = ROOT / "bench" / "ab.sh"
HEAD = "HEAD"


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, **kw)


def empty_commit():
    """A commit of the empty tree (no Makefile: make bench-build fails at
    once), made here so that no clone's history decides it; fixed names
    and dates give the same sha every time."""
    tree = run("git", "hash-object", "-t", "tree", "/dev/null").stdout.strip()
    who = {"GIT_AUTHOR_NAME": "nfslice test", "GIT_AUTHOR_EMAIL": "test@invalid",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_NAME": "nfslice test", "GIT_COMMITTER_EMAIL": "test@invalid",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    r = run("git", "commit-tree", tree, "-m", "test_ab: nothing to build",
            env=dict(os.environ, **who))
    assert r.returncode == 0, r
    return r.stdout.strip()


def worktrees():
    return run("git", "worktree", "list", "--porcelain").stdout


@pytest.mark.parametrize("args,msg", [
    ([], "give two revisions: bench/ab.sh OLD NEW [-- DRIVER-ARGS] "
         "(make ab OLD=REV NEW=REV)"),
    ([HEAD], "give two revisions"),
    (["no-such-rev", HEAD], "OLD 'no-such-rev' is not a commit of"),
    ([HEAD, "0123456789abcdef0123"], "NEW '0123456789abcdef0123' is not a commit of"),
    (["-n", "1", HEAD, HEAD], "-n '1': give a number of pairs in 2..100"),
    (["--pairs", "x", HEAD, HEAD], "--pairs 'x': give a number of pairs in 2..100"),
    (["--bogus", HEAD, HEAD], "unknown option '--bogus'"),
    ([HEAD, HEAD, "-s", "64"], "'-s' after OLD NEW: driver arguments go after '--'"),
    ([HEAD, HEAD, "--", "-r", "3", "--csv", "x"],
     "driver argument '--csv' is the script's own: leave it out"),
])
def test_ab_usage(args, msg):
    """Each usage error: exit 2, the problem and the fix on stderr, a
    pointer to --help, nothing on stdout, no worktree made."""
    before = worktrees()
    r = run(AB, *args)
    assert r.returncode == 2, r
    assert r.stdout == ""
    assert f"bench/ab.sh: {msg}" in r.stderr
    assert r.stderr.endswith("bench/ab.sh: see bench/ab.sh --help\n")
    if "commit of" in msg:
        assert "give a sha, tag or branch (git log --oneline)" in r.stderr
    assert worktrees() == before


def test_ab_help():
    """--help: exit 0, names the units, the lock and the exit statuses."""
    r = run(AB, "--help")
    assert r.returncode == 0 and r.stderr == ""
    for s in ("Usage: bench/ab.sh [OPTIONS] OLD NEW [-- DRIVER-ARGS...]",
              "ns/packet", "NEW/OLD", "for the run phase only", "--no-lock",
              "Exit status: 0", "1 a build or a\nrun failed", "2 usage"):
        assert s in r.stdout, s


def test_ab_commit_that_does_not_build():
    """A commit without a Makefile: exit 1, the commit and the fix named,
    its log kept, the worktree removed."""
    first = empty_commit()
    short = run("git", "rev-parse", "--short", first).stdout.strip()
    before = worktrees()
    r = run(AB, first, HEAD, "--", "-r", "1")
    assert r.returncode == 1, r
    log = ROOT / "build" / "ab" / f"build-{short}.log"
    assert (f"bench/ab.sh: commit {short} ({first}) does not build "
            f"(make bench-build; log {log}): pick a commit that builds" in r.stderr)
    assert "No rule to make target 'bench-build'" in log.read_text()
    log.unlink()
    assert worktrees() == before
    assert not (ROOT / "build" / "ab" / "bin" / first).exists()


def test_ab_interrupted_build_leaves_no_worktree(tmp_path):
    """SIGTERM while a commit builds: exit 143, the worktree removed. The
    build is a stand-in make (first on PATH) that says it started and
    waits, so nothing is compiled."""
    first = empty_commit()
    started = tmp_path / "started"
    fake = tmp_path / "make"
    fake.write_text(f"#!/bin/sh\ntouch {started}\nexec sleep 60\n")
    fake.chmod(0o755)
    before = worktrees()
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    p = subprocess.Popen([str(AB), first, HEAD], cwd=ROOT, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not started.exists():
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read()
            time.sleep(0.05)
        assert worktrees() != before            # the worktree is there
        os.killpg(p.pid, signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 143, err
    assert worktrees() == before
    short = run("git", "rev-parse", "--short", first).stdout.strip()
    (ROOT / "build" / "ab" / f"build-{short}.log").unlink()


HEADER = ("size,proto,program,hook,sliced,ns_median,ns_p25,ns_p75,ns_min,ns_max,"
          "raw_median,bias_median,duration_net_median,live_net_median,baseline,"
          "ratio,ratio_p25,ratio_p75,ratio_min,ratio_max,target,met").split(",")


def driver_csv(path, rows):
    """A CSV as nfslice-bench-datapath --csv writes it: ROWS of
    (program, ns_median, baseline, ratio) at 1514 B UDP."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        for prog, ns, base, ratio in rows:
            row = dict.fromkeys(HEADER, "")
            row.update(size=1514, proto="udp", program=prog, hook="xdp", sliced=1,
                       ns_median=f"{ns:.2f}", baseline=base,
                       ratio="" if ratio is None else f"{ratio:.3f}")
            w.writerow([row[h] for h in HEADER])
    return path


def canned(tmp_path):
    """Three pairs: slicer slower in every pair, the copy up and down,
    slicer-nofib only in NEW."""
    old = [[("xdp-copy-cold", 300, "", None), ("slicer", 600, "xdp-copy-cold", 2.0)],
           [("xdp-copy-cold", 310, "", None), ("slicer", 620, "xdp-copy-cold", 2.1)],
           [("xdp-copy-cold", 290, "", None), ("slicer", 580, "xdp-copy-cold", 1.9)]]
    new = [[("xdp-copy-cold", 330, "", None), ("slicer", 660, "xdp-copy-cold", 2.2),
            ("slicer-nofib", 400, "xdp-copy-cold", 1.3)],
           [("xdp-copy-cold", 279, "", None), ("slicer", 651, "xdp-copy-cold", 2.3),
            ("slicer-nofib", 410, "xdp-copy-cold", 1.4)],
           [("xdp-copy-cold", 290, "", None), ("slicer", 696, "xdp-copy-cold", 2.4),
            ("slicer-nofib", 420, "xdp-copy-cold", 1.5)]]
    files = []
    for i, (o, n) in enumerate(zip(old, new)):
        files += [driver_csv(tmp_path / f"old-{i}.csv", o),
                  driver_csv(tmp_path / f"new-{i}.csv", n)]
    return files


def test_ab_report_numbers(tmp_path):
    """Medians over the runs, the median and min..max of the per-pair
    ratios, the verdicts and the within-run ratio to the baseline."""
    r = run(sys.executable, ROOT / "bench" / "ab_report.py", "--labels", "aaa,bbb",
            *canned(tmp_path))
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0] == ("A/B: OLD aaa vs NEW bbb, 3 pairs; ns/packet net of the "
                        "empty program, median over the runs; NEW/OLD: median of "
                        "the per-pair ratios [min..max]")
    body = [ln.split() for ln in lines[2:5]]
    # copy: ratios 1.1, 0.9, 1.0: within the noise
    assert body[0] == ["1514", "udp", "xdp-copy-cold", "300.0", "290.0",
                       "1.000", "[0.900..1.100]", "-"]
    # slicer: ratios 1.1, 1.05, 1.2: slower in every pair, but 3 pairs
    # cannot reach p <= 0.05
    assert body[1] == ["1514", "udp", "slicer", "600.0", "660.0", "1.100",
                       "[1.050..1.200]", "slower?", "2.00", "->", "2.30",
                       "xdp-copy-cold"]
    assert body[2] == ["1514", "udp", "slicer-nofib", "-", "410.0", "-", "only",
                       "NEW", "-", "->", "1.40", "xdp-copy-cold"]
    assert lines[5] == ("moved (every pair on one side of 1.00): 1 of 3 rows; an "
                        "unchanged row does so by chance with p = 0.250 (3 pairs; "
                        "'?': too few to call it, 6 pairs reach p <= 0.05)")


def test_ab_report_faster_and_errors(tmp_path):
    """Every one of 6 pairs below 1: faster (p = 0.031); one pair at
    1.00: within the noise. Odd file count: exit 2; a file that is not
    the driver's CSV: exit 1 naming it."""
    k = (1514, "udp", "splicer")
    pairs = [({k: (400.0 + i, "tc-store", 1.4)}, {k: (390.0, "tc-store", 1.1)})
             for i in range(6)]
    (row,) = ab_report.compare(pairs)
    assert row["verdict"] == "faster"
    assert row["rmax"] == pytest.approx(390 / 400)
    pairs[0] = ({k: (390.0, "tc-store", 1.4)}, {k: (390.0, "tc-store", 1.1)})
    assert ab_report.compare(pairs)[0]["verdict"] == "-"
    files = canned(tmp_path)
    r = run(sys.executable, ROOT / "bench" / "ab_report.py", *files[:3])
    assert r.returncode == 2
    assert "give CSV files in pairs, OLD then NEW" in r.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("size,program\n64,slicer\n")
    r = run(sys.executable, ROOT / "bench" / "ab_report.py", files[0], bad)
    assert r.returncode == 1
    assert r.stderr == (f"ab_report.py: {bad}: not a --csv file of "
                        "nfslice-bench-datapath (needs columns size, proto, "
                        "program, ns_median, baseline, ratio)\n")


SUITE_OUT = """\
size  proto program            ns/pkt      [p25 .. p75] dur-xchk     live  baseline      ratio [p25..p75]   target met
target 1514 B udp: slicer 305.2 ns = 1.15x xdp-copy-cold (target <= 1.3x): met
target 1514 B udp: splicer 371.4 ns = 2.32x tc-store (target <= 1.3x): NOT met
  target slicing >= 0.9x (b): 0.805 NOT met; not slicing indistinguishable from (b): 0.953 (sign test p 0.03) NOT met
  rxdrop 1514 B into one queue (target 2 Mpps): paced NDR 0.50 Mpps (privring) NOT met; unpaced, loss < 0.1%: 0.70 Mpps (privring) met
  rxbisect, worker 0 stalled, others keep 1.013 (1q): met
a line that says nothing about targets
"""


def test_suite_target_table(tmp_path):
    """Every target clause of the experiments' output, one row each, met
    or NOT met (the datapath table's header, which ends in 'target met', is
    none); a missing log is a row saying so."""
    log = tmp_path / "x.log"
    log.write_text(SUITE_OUT)
    assert suite_targets.statements(SUITE_OUT) == [
        ("<= 1.3x", "1514 B udp: slicer 305.2 ns = 1.15x xdp-copy-cold", True),
        ("<= 1.3x", "1514 B udp: splicer 371.4 ns = 2.32x tc-store", False),
        ("slicing >= 0.9x (b)", "0.805", False),
        ("not slicing indistinguishable from (b)", "0.953 (sign test p 0.03)", False),
        ("2 Mpps", "rxdrop 1514 B into one queue: paced NDR 0.50 Mpps (privring)", False),
        ("unpaced, loss < 0.1%", "0.70 Mpps (privring)", True),
        ("-", "rxbisect, worker 0 stalled, others keep 1.013 (1q)", True)]
    lines = suite_targets.table([("dp", str(log)), ("nf", str(tmp_path / "none"))])
    assert lines[0] == ("targets (8; 4 NOT met; reported, not asserted: they do "
                        "not change the exit status)")
    assert lines[1].split() == ["experiment", "target", "measured", "met"]
    assert [ln.rsplit("  ", 1)[-1].strip() for ln in lines[2:]] == [
        "met", "NOT met", "NOT met", "NOT met", "NOT met", "met", "met", "-"]
    assert lines[-1].split()[:5] == ["nf", "-", "no", "log:", "No"]


def test_suite_usage():
    """bench/suite.sh: an unknown argument is a usage error (exit 2, the
    fix named); --help states what the exit status means."""
    r = run(ROOT / "bench" / "suite.sh", "--fast")
    assert r.returncode == 2
    assert r.stderr == ("bench/suite.sh: unknown argument '--fast': give --quick "
                        "or nothing (or QUICK=1)\n")
    r = run(ROOT / "bench" / "suite.sh", "--help")
    assert r.returncode == 0
    assert ("Exit status: 0 every experiment ran (whether or not its targets were met:\n"
            "read the table), 1 an experiment failed to run") in r.stdout
    assert "Targets NOT met never change the status." in r.stdout


EXPERIMENTS = ("throughput", "linkrate", "latency", "sizing", "iperf", "xsk", "nf",
               "migrate")


def fake_suite(tmp_path, failing=None):
    """bench/suite.sh and suite_targets.py copied into TMP_PATH/bench with
    stand-in experiments: each prints its arguments and one target NOT met,
    exit 0 (FAILING: exit 3 before its target)."""
    bench = tmp_path / "bench"
    bench.mkdir()
    for f in ("suite.sh", "suite_targets.py"):
        (bench / f).write_text((ROOT / "bench" / f).read_text())
    (bench / "suite.sh").chmod(0o755)
    (bench / "run.sh").write_text(
        "#!/bin/sh\necho \"run.sh $*\"\n"
        "echo 'target 1514 B udp: slicer 600.0 ns = 1.70x xdp-copy-cold "
        "(target <= 1.3x): NOT met'\n")
    (bench / "run.sh").chmod(0o755)
    for name in EXPERIMENTS:
        code = "sys.exit(3)\n" if name == failing else ""
        (bench / f"exp_{name}.py").write_text(
            "import sys\nprint('" + name + "', *sys.argv[1:])\n" + code +
            "print('  " + name + "_ratio: 0.50 (target >= 1): NOT met')\n")
    return bench / "suite.sh"


def test_suite_exit_status_is_whether_it_ran(tmp_path):
    """Targets NOT met: exit 0 and every one in the table. QUICK=1 passes
    the narrowed arguments."""
    r = run(fake_suite(tmp_path), env=dict(os.environ, QUICK="1"))
    assert r.returncode == 0, r
    out = r.stdout
    assert "run.sh --rounds 5 --sizes 1514 --no-live" in out
    assert "run.sh -q -N -l 0 -r 1000 -n 1 -s 1514 -p both -P slicer,xdp-copy-cold" in out
    assert "\nlatency --quick --loads 0,0.9\n" in out
    assert "\niperf --quick --no-profile\n" in out
    assert "\nnf --quick --nfs fw --parts ndr mix\n" in out
    assert "\nmigrate --quick --held 1000 --ops upgrade,ckpt,copy\n" in out
    assert ("targets (10; 10 NOT met; reported, not asserted: they do not "
            "change the exit status)") in out
    assert out.count("NOT met\n") == 2 * 10     # each printed, each in the table
    assert "(quick); exit 0: every experiment ran (targets do not change it)" in out
    assert (tmp_path / "bench" / "results" / "suite-nf.log").read_text() == (
        "nf --quick --nfs fw --parts ndr mix\n"
        "  nf_ratio: 0.50 (target >= 1): NOT met\n")


def test_suite_exit_status_when_one_failed(tmp_path):
    """An experiment that fails to run: the others still run, the table
    marks it FAILED, exit 1."""
    r = run(fake_suite(tmp_path, failing="xsk"))
    assert r.returncode == 1, r
    out = r.stdout
    assert "== bench: xsk FAILED (exit 3), see bench/results/suite-xsk.log" in out
    assert re.search(r"^xsk +\d+  FAILED \(exit 3\)$", out, re.M)
    assert re.search(r"^migrate +\d+  yes$", out, re.M)
    assert "targets (9; 9 NOT met;" in out
    assert out.endswith("exit 1: an experiment failed to run\n")
