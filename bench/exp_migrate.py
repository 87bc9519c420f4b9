#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Live upgrade, migration and checkpoint/restore of a slicing domain under
load, against the payloads outstanding (issue 10 "Performance"; UNO §5.2;
docs/benchmarks-migrate.md).

usage: bench/exp_migrate.py [--quick] [--runs N] [--out DIR] [--ops LIST]
                            [--held LIST] [--load-rate PPS] [--probe-rate PPS]
                            [--fill-rate PPS] [--release-rate PPS] [--steps] ...

Lab: scripts/nfsl/tap.py's nic_lab(), cli - nic - dut - nic - srv
(namespaces nfmg<pid>-*, removed at the end, also on an error or SIGTERM).
The DUT forwards (the NF); the domain starts inline in the DUT (d0, d1;
--ttl 0: no TTL scan of any nfsliced on the host touches it) and migration
moves it to the NIC (w0, w1, NF ports h0, h1), as test_manager.py does.

Per point (operation x held payloads N x run), the domain attached afresh:
1. Fill: N frames of --size B to UDP port 5202 from the client on CPU 1
   (nfslice-pktgen), so the DUT's slicer on CPU 1 parks them in CPU 1's
   partition (store: 2 x 1.25 N slots, at least 2 x 2048). The NF holds
   their headers: the DUT's forward chain drops sliced 5202 frames (nft
   counter "held") after tcpdump on d0 captured them. These N payloads are
   really outstanding: busy in the store, their headers in the NF's hands
   for the whole operation, and each must later be spliced.
2. Load: a paced stream (--load-rate, 16 flows, UDP 5201) and a stamped
   probe (--probe-rate, nfslice-pktgen --stamp) from the client, both on
   CPU 0, through the sliced path to bench/bpf/latency_sink.bpf.c on srv
   (one-way latency of each probe frame, checksum of every 5201 frame).
3. --before s of latency, then the operation (its commands pinned to
   --op-cpu), then --after s.
4. Release: the NF sends the N held headers on (a raw socket in the DUT,
   --release-rate, CPU 1): the domain's splicer on d1 must splice every
   one. For drain, during the operation, as soon as the old instance has
   stopped slicing (its drain waits for them: --wait 60000); for the other
   operations after it.
5. Load stopped, everything counted.

Operations (--ops):
  upgrade  nfslice upgrade --json: new slicer and splicer on the same store.
  drain    nfslice migrate --json (drain mode) DUT -> NIC.
  ckpt     checkpoint + restore with a detach and attach between them, as
           this build allows it under traffic: stop slicing (threshold
           65535), wait until the in-flight headers are back (busy = N),
           checkpoint to /dev/shm, detach, attach (threshold 65535, same
           geometry), restore, slice again (the old threshold). The window
           without any program is detach .. attach; without slicing, stop ..
           resume.
  copy     nfslice migrate --mode copy --json, if this build's migrate
           --help offers --mode (skipped otherwise, with a note). The
           release starts once the old instance is gone (detached without a
           drain), while the command follows the copies, so the NIC's
           splicer must splice every held payload from its copy under the
           old key; the command returns once no copy is left.
  hog      the control: no operation, a 600 ms busy loop on --op-cpu.

