#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""exp_iperf.py — iperf3 TCP through the rig on one CPU: what nfslice costs
a TCP flow next to a bare XDP program (issue #7 §5; docs/benchmarks-iperf.md).

usage: bench/exp_iperf.py [--quick] [--runs N] [--out DIR] [--duration S]
                          [--offloads kernel|off ...] [--dirs c2s|s2c ...]
                          [--cpu N] [--seed N] [--profile-runs N]
                          [--no-profile] [--keep-perf]

The rig is scripts/rig.sh (client - DUT router with an nftables ACL and
masquerade NAT - server), one per offload mode, under per-run namespace
names (nfipPID{k,o}-cli/-dut/-srv). Four variants on the DUT's two veths:

  none       no XDP program at all (a)
  xdp_pass   a bare XDP_PASS program (userspace/nfslice-pktgen/xdp_pass.bpf.c) on both (b)
  noslice    nfslice attached, --threshold 65535: nothing is sliced (c)
  slice      nfslice attached with its defaults: every data segment sliced (d)

"On one CPU": the iperf3 client and server are pinned (taskset) to one CPU
(--cpu, default the last online one) and RPS stays off, so the whole path
runs there: a veth transmits into its peer on the sending CPU, and the
DUT's receive, XDP, forwarding, nftables, conntrack, NAT, tc egress and the
server's receive all run in the softirqs of that CPU (the sender's
local_bh_enable or ksoftirqd/N). /proc/stat and /proc/softirqs of every
run are in the JSON (the pinned CPU is ~100% busy; NET_RX counts show where
the packets were processed).

Every repetition (round) runs every (offloads, direction, variant) once,
in a fresh random order (seeded, recorded), one iperf3 -t DURATION run
each; ratios are taken within a round (to (a) and to (b)), then the median
and the interquartile range over the rounds, as bench/run.sh does.

Profile (after the rounds, unless --no-profile), for every (offloads,
direction, variant), in a random order: --profile-runs runs under
`perf record -e cpu-clock -a -g` (perf itself pinned to another CPU),
pooled, and one run with the kernel's BPF run-time statistics on
(bpf_enable_stats, fd form: off again when this process ends; not under
perf, because the statistics' two clock reads per program run are
expensive on kvm-clock and would distort the profile). Samples of the
pinned CPU are attributed to the stage of the packet path they were taken
in: the innermost frame of their call chain that names a stage (STAGES
below), a sample under a bpf_prog_* frame belonging to that program with
its helpers. Reported in ns per TCP data segment (bytes delivered / MSS),
next to the top symbols and run_time_ns / run_cnt of the slicer, the
splicer and xdp_pass (bpftool prog show). The goodput of these runs is not
used for the ratios (perf slows them).

options:
  --quick           smoke run (< 1 min): kernel offloads, client to server,
                    1 round of 2 s runs, 1 perf run per variant
  --runs N          rounds (default 5; 1 with --quick)
  --out DIR         results directory (default bench/results)
  --duration S      seconds per iperf3 run (default 5; 2 with --quick)
  --offloads M ...  kernel (veth offloads as the kernel sets them) and/or
                    off (scripts/rig.sh up --offloads off); default both
                    (kernel only with --quick)
  --dirs D ...      c2s (client to server) and/or s2c (iperf3 -R);
                    default both (c2s with --quick)
  --cpu N           the CPU everything runs on (default: last online)
  --seed N          seed of the run order (default: time)
  --profile-runs N  perf runs per case, pooled (default 2; 1 with --quick)
  --no-profile      skip the perf / bpf_stats runs
  --keep-perf       keep the perf.data files (in DIR/iperf_perf/)

Outputs in DIR: iperf.json (every run, the summary, the profiles),
iperf.csv (one row per run). Needs root, iperf3, perf (linux-perf),
bpftool, build/nfslice and build/.output/xdp_pass.bpf.o (make).
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from math import comb
from pathlib import Path

from nfsl import bench as B
from nfsl import cpustat
from iperf_profile import (
    PORT, bpf_stats_run, client_args, iperf_result, pool, profile_run,
    summarize_profile)

