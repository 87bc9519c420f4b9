# SPDX-License-Identifier: GPL-2.0
"""The nfslice CLI (test_cli.py says what every test of it checks):
capabilities and unprivileged users, list and gc across namespaces. One rig
for the module (cli_fixtures.py)."""
import json
import os
import shutil
import subprocess

import pytest

from nfsl import rig as nfrig
from nfsl.rig import BPFFS, NETNS_DIR, NFSLICE, PY, must, name, poll, run
from cli_fixtures import assert_error, clean, domain, list_json, rig


# ---------------------------------------------------------- capabilities --
@pytest.mark.parametrize("drop, args, missing", [
    ("net_admin", ("attach", "--name", "nocap", "dut0"), "CAP_NET_ADMIN"),
    ("sys_admin", ("attach", "--name", "nocap", "dut0"), "CAP_SYS_ADMIN"),
    ("sys_admin", ("status", "--name", "nocap"), "CAP_SYS_ADMIN"),
    # CAP_SYS_ADMIN stands for CAP_BPF (the kernel's bpf_capable()).
    ("sys_admin,-bpf", ("stats", "--name", "nocap"), "CAP_BPF"),
], ids=["attach-net_admin", "attach-sys_admin", "status-sys_admin",
        "stats-bpf"])
def test_missing_capability_named(clean, drop, args, missing):
    """Root without a capability: refused before anything is done, the
    message names exactly what is missing (no "must run as root")."""
    cp = clean.exec("dut", "setpriv", f"--bounding-set=-{drop}",
                    f"--inh-caps=-{drop}", NFSLICE, *args)
    assert_error(cp, 1, f"nfslice {args[0]}: missing capability {missing} (",
                 "run it as root")
    assert not clean.pin_dir("nocap").exists()
    assert clean.xdp("dut", "dut0") is None


# A user other than root with the capabilities docs/cli.md names (issue 17
# §4): CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN and CAP_DAC_OVERRIDE; through
# `ip netns exec` also CAP_SYS_PTRACE and CAP_SYS_CHROOT.
USER_CAPS = "+bpf,+net_admin,+sys_admin,+dac_override"


def as_user(caps):
    """setpriv arguments: uid/gid 65534 keeping CAPS (effective through
    the ambient set)."""
    return ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            f"--inh-caps={caps}", f"--ambient-caps={caps}")


@pytest.mark.parametrize("via, caps", [
    ("nsenter", USER_CAPS),
    ("netns", USER_CAPS + ",+sys_ptrace,+sys_chroot")])
def test_user_with_documented_caps(clean, via, caps):
    """uid 65534 with the documented capabilities attaches, sees (status,
    stats, list) and detaches a domain; it failed with "cannot lock
    /run/nfslice.lock: Permission denied" and "no domain ... attached"."""
    ns = clean.ns("dut")
    pre = (("nsenter", f"--net=/var/run/netns/{ns}") if via == "nsenter"
           else ("ip", "netns", "exec", ns))

    def user(*args):
        return run([*pre, *as_user(caps), NFSLICE, *args])
    try:
        must(user("attach", "--name", "usr", "dut0"))
        assert clean.status("usr")["interfaces"][0]["name"] == "dut0"
        st = json.loads(must(user("status", "--name", "usr", "--json")))
        assert st["healthy"] is True, st
        assert json.loads(must(user("stats", "--name", "usr", "--json"))
                          )["slots"] == st["slots"]
        assert "usr" in must(user("list"))
        assert must(user("detach", "--name", "usr")) == \
            "nfslice: domain 'usr' detached\n"
    finally:
        if clean.pin_dir("usr").exists():
            clean.detach("usr")


def test_user_without_dac_override_told_the_fix(clean, domain):
    """Without CAP_DAC_OVERRIDE a user other than root is refused before
    anything, told which capability and why: not "no domain attached"
    while one is."""
    domain("usr2", "dut0")
    cp = run(["nsenter", f"--net=/var/run/netns/{clean.ns('dut')}",
              *as_user("+bpf,+net_admin,+sys_admin"), NFSLICE, "stats",
              "--name", "usr2"])
    assert_error(cp, 1, "nfslice stats: missing capability CAP_DAC_OVERRIDE "
                 "(CAP_BPF opens the pinned maps; CAP_DAC_OVERRIDE as a user "
                 "other than root: the lock file /run/nfslice.lock, the bpffs "
                 "directories and the pins are root's and private",
                 "AmbientCapabilities=CAP_BPF CAP_NET_ADMIN CAP_SYS_ADMIN "
                 "CAP_DAC_OVERRIDE with User=")
    assert "no domain" not in cp.stderr


