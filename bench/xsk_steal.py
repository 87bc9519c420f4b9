# SPDX-License-Identifier: GPL-2.0
"""exp_xsk.py's steal part (issue 19 item 6): AF_XDP on a vCPU that the
hypervisor takes away. Loss-free rates on this VM swing with steal (time
the hypervisor gives the vCPU to someone else, the 8th column of a
/proc/stat cpuN line, proc(5)), so the part measures what steal does not
move: CPU time per packet at a fixed offered load well under the loss knee,
rxbisect and privring interleaved in one run (ABAB...), and, from the same
trials, loss against the steal of the CPUs involved.

CPU time counted per trial, per delivered packet (ns):
  nf       nfslice-nf's run time, all its threads: the first field of
           /proc/PID/task/*/schedstat (exact ns; the process's utime+stime
           from /proc/PID/stat, 10 ms ticks, is kept beside it as nf_ust)
  softirq  softirq + irq of /proc/stat on the generator's and the NF's CPU
           (the veth receive, the copy into the UMEM, the wake-ups; tick
           samples, so per trial only to ~10 ms: the summary pools the
           trials, sum of time over sum of packets)
  total    nf + softirq
The generator's own time (the load) is not counted.

Pure functions of recorded trials (no rig): order(), steal_ns(),
trial_row(), summarize(), print_steal(); exp_xsk.py runs the trials.
"""
import statistics

from nfsl import bench as B
from nfsl import cpustat
from nfsl import ndr as N

ARCHS = ("privring", "rxbisect")        # A and B of the ABAB order
LOADS = (100000, 300000)                # offered pps: under every NDR seen here
THRESHOLD_MS = 10.0                     # steal per trial (both CPUs) that splits the trials
SIGN_PAIRS = 6                          # pairs all on one side by chance: p = 2/2^6 = 0.031
KIND = "steal"


def order(archs, reps, loads):
    """The run's blocks, in order: [(rep, arch, [load, ...])]. Within every
    rep the archs run in the order given (A B A B ... over the run: both see
    the same drift of the machine's load); a block is one nfslice-nf session
    with one trial per load, the loads ascending in even reps and
    descending in odd ones."""
    if reps < 1 or not archs or not loads:
        raise ValueError("order: reps >= 1 and at least one arch and one load")
    out = []
    for rep in range(reps):
        ls = list(loads) if rep % 2 == 0 else list(reversed(loads))
        for arch in archs:
            out.append((rep, arch, ls))
    return out


def steal_ns(before, after, cpus):
    """Steal between two cpustat snapshots (cpustat.snapshot(), or
    {"mono_ns", "cpus": cpustat.parse_stat(text), "softirqs": {}}) on
    CPUS: {"per_cpu": {cpu: ns}, "total": ns}. A CPU missing from either
    snapshot raises SystemExit naming it (cpustat.delta)."""
    d = cpustat.delta(before, after, cpus=list(cpus))
    per = {c: r["steal_ns"] for c, r in d["cpus"].items()}
    return {"per_cpu": per, "total": sum(per.values())}


