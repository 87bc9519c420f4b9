# SPDX-License-Identifier: GPL-2.0
"""exp_xsk.py's report: the summary of its trials and sessions, the
targets it checks, the printed tables, the CSV rows and the plots."""
import math
import sys

from nfsl import bench as B
from nfsl import ndr as N
from xsk_rig import (
    ARCHS, COLORS, LOSS_MAX, PATHS, TARGET_POSTED, TARGET_RXDROP_PPS,
    TARGET_STALL)
import xsk_steal


# ------------------------------------------------------------ summary --
def fmt_mpps(x):
    return N.fmt_scaled(x, 1e6, "{:.3f}")


fmt = N.fmt


def summarize(a, trials, ndr, caps):
    S = {"ndr": [], "low": [], "latency": [], "slow": [], "traffic": [], "stall": [],
         "capacity": {f"{p}/{s}": c for (p, s), c in caps.items()}}
    keys = sorted({k[1:6] for k in ndr})
    for (path, nfname, size, sliced, flows) in keys:
        for arch in a.archs:
            rs = [ndr[k] for k in ndr if k[1:6] == (path, nfname, size, sliced, flows)
                  and k[6] == arch]
            if not rs:
                continue
            ws = [r.get("final_working_set") or {} for r in rs]
            live = [(r.get("at_ndr") or {}).get("working_set_live") or {} for r in rs]
            row = {"path": path, "nf": nfname, "size": size, "sliced": sliced,
                   "flows": flows, "arch": arch,
                   "ndr_pps": B.median([r["ndr_pps"] for r in rs]),
                   "ndr_pps_runs": [r["ndr_pps"] for r in rs],
                   "ndr_offered_pps": B.median([r.get("ndr_offered_pps") for r in rs]),
                   "upper_pps": B.median([r.get("upper_pps") for r in rs]),
                   "cap_pps": caps.get((path, size)),
                   "at_ndr_holds": [(r.get("at_ndr") or {}).get("pass") for r in rs],
                   "peak_posted": B.median([w.get("peak_posted") for w in ws]),
                   "peak_inflight": B.median([w.get("peak_inflight") for w in ws]),
                   "peak_written": B.median([w.get("peak_written") for w in ws]),
                   "pool": B.median([w.get("pool") for w in ws]),
                   "live_inflight_at_ndr": B.median([w.get("inflight") for w in live]),
                   "live_written_at_ndr": B.median([w.get("written") for w in live]),
                   "nf_cpu_other_frac": B.median([r.get("nf_cpu_other_frac") for r in rs])}
            row["ndr_gbps_l2"] = row["ndr_pps"] * size * 8 / 1e9 if row["ndr_pps"] else None
            up = [r["unpaced"] for r in rs if r.get("unpaced")]
            row["unpaced_pps"] = B.median([u["delivered_pps"] for u in up])
            row["unpaced_loss"] = B.median([u["loss_frac"] for u in up])
            for frac in (50, 90):
                ls = [r.get(f"lat_{frac}") for r in rs if r.get(f"lat_{frac}")]
                if ls:
                    row[f"p50_us_{frac}"] = B.median([x["p50_us"] for x in ls])
                    row[f"p99_us_{frac}"] = B.median([x["p99_us"] for x in ls])
                    row[f"lat_samples_{frac}"] = sum(x["samples"] for x in ls)
            S["ndr"].append(row)
    for r in trials:
        if r.get("kind") == "low":
            S["low"].append({k: r.get(k) for k in ("path", "arch", "nf", "size", "sliced",
                                                   "achieved_pps", "delivered", "loss_frac")}
                            | {"ns_per_pkt": (r.get("cpu_ns_per_pkt") or {}).get("sched_ns"),
                               "ns_per_pkt_workers":
                                   (r.get("cpu_ns_per_pkt") or {}).get("sched_workers_ns"),
                               "ns_per_pkt_utime_stime":
                                   (r.get("cpu_ns_per_pkt") or {}).get("utime_stime_ns"),
                               "live_written": (r.get("working_set_live") or {}).get("written"),
                               "live_inflight": (r.get("working_set_live") or {}).get("inflight")})
    # slow: per (path, arch, us) median of the trials; others = workers 1..
    for part, field in (("slow", "slow_us"), ("traffic", "share")):
        groups = {}
        for r in trials:
            if r.get("part") == part and r.get("kind") == part:
                groups.setdefault((r["path"], r["arch"], r[field]), []).append(r)
        for (path, arch, v), rs in sorted(groups.items()):
            el = [max(g["elapsed_s"] for g in r["gens"]) for r in rs]
            row = {"path": path, "arch": arch, field: v, "rate": rs[0].get("rate"),
                   "delivered_frac": B.median([1 - r["loss_frac"] for r in rs]),
                   "delivered_pps": B.median([r["delivered_pps"] for r in rs]),
                   "others_pps": B.median([sum(r["nfc"]["per_worker_rx"][1:]) / e
                                           for r, e in zip(rs, el)]),
                   "worker0_pps": B.median([r["nfc"]["per_worker_rx"][0] / e
                                            for r, e in zip(rs, el)]),
                   "worker0_share": B.median([r["nfc"]["per_worker_rx"][0] / max(r["delivered"], 1)
                                              for r in rs]),
                   "fill_empty": sum(r["nfc"]["kernel"]["rx_fill_empty"] for r in rs),
                   "ring_full": sum(r["nfc"]["kernel"]["rx_ring_full"] for r in rs)}
            S[part].append(row)
        base = {(x["path"], x["arch"]): x for x in S[part] if not x[field]}
        for x in S[part]:
            b = base.get((x["path"], x["arch"]))
            x["others_vs_base"] = B.ratio(x["others_pps"], b["others_pps"]) if b else None
            x["delivered_vs_base"] = B.ratio(x["delivered_pps"], b["delivered_pps"]) if b else None
    for r in trials:
        if r.get("part") == "stall" and r.get("kind") == "stalled":
            S["stall"].append({k: r.get(k) for k in (
                "path", "arch", "rate", "others_rx_pps", "others_vs_unstalled",
                "loss_frac", "delivered_pps")} | {
                "kernel": r["nfc"]["kernel"], "per_worker_rx": r["nfc"]["per_worker_rx"],
                "working_set_live": r.get("working_set_live")})
    S["steal"] = xsk_steal.summarize(trials, a.steal_threshold_ms)
    S["targets"] = targets(S, a.bisect)
    return S


