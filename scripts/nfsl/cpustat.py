#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""cpustat.py — CPU time per core over a run, from /proc/stat and /proc/softirqs.

    scripts/cpustat.py snap [FILE]                      snapshot (JSON) to FILE or stdout
    scripts/cpustat.py diff BEFORE AFTER [OPTIONS]      what happened between two snapshots
    scripts/cpustat.py run [OPTIONS] -- CMD [ARG...]    snapshot, run CMD, snapshot, report

OPTIONS (diff, run):
    --packets N    also print busy and softirq ns per packet (N packets in the run)
    --cpus LIST    only these CPUs, e.g. 0,1 or 0-3 (default: all)
    --json         one JSON object instead of the table

Per CPU it reports, in ns: busy = user + system + softirq (+ irq, nice),
split into user (user + nice), system, softirq (+ irq), and idle
(idle + iowait) and steal (time the hypervisor ran something else: not
busy), plus the NET_RX / NET_TX softirq counts of /proc/softirqs.

Resolution: the kernel converts /proc/stat to USER_HZ units (10 ms). On a
kernel without CONFIG_IRQ_TIME_ACCOUNTING / VIRT_CPU_ACCOUNTING (this
platform: tick accounting at HZ=250) the times are samples: each 4 ms
tick is charged whole to what the CPU was doing at that moment. Over a
run of N ticks the relative error of a CPU's busy time is about
1/sqrt(busy ticks): use runs of a few seconds (thousands of ticks) for
per-packet numbers, and compare sliced with unsliced runs of the same
length. Softirq work done on the way out of a system call (e.g. the
receive path run by a sender's local_bh_enable) is charged as softirq
when a tick lands in it, as the kernel accounts it.

Importable: snapshot(), parse_stat(text), delta(before, after, cpus, packets),
table(d).
"""
import json
import os
import subprocess
import sys
import time

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq",
          "steal", "guest", "guest_nice")
USER_HZ = os.sysconf("SC_CLK_TCK")
NS_PER_TICK = 1_000_000_000 // USER_HZ


def parse_stat(text):
    """Per-CPU times of a /proc/stat text in ns: {cpu: {field: ns}} with
    FIELDS (proc(5): USER_HZ units; steal is the 8th column). The "cpu "
    sum line and the other lines are left out."""
    cpus = {}
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *vals = line.split()
        cpus[int(name[3:])] = {k: int(v) * NS_PER_TICK
                               for k, v in zip(FIELDS, vals)}
    return cpus


def _proc_stat():
    """Per-CPU /proc/stat times in ns: {cpu: {field: ns}}."""
    with open("/proc/stat") as f:
        return parse_stat(f.read())


def _softirqs():
    """/proc/softirqs NET_RX and NET_TX counts: {name: [per cpu]}."""
    out = {}
    with open("/proc/softirqs") as f:
        header = f.readline().split()
        cols = [int(c[3:]) for c in header]
        for line in f:
            name, *vals = line.split()
            name = name.rstrip(":")
            if name in ("NET_RX", "NET_TX"):
                out[name] = dict(zip(cols, map(int, vals)))
    return out


def snapshot():
    """One snapshot: wall clock, per-CPU times (ns), NET softirq counts."""
    return {"mono_ns": time.monotonic_ns(), "user_hz": USER_HZ,
            "cpus": _proc_stat(), "softirqs": _softirqs()}


def _load(path):
    with open(path) as f:
        d = json.load(f)
    # JSON keys are strings.
    d["cpus"] = {int(k): v for k, v in d["cpus"].items()}
    d["softirqs"] = {n: {int(k): v for k, v in c.items()}
                     for n, c in d["softirqs"].items()}
    return d


def delta(before, after, cpus=None, packets=None):
    """Per-CPU busy/user/system/softirq/idle/steal ns between two snapshots.

    Returns {"wall_ns", "packets", "cpus": {cpu: {...}}, "total": {...}}.
    With PACKETS, each CPU also gets busy_ns_per_packet and
    softirq_ns_per_packet.
    """
    out = {"wall_ns": after["mono_ns"] - before["mono_ns"],
           "packets": packets, "resolution_ns": NS_PER_TICK, "cpus": {}}
    sel = sorted(after["cpus"]) if cpus is None else cpus
    total = {}
    for c in sel:
        if c not in after["cpus"] or c not in before["cpus"]:
            raise SystemExit(f"cpustat: CPU {c} is not in the snapshots")
        d = {k: after["cpus"][c][k] - before["cpus"][c][k] for k in FIELDS}
        r = {
            "user_ns": d["user"] + d["nice"],
            "system_ns": d["system"],
            "softirq_ns": d["softirq"] + d["irq"],
            "idle_ns": d["idle"] + d["iowait"],
            "steal_ns": d["steal"],
        }
        r["busy_ns"] = r["user_ns"] + r["system_ns"] + r["softirq_ns"]
        # Idle (and iowait) time is measured exactly by the NO_HZ idle
        # code; busy time only by tick samples, which miss short busy
        # spells of an otherwise idle CPU (module doc). wall - idle -
        # steal is the exact time the CPU was not idle.
        r["nonidle_ns"] = max(0, out["wall_ns"] - r["idle_ns"] - r["steal_ns"])
        for n in ("NET_RX", "NET_TX"):
            b = before["softirqs"].get(n, {}).get(c, 0)
            a = after["softirqs"].get(n, {}).get(c, 0)
            r[n.lower()] = a - b
        if packets:
            r["busy_ns_per_packet"] = r["busy_ns"] / packets
            r["softirq_ns_per_packet"] = r["softirq_ns"] / packets
            r["nonidle_ns_per_packet"] = r["nonidle_ns"] / packets
        out["cpus"][c] = r
        for k, v in r.items():
            total[k] = total.get(k, 0) + v
    out["total"] = total
    return out


def table(d):
    """The delta as a text table."""
    per = d.get("packets")
    head = (f"{'cpu':>5} {'nonidle ms':>10} {'busy ms':>8} {'user ms':>8} "
            f"{'sys ms':>8} {'softirq ms':>10} {'idle ms':>8} {'steal ms':>8} "
            f"{'NET_RX':>8} {'NET_TX':>7}")
    if per:
        head += f" {'nonidle ns/pkt':>14} {'busy ns/pkt':>11} {'softirq ns/pkt':>14}"
    lines = [f"wall {d['wall_ns'] / 1e6:.1f} ms"
             + (f"; {per} packets" if per else "")
             + "; nonidle = wall - idle - steal (exact), busy/user/sys/"
             f"softirq = tick samples ({d['resolution_ns'] / 1e6:.0f} ms units)",
             head]

    def row(name, r):
        s = (f"{name:>5} {r['nonidle_ns'] / 1e6:10.1f} {r['busy_ns'] / 1e6:8.1f} "
             f"{r['user_ns'] / 1e6:8.1f} {r['system_ns'] / 1e6:8.1f} "
             f"{r['softirq_ns'] / 1e6:10.1f} {r['idle_ns'] / 1e6:8.1f} "
             f"{r['steal_ns'] / 1e6:8.1f} {r['net_rx']:8d} {r['net_tx']:7d}")
        if per:
            s += (f" {r['nonidle_ns'] / per:14.1f} {r['busy_ns'] / per:11.1f} "
                  f"{r['softirq_ns'] / per:14.1f}")
        return s
    for c, r in d["cpus"].items():
        lines.append(row(str(c), r))
    if len(d["cpus"]) > 1:
        lines.append(row("all", d["total"]))
    return "\n".join(lines)


def usage(msg=None):
    if msg:
        print(f"cpustat.py: {msg}", file=sys.stderr)
    print("\n\n".join(__doc__.split("\n\n")[1:3]), file=sys.stderr)
    sys.exit(2)


def parse_cpus(s):
    cpus = []
    try:
        for part in s.split(","):
            a, _, b = part.partition("-")
            cpus += range(int(a), int(b or a) + 1)
    except ValueError:
        usage(f"--cpus '{s}' is not a CPU list like 0,1 or 0-3")
    return cpus


def parse_opts(args):
    """OPTIONS of diff/run; returns (cpus, packets, as_json, rest)."""
    cpus, packets, as_json, rest = None, None, False, []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest += args[i + 1:]
            break
        if a in ("--packets", "--cpus"):
            if i + 1 >= len(args):
                usage(f"{a} needs a value")
            v = args[i + 1]
            if a == "--packets":
                if not v.isdigit() or int(v) == 0:
                    usage(f"--packets '{v}' is not a positive whole number")
                packets = int(v)
            else:
                cpus = parse_cpus(v)
            i += 2
            continue
        if a == "--json":
            as_json = True
        elif a.startswith("-"):
            usage(f"unknown option '{a}'")
        else:
            rest.append(a)
        i += 1
    return cpus, packets, as_json, rest


def report(d, as_json):
    if as_json:
        print(json.dumps(d))
    else:
        print(table(d))


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        usage(None if argv else "missing command")
    cmd, args = argv[0], argv[1:]
    if cmd == "snap":
        if len(args) > 1:
            usage("snap takes at most one FILE")
        s = json.dumps(snapshot())
        if args:
            with open(args[0], "w") as f:
                f.write(s + "\n")
        else:
            print(s)
        return 0
    if cmd == "diff":
        cpus, packets, as_json, rest = parse_opts(args)
        if len(rest) != 2:
            usage("diff needs BEFORE and AFTER snapshot files")
        try:
            before, after = _load(rest[0]), _load(rest[1])
        except (OSError, ValueError, KeyError) as e:
            usage(f"cannot read a snapshot: {e}")
        report(delta(before, after, cpus, packets), as_json)
        return 0
    if cmd == "run":
        if "--" not in args:
            usage("run needs -- CMD [ARG...]")
        cpus, packets, as_json, rest = parse_opts(args)
        if not rest:
            usage("run needs a command after --")
        before = snapshot()
        try:
            rc = subprocess.call(rest)
        except OSError as e:
            usage(f"cannot run {rest[0]}: {e}")
        after = snapshot()
        report(delta(before, after, cpus, packets), as_json)
        return rc
    usage(f"unknown command '{cmd}'")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