def trial_row(rec):
    """One steal trial as a table row: its load, offered/sent/delivered
    frames, loss, steal ms (sum and per CPU over rec["cpus"], the CPUs
    the trial recorded) and CPU ns per delivered packet (module doc).
    Packets: the delivered ones (a trial that delivered none has None)."""
    cpus = rec.get("cpus") or {}
    got = rec.get("delivered") or 0
    cpu = rec.get("cpu") or {}
    soft = sum(c.get("softirq_ns", 0) for c in cpus.values())
    per = (lambda ns: ns / got if got and ns is not None else None)
    nf = per(cpu.get("sched_ns"))
    sq = per(soft) if cpus else None
    return {"rep": rec.get("rep"), "arch": rec.get("arch"), "load_pps": rec.get("load_pps"),
            "offered_pps": rec.get("offered_pps"), "sent": rec.get("sent"),
            "delivered": rec.get("delivered"), "loss": rec.get("loss"),
            "loss_frac": rec.get("loss_frac"),
            "steal_ms": sum(c.get("steal_ns", 0) for c in cpus.values()) / 1e6,
            "steal_ms_cpu": {k: c.get("steal_ns", 0) / 1e6 for k, c in cpus.items()},
            "wall_ms": max((c.get("wall_ns", 0) for c in cpus.values()), default=0) / 1e6,
            "other_frac": rec.get("nf_cpu_other_frac"),
            "nf_ns": nf, "nf_ust_ns": per(cpu.get("utime_stime_ns")),
            "softirq_ns": sq, "total_ns": nf + sq if nf is not None and sq is not None
            else None, "softirq_total_ns": soft, "nf_total_ns": cpu.get("sched_ns")}


def _spread(xs):
    xs = [x for x in xs if x is not None]
    return {"median": B.median(xs), "min": min(xs) if xs else None,
            "max": max(xs) if xs else None, "n": len(xs)}


def _corr(xs, ys):
    """Pearson's r of the pairs, None when one side is constant or n < 3."""
    pts = [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None]
    if len(pts) < 3:
        return None
    try:
        return statistics.correlation([x for x, _ in pts], [y for _, y in pts])
    except statistics.StatisticsError:
        return None


def _side(ratios):
    """Where the pair ratios lie: "above 1" / "below 1" when every one is
    on that side, else "both sides"."""
    rs = [r for r in ratios if r is not None]
    if rs and all(r > 1 for r in rs):
        return "above 1"
    if rs and all(r < 1 for r in rs):
        return "below 1"
    return "both sides"


def summarize(trials, threshold_ms=THRESHOLD_MS, archs=ARCHS):
    """The steal part's summary from the recorded trials (kind "steal"):
    {"threshold_ms", "rows": [trial_row], "loads": [per load: per arch CPU
    ns per packet (median, min, max of the trials; softirq also pooled),
    the B/A pair ratios of the same rep (nf and total), loss below and above
    the steal threshold, Pearson r of steal ms against loss], "claims":
    [text]}. A is archs[0] (privring), B archs[1] (rxbisect)."""
    rows = [trial_row(r) for r in trials if r.get("kind") == KIND]
    out = {"threshold_ms": threshold_ms, "rows": rows, "loads": [], "claims": []}
    if not rows:
        return out
    a, b = archs
    for load in sorted({r["load_pps"] for r in rows}):
        rs = [r for r in rows if r["load_pps"] == load]
        L = {"load_pps": load, "arch": {}, "pairs": [], "steal": {}}
        for arch in archs:
            xs = [r for r in rs if r["arch"] == arch]
            got = sum(r["delivered"] or 0 for r in xs)
            L["arch"][arch] = {
                "trials": len(xs), "nf_ns": _spread([r["nf_ns"] for r in xs]),
                "softirq_ns": _spread([r["softirq_ns"] for r in xs]),
                "softirq_ns_pooled": sum(r["softirq_total_ns"] for r in xs) / got
                if got else None,
                "nf_ns_pooled": sum(r["nf_total_ns"] or 0 for r in xs) / got
                if got else None,
                "total_ns": _spread([r["total_ns"] for r in xs]),
                "lossy": sum(1 for r in xs if r["loss_frac"] is not None
                             and not N.passes(r["loss_frac"])),
                "loss_median": B.median([r["loss_frac"] for r in xs])}
        for rep in sorted({r["rep"] for r in rs}):
            ra = next((r for r in rs if r["rep"] == rep and r["arch"] == a), None)
            rb = next((r for r in rs if r["rep"] == rep and r["arch"] == b), None)
            if ra and rb:
                L["pairs"].append({"rep": rep, "nf": B.ratio(rb["nf_ns"], ra["nf_ns"]),
                                   "total": B.ratio(rb["total_ns"], ra["total_ns"])})
        for k in ("nf", "total"):
            sp = _spread([p[k] for p in L["pairs"]])
            sp["side"] = _side([p[k] for p in L["pairs"]])
            L[f"ratio_{k}"] = sp
        for name, sel in (("below", lambda r: r["steal_ms"] < threshold_ms),
                          ("above", lambda r: r["steal_ms"] >= threshold_ms)):
            xs = [r for r in rs if sel(r)]
            L["steal"][name] = {
                "trials": len(xs),
                "lossy": sum(1 for r in xs if r["loss_frac"] is not None
                             and not N.passes(r["loss_frac"])),
                "loss_median": B.median([r["loss_frac"] for r in xs]),
                "loss_max": max((r["loss_frac"] for r in xs if r["loss_frac"] is not None),
                                default=None),
                "steal_ms_median": B.median([r["steal_ms"] for r in xs])}
        L["corr_steal_loss"] = _corr([r["steal_ms"] for r in rs], [r["loss_frac"] for r in rs])
        # the other thief on a shared VM: other work on the NF's CPU
        L["corr_other_loss"] = _corr([r["other_frac"] for r in rs],
                                     [r["loss_frac"] for r in rs])
        lossy = [r for r in rs if r["loss_frac"] is not None and not N.passes(r["loss_frac"])]
        L["other_median"] = {"lossy": B.median([r["other_frac"] for r in lossy]),
                             "loss_free": B.median([r["other_frac"] for r in rs
                                                    if r not in lossy])}
        out["loads"].append(L)
        out["claims"] += claims(L, threshold_ms, a, b)
    return out