def targets(S, bisect):
    # one bisection step: two NDRs closer than this are not told apart
    step = 64 ** (1 / 2 ** bisect) if bisect else None
    t = {"bisection_step": step}
    def find(**kw):
        for r in S["ndr"]:
            if all(r.get(k) == v for k, v in kw.items()):
                return r
        return None
    rows = []
    for path in PATHS:
        for size in (1514, 60):
            for sliced in (False, True):
                pr = find(path=path, nf="rxdrop", size=size, sliced=sliced, flows=64,
                          arch="privring")
                rb = find(path=path, nf="rxdrop", size=size, sliced=sliced, flows=64,
                          arch="rxbisect")
                if not (pr and rb and pr["ndr_pps"] and rb["ndr_pps"]):
                    continue
                posted = B.ratio(rb["peak_posted"], pr["peak_posted"])
                ndr_ratio = B.ratio(rb["ndr_pps"], pr["ndr_pps"])
                # the bisection's grid: offered rates, not the delivered ones
                grid_ratio = B.ratio(rb.get("ndr_offered_pps"), pr.get("ndr_offered_pps"))
                rows.append({"path": path, "size": size, "sliced": sliced,
                             "privring_ndr_pps": pr["ndr_pps"],
                             "rxbisect_ndr_pps": rb["ndr_pps"],
                             "ndr_ratio": ndr_ratio, "offered_ratio": grid_ratio,
                             "posted_ratio": posted,
                             # reached: the same grid point or above (rates
                             # are whole pps); "steps_below" says how close
                             "met": grid_ratio is not None and grid_ratio >= 1 - 1e-3
                             and posted is not None and posted <= TARGET_POSTED + 1e-9,
                             "steps_below": None if not (grid_ratio and step) else
                             round(-math.log(grid_ratio) / math.log(step), 2)
                             })
    t["rxbisect_reaches_privring_ndr_with_1_8_posted"] = rows
    st = [r for r in S["stall"] if r["arch"] == "rxbisect"]
    t["rxbisect_keeps_95pct_with_a_worker_stalled"] = [
        {"path": r["path"], "others_vs_unstalled": r["others_vs_unstalled"],
         "met": r["others_vs_unstalled"] is not None
         and r["others_vs_unstalled"] >= TARGET_STALL} for r in st]
    best = [r for r in S["ndr"] if r["path"] == "1q" and r["nf"] == "rxdrop"
            and r["size"] == 1514 and not r["sliced"] and r["flows"] == 64]
    if best:
        b = max(best, key=lambda r: r["ndr_pps"] or 0)
        u = max(best, key=lambda r: (r["unpaced_pps"] or 0)
                if (r["unpaced_loss"] or 1) < LOSS_MAX else 0)
        upps = u["unpaced_pps"] if (u["unpaced_loss"] or 1) < LOSS_MAX else None
        t["rxdrop_2mpps_1514_one_queue"] = {
            "best_ndr_arch": b["arch"], "ndr_pps": b["ndr_pps"],
            "best_unpaced_arch": u["arch"] if upps else None, "unpaced_pps": upps,
            "met_paced_ndr": (b["ndr_pps"] or 0) >= TARGET_RXDROP_PPS,
            "met_unpaced": (upps or 0) >= TARGET_RXDROP_PPS}
    return t


