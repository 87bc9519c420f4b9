# SPDX-License-Identifier: GPL-2.0
"""nfsl: nfslice's Python helpers, shared by the tests, benchmarks and scripts.

Modules (one job each):
  topo     one handle on a topology of scripts/{rig,topo_inline,topo_park}.sh
  rig      the integration tests' rig (Rig, name(), run(), poll())
  counters the counter names of include/nfsl_structs.h's X-macros
  netns    code run inside a namespace without a new interpreter (in_netns)
  tap      the TAP NF and checked UDP; lab: the namespace lab around it
  pkt      crafted packets: build (scapy), send, capture, parse, compare
  libbpf   the bpf(2) commands bpftool lacks (TCX, run-time stats), ctypes
  bench    the benchmarks' topologies, pktgen runs and reports
  ndr      the no-drop-rate search and report of exp_xsk and exp_nf
  lat      the latency benchmark's sink and pktgen runs
  cpustat  CPU time per core over a run (/proc/stat, /proc/softirqs)
  fwgen    ClassBench-style rules and traffic for the fw NF

How each user finds the package (no sys.path edits anywhere):
  - pytest: pytest.ini at the repo root, `pythonpath = scripts`;
  - scripts/*.py run directly: their own folder, scripts/, is sys.path[0];
  - bench/*.py run directly: bench/nfsl is a symlink to this folder;
  - helper scripts that the tests and benchmarks start in namespaces
    (tests/integration/nfinv.py send, ...): PYTHONPATH, which importing
    this package sets for its child processes (below).
"""
import os
from pathlib import Path

SCRIPTS = str(Path(__file__).resolve().parent.parent)
# Children (`ip netns exec NS python3 HELPER.py ...`) import nfsl too.
_path = os.environ.get("PYTHONPATH", "")
if SCRIPTS not in _path.split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SCRIPTS, _path) if p)
