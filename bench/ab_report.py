#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The report of bench/ab.sh: OLD against NEW, row by row, from the CSV
files (--csv) of interleaved runs of build/nfslice-bench-datapath.

Usage: bench/ab_report.py [--labels OLD,NEW] OLD1.csv NEW1.csv [OLD2.csv NEW2.csv ...]

The files come in pairs, OLD then NEW, one pair per round of ab.sh. A row
is (size, proto, program) of the driver's CSV; its value is the run's
ns_median (ns per packet, net of the empty program of its hook, median over
the run's rounds). Per row the report prints the median of the OLD runs and
of the NEW runs (ns/packet), the median of the per-pair ratios NEW/OLD with
their min..max across pairs, and a verdict:

  slower / faster  every pair's ratio is above / below 1.00: the row moved
                   beyond the pair-to-pair noise (sign test: an unchanged
                   row does this by chance with probability 2 / 2^pairs,
                   3% for 6 pairs, so among many rows expect a stray one)
  slower? faster?  the same with fewer than 6 pairs (p > 0.05): too few
                   pairs to call it; rerun with more
  -                the pairs disagree: within the noise
  only OLD / NEW   the row exists in one build only

Rows with a baseline also give the within-run ratio to it (the driver's
ratio column, e.g. slicer x xdp-copy-cold), median over the runs, OLD and
NEW. Exit status: 0 printed, 1 a file is unreadable or not the driver's
CSV, 2 usage.
"""
import csv
import statistics
import sys

KEY = ("size", "proto", "program")
P_MOVED = 0.05      # the sign test's level: 6 pairs or more can reach it
NEEDED = KEY + ("ns_median", "baseline", "ratio")


def read_run(path):
    """One driver CSV as {(size, proto, program): (ns_median, baseline,
    ratio or None)}. Raises ValueError naming the file if it is not the
    driver's CSV (header without the columns above, or a bad number)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
        if not rows or any(c not in rows[0] for c in NEEDED):
            raise ValueError(f"{path}: not a --csv file of "
                             f"nfslice-bench-datapath (needs columns "
                             f"{', '.join(NEEDED)})")
    out = {}
    for r in rows:
        try:
            ratio = float(r["ratio"]) if r["ratio"] else None
            out[(int(r["size"]), r["proto"], r["program"])] = (
                float(r["ns_median"]), r["baseline"], ratio)
        except ValueError as e:
            raise ValueError(f"{path}: bad number in row {r}: {e}") from None
    return out


def compare(pairs):
    """Rows of the report from PAIRS, a list of (old_run, new_run) as
    read_run returns them, in the first run's row order (then rows seen
    later). Each row is a dict: key, old, new (median ns/packet or None),
    ratio, rmin, rmax (NEW/OLD over the pairs, None if a side lacks the
    row), verdict, baseline, old_x, new_x (median ratio to the baseline)."""
    keys = []
    for old, new in pairs:
        for k in list(old) + list(new):
            if k not in keys:
                keys.append(k)
    rows = []
    for k in keys:
        olds = [o[k] for o, _ in pairs if k in o]
        news = [n[k] for _, n in pairs if k in n]
        row = {"key": k, "old": None, "new": None, "ratio": None,
               "rmin": None, "rmax": None, "baseline": "",
               "old_x": None, "new_x": None}
        for side, runs in (("old", olds), ("new", news)):
            if runs:
                row[side] = statistics.median(v[0] for v in runs)
                row["baseline"] = row["baseline"] or runs[0][1]
                xs = [v[2] for v in runs if v[2] is not None]
                row[side + "_x"] = statistics.median(xs) if xs else None
        both = [(o[k][0], n[k][0]) for o, n in pairs if k in o and k in n]
        if not olds or not news:
            row["verdict"] = "only NEW" if news else "only OLD"
        elif any(o <= 0 or n <= 0 for o, n in both):
            # net of the bias a tiny program can read 0 or below: no ratio
            row["verdict"] = "-"
        else:
            rs = [n / o for o, n in both]
            row.update(ratio=statistics.median(rs), rmin=min(rs), rmax=max(rs))
            # sign test: all n pairs on one side by chance has p = 2 / 2^n
            sure = "" if 2 / 2 ** len(rs) <= P_MOVED else "?"
            if len(rs) >= 2 and row["rmin"] > 1:
                row["verdict"] = "slower" + sure
            elif len(rs) >= 2 and row["rmax"] < 1:
                row["verdict"] = "faster" + sure
            else:
                row["verdict"] = "-"
        rows.append(row)
    return rows


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def report(pairs, labels=("OLD", "NEW")):
    """The report as text (see the module docstring)."""
    rows = compare(pairs)
    n = len(pairs)
    lines = [f"A/B: OLD {labels[0]} vs NEW {labels[1]}, {n} pairs; ns/packet "
             f"net of the empty program, median over the runs; NEW/OLD: median "
             f"of the per-pair ratios [min..max]",
             f"{'size':<5} {'proto':<5} {'program':<18} {'OLD ns':>8} "
             f"{'NEW ns':>8}  {'NEW/OLD [min..max]':<20} {'moved':<8} "
             f"{'x baseline OLD -> NEW'}"]
    moved = 0
    for r in rows:
        size, proto, prog = r["key"]
        if r["ratio"] is None:
            rat = "-"
        else:
            rat = (f"{r['ratio']:.3f} [{r['rmin']:.3f}..{r['rmax']:.3f}]")
        base = ""
        if r["baseline"] and (r["old_x"] is not None or r["new_x"] is not None):
            base = (f"{fmt(r['old_x'], '.2f')} -> {fmt(r['new_x'], '.2f')} "
                    f"{r['baseline']}")
        moved += r["verdict"].rstrip("?") in ("slower", "faster")
        lines.append(f"{size:<5} {proto:<5} {prog:<18} "
                     f"{fmt(r['old'], '8.1f')} {fmt(r['new'], '8.1f')}  "
                     f"{rat:<20} {r['verdict']:<8} {base}".rstrip())
    chance = 2 / 2 ** n if n >= 2 else 1.0
    lines.append(f"moved (every pair on one side of 1.00): {moved} of "
                 f"{len(rows)} rows; an unchanged row does so by chance "
                 f"with p = {chance:.3f} ({n} pairs"
                 + (")" if chance <= P_MOVED else "; '?': too few to call it, "
                    "6 pairs reach p <= 0.05)"))
    return "\n".join(lines)


def main(argv):
    args = argv[1:]
    labels = ("OLD", "NEW")
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(args) >= 2 and args[0] == "--labels":
        labels = tuple(args[1].split(",", 1)) if "," in args[1] else labels
        args = args[2:]
    if not args or len(args) % 2:
        print("ab_report.py: give CSV files in pairs, OLD then NEW "
              "(ab_report.py [--labels OLD,NEW] OLD1.csv NEW1.csv ...)",
              file=sys.stderr)
        return 2
    try:
        runs = [read_run(p) for p in args]
    except (OSError, ValueError) as e:
        print(f"ab_report.py: {e}", file=sys.stderr)
        return 1
    print(report(list(zip(runs[0::2], runs[1::2])), labels))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
