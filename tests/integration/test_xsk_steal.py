# SPDX-License-Identifier: GPL-2.0
"""bench/xsk_steal.py, exp_xsk.py's steal part (issue 19 item 6): steal
from two canned /proc/stat texts, the ABAB order of the blocks, the
per-trial row, the summary's pair ratios, steal split and claims, the
printed table, and exp_xsk.py's usage errors for the part's options.
Canned inputs only: no rig, no BPF, about a second.
"""
import csv
import json
import subprocess
import sys

import pytest

from nfsl import cpustat
from nfsl.rig import ROOT, bench_module

xs = bench_module("xsk_steal")
T = cpustat.NS_PER_TICK

# /proc/stat: user nice system idle iowait irq softirq steal guest guest_nice
STAT0 = """cpu  900 0 900 9000 0 0 90 30 0 0
cpu0 500 0 400 4000 0 0 50 10 0 0
cpu1 400 0 500 5000 0 0 40 20 0 0
intr 12345 0 0
ctxt 999
"""
STAT1 = """cpu  990 0 990 9090 0 0 99 72 0 0
cpu0 540 0 430 4030 0 1 55 13 0 0
cpu1 450 0 560 5060 0 0 44 59 0 0
intr 12999 0 0
"""


def snap(text, mono_ns):
    return {"mono_ns": mono_ns, "cpus": cpustat.parse_stat(text), "softirqs": {}}


def test_parse_stat_reads_the_steal_column():
    c = cpustat.parse_stat(STAT0)
    assert sorted(c) == [0, 1]
    assert c[1]["steal"] == 20 * T and c[0]["softirq"] == 50 * T and c[0]["idle"] == 4000 * T


def test_steal_from_two_snapshots():
    s = xs.steal_ns(snap(STAT0, 0), snap(STAT1, 10**9), [0, 1])
    assert s == {"per_cpu": {0: 3 * T, 1: 39 * T}, "total": 42 * T}
    assert xs.steal_ns(snap(STAT0, 0), snap(STAT1, 10**9), [1])["total"] == 39 * T


def test_steal_of_a_cpu_not_in_the_snapshots_names_it():
    with pytest.raises(SystemExit, match="CPU 2 is not in the snapshots"):
        xs.steal_ns(snap(STAT0, 0), snap(STAT1, 1), [0, 2])


def test_order_alternates_the_archs_and_flips_the_loads():
    assert xs.order(("privring", "rxbisect"), 3, (100000, 300000)) == [
        (0, "privring", [100000, 300000]), (0, "rxbisect", [100000, 300000]),
        (1, "privring", [300000, 100000]), (1, "rxbisect", [300000, 100000]),
        (2, "privring", [100000, 300000]), (2, "rxbisect", [100000, 300000])]
    assert [b[1] for b in xs.order(xs.ARCHS, 4, [1])] == ["privring", "rxbisect"] * 4
    with pytest.raises(ValueError, match="reps >= 1"):
        xs.order(xs.ARCHS, 0, [1])


def rec(rep, arch, load, delivered, loss, steal_ms, sched_ns, soft_ns):
    """A recorded steal trial as Session.trial leaves it (the fields used)."""
    sent = delivered + loss
    return {"kind": "steal", "rep": rep, "arch": arch, "load_pps": load,
            "offered_pps": load, "sent": sent, "delivered": delivered, "loss": loss,
            "loss_frac": loss / sent, "nf_cpu_other_frac": 0.05,
            "cpu": {"sched_ns": sched_ns, "utime_stime_ns": 2 * sched_ns},
            "cpus": {"0": {"steal_ns": int(steal_ms * 1e6) // 2, "softirq_ns": soft_ns,
                           "wall_ns": 10**9},
                     "1": {"steal_ns": int(steal_ms * 1e6) // 2, "softirq_ns": 0,
                           "wall_ns": 10**9}}}


def test_trial_row_counts_per_delivered_packet():
    r = xs.trial_row(rec(0, "privring", 100000, 100000, 0, 30, 80_000_000, 20_000_000))
    assert r["nf_ns"] == 800 and r["nf_ust_ns"] == 1600 and r["softirq_ns"] == 200
    assert r["total_ns"] == 1000 and r["steal_ms"] == 30 and r["wall_ms"] == 1000
    assert r["steal_ms_cpu"] == {"0": 15, "1": 15} and r["loss_frac"] == 0
    none = xs.trial_row(rec(0, "privring", 1, 0, 5, 0, 1, 1))
    assert none["nf_ns"] is None and none["total_ns"] is None


