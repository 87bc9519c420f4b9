#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install everything nfslice needs to build, test and run its demo on a
# fresh Debian 12 machine (docs/platform.md: nothing is preinstalled).
# Idempotent: skips apt when every package is already present.
set -euo pipefail

PKGS=(
	clang llvm make gcc pkg-config libelf-dev zlib1g-dev
	libbpf-dev libxdp-dev xdp-tools bpftool linux-libc-dev libjansson-dev libmicrohttpd-dev
	libcriterion-dev
	iproute2 iputils-ping nftables iperf3 ethtool tcpdump curl linux-perf
	python3 python3-pytest python3-scapy python3-pyroute2 python3-matplotlib
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# bpffs is not mounted on a fresh machine (docs/platform.md).
if ! mount | grep -q ' /sys/fs/bpf type bpf'; then
	mount -t bpf bpf /sys/fs/bpf
fi
