#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Store sizing (issue #3; PayloadPark Fig. 14 and §6.2.4): premature
evictions vs store slots x expiry at a given packet rate and NF delay, next
to the Little's-law size.

Topology: park (scripts/topo_park.sh, prefix nfsz) with --nf-delay D: a delay
line (build/nfslice-delay on a TAP device in a bump-in-the-wire namespace)
holds every packet on its way to the NF server for D us, as a slow NF
would, so each sliced payload stays parked for about D plus the path's own
delay. This kernel has no netem; the delay line is the controlled NF delay.

One stamped stream of 1514 B UDP frames (nfslice-pktgen --stamp, --rate PPS,
16 flows, on CPU 0; the delay line runs on CPU 1) crosses the slicer node
with nfslice attached (--keep 16, --slots S, --expiry E); every frame's
one-way delay W is measured at the server by bench/bpf/latency_sink.bpf.c. For
every D x S x E the run reports nfslice's counters (sliced, spliced,
evicted, stale, skipped_full) and the frames lost (sent - received at the
server) or received with a wrong checksum (payload not intact).

Little's law: the payloads parked at any time average L = rate x W (W the
time from slice to splice; the measured one-way delay is an upper bound of
it). The slicer allocates per CPU from a partition of S / ncpu slots (in
a hot window that grows with the payloads in flight) and evicts a busy slot
once it is E turns of the partition, E x S / ncpu slice attempts, old
(docs/format.md "Store"), so a payload is safe for E x S / ncpu
allocations: premature
evictions (stale: header came back, payload gone) should stop once
E x S / ncpu clearly exceeds L (bursts and the delay's tail need margin).

Outputs (--out, default bench/results/): sizing.json, sizing.csv,
sizing.png. Units: rates in pps, delays in us, sizes in slots (2 KiB each).
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

PORT = 5201
GEN_CPU, DELAY_CPU = 0, 1
# What each point records of nfslice's counter deltas.
COUNTERS = ("sliced", "spliced", "evicted", "stale", "skipped_full", "bad_token")
# Summarised per grid point: median, min and max over the repetitions.
SUMMARY_KEYS = ("stale_pct", "lost_pct", "unsliced_pct", "mean_delay_us",
                "p99_delay_us", "littles_L", "evicted", "stale", "lost")
CSV_COLS = ["run", "nf_delay_us", "rate_pps", "achieved_pps", "slots", "expiry",
            "safe_allocs", "mean_delay_us", "p99_delay_us", "littles_L", "sent",
            "received", "lost", "lost_pct", "sliced", "spliced", "evicted", "stale",
            "stale_pct", "skipped_full", "unsliced_pct", "csum_ok", "csum_bad",
            "background_busy_max"]


def int_list(ap, name, text):
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        ap.error("--%s '%s': comma-separated whole numbers expected" % (name, text))


def parse_args():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Rates in pps (packets per second), delays in us, store sizes in "
               "slots of 2 KiB. Needs root and 2 CPUs; builds and removes its own "
               "namespaces (scripts/topo_park.sh --nf-delay, prefix nfsz).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    L.benchlib.add_common_args(ap, "smoke run: 1 repetition, 1 delay, 4 sizes x 2 "
                                   "expiries, 1 s points (< 1 min)")
    ap.add_argument("--rates", default="50000",
                    help="offered rates in pps, comma-separated (default 50000)")
    ap.add_argument("--delays", default=None,
                    help="NF delays in us, comma-separated, 0-10000000 "
                         "(default 500,2000; quick 2000)")
    ap.add_argument("--slots", default=None,
                    help="store sizes in slots, comma-separated "
                         "(default 8,16,32,64,128,256,512,1024,4096; quick 16,64,256,1024)")
    ap.add_argument("--expiry", default=None,
                    help="expiry thresholds, comma-separated (default 1,2,4; quick 1,2)")
    ap.add_argument("--link-rate", default="1gbit",
                    help="shaped slicer-NF link rate, tc units (default 1gbit)")
    L.add_quiet_args(ap)
    ap.add_argument("--duration", type=int, default=None,
                    help="seconds per point (default 2, quick 1)")
    a = L.benchlib.fill_defaults(
        ap.parse_args(), duration=(2, 1), quiet_wait=(3.0, 1.0), delays=("500,2000", "2000"),
        slots=("8,16,32,64,128,256,512,1024,4096", "16,64,256,1024"),
        expiry=("1,2,4", "1,2"))
    a.rates = int_list(ap, "rates", a.rates)
    a.delays = int_list(ap, "delays", a.delays)
    a.slots = int_list(ap, "slots", a.slots)
    a.expiry = int_list(ap, "expiry", a.expiry)
    if min(a.rates) < 1000 or min(a.slots) < 2 or min(a.expiry) < 1 or a.runs < 1:
        ap.error("rates >= 1000 pps, slots >= 2, expiry >= 1, runs >= 1")
    if min(a.delays) < 0 or max(a.delays) > 10000000:
        ap.error("--delays: 0 to 10000000 us")
    return a


