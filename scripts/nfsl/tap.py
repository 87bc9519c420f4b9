# SPDX-License-Identifier: GPL-2.0
"""Namespaces, a TAP "remote NF", checked UDP endpoints and a paced
download for the tests that build their own topologies (test_nonlinear.py,
test_attach_order.py, test_uppers.py) and run traffic under an operation.

Four parts:

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

- `nftap.py blob`: serves one file once over HTTP/1.0 at a set rate until
  SIGUSR1, then the rest at once: a download that runs while a test
  changes the datapath under it and ends when the test is done.

Stdlib only; run with /usr/bin/python3 as the rest of the suite.
"""
import argparse
import fcntl
import hashlib
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path

# Importable (nfsl.tap) from the tests and benchmarks and runnable as a
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


# ----------------------------------------------------------------- blob --
def blob_main(args):
    """`blob`: serve one file once over HTTP/1.0 (a TCP download for curl).

    Listens on --bind ADDR,PORT, prints "ready", answers one GET with the
    whole of --file (Content-Length set), written at --rate bytes/s until
    SIGUSR1, then the rest at once, and exits. The pacing keeps a download
    running while a test changes the datapath under it; the signal ends
    it as soon as the test is done instead of at a fixed size / rate.
    """
    fast = []
    signal.signal(signal.SIGUSR1, lambda *_: fast.append(1))
    data = Path(args.file).read_bytes()
    fam, sa = addr_port(args.bind)
    with socket.socket(fam, socket.SOCK_STREAM) as ls:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(sa)
        ls.listen(1)
        print("ready", flush=True)
        conn, _ = ls.accept()
    with conn:
        req = b""
        while b"\r\n\r\n" not in req:
            chunk = conn.recv(4096)
            if not chunk:
                return 1
            req += chunk
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/"
                     b"octet-stream\r\nContent-Length: %d\r\n\r\n"
                     % len(data))
        view, off, t0 = memoryview(data), 0, time.monotonic()
        while off < len(data) and not fast:
            # Write what is due at --rate, in pieces of at most 64 KiB.
            due = int((time.monotonic() - t0) * args.rate)
            if due <= off:
                time.sleep(min(0.02, (off - due + 1) / args.rate))
                continue
            end = min(len(data), due, off + 65536)
            conn.sendall(view[off:end])
            off = end
        conn.sendall(view[off:])
        conn.shutdown(socket.SHUT_WR)
    return 0


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
    b = sub.add_parser("blob", help="a paced one-file HTTP server")
    b.add_argument("--bind", required=True, metavar="ADDR,PORT")
    b.add_argument("--file", required=True)
    b.add_argument("--rate", type=float, default=2e6,
                   help="bytes/s until SIGUSR1 (default 2e6)")
    a = ap.parse_args(argv)
    return {"tapnf": tapnf_main, "udp": udp_main,
            "blob": blob_main}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
else:
    # The lab around it (nfsl.lab), as its users import it: nftap.Lab, ...
    from nfsl.lab import (  # noqa: E402,F401
        NIC_ADDRS, NIC_IFACES, Lab, nic_lab, nic_lab_drops,
        nic_lab_drops_by_iface, summarize)
