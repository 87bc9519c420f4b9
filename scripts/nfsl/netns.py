# SPDX-License-Identifier: GPL-2.0
"""Code run inside a network namespace without a new interpreter.

in_netns() forks a child that enters the namespace (setns(2)) and hands the
result back: what `ip netns exec NS python3 -c ...` gives for code that
needs only the network namespace, without ~150 ms of interpreter start-up
(more on a loaded 2-vCPU host). On it: the namespace's SO_NETNS_COOKIE
(netns_cookie_of, the name of its nfslice pin directory) and an AF_PACKET
sender (packet_send). capture_opts() gives tcpdump the options under which
a capture of a few frames ends as soon as they are in.
"""
import ctypes
import errno
import os
import pickle
import socket
import struct
import time
from pathlib import Path

NETNS_DIR = Path("/run/netns")
_LIBC = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def in_netns(ns, fn, *args):
    """FN(*ARGS) run in network namespace NS (/run/netns/NS); its result.

    A forked child of this process enters NS (setns(2)) and sends back the
    pickled result: what `ip netns exec NS python3 -c ...` gives for code
    that needs only the network namespace (sockets, ifindexes, bpf(2) by
    ifindex), without starting an interpreter (~150 ms each on a loaded
    2-vCPU host). Raises AssertionError naming NS and FN's exception.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:    # the child: never returns into pytest
        try:
            os.close(r)
            fd = os.open(NETNS_DIR / ns, os.O_RDONLY)
            if _LIBC.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns {ns}")
            res = (True, fn(*args))
        except BaseException as e:      # noqa: B036 (reported, not lost)
            res = (False, f"{type(e).__name__}: {e}")
        try:
            with os.fdopen(w, "wb") as f:
                pickle.dump(res, f)
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    ok, val = pickle.loads(data) if data else (False, "child died")
    assert ok, f"in namespace {ns}: {fn.__name__}: {val}"
    return val


def _netns_cookie():
    """SO_NETNS_COOKIE of the current network namespace."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        return struct.unpack("Q", s.getsockopt(socket.SOL_SOCKET, 71, 8))[0]


def netns_cookie_of(ns):
    """SO_NETNS_COOKIE of namespace NS: names its nfslice pin directory."""
    return in_netns(ns, _netns_cookie)


# tcpdump's options for the suite's captures of COUNT frames
# (capture_opts()). libpcap's TPACKET_V3 hands a block of packets over only
# when it is full or its 1 s timeout ends, so a capture of a few dozen
# frames would take that second to finish; immediate mode takes TPACKET_V2,
# whose ring has one slot per snapshot length (on a veth with offloads,
# 64 KiB: 32 slots in tcpdump's 2 MiB), and a tcpdump kept off the CPU for
# a moment would lose what does not fit. The rigs' frames are at most
# 1514 B (nfpkt.read_pcap fails on a truncated one): 2 KiB snapshots, and
# 8 KiB of buffer per frame expected (4 MiB at least), room for them all.
CAPTURE_SNAPLEN = 2048


def capture_opts(count):
    """tcpdump options (immediate mode, snapshot length, buffer size) for a
    capture of COUNT frames: every frame handed over at once, none lost to
    a full ring (CAPTURE_SNAPLEN)."""
    return ("--immediate-mode", "-s", str(CAPTURE_SNAPLEN),
            "-B", str(max(4096, 8 * int(count))))


# Seconds between two frames of packet_send() (sleep's own overhead comes
# on top): about scapy's sendp's own pace, which the tests were written for
# (a burst toward one store part wraps it only as fast as its NF sends the
# headers back, test_nf.two_servers_run).
PACE_S = 1e-3


def packet_send(iface, frames):
    """Send FRAMES, (cpu, bytes) pairs, out of IFACE of the current
    namespace, in order, ~PACE_S apart, each from its CPU (None: any), on
    an AF_PACKET socket: what scapy's sendp does, without its import. Run
    it in the sending namespace with in_netns(). A frame the device drops
    (ENOBUFS) is sent again. Returns {"sent": N, "retries": R}; raises
    OSError, or RuntimeError for a frame dropped 1000 times."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((iface, 0))
    cur, sent, retries = None, 0, 0
    for cpu, frame in frames:
        if cpu is not None and cpu >= 0 and cpu != cur:
            os.sched_setaffinity(0, {cpu})    # moves this thread at once
            cur = cpu
        for _ in range(1000):
            try:
                s.send(frame)
                break
            except OSError as e:
                if e.errno != errno.ENOBUFS:
                    raise
                retries += 1
                time.sleep(0.001)
        else:
            raise RuntimeError(f"{iface}: frame {sent} dropped 1000 times "
                               "(ENOBUFS)")
        sent += 1
        time.sleep(PACE_S)
    s.close()
    return {"sent": sent, "retries": retries}