def claims(L, thr, a, b):
    """What one load's numbers say: the CPU ratio holds on this VM when
    every pair lies on one side of 1 and there are SIGN_PAIRS pairs or more
    (a sign test, p <= 0.031; with fewer it reads "holds?"). Any trial
    that lost >= 0.1% at a load under the loss knee says the loss-free
    rate needs dedicated cores; the claim says whether the loss followed
    steal (a larger lossy share at steal >= THR and r >= 0.3) or not."""
    mpps = L["load_pps"] / 1e6
    out = []
    for k, what in (("nf", "nfslice-nf CPU"), ("total", "nfslice-nf + softirq CPU")):
        r = L[f"ratio_{k}"]
        if not r["n"]:
            continue
        if r["side"] == "both sides":
            verdict = "not resolved on this VM"
        elif r["n"] >= SIGN_PAIRS:
            verdict = "holds on this VM"
        else:
            verdict = f"holds? (fewer than {SIGN_PAIRS} pairs: p > 0.05)"
        out.append(f"{what} per packet {b}/{a} at {mpps:.3f} Mpps: {r['median']:.2f} "
                   f"[{r['min']:.2f}..{r['max']:.2f}] over {r['n']} pairs, every pair "
                   f"{r['side']}: {verdict}")
    lo, hi = L["steal"]["below"], L["steal"]["above"]
    lossy = lo["lossy"] + hi["lossy"]
    if not lossy:
        out.append(f"loss at {mpps:.3f} Mpps: no trial lost >= 0.1% ({lo['trials']} "
                   f"with steal < {thr:g} ms, {hi['trials']} with more)")
    else:
        frac = (lambda g: g["lossy"] / g["trials"] if g["trials"] else 0)
        r, om = L["corr_steal_loss"], L["other_median"]
        follows = frac(hi) > frac(lo) and r is not None and r >= 0.3
        out.append(f"loss at {mpps:.3f} Mpps: {lossy} of {lo['trials'] + hi['trials']} "
                   f"trials lost >= 0.1%: {hi['lossy']} of {hi['trials']} with steal >= "
                   f"{thr:g} ms, {lo['lossy']} of {lo['trials']} below, r(steal, loss) "
                   f"{N.fmt(r, '{:.2f}')}; other work on the NF's CPU (median) "
                   f"{_f(_pct(om['lossy']))}% in the lossy trials, "
                   f"{_f(_pct(om['loss_free']))}% in the others: "
                   + ("loss follows steal" if follows else "loss does not follow steal")
                   + "; a loss-free rate needs dedicated cores")
    return out


