#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Frames lost while hooks come and go on a forwarding DUT (docs/platform.md).

Sends COUNT numbered UDP datagrams of 1200 B at RATE pps client -> server
through the rig (scripts/rig.sh, its own prefix, removed afterwards) and,
meanwhile, CYCLES times one of:
  xdp      an XDP_PASS program attached to dut0 and taken off again
  clsact   a clsact qdisc added to dut1 and deleted again
  nfslice  a domain attached to dut0 and dut1 and detached (the splicer on
           TCX; NFSLICE_EGRESS=clsact in the environment for the fallback)
  none     nothing (the control)
and prints the datagrams the server did not receive. Needs root.

  bench/exp_graft.py [--mode MODE] [--cycles N] [--count N] [--rate PPS]
"""
import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RIG = ROOT / "scripts" / "rig.sh"
NFSLICE = ROOT / "build" / "nfslice"
PASS_O = ROOT / "build" / ".output" / "bench_xdp.bpf.o"

# The traffic, run in the namespaces: bench/graft_udp.py.
UDP = Path(__file__).resolve().parent / "graft_udp.py"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("none", "xdp", "clsact", "nfslice"),
                    default="nfslice")
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--count", type=int, default=60000, help="datagrams")
    ap.add_argument("--rate", type=int, default=30000, help="pps")
    o = ap.parse_args()
    prefix = f"nfgr{os.getpid() % 100000}"
    env = {}
    subprocess.run([RIG, "up", prefix], check=True, stdout=subprocess.DEVNULL)
    try:
        for line in subprocess.run([RIG, "env", prefix], check=True, text=True,
                                   capture_output=True).stdout.splitlines():
            k, _, v = line.partition("=")
            env[k] = v.strip('"')

        def ns(role, *cmd, **kw):
            return subprocess.run(["ip", "netns", "exec", env[f"{role}_NS"], *cmd],
                                  check=True, stdout=subprocess.DEVNULL, **kw)

        rx = subprocess.Popen(["ip", "netns", "exec", env["SRV_NS"], sys.executable,
                               UDP, "recv"], stdout=subprocess.PIPE, text=True)
        assert rx.stdout.readline().strip() == "ready"
        tx = subprocess.Popen(["ip", "netns", "exec", env["CLI_NS"], sys.executable,
                               UDP, "send", env["SRV_IP4"], str(o.count),
                               str(o.rate)])
        time.sleep(0.3)
        for _ in range(o.cycles):
            if o.mode == "xdp":
                ns("DUT", "ip", "link", "set", "dut0", "xdp", "obj", PASS_O, "sec",
                   "xdp")
                time.sleep(0.1)
                ns("DUT", "ip", "link", "set", "dut0", "xdp", "off")
            elif o.mode == "clsact":
                ns("DUT", "tc", "qdisc", "add", "dev", "dut1", "clsact")
                time.sleep(0.1)
                ns("DUT", "tc", "qdisc", "del", "dev", "dut1", "clsact")
            elif o.mode == "nfslice":
                ns("DUT", NFSLICE, "attach", "--name", "graft", "--ttl", "0", "dut0",
                   "dut1", stderr=subprocess.DEVNULL)
                time.sleep(0.1)
                ns("DUT", NFSLICE, "detach", "--name", "graft")
            time.sleep(0.1)
        tx.wait()
        got = int(rx.stdout.readline())
        rx.wait()
        print(f"{o.mode}: {o.cycles} cycles at {o.rate} pps, sent {o.count}, "
              f"received {got}, lost {o.count - got}")
    finally:
        subprocess.run([RIG, "down", prefix])


if __name__ == "__main__":
    main()