def test_unopenable_pins_are_not_absent(clean, domain):
    """Pins nfslice may not open (EACCES) are a permission error that
    names the fix, never "no domain ... attached": root without
    CAP_DAC_OVERRIDE facing a domain directory of another owner."""
    domain("perm", "dut0")
    d = clean.pin_dir("perm")
    try:
        run(["chown", "65534", d], timeout=10)
        os.chmod(d, 0o700)
        cp = clean.exec("dut", "setpriv", "--inh-caps=-dac_override,"
                        "-dac_read_search,-fowner", "--bounding-set="
                        "-dac_override,-dac_read_search,-fowner",
                        NFSLICE, "stats", "--name", "perm")
        assert_error(cp, 1, "domain 'perm' is attached, but its pins cannot "
                     "be opened: Permission denied", "run nfslice as root, "
                     "or give this user CAP_DAC_OVERRIDE")
        assert "no domain" not in cp.stderr
    finally:
        run(["chown", "0", d], timeout=10)


@pytest.fixture
def spare_ns(clean):
    """Factory: spare_ns(STEM) makes namespace nfrig.name(STEM) with a veth
    pair v0/v1 (up) and returns (name, cookie). Namespaces and the pins of
    their cookies are removed after the test, whatever happened."""
    made = []

    def make(stem):
        ns = name(stem)
        must(run(["ip", "netns", "add", ns]))
        made.append(ns)
        for cmd in (["link", "add", "v0", "type", "veth", "peer", "name",
                     "v1"], ["link", "set", "v0", "up"],
                    ["link", "set", "v1", "up"]):
            must(run(["ip", "-n", ns, *cmd]))
        cookie = nfrig.netns_cookie_of(ns)
        nfrig.COOKIES.add(cookie)
        made.append(cookie)
        return ns, cookie

    yield make
    for x in made:
        if isinstance(x, str):
            if (NETNS_DIR / x).exists():
                run(["ip", "netns", "exec", x, NFSLICE, "detach", "--name",
                     "spare"], timeout=60)
                run(["ip", "netns", "delete", x])
        else:
            # A domain whose namespace went: its pins, by hand (gc would
            # take every gone namespace's, other runs' too).
            shutil.rmtree(BPFFS / "nfslice" / f"ns{x}", ignore_errors=True)


def attach_in(ns, *ifaces, name="spare"):
    """Attach domain NAME in namespace NS (ip netns exec); assert success."""
    must(run(["ip", "netns", "exec", ns, NFSLICE, "attach", "--name", name,
              *ifaces], timeout=60))


def test_list_every_namespace(clean, domain, spare_ns):
    """list shows the domains of every namespace, from any namespace: the
    namespace by cookie and /run/netns name, the interfaces by name
    (resolved inside it), health ok; text and JSON agree."""
    rig = clean
    domain("lst", "dut0", "dut1")
    ns, cookie = spare_ns("cli-lst")
    attach_in(ns, "v0")
    # Seen alike from the DUT and from the host (other runs' domains may
    # come and go meanwhile: only ours are compared).
    seen = list_json(rig)
    host = {d["dir"]: d for d in json.loads(must(run([NFSLICE, "list",
                                                      "--json"])))}
    spare_dir = str(BPFFS / "nfslice" / f"ns{cookie}" / "spare")
    for d in (str(rig.pin_dir("lst")), spare_dir):
        assert seen[d] == host[d]
    dut = seen[str(rig.pin_dir("lst"))]
    assert dut["name"] == "lst" and dut["healthy"] is True, dut
    assert dut["problems"] == [] and dut["complete"] is True
    assert dut["netns"] == {"cookie": rig.cookies["dut"],
                            "inode": os.stat(NETNS_DIR / rig.ns("dut")).st_ino,
                            "name": rig.ns("dut"), "state": "alive",
                            "probe": True, "reachable": True}
    assert [(i["name"], i["present"], i["xdp"], i["tc_egress"])
            for i in dut["interfaces"]] == [("dut0", True, "native", True),
                                            ("dut1", True, "native", True)]
    spare = seen[spare_dir]
    assert spare["netns"]["name"] == ns and spare["netns"]["state"] == "alive"
    assert [i["name"] for i in spare["interfaces"]] == ["v0"]
    # The text form: one line per domain, header first.
    lines = must(rig.nfslice("list")).splitlines()
    assert lines[0].split()[:2] == ["NAME", "NETNS"]
    row = [ln for ln in lines if ln.startswith("lst ")]
    assert len(row) == 1 and f"ns{rig.cookies['dut']} {rig.ns('dut')}" in \
        row[0] and "dut0,dut1" in row[0] and row[0].endswith(" ok"), lines


