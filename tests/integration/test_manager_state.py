# SPDX-License-Identifier: GPL-2.0
"""nfsliced (test_manager.py says what every test of it checks): a domain's
state under traffic: upgrade, checkpoint and restore, TTL eviction of the
payloads an NF dropped. Rig and fixtures: manager_fixtures.py."""
import json
import os
import signal
import subprocess
import time

from nfsl import tap as nftap
from nfload import (PORT, RAW_SEND, RECV, SEND, SIZE, Traffic, pcap_frames,
                    scrape)
from nfsl.rig import PY, capture_opts, describe, must, poll, settle
from manager_fixtures import DOMAIN, daemon, rig, sliced


def prog_ids(rig):
    """(slicer, splicer) program ids of dut0 and dut1, from status."""
    st = rig.status(DOMAIN)
    return {i["name"]: (i["xdp_prog_id"], i["tc_prog_id"])
            for i in st["interfaces"]}


def test_upgrade_under_traffic(rig, tmp_path):
    """Three upgrades while UDP flows and a 24 MB download runs: each
    swaps every program (new ids), the counters go on, nothing is
    truncated, corrupt or lost unaccounted, the file arrives intact, and
    no payload is stale, replayed or refused."""
    before = rig.stats(DOMAIN)
    ids = [prog_ids(rig)]
    t0 = time.monotonic()
    with Traffic(rig, tmp_path, rig.env["CLI_IP4"],
                 rig.env["SRV_IP4"]) as load:
        load.start()
        for i in range(3):
            s0 = sliced(rig)
            poll(lambda: sliced(rig) >= s0 + 1000, 10, "1000 more sliced")
            js = ("--json",) if i == 2 else ()  # the last one reports JSON
            cp = rig.nfslice("upgrade", "--name", DOMAIN, *js)
            assert cp.returncode == 0, describe(cp)
            if js:
                r = json.loads(cp.stdout)
                assert (r["splicers"], r["slicers"]) == (2, 2), r
                assert 0 < r["slicers_ns"] < r["total_ns"] == r["load_ns"] + \
                    r["splicers_ns"] + r["slicers_ns"], r
            else:
                assert "2 splicers, 2 slicers replaced" in cp.stdout, \
                    describe(cp)
            ids.append(prog_ids(rig))
        s0 = sliced(rig)
        # 30 s: the paced traffic slows on a loaded host (CI at f9a039a
        # timed out at 10 s beside the other test files; green at 5335bdc).
        poll(lambda: sliced(rig) >= s0 + 1000, 30, "sliced after upgrade")
        assert load.downloading(), \
            f"the download ended before the upgrades: after " \
            f"{time.monotonic() - t0:.1f} s, {load.out.stat().st_size} B"
        res = load.finish()
    assert res["curl"][0] == 0 and res["sha_ok"], res["curl"]
    after = settle(lambda: rig.stats(DOMAIN))
    got, sent = res["got"], res["sent"]
    numbers = f"ids {ids}; sent {sent}, received {got}, " \
              f"socket drops {res['socket_drops']}; stats {after}"
    for a, b in zip(ids, ids[1:]):
        for dev in ("dut0", "dut1"):
            assert a[dev][0] != b[dev][0] and a[dev][1] != b[dev][1], numbers
        # Upgrade swaps slicers that run alone: one new instance for all.
        assert b["dut0"][0] == b["dut1"][0], numbers
    assert got["truncated"] == 0 and got["corrupt"] == 0, numbers
    assert got["good"] + res["socket_drops"] == sent, numbers
    assert after["sliced"] > before["sliced"], numbers
    assert after["sliced"] == after["spliced"] + after["slots_busy"] - \
        before["slots_busy"] + before["sliced"] - before["spliced"], numbers
    for k in ("stale", "bad_token", "replayed", "too_big", "evicted"):
        assert after[k] == before[k], numbers


CKPT_PORT = 5301     # dropped in the DUT's forward chain by the test
CKPT_N = 16

