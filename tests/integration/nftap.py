# SPDX-License-Identifier: GPL-2.0
"""Namespaces, a TAP "remote NF" and checked UDP endpoints for the tests
that build their own topologies (test_nonlinear.py, test_attach_order.py,
test_uppers.py).

Three parts:

- Lab: a set of network namespaces with per-run unique names, the
  processes started in them and the nfslice domains attached there.
  Lab.destroy() removes all of it (processes, domains and their pins in the
  host's bpffs, namespaces), also after a failed test; the fixtures call it
  from their finalizers.

- `nftap.py tapnf`: run inside a namespace, it creates a TAP device with
  IFF_TAP | IFF_NO_PI | IFF_NAPI | IFF_NAPI_FRAGS and acts as a remote NF
  behind it: every UDP frame the kernel sends out of the TAP is written
  back in, with its Ethernet addresses rewritten (destination: the TAP's
  own MAC, so the kernel routes it again), by one writev() of several
  iovecs. With IFF_NAPI_FRAGS the kernel builds such a write as a frag
  skb (tun_napi_alloc_frags: the first iovec is the linear part, each
  further iovec one page fragment), so the IP/UDP headers and the token
  of a sliced header lie beyond the linear part, as virtio-net and many
  NIC drivers deliver them.

- `nftap.py udp`: sends sequence-numbered UDP datagrams whose every byte is
  a function of (flow, sequence number), and receives and checks
  datagrams: each one is good (full length, exact bytes), truncated (a
  sliced header that left unspliced: shorter than its flow's size, or not
  even our header left), or corrupt. An end marker per flow (a small,
  never sliced datagram carrying the number sent) lets the receiver count
  the losses and exit by itself.

Stdlib only; run with /usr/bin/python3 as the rest of the suite.
"""
import argparse
import fcntl
import hashlib
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

# Importable from a test (sys.path has tests/integration) and runnable as a
# script inside a namespace (then nfrig is not needed).
HERE = Path(__file__).resolve()
PY = "/usr/bin/python3"

# ------------------------------------------------------------------ TAP --
TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NAPI = 0x0010
IFF_NAPI_FRAGS = 0x0020
IFF_NO_PI = 0x1000
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD


def open_tap(name, frags=True):
    """Create TAP NAME (in the caller's network namespace); its fd.

    FRAGS adds IFF_NAPI | IFF_NAPI_FRAGS (needs CAP_NET_ADMIN). The device
    lives as long as the fd. Raises OSError from open or TUNSETIFF.
    """
    flags = IFF_TAP | IFF_NO_PI
    if frags:
        flags |= IFF_NAPI | IFF_NAPI_FRAGS
    fd = os.open("/dev/net/tun", os.O_RDWR)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", name.encode(), flags))
    except OSError:
        os.close(fd)
        raise
    return fd


def mac_bytes(mac):
    """b'\\x02...' of "02:..:.."."""
    return bytes(int(x, 16) for x in mac.split(":"))


def udp_of(frame):
    """(ip version, dscp, dst port) of an untagged IPv4/IPv6 UDP frame, or
    None for anything else (ARP, ICMP, ND, ...)."""
    if len(frame) < 14:
        return None
    et = struct.unpack_from("!H", frame, 12)[0]
    if et == ETH_P_IP and len(frame) >= 34:
        ihl = (frame[14] & 15) * 4
        if frame[23] != 17 or len(frame) < 14 + ihl + 8:
            return None
        return 4, frame[15] >> 2, struct.unpack_from("!H", frame, 14 + ihl + 2)[0]
    if et == ETH_P_IPV6 and len(frame) >= 62:
        if frame[20] != 17:
            return None
        tc = ((frame[14] & 15) << 4) | (frame[15] >> 4)
        return 6, tc >> 2, struct.unpack_from("!H", frame, 54 + 2)[0]
    return None