def wait_gone(rig, d):
    """Poll list until the domain at pin directory D reports its namespace
    gone (the kernel tears a deleted namespace down asynchronously), or
    is no longer listed: gc is host-wide, and another test file's gc may
    have removed it first. True when it is still listed (ours to gc)."""
    def state():
        dom = list_json(rig).get(str(d))
        return dom["netns"]["state"] if dom else "removed"
    return poll(lambda: state() in ("gone", "removed") and state(), 20,
                f"the namespace of {d} to be reported gone",
                interval=0.2) == "gone"


def test_gc_removes_domains_of_deleted_namespaces(clean, domain, spare_ns):
    """A namespace deleted under its domain: its guards hold it (list:
    alive, no name), gc --dry-run removes nothing, gc lets the guards go
    and removes its pins (and the emptied ns<cookie> directory) once the
    namespace is gone; the domains of live namespaces stay whole."""
    rig = clean
    domain("keep", "dut0", "dut1")
    ns, cookie = spare_ns("cli-gc")
    attach_in(ns, "v0", "v1")
    d = BPFFS / "nfslice" / f"ns{cookie}" / "spare"
    assert d.is_dir()
    # Nothing of ours to collect while every namespace lives (another
    # run's gone namespaces may be collected: gc is host-wide).
    out = json.loads(must(rig.nfslice("gc", "--json")))
    assert set(out) == {"dry_run", "removed", "unknown", "holding"}
    assert out["dry_run"] is False
    mine = {str(d), str(rig.pin_dir("keep"))}
    assert not mine & {r["dir"] for r in out["removed"] + out["unknown"]}
    assert d.is_dir()
    must(run(["ip", "netns", "delete", ns]))
    # The domain's netfilter guards (links) hold the namespace: no name, no
    # process, still alive until gc lets them go (docs/design.md).
    # (Another test file's gc, host-wide, may let them go first.)
    held = list_json(rig).get(str(d))
    if held:
        assert held["netns"]["state"] == "alive" and \
            held["netns"]["name"] is None, held
        # --dry-run: nothing done.
        must(rig.nfslice("gc", "--dry-run"))
    out = json.loads(must(rig.nfslice("gc", "--json")))
    entry = {"name": "spare", "dir": str(d), "cookie": cookie}
    if held and entry not in out["removed"] and d.exists():
        # Another file's gc (host-wide) let the guards go between the
        # listing and ours, and the namespace was still exiting (the
        # kernel frees it asynchronously): gc again until it is removed,
        # as the topology scripts' `down` does (CI at 7a4d5e2, c794e17).
        poll(lambda: entry in json.loads(must(rig.nfslice("gc", "--json")))["removed"]
             or not d.exists(), 20, f"gc to remove {d}", interval=0.2)
    elif held:
        assert entry in out["removed"] or not d.exists(), out
    assert not d.exists() and not d.parent.exists()
    # The live domain is untouched and healthy.
    st = rig.status("keep")
    assert st["healthy"] is True
    assert all(os.path.isfile(p) for p in st["pins"].values())
    # And gc is idempotent.
    out = json.loads(must(rig.nfslice("gc", "--json")))
    assert str(d) not in {r["dir"] for r in out["removed"]}


def test_gc_keeps_a_namespace_held_by_a_file_descriptor(clean, spare_ns):
    """A namespace with no name and no process, alive only through an open
    file descriptor: list says alive (not reachable), gc keeps its domain;
    when the descriptor closes, the namespace goes and gc removes it."""
    rig = clean
    ns, cookie = spare_ns("cli-fd")
    attach_in(ns, "v0")
    d = BPFFS / "nfslice" / f"ns{cookie}" / "spare"
    holder = subprocess.Popen(
        [PY, "-c", "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); "
         "print('held', flush=True); sys.stdin.read()", NETNS_DIR / ns],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        must(run(["ip", "netns", "delete", ns]))
        dom = list_json(rig)[str(d)]
        assert dom["netns"]["state"] == "alive", dom
        assert dom["netns"]["reachable"] is False and dom["healthy"] is None
        out = json.loads(must(rig.nfslice("gc", "--json")))
        assert str(d) not in {r["dir"] for r in out["removed"]}, out
        assert d.is_dir()
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    if wait_gone(rig, d):
        out = json.loads(must(rig.nfslice("gc", "--json")))
        assert str(d) in {r["dir"] for r in out["removed"]}, out
    assert not d.exists()
