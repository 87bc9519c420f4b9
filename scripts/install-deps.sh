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
	# libclang_rt.fuzzer-x86_64.a: clang -fsanitize=fuzzer (tests/fuzz/)
	libclang-rt-14-dev
	iproute2 iputils-ping nftables iperf3 ethtool tcpdump curl linux-perf
	python3 python3-pytest python3-scapy python3-pyroute2 python3-matplotlib
	# pytest -n: the integration test files on every CPU (tests/run.sh)
	python3-pytest-xdist
	python3-bpfcc linux-headers-amd64
	# systemd-analyze: nfsliced.service's exposure check (test_unit.py)
	systemd
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

# bcc (userspace/bcc/) compiles its C with kernel headers at run time. This
# kernel ships none (no /lib/modules/$(uname -r), no CONFIG_IKHEADERS):
# Debian's newest linux-headers-*-amd64 (the linux-headers-amd64
# metapackage) serve the compiler, linked as Debian links its own
# kernels' build and source directories. Struct layouts and drop reasons
# the tools take from the running kernel (BTF, tracefs), not from these
# headers (docs/platform.md). Links already there are left alone.
kmod=/lib/modules/$(uname -r)
if [ ! -e "$kmod/build" ]; then
	hdr=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -n "$hdr" ] && [ -d "${hdr%-amd64}-common" ]; then
		echo "install-deps: linking $kmod/build -> $hdr (bcc)"
		mkdir -p "$kmod"
		ln -sfn "$hdr" "$kmod/build"
		[ -e "$kmod/source" ] || ln -sfn "${hdr%-amd64}-common" "$kmod/source"
	else
		echo "install-deps: no /usr/src/linux-headers-*-amd64: the bcc tools will not compile" >&2
	fi
fi

# tracefs is not mounted at boot here; the bcc tools attach to tracepoints.
if ! mount | grep -q ' /sys/kernel/tracing type tracefs'; then
	mount -t tracefs tracefs /sys/kernel/tracing
fi