VARIANTS = ("none", "xdp_pass", "noslice", "slice")
LETTER = {"none": "a", "xdp_pass": "b", "noslice": "c", "slice": "d"}
LABEL = {"none": "no XDP", "xdp_pass": "XDP_PASS only",
         "noslice": "nfslice, not slicing", "slice": "nfslice, slicing"}
NOSLICE_THRESHOLD = 65535   # no frame is that long: nothing is sliced
TARGET_SLICE = 0.9          # slicing >= 0.9x XDP_PASS only
TARGET_NOSLICE = 0.02       # "indistinguishable": median within 2% ...
SIGN_P = 0.05               # ... and no sign-test difference at 5%


def log(msg):
    B.log(msg, "exp_iperf")


def parse(argv):
    ap = B.parser("exp_iperf.py", __doc__,
                  "smoke run: kernel offloads, c2s, 1 round of 2 s", runs=(5, 1))
    ap.add_argument("--duration", type=float, help="seconds per iperf3 run")
    ap.add_argument("--offloads", nargs="+", choices=("kernel", "off"))
    ap.add_argument("--dirs", nargs="+", choices=("c2s", "s2c"))
    ap.add_argument("--cpu", type=int, help="CPU of the whole path")
    ap.add_argument("--seed", type=int, help="seed of the run order")
    ap.add_argument("--profile-runs", type=int,
                    help="perf runs per case, pooled (default 2; 1 quick)")
    ap.add_argument("--no-profile", action="store_true",
                    help="skip the perf / bpf_stats runs")
    ap.add_argument("--keep-perf", action="store_true",
                    help="keep perf.data files in DIR/iperf_perf/")
    a = ap.parse_args(argv)
    B.fill_defaults(a, duration=(5.0, 2.0), profile_runs=(2, 1),
                    offloads=(["kernel", "off"], ["kernel"]),
                    dirs=(["c2s", "s2c"], ["c2s"]))
    online = online_cpus()
    if a.cpu is None:
        a.cpu = online[-1]
    if a.cpu not in online:
        ap.error(f"--cpu {a.cpu} is not online (online: {online})")
    if a.runs < 1 or not 1 <= a.duration <= 60:
        ap.error("--runs >= 1, --duration 1-60 s")
    a.other_cpu = next((c for c in online if c != a.cpu), None)
    a.seed = a.seed if a.seed is not None else int(time.time())
    return a


def online_cpus():
    cpus = []
    for part in open("/sys/devices/system/cpu/online").read().strip().split(","):
        lo, _, hi = part.partition("-")
        cpus += range(int(lo), int(hi or lo) + 1)
    return cpus


# ---------------------------------------------------------------- rig --
class Rig(B.Topo):
    """scripts/rig.sh under PREFIX with OFFLOADS, one of the four variants
    on the DUT's veths at a time (down() removes whichever is on)."""

    nf_role = "dut"

    def __init__(self, prefix, offloads, domain):
        super().__init__("rig", prefix, ["--offloads", offloads], domain=domain)
        self.offloads = offloads
        self.variant = None
        self.server = None
        self.pin_dir = None

    def read_env(self):
        """rig.sh's variables, and the slicing ones nfsltopo expects."""
        e = super().read_env()
        e.setdefault("SLICE_NS", e["DUT_NS"])
        e.setdefault("SLICE_IFS", f"{e['DUT_IN']} {e['DUT_OUT']}")
        e.setdefault("NF_NS", e["DUT_NS"])
        return e

    def release(self):
        self._clear()
        return []

    def stats(self):
        """nfslice stats of the domain ({} when nfslice is not attached)."""
        if self.variant not in ("noslice", "slice"):
            return {}
        return B.nfsltopo.Topo.stats(self)

    def _clear(self):
        if self.variant in ("noslice", "slice"):
            self.detach(check=False)
        elif self.variant == "xdp_pass":
            for dev in self.slice_ifs:
                self.run(["ip", "-n", self.ns("dut"), "link", "set", "dev",
                          dev, "xdp", "off"], check=False)
        self.variant = None

    def set_variant(self, v, xdp_pass_obj):
        """Put variant V on the DUT's veths. Raises RuntimeError."""
        if self.variant == v:
            return
        self._clear()
        if v == "xdp_pass":
            for dev in self.slice_ifs:
                self.run(["ip", "-n", self.ns("dut"), "link", "set", "dev",
                          dev, "xdp", "obj", xdp_pass_obj, "sec", "xdp"])
        elif v == "noslice":
            self.attach("--threshold", NOSLICE_THRESHOLD)
        elif v == "slice":
            self.attach()
        if v in ("noslice", "slice") and self.pin_dir is None:
            self.pin_dir = self.status()["dir"]
        self.variant = v
        time.sleep(0.3)                 # links settle after XDP changes

    def prog_ids(self):
        """{program name: [ids]} of what the current variant attached."""
        ids = {}
        if self.variant in ("noslice", "slice"):
            for i in self.status()["interfaces"]:
                ids.setdefault("nfsl_slicer", []).append(i["xdp_prog_id"])
                ids.setdefault("nfsl_splicer", []).append(i["tc_prog_id"])
        elif self.variant == "xdp_pass":
            for dev in self.slice_ifs:
                p = self.link_info("dut", dev).get("xdp", {}).get("prog", {})
                if p:
                    ids.setdefault(p["name"], []).append(p["id"])
        return {k: sorted(set(v)) for k, v in ids.items()}

    def start_server(self, cpu):
        self.server = self.spawn("srv", "taskset", "-c", str(cpu), "iperf3",
                                 "-s", "-p", str(PORT))
        self.wait_listen("srv", PORT)

    def restart_server(self, cpu):
        if self.server is not None:
            self.stop(self.server)
        self.start_server(cpu)


