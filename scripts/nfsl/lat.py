# SPDX-License-Identifier: GPL-2.0
"""Helpers of the latency and store-sizing experiments (issue #3).

- Topology: scripts/nfsl/topo.py's handle on scripts/topo_inline.sh (or
  topo_park.sh): build, read its variables, tear down.
- LatencySink: load bench/bpf/latency_sink.bpf.c (build/.output/latency_sink.bpf.o)
  with bpftool, pin it under /sys/fs/bpf/nfsl_lat/TAG, attach it as native
  XDP on the receiving veth (nsenter into the namespace, so the host's bpffs
  stays visible), read its counters and latency histogram
  (`bpftool -j map dump pinned`), detach and unpin.
- PeerPass: userspace/nfslice-pktgen/xdp_pass.bpf.c's xdp_pass on the DUT's client-facing veth
  for unsliced runs (nfslice-pktgen's frames are XDP frames: the veth takes
  them only while its peer runs an XDP program; the slicer is one).
- pktgen / nfslice wrappers, histogram percentiles.

Everything runs as root and touches only the namespaces the topology scripts
create. Units: ns in the sink, us in reports, pps for rates.
"""
import json
import os
import shutil
import signal
import subprocess
import time

from nfsl import bench as benchlib
from nfsl import topo as nfsltopo

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "build")
PKTGEN = os.path.join(BUILD, "nfslice-pktgen")
NFSLICE = os.path.join(BUILD, "nfslice")
DELAY = os.path.join(BUILD, "nfslice-delay")
SINK_OBJ = os.path.join(BUILD, ".output", "latency_sink.bpf.o")
PASS_OBJ = os.path.join(BUILD, ".output", "xdp_pass.bpf.o")
PIN_ROOT = "/sys/fs/bpf/nfsl_lat"
LAT_BUCKETS = 1024
STATS_FIELDS = ("packets", "bytes", "stamped", "lat_sum", "lat_min", "lat_max",
                "negative", "seq_end", "csum_ok", "csum_bad", "len_min",
                "len_max", "other", "other_bytes", "passed", "first_ns",
                "last_ns")


def add_quiet_args(ap):
    """The --quiet / --quiet-wait options both experiments share: wait for a
    quiet machine before each point and record how busy it was."""
    ap.add_argument("--quiet", type=float, default=0.15,
                    help="before each point wait (at most --quiet-wait s) until no CPU is "
                         "busier than this fraction; recorded per point (default 0.15; <0: off)")
    ap.add_argument("--quiet-wait", type=float, default=None,
                    help="longest wait for a quiet machine per point, s (default 3, "
                         "quick 1)")


# run(ARGS, timeout=60, check=True): scripts/nfsl/topo.py's (RuntimeError on
# a non-zero exit when CHECK).
run = nfsltopo.run


def ensure_bpffs():
    if not os.path.ismount("/sys/fs/bpf"):
        run(["mount", "-t", "bpf", "bpf", "/sys/fs/bpf"])


def ensure_built():
    need = [PKTGEN, NFSLICE, DELAY, SINK_OBJ, PASS_OBJ]
    if not all(os.path.exists(f) for f in need):
        run(["make", "-C", ROOT, "all"], timeout=600)
    for f in need:
        if not os.path.exists(f):
            raise RuntimeError("%s missing after make" % f)


# --- topology -------------------------------------------------------------

# scripts/nfsl/topo.py's handle: Topology(KIND, PREFIX, UP_OPTS).up(), .env,
# .down() (the same class scripts/nfsl/bench.py and the tests use).
Topology = nfsltopo.Topo


def nsenter(ns, cmd):
    """CMD in network namespace NS without remounting /sys (host bpffs stays)."""
    return ["nsenter", "--net=/var/run/netns/%s" % ns] + cmd


# --- XDP programs on veths -------------------------------------------------

def _xdp_detach(ns, dev):
    run(nsenter(ns, ["ip", "link", "set", "dev", dev, "xdp", "off"]), check=False)


def _unpin(d):
    shutil.rmtree(d, ignore_errors=True)
    try:
        os.rmdir(PIN_ROOT)  # only when nothing else of ours is pinned
    except OSError:
        pass


def _bpftool_json(cmd):
    return json.loads(run(["bpftool", "-j"] + cmd).stdout or "null")


def _u64(v):
    """A value from bpftool -j: a number, or a list of hex byte strings."""
    if isinstance(v, int):
        return v
    if isinstance(v, list):
        return int.from_bytes(bytes(int(x, 16) for x in v), "little")
    return int(v)