def tapnf_main(args):
    """`tapnf`: the remote NF on a TAP (see the module docstring).

    Prints "ready" once the TAP exists, then reflects UDP frames to
    --port until SIGTERM, then prints one JSON line: frames read,
    reflected, ignored, write errors, the distinct frame lengths and DSCPs
    of the reflected frames.
    """
    try:
        fd = open_tap(args.name, frags=not args.no_frags)
    except OSError as e:
        print(json.dumps({"error": f"TUNSETIFF: {e.strerror} (errno {e.errno})",
                          "errno": e.errno}), flush=True)
        return 3
    dst, src = mac_bytes(args.dut_mac), mac_bytes(args.nf_mac)
    splits = sorted(set(int(x) for x in args.split.split(",") if x))
    st = {"read": 0, "reflected": 0, "ignored": 0, "write_errors": [],
          "lengths": {}, "dscp": {}}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("ready", flush=True)
    while not stop:
        try:
            r, _, _ = select.select([fd], [], [], 0.2)
        except InterruptedError:
            continue
        if not r:
            continue
        try:
            frame = os.read(fd, 65536)
        except (BlockingIOError, InterruptedError):
            continue
        st["read"] += 1
        u = udp_of(frame)
        if u is None or u[2] != args.port:
            st["ignored"] += 1
            continue
        out = dst + src + frame[12:]
        cuts = [0, *[c for c in splits if 0 < c < len(out)], len(out)]
        iov = [out[a:b] for a, b in zip(cuts, cuts[1:])]
        try:
            n = os.writev(fd, iov)
            if n != len(out):
                st["write_errors"].append(f"short write {n}/{len(out)}")
        except OSError as e:
            st["write_errors"].append(f"{e.strerror} (errno {e.errno})")
            continue
        st["reflected"] += 1
        key = str(len(frame))
        st["lengths"][key] = st["lengths"].get(key, 0) + 1
        key = str(u[1])
        st["dscp"][key] = st["dscp"].get(key, 0) + 1
    print(json.dumps(st), flush=True)
    return 0


# ------------------------------------------------------------------ UDP --
MAGIC_DATA = b"NT"
MAGIC_END = b"NE"
HDR = struct.Struct("!2sHII")        # magic, flow, seq, size
END = struct.Struct("!2sHI")         # magic, flow, datagrams sent
END_REPEAT = 3


