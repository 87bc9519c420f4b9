# SPDX-License-Identifier: GPL-2.0
"""Crafted packets through the rig: build, send, capture, compare.

Frames are built with scapy in the test process (deterministic: fixed
addresses, MACs, ports, sequence numbers and seeded payloads), written to a
pcap file, and sent on a rig veth from inside the sending namespace
(send(): nfsl.netns.packet_send, an AF_PACKET socket, as scapy's sendp).
tcpdump captures what arrives on the far veth. The frames are then read back
as bytes and checked with a small parser of our own, independent of the
code under test and of scapy's dissectors.
"""
import random
import socket
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from nfsl.netns import capture_opts, in_netns, packet_send
from nfsl.rig import MACS, poll

THRESHOLD = 256   # nfslice attach default --threshold (frame bytes)
TOKEN_LEN = 16    # bytes a sliced packet carries (include/nfsl_consts.h)
DSCP_SLICED = 63

# Frame sizes of the crafted packet lists: both sides of the threshold,
# exactly at it, and up to a full 1500 B IP packet.
SIZES = (64, 100, 255, 256, 300, 700, 1000, 1400, 1514)


# ------------------------------------------------------------------ pcap --
def write_pcap(path, frames):
    """Write FRAMES (bytes) to a classic pcap file (Ethernet, us stamps)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 0, i, len(fr), len(fr)))
            f.write(fr)


def read_pcap(path):
    """Frames of a classic pcap file (as tcpdump -w writes it), as bytes."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        return []  # the capture never got going
    magic = struct.unpack("<I", data[:4])[0]
    order = {0xA1B2C3D4: "<", 0xA1B23C4D: "<", 0xD4C3B2A1: ">",
             0x4D3CB2A1: ">"}[magic]
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, orig = struct.unpack(order + "IIII", data[off:off + 16])
        off += 16
        if off + incl > len(data):
            break  # a record tcpdump was still writing when stopped
        assert incl == orig, "capture truncated a frame (snaplen)"
        frames.append(data[off:off + incl])
        off += incl
    return frames


# ---------------------------------------------------------------- parse --
@dataclass
class L4:
    """What the tests check in a frame: addresses, DSCP, ports, payload."""
    v6: bool
    proto: str        # "udp" or "tcp"
    dscp: int
    src: bytes
    dst: bytes
    sport: int
    dport: int
    seq: int          # TCP only (0 for UDP)
    ack: int
    payload: bytes    # L4 payload, per the IP length (no Ethernet padding)


def parse(frame):
    """Parse an untagged Ethernet/IPv4|IPv6/UDP|TCP frame into an L4."""
    etype = struct.unpack("!H", frame[12:14])[0]
    if etype == 0x0800:
        ihl = (frame[14] & 0xF) * 4
        dscp = frame[15] >> 2
        tot = struct.unpack("!H", frame[16:18])[0]
        proto = frame[23]
        src, dst = frame[26:30], frame[30:34]
        l4, end = 14 + ihl, 14 + tot
        v6 = False
    elif etype == 0x86DD:
        tc = ((frame[14] & 0xF) << 4) | (frame[15] >> 4)
        dscp = tc >> 2
        plen = struct.unpack("!H", frame[18:20])[0]
        proto = frame[20]
        src, dst = frame[22:38], frame[38:54]
        l4, end = 54, 54 + plen
        v6 = True
    else:
        raise ValueError(f"not IP: ethertype {etype:#x}")
    sport, dport = struct.unpack("!HH", frame[l4:l4 + 4])
    if proto == 17:
        return L4(v6, "udp", dscp, src, dst, sport, dport, 0, 0,
                  frame[l4 + 8:end])
    if proto == 6:
        seq, ack = struct.unpack("!II", frame[l4 + 4:l4 + 12])
        doff = (frame[l4 + 12] >> 4) * 4
        return L4(v6, "tcp", dscp, src, dst, sport, dport, seq, ack,
                  frame[l4 + doff:end])
    raise ValueError(f"not UDP/TCP: protocol {proto}")


# ---------------------------------------------------------------- craft --
@dataclass(frozen=True)
class Flow:
    """A client -> server flow of the crafted lists."""
    v6: bool
    proto: str
    sport: int
    dport: int


