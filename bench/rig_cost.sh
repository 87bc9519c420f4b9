#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# rig_cost.sh - per-packet run time of the slicer and the splicer on real
# traffic: the netns rig (scripts/rig.sh), nfslice attached to the DUT,
# an iperf3 UDP stream of 1448 B datagrams (1490 B frames) client -> server
# through the NAT, so nearly every run is a sliced or a spliced packet, and
# the kernel's BPF run-time statistics
# (kernel.bpf_stats_enabled; run_time_ns / run_cnt per program, as
# `bpftool prog show` reports them). Complements bench/datapath_*.c, whose
# BPF_PROG_TEST_RUN skbs have no tailroom: here the splicer grows real
# egress skbs. Numbers include the ~40-60 ns the two clock reads of the
# statistics add per run (docs/benchmarks.md).
#
#   bench/rig_cost.sh [SECONDS]    (default 5)   writes bench/results/rig_cost.json
set -euo pipefail

cd "$(dirname "$0")/.."
secs=${1:-5}
[[ $secs =~ ^[0-9]+$ && $secs -ge 1 && $secs -le 60 ]] ||
	{ echo "rig_cost.sh: SECONDS must be a whole number from 1 to 60 (got '$secs')" >&2; exit 2; }
prefix=nfsl-cost
out=bench/results/rig_cost.json
nfslice=build/nfslice
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
server_pid=

cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
	sysctl -qw kernel.bpf_stats_enabled="$stats_before" || true
	ip netns exec "$prefix-dut" "$nfslice" detach --name cost >/dev/null 2>&1 || true
	scripts/rig.sh down "$prefix"
}
trap cleanup EXIT INT TERM

scripts/rig.sh up "$prefix" >/dev/null
eval "$(scripts/rig.sh env "$prefix")"
ip netns exec "$DUT_NS" "$nfslice" attach --name cost "$DUT_IN" "$DUT_OUT" >/dev/null 2>&1

ip netns exec "$SRV_NS" iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
server_pid=$!
for _ in $(seq 50); do
	ip netns exec "$SRV_NS" ss -ltn 'sport = :5201' | grep -q LISTEN && break
	sleep 0.1
done

# The slicer instance on the client side (it slices the stream) and the
# splicer (one program on both egress hooks).
ids=$(ip netns exec "$DUT_NS" "$nfslice" status --name cost --json |
	/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin)
print(d["interfaces"][0]["xdp_prog_id"], d["interfaces"][0]["tc_prog_id"])')

sysctl -qw kernel.bpf_stats_enabled=1
snap() { for id in $ids; do bpftool prog show id "$id" -j; echo; done; }
before=$(snap)
ip netns exec "$CLI_NS" iperf3 -c "$SRV_IP4" -u -l 1448 -b 1G -t "$secs" -J > /tmp/nfsl-cost-iperf.json
after=$(snap)
sysctl -qw kernel.bpf_stats_enabled="$stats_before"

/usr/bin/python3 - "$out" "$before" "$after" /tmp/nfsl-cost-iperf.json <<'PY'
import json, sys
out, before, after, iperf = sys.argv[1:]
load = lambda s: [json.loads(l) for l in s.splitlines() if l.strip()]
res = {}
for b, a in zip(load(before), load(after)):
    name = a["name"]
    r = res.setdefault(name, {"run_time_ns": 0, "run_cnt": 0})
    r["run_time_ns"] += a.get("run_time_ns", 0) - b.get("run_time_ns", 0)
    r["run_cnt"] += a.get("run_cnt", 0) - b.get("run_cnt", 0)
end = json.load(open(iperf))["end"]["sum"]
gbps = end["bits_per_second"] / 1e9
print(f"iperf3 UDP 1448 B through the NAT with slicing: {gbps:.2f} Gbit/s, "
      f"{end['lost_percent']:.3f}% lost")
print(f"{'program':14} {'runs':>10} {'ns/run':>8}  (raw, statistics bias included)")
for name, r in sorted(res.items()):
    r["ns_per_run"] = r["run_time_ns"] / r["run_cnt"] if r["run_cnt"] else None
    print(f"{name:14} {r['run_cnt']:>10} {r['ns_per_run'] or 0:>8.1f}")
json.dump({"gbps": gbps, "lost_percent": end["lost_percent"], "programs": res}, open(out, "w"), indent=1)
print(f"rig_cost: results in {out}")
PY