def payload(flow, seq, size):
    """The datagram SEQ of FLOW: SIZE bytes, each a function of both."""
    head = HDR.pack(MAGIC_DATA, flow, seq, size)
    block = hashlib.blake2b(head, digest_size=64).digest()
    body = (block * (size // 64 + 1))[:size - HDR.size]
    return head + body


def classify(d):
    """("good"|"truncated"|"corrupt"|"end", flow, seq-or-count) of one
    received datagram D (flow and seq are None when unreadable)."""
    if len(d) == END.size and d[:2] == MAGIC_END:
        _, flow, n = END.unpack(d)
        return "end", flow, n
    if len(d) >= HDR.size and d[:2] == MAGIC_DATA:
        _, flow, seq, size = HDR.unpack_from(d)
        if len(d) < size:
            return "truncated", flow, seq
        if len(d) == size and d == payload(flow, seq, size):
            return "good", flow, seq
        return "corrupt", flow, seq
    # Not even our header: a sliced header with --keep < 12 that left
    # unspliced carries only the token (16 B) after the UDP header.
    return "truncated", None, None


def csum16(data, start=0):
    """Internet checksum (RFC 1071) of DATA added to START, folded, not
    complemented."""
    if len(data) % 2:
        data += b"\0"
    total = start + sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def wire_frame(src_mac, dst_mac, src, dst, sport, dport, data, ident,
               ip_opts=0):
    """An Ethernet/IPv4|IPv6/UDP frame carrying DATA with full, correct
    checksums, as a packet arrives from a wire (no checksum offload state
    rides along). IPv4 gets IP_OPTS bytes of options (NOPs, a multiple of
    4, at most 40)."""
    ulen = 8 + len(data)
    if ":" in dst:
        s6 = socket.inet_pton(socket.AF_INET6, src)
        d6 = socket.inet_pton(socket.AF_INET6, dst)
        pseudo = s6 + d6 + struct.pack("!IxxxB", ulen, 17)
        udp = struct.pack("!HHHH", sport, dport, ulen, 0) + data
        c = (~csum16(pseudo + udp)) & 0xFFFF or 0xFFFF
        udp = udp[:6] + struct.pack("!H", c) + udp[8:]
        ip = struct.pack("!IHBB", 6 << 28, ulen, 17, 64) + s6 + d6
        et = ETH_P_IPV6
    else:
        s4, d4 = socket.inet_aton(src), socket.inet_aton(dst)
        pseudo = s4 + d4 + struct.pack("!xBH", 17, ulen)
        udp = struct.pack("!HHHH", sport, dport, ulen, 0) + data
        c = (~csum16(pseudo + udp)) & 0xFFFF or 0xFFFF
        udp = udp[:6] + struct.pack("!H", c) + udp[8:]
        ihl = 5 + ip_opts // 4
        ip = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + ulen,
                         ident & 0xFFFF, 0x4000, 64, 17, 0, s4, d4)
        ip += b"\x01" * (ip_opts // 4 * 4)
        ip = ip[:10] + struct.pack("!H", (~csum16(ip)) & 0xFFFF) + ip[12:]
        et = ETH_P_IP
    return mac_bytes(dst_mac) + mac_bytes(src_mac) + struct.pack("!H", et) + ip + udp


class RawFlow:
    """A flow sent as whole frames on an AF_PACKET socket (wire-like:
    full checksums, no CHECKSUM_PARTIAL), with the connected socket's
    send() interface."""

    def __init__(self, dev, src_mac, dst_mac, src, dst, sport, dport,
                 ip_opts=0):
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.s.bind((dev, 0))
        self.args = (src_mac, dst_mac, src, dst, sport, dport)
        self.ident = 0
        self.ip_opts = ip_opts

    def send(self, data):
        self.ident += 1
        return self.s.send(wire_frame(*self.args, data, self.ident,
                                      self.ip_opts))


def addr_port(s):
    """"ADDR,PORT" -> (family, (addr, port))."""
    a, p = s.rsplit(",", 1)
    fam = socket.AF_INET6 if ":" in a else socket.AF_INET
    return fam, (a, int(p))


def udp_main(args):
    """`udp`: senders and receivers in one process (one namespace).

    Binds every --bind ADDR,PORT, prints "ready", waits for SIGUSR1 (or
    starts at once with --go), sends --count datagrams of --size bytes on
    every --flow ID,SRC,DST,DPORT at --rate datagrams/s in all (round
    robin), until the count or SIGUSR2; then END_REPEAT end markers per
    flow. Receives all along. Exits when the end markers of every --expect
    flow arrived and the sockets are drained, or on SIGTERM (after
    draining), printing one JSON line:
      {"sent": {flow: n}, "recv": {flow: {good, truncated, corrupt, dup,
       announced}}, "truncated_unknown": n, "truncated_at": [CLOCK_MONOTONIC
       s of each truncated datagram], "socket_drops": n, "lens": {length: n}}
    With --raw DEV,SRCMAC,DSTMAC the flows are sent as whole frames on an
    AF_PACKET socket (full checksums, as from a wire; --ip-opts adds IPv4
    options) instead of through UDP sockets.
    """
    go, halt, term = [], [], []
    signal.signal(signal.SIGUSR1, lambda *_: go.append(1))
    signal.signal(signal.SIGUSR2, lambda *_: halt.append(1))
    signal.signal(signal.SIGTERM, lambda *_: term.append(1))
    rx = []
    for b in args.bind:
        fam, sa = addr_port(b)
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
        except OSError:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        s.setsockopt(socket.SOL_SOCKET, 40, 1)            # SO_RXQ_OVFL
        s.bind(sa)
        s.setblocking(False)
        rx.append(s)
    flows = []
    for f in args.flow:
        fid, src, dst, dport = f.split(",")
        if args.raw:
            dev, smac, dmac = args.raw.split(",")
            flows.append((int(fid), RawFlow(dev, smac, dmac, src, dst,
                                            40000 + int(fid), int(dport),
                                            args.ip_opts)))
            continue
        fam = socket.AF_INET6 if ":" in dst else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.bind((src, 0))
        s.connect((dst, int(dport)))
        flows.append((int(fid), s))
    expect = {int(x) for x in args.expect}
    recv = {}
    drops = {}
    unknown = [0]
    lens = {}
    trunc_at = []       # CLOCK_MONOTONIC of each truncated datagram

    def rec(flow):
        return recv.setdefault(flow, {"good": 0, "truncated": 0,
                                      "corrupt": 0, "dup": 0,
                                      "announced": None, "seen": set()})

    def drain(s):
        n = 0
        while True:
            try:
                d, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(4))
            except (BlockingIOError, InterruptedError):
                return n
            n += 1
            for lvl, typ, data in anc:
                if lvl == socket.SOL_SOCKET and typ == 40 and len(data) >= 4:
                    drops[s.fileno()] = struct.unpack("I", data[:4])[0]
            kind, flow, seq = classify(d)
            if kind == "end":
                rec(flow)["announced"] = seq
                continue
            key = str(len(d))
            lens[key] = lens.get(key, 0) + 1
            if kind == "truncated" and len(trunc_at) < 100000:
                trunc_at.append(round(time.monotonic(), 6))
            if flow is None:
                unknown[0] += 1
                continue
            r = rec(flow)
            if kind == "good":
                if seq in r["seen"]:
                    r["dup"] += 1
                else:
                    r["seen"].add(seq)
                    r["good"] += 1
            else:
                r[kind] += 1

    def done():
        return all(rec(f)["announced"] is not None for f in expect)

    print("ready", flush=True)
    sent = {fid: 0 for fid, _ in flows}
    started = bool(args.go)
    t0 = None
    idx = 0
    total = args.count * len(flows)
    ended = not flows
    while not term:
        if started and not ended:
            if t0 is None:
                t0 = time.monotonic()
            # Round robin at --rate in all: send what is due, then poll.
            due = min(total, int((time.monotonic() - t0) * args.rate) + 1)
            while idx < due and not halt:
                fid, s = flows[idx % len(flows)]
                try:
                    s.send(payload(fid, sent[fid], args.size))
                    sent[fid] += 1
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    # ICMP errors reported on the connected socket
                    # (ECONNREFUSED, ...): count as not sent, go on.
                    pass
                idx += 1
            if idx >= total or halt:
                for _ in range(END_REPEAT):
                    for fid, s in flows:
                        try:
                            s.send(END.pack(MAGIC_END, fid, sent[fid]))
                        except OSError:
                            pass
                ended = True
                print(json.dumps({"sent": sent}), flush=True)
        elif go and not started:
            started = True
            continue
        r, _, _ = select.select(rx, [], [], 0.001 if started and not ended else 0.05)
        for s in r:
            drain(s)
        if ended and (not expect or done()):
            break
    for s in rx:
        drain(s)
    out = {"sent": sent, "truncated_unknown": unknown[0],
           "truncated_at": trunc_at,
           "socket_drops": sum(drops.values()), "lens": lens,
           "recv": {str(f): {k: v for k, v in r.items() if k != "seen"}
                    for f, r in recv.items()}}
    print(json.dumps(out), flush=True)
    return 0


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
        import nfrig  # the suite's helpers; not needed by the scripts
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
        errors = []
        nsdir = self.nfrig.BPFFS / "nfslice" / f"ns{self.cookies[role]}"
        if not nsdir.is_dir():
            return errors
        for d in sorted(nsdir.iterdir()):
            cp = self.nfslice(role, "detach", "--name", d.name, check=False)
            if cp.returncode != 0:
                errors.append(self.nfrig.describe(cp))
            if d.exists():
                shutil.rmtree(d, ignore_errors=True)
        try:
            nsdir.rmdir()
        except OSError:
            pass
        return errors

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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tapnf", help="remote NF on an IFF_NAPI_FRAGS TAP")
    t.add_argument("--name", required=True)
    t.add_argument("--dut-mac", required=True,
                   help="destination MAC of reflected frames (the TAP's)")
    t.add_argument("--nf-mac", required=True, help="their source MAC")
    t.add_argument("--port", type=int, required=True,
                   help="reflect UDP to this destination port only")
    t.add_argument("--split", default="14",
                   help="iovec boundaries (byte offsets), e.g. 14 or 14,40")
    t.add_argument("--no-frags", action="store_true",
                   help="plain TAP (linear skbs), for comparison")
    u = sub.add_parser("udp", help="checked UDP senders and receivers")
    u.add_argument("--bind", action="append", default=[])
    u.add_argument("--flow", action="append", default=[])
    u.add_argument("--expect", action="append", default=[])
    u.add_argument("--size", type=int, default=1400)
    u.add_argument("--count", type=int, default=100)
    u.add_argument("--rate", type=float, default=1000.0)
    u.add_argument("--go", action="store_true", help="do not wait for SIGUSR1")
    u.add_argument("--raw", metavar="DEV,SRCMAC,DSTMAC",
                   help="send whole frames with full checksums on DEV "
                        "(AF_PACKET) instead of through UDP sockets")
    u.add_argument("--ip-opts", type=int, default=0,
                   help="with --raw: bytes of IPv4 options (NOPs)")
    a = ap.parse_args(argv)
    return tapnf_main(a) if a.cmd == "tapnf" else udp_main(a)


if __name__ == "__main__":
    sys.exit(main())
