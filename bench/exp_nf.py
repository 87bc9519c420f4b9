#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""exp_nf.py — userspace/lib/nf's NFs and chains in nfslice-nf with slicing, inline
and park (issue 9 "Performance"; PayloadPark §6.1, §6.2.4 Fig. 12;
NFSlicer §VI-C; docs/benchmarks-nf.md).

usage: bench/exp_nf.py [--quick] [--runs N] [--out DIR] [--parts P ...]
                       [--modes inline|park ...] [--nfs NF ...]
                       [--sizes B ...] [--slicing off|on ...] [--rps]
                       [--isolate] [--nf-cpu-quota F]
                       [--link-rate RATE] [--drops PCT ...]
                       [--expiries E ...] [--notices off|on ...]

Two rigs, the generator (nfslice-pktgen, XDP live frames) on --gen-cpu,
nfslice-nf (--rx privring, one worker) on --nf-cpu; namespaces named
nfbn-<random>-*, removed at the end, also on an error, SIGINT or SIGTERM:

  inline  exp_xsk.py's 1q rig: pktgen -> veth g0|d0 -> nfslice-nf on d0,
          which sends every frame back to an XDP sink on g0 that counts
          it (delivered). Sliced: `nfslice attach --name DOMAIN --slots
          --slots d0` and nfslice-nf --name DOMAIN: the NF gets the sliced
          headers and splices them before it sends (inline splice).
  park    scripts/topo_park.sh --nf-xsk: pktgen (cli) -> slicing host
          (slc: XDP slicer on slc0/slc1, tc splicer on their egress) ->
          link slcnf|nf0, shaped both ways (tbf; the NF -> slicer
          direction through an IFB) -> NF server (nf): nfslice-nf on nf0,
          no --name, knows nothing of the store -> back over the link ->
          the slicing host splices -> srv0 (its rx counter: delivered).
          Sliced: `nfslice attach --nf-port slcnf slc0 slc1`; unsliced: a
          bare xdp_pass on slc0 and slc1 (both runs pay veth's XDP path).
The NF is CHAIN,l2fwd (l2fwd alone for l2fwd): l2fwd swaps the MACs so
the frame goes back where it came from. fw: --rules N rules of
scripts/fwgen.py (seed 1), default allow; the first rule matching the
benchmark's flows (fwgen.py's linear first match) denies them, so its
action is turned to allow (still 10,000 rules, the flows classified by a
generated rule). nat: --ext-ip an address the server has no route to (it
sends no ICMP back). lb: 8 backends in the server's subnet (park: static
neighbour entries on the slicing host), no VIP. qos: CIR 100 Gbit/s,
CBS = EBS = 1 MB, red=mark: metered, never dropped.

