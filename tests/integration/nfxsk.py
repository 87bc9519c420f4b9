# SPDX-License-Identifier: GPL-2.0
"""nfxsk: the rig of the AF_XDP NF tests (test_xsk.py).

  gen ns              DUT ns                                sink ns
  g0 <-veth (Q queues)-> d0  nfslice-nf  d1 <-veth (Q queues)-> s0
  10.223.1.2             10.223.1.1      10.223.2.1             10.223.2.2
  fd00:223:1::2          fd00:223:1::1   fd00:223:2::1       fd00:223:2::2

Namespaces are nfrig.name("STEM-g|d|s"), unique per test run; every veth
has Q transmit and receive queues (privring and smallpriv need a queue per
worker). The DUT forwards IPv4 and IPv6 and both ends route through it, so
the kernel would send a gen -> sink frame out of d1, as nfslice-nf's l2fwd
does (the slicer slices only what the kernel would route out of a domain
interface), and it can carry the traffic itself when the NF is gone.

MACs are fixed, and g0 and s0 share one: l2fwd swaps the Ethernet
addresses of a frame it sends out of the other interface, so a gen -> sink
frame leaves d1 addressed to g0's MAC, which is also s0's: the sink takes
it as its own (and the gen takes l2fwd's sink -> gen frames). gen and sink
drop UDP and TCP at input except on LISTEN_PORTS, so crafted frames raise
no RSTs or ICMP errors that would cross the NF and change its counters.

XRig.destroy() (the fixtures' finalizer; also registered with atexit)
stops every process the rig started, detaches the slicing domains of its
DUT (pins included) and deletes the namespaces, whatever the test did.

Run as a script inside a namespace, this file is the kernel-socket traffic
(sockets of the kernel: their frames leave with the L4 checksum still to
be computed, CHECKSUM_PARTIAL, on veth's default offloads):

    nfxsk.py udpsend HOST PORT --count N --size B [--flows F] [--seed S]
    nfxsk.py tcpsink PORT
    nfxsk.py tcpsend HOST PORT --bytes N [--seed S]

udpsend: COUNT datagrams of B payload bytes from F sockets (flows) round
robin; datagram i holds MAGIC, i (4 bytes, big endian) and seeded bytes, as
datagram() makes them. Prints one JSON line {"sent": N, "errors": {...}}.
tcpsink accepts one connection on PORT (IPv4 and IPv6), reads it to the
end, answers "<bytes> <sha256>" and prints the same as JSON. tcpsend
sends stream() bytes, half-closes and prints {"sent", "reply"} as JSON.
"""
import atexit
import errno
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
MAGIC = b"nfxk"


def datagram(seed, i, size):
    """Payload of datagram I of the udpsend stream SEED, SIZE bytes."""
    body = random.Random(seed * 1000003 + i).randbytes(max(0, size - 8))
    return (MAGIC + i.to_bytes(4, "big") + body)[:size]


def _udpsend(argv):
    host, port = argv[0], int(argv[1])
    o = {"count": 1, "size": 100, "flows": 1, "seed": 1}
    i = 2
    while i < len(argv):
        o[argv[i][2:]] = int(argv[i + 1])
        i += 2
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    socks = []
    for _ in range(o["flows"]):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.connect((host, port))
        socks.append(s)
    res = {"sent": 0, "errors": {}}
    for n in range(o["count"]):
        data = datagram(o["seed"], n, o["size"])
        while True:
            try:
                socks[n % len(socks)].send(data)
                res["sent"] += 1
                break
            except OSError as e:
                if e.errno in (errno.ENOBUFS, errno.EAGAIN):
                    time.sleep(0.0005)
                    continue
                k = errno.errorcode.get(e.errno, str(e.errno))
                res["errors"][k] = res["errors"].get(k, 0) + 1
                break
    print(json.dumps(res), flush=True)
    return 0


def stream(seed, n):
    """The N bytes tcpsend sends (seeded)."""
    return random.Random(seed).randbytes(n)


SOCK_TIMEOUT = 20   # s: a stalled transfer fails instead of hanging