def measure(e, sink, a, ncpu, run, delay, rate, slots, exp):
    """One point: attach with SLOTS x EXP, send RATE pps for a.duration s,
    return the counter deltas, loss and one-way delay (dict)."""
    ns, ifs = e["SLICE_NS"], e["SLICE_IFS"]
    L.nfslice_detach(ns)
    L.nfslice_attach(ns, ifs, keep=16, slots=slots, expiry=exp,
                     nf_ports=e.get("SLICE_NF_PORTS"))
    bg = L.wait_quiet(a.quiet, a.quiet_wait) if a.quiet >= 0 else {}
    s0, a0 = L.nfslice_stats(ns), sink.snapshot()
    p = L.start(L.pktgen_cmd(e["CLI_NS"], e["CLI_IF"], GEN_CPU, 1514, rate, a.duration,
                             dport=PORT, flows=16, stamp=True, dst_ip=e["SRV_IP4"])
                + ["--src-ip", e["CLI_IP4"]])
    try:
        g = L.finish(p, a.duration + 20)
    finally:
        L.kill_all([p])
    # Let the last frames leave the delay line before counting.
    time.sleep(0.2 + delay * 1e-6)
    d = L.snap_diff(a0, sink.snapshot())
    s1 = L.nfslice_stats(ns)
    lat = L.summarize(d)
    sent, recv = g.get("transmitted", 0), d["stats"]["packets"]
    w_us = lat["mean_us"] or 0.0
    r = {k: s1[k] - s0[k] for k in COUNTERS}
    if sent and not r["sliced"]:
        raise RuntimeError("nothing was sliced (%d frames sent): nfslice stats says "
                           "why (skipped_route: the NF port?)" % sent)
    r.update(run=run, nf_delay_us=delay, rate_pps=rate, slots=slots, expiry=exp,
             achieved_pps=g.get("achieved_pps", 0), sent=sent, received=recv,
             lost=sent - recv, csum_bad=d["stats"]["csum_bad"],
             csum_ok=d["stats"]["csum_ok"], mean_delay_us=w_us,
             p99_delay_us=lat["p99_us"],
             littles_L=g.get("achieved_pps", rate) * w_us * 1e-6,
             safe_allocs=exp * slots / ncpu)
    r.update(bg)
    for k, v in (("lost_pct", r["lost"]), ("stale_pct", r["stale"]),
                 ("unsliced_pct", r["skipped_full"])):
        r[k] = 100.0 * v / sent if sent else None
    print("run %d delay %6d us rate %6d slots %5d expiry %d: W %7.1f us (L %6.1f, "
          "E*S/ncpu %6.0f) evicted %6d stale %6d skipped_full %6d lost %6d (%.2f%%) "
          "csum bad %d" % (run, delay, rate, slots, exp, w_us, r["littles_L"],
                           r["safe_allocs"], r["evicted"], r["stale"], r["skipped_full"],
                           r["lost"], r["lost_pct"] or 0, r["csum_bad"]), flush=True)
    return r


def sweep_delay(out, a, ncpu, delay):
    """Build park with an NF delay of DELAY us, run the grid a.runs times,
    tear it down and keep the delay line's own report."""
    topo = L.Topology("park", "nfsz", ["--rate", a.link_rate, "--nf-delay", str(delay),
                                       "--delay-cpu", str(DELAY_CPU)])
    sink = None
    try:
        topo.up()
        e = topo.env
        sink = L.LatencySink(e["SRV_NS"], e["SRV_IF"], PORT, 0).attach()
        for run in range(a.runs):
            for rate in a.rates:
                grid = [(s, x) for x in a.expiry for s in a.slots]
                if run % 2:
                    grid.reverse()  # alternate the order per repetition
                for slots, exp in grid:
                    out["points"].append(measure(e, sink, a, ncpu, run, delay, rate,
                                                 slots, exp))
    finally:
        if sink:
            sink.detach()
        L.nfslice_detach(topo.env.get("SLICE_NS", "nfsz-slc"))
        topo.down()
    try:
        with open(topo.env["DELAY_REPORT"]) as fh:
            out["delay_lines"].append(json.loads(fh.read().strip().splitlines()[-1]))
        os.unlink(topo.env["DELAY_REPORT"])     # kept in sizing.json now
    except (KeyError, OSError, ValueError, IndexError) as ex:
        print("exp_sizing: no report of the delay line: %s" % ex, file=sys.stderr)


