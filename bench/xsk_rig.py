# SPDX-License-Identifier: GPL-2.0
"""exp_xsk.py's rig: the gen - DUT namespaces with the 1q and 4q paths,
nfslice-nf runs, the generators and a session's trials (bench/exp_xsk.py
says what is measured; bench/exp_nf.py builds on these). Constants and
units are exp_xsk.py's: frames/s, bytes, seconds."""
import json
import os
import shutil
import struct
import subprocess
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


# --------------------------------------------------------------- hash --
FLOWPORT = B.ROOT / "build" / "nfslice-bench-flowport"


def port_for_worker(src, dst, n, want, avoid=range(SPORT, SPORT + 64)):
    """The first UDP source port (from 20000) of a flow SRC -> DST:DPORT
    that the steering sends to worker WANT of N, outside AVOID: asked of
    build/nfslice-bench-flowport, which hashes with include/nfsl_flow.h."""
    cp = subprocess.run([str(FLOWPORT), src, dst, str(DPORT), str(n), str(want),
                         str(avoid.start), str(avoid.stop)],
                        capture_output=True, text=True, timeout=10)
    if cp.returncode != 0:
        raise RuntimeError(f"{FLOWPORT}: {cp.stderr.strip()}")
    return int(cp.stdout)


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
        # nsenter, not ip netns exec: the host's bpffs stays visible.
        run(L.nsenter(g, ["tc", "qdisc", "add", "dev", "h1", "clsact"]))
        run(L.nsenter(g, ["tc", "filter", "add", "dev", "h1", "ingress", "bpf",
                          "da", "pinned", str(pin / "prog")]))
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
                                "steal_ns": r["steal_ns"], "softirq_ns": r["softirq_ns"],
                                "wall_ns": cs["wall_ns"]}
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


# -------------------------------------------------------------- plots --
COLORS = {"privring": "tab:blue", "smallpriv": "tab:cyan", "shring": "tab:red",
          "rxbisect": "tab:green"}


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
