# SPDX-License-Identifier: GPL-2.0
"""NFs that change what the splicer looks at (issue 7 section 1 and 2).

- An NF that re-marks DSCP (a QoS marker, nftables `ip dscp set cs1`): the
  splicer recognises a sliced packet by its token, not by DSCP 63, so the
  payload comes back, and the receiver sees the NF's marking (the original
  DSCP is restored only where the NF left 63).
- An NF that clears an IPv4 UDP checksum to 0 (legal: no checksum): the
  spliced datagram keeps 0 and the receiver accepts it whole.
- Conntrack on kernel defaults (nf_conntrack_tcp_be_liberal=0): attach sets
  be_liberal to 1 in the domain's namespace and detach restores the old
  value, so sliced TCP through NAT works (20 MB HTTP downloads and
  uploads, sha256).

Topologies: nfinv.router() (client - DUT with firewall + NAT - server),
kernel defaults, per-run namespace names.
"""
import hashlib
import os

import pytest

from nfinv import (HERE, SRV4, SRV6, assert_intact, counters,  # noqa: F401
                   nets, router)
from nfsl.rig import PY, describe

N = 10
SIZE = 1000
PORT = 7002
AF11, CS1 = 10 << 2, 8 << 2     # TOS / traffic class bytes (ECN 0)


@pytest.mark.parametrize("hook", [None, "forward", "postrouting"],
                         ids=["no-remark", "remark-forward",
                              "remark-postrouting"])
def test_dscp_remarked_by_nf(nets, hook):
    """The client marks AF11; an nftables rule in HOOK re-marks CS1 (or
    nothing does). Every datagram arrives whole with the NF's DSCP (AF11
    when nobody re-marked: the splicer restored it)."""
    net = nets(router, "dscp")
    if hook:
        net.nft("dut", f"""
table inet nfiv_qos {{
    chain remark {{
        type filter hook {hook} priority 10; policy accept;
        udp dport {PORT} ip dscp set cs1
        udp dport {PORT} ip6 dscp set cs1
    }}
}}
""")
    net.attach("dut0", "dut1", name="dscp")
    res, _ = net.flow("cli", "srv", [SRV4, SRV6], PORT, N, SIZE, 21,
                      send_opts=("--tos", AF11))
    assert_intact(res, 2 * N, f"DSCP re-marked in {hook}")
    want = CS1 if hook else AF11
    assert res["tos"] == {str(want): 2 * N}, \
        f"TOS bytes received {res['tos']}, want {want} on all {2 * N}"
    st = net.stats("dscp")
    assert counters(st, "sliced", "spliced", "bad_token", "stale") == \
        {"sliced": 2 * N, "spliced": 2 * N, "bad_token": 0, "stale": 0}, st
    assert st["slots_busy"] == 0, st


def test_udp_checksum_cleared_by_nf(nets):
    """An nftables rule clears the IPv4 UDP checksum of the (sliced)
    datagrams after NAT. The spliced datagrams leave with checksum 0 and
    the server accepts every one whole. The server's veth does not verify
    checksums (it marks received packets CHECKSUM_UNNECESSARY), so the
    checksum field on the wire (AF_PACKET on srv0) is what shows the
    defect: today's splicer writes a non-zero, wrong checksum that a
    receiver behind a real wire drops."""
    net = nets(router, "csum")
    net.nft("dut", f"""
table ip nfiv_csum {{
    chain clear {{
        type filter hook postrouting priority 200; policy accept;
        udp dport {PORT} udp checksum set 0
    }}
}}
""")
    net.attach("dut0", "dut1", name="csum")
    errs0 = net.snmp("srv")["InCsumErrors"]
    res, _ = net.flow("cli", "srv", [SRV4], PORT, N, SIZE, 22, sniff="srv0")
    errs = net.snmp("srv")["InCsumErrors"] - errs0
    assert_intact(res, N,
                  f"UDP checksum cleared (server InCsumErrors +{errs})")
    assert errs == 0
    assert res["wire"] == {"frames": N, "zero": N, "bad": 0}, \
        f"UDP checksums arriving on srv0 (want all {N} zero): {res['wire']}"
    st = net.stats("csum")
    assert counters(st, "sliced", "spliced") == {"sliced": N, "spliced": N}, st


