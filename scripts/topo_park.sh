#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# topo_park.sh — the "park" benchmark topology (PayloadPark §3-§6): a slicer
# node between clients/servers and an NF server, the slicer-to-NF link shaped
# to a fixed rate so that link is the bottleneck.
#
#   scripts/topo_park.sh up   [OPTIONS] [PREFIX]   build it (rebuilds it if it exists)
#   scripts/topo_park.sh down [PREFIX]             remove it; idempotent
#   scripts/topo_park.sh env  [OPTIONS] [PREFIX]   print VAR=value lines for eval
#
# OPTIONS (up; env takes them too and uses them only when no rig is up):
#   --rate RATE      shaped rate of each direction of the slicer-NF link, in
#                    tc units: NUMBER{bit,kbit,mbit,gbit} (default 1gbit)
#   --burst BYTES    token bucket depth (default: 1 ms at RATE, >= 4 frames)
#   --limit BYTES    queue of the shaper (default: 2 ms at RATE, >= 32 frames)
#   --overhead B     bytes added per frame by the shaper's accounting: 24 is
#                    the Ethernet wire (FCS 4 + preamble 8 + gap 12), with a
#                    84 B minimum; 0 counts bare frames (default 24)
#   --no-nat         no masquerade on the NF server (firewall only)
#   --nf-delay USEC  hold every packet on its way to the NF server USEC
#                    microseconds (0-10000000): a delay namespace ${PREFIX}-dly
#                    on the link runs build/nfslice-delay (see below)
#   --delay-cpu N    CPU of the delay line (default: any)
#   --nf-ct-liberal  set net.netfilter.nf_conntrack_tcp_be_liberal=1 on the
#                    NF server (default: its kernel default, 0). Needed for
#                    sliced TCP through its stateful ACL and NAT: see below
#   --offloads MODE  veth offloads: kernel (default, as the kernel sets them)
#                    or off (tx checksum, TSO, GSO, GRO off; topo_common.sh)
#   --nf-xsk         the NF server will send with AF_XDP (nfslice-nf on nf0),
#                    which bypasses nf0's qdiscs: shape the NF -> slicer
#                    direction at the slicer node's ingress instead, through
#                    an IFB (slcnf ingress -> u32 + mirred -> ifbnf -> tbf)
#
# PREFIX defaults to "nfpk"; the namespaces are ${PREFIX}-cli, ${PREFIX}-slc,
# ${PREFIX}-nf, ${PREFIX}-srv. As in scripts/rig.sh the veths are created
# inside the namespaces; nothing outside them is touched.
#
#   ns -cli            ns -slc (slicer node, "the switch")            ns -srv
#   cli0 10.212.1.2 -- slc0 10.212.1.1          slc1 10.212.2.1 -- srv0 10.212.2.2
#                      [XDP slicer + tc splicer on slc0 and slc1]
#                      slcnf 10.212.3.1   (shaped: tbf on slcnf and nf0 egress)
#                        |
#                      nf0 10.212.3.2   ns -nf (NF server: forwarding, nftables
#                                       ACL with counter nf_in, masquerade NAT)
#
# Every packet a client or a server sends is routed by the slicer node to the
# NF server (policy routing: iif slc0/slc1 -> table 100 -> default via the NF
# server), which forwards it back out the same link; the slicer node then
# delivers it by its main table. With nfslice attached to slc0 and slc1, the
# shaped link carries only sliced headers, both ways. See docs/topologies.md.
#
# The NF server is outside the slicing domain (another host in PayloadPark's
# setting): `nfslice attach` on the slicer node sets liberal TCP window
# tracking in the slicer node's namespace only, and the NF server's
# conntrack, which sees sliced segments shorter than their sequence space,
# marks the receivers' ACKs of the full data INVALID unless its operator sets
# be_liberal: that is --nf-ct-liberal. Without it, sliced TCP through the NF
# server stalls (UDP and unsliced traffic are unaffected).
#
# With --nf-delay the link gets a bump in the wire, an L2 namespace with no
# addresses: slcnf -- dlya [tc mirred -> TAP dq0 -> nfslice-delay -> dq0 ->
# tc mirred] dlyb -- nf0, and dlyb -> dlya straight back. Every frame to the
# NF server (ARP and ND too) arrives USEC later, as if the NF took that long:
# the payload stays parked that much longer (the store-sizing experiment,
# PayloadPark Fig. 14). netem, the usual way, is not in this kernel. `up`
# starts the delay line, `down` stops it and leaves its JSON report in
# $DELAY_REPORT.
#
# Variables that look unused here are printed by cmd_env through ${!v}.
# shellcheck disable=SC2034
set -euo pipefail

