#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""scripts/demo.sh's readers of JSON and CSV, one command each.

  demo_report.py nft-counter          nft -j list counter on stdin:
                                      "PACKETS BYTES" of its counter
  demo_report.py stats                nfslice stats --json on stdin: its
                                      numbers as KEY=VALUE lines
  demo_report.py iperf FILE RC KIND   iperf3's JSON in FILE, its exit
                                      status RC, KIND tcp|udp: one line
                                      "STATUS BYTES BPS EXTRA", STATUS ok or
                                      the failure; EXTRA: retransmits (tcp,
                                      sender side) or lost percent (udp,
                                      receiver side)
  demo_report.py park CSV             the park table of exp_linkrate.py's
                                      linkrate.csv
Usage errors exit 2.
"""
import csv
import json
import sys


def nft_counter():
    for o in json.load(sys.stdin)["nftables"]:
        if "counter" in o:
            print(o["counter"]["packets"], o["counter"]["bytes"])
            break


def stats():
    for k, v in json.load(sys.stdin).items():
        if isinstance(v, (int, float)):
            print("%s=%s" % (k, v))


def iperf(path, rc, kind):
    try:
        d = json.load(open(path))
    except Exception:
        print("no-json 0 0 -")
        return
    if d.get("error"):
        print("error:" + d["error"].replace(" ", "_"), "0 0 -")
        return
    end = d.get("end", {})
    rx = end.get("sum_received", {})
    if kind == "tcp":
        extra = end.get("sum_sent", {}).get("retransmits", "-")
    else:
        extra = "%.3f" % rx.get("lost_percent", 100.0)
    status = "ok" if int(rc) == 0 and rx.get("bytes", 0) > 0 else "rc=%d" % int(rc)
    print(status, rx.get("bytes", 0), int(rx.get("bits_per_second", 0)), extra)


def park(path):
    for r in csv.DictReader(open(path)):
        u, s = float(r["unsliced_gbps"]), float(r["sliced_gbps"])
        print("park topology, NF server behind a %s link (1514 B frames, loss-free):"
              % r["link_rate"])
        print("  %-40s %15s %15s" % ("", "unsliced", "sliced"))
        print("  %-40s %15.1f %15.1f" % ("goodput (Mbit/s)", u * 1e3, s * 1e3))
        print("  %-40s %15s %15s" % ("sliced / unsliced", "1",
                                      "%.1fx" % (s / u) if u else "-"))
        print("  %-40s %15s %15s" % ("link-bound prediction", "1",
                                      "%.1fx" % float(r["linkbound_ratio"])))
        print()


COMMANDS = {"nft-counter": (nft_counter, 0), "stats": (stats, 0),
            "iperf": (iperf, 3), "park": (park, 1)}

if __name__ == "__main__":
    fn, nargs = COMMANDS.get(sys.argv[1] if len(sys.argv) > 1 else "", (None, 0))
    if fn is None or len(sys.argv) != 2 + nargs:
        print("usage: demo_report.py nft-counter | stats | iperf FILE RC KIND"
              " | park CSV", file=sys.stderr)
        sys.exit(2)
    fn(*sys.argv[2:])
