# SPDX-License-Identifier: GPL-2.0
"""The nfslice CLI (test_cli.py says what every test of it checks): status's
health exit code and repair, an orphaned nfslice. One rig for the module
(cli_fixtures.py)."""
import hashlib
import json
import shutil

import pytest

from nfsl.rig import NFSLICE, PY, describe, must, poll
from cli_fixtures import PIN_NAMES, assert_error, clean, domain, list_json, rig


# ------------------------------------------------- health and repair --
HTTP_PORT = 8080   # forwarded by the rig's ACL (scripts/rig.sh)
FILE_BYTES = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def http_file(rig, tmp_path_factory):
    """An HTTP server in the server namespace with an 8 MB random file;
    yields its sha256."""
    proc, sha256 = rig.serve_random_file("srv", tmp_path_factory.mktemp("www"),
                                         FILE_BYTES, "0.0.0.0", HTTP_PORT)
    yield sha256
    rig.stop(proc)


def download(rig, sha256, tmp_path):
    """curl the file through the DUT (sliced on dut1, spliced on dut0);
    assert it arrived whole."""
    out = tmp_path / "blob"
    must(rig.exec("cli", "curl", "-sS", "--fail", "--max-time", "60",
                  "--speed-limit", "100000", "--speed-time", "5", "-o", out,
                  f"http://{rig.env['SRV_IP4']}:{HTTP_PORT}/blob",
                  timeout=90))
    assert hashlib.sha256(out.read_bytes()).hexdigest() == sha256
    out.unlink()


def status_rc(rig, name):
    """(exit status, parsed JSON) of `nfslice status --json` for NAME."""
    cp = rig.nfslice("status", "--name", name, "--json")
    try:
        return cp.returncode, json.loads(cp.stdout)
    except ValueError:
        raise AssertionError(describe(cp)) from None


@pytest.mark.parametrize("damage", ["tcx", "filter", "qdisc"])
def test_status_damaged_and_repair(clean, domain, http_file, tmp_path,
                                   damage):
    """The slicer of dut1 removed by hand (ip link set dev dut1 xdp off)
    and the splicer of dut0 (its TCX attachment; or, attached as the clsact
    fallback with NFSLICE_EGRESS=clsact, tc filter del or the whole clsact
    qdisc): status exits 3 naming both, with the fix; list says DAMAGED;
    repair re-attaches them (splicer first) with the pinned store and
    config, and a download through the DUT is then sliced and arrives
    whole."""
    rig = clean
    st = domain("dmg", "dut0", "dut1",
                env=None if damage == "tcx" else {"NFSLICE_EGRESS": "clsact"})
    download(rig, http_file, tmp_path)
    assert rig.status("dmg")["healthy"] is True
    must(rig.exec("dut", "ip", "link", "set", "dev", "dut1", "xdp", "off"))
    if damage == "tcx":
        rig.tcx_detach("dut", "dut0", st["interfaces"][0]["tc_prog_id"])
    elif damage == "filter":
        must(rig.exec("dut", "tc", "filter", "del", "dev", "dut0", "egress"))
    else:
        must(rig.exec("dut", "tc", "qdisc", "del", "dev", "dut0", "clsact"))
    rc, bad = status_rc(rig, "dmg")
    assert rc == 3 and bad["healthy"] is False, bad
    assert bad["problems"] == ["dut0: splicer missing (tc egress)",
                               "dut1: slicer missing (XDP)"], bad
    assert bad["fix"] == "restore the missing programs with: nfslice " \
        "repair --name dmg"
    text = rig.nfslice("status", "--name", "dmg")
    assert text.returncode == 3 and "health   DAMAGED" in text.stdout
    assert list_json(rig)[st["dir"]]["healthy"] is False
    # The text list row says DAMAGED; list itself exits 0.
    assert "DAMAGED" in must(rig.nfslice("list"))
    before = rig.stats("dmg")
    out = must(rig.nfslice("repair", "--name", "dmg"))
    assert out.splitlines() == [
        "nfslice: splicer re-attached to dut0",
        "nfslice: slicer re-attached to dut1 (XDP native)",
        "nfslice: domain 'dmg' repaired"], out
    after = rig.status("dmg")     # exit 0
    assert after["healthy"] is True and after["problems"] == []
    # The same store and configuration: the pins and counters survived.
    assert after["pins"] == st["pins"]
    assert {k: after[k] for k in ("slots", "threshold", "keep", "expiry")} \
        == {k: st[k] for k in ("slots", "threshold", "keep", "expiry")}
    assert rig.stats("dmg")["sliced"] >= before["sliced"]
    ids = {i["name"]: i for i in after["interfaces"]}
    assert ids["dut1"]["xdp_prog_id"] == rig.xdp("dut", "dut1")["prog"]["id"]
    # Traffic: sliced on dut1 again, spliced on dut0, intact.
    s0 = rig.stats("dmg")
    download(rig, http_file, tmp_path)
    s1 = rig.stats("dmg")
    assert s1["sliced"] - s0["sliced"] > 100, (s0, s1)
    assert s1["stale"] == s1["bad_token"] == 0, s1
    # Nothing left to repair; detach leaves the interfaces bare (the
    # clean fixture checks, the recreated clsact included).
    assert "nothing to repair" in must(rig.nfslice("repair", "--name",
                                                   "dmg"))


