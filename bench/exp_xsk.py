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
                        [--nf-cpu N] [--seed N]

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
slow, traffic and stall use 1514 B rxdrop unsliced; on 1q only shring and
rxbisect (privring and smallpriv have one worker there).

options (rates in frames per second, times in seconds):
  --quick           smoke run (< 1 min): 1q, privring and rxbisect, 1514 B
                    rxdrop unsliced, 2 bisection trials, low, stall
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
  --parts P ...     ndr lat low slow traffic stall (default all; quick
                    ndr low stall)
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

Outputs in DIR: xsk.json (configuration, every trial with its counters,
every nfslice-nf session with its final report and stderr, summaries,
targets, problems), xsk.csv (one row per trial), xsk_ndr.png (Fig. 6.4:
NDR per architecture), xsk_variability.png (Fig. 6.7-6.9 and the stall).
Needs root, make (build/nfslice-nf, nfslice-pktgen, nfslice,
.output/xdp_pass.bpf.o, .output/latency_sink.bpf.o, .output/qmap.bpf.o), tc,
bpftool.
"""
import math
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from nfsl import bench as B
from nfsl import cpustat
from nfsl import lat as L
from nfsl import ndr as N
from nfsl.topo import run, start_process, stop_process

NF_BIN = B.ROOT / "build" / "nfslice-nf"
SINK_OBJ = Path(L.SINK_OBJ)
QMAP_OBJ = B.ROOT / "build" / ".output" / "qmap.bpf.o"
# The tools, copied at the start (others may rebuild build/ during a run):
# snapshot() fills it.
BIN = {"nf": NF_BIN, "pktgen": B.PKTGEN, "nfslice": B.NFSLICE,
       "xdp_pass": B.XDP_PASS, "sink": SINK_OBJ, "qmap": QMAP_OBJ}
ARCHS = ("privring", "smallpriv", "shring", "rxbisect")
PATHS = ("1q", "4q")
NQ = 4                      # queues of the 4q path
LOSS_MAX = N.LOSS_MAX       # NDR: loss < 0.1%
GEN_KEEP_UP = 0.95          # a trial counts when the generator made >= 95%
DRAIN_S = 0.25              # traffic ends at least this long before a report
OTHER_RETRY = 0.25          # a failed bisection trial with more of the NF's CPU
                            # busy with other work is repeated (N.RETRIES)
REPORT_S = 1                # nfslice-nf --stats-interval
DPORT = 5201
SPORT = 1024                # load: SPORT .. SPORT + flows - 1
MEAS_SPORT = 9000           # the latency measuring stream
SLICE_MIN = 256             # nfslice attach's default threshold
STALL = (4600, 60000)       # --stall 0:AFTER:FOR, ms
LOW_RATE = 82562            # 1 Gbit/s of 1514 B frames (L2)
TARGET_POSTED = 1 / 8       # rxbisect: privring's NDR with <= 1/8 posted
TARGET_STALL = 0.95         # rxbisect keeps >= 95% with a worker stalled
TARGET_RXDROP_PPS = 2.0e6   # rxdrop of 1514 B into one queue

# Addresses: 1q frames 10.211.1.2 -> 10.211.2.2 (the DUT routes them back
# out of d0), 4q frames 10.211.3.2 -> 10.211.4.2 (back out of dq).
ADDR = {"1q": {"src": "10.211.1.2", "dst": "10.211.2.2", "dut": "10.211.1.1",
               "dst_net": "10.211.2.0/24"},
        "4q": {"src": "10.211.3.2", "dst": "10.211.4.2", "dut": "10.211.3.1",
               "dst_net": "10.211.4.0/24"}}

class NFError(RuntimeError):
    """nfslice-nf misbehaved: the message says how, .evidence holds it."""

    def __init__(self, msg, evidence):
        super().__init__(msg)
        self.evidence = evidence


def log(msg):
    B.log(msg, "exp_xsk")


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
                    choices=("ndr", "lat", "low", "slow", "traffic", "stall"))
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
        parts=(["ndr", "lat", "low", "slow", "traffic", "stall"],
               ["ndr", "low", "stall"]),
        slow_us=([0, 200, 2000], [0, 2000]),
        shares=([0, 0.25, 0.5, 0.75], [0, 0.5]))
    if not 0.2 <= a.trial <= REPORT_S - DRAIN_S - 0.1:
        ap.error(f"--trial between 0.2 and {REPORT_S - DRAIN_S - 0.1:.2f} s "
                 "(a trial ends before the next 1 s report)")
    if not 1.1 <= a.trial_long <= 1.6:
        ap.error("--trial-long between 1.1 and 1.6 s (it spans one report)")
    if a.runs < 1 or a.bisect < 0 or a.workers < 2:
        ap.error("--runs >= 1, --bisect >= 0, --workers >= 2")
    B.check_cpus(ap, a)
    return a


# --------------------------------------------------------------- hash --
M32 = 0xffffffff


def fmix32(h):
    h &= M32
    h ^= h >> 16
    h = (h * 0x85ebca6b) & M32
    h ^= h >> 13
    h = (h * 0xc2b2ae35) & M32
    h ^= h >> 16
    return h


def flow_worker(src, dst, sport, dport, n, proto=17):
    """Worker (or 4q queue) of a flow: nfsl_flow_hash + nfsl_flow_pick of
    include/nfsl_flow.h (fields as loaded in network byte order on x86)."""
    s = int.from_bytes(socket.inet_aton(src), "little")
    d = int.from_bytes(socket.inet_aton(dst), "little")
    p = (int.from_bytes(sport.to_bytes(2, "big"), "little")
         ^ int.from_bytes(dport.to_bytes(2, "big"), "little"))
    h = fmix32(fmix32(proto ^ s ^ d) ^ p)
    return (h * n) >> 32


def port_for_worker(src, dst, n, want, avoid=range(SPORT, SPORT + 64)):
    for p in range(20000, 60000):
        if p not in avoid and flow_worker(src, dst, p, DPORT, n) == want:
            return p
    raise RuntimeError("no source port for worker %d" % want)


# ---------------------------------------------------------------- rig --
class Rig:
    """The namespaces, veths, the 4q hop and the latency sinks."""

    def __init__(self, tag, a, tmp):
        self.tag, self.a, self.tmp = tag, a, tmp
        self.gen, self.dut = f"{tag}-gen", f"{tag}-dut"
        self.sinks = {}             # path -> latlib.LatencySink (gen side)
        self.domains = {}           # path -> domain name, while attached
        self.procs = []             # Popen of everything started
        self.made_ns = []
        self.mac = {}

    # ---- helpers
    def ip(self, ns, *args, check=True):
        return run(["ip", "-n", ns, *args], check=check)

    def nsx(self, ns, *args, timeout=60, check=True):
        return run(["ip", "netns", "exec", ns, *args], timeout=timeout,
                   check=check)

    def link_mac(self, ns, dev):
        return json.loads(self.ip(ns, "-j", "link", "show", dev).stdout)[0]["address"]

    def ifindex(self, ns, dev):
        return json.loads(self.ip(ns, "-j", "link", "show", dev).stdout)[0]["ifindex"]

    # ---- life
    def up(self):
        for ns in (self.gen, self.dut):
            run(["ip", "netns", "add", ns])
            self.made_ns.append(ns)
            self.ip(ns, "link", "set", "lo", "up")
        g, d = self.gen, self.dut
        run(["ip", "link", "add", "g0", "netns", g, "type", "veth", "peer",
             "name", "d0", "netns", d])
        self.ip(g, "link", "add", "h0", "type", "veth", "peer", "name", "h1")
        self.ip(g, "link", "add", "q0", "numtxqueues", NQ, "numrxqueues", NQ,
                "type", "veth", "peer", "name", "dq", "numtxqueues", NQ,
                "numrxqueues", NQ, "netns", d)
        for dev in ("g0", "h0", "h1", "q0"):
            self.ip(g, "link", "set", dev, "up")
        for dev in ("d0", "dq"):
            self.ip(d, "link", "set", dev, "up")
        for dev in ("g0", "q0", "h0"):
            self.mac[dev] = self.link_mac(g, dev)
        for dev in ("d0", "dq"):
            self.mac[dev] = self.link_mac(d, dev)
        # The DUT routes the frames back out of the interface they came in
        # on (the slicer slices only what the FIB forwards to a domain
        # interface): 1q via g0, 4q via q0.
        self.nsx(d, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        for path, dev, peer in (("1q", "d0", "g0"), ("4q", "dq", "q0")):
            ad = ADDR[path]
            self.ip(d, "addr", "add", ad["dut"] + "/24", "dev", dev)
            self.ip(d, "neigh", "add", ad["src"], "lladdr", self.mac[peer],
                    "dev", dev, "nud", "permanent")
            self.ip(d, "route", "add", ad["dst_net"], "via", ad["src"],
                    "dev", dev)
        # 4q hop: xdp_pass on h1 (it takes the generator's XDP frames and
        # makes skbs of them), the queue-mapping redirect on its tc ingress.
        self.ip(g, "link", "set", "dev", "h1", "xdpdrv", "object",
                str(BIN["xdp_pass"]), "program", "xdp_pass")
        # The queue-mapping redirect (bench/bpf/qmap.bpf.c): loaded and
        # pinned with its map, configured, then attached from the pin.
        L.ensure_bpffs()
        pin = Path(L.PIN_ROOT) / f"{self.tag}-qmap"
        pin.mkdir(parents=True, exist_ok=True)
        run(["bpftool", "prog", "load", str(BIN["qmap"]), str(pin / "prog"),
             "pinmaps", str(pin)])
        cfg = struct.pack("<II", self.ifindex(g, "q0"), NQ)
        run(["bpftool", "map", "update", "pinned", str(pin / "qmap_cfg"),
             "key", "0", "0", "0", "0", "value", *map(str, cfg)])
        self.nsx(g, "tc", "qdisc", "add", "dev", "h1", "clsact")
        self.nsx(g, "tc", "filter", "add", "dev", "h1", "ingress", "bpf",
                 "da", "pinned", str(pin / "prog"))
        L.ensure_bpffs()
        for path, dev in (("1q", "g0"), ("4q", "q0")):
            self.sinks[path] = L.LatencySink(g, dev, DPORT, MEAS_SPORT, drop=True,
                                             tag=f"xsk-{dev}").attach()

    def down(self):
        """Remove everything of ours (idempotent, never raises)."""
        for p in self.procs:
            try:
                stop_process(p, timeout=3)
            except Exception:           # noqa: BLE001 (best effort)
                pass
        self.procs = []
        for path in list(self.domains):
            self.detach(path)
        for s in self.sinks.values():
            try:
                s.detach()
            except Exception:           # noqa: BLE001
                pass
        self.sinks = {}
        for ns in self.made_ns:
            run(["ip", "netns", "del", ns], check=False)
        self.made_ns = []
        shutil.rmtree(Path(L.PIN_ROOT) / f"{self.tag}-qmap", ignore_errors=True)

    def leftovers(self):
        left = []
        names = set(run(["ip", "netns", "list"], check=False).stdout.split())
        for ns in (self.gen, self.dut):
            if ns in names:
                left.append(f"namespace {ns}")
        for d in Path(L.PIN_ROOT).glob(f"{self.tag}-*"):
            left.append(f"pins {d}")
        for d in Path("/sys/fs/bpf/nfslice").glob(f"*/{self.tag.replace('-', '')}*"):
            left.append(f"pins {d}")
        return left

    # ---- per path
    def dut_dev(self, path):
        return "d0" if path == "1q" else "dq"

    def domain_name(self, path):
        return f"{self.tag.replace('-', '')}{path}"

    def attach(self, path):
        name = self.domain_name(path)
        self.nsx(self.dut, str(BIN["nfslice"]), "attach", "--name", name,
                 "--slots", self.a.slots, self.dut_dev(path))
        self.domains[path] = name
        return name

    def detach(self, path):
        name = self.domains.pop(path, None)
        if name:
            self.nsx(self.dut, str(BIN["nfslice"]), "detach", "--name", name,
                     check=False)

    def slice_stats(self, path):
        name = self.domains.get(path)
        if not name:
            return None
        out = self.nsx(self.dut, str(BIN["nfslice"]), "stats", "--name", name,
                       "--json").stdout
        return json.loads(out.strip().splitlines()[-1])

    def pktgen_cmd(self, path, size, rate, seconds, flows=64, sport=SPORT,
                   stamp=False):
        """nfslice-pktgen in the generator namespace; rate 0 = unpaced for
        whole SECONDS, else --count rate x seconds."""
        ad = ADDR[path]
        dev = "g0" if path == "1q" else "h0"
        cmd = ["ip", "netns", "exec", self.gen, str(BIN["pktgen"]), "--dev", dev,
               "--size", size, "--flows", flows, "--src-port", sport,
               "--dst-port", DPORT, "--src-ip", ad["src"], "--dst-ip", ad["dst"],
               "--cpu", self.a.gen_cpu, "--peer-xdp", "off", "--json"]
        if path == "4q":
            cmd += ["--dst-mac", self.mac["dq"]]
        if rate:
            cmd += ["--rate", int(rate), "--count", max(1, int(rate * seconds)),
                    "--burst-us", self.a.gen_burst_us]
        else:
            cmd += ["--duration", max(1, round(seconds))]
        if stamp:
            cmd.append("--stamp")
        return [str(x) for x in cmd]

    def sink_stats(self, path):
        """The sink's counters only (fast: no histogram)."""
        st = L._bpftool_json(["map", "dump", "pinned",
                              self.sinks[path].dir + "/maps/lat_stats"])
        v = st[0].get("value", st[0].get("formatted", {}).get("value"))
        if isinstance(v, dict):
            return {k: int(v[k]) for k in L.STATS_FIELDS}
        raw = bytes(int(x, 16) for x in v)
        return {k: int.from_bytes(raw[8 * i:8 * i + 8], "little")
                for i, k in enumerate(L.STATS_FIELDS)}


