# SPDX-License-Identifier: GPL-2.0
"""exp_nf.py's trials: a session of one NF on one rig, its trials' loss
accounting (where each lost frame went), the NDR search of a group
(nfsl.ndr) and the CPU per frame of its trials."""
import time
import xsk_rig as X

from nfsl import bench as B
from nfsl import cpustat
from nfsl import ndr as N
from nf_rig import FLUSH_FACTOR, PROBE_HEADROOM, log
from nf_report import fmt_k


# -------------------------------------------------------------- trials --
class Session:
    """One nfslice-nf on a rig, and the trials against it."""

    def __init__(self, rig, a, chain, key, trials, problems, sessions, extra=(),
                 nfname=None):
        self.rig, self.a, self.key = rig, a, key
        self.trials, self.problems = trials, problems
        self.nf = X.NF(rig.host, "1q", a.rx, nfname or chain, 1, rig.domain, extra)
        self.rec = {**key, "command": self.nf.command()}
        self.prepared = None
        self.quiet = 0.0        # monotonic time our last traffic has drained by
        sessions.append(self.rec)

    def __enter__(self):
        try:
            self.nf.start()
            if hasattr(self.rig, "confine"):
                self.rig.confine(self.nf.p.pid)
        except X.NFError as e:
            self.rec.update(error=str(e), evidence=e.evidence)
            self.problems.append({"what": "start", "error": str(e), **e.evidence})
            raise
        self.rec["starts"] = self.nf.starts
        return self

    def __exit__(self, *exc):
        st = self.nf.stop()
        self.rec.update(returncode=st["returncode"], reports=st["reports"],
                        stderr=st["stderr"], final=st["final"])
        if st["returncode"] != 0 or st["final"] is None or st["unparsed_stdout"]:
            self.problems.append({"what": "exit", "command": self.nf.command(),
                                  "returncode": st["returncode"],
                                  "final_report": st["final"] is not None,
                                  "stderr": st["stderr"], "unparsed": st["unparsed_stdout"]})
        return False

    def prepare(self, g, rate, lo, dirty):
        """Before a sliced trial of group G at RATE: a store without the
        payloads of frames an earlier trial lost. Park: the domain
        attached afresh when the last trial lost frames (DIRTY) or G warms
        up, then for G["warm"] FLUSH_FACTOR x expiry x partition slots
        frames at RATE, so the trial meets the store in its steady state at
        that rate and drop ratio (dead slots of denied headers included).
        Inline (the NF holds the domain): after a lossy trial, that many
        frames at LO, the highest rate passed, so the lost payloads expire
        (PayloadPark Alg. 1). Recorded in the next trial's "prepared"."""
        rec = {}
        if self.rig.kind == "park":
            if dirty or g.get("warm"):
                self.rig.reattach()
                rec["reattached"] = True
            if g.get("warm"):
                rec.update(self.flush(g, rate))
        elif dirty:
            rec.update(self.flush(g, lo))
        self.prepared = rec or None

    def flush(self, g, rate):
        slots, expiry = self.rig.partition_slots()
        n = int(FLUSH_FACTOR * expiry * slots)
        rate = max(1000, rate)
        cmd = self.rig.gen(g["traffic"], rate, n / rate, g["flows"])
        r = X.run_gens(self.rig.host, [cmd], timeout=n / rate + 20)[0]
        self.quiet = time.monotonic() + X.DRAIN_S
        return {"flush_frames": r["transmitted"], "flush_rate": rate,
                "partition_slots": slots, "expiry": expiry}

    def trial(self, kind, g, rate, seconds, extra=None):
        """One trial of group G (traffic, flows, allowed share) at RATE
        (0: unpaced) for SECONDS; its record (also in self.trials)."""
        nf = self.nf
        # the report that opens the trial: recent, and after any earlier
        # traffic (a flush) has drained
        t0, r0 = nf.latest()
        need = max(self.quiet, time.monotonic() - 0.3)
        if t0 < need:
            t0, r0 = nf.wait_report(need)
        c0, s0, p0 = self.rig.counters(), cpustat.snapshot(), nf.cpu_ns()
        cmd = self.rig.gen(g["traffic"], rate, seconds, g["flows"])
        res = X.run_gens(self.rig.host, [cmd], timeout=seconds + 20)[0]
        end = time.monotonic()
        self.quiet = end + X.DRAIN_S
        _, r1 = nf.wait_report(self.quiet)
        c1, s1, p1 = self.rig.counters(), cpustat.snapshot(), nf.cpu_ns()
        sent = res["transmitted"]
        got = min(c1["delivered"] - c0["delivered"], sent)
        el = max(res["elapsed_s"], 1e-9)
        d = X.rdelta(r0, r1)
        d["nf_counters"] = {n: {k: v - r0["nf_counters"][n][k] for k, v in c.items()}
                            for n, c in r1["nf_counters"].items()}
        expected = expected_frames(sent, g["allowed"], d)
        rec = {**self.key, **{k: g[k] for k in ("group", "traffic", "flows", "sliced")},
               "kind": kind, "t_start": round(end - el, 3), "seconds": seconds,
               "offered_pps": rate or None, "achieved_pps": res["achieved_pps"],
               "avg_frame_bytes": res.get("avg_frame_bytes"),
               "sent": sent, "expected": expected, "delivered": got,
               "loss_frac": (expected - got) / expected if expected else None,
               "delivered_pps": got / el, "gen_elapsed_s": el,
               "driver_dropped": res.get("driver_dropped"), "nfc": d}
        if c0["delivered_bytes"] is not None:
            rec["delivered_bytes"] = c1["delivered_bytes"] - c0["delivered_bytes"]
        else:
            rec["delivered_bytes"] = got * g["traffic"] if g["traffic"] != "mix" else None
        rec["goodput_gbps"] = (rec["delivered_bytes"] * 8 / el / 1e9
                               if rec["delivered_bytes"] is not None else None)
        if c0.get("link"):
            rec["link"] = {k: c1["link"][k] - c0["link"][k] for k in c0["link"]}
        if c0.get("extra"):
            rec.update({k: c1["extra"][k] - v for k, v in c0["extra"].items()
                        if k in c1["extra"]})
        if c0["slicer"] and c1["slicer"]:
            rec["slicer"] = {k: c1["slicer"][k] - c0["slicer"][k] for k in c1["slicer"]
                             if isinstance(c1["slicer"][k], int)
                             and k not in ("slots", "slots_busy")}
            rec["slicer"]["slots_busy_after"] = c1["slicer"].get("slots_busy")
        cs = cpustat.delta(s0, s1, cpus=[self.a.gen_cpu, self.a.nf_cpu])
        rec["cpu_wall_ns"] = cs["wall_ns"]
        rec["cpu_busy_frac"] = {str(c): v["nonidle_ns"] / max(cs["wall_ns"], 1)
                                for c, v in cs["cpus"].items()}
        if p0 and p1:
            rec["nf_cpu_ns"] = p1["sched_ns"] - p0["sched_ns"]
            rec["nf_cpu_frac"] = rec["nf_cpu_ns"] / max(cs["wall_ns"], 1)
        rec["loadavg"] = B.loadavg()
        rec["losses"] = losses(rec)
        rec["prepared"], self.prepared = self.prepared, None
        rec.update(extra or {})
        self.check(rec)
        self.trials.append(rec)
        return rec

    def check(self, rec):
        """Counter sanity: every steered frame received or dropped by the
        kernel; every lost frame found somewhere."""
        d, issues = rec["nfc"], []
        acc = (d["steer"]["steered"] - d["total"]["rx"] - d["kernel"]["rx_dropped"]
               - d["kernel"]["rx_ring_full"])
        tol = max(64, 0.001 * rec["sent"])
        if abs(acc) > tol:
            issues.append(f"steered - rx - rx_dropped - rx_ring_full = {acc}")
        if abs(rec["losses"]["unaccounted"]) > tol:
            issues.append(f"{rec['losses']['unaccounted']:.0f} frames lost where no "
                          "counter shows them")
        if issues:
            rec["issues"] = issues
            self.problems.append({"what": "counters", "group": rec["group"],
                                  "kind": rec["kind"], "offered_pps": rec["offered_pps"],
                                  "sent": rec["sent"], "issues": issues,
                                  "losses": rec["losses"], "command": self.nf.command()})


