# SPDX-License-Identifier: GPL-2.0
"""exp_nf.py's rigs and the NF's inputs: the inline rig (exp_xsk's 1q
path) and the park topology with its CPU cap, the fw rules, the lb
backends, nfslice-nf's and the generator's command lines
(bench/exp_nf.py says what is measured; units: frames/s, bytes, s)."""
import ipaddress
import json
import os
import sys
import time
from pathlib import Path
import xsk_rig as X

from nfsl import bench as B
from nfsl import fwgen
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
