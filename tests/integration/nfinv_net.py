# SPDX-License-Identifier: GPL-2.0
"""nfinv_net: the small topologies of the invariant tests (nfinv.py's
docstring says what they check and what the traffic is).

Net is one topology. Its namespaces are named RUN<tag>-<role>, RUN being
nfrig's per-run prefix (nfit-<run id>-) or nfiv<pid>-, so two test runs on
one host never meet; Net.destroy() (called from the `nets`
fixture's finalizer, and at exit) stops the processes it started, detaches
every slicing domain of its namespaces (pins included) and deletes them.
Its traffic is nfinv.py run as a script in the namespaces (HERE).
"""
import atexit
import json
import os
from pathlib import Path

import pytest

from nfsl import rig as nfrig
from nfsl import topo as nfsltopo
from nfsl.rig import NFSLICE, PY, describe, poll, purge_domains, run

TOKEN_LEN = 16      # bytes of a sliced header's token
# Namespace names of this run: the suite's per-run prefix where nfrig
# has one (its end-of-session leftover check then covers them too),
# else one made of this process's id.
RUN_PREFIX = getattr(nfrig, "RUN_PREFIX", None) or f"nfiv{os.getpid()}-"

# Counters the fixed datapath adds (issue 7 section 1): why a packet
# passed unsliced or was dropped.
NEW_COUNTERS = ("skipped_route", "skipped_local", "skipped_l2",
                "skipped_mtu", "dropped_gso", "slice_failed",
                "splice_failed")

# Addresses of Net.router(): client - DUT - server, plus optional
# extra links "x<n>" (10.77.<n>.0/24, fd00:77:<n>::/64).
CLI4, DUT4_IN, DUT4_OUT, SRV4 = ("10.77.1.2", "10.77.1.1", "10.77.2.1",
                                 "10.77.2.2")
CLI6, DUT6_IN, DUT6_OUT, SRV6 = ("fd00:77:1::2", "fd00:77:1::1",
                                 "fd00:77:2::1", "fd00:77:2::2")

# The traffic script the topologies run (nfinv.py send|recv|httpsink).
HERE = Path(__file__).resolve().with_name("nfinv.py")


