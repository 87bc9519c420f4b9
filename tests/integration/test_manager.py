# SPDX-License-Identifier: GPL-2.0
"""nfsliced: control protocol, runtime configuration, stop, collection.

The daemon runs on the host (it manages the domains of every namespace)
with its own control socket in a temporary directory (NFSLICE_SOCKET, so a
daemon of the host is never involved), and the domain lives in a rig's
DUT. What is checked (issue 10 §1, §3, §8):
- the protocol: ping, list, get, set, and its errors (bad line, unknown
  op, unknown change, no such domain), one JSON object per line;
- nfslice set through the daemon and, once it stopped, on the pins: the
  same configuration generation across both, --if-gen refusing a stale
  writer and changing nothing;
- a second daemon on the same socket is refused; SIGTERM: exit 0, socket
  gone, the domain still slices and splices;
- a domain whose namespace is deleted is removed by the daemon's gc;
- nfslice upgrade under UDP traffic and a TCP download: new program ids,
  counters kept, every datagram intact, the download's sha256 right, no
  payload stale or replayed;
- checkpoint and restore: payloads parked by one instance of the domain,
  saved, the domain detached and attached again (a new key), restored:
  the headers sliced before splice on the new instance byte-exact; a
  corrupt file, a busy domain are refused;
- runtime changes of threshold, keep, expiry and TTL under UDP traffic:
  every change takes effect at once (threshold above the frame size:
  nothing more sliced), no datagram truncated or corrupt, no payload
  stale, no token refused.
"""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

import nftap
from nfload import (FILE_BYTES, HTTP_PORT, NFSLICED, PORT, RAW_SEND, RECV,
                    SEND, SIZE, Daemon, finish, pcap_frames, scrape,
                    udp_endpoints)
from nfrig import (BPFFS, COUNTERS, NFSLICE, PY, capture_opts, describe,
                   must, name, netns_cookie_of, poll, run, settle)

DOMAIN = "mgr"


@pytest.fixture(scope="module")
def rig(rigs):
    """A rig whose DUT slices on both veths (domain "mgr")."""
    rig = rigs(name("mgr"))
    rig.attach("dut0", "dut1", name=DOMAIN)
    rig.prime_neighbors()
    return rig


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path)
    yield d
    d.stop()


def nfslice_set(rig, env, *args):
    """nfslice set --name mgr ARGS --json in the DUT; CompletedProcess."""
    return rig.nfslice("set", "--name", DOMAIN, *args, "--json",
                       env={**os.environ, **env})


def test_protocol(rig, daemon):
    """ping, list, get, set and the errors of each, exactly."""
    cookie = rig.cookies["dut"]
    pong = daemon.call({"op": "ping"})
    assert pong["ok"] is True and pong["proto"] == 1, pong
    assert pong["pid"] == daemon.p.pid and pong["domains"] >= 1, pong
    doms = daemon.call({"op": "list"})["domains"]
    assert {"netns": cookie, "name": DOMAIN,
            "dir": str(rig.pin_dir(DOMAIN))} in doms, doms
    got = daemon.call({"op": "get", "netns": cookie, "name": DOMAIN})
    assert got["ok"] is True and got["config"]["gen"] == got["gen"], got
    assert got["config"]["slots"] == 4096 and got["config"]["nparts"] == 1, got

    errors = [
        (None, b"not json\n", 2, "a request is one JSON object on one line"),
        ({"op": "frobnicate"}, None, 2, "unknown op 'frobnicate'"),
        ({"op": "get", "name": DOMAIN}, None, 2, "give \"netns\""),
        ({"op": "get", "netns": cookie, "name": "nope"}, None, 1,
         "no domain 'nope' is attached"),
        ({"op": "get", "netns": cookie, "name": "../x"}, None, 2,
         "invalid domain name"),
        ({"op": "set", "netns": cookie, "name": DOMAIN,
          "changes": {"mtu": 3}}, None, 2, "unknown change 'mtu'"),
        ({"op": "set", "netns": cookie, "name": DOMAIN,
          "changes": {"keep": 4000}}, None, 2, "out of range"),
        ({"op": "set", "netns": cookie, "name": DOMAIN,
          "changes": {"events": 2}}, None, 2, "events 0 or 1"),
        ({"op": "set", "netns": cookie, "name": DOMAIN, "changes": {}},
         None, 2, "no change given"),
    ]
    for req, raw, code, msg in errors:
        r = daemon.call(req, raw)
        assert r["ok"] is False and r["code"] == code, (req, r)
        assert msg in r["error"], (req, r)
    # Nothing changed by the refused requests.
    assert daemon.call({"op": "get", "netns": cookie,
                        "name": DOMAIN})["gen"] == got["gen"]