# two reps at one load: rxbisect costs 1.25x and 1.5x privring's nf time;
# the one lossy trial (1%) is the one with 40 ms of steal
CANNED = [rec(0, "privring", 100000, 100000, 0, 2, 80_000_000, 20_000_000),
          rec(0, "rxbisect", 100000, 100000, 0, 4, 100_000_000, 20_000_000),
          rec(1, "privring", 100000, 99000, 1000, 40, 79_200_000, 19_800_000),
          rec(1, "rxbisect", 100000, 100000, 0, 6, 120_000_000, 20_000_000),
          {"kind": "bisect", "rep": 0, "arch": "privring", "load_pps": 100000}]


def test_summary_pairs_the_reps_and_splits_at_the_threshold():
    S = xs.summarize(CANNED, threshold_ms=10)
    assert len(S["rows"]) == 4 and len(S["loads"]) == 1
    L = S["loads"][0]
    assert [p["rep"] for p in L["pairs"]] == [0, 1]
    assert [p["nf"] for p in L["pairs"]] == [1.25, 1.5]
    assert L["ratio_nf"]["median"] == 1.375 and L["ratio_nf"]["side"] == "above 1"
    assert L["ratio_total"]["min"] == 1.2 and L["ratio_total"]["max"] == 1.4
    assert L["arch"]["privring"]["nf_ns"]["median"] == 800
    assert L["arch"]["privring"]["softirq_ns_pooled"] == 200
    assert L["arch"]["privring"]["lossy"] == 1 and L["arch"]["rxbisect"]["lossy"] == 0
    assert L["arch"]["privring"]["loss_median"] == 0.005
    assert L["steal"]["below"] == {"trials": 3, "lossy": 0, "loss_median": 0,
                                   "loss_max": 0, "steal_ms_median": 4}
    assert L["steal"]["above"]["trials"] == 1 and L["steal"]["above"]["lossy"] == 1
    assert L["steal"]["above"]["loss_max"] == 0.01
    assert round(L["corr_steal_loss"], 4) == 0.9959     # 0.27 / sqrt(980 x 7.5e-5)
    assert S["claims"] == [
        "nfslice-nf CPU per packet rxbisect/privring at 0.100 Mpps: 1.38 [1.25..1.50] "
        "over 2 pairs, every pair above 1: holds? (fewer than 6 pairs: p > 0.05)",
        "nfslice-nf + softirq CPU per packet rxbisect/privring at 0.100 Mpps: 1.30 "
        "[1.20..1.40] over 2 pairs, every pair above 1: holds? (fewer than 6 pairs: "
        "p > 0.05)",
        "loss at 0.100 Mpps: 1 of 4 trials lost >= 0.1%: 1 of 1 with steal >= 10 ms, "
        "0 of 3 below, r(steal, loss) 1.00; other work on the NF's CPU (median) 5% in "
        "the lossy trials, 5% in the others: loss follows steal; a loss-free rate needs "
        "dedicated cores"]


def test_loss_that_does_not_follow_steal_is_said():
    t = [rec(0, "privring", 100000, 90, 10, 0, 10, 0), rec(0, "rxbisect", 100000, 90, 10, 0, 10, 0),
         rec(1, "privring", 100000, 100, 0, 30, 10, 0), rec(1, "rxbisect", 100000, 90, 10, 30, 10, 0)]
    t[0]["nf_cpu_other_frac"] = 0.5
    S = xs.summarize(t, threshold_ms=10)
    assert S["loads"][0]["other_median"] == {"lossy": 0.05, "loss_free": 0.05}
    assert S["claims"][2] == (
        "loss at 0.100 Mpps: 3 of 4 trials lost >= 0.1%: 1 of 2 with steal >= 10 ms, "
        "2 of 2 below, r(steal, loss) -0.58; other work on the NF's CPU (median) 5% in "
        "the lossy trials, 5% in the others: loss does not follow steal; a loss-free rate "
        "needs dedicated cores")


