# SPDX-License-Identifier: GPL-2.0
"""The netns rig and the nfslice CLI, as the integration tests drive them.

A Rig wraps one client - DUT - server rig built by scripts/rig.sh with its
own PREFIX, so test modules never share namespaces with each other, with the
demo or with anybody else's rig. Everything a Rig starts or creates
(processes, slicing domains, the namespaces themselves) is recorded and
removed by Rig.destroy(), which the fixtures call from their finalizers, so a
failing test leaves nothing behind.

The topology handle itself (scripts, namespaces, processes, nfslice,
counters) is scripts/nfsl/topo.py's Topo, shared with the benchmarks and
scripts/topo_check.py; AssertTopo makes its failures assertions, as the
tests want them, and is the base of Rig and of test_topologies.py's Topo.

Names: everything the suite creates on the host is named by name(STEM),
"nfit-RUN-STEM", where RUN is this pytest run's id (RUN_ID). Two runs on one
host, or a run and the demo or the benchmarks (their prefixes never start
with "nfit-"), never build, rebuild or delete each other's namespaces.
leftovers() lists what this run left behind; conftest.py checks it at the
end of the session.
"""
import atexit
import json
import re
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path

from nfsl import libbpf
from nfsl import topo as nfsltopo
# The counters `nfslice stats --json` reports (COUNTERS, struct order, then
# MGR_COUNTERS), from include/nfsl_structs.h's X-macros.
from nfsl.counters import COUNTERS, MGR_COUNTERS  # noqa: F401
# The tests reach these through the rig module too.
from nfsl.netns import (NETNS_DIR, PACE_S, capture_opts,  # noqa: F401
                        in_netns, netns_cookie_of, packet_send)
# NFSLICE=path runs the suite against another binary (as scripts/demo.sh).
from nfsl.topo import NFSLICE, PY, ROOT  # noqa: F401 (the tests import them)

RIG_SH = nfsltopo.topo_script("rig")
BPFFS = Path("/sys/fs/bpf")
# Where the topology scripts keep what `up` saved (topo_common.sh).
TOPO_STATE_DIR = Path("/run/nfslice-topo")


def bench_module(name):
    """bench/NAME.py loaded as a module named NAME (bench is no package, and
    no Python file edits sys.path: test_nfsl_package). Its own imports of
    bench modules still need bench/ on the path: load only modules whose
    imports are the standard library and nfsl."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def possible_cpus():
    """Number of possible CPUs (/sys/devices/system/cpu/possible): what
    libbpf sizes per-CPU maps by, and the store's partitions."""
    n = 0
    with open("/sys/devices/system/cpu/possible") as f:
        for part in f.read().strip().split(","):
            lo, _, hi = part.partition("-")
            n += int(hi or lo) - int(lo) + 1
    return n


def _new_run_id():
    """6 random hex digits no namespace on this host is named with yet."""
    while True:
        rid = secrets.token_hex(3)
        if not any(NETNS_DIR.glob(f"nfit-{rid}-*")):
            return rid


# This run's id and the prefix of every name it creates (name()).
RUN_ID = _new_run_id()
RUN_PREFIX = f"nfit-{RUN_ID}-"
# The scripts take a PREFIX of at most 20 characters (rig.sh check_prefix)
# and append "-cli", "-dly", ...; namespace names have no tighter limit, and
# no interface name is derived from them (the veths have fixed names inside
# their namespaces), so IFNAMSIZ never comes into it.
PREFIX_MAX = 20
# Netns cookies of the namespaces this run built topologies in: their pin
# directories (BPFFS/nfslice/ns<cookie>) must be gone at the end.
COOKIES = set()


def name(stem):
    """This run's name for STEM: "nfit-RUN-STEM", a namespace name or a
    rig/topology PREFIX. A STEM already starting with "nfit-" has that
    dropped first, so rigs("nfit-foo") gets this run's "nfit-RUN-foo" too.
    Raises ValueError for a name the scripts would refuse."""
    if stem.startswith(RUN_PREFIX):
        return stem
    if stem.startswith("nfit-"):
        stem = stem[len("nfit-"):]
    full = RUN_PREFIX + stem
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", full) or \
            len(full) > PREFIX_MAX:
        raise ValueError(f"bad test name '{full}': letters, digits, '-', "
                         f"'_', at most {PREFIX_MAX} characters")
    return full