def counters(rig):
    """Snapshot: nfslice stats (if attached), the NF's nft counter."""
    return {"nfslice": rig.stats(), "nf_in": rig.nf_in()}


def counter_delta(c0, c1):
    out = {"nf_packets": c1["nf_in"][0] - c0["nf_in"][0],
           "nf_bytes": c1["nf_in"][1] - c0["nf_in"][1]}
    if c1["nfslice"]:
        out["nfslice"] = {k: c1["nfslice"][k] - c0["nfslice"].get(k, 0)
                          for k in c1["nfslice"]
                          if isinstance(c1["nfslice"][k], int) and k != "slots"}
    return out


def one_run(rig, a, direction, variant, rnd):
    """One measured iperf3 run; its record."""
    rig.set_variant(variant, a.xdp_pass)
    c0, s0 = counters(rig), cpustat.snapshot()
    try:
        cp = rig.run(client_args(rig, a, direction), timeout=a.duration + 30,
                     check=False)
    except subprocess.TimeoutExpired:
        cp = subprocess.CompletedProcess([], -9, "", "timed out")
    s1, c1 = cpustat.snapshot(), counters(rig)
    res, err = iperf_result(cp)
    rec = {"round": rnd, "offloads": rig.offloads, "dir": direction,
           "variant": variant, "error": err, **res, **counter_delta(c0, c1)}
    cs = cpustat.delta(s0, s1)
    rec["cpu"] = {str(c): {"nonidle": r["nonidle_ns"] / max(cs["wall_ns"], 1),
                           "steal": r["steal_ns"] / max(cs["wall_ns"], 1),
                           "net_rx": r["net_rx"]}
                  for c, r in cs["cpus"].items()}
    if err:
        log(f"round {rnd} {rig.offloads}/{direction}/{variant}: {err}; "
            "restarting the server")
        rig.restart_server(a.cpu)
    return rec


# ------------------------------------------------------------ summary --
def sign_test(xs):
    """Two-sided sign test of XS (ratios) against 1: p-value."""
    pos = sum(1 for x in xs if x > 1)
    neg = sum(1 for x in xs if x < 1)
    n = pos + neg
    if n == 0:
        return 1.0
    k = min(pos, neg)
    p = 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, p)