def test_set_through_daemon_then_pins(rig, tmp_path):
    """One generation sequence whoever writes: through the daemon, then
    (daemon stopped by SIGTERM: exit 0, socket gone) on the pins; a writer
    with a stale --if-gen changes nothing."""
    d = Daemon(tmp_path)
    env = {"NFSLICE_SOCKET": d.sock}
    try:
        r1 = json.loads(must(nfslice_set(rig, env, "--threshold", 300)))
        gen = r1["gen"]
        assert (r1["via"], r1["threshold"]) == ("nfsliced", 300), r1
        cp = nfslice_set(rig, env, "--keep", 8, "--if-gen", gen - 1)
        assert cp.returncode == 1, describe(cp)
        assert f"changed since generation {gen - 1} (now {gen})" in cp.stdout, \
            describe(cp)
        r2 = json.loads(must(nfslice_set(rig, env, "--keep", 8, "--if-gen",
                                         gen)))
        assert (r2["via"], r2["gen"], r2["keep"], r2["threshold"]) == \
            ("nfsliced", gen + 1, 8, 300), r2
        r2e = json.loads(must(nfslice_set(rig, env, "--events", "on")))
        assert (r2e["via"], r2e["gen"], r2e["events"], r2e["keep"]) == \
            ("nfsliced", gen + 2, True, 8), r2e
        assert rig.status(DOMAIN)["events"] is True
    finally:
        rc = d.stop()
    assert rc == 0, d.text()
    assert not os.path.exists(d.sock)
    assert "stopping; the domains keep working" in d.text()
    r3 = json.loads(must(nfslice_set(rig, env, "--expiry", 3, "--ttl", 20,
                                     "--threshold", 256, "--keep", 0)))
    assert (r3["via"], r3["gen"], r3["expiry"], r3["ttl_ms"], r3["events"]) \
        == ("pins", gen + 3, 3, 20, True), r3
    cp = nfslice_set(rig, env, "--expiry", 2, "--if-gen", gen)
    assert cp.returncode == 1 and "read it again and retry" in cp.stdout, \
        describe(cp)
    r4 = json.loads(must(nfslice_set(rig, env, "--expiry", 2, "--ttl", 10,
                                     "--events", "off")))
    assert (r4["gen"], r4["expiry"], r4["events"]) == (gen + 4, 2, False), r4


def test_bad_arguments(rig):
    """Usage errors name the problem, exit 2, change nothing."""
    for args, msg in ((["--keep", 500], "--keep"),
                      (["--expiry", 0], "--expiry"),
                      ([], "nothing to change")):
        cp = rig.nfslice("set", "--name", DOMAIN, *args)
        assert cp.returncode == 2 and msg in cp.stderr, describe(cp)
    cp = run([NFSLICED, "--log-level", "loud"])
    assert cp.returncode == 2 and "--log-level" in cp.stderr, describe(cp)


