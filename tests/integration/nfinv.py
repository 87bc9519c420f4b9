# SPDX-License-Identifier: GPL-2.0
"""nfinv: small topologies and verified UDP flows for the invariant tests.

The invariant (issue 7 section 1): what a receiver gets is byte-identical to
what was sent, or it was not delivered and a counter says why; a sliced
header (Ethernet + IP + L4 + keep + 16 B token) never reaches a receiver.
The test_invariant*.py modules check it on topologies rig.sh does not make
(one-interface domains, a third veth, vxlan, macvlan, an NF port, NFs that
re-mark DSCP or clear UDP checksums, lowered MTUs, UDP GRO forwarding), so
this module builds its own namespaces, on kernel defaults: offloads,
GRO/GSO/TSO and nf_conntrack_tcp_be_liberal as a fresh namespace has them.

The topologies (Net, router, the `nets` fixture) are nfinv_net.py's;
imported as a module, this one re-exports them for the test modules.

Run as a script inside a namespace, this file is the traffic:

    nfinv.py send HOST PORT --count N --size B --seed S [--first K]
             [--tos T] [--pmtu do|dont|want] [--gso K] [--probe-mtu]
    nfinv.py recv PORT --count N --size B --seed S [--idle S] [--sniff IFACE]
    nfinv.py httpsink PORT     (HTTP PUT sink answering "<bytes> <sha256>")

Datagram number i holds a 4-byte magic, i (4 bytes, big endian) and B-8
bytes of a block of random bytes (from S) starting at (7 i) mod 2048: the
receiver knows exactly what each one must hold. recv binds the port on IPv4
and IPv6, counts intact datagrams (and their TOS / traffic class),
duplicates, truncated ones (shorter than B) and corrupt ones, and prints
one JSON line when COUNT intact ones arrived, when nothing arrived for
--idle seconds, or on SIGTERM. With --sniff it also records the UDP
checksum of every datagram to PORT that IFACE receives (AF_PACKET).
"""
import errno
import json
import random
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path

from nfsl.pkt import ones_sum

HERE = Path(__file__).resolve()
MAGIC = b"nfiv"
BLOCK_SPAN = 2048


# ------------------------------------------------------------- payloads --
def block(seed, size):
    """The random bytes datagrams are cut from (deterministic per seed)."""
    return random.Random(seed).randbytes(BLOCK_SPAN + size)


def payload(blk, seq, size):
    """Datagram SEQ of SIZE bytes."""
    off = (7 * seq) % BLOCK_SPAN
    return MAGIC + seq.to_bytes(4, "big") + blk[off:off + size - 8]


# --------------------------------------------------------------- script --
def _opts(argv, spec):
    """Parse --key value options of SPEC {key: type} and positionals."""
    opts, pos, i = {}, [], 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            k = a[2:].replace("-", "_")
            if k not in spec:
                sys.exit(f"nfinv.py: unknown option {a}")
            if spec[k] is bool:
                opts[k] = True
                i += 1
                continue
            opts[k] = spec[k](argv[i + 1])
            i += 2
        else:
            pos.append(a)
            i += 1
    return pos, opts


PMTU = {"dont": 0, "want": 1, "do": 2}
IP_MTU, IPV6_MTU = 14, 24
UDP_SEGMENT = 103


def _send(argv):
    (host, port), o = _opts(argv, {"count": int, "size": int, "seed": int,
                                   "first": int, "tos": int, "pmtu": str,
                                   "gso": int, "probe_mtu": bool,
                                   "sport": int, "gap_us": int})
    count, size, first = o["count"], o["size"], o.get("first", 0)
    fam, typ, proto, _, addr = socket.getaddrinfo(host, int(port), 0,
                                                  socket.SOCK_DGRAM)[0]
    v6 = fam == socket.AF_INET6
    s = socket.socket(fam, typ, proto)
    if "tos" in o:
        if v6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, o["tos"])
        else:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, o["tos"])
    if "pmtu" in o:
        if v6:
            # IPV6_MTU_DISCOVER
            s.setsockopt(socket.IPPROTO_IPV6, 23, PMTU[o["pmtu"]])
        else:
            # IP_MTU_DISCOVER
            s.setsockopt(socket.IPPROTO_IP, 10, PMTU[o["pmtu"]])
    if "sport" in o:    # one flow across sends: the same 5-tuple
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("::" if v6 else "0.0.0.0", o["sport"]))
    s.connect(addr)
    blk = block(o["seed"], size)
    res = {"sent": 0, "errors": {}}

    def mtu():
        return s.getsockopt(socket.IPPROTO_IPV6 if v6 else socket.IPPROTO_IP,
                            IPV6_MTU if v6 else IP_MTU)

    def one(data):
        while True:
            try:
                s.send(data)
                return True
            except OSError as e:
                if e.errno in (errno.ENOBUFS, errno.EAGAIN):
                    time.sleep(0.0005)
                    continue
                name = errno.errorcode.get(e.errno, str(e.errno))
                res["errors"][name] = res["errors"].get(name, 0) + 1
                return False

    seqs = list(range(first, first + count))
    if o.get("probe_mtu"):
        # One datagram, then wait (bounded) for the path MTU to change:
        # an ICMP "fragmentation needed" / "packet too big" arrived.
        res["mtu_before"] = mtu()
        res["sent"] += one(payload(blk, seqs.pop(0), size))
        deadline = time.monotonic() + 3
        while mtu() == res["mtu_before"] and time.monotonic() < deadline:
            time.sleep(0.01)
        res["mtu_after"] = mtu()
    if o.get("gso"):
        s.setsockopt(socket.IPPROTO_UDP, UDP_SEGMENT, size)
        for i in range(0, len(seqs), o["gso"]):
            batch = seqs[i:i + o["gso"]]
            if one(b"".join(payload(blk, q, size) for q in batch)):
                res["sent"] += len(batch)
    else:
        gap = o.get("gap_us", 0) / 1e6     # paced: traffic under a change
        for q in seqs:
            res["sent"] += one(payload(blk, q, size))
            if gap:
                time.sleep(gap)
    print(json.dumps(res), flush=True)
    return 0


