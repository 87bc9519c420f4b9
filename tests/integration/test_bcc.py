# SPDX-License-Identifier: GPL-2.0
"""The bcc tools (userspace/bcc/, issue 10 §4): nfslice-drops and nfslice-top.

One rig, one domain (--ttl 0: an nfsliced on the host never evicts behind
the test's back), an nftables table in the DUT that drops UDP to DROP_PORT
in the forward hook, and client and server that drop what they receive
(Rig.silence_endpoints: no ICMP errors cross the DUT; their drops happen
in namespaces with the same ifindexes as the DUT's, which the tools must
not report).

- nfslice-drops (from the host, --netns, --duration, --json): exactly the
  datagrams sent to DROP_PORT, each once, as the kernel's NETFILTER_DROP
  on dut0, sliced ones (DSCP 63, 44/64 B) as many as the domain sliced;
  the summary counts them; `nfslice events` missing (an nfslice built
  before it) is said once on stderr.
- nfslice-drops (in the namespace, SIGINT): a sliced header replayed by
  the DUT itself after its payload was spliced is dropped as stale by the
  splicer of dut1, the kernel's TC_EGRESS there; the lines of `nfslice
  events` (a stand-in nfslice whose `events` prints two known records)
  are merged as source nfslice.
- nfslice-drops --iface: an XDP program that returns XDP_ABORTED on a
  veth of the DUT that the test made, N frames in: exactly N
  xdp:xdp_exception events EXCEPTION_ABORTED with that program's id. The
  slicer itself never aborts (it passes or drops), so an exception on a
  domain interface cannot be provoked without changing the datapath.
- nfslice-top (--count 2 --interval 0.5 --json): the domain's sliced,
  spliced and parked bytes summed over the reports equal `nfslice stats`
  deltas around the run, exactly; so do the per-interface counts of the
  bcc program (everything sliced on dut0, spliced on dut1); its occupancy
  is stats' slots_busy.

bcc compiles its programs in about a second here; a machine without bcc
or kernel headers skips with the reason (scripts/install-deps.sh installs
and links them).
"""
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from nfsl.rig import NFSLICE, PY, ROOT, describe, must, name, run

TOOLS = ROOT / "userspace" / "bcc"
DROPS = TOOLS / "nfslice-drops"
TOP = TOOLS / "nfslice-top"
DOMAIN = "bcc"
PASS_PORT = 5201        # the rig's firewall forwards UDP 5201
DROP_PORT = 7402        # dropped by table inet nfit_bcc
SIZE = 1000             # UDP payload bytes: sliced (1042/1062 B frames)
SMALL = 100             # below the 256 B threshold: not sliced
READY_TIMEOUT = 60      # s: bcc compiles and attaches


def bcc_unusable():
    """Why bcc cannot work here, or None."""
    cp = run([PY, "-c", "import bcc"])
    if cp.returncode != 0:
        return (f"{PY} cannot import bcc (python3-bpfcc): "
                f"{cp.stderr.strip().splitlines()[-1:]}")
    build = f"/lib/modules/{os.uname().release}/build"
    if not os.path.exists(build):
        return (f"no kernel headers for bcc ({build} missing): "
                "scripts/install-deps.sh links Debian's")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        return "no kernel BTF (/sys/kernel/btf/vmlinux)"
    return None


UNUSABLE = bcc_unusable()
pytestmark = pytest.mark.skipif(UNUSABLE is not None, reason=UNUSABLE or "")

# The programs the tests run, next to this file (their docstrings say what
# they do): the client's sender, the DUT's replay of a sliced datagram, and
# a stand-in nfslice whose `events` prints two records.
HERE = Path(__file__).resolve().parent
SENDER = HERE / "bcc_sender.py"
REPLAY = HERE / "bcc_replay.py"
STUB = HERE / "bcc_nfslice_stub.py"

# An XDP program that aborts every frame (tests/integration/bpf/, make).
XDP_ABORT_OBJ = ROOT / "build" / ".output" / "xdp_abort.bpf.o"


