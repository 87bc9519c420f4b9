# SPDX-License-Identifier: GPL-2.0
"""benchlib: shared pieces of nfslice's Python benchmarks (issue #3).

Run everything with /usr/bin/python3 as root. Nothing here touches an
interface it did not create: topologies come from scripts/topo_*.sh under a
prefix of the caller's, and Topo.down() removes them.

  Topo(kind, prefix, opts)   a topology of scripts/topo_{inline,park}.sh
                             (scripts/nfsl/topo.py's Topo, and):
      .up() / .down()           build / remove (down is idempotent)
      .env, .ns(role)           its variables (scripts/topo_*.sh env)
      .set_mode(sliced)         nfslice attached to SLICE_IFS (True) or a bare
                                xdp_pass on the same interfaces (False), so
                                both runs pay veth's XDP receive path alike
      .nfslice(...), .stats()   the nfslice CLI in SLICE_NS, its counters
      .nf_in()                  (packets, bytes) of the NF's nft counter
      .link(role, dev)          stats64 of an interface ({"rx": .., "tx": ..})
      .qdisc(role, dev)         root qdisc stats (park's shaper)
      .pktgen(...)              one nfslice-pktgen run, its JSON report
  udp_frame(), write_pcap()  Ethernet/IPv4/UDP frames with valid checksums
                             and a classic pcap of them (for pktgen --pcap)
  mix_sizes(file, n)         n frame sizes in the proportions of a .mix file
  median(), iqr(), spread()  summary statistics of repeated runs
  write_json(), write_csv()  results files
  plt()                      matplotlib.pyplot with the Agg backend
  parser(), check_cpus(), preflight(), start_run(), guarded(), finish(),
  reload()                   the frame of an experiment's main() (exp_xsk.py,
                             exp_nf.py): options, checks, the run under
                             SIGINT/SIGTERM with its teardown, the end

Why pktgen --pcap and not --size: nfslice-pktgen recycles its live-frames
pages with their content and, for one size, rewrites nothing per frame.
The slicer rewrites the header of the frame in that page (DSCP 63, IP
length, checksum, token) and the page comes back to the generator that
way, so later frames arrive already carrying a token (nfslice counts them
as `replayed` and drops them). --pcap copies the whole frame into the page
each time, so every frame leaves as it is in the file.
"""
import argparse
import csv
import json
import os
import random
import shutil
import signal
import statistics
import sys
import time
from pathlib import Path

from nfsl import topo as nfsltopo
from nfsl.topo import NFSLICE, ROOT, run  # noqa: F401 (benchlib's API)

PKTGEN = Path(os.environ.get("NFSLICE_PKTGEN") or ROOT / "build" / "nfslice-pktgen")
XDP_PASS = ROOT / "build" / ".output" / "xdp_pass.bpf.o"
MIX_ENTERPRISE = ROOT / "userspace" / "nfslice-pktgen" / "mixes" / "enterprise.mix"
UDP_PORT = 5201          # allowed by the topologies' ACL


def log(msg, tag="bench"):
    """Print "TAG: MSG" to stderr at once."""
    nfsltopo.log(msg, tag)


def add_common_args(ap, quick_help, runs=(3, 1)):
    """The options every experiment has: --quick (QUICK_HELP says what it
    shortens), --runs (default RUNS = (full, quick) repetitions) and --out
    (results directory, default bench/results)."""
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--runs", type=int, default=None,
                    help=f"repetitions (default {runs[0]}, quick {runs[1]})")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"),
                    help="results directory (default bench/results)")
    ap.set_defaults(_runs_default=runs)


def fill_defaults(a, **pairs):
    """Options left None (not given) take NAME=(full, quick) from PAIRS,
    the second with --quick; --runs from add_common_args(). Returns A."""
    pairs.setdefault("runs", a._runs_default)
    for k, (full, quick) in pairs.items():
        if getattr(a, k) is None:
            setattr(a, k, quick if a.quick else full)
    return a