def test_foreign_layout_left_alone(rig, daemon):
    """A domain whose maps another build made with other struct sizes
    (here: a config of 4 bytes more) is refused by name, never read into
    this build's structs: nfslice status says so and exits 1; nfsliced
    leaves it alone (a warning), serves and scrapes the others, and does
    not crash."""
    fake = rig.pin_dir("otherbuild")
    specs = {"store": ("array", 4, 64, 64), "config": ("array", 4, None, 1),
             "counters": ("percpu_array", 4, 8 * len(COUNTERS), 1),
             "cursor": ("array", 4, 64, 1)}
    cfg_size = json.loads(must(run(["bpftool", "-j", "map", "show", "pinned",
                                    str(rig.pin_dir(DOMAIN) / "config")])))[
        "bytes_value"]
    fake.mkdir()
    try:
        for pin, (kind, k, v, n) in specs.items():
            must(run(["bpftool", "map", "create", str(fake / pin), "type",
                      kind, "key", str(k), "value", str(v or cfg_size + 4),
                      "entries", str(n), "name", f"nfsl_{pin}"]))
        cp = rig.nfslice("status", "--name", "otherbuild")
        assert cp.returncode == 1, describe(cp)
        assert "attached by an nfslice whose maps have another layout" in \
            cp.stderr, describe(cp)
        poll(lambda: "otherbuild: attached by an nfslice whose maps have "
             "another layout" in daemon.text(), 10, "nfsliced's warning")
        metrics, text = scrape(daemon.port)
        cookie = rig.cookies["dut"]
        assert metrics[("nfslice_domain_readable", cookie, "otherbuild")] \
            == 0, text
        assert metrics[("nfslice_domain_readable", cookie, DOMAIN)] == 1
        assert daemon.call({"op": "ping"})["ok"] is True
    finally:
        shutil.rmtree(fake, ignore_errors=True)
    assert daemon.p.poll() is None, daemon.text()


def test_second_daemon_refused(daemon):
    """Another nfsliced on the same socket exits 1 and says why; the first
    keeps serving."""
    cp = run([NFSLICED, "--socket", daemon.sock], timeout=10)
    assert cp.returncode == 1, describe(cp)
    assert f"another nfsliced serves {daemon.sock}" in cp.stderr, describe(cp)
    assert daemon.call({"op": "ping"})["ok"] is True


def test_gc_removes_gone_namespace(tmp_path):
    """A domain whose namespace is deleted is removed by the daemon (its
    namespace probe says the namespace is gone); the log says so."""
    ns = name("mgrgc")
    d = Daemon(tmp_path, "--gc-interval", "1")
    pins = None
    try:
        must(run(["ip", "netns", "add", ns]))
        must(run(["ip", "-n", ns, "link", "add", "g0", "type", "veth",
                  "peer", "name", "g1"]))
        must(run(["ip", "-n", ns, "link", "set", "g0", "up"]))
        must(run(["ip", "netns", "exec", ns, NFSLICE, "attach", "--name",
                  "gone", "g0"]))
        cookie = netns_cookie_of(ns)
        pins = BPFFS / "nfslice" / f"ns{cookie}" / "gone"
        assert pins.is_dir()
        must(run(["ip", "netns", "del", ns]))
        poll(lambda: not pins.exists(), 15, f"{pins} removed by nfsliced")
        assert f"removed domain 'gone' of a network namespace that is gone " \
               f"(ns{cookie})" in d.text(), d.text()
    finally:
        d.stop()
        run(["ip", "netns", "del", ns])
        if pins is not None and pins.exists():
            run(["rm", "-rf", str(pins)])


def sliced(rig):
    return rig.stats(DOMAIN)["sliced"]


def test_reconfigure_under_traffic(rig, daemon):
    """threshold, keep, expiry and TTL changed through the daemon while
    4000 datagrams/s of 1200 B cross the DUT: each change holds at once,
    nothing truncated, corrupt, stale or refused."""
    cookie = rig.cookies["dut"]

    def change(**ch):
        r = daemon.call({"op": "set", "netns": cookie, "name": DOMAIN,
                         "changes": ch})
        assert r["ok"] is True, r
        return r

    change(threshold=256, keep=0, expiry=2, ttl_ms=10)
    before = rig.stats(DOMAIN)
    cli, srv = udp_endpoints(rig)
    try:
        os.killpg(cli.pid, signal.SIGUSR1)
        s0 = sliced(rig)
        poll(lambda: sliced(rig) >= s0 + 500, 10, "500 datagrams sliced")
        for ch in ({"keep": 64}, {"expiry": 5}, {"ttl_ms": 50},
                   {"keep": 0, "expiry": 1}):
            change(**ch)
            s0 = sliced(rig)
            poll(lambda: sliced(rig) >= s0 + 300, 10,
                 f"300 datagrams sliced after {ch}")
        # Above the frame size: nothing more is sliced, from now on.
        change(threshold=9000)
        s_stop = settle(lambda: sliced(rig), timeout=3)
        small0 = rig.stats(DOMAIN)["skipped_small"]
        poll(lambda: rig.stats(DOMAIN)["skipped_small"] >= small0 + 500, 10,
             "500 datagrams passed below the new threshold")
        assert sliced(rig) == s_stop
        change(threshold=256)
        poll(lambda: sliced(rig) >= s_stop + 300, 10,
             "slicing again after threshold 256")
        os.killpg(cli.pid, signal.SIGUSR2)
        rep_cli, rep_srv = finish(cli), finish(srv)
    finally:
        for p in (cli, srv):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    after = settle(lambda: rig.stats(DOMAIN))
    got = nftap.summarize(rep_srv, [1])
    sent = rep_cli["sent"]["1"]
    numbers = f"sent {sent}, received {got}, stats {after}"
    assert got["truncated"] == 0 and got["corrupt"] == 0, numbers
    assert got["good"] >= 0.99 * sent, numbers
    for k in ("stale", "bad_token", "replayed", "too_big"):
        assert after[k] == before[k], numbers
    assert after["evicted"] == before["evicted"], numbers