class LatencySink:
    """bench/bpf/latency_sink.bpf.c on DEV in NS, measuring frames to DPORT
    (and from SPORT, 0 = any); DROP drops UDP/TCP frames after counting."""

    def __init__(self, ns, dev, dport, sport=0, drop=True, tag="sink"):
        self.ns, self.dev, self.dport, self.sport, self.drop = ns, dev, dport, sport, drop
        self.dir = os.path.join(PIN_ROOT, "%s-%s" % (ns, tag))

    def attach(self):
        ensure_bpffs()
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir + "/maps")
        run(["bpftool", "prog", "load", SINK_OBJ, self.dir + "/prog", "type", "xdp",
             "pinmaps", self.dir + "/maps"])
        cfg = (self.dport.to_bytes(2, "little") + self.sport.to_bytes(2, "little") +
               (1 if self.drop else 0).to_bytes(4, "little"))
        run(["bpftool", "map", "update", "pinned", self.dir + "/maps/lat_cfg",
             "key", "0", "0", "0", "0", "value"] + [str(b) for b in cfg])
        _xdp_detach(self.ns, self.dev)
        run(nsenter(self.ns, ["bpftool", "net", "attach", "xdpdrv", "pinned",
                              self.dir + "/prog", "dev", self.dev]))
        return self

    def detach(self):
        _xdp_detach(self.ns, self.dev)
        _unpin(self.dir)

    def __enter__(self):
        return self.attach()

    def __exit__(self, *a):
        self.detach()

    def snapshot(self):
        """{'stats': {field: int}, 'hist': [LAT_BUCKETS counts]}"""
        st = _bpftool_json(["map", "dump", "pinned", self.dir + "/maps/lat_stats"])
        v = st[0].get("value", st[0].get("formatted", {}).get("value"))
        if isinstance(v, dict):
            stats = {k: int(v[k]) for k in STATS_FIELDS}
        else:  # raw bytes
            raw = bytes(int(x, 16) for x in v)
            stats = {k: int.from_bytes(raw[8 * i:8 * i + 8], "little")
                     for i, k in enumerate(STATS_FIELDS)}
        hist = [0] * LAT_BUCKETS
        for e in _bpftool_json(["map", "dump", "pinned", self.dir + "/maps/lat_hist"]):
            hist[_u64(e["key"])] = _u64(e["value"])
        return {"stats": stats, "hist": hist, "t": time.time()}


def snap_diff(a, b):
    """Counters of what arrived between snapshots A and B (min/max fields are
    cumulative and left out)."""
    s = {k: b["stats"][k] - a["stats"][k] for k in
         ("packets", "bytes", "stamped", "lat_sum", "negative", "csum_ok",
          "csum_bad", "other", "other_bytes", "passed")}
    s["len_max"] = b["stats"]["len_max"]
    s["len_min"] = b["stats"]["len_min"]
    return {"stats": s, "hist": [y - x for x, y in zip(a["hist"], b["hist"])],
            "dt": b["t"] - a["t"]}


class PeerPass:
    """xdp_pass (userspace/nfslice-pktgen/xdp_pass.bpf.c) on DEV in NS: the unsliced runs' stand-in
    for the slicer, so both pay veth's XDP receive path alike."""

    def __init__(self, ns, dev, tag="pass"):
        self.ns, self.dev = ns, dev
        self.dir = os.path.join(PIN_ROOT, "%s-%s" % (ns, tag))

    def attach(self):
        ensure_bpffs()
        shutil.rmtree(self.dir, ignore_errors=True)
        run(["bpftool", "prog", "loadall", PASS_OBJ, self.dir, "type", "xdp"])
        _xdp_detach(self.ns, self.dev)
        run(nsenter(self.ns, ["bpftool", "net", "attach", "xdpdrv", "pinned",
                              self.dir + "/xdp_pass", "dev", self.dev]))
        return self

    def detach(self):
        _xdp_detach(self.ns, self.dev)
        _unpin(self.dir)


# --- histogram --------------------------------------------------------------

def bucket_low(i):
    """Lower bound (ns) of histogram bucket I (see latency_sink.bpf.c)."""
    if i < 64:
        return i
    m, sub = (i - 64) // 32 + 6, (i - 64) % 32
    return (32 + sub) << (m - 5)


def bucket_mid(i):
    return (bucket_low(i) + bucket_low(i + 1)) / 2.0


def percentile(hist, q):
    """Q-quantile (0..1) of HIST in ns (bucket midpoint), None if empty."""
    n = sum(hist)
    if n == 0:
        return None
    target, acc = q * n, 0
    for i, c in enumerate(hist):
        acc += c
        if acc >= target and c:
            return bucket_mid(i)
    return bucket_mid(len(hist) - 1)


def cdf_points(hist):
    """[(latency_us, cumulative fraction)] at each nonempty bucket's upper bound."""
    n = sum(hist)
    out, acc = [], 0
    for i, c in enumerate(hist):
        if c:
            acc += c
            out.append((bucket_low(i + 1) / 1000.0, acc / n))
    return out