def summarize(runs, a):
    """Per (offloads, dir): goodput spread per variant, per-round ratios."""
    out = {}
    for off in a.offloads:
        for d in a.dirs:
            key = f"{off}/{d}"
            g = {v: {r["round"]: r["goodput_gbps"] for r in runs
                     if r["offloads"] == off and r["dir"] == d
                     and r["variant"] == v and not r["error"]}
                 for v in VARIANTS}
            s = {"goodput_gbps": {v: B.spread(list(g[v].values())) for v in VARIANTS},
                 "ratio_to_none": {}, "ratio_to_xdp_pass": {}}
            for base, kk in (("none", "ratio_to_none"),
                             ("xdp_pass", "ratio_to_xdp_pass")):
                for v in VARIANTS:
                    rs = [g[v][r] / g[base][r] for r in g[v]
                          if r in g[base] and g[base][r]]
                    sp = B.spread(rs)
                    sp["of_medians"] = B.ratio(s["goodput_gbps"][v]["median"],
                                               s["goodput_gbps"][base]["median"])
                    sp["sign_test_p"] = sign_test(rs)
                    sp["per_round"] = rs
                    s[kk][v] = sp
            rb = s["ratio_to_xdp_pass"]
            sl, ns = rb["slice"], rb["noslice"]
            s["targets"] = {
                "slice_ge_0.9x_xdp_pass": {
                    "median": sl["median"],
                    "met": sl["median"] is not None and sl["median"] >= TARGET_SLICE},
                "noslice_indistinguishable": {
                    "median": ns["median"], "sign_test_p": ns["sign_test_p"],
                    "met": ns["median"] is not None
                    and abs(ns["median"] - 1) <= TARGET_NOSLICE
                    and ns["sign_test_p"] >= SIGN_P}}
            out[key] = s
    return out


def fmt(x, f="{:.3f}"):
    return "-" if x is None else f.format(x)


def print_tables(summ, profiles, bpfstats, a):
    for key, s in summ.items():
        rows = []
        for v in VARIANTS:
            gp = s["goodput_gbps"][v]
            ra, rb = s["ratio_to_none"][v], s["ratio_to_xdp_pass"][v]
            rows.append([f"({LETTER[v]}) {LABEL[v]}", fmt(gp["median"], "{:.2f}"),
                         f"{fmt(gp['min'], '{:.2f}')}-{fmt(gp['max'], '{:.2f}')}",
                         fmt(ra["median"]), f"[{fmt(ra['q1'])}..{fmt(ra['q3'])}]",
                         fmt(rb["median"]), f"[{fmt(rb['q1'])}..{fmt(rb['q3'])}]",
                         fmt(rb["sign_test_p"], "{:.2f}"), str(gp["n"])])
        t = s["targets"]
        B.print_table(
            f"iperf3 TCP IPv4, offloads {key.split('/')[0]}, "
            f"{'client->server' if key.endswith('c2s') else 'server->client (-R)'}, "
            f"all on CPU {a.cpu}, {a.duration:g} s x {a.runs} rounds "
            f"(ratios: median of per-round ratios [IQR])",
            ["variant", "Gbit/s", "min-max", "/(a)", "IQR", "/(b)", "IQR",
             "sign p", "n"], rows)
        print(f"  target slicing >= {TARGET_SLICE}x (b): "
              f"{fmt(t['slice_ge_0.9x_xdp_pass']['median'])} "
              f"{'met' if t['slice_ge_0.9x_xdp_pass']['met'] else 'NOT met'}; "
              f"not slicing indistinguishable from (b): "
              f"{fmt(t['noslice_indistinguishable']['median'])} "
              f"(sign test p "
              f"{fmt(t['noslice_indistinguishable']['sign_test_p'], '{:.2f}')}) "
              f"{'met' if t['noslice_indistinguishable']['met'] else 'NOT met'}")
    for key in summ:
        off, d = key.split("/")
        ps = {p["variant"]: p for p in profiles
              if p["offloads"] == off and p["dir"] == d and p.get("profile")}
        bs = {p["variant"]: p for p in bpfstats
              if p["offloads"] == off and p["dir"] == d and not p["error"]}
        if not ps:
            continue
        vs = [v for v in VARIANTS if v in ps]
        diffs = [v for v in ("noslice", "slice") if v in ps and "xdp_pass" in ps]

        def ns(v, name):
            for st in ps[v]["profile"]["stages"]:
                if st["name"] == name:
                    return st["ns_per_segment"]
            return 0.0
        stages = []
        for v in vs:
            for st in ps[v]["profile"]["stages"]:
                if st["name"] not in stages:
                    stages.append(st["name"])
        stages.sort(key=lambda n: -max(ns(v, n) for v in vs))
        rows = [[n[:54]] + [fmt(ns(v, n), "{:.0f}") for v in vs]
                + [fmt(ns(v, n) - ns("xdp_pass", n), "{:+.0f}") for v in diffs]
                for n in stages]
        busy = {v: ps[v]["profile"]["busy_ns_per_segment"] for v in vs}
        rows.append(["busy (all but idle)"] + [fmt(busy[v], "{:.0f}") for v in vs]
                    + [fmt(busy[v] - busy["xdp_pass"], "{:+.0f}") for v in diffs])
        rig = {v: ps[v]["profile"]["rig_ns_per_segment"] for v in vs}
        rows.append(["the rig's (busy - other processes, other BPF)"]
                    + [fmt(rig[v], "{:.0f}") for v in vs]
                    + [fmt(rig[v] - rig["xdp_pass"], "{:+.0f}") for v in diffs])
        rows.append(["  busy per run"] + [
            "/".join(fmt(r.get("busy_ns_per_segment"), "{:.0f}")
                     for r in ps[v]["runs"]) for v in vs] + ["" for v in diffs])
        rows.append(["goodput of the perf runs (Gbit/s)"] + [
            "/".join(fmt(r.get("goodput_gbps"), "{:.2f}") for r in ps[v]["runs"])
            for v in vs] + ["" for v in diffs])
        B.print_table(
            f"CPU {a.cpu} time per TCP data segment (ns; perf cpu-clock, "
            f"stage = innermost known frame), {key}", ["stage"]
            + [f"({LETTER[v]})" for v in vs]
            + [f"({LETTER[v]})-(b)" for v in diffs], rows)
        for v in vs:
            pr = ps[v]["profile"]
            line = ", ".join(f"{x['name']} {100 * x['share']:.1f}%"
                             for x in pr["top_symbols"][:10])
            print(f"  ({LETTER[v]}) top symbols: {line}")
            for st, sy in pr["stage_symbols"].items():
                if not (st.startswith("BPF:") or st.startswith("tc egress")):
                    continue
                inner = ", ".join(f"{x['name']} {x['ns_per_segment']:.0f}"
                                  for x in sy[:8])
                print(f"      {st}: {ns(v, st):.0f} ns/segment = {inner}")
            for name, st in bs.get(v, {}).get("programs", {}).items():
                print(f"      bpf_stats {name}: {fmt(st['ns_per_run'], '{:.0f}')} "
                      f"ns/run (with the statistics' clock reads), "
                      f"{st['runs_per_segment']:.2f} runs/segment")
    sys.stdout.flush()


