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
#   bench/rig_cost.sh [--modes LIST] [--rounds N] [--win-min N] [SECONDS]
#
# SECONDS per stream (default 5). --modes, a comma-separated list, one
# stream each per round (default: hot):
#   hot    the slicer as attach leaves it: the store's hot window
#          (include/nfsl_store.h)
#   cold   the FIFO store over the whole partition (config win_min =
#          part_slots, written into the domain's pinned config with bpftool)
#   nofib  the hot store, the slicer replaced on the client-side interface
#          by bench/bpf/slicer_nofib.bpf.c (its route check without
#          bpf_fib_lookup; the rig's routes make it slice the same packets)
# Over --rounds rounds (default 1, 3 with more than one mode) the order of
# the modes rotates, so machine noise hits all alike. --win-min N: the hot
# window's minimum (config win_min; default 0: NFSL_WIN_MIN).
# Writes bench/results/rig_cost.json.
set -euo pipefail

cd "$(dirname "$0")/.."
usage() {
	echo "usage: rig_cost.sh [--modes hot,cold,nofib] [--rounds N] [--win-min N] [SECONDS]" >&2
	exit 2
}
modes=hot rounds= secs=5 win_min=0
while [ $# -gt 0 ]; do
	case $1 in
	--modes) [ $# -ge 2 ] || usage; modes=$2; shift 2 ;;
	--rounds) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
	--win-min) [ $# -ge 2 ] || usage; win_min=$2; shift 2 ;;
	-*) usage ;;
	*) secs=$1; shift ;;
	esac
done
IFS=, read -r -a mode_list <<<"$modes"
for m in "${mode_list[@]}"; do
	[[ $m =~ ^(hot|cold|nofib)$ ]] ||
		{ echo "rig_cost.sh: unknown mode '$m' (hot, cold, nofib)" >&2; exit 2; }
done
[ -n "$rounds" ] || { [ ${#mode_list[@]} -gt 1 ] && rounds=3 || rounds=1; }
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 1 && $rounds -le 20 ]] ||
	{ echo "rig_cost.sh: --rounds must be a whole number from 1 to 20 (got '$rounds')" >&2; exit 2; }
[[ $win_min =~ ^[0-9]+$ && $win_min -le 1048576 ]] ||
	{ echo "rig_cost.sh: --win-min must be a number of slots (got '$win_min')" >&2; exit 2; }
[[ $secs =~ ^[0-9]+$ && $secs -ge 1 && $secs -le 60 ]] ||
	{ echo "rig_cost.sh: SECONDS must be a whole number from 1 to 60 (got '$secs')" >&2; exit 2; }
prefix=nfsl-cost-$$
tmp=/tmp/nfsl-cost-$$
pins=/sys/fs/bpf/nfsl-cost-$$ # the programs swapped in and out (nofib)
out=bench/results/rig_cost.json
mkdir -p bench/results
nfslice=build/nfslice
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
server_pid= nofib_id=

cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
	rm -f "$tmp".jsonl "$tmp".iperf.json
	sysctl -qw kernel.bpf_stats_enabled="$stats_before" || true
	# the domain's own slicer back in place, so detach finds it
	[ -n "$nofib_id" ] && ip netns exec "$prefix-dut" bpftool net attach xdp id \
		"$slicer_id" dev "${DUT_IN:-dut0}" overwrite 2>/dev/null || true
	rm -rf "$pins"
	ip netns exec "$prefix-dut" "$nfslice" detach --name cost >/dev/null 2>&1 || true
	scripts/rig.sh down "$prefix"
}
trap cleanup EXIT INT TERM

scripts/rig.sh up "$prefix" >/dev/null
eval "$(scripts/rig.sh env "$prefix")"
ip netns exec "$DUT_NS" "$nfslice" attach --name cost "$DUT_IN" "$DUT_OUT" >/dev/null 2>&1

ip netns exec "$SRV_NS" iperf3 -s -p 5201 >/dev/null 2>&1 &
server_pid=$!
for _ in $(seq 50); do
	ip netns exec "$SRV_NS" ss -ltn 'sport = :5201' | grep -q LISTEN && break
	sleep 0.1
done