Measured per point: the command's wall time and its own phases (--json);
unsliced packets (the DUT's nft counter of 5201 frames forwarded without
DSCP 63: no instance sliced them) and the window they make at the offered
rate; state bytes (checkpoint file, bytes copied; 0 for upgrade and drain:
nothing moves); probe latency p50/p99/mean before, during and after;
loss: frames sent (both streams + fill) against frames received at srv,
with the drops counted on the way (every veth of the lab, pktgen's
driver drops, nfslice's stale/replayed/too_big/splice_failed); stale,
replayed, bad_token, csum_bad and truncated frames (the sink's smallest
frame below --size).

Outputs (--out, default bench/results/): migrate.json, migrate.csv,
migrate.png. Units: times in ms, latency in us, rates in pps, bytes.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nfsl import bench as B
from nfsl import lat as L
from nfsl import tap as nftap

DOMAIN = "mg"
LOAD_PORT, FILL_PORT = 5201, 5202
LOAD_SPORT, PROBE_SPORT, FILL_SPORT = 1024, 40000, 2048
HOLD = 65535            # a threshold no frame reaches: attached, not slicing
THRESHOLD = 256         # nfslice attach's default
GEN_CPU, FILL_CPU = 0, 1
OPS = ("upgrade", "drain", "ckpt", "copy", "hog")
HOG_MS = 600            # the control "hog": about an upgrade's time
# Counters of a domain summed over the instances a point used.
HARM = ("stale", "replayed", "too_big", "splice_failed", "dropped_gso")
KEPT = HARM + ("sliced", "spliced", "bad_token", "skipped_small", "skipped_full",
               "evicted", "slots_busy")

# The DUT's forward chain: counts what the NF sees, and holds (drops) the
# sliced fill headers tcpdump captured on d0.
NFT_DUT = f"""
table inet nfmg {{
  counter held {{}}
  counter sliced {{}}
  counter unsliced {{}}
  chain nf {{
    type filter hook forward priority -10; policy accept;
    udp dport {FILL_PORT} ip dscp 0x3f counter name held drop
    udp dport {LOAD_PORT} ip dscp 0x3f counter name sliced accept
    udp dport {LOAD_PORT} counter name unsliced accept
  }}
}}
"""

# The NF's release of the held headers, run in the DUT: IP packets of a
# pcap sent as they are (a raw socket: routed out of d1, through its
# splicer), paced, after SIGUSR1. Prints "ready N", then a JSON report
# (start: CLOCK_MONOTONIC s, as the benchmark's time.monotonic()).
RELEASE = r"""
import json, signal, socket, sys, time
from scapy.utils import RawPcapReader
pkts = [bytes(f)[14:] for f, _ in RawPcapReader(sys.argv[1])]
rate = int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
print("ready", len(pkts), flush=True)
signal.sigwait([signal.SIGUSR1])
t0, errors = time.monotonic(), 0
for i, p in enumerate(pkts):
    try:
        s.sendto(p, (socket.inet_ntoa(p[16:20]), 0))
    except OSError:
        errors += 1
    if rate and i % 32 == 31:
        d = t0 + (i + 1) / rate - time.monotonic()
        if d > 0:
            time.sleep(d)
print(json.dumps({"sent": len(pkts) - errors, "errors": errors, "start": t0,
                  "elapsed_s": time.monotonic() - t0}), flush=True)
"""


# Numeric options: name, type, default, meaning (with the unit).
NUMERIC_OPTS = (
    ("size", int, 1514, "frame bytes of every stream, without FCS"),
    ("load-rate", int, 20000, "paced load, pps, 16 flows"),
    ("probe-rate", int, 10000, "stamped probe stream, pps"),
    ("fill-rate", int, 50000, "rate of the frames whose headers the NF holds, pps"),
    ("release-rate", int, 50000,
     "rate at which the NF sends the held headers on, pps (0: as fast as it can)"),
    ("before", float, 2.0, "latency window before the operation, s"),
    ("after", float, 1.0, "latency window after the operation, s (after - before is the "
     "control: the variation without an operation)"),
    ("op-cpu", int, 1, "CPU the operation's commands run on (the streams are on CPU 0)"),
)


def int_list(ap, name, text):
    try:
        return [int(float(x)) for x in text.split(",")]
    except ValueError:
        ap.error(f"--{name} '{text}': comma-separated numbers expected")


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Times in ms, latency in us (one-way, probe stream), rates in pps, "
               "state in bytes. Needs root and 2 CPUs; builds and removes its own "
               "namespaces (nfmg<pid>-*). docs/benchmarks-migrate.md has the method "
               "and the results.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    B.add_common_args(ap, "smoke run: 1 repetition, held 1000 and 16000 (about 1 min)",
                      runs=(5, 1))
    ap.add_argument("--ops", default=",".join(OPS),
                    help="operations, comma-separated, of upgrade, drain, ckpt, copy, "
                         f"hog (default all; copy only where migrate --help offers "
                         f"--mode; hog: the control, a {HOG_MS} ms busy loop on "
                         "--op-cpu and nothing else)")
    ap.add_argument("--held", default=None,
                    help="payloads outstanding during the operation, comma-separated "
                         "(default 1000,16000,64000; quick 1000,16000)")
    for opt, typ, default, what in NUMERIC_OPTS:
        ap.add_argument(f"--{opt}", type=typ, default=default,
                        help=f"{what} (default {default})")
    ap.add_argument("--steps", action="store_true",
                    help="also take a migration apart: each command (attach, stop, "
                         "start, detach, upgrade) alone under the streams, its latency "
                         "and drops, between idle windows (2 rounds, ~20 s)")
    ap.add_argument("--gro", action="store_true",
                    help="GRO on every veth of the lab (a veth then keeps its NAPI "
                         "when an XDP program comes or goes; default: the kernel's "
                         "default, off, except on w0, which pktgen needs)")
    L.add_quiet_args(ap)
    a = ap.parse_args(argv)
    B.fill_defaults(a, held=("1000,16000,64000", "1000,16000"), quiet_wait=(3.0, 1.0))
    a.held = int_list(ap, "held", a.held)
    a.ops = [o for o in a.ops.split(",") if o]
    bad = [o for o in a.ops if o not in OPS]
    if bad:
        ap.error(f"--ops: unknown {','.join(bad)} (choose from {','.join(OPS)})")
    if a.runs < 1 or min(a.held) < 1 or max(a.held) > 200000:
        ap.error("--runs >= 1, --held 1 to 200000")
    if min(a.load_rate, a.probe_rate, a.fill_rate) < 100 or a.release_rate < 0:
        ap.error("--load-rate, --probe-rate, --fill-rate >= 100 pps, --release-rate >= 0")
    return a


