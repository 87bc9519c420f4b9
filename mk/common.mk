# SPDX-License-Identifier: GPL-2.0
# Shared make fragment: toolchain, flags, dependencies, BPF object and
# skeleton rules. Included by every folder's Makefile (a tool's Makefile
# includes mk/tool.mk, which includes this). `make V=1` shows full commands.

.DEFAULT_GOAL := all
# A recipe that fails leaves no half-written target (an empty skeleton,
# a truncated object) for the next make to take as up to date.
.DELETE_ON_ERROR:

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
BUILD := $(ROOT)/build
OUTPUT := $(BUILD)/.output

CLANG ?= clang
CC ?= gcc
AR ?= ar
BPFTOOL ?= bpftool
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
MULTIARCH := $(shell $(CC) -dumpmachine)

# Header dependencies of every object, C and BPF: the compiler writes
# X.d next to X.o, and the Makefiles include them (-MP: a removed header
# is no error).
DEPFLAGS := -MMD -MP

# -mcpu=v3: clang 14 at v2 makes code the verifier rejects for every
# variable-length copy (docs/platform.md).
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) \
	-I$(ROOT)/include -I$(ROOT)/bpf -I/usr/include/$(MULTIARCH) \
	-Wall -Werror -Wno-unused-function
CFLAGS ?= -g -O2
CFLAGS += -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
	-I$(ROOT)/include -I$(ROOT)/lib/util -I$(ROOT)/lib/nfsl -I$(ROOT)/lib/xsk -I$(ROOT)/lib/nf -I$(OUTPUT)
BPF_LIBS := -lxdp -lbpf -lelf -lz

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-9s %s\n' "$(1)" "$(patsubst $(ROOT)/%,%,$(2))";
MAKEFLAGS += --no-print-directory
endif

$(OUTPUT) $(BUILD):
	$(Q)mkdir -p $@

# BPF programs live next to their users: bpf/ the production datapath
# (slicer, splicer), pktgen/ the generator and its peer and sink programs,
# bench/bpf/ the benchmarks' baselines and latency receiver. Their objects
# and skeletons all go to build/.output/NAME.bpf.o and NAME.skel.h.
BPF_SRC_DIRS := $(ROOT)/bpf $(ROOT)/pktgen $(ROOT)/bench/bpf
vpath %.bpf.c $(BPF_SRC_DIRS)

$(OUTPUT)/%.bpf.o: %.bpf.c | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

-include $(wildcard $(OUTPUT)/*.bpf.d)

# Keep the BPF objects and skeletons built on the way (make would delete
# them as intermediates of the pattern rules).
.SECONDARY:
