# SPDX-License-Identifier: GPL-2.0
"""nfpark: a PayloadPark rig for the NF tests (test_nf.py): a slicing host
with two NF ports, each leading to an NF server that runs nfslice-nf.

  cli ns             slicing host ("dut")                    srv ns
  cli0 <--veth--> c0   [slicer + splicer]   s0 <--veth--> srv0
  10.224.1.2      10.224.1.1                10.224.2.1    10.224.2.2
                                                          10.224.2.130
                  p0 10.224.3.1 (NF port) <--veth--> nf0 10.224.3.2 (nfa ns)
                  p1 10.224.4.1 (NF port) <--veth--> nf0 10.224.4.2 (nfb ns)

Namespaces are nfrig.name("STEM-c|d|s|a|b"), unique per test run. The
slicing host routes what it receives from the client or the server through
an NF server, as scripts/topo_park.sh does: policy rules (iif c0, iif s0 ->
table 100) whose table sends 10.224.2.128/25 to NF server B (p1) and
everything else to NF server A (p0); what comes back from an NF server
(iif p0/p1) takes the main table, whose default route is the server, so
traffic to any address (the firewall's generated 5-tuples) ends there. The
slicer picks a payload's store part by that FIB egress: p0's part for
flows through A, p1's for flows through B (docs/format.md "Store").

The NF servers forward nothing themselves (ip_forward 0): a header only
comes back if nfslice-nf on their nf0 (--nf ...,l2fwd: the MACs swapped,
back out of nf0) sends it, and with no NF running a header is dropped
there and its payload stays parked. MACs are fixed (MACS); the client and
the server drop UDP and TCP at input (nft), so no reply or ICMP error of
theirs crosses the rig; tcpdump still sees every frame on their veths.

PRig(stem, queues=Q) gives the NF links (p0 - nf0, p1 - nf0) Q queues each
(privring and smallpriv need a queue per worker) and sets the slicing
host's XPS so that CPU c sends out of p0's and p1's queue c % Q: a frame
the client sends from CPU c is received, sliced and forwarded on c (veth
runs the receive on the sender's CPU), and reaches the NF server on its RX
queue c % Q; PRig.send() takes a CPU per frame.

PRig.send() sends the frames from the sending namespace, in order, each
from its CPU, on an AF_PACKET socket, ~nfrig.PACE_S apart
(nfrig.packet_send).

PRig is nfxsk.XRig with these roles ("cli", "dut" = the slicing host,
"srv", "nfa", "nfb"): destroy() (finalizer, atexit) stops every process
the rig started, detaches the slicing host's domains and deletes the
namespaces whatever the test did; attach/stats/status/capture work as
there, start_nf() runs nfslice-nf on an NF server.
"""
import json
import os

from nfsl import rig as nfrig
from nfsl.rig import describe, poll, run
from nfxsk import NF, NfRun, XRig

CLI4, SLC_CLI4 = "10.224.1.2", "10.224.1.1"
SLC_SRV4, SRV4, SRV4_B = "10.224.2.1", "10.224.2.2", "10.224.2.130"
NET_B = "10.224.2.128/25"       # table 100 sends this through NF server B
NFA_LINK = ("10.224.3.1", "10.224.3.2")     # p0, nfa's nf0
NFB_LINK = ("10.224.4.1", "10.224.4.2")     # p1, nfb's nf0
RT_TABLE = 100
MACS = {"cli0": "02:24:01:00:00:02", "c0": "02:24:01:00:00:01",
        "s0": "02:24:02:00:00:01", "srv0": "02:24:02:00:00:02",
        "p0": "02:24:03:00:00:01", "nfa": "02:24:03:00:00:02",
        "p1": "02:24:04:00:00:01", "nfb": "02:24:04:00:00:02"}
NF_PORTS = {"nfa": "p0", "nfb": "p1"}       # NF server -> its NF port
SLICE_IFS = ("c0", "s0")