def print_summary(S):
    rows = []
    for r in S["ndr"]:
        ndr_s = fmt_mpps(r["ndr_pps"]) if r["ndr_pps"] else \
            ("<" + fmt_mpps(r["upper_pps"]) if r["upper_pps"] else "-")
        rows.append([r["path"], r["nf"], r["size"], "yes" if r["sliced"] else "no",
                     r["flows"], r["arch"], ndr_s,
                     fmt(r["ndr_gbps_l2"], "{:.2f}"), fmt_mpps(r["cap_pps"]),
                     (fmt_mpps(r["unpaced_pps"]) + "/" + fmt(r["unpaced_loss"], "{:.4f}"))
                     if r["unpaced_pps"] else "-",
                     fmt(r["peak_posted"], "{:.0f}"), fmt(r["live_inflight_at_ndr"], "{:.0f}"),
                     fmt(r["live_written_at_ndr"], "{:.0f}"),
                     fmt(r.get("p50_us_50"), "{:.1f}") + "/" + fmt(r.get("p99_us_50"), "{:.1f}"),
                     fmt(r.get("p50_us_90"), "{:.1f}") + "/" + fmt(r.get("p99_us_90"), "{:.1f}"),
                     fmt(r["nf_cpu_other_frac"], "{:.2f}")])
    B.print_table("No-drop rate (loss < 0.1%) per architecture (Fig. 6.4); working set in "
                  "frames; latency p50/p99 us at 50% / 90% of privring's NDR; other: "
                  "share of the NF's CPU busy with anything but nfslice-nf (median)",
                  ["path", "nf", "B", "sliced", "flows", "arch", "NDR Mpps", "Gbit/s",
                   "cap Mpps", "unpaced Mpps/loss", "posted", "inflight@NDR", "written@NDR",
                   "lat 50%", "lat 90%", "other"],
                  rows)
    if S["low"]:
        B.print_table("Low load (Fig. 6.9): nfslice-nf CPU ns per packet",
                      ["path", "nf", "sliced", "arch", "Mpps", "ns/pkt", "workers",
                       "utime+stime", "written"],
                      [[r["path"], r["nf"], "yes" if r["sliced"] else "no", r["arch"],
                        fmt_mpps(r["achieved_pps"]), fmt(r["ns_per_pkt"], "{:.0f}"),
                        fmt(r["ns_per_pkt_workers"], "{:.0f}"),
                        fmt(r["ns_per_pkt_utime_stime"], "{:.0f}"),
                        fmt(r["live_written"], "{:.0f}")] for r in S["low"]])
    for part, field, title in (("slow", "slow_us", "Processing variability (Fig. 6.7): "
                                "worker 0 sleeps after each burst"),
                               ("traffic", "share", "Traffic variability (Fig. 6.8): "
                                "share of frames in one flow of worker 0")):
        if S[part]:
            vs = "others_vs_base" if part == "slow" else "delivered_vs_base"
            B.print_table(title, ["path", "arch", field, "offered Mpps", "delivered",
                                  "others Mpps", vs.replace("_vs_", "/"), "w0 share",
                                  "fill_empty", "ring_full"],
                          [[r["path"], r["arch"], r[field], fmt_mpps(r["rate"]),
                            fmt(r["delivered_frac"]), fmt_mpps(r["others_pps"]),
                            fmt(r[vs]), fmt(r["worker0_share"], "{:.2f}"),
                            r["fill_empty"], r["ring_full"]] for r in S[part]])
    if S["stall"]:
        B.print_table("Worker 0 stalled: the other workers' rate against the unstalled "
                      "trial", ["path", "arch", "offered Mpps", "others Mpps", "ratio",
                                "delivered", "fill_empty", "ring_full"],
                      [[r["path"], r["arch"], fmt_mpps(r["rate"]),
                        fmt_mpps(r["others_rx_pps"]), fmt(r["others_vs_unstalled"]),
                        fmt(1 - r["loss_frac"] if r["loss_frac"] is not None else None),
                        r["kernel"]["rx_fill_empty"], r["kernel"]["rx_ring_full"]]
                       for r in S["stall"]])
    xsk_steal.print_steal(S.get("steal") or {})
    t = S["targets"]
    print("\ntargets:")
    if t.get("bisection_step"):
        print(f"  (one bisection step: x{t['bisection_step']:.3f})")
    for r in t.get("rxbisect_reaches_privring_ndr_with_1_8_posted", []):
        print(f"  rxbisect NDR / privring NDR {fmt(r['ndr_ratio'])} (offered "
              f"{fmt(r['offered_ratio'])}, {r['steps_below']} finest bisection steps below) "
              f"with posted ratio "
              f"{fmt(r['posted_ratio'])} ({r['path']}, {r['size']} B, "
              f"{'sliced' if r['sliced'] else 'unsliced'}): "
              f"{'met' if r['met'] else 'NOT met'}")
    for r in t.get("rxbisect_keeps_95pct_with_a_worker_stalled", []):
        print(f"  rxbisect, worker 0 stalled, others keep {fmt(r['others_vs_unstalled'])} "
              f"({r['path']}): {'met' if r['met'] else 'NOT met'}")
    x = t.get("rxdrop_2mpps_1514_one_queue")
    if x:
        print(f"  rxdrop 1514 B into one queue (target 2 Mpps): paced NDR "
              f"{fmt_mpps(x['ndr_pps'])} Mpps ({x['best_ndr_arch']}) "
              f"{'met' if x['met_paced_ndr'] else 'NOT met'}; unpaced, loss < 0.1%: "
              f"{fmt_mpps(x['unpaced_pps'])} Mpps ({x['best_unpaced_arch']}) "
              f"{'met' if x['met_unpaced'] else 'NOT met'}")
    sys.stdout.flush()