def summarize(d):
    """Latency summary of a snap_diff in us."""
    h, s = d["hist"], d["stats"]
    n = sum(h)
    r = {"samples": n, "received": s["packets"], "csum_ok": s["csum_ok"],
         "csum_bad": s["csum_bad"], "load_received": s["other"],
         "load_rx_pps": s["other"] / d["dt"] if d["dt"] > 0 else 0}
    for name, q in (("p50", .5), ("p90", .9), ("p99", .99), ("p999", .999)):
        v = percentile(h, q)
        r[name + "_us"] = None if v is None else v / 1000.0
    r["mean_us"] = s["lat_sum"] / n / 1000.0 if n else None
    return r


# --- traffic and nfslice ----------------------------------------------------

def pktgen_cmd(ns, dev, cpu, size, rate, duration, dport=5201, sport=1024,
               flows=1, stamp=False, dst_ip=None, count=None):
    cmd = ["ip", "netns", "exec", ns, PKTGEN, "--dev", dev, "--size", str(size),
           "--rate", str(int(rate)), "--duration", str(int(duration)),
           "--dst-port", str(dport), "--src-port", str(sport), "--flows",
           str(flows), "--cpu", str(cpu), "--peer-xdp", "off", "--json"]
    if count:
        cmd += ["--count", str(int(count))]
    if stamp:
        cmd.append("--stamp")
    if dst_ip:
        cmd += ["--dst-ip", dst_ip]
    return cmd


def start(cmd):
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def finish(p, timeout):
    """Wait for P (started by start()); kill its group on timeout; JSON result."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        out, err = p.communicate(timeout=10)
    if p.returncode != 0:
        raise RuntimeError("pktgen failed (%d): %s" % (p.returncode, err.strip()))
    line = [l for l in out.splitlines() if l.startswith("{")]
    return json.loads(line[-1]) if line else {}


def kill_all(procs):
    for p in procs:
        if p and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def nfslice_attach(ns, ifs, name="lat", keep=16, slots=None, expiry=None,
                   nf_ports=None):
    """nfslice attach in NS to the interfaces IFS (a string, as SLICE_IFS);
    NF_PORTS: the topology's SLICE_NF_PORTS (park: the link to the NF
    server, through which sliced headers leave; without it the route check
    slices nothing there)."""
    cmd = ["ip", "netns", "exec", ns, NFSLICE, "attach", "--name", name,
           "--keep", str(keep)]
    if nf_ports and nf_ports.split():
        cmd += ["--nf-port", ",".join(nf_ports.split())]
    if slots:
        cmd += ["--slots", str(slots)]
    if expiry:
        cmd += ["--expiry", str(expiry)]
    run(cmd + ifs.split())


def nfslice_detach(ns, name="lat"):
    run(["ip", "netns", "exec", ns, NFSLICE, "detach", "--name", name], check=False)


def nfslice_stats(ns, name="lat"):
    out = run(["ip", "netns", "exec", ns, NFSLICE, "stats", "--name", name,
               "--json"]).stdout
    return json.loads(out.strip().splitlines()[-1])


def machine():
    """Machine description for results files (benchlib's, with the date)."""
    return {**benchlib.machine(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}


# --- background load --------------------------------------------------------

def _cpu_times():
    t = {}
    for l in open("/proc/stat"):
        if l.startswith("cpu") and l[3:4].isdigit():
            f = l.split()
            v = [int(x) for x in f[1:]]
            idle = v[3] + v[4] + (v[7] if len(v) > 7 else 0)  # idle, iowait, steal
            t[f[0]] = (sum(v[:8]), idle)
    return t


def cpu_busy(interval=0.3):
    """Non-idle fraction of every CPU over INTERVAL s (while we send nothing:
    what the rest of the machine is doing)."""
    a = _cpu_times()
    time.sleep(interval)
    b = _cpu_times()
    out = {}
    for k in b:
        tot = b[k][0] - a[k][0]
        out[k] = 1.0 - (b[k][1] - a[k][1]) / tot if tot > 0 else 0.0
    return out


def wait_quiet(limit=0.15, max_wait=3.0, interval=0.3):
    """Wait (at most about MAX_WAIT s) until no CPU is busier than LIMIT;
    return the last measurement (max busy fraction, per-CPU, seconds waited)."""
    t0 = time.time()
    while True:
        b = cpu_busy(interval)
        m = max(b.values()) if b else 0.0
        if m <= limit or time.time() - t0 >= max_wait:
            break
        time.sleep(0.2)
    return {"background_busy_max": m, "background_busy": b,
            "waited_s": round(time.time() - t0, 2)}
