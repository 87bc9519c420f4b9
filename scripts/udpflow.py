#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""udpflow.py — a paced UDP flow whose every byte the receiver verifies.

    scripts/udpflow.py send HOST PORT [--count N] [--size B] [--rate BPS] [--seed S]
    scripts/udpflow.py recv PORT [--count N] [--size B] [--seed S] [--timeout S] [--bind ADDR]

send: N datagrams of B payload bytes to HOST:PORT (IPv4 or IPv6), paced to
BPS bits/s of UDP payload (0: as fast as possible). Prints one JSON line:
{"sent", "bytes", "seconds", "bps"}.

recv: receives until N datagrams arrived or nothing arrived for --timeout
seconds (default 2), then prints one JSON line: {"received", "bytes",
"corrupt", "duplicate", "missing", "seconds", "bps", "first_seq",
"last_seq", "sha256"}. It prints "ready" on stderr once the socket is bound.
"seconds" runs from the first to the last datagram, "bps" is the goodput
(payload bits) over that time, excluding the first datagram.

Datagram i carries i (8 bytes, big endian) followed by B-8 bytes of a
random block (from --seed) starting at offset i % 2048: every datagram is
different, and the receiver knows exactly what each one must hold. A
datagram that differs anywhere is "corrupt"; one seen twice (e.g. the header
of one packet with the payload of another) is "duplicate". sha256 is over
the received datagrams in sequence order, so two runs that delivered the
same datagrams give the same digest.
"""
import errno
import hashlib
import json
import random
import socket
import sys
import time

BLOCK_SPAN = 2048
DEFAULTS = {"count": 1000, "size": 1400, "rate": 0, "seed": 1,
            "timeout": 2.0, "bind": "::"}


def usage(msg=None):
    if msg:
        print(f"udpflow.py: {msg}", file=sys.stderr)
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    sys.exit(2)


def block(seed, size):
    """The random bytes datagrams are cut from (deterministic per seed)."""
    return random.Random(seed).randbytes(BLOCK_SPAN + size)


def payload(blk, seq, size):
    off = seq % BLOCK_SPAN
    return seq.to_bytes(8, "big") + blk[off:off + size - 8]


def parse(args, positional, allowed):
    opts = dict(DEFAULTS)
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            k = a[2:]
            if k not in allowed:
                usage(f"unknown option '{a}'")
            if i + 1 >= len(args):
                usage(f"{a} needs a value")
            v = args[i + 1]
            try:
                if k == "bind":
                    opts[k] = v
                elif k == "timeout":
                    opts[k] = float(v)
                    if not 0 < opts[k] <= 600:
                        raise ValueError
                else:
                    opts[k] = int(v)
                    if opts[k] < 0:
                        raise ValueError
            except ValueError:
                usage(f"{a} '{v}' is not a valid value")
            i += 2
            continue
        pos.append(a)
        i += 1
    if len(pos) != positional:
        usage(f"expected {positional} positional argument(s), got {len(pos)}")
    if not 16 <= opts["size"] <= 65000:
        usage(f"--size {opts['size']} is outside 16-65000")
    if opts["count"] < 1:
        usage("--count must be at least 1")
    return pos, opts


def resolve(host, port):
    try:
        return socket.getaddrinfo(host, port, 0, socket.SOCK_DGRAM)[0]
    except (socket.gaierror, ValueError) as e:
        usage(f"cannot resolve {host} port {port}: {e}")


def send(args):
    (host, port), o = parse(args, 2, ("count", "size", "rate", "seed"))
    fam, typ, proto, _, addr = resolve(host, port)
    s = socket.socket(fam, typ, proto)
    s.connect(addr)
    blk = block(o["seed"], o["size"])
    gap = o["size"] * 8 / o["rate"] if o["rate"] else 0.0
    start = time.monotonic()
    sent = 0
    for i in range(o["count"]):
        if gap:
            # Pace on the absolute schedule: no drift, bursts only to
            # catch up after a stall.
            delay = start + i * gap - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        while True:
            try:
                s.send(payload(blk, i, o["size"]))
                break
            except OSError as e:
                # A full device queue gives ENOBUFS: wait and retry.
                if e.errno not in (errno.ENOBUFS, errno.EAGAIN):
                    raise
                time.sleep(0.0005)
        sent += 1
    secs = time.monotonic() - start
    print(json.dumps({"sent": sent, "bytes": sent * o["size"], "seconds": secs,
                      "bps": sent * o["size"] * 8 / secs if secs else 0}))
    return 0


def recv(args):
    (port,), o = parse(args, 1, ("count", "size", "seed", "timeout", "bind"))
    fam = socket.AF_INET6 if ":" in o["bind"] else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    # A deep receive buffer (root may exceed rmem_max): the receiver must
    # not be where datagrams are lost.
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 32 << 20)   # SO_RCVBUFFORCE
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    try:
        s.bind((o["bind"], int(port)))
    except (OSError, ValueError) as e:
        usage(f"cannot bind {o['bind']} port {port}: {e}")
    print("ready", file=sys.stderr, flush=True)
    blk = block(o["seed"], o["size"])
    s.settimeout(o["timeout"])
    seen = {}
    corrupt = dup = nbytes = 0
    first = last = None
    while len(seen) < o["count"]:
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        now = time.monotonic()
        if first is None:
            first = now
            first_len = len(d)
        last = now
        nbytes += len(d)
        seq = int.from_bytes(d[:8], "big") if len(d) >= 8 else -1
        if seq < 0 or seq >= o["count"] or d != payload(blk, seq, o["size"]):
            corrupt += 1
            continue
        if seq in seen:
            dup += 1
            continue
        seen[seq] = d
    h = hashlib.sha256()
    for seq in sorted(seen):
        h.update(seen[seq])
    secs = (last - first) if first is not None else 0.0
    good = (nbytes - first_len) if first is not None else 0
    print(json.dumps({
        "received": len(seen), "bytes": nbytes, "corrupt": corrupt,
        "duplicate": dup, "missing": o["count"] - len(seen), "seconds": secs,
        "bps": good * 8 / secs if secs > 0 else 0,
        "first_seq": min(seen) if seen else None,
        "last_seq": max(seen) if seen else None,
        "sha256": h.hexdigest()}))
    return 0


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        usage(None if argv else "missing command")
    if argv[0] == "send":
        return send(argv[1:])
    if argv[0] == "recv":
        return recv(argv[1:])
    usage(f"unknown command '{argv[0]}'")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