def run_namespaces():
    """Names of the network namespaces of this run that exist now."""
    return sorted(p.name for p in NETNS_DIR.glob(RUN_PREFIX + "*"))


def run_retired():
    """The retired-key lists (userspace/lib/nfsl/retired.h) of this run's namespaces:
    BPFFS/nfslice/@retired/ns<cookie>-<domain>, one per domain detached."""
    top = BPFFS / "nfslice" / "@retired"
    return sorted(p for c in COOKIES for p in top.glob(f"ns{c}-*"))


def collect_retired(timeout=15):
    """`nfslice gc` until it removed the retired-key lists of this run's
    namespaces: a detach keeps a domain's keys for their grace period with
    the namespace's probe, and gc drops them once the namespace is gone
    (which the kernel finishes asynchronously, often a second after
    `ip netns delete`). Returns what is still there after TIMEOUT s."""
    deadline = time.monotonic() + timeout
    while run_retired() and time.monotonic() < deadline:
        subprocess.run([str(NFSLICE), "gc"], capture_output=True, timeout=60)
        if run_retired():
            time.sleep(0.2)
    return run_retired()


def leftovers():
    """What this run left behind, described: namespaces, nfslice pin
    directories of its namespaces, topology state files. Empty when the
    fixtures cleaned up exactly."""
    found = [f"network namespace {n}" for n in run_namespaces()]
    for cookie in sorted(COOKIES):
        d = BPFFS / "nfslice" / f"ns{cookie}"
        if d.exists():
            found.append(f"nfslice pins {d}: "
                         f"{sorted(x.name for x in d.iterdir())}")
    found += [f"retired keys {p} (nfslice gc did not remove them)"
              for p in run_retired()]
    found += [f"topology state {p}"
              for p in sorted(TOPO_STATE_DIR.glob(f"*-{RUN_PREFIX}*"))]
    return found


def remove_leftovers():
    """Remove what leftovers() lists, and nothing else: every name carries
    this run's id and every cookie was one of its namespaces. Domains in a
    namespace still there are detached first (build/nfslice), then their
    pins and the namespace go."""
    for ns in run_namespaces():
        try:
            cookie = netns_cookie_of(ns)
        except AssertionError:
            cookie = None
        d = BPFFS / "nfslice" / f"ns{cookie}"
        if cookie is not None and d.is_dir():
            COOKIES.add(cookie)
            for dom in sorted(d.iterdir()):
                subprocess.run(["ip", "netns", "exec", ns, str(NFSLICE),
                                "detach", "--name", dom.name],
                               capture_output=True, timeout=60)
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True,
                       timeout=30)
    for cookie in COOKIES:
        shutil.rmtree(BPFFS / "nfslice" / f"ns{cookie}", ignore_errors=True)
    for p in run_retired():
        shutil.rmtree(p, ignore_errors=True)
    for p in TOPO_STATE_DIR.glob(f"*-{RUN_PREFIX}*"):
        p.unlink(missing_ok=True)


def purge_domains(cookie, detach):
    """Detach every nfslice domain pinned under namespace cookie COOKIE
    with DETACH(name) (a CompletedProcess), then remove the pins a detach
    left and the namespace's pin directory (only that namespace has the
    cookie). Returns the failed detaches, described."""
    errors = []
    nsdir = BPFFS / "nfslice" / f"ns{cookie}"
    if not nsdir.is_dir():
        return errors
    for d in sorted(nsdir.iterdir()):
        cp = detach(d.name)
        if cp.returncode != 0:
            errors.append(describe(cp))
        if d.exists():
            shutil.rmtree(d, ignore_errors=True)
    try:
        nsdir.rmdir()
    except OSError:
        pass
    return errors


def _tcx_egress(dev, prog_id=None):
    """Ids of DEV's TCX egress programs (nfsl.libbpf), then PROG_ID, if
    given, detached from it; run in DEV's namespace with in_netns()."""
    ifindex = socket.if_nametoindex(dev)
    ids = libbpf.tcx_egress(ifindex)
    if prog_id is not None:
        libbpf.tcx_detach(ifindex, prog_id)
    return ids


