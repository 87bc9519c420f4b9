# SPDX-License-Identifier: GPL-2.0
# nfslice: payload slicing for shallow network functions.
#   make          build build/nfslice, build/nfslice-pktgen, build/nfslice-delay,
#                 build/nfslice-nf, build/nfsliced
#                 and the BPF objects scripts and tests load
#   make test     install deps, build (with the unit tests and the benchmark
#                 driver), run unit (Criterion) + netns (pytest) tests
#   make demo     install deps, build, run the netns rig demo on real traffic
#   make bench    benchmark suite into bench/results/ (QUICK=1: under 5 min);
#                 ends with a table of targets, met or not; exit status 0 if
#                 every experiment ran, whether or not targets were met
#   make ab OLD=REV NEW=REV [PAIRS=N] [ARGS='-s 1514 -P slicer']
#                 datapath cost of two commits, interleaved runs, NEW/OLD
#                 per row (bench/ab.sh --help; takes the rig lock itself)
#   make fuzz     build the libFuzzer targets (tests/fuzz/) and run each for
#                 FUZZ_TIME seconds (default 60): executions and coverage
#   make install  tools (the bcc tools of userspace/bcc/ too), man pages, bash
#                 completion and nfsliced.service under $(DESTDIR)$(PREFIX)
#                 (the unit under $(DESTDIR)$(UNITDIR))
#   make V=1      show full commands

include scripts/Makefile.common

TOOLS := nfslice nfslice-pktgen nfslice-delay nfslice-nf nfsliced
.PHONY: all bpf lib $(TOOLS) bench-bpf test-progs bench-build unit deps test \
	demo bench ab doc install uninstall clean fuzz-build fuzz

# Python + bcc, run from the source tree as userspace/bcc/NAME; installed with
# their shared module in BCCDIR and linked from SBINDIR.
BCC_TOOLS := nfslice-drops nfslice-top
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
BCCDIR ?= $(PREFIX)/lib/nfslice/bcc
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
UNITDIR ?= /etc/systemd/system
INSTALL ?= install

all: $(TOOLS) bench-bpf test-progs

# The production datapath (slicer, splicer) and the user-space libraries
# come first: several tools use them, and parallel sub-makes must never
# write the same file.
bpf:
	$(Q)$(MAKE) -C bpf

lib: bpf
	$(Q)$(MAKE) -C userspace/lib

# One target per binary, named as the binary and its folder (the xdp-tools
# rule); loader/ is the nfslice CLI.
nfslice: bpf lib
	$(Q)$(MAKE) -C loader

nfslice-pktgen nfslice-delay nfslice-nf nfsliced: bpf lib
	$(Q)$(MAKE) -C userspace/$@

# The benchmarks' BPF programs (latency_sink is loaded by scripts/nfsl/lat.py and
# its test), and the datapath cost driver.
bench-bpf:
	$(Q)$(MAKE) -C bench bpf

# The small BPF programs the integration tests load (tests/integration/bpf/)
# and the C programs they run (tests/integration/c/).
test-progs: $(foreach p,foreign_pass xdp_abort,$(OUTPUT)/$(p).bpf.o) \
	$(BUILD)/test_event_size

$(BUILD)/test_%: tests/integration/c/%.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) $< -o $@

-include $(BUILD)/test_event_size.d

bench-build: bpf lib bench-bpf
	$(Q)$(MAKE) -C bench
	$(Q)$(MAKE) -C bench/nfcost
	$(Q)$(MAKE) -C bench/ttlscan
	$(Q)$(MAKE) -C bench/xsksplice
	$(Q)$(MAKE) -C bench/flowport

unit: bpf lib
	$(Q)$(MAKE) -C tests/unit

deps:
	$(Q)scripts/install-deps.sh

# The fuzz targets (clang, sanitizers: their own build of the library code
# in build/.output/fuzz/).
fuzz-build: lib
	$(Q)$(MAKE) -C tests/fuzz

FUZZ_TIME ?= 60
fuzz: deps
	$(Q)$(MAKE) fuzz-build
	$(Q)tests/fuzz/run.sh $(FUZZ_TIME)

# The benchmark driver is built here too, so that it cannot rot unseen;
# the fuzz targets too, so that tests/run.sh runs each for a few seconds.
# The build runs on every CPU (the sub-makes never write the same file:
# bpf and lib come first, see above): half the time on this 2-vCPU VM.
test: deps
	$(Q)$(MAKE) -j$(shell nproc) all unit bench-build fuzz-build
	$(Q)tests/run.sh

