#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""bench/exp_migrate.py's NF releasing the headers it held, run in the DUT.

  mig_release.py PCAP RATE

Sends the IP packets of PCAP (Ethernet frames; their IP part) as they are
through a raw socket (routed out of d1, through its splicer), RATE packets
per second (0: unpaced), after SIGUSR1. Prints "ready N" (N packets
loaded), then one JSON line: sent, errors, start (CLOCK_MONOTONIC s, as
the benchmark's time.monotonic()), elapsed_s. Usage errors exit 2.
"""
import json
import signal
import socket
import sys
import time


def main(pcap, rate):
    from scapy.utils import RawPcapReader
    pkts = [bytes(f)[14:] for f, _ in RawPcapReader(pcap)]
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    print("ready", len(pkts), flush=True)
    signal.sigwait([signal.SIGUSR1])
    t0, errors = time.monotonic(), 0
    for i, p in enumerate(pkts):
        try:
            s.sendto(p, (socket.inet_ntoa(p[16:20]), 0))
        except OSError:
            errors += 1
        if rate and i % 32 == 31:
            d = t0 + (i + 1) / rate - time.monotonic()
            if d > 0:
                time.sleep(d)
    print(json.dumps({"sent": len(pkts) - errors, "errors": errors,
                      "start": t0, "elapsed_s": time.monotonic() - t0}),
          flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: mig_release.py PCAP RATE", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], int(sys.argv[2]))
