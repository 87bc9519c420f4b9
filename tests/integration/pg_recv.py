# SPDX-License-Identifier: GPL-2.0
"""Frame catcher for test_pktgen.py's jumbo tests (frames no XDP sink on a
veth at MTU 9000 can take): run inside the namespace,

  ip netns exec NS python3 pg_recv.py DEV N OUT

it binds an AF_PACKET socket to DEV (256 MB receive buffer), prints
"ready", takes every IPv4/IPv6 frame arriving on DEV until N arrived and
then 0.3 s passed without another (so a frame too many is seen), at most
20 s, writes them to OUT (4-byte big-endian length + frame, in arrival
order) and prints {"frames": n, "drops": socket drops} as JSON.
"""
import json
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET, PACKET_STATISTICS = 263, 6
SO_RCVBUFFORCE = 33


def main():
    dev, want, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                      socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 256 << 20)
    s.bind((dev, ETH_P_ALL))
    print("ready", flush=True)
    frames, end = [], time.monotonic() + 20
    while time.monotonic() < end:
        s.settimeout(0.3 if len(frames) >= want else
                     max(0.01, end - time.monotonic()))
        try:
            data, addr = s.recvfrom(65536)
        except socket.timeout:
            if len(frames) >= want:
                break
            continue
        if addr[2] != PACKET_OUTGOING and data[12:14] in (b"\x08\x00",
                                                           b"\x86\xdd"):
            frames.append(data)
    _, drops = struct.unpack("II", s.getsockopt(SOL_PACKET,
                                                 PACKET_STATISTICS, 8))
    with open(out, "wb") as f:
        for fr in frames:
            f.write(struct.pack("!I", len(fr)) + fr)
    print(json.dumps({"frames": len(frames), "drops": drops}), flush=True)


if __name__ == "__main__":
    main()