# The ACL forwards TCP 5201 and 8080 and UDP 5201 (scripts/rig.sh); one
# flow of each, over IPv4 and IPv6.
FLOWS = (
    Flow(False, "udp", 40001, 5201), Flow(False, "tcp", 40002, 5201),
    Flow(False, "tcp", 40003, 8080), Flow(True, "udp", 40011, 5201),
    Flow(True, "tcp", 40012, 5201), Flow(True, "tcp", 40013, 8080),
)


def craft(flow, frame_len, payload, src_mac, dst_mac, src_ip, dst_ip,
          seq=0, ack=0, dscp=0, ip_id=1):
    """One frame of exactly FRAME_LEN bytes; scapy computes the checksums.

    PAYLOAD is a callable n -> n bytes (a seeded generator). TCP segments
    carry flags PA and fixed seq/ack: the DUT's conntrack picks such flows
    up mid-stream (nf_conntrack_tcp_loose, on by default; the window checks
    accept them with be_liberal at its default too).
    """
    if flow.v6:
        l3 = IPv6(src=src_ip, dst=dst_ip, hlim=64, tc=dscp << 2)
    else:
        l3 = IP(src=src_ip, dst=dst_ip, ttl=64, tos=dscp << 2, id=ip_id)
    if flow.proto == "udp":
        l4 = UDP(sport=flow.sport, dport=flow.dport)
    else:
        l4 = TCP(sport=flow.sport, dport=flow.dport, seq=seq, ack=ack,
                 flags="PA", window=1024)
    hdr = Ether(src=src_mac, dst=dst_mac) / l3 / l4
    n = frame_len - len(hdr)
    if n < 0:
        return None
    frame = bytes(hdr / Raw(payload(n)))
    assert len(frame) == frame_len
    return frame


def client_frames(env, seed, flows=FLOWS, sizes=SIZES, dscp=0):
    """The deterministic client -> server list: every flow at every size.

    Sizes run in the outer loop so the flows interleave. Sizes a flow's
    headers do not fit in (64 B IPv6/TCP) are left out.
    """
    rng = random.Random(seed)
    seq = {f: 1000000 * (i + 1) for i, f in enumerate(flows)}
    frames = []
    for size in sizes:
        for f in flows:
            src, dst = ((env["CLI_IP6"], env["SRV_IP6"]) if f.v6 else
                        (env["CLI_IP4"], env["SRV_IP4"]))
            fr = craft(f, size, rng.randbytes, MACS["cli0"], MACS["dut0"],
                       src, dst, seq=seq[f], ack=777000, dscp=dscp,
                       ip_id=len(frames) + 1)
            if fr is None:
                continue
            seq[f] += len(parse(fr).payload)
            frames.append(fr)
    return frames


