# SPDX-License-Identifier: GPL-2.0
"""nfsliced never stalls the datapath's housekeeping (issue 17 section 2).

The daemon runs its TTL scans in the event loop that serves its clients.
Each test here disturbs that loop as a client or a lock holder would, while
a domain holds DUE payloads due for eviction (30 datagrams whose sliced
headers the DUT's forward chain drops: their payloads stay parked), and
asserts:
- all DUE payloads are evicted by the TTL on time: evicted_ttl rises by
  exactly DUE within TTL + TTL / 4 (the scan period) + SLACK of the last
  datagram sent, read from the domain's counters (nfslice stats) polled;
- a fresh client is answered meanwhile, and the disturbing client's
  requests are each answered, in order.
Disturbances: a client that sends half a line and waits (then closed by
the idle timeout with a reason); a client that pipelines thousands of
requests and does not read (then reads every answer, in order); three
requests in one write; the host-wide lock (/run/nfslice.lock) held by
another process for at least 3 s while the daemon's gc waits for it (a
set request sent meanwhile is answered once the lock is free). Also: the
request line limit (a line of NFSL_CTL_REQ_MAX bytes answered, one byte
more refused and the connection closed); `nfslice set` against a daemon
stopped with SIGSTOP fails within its --timeout naming what to do, and
the change it asked for is not made when the daemon resumes; nfsliced on
an NFSLICE_BPFFS that is not a bpffs refuses to start naming the fix.

On the code before (one blocking recv/send per client in the loop, the
gc's flock in the loop) each TTL case evicts nothing within the bound,
the pipelining client's last answers and the second and third of one
write never come, and nfslice set waits for ever.

The daemon is build/nfsliced with a private socket (nfload.Daemon); the
domain lives in a rig's DUT. No fixed sleeps: every wait polls a state.
"""
import fcntl
import json
import os
import re
import select
import signal
import socket
import subprocess
import time

import pytest

from nfload import NFSLICED, SEND, SIZE, Daemon
from nfsl.rig import PY, describe, must, name, poll

DOMAIN = "dcl"
DROP_PORT = 5302    # dropped in the DUT's forward chain after slicing
DUE = 30            # payloads left parked per case
TTL_MS = 200
SCAN_S = TTL_MS / 4 / 1000      # nfsliced scans a domain every TTL / 4
SLACK_S = 1.0       # process start-up and the stats reads on a busy host
REQ_MAX = 64 * 1024  # NFSL_CTL_REQ_MAX
LOCK_FILE = "/run/nfslice.lock"
HOLD_S = 3.0        # the lock holder keeps the lock at least this long

