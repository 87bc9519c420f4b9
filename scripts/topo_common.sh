# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# topo_common.sh — helpers shared by the netns rig scripts
# (scripts/rig.sh, scripts/topo_inline.sh, scripts/topo_park.sh). Sourced,
# not run; expects PROG to be set and the caller to run with
# `set -euo pipefail`.

TOPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The nfslice binary used to detach leftover domains on `down`.
TOPO_NFSLICE=${NFSLICE:-$TOPO_ROOT/build/nfslice}
# Where `up` saves the topology's variables for `env` (tmpfs, root only).
TOPO_STATE_DIR=/run/nfslice-topo

topo_die() {
	echo "$PROG: $*" >&2
	exit 1
}

# topo_check_prefix PREFIX: a prefix becomes part of namespace names (and of
# /run/netns paths), so keep it to a safe alphabet and short enough for the
# suffixes.
topo_check_prefix() {
	[[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9_-]{0,19}$ ]] ||
		usage "bad PREFIX '$1' (letters, digits, '-', '_'; 1-20 characters)"
}

topo_ns_exists() {
	[ -e "/run/netns/$1" ]
}

# topo_netns_cookie NS: the network namespace cookie nfslice names its pin
# directory after (/sys/fs/bpf/nfslice/ns<cookie>/NAME).
topo_netns_cookie() {
	ip netns exec "$1" /usr/bin/python3 -c '
import socket, struct
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
print(struct.unpack("Q", s.getsockopt(socket.SOL_SOCKET, 71, 8))[0])'
}

# topo_detach_all NS: detach every nfslice domain of namespace NS. Deleting a
# namespace removes the programs from its interfaces, but the pinned maps
# live in the host's bpffs and would outlive it. Pins a detach could not
# remove are removed by hand: only this namespace has this cookie.
topo_detach_all() {
	local ns=$1 cookie dir d
	topo_ns_exists "$ns" || return 0
	cookie=$(topo_netns_cookie "$ns" 2>/dev/null) || return 0
	dir=${NFSLICE_BPFFS:-/sys/fs/bpf}/nfslice/ns$cookie
	[ -d "$dir" ] || return 0
	for d in "$dir"/*/; do
		[ -d "$d" ] || continue
		d=${d%/}
		if [ -x "$TOPO_NFSLICE" ]; then
			ip netns exec "$ns" "$TOPO_NFSLICE" detach --name "${d##*/}" \
				>/dev/null 2>&1 ||
				echo "$PROG: nfslice detach --name ${d##*/} in $ns failed" >&2
		fi
		[ ! -e "$d" ] || rm -rf -- "$d"
	done
	rmdir -- "$dir" 2>/dev/null || true
}

# topo_delete_ns NS...: delete the namespaces NS (those that exist), then
# let `nfslice gc` remove the retired keys their detached domains left
# (userspace/lib/nfsl/retired.h: kept for their grace period next to the namespace's
# probe, dropped once the namespace is gone, which the kernel finishes
# asynchronously, often a second later). Waits at most 10 s for that;
# TOPO_RETIRED_WAIT=0: not at all (the test suite collects them once, at
# its end).
topo_delete_ns() {
	local ns cookie cookies=() c i left
	local top=${NFSLICE_BPFFS:-/sys/fs/bpf}/nfslice/@retired

	for ns in "$@"; do
		topo_ns_exists "$ns" || continue
		cookie=$(topo_netns_cookie "$ns" 2>/dev/null) && cookies+=("$cookie")
		ip netns delete "$ns" 2>/dev/null ||
			echo "$PROG: could not delete namespace $ns" >&2
	done
	[ -x "$TOPO_NFSLICE" ] && [ "${TOPO_RETIRED_WAIT:-1}" != 0 ] || return 0
	for ((i = 0; i < 40; i++)); do
		left=0
		for c in "${cookies[@]}"; do
			compgen -G "$top/ns$c-*" >/dev/null && left=1
		done
		[ "$left" -eq 1 ] || return 0
		"$TOPO_NFSLICE" gc >/dev/null 2>&1 || true
		sleep 0.25
	done
	echo "$PROG: retired keys of the deleted namespaces are still in $top (nfslice gc)" >&2
}

