# SPDX-License-Identifier: GPL-2.0
# nfslice: payload slicing for shallow network functions.
#   make          build build/nfslice, build/nfslice-pktgen, build/nfslice-delay
#                 and the BPF objects
#   make test     install deps, build, run unit (Criterion) + netns (pytest) tests
#   make demo     install deps, build, run the netns rig demo on real traffic
#   make bench    benchmark suite into bench/results/ (QUICK=1: under 5 min)
#   make V=1      show full commands

include mk/common.mk

.PHONY: all bpf cli loader pktgen delay unit deps test demo bench clean

all: loader pktgen delay

bpf:
	$(Q)$(MAKE) -C bpf

# The user-space objects the tools share (mk/common.mk CLI_OBJS).
cli:
	$(Q)$(MAKE) -C delay cli

loader: bpf cli
	$(Q)$(MAKE) -C loader

pktgen: bpf cli
	$(Q)$(MAKE) -C pktgen

delay: cli
	$(Q)$(MAKE) -C delay

unit: bpf
	$(Q)$(MAKE) -C tests/unit

deps:
	$(Q)scripts/install-deps.sh

test: deps
	$(Q)$(MAKE) all unit
	$(Q)tests/run.sh

demo: deps
	$(Q)$(MAKE) all
	$(Q)scripts/demo.sh

bench: deps
	$(Q)$(MAKE) all
	$(Q)$(MAKE) -C bench
	$(Q)QUICK=$(QUICK) bench/suite.sh

clean:
	$(call msg,CLEAN,build)
	$(Q)rm -rf $(BUILD)
