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
import ipaddress
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from nfsl import bench as B
from nfsl import cpustat
import exp_xsk as X
from nfsl import fwgen
from nfsl import ndr as N
from nfsl import topo as nfsltopo
from nfsl.topo import run

NFS = ("l2fwd", "fw", "nat", "lb", "qos", "fw,nat,lb")
PROBE_HEADROOM = 1.25       # the probe's delivered rate x this: the search's guide
FLUSH_FACTOR = 1.25         # flush: this x expiry x partition slots frames
SPORT = X.SPORT             # flows: source ports SPORT.. (X.DPORT the dest)
SLICED_HDR = 58             # a sliced 1514 B UDP/IPv4 frame: 42 B + 16 B token
SMALL = 60                  # the generator's smallest frame (64 B on the wire)
TARGET_SLICED_VS_SMALL = 0.90
TARGET_MIX_GAIN = 1.36
QOS = ["--cir", "100Gbit", "--cbs", "1M", "--ebs", "1M", "--nf-opt", "qos.red=mark"]
NBACKENDS = 8
# Addresses: inline as exp_xsk's 1q path, park as topo_park.sh.
ADDR = {"inline": {"src": X.ADDR["1q"]["src"], "dst": X.ADDR["1q"]["dst"],
                   "ext": "10.211.9.1", "backend_net": "10.211.2."},
        "park": {"src": "10.212.1.2", "dst": "10.212.2.2", "ext": "10.212.9.1",
                 "backend_net": "10.212.2."}}


def log(msg):
    B.log(msg, "exp_nf")


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


def rate_bps(text):
    """tc rate NUMBER{bit,kbit,mbit,gbit} -> bit/s (exp_linkrate.py's)."""
    import exp_linkrate
    return exp_linkrate.rate_bps(text)


# -------------------------------------------------------- NF's files --
def rule_action(line):
    return line.split("#", 1)[0].split()[-1]


def make_rules(tmp, a):
    """fwgen.py's --rules rules (seed 1) with the action of every rule
    that first-matches a flow of this benchmark turned to allow. Returns
    (path, {"flipped": [rule indexes], "first_match": {addr pair: rules}})."""
    base = Path(tmp) / "fwgen.rules"
    run([sys.executable, B.ROOT / "scripts" / "fwgen.py", "rules", "-n", a.rules,
         "--seed", 1, "-o", base])
    text = base.read_text().splitlines()
    idx = [i for i, line in enumerate(text) if line.split("#", 1)[0].strip()]
    rules = fwgen.read_rules(base)
    assert len(rules) == len(idx) == a.rules, (len(rules), len(idx))
    nports = max(a.flows, a.fig12_flows)
    flipped, firsts = set(), {}
    for mode, ad in ADDR.items():
        s, d = ipaddress.ip_address(ad["src"]), ipaddress.ip_address(ad["dst"])
        hit = {fwgen.first_match(rules, s, d, p, X.DPORT, 17)
               for p in range(SPORT, SPORT + nports)}
        firsts[mode] = sorted(hit)
        flipped |= {i for i in hit if i >= 0 and rule_action(text[idx[i]]) == "deny"}
    for i in flipped:
        line = text[idx[i]].split("#", 1)[0].rstrip()
        text[idx[i]] = line[:line.rfind("deny")] + "allow"
    out = Path(tmp) / "fw.rules"
    out.write_text(f"# exp_nf.py: fwgen.py rules -n {a.rules} --seed 1, rules "
                   f"{sorted(flipped)} (0-based) turned to allow\n" + "\n".join(text) + "\n")
    return out, {"flipped": sorted(flipped), "first_match": firsts}


def deny_rules(tmp, base, ad, ndeny):
    """BASE with one rule ahead denying the first NDENY flows (PayloadPark
    Fig. 12: "a single rule"); BASE itself for 0."""
    if not ndeny:
        return base
    out = Path(tmp) / f"fw_deny{ndeny}.rules"
    out.write_text(f"{ad['src']}/32 {ad['dst']}/32 {SPORT}:{SPORT + ndeny - 1} "
                   f"{X.DPORT} udp deny\n" + Path(base).read_text())
    return out


def make_backends(tmp, mode):
    out = Path(tmp) / f"backends_{mode}"
    out.write_text("".join(f"{ADDR[mode]['backend_net']}{16 + i}\n"
                           for i in range(NBACKENDS)))
    return out