# --------------------------------------------------------------- topology --
class Net:
    """Network namespaces of one test, their links and what runs in them.

    Roles name the namespaces (RUN_PREFIX + iv<tag>-<role>). Everything is
    recorded for destroy(): namespaces, processes, slicing domains.
    """

    def __init__(self, tag):
        """An empty topology; TAG (short) tells tests apart in names."""
        self.base = f"{RUN_PREFIX}iv{tag}"
        self.roles = []
        self.procs = []
        self.cookies = {}
        atexit.register(self.destroy)

    # --------------------------------------------------------- basics --
    def ns(self, role):
        """Namespace name of ROLE."""
        return f"{self.base}-{role}"

    def host(self, args, check=True, timeout=30, input=None):
        """Run ARGS on the host; CompletedProcess (asserted with CHECK)."""
        cp = run(args, timeout=timeout, input=input)
        if check:
            assert cp.returncode == 0, describe(cp)
        return cp

    def sh(self, role, *args, check=True, timeout=30, input=None):
        """Run ARGS in ROLE's namespace; CompletedProcess."""
        return self.host(["ip", "netns", "exec", self.ns(role), *args],
                         check=check, timeout=timeout, input=input)

    def ip(self, role, *args, check=True):
        """`ip -n NS ARGS`."""
        return self.host(["ip", "-n", self.ns(role), *args], check=check)

    def sysctl(self, role, key, value=None):
        """Read (VALUE None) or write a sysctl in ROLE's namespace."""
        if value is None:
            return self.sh(role, "sysctl", "-n", key).stdout.strip()
        self.sh(role, "sysctl", "-qw", f"{key}={value}")
        return str(value)

    def add_ns(self, *roles, router=False):
        """Create namespaces ROLES (lo up, no DAD); routers forward."""
        for role in roles:
            self.roles.append(role)
            self.host(["ip", "netns", "add", self.ns(role)])
            self.ip(role, "link", "set", "lo", "up")
            for k in ("default", "all"):
                self.sysctl(role, f"net.ipv6.conf.{k}.accept_dad", 0)
            if router:
                self.sysctl(role, "net.ipv4.ip_forward", 1)
                self.sysctl(role, "net.ipv6.conf.all.forwarding", 1)
                for k in ("default", "all"):
                    self.sysctl(role, f"net.ipv4.conf.{k}.rp_filter", 0)

    def remove_ns(self, role):
        """Delete ROLE's namespace now (with the devices in it)."""
        self.host(["ip", "netns", "delete", self.ns(role)])
        self.roles.remove(role)

    def veth(self, a, adev, b, bdev, mtu=1500):
        """A veth pair ADEV (in A) - BDEV (in B), MTU, up."""
        self.ip(a, "link", "add", adev, "mtu", mtu, "type", "veth", "peer",
                "name", bdev, "netns", self.ns(b), "mtu", mtu)
        self.ip(a, "link", "set", adev, "up")
        self.ip(b, "link", "set", bdev, "up")

    def addr(self, role, dev, ip4=None, ip6=None, plen4=24, plen6=64):
        """Give DEV its addresses (IPv6 without DAD) and bring it up."""
        if ip4:
            self.ip(role, "addr", "add", f"{ip4}/{plen4}", "dev", dev)
        if ip6:
            self.ip(role, "-6", "addr", "add", f"{ip6}/{plen6}", "dev", dev,
                    "nodad")
        self.ip(role, "link", "set", dev, "up")

    def nft(self, role, text):
        """Load nftables TEXT in ROLE's namespace."""
        self.sh(role, "nft", "-f", "-", input=text)

    def ping(self, role, *addrs):
        """One ping from ROLE to each of ADDRS: resolves neighbours first,
        so the tests' traffic never waits in a neighbour queue."""
        for a in addrs:
            self.sh(role, "ping", "-c", "1", "-W", "2", a)

    def link(self, role, dev):
        """`ip -d -j link show DEV` as a dict."""
        return json.loads(self.ip(role, "-d", "-j", "link", "show", "dev",
                                  dev).stdout)[0]

    def link_stats(self, role, dev):
        """stats64 of DEV: {"rx": {"bytes", "packets", ...}, "tx": {...}}."""
        return json.loads(self.ip(role, "-s", "-j", "link", "show", "dev",
                                  dev).stdout)[0]["stats64"]

    def features(self, role, dev):
        """{feature: "on"/"off"} of `ethtool -k DEV`."""
        out = self.sh(role, "ethtool", "-k", dev).stdout
        feats = {}
        for line in out.splitlines()[1:]:
            k, _, v = line.strip().partition(": ")
            if v:
                feats[k] = v.split()[0]
        return feats

    def snmp(self, role, proto="Udp"):
        """{counter: value} of /proc/net/snmp PROTO in ROLE's namespace."""
        lines = [ln.split() for ln in self.sh(role, "cat", "/proc/net/snmp")
                 .stdout.splitlines() if ln.startswith(proto + ":")]
        return dict(zip(lines[0][1:], map(int, lines[1][1:])))

    # ------------------------------------------------------ processes --
    def spawn(self, role, *args, quiet=False):
        """Start ARGS in ROLE's namespace, stdout and stderr piped (QUIET:
        to /dev/null, for servers nobody reads); tracked."""
        import subprocess
        out = subprocess.DEVNULL if quiet else subprocess.PIPE
        p = nfsltopo.start_process(["ip", "netns", "exec", self.ns(role),
                                    *args], stdout=out, stderr=out)
        self.procs.append(p)
        return p

    def stop(self, p):
        """End P (its process group) and forget it."""
        nfsltopo.stop_process(p)
        if p in self.procs:
            self.procs.remove(p)

    def wait_listen(self, role, port, proto="udp", timeout=10):
        """Wait until something listens on PORT (PROTO) in ROLE."""
        flag = "-Huln" if proto == "udp" else "-Htln"
        poll(lambda: self.sh(role, "ss", flag, f"sport = :{port}",
                             check=False).stdout.strip(),
             timeout, f"a {proto} listener on port {port} in {self.ns(role)}")

    # -------------------------------------------------------- nfslice --
    def nfslice(self, *args, role="dut", timeout=60):
        """build/nfslice ARGS in ROLE's namespace (not checked)."""
        if role not in self.cookies:
            self.cookies[role] = self.cookie(role)
            # The suite's leftover check looks at these pin directories.
            getattr(nfrig, "COOKIES", set()).add(self.cookies[role])
        return run(["ip", "netns", "exec", self.ns(role), NFSLICE, *args],
                   timeout=timeout)

    def attach(self, *args, name, role="dut"):
        """nfslice attach --name NAME ARGS; asserted; its stdout."""
        cp = self.nfslice("attach", "--name", name, *args, role=role)
        assert cp.returncode == 0, describe(cp)
        return cp.stdout

    def detach(self, name, role="dut"):
        """nfslice detach --name NAME; asserted."""
        cp = self.nfslice("detach", "--name", name, role=role)
        assert cp.returncode == 0, describe(cp)
        return cp.stdout

    def stats(self, name, role="dut"):
        """`nfslice stats --json` of domain NAME, a dict."""
        cp = self.nfslice("stats", "--name", name, "--json", role=role)
        assert cp.returncode == 0, describe(cp)
        return json.loads(cp.stdout)

    def cookie(self, role):
        """SO_NETNS_COOKIE of ROLE's namespace (its nfslice pin dir)."""
        return nfrig.netns_cookie_of(self.ns(role))

    def programs(self, role, dev):
        """(XDP attachment or None, egress tc filters) of DEV."""
        xdp = self.link(role, dev).get("xdp")
        cp = self.host(["tc", "-j", "-n", self.ns(role), "filter", "show",
                        "dev", dev, "egress"], check=False)
        tc = json.loads(cp.stdout or "[]") if cp.returncode == 0 else []
        return xdp, [f for f in tc if f.get("options")]

    # ----------------------------------------------------------- flows --
    def receiver(self, role, port, count, size, seed, idle=3.0, sniff=None):
        """Start `nfinv.py recv` in ROLE; wait until it listens. It ends
        with COUNT datagrams or IDLE s after the last one (or its start):
        3 s by default, as a loaded CI host takes over a second to start
        the next sender (flow() sends one family after the other)."""
        p = self.spawn(role, PY, HERE, "recv", port, "--count", count,
                       "--size", size, "--seed", seed, "--idle", idle,
                       *(("--sniff", sniff) if sniff else ()))
        self.wait_listen(role, port)
        return p

    def result(self, p, timeout=30):
        """Wait for receiver (or sender) P; its JSON result."""
        out, err = p.communicate(timeout=timeout)
        if p in self.procs:
            self.procs.remove(p)
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        assert p.returncode == 0 and lines, \
            f"nfinv.py exited {p.returncode}: {out}\n{err}"
        return json.loads(lines[-1])

    def send(self, role, host, port, count, size, seed, *opts, timeout=60):
        """Run `nfinv.py send` in ROLE; its JSON result."""
        cp = self.sh(role, PY, HERE, "send", host, port, "--count", count,
                     "--size", size, "--seed", seed, *opts, timeout=timeout)
        return json.loads(cp.stdout.splitlines()[-1])

    def flow(self, src, dst, hosts, port, count, size, seed, send_opts=(),
             idle=3.0, sniff=None):
        """COUNT datagrams to each of HOSTS (one per family, say) from SRC
        to a receiver in DST; (receiver result, [sender results])."""
        rx = self.receiver(dst, port, count * len(hosts), size, seed, idle,
                           sniff)
        sent = [self.send(src, h, port, count, size, seed, "--first",
                          i * count, *send_opts)
                for i, h in enumerate(hosts)]
        return self.result(rx), sent

    # ---------------------------------------------------------- life --
    def destroy(self):
        """Stop processes, detach domains (pins too), delete namespaces.
        Idempotent; never raises."""
        for p in list(self.procs):
            try:
                self.stop(p)
            except Exception:
                pass
        for role, cookie in list(self.cookies.items()):
            try:
                purge_domains(cookie, lambda dom, role=role: run(
                    ["ip", "netns", "exec", self.ns(role), NFSLICE, "detach",
                     "--name", dom], timeout=60))
            except Exception:
                pass
        self.cookies = {}
        for role in reversed(self.roles):
            try:
                run(["ip", "netns", "delete", self.ns(role)], timeout=30)
            except Exception:
                pass
        self.roles = []


