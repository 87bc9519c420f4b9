# SPDX-License-Identifier: GPL-2.0
"""exp_iperf.py's iperf3 client and profiles: the client's arguments and
result, where the CPU time of a transfer goes (perf samples classified by
stage: NIC/veth, XDP programs, slicer, splicer, TCP, copies, other) and
the BPF programs' own run time (bpf_enable_stats). Units: ns, samples,
fractions of the run."""
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from nfsl import bench as B
from nfsl import cpustat
from nfsl import libbpf
PORT = 5201                 # the rig's ACL lets TCP 5201 through


# ------------------------------------------------------------- iperf3 --
def client_args(rig, a, direction):
    return ["ip", "netns", "exec", rig.ns("cli"), "taskset", "-c",
            str(a.cpu), "iperf3", "-c", rig.env["SRV_IP4"], "-p", str(PORT),
            "-t", f"{a.duration:g}", "-J"] + (["-R"] if direction == "s2c" else [])


def iperf_result(cp):
    """(result dict, error string or None) from an iperf3 -J run."""
    try:
        d = json.loads(cp.stdout)
    except (json.JSONDecodeError, TypeError):
        return {}, f"exit {cp.returncode}: {(cp.stderr or '').strip()[-300:]}"
    if d.get("error") or "sum_received" not in d.get("end", {}):
        return {}, f"iperf3: {d.get('error', 'no result')}"
    e = d["end"]
    rcv, snd = e["sum_received"], e["sum_sent"]
    return {"goodput_gbps": rcv["bits_per_second"] / 1e9,
            "bytes": rcv["bytes"], "seconds": rcv["seconds"],
            "retransmits": snd.get("retransmits"),
            "mss": d.get("start", {}).get("tcp_mss_default"),
            "cpu_host_pct": e.get("cpu_utilization_percent", {}).get("host_total"),
            "cpu_remote_pct":
                e.get("cpu_utilization_percent", {}).get("remote_total")}, None


# ------------------------------------------------------------ profile --
class BpfStats:
    """bpf_enable_stats(BPF_STATS_RUN_TIME), fd form: on while open
    (nfsl.libbpf); off (fd None) where the kernel refuses it."""

    def __init__(self):
        try:
            self.fd = libbpf.enable_stats()
        except OSError:
            self.fd = None

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def prog_stats(ids):
    """{name: {"run_time_ns", "run_cnt", "ids"}} summed over IDS' programs."""
    out = {}
    for name, lst in ids.items():
        t = n = 0
        for i in lst:
            cp = B.run(["bpftool", "prog", "show", "id", str(i), "-j"], check=False)
            if cp.returncode == 0:
                d = json.loads(cp.stdout)
                t += d.get("run_time_ns", 0)
                n += d.get("run_cnt", 0)
        out[name] = {"run_time_ns": t, "run_cnt": n, "ids": lst}
    return out


# Stages of the packet path, by function name. A sample goes to the stage of
# the innermost frame of its call chain that matches (leaf first), so a
# memcpy in skb_pp_cow_data is "veth XDP copy", one in tcp_recvmsg "TCP
# endpoints". A bpf_prog_* frame anywhere in the chain wins (its helpers).
STAGES = [
    ("veth XDP: skb copied into a page (skb_pp_cow_data)",
     r"^(skb_pp_cow_data|veth_convert_skb_to_xdp_buff|skb_cow_data_for_xdp)$"),
    ("GSO segmentation in software", r"^(skb_segment|tcp_gso_segment|__skb_gso_segment|"
     r"inet_gso_segment|skb_mac_gso_segment|tcp4_gso_segment|__tcp_gso_segment)$"),
    ("netfilter: nftables ACL, conntrack, NAT",
     r"^(nf_|nft_|__nf_|ipv4_conntrack|ipv4_confirm|l4proto_manip_pkt|"
     r"nf_nat|tcp_manip_pkt|__nft_)"),
    ("tc egress hook (cls_bpf, qdisc)", r"^(cls_bpf_classify|tcf_classify|tc_run|"
     r"sch_handle_egress|tcx_|__tcf_)"),
    ("GRO", r"^(dev_gro_receive|napi_gro_|gro_|inet_gro_|tcp_gro_|tcp4_gro_|"
     r"skb_gro_|napi_skb_finish)"),
    ("IP: routing, forwarding, IP rx/tx (DUT and endpoints)",
     r"^(ip_|fib_|__ip_|ipv4_|dst_|rt_|inet_.*route|__fib_|ip4_)"),
    ("veth driver (xmit, NAPI poll, XDP rx)", r"^(veth_|__veth_)"),
    ("dev layer: xmit, receive core, backlog", r"^(__dev_|dev_|netif_|__netif_|"
     r"process_backlog|enqueue_to_backlog|net_rx_action|__napi_poll|napi_|"
     r"validate_xmit|skb_flow_dissect|__skb_flow_dissect|eth_type_trans|"
     r"__dev_forward_skb|sch_direct_xmit|qdisc_)"),
    ("TCP endpoints: sockets, TCP, copies to/from user",
     r"^(tcp_|__tcp_|sock_|__sock_|sk_|inet_|skb_copy_datagram|"
     r"__skb_datagram|tcp4_|__inet_|release_sock|lock_sock)"),
]
STAGE_RE = [(n, re.compile(p)) for n, p in STAGES]
RIG_COMMS = re.compile(r"^(iperf3|ksoftirqd/\d+|swapper(/\d+)?|taskset|ip)$")