def nf_args(chain, mode, files, notice=False, rules=None):
    """nfslice-nf's --nf value and extra options for CHAIN in MODE."""
    nfs = chain.split(",")
    x = []
    if "fw" in nfs:
        x += ["--rules", rules or files["rules"], "--fw-default", "allow"]
    if "nat" in nfs:
        x += ["--ext-ip", ADDR[mode]["ext"]]
    if "lb" in nfs:
        x += ["--backends", files[f"backends_{mode}"]]
    if "qos" in nfs:
        x += QOS
    if notice:
        x.append("--drop-notice")
    return (chain if chain == "l2fwd" else chain + ",l2fwd"), x


def pktgen_cmd(a, ns, dev, ad, traffic, rate, seconds, flows):
    """nfslice-pktgen in NS out of DEV: TRAFFIC a frame size or "mix"
    (the enterprise mix); rate 0 = unpaced for whole SECONDS, else
    --count rate x seconds in --gen-burst-us bursts."""
    cmd = ["ip", "netns", "exec", ns, X.BIN["pktgen"], "--dev", dev, "--flows", flows,
           "--src-port", SPORT, "--dst-port", X.DPORT, "--src-ip", ad["src"],
           "--dst-ip", ad["dst"], "--cpu", a.gen_cpu, "--peer-xdp", "off", "--json"]
    cmd += ["--mix", B.MIX_ENTERPRISE] if traffic == "mix" else ["--size", traffic]
    if rate:
        cmd += ["--rate", int(rate), "--count", max(1, int(rate * seconds)),
                "--burst-us", a.gen_burst_us]
    else:
        cmd += ["--duration", max(1, round(seconds))]
    return [str(x) for x in cmd]


# ---------------------------------------------------------------- rigs --
class Inline:
    """exp_xsk's rig, its 1q path: the NF on d0 of the slicing host."""
    kind = "inline"

    def __init__(self, tag, a, tmp):
        self.a = a
        self.rig = X.Rig(tag, a, tmp)
        self.host = self.rig            # for X.NF and X.run_gens
        self.domain = None

    def up(self):
        self.rig.up()

    def down(self):
        self.rig.down()

    def leftovers(self):
        return self.rig.leftovers()

    def gen(self, traffic, rate, seconds, flows):
        return pktgen_cmd(self.a, self.rig.gen, "g0", ADDR["inline"], traffic, rate,
                          seconds, flows)

    def attach(self):
        # exp_xsk's Rig.attach with --ttl: its detach() takes it down
        name = self.rig.domain_name("1q")
        self.rig.nsx(self.rig.dut, str(X.BIN["nfslice"]), "attach", "--name", name,
                     "--slots", self.a.slots, "--ttl", self.a.ttl, self.rig.dut_dev("1q"))
        self.rig.domains["1q"] = self.domain = name
        return name

    def detach(self):
        self.rig.detach("1q")
        self.domain = None

    def partition_slots(self):
        st = json.loads(self.rig.nsx(self.rig.dut, str(X.BIN["nfslice"]), "status",
                                     "--name", self.domain, "--json").stdout)
        return st["partition_slots"], st["expiry"]

    def counters(self):
        s = self.rig.sink_stats("1q")
        return {"delivered": s["packets"] + s["other"], "delivered_bytes": None,
                "slicer": self.rig.slice_stats("1q")}