def test_six_pairs_on_one_side_hold():
    t = [rec(rep, arch, 100000, 10, 0, 0, 10 if arch == "privring" else 9, 0)
         for rep in range(6) for arch in xs.ARCHS]
    S = xs.summarize(t, threshold_ms=10)
    assert S["claims"][0] == ("nfslice-nf CPU per packet rxbisect/privring at 0.100 Mpps: "
                              "0.90 [0.90..0.90] over 6 pairs, every pair below 1: holds on "
                              "this VM")


def test_pairs_on_both_sides_are_not_resolved_and_no_loss_is_said():
    t = [rec(0, "privring", 300000, 10, 0, 0, 10, 0), rec(0, "rxbisect", 300000, 10, 0, 0, 12, 0),
         rec(1, "privring", 300000, 10, 0, 0, 10, 0), rec(1, "rxbisect", 300000, 10, 0, 0, 8, 0)]
    S = xs.summarize(t, threshold_ms=10)
    assert S["loads"][0]["ratio_nf"]["side"] == "both sides"
    assert S["loads"][0]["corr_steal_loss"] is None        # constant: no r
    assert S["claims"][0].endswith("every pair both sides: not resolved on this VM")
    assert S["claims"][2] == ("loss at 0.300 Mpps: no trial lost >= 0.1% (4 with steal "
                              "< 10 ms, 0 with more)")
    assert xs.summarize([], 10) == {"threshold_ms": 10, "rows": [], "loads": [],
                                    "claims": []}


def test_printed_per_trial_table(capsys):
    xs.print_steal(xs.summarize(CANNED, threshold_ms=10))
    out = capsys.readouterr().out
    lines = out.splitlines()
    i = next(k for k, x in enumerate(lines) if x.startswith("AF_XDP under steal: per trial"))
    assert lines[i + 1].split() == ["rep", "arch", "load", "Mpps", "offered", "sent",
                                    "delivered", "loss", "loss", "%", "steal", "ms", "other",
                                    "%", "nf",
                                    "ns", "nf", "utime+stime", "ns", "softirq", "ns",
                                    "total", "ns"]
    assert lines[i + 4].split() == ["1", "privring", "0.100", "100000", "100000", "99000",
                                    "1000", "1.000", "40.0", "5", "800", "1600", "200", "1000"]
    assert "  loss at 0.100 Mpps: 1 of 4 trials lost >= 0.1%: 1 of 1" in out
    assert ">= 10 ms" in out
    row = next(x for x in lines if x.split()[:2] == ["0.100", "privring"])
    assert row.split() == ["0.100", "privring", "2", "800", "[800..800]", "200", "1000",
                           "[1000..1000]", "1/2", "0.500"]


@pytest.mark.parametrize("args, msg", [
    (["--steal-reps", "0"], "--steal-reps >= 1"),
    (["--steal-loads", "0"], "--steal-loads > 0 pps"),
    (["--steal-trial", "0.9"], "--steal-trial between 0.2 and 0.65 s"),
    (["--parts", "nosuch"], "invalid choice: 'nosuch'")])
def test_exp_xsk_steal_usage_errors(args, msg):
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "exp_xsk.py"), *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r
    assert msg in r.stderr


def test_exp_xsk_from_json_prints_the_steal_tables(tmp_path):
    """exp_xsk.py --from-json on canned steal trials: the report wires
    xsk_steal in (per-trial table, per-load summary, claims) and writes
    the CSV with the trial's rep, load and steal."""
    res = {"config": {"bisect": 5, "archs": list(xs.ARCHS), "steal_threshold_ms": 10.0,
                      "parts": ["steal"]},
           "trials": [dict(t, part="steal", path="1q", nf="rxdrop", size=1514, sliced=False,
                           flows=64, workers=1) for t in CANNED[:4]],
           "sessions": []}
    src = tmp_path / "in.json"
    src.write_text(json.dumps(res))
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "exp_xsk.py"), "--from-json",
                        str(src), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "AF_XDP under steal: per trial" in r.stdout
    assert ("  nfslice-nf CPU per packet rxbisect/privring at 0.100 Mpps: 1.38 [1.25..1.50] "
            "over 2 pairs") in r.stdout
    rows = list(csv.DictReader(open(tmp_path / "out" / "xsk.csv")))
    assert [(x["rep"], x["arch"], x["load_pps"], x["steal_ms"]) for x in rows] == [
        ("0", "privring", "100000", "2.0"), ("0", "rxbisect", "100000", "4.0"),
        ("1", "privring", "100000", "40.0"), ("1", "rxbisect", "100000", "6.0")]