def bpf_stage(sym):
    m = re.match(r"^bpf_prog_[0-9a-f]+_(.*)$", sym)
    if not m:
        return None
    name = m.group(1)
    return {"nfsl_slicer": "BPF: nfslice slicer (XDP, with its helpers)",
            "nfsl_splicer": "BPF: nfslice splicer (tc, with its helpers)",
            "xdp_pass": "BPF: xdp_pass (XDP)"}.get(name, f"BPF: other ({name})")


def classify(comm, chain):
    """Stage of one sample: CHAIN is its symbols, leaf first."""
    if comm.startswith("swapper") and "net_rx_action" not in chain:
        return "idle"
    if not RIG_COMMS.match(comm) and "net_rx_action" not in chain:
        return "other processes (not the rig)"
    for s in chain:
        st = bpf_stage(s)
        if st:
            return st
    for s in chain:
        for name, rx in STAGE_RE:
            if rx.match(s):
                return name
    if chain and chain[0].startswith("[user]"):
        return "iperf3 user space"
    return "other kernel (syscalls, scheduler, timers, memory)"


def is_foreign(stage):
    """Stages that are other people's work on the pinned CPU (a shared
    machine): other processes, and BPF programs that are not ours."""
    return stage.startswith("other processes") or stage.startswith("BPF: other")