def test_checkpoint_restore(rig, tmp_path):
    """Parked payloads survive a checkpoint, a detach, an attach with a
    new key and a restore: the headers sliced before splice on the new
    instance into the exact datagrams sent."""
    before = rig.stats(DOMAIN)
    must(rig.exec("dut", "nft", "-f", "-", input=(
        "table inet nfit_ckpt {\n"
        "  chain hold {\n"
        "    type filter hook forward priority -10; policy accept;\n"
        f"    udp dport {CKPT_PORT} drop\n"
        "  }\n"
        "}\n")))
    # Full UDP checksums on the wire (as from a NIC), so that the captured
    # headers re-sent by a raw socket carry a final checksum.
    must(rig.exec("cli", "ethtool", "-K", "cli0", "tx", "off"))
    pcap = tmp_path / "sliced.pcap"
    dump = rig.spawn("dut", "tcpdump", *capture_opts(CKPT_N), "-i",
                     "dut0", "-U", "-w", pcap, "-c", CKPT_N, "-Q", "in",
                     f"udp dst port {CKPT_PORT}", stderr=subprocess.PIPE)
    try:
        poll(lambda: "listening" in (dump.stderr.readline() or ""), 10,
             "tcpdump listening")
        must(rig.exec("cli", PY, "-c", SEND, rig.env["SRV_IP4"], CKPT_PORT,
                      CKPT_N, SIZE))
        assert dump.wait(timeout=10) == 0
    finally:
        if dump.poll() is None:
            os.killpg(dump.pid, signal.SIGKILL)
        rig.exec("cli", "ethtool", "-K", "cli0", "tx", "on")
    frames = pcap_frames(pcap)
    assert len(frames) == CKPT_N
    assert all(f[15] >> 2 == 63 and len(f) < 200 for f in frames), \
        "captured frames are not sliced headers"
    parked = poll(lambda: (lambda st: st if st["slots_busy"] ==
                           before["slots_busy"] + CKPT_N else None)(
        rig.stats(DOMAIN)), 5, f"{CKPT_N} payloads parked")
    ck = tmp_path / "mgr.ckpt"
    r = json.loads(must(rig.nfslice("checkpoint", "--name", DOMAIN, "--file",
                                    ck, "--json")))
    assert r["saved"] == parked["slots_busy"] and r["bytes"] == \
        ck.stat().st_size and r["ns"] > 0, r
    assert ck.stat().st_mode & 0o777 == 0o600

    # Whoever can write the file could mint tokens with its key: refused
    # (before anything else is read), the fix named, as ssh does for keys.
    ck.chmod(0o666)
    cp = rig.nfslice("restore", "--name", DOMAIN, "--file", ck)
    assert cp.returncode == 1 and cp.stderr.strip() == (
        f"nfslice: checkpoint {ck} is writable by group or others (mode 0666): "
        f"chmod go-w {ck}"), describe(cp)
    ck.chmod(0o600)
    os.chown(ck, 65534, 65534)
    cp = rig.nfslice("restore", "--name", DOMAIN, "--file", ck)
    assert cp.returncode == 1 and f"checkpoint {ck} is owned by uid 65534, not by " \
        f"you (uid 0) or root" in cp.stderr and f"chown 0 {ck}" in cp.stderr, describe(cp)
    os.chown(ck, 0, 0)
    cp = rig.nfslice("restore", "--name", DOMAIN, "--file", ck)
    assert cp.returncode == 1 and "holds " in cp.stderr, describe(cp)
    bad = tmp_path / "bad.ckpt"
    data = bytearray(ck.read_bytes())
    data[len(data) // 2] ^= 1
    bad.write_bytes(bytes(data))
    cp = rig.nfslice("restore", "--name", DOMAIN, "--file", bad)
    assert cp.returncode == 1 and "is corrupt" in cp.stderr, describe(cp)
    bad.write_bytes(b"hello")
    cp = rig.nfslice("restore", "--name", DOMAIN, "--file", bad)
    assert cp.returncode == 1 and "not an nfslice checkpoint" in cp.stderr, \
        describe(cp)

    rig.detach(DOMAIN)
    rig.attach("dut0", "dut1", name=DOMAIN)
    assert rig.stats(DOMAIN)["slots_busy"] == 0
    r = json.loads(must(rig.nfslice("restore", "--name", DOMAIN, "--file",
                                    ck, "--json")))
    assert r["restored"] == parked["slots_busy"], r
    st0 = rig.stats(DOMAIN)
    assert st0["slots_busy"] == parked["slots_busy"], st0

    recv = rig.spawn("srv", PY, "-c", RECV, rig.env["SRV_IP4"], CKPT_PORT,
                     CKPT_N, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert nftap.Lab.readline(recv, 10).strip() == "ready"
    must(rig.exec("dut", PY, "-c", RAW_SEND,
                  input=" ".join(f[14:].hex() for f in frames)))
    out, _ = recv.communicate(timeout=20)
    got = sorted(bytes.fromhex(h) for h in json.loads(out.splitlines()[-1]))
    want = sorted(bytes([(i * 7 + k) % 251 for k in range(SIZE)])
                  for i in range(CKPT_N))
    assert got == want, f"{len(got)} datagrams, lengths " \
        f"{[len(g) for g in got]}; stats {rig.stats(DOMAIN)}, before {st0}"
    st1 = rig.stats(DOMAIN)
    assert st1["spliced"] - st0["spliced"] == CKPT_N, (st0, st1)
    assert (st1["stale"], st1["bad_token"], st1["slots_busy"]) == \
        (st0["stale"], st0["bad_token"], st0["slots_busy"] - CKPT_N), st1
    must(rig.exec("dut", "nft", "delete", "table", "inet", "nfit_ckpt"))


DROP_PORT = 5302     # dropped in the DUT's forward chain: a 30% "NF drop"


def test_ttl_frees_dropped_payloads(rig, daemon):
    """With the daemon running and a 20 ms TTL, an NF (the DUT's forward
    chain) dropping 30% of 1200 B datagrams after they were sliced leaves
    no slot busy: the daemon evicts their payloads within 1.25 TTL of
    their parking (its scan runs every TTL / 4); the other 70% arrive
    intact, none stale."""
    cookie = rig.cookies["dut"]
    r = daemon.call({"op": "set", "netns": cookie, "name": DOMAIN,
                     "changes": {"ttl_ms": 20, "threshold": 256}})
    assert r["ok"] is True, r
    must(rig.exec("dut", "nft", "-f", "-", input=(
        "table inet nfit_ttl {\n"
        "  chain hold {\n"
        "    type filter hook forward priority -10; policy accept;\n"
        f"    udp dport {DROP_PORT} drop\n"
        "  }\n"
        "}\n")))
    try:
        before = rig.stats(DOMAIN)
        recv = rig.spawn("srv", PY, "-c", RECV, rig.env["SRV_IP4"], PORT, 70,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert nftap.Lab.readline(recv, 10).strip() == "ready"
        for port, n in ((DROP_PORT, 30), (PORT, 70)):
            must(rig.exec("cli", PY, "-c", SEND, rig.env["SRV_IP4"], port, n,
                          SIZE))
        out, _ = recv.communicate(timeout=20)
        got = sorted(bytes.fromhex(h) for h in json.loads(out.splitlines()[-1]))
        want = sorted(bytes([(i * 7 + k) % 251 for k in range(SIZE)])
                      for i in range(70))
        assert got == want, f"{len(got)} datagrams received"
        after = poll(lambda: (lambda st: st if st["slots_busy"] == 0 and
                              st["sliced"] >= before["sliced"] + 100
                              else None)(rig.stats(DOMAIN)), 5,
                     "every dropped payload evicted by the TTL")
    finally:
        rig.exec("dut", "nft", "delete", "table", "inet", "nfit_ttl")
    assert after["spliced"] - before["spliced"] == 70, (before, after)
    assert after["stale"] == before["stale"], (before, after)
    got, _ = scrape(daemon.port)
    assert got[("nfsliced_ttl_evicted_total", None, None)] == 30, got
    assert got[("nfsliced_ttl_scans_total", None, None)] > 0
