# SPDX-License-Identifier: GPL-2.0
"""exp_nf.py's report: the summary tables of its NDRs and Fig. 12 runs,
the printed tables, the CSV rows and the plots."""
import sys
from pathlib import Path

from nfsl import bench as B
from nfsl import ndr as N
from nf_rig import NFS, SMALL, TARGET_MIX_GAIN, TARGET_SLICED_VS_SMALL


# ------------------------------------------------------------ summary --
def fmt_k(x):
    return N.fmt_scaled(x, 1e3, "{:.1f}")


def fmt(x, f="{:.2f}"):
    return N.fmt(x, f)


def med(rs, k):
    return B.median([r.get(k) for r in rs])


def cell(rs, **fields):
    """One cell of a summary table from the results RS of its rounds:
    {name: median of field} for name=field in FIELDS, and "limit", the
    first round's."""
    return {**{n: med(rs, f) for n, f in fields.items()}, "limit": rs[0].get("limit")}


def summarize(a, results):
    S = {"ndr": [], "fig12": [], "mix": None, "targets": {}}
    pick = lambda **kw: [r for r in results if all(r.get(k) == v for k, v in kw.items())]  # noqa: E731
    for mode in ("inline", "park"):
        for chain in NFS:
            row = {"mode": mode, "nf": chain}
            for size, sl in ((SMALL, False), (1514, False), (1514, True)):
                rs = pick(part="ndr", mode=mode, nf=chain, size=size, sliced=sl)
                if not rs:
                    continue
                k = f"{size}{'s' if sl else ''}"
                row.update({f"{n}_{k}": v for n, v in cell(
                    rs, ndr="ndr_pps", ns="nf_ns_per_pkt", gbps="goodput_gbps").items()})
                for c in (a.gen_cpu, a.nf_cpu):
                    row[f"cpu{c}_ns_{k}"] = B.median(
                        [(r.get("cpu_ns_per_pkt") or {}).get(f"cpu{c}") for r in rs])
                    row[f"cpu{c}_busy_{k}"] = B.median(
                        [(r.get("busy_in_traffic") or {}).get(str(c)) for r in rs])
                row[f"genbound_{k}"] = any(r.get("generator_bound") for r in rs)
                row[f"runs_{k}"] = [r.get("ndr_pps") for r in rs]

            def per_round(k1, k2, key="ndr_pps"):
                rats = []
                for rnd in range(a.runs):
                    x = pick(part="ndr", mode=mode, nf=chain, round=rnd, **k1)
                    y = pick(part="ndr", mode=mode, nf=chain, round=rnd, **k2)
                    if x and y:
                        rats.append(B.ratio(x[0].get(key), y[0].get(key)))
                return B.median(rats)
            row["sliced_vs_unsliced_1514"] = per_round({"size": 1514, "sliced": True},
                                                       {"size": 1514, "sliced": False})
            row["sliced_vs_small"] = per_round({"size": 1514, "sliced": True},
                                               {"size": SMALL, "sliced": False})
            if any(k.startswith("ndr_") for k in row):
                S["ndr"].append(row)
    t4 = []
    for row in S["ndr"]:
        if row["mode"] == "park" and row.get("sliced_vs_small") is not None:
            t4.append({"nf": row["nf"], "sliced_1514_pps": row.get("ndr_1514s"),
                       "unsliced_60_pps": row.get(f"ndr_{SMALL}"),
                       "ratio": row["sliced_vs_small"],
                       "met": row["sliced_vs_small"] >= TARGET_SLICED_VS_SMALL,
                       "nf_ns_sliced_1514": row.get("ns_1514s"),
                       "nf_ns_unsliced_60": row.get(f"ns_{SMALL}"),
                       "cpu_ratio": B.ratio(row.get(f"ns_{SMALL}"), row.get("ns_1514s")),
                       "nf_cpu_busy_sliced_1514": row.get(f"cpu{a.nf_cpu}_busy_1514s"),
                       "nf_cpu_busy_unsliced_60": row.get(f"cpu{a.nf_cpu}_busy_{SMALL}"),
                       "limit_sliced": row.get("limit_1514s"),
                       "limit_small": row.get(f"limit_{SMALL}")})
    S["targets"]["park_sliced_1514_vs_unsliced_small"] = t4
    for pct in sorted({r["drop_pct"] for r in results if r.get("part") == "fig12"}):
        base = pick(part="fig12", drop_pct=pct, sliced=False)
        row = {"drop_pct": pct, "unsliced_gbps": med(base, "goodput_gbps"),
               "unsliced_pps": med(base, "ndr_pps"),
               "unsliced_limit": base[0].get("limit") if base else None}
        for exp in sorted({r["expiry"] for r in results if r.get("part") == "fig12"
                           and r["sliced"]}):
            for notice in (False, True):
                rs = pick(part="fig12", drop_pct=pct, sliced=True, expiry=exp, notice=notice)
                if not rs:
                    continue
                k = f"E{exp}_{'notice' if notice else 'nonotice'}"
                row.update({f"{k}_{n}": v for n, v in cell(
                    rs, gbps="goodput_gbps", pps="ndr_pps", sliced_share="sliced_share").items()})
                row[f"{k}_vs_unsliced"] = B.ratio(row[f"{k}_gbps"], row["unsliced_gbps"])
        S["fig12"].append(row)
    fr = S["fig12"]
    if fr:
        obs = []
        for row in fr:
            e10n, e2o = row.get("E10_notice_gbps"), row.get("E2_nonotice_gbps")
            e10o = row.get("E10_nonotice_gbps")
            obs.append({"drop_pct": row["drop_pct"],
                        "explicit_E10_vs_noexplicit_E2": B.ratio(e10n, e2o),
                        "noexplicit_E10_vs_E2": B.ratio(e10o, e2o),
                        "every_sliced_cell_above_unsliced": all(
                            v > (row["unsliced_gbps"] or 0) for k, v in row.items()
                            if k.endswith("_gbps") and k.startswith("E") and v)})
        S["targets"]["fig12_observations"] = obs
    ms = [r for r in results if r.get("part") == "mix"]
    if ms:
        rats = []
        for rnd in range(a.runs):
            u = [r for r in ms if r["round"] == rnd and not r["sliced"]]
            s = [r for r in ms if r["round"] == rnd and r["sliced"]]
            if u and s:
                rats.append(B.ratio(s[0].get("goodput_gbps"), u[0].get("goodput_gbps")))
        u = [r for r in ms if not r["sliced"]]
        s = [r for r in ms if r["sliced"]]
        S["mix"] = {"link_rate": a.link_rate,
                    "unsliced_gbps": med(u, "goodput_gbps"), "sliced_gbps": med(s, "goodput_gbps"),
                    "unsliced_pps": med(u, "ndr_pps"), "sliced_pps": med(s, "ndr_pps"),
                    "unsliced_limit": u[0].get("limit") if u else None,
                    "sliced_limit": s[0].get("limit") if s else None,
                    "sliced_share": med(s, "sliced_share"),
                    "ratio": B.median(rats), "ratio_runs": rats}
        r = S["mix"]["ratio"]
        S["targets"]["park_mix_goodput_gain"] = {
            "ratio": r, "target": TARGET_MIX_GAIN,
            "met": r is not None and r >= TARGET_MIX_GAIN}
    steps = [r.get("step") for r in results if r.get("step")]
    S["bisection_step"] = {"median": B.median(steps), "max": max(steps) if steps else None}
    return S


