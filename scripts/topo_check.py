#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""topo_check.py — functional check and first numbers of a benchmark topology.

    scripts/topo_check.py inline [OPTIONS]
    scripts/topo_check.py park   [OPTIONS]

Builds the topology (scripts/topo_inline.sh or scripts/topo_park.sh) under
its own PREFIX, runs the same bounded workload without and then with nfslice
attached to the topology's SLICE_IFS, prints a table, and removes everything
it made, also on failure or Ctrl-C. Exit status 0 when every check passed.

inline: an HTTP download (sha256), iperf3 TCP, and a fixed count of paced
  1400 B UDP datagrams (scripts/udpflow.py, byte-exact) with CPU time per
  packet per core (scripts/cpustat.py) and where each step ran: forwarded
  packets per CPU (nftables "meta cpu" counters), sliced / spliced per CPU
  (nfslice's per-CPU counters). Checks: data intact; the NF forwarded
  nothing on the slicer's CPU; the slicer ran only on SLICER_CPU and the
  splicer only on NF_CPU.
park: an HTTP download (sha256, IPv4 and IPv6), iperf3 TCP both ways, and
  iperf3 UDP 1400 B at several offered rates: goodput, loss, bytes on the
  shaped slicer-NF link per delivered byte. Checks: data intact; with
  slicing the link carries < 0.2 B per delivered byte, without >= 1.

OPTIONS
  --prefix P        namespace prefix (default nfck-inline / nfck-park)
  --no-slice        only the run without nfslice
  --json FILE       also write every number as JSON
  --http-mb M       size of the HTTP download, 1-200 MB (default 20)
  --duration S      seconds per iperf3 run, 1-30 (default 3)
  inline:
  --packets N       UDP datagrams of the CPU measurement (default 200000)
  --pps R           their rate, packets/s (default 50000)
  park:
  --rate RATE       shaped link rate, tc units (default 1gbit)
  --udp-rates LIST  offered UDP loads, comma-separated iperf3 rates (500M,
                    1G) or multiples of the link rate (2x) (default 0.5x,1x,2x)
  NFSLICE=path      nfslice binary (default build/nfslice)
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nfsl import cpustat
from nfsl import topo as nfsltopo
from nfsl.topo import NFSLICE

ROOT = Path(__file__).resolve().parents[1]

PY = "/usr/bin/python3"
UDPFLOW = ROOT / "scripts" / "udpflow.py"
DOMAIN = "topock"
IPERF_PORT = 5201    # allowed by both topologies' ACL (TCP and UDP)
HTTP_PORT = 8080
UDP_LEN = 1400
# Non-idle share of a CPU, with nothing of ours running, above which the
# CPU numbers are flagged as polluted by other work on the machine.
BACKGROUND_MAX = 0.05


def log(msg):
    nfsltopo.log(msg, "topo_check")


def usage(msg=None):
    if msg:
        print(f"topo_check.py: {msg}", file=sys.stderr)
    print(__doc__.split("\n\n", 1)[1], file=sys.stderr)
    sys.exit(2)


class Topo(nfsltopo.Topo):
    """A topology of scripts/topo_KIND.sh (nfsltopo.Topo), domain DOMAIN."""

    def __init__(self, kind, prefix, opts=()):
        """Describe topology KIND under PREFIX, `up` OPTS; see up()."""
        super().__init__(kind, prefix, opts, domain=DOMAIN, tag="topo_check")

    def settle(self):
        """Stats once the store is empty (at most 5 s), else the last."""
        st = {}
        for _ in range(50):
            st = self.stats()
            if st["slots_busy"] == 0:
                break
            time.sleep(0.1)
        return st


# ------------------------------------------------------------ workloads --
def iperf(topo, *args, duration, pin=None):
    """One iperf3 client run from the client namespace; a result dict."""
    cmd = ["iperf3", "-J", "-t", str(duration), *args]
    if pin is not None:
        cmd = ["taskset", "-c", str(pin), *cmd]
    cp = topo.exec("cli", *cmd, timeout=duration + 30, check=False)
    try:
        d = json.loads(cp.stdout)
    except ValueError:
        return {"ok": False, "error": cp.stderr.strip()[-300:] or "no JSON"}
    if d.get("error"):
        return {"ok": False, "error": d["error"]}
    end = d["end"]
    rx = end.get("sum_received", {})
    r = {"ok": cp.returncode == 0 and rx.get("bytes", 0) > 0,
         "bytes": rx.get("bytes", 0), "bps": rx.get("bits_per_second", 0),
         "seconds": rx.get("seconds", 0)}
    if "-u" in args:
        r["lost_percent"] = rx.get("lost_percent")
        r["sent_bps"] = end.get("sum_sent", {}).get("bits_per_second", 0)
    else:
        r["retransmits"] = end.get("sum_sent", {}).get("retransmits")
    return r


def http_get(topo, url, sha, pin=None):
    fd, path = tempfile.mkstemp(prefix="topock-dl.")
    os.close(fd)
    cmd = ["curl", "-sS", "--fail", "--max-time", "120", "-o", path, "-w",
           "%{size_download} %{speed_download}", url]
    if pin is not None:
        cmd = ["taskset", "-c", str(pin), *cmd]
    try:
        cp = topo.exec("cli", *cmd, timeout=150, check=False)
        if cp.returncode != 0:
            return {"ok": False, "error": cp.stderr.strip()[-300:]}
        size, speed = cp.stdout.split()
        h = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        return {"ok": h == sha, "sha256_match": h == sha, "bytes": int(size),
                "bps": float(speed) * 8}
    finally:
        os.unlink(path)


def delta(a, b):
    return {k: b[k] - a[k] for k in a if isinstance(a[k], (int, float))}


# --------------------------------------------------------------- inline --
def inline_mode(topo, sliced, o, sha):
    e = topo.env
    sc, nc = int(e["SLICER_CPU"]), int(e["NF_CPU"])
    cpus = [int(c) for c in e["ONLINE_CPUS"].split()]
    res = {}
    if sliced:
        topo.attach()
    url = f"http://{e['SRV_IP4']}:{HTTP_PORT}/blob"
    topo.nf_in_reset()
    res["http"] = http_get(topo, url, sha, pin=sc)
    _, b = topo.nf_in()
    res["http"]["nf_bytes"] = b
    log(f"  http: sha256 match {res['http'].get('sha256_match')}")

    topo.nf_in_reset()
    res["tcp"] = iperf(topo, "-c", e["SRV_IP4"], duration=o["duration"],
                       pin=sc)
    res["tcp"]["nf_bytes"] = topo.nf_in()[1]
    log(f"  tcp: {res['tcp'].get('bps', 0) / 1e9:.2f} Gbit/s")

    # The CPU measurement: a fixed count of paced datagrams, both ends on
    # the slicer's CPU.
    n = o["packets"]
    fwd = lambda: {c: topo.nft_counter("nf", e["CPU_NFT_FAMILY"],  # noqa: E731
                                       e["CPU_NFT_TABLE"], f"fwd_cpu{c}")[0]
                   for c in cpus}
    rx = topo.spawn("srv", "taskset", "-c", sc, PY, UDPFLOW, "recv",
                    IPERF_PORT, "--count", n, "--size", UDP_LEN,
                    "--timeout", 3, stdout=subprocess.PIPE)
    topo.wait_listen("srv", IPERF_PORT, "udp")
    # /proc/stat is system-wide: measure what the rest of the machine does
    # (half a second, nothing of ours running) to flag polluted numbers.
    b0 = cpustat.snapshot()
    time.sleep(0.5)
    bg = cpustat.delta(b0, cpustat.snapshot(), cpus)
    f0 = fwd()
    c0 = topo.percpu() if sliced else None
    nf0 = topo.nf_in()
    s0 = cpustat.snapshot()
    cp = topo.exec("cli", "taskset", "-c", sc, PY, UDPFLOW, "send",
                   e["SRV_IP4"], IPERF_PORT, "--count", n, "--size", UDP_LEN,
                   "--rate", o["pps"] * UDP_LEN * 8,
                   timeout=n / o["pps"] + 60)
    s1 = cpustat.snapshot()
    out = topo.collect(rx, 30)
    f1 = fwd()
    nf1 = topo.nf_in()
    udp = json.loads(out)
    udp["send"] = json.loads(cp.stdout)
    fwd_d = {c: f1[c] - f0[c] for c in cpus}
    udp["fwd_per_cpu"] = fwd_d
    forwarded = sum(fwd_d.values())
    udp["nf_pkts"] = nf1[0] - nf0[0]
    udp["nf_bytes"] = nf1[1] - nf0[1]
    udp["cpu"] = cpustat.delta(s0, s1, cpus, forwarded or None)
    udp["background_busy"] = {c: bg["cpus"][c]["nonidle_ns"] / bg["wall_ns"]
                              for c in cpus}
    if max(udp["background_busy"].values()) > BACKGROUND_MAX:
        log(f"  warning: the machine was busy before the run "
            f"({udp['background_busy']}): CPU numbers include other work")
    if sliced:
        c1 = topo.percpu()
        udp["sliced_per_cpu"] = {c: c1[c]["sliced"] - c0[c]["sliced"]
                                 for c in cpus}
        udp["spliced_per_cpu"] = {c: c1[c]["spliced"] - c0[c]["spliced"]
                                  for c in cpus}
    res["udp"] = udp
    log(f"  udp: {udp['received']}/{n} received, {udp['corrupt']} corrupt; "
        f"forwarded per CPU {fwd_d}")

    fails = []
    if not res["http"]["ok"]:
        fails.append(f"http: {res['http']}")
    if not res["tcp"]["ok"]:
        fails.append(f"tcp: {res['tcp'].get('error')}")
    if udp["corrupt"] or udp["duplicate"]:
        fails.append(f"udp: {udp['corrupt']} corrupt, {udp['duplicate']} dup")
    if udp["missing"] > n // 100:
        fails.append(f"udp: {udp['missing']} of {n} missing")
    if fwd_d[sc] != 0:
        fails.append(f"{fwd_d[sc]} packets forwarded on the slicer CPU {sc}")
    if fwd_d[nc] < udp["received"]:
        fails.append(f"only {fwd_d[nc]} packets forwarded on NF CPU {nc}")
    if sliced:
        sl, sp = udp["sliced_per_cpu"], udp["spliced_per_cpu"]
        # The slicer runs in the veth's NAPI poll, on the CPU that
        # scheduled it: the sender's. A packet sent into the same veth from
        # another CPU meanwhile (an ARP probe or a TCP timer of the client
        # firing on NF_CPU) runs that poll there, and the datagrams queued
        # at that moment are sliced there too: a handful, never the bulk.
        if sl[sc] < 0.99 * sum(sl.values()) or sum(sl.values()) < udp["received"]:
            fails.append(f"sliced per CPU {sl}: not (nearly) all on CPU {sc}")
        if sp[nc] < udp["received"] or sum(sp.values()) != sp[nc]:
            fails.append(f"spliced per CPU {sp}: not all on CPU {nc}")
    return finish(topo, sliced, res, fails)


def inline_table(runs, o, e):
    sc, nc = e["SLICER_CPU"], e["NF_CPU"]
    rows, add = table(runs)
    add("HTTP download sha256 match", lambda r: str(r["http"]["sha256_match"]))
    add("  NF bytes per delivered byte",
        lambda r: f"{r['http']['nf_bytes'] / r['http']['bytes']:.3f}")
    add("TCP client->server (Gbit/s)", lambda r: f"{r['tcp']['bps'] / 1e9:.2f}")
    add("  NF bytes per delivered byte",
        lambda r: f"{r['tcp']['nf_bytes'] / r['tcp']['bytes']:.3f}")
    add(f"UDP {UDP_LEN} B x {o['packets']} at {o['pps']} pps: received",
        lambda r: f"{r['udp']['received']}")
    add("  corrupt / duplicate",
        lambda r: f"{r['udp']['corrupt']} / {r['udp']['duplicate']}")
    add("  NF bytes per packet",
        lambda r: f"{r['udp']['nf_bytes'] / r['udp']['nf_pkts']:.0f}")
    add("  forwarded on CPU " + sc + " / " + nc,
        lambda r: f"{r['udp']['fwd_per_cpu'][int(sc)]} / "
                  f"{r['udp']['fwd_per_cpu'][int(nc)]}")
    add("  sliced on CPU " + sc + " / " + nc,
        lambda r: f"{r['udp']['sliced_per_cpu'][int(sc)]} / "
                  f"{r['udp']['sliced_per_cpu'][int(nc)]}")
    add("  spliced on CPU " + sc + " / " + nc,
        lambda r: f"{r['udp']['spliced_per_cpu'][int(sc)]} / "
                  f"{r['udp']['spliced_per_cpu'][int(nc)]}")
    for c, role in ((sc, "slicer + endpoints"), (nc, "NF + splicer")):
        cpu = lambda r, c=c: r["udp"]["cpu"]["cpus"][int(c)]  # noqa: E731
        add(f"  CPU {c} ({role}) non-idle ns/packet",
            lambda r, cpu=cpu: f"{cpu(r)['nonidle_ns_per_packet']:.0f}")
        add("    softirq share (tick samples)",
            lambda r, cpu=cpu: f"{cpu(r)['softirq_ns'] / cpu(r)['busy_ns']:.0%}")
        add("    NET_RX softirqs per packet",
            lambda r, cpu=cpu: f"{cpu(r)['net_rx'] / r['udp']['cpu']['packets']:.2f}")
        add("    non-idle ns per NET_RX softirq",
            lambda r, cpu=cpu: f"{cpu(r)['nonidle_ns'] / cpu(r)['net_rx']:.0f}")
    add("  background non-idle before the run (per CPU)",
        lambda r: " / ".join(f"{v:.0%}" for v in r["udp"]["background_busy"].values()))
    stats_rows(add)
    return rows


# ----------------------------------------------------------------- park --
def link_snapshot(topo):
    e = topo.env
    s = topo.link_stats("slc", e["SLC_NF_IF"])
    qs = topo.root_qdisc("slc", e["SLC_NF_IF"])
    qn = topo.root_qdisc("nf", e["NF_IF"])
    return {"to_nf_bytes": s["tx"]["bytes"], "to_nf_pkts": s["tx"]["packets"],
            "from_nf_bytes": s["rx"]["bytes"],
            "from_nf_pkts": s["rx"]["packets"],
            "to_nf_wire_bytes": qs.get("bytes", 0),
            "from_nf_wire_bytes": qn.get("bytes", 0),
            "to_nf_drops": qs.get("drops", 0),
            "from_nf_drops": qn.get("drops", 0),
            "nf_in_bytes": topo.nf_in()[1]}


def park_measure(topo, what, fn):
    a = link_snapshot(topo)
    r = fn()
    b = link_snapshot(topo)
    r["link"] = delta(a, b)
    if r.get("bytes"):
        d = r["link"]
        r["to_nf_per_byte"] = d["to_nf_bytes"] / r["bytes"]
        r["from_nf_per_byte"] = d["from_nf_bytes"] / r["bytes"]
        r["wire_per_byte"] = (d["to_nf_wire_bytes"] +
                              d["from_nf_wire_bytes"]) / r["bytes"]
    gb = r.get("bps", 0) / 1e9
    log(f"  {what}: {gb:.3f} Gbit/s"
        + (f", loss {r['lost_percent']:.2f}%" if "lost_percent" in r else "")
        + (f", link bytes/delivered {r['to_nf_per_byte']:.3f}"
           if "to_nf_per_byte" in r else ""))
    return r


def udp_rate(rate, env):
    """An iperf3 -b rate; "Nx" means N times the shaped link rate."""
    if rate.endswith("x"):
        return str(int(float(rate[:-1]) * int(env["LINK_RATE_BPS"])))
    return rate


def park_mode(topo, sliced, o, sha):
    e = topo.env
    res = {}
    if sliced:
        topo.attach()
    d = o["duration"]
    res["http4"] = park_measure(topo, "http ipv4", lambda: http_get(
        topo, f"http://{e['SRV_IP4']}:{HTTP_PORT}/blob", sha))
    res["http6"] = park_measure(topo, "http ipv6", lambda: http_get(
        topo, f"http://[{e['SRV_IP6']}]:{HTTP_PORT}/blob", sha))
    res["tcp_up"] = park_measure(topo, "tcp client->server", lambda: iperf(
        topo, "-c", e["SRV_IP4"], duration=d))
    res["tcp_down"] = park_measure(topo, "tcp server->client", lambda: iperf(
        topo, "-c", e["SRV_IP4"], "-R", duration=d))
    for rate in o["udp_rates"]:
        res[f"udp_{rate}"] = park_measure(
            topo, f"udp {rate}", lambda rate=rate: iperf(
                topo, "-c", e["SRV_IP4"], "-u", "-l", str(UDP_LEN), "-b",
                udp_rate(rate, e), duration=d))
    fails = []
    for k, r in res.items():
        if not r.get("ok"):
            fails.append(f"{k}: {r.get('error') or r}")
    link_max = 0.2 if sliced else None
    for k, r in res.items():
        if k.startswith(("tcp_up", "udp_")) and "to_nf_per_byte" in r:
            if sliced and r["to_nf_per_byte"] > link_max:
                fails.append(f"{k}: {r['to_nf_per_byte']:.3f} link bytes per "
                             "delivered byte with slicing")
            if not sliced and r["to_nf_per_byte"] < 1.0:
                fails.append(f"{k}: {r['to_nf_per_byte']:.3f} link bytes per "
                             "delivered byte without slicing")
    return finish(topo, sliced, res, fails)


def park_table(runs, o, e):
    rows, add = table(runs)
    for k, label in (("http4", "HTTP download IPv4"),
                     ("http6", "HTTP download IPv6")):
        add(f"{label} sha256 match", lambda r, k=k: str(r[k]["sha256_match"]))
        add("  goodput (Gbit/s)", lambda r, k=k: f"{r[k]['bps'] / 1e9:.3f}")
    for k, label in (("tcp_up", "TCP client->server"),
                     ("tcp_down", "TCP server->client")):
        add(f"{label} (Gbit/s)", lambda r, k=k: f"{r[k]['bps'] / 1e9:.3f}")
        add("  retransmits", lambda r, k=k: f"{r[k]['retransmits']}")
        add("  link bytes slc->nf per delivered byte",
            lambda r, k=k: f"{r[k]['to_nf_per_byte']:.3f}")
        add("  link bytes nf->slc per delivered byte",
            lambda r, k=k: f"{r[k]['from_nf_per_byte']:.3f}")
    for rate in o["udp_rates"]:
        k = f"udp_{rate}"
        off = int(udp_rate(rate, e)) if rate.endswith("x") else rate
        add(f"UDP {UDP_LEN} B offered {rate} ({fmt_rate(off)}): goodput (Gbit/s)",
            lambda r, k=k: f"{r[k]['bps'] / 1e9:.3f}")
        add("  sender achieved (Gbit/s)",
            lambda r, k=k: f"{r[k]['sent_bps'] / 1e9:.3f}")
        add("  loss (%)", lambda r, k=k: f"{r[k]['lost_percent']:.2f}")
        add("  link bytes slc->nf per delivered byte",
            lambda r, k=k: f"{r[k]['to_nf_per_byte']:.3f}")
        add("  wire bytes (both ways, +24 B/frame) per byte",
            lambda r, k=k: f"{r[k]['wire_per_byte']:.3f}")
        add("  shaper drops slc->nf / nf->slc",
            lambda r, k=k: f"{r[k]['link']['to_nf_drops']} / "
                           f"{r[k]['link']['from_nf_drops']}")
    stats_rows(add)
    return rows


def fmt_rate(r):
    if isinstance(r, int):
        return f"{r / 1e9:g} Gbit/s" if r >= 1e9 else f"{r / 1e6:g} Mbit/s"
    return f"{r}bit/s"


def finish(topo, sliced, res, fails):
    """End of a mode's run: after a sliced run, the settled counters (no
    stale, no bad token, something sliced) and detach. RES with its
    failures."""
    if sliced:
        st = topo.settle()
        res["stats"] = st
        if st["stale"] or st["bad_token"] or not st["sliced"]:
            fails.append(f"nfslice stats {st}")
        topo.detach(check=False)
    res["fails"] = fails
    return res


def table(runs):
    """Rows of a result table (a header of the run names) and add(LABEL, F),
    which appends LABEL with F(run) for every run ("-" where F finds no
    value)."""
    rows = [("", *runs.keys())]

    def add(label, f):
        vals = []
        for r in runs.values():
            try:
                vals.append(f(r))
            except (KeyError, TypeError, ZeroDivisionError):
                vals.append("-")
        rows.append((label, *vals))

    return rows, add


def stats_rows(add):
    """Rows of the nfslice counters after the sliced run."""
    for k in ("sliced", "spliced", "skipped_small", "skipped_full", "evicted",
              "stale", "bad_token"):
        add(f"nfslice {k}", lambda r, k=k: f"{r['stats'][k]}")


# ---------------------------------------------------------------- main --
def print_table(title, rows):
    w0 = max(len(r[0]) for r in rows)
    print()
    print(title)
    for r in rows:
        print(f"  {r[0]:<{w0}}  " + "  ".join(f"{c:>16}" for c in r[1:]))
    print()


def parse(argv):
    if not argv or argv[0] in ("-h", "--help"):
        usage(None if argv else "missing topology (inline or park)")
    kind = argv[0]
    if kind not in ("inline", "park"):
        usage(f"unknown topology '{kind}' (inline or park)")
    o = {"prefix": f"nfck-{kind}", "slice": True, "json": None, "http_mb": 20,
         "packets": 200000, "pps": 50000, "rate": "1gbit",
         "udp_rates": ["0.5x", "1x", "2x"], "duration": 3}
    args = argv[1:]
    ints = {"--http-mb": ("http_mb", 1, 200), "--packets": ("packets", 1, 10**8),
            "--pps": ("pps", 1, 10**7), "--duration": ("duration", 1, 30)}
    only = {"inline": ("--packets", "--pps"),
            "park": ("--rate", "--udp-rates")}
    other = only["park" if kind == "inline" else "inline"]
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--no-slice":
            o["slice"] = False
            i += 1
            continue
        if a in other:
            usage(f"{a} is an option of the other topology")
        if a not in ("--prefix", "--json", "--rate", "--udp-rates", *ints):
            usage(f"unknown argument '{a}'")
        if i + 1 >= len(args):
            usage(f"{a} needs a value")
        v = args[i + 1]
        if a in ints:
            k, lo, hi = ints[a]
            if not v.isdigit() or not lo <= int(v) <= hi:
                usage(f"{a} '{v}' is not a whole number in {lo}-{hi}")
            o[k] = int(v)
        elif a == "--udp-rates":
            o["udp_rates"] = [x for x in v.split(",") if x]
            if not o["udp_rates"]:
                usage("--udp-rates needs at least one rate")
        else:
            o[a[2:].replace("-", "_")] = v
        i += 2
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,19}", o["prefix"]):
        usage(f"bad --prefix '{o['prefix']}' (letters, digits, '-', '_'; "
              "1-20 characters)")
    return kind, o