class Tool:
    """A bcc tool run in the background: stdout and stderr collected by
    threads, ready once it says "watching" on stderr."""

    def __init__(self, args, env=None):
        self.proc = subprocess.Popen(
            [str(a) for a in args], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            start_new_session=True,
            env={**os.environ, **env} if env else None)
        self.out, self.err = [], []
        self.ready = threading.Event()
        self.threads = [threading.Thread(target=self._read, args=(f, d),
                                         daemon=True)
                        for f, d in ((self.proc.stdout, self.out),
                                     (self.proc.stderr, self.err))]
        for t in self.threads:
            t.start()

    def _read(self, f, dest):
        for line in f:
            dest.append(line.rstrip("\n"))
            if f is self.proc.stderr and "watching" in line:
                self.ready.set()

    def wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT
        while not self.ready.wait(0.1):
            assert self.proc.poll() is None and time.monotonic() < deadline, \
                f"tool not ready: exit {self.proc.poll()}, {self.text()}"

    def finish(self, timeout=30):
        """Wait for exit; (exit status, JSON objects of stdout)."""
        rc = self.proc.wait(timeout=timeout)
        for t in self.threads:
            t.join(5)
        objs = []
        for line in self.out:
            try:
                objs.append(json.loads(line))
            except ValueError:
                pass
        return rc, objs

    def stop(self):
        """End it (its process group: the tool and its nfslice events)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)

    def text(self):
        return "stdout:\n" + "\n".join(self.out) + "\nstderr:\n" + \
            "\n".join(self.err)


@pytest.fixture
def tools():
    """Starts Tools; ends those still running after the test."""
    started = []

    def start(args, env=None):
        t = Tool(args, env)
        started.append(t)
        return t
    yield start
    for t in started:
        t.stop()


@pytest.fixture(scope="module")
def rig(rigs):
    """The rig with domain DOMAIN and the DROP_PORT rule."""
    r = rigs(name("bcc"))
    r.silence_endpoints()
    r.prime_neighbors()
    r.attach("dut0", "dut1", name=DOMAIN, opts=("--ttl", "0"))
    must(r.exec("dut", "nft", "-f", "-", input=(
        "table inet nfit_bcc {\n"
        "  chain forward {\n"
        "    type filter hook forward priority filter - 10; policy accept;\n"
        f"    udp dport {DROP_PORT} counter drop\n"
        "  }\n"
        "}\n")))
    return r


def send(rig, *triples, stdin="go\n"):
    """Run SENDER in the client now; datagrams sent."""
    cp = rig.exec("cli", PY, SENDER, *triples, input=stdin,
                  timeout=30)
    return json.loads(must(cp).splitlines()[-1])["sent"]


def test_drops_netfilter(rig, tools):
    """Every datagram the DUT's firewall drops, once, as the kernel says."""
    n_big, n_small = 30, 10
    before = rig.stats(DOMAIN)
    t = tools([DROPS, "--netns", rig.ns("dut"), "--name", DOMAIN, "--json",
               "--duration", "4"])
    t.wait_ready()
    e = rig.env
    sent = send(rig, e["SRV_IP4"], DROP_PORT, f"{n_big}:{SIZE}",
                e["SRV_IP6"], DROP_PORT, f"{n_big}:{SIZE}",
                e["SRV_IP4"], DROP_PORT, f"{n_small}:{SMALL}")
    assert sent == 2 * n_big + n_small
    rc, objs = t.finish()
    assert rc == 0, t.text()
    after = rig.stats(DOMAIN)
    events = [o for o in objs if "source" in o]
    summary = objs[-1]
    assert "summary" in summary, t.text()
    want = {("dut0", "kernel", "NETFILTER_DROP", "udp", DROP_PORT)}
    got = {(o["ifname"], o["source"], o["reason"], o["proto"], o["dport"])
           for o in events}
    assert got == want and len(events) == sent, t.text()
    sliced = [o for o in events if o["dscp"] == 63]
    # Sliced: IP + UDP header + 16 B token; the others whole.
    assert sorted({o["len"] for o in sliced}) == [44, 64], t.text()
    assert len(sliced) == after["sliced"] - before["sliced"] == 2 * n_big
    dut0 = rig.link("dut", "dut0")["ifindex"]
    assert summary["summary"] == [{"ifname": "dut0", "ifindex": dut0,
                                   "source": "kernel",
                                   "reason": "NETFILTER_DROP",
                                   "count": sent}], summary
    assert summary["events"] == sent and summary["lost"] == 0, summary
    assert not [ln for ln in t.err if "no nfslice drop events" in ln], \
        t.text()