def fig12_keys(S):
    """The fig12 cells' column keys, E<expiry>_[no]notice, by expiry."""
    return sorted({k[:-5] for r in S["fig12"] for k in r
                   if k.startswith("E") and k.endswith("_gbps")},
                  key=lambda k: (int(k[1:].split("_")[0]), k))


def print_summary(S, a):
    if S["ndr"]:
        rows = []
        for r in S["ndr"]:
            cell = lambda k: (fmt_k(r.get(f"ndr_{k}")) + ("*" if r.get(f"genbound_{k}") else "")  # noqa: E731
                              + (f" [{r.get(f'limit_{k}')}]" if r.get(f"limit_{k}") else ""))
            rows.append([r["mode"], r["nf"], cell(SMALL), cell("1514"), cell("1514s"),
                         fmt(r.get("sliced_vs_unsliced_1514")), fmt(r.get("sliced_vs_small"))])
        B.print_table("NDR (loss < 0.1%), kpps offered [what lost frames first above it]; "
                      "* = the generator's own speed",
                      ["mode", "NF", f"{SMALL} B", "1514 B", "1514 B sliced",
                       "sliced/unsl 1514", f"sliced 1514/{SMALL} B"], rows)
        g, n = a.gen_cpu, a.nf_cpu
        rows = []
        for r in S["ndr"]:
            cell = lambda k: "/".join(fmt(r.get(x), "{:.0f}") for x in (  # noqa: E731
                f"ns_{k}", f"cpu{n}_ns_{k}", f"cpu{g}_ns_{k}")) + "  " + "/".join(
                fmt(r.get(f"cpu{c}_busy_{k}")) for c in (n, g))
            rows.append([r["mode"], r["nf"], cell(SMALL), cell("1514"), cell("1514s")])
        B.print_table(f"CPU per frame in the trials that passed, ns: nfslice-nf / CPU {n} "
                      f"(the NF's) / CPU {g} (generator's); then CPU {n} / CPU {g} busy "
                      "over the traffic's duration (at most)",
                      ["mode", "NF", f"{SMALL} B", "1514 B", "1514 B sliced"], rows)
    if S["fig12"]:
        keys = fig12_keys(S)
        rows = [[r["drop_pct"], fmt(r["unsliced_gbps"] and r["unsliced_gbps"] * 1e3, "{:.1f}")]
                + [fmt(r.get(f"{k}_gbps") and r[f"{k}_gbps"] * 1e3, "{:.1f}") + " ("
                   + fmt(r.get(f"{k}_sliced_share"), "{:.2f}") + ")" for k in keys]
                for r in S["fig12"]]
        B.print_table("PayloadPark Fig. 12: goodput at the server at the NDR, Mbit/s "
                      "(share of sliceable frames sliced)", ["drop %", "unsliced"] + keys, rows)
    if S["mix"]:
        m = S["mix"]
        B.print_table(f"Park, fw,nat,lb on the enterprise mix, link {m['link_rate']}",
                      ["", "NDR kpps", "goodput Mbit/s", "limit"],
                      [["unsliced", fmt_k(m["unsliced_pps"]),
                        fmt(m["unsliced_gbps"] and m["unsliced_gbps"] * 1e3, "{:.1f}"),
                        m["unsliced_limit"] or "-"],
                       ["sliced", fmt_k(m["sliced_pps"]),
                        fmt(m["sliced_gbps"] and m["sliced_gbps"] * 1e3, "{:.1f}"),
                        m["sliced_limit"] or "-"]])
    t = S["targets"]
    print("\ntargets:")
    st = S.get("bisection_step") or {}
    if st.get("median"):
        print(f"  (one bisection step: x{st['median']:.3f}, at most x{st['max']:.3f})")
    for r in t.get("park_sliced_1514_vs_unsliced_small", []):
        print(f"  park {r['nf']}: sliced 1514 B NDR {fmt_k(r['sliced_1514_pps'])} kpps / "
              f"unsliced {SMALL} B {fmt_k(r['unsliced_60_pps'])} kpps = {fmt(r['ratio'])} "
              f"(>= {TARGET_SLICED_VS_SMALL}): {'met' if r['met'] else 'NOT met'}; NF CPU "
              f"per packet {fmt(r['nf_ns_unsliced_60'], '{:.0f}')} / "
              f"{fmt(r['nf_ns_sliced_1514'], '{:.0f}')} ns = {fmt(r['cpu_ratio'])}, its CPU "
              f"busy {fmt(r.get('nf_cpu_busy_unsliced_60'))} / "
              f"{fmt(r.get('nf_cpu_busy_sliced_1514'))}")
    if t.get("park_sliced_1514_vs_unsliced_small") and not getattr(a, "isolate", False):
        print("  (the NF server's CPU also ran the slicing host's return path: "
              "--isolate --nf-cpu-quota 0.05 --bx 4096 measures the NF server alone, "
              "docs/benchmarks-nf.md)")
    g = t.get("park_mix_goodput_gain")
    if g:
        print(f"  park mix goodput sliced / unsliced {fmt(g['ratio'])} (>= {g['target']}): "
              f"{'met' if g['met'] else 'NOT met'}")
    for o in t.get("fig12_observations", []):
        print(f"  fig12 {o['drop_pct']}%: explicit E10 / no-explicit E2 "
              f"{fmt(o['explicit_E10_vs_noexplicit_E2'])}, no-explicit E10 / E2 "
              f"{fmt(o['noexplicit_E10_vs_E2'])}, every sliced cell above unsliced: "
              f"{o['every_sliced_cell_above_unsliced']}")
    sys.stdout.flush()