Every trial runs against one running nfslice-nf (1 s JSON reports), its
traffic right after a report (and after earlier traffic drained), closed
by the first report >= 0.25 s after it, so NF counters, the slicer's
(nfslice stats), the link's qdiscs and the receiver's counter all cover
the trial, drained. loss = 1 - delivered / expected (frames sent; in fig12
the frames the firewall allowed plus the allowed share of those lost
before it). A loss-free rate (NDR, loss < 0.1%, PayloadPark's "healthy")
comes from an unpaced probe of 1 s (repeated once if it loses nothing: the
generator's speed varies with what else runs on its CPU, which also runs
the receive path) and a geometric bisection of --bisect paced trials
(default 7) from a quarter (--span; a 32nd for warmed fig12 cells, below)
of 1.25 x what the probe delivered (by bytes for an unsliced probe that
lost frames in the shaper, which drops big frames first) up to the
generator's unpaced rate; from a probe that
lost nothing, between its rate and twice that. The bisection's step is in
the JSON (about x1.03). A failed trial is repeated once at the same rate,
at most twice per NDR (bursts of other people's work on this shared
2-vCPU machine). Headers lost in an earlier trial leave their payloads
parked until they expire, and their slots pass packets on unsliced: so in
park a sliced trial after a lossy one gets the domain attached afresh, and
a fig12 cell with denied flows and no notices (whose steady state holds
the denied headers' payloads) is warmed up before every trial with 1.25 x
expiry x partition slots frames at the trial's rate on a fresh store;
inline (the NF holds the domain), a sliced trial after a lossy one follows
that many frames at the best rate passed, so the lost payloads expire
(PayloadPark Alg. 1). Each result names what limits it: the counter that
lost the most frames in the first failing trial above the NDR
(link_to_nf: the shaper toward the NF server; veth_to_nf, veth_from_nf;
nf_rx_ring_full, nf_rx_dropped: the NF's socket, RX ring full or no fill
frame; nf_drops, nf_tx_full; link_from_nf: the IFB's shaper; slicer_stale:
a payload evicted before its header came back; before_nf, after_nf:
inline, before the NF's socket and between its transmit and the sink),
and all counters are in the JSON. CPU per frame (the CPU table, the
target's line): nfslice-nf's threads' run time (schedstat, with the
softirq work run in their system calls: in park the slicing host's
return path) and each CPU's non-idle time (/proc/stat) over the trial's
window, divided by the frames sent; the median over the paced trials
that passed; "busy" is that time over the traffic's duration.

Parts (--parts):
  ndr     NDR per NF and chain (--nfs), frame size (--sizes: 60 = 64 B on
          the wire, 1514) and slicing (1514 B only: 60 B is below the
          threshold), inline and park (park link --ndr-rate, 100gbit:
          not the limit). Target (NFSlicer §VI-C): in park the NF server
          takes sliced 1514 B packets at >= 90% of its NDR for unsliced
          frames of the sliced header's size (58 B; 60 B sent, the
          generator's and Ethernet's minimum).
  fig12   PayloadPark Fig. 12 in park, link --link-rate: the chain
          --fig12-chain (fw,nat: the paper's) on the enterprise mix, the
          firewall denying --drops % of the --fig12-flows flows (one rule
          ahead of the 10,000) x --expiries (nfslice attach --expiry) x
          --notices (nfslice-nf --drop-notice) with --fig12-slots store
          slots, and unsliced per drop ratio: goodput of the allowed
          traffic at the server at its NDR.
  mix     park goodput of fw,nat,lb on the enterprise mix, sliced vs
          unsliced, link --link-rate (the limit of the unsliced run).
          Target: sliced / unsliced >= 1.36 (PayloadPark's +36%).

options (rates in frames per second, times in seconds, link rates in tc
units NUMBER{kbit,mbit,gbit}):
  --quick           smoke run (about 1.5 min): park only, fw,nat,lb 60 B
                    and 1514 B sliced; fig12 at 30% drops, expiry 2,
                    notices off and on; mix; 2 bisection trials
  --runs N          rounds of every part (default 1)
  --out DIR         results directory (default bench/results)
  --parts P ...     ndr fig12 mix (default all; quick all)
  --modes M ...     inline and/or park for ndr (default both; quick park)
  --nfs NF ...      l2fwd fw nat lb qos fw,nat,lb (default all; quick
                    fw,nat,lb)
  --sizes B ...     60 and/or 1514 (default both)
  --slicing M ...   off and/or on (default both)
  --trial S         paced traffic per trial (default 0.6)
  --bisect K        bisection trials per NDR (default 7; quick 2)
  --span F          the search starts at the probe's bound / F (default 4)
  --flows N         flows of ndr and mix (default 64)
  --rules N         firewall rules (default 10000)
  --rx ARCH         nfslice-nf --rx (default privring; one worker)
  --ax N, --bx N    nfslice-nf --ax / --bx (defaults 256 / 2048)
  --busy-poll USEC  nfslice-nf --busy-poll (default 0)
  --slots N         nfslice attach --slots of ndr and mix (default 16384:
                    with 4096 headers held in the NF's RX ring outlive
                    their slots, docs/xsk.md)
  --ndr-rate RATE   park link of the ndr part (default 100gbit)
  --rps             park: the slicing host receives what comes back from
                    the NF server (IFB, shaper, forwarding, splicer) on
                    --gen-cpu (RPS on slcnf) instead of the NF's CPU, where
                    veth runs it by default (the AF_XDP transmit's CPU)
  --isolate         park: --nf-cpu runs nfslice-nf and nothing else. The
                    whole return path, from slcnf's receive (the slicer's
                    XDP there included) to srv0, runs in slcnf's threaded
                    NAPI thread pinned to --gen-cpu; unsliced, xdp_pass on
                    slcnf gives veth that NAPI too. The NF server of
                    NFSlicer §IV-V, whose cores run nothing else
  --nf-cpu-quota F  hold nfslice-nf (all its threads, the kernel work in its
                    system calls included) to F of one CPU, 0.01-1: 1 ms
                    of CPU per 1/F ms (the kernel's smallest quota is 1 ms;
                    a cpu cgroup, removed at the end; size --bx to hold
                    what arrives in the rest of the period): an NF
                    server with a fixed CPU budget, so that it and not
                    --gen-cpu limits the NDR (with --isolate)
  --link-rate RATE  park link of fig12 and mix (default 50mbit)
  --link-queue-ms M its shaper's queue (tbf limit), ms at RATE (default 20,
                    at least 32 full frames; topo_park.sh's own 2 ms lost
                    frames at 70% load here whenever the generator, late
                    on its busy CPU, caught up in one burst)
  --drops PCT ...   fig12 denied share of flows (default 0 10 30 50)
  --expiries E ...  fig12 nfslice attach --expiry (default 1 2 10)
  --notices M ...   fig12 nfslice-nf --drop-notice off/on (default both)
  --fig12-chain C   fig12's chain (default fw,nat)
  --fig12-flows N   fig12 flows (default 100: one per percent)
  --fig12-slots N   fig12 nfslice attach --slots (default 4096, attach's)
  --ttl MS          nfslice attach --ttl of every domain (default 0: off;
                    attach's default, 10 ms, lets any TTL scan on the host,
                    nfsliced's or nfslice evict's, evict payloads by time:
                    with 2048 headers in the NF's RX ring, in flight ones
                    too, and dead ones before their expiry)
  --gen-cpu N       the generator's CPU (default 0)
  --nf-cpu N        nfslice-nf's CPU (default 1)
  --gen-burst-us U  nfslice-pktgen --burst-us of paced trials (default 1000)
  --from-json FILE  measure nothing: summarize FILE (an nf.json) again

Outputs in DIR: nf.json (configuration, machine and load, tool hashes,
every trial with its counters, every NDR, every nfslice-nf session with
its final report, summary, targets, problems), nf.csv (one row per
trial), nf.ndr.csv and nf.fig12.csv (the summary tables), nf.ndr.png,
nf.fig12.png. Needs root, make (build/nfslice-nf, nfslice-pktgen,
nfslice, .output/xdp_pass.bpf.o, .output/latency_sink.bpf.o,
.output/qmap.bpf.o), tc, bpftool.
"""
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
import xsk_rig as X

from nfsl import bench as B
from nfsl import ndr as N
from nfsl import topo as nfsltopo
from nf_rig import (
    ADDR, Inline, NFS, Park, SMALL, deny_rules, log, make_backends, make_rules,
    nf_args, rate_bps)
from nf_report import csv_rows, plots, print_summary, summarize
from nf_trials import Session, cpu_of, ndr, note


# ------------------------------------------------------------ options --
def parse(argv):
    ap = B.parser("exp_nf.py", __doc__, "smoke run (about 1.5 min): park fw,nat,lb "
                  "60 B and 1514 B sliced, fig12 at 30%% E2, mix", runs=(1, 1))
    ap.add_argument("--parts", nargs="+", choices=("ndr", "fig12", "mix"))
    ap.add_argument("--modes", nargs="+", choices=("inline", "park"))
    ap.add_argument("--nfs", nargs="+", choices=NFS)
    ap.add_argument("--sizes", nargs="+", type=int, choices=(SMALL, 1514))
    ap.add_argument("--slicing", nargs="+", choices=("off", "on"))
    ap.add_argument("--trial", type=float, default=0.6, help="s per paced trial (0.6)")
    ap.add_argument("--bisect", type=int, help="bisection trials per NDR (7; quick 2)")
    ap.add_argument("--span", type=float, default=4.0,
                    help="the search starts this far below the probe's bound (4)")
    ap.add_argument("--flows", type=int, default=64, help="flows of ndr and mix (64)")
    ap.add_argument("--rules", type=int, default=10000, help="firewall rules (10000)")
    ap.add_argument("--rx", default="privring", choices=X.ARCHS,
                    help="nfslice-nf --rx (privring)")
    ap.add_argument("--ax", type=int, default=256, help="fill ring Ax (256)")
    ap.add_argument("--bx", type=int, default=2048, help="RX ring Bx (2048)")
    ap.add_argument("--busy-poll", type=int, default=0, metavar="USEC",
                    help="nfslice-nf --busy-poll (0)")
    ap.add_argument("--slots", type=int, default=16384,
                    help="nfslice attach --slots of ndr and mix (16384)")
    ap.add_argument("--ndr-rate", default="100gbit", help="park link of ndr (100gbit)")
    ap.add_argument("--link-rate", default="50mbit", help="park link of fig12, mix (50mbit)")
    ap.add_argument("--link-queue-ms", type=float, default=20.0,
                    help="shaper queue of that link, ms at its rate (20)")
    ap.add_argument("--rps", action="store_true",
                    help="park: the slicing host's receive from the NF on --gen-cpu (RPS)")
    ap.add_argument("--isolate", action="store_true",
                    help="park: --nf-cpu runs nfslice-nf alone (threaded NAPI on slcnf "
                         "pinned to --gen-cpu)")
    ap.add_argument("--nf-cpu-quota", type=float, metavar="FRAC",
                    help="cap nfslice-nf at FRAC of a CPU (cgroup cpu: 1 ms per 1/FRAC ms)")
    ap.add_argument("--drops", nargs="+", type=int, help="fig12 denied %% (0 10 30 50)")
    ap.add_argument("--expiries", nargs="+", type=int, help="fig12 expiries (1 2 10)")
    ap.add_argument("--notices", nargs="+", choices=("off", "on"),
                    help="fig12 --drop-notice (off on)")
    ap.add_argument("--fig12-chain", default="fw,nat", help="fig12 chain (fw,nat)")
    ap.add_argument("--fig12-flows", type=int, default=100, help="fig12 flows (100)")
    ap.add_argument("--fig12-slots", type=int, default=4096,
                    help="fig12 nfslice attach --slots (4096)")
    ap.add_argument("--ttl", type=int, default=0, metavar="MS",
                    help="nfslice attach --ttl (0: off, the wrap-count expiry alone)")
    ap.add_argument("--gen-cpu", type=int, default=0, help="generator CPU (0)")
    ap.add_argument("--nf-cpu", type=int, default=1, help="nfslice-nf CPU (1)")
    ap.add_argument("--gen-burst-us", type=int, default=1000, metavar="USEC",
                    help="nfslice-pktgen --burst-us of paced trials (1000)")
    ap.add_argument("--seed", type=int, help="seed of the order (default: time)")
    ap.add_argument("--from-json", metavar="FILE",
                    help="measure nothing: summarize FILE (an nf.json) again")
    a = ap.parse_args(argv)
    B.fill_defaults(
        a, bisect=(7, 2), parts=(["ndr", "fig12", "mix"], ["ndr", "fig12", "mix"]),
        modes=(["inline", "park"], ["park"]), nfs=(list(NFS), ["fw,nat,lb"]),
        sizes=([SMALL, 1514], [SMALL, 1514]), slicing=(["off", "on"], ["off", "on"]),
        drops=([0, 10, 30, 50], [30]), expiries=([1, 2, 10], [2]),
        notices=(["off", "on"], ["off", "on"]))
    if not 0.2 <= a.trial <= 1 - X.DRAIN_S - 0.1:
        ap.error("--trial between 0.2 and 0.65 s (a trial ends before the next report)")
    if a.runs < 1 or a.bisect < 0 or a.span <= 1 or a.flows < 1 or a.rules < 1:
        ap.error("--runs >= 1, --bisect >= 0, --span > 1, --flows >= 1, --rules >= 1")
    if a.fig12_flows < 1 or any(not 0 <= d < 100 for d in a.drops):
        ap.error("--fig12-flows >= 1, --drops 0..99 (percent)")
    if any(e < 1 for e in a.expiries):
        ap.error("--expiries >= 1")
    for r in (a.ndr_rate, a.link_rate):
        try:
            rate_bps(r)
        except ValueError:
            ap.error(f"'{r}' is not a tc rate NUMBER{{kbit,mbit,gbit}} (e.g. 50mbit)")
    if a.isolate and a.rps:
        ap.error("--isolate moves the whole return path off --nf-cpu; drop --rps")
    if a.nf_cpu_quota is not None and not 0.01 <= a.nf_cpu_quota <= 1:
        ap.error("--nf-cpu-quota is a fraction of one CPU: 0.01 to 1 (e.g. 0.3)")
    B.check_cpus(ap, a)
    return a


# --------------------------------------------------------------- parts --
def ndr_part(rig, a, files, rnd, rng, trials, problems, sessions, results):
    """NDR per NF x size x slicing in RIG (inline or park)."""
    mode = rig.kind
    combos = [(s, sl) for s in a.sizes for sl in a.slicing if not (sl == "on" and s < 256)]
    if a.quick:                 # the target's pair only
        combos = [c for c in combos if c != (1514, "off")] or combos
    nfs = list(a.nfs)
    rng.shuffle(nfs)
    for chain in nfs:
        # inline: slicing needs nfslice-nf --name, so one session per slicing;
        # park: one NF server session, the slicing host toggled under it
        if mode == "inline":
            batches = [[c for c in combos if c[1] == sl] for sl in ("off", "on")]
        else:
            batches = [combos]
        for batch in (b for b in batches if b):
            rng.shuffle(batch)
            sl_on = any(c[1] == "on" for c in batch)
            if mode == "inline" and sl_on:
                rig.attach()
            try:
                nfname, extra = nf_args(chain, mode, files)
                key = {"part": "ndr", "round": rnd, "mode": mode, "nf": chain}
                with Session(rig, a, chain, key, trials, problems, sessions, extra,
                             nfname) as s:
                    for size, sl in batch:
                        if mode == "park":
                            rig.topo.set_slicing(sl == "on", ["--slots", a.slots])
                        g = {"group": f"ndr/{mode}/{chain}/{size}/{sl}", "traffic": size,
                             "flows": a.flows, "allowed": 1.0, "sliced": sl == "on"}
                        log(f"ndr {rnd + 1}/{a.runs}: {mode} {chain} {size} B "
                            f"{'sliced' if sl == 'on' else 'unsliced'}")
                        res = ndr(s, g, a)
                        res.update(part="ndr", round=rnd, mode=mode, nf=chain, size=size,
                                   sliced=sl == "on")
                        results.append(res)
                        note(res, g["group"])
            except X.NFError as e:
                log(f"  nfslice-nf failed: {e}; going on with the next")
            finally:
                if mode == "inline" and sl_on:
                    rig.detach()
                elif mode == "park":
                    rig.topo.set_slicing(False)


def fig12_part(rig, a, files, tmp, rnd, rng, trials, problems, sessions, results):
    """PayloadPark Fig. 12 in park: drops x expiry x notice, and unsliced."""
    drops = list(a.drops)
    rng.shuffle(drops)
    for pct in drops:
        ndeny = round(pct * a.fig12_flows / 100)
        allowed = 1 - ndeny / a.fig12_flows
        rules = deny_rules(tmp, files["rules"], ADDR["park"], ndeny)
        notices = list(a.notices)
        rng.shuffle(notices)
        for i, notice in enumerate(notices):
            nfname, extra = nf_args(a.fig12_chain, "park", files, notice == "on", rules)
            key = {"part": "fig12", "round": rnd, "mode": "park", "nf": a.fig12_chain,
                   "drop_pct": pct, "notice": notice == "on"}
            # the unsliced baseline once per drop ratio (a notice needs a
            # sliced header: unsliced, the two sessions are the same)
            cells = [(e, True) for e in a.expiries] + ([(None, False)] if i == 0 else [])
            rng.shuffle(cells)
            try:
                with Session(rig, a, a.fig12_chain, key, trials, problems, sessions,
                             extra, nfname) as s:
                    for exp, sliced in cells:
                        rig.topo.set_slicing(sliced, ["--slots", a.fig12_slots,
                                                      "--expiry", exp])
                        grp = (f"fig12/{pct}/" + (f"E{exp}/notice-{notice}" if sliced
                                                   else "unsliced"))
                        # the store's steady state holds denied headers'
                        # payloads only without notices: warm it up then
                        g = {"group": grp, "traffic": "mix", "flows": a.fig12_flows,
                             "allowed": allowed, "sliced": sliced,
                             "warm": sliced and ndeny > 0 and notice == "off"}
                        log(f"fig12 {rnd + 1}/{a.runs}: {grp}")
                        res = ndr(s, g, a)
                        res.update(part="fig12", round=rnd, mode="park", nf=a.fig12_chain,
                                   drop_pct=pct, expiry=exp, sliced=sliced,
                                   notice=(notice == "on") if sliced else None)
                        results.append(res)
                        note(res, grp)
            except X.NFError as e:
                log(f"  nfslice-nf failed: {e}; going on with the next")
            finally:
                rig.topo.set_slicing(False)


def mix_part(rig, a, files, rnd, rng, trials, problems, sessions, results):
    """fw,nat,lb on the enterprise mix over the shaped link, sliced vs not."""
    chain = "fw,nat,lb"
    nfname, extra = nf_args(chain, "park", files)
    key = {"part": "mix", "round": rnd, "mode": "park", "nf": chain}
    order = [False, True]
    rng.shuffle(order)
    try:
        with Session(rig, a, chain, key, trials, problems, sessions, extra, nfname) as s:
            for sliced in order:
                rig.topo.set_slicing(sliced, ["--slots", a.slots])
                g = {"group": f"mix/{'sliced' if sliced else 'unsliced'}", "traffic": "mix",
                     "flows": a.flows, "allowed": 1.0, "sliced": sliced}
                log(f"mix {rnd + 1}/{a.runs}: {g['group']}")
                res = ndr(s, g, a)
                res.update(part="mix", round=rnd, mode="park", nf=chain, sliced=sliced)
                results.append(res)
                note(res, g["group"])
    except X.NFError as e:
        log(f"  nfslice-nf failed: {e}")
    finally:
        rig.topo.set_slicing(False)


def write_results(a, res, out):
    """The summary printed; nf.json, the CSV files and the plots into OUT."""
    print_summary(res["summary"], a)
    S = res["summary"]
    csvs = []
    if S["ndr"]:
        csvs.append(("nf.ndr.csv", [{k: v for k, v in r.items() if not k.startswith("runs_")}
                                    for r in S["ndr"]]))
    if S["fig12"]:
        csvs.append(("nf.fig12.csv", S["fig12"]))
    N.write_results(Path(out), "nf", res, csv_rows(res["trials"]), csvs=csvs,
                    plots=lambda out: plots(S, out), log=log)


def from_json(a):
    res, cfg = B.reload(a)
    for n in res["ndrs"]:       # CPU per frame with today's cpu_per_frame()
        n.update(cpu_of(res["trials"], n["trials"]))
    res["summary"] = summarize(cfg, res["ndrs"])
    write_results(cfg, res, a.out)
    return 0


# --------------------------------------------------------------- main --
def main(argv):
    a = parse(argv)
    if a.from_json:
        return from_json(a)
    results = B.preflight("exp_nf.py", a, argv, files=(X.NF_BIN, X.SINK_OBJ, X.QMAP_OBJ),
                          tools=("tc", "bpftool", "ip"))
    if results is None:
        return 1
    tag = B.start_run(results, a, "nfbn")
    start = time.monotonic()
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="nfbn-")
    trials, problems, sessions, ndrs, rigs = [], [], [], [], []
    os.sched_setaffinity(0, {a.gen_cpu})

    def using(rig, fn):
        rigs.append(rig)
        try:
            rig.up()
            fn(rig)
        finally:
            rig.down()

    def body():
        results["build"] = X.snapshot(tmp)
        # the topology scripts' helpers run the snapshot's nfslice and xdp_pass too
        nfsltopo.NFSLICE = X.BIN["nfslice"]
        B.XDP_PASS = X.BIN["xdp_pass"]
        rules, fwinfo = make_rules(tmp, a)
        files = {"rules": rules, "backends_inline": make_backends(tmp, "inline"),
                 "backends_park": make_backends(tmp, "park")}
        results["firewall"] = fwinfo
        log(f"run {tag}: generator on CPU {a.gen_cpu}, nfslice-nf on CPU {a.nf_cpu}; "
            f"firewall rules {fwinfo['flipped']} turned to allow")
        dom = tag.replace("-", "")
        for rnd in range(a.runs):
            if "ndr" in a.parts:
                modes = list(a.modes)
                rng.shuffle(modes)
                for mode in modes:
                    rig = (Inline(tag, a, tmp) if mode == "inline" else
                           Park(f"{tag}-pk", dom + "pk", a.ndr_rate, a))
                    using(rig, lambda r: ndr_part(r, a, files, rnd, rng, trials, problems,
                                                  sessions, ndrs))
            if "fig12" in a.parts or "mix" in a.parts:
                def shaped(r):
                    parts = [p for p in ("fig12", "mix") if p in a.parts]
                    rng.shuffle(parts)
                    for p in parts:
                        if p == "fig12":
                            fig12_part(r, a, files, tmp, rnd, rng, trials, problems,
                                       sessions, ndrs)
                        else:
                            mix_part(r, a, files, rnd, rng, trials, problems, sessions, ndrs)
                using(Park(f"{tag}-pl", dom + "pl", a.link_rate, a, a.link_queue_ms), shaped)

    def teardown():
        for rig in rigs:
            try:
                rig.down()
            except Exception as e:      # noqa: BLE001
                problems.append({"what": "teardown", "error": repr(e)})
        shutil.rmtree(tmp, ignore_errors=True)
    rc = B.guarded(body, teardown, problems, "exp_nf")
    left = [x for rig in rigs for x in rig.leftovers()]
    results.update(trials=trials, ndrs=ndrs, sessions=sessions, summary=summarize(a, ndrs),
                   problems=problems, leftovers=left, loadavg_end=B.loadavg(),
                   elapsed_s=time.monotonic() - start)
    write_results(a, results, a.out)
    return B.finish("exp_nf.py", results, problems, left, rc, "nf.json")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