def _pct(x):
    return 100 * x if x is not None else None


def _f(x, spec="{:.0f}"):
    return N.fmt(x, spec)


def print_steal(S):
    """The per-trial table, the per-load summary and the claims."""
    if not S.get("rows"):
        return
    B.print_table("AF_XDP under steal: per trial (1q, 1514 B rxdrop unsliced; steal ms "
                  "of the generator's and the NF's CPU; other %: the NF's CPU busy with "
                  "anything but nfslice-nf; ns of CPU per delivered packet: nf = "
                  "nfslice-nf schedstat, softirq = /proc/stat softirq+irq of both CPUs)",
                  ["rep", "arch", "load Mpps", "offered", "sent", "delivered", "loss",
                   "loss %", "steal ms", "other %", "nf ns", "nf utime+stime ns",
                   "softirq ns", "total ns"],
                  [[r["rep"], r["arch"], f"{r['load_pps'] / 1e6:.3f}",
                    _f(r["offered_pps"]), r["sent"], r["delivered"], r["loss"],
                    _f(100 * r["loss_frac"] if r["loss_frac"] is not None else None,
                       "{:.3f}"),
                    _f(r["steal_ms"], "{:.1f}"),
                    _f(100 * r["other_frac"] if r["other_frac"] is not None else None),
                    _f(r["nf_ns"]), _f(r["nf_ust_ns"]),
                    _f(r["softirq_ns"]), _f(r["total_ns"])] for r in S["rows"]])
    rows = []
    for L in S["loads"]:
        for arch, x in L["arch"].items():
            rows.append([f"{L['load_pps'] / 1e6:.3f}", arch, x["trials"],
                         f"{_f(x['nf_ns']['median'])} [{_f(x['nf_ns']['min'])}.."
                         f"{_f(x['nf_ns']['max'])}]", _f(x["softirq_ns_pooled"]),
                         f"{_f(x['total_ns']['median'])} [{_f(x['total_ns']['min'])}.."
                         f"{_f(x['total_ns']['max'])}]", f"{x['lossy']}/{x['trials']}",
                         _f(_pct(x["loss_median"]), "{:.3f}")])
    B.print_table("CPU ns per packet at a fixed load (median [min..max] of the trials; "
                  "softirq pooled: sum of its time over sum of packets); trials that lost "
                  ">= 0.1%",
                  ["load Mpps", "arch", "trials", "nf ns", "softirq ns pooled",
                   "total ns", "lossy", "loss median %"], rows)
    thr = S["threshold_ms"]
    B.print_table(f"Loss against steal (threshold {thr:g} ms per trial; lossy: loss >= 0.1%)",
                  ["load Mpps", "steal", "trials", "lossy", "loss median %", "loss max %",
                   "steal median ms", "r(steal, loss)", "r(other, loss)"],
                  [[f"{L['load_pps'] / 1e6:.3f}", f"{'<' if k == 'below' else '>='} {thr:g} ms",
                    s["trials"], s["lossy"],
                    _f(100 * s["loss_median"] if s["loss_median"] is not None else None,
                       "{:.3f}"),
                    _f(100 * s["loss_max"] if s["loss_max"] is not None else None, "{:.3f}"),
                    _f(s["steal_ms_median"], "{:.1f}"),
                    _f(L["corr_steal_loss"], "{:.2f}") if k == "below" else "",
                    _f(L["corr_other_loss"], "{:.2f}") if k == "below" else ""]
                   for L in S["loads"] for k, s in L["steal"].items()])
    print("\nsteal claims:")
    for c in S["claims"]:
        print(f"  {c}")
