# SPDX-License-Identifier: GPL-2.0
"""Migration in both modes and nfsliced restarts under load (issue 10
section 7, Tests: "zero lost or corrupted packets attributable to the
operation, TCP sha256 intact, zero stale/replayed caused by it").

Migration runs on cli - nic - dut - nic - srv (nftap.nic_lab): the domain
starts inline in the DUT (d0, d1; --ttl 0, so that no nfsliced on the host
evicts the held payloads below by time; 65536 slots, so that wrap-count
expiry does not either) and moves to the NIC (wire ports
w0, w1 as domain interfaces, host ports h0, h1 as NF ports: the park
roles) while 4000 datagrams/s of 1200 B and a 24 MB download at 2 MB/s
cross. Before it, the DUT's NF holds 16 sliced headers (captured on d0,
dropped in its forward chain): their payloads are parked in the DUT's
store for the whole migration, and the NF sends the headers on (a raw
socket in the DUT) while the migration runs:
- drain: once the old instance stopped slicing; its splicer on d1 must
  splice them before it goes;
- copy: once the old instance is gone (detached without a drain); the
  NIC's splicer on w1 must splice them from the copies, under the old key.
Checked: the 16 datagrams arrive byte-exact; every datagram of the stream
delivered intact, or dropped by the receiving socket's full buffer and
counted there (no interface drops one: the splicers come and go on TCX,
no qdisc is grafted; docs/platform.md); the file's
sha256 right; on the NIC nothing stale, replayed, refused (bad_token) or
evicted, and its counters exact: everything it sliced spliced or still
parked, plus the copies it spliced.

nfsliced restarts run on a rig (conftest rigs): the daemon is killed
(SIGKILL) and started again twice under the same load; each one TTL-scans
the domain, and nothing is lost, corrupted, stale or evicted.
"""
import json
import os
import signal
import struct
import subprocess
import time

import pytest

from nfsl import tap as nftap
from nfload import (RAW_SEND, RECV, SIZE, Daemon, Traffic, datagram,
                    hold_headers, scrape)
from nfsl.rig import NFSLICE, PY, describe, must, name, poll, run, settle

MIG = nftap.NIC_ADDRS
DOMAIN = "mig"
HELD_PORT = 5202     # the DUT's NF holds these headers
HELD_N = 16


def old_stopped(lab):
    """Has the DUT's instance stopped slicing (drain: the switch)?"""
    cp = lab.nfslice("dut", "status", "--name", DOMAIN, "--json")
    return cp.returncode == 0 and json.loads(cp.stdout)["threshold"] == 65535


def old_gone(lab):
    """Is the DUT's instance detached (copy: the old node left)?"""
    return lab.nfslice("dut", "status", "--name", DOMAIN).returncode == 1


def to_args(lab, target):
    """The command prefix and --to of a migration to the NIC: its
    namespace, or the NIC as another host (--to ssh://HOST) whose remote
    shell is `ip netns exec` (NFSLICE_RSH): every step there is then an
    nfslice command run through that shell, as over ssh, nothing read
    from its pins here."""
    if target == "netns":
        return [NFSLICE], lab.ns("nic")
    return (["env", "NFSLICE_RSH=ip netns exec", f"NFSLICE_REMOTE={NFSLICE}", NFSLICE],
            f"ssh://{lab.ns('nic')}")


