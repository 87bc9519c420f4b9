#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# topo_inline.sh — the "inline" benchmark topology (NFSlicer's NIC emulation,
# §III-§V): the slicer on the DUT's NIC-facing veths and the kernel NF
# (forwarding, nftables ACL, conntrack masquerade NAT) on the same DUT, on
# different CPUs.
#
#   scripts/topo_inline.sh up   [OPTIONS] [PREFIX]   build it (rebuilds it if it exists)
#   scripts/topo_inline.sh down [PREFIX]             remove it; idempotent
#   scripts/topo_inline.sh env  [OPTIONS] [PREFIX]   print VAR=value lines for eval
#
# OPTIONS (up; env takes them too and uses them only when no rig is up):
#   --slicer-cpu N      CPU of the slicer, the "NIC" (default 0)
#   --nf-cpu M          CPU of the NF (default 1); must differ from N
#   --no-cpu-counters   leave out the per-CPU nftables counters
#   --offloads MODE     veth offloads: kernel (default, as the kernel sets
#                       them) or off (tx checksum, TSO, GSO, GRO off; see
#                       topo_common.sh)
#
# It is scripts/rig.sh's client - DUT - server rig (same namespaces, names,
# addresses and NFs; PREFIX defaults to "nfin") plus the CPU split:
#
#   - XDP on a veth runs in that veth's NAPI poll, on the CPU that
#     transmitted into it. Traffic endpoints pinned to SLICER_CPU
#     (`taskset -c $SLICER_CPU ...`, or a generator on that CPU) therefore
#     make the slicer run on SLICER_CPU, as a NIC would, off the NF's core.
#   - RPS (receive packet steering) on the DUT veths' receive queue hands
#     every packet the slicer passes on to NF_CPU's backlog: forwarding,
#     conntrack, NAT, nftables, i.e. the NF, run on NF_CPU, and so does the
#     splicer (tc egress of the interface the NF sends out of: it runs in
#     the NF's transmit path, the one part of the "NIC" that a kernel NF
#     cannot be separated from; its cost is measurable on its own with
#     bpf run_time_ns).
#   - RPS on the client's and server's veths sends the endpoints' receive
#     processing to SLICER_CPU, so NF_CPU carries the NF and nothing else.
#   - A table "inet nfsl_cpu" counts forwarded packets per CPU
#     (counter fwd_cpuN, "meta cpu N"): proof of where the NF ran.
#
# Without nfslice attached the same holds for the NF (RPS applies to the
# veth's plain receive path too); SLICER_CPU then only hands packets over.
# See docs/topologies.md.
set -euo pipefail

