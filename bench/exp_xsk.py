#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""exp_xsk.py — nfslice-nf's receive architectures side by side (Pismenny's
thesis §6.3, Fig. 6.4 and 6.7-6.9, at this machine's scale;
docs/benchmarks-xsk.md).

usage: bench/exp_xsk.py [--quick] [--runs N] [--out DIR] [--trial S]
                        [--bisect K] [--paths 1q|4q ...] [--archs A ...]
                        [--sizes B ...] [--nfs rxdrop|l2fwd ...]
                        [--slicing off|on ...] [--flows N ...]
                        [--parts P ...] [--workers N] [--gen-cpu N]
                        [--nf-cpu N] [--seed N] [--steal-loads PPS ...]
                        [--steal-reps N] [--steal-trial S]
                        [--steal-threshold-ms MS]

The rig (namespaces PREFIX-gen and PREFIX-dut, PREFIX = "nfbx-" + a random
id; removed at the end, also on an error, SIGINT or SIGTERM):

  1q  (one RX queue, the direct path)
      nfslice-pktgen --dev g0 (CPU --gen-cpu) -> veth g0|d0 -> nfslice-nf on d0
      XDP frames arrive on RX queue CPU % queues: with the generator on one
      CPU everything lands on one queue, and d0 has one. shring and rxbisect
      share it among --workers workers; privring and smallpriv (a socket,
      so a worker, per queue) get one worker: the thesis' "single core".
  4q  (four RX queues, the spread path)
      nfslice-pktgen --dev h0 -> veth h0|h1 (xdp_pass, so the frames become
      skbs) -> tc ingress on h1: a BPF program sets skb->queue_mapping from
      nfslice's symmetric flow hash (include/nfsl_flow.h) and redirects to
      q0 -> veth q0|dq (4 queues each) -> nfslice-nf on dq.
      No XDP-originated frame can be steered to a queue other than
      CPU % queues, and a tc egress program does not see them; a 2-vCPU
      machine has one generator CPU. So this path converts frames to skbs
      and forwards them in the generator's softirq: the generator makes
      about half the 1q rate here. Every architecture gets --workers
      workers and the same four queues (privring: queue q is worker q's;
      the hash maps a flow to the same worker in every architecture).

nfslice-nf runs its workers on --nf-cpu (all on that one CPU: 2 vCPUs), the
generator and the veths' receive softirqs (steering, the copy into the UMEM,
the slicer) on --gen-cpu. rxdrop drops every frame; l2fwd swaps the MACs
and sends the frame back out of the interface it came from, to an XDP
latency sink (bench/bpf/latency_sink.bpf.c, scripts/nfsl/lat.py) on g0 / q0 that
counts, checks the L4 checksum of the measuring stream and drops.
Sliced (--slicing on): `nfslice attach --name DOMAIN d0` (or dq) with the
DUT routing the frames back out of that interface, nfslice-nf --name
DOMAIN: the NF gets sliced headers, l2fwd splices before it sends. 60 B
frames are below the slicing threshold: not run sliced.

