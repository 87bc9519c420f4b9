# SPDX-License-Identifier: GPL-2.0
"""Counter names of nfslice, read from the X-macros of include/nfsl_structs.h.

The datapath's struct, the CLI's names and the JSON keys of `nfslice stats`
are one list in C (an X-macro); this module reads that list at import, so
the tests and benchmarks never keep a copy that can drift.

  COUNTERS         NFSL_COUNTERS: per-CPU datapath counters, struct order
  MGR_COUNTERS     NFSL_MGR_COUNTERS: user-space evictions (TTL scan, evict),
                   shown by `nfslice stats` after COUNTERS
  TENANT_COUNTERS  NFSL_TENANT_COUNTERS: per-tenant counters
  EVENT_REASONS    NFSL_EVENT_REASONS: drop event reason names (lower case)

Raises RuntimeError at import when the header lacks one of the macros.
"""
import re
from pathlib import Path

HEADER = Path(__file__).resolve().parents[2] / "include" / "nfsl_structs.h"


def xmacro(text, macro):
    """Names the X-macro MACRO of header TEXT lists, in order.

    For X(name) entries the name; for X(UPPER, name) entries the last
    argument. Comments are ignored. Raises RuntimeError when MACRO is not
    defined as `#define MACRO(X)` in TEXT.
    """
    m = re.search(r"^#define\s+" + re.escape(macro) + r"\(X\)((?:.*\\\n)*.*)$",
                  text, re.M)
    if not m:
        raise RuntimeError(f"{HEADER}: no #define {macro}(X): the counter "
                           f"names come from it (update nfsl/counters.py)")
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    return tuple(args.split(",")[-1].strip()
                 for args in re.findall(r"\bX\(([^)]*)\)", body))


_TEXT = HEADER.read_text()
COUNTERS = xmacro(_TEXT, "NFSL_COUNTERS")
MGR_COUNTERS = xmacro(_TEXT, "NFSL_MGR_COUNTERS")
TENANT_COUNTERS = xmacro(_TEXT, "NFSL_TENANT_COUNTERS")
EVENT_REASONS = xmacro(_TEXT, "NFSL_EVENT_REASONS")