def ones_sum(data):
    """RFC 1071 ones' complement sum of DATA (16-bit words), folded."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def l4_sum(v6, proto, src, dst, l4):
    """Sum over pseudo-header (addresses SRC, DST) and the L4 bytes L4."""
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    ph = socket.inet_pton(fam, src) + socket.inet_pton(fam, dst)
    ph += (struct.pack("!IxxxB", len(l4), proto) if v6 else
           struct.pack("!xBH", proto, len(l4)))
    return ones_sum(ph + l4)


def _corner_frame(v6, proto, src, dst, port, payload, zero_csum):
    """A client frame of corner_frames(); checksum 0 if ZERO_CSUM."""
    l3 = (IPv6(src=src, dst=dst, hlim=64) if v6 else
          IP(src=src, dst=dst, ttl=64, id=port))
    extra = {"chksum": 0} if zero_csum else {}
    l4 = (UDP(sport=port, dport=5201, **extra) if proto == "udp" else
          TCP(sport=port, dport=5201, seq=5000, ack=6000, flags="PA",
              window=1024, **extra))
    return bytes(Ether(src=MACS["cli0"], dst=MACS["dut0"]) / l3 / l4 /
                 Raw(bytes(payload)))


def corner_frames(env, seed, sizes=(400, 1001, 1400)):
    """Client packets whose L4 checksum sits on the ones' complement corner.

    The sum over pseudo-header, L4 header and payload (checksum field zero)
    is made 0xFFFF by choosing one payload word, so the checksum is 0x0000
    for TCP and 0xFFFF for UDP (0 means "no checksum", RFC 768). "pre":
    as the client sends it; "post": as the server receives it after the
    DUT's masquerade (source = the DUT's outer address; the NAT keeps these
    unique source ports). Incremental updates (RFC 1624) that confuse +0
    and -0 produce the other form, valid for a receiver but not the bytes
    the unsliced path delivers. The odd size gives an odd-length payload,
    whose last byte the sum pads.
    """
    rng = random.Random(seed)
    frames, port = [], 43000
    for v6 in (False, True):
        fam = "6" if v6 else "4"
        cli, srv = env[f"CLI_IP{fam}"], env[f"SRV_IP{fam}"]
        l4off = 54 if v6 else 34
        for proto in ("udp", "tcp"):
            pnum = 17 if proto == "udp" else 6
            for size in sizes:
                for where in ("pre", "post"):
                    port += 1
                    at = cli if where == "pre" else env[f"DUT_OUT_IP{fam}"]
                    hdr = len(_corner_frame(v6, proto, cli, srv, port, b"",
                                            True))
                    payload = bytearray(rng.randbytes(size - hdr))
                    word = (len(payload) - 2) & ~1  # even offset in L4
                    payload[word:word + 2] = b"\0\0"
                    zero = _corner_frame(v6, proto, at, srv, port, payload,
                                         True)
                    s = l4_sum(v6, pnum, at, srv, zero[l4off:])
                    payload[word:word + 2] = struct.pack("!H", ~s & 0xFFFF)
                    zero = _corner_frame(v6, proto, at, srv, port, payload,
                                         True)
                    assert l4_sum(v6, pnum, at, srv, zero[l4off:]) == 0xFFFF
                    fr = _corner_frame(v6, proto, cli, srv, port, payload,
                                       False)
                    assert len(fr) == size
                    frames.append(fr)
    return frames


def answers(captured, seed):
    """Server -> client frames answering the flows seen in CAPTURED.

    One answer per captured client packet, of the same frame size, sent to
    the DUT's outer address and the NATed port the capture shows, so the
    DUT's conntrack maps it back to the client. TCP answers acknowledge the
    segment they answer.
    """
    rng = random.Random(seed)
    out = []
    for i, fr in enumerate(captured):
        p = parse(fr)
        fam = socket.AF_INET6 if p.v6 else socket.AF_INET
        src, dst = socket.inet_ntop(fam, p.dst), socket.inet_ntop(fam, p.src)
        flow = Flow(p.v6, p.proto, p.dport, p.sport)
        out.append(craft(flow, len(fr), rng.randbytes, MACS["srv0"],
                         MACS["dut1"], src, dst, seq=p.ack,
                         ack=(p.seq + len(p.payload)) & 0xFFFFFFFF,
                         dscp=p.dscp, ip_id=1000 + i))
    return out


def predict(frames, threshold=THRESHOLD, keep=0):
    """Counters the slicer must show for FRAMES entering a domain.

    The rule of `nfslice stats --help` / the slicer: a frame below the
    threshold, or whose payload does not exceed keep + token, is skipped as
    small; any other is sliced and parks payload - keep bytes.
    """
    c = {"sliced": 0, "skipped_small": 0, "parked_bytes": 0}
    for fr in frames:
        n = len(parse(fr).payload)
        if len(fr) < threshold or n <= keep + TOKEN_LEN:
            c["skipped_small"] += 1
        else:
            c["sliced"] += 1
            c["parked_bytes"] += n - keep
    return c


# ------------------------------------------------------ send / capture --
def send(rig, where, iface, frames, path):
    """Send FRAMES on IFACE of namespace WHERE, in order, ~PACE_S apart
    (nfsl.netns.packet_send: an AF_PACKET socket, as scapy's sendp); PATH
    keeps them as a pcap file. Raises AssertionError if not all went."""
    write_pcap(path, frames)
    res = in_netns(rig.ns(where), packet_send, iface,
                   [(None, bytes(f)) for f in frames])
    assert res["sent"] == len(frames), res


class Capture:
    """tcpdump of the UDP/TCP packets arriving on one rig veth.

    -c COUNT makes tcpdump stop by itself once everything expected has
    arrived; finish() waits a bounded time for that, so a lost packet fails
    the test after the timeout instead of hanging it. -U writes every packet
    at once, -Z root keeps it writing into the root-owned temp dir, -Q in
    ignores what the namespace itself sends; capture_opts() hands every
    frame over at once (immediate mode), none lost.
    """

    def __init__(self, rig, where, iface, count, path, bpf="udp or tcp"):
        """Describe the capture; start() runs it."""
        self.rig, self.where, self.iface = rig, where, iface
        self.count, self.path, self.bpf = count, Path(path), bpf
        self.err = self.path.with_suffix(".stderr")
        self.proc = None

    def start(self, timeout=10):
        """Start tcpdump and wait until it is listening."""
        with open(self.err, "wb") as err:
            self.proc = self.rig.spawn(
                self.where, "tcpdump", *capture_opts(self.count),
                "-Z", "root", "-U", "-n", "-i",
                self.iface, "-Q", "in", "-c", self.count, "-w", self.path,
                self.bpf, stderr=err)

        def listening():
            if self.proc.poll() is not None:
                raise AssertionError("tcpdump exited: " + self.err.read_text())
            return b"listening on" in self.err.read_bytes()
        poll(listening, timeout, f"tcpdump on {self.iface}")
        return self

    def finish(self, timeout=10):
        """Wait (bounded) for COUNT packets; return the frames captured."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass  # fewer than COUNT arrived: report what did
        self.rig.stop(self.proc)
        # tcpdump flushed every packet (-U) before it exited.
        return read_pcap(self.path)


@dataclass
class Roundtrip:
    """Both directions of one run: what was sent and what arrived."""
    fwd_sent: list
    fwd_got: list
    rev_sent: list
    rev_got: list


def roundtrip(rig, fwd, tmp, tag, rev_seed):
    """Send FWD client -> server, then answers server -> client.

    Each direction is captured on the receiving endpoint's veth.
    """
    cap = Capture(rig, "srv", "srv0", len(fwd), tmp / f"{tag}-fwd.pcap").start()
    send(rig, "cli", "cli0", fwd, tmp / f"{tag}-fwd-sent.pcap")
    fwd_got = cap.finish()
    rev = answers(fwd_got, rev_seed)
    cap = Capture(rig, "cli", "cli0", len(rev), tmp / f"{tag}-rev.pcap").start()
    send(rig, "srv", "srv0", rev, tmp / f"{tag}-rev-sent.pcap")
    rev_got = cap.finish()
    return Roundtrip(fwd, fwd_got, rev, rev_got)


def first_difference(a, b):
    """Index and description of the first difference of two frame lists."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            at = next((j for j in range(min(len(x), len(y))) if x[j] != y[j]),
                      min(len(x), len(y)))
            return (f"frame {i} differs at byte {at} (lengths {len(x)} vs "
                    f"{len(y)}):\n  {x[max(0, at - 8):at + 24].hex()}\n  "
                    f"{y[max(0, at - 8):at + 24].hex()}")
    if len(a) != len(b):
        return f"{len(a)} frames vs {len(b)}"
    return None


def assert_same_frames(got, want, what):
    """Assert two frame lists are identical, byte for byte, in order."""
    diff = first_difference(got, want)
    assert diff is None, f"{what}: {diff}"


def assert_delivered(sent, got, what):
    """Every sent frame arrived, in order, with its DSCP and payload."""
    assert len(got) == len(sent), \
        f"{what}: {len(got)} of {len(sent)} packets arrived"
    for i, (s, g) in enumerate(zip(sent, got)):
        ps, pg = parse(s), parse(g)
        assert (pg.v6, pg.proto, pg.dport, pg.dscp, pg.payload) == \
            (ps.v6, ps.proto, ps.dport, ps.dscp, ps.payload), \
            f"{what}: packet {i} ({len(s)} B {ps.proto}) arrived changed"

