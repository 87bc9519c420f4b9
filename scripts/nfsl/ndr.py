# SPDX-License-Identifier: GPL-2.0
"""The benchmarks' NDR search and its report (bench/exp_xsk.py, exp_nf.py).

NDR (no-drop rate, RFC 2544 §26.1 "throughput" with a loss bound instead
of zero): the highest offered rate whose trial loses less than LOSS_MAX of
its frames. Both benchmarks bracket it by geometric bisection: each step
tries the geometric mean of the bracket, so after K steps a bracket
[lo, hi] is (hi / lo)^(1 / 2^K) wide at any rate. A failed trial may be
repeated (at most RETRIES per search) when the caller says the failure
was not the receiver's (other work on its CPU, a store left dirty).

Rates are in frames per second; trials are the callers' dicts.
"""
from nfsl import bench as B

LOSS_MAX = 0.001            # NDR: loss < 0.1%
RETRIES = 2                 # repeats of failed trials per search


def passes(loss_frac):
    """Whether a trial with LOSS_FRAC (lost / expected, None when nothing
    was expected) counts as lossless: below LOSS_MAX."""
    return loss_frac is not None and loss_frac < LOSS_MAX


def bisect(lo, hi, steps, attempt, rate_key, may_retry=lambda r: True,
           retries=RETRIES):
    """Geometric bisection of [LO, HI] (frames/s) in STEPS steps.

    ATTEMPT(mid, lo) runs one trial at offered rate MID (LO: the bracket's
    lower end, for callers that prepare the DUT from it) and returns its
    dict with "pass" set. A failed trial is repeated once, at most RETRIES
    times per search, when MAY_RETRY(trial) says so; the repeated trial
    gets "retried": True. Returns (lo, hi, best, fail): the final bracket,
    the passing trial with the highest RATE_KEY (None if none passed) and
    the last failing one (None if none failed).
    """
    best = fail = None
    used = 0
    for _ in range(steps):
        mid = (lo * hi) ** 0.5
        r = attempt(mid, lo)
        if not r["pass"] and used < retries and may_retry(r):
            r["retried"] = True
            used += 1
            r = attempt(mid, lo)
        if r["pass"]:
            lo = mid
            if best is None or r[rate_key] > best[rate_key]:
                best = r
        else:
            hi = mid
            fail = r
    return lo, hi, best, fail


# ------------------------------------------------------------- report --
def fmt(x, f="{:.3f}"):
    """X formatted with F, "-" for None (a cell nothing measured)."""
    return "-" if x is None else f.format(x)


def fmt_scaled(x, div, f):
    """X / DIV formatted with F ("-" for None): Mpps, kpps."""
    return "-" if x is None else f.format(x / div)


def write_results(out, stem, res, rows, csvs=(), plots=None, log=print):
    """RES as OUT/STEM.json, its trials' ROWS as OUT/STEM.csv, each (name,
    rows) of CSVS as OUT/name, then PLOTS(out) (a failing plot is logged,
    not raised: the numbers are kept). Prints where everything went."""
    B.write_json(out / f"{stem}.json", res)
    B.write_csv(out / f"{stem}.csv", rows)
    names = [f"{stem}.csv"]
    for name, crows in csvs:
        B.write_csv(out / name, crows)
    files = []
    if plots:
        try:
            files = plots(out)
        except Exception as e:      # noqa: BLE001 (plots are optional)
            log(f"plots failed: {e!r}")
    print(f"\nresults: {out / (stem + '.json')}, " +
          ", ".join(names + [f.name for f in files]))