def _tcpsink(argv):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", int(argv[0])))
    s.listen(1)
    s.settimeout(SOCK_TIMEOUT)
    c, _ = s.accept()
    c.settimeout(SOCK_TIMEOUT)
    h, n = hashlib.sha256(), 0
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        h.update(b)
        n += len(b)
    c.sendall(f"{n} {h.hexdigest()}\n".encode())
    c.close()
    print(json.dumps({"bytes": n, "sha256": h.hexdigest()}), flush=True)
    return 0


def _tcpsend(argv):
    host, port = argv[0], int(argv[1])
    o = {"bytes": 1 << 18, "seed": 1}
    for i in range(2, len(argv), 2):
        o[argv[i][2:]] = int(argv[i + 1])
    data = stream(o["seed"], o["bytes"])
    c = socket.create_connection((host, port), timeout=SOCK_TIMEOUT)
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    reply = b""
    while True:
        b = c.recv(4096)
        if not b:
            break
        reply += b
    print(json.dumps({"sent": len(data),
                      "sha256": hashlib.sha256(data).hexdigest(),
                      "reply": reply.decode().strip()}), flush=True)
    return 0


if __name__ == "__main__":
    cmds = {"udpsend": _udpsend, "tcpsink": _tcpsink, "tcpsend": _tcpsend}
    if len(sys.argv) > 1 and sys.argv[1] in cmds:
        sys.exit(cmds[sys.argv[1]](sys.argv[2:]))
    sys.exit("usage: nfxsk.py udpsend|tcpsink|tcpsend ... (see the module "
             "docstring)")

# ----------------------------------------------------- as a test module --
from nfsl import rig as nfrig  # noqa: E402
from nfsl import topo as nfsltopo  # noqa: E402
from nfsl import pkt as nfpkt  # noqa: E402
from nfsl.rig import (NFSLICE, PY, ROOT, describe, must, poll,  # noqa: E402
                      purge_domains, run)

# NFSLICE_NF=path runs the tests against another nfslice-nf build.
NF = Path(os.environ.get("NFSLICE_NF") or ROOT / "build" / "nfslice-nf")
PKTGEN = ROOT / "build" / "nfslice-pktgen"
BPFFS = Path("/sys/fs/bpf")

GEN4, DUT4_IN, DUT4_OUT, SINK4 = ("10.223.1.2", "10.223.1.1", "10.223.2.1",
                                  "10.223.2.2")
GEN6, DUT6_IN, DUT6_OUT, SINK6 = ("fd00:223:1::2", "fd00:223:1::1",
                                  "fd00:223:2::1", "fd00:223:2::2")
# g0 and s0 share a MAC (module docstring).
MACS = {"g0": "02:23:00:00:00:02", "d0": "02:23:01:00:00:01",
        "d1": "02:23:02:00:00:01", "s0": "02:23:00:00:00:02"}
# UDP/TCP destination ports gen and sink accept at input; others are
# dropped there (nft).
LISTEN_PORTS = (7400, 7499)
THRESHOLD = nfpkt.THRESHOLD

# Measurements of rates run the NF and the generator under SCHED_FIFO:
# other work on the host (this machine has 2 vCPUs, shared) would delay
# their wake-ups by milliseconds, long enough to empty a 256-entry fill
# ring at 50 kpps and drop frames for reasons that have nothing to do with
# what is measured. Both sleep when idle (poll, clock_nanosleep), so they
# never hold a CPU; the kernel's RT throttling bounds them anyway.
RT_PRIO = 10
RT_CMD = ("chrt", "-f", str(RT_PRIO))

NF_STOP_TIMEOUT = 10    # s from SIGTERM to the NF's exit (drain: ~1 s)


def swap_macs(frame):
    """FRAME as l2fwd sends it: Ethernet destination and source swapped."""
    return frame[6:12] + frame[0:6] + frame[12:]