readonly PROG=${0##*/}
readonly TOPO=park
# shellcheck source=scripts/topo_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/topo_common.sh"

# Interfaces. slcnf, the slicer node's NF-facing veth, is deliberately NOT
# in the slicing domain: sliced headers cross the shaped link sliced, come
# back sliced, and the splicer on slc0/slc1 (their egress) restores them.
readonly CLI_IF=cli0 SLC_CLI_IF=slc0 SLC_SRV_IF=slc1 SLC_NF_IF=slcnf \
	NF_IF=nf0 SRV_IF=srv0
# The delay namespace's interfaces (--nf-delay): toward the slicer node,
# toward the NF server, and the delay line's TAP device.
readonly DLY_A_IF=dlya DLY_B_IF=dlyb DLY_TAP=dq0
readonly CLI_IP4=10.212.1.2 SLC_CLI_IP4=10.212.1.1
readonly SRV_IP4=10.212.2.2 SLC_SRV_IP4=10.212.2.1
readonly SLC_NF_IP4=10.212.3.1 NF_IP4=10.212.3.2
# --nf-xsk: the IFB that shapes what the NF server sends, at slcnf ingress.
readonly SLC_IFB=ifbnf
readonly CLI_IP6=fd00:212:1::2 SLC_CLI_IP6=fd00:212:1::1
readonly SRV_IP6=fd00:212:2::2 SLC_SRV_IP6=fd00:212:2::1
readonly SLC_NF_IP6=fd00:212:3::1 NF_IP6=fd00:212:3::2
readonly NET4_LEN=24 NET6_LEN=64
readonly CLI_NET4=10.212.1.0/24 SRV_NET4=10.212.2.0/24 LINK_NET4=10.212.3.0/24
readonly CLI_NET6=fd00:212:1::/64 SRV_NET6=fd00:212:2::/64 LINK_NET6=fd00:212:3::/64
# Routing table of the slicer node for traffic entering from clients/servers.
readonly RT_TABLE=100
# 1500 everywhere, the common link MTU (the multi-buffer slicer would attach
# at any); the splicer must never rebuild a packet larger than the egress veth
# accepts (docs/platform.md, docs/rig.md).
readonly MTU=1500
# NF objects (as in scripts/rig.sh), in the NF server's namespace:
#   nft -j list counter "$NFT_FAMILY" "$NFT_TABLE" "$NFT_COUNTER"
readonly NFT_FAMILY=inet NFT_TABLE=nfsl_fw NFT_COUNTER=nf_in
# Largest frame on the link: MTU + Ethernet header.
readonly FRAME=$((MTU + 14))

usage() {
	[ $# -gt 0 ] && echo "$PROG: $*" >&2
	cat >&2 <<EOF
usage: $PROG up   [OPTIONS] [PREFIX]   build the park topology
       $PROG down [PREFIX]             remove it (idempotent)
       $PROG env  [OPTIONS] [PREFIX]   print its shell variables
OPTIONS:
  --rate RATE     slicer-NF link rate per direction, NUMBER{bit,kbit,mbit,gbit},
                  1mbit-100gbit (default 1gbit)
  --burst BYTES   token bucket depth (default: 1 ms at RATE, at least 4 frames)
  --limit BYTES   shaper queue (default: 2 ms at RATE, at least 32 frames)
  --overhead B    per-frame wire overhead the shaper counts, 0-64 (default 24:
                  FCS + preamble + inter-frame gap; 0: bare frames)
  --no-nat        the NF server only filters (no masquerade)
  --nf-delay USEC hold every packet to the NF server USEC microseconds,
                  0-10000000 (a delay namespace on the link; default: none)
  --delay-cpu N   CPU that runs the delay line (default: any)
  --nf-ct-liberal liberal TCP window tracking on the NF server (needed for
                  sliced TCP through its conntrack; default: kernel default)
  --offloads MODE veth offloads: kernel (default: as the kernel sets them) or
                  off (tx checksum, TSO, GSO and GRO off on every veth)
  --nf-xsk        the NF server sends with AF_XDP (nfslice-nf): shape its
                  direction at the slicer node's ingress (IFB), since AF_XDP
                  transmit bypasses nf0's qdisc
PREFIX: letters, digits, '-' or '_', at most 20 characters (default: nfpk)
EOF
	exit 2
}

# rate_bps RATE: bits per second of a tc rate NUMBER{bit,kbit,mbit,gbit}
# (tc's units are decimal: 1gbit = 10^9 bit/s).
rate_bps() {
	local r=${1,,} n unit
	[[ $r =~ ^([0-9]{1,9})(bit|kbit|mbit|gbit)$ ]] || return 1
	n=$((10#${BASH_REMATCH[1]}))
	unit=${BASH_REMATCH[2]}
	case $unit in
	bit) echo "$n" ;;
	kbit) echo $((n * 1000)) ;;
	mbit) echo $((n * 1000000)) ;;
	gbit) echo $((n * 1000000000)) ;;
	esac
}