def store_slots(held, ncpus):
    """Slots for HELD payloads parked by one CPU: its partition 1.25 x HELD
    (at least 2048), so the fill never wraps onto its own slots."""
    return ncpus * max(2048, -(-held * 5 // 4))


class MigLab:
    """nftap.nic_lab() under this run's prefix, the DUT's counters, the
    domain, the streams and the NF's holder."""

    def __init__(self, a, tmp):
        self.a, self.tmp = a, tmp
        self.lab = nftap.Lab("mg", L.NFSLICE)
        self.lab.tag = f"nfmg{os.getpid() % 100000}"   # not a test run's nfit-* name
        self.addr = nftap.NIC_ADDRS
        self.nic_ns = None

    def up(self):
        nftap.nic_lab(self.lab)
        # nfslice-pktgen's XDP frames need an XDP program or NAPI (GRO) on
        # the receiving veth; w0 has the new instance's slicer only after
        # a migration.
        for role, dev, _ in nftap.NIC_IFACES:
            if dev == "w0" or self.a.gro:
                self.lab.exec(role, "ethtool", "-K", dev, "gro", "on")
        self.lab.exec("dut", "nft", "-f", "-", input=NFT_DUT)
        self.nic_ns = self.lab.ns("nic")
        return self

    def down(self):
        return self.lab.destroy()

    # ---------------------------------------------------------- nfslice --
    def nfslice(self, role, *args, cpu=None, check=True, timeout=120):
        """build/nfslice ARGS in ROLE's namespace (on CPU); (wall ms, JSON
        of its last line or None, CompletedProcess)."""
        pre = ("taskset", "-c", str(cpu)) if cpu is not None else ()
        t0 = time.monotonic()
        cp = self.lab.exec(role, *pre, L.NFSLICE, *map(str, args), check=check,
                           timeout=timeout)
        ms = (time.monotonic() - t0) * 1e3
        line = (cp.stdout.strip().splitlines() or [""])[-1]
        return ms, json.loads(line) if line.startswith("{") else None, cp

    @staticmethod
    def lock_wait():
        """Wait until no nfslice command holds the host-wide lock (other
        sessions' attach and detach hold it for up to seconds on a shared
        host), so the command after it rarely waits; ms waited."""
        t0 = time.monotonic()
        B.run(["flock", "/run/nfslice.lock", "true"], timeout=120)
        return (time.monotonic() - t0) * 1e3

    def stats(self, role, cpu=None):
        """nfslice stats --json of the domain in ROLE, {} when none there."""
        _, js, _ = self.nfslice(role, "stats", "--name", DOMAIN, "--json", cpu=cpu,
                                check=False)
        return js or {}

    def threshold(self, role, cpu=None):
        """The domain's threshold in ROLE (None when it has none)."""
        _, js, _ = self.nfslice(role, "status", "--name", DOMAIN, "--json", cpu=cpu,
                                check=False)
        return (js or {}).get("threshold")

    def attach_args(self, slots, threshold=THRESHOLD):
        return ("attach", "--name", DOMAIN, "--keep", 16, "--ttl", 0, "--slots", slots,
                "--threshold", threshold)

    def reset(self, slots):
        """Both instances gone, the DUT's attached afresh (new counters)."""
        for role in ("dut", "nic"):
            self.nfslice(role, "detach", "--name", DOMAIN, check=False)
        self.nfslice("dut", *self.attach_args(slots), "d0", "d1")

    def nft(self):
        """{held, sliced, unsliced: packets} of the DUT's forward chain."""
        out = self.lab.exec("dut", "nft", "-j", "list", "counters", "table", "inet",
                            "nfmg").stdout
        return {o["counter"]["name"]: o["counter"]["packets"]
                for o in json.loads(out)["nftables"] if "counter" in o}

    # ---------------------------------------------------------- streams --
    def pktgen(self, cpu, rate, dport, sport, flows, stamp=False, count=None):
        """nfslice-pktgen from the client (latlib.start()); runs until
        COUNT frames or SIGINT."""
        dur = count / rate + 10 if count else 3600
        cmd = L.pktgen_cmd(self.lab.ns("cli"), "c0", cpu, self.a.size, rate, dur,
                           dport=dport, sport=sport, flows=flows, stamp=stamp,
                           dst_ip=self.addr["srv"], count=count)
        return L.start(cmd + ["--src-ip", self.addr["cli"]])

    def fill(self, n):
        """N frames whose sliced headers the NF holds: captured on d0
        (tcpdump), dropped by the forward chain. Returns (pcap path, frames
        captured, held by nft, fill pktgen report)."""
        pcap = self.tmp / "held.pcap"
        held0 = self.nft()["held"]
        dump = self.lab.spawn("dut", "tcpdump", "-i", "d0", "-Q", "in", "-n", "-B", "131072",
                              "-Z", "root", "-U", "-w", str(pcap), f"udp dst port {FILL_PORT} and ip[1] & 0xfc = 0xfc")
        B.nfsltopo.poll(lambda: "listening" in (dump.stderr.readline() or ""), 10,
                        "tcpdump listening")
        g = L.finish(self.pktgen(FILL_CPU, self.a.fill_rate, FILL_PORT, FILL_SPORT, 16,
                                 count=n), n / self.a.fill_rate + 30)
        held = B.nfsltopo.poll(lambda: (lambda h: h if h >= n * 0.999 else None)(
            self.nft()["held"] - held0), 5, f"{n} fill headers held", interval=0.1) \
            if n else 0
        # tcpdump hands a block of its ring over when it is full or a second
        # old: wait until the file holds every header (90 B with its record).
        B.nfsltopo.poll(lambda: pcap.stat().st_size >= 24 + 90 * held, 5,
                        "tcpdump writing the held headers", interval=0.05) \
            if held else None
        _, _, err = self.lab.stop(dump)
        cap = next((int(l.split()[0]) for l in err.splitlines() if "captured" in l), 0)
        return pcap, cap, held, g

    def releaser(self, pcap):
        """The NF's release of the held headers, loaded and waiting for
        SIGUSR1 (CPU 1)."""
        p = self.lab.spawn("dut", "taskset", "-c", str(FILL_CPU), nftap.PY, "-c", RELEASE,
                           str(pcap), str(self.a.release_rate))
        line = nftap.Lab.readline(p, 60).split()
        if not line or line[0] != "ready":
            raise RuntimeError(f"the release helper did not start: {p.stderr.read()[-500:]}")
        return p, int(line[1])

    def drops(self):
        """{"role/dev": packets dropped} of every veth of the lab."""
        return nftap.nic_lab_drops_by_iface(self.lab)


# --------------------------------------------------------- operations --
def op_upgrade(m, a, slots, held, release):
    lw = m.lock_wait()
    ms, js, _ = m.nfslice("dut", "upgrade", "--name", DOMAIN, "--json", cpu=a.op_cpu)
    return {"wall_ms": ms, "state_bytes": 0, "reported": js, "lock_wait_ms": lw,
            "phases_ms": {k[:-3]: js[k] / 1e6 for k in ("lock_ns", "load_ns",
                                                         "splicers_ns", "slicers_ns")},
            "parts": ["dut"]}


def migrate(m, a, release, *mode, when="stopped"):
    """nfslice migrate DUT -> NIC (MODE: extra options). With RELEASE (a
    started releaser), signal it once the old instance stopped slicing
    (WHEN "stopped") or is gone ("gone"), and keep the old instance's last
    counters."""
    lw = m.lock_wait()
    p = m.lab.spawn("dut", "taskset", "-c", str(a.op_cpu), L.NFSLICE, "migrate", "--name",
                    DOMAIN, "--to", m.nic_ns, "--nf-port", "h0,h1", "--wait", "60000",
                    "--json", *mode, "w0", "w1")
    t0, old, t_sw = time.monotonic(), {}, None
    while p.poll() is None:
        if release is not None and t_sw is None:
            th = m.threshold("dut", a.op_cpu)
            if (th == HOLD if when == "stopped" else th is None):
                t_sw = time.monotonic()
                m.lab.signal(release, signal.SIGUSR1)
        st = m.stats("dut", a.op_cpu)
        # Once the old instance is gone, stats answers with an error
        # object (copy mode follows its copies after that): keep the last
        # counters.
        old = st if "sliced" in st else old
        time.sleep(0.005)
    out, err = p.communicate()
    ms = (time.monotonic() - t0) * 1e3
    m.lab.procs.remove(p)
    if p.returncode != 0:
        raise RuntimeError(f"migrate failed ({p.returncode}): {err[-800:]}")
    js = json.loads(out.strip().splitlines()[-1])
    r = {"wall_ms": ms, "reported": js, "old_last": old,
         "lock_wait_ms": lw,
         "parts": ["dut_old", "nic"],
         "phases_ms": {k[:-3]: js[k] / 1e6 for k in ("attach_ns", "unsliced_ns",
                                                      "drain_ns", "export_ns",
                                                      "import_ns", "detach_ns",
                                                      "key_old_ns") if k in js}}
    if t_sw is not None:
        r["release_after_ms"] = (t_sw - t0) * 1e3
    return r


def op_drain(m, a, slots, held, release):
    r = migrate(m, a, release)
    r["state_bytes"] = 0      # drain copies nothing
    return r


def op_copy(m, a, slots, held, release):
    r = migrate(m, a, release, "--mode", "copy", when="gone")
    js = r["reported"]
    r["state_bytes"] = next((js[k] for k in ("bytes", "bytes_copied", "state_bytes")
                             if k in js), None)
    return r


def op_ckpt(m, a, slots, held, release):
    """Checkpoint + restore across a detach and an attach, in the order
    that loses nothing under traffic (module docstring)."""
    ph, lw, t = {}, {}, time.monotonic()

    def step(name, *args):
        lw[name] = m.lock_wait()
        ms, js, _ = m.nfslice("dut", *args, cpu=a.op_cpu)
        ph[name] = ms
        return js

    f = m.tmp / "domain.ckpt"
    step("stop", "set", "--name", DOMAIN, "--threshold", HOLD)
    t1 = time.monotonic()
    B.nfsltopo.poll(lambda: m.stats("dut", a.op_cpu).get("slots_busy", 0) <= held, 5,
                    "in-flight headers back", interval=0.002)
    ph["quiesce"] = (time.monotonic() - t1) * 1e3
    ck = step("checkpoint", "checkpoint", "--name", DOMAIN, "--file", f, "--json")
    old = m.stats("dut")
    step("detach", "detach", "--name", DOMAIN)
    step("attach", *m.attach_args(slots, HOLD), "d0", "d1")
    rs = step("restore", "restore", "--name", DOMAIN, "--file", f, "--json")
    step("resume", "set", "--name", DOMAIN, "--threshold", THRESHOLD)
    f.unlink()
    wall = (time.monotonic() - t) * 1e3
    return {"wall_ms": wall, "state_bytes": ck["bytes"], "lock_wait_ms": sum(lw.values()),
            "own_ms": wall - sum(lw.values()), "lock_waits_ms": lw,
            "reported": {"checkpoint": ck, "restore": rs}, "phases_ms": ph,
            "old_last": old, "parts": ["dut_old", "dut"],
            "no_program_ms": ph["detach"] + ph["attach"],
            # stop done .. resume done, the lock waits in it included
            "no_slicing_ms": wall - lw["stop"] - ph["stop"]}


def op_hog(m, a, slots, held, release):
    """The control: no operation, a busy loop on the operation's CPU for
    HOG_MS (what any command's CPU time does to the streams' latency on
    this 2-vCPU machine)."""
    t0 = time.monotonic()
    m.lab.exec("dut", "taskset", "-c", str(a.op_cpu), nftap.PY, "-c",
               f"import time\nt = time.monotonic() + {HOG_MS / 1e3}\n"
               "while time.monotonic() < t:\n    pass\n")
    return {"wall_ms": (time.monotonic() - t0) * 1e3, "state_bytes": 0, "parts": ["dut"],
            "phases_ms": {}}


# --steps: a migration taken apart, one command at a time, each between two
# sink snapshots, with 0.5 s without a command ("idle") around them.
STEPS = (
    ("idle", None, ()),
    ("nic attach (holding)", "nic", ("attach", "--name", DOMAIN, "--threshold", HOLD,
                                     "--nf-port", "h0,h1", "--ttl", 0, "w0", "w1")),
    ("idle", None, ()),
    ("dut stop", "dut", ("set", "--name", DOMAIN, "--threshold", HOLD)),
    ("nic start", "nic", ("set", "--name", DOMAIN, "--threshold", THRESHOLD)),
    ("idle", None, ()),
    ("dut detach", "dut", ("detach", "--name", DOMAIN)),
    ("idle", None, ()),
    ("dut attach", "dut", ("attach", "--name", DOMAIN, "--ttl", 0, "d0", "d1")),
    ("nic detach", "nic", ("detach", "--name", DOMAIN)),
    ("idle", None, ()),
    ("dut upgrade", "dut", ("upgrade", "--name", DOMAIN)),
)


def steps(m, a, rounds=2):
    """Latency and drops of each step of STEPS under the streams (no held
    payloads): where a migration's cost comes from. Returns the rows."""
    m.reset(store_slots(1, 2))
    sink = L.LatencySink(m.lab.ns("srv"), "s0", LOAD_PORT, 0, drop=True,
                         tag=m.lab.tag).attach()
    procs, rows = [], []
    try:
        procs = [m.pktgen(GEN_CPU, a.load_rate, LOAD_PORT, LOAD_SPORT, 16),
                 m.pktgen(GEN_CPU, a.probe_rate, LOAD_PORT, PROBE_SPORT, 1, stamp=True)]
        time.sleep(1)
        for rnd in range(rounds):
            for name, role, cmd in STEPS:
                d0, s0, t0 = m.drops(), sink.snapshot(), time.monotonic()
                if role:
                    m.nfslice(role, *cmd, cpu=a.op_cpu)
                else:
                    time.sleep(0.5)
                ms = (time.monotonic() - t0) * 1e3
                s1, d1 = sink.snapshot(), m.drops()
                r = {"round": rnd, "step": name, "ms": ms, **lat(s0, s1),
                     "drops": {k: v - d0[k] for k, v in d1.items() if v - d0[k]}}
                rows.append(r)
                print(f"steps {rnd} {name:22s} {ms:7.1f} ms: p50 {fmt(r['p50_us'])} p99 "
                      f"{fmt(r['p99_us'])} p99.9 {fmt(r['p999_us'])} us ({r['samples']} "
                      f"samples), drops {r['drops']}", flush=True)
    finally:
        L.kill_all(procs)
        sink.detach()
    return rows


OP_RUN = {"upgrade": op_upgrade, "drain": op_drain, "ckpt": op_ckpt, "copy": op_copy,
          "hog": op_hog}


# --------------------------------------------------------------- point --
def lat(a0, a1):
    """Probe latency between two sink snapshots (latlib.summarize, us)."""
    s = L.summarize(L.snap_diff(a0, a1))
    return {k: s[k] for k in ("samples", "p50_us", "p99_us", "p999_us", "mean_us")}


def point(m, a, op, n, run, ncpu):
    slots = store_slots(n, ncpu)
    m.reset(slots)
    bg = L.wait_quiet(a.quiet, a.quiet_wait) if a.quiet >= 0 else {}
    sink = L.LatencySink(m.lab.ns("srv"), "s0", LOAD_PORT, 0, drop=True,
                         tag=m.lab.tag).attach()
    procs, rel = [], None
    try:
        drops0, s0 = m.drops(), sink.snapshot()
        pcap, cap, held, gfill = m.fill(n)
        busy_filled = m.stats("dut")["slots_busy"]
        rel, nrel = m.releaser(pcap)
        procs = [m.pktgen(GEN_CPU, a.load_rate, LOAD_PORT, LOAD_SPORT, 16),
                 m.pktgen(GEN_CPU, a.probe_rate, LOAD_PORT, PROBE_SPORT, 1, stamp=True)]
        time.sleep(0.5)                                   # streams settled
        b0 = sink.snapshot()
        time.sleep(a.before)
        dr0, nft0 = m.drops(), m.nft()
        b1 = sink.snapshot()
        # HELD: the payloads outstanding, as the store counts them.
        # drain and copy release the held headers during the operation.
        inside = op in ("drain", "copy")
        r = OP_RUN[op](m, a, slots, busy_filled, rel if inside else None)
        b2, nft1, dr1 = sink.snapshot(), m.nft(), m.drops()
        time.sleep(a.after)
        b3 = sink.snapshot()
        if not inside:
            m.lab.signal(rel, signal.SIGUSR1)
        rep_rel = m.lab.finish(rel, 120)
        rel = None
        settle_fill(sink, s0, gfill.get("transmitted", 0))
        for p in procs:
            os.killpg(p.pid, signal.SIGINT)
        gens = [L.finish(p, 30) for p in procs]
        time.sleep(0.3)
        s1 = sink.snapshot()
        drops = {k: v - drops0[k] for k, v in m.drops().items() if v - drops0[k]}
    finally:
        L.kill_all(procs)
        if rel is not None:
            m.lab.stop(rel)
        sink.detach()
    # Counters of every instance the point used, summed.
    parts = {"dut": m.stats("dut"), "nic": m.stats("nic"), "dut_old": r.get("old_last", {})}
    inst = [parts[k] for k in r["parts"] if parts.get(k)]
    cnt = {k: sum(p.get(k, 0) for p in inst) for k in KEPT}
    d = L.snap_diff(s0, s1)["stats"]
    sent = sum(g.get("transmitted", 0) for g in gens) + gfill.get("transmitted", 0)
    driver = sum(g.get("driver_dropped", 0) or 0 for g in gens + [gfill])
    received = d["packets"] + d["other"]
    harm = sum(cnt[k] for k in HARM)
    unsliced = nft1["unsliced"] - nft0["unsliced"]
    rate = a.load_rate + a.probe_rate
    res = {
        "op": op, "held": n, "run": run, "slots": slots, **bg,
        "wall_ms": r["wall_ms"], "phases_ms": r.get("phases_ms", {}),
        "reported": r.get("reported"), "state_bytes": r.get("state_bytes"),
        "release_after_ms": r.get("release_after_ms"), "lock_wait_ms": r.get("lock_wait_ms"),
        "own_ms": r.get("own_ms", r["wall_ms"]),
        "no_program_ms": r.get("no_program_ms"), "no_slicing_ms": r.get("no_slicing_ms"),
        "held_nft": held, "held_captured": cap, "held_released": rep_rel.get("sent"),
        "held_loaded": nrel, "busy_after_fill": busy_filled,
        "release_s": rep_rel.get("elapsed_s"),
        "unsliced_pkts": unsliced, "unsliced_ms": unsliced / rate * 1e3,
        "lat_before": lat(b0, b1), "lat_during": lat(b1, b2), "lat_after": lat(b2, b3),
        "sent": sent, "received": received, "lost": sent - received,
        "drops_counted": sum(drops.values()) + driver + harm, "veth_drops": drops,
        # The operation's window (from just before it to just after), and
        # what came after it: the release of the held headers (for drain
        # and copy it is inside the operation) and the streams' end.
        "veth_drops_before": sum(dr0.values()) - sum(drops0.values()),
        "veth_drops_op": sum(dr1.values()) - sum(dr0.values()),
        "veth_drops_after": sum(drops.values()) - sum(dr1.values()) + sum(drops0.values()),
        "driver_drops": driver, "holder_missed": held - cap,
        "csum_bad": d["csum_bad"], "truncated": d["len_min"] < a.size if d["packets"] else None,
        "len_min": d["len_min"], "counters": cnt,
        "instances": {k: {c: parts[k].get(c, 0) for c in KEPT} for k in r["parts"]
                      if parts.get(k)},
        "load_sent": gens[0].get("transmitted"), "probe_sent": gens[1].get("transmitted"),
        "fill_sent": gfill.get("transmitted"),
    }
    res["lost_unaccounted"] = res["lost"] - res["drops_counted"] - max(0, res["holder_missed"])
    res["added_p99_us"] = sub(res["lat_during"]["p99_us"], res["lat_before"]["p99_us"])
    res["added_mean_us"] = sub(res["lat_during"]["mean_us"], res["lat_before"]["mean_us"])
    # The same difference with no operation running (after - before): the
    # machine's own variation, against which "added" must be read.
    res["control_p99_us"] = sub(res["lat_after"]["p99_us"], res["lat_before"]["p99_us"])
    res["skipped_full"] = cnt["skipped_full"]
    return res


def settle_fill(sink, s0, n):
    """Wait until N fill frames reached the sink since snapshot S0 (the held
    ones released and spliced), or their count stood still for 1 s (some
    were lost: the accounting says where); at most 20 s."""
    last, t_last, t_end = -1, time.monotonic(), time.monotonic() + 20
    while time.monotonic() < t_end:
        got = L.snap_diff(s0, sink.snapshot())["stats"]["other"]
        if got >= n:
            return
        if got != last:
            last, t_last = got, time.monotonic()
        elif time.monotonic() - t_last > 1:
            return
        time.sleep(0.05)


def sub(x, y):
    return x - y if x is not None and y is not None else None


def say(r):
    lb, ld = r["lat_before"], r["lat_during"]
    print(f"run {r['run']} {r['op']:7s} held {r['held']:6d}: {r['wall_ms']:8.1f} ms "
          f"{json.dumps({k: round(v, 1) for k, v in r['phases_ms'].items()})} "
          f"unsliced {r['unsliced_pkts']} ({r['unsliced_ms']:.2f} ms) state {r['state_bytes']} B; "
          f"p99 {fmt(lb['p99_us'])} -> {fmt(ld['p99_us'])} us ({ld['samples']} samples), "
          f"mean {fmt(lb['mean_us'])} -> {fmt(ld['mean_us'])}; lost {r['lost']} "
          f"(counted {r['drops_counted']}: veth {r['veth_drops_op']} in the operation's "
          f"window, {r['veth_drops_after']} after it; holder missed {r['holder_missed']}), "
          f"stale {r['counters']['stale']} replayed {r['counters']['replayed']} "
          f"csum_bad {r['csum_bad']} truncated {r['truncated']}; "
          f"held {r['held_nft']} captured {r['held_captured']} released "
          f"{r['held_released']}; bg {100 * r.get('background_busy_max', 0):.0f}%",
          flush=True)


def fmt(v, f="{:.1f}"):
    return "-" if v is None else f.format(v)


# ------------------------------------------------------------ summary --
SUMMARY = ("wall_ms", "own_ms", "lock_wait_ms", "unsliced_pkts", "unsliced_ms",
           "no_program_ms", "no_slicing_ms", "state_bytes", "added_p99_us", "added_mean_us",
           "control_p99_us", "lost", "lost_unaccounted", "veth_drops_op", "veth_drops_after",
           "skipped_full")


def summarize(points, a):
    rows = []
    for op in a.ops:
        for n in a.held:
            pts = [p for p in points if p["op"] == op and p["held"] == n]
            if not pts:
                continue
            row = {"op": op, "held": n, "runs": len(pts), "slots": pts[0]["slots"]}
            for k in SUMMARY:
                row[k] = B.spread([p[k] for p in pts])
            for w in ("before", "during", "after"):
                for q in ("p50_us", "p99_us", "mean_us"):
                    row[f"{w}_{q}"] = B.median([p[f"lat_{w}"][q] for p in pts])
            row["phases_ms"] = {k: B.median([p["phases_ms"].get(k) for p in pts])
                                for k in pts[0]["phases_ms"]}
            for k in ("stale", "replayed", "bad_token"):
                row[k] = sum(p["counters"][k] for p in pts)
            row["csum_bad"] = sum(p["csum_bad"] for p in pts)
            row["truncated_points"] = sum(1 for p in pts if p["truncated"])
            row["lost_total"] = sum(p["lost"] for p in pts)
            row["drops_op_total"] = sum(p["veth_drops_op"] for p in pts)
            row["sent_total"] = sum(p["sent"] for p in pts)
            rows.append(row)
    return rows


def print_summary(rows):
    def m(row, k, f="{:.1f}"):
        return fmt(row[k]["median"] if isinstance(row[k], dict) else row[k], f)
    B.print_table(
        "medians over the runs (latency: probe, one-way, us; added = during - before, "
        "control = after - before, per run; lost: all runs, in the operation's window)",
        ["op", "held", "time ms", "unsliced pkts", "unsliced ms", "state B",
         "p50 before/during", "p99 before/during", "p99 added", "p99 control",
         "mean added", "lost (op)", "stale/replayed"],
        [[r["op"], r["held"], m(r, "wall_ms"), m(r, "unsliced_pkts", "{:.0f}"),
          m(r, "unsliced_ms", "{:.2f}"), m(r, "state_bytes", "{:.0f}"),
          f"{m(r, 'before_p50_us')}/{m(r, 'during_p50_us')}",
          f"{m(r, 'before_p99_us')}/{m(r, 'during_p99_us')}", m(r, "added_p99_us"),
          m(r, "control_p99_us"), m(r, "added_mean_us"),
          f"{r['lost_total']} ({r['drops_op_total']})",
          f"{r['stale']}/{r['replayed']}"] for r in rows])


def csv_rows(points):
    out = []
    for p in points:
        row = {k: p[k] for k in ("run", "op", "held", "slots", "wall_ms", "state_bytes",
                                 "unsliced_pkts", "unsliced_ms", "no_program_ms",
                                 "release_after_ms", "sent", "received", "lost",
                                 "drops_counted", "lost_unaccounted", "holder_missed",
                                 "csum_bad", "truncated", "added_p99_us", "added_mean_us",
                                 "control_p99_us", "veth_drops_op", "veth_drops_after",
                                 "lock_wait_ms", "own_ms", "no_slicing_ms",
                                 "background_busy_max")}
        for w in ("before", "during", "after"):
            for q in ("samples", "p50_us", "p99_us", "mean_us"):
                row[f"{w}_{q}"] = p[f"lat_{w}"][q]
        row.update({f"phase_{k}_ms": v for k, v in p["phases_ms"].items()})
        row.update({k: p["counters"][k] for k in ("stale", "replayed", "bad_token",
                                                  "sliced", "spliced", "skipped_full")})
        out.append(row)
    return out


def plot(rows, a, path):
    plt = B.plt()
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4))
    for op in a.ops:
        rs = [r for r in rows if r["op"] == op]
        if not rs:
            continue
        x = [r["held"] for r in rs]
        for ax, key, scale in ((axes[0], "wall_ms", 1), (axes[1], "added_p99_us", 1),
                               (axes[2], "state_bytes", 1e-6)):
            y = [(r[key]["median"] or 0) * scale for r in rs]
            lo = [y[i] - (rs[i][key]["min"] or 0) * scale for i in range(len(rs))]
            hi = [(rs[i][key]["max"] or 0) * scale - y[i] for i in range(len(rs))]
            ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, label=op)
    for ax, lab in ((axes[0], "operation time (ms)"),
                    (axes[1], "probe p99 during - before (us)"),
                    (axes[2], "state moved (MB)")):
        ax.set_xscale("log")
        ax.set_xlabel("payloads outstanding (held by the NF)")
        ax.set_ylabel(lab)
        ax.grid(True, which="both", alpha=.3)
        ax.legend(fontsize=8)
    axes[1].axhline(1000, ls="--", color="gray", lw=1)
    axes[1].set_yscale("symlog", linthresh=100)   # an outlier of 20 ms, and +-100 us
    fig.suptitle(f"median of {a.runs} runs, bars min-max; {a.load_rate} + {a.probe_rate} pps "
                 f"of {a.size} B", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def copy_offered():
    """Whether this build's migrate has --mode (the copy mode)."""
    cp = B.run([L.NFSLICE, "migrate", "--help"], check=False)
    return "--mode" in cp.stdout


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = parse_args(argv)
    results = B.preflight("exp_migrate.py", a, argv)
    if results is None:
        return 1
    ncpu = os.cpu_count()
    if ncpu < 2:
        print("exp_migrate.py: needs 2 CPUs (streams on CPU 0, fill and NF on CPU 1)",
              file=sys.stderr)
        return 1
    notes = []
    if "copy" in a.ops and not copy_offered():
        a.ops.remove("copy")
        notes.append("copy: skipped, this build's nfslice migrate has no --mode "
                     "(the copy mode is not in it)")
        print(f"exp_migrate.py: {notes[-1]}", file=sys.stderr)
    results.update(experiment="migrate", ncpu=ncpu, notes=notes, points=[], errors=[])
    t0 = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="nfmg", dir="/dev/shm"))
    m = MigLab(a, tmp)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        m.up()
        for run in range(a.runs):
            # Rotated per run, so slow drift of the machine hits all alike.
            ops = a.ops[run % len(a.ops):] + a.ops[:run % len(a.ops)]
            for op in ops:
                for n in a.held:
                    try:
                        r = point(m, a, op, n, run, ncpu)
                    except (RuntimeError, AssertionError, KeyError, ValueError,
                            subprocess.TimeoutExpired) as e:
                        # Kept and reported; the next point starts afresh.
                        results["errors"].append({"op": op, "held": n, "run": run,
                                                  "error": str(e)[-1000:]})
                        print(f"run {run} {op} held {n}: FAILED: {str(e)[-300:]}",
                              flush=True)
                        continue
                    results["points"].append(r)
                    say(r)
        if a.steps:
            results["steps"] = steps(m, a)
    finally:
        problems = m.down()
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
        if problems:
            print(f"exp_migrate.py: cleanup: {problems}", file=sys.stderr)
    results["elapsed_s"] = time.time() - t0
    rows = summarize(results["points"], a)
    results["summary"] = rows
    print_summary(rows)
    out = Path(a.out)
    B.write_json(out / "migrate.json", results)
    B.write_csv(out / "migrate.csv", csv_rows(results["points"]))
    plot(rows, a, out / "migrate.png")
    print(f"exp_migrate.py: {results['elapsed_s']:.0f} s, results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