class NfRun:
    """One nfslice-nf process in the DUT (XRig.start_nf()).

    Its stdout (JSON reports, one per line) and stderr go to files of the
    rig's temp dir; stop() signals it and returns the final report.
    """

    def __init__(self, rig, proc, args, out, err):
        self.rig, self.proc, self.args = rig, proc, args
        self.out, self.err = out, err
        self.rc = None

    def alive(self):
        return self.proc.poll() is None

    def stderr(self):
        return self.err.read_text(errors="replace")

    def reports(self):
        """Every JSON report printed so far, parsed."""
        lines = self.out.read_text(errors="replace").splitlines()
        return [json.loads(ln) for ln in lines if ln.startswith("{")]

    def describe(self):
        return (f"$ nfslice-nf {' '.join(map(str, self.args))}\n-> "
                f"exit {self.proc.poll()}\nstdout: "
                f"{self.out.read_text(errors='replace').strip()[-2000:]}\n"
                f"stderr: {self.stderr().strip()[-2000:]}")

    def kill(self, sig=signal.SIGTERM):
        """Send SIG to the NF itself (not waiting)."""
        if self.alive():
            os.kill(self.proc.pid, sig)

    def stop(self, sig=signal.SIGTERM, timeout=NF_STOP_TIMEOUT):
        """Send SIG, wait at most TIMEOUT s for the exit, assert it was a
        clean one (exit 0, a final report); return the final report."""
        self.kill(sig)
        return self.wait(timeout)

    def wait(self, timeout):
        """Wait (bounded) for the NF to exit by itself; assert exit 0 and a
        final report; return the final report. On timeout the NF is killed
        and the assertion says so."""
        try:
            self.rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.rig.stop(self.proc)
            raise AssertionError(f"nfslice-nf did not exit within {timeout}"
                                 f" s:\n{self.describe()}")
        self.rig.forget(self.proc)
        assert self.rc == 0, self.describe()
        reps = self.reports()
        assert reps and reps[-1].get("final") is True, \
            f"no final report:\n{self.describe()}"
        return reps[-1]