# Links. Each veth pair is created inside its namespaces, so no topology
# interface ever exists in (or can clash with) the root namespace. They use
# the caller's MTU, NET4_LEN and NET6_LEN.

# topo_veth NS DEV PEER_NS PEER_DEV: a veth pair DEV (in NS) - PEER_DEV.
topo_veth() {
	ip -n "$1" link add "$2" mtu "$MTU" type veth \
		peer name "$4" netns "$3" mtu "$MTU"
}

# topo_addr NS DEV IP4 IP6: bring DEV up with its addresses. nodad: the IPv6
# address is usable at once instead of after ~1-2 s of duplicate address
# detection (nothing else can be on a point-to-point link; the scripts also
# turn DAD off for the link-local addresses).
topo_addr() {
	local ns=$1 dev=$2 ip4=$3 ip6=$4
	ip -n "$ns" addr add "$ip4/$NET4_LEN" dev "$dev"
	ip -n "$ns" -6 addr add "$ip6/$NET6_LEN" dev "$dev" nodad
	ip -n "$ns" link set dev "$dev" up
}

# Offloads of the topology veths: "kernel" (the default) leaves them as the
# kernel sets them, as on any host nfslice is attached to: TX checksum
# offload, TSO and GSO on, GRO off (a veth turns TSO off on the peer of a
# veth with an XDP program, docs/platform.md; `nfslice attach` turns off what
# would merge sliced packets on its interfaces). "off" is for
# benchmarks that want every segment to cross as its own MTU-sized frame
# whether or not an XDP program is attached (like-for-like sliced/unsliced
# runs, a shaper counting real frames): see topo_offloads and
# docs/topologies.md. Set with topo_set_offloads (--offloads of `up`).
TOPO_OFFLOADS=kernel

# topo_set_offloads MODE: check and set TOPO_OFFLOADS (kernel|off).
topo_set_offloads() {
	case $1 in
	kernel | off) TOPO_OFFLOADS=$1 ;;
	*) usage "--offloads '$1' is not 'kernel' or 'off'" ;;
	esac
}

# topo_offloads NS DEV: with TOPO_OFFLOADS=off, turn off on DEV:
# - tx (checksum offload): a local socket's packets then carry full L4
#   checksums, as they do from a wire, instead of CHECKSUM_PARTIAL. nfslice
#   does not need it (such packets are sliced and arrive intact,
#   docs/platform.md); a benchmark may want senders to pay for the checksum.
# - tso/gso: each TCP segment crosses as its own MTU-sized packet, with or
#   without an XDP program on the path, instead of a 64 KB GSO super-packet
#   in the unsliced runs; shapers count real frames.
# - gro: nothing merges forwarded segments back into super-packets.
# With the default (kernel) it does nothing.
topo_offloads() {
	local ns=$1 dev=$2
	[ "$TOPO_OFFLOADS" = off ] || return 0
	ip netns exec "$ns" ethtool -K "$dev" tx off tso off gso off gro off \
		>/dev/null 2>&1 || topo_die "ethtool -K $dev in $ns failed"
}

# The part of the up/env command line every rig script shares. A script's
# option loop empties TOPO_PREFIX, handles its own options and hands every
# other argument to topo_parse_common:
#
#	TOPO_PREFIX=
#	while [ $# -gt 0 ]; do
#		case $1 in
#		--own-flag) OWN=1 ;;
#		*)
#			topo_parse_common "$@"
#			shift "$TOPO_NARGS"
#			continue
#			;;
#		esac
#		shift
#	done
#	PREFIX=${TOPO_PREFIX:-default}
TOPO_PREFIX=
TOPO_NARGS=0