# ------------------------------------------------------- conntrack liberal --
LIBERAL = "net.netfilter.nf_conntrack_tcp_be_liberal"
HTTP_PORT, SINK_PORT = 8080, 8081
FILE_BYTES = 20 * 1024 * 1024
# curl gives up when a transfer stalls (under 200 kB/s for 3 s): a stalled
# TCP connection fails the test in seconds instead of at a timeout.
CURL = ("curl", "-sS", "--fail", "--max-time", "20", "--speed-limit",
        "200000", "--speed-time", "3")


@pytest.fixture
def http_net(nets, tmp_path):
    """A router topology whose server serves a 20 MB random file over
    HTTP and takes uploads (nfinv.py httpsink), both dual stack;
    (net, path of the file, its sha256)."""
    net = nets(router, "http")
    data = os.urandom(FILE_BYTES)
    blob = tmp_path / "blob"
    blob.write_bytes(data)
    net.spawn("srv", PY, "-m", "http.server", HTTP_PORT, "--bind", "::",
              "--directory", tmp_path, quiet=True)
    net.spawn("srv", PY, HERE, "httpsink", SINK_PORT, quiet=True)
    net.wait_listen("srv", HTTP_PORT, proto="tcp")
    net.wait_listen("srv", SINK_PORT, proto="tcp")
    return net, blob, hashlib.sha256(data).hexdigest()


def test_http_through_nat_on_default_conntrack(http_net, tmp_path):
    """be_liberal left at the kernel default (0) by the test: 20 MB HTTP
    downloads and uploads through NAT + slicing complete intact (IPv4 and
    IPv6, sha256); be_liberal is 0 before attach, 1 while attached, 0
    after detach.

    The uploads are what slicing touches: the client's segments go to the
    server's address and are sliced, so conntrack sees the server ACK
    data it never saw whole (strict window tracking would mark those ACKs
    invalid and the firewall drops them). The download's segments go to
    the masquerade address, the DUT's own before de-NAT, and pass
    unsliced (skipped_local)."""
    net, blob, sha = http_net
    before = net.sysctl("dut", LIBERAL)
    net.attach("dut0", "dut1", name="http")
    during = net.sysctl("dut", LIBERAL)
    out = tmp_path / "got"
    for host in (SRV4, f"[{SRV6}]"):
        cp = net.sh("cli", *CURL, "-o", out,
                    f"http://{host}:{HTTP_PORT}/{blob.name}", check=False,
                    timeout=40)
        size = out.stat().st_size if out.exists() else 0
        assert cp.returncode == 0, \
            f"download from {host}: {size} of {FILE_BYTES} B\n{describe(cp)}"
        assert size == FILE_BYTES
        assert hashlib.sha256(out.read_bytes()).hexdigest() == sha
        out.unlink()
    sliced0 = net.stats("http")["sliced"]
    for host in (SRV4, f"[{SRV6}]"):
        cp = net.sh("cli", *CURL, "-H", "Expect:", "-T", blob,
                    f"http://{host}:{SINK_PORT}/up", check=False, timeout=40)
        assert cp.returncode == 0, f"upload to {host}:\n{describe(cp)}"
        assert cp.stdout.split() == [str(FILE_BYTES), sha], \
            f"upload to {host}: the server got {cp.stdout.strip()}"
    st = net.stats("http")
    assert st["sliced"] - sliced0 > 2 * FILE_BYTES // 1500, \
        f"the uploads were not sliced: {st}"
    assert st["stale"] == 0, st
    net.detach("http")
    after = net.sysctl("dut", LIBERAL)
    assert (before, during, after) == ("0", "1", "0"), \
        f"{LIBERAL}: before attach {before}, attached {during}, after {after}"


def test_no_ct_liberal_opt_out(nets):
    """attach --no-ct-liberal leaves be_liberal alone (0 stays 0)."""
    net = nets(router, "nolib")
    assert net.sysctl("dut", LIBERAL) == "0"
    net.attach("--no-ct-liberal", "dut0", "dut1", name="nolib")
    assert net.sysctl("dut", LIBERAL) == "0"
    net.detach("nolib")
    assert net.sysctl("dut", LIBERAL) == "0"
