# SPDX-License-Identifier: GPL-2.0
"""Load and daemon helpers of the manager tests (issue 10 section 7, Tests:
"upgrade, both migration modes, checkpoint/restore and a daemon restart
each under a constant UDP load plus a TCP transfer").

- Traffic: a constant UDP stream checked datagram by datagram (nftap.py
  udp: truncated, corrupt, duplicated, lost) and a TCP download over HTTP
  (curl from python's http.server, sha256 checked) between the namespaces
  "cli" and "srv" of a lab (an nfrig.Rig or an nftap.Lab);
- udp_endpoints, finish: the UDP half alone, on a Rig;
- SEND, RECV, RAW_SEND, pcap_frames, datagram: headers an NF holds and
  sends on later;
- Daemon: build/nfsliced on the host with a private socket and metrics
  port (never the host's own daemon), free_port, scrape (/metrics).
Used by test_manager.py, test_restore_load.py, test_migrate.py,
test_tenants.py.
"""
import hashlib
import json
import os
import re
import signal
import socket
import struct
import subprocess
import urllib.request

from nfsl import tap as nftap
from nfsl.rig import PY, ROOT, capture_opts, poll
from nfsl.topo import start_process, stop_process

NFSLICED = str(ROOT / "build" / "nfsliced")
SIZE = 1200          # UDP payload bytes: sliced at the default threshold
RATE = 4000          # datagrams/s
COUNT = 40000        # more than a test needs: stopped with SIGUSR2
PORT = 5201          # the rig's ACL forwards UDP 5201
HTTP_PORT = 8080     # the rig's ACL forwards TCP 8080
FILE_BYTES = 24 * 1024 * 1024


def free_port():
    """A loopback TCP port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    """GET /metrics: {(metric, netns cookie, domain): value} (an int, a
    float for seconds), and the raw text."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                timeout=10) as r:
        assert r.headers["Content-Type"] == "text/plain; version=0.0.4"
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if "le=" in line or "tenant=" in line:
            continue  # histogram buckets, per-tenant samples (of any
            # domain on the host): read from the text
        m = re.fullmatch(r'(\w+)(?:\{netns="([^"]*)",netns_cookie="(\d+)",'
                         r'domain="([^"]+)"\})? (\S+)', line)
        assert m, f"not a sample line: {line!r}"
        v = float(m[5]) if "." in m[5] else int(m[5])
        out[(m[1], int(m[3]) if m[3] else None, m[4])] = v
    return out, text


class Daemon:
    """build/nfsliced on the host with a private socket; stderr kept."""

    def __init__(self, tmp, *args):
        self.sock = str(tmp / "nfsliced.sock")
        self.port = free_port()
        self.log = tmp / "nfsliced.log"
        self.env = {**os.environ, "NFSLICE_SOCKET": self.sock}
        self.f = open(self.log, "a")
        self.p = start_process([NFSLICED, "--socket", self.sock,
                                "--metrics-port", str(self.port),
                                "--log-level", "debug", *args], stderr=self.f)
        try:
            poll(lambda: os.path.exists(self.sock) or
                 self.p.poll() is not None, 10, "nfsliced serving its socket")
            assert self.p.poll() is None, f"nfsliced exited: {self.text()}"
        except AssertionError:
            self.stop()
            raise

    def text(self):
        return self.log.read_text()

    def call(self, req, raw=None):
        """One request (or the RAW bytes) on a fresh connection: the
        response object."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.sock)
            s.sendall(raw if raw is not None else
                      json.dumps(req).encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(65536)
                assert chunk, f"nfsliced closed the connection: {buf!r}"
                buf += chunk
        return json.loads(buf)

    def stop(self, sig=signal.SIGTERM):
        """Signal it; its exit status (within 10 s)."""
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            rc = self.p.wait(timeout=10)
        finally:
            stop_process(self.p, 5)
            self.f.close()
        return rc


# Held headers: datagrams whose sliced headers an NF keeps (captured, then
# dropped in its forward chain) while their payloads stay parked, sent on
# later from its namespace. SEND: COUNT datagrams of SIZE B, datagram i
# holding bytes (i * 7 + k) % 251 (datagram(i, size)). RECV: prints "ready",
# then the datagrams received (hex), as one JSON list.
SEND = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[3])):
    s.sendto(bytes([(i * 7 + k) % 251 for k in range(int(sys.argv[4]))]),
             (sys.argv[1], int(sys.argv[2])))
"""