def csv_rows(trials):
    out = []
    for r in trials:
        row = {k: r.get(k) for k in ("part", "round", "kind", "path", "arch", "nf", "size",
                                      "sliced", "flows", "workers", "slow_us", "share",
                                      "rep", "load_pps",
                                      "offered_pps", "achieved_pps", "sent", "delivered",
                                      "loss_frac", "delivered_pps", "lost_before_nf",
                                      "pass", "gen_kept_up")}
        nf = r.get("nfc") or {}
        if "kernel" in nf:
            row.update({f"k_{k}": v for k, v in nf["kernel"].items()
                        if k in ("rx_dropped", "rx_ring_full", "rx_fill_empty")})
            row["steered"] = nf["steer"]["steered"]
            row["per_worker_rx"] = " ".join(map(str, nf["per_worker_rx"]))
        for k, v in (r.get("cpu_ns_per_pkt") or {}).items():
            row[f"cpu_{k}_per_pkt"] = v
        row["nf_cpu_other_frac"] = r.get("nf_cpu_other_frac")
        row["steal_ms"] = (sum(c.get("steal_ns", 0) for c in r["cpus"].values()) / 1e6
                           if r.get("cpus") else None)
        lv = r.get("working_set_live") or {}
        row["ws_live_written"] = lv.get("written")
        row["ws_live_inflight"] = lv.get("inflight")
        row["ws_peak_posted"] = (r.get("working_set_after") or {}).get("peak_posted")
        lat = r.get("latency") or {}
        row["p50_us"] = lat.get("p50_us")
        row["p99_us"] = lat.get("p99_us")
        out.append(row)
    return out