class XRig:
    """The gen - DUT - sink rig of the module docstring, with QUEUES queues
    per veth. Roles: "gen", "dut", "sink"."""

    ROLES = ("gen", "dut", "sink")
    STEMS = {"gen": "g", "dut": "d", "sink": "s"}

    def __init__(self, stem, queues=2):
        self.stem, self.queues = stem, queues
        self.names = {r: nfrig.name(f"{stem}-{self.STEMS[r]}")
                      for r in self.ROLES}
        self.made = []          # namespaces created
        self.procs = []         # Popens started, not yet reaped
        self.cookie = None      # netns cookie of the DUT (its pin dir)
        self.tmp = Path(tempfile.mkdtemp(prefix=f"nfxsk-{stem}-"))
        self.nruns = 0
        atexit.register(self.destroy)

    # --------------------------------------------------------- basics --
    def ns(self, role):
        return self.names[role]

    def sh(self, role, *args, check=True, timeout=30, input=None):
        """Run ARGS in ROLE's namespace; the CompletedProcess (asserted
        with CHECK)."""
        cp = run(["ip", "netns", "exec", self.ns(role), *map(str, args)],
                 timeout=timeout, input=input)
        if check:
            assert cp.returncode == 0, describe(cp)
        return cp

    def check(self, role, *args, timeout=30):
        """sh() asserted; its stdout (nfpkt.send calls this)."""
        return self.sh(role, *args, timeout=timeout).stdout

    def ip(self, role, *args, check=True):
        cp = run(["ip", "-n", self.ns(role), *map(str, args)])
        if check:
            assert cp.returncode == 0, describe(cp)
        return cp

    def sysctl(self, role, key, value):
        self.sh(role, "sysctl", "-qw", f"{key}={value}")

    def spawn(self, role, *args, stdout=subprocess.DEVNULL,
              stderr=subprocess.DEVNULL):
        """Start ARGS in ROLE's namespace in a process group of its own
        (nfsltopo.start_process); tracked for destroy()."""
        p = nfsltopo.start_process(["ip", "netns", "exec", self.ns(role),
                                    *args], stdout=stdout, stderr=stderr)
        self.procs.append(p)
        return p

    def stop(self, p):
        """End P (SIGTERM, then SIGKILL, to its group) and forget it."""
        nfsltopo.stop_process(p)
        self.forget(p)

    def forget(self, p):
        if p in self.procs:
            self.procs.remove(p)

    def link(self, role, dev):
        """`ip -j -d link show DEV` in ROLE, a dict."""
        return json.loads(must(self.ip(role, "-j", "-d", "link", "show",
                                       "dev", dev)))[0]

    def xdp_prog(self, role, dev):
        """Name of the XDP program attached to DEV, or None."""
        x = self.link(role, dev).get("xdp") or {}
        prog = x.get("prog") or {}
        if not prog and x.get("attached"):
            prog = x["attached"][0].get("prog", {})
        return prog.get("name")

    # ----------------------------------------------------------- life --
    def up(self):
        """Build the rig (module docstring); self."""
        try:
            self._build()
        except BaseException:
            self.destroy()
            raise
        return self

    def _make_ns(self):
        """Every role's namespace, new (a stale one of the name goes), lo
        up, IPv6 without DAD or router solicitations."""
        for role in self.ROLES:
            run(["ip", "netns", "delete", self.ns(role)])   # a stale one
            must(run(["ip", "netns", "add", self.ns(role)]))
            self.made.append(role)
            self.ip(role, "link", "set", "lo", "up")
            for k in ("default", "all"):
                self.sysctl(role, f"net.ipv6.conf.{k}.accept_dad", 0)
                self.sysctl(role, f"net.ipv6.conf.{k}.router_solicitations",
                            0)

    def _build(self):
        q = str(self.queues)
        self._make_ns()
        for a, adev, b, bdev in (("gen", "g0", "dut", "d0"),
                                 ("dut", "d1", "sink", "s0")):
            self.ip(a, "link", "add", adev, "numtxqueues", q, "numrxqueues",
                    q, "address", MACS[adev], "type", "veth", "peer", "name",
                    bdev, "numtxqueues", q, "numrxqueues", q, "address",
                    MACS[bdev], "netns", self.ns(b))
        for role, dev, a4, a6 in (("gen", "g0", GEN4, GEN6),
                                  ("dut", "d0", DUT4_IN, DUT6_IN),
                                  ("dut", "d1", DUT4_OUT, DUT6_OUT),
                                  ("sink", "s0", SINK4, SINK6)):
            self.ip(role, "addr", "add", f"{a4}/24", "dev", dev)
            self.ip(role, "-6", "addr", "add", f"{a6}/64", "dev", dev,
                    "nodad")
            self.ip(role, "link", "set", dev, "up")
        for role, v4, v6 in (("gen", DUT4_IN, DUT6_IN),
                             ("sink", DUT4_OUT, DUT6_OUT)):
            self.ip(role, "route", "add", "default", "via", v4)
            self.ip(role, "-6", "route", "add", "default", "via", v6)
        self.sysctl("dut", "net.ipv4.ip_forward", 1)
        self.sysctl("dut", "net.ipv6.conf.all.forwarding", 1)
        for k in ("default", "all", "d0", "d1"):
            self.sysctl("dut", f"net.ipv4.conf.{k}.rp_filter", 0)
            self.sysctl("dut", f"net.ipv4.conf.{k}.send_redirects", 0)
        lo, hi = LISTEN_PORTS
        for role in ("gen", "sink"):
            self.sh(role, "nft", "-f", "-", input=(
                "table inet nfxsk {\n"
                "  chain input {\n"
                "    type filter hook input priority filter; policy accept;\n"
                "    ct state established,related accept\n"
                f"    tcp dport {lo}-{hi} accept\n"
                f"    udp dport {lo}-{hi} accept\n"
                "    meta l4proto { tcp, udp } drop\n"
                "  }\n"
                "}\n"))
        self.cookie = nfrig.netns_cookie_of(self.ns("dut"))
        nfrig.COOKIES.add(self.cookie)
        self.prime()

    def prime(self):
        """Resolve every neighbour the traffic needs (ARP/NDP), through the
        kernel path, so no frame of a test waits in a neighbour queue."""
        for addr in (GEN4, SINK4, GEN6, SINK6):
            self.sh("dut", "ping", "-c", "1", "-W", "2", addr)
        for addr in (SINK4, SINK6):
            self.sh("gen", "ping", "-c", "1", "-W", "2", addr)

    def destroy(self):
        """Stop processes, detach the DUT's domains (pins too), delete the
        namespaces and the temp dir. Idempotent; never raises."""
        for p in list(self.procs):
            try:
                self.stop(p)
            except Exception:
                pass
        self.procs = []
        if self.cookie is not None:
            try:
                purge_domains(self.cookie,
                              lambda dom: self.nfslice("detach", "--name", dom))
            except Exception:
                pass
        for role in reversed(self.made):
            try:
                run(["ip", "netns", "delete", self.ns(role)])
            except Exception:
                pass
        self.made = []
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -------------------------------------------------------- nfslice --
    def nfslice(self, *args, timeout=60):
        """build/nfslice ARGS in the DUT; CompletedProcess (not checked)."""
        return run(["ip", "netns", "exec", self.ns("dut"), NFSLICE,
                    *map(str, args)], timeout=timeout)

    def attach(self, name, *opts, devs=("d0", "d1")):
        """nfslice attach --name NAME OPTS DEVS in the DUT; asserted."""
        return must(self.nfslice("attach", "--name", name, *opts, *devs))

    def detach(self, name):
        return must(self.nfslice("detach", "--name", name))

    def stats(self, name):
        """`nfslice stats --json` of NAME: counters, slots, slots_busy."""
        return json.loads(must(self.nfslice("stats", "--name", name,
                                            "--json")))

    def status(self, name):
        return json.loads(must(self.nfslice("status", "--name", name,
                                            "--json")))

    def pin_dir(self, name):
        return BPFFS / "nfslice" / f"ns{self.cookie}" / name

    def reset(self, devs=(("dut", "d0"), ("dut", "d1"))):
        """Back to the rig as built, for the next test: our processes
        stopped, the slicing host's domains detached, no XDP program on
        DEVS ((role, dev) pairs)."""
        for p in list(self.procs):
            self.stop(p)
        d = self.pin_dir("x").parent
        if d.is_dir():
            for dom in sorted(d.iterdir()):
                self.nfslice("detach", "--name", dom.name)
        for role, dev in devs:
            if self.xdp_prog(role, dev):
                self.ip(role, "link", "set", "dev", dev, "xdp", "off")

    def chain(self, name):
        """Entries of domain NAME's chain map (the program the slicer
        tail-calls: the NF's steering), as bpftool dumps them."""
        cp = run(["bpftool", "-j", "map", "dump", "pinned",
                  self.pin_dir(name) / "chain"])
        assert cp.returncode == 0, describe(cp)
        return json.loads(cp.stdout or "[]")

    def chain_prog_id(self, name):
        """Id of the program in the chain map's slot 0, or None."""
        for e in self.chain(name):
            v = e.get("value")
            if isinstance(v, list):
                return int.from_bytes(bytes(int(b, 16) for b in v), "little")
            if v is not None:
                return int(v)
        return None

    # ------------------------------------------------------------- NF --
    def start_nf(self, *args, name=None, dev="d0,d1", ready=True, rt=False):
        """Start nfslice-nf --dev DEV --json ARGS [--name NAME] in the DUT;
        with READY, wait until its steering is in place (domain: the chain
        map holds a program; else the XDP program of every interface is
        nfsl_steer): from then on every UDP/TCP frame reaches it. RT runs
        it under SCHED_FIFO (RT_CMD, comment there)."""
        self.nruns += 1
        full = ["--dev", dev, "--json", *map(str, args)]
        if name:
            full += ["--name", name]
        out = self.tmp / f"nf{self.nruns}.out"
        err = self.tmp / f"nf{self.nruns}.err"
        with open(out, "wb") as fo, open(err, "wb") as fe:
            p = self.spawn("dut", *(RT_CMD if rt else ()), NF, *full,
                           stdout=fo, stderr=fe)
        nf = NfRun(self, p, full, out, err)
        if ready:
            def steering():
                if not nf.alive():
                    raise AssertionError("nfslice-nf exited:\n" +
                                         nf.describe())
                if name:
                    return self.chain_prog_id(name) is not None
                return all(self.xdp_prog("dut", d) == "nfsl_steer"
                           for d in dev.split(","))
            poll(steering, 15, "nfslice-nf's steering")
        return nf

    def nf_cmd(self, *args, timeout=30):
        """Run nfslice-nf ARGS in the DUT to completion (bad arguments);
        CompletedProcess."""
        return run(["ip", "netns", "exec", self.ns("dut"), NF,
                    *map(str, args)], timeout=timeout)

    # -------------------------------------------------------- traffic --
    def send_frames(self, frames, tag="sent"):
        """Send FRAMES (bytes) out of g0 (nfpkt.send)."""
        self.nruns += 1
        nfpkt.send(self, "gen", "g0", frames,
                   self.tmp / f"{tag}{self.nruns}.pcap")

    def capture(self, count, bpf="udp or tcp", role="sink", dev="s0"):
        """A started capture (tcpdump -Q in, nfpkt.Capture) of the next
        COUNT frames matching BPF arriving on DEV; .finish(timeout) returns
        them once COUNT arrived or the timeout passed."""
        self.nruns += 1
        return nfpkt.Capture(self, role, dev, count,
                             self.tmp / f"cap{self.nruns}.pcap",
                             bpf=bpf).start()

    def udpsend(self, host, port, count, size, flows=1, seed=1):
        """COUNT datagrams of SIZE bytes from a kernel UDP socket in the
        gen (checksum offload as the kernel sets it: CHECKSUM_PARTIAL);
        the sender's JSON result."""
        cp = self.sh("gen", PY, HERE, "udpsend", host, port, "--count",
                     count, "--size", size, "--flows", flows, "--seed", seed,
                     timeout=60)
        return json.loads(cp.stdout.splitlines()[-1])

    def tcp_transfer(self, host, port, nbytes, seed=1):
        """NBYTES over a kernel TCP connection gen -> sink (HOST: the
        sink's address, PORT in LISTEN_PORTS); (sender's JSON, sink's
        JSON). Asserts both ends finished."""
        sink = self.spawn("sink", PY, HERE, "tcpsink", port,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        poll(lambda: self.sh("sink", "ss", "-Htln", f"sport = :{port}",
                             check=False).stdout.strip(), 10,
             f"a TCP listener on port {port} in the sink")
        cp = self.sh("gen", PY, HERE, "tcpsend", host, port, "--bytes",
                     nbytes, "--seed", seed, check=False, timeout=60)
        try:
            out, err = sink.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.stop(sink)
            raise AssertionError(f"tcpsink did not finish; sender:\n"
                                 f"{describe(cp)}")
        self.forget(sink)
        assert cp.returncode == 0, describe(cp)
        assert sink.returncode == 0, f"tcpsink: {out}\n{err}"
        return json.loads(cp.stdout.splitlines()[-1]), json.loads(out)

    def snmp(self, role, proto):
        """{counter: value} of PROTO ("Tcp", "Udp") in ROLE's
        /proc/net/snmp. Tcp counts IPv4 and IPv6 segments alike."""
        lines = [ln.split() for ln in self.check(
            role, "cat", "/proc/net/snmp").splitlines()
            if ln.startswith(proto + ":")]
        return dict(zip(lines[0][1:], map(int, lines[1][1:])))

    def pktgen(self, *args, background=False, rt=False):
        """nfslice-pktgen --dev g0 --json ARGS in the gen, addressed to the
        sink through d0. Waits and returns its JSON result, or with
        BACKGROUND returns (Popen, stdout path)."""
        full = [*(RT_CMD if rt else ()), PKTGEN, "--dev", "g0",
                "--src-mac", MACS["g0"], "--dst-mac", MACS["d0"], "--json",
                *map(str, args)]
        if "--ipv6" in full:
            full += ["--src-ip", GEN6, "--dst-ip", SINK6]
        else:
            full += ["--src-ip", GEN4, "--dst-ip", SINK4]
        if not background:
            cp = self.sh("gen", *full, timeout=120)
            return json.loads(cp.stdout)
        self.nruns += 1
        out = self.tmp / f"pg{self.nruns}.out"
        with open(out, "wb") as fo:
            p = self.spawn("gen", *full, stdout=fo, stderr=subprocess.STDOUT)
        return p, out


def l4_valid(frame):
    """True when FRAME's UDP/TCP checksum verifies (pseudo-header included)."""
    p = nfpkt.parse(frame)
    fam = socket.AF_INET6 if p.v6 else socket.AF_INET
    if p.v6:
        l4, end = 54, 54 + struct.unpack("!H", frame[18:20])[0]
    else:
        l4 = 14 + (frame[14] & 0xF) * 4
        end = 14 + struct.unpack("!H", frame[16:18])[0]
    return nfpkt.l4_sum(p.v6, 17 if p.proto == "udp" else 6,
                        socket.inet_ntop(fam, p.src),
                        socket.inet_ntop(fam, p.dst),
                        frame[l4:end]) == 0xFFFF
