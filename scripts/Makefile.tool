# SPDX-License-Identifier: GPL-2.0
# Make fragment for one tool: its Makefile declares, then includes this.
#
#   TOOL        binary made in build/, e.g. nfslice-pktgen
#   TOOL_SRCS   C sources (default: every *.c here but the *.bpf.c)
#   TOOL_SKELS  BPF programs whose skeletons the sources include, by name
#               (NAME.bpf.c in bpf/, userspace/nfslice-pktgen/ or bench/bpf/)
#   TOOL_BPF    further BPF objects to build, loaded by scripts and tests
#   TOOL_LIBS   archives of scripts/Makefile.lib to link, e.g. $(LIB_NFSL) $(LIB_UTIL)
#   TOOL_LDLIBS system libraries, e.g. $(BPF_LIBS)
#
# Objects go to build/.output/<folder>/, with their header dependencies.
include $(dir $(lastword $(MAKEFILE_LIST)))Makefile.lib

TOOL_SRCS ?= $(filter-out %.bpf.c,$(wildcard *.c))
TOOL_OUT := $(OUTPUT)/$(notdir $(CURDIR))
TOOL_OBJS := $(patsubst %.c,$(TOOL_OUT)/%.o,$(TOOL_SRCS))
TOOL_SKEL_H := $(TOOL_SKELS:%=$(OUTPUT)/%.skel.h)

all: $(BUILD)/$(TOOL) $(TOOL_BPF:%=$(OUTPUT)/%.bpf.o)

$(BUILD)/$(TOOL): $(TOOL_OBJS) $(TOOL_LIBS) | $(BUILD)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(TOOL_OBJS) $(TOOL_LIBS) -o $@ $(TOOL_LDLIBS)

$(TOOL_OUT):
	$(Q)mkdir -p $@

# The skeletons are generated headers: they must exist before the first
# compile, when there are no .d files yet.
$(TOOL_OUT)/%.o: %.c $(TOOL_SKEL_H) | $(TOOL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

-include $(TOOL_OBJS:.o=.d)

.PHONY: all