# topo_parse_common ARG [NEXT...]: take ARG (and its value) off the command
# line and set TOPO_NARGS to how many arguments that was (1 or 2):
#   --offloads MODE  topo_set_offloads MODE
#   -h, --help       usage
#   -*               usage "unknown option"
#   PREFIX           TOPO_PREFIX=PREFIX; a second one is "too many arguments"
# shellcheck disable=SC2034 # TOPO_NARGS is the caller's
topo_parse_common() {
	case $1 in
	--offloads)
		[ $# -ge 2 ] || usage "$1 needs a value"
		topo_set_offloads "$2"
		TOPO_NARGS=2
		;;
	-h | --help) usage ;;
	-*) usage "unknown option '$1'" ;;
	*)
		[ -z "$TOPO_PREFIX" ] ||
			usage "too many arguments ('$TOPO_PREFIX' and '$1')"
		TOPO_PREFIX=$1
		TOPO_NARGS=1
		;;
	esac
}

# topo_online_cpus: the online CPU numbers, one per line.
topo_online_cpus() {
	local part a b parts
	IFS=, read -ra parts </sys/devices/system/cpu/online
	for part in "${parts[@]}"; do
		a=${part%-*}
		b=${part#*-}
		seq "$a" "$b"
	done
}

# topo_cpu_mask CPU: the hex CPU mask of one CPU as rps_cpus takes it
# (32-bit words separated by commas, most significant first).
topo_cpu_mask() {
	local cpu=$1 word=$(($1 / 32)) i mask
	mask=$(printf '%x' $((1 << (cpu % 32))))
	for ((i = 0; i < word; i++)); do
		mask+=",00000000"
	done
	echo "$mask"
}

# topo_save_state FILE TEXT: remember what `up` built, for `env`.
topo_save_state() {
	mkdir -p -- "$TOPO_STATE_DIR"
	printf '%s\n' "$2" >"$1"
}

# topo_link_ready NS DEV: DEV is operationally up and IPv6 has configured it.
topo_link_ready() {
	local ns=$1 dev=$2
	ip -n "$ns" -o link show dev "$dev" | grep -q 'state UP' &&
		ip -n "$ns" -6 route show table local type multicast dev "$dev" |
		grep -q .
}

# topo_wait_links NAME "NS DEV"...: wait (at most 3 s) until every given
# veth is ready for IPv6. The kernel sets a new link's operstate from its
# "linkwatch" work, which is rate-limited system-wide to about once a second,
# and IPv6 configures an interface (e.g. the ff00::/8 route that neighbour
# solicitations need) only then. Without this step the first IPv6 packet
# after `up` lost its neighbour solicitation (dropped IP_INNOROUTES) and
# waited ~1 s for the retry, 5 times out of 5; IPv4 does not depend on it.
# Measured: with these queries the links were always ready at the first
# check (querying them seems to get the pending state applied at once); the
# loop is the safety net.
topo_wait_links() {
	local name=$1 _ p ready
	shift
	for _ in $(seq 150); do
		ready=1
		for p in "$@"; do
			# shellcheck disable=SC2086 # "NS DEV" splits into two
			topo_link_ready $p || {
				ready=0
				break
			}
		done
		[ "$ready" -eq 0 ] || return 0
		sleep 0.02
	done
	echo "$PROG: warning: links of $name not ready for IPv6 after 3 s" >&2
}

# topo_main DEFAULT_PREFIX ARGS...: the up|down|env command line of a
# topology script. The script defines parse_opts (options of up and env),
# topo_set_prefix PREFIX (names for down), cmd_up, cmd_down, cmd_env_live
# and usage.
topo_main() {
	local default=$1
	shift
	[ $# -ge 1 ] || usage "missing command"
	local cmd=$1
	shift
	case $cmd in
	up | env) parse_opts "$@" ;;
	down)
		[ $# -le 1 ] || usage "too many arguments for down"
		case ${1:-} in -*) usage "down takes no options, only PREFIX" ;; esac
		topo_check_prefix "${1:-$default}"
		topo_set_prefix "${1:-$default}"
		;;
	-h | --help | help) usage ;;
	*) usage "unknown command '$cmd'" ;;
	esac
	case $cmd in
	up) cmd_up ;;
	down) cmd_down ;;
	env) cmd_env_live ;;
	esac
}
