# SPDX-License-Identifier: GPL-2.0
"""nfslice-delay (userspace/nfslice-delay/): the constant-delay line on a TAP device that
stands in for an NF's processing delay (netem is not in this kernel).

Standalone, in a namespace of its own: frames the kernel sends out of the
TAP device come back into it byte for byte, in order, and never earlier
than --delay after they left (kernel packet timestamps of an AF_PACKET
capture on the device, outgoing and incoming copies of each frame); a full
line drops and counts the excess and keeps the oldest; the JSON report
counts exactly what was sent. Bad arguments exit 2 naming the fix.
"""
import json
import signal
import subprocess

import pytest

from nfsl.rig import PY, ROOT, describe, must, name, poll, run

DELAY = ROOT / "build" / "nfslice-delay"
NS = name("dly")
TAP = "dq0"
ADDR, PEER = "10.213.0.1", "10.213.0.2"
PORT = 9  # discard: nothing answers, the frames only cross the line

# Sends COUNT UDP datagrams (payload: index, then filler up to a size that
# varies per datagram) to PEER out of TAP and captures the device with
# AF_PACKET, kernel receive timestamps on: every frame leaves once
# (PACKET_OUTGOING) and comes back once from the delay line, until WAIT s
# passed or BACK (default COUNT) came back. Prints one JSON object: the
# frames in capture order as [pkttype, ts_ns, hex].
CAPTURE = r"""
import json, socket, struct, sys, time
tap, peer, port, count, wait, back = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # asm-generic value
cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL: outgoing too
cap.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
cap.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE: every copy fits
cap.bind((tap, 0))
cap.settimeout(0.05)
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(count):
    tx.sendto(struct.pack("!I", i) + bytes([i & 0xff]) * (i * 37 % 1400), (peer, port))
frames, end = [], time.monotonic() + wait
while time.monotonic() < end and len(frames) < count + back:
    try:
        data, anc, _, addr = cap.recvmsg(4096, 64)
    except socket.timeout:
        continue
    if len(data) < 38 or data[23] != 17 or struct.unpack("!H", data[36:38])[0] != port:
        continue
    ts = [struct.unpack("qq", d[:16]) for lvl, typ, d in anc if typ == SO_TIMESTAMPNS]
    frames.append([addr[2], ts[0][0] * 10**9 + ts[0][1], data.hex()])
print(json.dumps(frames))
"""
PACKET_OUTGOING = 4


def ns_run(*args, timeout=30):
    return run(["ip", "netns", "exec", NS, *args], timeout=timeout)


@pytest.fixture
def tapns():
    """Namespace NS with a persistent TAP device TAP at ADDR, IPv6 off (so
    the kernel sends nothing of its own), and PEER resolved statically to
    the device's own MAC: frames the line hands back are addressed to the
    device, and the kernel drops them (no forwarding) after the capture
    saw them."""
    run(["ip", "netns", "delete", NS])
    must(run(["ip", "netns", "add", NS]))
    procs = []
    try:
        for k in ("all", "default"):
            must(ns_run("sysctl", "-qw", f"net.ipv6.conf.{k}.disable_ipv6=1"))
        must(ns_run("ip", "link", "set", "lo", "up"))
        must(ns_run("ip", "tuntap", "add", "dev", TAP, "mode", "tap"))
        must(ns_run("ip", "link", "set", "dev", TAP, "up", "txqueuelen", "10000"))
        must(ns_run("ip", "addr", "add", f"{ADDR}/24", "dev", TAP))
        mac = json.loads(must(ns_run("ip", "-j", "link", "show", TAP)))[0]["address"]
        must(ns_run("ip", "neigh", "add", PEER, "lladdr", mac, "dev", TAP,
                    "nud", "permanent"))
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
        run(["ip", "netns", "delete", NS])


