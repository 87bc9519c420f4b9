#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Latency with NFSlicer's methodology (issue #3; NFSlicer §V-VI Fig. 7 and
Fig. 10, PayloadPark Fig. 16).

A load stream (nfslice-pktgen, fixed offered rate in pps, 16 flows, UDP to
port 5201) and a low-rate measuring stream (nfslice-pktgen --stamp, its own
UDP source port) go from the client through the DUT's NF (nftables ACL +
masquerade NAT) to the server, where bench/bpf/latency_sink.bpf.c (XDP on the
server's veth) takes each measuring frame's one-way latency: arrival
bpf_ktime_get_ns() minus the TX stamp the generator wrote (same host, same
CLOCK_MONOTONIC). Three configurations (NFSlicer Fig. 7): 64 B frames
unsliced, 1514 B unsliced, 1514 B sliced (nfslice attach --keep 16, so the
stamp stays in the sliced header); unsliced runs put xdp_pass on the veth
the slicer would use, so both pay veth's XDP receive path alike.

Offered loads are fractions of the smallest capacity the configurations
measured in a calibration step (unpaced load, delivered pps at the server),
the same absolute pps for every configuration. The configurations alternate
within every repetition (rotated order) so machine noise hits them alike.

Outputs (into --out, default bench/results/): latency.json (everything,
per run), latency.csv (one row per run x configuration x load),
latency_cdf.png (Fig. 7), latency_vs_load.png (Fig. 10 / PP Fig. 16).
Units: latency in microseconds (us), rates in packets per second (pps).
"""
import argparse
import csv
import json
import os
import signal
import statistics
import sys
import time

from nfsl import lat as L

CONFIGS = [  # name, frame size without FCS, sliced
    ("64B unsliced", 60, False),
    ("1514B unsliced", 1514, False),
    ("1514B sliced", 1514, True),
]
LOAD_PORT, MEAS_SPORT, LOAD_SPORT = 5201, 40000, 1024


def parse_args():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Latencies are reported in us (microseconds), rates in pps "
               "(packets per second). Needs root; builds and removes its own "
               "namespaces (scripts/topo_inline.sh or topo_park.sh, prefix nflat).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    L.benchlib.add_common_args(ap, "smoke run: 2 repetitions, 3 loads, 1 s points (< 2 min)",
                               runs=(3, 2))
    ap.add_argument("--topo", choices=("inline", "park"), default="inline",
                    help="topology (default inline; park: 1 Gbit/s shaped link)")
    ap.add_argument("--link-rate", default=None,
                    help="park: rate of the shaped link, tc syntax (default 1gbit)")
    ap.add_argument("--loads", default=None,
                    help="offered loads as fractions of the calibrated capacity, "
                         "comma-separated (default 0,0.1,0.3,0.5,0.7,0.9; quick 0,0.5,0.9)")
    ap.add_argument("--duration", type=int, default=None,
                    help="seconds per point (default 3, quick 1)")
    ap.add_argument("--meas-rate", type=int, default=10000,
                    help="measuring stream rate in pps (default 10000)")
    ap.add_argument("--capacity", type=float, default=None,
                    help="skip calibration: capacity in pps the loads refer to (park default: "
                         "the link's rate / (8 x (1514 + overhead)), 81274 pps at 1 Gbit/s)")
    L.add_quiet_args(ap)
    ap.add_argument("--cdf-load", type=float, default=None,
                    help="load fraction whose CDF is plotted (default 0.5)")
    a = ap.parse_args()
    L.benchlib.fill_defaults(a, duration=(3, 1), quiet_wait=(3.0, 1.0), loads=("0,0.1,0.3,0.5,0.7,0.9", "0,0.5,0.9"))
    try:
        a.loads = [float(x) for x in a.loads.split(",")]
    except ValueError:
        ap.error("--loads: comma-separated numbers expected")
    if a.runs < 1 or a.duration < 1 or a.meas_rate < 100:
        ap.error("--runs >= 1, --duration >= 1 s, --meas-rate >= 100 pps")
    if a.cdf_load is None:
        a.cdf_load = 0.5 if 0.5 in a.loads else a.loads[len(a.loads) // 2]
    return a


class Rig:
    """The topology plus the DUT-side XDP state of one configuration."""

    def __init__(self, topo, up_args=()):
        self.t = L.Topology(topo, "nflat", up_args)
        self.sink = self.peer = None
        self.sliced = None
        self.quiet_wait = 3.0

    def up(self):
        self.t.up()
        e = self.t.env
        self.cli_ns, self.cli_if = e["CLI_NS"], e["CLI_IF"]
        self.slice_ns, self.slice_ifs = e["SLICE_NS"], e["SLICE_IFS"]
        self.peer_if = self.slice_ifs.split()[0]  # the veth pktgen sends into
        self.cpu = int(e.get("SLICER_CPU", 0))
        self.src_ip, self.dst_ip = e["CLI_IP4"], e["SRV_IP4"]
        self.sink = L.LatencySink(e["SRV_NS"], e["SRV_IF"], LOAD_PORT, MEAS_SPORT).attach()
        self.peer = L.PeerPass(self.slice_ns, self.peer_if)

    def set_sliced(self, sliced, **kw):
        if sliced == self.sliced and not kw:
            return
        L.nfslice_detach(self.slice_ns)
        self.peer.detach()
        if sliced:
            L.nfslice_attach(self.slice_ns, self.slice_ifs, keep=16,
                             nf_ports=self.t.env.get("SLICE_NF_PORTS"), **kw)
        else:
            self.peer.attach()
        self.sliced = sliced

    def down(self):
        try:
            if self.sink:
                self.sink.detach()
            if self.peer:
                self.peer.detach()
            L.nfslice_detach(self.t.env.get("SLICE_NS", "nflat-dut"))
        finally:
            self.t.down()

    def gen(self, size, rate, duration, meas=False, flows=16):
        cmd = L.pktgen_cmd(self.cli_ns, self.cli_if, self.cpu, size, rate, duration,
                           dport=LOAD_PORT, sport=MEAS_SPORT if meas else LOAD_SPORT,
                           flows=1 if meas else flows, stamp=meas, dst_ip=self.dst_ip)
        return L.start(cmd + ["--src-ip", self.src_ip])

    def point(self, size, load_pps, meas_pps, duration, quiet=None):
        """One measurement: load + measuring stream for DURATION s; first wait
        (bounded) until the rest of the machine is quiet."""
        bg = L.wait_quiet(quiet, self.quiet_wait) if quiet is not None else {}
        before_ns = L.nfslice_stats(self.slice_ns) if self.sliced else None
        a = self.sink.snapshot()
        procs = []
        try:
            procs.append(self.gen(size, meas_pps, duration, meas=True))
            if load_pps > 0:
                procs.append(self.gen(size, load_pps, duration))
            res = [L.finish(p, duration + 20) for p in procs]
        finally:
            L.kill_all(procs)
        time.sleep(0.2)  # let queues drain into the sink
        d = L.snap_diff(a, self.sink.snapshot())
        r = L.summarize(d)
        r["meas_sent"] = res[0].get("transmitted", 0)
        r["meas_lost"] = r["meas_sent"] - r["received"]
        r["load_sent"] = res[1].get("transmitted", 0) if load_pps > 0 else 0
        r["load_achieved_pps"] = res[1].get("achieved_pps", 0) if load_pps > 0 else 0
        r["load_lost"] = r["load_sent"] - r["load_received"]
        r["hist"] = {str(i): c for i, c in enumerate(d["hist"]) if c}
        r.update(bg)
        if self.sliced:
            after = L.nfslice_stats(self.slice_ns)
            r["nfslice"] = {k: after[k] - before_ns[k] for k in
                            ("sliced", "spliced", "evicted", "stale", "skipped_full",
                             "bad_token", "replayed")}
            if r["meas_sent"] and not r["nfslice"]["sliced"]:
                raise RuntimeError("sliced run, but nothing was sliced: nfslice "
                                   "stats says why (skipped_route: the NF port?)")
        return r

    def capacity(self, size, duration):
        """Delivered load pps at the sink with the load unpaced."""
        a = self.sink.snapshot()
        p = self.gen(size, 0, duration)
        try:
            L.finish(p, duration + 20)
        finally:
            L.kill_all([p])
        time.sleep(0.2)
        d = L.snap_diff(a, self.sink.snapshot())
        return d["stats"]["other"] / float(duration)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    a = parse_args()
    if os.geteuid() != 0:
        sys.exit("exp_latency: needs root")
    L.ensure_built()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    if a.link_rate and a.topo != "park":
        sys.exit("exp_latency: --link-rate is for --topo park")
    rig = Rig(a.topo, ["--rate", a.link_rate] if a.link_rate else [])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    out = {"experiment": "latency", "topology": a.topo, "machine": L.machine(),
           "command": " ".join(sys.argv), "runs": a.runs, "duration_s": a.duration,
           "meas_rate_pps": a.meas_rate, "link_rate": a.link_rate, "loads": a.loads, "configs":
           [{"name": n, "frame_bytes": s, "sliced": sl} for n, s, sl in CONFIGS],
           "points": []}
    try:
        rig.up()
        # Calibration: what each configuration delivers with the load unpaced.
        caps = {}
        if not a.capacity and a.topo == "park":
            # An unpaced flood overloads the slicer node's CPUs long before the
            # shaper (it delivers a few kpps): refer the loads to the link's
            # capacity for 1514 B frames instead.
            e = rig.t.env
            a.capacity = float(e["LINK_RATE_BPS"]) / (8 * (1514 + int(e["LINK_OVERHEAD"])))
            print("park: loads refer to the link capacity for 1514 B frames",
                  flush=True)
        if a.capacity:
            caps = {n: a.capacity for n, _, _ in CONFIGS}
        else:
            for n, size, sliced in CONFIGS:
                rig.set_sliced(sliced)
                caps[n] = rig.capacity(size, 1 if a.quick else 2)
                print("calibration: %-15s delivers %9.0f pps unpaced" % (n, caps[n]),
                      flush=True)
        cap = min(caps.values())
        out["capacity_pps"] = caps
        out["reference_capacity_pps"] = cap
        print("loads refer to %.0f pps (the smallest); measuring stream %d pps"
              % (cap, a.meas_rate), flush=True)
        rig.quiet_wait = a.quiet_wait
        for run in range(a.runs):
            # Interleaved: every load point measures the three configurations
            # back to back, in an order rotated per run and per point.
            for li, f in enumerate(a.loads):
                k = (run + li) % 3
                for n, size, sliced in CONFIGS[k:] + CONFIGS[:k]:
                    rig.set_sliced(sliced)
                    pps = int(round(f * cap))
                    r = rig.point(size, pps, a.meas_rate, a.duration,
                                  None if a.quiet < 0 else a.quiet)
                    r.update(run=run, config=n, frame_bytes=size, sliced=sliced,
                             load_fraction=f, offered_pps=pps)
                    out["points"].append(r)
                    print("run %d %-15s load %4.2f (%8d pps): p50 %7.1f p90 %7.1f "
                          "p99 %7.1f us, meas lost %d, load lost %d, csum bad %d, bg %.0f%%%s"
                          % (run, n, f, pps, r["p50_us"] or -1, r["p90_us"] or -1,
                             r["p99_us"] or -1, r["meas_lost"], r["load_lost"],
                             r["csum_bad"], 100 * r.get("background_busy_max", 0),
                             (", evicted %d stale %d" % (r["nfslice"]["evicted"],
                                                        r["nfslice"]["stale"]))
                             if sliced else ""), flush=True)
    finally:
        rig.down()
    out["elapsed_s"] = time.time() - t0
    summarize(out)
    write(out, a)
    print("exp_latency: %.0f s, results in %s" % (out["elapsed_s"], a.out))


def summarize(out):
    """Medians and ranges across runs, and sliced / unsliced p90 ratios
    measured in the same run."""
    summ = []
    for n, _, _ in CONFIGS:
        for f in out["loads"]:
            pts = [p for p in out["points"] if p["config"] == n and p["load_fraction"] == f]
            if not pts:
                continue
            row = {"config": n, "load_fraction": f, "offered_pps": pts[0]["offered_pps"],
                   "runs": len(pts)}
            for k in ("p50_us", "p90_us", "p99_us", "mean_us"):
                v = [p[k] for p in pts if p[k] is not None]
                row[k] = med(v)
                row[k + "_min"] = min(v) if v else None
                row[k + "_max"] = max(v) if v else None
            row["meas_lost"] = sum(p["meas_lost"] for p in pts)
            row["load_lost_pct"] = med([100.0 * p["load_lost"] / p["load_sent"]
                                        for p in pts if p["load_sent"]])
            row["csum_bad"] = sum(p["csum_bad"] for p in pts)
            row["csum_ok"] = sum(p["csum_ok"] for p in pts)
            summ.append(row)
    out["summary"] = summ
    ratios = []
    for f in out["loads"]:
        for q in ("p50_us", "p90_us", "p99_us"):
            rs = []
            for run in range(out["runs"]):
                s = [p for p in out["points"] if p["run"] == run and p["load_fraction"] == f
                     and p["config"] == "1514B sliced"]
                u = [p for p in out["points"] if p["run"] == run and p["load_fraction"] == f
                     and p["config"] == "1514B unsliced"]
                if s and u and s[0][q] and u[0][q]:
                    rs.append(s[0][q] / u[0][q])
            if rs:
                ratios.append({"load_fraction": f, "quantile": q, "sliced_over_unsliced":
                               med(rs), "min": min(rs), "max": max(rs), "per_run": rs})
    out["ratios_1514"] = ratios


def write(out, a):
    with open(os.path.join(a.out, "latency.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    cols = ["run", "config", "frame_bytes", "sliced", "load_fraction", "offered_pps",
            "load_achieved_pps", "load_rx_pps", "samples", "p50_us", "p90_us", "p99_us",
            "p999_us", "mean_us", "meas_sent", "meas_lost", "load_sent", "load_lost",
            "csum_ok", "csum_bad", "background_busy_max"]
    with open(os.path.join(a.out, "latency.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols + ["evicted", "stale"])
        for p in out["points"]:
            ns = p.get("nfslice", {})
            w.writerow([p.get(c) for c in cols] + [ns.get("evicted", ""), ns.get("stale", "")])
    plot(out, a)


def plot(out, a):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    styles = {"64B unsliced": ("tab:gray", "--"), "1514B unsliced": ("tab:red", "-"),
              "1514B sliced": ("tab:blue", "-")}
    loads_cdf = sorted({0.0, a.cdf_load} & set(out["loads"])) or [out["loads"][0]]
    fig, axes = plt.subplots(1, len(loads_cdf), figsize=(6 * len(loads_cdf), 4.2),
                             squeeze=False)
    for ax, f in zip(axes[0], loads_cdf):
        for n, _, _ in CONFIGS:
            hist = [0] * L.LAT_BUCKETS
            pps = None
            for p in out["points"]:
                if p["config"] == n and p["load_fraction"] == f:
                    pps = p["offered_pps"]
                    for k, c in p["hist"].items():
                        hist[int(k)] += c
            if not sum(hist):
                continue
            xs, ys = zip(*L.cdf_points(hist))
            c, ls = styles[n]
            ax.step(xs, ys, where="post", color=c, ls=ls, label=n)
        ax.set_xscale("log")
        ax.set_xlabel("one-way latency (us)")
        ax.set_ylabel("CDF")
        ax.set_title("%s: load %.0f%% (%s pps) + %d pps measuring, %d runs"
                     % (out["topology"], 100 * f, pps, out["meas_rate_pps"], out["runs"]),
                     fontsize=9)
        ax.grid(True, which="both", alpha=.3)
        ax.legend(fontsize=8)
    L.benchlib.save_figure(fig, os.path.join(a.out, "latency_cdf.png"))

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, q in zip(axes, ("p50_us", "p90_us", "p99_us")):
        for n, _, _ in CONFIGS:
            rows = [r for r in out["summary"] if r["config"] == n and r[q] is not None]
            if not rows:
                continue
            x = [r["offered_pps"] / 1000.0 for r in rows]
            y = [r[q] for r in rows]
            lo = [r[q] - r[q + "_min"] for r in rows]
            hi = [r[q + "_max"] - r[q] for r in rows]
            c, ls = styles[n]
            ax.errorbar(x, y, yerr=[lo, hi], color=c, ls=ls, marker="o", ms=4,
                        capsize=3, label=n)
        ax.set_xlabel("offered load (kpps, + %d pps measuring)" % out["meas_rate_pps"])
        ax.set_ylabel("%s latency (us)" % q.split("_")[0])
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=.3)
        ax.set_title("%s latency vs load (%s), median of %d, bars min-max"
                     % (q.split("_")[0], out["topology"], out["runs"]), fontsize=9)
        ax.legend(fontsize=8)
    L.benchlib.save_figure(fig, os.path.join(a.out, "latency_vs_load.png"))


if __name__ == "__main__":
    main()