def plot_ndr(S, path_png):
    plt = B.plt()
    combos = sorted({(r["nf"], r["size"], r["sliced"]) for r in S["ndr"]},
                    key=lambda c: (c[0] != "rxdrop", -c[1], c[2]))
    if not combos:
        return
    ncol = min(3, len(combos))
    nrow = (len(combos) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 4.0 * nrow), squeeze=False)
    for ax in axes.flat[len(combos):]:
        ax.set_visible(False)
    for ax, (nfname, size, sliced) in zip(axes.flat, combos):
        cats = []
        for r in S["ndr"]:
            if (r["nf"], r["size"], r["sliced"]) == (nfname, size, sliced):
                c = (r["path"], r["flows"])
                if c not in cats:
                    cats.append(c)
        archs = [x for x in ARCHS if any(r["arch"] == x for r in S["ndr"])]
        w = 0.8 / max(len(archs), 1)
        for i, arch in enumerate(archs):
            for j, (path, flows) in enumerate(cats):
                r = next((r for r in S["ndr"] if (r["nf"], r["size"], r["sliced"], r["path"],
                                                  r["flows"], r["arch"]) ==
                          (nfname, size, sliced, path, flows, arch)), None)
                if not r:
                    continue
                y = (r["ndr_pps"] or 0) / 1e6
                x = j + i * w - 0.4 + w / 2
                ax.bar(x, y, w, color=COLORS[arch], label=arch if j == 0 else None)
                txt = f"{r['peak_posted']:.0f}" if r["peak_posted"] else ""
                if not r["ndr_pps"] and r["upper_pps"]:
                    txt += f" (<{r['upper_pps'] / 1e6:.2f})"
                ax.text(x, y, txt, ha="center", va="bottom", fontsize=6, rotation=90)
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels([f"{p}\n{'balanced' if f > 1 else 'one worker'}"
                            for p, f in cats], fontsize=8)
        ax.set_title(f"{nfname}, {size} B, {'sliced' if sliced else 'unsliced'}", fontsize=9)
        ax.set_ylabel("no-drop rate (Mpps)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle("nfslice-nf no-drop rate (loss < 0.1%); labels: frames posted to the "
                 "kernel (peak), (<x: no trial passed, NDR below x Mpps)", fontsize=9)
    B.save_figure(fig, path_png)


def plot_var(S, path_png):
    plt = B.plt()
    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    for ax, part, field, xl in ((axes[0][0], "slow", "slow_us",
                                 "worker 0 sleeps after each burst (us)"),
                                (axes[0][1], "traffic", "share",
                                 "share of frames in worker 0's flow")):
        for path, ls in (("1q", "-"), ("4q", "--")):
            for arch in ARCHS:
                rs = [r for r in S[part] if r["path"] == path and r["arch"] == arch]
                if rs:
                    ax.plot([r[field] for r in rs],
                            [(r["others_vs_base"] if part == "slow" else r["delivered_frac"])
                             or 0 for r in rs], ls, marker="o", color=COLORS[arch],
                            label=f"{arch} {path}")
        ax.set_xlabel(xl)
        ax.set_ylabel("other workers' rate / with no sleep" if part == "slow"
                      else "delivered / sent")
        ax.set_title("processing variability (Fig. 6.7)" if part == "slow"
                     else "traffic variability (Fig. 6.8)", fontsize=9)
        if part == "slow":
            ax.set_xscale("symlog", linthresh=100)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    ax = axes[1][0]
    lows = S["low"]
    if lows:
        cats = []
        for r in lows:
            c = (r["path"], r["nf"], r["sliced"])
            if c not in cats:
                cats.append(c)
        archs = [x for x in ARCHS if any(r["arch"] == x for r in lows)]
        w = 0.8 / max(len(archs), 1)
        for i, arch in enumerate(archs):
            for j, c in enumerate(cats):
                r = next((r for r in lows if (r["path"], r["nf"], r["sliced"]) == c
                          and r["arch"] == arch), None)
                if r:
                    ax.bar(j + i * w - 0.4 + w / 2, r["ns_per_pkt"] or 0, w,
                           color=COLORS[arch], label=arch if j == 0 else None)
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels([f"{p}\n{n}{' sliced' if sl else ''}" for p, n, sl in cats],
                           fontsize=7)
        ax.set_ylabel("nfslice-nf CPU ns per packet")
        ax.set_title(f"low load, 1514 B (Fig. 6.9)", fontsize=9)
        ax.legend(fontsize=7)
    ax = axes[1][1]
    st = S["stall"]
    if st:
        ax.bar(range(len(st)), [r["others_vs_unstalled"] or 0 for r in st],
               color=[COLORS[r["arch"]] for r in st])
        ax.axhline(TARGET_STALL, color="k", lw=0.8, ls=":")
        ax.set_xticks(range(len(st)))
        ax.set_xticklabels([f"{r['arch']}\n{r['path']}" for r in st], fontsize=7)
        ax.set_ylabel("other workers' rate, stalled / unstalled")
        ax.set_title("worker 0 stalled", fontsize=9)
    B.save_figure(fig, path_png)