# Holds the host-wide lock until its stdin closes: prints "locked".
HOLD = """
import fcntl, sys
f = open(sys.argv[1], "a")
fcntl.flock(f, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def rig(rigs):
    """A rig whose DUT slices on both veths (domain DOMAIN) and drops the
    sliced headers of UDP port DROP_PORT in its forward chain."""
    rig = rigs(name("dcl"))
    rig.attach("dut0", "dut1", name=DOMAIN)
    rig.prime_neighbors()
    must(rig.exec("dut", "nft", "-f", "-", input=(
        "table inet nfit_dcl {\n"
        "  chain hold {\n"
        "    type filter hook forward priority -10; policy accept;\n"
        f"    udp dport {DROP_PORT} drop\n"
        "  }\n"
        "}\n")))
    return rig


@pytest.fixture
def daemon(request, rig, tmp_path):
    """nfsliced (gc every second, --idle-timeout the test's parameter,
    default 10 s) with DOMAIN at TTL_MS, its TTL scanner open."""
    idle = getattr(request, "param", 10)
    d = Daemon(tmp_path, "--gc-interval", "1", "--idle-timeout", str(idle))
    try:
        r = d.call({"op": "set", "netns": rig.cookies["dut"], "name": DOMAIN,
                    "changes": {"ttl_ms": TTL_MS, "threshold": 256}})
        assert r["ok"] is True, r
        poll(lambda: f"{rig.pin_dir(DOMAIN)}: TTL scanner open" in d.text(),
             10, "nfsliced's TTL scanner of the domain")
        poll(lambda: rig.stats(DOMAIN)["slots_busy"] == 0, 10,
             "no payload parked before the case")
    except BaseException:
        d.stop()
        raise
    yield d
    if d.p.poll() is None:
        os.kill(d.p.pid, signal.SIGCONT)
    d.stop()


def connect(d):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(d.sock)
    return s


def read_lines(s, n, timeout):
    """N response lines from S (decoded), within TIMEOUT s in all."""
    buf, got, deadline = b"", 0, time.monotonic() + timeout
    while got < n:
        left = deadline - time.monotonic()
        assert left > 0, f"{got} of {n} answers in {timeout} s"
        s.settimeout(left)
        try:
            chunk = s.recv(1 << 20)
        except socket.timeout:
            continue
        assert chunk, f"closed after {got} of {n} answers"
        buf += chunk
        got += chunk.count(b"\n")
    lines = buf.split(b"\n")
    assert lines[n:] == [b""], f"more than {n} answers: {lines[n:]!r}"
    return [json.loads(x) for x in lines[:n]]


def ping(d, timeout=2.0):
    """A ping on a fresh connection, answered within TIMEOUT s."""
    t0 = time.monotonic()
    with connect(d) as s:
        s.sendall(b'{"op":"ping"}\n')
        r = read_lines(s, 1, timeout)[0]
    assert r["ok"] is True and r["pid"] == d.p.pid, r
    return time.monotonic() - t0


def evicted_ttl(rig):
    return rig.stats(DOMAIN)["evicted_ttl"]


def park_and_expect_eviction(rig, d):
    """Park DUE payloads (their headers dropped by the DUT), then poll the
    domain's counters: evicted_ttl + DUE within TTL + scan + SLACK of the
    last datagram sent, and a fresh ping answered. Returns the seconds
    the evictions took."""
    before = evicted_ttl(rig)
    must(rig.exec("cli", PY, "-c", SEND, rig.env["SRV_IP4"], DROP_PORT, DUE,
                  SIZE))
    sent = time.monotonic()
    bound = TTL_MS / 1000 + SCAN_S + SLACK_S
    seen = []

    def all_evicted():
        seen.append(evicted_ttl(rig) - before)
        return seen[-1] >= DUE
    try:
        poll(all_evicted, bound, "the due payloads evicted")
    except AssertionError:
        raise AssertionError(
            f"{seen[-1]} of {DUE} due payloads evicted by the TTL within "
            f"{bound:.2f} s (TTL {TTL_MS} ms + scan {SCAN_S * 1000:.0f} ms "
            f"+ {SLACK_S} s); nfsliced log:\n{d.text()[-2000:]}") from None
    took = time.monotonic() - sent
    assert seen[-1] == DUE, f"evicted {seen[-1]}, parked {DUE}"
    ping(d)
    return took


@pytest.mark.parametrize("daemon", [4], indirect=True)
def test_half_line_client(rig, daemon):
    """A client that sends half a request and waits: the TTL scans and
    the other clients go on; after --idle-timeout (4 s) of nothing it is
    told why and closed."""
    h = connect(daemon)
    try:
        h.sendall(b'{"op": "ping"')
        sent = time.monotonic()
        park_and_expect_eviction(rig, daemon)
        r = read_lines(h, 1, 4 + 3)[0]
        idle = time.monotonic() - sent
        assert (r["ok"], r["code"]) == (False, 1), r
        assert "no complete request for 4 s: connection closed" in \
            r["error"], r
        assert idle >= 4 - 0.2, f"closed after {idle:.2f} s"
        assert h.recv(1) == b"", "connection left open"
    finally:
        h.close()
    assert "closing a client idle for 4 s in the middle of a request" in \
        daemon.text()


def test_pipelining_client_that_never_reads(rig, daemon):
    """A client writes requests as fast as the daemon takes them and
    reads nothing until its writes no longer go through: the daemon keeps
    scanning and serving others; then every request it sent is answered,
    in order."""
    cookie = rig.cookies["dut"]
    p = connect(daemon)
    try:
        p.setblocking(False)
        sent, pending = 0, b""
        # Until writes stop going through for 0.5 s: the daemon then
        # takes no more of them (its buffers and ours are full).
        while select.select([], [p], [], 0.5)[1]:
            if not pending:
                pending = b"".join(
                    json.dumps({"op": "get", "netns": cookie,
                                "name": f"p{sent + k}"}).encode() + b"\n"
                    for k in range(100))
            try:
                n = p.send(pending)
            except BlockingIOError:
                continue
            pending = pending[n:]
            if not pending:
                sent += 100
        # Finish the batch in flight, so every request sent is whole.
        p.setblocking(True)
        assert sent >= 1000, f"only {sent} requests before writes stopped"
        park_and_expect_eviction(rig, daemon)
        p.sendall(pending)
        sent += 100 if pending else 0
        got = read_lines(p, sent, 30)
    finally:
        p.close()
    for i, r in enumerate(got):
        assert r["ok"] is False and r["code"] == 1 and \
            f"no domain 'p{i}' is attached" in r["error"], (i, r)


def test_requests_in_one_write(rig, daemon):
    """Three requests in one write: three answers, in order; two and a
    shutdown of the writing side: two answers, then the end."""
    cookie = rig.cookies["dut"]
    reqs = [{"op": "get", "netns": cookie, "name": DOMAIN},
            {"op": "get", "netns": cookie, "name": "t1"},
            {"op": "ping"}]
    with connect(daemon) as s:
        s.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in reqs))
        park_and_expect_eviction(rig, daemon)
        got = read_lines(s, 3, 2)
    assert got[0]["ok"] is True and got[0]["config"]["ttl_ms"] == TTL_MS, got
    assert got[1]["ok"] is False and "no domain 't1'" in got[1]["error"], got
    assert got[2]["ok"] is True and got[2]["pid"] == daemon.p.pid, got
    # A client that shuts its writing side after its requests still gets
    # every answer, then the end of the stream.
    with connect(daemon) as s:
        s.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in reqs[1:]))
        s.shutdown(socket.SHUT_WR)
        got = read_lines(s, 2, 2)
        assert s.recv(1) == b"", "connection left open"
    assert "no domain 't1'" in got[0]["error"] and got[1]["ok"] is True, got


def lock_waiters(pid):
    """Lines of /proc/locks of flock requests of PID that wait ('->')."""
    with open("/proc/locks") as f:
        return [x for x in f if "->" in x and " FLOCK " in x and
                re.search(rf"\b{pid}\b", x)]


def test_host_lock_held(rig, daemon):
    """Another process holds /run/nfslice.lock for at least 3 s while the
    daemon's gc waits for it: the TTL scans and a ping go on; a set
    request sent meanwhile is answered once the lock is free, with the
    next generation."""
    cookie = rig.cookies["dut"]
    gen = daemon.call({"op": "get", "netns": cookie, "name": DOMAIN})["gen"]
    holder = subprocess.Popen([PY, "-c", HOLD, LOCK_FILE],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    s = None
    try:
        assert holder.stdout.readline().strip() == "locked"
        locked = time.monotonic()
        poll(lambda: lock_waiters(daemon.p.pid), 5,
             "nfsliced's gc waiting for the host-wide lock")
        s = connect(daemon)
        s.sendall(json.dumps({"op": "set", "netns": cookie, "name": DOMAIN,
                              "changes": {"expiry": 3}}).encode() + b"\n")
        took = park_and_expect_eviction(rig, daemon)
        held = time.monotonic() - locked
        assert holder.poll() is None and lock_waiters(daemon.p.pid), \
            "the lock was not held throughout"
        s.setblocking(False)
        with pytest.raises(BlockingIOError):
            s.recv(1)       # the set waits for the lock
        s.setblocking(True)
        # Keep it HOLD_S in all, then free it.
        poll(lambda: time.monotonic() - locked >= HOLD_S, HOLD_S + 1,
             "the lock held for 3 s")
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    try:
        r = read_lines(s, 1, 5)[0]
    finally:
        s.close()
    assert r["ok"] is True and r["gen"] == gen + 1 and \
        r["config"]["expiry"] == 3, r
    assert took < HOLD_S and held < HOLD_S, (took, held)


def test_request_line_limit(daemon):
    """A request line of NFSL_CTL_REQ_MAX bytes is answered; one byte
    more without a newline gets an error naming the limit, and the
    connection is closed."""
    head = b'{"op":"ping","pad":"'
    line = head + b"x" * (REQ_MAX - len(head) - 2) + b'"}'
    assert len(line) == REQ_MAX
    with connect(daemon) as s:
        s.sendall(line + b"\n")
        assert read_lines(s, 1, 5)[0]["ok"] is True
    with connect(daemon) as s:
        s.sendall(b"x" * (REQ_MAX + 1))
        r = read_lines(s, 1, 5)[0]
        assert (r["ok"], r["code"]) == (False, 2), r
        assert f"request line longer than {REQ_MAX} bytes" in r["error"], r
        assert s.recv(1) == b"", "connection left open"
    ping(daemon)


def test_set_against_stopped_daemon(rig, daemon):
    """nfslice set against a daemon stopped with SIGSTOP: exit 1 within
    its timeout (default 5 s, --timeout 1), saying what to do; the change
    is not made when the daemon goes on (its client left)."""
    cookie = rig.cookies["dut"]
    gen = daemon.call({"op": "get", "netns": cookie, "name": DOMAIN})["gen"]
    env = {**os.environ, "NFSLICE_SOCKET": daemon.sock}
    os.kill(daemon.p.pid, signal.SIGSTOP)
    try:
        for args, limit in (((), 5), (("--timeout", "1"), 1)):
            t0 = time.monotonic()
            try:
                cp = rig.nfslice("set", "--name", DOMAIN, "--keep", "4",
                                 *args, env=env, timeout=limit + 10)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"nfslice set {args} still waiting "
                                     f"after {limit + 10} s") from None
            took = time.monotonic() - t0
            assert cp.returncode == 1, describe(cp)
            assert f"nfsliced at {daemon.sock} did not answer within " \
                   f"{limit} s: is it running? (systemctl status nfsliced" \
                   in cp.stderr, describe(cp)
            assert "--timeout" in cp.stderr, describe(cp)
            assert limit - 0.1 <= took < limit + 2, (args, took)
    finally:
        os.kill(daemon.p.pid, signal.SIGCONT)
    ping(daemon)
    r = daemon.call({"op": "get", "netns": cookie, "name": DOMAIN})
    assert r["gen"] == gen and r["config"]["keep"] != 4, r


def test_bpffs_not_a_bpffs(tmp_path):
    """NFSLICE_BPFFS naming a directory that is no bpffs: nfsliced exits 1
    at once naming the fix, serves nothing."""
    d = tmp_path / "notbpf"
    d.mkdir()
    sock = tmp_path / "s.sock"
    cp = subprocess.run([NFSLICED, "--socket", str(sock), "--metrics-port",
                         "0", "--duration", "5"], capture_output=True,
                        text=True, timeout=20,
                        env={**os.environ, "NFSLICE_BPFFS": str(d)})
    assert cp.returncode == 1, describe(cp)
    assert f"NFSLICE_BPFFS={d} is not a bpffs: mount one there (mount -t " \
           f"bpf bpf {d}) or unset NFSLICE_BPFFS" in cp.stderr, describe(cp)
    assert not sock.exists()