readonly PROG=${0##*/}
readonly TOPO=inline
# shellcheck source=scripts/topo_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/topo_common.sh"
readonly RIG=$TOPO_ROOT/scripts/rig.sh
# Per-CPU forward counters in the DUT: nft list counter inet nfsl_cpu fwd_cpuN
readonly CPU_NFT_FAMILY=inet CPU_NFT_TABLE=nfsl_cpu CPU_NFT_PREFIX=fwd_cpu

usage() {
	[ $# -gt 0 ] && echo "$PROG: $*" >&2
	cat >&2 <<EOF
usage: $PROG up   [OPTIONS] [PREFIX]   build the inline topology
       $PROG down [PREFIX]             remove it (idempotent)
       $PROG env  [OPTIONS] [PREFIX]   print its shell variables
OPTIONS:
  --slicer-cpu N      CPU that runs the slicer and the traffic endpoints (default 0)
  --nf-cpu M          CPU that runs the NF and the splicer (default 1), != N
  --no-cpu-counters   no per-CPU forward counters (table inet $CPU_NFT_TABLE)
  --offloads MODE     veth offloads: kernel (default: as the kernel sets them)
                      or off (tx checksum, TSO, GSO and GRO off on every veth)
PREFIX: letters, digits, '-' or '_', at most 20 characters (default: nfin)
EOF
	exit 2
}

parse_opts() {
	SLICER_CPU=0
	NF_CPU=1
	CPU_COUNTERS=1
	TOPO_PREFIX=
	while [ $# -gt 0 ]; do
		case $1 in
		--slicer-cpu | --nf-cpu)
			[ $# -ge 2 ] || usage "$1 needs a value"
			[[ $2 =~ ^[0-9]{1,4}$ ]] || usage "$1 '$2' is not a CPU number"
			if [ "$1" = --slicer-cpu ]; then
				SLICER_CPU=$((10#$2))
			else
				NF_CPU=$((10#$2))
			fi
			shift
			;;
		--no-cpu-counters) CPU_COUNTERS=0 ;;
		*)
			# --offloads, help, unknown options, PREFIX
			topo_parse_common "$@"
			shift "$TOPO_NARGS"
			continue
			;;
		esac
		shift
	done
	topo_check_prefix "${TOPO_PREFIX:-nfin}"
	PREFIX=${TOPO_PREFIX:-nfin}
	STATE=$TOPO_STATE_DIR/$TOPO-$PREFIX.env
	[ "$SLICER_CPU" -ne "$NF_CPU" ] ||
		usage "--slicer-cpu and --nf-cpu are both $NF_CPU: the point is two different CPUs"
	ONLINE_CPUS=$(topo_online_cpus | tr '\n' ' ')
	ONLINE_CPUS=${ONLINE_CPUS% }
	local c o ok
	for c in "$SLICER_CPU" "$NF_CPU"; do
		ok=0
		for o in $ONLINE_CPUS; do
			[ "$o" -ne "$c" ] || ok=1
		done
		[ "$ok" -eq 1 ] ||
			usage "CPU $c is not online (online: $ONLINE_CPUS); the inline topology needs two CPUs"
	done
	SLICER_CPU_MASK=$(topo_cpu_mask "$SLICER_CPU")
	NF_CPU_MASK=$(topo_cpu_mask "$NF_CPU")
	if [ "$CPU_COUNTERS" -eq 1 ]; then
		CPU_NFT_COUNTERS=
		for c in $ONLINE_CPUS; do
			CPU_NFT_COUNTERS+="${CPU_NFT_COUNTERS:+ }$CPU_NFT_PREFIX$c"
		done
	else
		CPU_NFT_COUNTERS=
	fi
}

need_tools() {
	local t missing=()
	for t in ip nft taskset; do
		command -v "$t" >/dev/null || missing+=("$t")
	done
	[ ${#missing[@]} -eq 0 ] ||
		topo_die "missing ${missing[*]} (run scripts/install-deps.sh)"
	[ "$(id -u)" -eq 0 ] || topo_die "must run as root (creates network namespaces)"
}

# rig_env: rig.sh's variables for PREFIX, into this shell.
rig_env() {
	eval "$("$RIG" env "$PREFIX")"
}

# set_rps NS DEV MASK: receive packet steering of DEV's (only) receive queue.
# `ip netns exec` mounts a /sys of the namespace, so /sys/class/net/DEV is
# the namespace's DEV.
set_rps() {
	local ns=$1 dev=$2 mask=$3
	ip netns exec "$ns" sh -c "echo $mask > /sys/class/net/$dev/queues/rx-0/rps_cpus" ||
		topo_die "cannot set rps_cpus of $dev in $ns"
}

# The per-CPU forward counters: a base chain of its own at a priority
# before the ACL, policy accept, one rule per online CPU. It changes no
# verdict; its cost (a few ns per packet) is the same sliced and unsliced.
load_cpu_counters() {
	local c counters='' rules=''
	for c in $ONLINE_CPUS; do
		counters+="	counter $CPU_NFT_PREFIX$c {
	}
"
		rules+="		meta cpu $c counter name \"$CPU_NFT_PREFIX$c\"
"
	done
	ip netns exec "$DUT_NS" nft -f - <<EOF
table $CPU_NFT_FAMILY $CPU_NFT_TABLE {
$counters
	chain forward {
		type filter hook forward priority filter - 10; policy accept;
$rules	}
}
EOF
}

up_failed() {
	local rc=$?
	[ "$rc" -ne 0 ] || return 0
	echo "$PROG: up failed, removing $PREFIX" >&2
	cmd_down
}

cmd_up() {
	need_tools
	trap 'cmd_down; exit 1' INT TERM
	trap up_failed EXIT
	# rig.sh rebuilds an existing rig and removes a half-built one itself.
	topo_detach_all "$PREFIX-dut"
	"$RIG" up --offloads "$TOPO_OFFLOADS" "$PREFIX"
	rig_env
	# The NF and the splicer: whatever the DUT receives goes to NF_CPU.
	set_rps "$DUT_NS" "$DUT_IN" "$NF_CPU_MASK"
	set_rps "$DUT_NS" "$DUT_OUT" "$NF_CPU_MASK"
	# The endpoints' receive processing stays with the traffic, off NF_CPU.
	set_rps "$CLI_NS" "$CLI_IF" "$SLICER_CPU_MASK"
	set_rps "$SRV_NS" "$SRV_IF" "$SLICER_CPU_MASK"
	[ "$CPU_COUNTERS" -eq 0 ] || load_cpu_counters
	topo_save_state "$STATE" "$(cmd_env)"
	trap - EXIT INT TERM
}

cmd_down() {
	topo_detach_all "$PREFIX-dut"
	"$RIG" down "$PREFIX"
	rm -f -- "$STATE"
}

cmd_env() {
	local v
	rig_env
	# Names every topology script prints, for tools that drive both.
	# shellcheck disable=SC2034 # printed below through ${!v}
	NF_NS=$DUT_NS
	# shellcheck disable=SC2034
	OFFLOADS=$TOPO_OFFLOADS
	# shellcheck disable=SC2034
	SLICE_NS=$DUT_NS SLICE_IFS="$DUT_IN $DUT_OUT" \
		NF_SNAT_IP4=$DUT_OUT_IP4 NF_SNAT_IP6=$DUT_OUT_IP6
	"$RIG" env "$PREFIX"
	for v in TOPO NF_NS SLICE_NS SLICE_IFS NF_SNAT_IP4 NF_SNAT_IP6 \
		SLICER_CPU NF_CPU SLICER_CPU_MASK NF_CPU_MASK ONLINE_CPUS \
		CPU_NFT_FAMILY CPU_NFT_TABLE CPU_NFT_COUNTERS OFFLOADS; do
		printf '%s=%q\n' "$v" "${!v}"
	done
}

cmd_env_live() {
	local r
	for r in cli dut srv; do
		topo_ns_exists "$PREFIX-$r" || {
			cmd_env
			return 0
		}
	done
	if [ -r "$STATE" ]; then
		cat -- "$STATE"
	else
		cmd_env
	fi
}

# Names for `down PREFIX` (topo_main).
topo_set_prefix() {
	PREFIX=$1
	STATE=$TOPO_STATE_DIR/$TOPO-$PREFIX.env
}

topo_main nfin "$@"
