#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A stand-in nfslice: `events` prints two records of `nfslice events
--json` (ts_ns now, CLOCK_MONOTONIC) and waits to be stopped, as the
real command follows its ring buffer; anything else is the real CLI.

Run by test_bcc.py."""
import json, os, sys, time
real = sys.argv[1]
if len(sys.argv) > 2 and sys.argv[2] == "events":
    now = time.monotonic_ns()
    for i, reason in enumerate(("stale", "too_big")):
        print(json.dumps({"ts_ns": now + i, "ifindex": 3, "ifname": "dut1",
                          "reason": reason, "proto": "udp",
                          "src": "10.0.0.1", "sport": 1000 + i,
                          "dst": "10.0.0.2", "dport": 2000, "len": 58,
                          "slot": 7 + i, "gen": 3}), flush=True)
    time.sleep(600)
os.execv(real, [real] + sys.argv[2:])
