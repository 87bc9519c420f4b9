#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""In the DUT: waits for one sliced IPv4 datagram entering dut0 (DSCP 63)
and sends its IP packet again from the DUT's own stack once the original
has been spliced: routed out of dut1, the splicer finds the payload gone
(stale) and drops it.

Run by test_bcc.py."""
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind(("dut0", 0x0800))
s.settimeout(20)
print("ready", flush=True)
while True:
    f = s.recv(65535)
    if f[15] >> 2 == 63:
        break
time.sleep(0.3)
r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
r.sendto(f[14:], (socket.inet_ntoa(f[30:34]), 0))
print("replayed", flush=True)