def summarize(out, a):
    summ = []
    for delay in a.delays:
        for rate in a.rates:
            for exp in a.expiry:
                for slots in a.slots:
                    pts = [p for p in out["points"] if p["nf_delay_us"] == delay and
                           p["rate_pps"] == rate and p["expiry"] == exp and
                           p["slots"] == slots]
                    if not pts:
                        continue
                    row = {"nf_delay_us": delay, "rate_pps": rate, "expiry": exp,
                           "slots": slots, "runs": len(pts),
                           "safe_allocs": pts[0]["safe_allocs"]}
                    for k in SUMMARY_KEYS:
                        v = [p[k] for p in pts if p[k] is not None]
                        row[k] = statistics.median(v) if v else None
                        row[k + "_min"] = min(v) if v else None
                        row[k + "_max"] = max(v) if v else None
                    summ.append(row)
    return summ


def main():
    a = parse_args()
    if os.geteuid() != 0:
        sys.exit("exp_sizing: needs root")
    ncpu = os.cpu_count()
    if ncpu < 2:
        sys.exit("exp_sizing: needs 2 CPUs (generator on CPU %d, delay line on CPU %d)"
                 % (GEN_CPU, DELAY_CPU))
    L.ensure_built()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    out = {"experiment": "sizing", "topology": "park", "link_rate": a.link_rate,
           "machine": L.machine(), "command": " ".join(sys.argv), "runs": a.runs,
           "duration_s": a.duration, "frame_bytes": 1514, "ncpu": ncpu,
           "points": [], "delay_lines": []}
    for delay in a.delays:
        sweep_delay(out, a, ncpu, delay)
    out["elapsed_s"] = time.time() - t0
    out["summary"] = summarize(out, a)
    with open(os.path.join(a.out, "sizing.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    with open(os.path.join(a.out, "sizing.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_COLS)
        for p in out["points"]:
            w.writerow([p.get(c) for c in CSV_COLS])
    plot(out, a)
    print("exp_sizing: %.0f s, results in %s" % (out["elapsed_s"], a.out))


def plot(out, a):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cases = [(d, r) for d in a.delays for r in a.rates]
    fig, axes = plt.subplots(len(cases), 2, figsize=(12, 4.2 * len(cases)), squeeze=False)
    for row, (delay, rate) in zip(axes, cases):
        summ = [r for r in out["summary"] if r["rate_pps"] == rate and
                r["nf_delay_us"] == delay]
        Ls = [r["littles_L"] for r in summ if r["littles_L"]]
        Lm = statistics.median(Ls) if Ls else None
        Ws = [r["mean_delay_us"] for r in summ if r["mean_delay_us"]]
        # Lost frames are the stale ones here (the table has both); the
        # other cost of a small store is packets sent on unsliced.
        for ax, key, lab in ((row[0], "stale_pct", "premature evictions: stale (% of sent)"),
                             (row[1], "unsliced_pct",
                              "no free slot, sent unsliced (% of sent)")):
            for exp in a.expiry:
                rs = [r for r in summ if r["expiry"] == exp]
                x = [r["slots"] for r in rs]
                y = [max(r[key] or 0, 1e-3) for r in rs]
                lo = [y[i] - max(rs[i][key + "_min"] or 0, 1e-3) for i in range(len(rs))]
                hi = [max(rs[i][key + "_max"] or 0, 1e-3) - y[i] for i in range(len(rs))]
                ax.errorbar(x, y, yerr=[lo, hi], marker="o", ms=4, capsize=3,
                            label="expiry %d" % exp)
            if Lm:
                for i, exp in enumerate(a.expiry):
                    ax.axvline(Lm * out["ncpu"] / exp, ls="--", color="C%d" % i, lw=1,
                               label="Little, expiry %d: E x S / ncpu = rate x W "
                                     "(S = %.0f)" % (exp, Lm * out["ncpu"] / exp))
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("store slots (2 KiB each; %d CPUs share them)" % out["ncpu"])
            ax.set_ylabel(lab + " (0 drawn at 1e-3)")
            ax.set_title("NF delay %d us, %d pps of 1514 B, W = %.0f us mean one-way "
                         "delay, %d runs" % (delay, rate,
                                             statistics.median(Ws) if Ws else 0,
                                             out["runs"]), fontsize=9)
            ax.grid(True, which="both", alpha=.3)
            ax.legend(fontsize=8)
    L.benchlib.save_figure(fig, os.path.join(a.out, "sizing.png"))


if __name__ == "__main__":
    main()