def start_line(procs, *opts):
    """nfslice-delay on TAP with OPTS; returns once it is attached (carrier)."""
    p = subprocess.Popen(["ip", "netns", "exec", NS, str(DELAY), "--dev", TAP,
                          "--json", *map(str, opts)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.append(p)

    def attached():
        assert p.poll() is None, p.stderr.read()
        return "LOWER_UP" in must(ns_run("ip", "link", "show", "dev", TAP))
    poll(attached, 5, f"nfslice-delay attached to {TAP}")
    return p


def stop_line(p):
    """SIGTERM the line; its JSON report."""
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=10)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def capture(count, wait, back=None):
    """COUNT datagrams through the line (CAPTURE): (sent, back), each a
    list of (ts_ns, hex), once WAIT s passed or BACK (default COUNT) came
    back."""
    back = count if back is None else back
    out = must(ns_run(PY, "-c", CAPTURE, TAP, PEER, PORT, count, wait, back,
                      timeout=60))
    frames = json.loads(out)
    sent = [(ts, data) for kind, ts, data in frames if kind == PACKET_OUTGOING]
    back = [(ts, data) for kind, ts, data in frames if kind != PACKET_OUTGOING]
    return sent, back


def test_frames_come_back_intact_in_order_after_the_delay(tapns):
    delay_us, n = 3000, 200
    line = start_line(tapns, "--delay", delay_us)
    sent, back = capture(n, wait=5)
    rep = stop_line(line)
    assert len(sent) == n and len(back) == n, (len(sent), len(back))
    # Byte for byte, in the order they left.
    assert [d for _, d in back] == [d for _, d in sent]
    holds = [b[0] - s[0] for s, b in zip(sent, back)]
    assert min(holds) >= delay_us * 1000, min(holds)
    assert rep["frames_in"] == n and rep["frames_out"] == n, rep
    assert rep["dropped_full"] == 0 and rep["dropped_big"] == 0, rep
    assert rep["write_errors"] == 0 and rep["left"] == 0, rep
    assert rep["bytes_out"] == sum(len(d) // 2 for _, d in sent), rep
    assert rep["hold_us"]["min"] >= delay_us, rep
    assert rep["delay_us"] == delay_us


def test_full_line_drops_the_newest_and_counts_them(tapns):
    # 200 ms: the 50 datagrams are sent long before the first is due, so
    # the line is full after 10 and the other 40 find it full.
    # The 10 back end the capture; the line's own report says that no
    # more left it (frames_out).
    line = start_line(tapns, "--delay", 200000, "--queue", 10)
    sent, back = capture(50, wait=3, back=10)
    rep = stop_line(line)
    assert len(sent) == 50
    assert [d for _, d in back] == [d for _, d in sent[:10]]
    assert (rep["frames_in"], rep["frames_out"], rep["dropped_full"],
            rep["left"]) == (50, 10, 40, 0), rep


def test_stop_counts_what_is_still_held(tapns):
    line = start_line(tapns, "--delay", 10000000)
    sent, back = capture(5, wait=0.5)
    rep = stop_line(line)
    assert len(sent) == 5 and back == []
    assert (rep["frames_in"], rep["frames_out"], rep["left"]) == (5, 0, 5), rep


def test_refuses_a_tun_device(tapns):
    must(ns_run("ip", "tuntap", "add", "dev", "tn0", "mode", "tun"))
    cp = ns_run(DELAY, "--dev", "tn0", "--delay", "10", "--duration", "1")
    assert cp.returncode == 1, describe(cp)
    assert "cannot attach to TAP device tn0" in cp.stderr
    assert "TUN device" in cp.stderr


@pytest.mark.parametrize("args, message", [
    ([], "--dev IFACE is required"),
    (["--dev", TAP], "--delay USEC is required"),
    (["--dev", TAP, "--delay", "-1"], "--delay '-1' is not valid"),
    (["--dev", TAP, "--delay", "10000001"], "from 0 to 10000000"),
    (["--dev", TAP, "--delay", "5", "--queue", "0"], "--queue '0' is not valid"),
    (["--dev", "x" * 16, "--delay", "5"], "longer than 15 characters"),
    (["--dev", TAP, "--delay", "5", "--bogus"], "bogus"),
    (["--dev", TAP, "--delay", "5", "extra"], "extra"),
])
def test_bad_arguments_exit_2_and_name_the_problem(args, message):
    cp = run([DELAY, *args])
    assert cp.returncode == 2, describe(cp)
    assert message in cp.stderr, describe(cp)


def test_help_gives_units_and_source():
    cp = run([DELAY, "--help"])
    assert cp.returncode == 0, describe(cp)
    for word in ("microseconds", "PayloadPark", "Little's law", "--queue FRAMES"):
        assert word in cp.stdout
