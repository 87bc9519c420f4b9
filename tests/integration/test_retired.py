# SPDX-License-Identifier: GPL-2.0
"""A header of the domain sent in again is a replay whatever its DSCP,
ports or addresses (issue 17 §1.1), and a header released late, after its
domain changed keys, is stale, never delivered truncated (§1.2).

On cli - nic - dut - nic - srv (nftap.nic_lab) the domain slices in the
DUT (d0, d1); the DUT's NF holds 16 sliced headers (captured on d0,
dropped in its forward chain), the domain changes its key one of four ways
while they are held, and only then does the NF send them on (a raw socket
in the DUT):
- detach + attach under the same name: the DUT's new splicer on d1;
- restore of another checkpoint (after the held payloads were evicted);
- a drain migration to the NIC that ends past --wait (the old store gone);
- a copy migration to the NIC once key_old is cleared (copies expired).
Checked: the splicer on the way drops all 16 as stale (exact count), and
the server's UDP stack sees none of them (InDatagrams, NoPorts and
InErrors unchanged: a truncated header is a datagram to a closed port).
Before the retired-key list these headers were "not ours": 16 of 16
reached the server as 16 B datagrams (the token).

Replays: the held headers, re-marked to DSCP 0 and sent to another port
or another host (checksums made right again), are injected into the DUT's
d0 from the NIC's h0 while their payloads are parked: the slicer drops all
16 (`replayed`), nothing reaches the server or the client, and the genuine
headers released afterwards splice byte-exact. Before §1.1 the slicer let
them through and the splicer delivered 16 of 16 payloads to the new port.
"""
import json
import struct

import pytest

from nfsl import tap as nftap
from nfload import RAW_SEND, RECV, datagram, hold_headers
from nfsl.rig import NFSLICE, PY, must, poll

A = nftap.NIC_ADDRS
DOMAIN = "ret"
HELD_PORT = 5209
HELD_N = 16


def attach_dut(lab):
    # --ttl 0 and 65536 slots: nothing but the test's steps frees the
    # held payloads (no TTL scan by an nfsliced of the host, no wrap).
    must(lab.nfslice("dut", "attach", "--name", DOMAIN, "--ttl", "0",
                     "--slots", "65536", "d0", "d1"))


def attach_and_hold(lab, tmp_path):
    """The domain attached in the DUT, its NF holding HELD_N headers:
    (LAB, the held frames)."""
    attach_dut(lab)
    return lab, hold_headers(lab, tmp_path, HELD_PORT, HELD_N)


def csum_fix(csum, old, new):
    """RFC 1624 Eqn. 3: checksum field CSUM with 16-bit words OLD replaced
    by NEW (equal-length bytes)."""
    s = ~csum & 0xffff
    for i in range(0, len(old), 2):
        s += (~struct.unpack("!H", old[i:i + 2])[0] & 0xffff)
        s += struct.unpack("!H", new[i:i + 2])[0]
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def remark(frame, dport=None, daddr=None):
    """What an attacker makes of a captured sliced header (IPv4/UDP): DSCP
    0, another destination port or address, every checksum right again."""
    f = bytearray(frame)
    ip, l4 = 14, 14 + (frame[14] & 0xf) * 4
    old_ip = bytes(f[ip:ip + 20])
    f[ip + 1] = f[ip + 1] & 3
    if daddr is not None:
        f[ip + 16:ip + 20] = bytes(int(x) for x in daddr.split("."))
    f[ip + 10:ip + 12] = b"\0\0"
    hs = sum(struct.unpack("!10H", bytes(f[ip:ip + 20])))
    while hs >> 16:
        hs = (hs & 0xffff) + (hs >> 16)
    f[ip + 10:ip + 12] = struct.pack("!H", ~hs & 0xffff)
    uc = struct.unpack("!H", f[l4 + 6:l4 + 8])[0]
    uc = csum_fix(uc, old_ip[16:20], bytes(f[ip + 16:ip + 20]))
    if dport is not None:
        uc = csum_fix(uc, bytes(f[l4 + 2:l4 + 4]), struct.pack("!H", dport))
        f[l4 + 2:l4 + 4] = struct.pack("!H", dport)
    f[l4 + 6:l4 + 8] = struct.pack("!H", uc)
    return bytes(f)


# Frames (hex on stdin) sent as they are from a packet socket on argv[1].
L2_SEND = """
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
for h in sys.stdin.read().split():
    s.send(bytes.fromhex(h))
"""


def udp_in(lab, role):
    """(InDatagrams, NoPorts, InErrors) of ROLE's UDP stack."""
    lines = [ln.split() for ln in
             lab.exec(role, "cat", "/proc/net/snmp").stdout.splitlines()
             if ln.startswith("Udp:")]
    row = dict(zip(lines[0][1:], (int(x) for x in lines[1][1:])))
    return row["InDatagrams"], row["NoPorts"], row["InErrors"]