# Fixed MAC addresses for the rig's veths (locally administered, unicast).
# rig.sh leaves the kernel's random ones; the equivalence tests compare whole
# frames captured in two different rigs, so the Ethernet headers must not
# depend on which rig carried them.
MACS = {
    "cli0": "02:11:01:00:00:02",
    "dut0": "02:11:01:00:00:01",
    "dut1": "02:11:02:00:00:01",
    "srv0": "02:11:02:00:00:02",
}

# setpriv arguments that drop to nobody with no groups and no capabilities
# (setpriv clears the capability sets when the uid leaves 0).
AS_NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")


def run(args, timeout=30, env=None, input=None):
    """Run ARGS (no shell) with a hard timeout; return the CompletedProcess.

    ENV entries are added to (not substituted for) the current environment.
    Output is captured as text, never checked here: callers assert on it.
    Raises subprocess.TimeoutExpired after TIMEOUT seconds.
    """
    return nfsltopo.run(args, timeout=timeout, check=False, env=env,
                        input=input)


def describe(cp):
    """One readable block of a CompletedProcess for assertion messages."""
    return (f"$ {' '.join(map(str, cp.args))}\n-> exit {cp.returncode}\n"
            f"stdout: {cp.stdout.strip()}\nstderr: {cp.stderr.strip()}")


def must(cp):
    """Assert CP exited 0 and return its stdout."""
    assert cp.returncode == 0, describe(cp)
    return cp.stdout


def poll(cond, timeout, what, interval=0.02):
    """Call COND until it returns something truthy, at most TIMEOUT seconds.

    Returns that value; raises AssertionError naming WHAT on timeout. This is
    how the tests wait for servers and captures: a bounded wait for an
    observable state, never a fixed sleep.
    """
    return nfsltopo.poll(cond, timeout, what, interval, error=AssertionError)


def settle(read, timeout=5, interval=0.1):
    """Domain stats (READ() -> dict) once they stop moving: two reads
    INTERVAL apart agree on every counter and on slots_busy, or TIMEOUT
    seconds passed (then the last read is returned and the caller's
    assertions say what is wrong)."""
    deadline = time.monotonic() + timeout
    last = read()
    while time.monotonic() < deadline:
        time.sleep(interval)
        cur = read()
        if cur == last:
            return cur
        last = cur
    return last


def check_accounting(st, loss=0.01):
    """Every sliced payload is accounted for (docs/format.md "Counters"):
    spliced, still parked, evicted, or dropped as too big. Payloads of
    headers lost between slicer and splicer (a full queue on a loaded host;
    TCP retransmits the segment, which is sliced anew) stay parked until
    expiry; they must stay under LOSS of what was sliced."""
    lost = st["slots_busy"] + st["evicted"] + st["too_big"]
    assert st["sliced"] == st["spliced"] + lost, st
    assert lost <= loss * st["sliced"], st


class AssertTopo(nfsltopo.Topo):
    """An nfsltopo.Topo as the tests drive it.

    A failed command is an AssertionError that shows the whole command
    (describe()); commands get 30 s, listeners 10 s. up() registers
    destroy() with atexit, the net under the fixtures' finalizers should
    pytest itself be torn down (destroy is idempotent).
    """

    Error = AssertionError
    timeout = 30
    listen_timeout = 10
    # Retired keys are collected once, at the session's end (conftest),
    # not after every rig: down does not wait for gc.
    down_env = {"TOPO_RETIRED_WAIT": "0"}

    def failure(self, cp):
        """AssertionError describing CP (describe())."""
        return AssertionError(describe(cp))

    def __init__(self, kind, prefix, *args, **kwargs):
        """nfsltopo.Topo(KIND, name(PREFIX), ...): the topology's PREFIX
        is always this run's (name())."""
        super().__init__(kind, name(prefix), *args, **kwargs)
        self.cookies = {}

    def up(self):
        """Build the topology (nfsltopo.Topo.up) and learn the cookies of
        its namespaces (self.cookies, by role; COOKIES); self."""
        atexit.register(self.destroy)
        super().up()
        seen = set()
        for key, ns in self.env.items():
            if not key.endswith("_NS") or ns in seen or \
                    not (NETNS_DIR / ns).exists():
                continue
            seen.add(ns)
            role = key[:-len("_NS")].lower()
            self.cookies[role] = self.netns_cookie(role)
            COOKIES.add(self.cookies[role])
        return self

    def netns_cookie(self, where):
        """SO_NETNS_COOKIE of namespace WHERE: names its nfslice pin dir."""
        return netns_cookie_of(self.ns(where))

    def check(self, role, *args, timeout=None, env=None):
        """Run ARGS in ROLE's namespace, assert exit 0, return stdout."""
        return self.exec(role, *args, timeout=timeout, env=env,
                         check=True).stdout

    def destroy(self):
        """Remove everything this handle holds, even after a failed test.

        Order matters: processes first (they keep namespaces alive), then
        what release() undoes (slicing domains: their pins live in the
        host's bpffs and would outlive the namespaces), then the topology.
        Returns the problems (failed detaches, a failed `down`), described.
        """
        self.stop_all()
        errors = self.release()
        cp = self.remove()
        if cp is not None and cp.returncode != 0:
            errors.append(describe(cp))
        return errors