demo: deps
	$(Q)$(MAKE) all
	$(Q)scripts/demo.sh

bench: deps
	$(Q)$(MAKE) all bench-build
	$(Q)QUICK=$(QUICK) bench/suite.sh

# No deps or build of this tree: ab.sh builds the two commits itself.
ab:
	$(Q)bench/ab.sh $(if $(PAIRS),--pairs $(PAIRS)) $(OLD) $(NEW) -- $(ARGS)

# Man pages and bash completion, generated from the tools' declared option
# tables (their hidden --man and --bash-completion options).
MANS := $(TOOLS:%=$(BUILD)/man/%.8)
COMPLETIONS := $(TOOLS:%=$(BUILD)/completion/%)
BCC_MANS := $(BCC_TOOLS:%=$(BUILD)/man/%.8)
BCC_COMPLETIONS := $(BCC_TOOLS:%=$(BUILD)/completion/%)

doc: all
	$(Q)$(MAKE) $(MANS) $(COMPLETIONS) $(BCC_MANS) $(BCC_COMPLETIONS)

$(BUILD)/man $(BUILD)/completion:
	$(Q)mkdir -p $@

$(BUILD)/man/%.8: $(BUILD)/% | $(BUILD)/man
	$(call msg,GEN-MAN,$@)
	$(Q)$< --man > $@

$(BUILD)/completion/%: $(BUILD)/% | $(BUILD)/completion
	$(call msg,GEN-COMP,$@)
	$(Q)$< --bash-completion > $@

# The bcc tools make theirs from their argparse tables (no bcc needed).
$(BCC_MANS): $(BUILD)/man/%.8: userspace/bcc/% userspace/bcc/nfsl_bcc.py | $(BUILD)/man
	$(call msg,GEN-MAN,$@)
	$(Q)$< --man > $@

$(BCC_COMPLETIONS): $(BUILD)/completion/%: userspace/bcc/% userspace/bcc/nfsl_bcc.py | $(BUILD)/completion
	$(call msg,GEN-COMP,$@)
	$(Q)$< --bash-completion > $@

# make install [PREFIX=/usr/local] [DESTDIR=staging root]
install: doc
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR)
	$(Q)$(INSTALL) -m 0755 $(TOOLS:%=$(BUILD)/%) $(DESTDIR)$(SBINDIR)/
	$(Q)$(INSTALL) -d $(DESTDIR)$(BCCDIR)
	$(Q)$(INSTALL) -m 0755 $(BCC_TOOLS:%=userspace/bcc/%) $(DESTDIR)$(BCCDIR)/
	$(Q)$(INSTALL) -m 0644 userspace/bcc/nfsl_bcc.py $(DESTDIR)$(BCCDIR)/
	$(Q)for t in $(BCC_TOOLS); do ln -sf $(BCCDIR)/$$t $(DESTDIR)$(SBINDIR)/$$t; done
	$(Q)$(INSTALL) -m 0644 $(MANS) $(BCC_MANS) $(DESTDIR)$(MANDIR)/man8/
	$(Q)$(INSTALL) -m 0644 $(COMPLETIONS) $(BCC_COMPLETIONS) $(DESTDIR)$(BASHCOMPDIR)/
	$(Q)$(INSTALL) -d $(DESTDIR)$(UNITDIR)
	$(Q)sed 's|@SBINDIR@|$(SBINDIR)|' userspace/nfsliced/nfsliced.service > $(DESTDIR)$(UNITDIR)/nfsliced.service
	$(Q)chmod 0644 $(DESTDIR)$(UNITDIR)/nfsliced.service

uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(TOOLS:%=$(DESTDIR)$(SBINDIR)/%) $(TOOLS:%=$(DESTDIR)$(MANDIR)/man8/%.8) \
		$(TOOLS:%=$(DESTDIR)$(BASHCOMPDIR)/%) $(DESTDIR)$(UNITDIR)/nfsliced.service
	$(Q)rm -f $(BCC_TOOLS:%=$(DESTDIR)$(SBINDIR)/%) $(BCC_TOOLS:%=$(DESTDIR)$(MANDIR)/man8/%.8) \
		$(BCC_TOOLS:%=$(DESTDIR)$(BASHCOMPDIR)/%)
	$(Q)rm -rf $(DESTDIR)$(BCCDIR)
	$(Q)rmdir $(DESTDIR)$(PREFIX)/lib/nfslice 2>/dev/null || true

clean:
	$(call msg,CLEAN,build)
	$(Q)rm -rf $(BUILD)
