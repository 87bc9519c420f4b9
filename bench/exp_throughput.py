#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""exp_throughput.py — loss-free rate, goodput, CPU per packet and data
movement, sliced vs unsliced (issue #3, point 3; docs/benchmarks.md).

usage: bench/exp_throughput.py [--quick] [--runs N] [--out DIR]
                               [--topology inline|park|both] [--sizes S ...]

Experiments, each in every repetition, sliced and unsliced runs alternating
(the order flips every repetition, so machine noise hits both alike):

 (a) maximum loss-free rate: the highest offered rate (frames/s, from
     nfslice-pktgen --rate) at which fewer than 0.1% of the frames sent are
     lost between the client's veth and the server's (PayloadPark §6), found
     by a bounded search; the goodput of the original traffic there
     (delivered frame bytes per second at the server, Gbit/s, L2 without
     FCS). Delivered frames are counted exactly by the server veth's rx
     counter. Both topologies (park: link shaped to 1 Gbit/s).
 (b) CPU time per packet (ns, non-idle time from /proc/stat, exact under
     NO_HZ) on the NF's core and on the slicer's core, inline topology, a
     fixed frame count at a fixed rate below saturation.
 (c) data movement per packet (bytes): IP bytes the NF forwarded (its nft
     counter) and, in park, frame bytes on the shaped slicer-to-NF link
     (both directions, the link veth's counters); same fixed runs.

Unsliced runs attach a bare xdp_pass to the slicing interfaces, so both
runs pay veth's XDP receive path (nfslice-pktgen needs an XDP program on
the peer anyway). Traffic: UDP/IPv4 to port 5201, 16 flows, frames from a
pcap replayed by nfslice-pktgen --pcap (scripts/nfsl/bench.py says why).

options:
  --quick             smoke run: sizes 256 and 1514 (+64 for CPU), 1 run,
                      coarse search with short probes (well under 3 min)
  --runs N            repetitions (default 3; 1 with --quick)
  --out DIR           results directory (default bench/results)
  --topology T        inline, park or both (default both)
  --sizes S ...       frame sizes in bytes without FCS (60-1514) and/or
                      'mix' (userspace/nfslice-pktgen/mixes/enterprise.mix, mean 882 B);
                      default 256 512 1024 1514 mix. Experiments (b) and (c)
                      also run 64 B frames.
  --probe SECONDS     length of one search probe (default 1.0; 0.4 quick)
  --steps N           search probes after the first, repeats included
                      (default 8; 3 quick)
  --cap PPS           offered rate of the first probe (default 2000000)
  --fixed-rate PPS    rate of the (b)/(c) runs, inline (default 100000);
                      park uses --park-rate (default 40000: below the
                      unsliced 1 Gbit/s link for 1514 B frames)
  --fixed-count N     frames per (b)/(c) run (default 2 s worth; 1 s quick)
  --no-search         skip (a), run only the fixed-rate runs of (b) and (c)
  --no-plots          skip the PNG plots

Outputs in DIR: throughput.json (every probe and run), throughput.csv,
throughput_lossfree.png, throughput_cpu.png, throughput_datamove.png.
Needs root, build/nfslice and build/nfslice-pktgen (make). Builds its
topologies under the prefixes nftp-in and nftp-pk and always removes them.
"""
import json
import math
import subprocess
import sys
import time
from pathlib import Path

from nfsl import bench as B
from nfsl import cpustat

LOSS_MAX = 0.001            # PayloadPark's loss-free criterion: < 0.1 %
CPU_SIZE_SMALL = 64
PREFIX = {"inline": "nftp-in", "park": "nftp-pk"}
MODES = {False: "unsliced", True: "sliced"}


def log(msg):
    B.log(msg, "exp_throughput")


def parse(argv):
    ap = B.parser("exp_throughput.py", __doc__,
                  "smoke run (< 3 min): sizes 256 1514, 1 run, coarse search")
    ap.add_argument("--topology", choices=("inline", "park", "both"),
                    default="both", help="topologies to run (default both)")
    ap.add_argument("--sizes", nargs="+",
                    help="frame sizes in bytes (60-1514, no FCS) and/or 'mix'")
    ap.add_argument("--probe", type=float, help="search probe length, seconds")
    ap.add_argument("--steps", type=int, help="search probes after the first")
    ap.add_argument("--cap", type=int, default=2_000_000,
                    help="first probe's offered rate, frames/s")
    ap.add_argument("--fixed-rate", type=int, default=100_000,
                    help="(b)/(c) rate in the inline topology, frames/s")
    ap.add_argument("--park-rate", type=int, default=40_000,
                    help="(c) rate in the park topology, frames/s")
    ap.add_argument("--fixed-count", type=int,
                    help="frames per (b)/(c) run (default 2 s of traffic, quick 1 s)")
    ap.add_argument("--no-search", action="store_true",
                    help="skip (a): only the fixed-rate runs of (b) and (c)")
    ap.add_argument("--no-plots", action="store_true", help="no PNG plots")
    a = ap.parse_args(argv)
    B.fill_defaults(a, probe=(1.0, 0.4), steps=(8, 3),
                    sizes=(["256", "512", "1024", "1514", "mix"], ["256", "1514"]))
    a.fixed_s = 1.0 if a.quick else 2.0
    for s in a.sizes:
        if s != "mix" and not (s.isdigit() and 60 <= int(s) <= 1514):
            ap.error(f"--sizes: '{s}' is neither a frame size 60-1514 (bytes) nor 'mix'")
    if a.runs < 1 or a.probe <= 0 or a.steps < 0 or a.cap < 1000:
        ap.error("--runs >= 1, --probe > 0, --steps >= 0, --cap >= 1000 pps")
    a.topologies = ["inline", "park"] if a.topology == "both" else [a.topology]
    return a


# ------------------------------------------------------------ probing --
def send(topo, pcap, rate, count):
    """Send COUNT frames at RATE; what the server's veth received."""
    rx0 = topo.link("srv", topo.env["SRV_IF"])["rx"]
    st0 = topo.stats()
    dur = max(1, math.ceil(count / rate * 1.5))
    n = len(topo.gen_cpus)
    procs = [subprocess.Popen(
        ["ip", "netns", "exec", topo.ns("cli"), str(B.PKTGEN), "--dev",
         topo.env["CLI_IF"], "--pcap", pcap, "--rate", str(int(rate / n)),
         "--count", str(int(count / n)), "--duration", str(dur), "--cpu",
         str(c), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True) for c in topo.gen_cpus]
    gs = []
    for p in procs:
        o, e = p.communicate(timeout=dur + 20)
        if p.returncode != 0:
            raise RuntimeError(f"nfslice-pktgen: exit {p.returncode}: {e.strip()[-300:]}")
        gs.append(json.loads(o))
    g = {"transmitted": sum(x["transmitted"] for x in gs),
         "achieved_pps": sum(x["achieved_pps"] for x in gs),
         "driver_dropped": sum(x["driver_dropped"] for x in gs),
         "elapsed_s": max(x["elapsed_s"] for x in gs)}
    time.sleep(0.15)            # queues (shaper: 2 ms, backlogs) drain
    rx1 = topo.link("srv", topo.env["SRV_IF"])["rx"]
    st1 = topo.stats()
    sent = g["transmitted"]
    dlv = min(rx1["packets"] - rx0["packets"], sent)   # ARP may add one
    el = g["elapsed_s"] or 1e-9
    out = {"offered_pps": rate, "sent": sent, "achieved_pps": g["achieved_pps"],
           "driver_dropped": g["driver_dropped"], "elapsed_s": el,
           "delivered": dlv, "delivered_bytes": rx1["bytes"] - rx0["bytes"],
           "loss": 1 - dlv / sent if sent else None,
           "delivered_pps": dlv / el,
           "goodput_gbps": (rx1["bytes"] - rx0["bytes"]) * 8 / el / 1e9}
    if st0:
        out["nfslice"] = {k: st1[k] - st0[k] for k in st1
                          if isinstance(st1[k], int) and k != "slots"}
    return out


def search(topo, pcap, a):
    """Bounded search for the highest loss-free rate; (best probe, probes).

    First probe at --cap: its delivered rate bounds the loss-free rate from
    above. Then at most --steps more probes bisect between the best
    loss-free rate found (initially none: step down by 0.7x) and the lowest
    lossy one. A lossy probe is repeated once at the same rate and counts as
    loss-free if the repeat is (a burst of other work on this shared machine
    can overflow a backlog in one probe); repeats use up the budget too.
    best is None when no probe was loss-free.
    """
    cnt = lambda r: max(1000, int(r * a.probe))
    first = send(topo, pcap, a.cap, cnt(a.cap))
    probes = [first]
    if first["loss"] < LOSS_MAX:
        first["generator_bound"] = True
        return first, probes
    hi, best = first["achieved_pps"], None
    x = min(first["delivered_pps"] * 0.97, hi * 0.97)
    budget = a.steps
    while budget > 0:
        p = send(topo, pcap, x, cnt(x))
        probes.append(p)
        budget -= 1
        if p["loss"] >= LOSS_MAX and budget > 0:
            p2 = send(topo, pcap, x, cnt(x))
            p2["repeat"] = True
            probes.append(p2)
            budget -= 1
            if p2["loss"] < LOSS_MAX:
                p = p2
        if p["loss"] < LOSS_MAX:
            if best is None or p["achieved_pps"] > best["achieved_pps"]:
                best = p
            # the generator could not keep up: no higher rate is reachable
            if p["achieved_pps"] < 0.97 * x:
                p["generator_bound"] = True
                break
        else:
            hi = min(hi, x)
        x = hi * 0.7 if best is None else (best["offered_pps"] + hi) / 2
    if best is None:
        log(f"no loss-free probe down to {min(q['offered_pps'] for q in probes):.0f} pps")
    return best, probes


def background(sec=0.3):
    """Non-idle share of each CPU over SEC with nothing of ours running."""
    s0 = cpustat.snapshot()
    time.sleep(sec)
    d = cpustat.delta(s0, cpustat.snapshot())
    return {c: v["nonidle_ns"] / d["wall_ns"] for c, v in d["cpus"].items()}


def fixed(topo, pcap, rate, count):
    """(b)+(c): a fixed run; CPU ns/packet per core, NF and link bytes."""
    e = topo.env
    bg = background()
    nf0 = topo.nf_in()
    lk0 = topo.link("slc", e["SLC_NF_IF"]) if topo.kind == "park" else None
    c0 = cpustat.snapshot()
    p = send(topo, pcap, rate, count)
    c1 = cpustat.snapshot()
    nf1 = topo.nf_in()
    n = p["delivered"] or 1
    p["background"] = bg
    p["nf_packets"] = nf1[0] - nf0[0]
    p["nf_bytes_per_pkt"] = (nf1[1] - nf0[1]) / n
    p["orig_bytes_per_pkt"] = p["delivered_bytes"] / n
    if lk0 is not None:
        lk1 = topo.link("slc", e["SLC_NF_IF"])
        p["link_tx_bytes_per_pkt"] = (lk1["tx"]["bytes"] - lk0["tx"]["bytes"]) / n
        p["link_rx_bytes_per_pkt"] = (lk1["rx"]["bytes"] - lk0["rx"]["bytes"]) / n
        p["link_bytes_per_pkt"] = p["link_tx_bytes_per_pkt"] + p["link_rx_bytes_per_pkt"]
    d = cpustat.delta(c0, c1, packets=p["sent"])
    p["cpu"] = {c: {"nonidle_ns_per_pkt": v["nonidle_ns_per_packet"],
                    "net_rx_per_pkt": v["net_rx"] / p["sent"]}
                for c, v in d["cpus"].items()}
    if topo.kind == "inline":
        nfc, slc = int(e["NF_CPU"]), int(e["SLICER_CPU"])
        p["nf_cpu_ns_per_pkt"] = p["cpu"][nfc]["nonidle_ns_per_pkt"]
        p["slicer_cpu_ns_per_pkt"] = p["cpu"][slc]["nonidle_ns_per_pkt"]
        p["nf_net_rx_per_pkt"] = p["cpu"][nfc]["net_rx_per_pkt"]
        p["background_nf_cpu"] = bg[nfc]
        p["background_slicer_cpu"] = bg[slc]
    return p


# ---------------------------------------------------------- experiment --
def run_topology(kind, a, results, topos):
    t = B.Topo(kind, PREFIX[kind], domain="exptp")
    topos.append(t)
    try:
        t.up()
        # inline: the generator (and so the slicer, in its NAPI poll) on
        # SLICER_CPU; park has no split, pin it to CPU 0 alike.
        # (Two generators on two CPUs into one veth lost 40% of the frames
        # even at 40 kpps: one generator, as in the rest of the suite.)
        t.gen_cpus = [int(t.env.get("SLICER_CPU", 0))]
        pcaps, avg = {}, {}
        sizes_fixed = [str(CPU_SIZE_SMALL)] + [s for s in a.sizes
                                               if s != str(CPU_SIZE_SMALL)]
        for s in dict.fromkeys(a.sizes + sizes_fixed):
            path = Path(a.out) / f".tp_{kind}_{s}.pcap"
            seq = (B.mix_sizes(B.MIX_ENTERPRISE, 100) if s == "mix"
                   else [int(s)] * 16)
            avg[s] = B.make_pcap(path, seq, t)
            pcaps[s] = str(path)
        rate = a.fixed_rate if kind == "inline" else a.park_rate
        count = a.fixed_count or int(rate * a.fixed_s)
        for rep in range(a.runs):
            order = [False, True] if rep % 2 == 0 else [True, False]
            for sliced in ([] if a.no_search else order):
                t.set_mode(sliced)
                m = MODES[sliced]
                for s in a.sizes:
                    t0 = time.monotonic()
                    best, probes = search(t, pcaps[s], a)
                    log(f"{kind} run {rep + 1} {m:8} {s:>5}: loss-free "
                        f"{(best or {}).get('achieved_pps', 0) / 1e3:8.1f} kpps "
                        f"({len(probes)} probes, {time.monotonic() - t0:.1f} s)")
                    results["lossfree"].append({
                        "topology": kind, "size": s, "avg_frame_bytes": avg[s],
                        "mode": m, "run": rep, "best": best, "probes": probes})
            # (b)/(c): the two modes back to back per size (order flipping
            # with every size and repetition), so a burst of other work on
            # the machine is as likely to hit either run of a pair
            for i, s in enumerate(sizes_fixed):
                for sliced in (order if i % 2 == 0 else order[::-1]):
                    t.set_mode(sliced)
                    m = MODES[sliced]
                    p = fixed(t, pcaps[s], rate, count)
                    results["fixed"].append({
                        "topology": kind, "size": s, "avg_frame_bytes": avg[s],
                        "mode": m, "run": rep, "rate_pps": rate, **p})
                    log(f"{kind} run {rep + 1} {m:8} {s:>5}: fixed run, NF "
                        f"{p['nf_bytes_per_pkt']:.0f} B/pkt, loss {p['loss']:.4f}")
    finally:
        t.down()
        topos.remove(t)
        for s in list(Path(a.out).glob(f".tp_{kind}_*.pcap")):
            s.unlink()


# ----------------------------------------------------------- summaries --
def pairs(rows, kind, size, key):
    """{run: {mode: value}} of one metric."""
    out = {}
    for r in rows:
        if r["topology"] == kind and r["size"] == size:
            out.setdefault(r["run"], {})[r["mode"]] = key(r)
    return out


def summarize(rows, kind, size, key, inverse=False):
    """Medians/spread per mode and the median per-run ratio sliced/unsliced
    (unsliced/sliced with inverse)."""
    pr = pairs(rows, kind, size, key)
    u = [v.get("unsliced") for v in pr.values()]
    s = [v.get("sliced") for v in pr.values()]
    rs = [B.ratio(v.get("unsliced"), v.get("sliced")) if inverse else
          B.ratio(v.get("sliced"), v.get("unsliced")) for v in pr.values()]
    return {"unsliced": B.spread(u), "sliced": B.spread(s), "ratio": B.spread(rs)}


def fmt(x, f="{:.1f}"):
    return "-" if x is None else f.format(x)


def fmt_sp(sp, f="{:.1f}"):
    if sp["median"] is None:
        return "-"
    if sp["n"] > 1:
        return f"{f.format(sp['median'])} [{f.format(sp['q1'])}-{f.format(sp['q3'])}]"
    return f.format(sp["median"])


def sizes_of(rows, kind):
    return list(dict.fromkeys(r["size"] for r in rows if r["topology"] == kind))


def tables(results, a):
    summ = {"lossfree": {}, "cpu": {}, "datamove": {}}
    lf = results["lossfree"]
    # a run whose search found no loss-free rate counts as missing (None)
    bpps = lambda r: r["best"]["achieved_pps"] / 1e3 if r["best"] else None
    bgp = lambda r: r["best"]["goodput_gbps"] if r["best"] else None
    for kind in a.topologies:
        rows = []
        for s in sizes_of(lf, kind):
            r = summarize(lf, kind, s, bpps)
            g = summarize(lf, kind, s, bgp)
            gb = {m: any((x["best"] or {}).get("generator_bound") for x in lf
                         if x["topology"] == kind and x["size"] == s and x["mode"] == m)
                  for m in MODES.values()}
            summ["lossfree"][f"{kind}/{s}"] = {"kpps": r, "goodput_gbps": g,
                                               "paced": gb}
            st = {m: "*" if gb[m] else "" for m in gb}
            rows.append([s, fmt_sp(r["unsliced"]) + st["unsliced"],
                         fmt_sp(r["sliced"]) + st["sliced"],
                         fmt(r["ratio"]["median"], "{:.2f}x"),
                         fmt_sp(g["unsliced"], "{:.3f}"), fmt_sp(g["sliced"], "{:.3f}"),
                         fmt(g["ratio"]["median"], "{:.2f}x")])
        B.print_table(
            f"(a) {kind}: maximum loss-free rate (loss < 0.1%) and goodput there "
            f"(median [IQR] of {a.runs} runs; ratio = median of per-run "
            f"sliced/unsliced)\n  * paced: no loss at the highest rate the generator "
            f"reached (its core also runs the path's softirq work)",
            ["size B", "unsliced kpps", "sliced kpps", "ratio",
             "unsliced Gbit/s", "sliced Gbit/s", "ratio"], rows)
    fx = results["fixed"]
    if "inline" in a.topologies:
        rows = []
        for s in sizes_of(fx, "inline"):
            nf = summarize(fx, "inline", s, lambda r: r["nf_cpu_ns_per_pkt"])
            sl = summarize(fx, "inline", s, lambda r: r["slicer_cpu_ns_per_pkt"])
            rx = summarize(fx, "inline", s, lambda r: r["nf_net_rx_per_pkt"])
            summ["cpu"][s] = {"nf_ns_per_pkt": nf, "slicer_ns_per_pkt": sl,
                              "nf_net_rx_per_pkt": rx}
            rows.append([s, fmt_sp(nf["unsliced"], "{:.0f}"), fmt_sp(nf["sliced"], "{:.0f}"),
                         fmt(nf["ratio"]["median"], "{:.2f}x"),
                         fmt_sp(sl["unsliced"], "{:.0f}"), fmt_sp(sl["sliced"], "{:.0f}"),
                         fmt(sl["ratio"]["median"], "{:.2f}x"),
                         fmt(rx["unsliced"]["median"], "{:.2f}"),
                         fmt(rx["sliced"]["median"], "{:.2f}")])
        B.print_table(
            f"(b) inline: CPU non-idle ns per packet at {a.fixed_rate} pps "
            f"(NF core and slicer/generator core; ratio sliced/unsliced)",
            ["size B", "NF unsl", "NF sliced", "ratio", "slicer-core unsl",
             "slicer-core sliced", "ratio", "NET_RX/pkt unsl", "sliced"], rows)
    for kind in a.topologies:
        rows = []
        for s in sizes_of(fx, kind):
            nf = summarize(fx, kind, s, lambda r: r["nf_bytes_per_pkt"], inverse=True)
            og = summarize(fx, kind, s, lambda r: r["orig_bytes_per_pkt"])
            d = {"nf_bytes_per_pkt": nf, "orig_bytes_per_pkt": og}
            row = [s, fmt(og["unsliced"]["median"], "{:.0f}"),
                   fmt_sp(nf["unsliced"], "{:.0f}"), fmt_sp(nf["sliced"], "{:.0f}"),
                   fmt(nf["ratio"]["median"], "{:.1f}x")]
            if kind == "park":
                lk = summarize(fx, kind, s, lambda r: r["link_bytes_per_pkt"], inverse=True)
                d["link_bytes_per_pkt"] = lk
                row += [fmt_sp(lk["unsliced"], "{:.0f}"), fmt_sp(lk["sliced"], "{:.0f}"),
                        fmt(lk["ratio"]["median"], "{:.1f}x")]
            summ["datamove"][f"{kind}/{s}"] = d
            rows.append(row)
        hdr = ["size B", "frame B", "NF B/pkt unsl", "NF B/pkt sliced", "less (unsl/sliced)"]
        if kind == "park":
            hdr += ["link B/pkt unsl", "link B/pkt sliced", "less"]
        B.print_table(f"(c) {kind}: bytes per delivered packet into the NF (IP bytes, nft)"
                      + (" and on the slicer-NF link (frames, both directions)"
                         if kind == "park" else ""), hdr, rows)
    return summ


def targets(summ, a):
    t = {}
    k = "park/1514"
    if k in summ["lossfree"]:
        r = summ["lossfree"][k]["goodput_gbps"]["ratio"]["median"]
        t["park_1514_lossfree_goodput_ratio"] = {"value": r, "target": ">= 3",
                                                 "met": r is not None and r >= 3}
    c = summ["cpu"]
    if "1514" in c and str(CPU_SIZE_SMALL) in c:
        big = c["1514"]["nf_ns_per_pkt"]["sliced"]["median"]
        small = c[str(CPU_SIZE_SMALL)]["nf_ns_per_pkt"]["sliced"]["median"]
        r = B.ratio(big, small)
        t["inline_nf_cpu_1514_sliced_vs_64"] = {"value": r, "target": "<= 1.2",
                                                "met": r is not None and r <= 1.2}
    k = "inline/1514"
    if k in summ["datamove"]:
        r = summ["datamove"][k]["nf_bytes_per_pkt"]["ratio"]["median"]
        t["inline_nf_bytes_1514_reduction"] = {"value": r, "target": ">= 15",
                                               "met": r is not None and r >= 15}
    print("\ntargets (issue #3; reported, not asserted):")
    for name, v in t.items():
        print(f"  {name}: {fmt(v['value'], '{:.2f}')} (target {v['target']}): "
              f"{'met' if v['met'] else 'NOT met'}")
    return t


# --------------------------------------------------------------- plots --
def plots(results, summ, a, out):
    plt = B.plt()
    files = []
    kinds = [k for k in a.topologies]
    if results["lossfree"]:
        files.append(plot_lossfree(plt, results, summ, a, out, kinds))
    return files + plot_fixed(plt, summ, a, out, kinds)


def plot_lossfree(plt, results, summ, a, out, kinds):
    """(a) loss-free goodput and rate per topology."""
    fig, axes = plt.subplots(len(kinds), 2, figsize=(11, 3.6 * len(kinds)),
                             squeeze=False)
    for i, kind in enumerate(kinds):
        ss = sizes_of(results["lossfree"], kind)
        for j, (metric, lab) in enumerate((("goodput_gbps", "loss-free goodput (Gbit/s, L2)"),
                                           ("kpps", "loss-free rate (kpps)"))):
            ax = axes[i][j]
            for off, m, col in ((-0.2, "unsliced", "tab:gray"), (0.2, "sliced", "tab:blue")):
                med, lo, hi = [], [], []
                for s in ss:
                    sp = summ["lossfree"][f"{kind}/{s}"][metric][m]
                    med.append(sp["median"] or 0)
                    lo.append((sp["median"] or 0) - (sp["min"] or 0))
                    hi.append((sp["max"] or 0) - (sp["median"] or 0))
                ax.bar([x + off for x in range(len(ss))], med, 0.4, yerr=[lo, hi],
                       color=col, label=m, capsize=3)
            ax.set_xticks(range(len(ss)))
            ax.set_xticklabels([f"{s} B" if s != "mix" else "ent. mix" for s in ss])
            ax.set_ylabel(lab)
            ax.set_title(f"{kind}" + (" (link 1 Gbit/s)" if kind == "park" else ""))
            ax.legend(fontsize=8)
            if kind == "park" and metric == "goodput_gbps":
                ax.axhline(1.0, color="k", lw=0.8, ls="--")
    fig.suptitle(f"Maximum loss-free rate (loss < 0.1%), median of {a.runs} runs, "
                 "bars min-max")
    f = B.save_figure(fig, Path(out) / "throughput_lossfree.png")
    return f


def plot_fixed(plt, summ, a, out, kinds):
    """(b) CPU per packet, (c) data movement."""
    files = []
    if summ["cpu"]:
        ss = list(summ["cpu"])
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
        for ax, key, lab in ((axes[0], "nf_ns_per_pkt", "NF core (CPU %s)"),
                             (axes[1], "slicer_ns_per_pkt", "slicer + generator core (CPU %s)")):
            for off, m, col in ((-0.2, "unsliced", "tab:gray"), (0.2, "sliced", "tab:blue")):
                sp = [summ["cpu"][s][key][m] for s in ss]
                med = [x["median"] or 0 for x in sp]
                ax.bar([x + off for x in range(len(ss))], med, 0.4, color=col, label=m,
                       yerr=[[md - (x["min"] or 0) for md, x in zip(med, sp)],
                             [(x["max"] or 0) - md for md, x in zip(med, sp)]], capsize=3)
            ax.set_xticks(range(len(ss)))
            ax.set_xticklabels([f"{s} B" if s != "mix" else "ent. mix" for s in ss])
            ax.set_ylabel("non-idle ns per packet")
            ax.set_title(lab % ("1" if key == "nf_ns_per_pkt" else "0"))
            ax.legend(fontsize=8)
        fig.suptitle(f"Inline: CPU time per packet at {a.fixed_rate} pps, median of {a.runs} runs")
        files.append(B.save_figure(fig, Path(out) / "throughput_cpu.png"))
    # (c) data movement
    dm = summ["datamove"]
    if dm:
        panels = [(k, "nf_bytes_per_pkt", f"{k}: into the NF (IP B/pkt)") for k in kinds]
        if "park" in kinds:
            panels.append(("park", "link_bytes_per_pkt", "park: slicer-NF link (B/pkt, both ways)"))
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
        for ax, (kind, key, lab) in zip(axes[0], panels):
            ss = [k.split("/", 1)[1] for k in dm if k.startswith(kind + "/")]
            for off, m, col in ((-0.2, "unsliced", "tab:gray"), (0.2, "sliced", "tab:blue")):
                med = [dm[f"{kind}/{s}"][key][m]["median"] or 0 for s in ss]
                ax.bar([x + off for x in range(len(ss))], med, 0.4, color=col, label=m)
            ax.set_xticks(range(len(ss)))
            ax.set_xticklabels([f"{s}" if s != "mix" else "mix" for s in ss])
            ax.set_yscale("log")
            ax.set_xlabel("frame size (B)")
            ax.set_title(lab, fontsize=9)
            ax.legend(fontsize=8)
        fig.suptitle("Bytes moved per delivered packet, sliced vs unsliced")
        files.append(B.save_figure(fig, Path(out) / "throughput_datamove.png"))
    return files


def csv_rows(results):
    rows = []
    for r in results["lossfree"]:
        b = r["best"] or {}
        rows.append({"experiment": "lossfree", "topology": r["topology"],
                     "size": r["size"], "avg_frame_bytes": r["avg_frame_bytes"],
                     "mode": r["mode"], "run": r["run"],
                     "lossfree_pps": b.get("achieved_pps"),
                     "goodput_gbps": b.get("goodput_gbps"), "loss": b.get("loss"),
                     "generator_bound": b.get("generator_bound", False),
                     "probes": len(r["probes"])})
    for r in results["fixed"]:
        rows.append({"experiment": "fixed", "topology": r["topology"],
                     "size": r["size"], "avg_frame_bytes": r["avg_frame_bytes"],
                     "mode": r["mode"], "run": r["run"], "rate_pps": r["rate_pps"],
                     "sent": r["sent"], "delivered": r["delivered"], "loss": r["loss"],
                     "nf_bytes_per_pkt": r["nf_bytes_per_pkt"],
                     "orig_bytes_per_pkt": r["orig_bytes_per_pkt"],
                     "link_bytes_per_pkt": r.get("link_bytes_per_pkt"),
                     "nf_cpu_ns_per_pkt": r.get("nf_cpu_ns_per_pkt"),
                     "slicer_cpu_ns_per_pkt": r.get("slicer_cpu_ns_per_pkt"),
                     "nf_net_rx_per_pkt": r.get("nf_net_rx_per_pkt"),
                     "background_nf_cpu": r.get("background_nf_cpu"),
                     "background_slicer_cpu": r.get("background_slicer_cpu")})
    return rows


def main(argv):
    a = parse(argv)
    results = B.preflight("exp_throughput.py", a, argv)
    if results is None:
        return 1
    start = time.monotonic()
    results.update(lossfree=[], fixed=[])
    topos = []
    B.cleanup_on_signals(topos)
    for kind in a.topologies:
        run_topology(kind, a, results, topos)
    summ = tables(results, a)
    results["summary"] = summ
    results["targets"] = targets(summ, a)
    results["elapsed_s"] = time.monotonic() - start
    B.write_json(Path(a.out) / "throughput.json", results)
    B.write_csv(Path(a.out) / "throughput.csv", csv_rows(results))
    files = [] if a.no_plots else plots(results, summ, a, a.out)
    print(f"\nresults: {Path(a.out) / 'throughput.json'}, throughput.csv"
          + "".join(f", {f.name}" for f in files))
    print(f"elapsed: {results['elapsed_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
