#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# demo.sh — nfslice on real traffic (the work behind `make demo`).
#
# Builds the client - DUT - server rig (scripts/rig.sh), runs the same
# workload three times through the DUT's kernel NFs (forwarding, nftables
# ACL, conntrack masquerade): without any program, with a bare XDP_PASS
# program (veth's cost of XDP alone: TSO off on the peers, a copy per
# segment; docs/platform.md), and with slicing on the DUT's two veths, and
# prints a side-by-side table:
#   - bytes that crossed the DUT's NF (nftables named counter nf_in), per
#     test and as NF bytes per application byte delivered;
#   - iperf3 TCP client->server, server->client (-R) and IPv6 goodput;
#   - iperf3 UDP 1400 B datagrams at 200 Mbit/s: goodput and loss;
#   - a 50 MB HTTP download (python3 http.server -> curl), sha256 compared;
#   - host CPU time per delivered MB (all CPUs: sender, DUT and receiver
#     share this host, so it is what slicing costs here, not the NF's own);
#   - in the sliced run, the nfslice counters (sliced, spliced, stale, ...).
# Then where slicing pays: the park topology (PayloadPark's setting), an
# NF server behind a 100 Mbit/s link, loss-free goodput of 1514 B frames
# sliced against unsliced (bench/exp_linkrate.py, one short run; --no-park
# skips it).
# PASS only if all data arrived intact: every TCP transfer completed, the
# download's sha256 matches, and in the sliced run stale == 0,
# bad_token == 0 and something was actually sliced. Exit status 0 on PASS.
#
# Everything it starts (rig, servers, slicing domain, temp files) is removed
# on exit, on failure and on Ctrl-C.
set -euo pipefail

readonly PROG=${0##*/}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT
readonly RIG=$ROOT/scripts/rig.sh
NFSLICE=${NFSLICE:-$ROOT/build/nfslice}
PREFIX=nfsl-demo
DOMAIN=demo
DURATION=5          # seconds per iperf3 test
HTTP_MB=50          # size of the downloaded file
UDP_LEN=1400        # UDP datagram size (bytes)
UDP_RATE=200M       # UDP offered load
SLICE=1             # 0: --no-slice, run only the baseline
PARK=1              # 0: --no-park, skip the link-bound park measurement
XDP_PASS_OBJ=$ROOT/build/.output/xdp_pass.bpf.o
PY=$(command -v /usr/bin/python3 || command -v python3 || true)
# Its readers of JSON and CSV (one command each).
REPORT=$ROOT/scripts/demo_report.py

usage() {
	[ $# -gt 0 ] && echo "$PROG: $*" >&2
	cat >&2 <<EOF
usage: $PROG [--no-slice] [--no-park] [--duration SECONDS] [--prefix PREFIX]
  Runs the rig workload without any program, with a bare XDP_PASS and with
  nfslice and compares them; then the park topology's link-bound goodput.
  --no-slice         only the run without slicing (baseline check)
  --no-park          skip the park topology measurement
  --duration S       seconds per iperf3 test, 1-30 (default $DURATION)
  --prefix P         rig namespace prefix (default $PREFIX)
  NFSLICE=path       nfslice binary (default build/nfslice)
EOF
	exit 2
}

# Progress goes to fd 3, a copy of the original stderr, so that it still
# reaches the terminal from inside a redirected command or a trap.
exec 3>&2
log() { printf '%s: %s\n' "$PROG" "$*" >&3; }
die() {
	log "$*"
	exit 1
}

parse_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		--no-slice) SLICE=0 ;;
		--no-park) PARK=0 ;;
		--duration)
			[ $# -ge 2 ] || usage "--duration needs a value"
			if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt 1 ] || [ "$2" -gt 30 ]; then
				usage "--duration '$2' is not a number of seconds in 1-30"
			fi
			DURATION=$2
			shift
			;;
		--prefix)
			[ $# -ge 2 ] || usage "--prefix needs a value"
			PREFIX=$2
			shift
			;;
		-h | --help) usage ;;
		*) usage "unknown argument '$1'" ;;
		esac
		shift
	done
}