def release_and_check(lab, held, role):
    """The NF sends the held headers on; ROLE's splicer must drop all of
    them as stale and the server see none."""
    before = lab.stats(role, DOMAIN)
    srv0 = udp_in(lab, "srv")
    lab.exec("dut", PY, "-c", RAW_SEND, input=" ".join(f[14:].hex() for f in held))
    stale = lambda: lab.stats(role, DOMAIN)["stale"] - before["stale"]  # noqa: E731
    poll(lambda: stale() >= HELD_N, 10, f"{HELD_N} stale on the {role}")
    # Everything sent is accounted for once stale reached HELD_N; a ping
    # through the same path then proves nothing is still in flight.
    lab.exec("cli", "ping", "-c", "1", "-W", "2", A["srv"])
    after = lab.stats(role, DOMAIN)
    srv1 = udp_in(lab, "srv")
    assert after["stale"] - before["stale"] == HELD_N, after
    assert srv1 == srv0, f"the server's UDP stack saw {srv0} -> {srv1}"
    for k in ("spliced", "bad_token", "replayed"):
        assert after[k] == before[k], (k, before, after)


def test_late_header_after_reattach(nicrig, tmp_path):
    lab, held = attach_and_hold(nicrig, tmp_path)
    must(lab.nfslice("dut", "detach", "--name", DOMAIN, "--no-drain"))
    attach_dut(lab)
    st = json.loads(must(lab.nfslice("dut", "status", "--name", DOMAIN, "--json")))
    assert st["retired_keys"] == 1 and 50000 < st["retired_grace_ms"] <= 60000, st
    release_and_check(lab, held, "dut")


def test_late_header_after_restore(nicrig, tmp_path):
    lab = nicrig
    ckpt = tmp_path / "other.ckpt"
    attach_dut(lab)
    must(lab.nfslice("dut", "checkpoint", "--name", DOMAIN, "--file", str(ckpt)))
    must(lab.nfslice("dut", "detach", "--name", DOMAIN, "--no-drain"))
    attach_dut(lab)
    held = hold_headers(lab, tmp_path, HELD_PORT, HELD_N)
    # restore asks for a domain holding no payload: the held ones go.
    must(lab.nfslice("dut", "evict", "--name", DOMAIN, "--ttl", "1"))
    assert lab.stats("dut", DOMAIN)["slots_busy"] == 0
    must(lab.nfslice("dut", "restore", "--name", DOMAIN, "--file", str(ckpt)))
    release_and_check(lab, held, "dut")


@pytest.mark.parametrize("mode", ["drain", "copy"])
def test_late_header_after_migration(nicrig, tmp_path, mode):
    lab, held = attach_and_hold(nicrig, tmp_path)
    cp = lab.exec("dut", NFSLICE, "migrate", "--name", DOMAIN, "--mode", mode,
                  "--to", lab.ns("nic"), "--nf-port", "h0,h1", "--wait", "200",
                  "--json", "w0", "w1", timeout=60)
    r = json.loads(cp.stdout.strip().splitlines()[-1])
    assert r["mode"] == mode, r
    assert lab.nfslice("dut", "status", "--name", DOMAIN).returncode == 1, \
        "the DUT's instance is still attached"
    if mode == "copy":
        # The copies of the held payloads were left at --wait's end (freed),
        # and the old key's honour went with them (key_old cleared).
        assert r["busy_left"] + r["expired"] == HELD_N, r
    release_and_check(lab, held, "nic")


@pytest.mark.parametrize("how", ["port", "host"])
def test_replay_any_dscp(nicrig, tmp_path, how):
    lab, held = attach_and_hold(nicrig, tmp_path)
    port = HELD_PORT + 1
    evil = [remark(f, dport=port) if how == "port" else
            remark(f, daddr=A["cli"]) for f in held]
    srv0, cli0 = udp_in(lab, "srv"), udp_in(lab, "cli")
    st0 = lab.stats("dut", DOMAIN)
    lab.exec("nic", PY, "-c", L2_SEND, "h0", input=" ".join(f.hex() for f in evil))
    poll(lambda: lab.stats("dut", DOMAIN)["replayed"] - st0["replayed"] >= HELD_N,
         10, f"{HELD_N} replayed on the DUT")
    lab.exec("cli", "ping", "-c", "1", "-W", "2", A["srv"])
    st1 = lab.stats("dut", DOMAIN)
    assert st1["replayed"] - st0["replayed"] == HELD_N, st1
    for k in ("spliced", "stale", "bad_token"):
        assert st1[k] == st0[k], (k, st0, st1)
    assert udp_in(lab, "srv") == srv0 and udp_in(lab, "cli") == cli0, \
        "a replayed header's payload was delivered"
    # The genuine headers still find their payloads.
    recv = lab.spawn("srv", PY, "-c", RECV, A["srv"], str(HELD_PORT), str(HELD_N))
    assert nftap.Lab.readline(recv, 10).strip() == "ready"
    lab.exec("dut", PY, "-c", RAW_SEND, input=" ".join(f[14:].hex() for f in held))
    out, _ = recv.communicate(timeout=20)
    lab.procs.remove(recv)
    got = sorted(bytes.fromhex(h) for h in json.loads(out.strip().splitlines()[-1]))
    assert got == sorted(datagram(i) for i in range(HELD_N))
    st2 = lab.stats("dut", DOMAIN)
    assert st2["spliced"] - st1["spliced"] == HELD_N and st2["stale"] == st1["stale"], st2