def run_gens(rig, cmds, timeout):
    """Start the generator commands together, wait; their JSON reports."""
    ps = []
    try:
        for c in cmds:
            p = start_process(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            rig.procs.append(p)
            ps.append(p)
        out = []
        for p in ps:
            try:
                so, se = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                stop_process(p)
                so, se = p.communicate()
            if p.returncode != 0:
                raise RuntimeError(f"pktgen exit {p.returncode}: {se.strip()[-400:]}")
            if not so.strip():
                raise RuntimeError(f"pktgen printed nothing: {se.strip()[-400:]}")
            lines = [x for x in so.splitlines() if x.startswith("{")]
            out.append(json.loads(lines[-1]))
        return out
    finally:
        for p in ps:
            if p.poll() is None:
                stop_process(p)
            if p in rig.procs:
                rig.procs.remove(p)


# ---------------------------------------------------------- nfslice-nf --
class NF:
    """One nfslice-nf process and its JSON reports (one per second)."""

    def __init__(self, rig, path, arch, nf, workers, domain=None, extra=()):
        a = rig.a
        self.rig, self.path, self.arch, self.nf = rig, path, arch, nf
        self.workers = workers
        self.args = [str(BIN["nf"]), "--dev", rig.dut_dev(path), "--workers",
                     str(workers), "--rx", arch, "--nf", nf, "--ax", str(a.ax),
                     "--bx", str(a.bx), "--cpu", str(a.nf_cpu), "--json",
                     "--stats-interval", str(REPORT_S), *map(str, extra)]
        if a.busy_poll:
            self.args += ["--busy-poll", str(a.busy_poll)]
        if domain:
            self.args += ["--name", domain]
        self.p = None
        self.reports = []           # (arrival monotonic, report dict)
        self.stderr = []
        self.bad_lines = []
        self.cv = threading.Condition()
        self.starts = 0

    def command(self):
        return " ".join(["ip netns exec", self.rig.dut, "taskset -c",
                         str(self.rig.a.nf_cpu)] + self.args)

    def _read(self, f, sink, parse):
        for line in f:
            line = line.rstrip("\n")
            with self.cv:
                if parse:
                    try:
                        sink.append((time.monotonic(), json.loads(line)))
                    except json.JSONDecodeError:
                        self.bad_lines.append(line)
                else:
                    sink.append(line)
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def start(self, tries=6):
        """Start it and wait for its first report. EBUSY right after the
        previous socket on the queue closed: retry (docs/platform.md)."""
        for i in range(tries):
            self.starts += 1
            self.reports, self.stderr = [], []
            self.p = start_process(["ip", "netns", "exec", self.rig.dut, "taskset", "-c",
                                    str(self.rig.a.nf_cpu), *self.args],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.rig.procs.append(self.p)
            for f, s, j in ((self.p.stdout, self.reports, True),
                            (self.p.stderr, self.stderr, False)):
                threading.Thread(target=self._read, args=(f, s, j),
                                 daemon=True).start()
            try:
                self.wait_report(0, timeout=8)
                return self
            except NFError as e:
                busy = any("busy" in x.lower() for x in self.stderr)
                self.kill()
                if busy and i + 1 < tries:
                    time.sleep(0.5)
                    continue
                raise e
        raise AssertionError("unreachable")

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def wait_report(self, after, timeout=4.0):
        """The first report that arrived after monotonic time AFTER."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for t, r in self.reports:
                    if t > after:
                        return t, r
                if not self.alive() and self.p.poll() is not None:
                    # give the readers a moment to collect the last lines
                    self.cv.wait(0.2)
                    for t, r in self.reports:
                        if t > after:
                            return t, r
                    raise NFError(f"nfslice-nf exited ({self.p.returncode}) "
                                  "without the expected report",
                                  self.evidence())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise NFError(f"nfslice-nf sent no report for {timeout:g} s "
                                  "(--stats-interval 1)", self.evidence())
                self.cv.wait(min(left, 0.1))

    def latest(self):
        with self.cv:
            return self.reports[-1] if self.reports else (0, None)

    def evidence(self):
        return {"command": self.command(), "returncode": self.p.poll() if self.p else None,
                "stderr": self.stderr[-20:], "last_reports": [r for _, r in self.reports[-2:]],
                "unparsed_stdout": self.bad_lines[-5:]}

    def cpu_ns(self):
        """(run time of all threads in ns from schedstat, of the workers
        only (threads other than the main one), utime+stime in ns)."""
        pid = self.p.pid
        tot = wrk = 0
        try:
            for t in os.listdir(f"/proc/{pid}/task"):
                try:
                    ns = int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
                except (OSError, ValueError):
                    continue
                tot += ns
                if int(t) != pid:
                    wrk += ns
            f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            ticks = int(f[11]) + int(f[12])       # utime, stime (fields 14, 15)
        except (OSError, ValueError, IndexError):
            return None
        return {"sched_ns": tot, "sched_workers_ns": wrk,
                "utime_stime_ns": ticks * cpustat.NS_PER_TICK}

    def kill(self):
        if self.p is not None:
            stop_process(self.p)
            if self.p in self.rig.procs:
                self.rig.procs.remove(self.p)

    def stop(self):
        """SIGTERM, wait (it drains); its final report and exit status."""
        rc = stop_process(self.p, timeout=8)
        if self.p in self.rig.procs:
            self.rig.procs.remove(self.p)
        time.sleep(0.05)
        with self.cv:
            final = [r for _, r in self.reports if r.get("final")]
        return {"returncode": rc, "final": final[-1] if final else None,
                "stderr": self.stderr[-20:], "reports": len(self.reports),
                "unparsed_stdout": self.bad_lines[-5:]}


def rdelta(r0, r1):
    """Counter differences between two nfslice-nf reports."""
    d = {"total": {k: r1["total"][k] - r0["total"][k] for k in r1["total"]},
         "per_worker_rx": [w1["rx"] - w0["rx"] for w0, w1 in
                           zip(r0["per_worker"], r1["per_worker"])],
         "kernel": {k: r1["kernel"][k] - r0["kernel"][k] for k in r1["kernel"]},
         "steer": {k: r1["steer"][k] - r0["steer"][k] for k in r1["steer"]},
         "dt_s": r1["elapsed_s"] - r0["elapsed_s"]}
    return d


# ------------------------------------------------------------- trials --
class Session:
    """Trials against one running nfslice-nf; every trial is recorded."""

    def __init__(self, rig, a, nf, key, trials, problems):
        self.rig, self.a, self.nf, self.key = rig, a, nf, key
        self.trials, self.problems = trials, problems
        self.mine = []

    def trial(self, kind, gens, seconds, delivered="rx", extra=None,
              hist=False, span=False):
        """GENS: [(label, pktgen command)] started together right after a
        report; the trial closes with the first report >= DRAIN_S after the
        traffic, or (SPAN) with the second, recording the one in between
        (live working set). DELIVERED: "rx" (the NF's) or "sink"."""
        nf, path = self.nf, self.nf.path
        t0, r0 = nf.latest()
        if time.monotonic() - t0 > 0.3:
            t0, r0 = nf.wait_report(time.monotonic())
        c0, s0 = nf.cpu_ns(), cpustat.snapshot()
        k0 = self.rig.sinks[path].snapshot() if hist else None
        sk0 = self.rig.sink_stats(path)
        sl0 = self.rig.slice_stats(path)
        start = time.monotonic()
        res = run_gens(self.rig, [c for _, c in gens], timeout=seconds + 20)
        end = time.monotonic()
        live = None
        t1, r1 = nf.wait_report(end + DRAIN_S)
        if span:
            mids = [r for t, r in nf.reports if t0 < t < end]
            live = mids[-1]["working_set"] if mids else None
        c1, s1 = nf.cpu_ns(), cpustat.snapshot()
        sk1 = self.rig.sink_stats(path)
        k1 = self.rig.sinks[path].snapshot() if hist else None
        sl1 = self.rig.slice_stats(path)
        d = rdelta(r0, r1)
        sent = sum(g["transmitted"] for g in res)
        sink = {k: sk1[k] - sk0[k] for k in ("packets", "other", "stamped",
                                              "csum_ok", "csum_bad", "passed")}
        got = d["total"]["rx"] if delivered == "rx" else sink["packets"] + sink["other"]
        offered = sum(g.get("offered_pps") or 0 for g in res)
        achieved = sum(g["achieved_pps"] for g in res)
        rec = {**self.key, "kind": kind, "t_start": round(start, 3),
               "seconds": seconds, "offered_pps": offered or None,
               "achieved_pps": achieved, "sent": sent, "delivered": got,
               "delivered_by": delivered, "loss": sent - got,
               "loss_frac": (sent - got) / sent if sent else None,
               "delivered_pps": got / max(max(g["elapsed_s"] for g in res), 1e-9),
               "lost_before_nf": sent - d["steer"]["steered"],
               "gens": [{"label": lab, **{k: g.get(k) for k in (
                   "offered_pps", "achieved_pps", "transmitted", "elapsed_s",
                   "driver_sent", "driver_dropped", "redirect_errors", "size",
                   "flows", "src_port")}} for (lab, _), g in zip(gens, res)],
               "nfc": d, "sink": sink, "report_elapsed": [r0["elapsed_s"], r1["elapsed_s"]],
               "working_set_after": r1["working_set"], "working_set_live": live,
               **(extra or {})}
        rec["gen_kept_up"] = (not offered) or achieved >= GEN_KEEP_UP * offered
        cs = cpustat.delta(s0, s1, cpus=[self.a.gen_cpu, self.a.nf_cpu])
        rec["cpus"] = {str(c): {"busy_ns": r["busy_ns"], "nonidle_ns": r["nonidle_ns"],
                                "steal_ns": r["steal_ns"], "wall_ns": cs["wall_ns"]}
                       for c, r in cs["cpus"].items()}
        if c0 and c1:
            n = got or 1
            rec["cpu"] = {k: c1[k] - c0[k] for k in c0}
            rec["cpu_ns_per_pkt"] = {k: (c1[k] - c0[k]) / n for k in c0}
            # what else ran on the NF's CPU (other people's work on this
            # shared machine, softirqs): its non-idle time minus the NF's
            nfc = cs["cpus"][self.a.nf_cpu]
            rec["nf_cpu_other_frac"] = max(0, nfc["nonidle_ns"] - rec["cpu"]["sched_ns"]) \
                / max(cs["wall_ns"], 1)
        if sl0 and sl1:
            rec["slicer"] = {k: sl1[k] - sl0[k] for k in sl1
                             if isinstance(sl1[k], int) and k not in ("slots", "slots_busy")}
            rec["slicer"]["slots_busy_after"] = sl1.get("slots_busy")
        if hist:
            sd = L.snap_diff(k0, k1)
            rec["latency"] = L.summarize(sd)
            rec["latency"]["hist"] = {str(i): c for i, c in enumerate(sd["hist"]) if c}
        self.check(rec)
        self.trials.append(rec)
        self.mine.append(rec)
        return rec

    def check(self, rec):
        """Counter sanity: what nfslice-nf says against what was sent."""
        d, issues = rec["nfc"], []
        if d["total"]["rx"] > rec["sent"]:
            issues.append(f"nfslice-nf rx {d['total']['rx']} > frames sent {rec['sent']}")
        if d["steer"]["steered"] > rec["sent"]:
            issues.append(f"steered {d['steer']['steered']} > frames sent {rec['sent']}")
        # every steered frame is received, or dropped by the kernel for want
        # of a fill frame (rx_dropped) or of RX ring space (rx_ring_full)
        acc = (d["steer"]["steered"] - d["total"]["rx"] - d["kernel"]["rx_dropped"]
               - d["kernel"]["rx_ring_full"])
        rec["steered_minus_received_and_kernel_drops"] = acc
        # (a stalled worker's RX ring holds frames the kernel took: not
        # received, not dropped, until the stall ends)
        if abs(acc) > max(64, 0.001 * rec["sent"]) and rec["kind"] not in ("onset", "stalled"):
            issues.append(f"steered - rx - rx_dropped - rx_ring_full = {acc} "
                          f"(steered {d['steer']['steered']}, rx {d['total']['rx']}, "
                          f"rx_dropped {d['kernel']['rx_dropped']}, rx_ring_full "
                          f"{d['kernel']['rx_ring_full']}, rx_fill_empty "
                          f"{d['kernel']['rx_fill_empty']})")
        if self.nf.nf == "l2fwd" and d["total"]["tx"] != d["total"]["rx"] - d["total"]["stale"] \
                - d["total"]["too_big"] - d["total"]["no_room"] - d["total"]["tx_full"]:
            issues.append(f"l2fwd tx {d['total']['tx']} != rx {d['total']['rx']} minus "
                          "stale/too_big/no_room/tx_full")
        if rec["sink"]["csum_bad"]:
            issues.append(f"sink: {rec['sink']['csum_bad']} frames with a bad L4 checksum "
                          "(payload not intact)")
        for k in ("stale", "too_big", "no_room"):
            if d["total"][k]:
                issues.append(f"nfslice-nf {k} {d['total'][k]}")
        if issues:
            rec["issues"] = issues
            self.problems.append({"what": "counters", "trial": {k: rec[k] for k in
                                  ("path", "arch", "nf", "size", "sliced", "kind",
                                   "offered_pps", "sent")},
                                  "issues": issues, "command": self.nf.command()})

    def passes(self, rec):
        """Loss below 0.1%. Whether the generator made the offered rate is
        recorded, not required: the receive softirq (steering, the copy into
        the UMEM, the slicer) runs on the generator's CPU, so a receiver
        that costs more there slows the generator; what it delivers without
        loss is then its no-drop rate, flagged gen_kept_up false."""
        return N.passes(rec["loss_frac"])


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
                key = {"part": "slow", "path": path, "arch": arch, "nf": "rxdrop",
                       "size": 1514, "sliced": False, "flows": 64, "slow_us": us,
                       "workers": workers_for(a, path, arch)}
                log(f"slow: {path} {arch} worker 0 +{us} us per burst, "
                    f"{rate / 1e6:.3f} Mpps")
                try:
                    n, srec, s = open_session(rig, a, path, arch, "rxdrop", key, trials,
                                              problems, sessions,
                                              extra=["--slow", f"0:{us}"] if us else [])
                except NFError:
                    continue
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
            key = {"part": "traffic", "path": path, "arch": arch, "nf": "rxdrop",
                   "size": 1514, "sliced": False, "flows": 64,
                   "workers": workers_for(a, path, arch), "target_port": tport}
            log(f"traffic: {path} {arch}, {rate / 1e6:.3f} Mpps, worker-0 flow "
                f"shares {a.shares}")
            try:
                n, srec, s = open_session(rig, a, path, arch, "rxdrop", key, trials,
                                          problems, sessions)
            except NFError:
                continue
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
            key = {"part": "stall", "path": path, "arch": arch, "nf": "rxdrop",
                   "size": 1514, "sliced": False, "flows": 64,
                   "workers": workers_for(a, path, arch),
                   "stall": f"0:{STALL[0]}:{STALL[1]}"}
            log(f"stall: {path} {arch}, worker 0 stalls from {STALL[0]} ms, "
                f"{rate / 1e6:.3f} Mpps")
            try:
                n, srec, s = open_session(rig, a, path, arch, "rxdrop", key, trials,
                                          problems, sessions,
                                          extra=["--stall", f"0:{STALL[0]}:{STALL[1]}"])
            except NFError:
                continue
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
        lv = r.get("working_set_live") or {}
        row["ws_live_written"] = lv.get("written")
        row["ws_live_inflight"] = lv.get("inflight")
        row["ws_peak_posted"] = (r.get("working_set_after") or {}).get("peak_posted")
        lat = r.get("latency") or {}
        row["p50_us"] = lat.get("p50_us")
        row["p99_us"] = lat.get("p99_us")
        out.append(row)
    return out


# -------------------------------------------------------------- plots --
COLORS = {"privring": "tab:blue", "smallpriv": "tab:cyan", "shring": "tab:red",
          "rxbisect": "tab:green"}


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
    fig.tight_layout()
    fig.savefig(path_png, dpi=110)
    plt.close(fig)


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
    fig.tight_layout()
    fig.savefig(path_png, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------- main --
def snapshot(tmp):
    """Copy the tools into TMP (BIN then points there) and describe them:
    size, mtime, sha256, and the checkout's HEAD."""
    import hashlib
    desc = {}
    for k, src in list(BIN.items()):
        dst = Path(tmp) / Path(src).name
        for _ in range(5):      # a rebuild may be writing it right now
            shutil.copy2(src, dst)
            if k in ("xdp_pass", "sink", "qmap") or run([str(dst), "--version"],
                                                check=False).returncode == 0:
                break
            time.sleep(1)
        else:
            raise RuntimeError(f"{src}: does not run ({dst} --version)")
        st = os.stat(dst)
        desc[k] = {"path": str(src), "bytes": st.st_size,
                   "mtime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.st_mtime)),
                   "sha256": hashlib.sha256(dst.read_bytes()).hexdigest()}
        if k not in ("xdp_pass", "sink", "qmap"):
            desc[k]["version"] = run([str(dst), "--version"], check=False).stdout.strip()
        BIN[k] = dst
    L.SINK_OBJ = str(BIN["sink"])
    head = run(["git", "-C", str(B.ROOT), "rev-parse", "HEAD"], check=False).stdout.strip()
    return {"tools": desc, "git_head": head}


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
    results = B.preflight("exp_xsk.py", a, argv, files=(NF_BIN, SINK_OBJ, QMAP_OBJ),
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
