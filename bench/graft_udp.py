#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""bench/exp_graft.py's traffic, run in the rig's namespaces.

  graft_udp.py recv          on UDP 5201: prints "ready", then, once no
                             datagram came for 2 s, how many distinct
                             sequence numbers arrived
  graft_udp.py send DST N RATE
                             N datagrams of 1200 B (4 B big-endian sequence
                             number, then "x") to DST:5201 at RATE pps
Usage errors exit 2.
"""
import select
import socket
import sys
import time

PORT = 5201


def recv():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", PORT))
    print("ready", flush=True)
    seen = set()
    while select.select([s], [], [], 2.0)[0]:
        seen.add(int.from_bytes(s.recv(2048)[:4], "big"))
    print(len(seen), flush=True)


def send(dst, n, rate):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t0 = time.monotonic()
    for i in range(n):
        s.sendto(i.to_bytes(4, "big") + b"x" * 1196, (dst, PORT))
        if i % 30 == 0:
            d = t0 + i / rate - time.monotonic()
            if d > 0:
                time.sleep(d)


if __name__ == "__main__":
    if sys.argv[1:] == ["recv"]:
        recv()
    elif len(sys.argv) == 5 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        print("usage: graft_udp.py recv | send DST N RATE", file=sys.stderr)
        sys.exit(2)