def main(argv):
    kind, o = parse(argv)
    if os.geteuid() != 0:
        usage("must run as root (network namespaces, BPF)")
    if o["slice"] and not os.access(NFSLICE, os.X_OK):
        usage(f"{NFSLICE} is missing: build it with make")

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)

    # park: its NF server is another host, outside the slicing domain, so
    # `nfslice attach` cannot set liberal TCP window tracking there; the
    # topology does it on request (the sliced TCP runs stall without it).
    opts = ["--rate", o["rate"], "--nf-ct-liberal"] if kind == "park" else []
    topo = Topo(kind, o["prefix"], opts)
    www = Path(tempfile.mkdtemp(prefix="topock-www."))
    runs, fails = {}, []
    try:
        topo.up()
        e = topo.env
        data = os.urandom(o["http_mb"] << 20)
        (www / "blob").write_bytes(data)
        sha = hashlib.sha256(data).hexdigest()
        del data
        pin = ["taskset", "-c", e["SLICER_CPU"]] if kind == "inline" else []
        topo.spawn("srv", *pin, "iperf3", "-s", "-p", IPERF_PORT)
        topo.spawn("srv", *pin, PY, "-m", "http.server", HTTP_PORT, "--bind",
                   "::", "--directory", www)
        topo.wait_listen("srv", IPERF_PORT)
        topo.wait_listen("srv", HTTP_PORT)
        mode = inline_mode if kind == "inline" else park_mode
        for name, sliced in (("without slicing", False),
                             ("with slicing", True)):
            if sliced and not o["slice"]:
                break
            log(f"run: {name}")
            runs[name] = mode(topo, sliced, o, sha)
            fails += [f"{name}: {f}" for f in runs[name]["fails"]]
        if kind == "inline":
            title = (f"inline topology: slicer on CPU {e['SLICER_CPU']}, NF on "
                     f"CPU {e['NF_CPU']} (nftables ACL + masquerade NAT)")
            rows = inline_table(runs, o, e)
        else:
            title = (f"park topology: slicer node - NF server link shaped to "
                     f"{e['LINK_RATE']} per direction (tbf, +{e['LINK_OVERHEAD']}"
                     f" B/frame); NF: nftables ACL"
                     + (" + masquerade NAT" if e["NF_NAT"] == "1" else ""))
            rows = park_table(runs, o, e)
        print_table(title, rows)
    except KeyboardInterrupt:
        log("interrupted, cleaning up")
        fails.append("interrupted")
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as ex:
        fails.append(str(ex))
    finally:
        topo.down()
        for f in www.iterdir():
            f.unlink()
        www.rmdir()
    if o["json"]:
        Path(o["json"]).write_text(json.dumps(
            {"topology": kind, "options": o, "env": topo.env, "runs": runs,
             "fails": fails}, indent=1, default=str))
    for f in fails:
        print(f"FAIL: {f}")
    print("PASS" if not fails else "FAIL")
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