Trials run while one nfslice-nf stays up (it reports every second, JSON):
a trial starts right after a report and its traffic (--trial seconds,
paced, 64 flows unless said) ends >= 0.25 s before the report that closes
it, so the counters' difference covers exactly the trial, drained.
Delivered = the NF's rx (rxdrop) or the sink's frames (l2fwd); loss = frames
the generator made - delivered (so frames lost before the NF, in the veth or
the 4q hop, count too; the JSON splits it by the steering program's count).

Parts (--parts):
  ndr      no-drop rate (Fig. 6.4): the highest rate delivered with loss
           < 0.1%, by a geometric bisection of --bisect trials between 1/64
           of the generator's capacity and that capacity (probed into the
           latency sink on the DUT interface, instead of the NF, at the
           start of every group; the highest probe so far counts). A trial
           passes on loss < 0.1% alone: the receive softirq runs on the
           generator's CPU, so an expensive receiver slows the generator
           (recorded as gen_kept_up false: made < 95% of the offered rate).
           A failed trial while more than 25% of the NF's CPU went to other
           work (other people's, on this shared machine) is repeated once,
           at most twice per NDR; both are recorded. Groups: path x NF x
           size x slicing x flows (64 = balanced, 1 = every frame to one
           worker; 1 only for 1514 B unsliced rxdrop); within a group the
           architectures run back to back, privring first, the others in a
           random order. Then (1514 B) one trial of --trial-long s at the
           NDR found, spanning a report: the working set while it runs
           (posted, inflight, written in 100 ms) and whether the NDR holds;
           and (1514 B rxdrop, 64 flows) --unpaced-runs unpaced trials of
           1 s: the generator as fast as it goes instead of paced bursts at
           its full speed (what docs/platform.md quotes for one queue); the
           best lossless one counts. Paced bursts are --gen-burst-us long
           (1 ms by default): a ring of N entries cannot absorb bursts of
           more than N frames, whatever the architecture.
  lat      l2fwd groups: p50/p99 one-way latency of a stamped measuring
           stream (nfslice-pktgen --stamp, 1 flow, --meas-rate pps) under a
           load of 50% and 90% of privring's NDR in the same group
  low      1514 B groups: a --low-rate trial (default ~1 Gbit/s of 1514 B
           frames, thesis Fig. 6.9): CPU ns per packet of nfslice-nf's
           threads (/proc/PID/task/*/schedstat run time, and utime+stime)
  slow     processing variability (Fig. 6.7): worker 0 sleeps USEC after
           each burst (nfslice-nf --slow 0:USEC, --slow-us values); balanced
           traffic at --var-rate; delivered rate of the other workers
  traffic  traffic variability (Fig. 6.8): a second generator sends one
           flow of 60 B frames that the hash gives worker 0, a share
           --shares of the --var-rate frames, the rest balanced 1514 B
  stall    worker 0 stalls (nfslice-nf --stall 0:4600:60000) during a
           trial at --var-rate: the other workers' delivered rate against
           an unstalled trial of the same session (target: rxbisect >= 95%)
  steal    AF_XDP on a vCPU the hypervisor takes away (issue 19 item 6;
           bench/xsk_steal.py says what CPU time is counted): 1q, 1514 B
           rxdrop unsliced, privring and rxbisect interleaved in one run
           (privring rxbisect privring rxbisect ..., --steal-reps times),
           one nfslice-nf session per block with one trial per
           --steal-loads rate (well under the loss knee). Per trial: CPU ns
           per delivered packet (nfslice-nf's schedstat run time, softirq
           of both CPUs from /proc/stat), offered, delivered, loss, and the
           steal of both CPUs (/proc/stat) before and after; the summary
           pairs the two architectures rep by rep and splits the trials at
           --steal-threshold-ms of steal
slow, traffic and stall use 1514 B rxdrop unsliced; on 1q only shring and
rxbisect (privring and smallpriv have one worker there).

options (rates in frames per second, times in seconds):
  --quick           smoke run (< 1 min): 1q, privring and rxbisect, 1514 B
                    rxdrop unsliced, 2 bisection trials, stall, steal (2
                    reps of 0.6 s trials)
  --runs N          rounds of the ndr groups (default 1)
  --out DIR         results directory (default bench/results)
  --trial S         traffic per trial (default 0.6; must end before the
                    next 1 s report)
  --trial-long S    traffic of the low, at-NDR, latency and stall trials
                    that span a report (default 1.6; quick 1.6)
  --bisect K        bisection trials per NDR (default 5; quick 2)
  --paths P ...     1q and/or 4q (default both; quick 1q)
  --archs A ...     privring smallpriv shring rxbisect (default all;
                    quick privring rxbisect)
  --sizes B ...     frame bytes without FCS, 60 and/or 1514 (default both;
                    quick 1514). 60 B is 64 B on the wire.
  --nfs N ...       rxdrop and/or l2fwd (default both; quick rxdrop)
  --slicing M ...   off and/or on (default both; quick off)
  --flows N ...     flows of the ndr groups (default 64 1; quick 64)
  --parts P ...     ndr lat low slow traffic stall steal (default all;
                    quick ndr stall steal)
  --workers N       workers of shring/rxbisect, and of everything on 4q
                    (default 4)
  --ax N, --bx N    nfslice-nf's --ax / --bx (defaults 256 / 2048)
  --slots N         nfslice attach --slots for sliced runs (default 16384:
                    with the default 4096 headers held in RX rings outlive
                    their slots and come back stale)
  --all-groups      also 60 B l2fwd on 4q (left out for time)
  --low-rate PPS    the low-load rate (default 82562: 1 Gbit/s of 1514 B)
  --meas-rate PPS   the latency measuring stream (default 5000)
  --var-rate PPS    slow/traffic/stall offered rate (default: half of
                    privring's 1514 B rxdrop NDR on that path in this run,
                    else 300000 on 1q and 150000 on 4q)
  --slow-us U ...   --slow values, us per burst (default 0 200 2000)
  --shares F ...    traffic part: share of frames in the worker-0 flow
                    (default 0 0.25 0.5 0.75)
  --gen-cpu N       the generator's CPU (default 0)
  --nf-cpu N        nfslice-nf's workers' CPU (default 1)
  --seed N          seed of the architecture order (default: time)
  --steal-loads PPS ...  offered rates of the steal part (default 100000
                    300000)
  --steal-reps N    privring/rxbisect pairs of blocks (default 6; quick 2)
  --steal-trial S   traffic per steal trial (default 1.6: spans a report,
                    for more CPU ticks; quick 0.6)
  --steal-threshold-ms MS  steal per trial (both CPUs) that splits the
                    trials into quiet and stolen (default 10)

Outputs in DIR: xsk.json (configuration, every trial with its counters,
every nfslice-nf session with its final report and stderr, summaries,
targets, problems), xsk.csv (one row per trial), xsk_ndr.png (Fig. 6.4:
NDR per architecture), xsk_variability.png (Fig. 6.7-6.9 and the stall).
Needs root, make (build/nfslice-nf, nfslice-pktgen, nfslice,
.output/xdp_pass.bpf.o, .output/latency_sink.bpf.o, .output/qmap.bpf.o), tc,
bpftool.
"""
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from nfsl import bench as B
from nfsl import lat as L
from nfsl import ndr as N
from xsk_rig import (
    ADDR, ARCHS, DPORT, DRAIN_S, FLOWPORT, LOW_RATE, MEAS_SPORT, NF, NFError, NF_BIN,
    OTHER_RETRY, PATHS, QMAP_OBJ, REPORT_S, Rig, SINK_OBJ, SLICE_MIN,
    STALL, Session, log, port_for_worker, run_gens, snapshot)
from xsk_report import (
    csv_rows, fmt_mpps, plot_ndr, plot_var, print_summary, summarize)
import xsk_steal


# ------------------------------------------------------------ options --
def parse(argv):
    ap = B.parser("exp_xsk.py", __doc__, "smoke run (< 1 min): 1q, privring and "
                  "rxbisect, 1514 B rxdrop unsliced, ndr low stall", runs=(1, 1))
    ap.add_argument("--trial", type=float, default=0.6,
                    help="s of traffic per trial (default 0.6)")
    ap.add_argument("--trial-long", type=float, default=1.6,
                    help="s of traffic of report-spanning trials (default 1.6)")
    ap.add_argument("--bisect", type=int, help="bisection trials (5; quick 2)")
    ap.add_argument("--paths", nargs="+", choices=PATHS)
    ap.add_argument("--archs", nargs="+", choices=ARCHS)
    ap.add_argument("--sizes", nargs="+", type=int, choices=(60, 1514))
    ap.add_argument("--nfs", nargs="+", choices=("rxdrop", "l2fwd"))
    ap.add_argument("--slicing", nargs="+", choices=("off", "on"))
    ap.add_argument("--flows", nargs="+", type=int)
    ap.add_argument("--parts", nargs="+",
                    choices=("ndr", "lat", "low", "slow", "traffic", "stall", "steal"))
    ap.add_argument("--workers", type=int, default=4,
                    help="workers of shring/rxbisect and of 4q (default 4)")
    ap.add_argument("--ax", type=int, default=256, help="fill ring Ax (256)")
    ap.add_argument("--bx", type=int, default=2048, help="RX ring Bx (2048)")
    ap.add_argument("--busy-poll", type=int, default=0, metavar="USEC",
                    help="nfslice-nf --busy-poll: us a worker keeps looking "
                         "(yielding the CPU between looks) before it sleeps (default 0)")
    ap.add_argument("--all-groups", action="store_true",
                    help="also 60 B l2fwd on 4q (left out for time)")
    ap.add_argument("--slots", type=int, default=16384,
                    help="nfslice attach --slots of sliced runs (default 16384)")
    ap.add_argument("--low-rate", type=int, default=LOW_RATE,
                    help=f"pps of the low-load trial (default {LOW_RATE})")
    ap.add_argument("--meas-rate", type=int, default=5000,
                    help="pps of the latency measuring stream (default 5000)")
    ap.add_argument("--var-rate", type=int,
                    help="pps of slow/traffic/stall (default: 0.5 x privring NDR)")
    ap.add_argument("--slow-us", nargs="+", type=int,
                    help="--slow values in us (default 0 200 2000)")
    ap.add_argument("--shares", nargs="+", type=float,
                    help="worker-0 flow shares (default 0 0.25 0.5 0.75)")
    ap.add_argument("--unpaced-runs", type=int, default=3, metavar="N",
                    help="unpaced 1 s trials per 1514 B rxdrop session; the best "
                         "lossless one counts (default 3)")
    ap.add_argument("--gen-cpu", type=int, default=0, help="generator CPU (0)")
    ap.add_argument("--gen-burst-us", type=int, default=1000, metavar="USEC",
                    help="paced generators send the frames due every USEC us in "
                         "one burst (nfslice-pktgen --burst-us; default 1000)")
    ap.add_argument("--nf-cpu", type=int, default=1, help="nfslice-nf CPU (1)")
    ap.add_argument("--seed", type=int, help="seed of the order (default: time)")
    ap.add_argument("--steal-loads", nargs="+", type=int, metavar="PPS",
                    help="offered pps of the steal part (default 100000 300000)")
    ap.add_argument("--steal-reps", type=int, metavar="N",
                    help="privring/rxbisect block pairs of the steal part (6; quick 2)")
    ap.add_argument("--steal-trial", type=float, metavar="S",
                    help="s of traffic per steal trial (1.6; quick 0.6)")
    ap.add_argument("--steal-threshold-ms", type=float, default=xsk_steal.THRESHOLD_MS,
                    metavar="MS", help="steal ms per trial that splits the trials "
                    f"(default {xsk_steal.THRESHOLD_MS:g})")
    ap.add_argument("--from-json", metavar="FILE",
                    help="measure nothing: summarize, print and plot the trials of "
                         "FILE (an xsk.json) again, into --out")
    a = ap.parse_args(argv)
    q = a.quick
    B.fill_defaults(
        a, bisect=(5, 2), paths=(list(PATHS), ["1q"]),
        archs=(list(ARCHS), ["privring", "rxbisect"]),
        sizes=([1514, 60], [1514]), nfs=(["rxdrop", "l2fwd"], ["rxdrop"]),
        slicing=(["off", "on"], ["off"]), flows=([64, 1], [64]),
        parts=(["ndr", "lat", "low", "slow", "traffic", "stall", "steal"],
               ["ndr", "stall", "steal"]),
        steal_loads=(list(xsk_steal.LOADS), list(xsk_steal.LOADS)),
        steal_reps=(6, 2), steal_trial=(1.6, 0.6),
        slow_us=([0, 200, 2000], [0, 2000]),
        shares=([0, 0.25, 0.5, 0.75], [0, 0.5]))
    if not 0.2 <= a.trial <= REPORT_S - DRAIN_S - 0.1:
        ap.error(f"--trial between 0.2 and {REPORT_S - DRAIN_S - 0.1:.2f} s "
                 "(a trial ends before the next 1 s report)")
    if not 1.1 <= a.trial_long <= 1.6:
        ap.error("--trial-long between 1.1 and 1.6 s (it spans one report)")
    if a.runs < 1 or a.bisect < 0 or a.workers < 2:
        ap.error("--runs >= 1, --bisect >= 0, --workers >= 2")
    if a.steal_reps < 1 or any(x <= 0 for x in a.steal_loads):
        ap.error("--steal-reps >= 1 and --steal-loads > 0 pps (e.g. --steal-loads "
                 "100000 300000)")
    if not (0.2 <= a.steal_trial <= REPORT_S - DRAIN_S - 0.1
            or 1.1 <= a.steal_trial <= 1.6):
        ap.error(f"--steal-trial between 0.2 and {REPORT_S - DRAIN_S - 0.1:.2f} s (ends "
                 "before the next report) or between 1.1 and 1.6 s (spans one)")
    B.check_cpus(ap, a)
    return a


# ----------------------------------------------------------- the parts --
def archs_for(a, path, need_workers=False):
    out = []
    for arch in a.archs:
        if need_workers and path == "1q" and arch in ("privring", "smallpriv"):
            continue
        out.append(arch)
    return out


def workers_for(a, path, arch):
    return 1 if path == "1q" and arch in ("privring", "smallpriv") else a.workers


def open_session(rig, a, path, arch, nf, key, trials, problems, sessions,
                 extra=(), domain=None):
    n = NF(rig, path, arch, nf, workers_for(a, path, arch), domain, extra)
    rec = {**key, "command": n.command()}
    sessions.append(rec)
    try:
        n.start()
    except NFError as e:
        rec["error"] = str(e)
        rec["evidence"] = e.evidence
        problems.append({"what": "start", "error": str(e), **e.evidence})
        raise
    rec["starts"] = n.starts
    return n, rec, Session(rig, a, n, key, trials, problems)


def rxdrop_session(rig, a, part, path, arch, trials, problems, sessions, extra=(),
                   **fields):
    """A session of the parts that run 1514 B rxdrop unsliced with 64 flows
    (slow, traffic, stall, steal): its key is PART, PATH, ARCH, those and
    FIELDS; EXTRA are nfslice-nf options. (n, session record, Session), or
    None when nfslice-nf did not start (open_session recorded why)."""
    key = {"part": part, "path": path, "arch": arch, "nf": "rxdrop", "size": 1514,
           "sliced": False, "flows": 64, "workers": workers_for(a, path, arch), **fields}
    try:
        return open_session(rig, a, path, arch, "rxdrop", key, trials, problems,
                            sessions, extra=extra)
    except NFError:
        return None


def close_session(n, rec, problems):
    st = n.stop()
    rec.update(returncode=st["returncode"], reports=st["reports"],
               stderr=st["stderr"], final=st["final"])
    if st["returncode"] != 0 or st["final"] is None or st["unparsed_stdout"]:
        problems.append({"what": "exit", "command": n.command(),
                         "returncode": st["returncode"],
                         "final_report": st["final"] is not None,
                         "stderr": st["stderr"], "unparsed": st["unparsed_stdout"]})
    return st


def capacity(rig, a, path, size, trials):
    """The generator's rate for PATH and SIZE into the latency sink put on
    the DUT interface instead of the NF (an upper bound for the bisection:
    the NF path also copies every frame into the UMEM)."""
    dev = rig.dut_dev(path)
    s = L.LatencySink(rig.dut, dev, DPORT, MEAS_SPORT, drop=True, tag=f"xsk-cap-{dev}")
    s.attach()
    try:
        k0 = s.snapshot()
        res = run_gens(rig, [rig.pktgen_cmd(path, size, 0, 1)], timeout=30)[0]
        time.sleep(DRAIN_S)
        d = L.snap_diff(k0, s.snapshot())
    finally:
        s.detach()
    got = d["stats"]["packets"] + d["stats"]["other"]
    rec = {"path": path, "size": size, "kind": "capacity",
           "achieved_pps": res["achieved_pps"], "sent": res["transmitted"],
           "delivered": got, "delivered_pps": got / max(res["elapsed_s"], 1e-9)}
    trials.append(rec)
    log(f"capacity {path} {size} B: generator {res['achieved_pps'] / 1e6:.2f} Mpps, "
        f"delivered {rec['delivered_pps'] / 1e6:.2f} Mpps into a drop sink")
    return rec["delivered_pps"]


def ndr_part(rig, a, rng, caps, trials, problems, sessions, ndr):
    groups = []
    for path in a.paths:
        for nfname in a.nfs:
            for size in a.sizes:
                for sl in a.slicing:
                    if sl == "on" and size < SLICE_MIN:
                        continue
                    if path == "4q" and nfname == "l2fwd" and size < SLICE_MIN \
                            and not a.all_groups:
                        continue        # time: see --all-groups
                    for flows in a.flows:
                        if flows != 64 and (nfname != "rxdrop" or size != 1514
                                            or sl == "on"):
                            continue
                        groups.append((path, nfname, size, sl, flows))
    for rnd in range(a.runs):
        for gi, (path, nfname, size, sl, flows) in enumerate(groups):
            order = [x for x in a.archs if x != "privring"]
            rng.shuffle(order)
            if "privring" in a.archs:
                order.insert(0, "privring")
            # the bisection's upper bound: the generator's capacity, probed
            # again at every group (a probe that met other people's load
            # would cap everything after it), the highest seen counts
            c = capacity(rig, a, path, size, trials)
            caps[(path, size)] = max(c, caps.get((path, size), 0))
            domain = rig.attach(path) if sl == "on" else None
            try:
                for arch in order:
                    key = {"part": "ndr", "round": rnd, "path": path, "arch": arch,
                           "nf": nfname, "size": size, "sliced": sl == "on",
                           "flows": flows, "workers": workers_for(a, path, arch)}
                    log(f"ndr {rnd + 1}/{a.runs} group {gi + 1}/{len(groups)}: "
                        f"{path} {nfname} {size} B {'sliced' if sl == 'on' else 'unsliced'}"
                        f" {flows} flows, {arch}")
                    pr = ndr.get((rnd, path, nfname, size, sl == "on", flows, "privring"))
                    try:
                        res = ndr_session(rig, a, key, caps[(path, size)], domain,
                                          pr, trials, problems, sessions)
                    except NFError as e:
                        log(f"  nfslice-nf failed: {e}; going on with the next")
                        continue
                    ndr[(rnd, path, nfname, size, sl == "on", flows, arch)] = res
            finally:
                if domain:
                    rig.detach(path)


def ndr_session(rig, a, key, cap, domain, privring_ndr, trials, problems, sessions):
    path, size, nfname = key["path"], key["size"], key["nf"]
    dlv = "rx" if nfname == "rxdrop" else "sink"
    n, srec, s = open_session(rig, a, path, key["arch"], nfname, key, trials,
                              problems, sessions, domain=domain)
    out = {"ndr_pps": None}
    try:
        if "low" in a.parts and size == 1514 and key["flows"] == 64:
            s.trial("low", [("load", rig.pktgen_cmd(path, size, a.low_rate,
                                                    a.trial_long))],
                    a.trial_long, dlv, span=True)
        # geometric bisection between cap / 64 and cap: after K trials the
        # bracket is 64^(1/2^K) wide (K = 5: 14%) at any rate
        def attempt(mid, lo):
            gens = [("load", rig.pktgen_cmd(path, size, mid, a.trial, flows=key["flows"]))]
            r = s.trial("bisect", gens, a.trial, dlv)
            r["pass"] = s.passes(r)
            return r

        # a failure while other people's work took the NF's CPU: once more
        lo, hi, best, _ = N.bisect(
            cap / 64, cap * 1.02, a.bisect, attempt, "delivered_pps",
            may_retry=lambda r: (r.get("nf_cpu_other_frac") or 0) > OTHER_RETRY)
        out["upper_pps"] = hi
        if best is not None:
            out["ndr_pps"] = best["delivered_pps"]
            out["ndr_offered_pps"] = best["offered_pps"]
            out["ndr_gen_kept_up"] = best["gen_kept_up"]
        if best is not None and size >= SLICE_MIN:
            # (1514 B only, for time)
            r = s.trial("at_ndr", [("load", rig.pktgen_cmd(path, size, best["offered_pps"],
                                                           a.trial_long,
                                                           flows=key["flows"]))],
                        a.trial_long, dlv, span=True)
            r["pass"] = s.passes(r)
            out["at_ndr"] = {"loss_frac": r["loss_frac"], "pass": r["pass"],
                             "working_set_live": r["working_set_live"]}
        if nfname == "rxdrop" and size >= SLICE_MIN and key["flows"] == 64:
            # as fast as the generator goes (not paced in bursts): the
            # rate docs/platform.md quotes for one queue
            # rate docs/platform.md quotes for one queue; a.unpaced_runs
            # trials: the best lossless one counts, else the least lossy
            runs = []
            for _ in range(a.unpaced_runs):
                r = s.trial("unpaced", [("load", rig.pktgen_cmd(path, size, 0, 1))], 1.0,
                            dlv)
                r["pass"] = s.passes(r)
                runs.append({"delivered_pps": r["delivered_pps"],
                             "loss_frac": r["loss_frac"], "pass": r["pass"]})
            ok = [u for u in runs if u["pass"]]
            out["unpaced"] = (max(ok, key=lambda u: u["delivered_pps"]) if ok
                              else min(runs, key=lambda u: u["loss_frac"]))
            out["unpaced_runs"] = runs
        if key["arch"] == "privring":
            privring_ndr = out
        if "lat" in a.parts and nfname == "l2fwd" and privring_ndr \
                and privring_ndr.get("ndr_pps"):
            for frac in (0.5, 0.9):
                load = frac * privring_ndr["ndr_pps"]
                gens = [("load", rig.pktgen_cmd(path, size, max(load - a.meas_rate, 1000),
                                                a.trial_long)),
                        ("meas", rig.pktgen_cmd(path, size, a.meas_rate, a.trial_long,
                                                flows=1, sport=MEAS_SPORT, stamp=True))]
                r = s.trial("latency", gens, a.trial_long, dlv, hist=True, span=True,
                            extra={"load_frac_of_privring_ndr": frac})
                out[f"lat_{int(frac * 100)}"] = r["latency"]
    finally:
        st = close_session(n, srec, problems)
    out["final_working_set"] = (st["final"] or {}).get("working_set")
    out["nf_cpu_other_frac"] = B.median([r.get("nf_cpu_other_frac") for r in s.mine])
    srec["result"] = out
    log(f"  NDR {fmt_mpps(out['ndr_pps'])} Mpps (cap {cap / 1e6:.2f}), peak posted "
        f"{(out['final_working_set'] or {}).get('peak_posted')}")
    return out


def var_rate(a, path, ndr):
    if a.var_rate:
        return a.var_rate
    r = ndr.get((0, path, "rxdrop", 1514, False, 64, "privring"))
    if r and r.get("ndr_pps"):
        return 0.5 * r["ndr_pps"]
    return 300000 if path == "1q" else 150000


def slow_part(rig, a, trials, problems, sessions, ndr):
    for path in a.paths:
        rate = var_rate(a, path, ndr)
        for arch in archs_for(a, path, need_workers=True):
            for us in a.slow_us:
                log(f"slow: {path} {arch} worker 0 +{us} us per burst, "
                    f"{rate / 1e6:.3f} Mpps")
                got = rxdrop_session(rig, a, "slow", path, arch, trials, problems, sessions,
                                     extra=["--slow", f"0:{us}"] if us else [], slow_us=us)
                if got is None:
                    continue
                n, srec, s = got
                try:
                    for _ in range(2):
                        s.trial("slow", [("load", rig.pktgen_cmd(path, 1514, rate, a.trial))],
                                a.trial, "rx", extra={"rate": rate})
                finally:
                    close_session(n, srec, problems)


def traffic_part(rig, a, trials, problems, sessions, ndr):
    for path in a.paths:
        rate = var_rate(a, path, ndr)
        ad = ADDR[path]
        tport = port_for_worker(ad["src"], ad["dst"], a.workers if path == "4q" else a.workers, 0)
        for arch in archs_for(a, path, need_workers=True):
            log(f"traffic: {path} {arch}, {rate / 1e6:.3f} Mpps, worker-0 flow "
                f"shares {a.shares}")
            got = rxdrop_session(rig, a, "traffic", path, arch, trials, problems, sessions,
                                 target_port=tport)
            if got is None:
                continue
            n, srec, s = got
            try:
                for share in a.shares:
                    gens = []
                    if share < 1:
                        gens.append(("balanced", rig.pktgen_cmd(path, 1514, rate * (1 - share),
                                                                a.trial)))
                    if share > 0:
                        gens.append(("worker0", rig.pktgen_cmd(path, 60, rate * share, a.trial,
                                                               flows=1, sport=tport)))
                    s.trial("traffic", gens, a.trial, "rx",
                            extra={"share": share, "rate": rate})
            finally:
                close_session(n, srec, problems)


def stall_part(rig, a, trials, problems, sessions, ndr):
    for path in a.paths:
        rate = var_rate(a, path, ndr)
        for arch in archs_for(a, path, need_workers=True):
            log(f"stall: {path} {arch}, worker 0 stalls from {STALL[0]} ms, "
                f"{rate / 1e6:.3f} Mpps")
            stall = f"0:{STALL[0]}:{STALL[1]}"
            got = rxdrop_session(rig, a, "stall", path, arch, trials, problems, sessions,
                                 extra=["--stall", stall], stall=stall)
            if got is None:
                continue
            n, srec, s = got
            try:
                # up to two unstalled trials that close before the stall
                # begins (a slow start of the generator can push a trial
                # into the next report interval: those are not counted)
                befores = []
                for _ in range(2):
                    if n.latest()[1]["elapsed_s"] > STALL[0] / 1000 - 1.5:
                        break
                    r = s.trial("unstalled", [("load", rig.pktgen_cmd(path, 1514, rate,
                                                                      a.trial))],
                                a.trial, "rx", extra={"rate": rate})
                    if r["report_elapsed"][1] > STALL[0] / 1000:
                        r["kind"] = "unstalled_late"
                    else:
                        befores.append(r)
                if not befores:
                    log("  no unstalled trial closed before the stall began: skipped")
                    continue            # (the finally closes the session)
                # past the stall's start (NF time), then one trial for its
                # onset (worker 0's ring fills) and the measured one
                while n.latest()[1]["elapsed_s"] < STALL[0] / 1000 + 0.05:
                    n.wait_report(time.monotonic())
                onset = s.trial("onset", [("load", rig.pktgen_cmd(path, 1514, rate, a.trial))],
                                a.trial, "rx", extra={"rate": rate})
                st = s.trial("stalled", [("load", rig.pktgen_cmd(path, 1514, rate,
                                                                 a.trial_long))],
                             a.trial_long, "rx", span=True, extra={"rate": rate})
                others = lambda r: sum(r["nfc"]["per_worker_rx"][1:]) / max(  # noqa: E731
                    max(g["elapsed_s"] for g in r["gens"]), 1e-9)
                for r in befores + [onset, st]:
                    r["others_rx_pps"] = others(r)
                base = B.median([r["others_rx_pps"] for r in befores])
                for r in (onset, st):
                    r["others_vs_unstalled"] = B.ratio(r["others_rx_pps"], base)
                st["unstalled_loss_frac"] = B.median([r["loss_frac"] for r in befores])
            finally:
                close_session(n, srec, problems)


def steal_part(rig, a, trials, problems, sessions):
    """privring and rxbisect alternating (xsk_steal.order), one session
    per block, one trial per load; every trial records its CPUs' steal."""
    path, span = "1q", a.steal_trial > REPORT_S
    blocks = xsk_steal.order(xsk_steal.ARCHS, a.steal_reps, a.steal_loads)
    for i, (rep, arch, loads) in enumerate(blocks):
        log(f"steal {i + 1}/{len(blocks)}: {arch}, loads {[x / 1e6 for x in loads]} Mpps")
        got = rxdrop_session(rig, a, "steal", path, arch, trials, problems, sessions, rep=rep)
        if got is None:
            continue
        n, srec, s = got
        try:
            for load in loads:
                r = s.trial(xsk_steal.KIND, [("load", rig.pktgen_cmd(path, 1514, load,
                                                                     a.steal_trial))],
                            a.steal_trial, "rx", span=span, extra={"load_pps": load})
                r["pass"] = s.passes(r)
        finally:
            close_session(n, srec, problems)


def from_json(a):
    """--from-json: the summary, tables, CSV and plots again from the
    trials and sessions of a results file (its own configuration)."""
    res, cfg = B.reload(a)
    trials = res["trials"]
    ndr, caps = {}, {}
    for srec in res["sessions"]:
        if srec.get("part") == "ndr" and "result" in srec:
            ndr[(srec["round"], srec["path"], srec["nf"], srec["size"], srec["sliced"],
                 srec["flows"], srec["arch"])] = srec["result"]
    for t in trials:
        if t.get("kind") == "capacity":
            k = (t["path"], t["size"])
            caps[k] = max(caps.get(k, 0), t["delivered_pps"])
    res["summary"] = summarize(cfg, trials, ndr, caps)
    write_results(res, a.out)
    return 0


def write_results(res, out):
    """The summary printed; xsk.json, xsk.csv and the plots into OUT."""
    S = res["summary"]
    print_summary(S)

    def plots(out):
        plot_ndr(S, out / "xsk_ndr.png")
        plot_var(S, out / "xsk_variability.png")
        return [out / "xsk_ndr.png", out / "xsk_variability.png"]
    N.write_results(Path(out), "xsk", res, csv_rows(res["trials"]),
                    plots=plots, log=log)


def main(argv):
    a = parse(argv)
    if a.from_json:
        return from_json(a)
    results = B.preflight("exp_xsk.py", a, argv,
                          files=(NF_BIN, SINK_OBJ, QMAP_OBJ, FLOWPORT),
                          tools=("tc", "bpftool", "ip"))
    if results is None:
        return 1
    tag = B.start_run(results, a, "nfbx")
    start = time.monotonic()
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="nfbx-")
    rig = Rig(tag, a, tmp)
    trials, problems, sessions, ndr, caps = [], [], [], {}, {}
    # This script and what it runs (pktgen's setup, bpftool, ip) stay off
    # the NF's CPU; nfslice-nf is started under taskset on --nf-cpu.
    os.sched_setaffinity(0, {a.gen_cpu})

    def body():
        results["build"] = snapshot(tmp)
        log(f"rig {tag}: generator on CPU {a.gen_cpu}, nfslice-nf on CPU {a.nf_cpu}")
        rig.up()
        if "ndr" in a.parts:
            ndr_part(rig, a, rng, caps, trials, problems, sessions, ndr)
        if "slow" in a.parts:
            slow_part(rig, a, trials, problems, sessions, ndr)
        if "traffic" in a.parts:
            traffic_part(rig, a, trials, problems, sessions, ndr)
        if "stall" in a.parts:
            stall_part(rig, a, trials, problems, sessions, ndr)
        if "steal" in a.parts:
            steal_part(rig, a, trials, problems, sessions)

    def teardown():
        rig.down()
        shutil.rmtree(tmp, ignore_errors=True)
    rc = B.guarded(body, teardown, problems, "exp_xsk")
    left = rig.leftovers()
    results.update(trials=trials, sessions=sessions,
                   summary=summarize(a, trials, ndr, caps), problems=problems,
                   leftovers=left, loadavg_end=B.loadavg(),
                   elapsed_s=time.monotonic() - start)
    write_results(results, a.out)
    return B.finish("exp_xsk.py", results, problems, left, rc, "xsk.json")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