# The slicer instance on the client side (it slices the stream), the
# splicer (one program on both egress hooks), the domain's pin directory
# and its partition size.
status=$(ip netns exec "$DUT_NS" "$nfslice" status --name cost --json)
read -r dir part slicer_id splicer_id < <(/usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
i = d["interfaces"][0]
print(d["dir"], d["slots"] // d["partitions"], i["xdp_prog_id"], i["tc_prog_id"])' <<<"$status")

# set_win_min N: config win_min (struct nfsl_config, the u32 after the
# interface table; bpftool's BTF view checks the offset) = N.
set_win_min() {
	/usr/bin/python3 - "$dir/config" "$1" <<'PY'
import json, subprocess, sys
pin, want = sys.argv[1], int(sys.argv[2])
cmd = ["bpftool", "map", "lookup", "pinned", pin, "key", "0", "0", "0", "0", "-j"]
cur = json.loads(subprocess.check_output(cmd))
val = bytearray(int(x, 16) for x in cur["value"])
off = 32 + 16 + 16 * 16  # 8 u32, key[2], ifaces[NFSL_MAX_IFACES]
have = int.from_bytes(val[off:off + 4], "little")
if cur.get("formatted", {}).get("win_min", have) != have:
    sys.exit("rig_cost.sh: struct nfsl_config changed: win_min is not at %d" % off)
val[off:off + 4] = want.to_bytes(4, "little")
subprocess.check_call(["bpftool", "map", "update", "pinned", pin, "key", "0", "0", "0", "0",
                       "value"] + ["0x%02x" % b for b in val])
PY
}

# The slicer without its FIB lookup, on the domain's maps, kept loaded
# (pinned) next to the domain's own slicer, also pinned so that swapping
# it out does not free it.
mkdir -p "$pins"
bpftool prog pin id "$slicer_id" "$pins/slicer"
if [[ ,$modes, == *,nofib,* ]]; then
	bpftool prog load build/.output/slicer_nofib.bpf.o "$pins/nofib" type xdp \
		map name nfsl_store pinned "$dir/store" \
		map name nfsl_config pinned "$dir/config" \
		map name nfsl_counters pinned "$dir/counters" \
		map name nfsl_cursor pinned "$dir/cursor" 2>/dev/null
	nofib_id=$(bpftool prog show pinned "$pins/nofib" -j |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
fi

sysctl -qw kernel.bpf_stats_enabled=1
snap() { for id in "$@"; do bpftool prog show id "$id" -j; echo; done; }
: >"$tmp".jsonl
# run MODE: one stream; its numbers to $tmp.jsonl
run() {
	local before after id=$slicer_id
	case $1 in
	cold) set_win_min "$part" ;;
	*) set_win_min "$win_min" ;;
	esac
	[ "$1" = nofib ] && id=$nofib_id
	[ -z "$nofib_id" ] ||
		ip netns exec "$DUT_NS" bpftool net attach xdp id "$id" dev "$DUT_IN" overwrite
	before=$(snap "$id" "$splicer_id")
	ip netns exec "$CLI_NS" iperf3 -c "$SRV_IP4" -u -l 1448 -b 1G -t "$secs" -J \
		>"$tmp".iperf.json
	after=$(snap "$id" "$splicer_id")
	/usr/bin/python3 - "$1" "$before" "$after" "$tmp".iperf.json >>"$tmp".jsonl <<'PY'
import json, sys
mode, before, after, iperf = sys.argv[1:]
load = lambda s: [json.loads(l) for l in s.splitlines() if l.strip()]
res = {}
for b, a in zip(load(before), load(after)):
    r = res.setdefault(a["name"], {"run_time_ns": 0, "run_cnt": 0})
    r["run_time_ns"] += a.get("run_time_ns", 0) - b.get("run_time_ns", 0)
    r["run_cnt"] += a.get("run_cnt", 0) - b.get("run_cnt", 0)
for r in res.values():
    r["ns_per_run"] = r["run_time_ns"] / r["run_cnt"] if r["run_cnt"] else None
end = json.load(open(iperf))["end"]["sum"]
print(json.dumps({"mode": mode, "gbps": end["bits_per_second"] / 1e9,
                  "lost_percent": end["lost_percent"], "programs": res}))
PY
}
n=${#mode_list[@]}
for r in $(seq 0 $((rounds - 1))); do
	for k in $(seq 0 $((n - 1))); do
		run "${mode_list[$(((k + r) % n))]}"
	done
done
[ -z "$nofib_id" ] ||
	ip netns exec "$DUT_NS" bpftool net attach xdp id "$slicer_id" dev "$DUT_IN" overwrite
sysctl -qw kernel.bpf_stats_enabled="$stats_before"

/usr/bin/python3 - "$out" "$tmp".jsonl "$modes" <<'PY'
import json, statistics, sys
out, runs, modes = sys.argv[1], [json.loads(l) for l in open(sys.argv[2])], sys.argv[3].split(",")
print("iperf3 UDP 1448 B through the NAT with slicing; raw ns/run (statistics bias included)")
print(f"{'mode':6} {'Gbit/s':>7} {'lost %':>7} {'slicer runs':>12} {'ns/run':>7} "
      f"{'splicer runs':>13} {'ns/run':>7}")
def prog(x, kind):  # the slicer (or its nofib stand-in) and the splicer
    return x["programs"]["nfsl_" + kind]
for x in runs:
    s, p = prog(x, "slicer"), prog(x, "splicer")
    print(f"{x['mode']:6} {x['gbps']:7.2f} {x['lost_percent']:7.3f} {s['run_cnt']:>12} "
          f"{s['ns_per_run'] or 0:7.1f} {p['run_cnt']:>13} {p['ns_per_run'] or 0:7.1f}")
summary = {}
for m in modes:
    xs = [x for x in runs if x["mode"] == m]
    summary[m] = {k: statistics.median(prog(x, k)["ns_per_run"] for x in xs)
                  for k in ("slicer", "splicer")}
    print(f"median {m}: slicer {summary[m]['slicer']:.1f} ns, "
          f"splicer {summary[m]['splicer']:.1f} ns")
# Ratios of the streams of one round (they ran next to each other).
ref = modes[0]
for m in modes[1:]:
    a = [x for x in runs if x["mode"] == m]
    b = [x for x in runs if x["mode"] == ref]
    r = {k: statistics.median(prog(x, k)["ns_per_run"] / prog(y, k)["ns_per_run"]
                              for x, y in zip(a, b)) for k in ("slicer", "splicer")}
    summary[f"{m}_over_{ref}"] = r
    print(f"{m} / {ref} (median of the rounds): slicer {r['slicer']:.2f}, "
          f"splicer {r['splicer']:.2f}")
json.dump({"runs": runs, "summary": summary}, open(out, "w"), indent=1)
print(f"rig_cost: results in {out}")
PY