@pytest.mark.parametrize("target", ["netns", "host"])
@pytest.mark.parametrize("mode", ["drain", "copy"])
def test_migrate_under_traffic(nicrig, tmp_path, mode, target):
    """The domain moves from the DUT to the NIC under load with 16
    payloads held by the NF (module docstring), to the NIC's namespace
    or to the NIC as another host."""
    lab = nicrig
    cmd, to = to_args(lab, target)
    # 32768 slots a CPU: the held payloads outlive 65536 slices of their
    # CPU (wrap-count expiry 2), some 16 s of this load.
    must(lab.nfslice("dut", "attach", "--name", DOMAIN, "--ttl", "0",
                     "--slots", "65536", "d0", "d1"))
    frames = hold_headers(lab, tmp_path, HELD_PORT, HELD_N)
    busy0 = lab.stats("dut", DOMAIN)["slots_busy"]
    assert busy0 >= HELD_N, busy0
    recv = lab.spawn("srv", PY, "-c", RECV, MIG["srv"], str(HELD_PORT),
                     str(HELD_N))
    assert nftap.Lab.readline(recv, 10).strip() == "ready"
    drops0 = nftap.nic_lab_drops(lab)
    with Traffic(lab, tmp_path, MIG["cli"], MIG["srv"]) as load:
        load.start()
        poll(lambda: lab.stats("dut", DOMAIN)["sliced"] >= HELD_N + 2000, 10,
             "2000 sliced on the DUT")
        mig = lab.spawn("dut", *cmd, "migrate", "--name", DOMAIN,
                        "--mode", mode, "--to", to, "--nf-port",
                        "h0,h1", "--wait", "30000", "--json", "w0", "w1")
        # The NF sends the held headers on during the migration.
        ready = old_stopped if mode == "drain" else old_gone
        poll(lambda: ready(lab) or mig.poll() is not None, 30,
             f"the {mode} migration's release point")
        t_release = time.monotonic()
        lab.exec("dut", PY, "-c", RAW_SEND,
                 input=" ".join(f[14:].hex() for f in frames))
        out, err = mig.communicate(timeout=60)
        lab.procs.remove(mig)
        assert mig.returncode == 0, f"migrate: {out} {err}"
        r = json.loads(out.strip().splitlines()[-1])
        print(f"migrate {mode}: {r}; released "
              f"{(time.monotonic() - t_release) * 1e3:.0f} ms before it ended")
        nic = lambda: lab.stats("nic", DOMAIN)  # noqa: E731
        s0 = nic()["sliced"]
        poll(lambda: nic()["sliced"] >= s0 + 2000, 10,
             "2000 sliced on the NIC")
        assert load.downloading(), "the download ended before the migration"
        res = load.finish()
    out_held, _ = recv.communicate(timeout=20)
    got_held = sorted(bytes.fromhex(h) for h in
                      json.loads(out_held.strip().splitlines()[-1]))
    after = settle(nic)
    assert old_gone(lab), "the DUT's instance is still attached"
    counted = res["socket_drops"] + nftap.nic_lab_drops(lab) - drops0
    numbers = f"migrate {r}; traffic {res}; drops counted {counted} " \
              f"(sockets, interfaces); NIC {after}"
    assert got_held == sorted(datagram(i) for i in range(HELD_N)), \
        f"{len(got_held)} held datagrams back; " + numbers
    assert res["sha_ok"] and res["curl"][0] == 0, numbers
    got = res["got"]
    assert got["truncated"] == 0 and got["corrupt"] == 0 and got["dup"] == 0, \
        numbers
    assert got["good"] + res["socket_drops"] == res["sent"], numbers
    assert r["mode"] == mode and r["busy_left"] == 0 and r["to"] == to, numbers
    assert r["attach_ns"] + r["unsliced_ns"] <= r["total_ns"], numbers
    for k in ("stale", "replayed", "too_big", "evicted", "bad_token"):
        assert after[k] == 0, numbers
    if target == "netns":  # the holding tag went at the switch
        assert _nic_entry(lab)["holding"] is None, _nic_entry(lab)
    if mode == "drain":
        assert after["spliced"] + after["slots_busy"] == after["sliced"], \
            numbers
        return
    # copy: every payload the DUT held at the switch was imported; each
    # copy was spliced on the NIC (the held ones among them), or freed
    # because the old splicer spliced its header after the copy; none
    # waited for the TTL.
    assert r["busy_at_switch"] >= HELD_N and r["conflicts"] == 0, numbers
    assert r["imported"] == r["busy_at_switch"], numbers
    assert r["spliced_new"] >= HELD_N, numbers
    assert r["spliced_new"] + r["stale_copies"] == r["imported"], numbers
    assert r["expired"] == 0 and r["bytes"] > HELD_N * SIZE, numbers
    assert after["spliced"] + after["slots_busy"] == \
        after["sliced"] + r["spliced_new"], numbers
    st = lab.nfslice("nic", "status", "--name", DOMAIN, "--json")
    assert st.returncode == 0, describe(st)


