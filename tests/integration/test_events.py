# SPDX-License-Identifier: GPL-2.0
"""Drop events through the CLI (issue 10 section 4): `nfslice events`.

The datapath's records are checked field by field under BPF_PROG_TEST_RUN
(tests/unit/test_events.c); here the pinned ring buffer, `attach
--events`, `set --events on|off` and the printed lines, on a rig with
kernel defaults. The domain holds dut0 only, so the client's datagrams,
routed out of dut1, leave the domain: each is passed unsliced and named
skipped_route. N of them give exactly N events; with events off, none (a
marker datagram of another size, sent after events are on again, is the
next event: nothing of the N was written); the counters agree.
"""
import json
import subprocess

import pytest

from nfsl.rig import NFSLICE, PY, must, name, poll

DOMAIN = "ev"
N = 25
SIZE = 1200         # UDP payload bytes: 1242 B frames, over the threshold
MARK = 1000         # the marker's payload: 1042 B frames
PORT = 5201         # the rig's ACL forwards UDP 5201
SPORT = 40111

SEND = """
import socket, sys
n, size, dst, port, sport = sys.argv[1:]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sport)))
for _ in range(int(n)):
    s.sendto(b"x" * int(size), (dst, int(port)))
"""


@pytest.fixture(scope="module")
def rig(rigs):
    rig = rigs(name("evt"))
    rig.prime_neighbors()
    return rig


def send(rig, n, size):
    rig.check("cli", PY, "-c", SEND, str(n), str(size), rig.env["SRV_IP4"],
              str(PORT), str(SPORT))


def events(rig, *args):
    """`nfslice events --name DOMAIN ARGS` in the DUT, as a Popen."""
    return rig.spawn("dut", NFSLICE, "events", "--name", DOMAIN, *args,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_events_name_what_the_domain_skips(rig):
    rig.attach("dut0", name=DOMAIN, opts=("--events",))
    try:
        assert rig.status(DOMAIN)["events"] is True
        before = rig.stats(DOMAIN)
        send(rig, N, SIZE)
        poll(lambda: rig.stats(DOMAIN)["skipped_route"] >=
             before["skipped_route"] + N, 10, f"{N} route skips")
        # The ring keeps what was written before a reader came.
        p = events(rig, "--json", "--count", str(N))
        out, err = p.communicate(timeout=30)
        assert p.returncode == 0, err
        got = [json.loads(line) for line in out.splitlines()]
        assert len(got) == N, out
        for e in got:
            assert {k: e[k] for k in ("ifname", "reason", "proto", "src",
                                      "sport", "dst", "dport", "len", "slot",
                                      "gen")} == {
                "ifname": "dut0", "reason": "skipped_route", "proto": "udp",
                "src": rig.env["CLI_IP4"], "sport": SPORT,
                "dst": rig.env["SRV_IP4"], "dport": PORT,
                "len": 14 + 20 + 8 + SIZE, "slot": 0, "gen": 0}, e
        ts = [e["ts_ns"] for e in got]
        assert ts == sorted(ts)

        # Off: the same skips, counted, not written.
        cp = rig.nfslice("set", "--name", DOMAIN, "--events", "off", "--json")
        assert json.loads(must(cp))["events"] is False
        mid = rig.stats(DOMAIN)
        send(rig, N, SIZE)
        poll(lambda: rig.stats(DOMAIN)["skipped_route"] >=
             mid["skipped_route"] + N, 10, f"{N} more route skips")
        must(rig.nfslice("set", "--name", DOMAIN, "--events", "on"))
        send(rig, 1, MARK)
        p = events(rig, "--count", "1")
        out, err = p.communicate(timeout=30)
        assert p.returncode == 0, err
        line = out.strip()
        assert " dut0 " in line and " skipped_route " in line and \
            f" {14 + 20 + 8 + MARK} B " in line, line
        assert "1 events; 0 lost" in err, err

        after = rig.stats(DOMAIN)
        assert after["skipped_route"] - before["skipped_route"] == 2 * N + 1
        assert after["events_lost"] == 0
        assert after["sliced"] == before["sliced"]
    finally:
        rig.detach(DOMAIN)


def test_events_refuses_what_it_cannot_read(rig):
    cp = rig.nfslice("events", "--name", "nosuch")
    assert cp.returncode != 0
    assert "nosuch" in cp.stderr, cp.stderr
    cp = rig.nfslice("set", "--name", "nosuch", "--events", "maybe")
    assert cp.returncode != 0 and "maybe" in cp.stderr, cp.stderr