class ParkTopo(B.Topo):
    """benchlib's park Topo with nfslice attach options.

    isolate_cpu (a CPU number or None): the slicing host receives what
    the NF server sends back in slcnf's NAPI thread (threaded NAPI,
    pinned to that CPU), not in the softirq veth raises on the NF's CPU
    inside its transmit calls; unsliced, xdp_pass on slcnf gives veth a
    NAPI there as the slicer does sliced."""
    isolate_cpu = None
    napi_threads = ()               # pids of slcnf's NAPI threads we pinned

    def _clear(self):
        was_pass = self.mode == "pass"
        super()._clear()
        if was_pass and self.isolate_cpu is not None:
            run(["ip", "-n", self.ns("slc"), "link", "set", "dev", self.env["SLC_NF_IF"],
                 "xdpdrv", "off"], check=False)

    def set_slicing(self, sliced, opts=()):
        before = napi_pids(self.env["SLC_NF_IF"]) if self.isolate_cpu is not None else set()
        if not sliced:
            if self.mode != "pass":
                self.set_mode(False)
                if self.isolate_cpu is not None:
                    run(["ip", "-n", self.ns("slc"), "link", "set", "dev",
                         self.env["SLC_NF_IF"], "xdpdrv", "object", B.XDP_PASS,
                         "program", "xdp_pass"])
        else:
            self._clear()
            self.attach(*map(str, opts), "--ttl", str(self.ttl))
            self.mode = "sliced"
            self.slice_opts = list(opts)
            time.sleep(0.2)             # links settle after XDP changes
        if self.isolate_cpu is not None:
            self.pin_napi(before)

    def pin_napi(self, before):
        """Threaded NAPI on slcnf, its threads on isolate_cpu. The threads
        are told apart from other namespaces' slcnf by being new since
        BEFORE (a mode change recreates veth's NAPI) or pinned by us."""
        dev = self.env["SLC_NF_IF"]
        self.exec("slc", "sh", "-c", f"echo 1 > /sys/class/net/{dev}/threaded")
        now = napi_pids(dev)
        ours = (set(self.napi_threads) & now) | (now - before)
        if not ours:
            raise RuntimeError(f"no NAPI thread of {dev} appeared: threaded NAPI "
                               "did not take (veth needs XDP or GRO for NAPI)")
        for pid in ours:
            os.sched_setaffinity(pid, {self.isolate_cpu})
        self.napi_threads = sorted(ours)


def napi_pids(dev):
    """pids of the kernel threads named napi/DEV-<id> (any namespace)."""
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                comm = (d / "comm").read_text().strip()
            except OSError:
                continue
            if comm.startswith(f"napi/{dev}-"):
                out.add(int(d.name))
    return out


class CpuCap:
    """A cpu cgroup (v2 cpu.max or v1 cfs quota) holding nfslice-nf at
    FRAC of one CPU: an NF server with a fixed share of a core (the park
    rig's 2 vCPUs have no CPU to spare for it alone). The kernel's
    smallest quota is 1 ms, so the period is 1 ms / FRAC: the NF runs
    1 ms, then waits the rest of the period while its RX ring fills."""
    QUOTA_US = 1000

    def __init__(self, name, frac):
        v2 = Path("/sys/fs/cgroup/cgroup.controllers")
        self.v2 = v2.exists()
        base = Path("/sys/fs/cgroup") if self.v2 else Path("/sys/fs/cgroup/cpu")
        self.path = base / name
        self.period_us = int(round(self.QUOTA_US / frac))
        self.path.mkdir()
        try:
            if self.v2:
                (self.path / "cpu.max").write_text(f"{self.QUOTA_US} {self.period_us}\n")
            else:
                (self.path / "cpu.cfs_period_us").write_text(f"{self.period_us}\n")
                (self.path / "cpu.cfs_quota_us").write_text(f"{self.QUOTA_US}\n")
        except OSError:
            self.remove()
            raise

    def add(self, pid):
        """Move process PID (all its threads) into the cgroup."""
        (self.path / "cgroup.procs").write_text(f"{pid}\n")

    def stat(self):
        """cpu.stat as {name: int} (nr_throttled, throttled_time/usec, ...)."""
        out = {}
        for line in (self.path / "cpu.stat").read_text().splitlines():
            k, _, v = line.partition(" ")
            if v.strip().isdigit():
                out[k] = int(v)
        return out

    def remove(self):
        try:
            self.path.rmdir()
        except FileNotFoundError:
            pass


class ParkHost:
    """What X.NF and X.run_gens need of a rig, for the NF server."""

    def __init__(self, topo, a):
        self.topo, self.a = topo, a
        self.dut = topo.ns("nf")
        self.procs = []

    def dut_dev(self, path):
        return self.topo.env["NF_IF"]