def test_migrate_to_host_refused(nicrig):
    """A bad HOST-SPEC or remote shell is named with the form expected,
    nothing changed; a remote nfslice that cannot run leaves the old
    instance slicing and nothing attached there."""
    lab = nicrig
    must(lab.nfslice("dut", "attach", "--name", DOMAIN, "--ttl", "0", "d0", "d1"))
    for to, env, want in (
            ("ssh://a b", [], "ssh://[USER@]HOST"),
            ("ssh://host/x", [], "ssh://[USER@]HOST"),
            ("ssh://host:2222", [], "ssh -p PORT"),
            (f"ssh://{lab.ns('nic')}", ["NFSLICE_RSH= "], "NFSLICE_RSH")):
        cp = lab.exec("dut", "env", *env, NFSLICE, "migrate", "--name", DOMAIN,
                      "--to", to, "w0", "w1", check=False)
        assert cp.returncode == 2 and want in cp.stderr, describe(cp)
    for mode in ("drain", "copy"):
        cp = lab.exec("dut", "env", "NFSLICE_RSH=ip netns exec",
                      "NFSLICE_REMOTE=/nonexistent/nfslice", NFSLICE, "migrate",
                      "--name", DOMAIN, "--mode", mode, "--to",
                      f"ssh://{lab.ns('nic')}", "w0", "w1", check=False)
        assert cp.returncode == 1 and "nothing changed" in cp.stderr, describe(cp)
        st = json.loads(must(lab.nfslice("dut", "status", "--name", DOMAIN,
                                         "--json")))
        assert st["threshold"] != 65535, st
        assert lab.nfslice("nic", "status", "--name", DOMAIN).returncode == 1


def image_records(data):
    """(index, generation) of every record of a version 2 checkpoint image
    (docs/format.md "Checkpoint file")."""
    hdr, nseq, nrec = (struct.unpack_from("<I", data, o)[0] for o in (12, 24, 28))
    ntseq = struct.unpack_from("<I", data, 80)[0]
    off = hdr + 4 * nseq + 4 * ntseq
    off += -off % 8
    out = []
    for _ in range(nrec):
        index, _pad, ctl = struct.unpack_from("<IIQ", data, off)
        plen = struct.unpack_from("<H", data, off + 24)[0]
        out.append((index, ctl >> 32))
        off += 40 + plen
        off += -off % 8
    return out


def adopt(lab, data, *args, stdin=None):
    """`nfslice adopt` in the NIC with DATA (bytes) on its standard input
    (a pipe), or the file STDIN (a path) there; (exit status, its JSON
    lines, stderr)."""
    cmd = ["ip", "netns", "exec", lab.ns("nic"), str(NFSLICE), "adopt", "--name", DOMAIN,
           *args]
    if stdin is None:
        cp = subprocess.run(cmd, input=data, capture_output=True, timeout=60)
    else:
        with open(stdin, "rb") as f:
            cp = subprocess.run(cmd, stdin=f, capture_output=True, timeout=60)
    lines = [json.loads(x) for x in cp.stdout.decode().splitlines()]
    return cp.returncode, lines, cp.stderr.decode()


