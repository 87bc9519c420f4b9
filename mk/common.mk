# SPDX-License-Identifier: GPL-2.0
# Shared make fragment: toolchain, flags, BPF object and skeleton rules.
# Included by every folder's Makefile. `make V=1` shows full commands.

.DEFAULT_GOAL := all
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
BUILD := $(ROOT)/build
OUTPUT := $(BUILD)/.output

CLANG ?= clang
CC ?= gcc
BPFTOOL ?= bpftool
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
MULTIARCH := $(shell $(CC) -dumpmachine)

# -mcpu=v3: clang 14 at v2 makes code the verifier rejects for every
# variable-length copy (PLATFORM.md).
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) \
	-I$(ROOT)/include -I$(ROOT)/bpf -I/usr/include/$(MULTIARCH) \
	-Wall -Werror -Wno-unused-function
CFLAGS ?= -g -O2
CFLAGS += -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
	-I$(ROOT)/include -I$(ROOT)/userspace -I$(ROOT)/loader -I$(OUTPUT)
BPF_LIBS := -lxdp -lbpf -lelf -lz

BPF_DEPS := $(wildcard $(ROOT)/include/*.h $(ROOT)/bpf/*.h)

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

# User-space pieces every tool links: the declared option tables
# (loader/params.c) and messages/signals (userspace/cli.c).
# The top Makefile builds them once (target cli) before the tools, so that
# parallel sub-makes never write the same object.
CLI_OBJS := $(OUTPUT)/params.o $(OUTPUT)/cli.o

cli: $(CLI_OBJS)
.PHONY: cli

$(OUTPUT)/params.o: $(ROOT)/loader/params.c $(ROOT)/loader/params.h | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUTPUT)/cli.o: $(ROOT)/userspace/cli.c $(ROOT)/userspace/cli.h | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUTPUT)/%.bpf.o: $(ROOT)/bpf/%.bpf.c $(BPF_DEPS) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@
