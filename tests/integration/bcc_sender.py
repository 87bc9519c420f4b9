#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Sends datagrams from the client once a line arrives on stdin (so the
test can start it before the tool is ready and trigger it at once):
argv: then triples DST PORT COUNT:SIZE. Prints {"sent": N}.

Run by test_bcc.py."""
import json, socket, sys
sys.stdin.readline()
n = 0
args = sys.argv[1:]
for i in range(0, len(args), 3):
    dst, port, spec = args[i], int(args[i + 1]), args[i + 2]
    count, size = map(int, spec.split(":"))
    s = socket.socket(socket.AF_INET6 if ":" in dst else socket.AF_INET,
                      socket.SOCK_DGRAM)
    for k in range(count):
        s.sendto(bytes([k & 0xff]) * size, (dst, port))
        n += 1
    s.close()
print(json.dumps({"sent": n}), flush=True)