def csv_rows(runs):
    rows = []
    for r in runs:
        row = {k: r.get(k) for k in ("round", "offloads", "dir", "variant",
                                       "goodput_gbps", "bytes", "seconds",
                                       "retransmits", "mss", "nf_packets",
                                       "nf_bytes", "error")}
        ns = r.get("nfslice", {})
        row["sliced"] = ns.get("sliced")
        row["spliced"] = ns.get("spliced")
        row["route_cache_hit"] = ns.get("route_cache_hit")
        row["route_cache_miss"] = ns.get("route_cache_miss")
        for c, v in r.get("cpu", {}).items():
            row[f"cpu{c}_nonidle"] = v["nonidle"]
            row[f"cpu{c}_net_rx"] = v["net_rx"]
        rows.append(row)
    return rows


def profile(by_off, a, rng, tmp, profiles, bpfstats):
    """The perf runs (--profile-runs per case, pooled) and one bpf_stats
    run per case with a program, all in a random order."""
    jobs = [(o, d, v, k) for o in a.offloads for d in a.dirs
            for v in VARIANTS for k in range(a.profile_runs)]
    jobs += [(o, d, v, "stats") for o in a.offloads for d in a.dirs
             for v in VARIANTS[1:]]
    rng.shuffle(jobs)
    got = {}
    for i, (o, d, v, k) in enumerate(jobs):
        log(f"profile {i + 1}/{len(jobs)}: {o}/{d} ({LETTER[v]}) {v}"
            + (" bpf_stats" if k == "stats" else " perf"))
        if k == "stats":
            bpfstats.append(bpf_stats_run(by_off[o], a, d, v))
            continue
        rec, acc = profile_run(by_off[o], a, d, v, tmp)
        g = got.setdefault((o, d, v), {"runs": [], "accs": []})
        g["runs"].append(rec)
        if acc:
            g["accs"].append(acc)
    for o in a.offloads:
        for d in a.dirs:
            for v in VARIANTS:
                g = got.get((o, d, v), {"runs": [], "accs": []})
                seg = sum(r.get("segments", 0) for r in g["runs"] if not r["error"])
                profiles.append({
                    "offloads": o, "dir": d, "variant": v, "runs": g["runs"],
                    "profile": summarize_profile(pool(g["accs"]), seg)
                    if g["accs"] else None})