def check_prometheus_conventions(text):
    """TEXT (a scrape) follows Prometheus' naming conventions
    (prometheus.io/docs/practices/naming): every counter family ends in
    _total and nothing else does; units are base units (seconds, bytes),
    never micro-, milli- or kilo- ones; every family has HELP and TYPE."""
    types = dict(re.findall(r"^# TYPE (\w+) (\w+)$", text, re.M))
    helps = set(re.findall(r"^# HELP (\w+) ", text, re.M))
    assert types and set(types) == helps, (types, helps)
    for name, kind in types.items():
        assert (kind == "counter") == name.endswith("_total"), (name, kind)
        assert not re.search(r"_(micro|milli|nano|kilo|mega)?(seconds|bytes)"
                             r"|_(us|ms|ns|kb|mb)(_|$)", name.replace(
                                 "_seconds", "").replace("_bytes", "")), name
        assert not re.search(r"(micro|milli|nano)seconds|kilobytes|megabytes",
                             name), name
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        fam = re.match(r"\w+", line)[0]
        base = re.sub(r"_(bucket|sum|count)$", "", fam)
        assert fam in types or base in types, f"no TYPE for {line!r}"


def test_metrics_match_stats(rig, daemon):
    """After traffic, /metrics shows every counter of `nfslice stats`
    with the same value, the occupancy and the configuration; other paths
    are 404."""
    cookie = rig.cookies["dut"]
    cli, srv = udp_endpoints(rig)
    try:
        os.killpg(cli.pid, signal.SIGUSR1)
        s0 = sliced(rig)
        poll(lambda: sliced(rig) >= s0 + 500, 10, "500 datagrams sliced")
        os.killpg(cli.pid, signal.SIGUSR2)
        finish(cli), finish(srv)
    finally:
        for p in (cli, srv):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    st = settle(lambda: rig.stats(DOMAIN))
    cfg = daemon.call({"op": "get", "netns": cookie, "name": DOMAIN})["config"]
    got, text = scrape(daemon.port)
    st2 = rig.stats(DOMAIN)
    counters = [k for k, v in st.items() if isinstance(v, int) and
                (f"nfslice_{k}_total", cookie, DOMAIN) in got]
    # The datapath's counters and the manager's (evicted_ttl, ...).
    assert len(counters) >= 25 and "evicted_ttl" in counters, (st, text)
    # Stray frames (IPv6 neighbour discovery: unparsed) may move a counter
    # between the reads: the scrape lies within the stats around it, and
    # is equal to them where they agree.
    for k in counters:
        assert st[k] <= got[(f"nfslice_{k}_total", cookie, DOMAIN)] <= st2[k], \
            (k, st, st2, text)
    assert st["sliced"] == st2["sliced"] and st["spliced"] == st2["spliced"]
    assert got[("nfslice_slots_busy", cookie, DOMAIN)] == st["slots_busy"]
    # The splicer's residency histogram: each CPU's every 8th splice since
    # attach, in cumulative log2 buckets of us.
    # In seconds (Prometheus' base unit): le 0, 1e-6, 3e-6, ... (2^30 - 1)
    # us, +Inf.
    ns = rig.ns("dut")
    buckets = [(float(m[1]), int(m[2])) for m in re.finditer(
        r'nfslice_residency_seconds_bucket\{netns="%s",netns_cookie="%d",'
        r'domain="%s",le="([^"]+)"\} (\d+)' % (ns, cookie, DOMAIN), text)]
    assert len(buckets) == 32 and buckets[-1][0] == float("inf"), text
    assert [b[0] for b in buckets[:-1]] == \
        [round(((1 << i) - 1) / 1e6, 6) for i in range(31)], buckets
    assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), buckets
    count = got[("nfslice_residency_seconds_count", cookie, DOMAIN)]
    assert count == buckets[-1][1] > 0, (buckets, st)
    ncpus = os.cpu_count()
    assert st["spliced"] - 8 * ncpus < 8 * count <= st["spliced"], (count, st)
    assert got[("nfslice_residency_seconds_sum", cookie, DOMAIN)] >= 0
    assert got[("nfslice_ttl_seconds", cookie, DOMAIN)] == \
        cfg["ttl_ms"] / 1000
    # The namespace by its name under /run/netns, beside its cookie.
    assert (f'nfslice_slots_busy{{netns="{ns}",netns_cookie="{cookie}",'
            f'domain="{DOMAIN}"}}') in text, text
    check_prometheus_conventions(text)
    assert got[("nfslice_slots", cookie, DOMAIN)] == st["slots"]
    assert got[("nfslice_threshold_bytes", cookie, DOMAIN)] == cfg["threshold"]
    assert got[("nfslice_config_generation", cookie, DOMAIN)] == cfg["gen"]
    assert got[("nfslice_domain_readable", cookie, DOMAIN)] == 1
    assert got[("nfsliced_requests_total", None, None)] == 1
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/other",
                               timeout=10)
    assert e.value.code == 404


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
    www = tmp_path / "www"
    www.mkdir()
    data = os.urandom(FILE_BYTES)
    (www / "blob").write_bytes(data)
    http = rig.spawn("srv", PY, "-m", "http.server", HTTP_PORT, "--bind",
                     rig.env["SRV_IP4"], "--directory", www)
    rig.wait_listen("srv", HTTP_PORT)
    before = rig.stats(DOMAIN)
    ids = [prog_ids(rig)]
    cli, srv = udp_endpoints(rig)
    out = tmp_path / "blob"
    # A slow download (2 MB/s: about 12 s), so the upgrades (4-5 s)
    # happen during it.
    t0 = time.monotonic()
    curl = rig.spawn("cli", "curl", "-sS", "--fail", "--max-time", "60",
                     "--limit-rate", "2M", "-o", out,
                     f"http://{rig.env['SRV_IP4']}:{HTTP_PORT}/blob",
                     stderr=subprocess.PIPE)
    try:
        os.killpg(cli.pid, signal.SIGUSR1)
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
        poll(lambda: sliced(rig) >= s0 + 1000, 10, "sliced after upgrade")
        assert curl.poll() is None, \
            f"the download ended before the upgrades: after " \
            f"{time.monotonic() - t0:.1f} s, {out.stat().st_size} B"
        os.killpg(cli.pid, signal.SIGUSR2)
        rep_cli, rep_srv = finish(cli), finish(srv)
        assert curl.wait(timeout=60) == 0, curl.stderr.read()
    finally:
        for p in (cli, srv, curl):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        rig.stop(http)
    assert hashlib.sha256(out.read_bytes()).digest() == \
        hashlib.sha256(data).digest()
    after = settle(lambda: rig.stats(DOMAIN))
    got = nftap.summarize(rep_srv, [1])
    sent = rep_cli["sent"]["1"]
    numbers = f"ids {ids}; sent {sent}, received {got}, " \
              f"socket drops {rep_srv['socket_drops']}; stats {after}"
    for a, b in zip(ids, ids[1:]):
        for dev in ("dut0", "dut1"):
            assert a[dev][0] != b[dev][0] and a[dev][1] != b[dev][1], numbers
    assert got["truncated"] == 0 and got["corrupt"] == 0, numbers
    assert got["good"] + rep_srv["socket_drops"] == sent, numbers
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
    dump = rig.spawn("dut", "tcpdump", *capture_opts(CKPT_N), "-i", "dut0",
                     "-U", "-w", pcap, "-c", CKPT_N, "-Q", "in",
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
