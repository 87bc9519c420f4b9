# SPDX-License-Identifier: GPL-2.0
"""nfsltopo: one handle on a network-namespace topology of nfslice's scripts.

scripts/rig.sh, scripts/topo_inline.sh and scripts/topo_park.sh share one
interface, `up|down|env [OPTIONS] [PREFIX]` (docs/topologies.md). Topo wraps
one such topology: it builds and removes it, reads the variables its `env`
prints, runs and starts commands in its namespaces, drives build/nfslice in
the slicing namespace and reads what the checks compare: the NF's nftables
counter, link statistics, qdisc statistics.

Its users subclass Topo for what is theirs alone: scripts/topo_check.py,
nfsl.bench, nfsl.rig (Rig, and through it the Topo of
tests/integration/test_topologies.py). They import it as nfsl.topo (the
package's docstring says how each finds it). Stdlib only: the tests and
benchmarks run it with /usr/bin/python3 as it is.

Roles: a namespace is named by its role, the lower-case stem of a *_NS
variable of `env`: "cli" is CLI_NS, "slice" SLICE_NS, "nf" NF_NS, "dut"
DUT_NS.

Errors: a command that fails raises what Topo.failure() makes of it (a
RuntimeError naming the command, its exit status and the end of its stderr;
the tests' subclass makes it an AssertionError); a command that outlives its
timeout raises subprocess.TimeoutExpired after it was killed. Units: seconds
for timeouts, bytes and packets for counters.

Nothing here touches what it did not create: topologies live under the
caller's PREFIX, and the processes a Topo starts get a process group of
their own, which is all stop_process() ever signals.
"""
import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
# NFSLICE=path runs everything against another binary (as scripts/demo.sh).
NFSLICE = Path(os.environ.get("NFSLICE") or ROOT / "build" / "nfslice")
# Debian's pytest and scapy live with this interpreter (docs/platform.md).
PY = "/usr/bin/python3"

SCRIPT_TIMEOUT = 60     # s: `up` / `down` of a topology script
NFSLICE_TIMEOUT = 60    # s: one nfslice command (attach loads programs)
STOP_TIMEOUT = 5        # s: SIGTERM -> SIGKILL, and SIGKILL -> giving up