# --------------------------------------------------------------- main --
def leftovers(rigs):
    """What the run left behind: namespaces, nfslice pin directories."""
    left = []
    names = set(B.run(["ip", "netns", "list"], check=False).stdout.split())
    for r in rigs:
        for role in ("cli", "dut", "srv"):
            if f"{r.prefix}-{role}" in names:
                left.append(f"namespace {r.prefix}-{role}")
        if r.pin_dir and Path(r.pin_dir).exists():
            left.append(f"pins {r.pin_dir}")
    return left


def main(argv):
    a = parse(argv)
    results = B.preflight("exp_iperf.py", a, argv)
    if results is None:
        return 1
    a.xdp_pass = str(B.XDP_PASS)
    missing = [t for t in ("iperf3", "bpftool", "taskset")
               + (() if a.no_profile else ("perf",)) if not shutil.which(t)]
    if missing:
        print(f"exp_iperf.py: missing {' '.join(missing)} "
              "(scripts/install-deps.sh)", file=sys.stderr)
        return 1
    results["config"].update(cpu=a.cpu, other_cpu=a.other_cpu, seed=a.seed)
    results["loadavg_start"] = open("/proc/loadavg").read().split()[:3]
    start = time.monotonic()
    tag = f"nfip{os.getpid() % 1000000}"
    rigs, runs, profiles, bpfstats = [], [], [], []
    B.cleanup_on_signals(rigs)
    tmp = tempfile.mkdtemp(prefix="nfip-perf-")
    rng = random.Random(a.seed)
    try:
        by_off = {}
        for off in a.offloads:
            r = Rig(f"{tag}{off[0]}", off, domain=f"{tag}{off[0]}")
            rigs.append(r)
            r.up()
            r.start_server(a.cpu)
            by_off[off] = r
        log(f"rigs {' '.join(r.prefix for r in rigs)}: everything on CPU {a.cpu}, "
            f"{a.runs} rounds x {len(a.offloads) * len(a.dirs) * 4} runs of "
            f"{a.duration:g} s, seed {a.seed}")
        combos = [(o, d, v) for o in a.offloads for d in a.dirs for v in VARIANTS]
        for rnd in range(a.runs):
            order = combos[:]
            rng.shuffle(order)
            for o, d, v in order:
                rec = one_run(by_off[o], a, d, v, rnd)
                runs.append(rec)
                log(f"round {rnd + 1}/{a.runs} {o}/{d} ({LETTER[v]}) {v}: "
                    f"{fmt(rec.get('goodput_gbps'), '{:.2f}')} Gbit/s")
        if not a.no_profile:
            profile(by_off, a, rng, tmp, profiles, bpfstats)
    finally:
        for r in rigs:
            r.down()
        shutil.rmtree(tmp, ignore_errors=True)
    left = leftovers(rigs)
    summ = summarize(runs, a)
    results.update(runs=runs, profiles=profiles, bpf_stats=bpfstats,
                   summary=summ, leftovers=left,
                   loadavg_end=open("/proc/loadavg").read().split()[:3],
                   elapsed_s=time.monotonic() - start)
    print_tables(summ, profiles, bpfstats, a)
    B.write_json(Path(a.out) / "iperf.json", results)
    B.write_csv(Path(a.out) / "iperf.csv", csv_rows(runs))
    print(f"\nresults: {Path(a.out) / 'iperf.json'}, iperf.csv")
    print(f"elapsed: {results['elapsed_s']:.0f} s")
    if left:
        print(f"exp_iperf.py: left behind: {', '.join(left)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