def expected_frames(sent, allowed, d):
    """Frames of SENT the server should get: all, or with a firewall
    denying a share 1 - ALLOWED of the flows, those the firewall allowed
    plus that share of the frames lost before it (the generator's flows
    take turns over the mix's sizes, so a short run does not split its
    frames among them exactly)."""
    fw = d["nf_counters"].get("fw")
    if allowed >= 1 or not fw:
        return sent * allowed
    return fw["allowed"] + max(0, sent - fw["allowed"] - fw["denied"]) * allowed


def losses(rec):
    """Frames lost per place (or counter) in a trial; "unaccounted" is the
    rest of expected - delivered."""
    d, out = rec["nfc"], {}
    steered = d["steer"]["steered"]
    lk = rec.get("link") or {}
    if lk:
        out["link_to_nf"] = lk["to_nf_drops"]
        out["veth_to_nf"] = lk["slcnf_tx_dropped"]
        out["slicing_host_in"] = max(0, rec["sent"] - lk["to_nf_packets"] - lk["to_nf_drops"])
    else:
        out["before_nf"] = max(0, rec["sent"] - steered)
    out["nf_rx_ring_full"] = d["kernel"]["rx_ring_full"]
    out["nf_rx_dropped"] = d["kernel"]["rx_dropped"]
    denied = (d["nf_counters"].get("fw") or {}).get("denied", 0)
    out["nf_drops"] = max(0, d["total"]["drops"] - denied)
    for k in ("stale", "too_big", "no_room", "tx_full"):
        out[f"nf_{k}"] = d["total"][k]
    if lk:
        # what the NF sent (headers and notices) that slcnf did not get
        out["veth_from_nf"] = max(0, d["total"]["tx"] + d["total"]["notices"]
                                  - lk["slcnf_rx"])
        out["link_from_nf"] = lk["from_nf_drops"]
    else:
        out["after_nf"] = max(0, d["total"]["tx"] - rec["delivered"])
    sl = rec.get("slicer") or {}
    for k in ("stale", "too_big", "splice_failed", "replayed"):
        if sl.get(k):
            out[f"slicer_{k}"] = sl[k]
    # every frame sent: delivered, denied by the firewall, or lost
    lost = rec["sent"] - rec["delivered"] - denied
    out["unaccounted"] = lost - sum(out.values())
    return out