class Rig(AssertTopo):
    """One client - DUT - server rig (scripts/rig.sh) and what runs in it.

    Namespaces are addressed by role: "cli", "dut", "srv". self.env holds the
    names and addresses `rig.sh env PREFIX` prints (CLI_IP4, SRV_IP6, ...).
    The nfslice methods take the domain NAME and namespace WHERE (default
    "default" in the DUT) and reach a domain a test attached by hand too.
    """

    ROLES = ("cli", "dut", "srv")
    nf_role = "dut"

    def __init__(self, prefix):
        """Describe the rig PREFIX (does not build it: see up())."""
        super().__init__("rig", prefix)
        self.read_env()

    # ------------------------------------------------------------ life --
    def up(self):
        """Build the rig, pin the veth MACs (the netns cookies: AssertTopo)."""
        super().up()
        for role, dev in (("cli", "cli0"), ("dut", "dut0"), ("dut", "dut1"),
                          ("srv", "srv0")):
            self.run(["ip", "-n", self.ns(role), "link", "set", "dev", dev,
                      "address", MACS[dev]])
        return self

    def release(self):
        """What destroy() undoes before the namespaces go: detach_all()."""
        return self.detach_all()

    def detach_all(self):
        """Detach every slicing domain of the rig's namespaces.

        Found through the pin directories of the namespaces' cookies, so
        this also catches domains a test attached by hand. Pins a detach
        fails to remove are removed here: only this rig's namespaces have
        these cookies. Returns the failed detaches, described.
        """
        errors = []
        for role, cookie in self.cookies.items():
            errors += purge_domains(cookie, lambda dom, role=role: self.nfslice(
                "detach", "--name", dom, where=role))
        return errors

    # ------------------------------------------------------- processes --
    def exec(self, where, *args, timeout=None, env=None, input=None,
             check=False):
        """Run ARGS in namespace WHERE (ip netns exec); CompletedProcess.

        Unlike nfsltopo.Topo.exec, not checked unless CHECK: the tests
        assert on failures they provoke.
        """
        return super().exec(where, *args, timeout=timeout, env=env,
                            input=input, check=check)

    # ---------------------------------------------------------- links --
    def link(self, where, dev):
        """`ip -j link show dev DEV` in WHERE, as a dict."""
        return self.link_info(where, dev)

    def xdp(self, where, dev):
        """The XDP attachment of DEV as ip reports it, or None."""
        return self.link(where, dev).get("xdp")

    def qdisc_kinds(self, where, dev):
        """Kinds of DEV's qdiscs (e.g. ["noqueue", "clsact"])."""
        return [q["kind"] for q in self.qdiscs(where, dev)]

    def egress_filters(self, where, dev):
        """tc filters on DEV's egress hook (empty without clsact)."""
        cp = run(["tc", "-j", "-n", self.ns(where), "filter", "show", "dev",
                  dev, "egress"])
        if cp.returncode != 0:
            # No clsact qdisc: there is no egress hook to list.
            return []
        return json.loads(cp.stdout or "[]")

    def tcx_egress(self, where, dev):
        """Ids of the TCX egress programs of DEV in WHERE."""
        return in_netns(self.ns(where), _tcx_egress, dev)

    def tcx_detach(self, where, dev, prog_id):
        """Remove TCX egress program PROG_ID from DEV by hand."""
        in_netns(self.ns(where), _tcx_egress, dev, int(prog_id))

    def pin_dir(self, name, where="dut"):
        """Where domain NAME of namespace WHERE keeps its pins."""
        return BPFFS / "nfslice" / f"ns{self.cookies[where]}" / name

    # --------------------------------------------------------- nfslice --
    def nfslice(self, *args, where="dut", via="netns", env=None,
                nobody=False, timeout=60):
        """Run build/nfslice ARGS in namespace WHERE; CompletedProcess.

        VIA "netns" uses `ip netns exec` (a new mount namespace: nfslice
        must find the host's bpffs itself), "nsenter" only switches the
        network namespace. NOBODY drops to uid/gid 65534 first. Not
        checked: the tests assert on the exit status and messages.
        """
        cmd = [*(AS_NOBODY if nobody else ()), NFSLICE, *args]
        if via == "netns":
            full = ["ip", "netns", "exec", self.ns(where), *cmd]
        elif via == "nsenter":
            full = ["nsenter", f"--net=/var/run/netns/{self.ns(where)}", *cmd]
        else:
            raise ValueError(via)
        return run(full, timeout=timeout, env=env)

    def nfslice_json(self, *args, where="dut", via="netns"):
        """Run an nfslice command with --json; assert exit 0; parse it."""
        return json.loads(must(self.nfslice(*args, "--json", where=where,
                                            via=via)))

    def attach(self, *ifaces, name="default", opts=(), where="dut"):
        """Attach domain NAME to IFACES in WHERE; assert success.

        destroy() detaches it again whatever happens to the test.
        """
        must(self.nfslice("attach", "--name", name, *opts, *ifaces,
                          where=where))
        return self.status(name, where)

    def detach(self, name="default", where="dut"):
        """Detach domain NAME in WHERE; assert success."""
        return must(self.nfslice("detach", "--name", name, where=where))

    def status(self, name="default", where="dut"):
        """`nfslice status --json` of domain NAME."""
        return self.nfslice_json("status", "--name", name, where=where)

    def stats(self, name="default", where="dut"):
        """`nfslice stats --json` of domain NAME."""
        return self.nfslice_json("stats", "--name", name, where=where)

    # ------------------------------------------------------ rig extras --
    def nf_counter_ref(self):
        """(family, table, name) of the DUT's counter nf_in, per rig.sh env.

        rig.sh printed it as NFT_FW_TABLE="inet nfsl_fw" at first and as
        NFT_FAMILY + NFT_TABLE later; accept both.
        """
        if "NFT_TABLE" in self.env:
            return super().nf_counter_ref()
        fam, table = self.env["NFT_FW_TABLE"].split()
        return fam, table, self.env["NFT_COUNTER"]

    def silence_endpoints(self):
        """Make client and server ignore TCP/UDP they receive.

        The packet tests send crafted segments to ports nobody listens on;
        the endpoints' kernels would answer with RSTs and ICMP errors that
        cross the DUT too and change its counters. Captures (tcpdump on the
        veth) see packets before netfilter, so dropping at input hides
        nothing from them.
        """
        for role in ("cli", "srv"):
            cp = self.exec(role, "nft", "-f", "-", input=(
                "table inet nfit_sink {\n"
                "  chain input {\n"
                "    type filter hook input priority filter; policy accept;\n"
                "    meta l4proto { tcp, udp } drop\n"
                "  }\n"
                "}\n"))
            must(cp)

    def prime_neighbors(self):
        """Resolve the DUT's neighbours (ARP/NDP) before crafted traffic.

        Otherwise the first forwarded packets wait in the neighbour queue
        while the DUT resolves the next hop; priming keeps every test run's
        path identical.
        """
        for addr in (self.env["CLI_IP4"], self.env["SRV_IP4"],
                     self.env["CLI_IP6"], self.env["SRV_IP6"]):
            self.check("dut", "ping", "-c", "1", "-W", "2", addr)