def parser(prog, doc, quick_help, runs=(3, 1)):
    """An ArgumentParser whose description is DOC's first paragraph and
    whose epilog is DOC from its third paragraph on, as written, with the
    options of add_common_args(QUICK_HELP, RUNS)."""
    ap = argparse.ArgumentParser(
        prog=prog, description=doc.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=doc.split("\n\n", 2)[2])
    add_common_args(ap, quick_help, runs)
    return ap


def save_figure(fig, path):
    """Lay out matplotlib figure FIG, write it to PATH as a PNG at 110 dpi
    (the size of the figures in docs/img/) and close it. Returns PATH as
    a Path."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def check_cpus(ap, a):
    """--gen-cpu and --nf-cpu (A's gen_cpu, nf_cpu): online and different,
    else AP's usage error; --seed (a.seed) defaults to the time."""
    online = os.sched_getaffinity(0)
    for c in (a.gen_cpu, a.nf_cpu):
        if c not in online:
            ap.error(f"CPU {c} is not available (have {sorted(online)})")
    if a.gen_cpu == a.nf_cpu:
        ap.error("--gen-cpu and --nf-cpu must differ")
    a.seed = a.seed if a.seed is not None else int(time.time())


def preflight(prog, a, argv, files=(), tools=()):
    """The start of an experiment's main(): root, the built tools
    (build/nfslice, build/nfslice-pktgen, xdp_pass, and FILES) present,
    the programs TOOLS on PATH, the output directory a.out created.
    Returns the results dict to fill (config, machine, command), or None
    after printing what is missing (exit 1)."""
    if os.geteuid() != 0:
        print(f"{prog}: needs root (namespaces, XDP, BPF)", file=sys.stderr)
        return None
    for f in (NFSLICE, PKTGEN, XDP_PASS, *files):
        if not Path(f).exists():
            print(f"{prog}: {f} missing: run 'make' first", file=sys.stderr)
            return None
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        print(f"{prog}: missing {' '.join(missing)} (scripts/install-deps.sh)",
              file=sys.stderr)
        return None
    Path(a.out).mkdir(parents=True, exist_ok=True)
    return {"config": dict(vars(a)), "machine": machine(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": " ".join([f"bench/{prog}", *argv])}


def loadavg():
    """The three load averages of /proc/loadavg, as strings."""
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def start_run(results, a, prefix):
    """Name the run PREFIX-<5 random hex digits> (its namespaces and
    domains start with it) and note it, a.seed and the load average in
    RESULTS. Returns the name."""
    tag = f"{prefix}-{random.SystemRandom().randrange(16 ** 5):05x}"
    results["config"].update(seed=a.seed, tag=tag)
    results["loadavg_start"] = loadavg()
    return tag


class Interrupted(Exception):
    """SIGINT or SIGTERM while guarded() runs its body."""


def guarded(body, teardown, problems, tag):
    """BODY() with SIGINT and SIGTERM raising Interrupted, then TEARDOWN()
    with both ignored, so that no signal cuts the teardown short; the
    handlers as they were afterwards. Returns the exit status: 0, 130 when
    interrupted, 1 when BODY raised (logged under TAG and appended to
    PROBLEMS)."""
    def on_signal(signum, frame):
        raise Interrupted(f"signal {signum}")
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    rc = 0
    try:
        body()
    except Interrupted as e:
        log(f"{e}: tearing down", tag)
        rc = 130
    except Exception as e:      # noqa: BLE001 — record, tear down, report
        log(f"error: {e!r}: tearing down", tag)
        problems.append({"what": "error", "error": repr(e)})
        rc = 1
    finally:
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        try:
            teardown()
        finally:
            for s, h in old.items():
                signal.signal(s, h)
    return rc


def finish(prog, results, problems, left, rc, name):
    """The end of an experiment's main(): the problems recorded (the first
    ten; all are in NAME, the results file), the elapsed time (from
    results["elapsed_s"]) and what was left behind. Returns the exit
    status: RC, or 1 when something was left behind."""
    if problems:
        print(f"{prog}: {len(problems)} problem(s) recorded ({name} 'problems'):",
              file=sys.stderr)
        for p in problems[:10]:
            print(f"  {json.dumps(p, default=str)[:400]}", file=sys.stderr)
    print(f"elapsed: {results['elapsed_s']:.0f} s")
    if left:
        print(f"{prog}: left behind: {', '.join(left)}", file=sys.stderr)
        return 1
    return rc


def reload(a):
    """--from-json: the results file a.from_json and its configuration
    (an argparse.Namespace: this call's options, the file's over them),
    the file marked as summarized again now."""
    with open(a.from_json) as f:
        res = json.load(f)
    cfg = argparse.Namespace(**{**vars(a), **res["config"]})
    res.setdefault("resummarized", []).append(
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return res, cfg


def machine():
    """Machine description for results files."""
    u = os.uname()
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"kernel": u.release, "cpus": os.cpu_count(), "cpu_model": model,
            "host": u.nodename}


# ----------------------------------------------------------- topology --
class Topo(nfsltopo.Topo):
    """A topology built by scripts/topo_KIND.sh, and nfslice in it.

    The runs compare nfslice attached (mode "sliced") with a bare xdp_pass
    on the same interfaces (mode "pass"); down() undoes either.
    """

    def __init__(self, kind, prefix, opts=(), domain="bench"):
        """Describe topology KIND under PREFIX, `up` OPTS, nfslice domain
        DOMAIN; build it with up()."""
        super().__init__(kind, prefix, opts, domain=domain, tag="bench")
        self.mode = None        # None, "sliced" or "pass"

    # ------------------------------------------------- slicing or not --
    def release(self):
        """What down() undoes first: the current mode (no problems kept:
        the namespaces go next anyway)."""
        self._clear()
        return []

    def _clear(self):
        if self.mode == "sliced":
            self.detach(check=False)
        elif self.mode == "pass":
            for dev in self.slice_ifs:
                run(["ip", "-n", self.ns("slice"), "link", "set", "dev", dev,
                     "xdpdrv", "off"], check=False)
        self.mode = None

    def set_mode(self, sliced):
        """nfslice on SLICE_IFS (sliced) or xdp_pass there (unsliced).
        Raises RuntimeError when the attachment fails."""
        want = "sliced" if sliced else "pass"
        if self.mode == want:
            return
        self._clear()
        if sliced:
            self.attach()
        else:
            for dev in self.slice_ifs:
                run(["ip", "-n", self.ns("slice"), "link", "set", "dev", dev,
                     "xdpdrv", "object", XDP_PASS, "program", "xdp_pass"])
        self.mode = want
        time.sleep(0.2)                 # links settle after XDP changes

    def stats(self):
        """nfslice stats of the domain ({} when not sliced)."""
        if self.mode != "sliced":
            return {}
        return super().stats()

    # ------------------------------------------------------ counters --
    def link(self, role, dev):
        """stats64 of DEV in ROLE's namespace (nfsltopo link_stats())."""
        return self.link_stats(role, dev)

    def qdisc(self, role, dev):
        """Root qdisc of DEV with its stats, {} if none (root_qdisc())."""
        return self.root_qdisc(role, dev)

    def mac(self, role, dev):
        """MAC address of DEV in ROLE's namespace ("02:..")."""
        return self.link_info(role, dev)["address"]

    # -------------------------------------------------------- traffic --
    def pktgen(self, *, pcap, rate, count, cpu=None, timeout=None):
        """One nfslice-pktgen run from the client's veth; its JSON report."""
        args = [PKTGEN, "--dev", self.env["CLI_IF"], "--pcap", pcap,
                "--rate", int(rate), "--count", int(count), "--json"]
        if cpu is not None:
            args += ["--cpu", cpu]
        t = timeout or (count / max(rate, 1) + 15)
        return json.loads(self.exec("cli", *args, timeout=t).stdout)

    def frame_macs(self):
        """(client MAC, MAC of the client veth's peer)."""
        peer = "DUT_IN" if self.kind == "inline" else "SLC_CLI_IF"
        role = "dut" if self.kind == "inline" else "slc"
        return (self.mac("cli", self.env["CLI_IF"]),
                self.mac(role, self.env[peer]))


def cleanup_on_signals(topos):
    """SIGINT/SIGTERM: tear down every Topo in the list, then exit 130."""
    def handler(signum, frame):
        log(f"signal {signum}: tearing down")
        for t in list(topos):
            t.down()
        sys.exit(130)
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


# ------------------------------------------------------------- frames --
def udp_frame(size, src_mac, dst_mac, src_ip, dst_ip, sport, dport=UDP_PORT):
    """An Ethernet/IPv4/UDP frame of SIZE bytes (no FCS), valid checksums
    (scapy computes them), DF set, IP ID 0, TTL 64. Raises ValueError below
    42 B.

    The payload is a repeating byte pattern (not zeros), so a payload that
    came back wrong would show in a checksum.
    """
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    plen = size - 14 - 20 - 8
    if plen < 0:
        raise ValueError(f"frame of {size} B too small for UDP/IPv4")
    payload = bytes((i * 7 + sport) & 0xff for i in range(plen))
    return bytes(Ether(src=src_mac, dst=dst_mac) /
                 IP(src=src_ip, dst=dst_ip, id=0, flags="DF", ttl=64) /
                 UDP(sport=sport, dport=dport) / payload)


def write_pcap(path, frames):
    """A pcap file (Ethernet) of FRAMES (bytes), in order (scapy's wrpcap)."""
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap
    wrpcap(str(path), [Ether(f) for f in frames])


def mix_sizes(path, n):
    """N frame sizes in the proportions of a SIZE WEIGHT mix file, spread
    evenly over the sequence (largest-remainder order, deterministic)."""
    entries = []
    for line in open(path):
        line = line.split("#", 1)[0].split()
        if len(line) == 2:
            entries.append((int(line[0]), float(line[1])))
    total = sum(w for _, w in entries)
    seq, acc = [], {s: 0.0 for s, _ in entries}
    for _ in range(n):
        for s, w in entries:
            acc[s] += w / total
        s = max(acc, key=acc.get)
        acc[s] -= 1.0
        seq.append(s)
    return seq


def make_pcap(path, sizes, topo, flows=16):
    """A pcap of UDP frames from the client to the server of TOPO, one per
    entry of SIZES, source ports cycling over FLOWS flows."""
    src_mac, dst_mac = topo.frame_macs()
    e = topo.env
    frames = [udp_frame(s, src_mac, dst_mac, e["CLI_IP4"], e["SRV_IP4"],
                        1024 + i % flows) for i, s in enumerate(sizes)]
    write_pcap(path, frames)
    return sum(sizes) / len(sizes)


# -------------------------------------------------------- statistics --
def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def iqr(xs):
    """(q1, q3) of the values (inclusive method); (x, x) for one value."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return (None, None)
    if len(xs) == 1:
        return (xs[0], xs[0])
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return (q[0], q[2])


def spread(xs):
    """{"median", "q1", "q3", "min", "max", "n"} of the values."""
    xs = [x for x in xs if x is not None]
    q1, q3 = iqr(xs)
    return {"median": median(xs), "q1": q1, "q3": q3,
            "min": min(xs) if xs else None, "max": max(xs) if xs else None,
            "n": len(xs)}


def ratio(a, b):
    return a / b if a is not None and b else None


# ------------------------------------------------------------- output --
def write_json(path, obj):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, default=str)
        f.write("\n")


def write_csv(path, rows):
    """Rows: list of dicts; the header is the union of their keys, in order."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    keys = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def plt():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as p
    return p


def print_table(title, header, rows):
    """A plain text table: header and rows are lists of strings."""
    w = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print(f"\n{title}")
    print("  " + "  ".join(str(h).rjust(n) for h, n in zip(header, w)))
    for r in rows:
        print("  " + "  ".join(str(x).rjust(n) for x, n in zip(r, w)))
    sys.stdout.flush()
