# SPDX-License-Identifier: GPL-2.0
"""No way around the splicer at XDP (issue 20 section 4, docs/design.md).

In a libxdp dispatcher the slicer runs last and its XDP_PASS ends the
chain (tests/unit/test_chain.c reads that from the object). What this
kernel allows: it refuses dispatchers (freplace is EPERM,
docs/platform.md), so another XDP program cannot be added next to the
slicer at all; where a kernel takes it, the slicer must be the last of
the dispatcher's programs with no chain call on XDP_PASS. Either way the
sliced flow still arrives whole afterwards.

Topology: nfinv.router(), kernel defaults, per-run namespace names.
"""
from nfinv import SRV4, SRV6, assert_intact, counters, nets, router  # noqa: F401
from nfsl.rig import ROOT

FOREIGN_PASS = ROOT / "build" / ".output" / "foreign_pass.bpf.o"


def test_no_program_after_the_slicer(nets):
    net = nets(router, "chain")
    net.attach("dut0", "dut1", name="chain")
    xdp_before, _ = net.programs("dut", "dut0")
    cp = net.sh("dut", "xdp-loader", "load", "-m", "native", "-p", "/sys/fs/bpf",
                "dut0", str(FOREIGN_PASS), check=False)
    status = net.sh("dut", "xdp-loader", "status", "dut0").stdout
    if cp.returncode != 0:
        # This kernel: no dispatcher, the slicer stays alone.
        xdp_after, _ = net.programs("dut", "dut0")
        assert xdp_after == xdp_before, (xdp_before, xdp_after, cp.stderr)
        assert "nfsl_slicer" in status and "foreign_pass" not in status, status
    else:
        # A kernel with dispatchers: the slicer last, XDP_PASS not chained.
        # xdp-loader status: " =>  PRIO  NAME  ID  TAG  CHAIN-ACTIONS..."
        progs = [ln.split() for ln in status.splitlines()
                 if ln.split()[:1] == ["=>"]]
        assert [f[2] for f in progs][-1] == "nfsl_slicer", status
        assert "XDP_PASS" not in progs[-1][5:], status
        net.sh("dut", "xdp-loader", "unload", "dut0", "--id",
               next(f[3] for f in progs if f[2] == "foreign_pass"), check=False)
    res, sent = net.flow("cli", "srv", [SRV4, SRV6], 7020, 20, 1000, 7)
    assert_intact(res, 40, "after the attempt")
    st = net.stats("chain")
    assert counters(st, "sliced", "spliced") == {"sliced": 40, "spliced": 40}, st
