# SPDX-License-Identifier: GPL-2.0
"""Network namespaces of one test module and what runs in them (Lab), and
the NIC lab built of them (cli - nic - dut - nic - srv), around the TAP NF
and the checked UDP traffic of nfsl.tap (run in the namespaces as
`python3 scripts/nfsl/tap.py tapnf|udp ...`). nfsl.tap re-exports all of
it, as the tests and bench/exp_migrate.py use it."""
import json
import os
import select
import signal
import subprocess
from pathlib import Path

# The TAP NF and traffic script the labs start in their namespaces
# (nfsl.tap's HERE), and the interpreter that runs it (nfsl.tap's PY).
HERE = Path(__file__).resolve().with_name("tap.py")
PY = "/usr/bin/python3"


# ------------------------------------------------------------------ Lab --
class Lab:
    """Network namespaces of one test module and what runs in them.

    Namespaces are named PREFIX-ROLE, PREFIX being this run's name for STEM
    (nfrig.name(STEM), "nfit-RUN-STEM", where nfrig has it; else
    "nfit-STEM<pid>"): two runs on one host never touch each other's.
    destroy() removes everything; it is idempotent. Commands raise
    AssertionError (describing the command) when they fail and CHECK is
    set; every command has a hard timeout (nfrig.run).
    """

    def __init__(self, stem, nfslice):
        from nfsl import rig as nfrig  # the suite's helpers; not needed by the scripts
        self.nfrig = nfrig
        name = getattr(nfrig, "name", None)
        self.tag = name(stem) if name else f"nfit-{stem}{os.getpid() % 100000}"
        self.nfslice_bin = str(nfslice)
        self.names = {}
        self.procs = []
        self.cookies = {}

    # ----------------------------------------------------------- life --
    def ns(self, role):
        """Namespace name of ROLE."""
        return self.names[role]

    def add(self, *roles):
        """Create the namespaces of ROLES (lo up); self."""
        for role in roles:
            name = f"{self.tag}-{role}"
            self.names[role] = name
            self.host("ip", "netns", "add", name)
            self.ip(role, "link", "set", "lo", "up")
            self.cookies[role] = self.nfrig.netns_cookie_of(name)
            # The session's end-of-run check looks for this run's pins.
            getattr(self.nfrig, "COOKIES", set()).add(self.cookies[role])
        return self

    def destroy(self):
        """Stop our processes, detach every nfslice domain of our
        namespaces (and remove pins a detach left), delete the
        namespaces. Returns the problems found, as strings."""
        errors = []
        for p in list(self.procs):
            self.stop(p)
        for role in self.cookies:
            errors += self.purge(role)
        for role, name in list(self.names.items()):
            if os.path.exists(f"/run/netns/{name}"):
                cp = self.nfrig.run(["ip", "netns", "delete", name])
                if cp.returncode != 0:
                    errors.append(self.nfrig.describe(cp))
            del self.names[role]
        self.cookies.clear()
        return errors

    def purge(self, role):
        """Detach every nfslice domain of ROLE's namespace, found through
        its pin directory, and remove pins a detach left (only this
        namespace has this cookie). Returns the failed detaches, described."""
        return self.nfrig.purge_domains(
            self.cookies[role],
            lambda dom: self.nfslice(role, "detach", "--name", dom, check=False))

    # ------------------------------------------------------- commands --
    def host(self, *args, check=True, timeout=30, input=None):
        """Run ARGS on the host; CompletedProcess (asserted if CHECK)."""
        cp = self.nfrig.run(list(args), timeout=timeout, input=input)
        if check:
            self.nfrig.must(cp)
        return cp

    def exec(self, role, *args, check=True, timeout=30, input=None, env=None):
        """Run ARGS in ROLE's namespace (ip netns exec)."""
        cp = self.nfrig.run(["ip", "netns", "exec", self.ns(role), *args],
                            timeout=timeout, input=input, env=env)
        if check:
            self.nfrig.must(cp)
        return cp

    def ip(self, role, *args, check=True):
        """`ip -n NS ARGS`."""
        return self.host("ip", "-n", self.ns(role), *args, check=check)

    def sysctl(self, role, *settings):
        """sysctl -qw SETTINGS in ROLE's namespace."""
        return self.exec(role, "sysctl", "-qw", *settings)

    def nfslice(self, role, *args, check=False, timeout=60, env=None):
        """build/nfslice ARGS in ROLE's namespace; not checked unless CHECK."""
        return self.exec(role, self.nfslice_bin, *args, check=check,
                         timeout=timeout, env=env)

    def stats(self, role, name="default"):
        """`nfslice stats --json` of domain NAME."""
        return json.loads(self.nfslice(role, "stats", "--name", name,
                                       "--json", check=True).stdout)

    def link(self, role, dev):
        """`ip -j -s -d link show dev DEV`, a dict."""
        return json.loads(self.ip(role, "-j", "-s", "-d", "link", "show",
                                  "dev", dev).stdout)[0]

    def tc_egress(self, role, dev):
        """tc filters on DEV's egress hook ([] without clsact)."""
        cp = self.host("tc", "-j", "-n", self.ns(role), "filter", "show",
                       "dev", dev, "egress", check=False)
        return json.loads(cp.stdout or "[]") if cp.returncode == 0 else []

    def veth(self, role, dev, peer_role, peer, mac=None, peer_mac=None):
        """A veth pair DEV (in ROLE) - PEER (in PEER_ROLE), MTU 1500, up."""
        self.ip(role, "link", "add", dev, "type", "veth", "peer", "name",
                peer, "netns", self.ns(peer_role))
        if mac:
            self.ip(role, "link", "set", dev, "address", mac)
        if peer_mac:
            self.ip(peer_role, "link", "set", peer, "address", peer_mac)
        self.ip(role, "link", "set", dev, "up")
        self.ip(peer_role, "link", "set", peer, "up")

    def addr(self, role, dev, *cidrs):
        """Add addresses (IPv6 without DAD: usable at once)."""
        for c in cidrs:
            extra = ("nodad",) if ":" in c else ()
            self.ip(role, "addr", "add", c, "dev", dev, *extra)

    # ------------------------------------------------------ processes --
    def spawn(self, role, *args):
        """Start ARGS in ROLE's namespace in a process group of its own,
        stdout piped (text); tracked for destroy()."""
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(role), *args],
                             stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             text=True, start_new_session=True)
        self.procs.append(p)
        return p

    def helper(self, role, *args):
        """Start `nftap.py ARGS` in ROLE's namespace; wait for its "ready"
        line (10 s). Returns the Popen. Raises AssertionError with what it
        printed if it exits or says something else first."""
        p = self.spawn(role, PY, str(HERE), *args)
        line = self.readline(p, 10)
        if line.strip() != "ready":
            self.stop(p)
            raise AssertionError(f"nftap.py {' '.join(args)} in {role}: "
                                 f"{line.strip()!r} {p.stderr.read()[-800:]}")
        return p

    @staticmethod
    def readline(p, timeout):
        """One line of P's stdout within TIMEOUT seconds ('' on EOF)."""
        r, _, _ = select.select([p.stdout], [], [], timeout)
        if not r:
            raise AssertionError(f"no output from {p.args} in {timeout} s")
        return p.stdout.readline()

    def signal(self, p, sig):
        """Send SIG to P (its process group: P is `ip netns exec`'s exec)."""
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, p, timeout=5):
        """SIGTERM P's group, SIGKILL after TIMEOUT s; (rc, stdout, stderr)."""
        if p.poll() is None:
            self.signal(p, signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.signal(p, signal.SIGKILL)
            out, err = p.communicate(timeout=timeout)
        if p in self.procs:
            self.procs.remove(p)
        return p.returncode, out, err

    def finish(self, p, timeout):
        """Wait up to TIMEOUT s for P to exit by itself, else stop() it;
        the last JSON line it printed, as a dict (AssertionError if none)."""
        try:
            out, err = p.communicate(timeout=timeout)
            if p in self.procs:
                self.procs.remove(p)
        except subprocess.TimeoutExpired:
            _, out2, err = self.stop(p)
            out = out2
        for line in reversed((out or "").splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        raise AssertionError(f"{p.args}: no report; rc {p.returncode}; "
                             f"stdout {out!r}; stderr {err[-800:]!r}")


# ------------------------------------------------------------- NIC lab --
# cli - nic - dut - nic - srv: "nic" stands in for a smart NIC in front of
# the DUT host. Its wire ports w0 (to cli) and w1 (to srv) and host ports
# h0 (to dut's d0) and h1 (from dut's d1). It sends what arrives from the
# wire through the host (policy routing by input port) and what comes back
# from the host out to the wire. The DUT forwards (the NF). Migration
# (docs/manager.md) moves a domain between the DUT (d0, d1 inline) and the
# NIC (w0, w1 with NF ports h0, h1).
NIC_ADDRS = {"cli": "10.231.1.2", "w0": "10.231.1.1", "h0": "10.231.2.1",
             "d0": "10.231.2.2", "d1": "10.231.3.2", "h1": "10.231.3.1",
             "w1": "10.231.4.1", "srv": "10.231.4.2"}
# (role, interface, key of NIC_ADDRS), in path order.
NIC_IFACES = (("cli", "c0", "cli"), ("nic", "w0", "w0"), ("nic", "h0", "h0"),
              ("dut", "d0", "d0"), ("dut", "d1", "d1"), ("nic", "h1", "h1"),
              ("nic", "w1", "w1"), ("srv", "s0", "srv"))


def nic_lab(lab):
    """Build cli - nic - dut - nic - srv in LAB (a Lab with no namespace
    yet): namespaces, veths, addresses (NIC_ADDRS, /24), routes, forwarding
    in nic and dut, TX checksum offload off at both ends (full checksums,
    as from a wire), and one ping each way (neighbours resolved). Returns
    LAB; raises AssertionError when a command fails."""
    a = NIC_ADDRS
    lab.add("cli", "nic", "dut", "srv")
    for i in range(0, len(NIC_IFACES), 2):
        (r0, d0, _), (r1, d1, _) = NIC_IFACES[i:i + 2]
        lab.veth(r0, d0, r1, d1)
    for role, dev, key in NIC_IFACES:
        lab.addr(role, dev, a[key] + "/24")
    for role, *route in (("cli", "default", "via", a["w0"]),
                         ("srv", "default", "via", a["w1"]),
                         ("dut", "10.231.4.0/24", "via", a["h1"]),
                         ("dut", "10.231.1.0/24", "via", a["h0"]),
                         # wire -> host by input port; host -> wire: connected
                         ("nic", "default", "via", a["d0"], "table", "100"),
                         ("nic", "default", "via", a["d1"], "table", "101")):
        lab.ip(role, "route", "add", *route)
    lab.ip("nic", "rule", "add", "iif", "w0", "table", "100")
    lab.ip("nic", "rule", "add", "iif", "w1", "table", "101")
    for role in ("nic", "dut"):
        lab.sysctl(role, "net.ipv4.ip_forward=1",
                   "net.ipv4.conf.all.rp_filter=0",
                   "net.ipv4.conf.default.rp_filter=0")
    for role, dev in (("cli", "c0"), ("srv", "s0")):
        lab.exec(role, "ethtool", "-K", dev, "tx", "off")
    for role, peer in (("cli", a["srv"]), ("srv", a["cli"])):
        lab.exec(role, "ping", "-c", "1", "-W", "2", peer)
    return lab


def nic_lab_drops_by_iface(lab):
    """{"role/dev": rx + tx dropped} of every interface of nic_lab()'s LAB."""
    out = {}
    for role, dev, _ in NIC_IFACES:
        st = lab.link(role, dev)["stats64"]
        out[f"{role}/{dev}"] = st["rx"]["dropped"] + st["tx"]["dropped"]
    return out


def nic_lab_drops(lab):
    """rx + tx dropped over every interface of nic_lab()'s LAB."""
    return sum(nic_lab_drops_by_iface(lab).values())


def summarize(report, flows):
    """Totals of FLOWS in a udp report: sent is taken from the end markers
    the receivers saw (or None). Returns dict good, truncated, corrupt, dup,
    announced, lost."""
    t = {"good": 0, "truncated": report.get("truncated_unknown", 0),
         "corrupt": 0, "dup": 0, "announced": 0, "lost": 0, "missing_end": []}
    for f in flows:
        r = report["recv"].get(str(f))
        if r is None:
            t["missing_end"].append(f)
            continue
        for k in ("good", "truncated", "corrupt", "dup"):
            t[k] += r[k]
        if r["announced"] is None:
            t["missing_end"].append(f)
        else:
            t["announced"] += r["announced"]
            t["lost"] += r["announced"] - r["good"]
    return t