def test_drops_stale_and_nfslice_events(rig, tools, tmp_path):
    """A splicer drop is the kernel's TC_EGRESS on the egress interface;
    `nfslice events` lines are merged as source nfslice."""
    stub = STUB
    wrapper = tmp_path / "nfslice-wrap"
    wrapper.write_text(f"#!/bin/sh\nexec {stub} {NFSLICE} \"$@\"\n")
    wrapper.chmod(0o755)
    before = rig.stats(DOMAIN)
    replay = rig.spawn("dut", PY, REPLAY, stdout=subprocess.PIPE)
    assert replay.stdout.readline().strip() == "ready"
    t = tools(["ip", "netns", "exec", rig.ns("dut"), DROPS, "--name", DOMAIN,
               "--json"], env={"NFSLICE": str(wrapper)})
    t.wait_ready()
    assert send(rig, rig.env["SRV_IP4"], PASS_PORT, f"1:{SIZE}") == 1
    assert rig.collect(replay, 30).strip() == "replayed"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and \
            sum('"TC_EGRESS"' in ln for ln in t.out) < 1:
        time.sleep(0.05)
    time.sleep(0.3)             # anything else would show by now
    t.proc.send_signal(signal.SIGINT)
    rc, objs = t.finish()
    assert rc == 0, t.text()
    after = rig.stats(DOMAIN)
    assert after["stale"] - before["stale"] == 1, after
    assert after["spliced"] - before["spliced"] == 1, after
    kern = [o for o in objs if o.get("source") == "kernel"]
    assert [(o["ifname"], o["reason"], o["dscp"], o["dport"])
            for o in kern] == [("dut1", "TC_EGRESS", 63, PASS_PORT)], t.text()
    nfs = [o for o in objs if o.get("source") == "nfslice"]
    assert [(o["ifname"], o["reason"], o["sport"], o["slot"]) for o in nfs] \
        == [("dut1", "stale", 1000, 7), ("dut1", "too_big", 1001, 8)], \
        t.text()
    assert all(abs(o["time"] - time.time()) < 60 for o in nfs), nfs
    summary = objs[-1]
    assert summary["nfslice_events"] is True, summary
    assert sorted((r["ifname"], r["source"], r["reason"], r["count"])
                  for r in summary["summary"]) == [
        ("dut1", "kernel", "TC_EGRESS", 1), ("dut1", "nfslice", "stale", 1),
        ("dut1", "nfslice", "too_big", 1)], summary
    assert not [ln for ln in t.err if "no nfslice drop events" in ln], \
        t.text()


def test_drops_stale_with_real_events(rig, tools):
    """The same splicer drop with the domain's drop events on: the kernel's
    TC_EGRESS and the splicer's own record, read from the real `nfslice
    events`, name the same interface; the record carries the token."""
    must(rig.nfslice("set", "--name", DOMAIN, "--events", "on"))
    try:
        before = rig.stats(DOMAIN)
        replay = rig.spawn("dut", PY, REPLAY, stdout=subprocess.PIPE)
        assert replay.stdout.readline().strip() == "ready"
        t = tools([DROPS, "--netns", rig.ns("dut"), "--name", DOMAIN,
                   "--json"])
        t.wait_ready()
        assert send(rig, rig.env["SRV_IP4"], PASS_PORT, f"1:{SIZE}") == 1
        assert rig.collect(replay, 30).strip() == "replayed"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (
                sum('"TC_EGRESS"' in ln for ln in t.out) and
                sum('"stale"' in ln for ln in t.out)):
            time.sleep(0.05)
        t.proc.send_signal(signal.SIGINT)
        rc, objs = t.finish()
        assert rc == 0, t.text()
        after = rig.stats(DOMAIN)
        assert after["stale"] - before["stale"] == 1, after
        assert after["events_lost"] == before["events_lost"], after
        got = sorted((o["source"], o["ifname"], o["reason"], o["dport"])
                     for o in objs if "source" in o)
        assert got == [("kernel", "dut1", "TC_EGRESS", PASS_PORT),
                       ("nfslice", "dut1", "stale", PASS_PORT)], t.text()
        rec = [o for o in objs if o.get("source") == "nfslice"][0]
        assert rec["gen"] >= 1, rec
    finally:
        must(rig.nfslice("set", "--name", DOMAIN, "--events", "off"))


def test_drops_xdp_exception(rig, tools):
    """N frames into an XDP program that aborts: N xdp_exception events."""
    n = 25
    obj = XDP_ABORT_OBJ
    dut = rig.ns("dut")
    ip = ["ip", "-n", dut]
    must(run([*ip, "link", "add", "xab0", "type", "veth", "peer", "name",
              "xab1"]))
    for dev in ("xab0", "xab1"):
        # Nothing but the test's frames: no IPv6 autoconfiguration.
        must(run([*ip, "link", "set", "dev", dev, "addrgenmode", "none"]))
        must(rig.exec("dut", "sysctl", "-qw",
                      f"net.ipv6.conf.{dev}.disable_ipv6=1"))
    must(run([*ip, "link", "set", "dev", "xab0", "xdp", "obj", str(obj),
              "sec", "xdp"]))
    for dev in ("xab0", "xab1"):
        must(run([*ip, "link", "set", "dev", dev, "up"]))
    link = json.loads(must(run([*ip, "-j", "link", "show", "dev", "xab0"])))
    prog_id = link[0]["xdp"]["prog"]["id"]
    t = tools(["ip", "netns", "exec", dut, DROPS, "--name", DOMAIN,
               "--iface", "xab0", "--json"])
    t.wait_ready()
    # Broadcast, a local EtherType (0x88b5), 46 B of zeros.
    frame = "ffffffffffff" "020000000001" "88b5" + "00" * 46
    must(rig.exec("dut", PY, "-c",
                  "import socket, sys\n"
                  "s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n"
                  "s.bind(('xab1', 0))\n"
                  f"for _ in range({n}): s.send(bytes.fromhex('{frame}'))\n"))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and \
            sum("EXCEPTION_ABORTED" in ln for ln in t.out) < n:
        time.sleep(0.05)
    time.sleep(0.3)
    t.proc.send_signal(signal.SIGTERM)
    rc, objs = t.finish()
    assert rc == 0, t.text()
    xdp = [o for o in objs if o.get("source") == "xdp"]
    assert len(xdp) == n, t.text()
    assert {(o["ifname"], o["reason"], o["prog_id"]) for o in xdp} == \
        {("xab0", "EXCEPTION_ABORTED", prog_id)}, t.text()
    assert [r for r in objs[-1]["summary"] if r["source"] == "xdp"] == [
        {"ifname": "xab0", "ifindex": link[0]["ifindex"], "source": "xdp",
         "reason": "EXCEPTION_ABORTED", "count": n}], objs[-1]