def limit_of(rec):
    """The place that lost the most frames in REC (None if it lost none)."""
    if rec is None or not rec.get("losses"):
        return None
    k, v = max(((k, v) for k, v in rec["losses"].items() if k != "unaccounted"),
               key=lambda kv: kv[1], default=(None, 0))
    lost = sum(max(0, x) for x in rec["losses"].values())
    if v <= 0 or v < 0.25 * lost:
        return "unaccounted" if rec["losses"]["unaccounted"] > 0 else None
    return k


def ndr(sess, g, a):
    """The NDR of group G in session SESS: probe, then bisection. A dict:
    ndr_pps (offered rate of the best passing trial), delivered_pps,
    goodput_gbps, upper_pps, limit (of the first failing trial above it),
    the trials' indexes."""
    def passes(r):
        return N.passes(r["loss_frac"])
    first = len(sess.trials)
    probes = []
    for _ in range(2):
        # a second probe when the first lost nothing: the generator's
        # unpaced speed varies with what else runs on its CPU
        p = sess.trial("probe", g, 0, 1.0)
        p["pass"] = passes(p)
        probes.append(p)
        if not p["pass"]:
            break
    ok = [p for p in probes if p["pass"]]
    best = max(ok, key=lambda r: r["achieved_pps"]) if ok else None
    probe = probes[-1]
    out = {"group": g["group"], "probe_delivered_pps": probe["delivered_pps"],
           "probe_pass": probe["pass"], "best": None, "fail": None}
    fail = None if probe["pass"] else probe
    if probe["pass"]:
        # nothing lost unpaced: the generator (whose CPU also runs the
        # receive path) was the limit then; paced trials look above it
        lo, hi = best["achieved_pps"], 2 * best["achieved_pps"]
    else:
        share = probe["delivered"] / max(probe["expected"], 1)
        if not g["sliced"] and limit_of(probe) in ("link_to_nf", "link_from_nf") \
                and probe["delivered_bytes"] and probe.get("avg_frame_bytes"):
            # a shaper short of room drops big frames first: bytes, not
            # frames, say how much of the offered load the link carried
            share = probe["delivered_bytes"] / max(
                1, probe["expected"] * probe["avg_frame_bytes"])
        # from a quarter of what the overloaded probe delivered (x 1.25) to
        # the generator's unpaced rate: an overloaded sliced path can
        # deliver far less than its NDR (lost headers leave busy slots,
        # their packets go on unsliced and overload the link further)
        bound = PROBE_HEADROOM * probe["achieved_pps"] * share
        # a warmed store (fig12 without notices) may hold so many dead
        # payloads that most packets go on unsliced: far below a cold probe
        lo = max(500.0, bound / a.span / (8 if g.get("warm") else 1))
        hi = max(bound, max(p["achieved_pps"] for p in probes)) * 1.02
        if best is not None:
            lo = max(lo, min(best["achieved_pps"], hi / 1.02))
    out["step"] = (hi / lo) ** (1 / 2 ** a.bisect) if a.bisect else None
    dirty = not probe["pass"]

    def attempt(mid, lo):
        nonlocal dirty
        if g["sliced"]:
            sess.prepare(g, mid, lo, dirty)
        r = sess.trial("bisect", g, mid, a.trial)
        r["pass"] = passes(r)
        dirty = not r["pass"]
        return r

    lo, hi, best_b, fail_b = N.bisect(lo, hi, a.bisect, attempt, "achieved_pps")
    if best_b is not None and (best is None or
                               best_b["achieved_pps"] > best["achieved_pps"]):
        best = best_b
    fail = fail_b or fail
    # the generator could not make more than the best rate: no failure
    # above it, or the best trial fell short of its offered rate
    out["generator_bound"] = best is not None and (fail is None or (
        best["offered_pps"] and best["achieved_pps"] < X.GEN_KEEP_UP * best["offered_pps"]))
    out["upper_pps"] = hi
    if best is not None:
        out.update(best=sess.trials.index(best),
                   ndr_pps=best["achieved_pps"], delivered_pps=best["delivered_pps"],
                   goodput_gbps=best["goodput_gbps"], gen_kept_up=(
                       not best["offered_pps"] or
                       best["achieved_pps"] >= X.GEN_KEEP_UP * best["offered_pps"]),
                   sliced_share=sliced_share(best))
    else:
        out.update(ndr_pps=None, delivered_pps=None, goodput_gbps=None)
    if fail is not None:
        out["fail"] = sess.trials.index(fail)
        out["limit"] = limit_of(fail)
        out["fail_losses"] = fail["losses"]
        out["fail_loss_frac"] = fail["loss_frac"]
    out["trials"] = list(range(first, len(sess.trials)))
    out.update(cpu_of(sess.trials, out["trials"]))
    return out


