#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# rig.sh — the 3-namespace test rig: client - DUT - server over veth.
#
#   scripts/rig.sh up   [--offloads kernel|off] [PREFIX]   build the rig (rebuilds it if it exists)
#   scripts/rig.sh down [PREFIX]   remove it; idempotent, silent if absent
#   scripts/rig.sh env  [PREFIX]   print VAR=value lines for `eval "$(scripts/rig.sh env P)"`
#
# PREFIX defaults to "nfsl"; the namespaces are ${PREFIX}-cli, ${PREFIX}-dut,
# ${PREFIX}-srv. Everything lives inside those namespaces (the veths are
# created directly in them and never appear in the root namespace), so
# several rigs with different prefixes run side by side with the same
# addresses, and nothing outside the rig is touched.
#
#   ns ${PREFIX}-cli           ns ${PREFIX}-dut (router + NFs)           ns ${PREFIX}-srv
#   cli0 10.211.1.2/24  <--->  dut0 10.211.1.1   dut1 10.211.2.1  <--->  srv0 10.211.2.2/24
#        fd00:211:1::2/64           fd00:211:1::1     fd00:211:2::1           fd00:211:2::2/64
#
# The DUT runs real kernel NFs: IP forwarding, an nftables ACL (table inet
# nfsl_fw, with the named counter nf_in that every forwarded packet hits) and
# conntrack masquerade NAT out of dut1. The server has no route back to the
# client subnet, so client<->server traffic only works through the NAT.
# Offloads and conntrack stay at the kernel's defaults (`up --offloads off`
# for benchmarks that want offloads off). See docs/rig.md.
set -euo pipefail