parse_opts() {
	LINK_RATE=1gbit
	LINK_BURST=
	LINK_LIMIT=
	LINK_OVERHEAD=24
	NF_NAT=1
	NF_DELAY_US=
	DELAY_CPU=
	NF_CT_LIBERAL=0
	NF_XSK=0
	TOPO_PREFIX=
	while [ $# -gt 0 ]; do
		case $1 in
		--rate | --burst | --limit | --overhead)
			[ $# -ge 2 ] || usage "$1 needs a value"
			case $1 in
			--rate) LINK_RATE=$2 ;;
			--burst) LINK_BURST=$2 ;;
			--limit) LINK_LIMIT=$2 ;;
			--overhead) LINK_OVERHEAD=$2 ;;
			esac
			shift
			;;
		--nf-delay | --delay-cpu)
			[ $# -ge 2 ] || usage "$1 needs a value"
			[[ $2 =~ ^[0-9]{1,8}$ ]] || usage "$1 '$2' is not a whole number"
			if [ "$1" = --nf-delay ]; then
				NF_DELAY_US=$((10#$2))
			else
				DELAY_CPU=$((10#$2))
			fi
			shift
			;;
		--no-nat) NF_NAT=0 ;;
		--nf-ct-liberal) NF_CT_LIBERAL=1 ;;
		--nf-xsk) NF_XSK=1 ;;
		*)
			# --offloads, help, unknown options, PREFIX
			topo_parse_common "$@"
			shift "$TOPO_NARGS"
			continue
			;;
		esac
		shift
	done
	topo_check_prefix "${TOPO_PREFIX:-nfpk}"
	set_names "${TOPO_PREFIX:-nfpk}"

	LINK_RATE=${LINK_RATE,,}
	LINK_RATE_BPS=$(rate_bps "$LINK_RATE") ||
		usage "--rate '$LINK_RATE' is not NUMBER{bit,kbit,mbit,gbit} (e.g. 1gbit, 500mbit)"
	if [ "$LINK_RATE_BPS" -lt 1000000 ] || [ "$LINK_RATE_BPS" -gt 100000000000 ]; then
		usage "--rate '$LINK_RATE' is outside 1mbit-100gbit"
	fi
	if ! [[ $LINK_OVERHEAD =~ ^[0-9]{1,3}$ ]] || [ "$LINK_OVERHEAD" -gt 64 ]; then
		usage "--overhead '$LINK_OVERHEAD' is not a number of bytes in 0-64"
	fi
	LINK_OVERHEAD=$((10#$LINK_OVERHEAD))
	# The smallest frame the shaper counts: a minimal Ethernet frame (60 B
	# without FCS, the padding a wire adds) plus the overhead.
	if [ "$LINK_OVERHEAD" -gt 0 ]; then
		LINK_MPU=$((60 + LINK_OVERHEAD))
	else
		LINK_MPU=0
	fi
	local wire=$((FRAME + LINK_OVERHEAD)) b v
	# Token bucket depth: 1 ms of the rate. tbf sends at veth speed while
	# it has tokens and sleeps on an hrtimer otherwise; a bucket of a frame
	# or two would mean a timer wakeup per frame (80k/s at 1 Gbit/s), whose
	# latency on a VM makes the achieved rate fall short of RATE. 1 ms of
	# tokens lets it release frames in small batches while any burst above
	# RATE stays within 1 ms worth of data (0.1% of a 1 s measurement).
	# At least 4 full frames, so a frame always fits the bucket.
	if [ -z "$LINK_BURST" ]; then
		b=$((LINK_RATE_BPS / 8 / 1000))
		LINK_BURST=$((b > 4 * wire ? b : 4 * wire))
	fi
	# Queue: 2 ms of the rate, like a switch port buffer of a few hundred
	# KB at 1 Gbit/s. Enough for TCP (the veth round trip is ~0.1 ms) and
	# short enough that an overloaded link drops instead of piling up
	# latency (and parked payloads) for long. At least 32 full frames.
	if [ -z "$LINK_LIMIT" ]; then
		b=$((LINK_RATE_BPS / 8 / 500))
		LINK_LIMIT=$((b > 32 * wire ? b : 32 * wire))
	fi
	for b in "burst=$LINK_BURST" "limit=$LINK_LIMIT"; do
		v=${b#*=}
		if ! [[ $v =~ ^[0-9]{1,10}$ ]] || [ "$v" -lt "$wire" ] || [ "$v" -gt 1000000000 ]; then
			usage "--${b%%=*} '$v' is not a byte count from one full frame ($wire B) to 1000000000"
		fi
	done
	LINK_BURST=$((10#$LINK_BURST))
	LINK_LIMIT=$((10#$LINK_LIMIT))
	if [ -n "$NF_DELAY_US" ] && [ "$NF_DELAY_US" -gt 10000000 ]; then
		usage "--nf-delay '$NF_DELAY_US' is more than 10000000 us (10 s)"
	fi
	if [ -n "$DELAY_CPU" ]; then
		[ -n "$NF_DELAY_US" ] || usage "--delay-cpu needs --nf-delay"
		topo_online_cpus | grep -qx "$DELAY_CPU" ||
			usage "--delay-cpu $DELAY_CPU is not an online CPU ($(tr '\n' ' ' </sys/devices/system/cpu/online))"
	fi
	if [ "$NF_NAT" -eq 1 ]; then
		# What the servers see as the clients' address.
		NF_SNAT_IP4=$NF_IP4 NF_SNAT_IP6=$NF_IP6
	else
		NF_SNAT_IP4=$CLI_IP4 NF_SNAT_IP6=$CLI_IP6
	fi
}

set_names() {
	PREFIX=$1
	CLI_NS=$PREFIX-cli
	SLC_NS=$PREFIX-slc
	NF_NS=$PREFIX-nf
	SRV_NS=$PREFIX-srv
	DLY_NS=$PREFIX-dly
	# What the benchmark tools attach nfslice to:
	#   ip netns exec "$SLICE_NS" nfslice attach --nf-port $SLICE_NF_PORTS $SLICE_IFS
	SLICE_NS=$SLC_NS
	SLICE_IFS="$SLC_CLI_IF $SLC_SRV_IF"
	# Headers leave for the NF server and come back through slcnf: an NF
	# port of the domain (nfslice attach --nf-port), where no slicer runs.
	SLICE_NF_PORTS=$SLC_NF_IF
	STATE=$TOPO_STATE_DIR/$TOPO-$PREFIX.env
	DELAY_PID=$TOPO_STATE_DIR/$TOPO-$PREFIX.delay.pid
	DELAY_REPORT=$TOPO_STATE_DIR/$TOPO-$PREFIX.delay.json
}

# The namespaces of the topology; the delay namespace only with --nf-delay
# (down removes it whenever it exists).
all_ns() {
	echo "$CLI_NS" "$SLC_NS" "$NF_NS" "$SRV_NS"
	[ -z "${NF_DELAY_US:-}" ] || echo "$DLY_NS"
}

need_tools() {
	local t missing=()
	for t in ip tc nft ethtool sysctl; do
		command -v "$t" >/dev/null || missing+=("$t")
	done
	[ ${#missing[@]} -eq 0 ] ||
		topo_die "missing ${missing[*]} (run scripts/install-deps.sh)"
	[ "$(id -u)" -eq 0 ] || topo_die "must run as root (creates network namespaces)"
}

cmd_down() {
	# nfslice domains first: their pins live in the host's bpffs.
	topo_detach_all "$SLICE_NS"
	stop_delay
	# Deleting the namespaces removes the veths, qdiscs, nftables tables,
	# conntrack state and XDP/tc programs with them. Processes still inside
	# keep a namespace alive: whoever started them ends them.
	# shellcheck disable=SC2046 # one word per namespace
	topo_delete_ns $(all_ns) $DLY_NS
	rm -f -- "$STATE"
}

# The delay line's process: started by up (start_delay), ended by down. The
# pid file names it; it is signalled only while /proc says it is still
# nfslice-delay, so a recycled pid is never hit.
stop_delay() {
	local pid _
	[ -r "$DELAY_PID" ] || return 0
	pid=$(cat -- "$DELAY_PID")
	if [[ $pid =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
		grep -q nfslice-delay; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 100); do
			[ -e "/proc/$pid" ] || break
			sleep 0.02
		done
	fi
	rm -f -- "$DELAY_PID"
}

# The bump in the wire (--nf-delay): see the header. IPv6 is off in the
# delay namespace so that it sends nothing of its own into the line.
make_delay() {
	local d
	topo_veth "$DLY_NS" "$DLY_A_IF" "$SLC_NS" "$SLC_NF_IF"
	topo_veth "$DLY_NS" "$DLY_B_IF" "$NF_NS" "$NF_IF"
	ip -n "$DLY_NS" tuntap add dev "$DLY_TAP" mode tap
	# Room for bursts between two reads of the delay line (default 500).
	ip -n "$DLY_NS" link set dev "$DLY_TAP" mtu "$MTU" txqueuelen 10000
	for d in "$DLY_A_IF" "$DLY_B_IF" "$DLY_TAP"; do
		ip -n "$DLY_NS" link set dev "$d" up
		tc -n "$DLY_NS" qdisc add dev "$d" clsact
	done
	topo_offloads "$DLY_NS" "$DLY_A_IF"
	topo_offloads "$DLY_NS" "$DLY_B_IF"
	# u32 "match u32 0 0" matches every frame (no matchall classifier here).
	mirred "$DLY_A_IF" "$DLY_TAP"
	mirred "$DLY_TAP" "$DLY_B_IF"
	mirred "$DLY_B_IF" "$DLY_A_IF"
}

# mirred FROM TO: every frame received on FROM leaves through TO.
mirred() {
	tc -n "$DLY_NS" filter add dev "$1" ingress protocol all u32 match u32 0 0 \
		action mirred egress redirect dev "$2"
}

start_delay() {
	local bin=$TOPO_ROOT/build/nfslice-delay cpu=() _
	[ -x "$bin" ] || topo_die "$bin is missing (run make)"
	[ -z "$DELAY_CPU" ] || cpu=(--cpu "$DELAY_CPU")
	rm -f -- "$DELAY_REPORT"
	ip netns exec "$DLY_NS" setsid "$bin" --dev "$DLY_TAP" --delay "$NF_DELAY_US" \
		"${cpu[@]}" --json >"$DELAY_REPORT" 2>&1 </dev/null &
	echo $! >"$DELAY_PID"
	# Attached once the TAP device has carrier (the kernel sets it when a
	# process attaches a queue).
	for _ in $(seq 150); do
		ip -n "$DLY_NS" link show dev "$DLY_TAP" | grep -q LOWER_UP && return 0
		kill -0 "$(cat -- "$DELAY_PID")" 2>/dev/null ||
			topo_die "nfslice-delay exited: $(cat -- "$DELAY_REPORT")"
		sleep 0.02
	done
	topo_die "nfslice-delay did not attach to $DLY_TAP within 3 s"
}

make_links() {
	topo_veth "$CLI_NS" "$CLI_IF" "$SLC_NS" "$SLC_CLI_IF"
	topo_veth "$SLC_NS" "$SLC_SRV_IF" "$SRV_NS" "$SRV_IF"
	if [ -n "$NF_DELAY_US" ]; then
		make_delay
	else
		topo_veth "$SLC_NS" "$SLC_NF_IF" "$NF_NS" "$NF_IF"
	fi

	topo_addr "$CLI_NS" "$CLI_IF" "$CLI_IP4" "$CLI_IP6"
	topo_addr "$SLC_NS" "$SLC_CLI_IF" "$SLC_CLI_IP4" "$SLC_CLI_IP6"
	topo_addr "$SLC_NS" "$SLC_SRV_IF" "$SLC_SRV_IP4" "$SLC_SRV_IP6"
	topo_addr "$SLC_NS" "$SLC_NF_IF" "$SLC_NF_IP4" "$SLC_NF_IP6"
	topo_addr "$NF_NS" "$NF_IF" "$NF_IP4" "$NF_IP6"
	topo_addr "$SRV_NS" "$SRV_IF" "$SRV_IP4" "$SRV_IP6"

	# Kernel defaults unless `up --offloads off` (topo_common.sh).
	topo_offloads "$CLI_NS" "$CLI_IF"
	topo_offloads "$SLC_NS" "$SLC_CLI_IF"
	topo_offloads "$SLC_NS" "$SLC_SRV_IF"
	topo_offloads "$SLC_NS" "$SLC_NF_IF"
	topo_offloads "$NF_NS" "$NF_IF"
	topo_offloads "$SRV_NS" "$SRV_IF"
}

# Sysctls, before the interfaces exist where "default" matters (new
# interfaces copy net.ipv4.conf.default.*), and set on "all" too because
# the kernel combines all and per-interface values (OR or MAX).
ns_sysctls() {
	local ns
	for ns in $(all_ns); do
		# No duplicate address detection on point-to-point links (as in
		# rig.sh): addresses and link-locals are usable at once.
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.accept_dad=0
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0
	done
	# Slicer node: a router.
	ip netns exec "$SLC_NS" sysctl -qw net.ipv4.ip_forward=1
	ip netns exec "$SLC_NS" sysctl -qw net.ipv6.conf.all.forwarding=1
	# rp_filter off on the slicer node. Packets coming back from the NF
	# server arrive on slcnf with a client's or a server's source address;
	# strict reverse-path filtering looks that source up in the main table
	# (policy rules with iif do not apply to the reverse lookup), finds it
	# behind slc0/slc1, not slcnf, and drops the packet. The effective value
	# is max(all, interface), so both go to 0 ("default" for new
	# interfaces). A fresh namespace usually has 0 already, but not when
	# net.core.devconf_inherit_init_net copies the host's (Debian: 2).
	local k
	for k in all default; do
		ip netns exec "$SLC_NS" sysctl -qw "net.ipv4.conf.$k.rp_filter=0"
		# ICMP redirects: the NF server sends every packet back out the
		# interface it came in by, which is what a redirect reports.
		# The slicer node must never act on one (it would route clients
		# straight to servers, past the NF). With forwarding on, Linux
		# already ignores them; 0 makes it explicit.
		ip netns exec "$SLC_NS" sysctl -qw "net.ipv4.conf.$k.accept_redirects=0"
		ip netns exec "$SLC_NS" sysctl -qw "net.ipv6.conf.$k.accept_redirects=0"
	done

	# NF server: a router whose only interface is nf0 (a "router on a
	# stick"): everything leaves by the interface it came in by.
	ip netns exec "$NF_NS" sysctl -qw net.ipv4.ip_forward=1
	ip netns exec "$NF_NS" sysctl -qw net.ipv6.conf.all.forwarding=1
	# ...so IPv4 would answer every forwarded packet with an ICMP redirect
	# ("use 10.212.3.1 directly"), extra packets on the shaped link.
	# send_redirects is OR(all, interface): both 0. IPv6 has no such
	# switch; the nftables output chain drops its redirects (load_nft).
	for k in all default; do
		ip netns exec "$NF_NS" sysctl -qw "net.ipv4.conf.$k.send_redirects=0"
	done
}

make_routes() {
	# Clients and servers know only the slicer node.
	ip -n "$CLI_NS" route add default via "$SLC_CLI_IP4" dev "$CLI_IF"
	ip -n "$CLI_NS" -6 route add default via "$SLC_CLI_IP6" dev "$CLI_IF"
	if [ "$NF_NAT" -eq 1 ]; then
		# With NAT the servers see the NF server's address only, and
		# have no route to the clients: traffic works only through the
		# NAT (as in rig.sh), so the NF is provably in the path.
		ip -n "$SRV_NS" route add "$LINK_NET4" via "$SLC_SRV_IP4" dev "$SRV_IF"
		ip -n "$SRV_NS" -6 route add "$LINK_NET6" via "$SLC_SRV_IP6" dev "$SRV_IF"
	else
		ip -n "$SRV_NS" route add default via "$SLC_SRV_IP4" dev "$SRV_IF"
		ip -n "$SRV_NS" -6 route add default via "$SLC_SRV_IP6" dev "$SRV_IF"
	fi

	# Slicer node: whatever enters from a client or a server is looked up
	# in table 100, whose only route is the NF server. What comes back
	# from the NF server (iif slcnf) matches no rule and takes the main
	# table: the connected client or server subnet. The local table
	# (priority 0) still comes first, so packets to the slicer node itself
	# (ARP/ND, ping) are not detoured.
	local fam
	for fam in -4 -6; do
		ip -n "$SLC_NS" "$fam" rule add pref 100 iif "$SLC_CLI_IF" lookup "$RT_TABLE"
		ip -n "$SLC_NS" "$fam" rule add pref 101 iif "$SLC_SRV_IF" lookup "$RT_TABLE"
	done
	ip -n "$SLC_NS" route add default via "$NF_IP4" dev "$SLC_NF_IF" table "$RT_TABLE"
	ip -n "$SLC_NS" -6 route add default via "$NF_IP6" dev "$SLC_NF_IF" table "$RT_TABLE"

	# NF server: everything goes back to the slicer node.
	ip -n "$NF_NS" route add default via "$SLC_NF_IP4" dev "$NF_IF"
	ip -n "$NF_NS" -6 route add default via "$SLC_NF_IP6" dev "$NF_IF"
}

# The link shaper: tbf as root qdisc of both ends' egress (slcnf: slicer ->
# NF, nf0: NF -> slicer), one token bucket per direction as on a full-duplex
# wire. tbf rather than htb: one link, one rate, no classes to configure;
# netem is not in this kernel. With --overhead > 0 a size table ("stab")
# makes tbf count each frame as a wire does: frame + FCS + preamble + gap,
# at least a minimal frame, so RATE means what it means on a real NIC and
# small sliced packets are not counted as cheaper than a wire makes them.
#
# With --nf-xsk the NF server transmits with AF_XDP, which leaves through
# __dev_direct_xmit past nf0's qdisc (docs/platform.md): that direction is
# shaped where it arrives instead, at slcnf's ingress, redirected to an IFB
# whose egress runs the same tbf. XDP on slcnf (the slicer taking drop
# notices) runs before tc ingress, so notices are not shaped on arrival:
# they crossed the link as frames all the same.
shape_link() {
	local ns dev stab=() ends=("$SLC_NS $SLC_NF_IF")
	if [ "$LINK_OVERHEAD" -gt 0 ]; then
		stab=(stab overhead "$LINK_OVERHEAD" mpu "$LINK_MPU")
	fi
	if [ "$NF_XSK" -eq 1 ]; then
		ip -n "$SLC_NS" link add "$SLC_IFB" type ifb
		ip -n "$SLC_NS" link set "$SLC_IFB" up
		tc -n "$SLC_NS" qdisc add dev "$SLC_NF_IF" handle ffff: ingress
		# u32 matching everything: this kernel has no matchall/flower
		tc -n "$SLC_NS" filter add dev "$SLC_NF_IF" parent ffff: protocol all \
			u32 match u32 0 0 action mirred egress redirect dev "$SLC_IFB"
		ends+=("$SLC_NS $SLC_IFB")
	else
		ends+=("$NF_NS $NF_IF")
	fi
	for ns in "${ends[@]}"; do
		dev=${ns#* }
		ns=${ns%% *}
		tc -n "$ns" qdisc add dev "$dev" root "${stab[@]}" tbf \
			rate "$LINK_RATE" burst "$LINK_BURST" limit "$LINK_LIMIT"
	done
}

# The NF server's NFs: the ACL firewall of rig.sh (named counter nf_in first,
# stateful, a deny, client -> server allows) and masquerade NAT. The rules
# match addresses instead of interfaces: packets enter and leave by nf0.
load_nft() {
	local nat=
	if [ "$NF_NAT" -eq 1 ]; then
		nat="
table ip nfsl_nat {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr $CLI_NET4 ip daddr $SRV_NET4 oifname \"$NF_IF\" masquerade
	}
}

table ip6 nfsl_nat6 {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip6 saddr $CLI_NET6 ip6 daddr $SRV_NET6 oifname \"$NF_IF\" masquerade
	}
}"
	fi
	ip netns exec "$NF_NS" nft -f - <<EOF
table inet $NFT_TABLE {
	counter $NFT_COUNTER {
	}

	chain forward {
		type filter hook forward priority filter; policy drop;
		counter name "$NFT_COUNTER"
		ct state established,related accept
		ct state invalid drop
		tcp dport 23 counter drop
		ip saddr $CLI_NET4 ip daddr $SRV_NET4 tcp dport { 5201, 8080 } accept
		ip saddr $CLI_NET4 ip daddr $SRV_NET4 udp dport 5201 accept
		ip saddr $CLI_NET4 ip daddr $SRV_NET4 icmp type echo-request accept
		ip6 saddr $CLI_NET6 ip6 daddr $SRV_NET6 tcp dport { 5201, 8080 } accept
		ip6 saddr $CLI_NET6 ip6 daddr $SRV_NET6 udp dport 5201 accept
		ip6 saddr $CLI_NET6 ip6 daddr $SRV_NET6 icmpv6 type echo-request accept
	}

	# IPv6 sends a redirect for every hairpinned packet (rate-limited) and
	# has no send_redirects switch: drop them here, counted.
	chain output {
		type filter hook output priority filter; policy accept;
		icmp type redirect counter drop
		icmpv6 type nd-redirect counter drop
	}
}
$nat
EOF
	# Liberal TCP window tracking on the NF server, only if asked
	# (--nf-ct-liberal; see the header): conntrack there sees sliced
	# segments (shorter than their sequence space) and the receivers' ACKs
	# of the full data; strict tracking marks those ACKs INVALID, the ACL
	# drops them and NAT stops translating them (docs/topologies.md). Set
	# after the rules: the sysctl exists once conntrack is in use.
	if [ "$NF_CT_LIBERAL" -eq 1 ]; then
		ip netns exec "$NF_NS" sysctl -qw net.netfilter.nf_conntrack_tcp_be_liberal=1
	fi
}

up_failed() {
	local rc=$?
	[ "$rc" -ne 0 ] || return 0
	echo "$PROG: up failed, removing $PREFIX" >&2
	cmd_down
}

cmd_up() {
	need_tools
	local ns
	for ns in $(all_ns); do
		if topo_ns_exists "$ns"; then
			echo "$PROG: topology '$PREFIX' exists; rebuilding it" >&2
			cmd_down
			break
		fi
	done
	trap 'cmd_down; exit 1' INT TERM
	trap up_failed EXIT

	for ns in $(all_ns); do
		ip netns add "$ns"
		ip -n "$ns" link set dev lo up
	done
	mkdir -p -- "$TOPO_STATE_DIR"
	if [ -n "$NF_DELAY_US" ]; then
		ip netns exec "$DLY_NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
		ip netns exec "$DLY_NS" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
	fi
	ns_sysctls
	make_links
	[ -z "$NF_DELAY_US" ] || start_delay
	make_routes
	shape_link
	load_nft
	topo_wait_links "$PREFIX" "$CLI_NS $CLI_IF" "$SLC_NS $SLC_CLI_IF" "$SLC_NS $SLC_SRV_IF" \
		"$SLC_NS $SLC_NF_IF" "$NF_NS $NF_IF" "$SRV_NS $SRV_IF"
	topo_save_state "$STATE" "$(cmd_env)"

	trap - EXIT INT TERM
}

cmd_env() {
	local v OFFLOADS=$TOPO_OFFLOADS
	for v in TOPO PREFIX CLI_NS SLC_NS NF_NS SRV_NS SLICE_NS SLICE_IFS SLICE_NF_PORTS \
		CLI_IF SLC_CLI_IF SLC_SRV_IF SLC_NF_IF NF_IF SRV_IF \
		CLI_IP4 SLC_CLI_IP4 SLC_SRV_IP4 SLC_NF_IP4 NF_IP4 SRV_IP4 \
		CLI_IP6 SLC_CLI_IP6 SLC_SRV_IP6 SLC_NF_IP6 NF_IP6 SRV_IP6 \
		NET4_LEN NET6_LEN CLI_NET4 SRV_NET4 LINK_NET4 \
		CLI_NET6 SRV_NET6 LINK_NET6 MTU RT_TABLE \
		LINK_RATE LINK_RATE_BPS LINK_BURST LINK_LIMIT LINK_OVERHEAD LINK_MPU \
		NF_NAT NF_SNAT_IP4 NF_SNAT_IP6 NFT_FAMILY NFT_TABLE NFT_COUNTER \
		NF_DELAY_US DELAY_CPU DLY_NS DLY_A_IF DLY_B_IF DLY_TAP DELAY_REPORT \
		NF_CT_LIBERAL NF_XSK SLC_IFB OFFLOADS; do
		printf '%s=%q\n' "$v" "${!v}"
	done
}

# env: the values of the topology that is up (saved by `up`), otherwise the
# ones `up` would use with the same options.
cmd_env_live() {
	local ns up=1
	for ns in $(all_ns); do
		topo_ns_exists "$ns" || up=0
	done
	if [ "$up" -eq 1 ] && [ -r "$STATE" ]; then
		cat -- "$STATE"
	else
		cmd_env
	fi
}

# Names for `down PREFIX` (topo_main).
topo_set_prefix() {
	set_names "$1"
}

topo_main nfpk "$@"