need_tools() {
	local t missing=()
	for t in ip nft ethtool iperf3 curl sha256sum ss timeout; do
		command -v "$t" >/dev/null || missing+=("$t")
	done
	[ -n "$PY" ] || missing+=(python3)
	[ ${#missing[@]} -eq 0 ] ||
		die "missing ${missing[*]} (run scripts/install-deps.sh)"
	[ "$(id -u)" -eq 0 ] || die "must run as root (creates network namespaces)"
}

# ---------------------------------------------------------------- cleanup --
# PIDs of the servers this script started (ip netns exec execs the server,
# so $! is the server itself), and whether the slicing domain is attached.
IPERF_PID=
HTTP_PID=
CUR_PID=
ATTACHED=0
XDP_ON=0
TMP=
RIG_UP=0
CLEANED=0

# stop_pids PID...: end the processes this script started. Signal all of
# them first, then wait: inside a trap bash may wait for any child, so
# waiting for one while another still runs can hang. A process still alive
# after 5 s gets SIGKILL.
stop_pids() {
	local pid pids=() alive
	for pid in "$@"; do
		[ -n "$pid" ] && pids+=("$pid")
	done
	[ ${#pids[@]} -gt 0 ] || return 0
	kill "${pids[@]}" 2>/dev/null || true
	for _ in $(seq 50); do
		alive=0
		for pid in "${pids[@]}"; do
			kill -0 "$pid" 2>/dev/null && alive=1
		done
		[ "$alive" -eq 1 ] || break
		sleep 0.1
	done
	kill -KILL "${pids[@]}" 2>/dev/null || true
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}

cleanup() {
	[ "$CLEANED" -eq 0 ] || return 0
	CLEANED=1
	stop_pids "$CUR_PID" "$IPERF_PID" "$HTTP_PID"
	CUR_PID='' IPERF_PID='' HTTP_PID=''
	[ "$ATTACHED" -eq 0 ] || slicing_off || true
	[ "$XDP_ON" -eq 0 ] || xdp_pass_off || true
	# Deleting the namespaces also removes the veths and any programs
	# attached to them, should detach have failed.
	[ "$RIG_UP" -eq 0 ] || "$RIG" down "$PREFIX" || true
	[ -z "$TMP" ] || rm -rf -- "$TMP"
}

on_signal() {
	log "interrupted, cleaning up"
	cleanup
	exit 130
}

# ---------------------------------------------------------------- helpers --
in_dut() { ip netns exec "$DUT_NS" "$@"; }

# bounded CMD...: run a traffic command (ip netns exec ... timeout ...) as a
# background child and wait for it. bash runs a signal trap only after the
# foreground command ends, but interrupts `wait` at once: this way Ctrl-C or
# SIGTERM cleans up immediately, and cleanup can end the child by its PID
# (timeout passes the SIGTERM on to the traffic tool).
bounded() {
	local rc=0
	"$@" &
	CUR_PID=$!
	wait "$CUR_PID" || rc=$?
	CUR_PID=
	return "$rc"
}

# wait_listen NS PORT: wait up to 5 s for a TCP listener on PORT in NS.
wait_listen() {
	local ns=$1 port=$2
	for _ in $(seq 50); do
		ip netns exec "$ns" ss -Hltn "sport = :$port" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# nf_counter: "PACKETS BYTES" of the DUT's named counter nf_in.
nf_counter() {
	in_dut nft -j list counter "$NFT_FAMILY" "$NFT_TABLE" "$NFT_COUNTER" |
		"$PY" "$REPORT" nft-counter
}

nf_counter_reset() {
	in_dut nft reset counter "$NFT_FAMILY" "$NFT_TABLE" "$NFT_COUNTER" >/dev/null
}

# iperf_result FILE RC KIND: one line "STATUS BYTES BPS EXTRA" from iperf3's
# JSON, STATUS ok or the failure. KIND tcp: EXTRA = retransmits (sender
# side); udp: EXTRA = lost percent (receiver side).
iperf_result() {
	"$PY" "$REPORT" iperf "$@"
}

# ------------------------------------------------------------ slicing on/off
have_nfslice() {
	[ -x "$NFSLICE" ]
}

# nfslice runs inside the DUT namespace: it attaches the slicer (XDP) and
# splicer (tc egress) to the DUT's veths there.
nfslice_dut() {
	in_dut "$NFSLICE" "$@"
}

slicing_on() {
	# Its messages go to stderr with the progress log; stdout is the table.
	nfslice_dut attach --name "$DOMAIN" "$DUT_IN" "$DUT_OUT" >&3 2>&3 || return 1
	ATTACHED=1
}

slicing_off() {
	ATTACHED=0
	nfslice_dut detach --name "$DOMAIN" >&3 2>&3
}

# A bare XDP_PASS program on both DUT veths (native XDP, as the slicer):
# what any XDP program costs a veth, nfslice's or not.
xdp_pass_on() {
	local dev
	XDP_ON=1
	for dev in "$DUT_IN" "$DUT_OUT"; do
		in_dut ip link set dev "$dev" xdp obj "$XDP_PASS_OBJ" sec xdp >&3 2>&3 || return 1
	done
}

xdp_pass_off() {
	local dev rc=0
	XDP_ON=0
	for dev in "$DUT_IN" "$DUT_OUT"; do
		in_dut ip link set dev "$dev" xdp off >&3 2>&3 || rc=1
	done
	return "$rc"
}

# cpu_jiffies: busy jiffies of every CPU together (/proc/stat: all but idle
# and iowait).
cpu_jiffies() {
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# slicing_stats: the nfslice counters as KEY=VALUE lines.
slicing_stats() {
	nfslice_dut stats --name "$DOMAIN" --json | "$PY" "$REPORT" stats
}

# ---------------------------------------------------------------- results --
# RES[run.metric] holds every number of the table; FAILS[run] the reasons
# a run failed.
declare -A RES=()
declare -A FAILS=()

fail() {
	local run=$1
	shift
	FAILS[$run]+="${FAILS[$run]:+; }$*"
	log "[$run] FAIL: $*"
}

# Counter snapshot bookkeeping: NF bytes/packets per test as deltas.
LAST_PKTS=0
LAST_BYTES=0
nf_mark() {
	local run=$1 test=$2 p b
	read -r p b < <(nf_counter)
	RES[$run.$test.nf_bytes]=$((b - LAST_BYTES))
	RES[$run.$test.nf_pkts]=$((p - LAST_PKTS))
	LAST_PKTS=$p LAST_BYTES=$b
}

# iperf_test RUN TEST KIND ARGS...: one bounded iperf3 run from the client.
iperf_test() {
	local run=$1 test=$2 kind=$3 rc=0 status bytes bps extra
	shift 3
	local out=$TMP/$run.$test.json j0
	j0=$(cpu_jiffies)
	bounded ip netns exec "$CLI_NS" timeout $((DURATION + 20)) \
		iperf3 -J -t "$DURATION" "$@" >"$out" 2>"$TMP/$run.$test.err" || rc=$?
	RES[$run.$test.cpu_ms]=$((($(cpu_jiffies) - j0) * 1000 / $(getconf CLK_TCK)))
	read -r status bytes bps extra < <(iperf_result "$out" "$rc" "$kind")
	RES[$run.$test.status]=$status
	RES[$run.$test.bytes]=$bytes
	RES[$run.$test.bps]=$bps
	RES[$run.$test.extra]=$extra
	nf_mark "$run" "$test"
	if [ "$status" != ok ]; then
		fail "$run" "iperf3 $test did not complete ($status)"
	fi
	log "[$run] $test: $status, $(fmt_gbps "$bps") Gbit/s"
}

http_test() {
	local run=$1 rc=0 out sum
	local got=$TMP/$run.download
	bounded ip netns exec "$CLI_NS" timeout 90 \
		curl -sS --fail --max-time 60 -o "$got" \
		-w '%{size_download} %{speed_download}' \
		"http://$SRV_IP4:8080/blob.bin" \
		>"$TMP/$run.curl.out" 2>"$TMP/$run.curl.err" || rc=$?
	out=$(cat "$TMP/$run.curl.out")
	nf_mark "$run" http
	RES[$run.http.bytes]=${out%% *}
	RES[$run.http.bps]=$(awk -v s="${out##* }" 'BEGIN { printf "%d", s * 8 }')
	if [ "$rc" -ne 0 ] || [ ! -f "$got" ]; then
		RES[$run.http.sha]=no
		fail "$run" "curl failed (rc=$rc: $(head -c 200 "$TMP/$run.curl.err"))"
		return 0
	fi
	sum=$(sha256sum "$got" | cut -d' ' -f1)
	rm -f -- "$got"
	if [ "$sum" = "$BLOB_SHA" ]; then
		RES[$run.http.sha]=yes
	else
		RES[$run.http.sha]=no
		fail "$run" "HTTP download corrupted (sha256 $sum != $BLOB_SHA)"
	fi
	log "[$run] http: sha256 match ${RES[$run.http.sha]}"
}

# run_workload RUN: the same bounded workload for both runs.
run_workload() {
	local run=$1
	nf_counter_reset
	LAST_PKTS=0 LAST_BYTES=0
	iperf_test "$run" tcp_up tcp -c "$SRV_IP4"
	iperf_test "$run" tcp_down tcp -c "$SRV_IP4" -R
	iperf_test "$run" tcp6_up tcp -c "$SRV_IP6"
	iperf_test "$run" udp udp -c "$SRV_IP4" -u -l "$UDP_LEN" -b "$UDP_RATE"
	http_test "$run"
	local p b
	read -r p b < <(nf_counter)
	RES[$run.nf_pkts]=$p
	RES[$run.nf_bytes]=$b
}

run_plain() {
	log "run 1/3: without any program"
	run_workload plain
	RES[plain.done]=1
}

run_xdp_pass() {
	log "run 2/3: a bare XDP_PASS program on $DUT_IN $DUT_OUT (veth's cost of XDP)"
	if [ ! -f "$XDP_PASS_OBJ" ]; then
		fail xdp "$XDP_PASS_OBJ not found (build it: make)"
		return 0
	fi
	if ! xdp_pass_on; then
		fail xdp "attaching $XDP_PASS_OBJ failed"
		xdp_pass_off || true
		return 0
	fi
	run_workload xdp
	xdp_pass_off || fail xdp "ip link set xdp off failed"
	RES[xdp.done]=1
}

run_sliced() {
	log "run 3/3: with slicing (nfslice domain '$DOMAIN' on $DUT_IN $DUT_OUT)"
	if ! have_nfslice; then
		fail sliced "$NFSLICE not found or not executable (build it: make)"
		return 0
	fi
	if ! slicing_on; then
		fail sliced "nfslice attach failed"
		return 0
	fi
	run_workload sliced
	local kv
	if kv=$(slicing_stats); then
		while IFS='=' read -r k v; do
			RES[sliced.st.$k]=$v
		done <<<"$kv"
	else
		fail sliced "nfslice stats failed"
	fi
	if ! slicing_off; then
		fail sliced "nfslice detach failed"
	fi
	RES[sliced.done]=1
	check_slicing_counters
}

check_slicing_counters() {
	local k
	for k in sliced spliced stale bad_token; do
		if [ -z "${RES[sliced.st.$k]:-}" ]; then
			fail sliced "nfslice stats has no '$k'"
			return 0
		fi
	done
	[ "${RES[sliced.st.stale]}" -eq 0 ] ||
		fail sliced "${RES[sliced.st.stale]} stale tokens (payloads lost)"
	[ "${RES[sliced.st.bad_token]}" -eq 0 ] ||
		fail sliced "${RES[sliced.st.bad_token]} bad tokens"
	[ "${RES[sliced.st.sliced]}" -gt 0 ] ||
		fail sliced "nothing was sliced: the sliced run measured nothing new"
}

# ---------------------------------------------------------------- servers --
start_servers() {
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/nfslice-demo.XXXXXX")
	mkdir "$TMP/www"
	head -c "${HTTP_MB}M" /dev/urandom >"$TMP/www/blob.bin"
	BLOB_SHA=$(sha256sum "$TMP/www/blob.bin" | cut -d' ' -f1)

	# One iperf3 server serves the tests one after another; it listens on
	# both IPv4 and IPv6.
	ip netns exec "$SRV_NS" iperf3 -s >"$TMP/iperf3-server.log" 2>&1 &
	IPERF_PID=$!
	ip netns exec "$SRV_NS" "$PY" -m http.server 8080 --bind "$SRV_IP4" \
		--directory "$TMP/www" >"$TMP/http-server.log" 2>&1 &
	HTTP_PID=$!
	wait_listen "$SRV_NS" 5201 || die "iperf3 server did not start"
	wait_listen "$SRV_NS" 8080 || die "http server did not start"
}

# ------------------------------------------------------------------ table --
fmt_gbps() { awk -v b="${1:-0}" 'BEGIN { printf "%.2f", b / 1e9 }'; }
fmt_mb() { awk -v b="${1:-0}" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }

# ratio NF_BYTES APP_BYTES: NF bytes per application byte delivered. Raw NF
# bytes of two timed runs are not comparable (a faster run moves more data),
# the ratio is.
ratio() {
	awk -v n="${1:-0}" -v a="${2:-0}" 'BEGIN { if (a > 0) printf "%.3f", n / a; else print "-" }'
}

# cell RUN TEXT: TEXT if RUN ran its workload, "n/a" otherwise.
cell() {
	if [ -n "${RES[$1.done]:-}" ]; then printf '%s' "$2"; else printf 'n/a'; fi
}

row() {
	printf '  %-40s %15s %15s %15s\n' "$1" "$2" "$3" "$4"
}

# row_metric LABEL FORMATTER KEY: one row for the three runs.
row_metric() {
	local label=$1 f=$2 key=$3
	row "$label" \
		"$(cell plain "$($f "${RES[plain.$key]:-}")")" \
		"$(cell xdp "$($f "${RES[xdp.$key]:-}")")" \
		"$(cell sliced "$($f "${RES[sliced.$key]:-}")")"
}

# per_mb X BYTES: X per delivered MB, one decimal.
per_mb() {
	awk -v x="${1:-0}" -v b="${2:-0}" 'BEGIN { if (b > 0) printf "%.1f", x * 1e6 / b; else print "-" }'
}

ident() { printf '%s' "${1:--}"; }

print_test_rows() {
	local test=$1 label=$2 kind=$3 r
	row_metric "$label (Gbit/s)" fmt_gbps "$test.bps"
	if [ "$kind" = tcp ]; then
		row_metric "  retransmits" ident "$test.extra"
	elif [ "$kind" = udp ]; then
		row_metric "  loss (%)" ident "$test.extra"
	fi
	row_metric "  bytes through NF" fmt_mb "$test.nf_bytes"
	local c=() p=() m=() g=()
	for r in plain xdp sliced; do
		c+=("$(cell "$r" "$(ratio "${RES[$r.$test.nf_bytes]:-0}" "${RES[$r.$test.bytes]:-0}")")")
		p+=("$(cell "$r" "$(per_mb "${RES[$r.$test.nf_pkts]:-0}" "${RES[$r.$test.bytes]:-0}")")")
		m+=("$(cell "$r" "$(per_mb "${RES[$r.$test.cpu_ms]:-}" "${RES[$r.$test.bytes]:-0}")")")
		g+=("$(cell "$r" "$(ratio "${RES[$r.$test.bps]:-0}" "${RES[plain.$test.bps]:-0}")")")
	done
	row "  NF bytes per delivered byte" "${c[@]}"
	row "  NF packets per delivered MB" "${p[@]}"
	[ "$kind" = http ] || row "  host CPU ms per delivered MB" "${m[@]}"
	row "  goodput / no program" "${g[@]}"
	[ "$kind" != tcp ] || row "  goodput / XDP_PASS only" "-" "1" \
		"$(cell sliced "$(ratio "${RES[sliced.$test.bps]:-0}" "${RES[xdp.$test.bps]:-0}")")"
}

verdict() {
	local run=$1
	if [ -z "${RES[$run.done]:-}" ] && [ -z "${FAILS[$run]:-}" ]; then
		printf 'skipped'
	elif [ -n "${FAILS[$run]:-}" ]; then
		printf 'FAIL'
	else
		printf 'PASS'
	fi
}

print_table() {
	local k
	echo
	echo "nfslice demo: client -> DUT (forward + nftables ACL + masquerade NAT) -> server"
	echo "iperf3 tests ${DURATION} s each; UDP ${UDP_LEN} B at ${UDP_RATE}bit/s; HTTP ${HTTP_MB} MB"
	echo
	row "" "no program" "XDP_PASS only" "with slicing"
	row "bytes through DUT NF (nf_in, total)" \
		"$(cell plain "$(fmt_mb "${RES[plain.nf_bytes]:-}")")" \
		"$(cell xdp "$(fmt_mb "${RES[xdp.nf_bytes]:-}")")" \
		"$(cell sliced "$(fmt_mb "${RES[sliced.nf_bytes]:-}")")"
	row_metric "packets through DUT NF (total)" ident nf_pkts
	print_test_rows tcp_up "TCP client->server" tcp
	print_test_rows tcp_down "TCP server->client" tcp
	print_test_rows tcp6_up "TCP6 client->server" tcp
	print_test_rows udp "UDP client->server" udp
	print_test_rows http "HTTP download" http
	row_metric "  sha256 match" ident http.sha
	for k in sliced spliced skipped_small skipped_full skipped_big evicted \
		stale bad_token replayed too_big unparsed parked_bytes slots_busy; do
		row "nfslice $k" "-" "-" "$(cell sliced "${RES[sliced.st.$k]:--}")"
	done
	row "result" "$(verdict plain)" "$(verdict xdp)" "$(verdict sliced)"
	echo
	echo "On this single host sender, DUT and receiver share the CPUs: what slicing"
	echo "costs shows as goodput, and most of it is any XDP program's cost on a veth"
	echo "(TSO off on the peers, a copy per segment: docs/platform.md), the XDP_PASS"
	echo "column. What it saves is the NF's bytes per delivered byte (its packets are"
	echo "any XDP program's: one per segment), and link bytes where the NF runs"
	echo "elsewhere:"
	echo
}

# The park topology (PayloadPark's setting): an NF server behind a shaped
# link; loss-free goodput of 1514 B frames sliced against unsliced, one
# short search (bench/exp_linkrate.py).
run_park() {
	local rc=0 out=$TMP/park
	log "park topology: NF server behind a 100 Mbit/s link, sliced vs unsliced (bench/exp_linkrate.py, ~1 min)"
	bounded timeout 300 "$ROOT/bench/exp_linkrate.py" --rates 100mbit --runs 1 \
		--probe 0.4 --steps 3 --out "$out" >"$TMP/park.log" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ] || [ ! -f "$out/linkrate.csv" ]; then
		echo "park topology: bench/exp_linkrate.py failed (rc=$rc): $(tail -n 3 "$TMP/park.log")"
		return 0
	fi
	"$PY" "$REPORT" park "$out/linkrate.csv"
}

# ------------------------------------------------------------------- main --
main() {
	parse_args "$@"
	need_tools
	trap cleanup EXIT
	trap on_signal INT TERM

	RIG_UP=1
	"$RIG" up "$PREFIX"
	eval "$("$RIG" env "$PREFIX")"
	start_servers

	run_plain
	if [ "$SLICE" -eq 1 ]; then
		run_xdp_pass
		run_sliced
	fi
	print_table
	if [ "$SLICE" -eq 1 ] && [ "$PARK" -eq 1 ]; then
		run_park
	fi

	local r bad=0
	for r in plain xdp sliced; do
		if [ -n "${FAILS[$r]:-}" ]; then
			echo "$r: ${FAILS[$r]}"
			bad=1
		fi
	done
	if [ "$bad" -eq 0 ]; then
		echo "PASS: all data arrived intact"
	else
		echo "FAIL"
	fi
	cleanup
	return "$bad"
}

main "$@"