readonly PROG=${0##*/}
# shellcheck source=scripts/topo_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/topo_common.sh"

# Addresses and names. Identical in every rig: each rig is its own set of
# namespaces, so they never meet.
readonly CLI_IF=cli0 DUT_IN=dut0 DUT_OUT=dut1 SRV_IF=srv0
readonly CLI_IP4=10.211.1.2 DUT_IN_IP4=10.211.1.1
readonly DUT_OUT_IP4=10.211.2.1 SRV_IP4=10.211.2.2
readonly CLI_IP6=fd00:211:1::2 DUT_IN_IP6=fd00:211:1::1
readonly DUT_OUT_IP6=fd00:211:2::1 SRV_IP6=fd00:211:2::2
readonly NET4_LEN=24 NET6_LEN=64
# The SRV_ ones are only printed by cmd_env.
# shellcheck disable=SC2034
readonly CLI_NET4=10.211.1.0/24 SRV_NET4=10.211.2.0/24 \
	CLI_NET6=fd00:211:1::/64 SRV_NET6=fd00:211:2::/64
# Kept at 1500 on purpose, the common link MTU (the slicer is multi-buffer
# XDP and attaches at any MTU: tests/integration/test_jumbo.py uses 9000);
# the splicer must never grow a packet past what the egress veth accepts.
readonly MTU=1500

usage() {
	[ $# -gt 0 ] && echo "$PROG: $*" >&2
	cat >&2 <<EOF
usage: $PROG up   [OPTIONS] [PREFIX]   build the client - DUT - server rig
       $PROG down [PREFIX]             remove it (idempotent)
       $PROG env  [PREFIX]             print its shell variables
OPTIONS (up):
  --offloads kernel|off   veth offloads as the kernel sets them (default), or
                          tx checksum, TSO, GSO and GRO off on every veth
PREFIX: letters, digits, '-' or '_', at most 20 characters (default: nfsl)
EOF
	exit 2
}

set_names() {
	PREFIX=$1
	CLI_NS=$PREFIX-cli
	DUT_NS=$PREFIX-dut
	SRV_NS=$PREFIX-srv
}

need_tools() {
	local t missing=()
	for t in ip nft ethtool sysctl; do
		command -v "$t" >/dev/null || missing+=("$t")
	done
	[ ${#missing[@]} -eq 0 ] ||
		topo_die "missing ${missing[*]} (run scripts/install-deps.sh)"
	[ "$(id -u)" -eq 0 ] ||
		topo_die "must run as root (creates network namespaces)"
}

cmd_down() {
	# Deleting a namespace destroys its veths (and the peer ends), the
	# nftables tables, conntrack entries and any XDP/tc programs attached
	# to its interfaces. Processes still running inside keep the namespace
	# alive; whoever started them must end them (demo.sh does, by PID).
	topo_delete_ns "$CLI_NS" "$DUT_NS" "$SRV_NS"
}

make_links() {
	topo_veth "$CLI_NS" "$CLI_IF" "$DUT_NS" "$DUT_IN"
	topo_veth "$DUT_NS" "$DUT_OUT" "$SRV_NS" "$SRV_IF"

	topo_addr "$CLI_NS" "$CLI_IF" "$CLI_IP4" "$CLI_IP6"
	topo_addr "$DUT_NS" "$DUT_IN" "$DUT_IN_IP4" "$DUT_IN_IP6"
	topo_addr "$DUT_NS" "$DUT_OUT" "$DUT_OUT_IP4" "$DUT_OUT_IP6"
	topo_addr "$SRV_NS" "$SRV_IF" "$SRV_IP4" "$SRV_IP6"

	# Kernel defaults unless `up --offloads off` (topo_common.sh).
	topo_offloads "$CLI_NS" "$CLI_IF"
	topo_offloads "$DUT_NS" "$DUT_IN"
	topo_offloads "$DUT_NS" "$DUT_OUT"
	topo_offloads "$SRV_NS" "$SRV_IF"
}

make_routes() {
	# The client reaches everything through the DUT. The server gets only
	# its connected subnet: no route to 10.211.1.0/24, so replies reach
	# the client only because the DUT masquerades client traffic as
	# 10.211.2.1 / fd00:211:2::1.
	ip -n "$CLI_NS" route add default via "$DUT_IN_IP4" dev "$CLI_IF"
	ip -n "$CLI_NS" -6 route add default via "$DUT_IN_IP6" dev "$CLI_IF"
}

# The DUT's NFs: an ACL firewall (filter, forward hook) and masquerade NAT.
# The named counter nf_in is the first rule of the forward chain, so it
# counts every packet (and byte) that reaches the NF, accepted or not: the
# "bytes that crossed the DUT's NF" measurement of the demo and benchmarks.
load_nft() {
	ip netns exec "$DUT_NS" nft -f - <<EOF
table inet nfsl_fw {
	counter nf_in {
	}

	chain forward {
		type filter hook forward priority filter; policy drop;
		counter name "nf_in"
		ct state established,related accept
		ct state invalid drop
		# A real ACL deny: telnet is never forwarded.
		tcp dport 23 counter drop
		iifname "$DUT_IN" oifname "$DUT_OUT" tcp dport { 5201, 8080 } accept
		iifname "$DUT_IN" oifname "$DUT_OUT" udp dport 5201 accept
		iifname "$DUT_IN" oifname "$DUT_OUT" icmp type echo-request accept
		iifname "$DUT_IN" oifname "$DUT_OUT" icmpv6 type echo-request accept
	}
}

table ip nfsl_nat {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr $CLI_NET4 oifname "$DUT_OUT" masquerade
	}
}

table ip6 nfsl_nat6 {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip6 saddr $CLI_NET6 oifname "$DUT_OUT" masquerade
	}
}
EOF
}

# Router sysctls. Conntrack is left at the kernel's defaults, in particular
# net.netfilter.nf_conntrack_tcp_be_liberal=0: sliced TCP through the NAT
# needs liberal window tracking, and `nfslice attach` sets it in the
# namespace it attaches in (and restores it on detach), so the rig shows
# what a user's router shows (docs/rig.md).
set_sysctls() {
	ip netns exec "$DUT_NS" sysctl -qw net.ipv4.ip_forward=1
	ip netns exec "$DUT_NS" sysctl -qw net.ipv6.conf.all.forwarding=1
}

up_failed() {
	local rc=$?
	[ "$rc" -ne 0 ] || return 0
	echo "$PROG: up failed, removing rig $PREFIX" >&2
	cmd_down
}

cmd_up() {
	need_tools
	if topo_ns_exists "$CLI_NS" || topo_ns_exists "$DUT_NS" ||
		topo_ns_exists "$SRV_NS"; then
		echo "$PROG: rig '$PREFIX' exists; rebuilding it" >&2
		cmd_down
	fi

	# A half-built rig is worse than none: undo everything on any failure
	# or interruption until the rig is complete.
	trap 'cmd_down; exit 1' INT TERM
	trap up_failed EXIT

	local ns
	for ns in "$CLI_NS" "$DUT_NS" "$SRV_NS"; do
		ip netns add "$ns"
		ip -n "$ns" link set dev lo up
		# No duplicate address detection on the rig's point-to-point
		# links: interfaces created from now on inherit "default", and
		# their link-local addresses are usable at once. With DAD the
		# link-locals stay tentative for ~1 s and neighbour discovery
		# (hence the first IPv6 packets) waits for them.
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.accept_dad=0
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0
	done
	make_links
	make_routes
	load_nft
	set_sysctls
	topo_wait_links "rig $PREFIX" "$CLI_NS $CLI_IF" "$DUT_NS $DUT_IN" \
		"$DUT_NS $DUT_OUT" "$SRV_NS $SRV_IF"

	trap - EXIT INT TERM
}

cmd_env() {
	local v
	for v in PREFIX CLI_NS DUT_NS SRV_NS CLI_IF DUT_IN DUT_OUT SRV_IF \
		CLI_IP4 DUT_IN_IP4 DUT_OUT_IP4 SRV_IP4 \
		CLI_IP6 DUT_IN_IP6 DUT_OUT_IP6 SRV_IP6 \
		NET4_LEN NET6_LEN CLI_NET4 SRV_NET4 CLI_NET6 SRV_NET6 MTU \
		NFT_FAMILY NFT_TABLE NFT_COUNTER; do
		printf '%s=%q\n' "$v" "${!v}"
	done
}

# Names of the NF objects, for scripts reading the counter:
#   nft -j list counter "$NFT_FAMILY" "$NFT_TABLE" "$NFT_COUNTER"
# shellcheck disable=SC2034 # printed by cmd_env
readonly NFT_FAMILY=inet NFT_TABLE=nfsl_fw NFT_COUNTER=nf_in

main() {
	[ $# -ge 1 ] || usage "missing command"
	local cmd=$1
	shift
	case $cmd in
	up | down | env) ;;
	-h | --help | help) usage ;;
	*) usage "unknown command '$cmd'" ;;
	esac
	TOPO_PREFIX=
	while [ $# -gt 0 ]; do
		[ "$1" != --offloads ] || [ "$cmd" = up ] ||
			usage "--offloads is an option of up"
		# --offloads, help, unknown options, PREFIX
		topo_parse_common "$@"
		shift "$TOPO_NARGS"
	done
	topo_check_prefix "${TOPO_PREFIX:-nfsl}"
	set_names "${TOPO_PREFIX:-nfsl}"
	case $cmd in
	up) cmd_up ;;
	down) cmd_down ;;
	env) cmd_env ;;
	esac
}

main "$@"
