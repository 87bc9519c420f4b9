#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""exp_linkrate.py — park topology: loss-free goodput sliced vs unsliced
against the shaped link's rate (issue #3; PayloadPark §6.1, Fig. 7).

Where slicing stops paying in the park topology depends on what limits the
sliced path. Unsliced, a 1514 B frame costs the slicer-NF link 1538 B
(frame + 24 B of wire overhead); sliced, its 58 B header costs the 84 B
minimum, so while the link is the limit both ways the goodput ratio is
1538 / 84 = 18.3x (PayloadPark's "link-bound" case). Once the sliced rate
reaches what one core can push through the slicer node, the NF server and
back (about 140 kpps here: park has no RPS, the generator's softirq runs the
whole path), the ratio falls to CPU limit / link limit. This experiment
measures both regimes: for each link rate, the maximum loss-free rate
(loss < 0.1 %, the search of bench/exp_throughput.py) of 1514 B frames
sliced and unsliced, their goodput, the per-run ratio, and the two
link-bound predictions.

options:
  --quick           smoke run: link rates 100mbit and 1gbit, 1 run, short
                    coarse search (about 1 minute)
  --rates R,...     link rates in tc units, comma-separated
                    (default 50mbit,200mbit,1gbit)
  --runs N          repetitions (default 3; 1 with --quick)
  --size BYTES      frame size, 60-1514 (default 1514)
  --probe SECONDS   search probe length (default 1.0; 0.4 quick)
  --steps N         search probes after the first (default 8; 3 quick)
  --out DIR         results directory (default bench/results)

Outputs in DIR: linkrate.json, linkrate.csv, linkrate.png. Needs root,
build/nfslice and build/nfslice-pktgen (make). Builds the park topology
under the prefix nftp-lr (once per link rate) and always removes it.
"""
import argparse
import sys
import time
from pathlib import Path

from nfsl import bench as B
import exp_throughput as T

PREFIX = "nftp-lr"
WIRE_OVERHEAD = 24          # topo_park.sh --overhead default: FCS + preamble + gap
WIRE_MIN = 84               # smallest frame the shaper counts: 60 B + overhead
SLICED_HDR = 58             # Ethernet + IPv4 + UDP + 16 B token


def log(msg):
    B.log(msg, "exp_linkrate")


def rate_bps(text):
    """tc rate NUMBER{bit,kbit,mbit,gbit} -> bit/s (decimal units, as tc)."""
    units = {"gbit": 10**9, "mbit": 10**6, "kbit": 10**3, "bit": 1}
    t = text.lower()
    for u, m in units.items():
        if t.endswith(u) and t[:-len(u)].isdigit():
            return int(t[:-len(u)]) * m
    raise ValueError(text)


def parse(argv):
    ap = argparse.ArgumentParser(
        prog="exp_linkrate.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1].split("options:")[0].strip())
    B.add_common_args(ap, "smoke run (about 1 min)")
    ap.add_argument("--rates", help="link rates, tc units, comma-separated "
                                    "(default 50mbit,200mbit,1gbit)")
    ap.add_argument("--size", type=int, default=1514, help="frame bytes, 60-1514")
    ap.add_argument("--probe", type=float, help="search probe length, seconds")
    ap.add_argument("--steps", type=int, help="search probes after the first")
    a = B.fill_defaults(ap.parse_args(argv), rates=("50mbit,200mbit,1gbit", "100mbit,1gbit"),
                        probe=(1.0, 0.4), steps=(8, 3))
    a.rates = a.rates.split(",")
    try:
        a.rates_bps = [rate_bps(r) for r in a.rates]
    except ValueError as e:
        ap.error(f"--rates: '{e}' is not NUMBER{{bit,kbit,mbit,gbit}} (e.g. 200mbit)")
    a.cap = 2_000_000         # as exp_throughput: above anything one core reaches
    if not 60 <= a.size <= 1514 or a.runs < 1 or a.probe <= 0 or a.steps < 0:
        ap.error("--size 60-1514 bytes, --runs >= 1, --probe > 0, --steps >= 0")
    return a


def predictions(bps, size):
    """Link-bound loss-free rates (pps) unsliced and sliced at BPS."""
    unsliced = bps / ((size + WIRE_OVERHEAD) * 8)
    sliced = bps / (max(SLICED_HDR + WIRE_OVERHEAD, WIRE_MIN) * 8)
    return unsliced, sliced


def run_rate(rate, a, results, topos):
    t = B.Topo("park", PREFIX, ["--rate", rate], domain="explr")
    topos.append(t)
    pcap = Path(a.out) / ".lr.pcap"
    try:
        t.up()
        t.gen_cpus = [0]
        B.make_pcap(pcap, [a.size] * 16, t)
        for rep in range(a.runs):
            for sliced in ([False, True] if rep % 2 == 0 else [True, False]):
                t.set_mode(sliced)
                best, probes = T.search(t, str(pcap), a)
                mode = T.MODES[sliced]
                log(f"{rate} run {rep + 1} {mode:8}: loss-free "
                    f"{(best or {}).get('achieved_pps', 0) / 1e3:8.1f} kpps "
                    f"({len(probes)} probes)")
                results["points"].append({"link_rate": rate, "mode": mode, "run": rep,
                                          "best": best, "probes": probes})
    finally:
        t.down()
        topos.remove(t)
        pcap.unlink(missing_ok=True)


def summarize(results, a):
    rows = []
    for rate, bps in zip(a.rates, a.rates_bps):
        per_run = {}
        for p in results["points"]:
            if p["link_rate"] == rate and p["best"]:
                per_run.setdefault(p["run"], {})[p["mode"]] = p["best"]
        get = lambda m, k: [r[m][k] for r in per_run.values() if m in r]
        ratios = [B.ratio(r["sliced"]["goodput_gbps"], r["unsliced"]["goodput_gbps"])
                  for r in per_run.values() if len(r) == 2]
        pu, ps = predictions(bps, a.size)
        rows.append({
            "link_rate": rate, "link_bps": bps,
            "unsliced_kpps": B.spread([x / 1e3 for x in get("unsliced", "achieved_pps")]),
            "sliced_kpps": B.spread([x / 1e3 for x in get("sliced", "achieved_pps")]),
            "unsliced_gbps": B.spread(get("unsliced", "goodput_gbps")),
            "sliced_gbps": B.spread(get("sliced", "goodput_gbps")),
            "ratio": B.spread(ratios),
            "linkbound_unsliced_kpps": pu / 1e3, "linkbound_sliced_kpps": ps / 1e3,
            "linkbound_ratio": ps / pu,
            "sliced_generator_bound": any(p["best"] and p["best"].get("generator_bound")
                                          for p in results["points"]
                                          if p["link_rate"] == rate and
                                          p["mode"] == "sliced")})
    return rows


def table(rows):
    f = T.fmt
    out = [[r["link_rate"],
            f"{f(r['unsliced_kpps']['median'])} ({f(r['linkbound_unsliced_kpps'])})",
            f"{f(r['sliced_kpps']['median'])} ({f(r['linkbound_sliced_kpps'])})"
            + ("*" if r["sliced_generator_bound"] else ""),
            f(r["unsliced_gbps"]["median"], "{:.3f}"),
            f(r["sliced_gbps"]["median"], "{:.3f}"),
            T.fmt_sp(r["ratio"], "{:.2f}") + "x", f(r["linkbound_ratio"]) + "x"]
           for r in rows]
    B.print_table("park, loss-free rate of 1514 B frames vs link rate (kpps measured "
                  "(link-bound prediction); * = the path paced the generator)",
                  ["link", "unsliced kpps", "sliced kpps", "unsl Gbit/s",
                   "sliced Gbit/s", "ratio [IQR]", "link-bound ratio"], out)


def plot(rows, a):
    plt = B.plt()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    x = [r["link_bps"] / 1e6 for r in rows]
    for mode, c in (("unsliced", "C0"), ("sliced", "C1")):
        y = [r[f"{mode}_gbps"]["median"] for r in rows]
        lo = [r[f"{mode}_gbps"]["median"] - (r[f"{mode}_gbps"]["min"] or 0) for r in rows]
        hi = [(r[f"{mode}_gbps"]["max"] or 0) - r[f"{mode}_gbps"]["median"] for r in rows]
        ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, color=c, label=mode)
        pred = [r[f"linkbound_{mode}_kpps"] * 1e3 * a.size * 8 / 1e9 for r in rows]
        ax.plot(x, pred, ls="--", color=c, lw=1, label=f"{mode}, link-bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("slicer-NF link rate (Mbit/s, each direction)")
    ax.set_ylabel(f"loss-free goodput of {a.size} B frames (Gbit/s, L2)")
    ax.grid(True, which="both", alpha=.3)
    ax.legend(fontsize=8)
    bx.errorbar(x, [r["ratio"]["median"] for r in rows],
                yerr=[[r["ratio"]["median"] - (r["ratio"]["min"] or 0) for r in rows],
                      [(r["ratio"]["max"] or 0) - r["ratio"]["median"] for r in rows]],
                marker="o", capsize=3, label="measured (median of per-run ratios)")
    bx.plot(x, [r["linkbound_ratio"] for r in rows], ls="--", label="both link-bound")
    bx.axhline(3, color="grey", lw=1, ls=":", label="issue #3 target (3x)")
    bx.set_xscale("log")
    bx.set_xlabel("slicer-NF link rate (Mbit/s)")
    bx.set_ylabel("goodput sliced / unsliced")
    bx.grid(True, which="both", alpha=.3)
    bx.legend(fontsize=8)
    fig.suptitle(f"park: where the link stops being the limit ({a.runs} runs)", fontsize=10)
    path = B.save_figure(fig, Path(a.out) / "linkrate.png")
    return path


def main(argv):
    a = parse(argv)
    results = B.preflight("exp_linkrate.py", a, argv)
    if results is None:
        return 1
    start = time.monotonic()
    results["points"] = []
    topos = []
    B.cleanup_on_signals(topos)
    for rate in a.rates:
        run_rate(rate, a, results, topos)
    rows = summarize(results, a)
    results["summary"] = rows
    results["elapsed_s"] = time.monotonic() - start
    table(rows)
    B.write_json(Path(a.out) / "linkrate.json", results)
    B.write_csv(Path(a.out) / "linkrate.csv", [
        {"link_rate": r["link_rate"], "link_bps": r["link_bps"],
         "unsliced_kpps": r["unsliced_kpps"]["median"],
         "sliced_kpps": r["sliced_kpps"]["median"],
         "unsliced_gbps": r["unsliced_gbps"]["median"],
         "sliced_gbps": r["sliced_gbps"]["median"], "ratio": r["ratio"]["median"],
         "ratio_min": r["ratio"]["min"], "ratio_max": r["ratio"]["max"],
         "linkbound_ratio": r["linkbound_ratio"]} for r in rows])
    path = plot(rows, a)
    print(f"\nresults: {Path(a.out) / 'linkrate.json'}, linkrate.csv, {path.name}")
    print(f"elapsed: {results['elapsed_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