def router(tag, extra=0):
    """cli - dut - srv: the DUT routes, firewalls (ct state invalid drop,
    counter nf_in) and masquerades out of dut1, all on kernel defaults.
    EXTRA more links dut<2..> - x<n>0 to namespaces x2, x3...
    (10.77.<n>.0/24, fd00:77:<n>::/64; DUT .1, far end .2)."""
    net = Net(tag)
    try:
        net.add_ns("cli", "srv")
        net.add_ns("dut", router=True)
        net.veth("cli", "cli0", "dut", "dut0")
        net.veth("dut", "dut1", "srv", "srv0")
        net.addr("cli", "cli0", CLI4, CLI6)
        net.addr("dut", "dut0", DUT4_IN, DUT6_IN)
        net.addr("dut", "dut1", DUT4_OUT, DUT6_OUT)
        net.addr("srv", "srv0", SRV4, SRV6)
        for role, via4, via6 in (("cli", DUT4_IN, DUT6_IN),
                                 ("srv", DUT4_OUT, DUT6_OUT)):
            net.ip(role, "route", "add", "default", "via", via4)
            net.ip(role, "-6", "route", "add", "default", "via", via6)
        for n in range(2, 2 + extra):
            x = f"x{n}"
            net.add_ns(x)
            net.veth("dut", f"dut{n}", x, f"{x}0")
            net.addr("dut", f"dut{n}", f"10.77.{n + 1}.1",
                     f"fd00:77:{n + 1}::1")
            net.addr(x, f"{x}0", f"10.77.{n + 1}.2", f"fd00:77:{n + 1}::2")
            net.ip(x, "route", "add", "default", "via", f"10.77.{n + 1}.1")
            net.ip(x, "-6", "route", "add", "default", "via",
                   f"fd00:77:{n + 1}::1")
        net.nft("dut", """
table inet nfiv_fw {
    counter nf_in { }
    chain forward {
        type filter hook forward priority filter; policy accept;
        counter name "nf_in"
        ct state invalid drop
    }
}
table ip nfiv_nat {
    chain postrouting {
        type nat hook postrouting priority srcnat; policy accept;
        ip saddr 10.77.1.0/24 oifname "dut1" masquerade
    }
}
table ip6 nfiv_nat6 {
    chain postrouting {
        type nat hook postrouting priority srcnat; policy accept;
        ip6 saddr fd00:77:1::/64 oifname "dut1" masquerade
    }
}
""")
        net.ping("dut", CLI4, SRV4, CLI6, SRV6)
        net.ping("cli", DUT4_IN, DUT6_IN)
        net.ping("srv", DUT4_OUT, DUT6_OUT)
        for n in range(2, 2 + extra):
            net.ping("dut", f"10.77.{n + 1}.2", f"fd00:77:{n + 1}::2")
    except BaseException:
        net.destroy()
        raise
    return net


def assert_intact(res, want, what):
    """The receiver result RES holds exactly WANT intact datagrams and
    nothing truncated, corrupt or duplicated."""
    assert res["truncated"] == 0, (
        f"{what}: {res['truncated']} datagram(s) arrived truncated, "
        f"lengths {sorted(set(res['trunc_lens']))} (a sliced header carries "
        f"{TOKEN_LEN} B of token): the invariant is broken; {res}")
    assert (res["corrupt"], res["duplicate"]) == (0, 0), f"{what}: {res}"
    assert res["intact"] == want, \
        f"{what}: {res['intact']} of {want} datagrams arrived intact: {res}"


def counters(st, *names):
    """{name: value} of stats ST (None for a counter stats lacks)."""
    return {k: st.get(k) for k in names}


@pytest.fixture
def nets():
    """Factory of topologies for one test: nets(build, TAG, ...) calls
    BUILD(TAG, ...) and destroys what it built when the test ends,
    whatever its outcome."""
    made = []

    def make(build, tag, *args, **kw):
        net = build(tag, *args, **kw)
        made.append(net)
        return net
    yield make
    for net in made:
        net.destroy()