RECV = """
import json, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(10)
print("ready", flush=True)
got = []
try:
    while len(got) < int(sys.argv[3]):
        got.append(s.recv(65536).hex())
except socket.timeout:
    pass
print(json.dumps(got), flush=True)
"""

# IP packets (Ethernet stripped, hex on stdin) sent as they are from a raw
# socket: routed out of the namespace, through the splicers on the way.
RAW_SEND = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
for h in sys.stdin.read().split():
    pkt = bytes.fromhex(h)
    s.sendto(pkt, (socket.inet_ntoa(pkt[16:20]), 0))
"""


def pcap_frames(path):
    """The frames of a pcap file (libpcap format, any byte order)."""
    data = path.read_bytes()
    end = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    out, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def hold_headers(lab, tmp_path, port, n):
    """On nftap.nic_lab()'s LAB, the DUT's NF holds N sliced headers: N
    datagrams of SIZE B from the client to PORT on the server, sliced on
    d0, captured there and dropped by the DUT's forward chain (their
    payloads stay parked). Returns the captured frames (Ethernet up)."""
    lab.exec("dut", "nft", "-f", "-", input=(
        "table inet nfit_hold {\n"
        "  chain hold {\n"
        "    type filter hook forward priority -10; policy accept;\n"
        f"    udp dport {port} drop\n"
        "  }\n"
        "}\n"))
    pcap = tmp_path / "held.pcap"
    dump = lab.spawn("dut", "tcpdump", *capture_opts(n), "-i", "d0", "-U",
                     "-w", str(pcap), "-c", str(n), "-Q", "in",
                     f"udp dst port {port}")
    poll(lambda: "listening" in (dump.stderr.readline() or ""), 10,
         "tcpdump listening")
    lab.exec("cli", PY, "-c", SEND, nftap.NIC_ADDRS["srv"], str(port), str(n),
             str(SIZE))
    assert dump.wait(timeout=10) == 0
    lab.procs.remove(dump)
    frames = pcap_frames(pcap)
    assert len(frames) == n
    assert all(f[15] >> 2 == 63 and len(f) < 200 for f in frames), \
        "captured frames are not sliced headers"
    return frames


def datagram(i, size=SIZE):
    """The payload of SEND's datagram I."""
    return bytes([(i * 7 + k) % 251 for k in range(size)])



