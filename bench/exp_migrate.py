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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nfsl import bench as B
from nfsl import lat as L
from migrate_lab import (
    GEN_CPU, HARM, HOG_MS, KEPT, LOAD_PORT, LOAD_SPORT, MigLab, OPS, OP_RUN,
    PROBE_SPORT, fmt, lat, steps, store_slots)


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
    B.save_figure(fig, path)


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