def _recv(argv):
    (port,), o = _opts(argv, {"count": int, "size": int, "seed": int,
                              "idle": float, "sniff": str})
    port, count, size = int(port), o["count"], o["size"]
    idle = o.get("idle", 1.0)
    socks = []
    for fam, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVTCLASS, 1)
        else:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)   # SO_RCVBUFFORCE
        s.bind((addr, port))
        s.setblocking(False)
        socks.append(s)
    sniff = None
    if o.get("sniff"):
        sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                              socket.htons(0x0003))   # ETH_P_ALL
        sniff.bind((o["sniff"], 0))
        sniff.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)
        sniff.setblocking(False)
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    blk = block(o["seed"], size)
    seen = set()
    r = {"intact": 0, "duplicate": 0, "truncated": 0, "trunc_lens": [],
         "corrupt": 0, "tos": {}}
    print("ready", flush=True)
    last = time.monotonic()
    while len(seen) < count and not stop:
        if time.monotonic() - last > idle:
            break
        try:
            ready, _, _ = select.select(socks + ([sniff] if sniff else []),
                                        [], [], 0.05)
        except InterruptedError:
            continue
        for s in ready:
            if s is sniff:
                _sniffed(s, port, r)
                continue
            while True:
                try:
                    d, anc, _, _ = s.recvmsg(65536, 64)
                except BlockingIOError:
                    break
                last = time.monotonic()
                tos = anc[0][2][0] if anc else -1
                seq = (int.from_bytes(d[4:8], "big")
                       if len(d) >= 8 and d[:4] == MAGIC else -1)
                if len(d) < size:
                    r["truncated"] += 1
                    if len(r["trunc_lens"]) < 20:
                        r["trunc_lens"].append(len(d))
                elif seq < 0 or d != payload(blk, seq, size):
                    r["corrupt"] += 1
                elif seq in seen:
                    r["duplicate"] += 1
                else:
                    seen.add(seq)
                    r["intact"] += 1
                    r["tos"][tos] = r["tos"].get(tos, 0) + 1
    if sniff:
        _sniffed(sniff, port, r)
    print(json.dumps(r), flush=True)
    return 0


def _sniffed(s, port, r):
    """Check the UDP checksum of queued IPv4/IPv6 frames to PORT: "wire"
    counts them, those with checksum 0 ("zero") and those whose non-zero
    checksum does not verify ("bad"; for IPv6 0 is bad too)."""
    w = r.setdefault("wire", {"frames": 0, "zero": 0, "bad": 0})
    while True:
        try:
            f, (_, _, pkttype, _, _) = s.recvfrom(65536)
        except BlockingIOError:
            return
        if pkttype == socket.PACKET_OUTGOING or len(f) < 62:
            continue
        if f[12:14] == b"\x08\x00" and f[23] == 17 and \
                not struct.unpack("!H", f[20:22])[0] & 0x3FFF:
            l4 = 14 + (f[14] & 0xF) * 4
            end = 14 + struct.unpack("!H", f[16:18])[0]
            pseudo = f[26:34] + struct.pack("!HH", 17, end - l4)
        elif f[12:14] == b"\x86\xdd" and f[20] == 17:
            l4, end = 54, 54 + struct.unpack("!H", f[18:20])[0]
            pseudo = f[22:54] + struct.pack("!IxxxB", end - l4, 17)
        else:
            continue
        dport, _, csum = struct.unpack("!HHH", f[l4 + 2:l4 + 8])
        if dport != port:
            continue
        w["frames"] += 1
        if csum == 0:
            w["zero"] += 1
            w["bad"] += l4 == 54
        elif ones_sum(pseudo + f[l4:end]) != 0xFFFF:
            w["bad"] += 1


def _httpsink(argv):
    """HTTP server on [::]:PORT (dual stack) that takes PUT bodies and
    answers "<bytes> <sha256>" of what it received."""
    import hashlib
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Sink(BaseHTTPRequestHandler):
        def do_PUT(self):
            want = left = int(self.headers.get("Content-Length", 0))
            h = hashlib.sha256()
            while left:
                b = self.rfile.read(min(left, 1 << 16))
                if not b:
                    break
                h.update(b)
                left -= len(b)
            body = f"{want - left} {h.hexdigest()}\n".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6

    Server(("::", int(argv[0])), Sink).serve_forever()


def main(argv):
    if argv and argv[0] == "send":
        return _send(argv[1:])
    if argv and argv[0] == "recv":
        return _recv(argv[1:])
    if argv and argv[0] == "httpsink":
        return _httpsink(argv[1:])
    sys.exit("usage: nfinv.py send|recv|httpsink ...")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
else:
    # The topologies, as the test modules import them from here.
    from nfinv_net import (  # noqa: E402,F401
        CLI4, CLI6, DUT4_IN, DUT4_OUT, DUT6_IN, DUT6_OUT, NEW_COUNTERS, SRV4,
        SRV6, Net, assert_intact, counters, nets, router)