def csv_rows(trials):
    out = []
    for r in trials:
        row = {k: r.get(k) for k in (
            "part", "round", "mode", "nf", "group", "kind", "traffic", "flows", "sliced",
            "drop_pct", "notice", "offered_pps", "achieved_pps", "sent", "expected",
            "delivered", "loss_frac", "delivered_pps", "goodput_gbps", "pass", "retried")}
        row.update({f"loss_{k}": v for k, v in (r.get("losses") or {}).items()})
        d = r.get("nfc") or {}
        if d:
            row.update(nf_rx=d["total"]["rx"], nf_tx=d["total"]["tx"],
                       nf_drops=d["total"]["drops"], nf_notices=d["total"]["notices"],
                       steered=d["steer"]["steered"],
                       k_rx_fill_empty=d["kernel"]["rx_fill_empty"])
        for k in ("sliced", "spliced", "skipped_full", "evicted", "stale",
                  "explicit_drop", "bad_notice"):
            row[f"slicer_{k}"] = (r.get("slicer") or {}).get(k)
        row["nf_cpu_frac"] = r.get("nf_cpu_frac")
        for c, v in (r.get("cpu_busy_frac") or {}).items():
            row[f"cpu{c}_busy"] = v
        out.append(row)
    return out


def plots(S, out):
    plt = B.plt()
    files = []
    if S["ndr"]:
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), squeeze=False)
        for ax, mode in zip(axes[0], ("inline", "park")):
            rows = [r for r in S["ndr"] if r["mode"] == mode]
            ks = [(f"{SMALL}", f"{SMALL} B", "tab:gray"), ("1514", "1514 B", "tab:orange"),
                  ("1514s", "1514 B sliced", "tab:blue")]
            w = 0.27
            for i, (k, lab, col) in enumerate(ks):
                ax.bar([j + (i - 1) * w for j in range(len(rows))],
                       [(r.get(f"ndr_{k}") or 0) / 1e3 for r in rows], w, color=col, label=lab)
            ax.set_xticks(range(len(rows)))
            ax.set_xticklabels([r["nf"] for r in rows], fontsize=8)
            ax.set_ylabel("NDR (kpps, loss < 0.1%)")
            ax.set_title(mode, fontsize=9)
            ax.legend(fontsize=7)
        f = B.save_figure(fig, Path(out) / "nf.ndr.png")
        files.append(f)
    if S["fig12"]:
        keys = fig12_keys(S)
        fig, ax = plt.subplots(figsize=(9, 4.2))
        cols = ["unsliced"] + keys
        w = 0.8 / len(cols)
        for i, k in enumerate(cols):
            ys = [(r.get("unsliced_gbps") if k == "unsliced" else r.get(f"{k}_gbps")) or 0
                  for r in S["fig12"]]
            ax.bar([j + i * w - 0.4 + w / 2 for j in range(len(S["fig12"]))],
                   [y * 1e3 for y in ys], w, label=k.replace("_", " "))
        ax.set_xticks(range(len(S["fig12"])))
        ax.set_xticklabels([f"{r['drop_pct']}% denied" for r in S["fig12"]])
        ax.set_ylabel("goodput at the server at the NDR (Mbit/s)")
        ax.set_title("PayloadPark Fig. 12 in park (explicit drop x expiry)", fontsize=9)
        ax.legend(fontsize=7, ncol=2)
        f = B.save_figure(fig, Path(out) / "nf.fig12.png")
        files.append(f)
    return files