def log(msg, tag):
    """Print "TAG: MSG" to stderr at once (progress of a long run)."""
    print(f"{tag}: {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------- processes --
def command_error(cp):
    """One line on a failed CompletedProcess: command, exit status and the
    last 500 characters of its stderr."""
    return (f"{' '.join(map(str, cp.args))}: exit {cp.returncode}: "
            f"{cp.stderr.strip()[-500:]}")


def run(args, timeout=60, check=True, input=None, env=None):
    """Run ARGS (a list, no shell; items are str()ed) and wait for it.

    Output is captured as text; INPUT (str) goes to its stdin; ENV entries
    are added to (not substituted for) the current environment. Returns the
    CompletedProcess. Raises RuntimeError (command_error()) when CHECK and
    the exit status is not 0, subprocess.TimeoutExpired when it ran longer
    than TIMEOUT seconds (it is killed first).
    """
    full_env = {**os.environ, **env} if env else None
    cp = subprocess.run([str(a) for a in args], capture_output=True,
                        text=True, timeout=timeout, input=input, env=full_env)
    if check and cp.returncode != 0:
        raise RuntimeError(command_error(cp))
    return cp


def start_process(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
    """Start ARGS in the background in a new session (its own process group).

    The group holds the command and whatever it forks, nothing of the
    caller's: that is what stop_process() signals, so a helper's children
    die with it and nobody else's processes are hit. stdin is /dev/null;
    STDOUT and STDERR as for Popen (DEVNULL, PIPE, a file), text mode.
    Returns the Popen. Raises OSError when ARGS[0] cannot be executed.
    """
    return subprocess.Popen([str(a) for a in args], stdout=stdout,
                            stderr=stderr, stdin=subprocess.DEVNULL,
                            text=True, start_new_session=True)


def _signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:      # the whole group is gone already
        pass


def stop_process(proc, timeout=STOP_TIMEOUT):
    """End PROC, started by start_process(), with its process group.

    A running PROC gets SIGTERM (to the group), then SIGKILL if it has not
    exited after TIMEOUT seconds; one that exited already is only reaped.
    Returns its exit status (negative: killed by that signal). Raises
    subprocess.TimeoutExpired if it outlives SIGKILL by TIMEOUT seconds.
    """
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(timeout=timeout)
    return proc.returncode


def poll(cond, timeout, what, interval=0.02, error=RuntimeError):
    """Call COND until it returns something truthy, at most TIMEOUT seconds,
    INTERVAL seconds apart; return that value.

    A bounded wait for an observable state, never a fixed sleep. Raises
    ERROR("timed out after TIMEOUT s waiting for WHAT") on timeout, and
    whatever COND raises.
    """
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise error(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


# ------------------------------------------------------------ topology --
def topo_script(kind):
    """The script of topology KIND: scripts/rig.sh for "rig", else
    scripts/topo_KIND.sh ("inline", "park")."""
    return SCRIPTS / ("rig.sh" if kind == "rig" else f"topo_{kind}.sh")


class Topo:
    """A topology of topo_script(KIND) under PREFIX, and what runs in it.

    OPTS go to `up`; DOMAIN is the nfslice domain attach() creates in the
    slicing namespace; TAG, if set, prefixes progress lines on stderr.
    Subclasses set the class attributes: Error and failure() (what a failed
    command raises), timeout (s, default for one command: `env`, ip, tc,
    anything in a namespace), listen_timeout (s, wait_listen()), nf_role
    (where the NF's nftables counter is).

    Teardown, down(): processes first (they keep namespaces alive), then
    release() (nfslice pins live in the host's bpffs and outlive the
    namespaces), then the script's `down`. It is idempotent, and runs
    `down` also for a topology whose `up` failed half-way.
    """

    Error = RuntimeError
    timeout = 60
    listen_timeout = 5
    nf_role = "nf"

    def __init__(self, kind, prefix, opts=(), domain="default", tag=None):
        """Describe the topology; build it with up()."""
        self.kind, self.prefix, self.opts = kind, prefix, list(opts)
        self.script = topo_script(kind)
        self.domain = domain
        self.tag = tag
        self.env = {}
        self.procs = []
        self.attached = False
        self.built = False

    def note(self, msg):
        """A progress line on stderr (only with a TAG)."""
        if self.tag:
            log(msg, self.tag)

    def failure(self, cp):
        """The exception a failed command CP raises (not raised here)."""
        return self.Error(command_error(cp))

    def run(self, args, timeout=None, check=True, input=None, env=None):
        """The module's run() on the host (not in a namespace), TIMEOUT
        defaulting to self.timeout seconds.

        Returns the CompletedProcess; raises self.failure(cp) when CHECK and
        it failed, subprocess.TimeoutExpired on timeout.
        """
        cp = run(args, timeout=self.timeout if timeout is None else timeout,
                 check=False, input=input, env=env)
        if check and cp.returncode != 0:
            raise self.failure(cp)
        return cp

    # ---------------------------------------------------------- life --
    def up(self):
        """Build the topology (SCRIPT_TIMEOUT s) and read its variables.

        Returns self. Raises as run() does; down() removes what a failed
        `up` left (the scripts undo a half-built topology themselves too).
        """
        # Marked built first: a half-built topology must be removed as well.
        self.built = True
        self.note(f"building the {self.kind} topology '{self.prefix}'")
        self.run([self.script, "up", *self.opts, self.prefix],
                 timeout=SCRIPT_TIMEOUT)
        self.read_env()
        return self

    def read_env(self):
        """Fill self.env from `SCRIPT env PREFIX`; return it.

        The scripts quote values with printf %q (SLICE_IFS=dut0\\ dut1):
        each value is unquoted and its words joined by one space. Raises as
        run() does.
        """
        out = self.run([self.script, "env", self.prefix]).stdout
        for line in out.splitlines():
            k, _, v = line.partition("=")
            self.env[k] = " ".join(shlex.split(v))
        return self.env

    def down(self):
        """Stop our processes, release() and remove the topology.

        A failed release() does not stop it: the namespaces must go
        whatever else failed (its problems are noted on stderr with a TAG).
        Returns the CompletedProcess of `SCRIPT down` (not checked), or None
        when not built. Raises subprocess.TimeoutExpired when a process or
        the script hangs.
        """
        self.stop_all()
        try:
            problems = self.release()
        except Exception as e:          # keep going: the namespaces must go
            problems = [str(e)]
        for p in problems:
            self.note(f"cleanup: {p}")
        return self.remove()

    def release(self):
        """Undo what this handle attached (the nfslice domain), before the
        namespaces go. Returns the problems, as strings; subclasses add
        their own attachments."""
        if not self.attached:
            return []
        cp = self.detach(check=False)
        return [] if cp.returncode == 0 else [command_error(cp)]

    # Environment of `SCRIPT down` (topo_common.sh topo_delete_ns).
    down_env = None

    def remove(self):
        """`SCRIPT down PREFIX` (SCRIPT_TIMEOUT s) if built; its
        CompletedProcess, or None when there was nothing to remove. Raises
        subprocess.TimeoutExpired (and stays built, for a retry)."""
        if not self.built:
            return None
        cp = self.run([self.script, "down", self.prefix],
                      timeout=SCRIPT_TIMEOUT, check=False, env=self.down_env)
        self.built = False
        return cp

    # ---------------------------------------------------- namespaces --
    def ns(self, role):
        """Name of the namespace of ROLE; KeyError if the topology has none."""
        return self.env[f"{role.upper()}_NS"]

    @property
    def slice_ifs(self):
        """The interfaces nfslice attaches to (SLICE_IFS), a list."""
        return self.env["SLICE_IFS"].split()

    def exec(self, role, *args, timeout=None, check=True, input=None,
             env=None):
        """Run ARGS in ROLE's namespace (ip netns exec) and wait for it.

        TIMEOUT defaults to self.timeout seconds. Returns the
        CompletedProcess; raises self.failure(cp) when CHECK and it failed,
        subprocess.TimeoutExpired on timeout.
        """
        return self.run(["ip", "netns", "exec", self.ns(role), *args],
                        timeout=timeout, check=check, input=input, env=env)

    def spawn(self, role, *args, stdout=subprocess.DEVNULL,
              stderr=subprocess.DEVNULL):
        """Start ARGS in ROLE's namespace in the background; the Popen.

        `ip netns exec` execs the command, so the Popen is the command
        itself, leading its own process group (start_process()). It is
        tracked: down() stops it if nobody did. Raises OSError.
        """
        p = start_process(["ip", "netns", "exec", self.ns(role), *args],
                          stdout=stdout, stderr=stderr)
        self.procs.append(p)
        return p

    def stop(self, p, timeout=STOP_TIMEOUT):
        """End P, started by spawn(): stop_process(); its exit status.
        Raises subprocess.TimeoutExpired (P stays tracked)."""
        rc = stop_process(p, timeout)
        if p in self.procs:
            self.procs.remove(p)
        return rc

    def stop_all(self):
        """stop() every process spawn() started and nobody stopped yet."""
        for p in list(self.procs):
            self.stop(p)

    def collect(self, p, timeout):
        """Wait at most TIMEOUT seconds for P (spawned with stdout=PIPE) to
        exit; its stdout. Raises subprocess.TimeoutExpired (P stays
        tracked, so down() still stops it)."""
        out, _ = p.communicate(timeout=timeout)
        if p in self.procs:
            self.procs.remove(p)
        return out

    def wait_listen(self, role, port, proto="tcp", timeout=None):
        """Wait until a PROTO ("tcp" or "udp") socket listens on PORT in
        ROLE's namespace, at most TIMEOUT seconds (default
        self.listen_timeout). Raises self.Error on timeout."""
        flag = "-Htln" if proto == "tcp" else "-Huln"
        poll(lambda: self.exec(role, "ss", flag, f"sport = :{port}",
                               check=False).stdout.strip(),
             self.listen_timeout if timeout is None else timeout,
             f"a {proto} listener on port {port} in {self.ns(role)}",
             error=self.Error)

    def serve_random_file(self, role, www, nbytes, bind, port):
        """NBYTES random bytes as WWW/blob, served by python3 -m
        http.server on BIND:PORT in ROLE's namespace, listening on
        return. Returns (the server's Popen, the file's sha256 hex)."""
        data = os.urandom(nbytes)
        (www / "blob").write_bytes(data)
        proc = self.spawn(role, PY, "-m", "http.server", str(port),
                          "--bind", bind, "--directory", str(www))
        self.wait_listen(role, port)
        return proc, hashlib.sha256(data).hexdigest()

    # ------------------------------------------------------- nfslice --
    def nfslice(self, *args, check=True, timeout=NFSLICE_TIMEOUT):
        """build/nfslice ARGS in the slicing namespace; CompletedProcess.
        Raises as exec() does."""
        return self.exec("slice", NFSLICE, *args, timeout=timeout,
                         check=check)

    def attach(self, *opts):
        """Attach the domain to SLICE_IFS, with nfslice attach OPTS (e.g.
        "--keep", 16); the CompletedProcess. Raises as exec() does."""
        ports = self.env.get("SLICE_NF_PORTS", "")
        nf = ("--nf-port", ports) if ports else ()
        cp = self.nfslice("attach", "--name", self.domain, *nf, *opts,
                          *self.slice_ifs)
        self.attached = True
        return cp

    def detach(self, check=True):
        """Detach the domain; the CompletedProcess. Raises as exec() does
        (with CHECK)."""
        self.attached = False
        return self.nfslice("detach", "--name", self.domain, check=check)

    def status(self):
        """`nfslice status --json` of the domain, a dict (pins, config)."""
        return json.loads(self.nfslice("status", "--name", self.domain,
                                       "--json").stdout)

    def stats(self):
        """`nfslice stats --json` of the domain: counters (packets, bytes
        for parked_bytes), slots and slots_busy."""
        return json.loads(self.nfslice("stats", "--name", self.domain,
                                       "--json").stdout)

    def percpu(self):
        """{cpu: {counter: value}}: the domain's per-CPU counters map, read
        with bpftool from its pin. Raises as run() does."""
        pin = self.status()["pins"]["counters"]
        d = json.loads(self.run(["bpftool", "map", "dump", "pinned", pin,
                                 "-j"]).stdout)
        return {v["cpu"]: v["value"] for v in d[0]["formatted"]["values"]}

    # ------------------------------------------------------ counters --
    def nft_counter(self, role, family, table, name):
        """(packets, bytes) of the named nftables counter FAMILY TABLE NAME
        in ROLE's namespace. Raises self.Error if nft lists no counter,
        self.failure() if nft fails."""
        out = self.exec(role, "nft", "-j", "list", "counter", family, table,
                        name, check=True).stdout
        for o in json.loads(out)["nftables"]:
            if "counter" in o:
                return o["counter"]["packets"], o["counter"]["bytes"]
        raise self.Error(f"no counter {name} in {out}")

    def nf_counter_ref(self):
        """(family, table, name) of the NF's counter of every forwarded
        packet (NFT_FAMILY, NFT_TABLE, NFT_COUNTER of `env`)."""
        e = self.env
        return e["NFT_FAMILY"], e["NFT_TABLE"], e["NFT_COUNTER"]

    def nf_in(self):
        """(packets, IP bytes) the NF has forwarded so far (its counter,
        nf_in in every topology). Raises as nft_counter() does."""
        return self.nft_counter(self.nf_role, *self.nf_counter_ref())

    def nf_in_reset(self):
        """Zero the NF's counter. Raises as exec() does."""
        self.exec(self.nf_role, "nft", "reset", "counter",
                  *self.nf_counter_ref(), check=True)

    def link_info(self, role, dev):
        """`ip -j link show dev DEV` in ROLE's namespace, a dict (address,
        mtu, xdp, ...). Raises as run() does."""
        return json.loads(self.run(["ip", "-j", "-n", self.ns(role), "link",
                                    "show", "dev", dev]).stdout)[0]

    def link_stats(self, role, dev):
        """stats64 of DEV in ROLE's namespace: {"rx": {...}, "tx": {...}},
        bytes and packets since the veth was created (frame bytes without
        FCS). Raises as run() does."""
        return json.loads(self.run(["ip", "-s", "-j", "-n", self.ns(role),
                                    "link", "show", "dev",
                                    dev]).stdout)[0]["stats64"]

    def qdiscs(self, role, dev):
        """DEV's qdiscs with statistics (`tc -s -j qdisc show`), a list of
        dicts (kind, root, options, bytes, packets, drops, ...). Raises as
        run() does."""
        out = self.run(["tc", "-s", "-j", "-n", self.ns(role), "qdisc",
                        "show", "dev", dev]).stdout
        return json.loads(out or "[]")

    def root_qdisc(self, role, dev):
        """DEV's root qdisc as qdiscs() lists it (park: the tbf shaper,
        "bytes" counted with its +overhead per frame), or {} if none."""
        for q in self.qdiscs(role, dev):
            if q.get("root"):
                return q
        return {}
