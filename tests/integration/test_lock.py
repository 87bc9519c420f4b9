# SPDX-License-Identifier: GPL-2.0
"""Concurrent attaches of one domain NAME are serialised (issue #7 §4).

Without the host-wide lock two attaches of one NAME could both pass the
"already attached" check, and the loser's teardown removed the winner's
pins while its programs stayed attached. With it, exactly one attach wins,
the other fails naming the domain, and the winner's domain is whole: pins
present, every program attached, traffic sliced and spliced.
"""
import subprocess

from nfsl.rig import NFSLICE, name

ROUNDS = 5


def test_concurrent_attach_same_name(rigs):
    rig = rigs(name("lock"))
    dut = rig.ns("dut")
    cmd = ["ip", "netns", "exec", dut, NFSLICE, "attach", "--name", "race",
           "dut0", "dut1"]
    for r in range(ROUNDS):
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        results = [(p.wait(timeout=60), *p.communicate()) for p in procs]
        try:
            codes = sorted(rc for rc, _, _ in results)
            assert codes == [0, 1], (r, results)
            loser = next(err for rc, _, err in results if rc == 1)
            assert "domain 'race' is already attached" in loser, loser
            st = rig.status("race")
            for pin, path in st["pins"].items():
                assert rig.pin_dir("race").joinpath(pin).exists(), (r, path)
            for i in st["interfaces"]:
                assert i["xdp"] == "native" and i["tc_egress"] is True, (r, st)
        finally:
            rig.check("dut", NFSLICE, "detach", "--name", "race")
        assert not rig.pin_dir("race").exists()