def test_top_matches_stats(rig, tools):
    """Rates and occupancy agree with `nfslice stats` deltas, exactly."""
    n_pass, n_drop = 60, 15
    e = rig.env
    before = rig.stats(DOMAIN)
    sender = subprocess.Popen(
        ["ip", "netns", "exec", rig.ns("cli"), PY, SENDER,
         e["SRV_IP4"], str(PASS_PORT), f"{n_pass}:{SIZE}",
         e["SRV_IP6"], str(PASS_PORT), f"{n_pass}:{SIZE}",
         e["SRV_IP4"], str(DROP_PORT), f"{n_drop}:{SIZE}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        t = tools(["ip", "netns", "exec", rig.ns("dut"), TOP, "--name",
                   DOMAIN, "--interval", "0.5", "--count", "2", "--json"])
        t.wait_ready()
        # Sent within the first report's interval (a few ms of sendto).
        out, _ = sender.communicate("go\n", timeout=30)
        assert json.loads(out)["sent"] == 2 * n_pass + n_drop
        rc, reps = t.finish()
    finally:
        if sender.poll() is None:
            os.killpg(sender.pid, signal.SIGKILL)
            sender.wait(10)
    assert rc == 0 and len(reps) == 2, t.text()
    after = rig.stats(DOMAIN)
    delta = {k: after[k] - before[k] for k in
             ("sliced", "spliced", "parked_bytes")}
    assert delta["sliced"] == 2 * n_pass + n_drop, (before, after)
    assert delta["spliced"] == 2 * n_pass, (before, after)
    summed = {k: sum(r["domain"][k] for r in reps) for k in delta}
    assert summed == delta, (summed, delta, t.text())
    assert reps[-1]["domain"]["slots_busy"] == after["slots_busy"], \
        (reps[-1], after)
    assert reps[-1]["domain"]["slots"] == after["slots"]

    def per(ifname, key):
        return sum(i[key] for r in reps for i in r["interfaces"]
                   if i["ifname"] == ifname)
    assert (per("dut0", "sliced"), per("dut1", "sliced")) == \
        (delta["sliced"], 0), t.text()
    assert (per("dut0", "spliced"), per("dut1", "spliced")) == \
        (0, delta["spliced"]), t.text()
    for ifname in ("dut0", "dut1"):
        assert per(ifname, "passed63") == per(ifname, "edrop") == 0
    # Every sliced header entered by dut0: rx counts at least those.
    assert per("dut0", "rx_packets") >= delta["sliced"]
    # Rates are the deltas over the measured interval.
    for r in reps:
        d = r["domain"]
        assert d["sliced_pps"] == pytest.approx(
            d["sliced"] / r["interval_s"], rel=1e-3, abs=1e-3), r
        assert 0.45 < r["interval_s"] < 5, r


def test_top_text_and_usage(rig, tools):
    """The text report names its columns; bad usage exits 2."""
    t = tools(["ip", "netns", "exec", rig.ns("dut"), TOP, "--name", DOMAIN,
               "--interval", "0.2", "--count", "1"])
    rc, _ = t.finish(timeout=60)
    assert rc == 0, t.text()
    text = "\n".join(t.out)
    for col in ("IFACE", "SLICE/s", "SPLICE/s", "PASS63/s", "EDROP/s",
                "busy", "dut0", "dut1"):
        assert col in text, text
    cp = run([TOP, "--interval", "0"])
    assert cp.returncode == 2 and "--interval" in cp.stderr, describe(cp)
    cp = run(["ip", "netns", "exec", rig.ns("dut"), DROPS, "--name",
              "nfit-none", "--json"])
    assert cp.returncode == 1, describe(cp)
    assert "nfit-none" in json.loads(cp.stdout)["error"], describe(cp)