class PRig(XRig):
    """The park rig of the module docstring (nfxsk.XRig's life cycle)."""

    ROLES = ("cli", "dut", "srv", "nfa", "nfb")
    STEMS = {"cli": "c", "dut": "d", "srv": "s", "nfa": "a", "nfb": "b"}

    def __init__(self, stem, queues=1):
        super().__init__(stem, queues=queues)

    def _build(self):
        self._make_ns()
        for role in self.ROLES:
            for k in ("default", "all"):
                self.sysctl(role, f"net.ipv4.conf.{k}.rp_filter", 0)
                self.sysctl(role, f"net.ipv4.conf.{k}.accept_redirects", 0)
                self.sysctl(role, f"net.ipv4.conf.{k}.send_redirects", 0)
        for a, adev, amac, b, bdev, bmac, q in (
                ("cli", "cli0", "cli0", "dut", "c0", "c0", 1),
                ("dut", "s0", "s0", "srv", "srv0", "srv0", 1),
                ("dut", "p0", "p0", "nfa", "nf0", "nfa", self.queues),
                ("dut", "p1", "p1", "nfb", "nf0", "nfb", self.queues)):
            self.ip(a, "link", "add", adev, "numtxqueues", q, "numrxqueues",
                    q, "mtu", 1500, "address", MACS[amac], "type", "veth",
                    "peer", "name", bdev, "numtxqueues", q, "numrxqueues", q,
                    "mtu", 1500, "address", MACS[bmac], "netns", self.ns(b))
        for role, dev, addrs in (
                ("cli", "cli0", (CLI4,)), ("dut", "c0", (SLC_CLI4,)),
                ("dut", "s0", (SLC_SRV4,)), ("srv", "srv0", (SRV4, SRV4_B)),
                ("dut", "p0", (NFA_LINK[0],)), ("nfa", "nf0", (NFA_LINK[1],)),
                ("dut", "p1", (NFB_LINK[0],)), ("nfb", "nf0", (NFB_LINK[1],))):
            for a in addrs:
                self.ip(role, "addr", "add", f"{a}/24", "dev", dev)
            self.ip(role, "link", "set", dev, "up")
        self.ip("cli", "route", "add", "default", "via", SLC_CLI4)
        self.ip("srv", "route", "add", "default", "via", SLC_SRV4)
        for role, gw in (("nfa", NFA_LINK[0]), ("nfb", NFB_LINK[0])):
            self.ip(role, "route", "add", "default", "via", gw)
        self.sysctl("dut", "net.ipv4.ip_forward", 1)
        for pref, dev in ((100, "c0"), (101, "s0")):
            self.ip("dut", "rule", "add", "pref", pref, "iif", dev, "lookup",
                    RT_TABLE)
        self.ip("dut", "route", "add", NET_B, "via", NFB_LINK[1], "dev", "p1",
                "table", RT_TABLE)
        self.ip("dut", "route", "add", "default", "via", NFA_LINK[1], "dev",
                "p0", "table", RT_TABLE)
        self.ip("dut", "route", "add", "default", "via", SRV4, "dev", "s0")
        ncpu = os.cpu_count()
        for dev in NF_PORTS.values():
            for q in range(self.queues):
                # XPS: CPU c sends out of queue c % queues
                mask = sum(1 << c for c in range(ncpu) if c % self.queues == q)
                self.sh("dut", "sh", "-c", f"echo {mask:x} > "
                        f"/sys/class/net/{dev}/queues/tx-{q}/xps_cpus")
        for role in ("cli", "srv"):
            self.sh(role, "nft", "-f", "-", input=(
                "table inet nfpark {\n"
                "  chain input {\n"
                "    type filter hook input priority filter; policy accept;\n"
                "    meta l4proto { tcp, udp } drop\n"
                "  }\n"
                "}\n"))
        self.cookie = nfrig.netns_cookie_of(self.ns("dut"))
        nfrig.COOKIES.add(self.cookie)
        self.prime()

    def prime(self):
        """Resolve the slicing host's neighbours (ARP) through the kernel,
        so no frame of a test waits in a neighbour queue."""
        for addr in (CLI4, SRV4, SRV4_B, NFA_LINK[1], NFB_LINK[1]):
            self.sh("dut", "ping", "-c", "1", "-W", "2", addr)

    # ------------------------------------------------------------ NF --
    def attach_park(self, name, *opts, nf_ports=("p0", "p1")):
        """nfslice attach --name NAME OPTS --nf-port NF_PORTS c0 s0 on the
        slicing host; asserted."""
        return self.attach(name, *opts, "--nf-port", ",".join(nf_ports),
                           devs=SLICE_IFS)

    def start_nf(self, role, *args, ready=True):
        """nfslice-nf --dev nf0 --json ARGS on NF server ROLE ("nfa",
        "nfb"); with READY, wait until its steering program runs on nf0.
        An NfRun (nfxsk)."""
        self.nruns += 1
        full = ["--dev", "nf0", "--json", *map(str, args)]
        out = self.tmp / f"nf{self.nruns}.out"
        err = self.tmp / f"nf{self.nruns}.err"
        with open(out, "wb") as fo, open(err, "wb") as fe:
            p = self.spawn(role, NF, *full, stdout=fo, stderr=fe)
        nf = NfRun(self, p, full, out, err)
        if ready:
            def steering():
                if not nf.alive():
                    raise AssertionError("nfslice-nf exited:\n" +
                                         nf.describe())
                return self.xdp_prog(role, "nf0") == "nfsl_steer"
            poll(steering, 15, f"nfslice-nf's steering on {role}'s nf0")
        return nf

    def part_seq(self, name):
        """{(cpu, part): slice attempts} of domain NAME's store parts (the
        allocation state in its cursor map, docs/format.md "Store")."""
        cp = run(["bpftool", "-j", "map", "dump", "pinned",
                  self.pin_dir(name) / "cursor"])
        assert cp.returncode == 0, describe(cp)
        return {(v["cpu"], e["formatted"]["key"]): v["value"]["seq"]
                for e in json.loads(cp.stdout)
                for v in e["formatted"]["values"]}

    # ------------------------------------------------------- traffic --
    def send(self, role, dev, frames, cpu=None, tag="sent"):
        """Send FRAMES (bytes) out of DEV of ROLE, in order
        (nfrig.packet_send: ~PACE_S apart), each from CPU CPU if given:
        one CPU for all, or a list, one per frame. The slicer runs on the sender's CPU (one
        CPU's store share) and so does the slicing host's forwarding, whose
        XPS picks the NF link's queue by it (module docstring)."""
        self.nruns += 1
        cpus = cpu if isinstance(cpu, (list, tuple)) else [cpu] * len(frames)
        assert len(cpus) == len(frames), (len(cpus), len(frames))
        res = nfrig.in_netns(self.ns(role), nfrig.packet_send, dev,
                             list(zip(cpus, frames)))
        assert res["sent"] == len(frames), res
        return res
