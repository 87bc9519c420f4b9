# SPDX-License-Identifier: GPL-2.0
"""exp_migrate.py's lab and operations: the cli - nic - dut - nic - srv
lab (nfsl.tap.nic_lab) with its domain, fill, load and held headers, and
the operations a point measures (upgrade, migrate in its modes,
checkpoint/restore, the hog control) with their steps. Units: ms,
packets, slots."""
import json
import os
import signal
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

# The NF's release of the held headers, run in the DUT (its docstring).
RELEASE = Path(__file__).resolve().parent / "mig_release.py"


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
        p = self.lab.spawn("dut", "taskset", "-c", str(FILL_CPU), nftap.PY, RELEASE,
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


def fmt(v, f="{:.1f}"):
    return "-" if v is None else f.format(v)