def finish(p, timeout=20):
    """P's last JSON line once it exits (SIGTERM after TIMEOUT s)."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        out, err = p.communicate(timeout=10)
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"{p.args}: no report: {out!r} {err[-800:]!r}")


def udp_endpoints(rig):
    """Checked UDP (nftap.py udp): the server receives flow 1 from the
    client. (client, server) Popens, both ready; the client starts on
    SIGUSR1."""
    procs = []
    for role, args in (("srv", ["--bind", f"{rig.env['SRV_IP4']},{PORT}",
                                "--expect", "1"]),
                       ("cli", ["--flow", f"1,{rig.env['CLI_IP4']},"
                                f"{rig.env['SRV_IP4']},{PORT}"])):
        p = rig.spawn(role, PY, str(nftap.HERE), "udp", "--size", SIZE,
                      "--count", COUNT, "--rate", RATE, *args,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = nftap.Lab.readline(p, 10)
        assert line.strip() == "ready", (line, p.args)
        procs.append(p)
    return procs[1], procs[0]


class Traffic:
    """A constant UDP stream (RATE datagrams/s of SIZE B, flow 1, port
    PORT) and a TCP download (FILE_BYTES random bytes, HTTP port
    HTTP_PORT, served by `nftap.py blob` at LIMIT bytes/s until finish()
    lets the rest go at once) from srv to cli, in LAB (an nfrig.Rig or an
    nftap.Lab: namespaces "cli" and "srv") between CLI_IP and SRV_IP.
    start(), then finish() for the result; kill() (also on exit of a
    with block) stops whatever still runs. At LIMIT the download lasts
    FILE_BYTES / LIMIT s (12 s) if finish() is not called earlier: the
    time a test has for what it does under traffic."""

    def __init__(self, lab, tmp, cli_ip, srv_ip, limit=2e6, max_time=90):
        self.lab, self.tmp = lab, tmp
        self.cli_ip, self.srv_ip = cli_ip, srv_ip
        self.limit, self.max_time = limit, max_time
        self.procs = {}
        self.data = os.urandom(FILE_BYTES)
        self.out = tmp / "blob.got"

    def _spawn(self, role, *args):
        args = [str(a) for a in args]
        if isinstance(self.lab, nftap.Lab):
            return self.lab.spawn(role, *args)
        return self.lab.spawn(role, *args, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)

    def _ready(self, p):
        line = nftap.Lab.readline(p, 10)
        assert line.strip() == "ready", (line, p.args)

    def start(self):
        """Server, receiver and sender ready; the download and the stream
        started. Returns self."""
        blob = self.tmp / "blob"
        blob.write_bytes(self.data)
        self.procs["http"] = self._spawn(
            "srv", PY, nftap.HERE, "blob", "--bind",
            f"{self.srv_ip},{HTTP_PORT}", "--file", blob,
            "--rate", self.limit)
        self._ready(self.procs["http"])
        for role, args in (("srv", ["--bind", f"{self.srv_ip},{PORT}",
                                    "--expect", "1"]),
                           ("cli", ["--flow", f"1,{self.cli_ip},"
                                    f"{self.srv_ip},{PORT}"])):
            p = self._spawn(role, PY, nftap.HERE, "udp", "--size", SIZE,
                            "--count", COUNT, "--rate", RATE, *args)
            self.procs["udp_" + role] = p
            self._ready(p)
        self.procs["curl"] = self._spawn(
            "cli", "curl", "-sS", "--fail", "--max-time", self.max_time,
            "-o", self.out, f"http://{self.srv_ip}:{HTTP_PORT}/blob")
        os.killpg(self.procs["udp_cli"].pid, signal.SIGUSR1)
        return self

    def downloading(self):
        """Is the download still running?"""
        return self.procs["curl"].poll() is None

    def finish_download(self):
        """Let the server send the rest at once, wait for curl. Returns
        (curl's exit status, its stderr tail, sha256 of the file ok)."""
        os.killpg(self.procs["http"].pid, signal.SIGUSR1)
        curl = self.procs["curl"]
        rc = curl.wait(timeout=self.max_time + 10)
        err = curl.stderr.read() if curl.stderr else ""
        got = self.out.read_bytes() if self.out.exists() else b""
        return rc, err[-500:], len(got), \
            hashlib.sha256(got).digest() == hashlib.sha256(self.data).digest()

    def finish(self):
        """Stop the stream, finish the download. Returns a dict: sent
        (datagrams), got (nftap.summarize of flow 1: good, truncated,
        corrupt, dup, lost), socket_drops (the receiver's socket counted
        them), curl (exit status, stderr), bytes, sha_ok (the file
        arrived byte-exact)."""
        os.killpg(self.procs["udp_cli"].pid, signal.SIGUSR2)
        rep_cli = finish(self.procs["udp_cli"])
        rep_srv = finish(self.procs["udp_srv"])
        rc, err, n, sha_ok = self.finish_download()
        self.kill()
        return {"sent": rep_cli["sent"]["1"],
                "got": nftap.summarize(rep_srv, [1]),
                "socket_drops": rep_srv["socket_drops"],
                "curl": (rc, err), "bytes": n, "sha_ok": sha_ok}

    def kill(self):
        """Stop every process still running."""
        for p in self.procs.values():
            if p.poll() is None:
                self.lab.stop(p)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
