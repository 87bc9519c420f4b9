# SPDX-License-Identifier: GPL-2.0
"""The Python helpers as one package (issue 18 item 4): nfsl's counter
names come from include/nfsl_structs.h, and no Python file edits sys.path
or has bench import the tests. No rig, no root."""
import re
import subprocess

import pytest

from nfsl import counters
from nfsl.rig import ROOT


def test_xmacro_reads_names_in_order():
    text = ("#define NFSL_A(X) \\\n"
            "\tX(one)   /* first, X(not_me) */ \\\n"
            "\t         /* a comment line */   \\\n"
            "\tX(TWO, two) /* upper, lower */\n"
            "#define NFSL_B 3\n")
    assert counters.xmacro(text, "NFSL_A") == ("one", "two")


def test_xmacro_missing_names_the_macro():
    with pytest.raises(RuntimeError, match=r"no #define NFSL_NOPE\(X\)"):
        counters.xmacro("#define NFSL_A(X) X(a)\n", "NFSL_NOPE")


def test_counters_are_the_headers():
    """The header's lists, first and last names included (a parser that
    lost a continuation line or a comment would miss them)."""
    assert counters.COUNTERS[:2] == ("sliced", "spliced")
    assert counters.COUNTERS[-1] == "escaped_dropped"
    assert len(counters.COUNTERS) == 27
    assert counters.MGR_COUNTERS == ("evicted_ttl", "ttl_scans", "ttl_walked",
                                     "ttl_overrun", "ttl_raced")
    assert counters.TENANT_COUNTERS == ("attempts", "sliced", "skipped_quota",
                                        "evicted")


def _python_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "*.py"], check=True,
                         capture_output=True, text=True).stdout.split()
    return [ROOT / f for f in out]


def test_no_sys_path_edits():
    bad = [str(f.relative_to(ROOT)) for f in _python_files()
           if re.search(r"sys\.path\.(insert|append|extend)\(|"
                        r"sys\.path\s*(\+?=|\[[^]]*\]\s*=)", f.read_text())]
    assert bad == [], (f"{bad} edit sys.path: import nfsl instead "
                       f"(scripts/nfsl/__init__.py says how it is found)")


def test_bench_never_imports_tests():
    bad = [str(f.relative_to(ROOT)) for f in _python_files()
           if f.relative_to(ROOT).parts[0] in ("bench", "scripts")
           and re.search(r"^\s*(from|import)\s+(nfload|nfxsk|nfpark|nfinv|"
                         r"conftest|test_)|[\"']tests[\"']\s*[/,]\s*"
                         r"[\"']integration", f.read_text(), re.M)]
    assert bad == [], (f"{bad} reach into tests/: move the helper into "
                       f"scripts/nfsl")


def test_libbpf_errors_name_the_call():
    """A failed libbpf call raises OSError with its errno and names the
    call (no program has id 2**32 - 1)."""
    from nfsl import libbpf
    with pytest.raises(OSError, match=r"bpf_prog_get_fd_by_id\(4294967295\)"
                       ) as e:
        libbpf.tcx_detach(1, 2**32 - 1)
    assert e.value.errno == 2


def test_ndr_bisect_brackets_and_retries():
    """nfsl.ndr.bisect (exp_xsk, exp_nf): a receiver that is lossless up
    to 1000 frames/s, whose first failure is repeated once on request."""
    from nfsl import ndr
    tried = []

    def attempt(mid, lo):
        tried.append(round(mid))
        return {"rate": mid, "pass": mid <= 1000}

    lo, hi, best, fail = ndr.bisect(100, 10000, 6, attempt, "rate",
                                    may_retry=lambda r: True, retries=1)
    assert lo <= 1000 < hi and hi / lo == pytest.approx(100 ** (1 / 64))
    assert best["rate"] == lo and fail["rate"] == hi and "retried" not in fail
    assert tried[:3] == [1000, 3162, 3162]       # the failure, then once more
    assert len(tried) == 7
    assert ndr.passes(0.0009) and not ndr.passes(0.001)
    assert not ndr.passes(None)


FLOWPORT = ROOT / "build" / "nfslice-bench-flowport"


@pytest.mark.parametrize("src,dst,n,avoid,ports", [
    ("10.211.3.2", "10.211.4.2", 4, (1024, 1088), [20003, 20005, 20000, 20001]),
    ("10.211.1.2", "10.211.2.2", 2, (20000, 20010), [20014, 20010]),
])
def test_flowport_is_the_steering_hash(src, dst, n, avoid, ports):
    """bench/xsk_rig.py's flows per worker come from include/nfsl_flow.h
    through build/nfslice-bench-flowport, not a copy of the hash; the
    expected ports are those of the independent Python model of
    nfsl_flow_hash + nfsl_flow_pick it replaced (bench/xsk_rig.py at
    954181a), for the benchmark's own addresses."""
    got = []
    for want in range(n):
        cp = subprocess.run([str(FLOWPORT), src, dst, "5201", str(n), str(want),
                             *map(str, avoid)], capture_output=True, text=True,
                            timeout=10)
        assert cp.returncode == 0, cp.stderr
        got.append(int(cp.stdout))
    assert got == ports


@pytest.mark.parametrize("args,what", [
    (("10.0.0.1", "10.0.0.2", "5201", "4"), "give SRC DST DPORT N WANT"),
    (("10.0.0.1", "10.0.0.x", "5201", "4", "0"), "SRC and DST are IPv4"),
    (("10.0.0.1", "10.0.0.2", "5201", "4", "4"), "WANT 0..N-1, in decimal"),
    (("10.0.0.1", "10.0.0.2", "0x10", "4", "0"), "DPORT is 0..65535"),
])
def test_flowport_usage(args, what):
    cp = subprocess.run([str(FLOWPORT), *args], capture_output=True, text=True,
                        timeout=10)
    assert cp.returncode == 2 and what in cp.stderr, cp.stderr