def test_adopt_protocol(nicrig, tmp_path):
    """The receiving half of a copy to another host, fed by hand: a
    corrupt image is refused before anything starts; a good one is
    imported, the new instance slices with both keys, the copies named
    stale are freed at once, the rest at the end of the wait, and the
    old key is forgotten."""
    lab = nicrig
    must(lab.nfslice("dut", "attach", "--name", DOMAIN, "--ttl", "0",
                     "--slots", "65536", "d0", "d1"))
    hold_headers(lab, tmp_path, HELD_PORT, HELD_N)
    ckpt = tmp_path / "old.ckpt"
    must(lab.nfslice("dut", "checkpoint", "--name", DOMAIN, "--file", str(ckpt)))
    data = ckpt.read_bytes()
    recs = image_records(data)
    assert len(recs) >= HELD_N, recs
    must(lab.nfslice("nic", "attach", "--name", DOMAIN, "--threshold", "65535",
                     "--ttl", "0", "--slots", "65538", "--nf-port", "h0,h1",
                     "w0", "w1"))
    framed = struct.pack("<Q", len(data)) + data
    bad = bytearray(framed)
    bad[8 + len(data) // 2] ^= 0xff
    rc, lines, err = adopt(lab, bytes(bad), "--threshold", "256")
    assert rc == 1 and [list(x) for x in lines] == [["ready", "slots"]], (lines, err)
    assert "CRC" in err or "crc" in err, err
    rc, lines, err = adopt(lab, framed[:100], "--threshold", "256")
    assert rc == 1 and len(lines) == 1 and "image" in err, (lines, err)
    # An image file others could write is refused before "ready", the fix
    # named (issue 17); one only root can write is read (below).
    stale = recs[:4]
    feed = tmp_path / "adopt.in"
    feed.write_bytes(framed + b"".join(struct.pack("<II", i, g) for i, g in stale))
    feed.chmod(0o646)
    rc, lines, err = adopt(lab, None, "--threshold", "256", stdin=feed)
    assert rc == 1 and lines == [] and err.strip() == (
        f"nfslice: the checkpoint on standard input is writable by group or others "
        f"(mode 0646): chmod go-w {feed}"), (lines, err)
    os.chown(feed, 65534, 65534)
    feed.chmod(0o600)
    rc, lines, err = adopt(lab, None, "--threshold", "256", stdin=feed)
    assert rc == 1 and lines == [] and "is owned by uid 65534" in err, (lines, err)
    os.chown(feed, 0, 0)
    st = json.loads(must(lab.nfslice("nic", "status", "--name", DOMAIN, "--json")))
    assert st["threshold"] == 65535 and lab.stats("nic", DOMAIN)["slots_busy"] == 0
    rc, lines, err = adopt(lab, None, "--threshold", "256", "--wait", "300", stdin=feed)
    assert rc == 0, err
    ready, started, done = lines
    assert ready["ready"] and ready["slots"] >= 65536, lines
    assert started["imported"] == len(recs) and started["conflicts"] == 0, lines
    assert started["received"] == len(data), lines
    assert done["stale_copies"] == len(stale) and done["spliced_new"] == 0, lines
    assert done["busy_left"] == len(recs) - len(stale) and done["expired"] == 0, lines
    st = json.loads(must(lab.nfslice("nic", "status", "--name", DOMAIN, "--json")))
    assert st["threshold"] == 256, st
    assert lab.stats("nic", DOMAIN)["slots_busy"] == 0


# ------------------------------------------------------------ daemon --
RDOMAIN = "mrs"


@pytest.fixture(scope="module")
def rig(rigs):
    """A rig whose DUT slices on both veths, with a TTL (100 ms) the
    daemons scan."""
    rig = rigs(name("mrs"))
    rig.attach("--ttl", "100", "dut0", "dut1", name=RDOMAIN)
    rig.prime_neighbors()
    return rig


def test_daemon_restart_under_traffic(rig, tmp_path):
    """nfsliced killed (SIGKILL) and started again twice while UDP flows
    and a download runs: each daemon scans the domain (its TTL), the
    datapath never notices: every datagram intact, the file's sha256
    right, nothing stale, replayed, refused or evicted."""
    sliced = lambda: rig.stats(RDOMAIN)["sliced"]  # noqa: E731
    before = rig.stats(RDOMAIN)
    cookie = rig.cookies["dut"]
    scans = []
    d = Daemon(tmp_path)
    try:
        with Traffic(rig, tmp_path, rig.env["CLI_IP4"],
                     rig.env["SRV_IP4"]) as load:
            load.start()
            for i in range(3):
                s0 = sliced()
                poll(lambda: sliced() >= s0 + 1000, 10, "1000 more sliced")
                # This daemon scans the domain (every TTL / 4).
                got = poll(lambda: (lambda m: m if m.get(
                    ("nfsliced_ttl_scans_total", None, None), 0) > 0 else
                    None)(scrape(d.port)[0]), 10, "a TTL scan")
                assert got[("nfslice_sliced_total", cookie, RDOMAIN)] > 0
                scans.append(got[("nfsliced_ttl_scans_total", None, None)])
                if i == 2:
                    break
                # Killed: its socket file stays; the next one replaces it.
                assert d.stop(signal.SIGKILL) == -signal.SIGKILL
                s0 = sliced()
                poll(lambda: sliced() >= s0 + 500, 10, "500 sliced without "
                     "a daemon")
                d = Daemon(tmp_path)
            assert load.downloading(), "the download ended before the restarts"
            res = load.finish()
    finally:
        rc = d.stop()
    assert rc == 0, d.text()
    after = settle(lambda: rig.stats(RDOMAIN))
    numbers = f"scans {scans}; traffic {res}; stats {after}"
    got = res["got"]
    assert got["truncated"] == 0 and got["corrupt"] == 0 and got["dup"] == 0, \
        numbers
    # Nothing attaches or detaches XDP here: every datagram arrives, or the
    # receiving socket counted it.
    assert got["good"] + res["socket_drops"] == res["sent"], numbers
    assert res["sha_ok"] and res["curl"][0] == 0, numbers
    for k in ("stale", "bad_token", "replayed", "too_big", "evicted",
              "evicted_ttl"):
        assert after[k] == before[k], numbers
    assert after["sliced"] - before["sliced"] == after["spliced"] - \
        before["spliced"] + after["slots_busy"] - before["slots_busy"], numbers
    # Three daemons served the same socket path, two left it behind.
    assert d.text().count(f"serving {d.sock}") == 3, d.text()


def _nic_entry(lab):
    """`nfslice list --json` (from the host's namespace): the NIC's domain
    entry, or None."""
    cp = run([NFSLICE, "list", "--json"])
    assert cp.returncode == 0, describe(cp)
    for e in json.loads(cp.stdout):
        if e["name"] == DOMAIN and e["netns"]["cookie"] == lab.cookies["nic"]:
            return e
    return None


def _nic_detached(lab):
    """The NIC has no instance: no pins, no XDP program on w0, w1."""
    return (lab.nfslice("nic", "status", "--name", DOMAIN).returncode == 1 and
            all(not lab.link("nic", d).get("xdp") for d in ("w0", "w1")))


def _migrate_hooked(lab, hook):
    """nfslice migrate of DOMAIN to the NIC with NFSLICE_TEST_HOOK=HOOK
    (userspace/lib/nfsl/migrate_steps.c test_hook), started in the DUT; the Popen."""
    return lab.spawn("dut", "env", f"NFSLICE_TEST_HOOK={hook}", NFSLICE,
                     "migrate", "--name", DOMAIN, "--to", lab.ns("nic"),
                     "--nf-port", "h0,h1", "w0", "w1")


def test_killed_migration_holding_instance(nicrig, tmp_path):
    """A migration killed once the new instance is attached holding used to
    leave it attached, reported nowhere. Now: `nfslice list` marks it
    HOLDING with the migration's pid, alive while the migration runs
    (stopped here: gc keeps it), gone once it is killed; then `nfslice gc`
    detaches it in its namespace, and the old instance slices on as
    before. The same kill with nfsliced running: its housekeeping detaches
    it (--gc-interval 1)."""
    lab = nicrig
    must(lab.nfslice("dut", "attach", "--name", DOMAIN, "--ttl", "0",
                     "d0", "d1"))
    mig = _migrate_hooked(lab, "stop-holding")
    poll(lambda: open(f"/proc/{mig.pid}/stat").read().rsplit(")", 1)[1]
         .split()[0] == "T", 10, "the migration stopped at its hook")
    e = _nic_entry(lab)
    want = {"pid": mig.pid, "alive": True, "slicing": False,
            "from_netns_cookie": lab.cookies["dut"]}
    assert e and {k: e["holding"][k] for k in want} == want, e
    cp = run([NFSLICE, "gc", "--json"])
    assert cp.returncode == 0 and json.loads(cp.stdout)["holding"] == [], \
        describe(cp)
    assert not _nic_detached(lab), "gc detached a running migration's instance"
    os.kill(mig.pid, signal.SIGKILL)
    assert mig.wait(timeout=10) == -signal.SIGKILL
    lab.procs.remove(mig)
    e = _nic_entry(lab)
    assert e["holding"]["pid"] == mig.pid and e["holding"]["alive"] is False, e
    cp = run([NFSLICE, "list"])
    assert f"HOLDING for nfslice migrate pid {mig.pid} (gone: nfslice gc " \
        "detaches it)" in cp.stdout, cp.stdout
    cp = run([NFSLICE, "gc", "--dry-run", "--json"])
    assert [(h["name"], h["migration_pid"], h["action"]) for h in
            json.loads(cp.stdout)["holding"]] == \
        [(DOMAIN, mig.pid, "detached")], describe(cp)
    assert not _nic_detached(lab), "gc --dry-run detached it"
    cp = run([NFSLICE, "gc"])
    assert cp.returncode == 0 and f"detached '{DOMAIN}' (ns{lab.cookies['nic']})" \
        f", the holding instance of nfslice migrate pid {mig.pid}, which is " \
        "gone" in cp.stdout, describe(cp)
    assert _nic_detached(lab) and _nic_entry(lab) is None
    st = json.loads(must(lab.nfslice("dut", "status", "--name", DOMAIN,
                                     "--json")))
    assert st["threshold"] == 256 and st["healthy"] is True, st
    # Killed by the hook itself, with nfsliced's housekeeping running.
    cp = lab.exec("dut", "env", "NFSLICE_TEST_HOOK=kill-holding", NFSLICE,
                  "migrate", "--name", DOMAIN, "--to", lab.ns("nic"),
                  "--nf-port", "h0,h1", "w0", "w1", check=False)
    assert cp.returncode == -signal.SIGKILL, describe(cp)
    e = _nic_entry(lab)
    assert e and e["holding"]["alive"] is False, e
    daemon = Daemon(tmp_path, "--gc-interval", "1")
    try:
        poll(lambda: _nic_detached(lab), 15,
             "nfsliced detaching the killed migration's holding instance")
    finally:
        assert daemon.stop() == 0
    assert "is the holding instance of nfslice migrate pid" in daemon.text()
    assert json.loads(must(lab.nfslice("dut", "status", "--name", DOMAIN,
                                       "--json")))["threshold"] == 256
