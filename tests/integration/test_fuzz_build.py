# SPDX-License-Identifier: GPL-2.0
"""The fuzz targets stop at the first undefined behaviour (docs/design.md
"Fuzzing"): their UBSan checks are compiled recoverable (fast to build)
and tests/fuzz/sanitizer.c halts them at run time. A target built as
tests/fuzz/Makefile builds them, fed an input that overflows a signed
int, must exit non-zero with UBSan's report, and go on without
sanitizer.c (which shows the check can fail). No rig, no root."""
import subprocess

import pytest

from nfsl.rig import ROOT

SAN_OBJ = ROOT / "build/.output/fuzz/tests/fuzz/sanitizer.o"
UB_TARGET = r"""
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	volatile int x = INT_MAX, y = n ? d[0] : 1;
	return x + y == 5;
}
"""


def build_and_run(tmp_path, *objs):
    src = tmp_path / "ub.c"
    src.write_text(UB_TARGET)
    exe = tmp_path / "ub"
    # FUZZ_SAN and the link of tests/fuzz/Makefile.
    subprocess.run(["clang", "-g", "-O1", "-fsanitize=address,undefined",
                    "-fsanitize=fuzzer", str(src), *map(str, objs), "-o",
                    str(exe)], check=True)
    (tmp_path / "in").write_bytes(b"A")
    return subprocess.run([str(exe), str(tmp_path / "in")],
                          capture_output=True, text=True, timeout=60)


def test_undefined_behaviour_is_a_crash(tmp_path):
    if not SAN_OBJ.exists():
        pytest.fail(f"{SAN_OBJ} is missing: make fuzz-build")
    cp = build_and_run(tmp_path, SAN_OBJ)
    assert cp.returncode != 0, cp.stderr[-2000:]
    assert "runtime error: signed integer overflow" in cp.stderr
    assert "SUMMARY: UndefinedBehaviorSanitizer" in cp.stderr
    cp = build_and_run(tmp_path)
    assert cp.returncode == 0 and "runtime error" in cp.stderr, \
        cp.stderr[-2000:]


def test_a_header_change_rebuilds_the_library_objects():
    """The fuzz build follows every object's header dependencies, the
    library's too (userspace/lib/nfsl/X.d, four levels down): a struct
    changed in include/ must rebuild ckpt.o, or the targets link objects
    of two layouts (every checkpoint seed crashed fuzz_ckpt so)."""
    hdr = ROOT / "include" / "nfsl_structs.h"
    cp = subprocess.run(["make", "-n", "-C", str(ROOT / "tests" / "fuzz"), "-W", str(hdr)],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert "userspace/lib/nfsl/ckpt.c -o" in cp.stdout, cp.stdout[-2000:]