def cpu_per_frame(r):
    """CPU time per frame sent in trial R, ns: "nf", nfslice-nf's threads
    (schedstat: with the softirq work the kernel runs in their system
    calls), "cpu<N>", all non-idle time of CPU N (/proc/stat, 10 ms
    ticks); and "busy<N>", CPU N's non-idle time over the traffic's
    duration (at most: the window also holds the drain). The times cover
    the counters' window, from the NF report before the traffic to the
    one after it (1-2 s around --trial s of traffic), so they are divided
    by the frames sent, not by the rate. Records without the window's
    length (cpu_wall_ns, missing in older results files) use the interval
    between those two reports (nfc dt_s) for it: the snapshots are taken
    after each report, so the two differ by the time taken to read the
    counters, some 10 ms, or up to 0.3 s where the first report was not
    waited for."""
    wall = r.get("cpu_wall_ns") or r["nfc"]["dt_s"] * 1e9
    if not r.get("sent") or not wall:
        return {}
    out = {}
    if r.get("nf_cpu_ns") is not None:
        out["nf"] = r["nf_cpu_ns"] / r["sent"]
    elif r.get("nf_cpu_frac") is not None:
        out["nf"] = r["nf_cpu_frac"] * wall / r["sent"]
    for c, f in (r.get("cpu_busy_frac") or {}).items():
        out[f"cpu{c}"] = f * wall / r["sent"]
        out[f"busy{c}"] = f * wall / 1e9 / max(r["gen_elapsed_s"], 1e-9)
    return out


def cpu_of(trials, idx):
    """Medians of cpu_per_frame() over the paced trials of IDX (indexes
    into TRIALS) that lost nothing: what one frame costs at or below the
    NDR. {"nf_ns_per_pkt": .., "cpu_ns_per_pkt": {cpuN: ..},
    "busy_in_traffic": {N: ..}}."""
    per = [cpu_per_frame(trials[i]) for i in idx
           if trials[i]["kind"] == "bisect" and trials[i].get("pass")]
    keys = sorted({k for p in per for k in p})
    return {"nf_ns_per_pkt": B.median([p.get("nf") for p in per]),
            "cpu_ns_per_pkt": {k: B.median([p.get(k) for p in per])
                               for k in keys if k.startswith("cpu")},
            "busy_in_traffic": {k[4:]: B.median([p.get(k) for p in per])
                                for k in keys if k.startswith("busy")}}


def sliced_share(r):
    sl = r.get("slicer") or {}
    n = sl.get("sliced", 0) + sl.get("skipped_full", 0)
    return sl.get("sliced", 0) / n if n else None


def note(res, what):
    log(f"  {what}: NDR {fmt_k(res['ndr_pps'])} kpps"
        + (f", {res['goodput_gbps'] * 1e3:.1f} Mbit/s" if res.get("goodput_gbps") else "")
        + (" (generator-bound)" if res.get("generator_bound") else "")
        + (f", limit {res.get('limit')}" if res.get("limit") else ""))