def test_status_interface_gone(clean, domain):
    """An interface of the domain deleted: status exits 3 naming it by
    ifindex; repair refuses (exit 1) and says to detach; detach works."""
    rig = clean
    must(rig.exec("dut", "ip", "link", "add", "gone0", "type", "veth",
                  "peer", "name", "gone1"))
    try:
        for dev in ("gone0", "gone1"):
            must(rig.exec("dut", "ip", "link", "set", dev, "up"))
        st = domain("gone", "dut0", "gone0")
        ifindex = st["interfaces"][1]["ifindex"]
    finally:
        rig.exec("dut", "ip", "link", "del", "gone0")
    rc, bad = status_rc(rig, "gone")
    assert rc == 3, bad
    assert bad["interfaces"][1] == {
        "name": None, "ifindex": ifindex, "present": False, "nf_port": False,
        "xdp": None, "xdp_prog_id": 0, "tc_egress": False, "tc_prog_id": 0,
        "egress_hook": "tcx"}
    assert bad["problems"] == [f"ifindex {ifindex}: interface gone "
                               "(deleted, or moved to another network "
                               "namespace)"]
    assert "detach" in bad["fix"]
    assert_error(rig.nfslice("repair", "--name", "gone"), 1,
                 f"ifindex {ifindex}: interface gone",
                 "nfslice detach --name gone")
    rig.detach("gone")


def test_repair_unknown_domain(clean):
    """repair of a domain that is not there: exit 1, the usual message."""
    assert_error(clean.nfslice("repair", "--name", "ghost"), 1,
                 "no domain 'ghost' is attached")


# ------------------------------------------------------ orphaned runs --
ORPHAN_PY = r"""
import os, subprocess, sys, time
out, args = sys.argv[1], sys.argv[2:]
launcher = os.getpid()
pid = os.fork()
if pid:                       # the launcher: waits for the middle only
    os.waitpid(pid, 0)
    sys.exit(0)
os.setsid()
middle = os.getpid()
if os.fork():                 # the middle: exits, orphaning its child
    os._exit(0)
while os.getppid() == middle:
    time.sleep(0.01)
with open(os.path.join(out, "ppid"), "w") as f:
    f.write(f"{os.getppid()} {launcher} {middle}")
cp = subprocess.run(args, capture_output=True, text=True)
for k, v in (("stdout", cp.stdout), ("stderr", cp.stderr),
             ("rc", str(cp.returncode))):
    with open(os.path.join(out, k), "w") as f:
        f.write(v)
os.rename(os.path.join(out, "rc"), os.path.join(out, "done"))
"""


def orphaned(rig, tmp_path, *args, env=None):
    """Run build/nfslice ARGS inside `ip netns exec DUT` as an orphan: a
    double fork, the launcher and `ip netns exec` gone before nfslice
    starts, so no ancestor leads to the host's mount namespace (as under
    a daemon or systemd). ENV is added to its environment. Returns (rc,
    stdout, stderr)."""
    out = tmp_path / "orphan"
    out.mkdir()
    launcher = rig.exec("dut", PY, "-c", ORPHAN_PY, out, NFSLICE, *args,
                        env=env)
    assert launcher.returncode == 0, describe(launcher)
    poll(lambda: (out / "done").exists(), 60, "the orphaned nfslice",
         interval=0.05)
    rc, stdout, stderr, lineage = (
        (out / k).read_text() for k in ("done", "stdout", "stderr", "ppid"))
    shutil.rmtree(out)
    # Its parent is PID 1 or a subreaper: neither of its launchers.
    ppid, launcher_pid, middle = lineage.split()
    assert ppid not in (launcher_pid, middle), lineage
    return int(rc), stdout, stderr


def test_orphaned_nfslice_finds_the_hosts_bpffs(clean, tmp_path):
    """nfslice orphaned inside `ip netns exec` (its own /sys, no bpffs,
    parent PID 1 or a subreaper): attach pins in the host's bpffs, where
    they outlive it; status from another orphan finds them; no "mount a
    bpffs" advice, since one is mounted."""
    rig = clean
    rc, out, err = orphaned(rig, tmp_path, "attach", "--name", "orph",
                            "dut0", "dut1")
    try:
        assert rc == 0, err
        assert "mount" not in err, err
        assert f"pins: {rig.pin_dir('orph')}" in out
        # The orphan's mount namespace is gone; the pins are not.
        assert all((rig.pin_dir("orph") / p).exists() for p in PIN_NAMES)
        rc, out, err = orphaned(rig, tmp_path, "status", "--name", "orph",
                                "--json")
        assert rc == 0, err
        assert json.loads(out)["dir"] == str(rig.pin_dir("orph"))
        assert rig.status("orph")["healthy"] is True
    finally:
        if rig.pin_dir("orph").exists():
            rig.detach("orph")


def test_orphan_without_bpffs_is_told_to_mount(clean, tmp_path):
    """Where there is really no bpffs (NFSLICE_BPFFS names a plain
    directory) the orphan gets the advice to mount one."""
    rc, out, err = orphaned(clean, tmp_path, "status",
                            env={"NFSLICE_BPFFS": "/tmp"})
    assert rc == 1 and out == "", (out, err)
    assert "no bpffs at /tmp" in err and "mount -t bpf bpf /tmp" in err, err
