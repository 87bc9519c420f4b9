#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The targets table that ends bench/suite.sh: every target statement the
experiments printed, as one table (experiment, target, measured, met).

Usage: bench/suite_targets.py NAME=LOG [NAME=LOG ...]

A statement is a clause of an output line (clauses split at '; ') that ends
in 'met' or 'NOT met', as the experiments print them, e.g. the datapath's
"target 1514 B udp: slicer 305.2 ns = 1.15x xdp-copy (target <= 1.5x): met"
or exp_iperf's "target slicing >= 0.9x (b): 0.805 NOT met". The target is
the parenthesised '(target <= X)' / '(>= X)' / '(target X)', or else what
the clause names before its first ': '; the rest is the measured value
(a clause with neither is all 'measured', its target '-'). A table header
ending in 'target met' is not a statement. A missing
or unreadable log is reported as such in the table. Exit status: 0 printed
(met or not), 2 usage.
"""
import re
import sys

VERDICT = re.compile(r"^(.*?)[:\s]\s*(NOT met|met)\s*$")
PAREN = re.compile(r"\s*\((?:target\s+)?([<>]=?\s*[^)]*|(?<=target )[^)]*)\)")


def statements(text):
    """(target, measured, met) of every target clause in TEXT, in order."""
    out = []
    for line in text.splitlines():
        if not re.search(r"\bmet\s*$|\bmet\s*;", line):
            continue
        for clause in line.strip().split("; "):
            m = VERDICT.match(clause.strip())
            if not m:
                continue
            body, met = m.group(1).strip().rstrip(":").strip(), m.group(2) == "met"
            if body.endswith("target"):     # a table's header: "... target met"
                continue
            p = PAREN.search(body)
            if p:
                target = p.group(1).strip()
                measured = (body[:p.start()] + body[p.end():]).strip()
                measured = re.sub(r"^target\s+", "", measured)
            elif ": " in body:
                target, measured = body.split(": ", 1)
                target = re.sub(r"^target\s+", "", target.strip())
                measured = measured.strip()
            else:                           # the target is in the words
                target, measured = "-", body
            out.append((target, measured, met))
    return out


def table(logs):
    """The table's lines for LOGS, a list of (experiment, path)."""
    rows = []
    for name, path in logs:
        try:
            with open(path, errors="replace") as f:
                found = statements(f.read())
        except OSError as e:
            rows.append((name, "-", f"no log: {e.strerror}", "-"))
            continue
        for target, measured, met in found:
            rows.append((name, target, measured, "met" if met else "NOT met"))
    w = [max([len(h)] + [len(r[i]) for r in rows])
         for i, h in enumerate(("experiment", "target", "measured"))]
    lines = [f"targets ({len(rows)}; {sum(r[3] == 'NOT met' for r in rows)} NOT met; "
             "reported, not asserted: they do not change the exit status)",
             f"{'experiment':<{w[0]}}  {'target':<{w[1]}}  {'measured':<{w[2]}}  met"]
    lines += [f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}" for r in rows]
    return lines


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help") or any("=" not in a for a in argv[1:]):
        print(__doc__.strip(), file=sys.stdout if len(argv) > 1 and argv[1] in
              ("-h", "--help") else sys.stderr)
        return 0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2
    print("\n".join(table([tuple(a.split("=", 1)) for a in argv[1:]])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