class Park:
    """scripts/topo_park.sh --nf-xsk --rate RATE under PREFIX."""
    kind = "park"

    def __init__(self, prefix, domain, rate, a, queue_ms=None):
        self.a, self.rate = a, rate
        opts = ["--nf-xsk", "--rate", rate]
        if queue_ms:
            # at least topo_park.sh's own floor, 32 frames of 1538 B
            opts += ["--limit", max(32 * 1538, int(rate_bps(rate) / 8 * queue_ms / 1000))]
        self.topo = ParkTopo("park", prefix, opts, domain=domain)
        self.topo.ttl = a.ttl
        if a.isolate:
            self.topo.isolate_cpu = a.gen_cpu
        self.cap = None
        self.host = None
        self.domain = None              # nfslice-nf gets no --name in park

    def up(self):
        self.topo.up()
        self.topo.tag = None            # no progress lines per command
        self.host = ParkHost(self.topo, self.a)
        e = self.topo.env
        mac = self.topo.mac("srv", e["SRV_IF"])
        # lb's backends are in the server's subnet: their frames reach srv0
        for i in range(NBACKENDS):
            self.topo.exec("slc", "ip", "neigh", "replace",
                           f"{ADDR['park']['backend_net']}{16 + i}", "lladdr", mac,
                           "dev", e["SLC_SRV_IF"], "nud", "permanent")
        if self.a.rps:
            # what comes back from the NF server is received (IFB, shaper,
            # forwarding, splicer) on the generator's CPU, not the NF's
            mask = f"{1 << self.a.gen_cpu:x}"
            self.topo.exec("slc", "sh", "-c", f"for q in /sys/class/net/{e['SLC_NF_IF']}"
                           f"/queues/rx-*; do echo {mask} > $q/rps_cpus; done")
        if self.a.nf_cpu_quota:
            self.cap = CpuCap(self.topo.prefix + "-nf", self.a.nf_cpu_quota)
        self.topo.set_slicing(False)

    def confine(self, pid):
        """nfslice-nf's process PID into the --nf-cpu-quota cgroup."""
        if self.cap:
            self.cap.add(pid)

    def down(self):
        if self.host:
            for p in list(self.host.procs):
                try:
                    nfsltopo.stop_process(p, timeout=3)
                except Exception:       # noqa: BLE001 (best effort)
                    pass
        self.topo.down()
        if self.cap:
            self.cap.remove()

    def leftovers(self):
        names = set(run(["ip", "netns", "list"], check=False).stdout.split())
        left = [f"namespace {n}" for n in names if n.startswith(self.topo.prefix + "-")]
        if self.cap and self.cap.path.exists():
            left.append(f"cgroup {self.cap.path}")
        return left

    def gen(self, traffic, rate, seconds, flows):
        e = self.topo.env
        return pktgen_cmd(self.a, self.topo.ns("cli"), e["CLI_IF"], ADDR["park"], traffic,
                          rate, seconds, flows)

    def reattach(self):
        """The domain detached and attached again: an empty store."""
        self.topo.set_slicing(True, self.topo.slice_opts)

    def partition_slots(self):
        st = self.topo.status()
        return st["partition_slots"], st["expiry"]

    def counters(self):
        t, e = self.topo, self.topo.env
        srv = t.link("srv", e["SRV_IF"])["rx"]
        nfl = t.link("slc", e["SLC_NF_IF"])
        q = {"to_nf": t.qdisc("slc", e["SLC_NF_IF"]), "from_nf": t.qdisc("slc", e["SLC_IFB"])}
        extra = {}
        for pid in t.napi_threads:
            try:   # run time of slcnf's NAPI threads (isolate), ns
                ns = int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
            except (OSError, ValueError):
                continue
            extra["napi_ns"] = extra.get("napi_ns", 0) + ns
        if self.cap:
            st = self.cap.stat()
            extra["nf_throttled"] = st.get("nr_throttled", 0)
            extra["nf_throttled_us"] = st.get("throttled_usec",
                                              st.get("throttled_time", 0) // 1000)
        return {"delivered": srv["packets"], "delivered_bytes": srv["bytes"],
                "extra": extra, "slicer": t.stats() or None,
                "link": {"slcnf_tx_dropped": nfl["tx"]["dropped"],
                         "slcnf_tx": nfl["tx"]["packets"], "slcnf_rx": nfl["rx"]["packets"],
                         **{f"{k}_{f}": v.get(f, 0) for k, v in q.items()
                            for f in ("packets", "bytes", "drops")}}}


# -------------------------------------------------------------- trials --
class Session:
    """One nfslice-nf on a rig, and the trials against it."""

    def __init__(self, rig, a, chain, key, trials, problems, sessions, extra=(),
                 nfname=None):
        self.rig, self.a, self.key = rig, a, key
        self.trials, self.problems = trials, problems
        self.nf = X.NF(rig.host, "1q", a.rx, nfname or chain, 1, rig.domain, extra)
        self.rec = {**key, "command": self.nf.command()}
        self.prepared = None
        self.quiet = 0.0        # monotonic time our last traffic has drained by
        sessions.append(self.rec)

    def __enter__(self):
        try:
            self.nf.start()
            if hasattr(self.rig, "confine"):
                self.rig.confine(self.nf.p.pid)
        except X.NFError as e:
            self.rec.update(error=str(e), evidence=e.evidence)
            self.problems.append({"what": "start", "error": str(e), **e.evidence})
            raise
        self.rec["starts"] = self.nf.starts
        return self

    def __exit__(self, *exc):
        st = self.nf.stop()
        self.rec.update(returncode=st["returncode"], reports=st["reports"],
                        stderr=st["stderr"], final=st["final"])
        if st["returncode"] != 0 or st["final"] is None or st["unparsed_stdout"]:
            self.problems.append({"what": "exit", "command": self.nf.command(),
                                  "returncode": st["returncode"],
                                  "final_report": st["final"] is not None,
                                  "stderr": st["stderr"], "unparsed": st["unparsed_stdout"]})
        return False

    def prepare(self, g, rate, lo, dirty):
        """Before a sliced trial of group G at RATE: a store without the
        payloads of frames an earlier trial lost. Park: the domain
        attached afresh when the last trial lost frames (DIRTY) or G warms
        up, then for G["warm"] FLUSH_FACTOR x expiry x partition slots
        frames at RATE, so the trial meets the store in its steady state at
        that rate and drop ratio (dead slots of denied headers included).
        Inline (the NF holds the domain): after a lossy trial, that many
        frames at LO, the highest rate passed, so the lost payloads expire
        (PayloadPark Alg. 1). Recorded in the next trial's "prepared"."""
        rec = {}
        if self.rig.kind == "park":
            if dirty or g.get("warm"):
                self.rig.reattach()
                rec["reattached"] = True
            if g.get("warm"):
                rec.update(self.flush(g, rate))
        elif dirty:
            rec.update(self.flush(g, lo))
        self.prepared = rec or None

    def flush(self, g, rate):
        slots, expiry = self.rig.partition_slots()
        n = int(FLUSH_FACTOR * expiry * slots)
        rate = max(1000, rate)
        cmd = self.rig.gen(g["traffic"], rate, n / rate, g["flows"])
        r = X.run_gens(self.rig.host, [cmd], timeout=n / rate + 20)[0]
        self.quiet = time.monotonic() + X.DRAIN_S
        return {"flush_frames": r["transmitted"], "flush_rate": rate,
                "partition_slots": slots, "expiry": expiry}

    def trial(self, kind, g, rate, seconds, extra=None):
        """One trial of group G (traffic, flows, allowed share) at RATE
        (0: unpaced) for SECONDS; its record (also in self.trials)."""
        nf = self.nf
        # the report that opens the trial: recent, and after any earlier
        # traffic (a flush) has drained
        t0, r0 = nf.latest()
        need = max(self.quiet, time.monotonic() - 0.3)
        if t0 < need:
            t0, r0 = nf.wait_report(need)
        c0, s0, p0 = self.rig.counters(), cpustat.snapshot(), nf.cpu_ns()
        cmd = self.rig.gen(g["traffic"], rate, seconds, g["flows"])
        res = X.run_gens(self.rig.host, [cmd], timeout=seconds + 20)[0]
        end = time.monotonic()
        self.quiet = end + X.DRAIN_S
        _, r1 = nf.wait_report(self.quiet)
        c1, s1, p1 = self.rig.counters(), cpustat.snapshot(), nf.cpu_ns()
        sent = res["transmitted"]
        got = min(c1["delivered"] - c0["delivered"], sent)
        el = max(res["elapsed_s"], 1e-9)
        d = X.rdelta(r0, r1)
        d["nf_counters"] = {n: {k: v - r0["nf_counters"][n][k] for k, v in c.items()}
                            for n, c in r1["nf_counters"].items()}
        expected = expected_frames(sent, g["allowed"], d)
        rec = {**self.key, **{k: g[k] for k in ("group", "traffic", "flows", "sliced")},
               "kind": kind, "t_start": round(end - el, 3), "seconds": seconds,
               "offered_pps": rate or None, "achieved_pps": res["achieved_pps"],
               "avg_frame_bytes": res.get("avg_frame_bytes"),
               "sent": sent, "expected": expected, "delivered": got,
               "loss_frac": (expected - got) / expected if expected else None,
               "delivered_pps": got / el, "gen_elapsed_s": el,
               "driver_dropped": res.get("driver_dropped"), "nfc": d}
        if c0["delivered_bytes"] is not None:
            rec["delivered_bytes"] = c1["delivered_bytes"] - c0["delivered_bytes"]
        else:
            rec["delivered_bytes"] = got * g["traffic"] if g["traffic"] != "mix" else None
        rec["goodput_gbps"] = (rec["delivered_bytes"] * 8 / el / 1e9
                               if rec["delivered_bytes"] is not None else None)
        if c0.get("link"):
            rec["link"] = {k: c1["link"][k] - c0["link"][k] for k in c0["link"]}
        if c0.get("extra"):
            rec.update({k: c1["extra"][k] - v for k, v in c0["extra"].items()
                        if k in c1["extra"]})
        if c0["slicer"] and c1["slicer"]:
            rec["slicer"] = {k: c1["slicer"][k] - c0["slicer"][k] for k in c1["slicer"]
                             if isinstance(c1["slicer"][k], int)
                             and k not in ("slots", "slots_busy")}
            rec["slicer"]["slots_busy_after"] = c1["slicer"].get("slots_busy")
        cs = cpustat.delta(s0, s1, cpus=[self.a.gen_cpu, self.a.nf_cpu])
        rec["cpu_wall_ns"] = cs["wall_ns"]
        rec["cpu_busy_frac"] = {str(c): v["nonidle_ns"] / max(cs["wall_ns"], 1)
                                for c, v in cs["cpus"].items()}
        if p0 and p1:
            rec["nf_cpu_ns"] = p1["sched_ns"] - p0["sched_ns"]
            rec["nf_cpu_frac"] = rec["nf_cpu_ns"] / max(cs["wall_ns"], 1)
        rec["loadavg"] = B.loadavg()
        rec["losses"] = losses(rec)
        rec["prepared"], self.prepared = self.prepared, None
        rec.update(extra or {})
        self.check(rec)
        self.trials.append(rec)
        return rec

    def check(self, rec):
        """Counter sanity: every steered frame received or dropped by the
        kernel; every lost frame found somewhere."""
        d, issues = rec["nfc"], []
        acc = (d["steer"]["steered"] - d["total"]["rx"] - d["kernel"]["rx_dropped"]
               - d["kernel"]["rx_ring_full"])
        tol = max(64, 0.001 * rec["sent"])
        if abs(acc) > tol:
            issues.append(f"steered - rx - rx_dropped - rx_ring_full = {acc}")
        if abs(rec["losses"]["unaccounted"]) > tol:
            issues.append(f"{rec['losses']['unaccounted']:.0f} frames lost where no "
                          "counter shows them")
        if issues:
            rec["issues"] = issues
            self.problems.append({"what": "counters", "group": rec["group"],
                                  "kind": rec["kind"], "offered_pps": rec["offered_pps"],
                                  "sent": rec["sent"], "issues": issues,
                                  "losses": rec["losses"], "command": self.nf.command()})


def expected_frames(sent, allowed, d):
    """Frames of SENT the server should get: all, or with a firewall
    denying a share 1 - ALLOWED of the flows, those the firewall allowed
    plus that share of the frames lost before it (the generator's flows
    take turns over the mix's sizes, so a short run does not split its
    frames among them exactly)."""
    fw = d["nf_counters"].get("fw")
    if allowed >= 1 or not fw:
        return sent * allowed
    return fw["allowed"] + max(0, sent - fw["allowed"] - fw["denied"]) * allowed


def losses(rec):
    """Frames lost per place (or counter) in a trial; "unaccounted" is the
    rest of expected - delivered."""
    d, out = rec["nfc"], {}
    steered = d["steer"]["steered"]
    lk = rec.get("link") or {}
    if lk:
        out["link_to_nf"] = lk["to_nf_drops"]
        out["veth_to_nf"] = lk["slcnf_tx_dropped"]
        out["slicing_host_in"] = max(0, rec["sent"] - lk["to_nf_packets"] - lk["to_nf_drops"])
    else:
        out["before_nf"] = max(0, rec["sent"] - steered)
    out["nf_rx_ring_full"] = d["kernel"]["rx_ring_full"]
    out["nf_rx_dropped"] = d["kernel"]["rx_dropped"]
    denied = (d["nf_counters"].get("fw") or {}).get("denied", 0)
    out["nf_drops"] = max(0, d["total"]["drops"] - denied)
    for k in ("stale", "too_big", "no_room", "tx_full"):
        out[f"nf_{k}"] = d["total"][k]
    if lk:
        # what the NF sent (headers and notices) that slcnf did not get
        out["veth_from_nf"] = max(0, d["total"]["tx"] + d["total"]["notices"]
                                  - lk["slcnf_rx"])
        out["link_from_nf"] = lk["from_nf_drops"]
    else:
        out["after_nf"] = max(0, d["total"]["tx"] - rec["delivered"])
    sl = rec.get("slicer") or {}
    for k in ("stale", "too_big", "splice_failed", "replayed"):
        if sl.get(k):
            out[f"slicer_{k}"] = sl[k]
    # every frame sent: delivered, denied by the firewall, or lost
    lost = rec["sent"] - rec["delivered"] - denied
    out["unaccounted"] = lost - sum(out.values())
    return out


def limit_of(rec):
    """The place that lost the most frames in REC (None if it lost none)."""
    if rec is None or not rec.get("losses"):
        return None
    k, v = max(((k, v) for k, v in rec["losses"].items() if k != "unaccounted"),
               key=lambda kv: kv[1], default=(None, 0))
    lost = sum(max(0, x) for x in rec["losses"].values())
    if v <= 0 or v < 0.25 * lost:
        return "unaccounted" if rec["losses"]["unaccounted"] > 0 else None
    return k


def ndr(sess, g, a):
    """The NDR of group G in session SESS: probe, then bisection. A dict:
    ndr_pps (offered rate of the best passing trial), delivered_pps,
    goodput_gbps, upper_pps, limit (of the first failing trial above it),
    the trials' indexes."""
    def passes(r):
        return N.passes(r["loss_frac"])
    first = len(sess.trials)
    probes = []
    for _ in range(2):
        # a second probe when the first lost nothing: the generator's
        # unpaced speed varies with what else runs on its CPU
        p = sess.trial("probe", g, 0, 1.0)
        p["pass"] = passes(p)
        probes.append(p)
        if not p["pass"]:
            break
    ok = [p for p in probes if p["pass"]]
    best = max(ok, key=lambda r: r["achieved_pps"]) if ok else None
    probe = probes[-1]
    out = {"group": g["group"], "probe_delivered_pps": probe["delivered_pps"],
           "probe_pass": probe["pass"], "best": None, "fail": None}
    fail = None if probe["pass"] else probe
    if probe["pass"]:
        # nothing lost unpaced: the generator (whose CPU also runs the
        # receive path) was the limit then; paced trials look above it
        lo, hi = best["achieved_pps"], 2 * best["achieved_pps"]
    else:
        share = probe["delivered"] / max(probe["expected"], 1)
        if not g["sliced"] and limit_of(probe) in ("link_to_nf", "link_from_nf") \
                and probe["delivered_bytes"] and probe.get("avg_frame_bytes"):
            # a shaper short of room drops big frames first: bytes, not
            # frames, say how much of the offered load the link carried
            share = probe["delivered_bytes"] / max(
                1, probe["expected"] * probe["avg_frame_bytes"])
        # from a quarter of what the overloaded probe delivered (x 1.25) to
        # the generator's unpaced rate: an overloaded sliced path can
        # deliver far less than its NDR (lost headers leave busy slots,
        # their packets go on unsliced and overload the link further)
        bound = PROBE_HEADROOM * probe["achieved_pps"] * share
        # a warmed store (fig12 without notices) may hold so many dead
        # payloads that most packets go on unsliced: far below a cold probe
        lo = max(500.0, bound / a.span / (8 if g.get("warm") else 1))
        hi = max(bound, max(p["achieved_pps"] for p in probes)) * 1.02
        if best is not None:
            lo = max(lo, min(best["achieved_pps"], hi / 1.02))
    out["step"] = (hi / lo) ** (1 / 2 ** a.bisect) if a.bisect else None
    dirty = not probe["pass"]

    def attempt(mid, lo):
        nonlocal dirty
        if g["sliced"]:
            sess.prepare(g, mid, lo, dirty)
        r = sess.trial("bisect", g, mid, a.trial)
        r["pass"] = passes(r)
        dirty = not r["pass"]
        return r

    lo, hi, best_b, fail_b = N.bisect(lo, hi, a.bisect, attempt, "achieved_pps")
    if best_b is not None and (best is None or
                               best_b["achieved_pps"] > best["achieved_pps"]):
        best = best_b
    fail = fail_b or fail
    # the generator could not make more than the best rate: no failure
    # above it, or the best trial fell short of its offered rate
    out["generator_bound"] = best is not None and (fail is None or (
        best["offered_pps"] and best["achieved_pps"] < X.GEN_KEEP_UP * best["offered_pps"]))
    out["upper_pps"] = hi
    if best is not None:
        out.update(best=sess.trials.index(best),
                   ndr_pps=best["achieved_pps"], delivered_pps=best["delivered_pps"],
                   goodput_gbps=best["goodput_gbps"], gen_kept_up=(
                       not best["offered_pps"] or
                       best["achieved_pps"] >= X.GEN_KEEP_UP * best["offered_pps"]),
                   sliced_share=sliced_share(best))
    else:
        out.update(ndr_pps=None, delivered_pps=None, goodput_gbps=None)
    if fail is not None:
        out["fail"] = sess.trials.index(fail)
        out["limit"] = limit_of(fail)
        out["fail_losses"] = fail["losses"]
        out["fail_loss_frac"] = fail["loss_frac"]
    out["trials"] = list(range(first, len(sess.trials)))
    out.update(cpu_of(sess.trials, out["trials"]))
    return out


def cpu_per_frame(r):
    """CPU time per frame sent in trial R, ns: "nf", nfslice-nf's threads
    (schedstat: with the softirq work the kernel runs in their system
    calls), "cpu<N>", all non-idle time of CPU N (/proc/stat, 10 ms
    ticks); and "busy<N>", CPU N's non-idle time over the traffic's
    duration (at most: the window also holds the drain). The times cover
    the counters' window, from the NF report before the traffic to the
    one after it (1-2 s around --trial s of traffic), so they are divided
    by the frames sent, not by the rate. Records without the window's
    length (cpu_wall_ns, missing in older results files) use the interval
    between those two reports (nfc dt_s) for it: the snapshots are taken
    after each report, so the two differ by the time taken to read the
    counters, some 10 ms, or up to 0.3 s where the first report was not
    waited for."""
    wall = r.get("cpu_wall_ns") or r["nfc"]["dt_s"] * 1e9
    if not r.get("sent") or not wall:
        return {}
    out = {}
    if r.get("nf_cpu_ns") is not None:
        out["nf"] = r["nf_cpu_ns"] / r["sent"]
    elif r.get("nf_cpu_frac") is not None:
        out["nf"] = r["nf_cpu_frac"] * wall / r["sent"]
    for c, f in (r.get("cpu_busy_frac") or {}).items():
        out[f"cpu{c}"] = f * wall / r["sent"]
        out[f"busy{c}"] = f * wall / 1e9 / max(r["gen_elapsed_s"], 1e-9)
    return out


def cpu_of(trials, idx):
    """Medians of cpu_per_frame() over the paced trials of IDX (indexes
    into TRIALS) that lost nothing: what one frame costs at or below the
    NDR. {"nf_ns_per_pkt": .., "cpu_ns_per_pkt": {cpuN: ..},
    "busy_in_traffic": {N: ..}}."""
    per = [cpu_per_frame(trials[i]) for i in idx
           if trials[i]["kind"] == "bisect" and trials[i].get("pass")]
    keys = sorted({k for p in per for k in p})
    return {"nf_ns_per_pkt": B.median([p.get("nf") for p in per]),
            "cpu_ns_per_pkt": {k: B.median([p.get(k) for p in per])
                               for k in keys if k.startswith("cpu")},
            "busy_in_traffic": {k[4:]: B.median([p.get(k) for p in per])
                                for k in keys if k.startswith("busy")}}


def sliced_share(r):
    sl = r.get("slicer") or {}
    n = sl.get("sliced", 0) + sl.get("skipped_full", 0)
    return sl.get("sliced", 0) / n if n else None


def note(res, what):
    log(f"  {what}: NDR {fmt_k(res['ndr_pps'])} kpps"
        + (f", {res['goodput_gbps'] * 1e3:.1f} Mbit/s" if res.get("goodput_gbps") else "")
        + (" (generator-bound)" if res.get("generator_bound") else "")
        + (f", limit {res.get('limit')}" if res.get("limit") else ""))


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
        fig.tight_layout()
        f = Path(out) / "nf.ndr.png"
        fig.savefig(f, dpi=110)
        plt.close(fig)
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
        fig.tight_layout()
        f = Path(out) / "nf.fig12.png"
        fig.savefig(f, dpi=110)
        plt.close(fig)
        files.append(f)
    return files


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
