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
import json
import os
import re
import shutil
import signal
import urllib.error
import urllib.request

import pytest

from nfsl import tap as nftap
from nfload import NFSLICED, Daemon, finish, scrape, udp_endpoints
from nfsl.rig import (BPFFS, COUNTERS, NFSLICE, PY, describe, must, name,
                      netns_cookie_of, poll, run, settle)
from manager_fixtures import DOMAIN, daemon, nfslice_set, rig, sliced


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
