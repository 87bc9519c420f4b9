# SPDX-License-Identifier: GPL-2.0
# The user-space libraries, linked by every tool that needs them:
#   lib/util  generic: declared options, messages and signals, the
#             libbpf/libxdp print hook, clocks and CPUs, the JSON writer
#   lib/nfsl  the slicing domain: pins, maps, counters, configuration
#   lib/nf    the NFs of nfslice-nf: pure functions over bursts
#   lib/xsk   the AF_XDP datapath of user-space NFs (prefix nfsl_xsk_):
#             shared UMEM, sockets, steering, receive architectures, frame
#             pool, inline splicing
# Each folder is one static archive in build/.output/lib/, so a tool links
# only the members it uses (nfslice-delay, without libbpf, takes no
# libbpf-calling object). The top Makefile builds them (target lib) before
# the tools, so parallel sub-makes never write the same object.
include $(dir $(lastword $(MAKEFILE_LIST)))common.mk

LIB_OUT := $(OUTPUT)/lib
LIB_UTIL := $(LIB_OUT)/libutil.a
LIB_NFSL := $(LIB_OUT)/libnfsl.a
LIB_XSK := $(LIB_OUT)/libnfslxsk.a
LIB_NF := $(LIB_OUT)/libnfslnf.a
LIB_UTIL_OBJS := $(patsubst $(ROOT)/lib/%.c,$(LIB_OUT)/%.o,$(wildcard $(ROOT)/lib/util/*.c))
LIB_NFSL_OBJS := $(patsubst $(ROOT)/lib/%.c,$(LIB_OUT)/%.o,$(wildcard $(ROOT)/lib/nfsl/*.c))
LIB_XSK_OBJS := $(patsubst $(ROOT)/lib/%.c,$(LIB_OUT)/%.o,$(wildcard $(ROOT)/lib/xsk/*.c))
LIB_NF_OBJS := $(patsubst $(ROOT)/lib/%.c,$(LIB_OUT)/%.o,$(wildcard $(ROOT)/lib/nf/*.c))

$(LIB_OUT)/util $(LIB_OUT)/nfsl $(LIB_OUT)/xsk $(LIB_OUT)/nf:
	$(Q)mkdir -p $@

$(LIB_OUT)/%.o: $(ROOT)/lib/%.c | $(LIB_OUT)/util $(LIB_OUT)/nfsl $(LIB_OUT)/xsk $(LIB_OUT)/nf
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(LIB_UTIL): $(LIB_UTIL_OBJS)
$(LIB_NFSL): $(LIB_NFSL_OBJS)
$(LIB_XSK): $(LIB_XSK_OBJS)
$(LIB_NF): $(LIB_NF_OBJS)
$(LIB_UTIL) $(LIB_NFSL) $(LIB_XSK) $(LIB_NF):
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

-include $(wildcard $(LIB_OUT)/*/*.d)