def perf_counts(datafile, cpu):
    """Samples of CPU in DATAFILE (perf script), added up as they stream by:
    {"total", "n", "stages": {stage: ns}, "symbols": {leaf: ns},
    "by_stage": {stage: {leaf: ns}}} (ns = sum of the samples' periods)."""
    acc = {"total": 0, "n": 0, "stages": {}, "symbols": {}, "by_stage": {}}

    def add(comm, period, chain):
        st = classify(comm, chain)
        leaf = chain[0] if chain else "[unknown]"
        if st == "idle":
            leaf = "(idle)"
        elif st.startswith("other processes"):
            leaf = f"(other process: {comm})"
        acc["total"] += period
        acc["n"] += 1
        acc["stages"][st] = acc["stages"].get(st, 0) + period
        acc["symbols"][leaf] = acc["symbols"].get(leaf, 0) + period
        d = acc["by_stage"].setdefault(st, {})
        d[leaf] = d.get(leaf, 0) + period

    head = re.compile(r"^(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+(\d+)\s*$")
    frame = re.compile(r"^\s*[0-9a-f]+\s+(.*?)(?:\s+\((.*)\))?\s*$")
    p = subprocess.Popen(["perf", "script", "-i", datafile, "-F",
                          "comm,tid,cpu,period,ip,sym,dso", "--cpu", str(cpu)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, errors="replace")
    cur = None
    for line in p.stdout:
        if not line.strip():
            if cur:
                add(*cur)
            cur = None
        elif not line[0].isspace():
            m = head.match(line)
            cur = (m.group(1).strip(), int(m.group(4)), []) if m else None
        elif cur is not None:
            m = frame.match(line)
            if not m:
                continue
            sym, dso = re.sub(r"\+0x[0-9a-f]+$", "", m.group(1)), m.group(2) or ""
            if not (sym.startswith("bpf_prog_") or "kernel" in dso
                    or dso.startswith("[")):
                sym = f"[user] {sym if sym and sym != '[unknown]' else dso}"
            cur[2].append(sym)
    if cur:
        add(*cur)
    p.wait()
    return acc


def pool(accs):
    """Sum of several perf_counts() results."""
    out = {"total": 0, "n": 0, "stages": {}, "symbols": {}, "by_stage": {}}
    for a in accs:
        out["total"] += a["total"]
        out["n"] += a["n"]
        for k in ("stages", "symbols"):
            for n, v in a[k].items():
                out[k][n] = out[k].get(n, 0) + v
        for st, d in a["by_stage"].items():
            o = out["by_stage"].setdefault(st, {})
            for n, v in d.items():
                o[n] = o.get(n, 0) + v
    return out


def summarize_profile(acc, segments, top=25):
    """Per stage and per leaf symbol: share of the CPU's time and ns per
    TCP data segment; the symbols inside each stage."""
    total = acc["total"] or 1

    def rows(d, n=None):
        items = sorted(d.items(), key=lambda kv: -kv[1])[:n]
        return [{"name": k, "share": v / total,
                 "ns_per_segment": v / segments if segments else None}
                for k, v in items]
    busy = total - acc["stages"].get("idle", 0)
    rig = busy - sum(v for k, v in acc["stages"].items() if is_foreign(k))
    return {"samples": acc["n"], "cpu_ms": total / 1e6,
            "busy_share": busy / total, "segments": segments,
            "busy_ns_per_segment": busy / segments if segments else None,
            "rig_ns_per_segment": rig / segments if segments else None,
            "stages": rows(acc["stages"]), "top_symbols": rows(acc["symbols"], top),
            "stage_symbols": {st: rows(d, 10) for st, d in acc["by_stage"].items()}}


def profile_run(rig, a, direction, variant, tmp):
    """One run under perf record; (record, perf_counts() or None)."""
    rig.set_variant(variant, a.xdp_pass)
    data = Path(tmp) / f"perf-{rig.offloads}-{direction}-{variant}.data"
    cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-a", "-g",
           "-o", str(data), "--"] + client_args(rig, a, direction)
    if a.other_cpu is not None:
        cmd = ["taskset", "-c", str(a.other_cpu)] + cmd
    s0 = cpustat.snapshot()
    try:
        cp = rig.run(cmd, timeout=a.duration + 60, check=False)
    except subprocess.TimeoutExpired:
        cp = subprocess.CompletedProcess([], -9, "", "timed out")
    cs = cpustat.delta(s0, cpustat.snapshot(), cpus=[a.cpu])
    res, err = iperf_result(cp)
    rec = {"offloads": rig.offloads, "dir": direction, "variant": variant,
           "error": err, **res,
           "steal": cs["cpus"][a.cpu]["steal_ns"] / max(cs["wall_ns"], 1)}
    acc = None
    if err:
        rig.restart_server(a.cpu)
    else:
        rec["segments"] = res["bytes"] / (res["mss"] or 1448)
        acc = perf_counts(str(data), a.cpu)
        rec["busy_ns_per_segment"] = (
            (acc["total"] - acc["stages"].get("idle", 0)) / rec["segments"])
        if a.keep_perf:
            dst = Path(a.out) / "iperf_perf"
            dst.mkdir(parents=True, exist_ok=True)
            shutil.copy(data, dst / f"{data.stem}-{int(time.time())}.data")
    data.unlink(missing_ok=True)
    return rec, acc


def bpf_stats_run(rig, a, direction, variant):
    """One run with the kernel's BPF run-time statistics on (not under
    perf: the two clock reads per program run are expensive here, kvm-clock,
    and would distort the profile); run_time_ns / run_cnt per program."""
    rig.set_variant(variant, a.xdp_pass)
    ids = rig.prog_ids()
    stats = BpfStats()
    try:
        p0 = prog_stats(ids)
        try:
            cp = rig.run(client_args(rig, a, direction),
                         timeout=a.duration + 30, check=False)
        except subprocess.TimeoutExpired:
            cp = subprocess.CompletedProcess([], -9, "", "timed out")
        p1 = prog_stats(ids)
    finally:
        on = stats.fd is not None
        stats.close()
    res, err = iperf_result(cp)
    rec = {"offloads": rig.offloads, "dir": direction, "variant": variant,
           "error": err, "bpf_stats_on": on, **res, "programs": {}}
    if err:
        rig.restart_server(a.cpu)
        return rec
    segments = res["bytes"] / (res["mss"] or 1448)
    for name in p1:
        dt = p1[name]["run_time_ns"] - p0[name]["run_time_ns"]
        dn = p1[name]["run_cnt"] - p0[name]["run_cnt"]
        rec["programs"][name] = {
            "ids": p1[name]["ids"], "run_cnt": dn, "run_time_ns": dt,
            "ns_per_run": dt / dn if dn else None,
            "runs_per_segment": dn / segments, "ns_per_segment": dt / segments}
    return rec
