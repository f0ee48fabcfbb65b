# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# srx: a software RoCE v2 device for Linux. This Makefile is the toolbox;
# `make help` lists what it does.

TOP     := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD   ?= $(TOP)/build
# KVER: the kernel srx builds for and the VM boots. Given on the command line
# or in the environment, else tools/kver's choice, asked when KVER is first
# used (once), never while make reads this file: make check and make demo
# install the kernel (make deps) first, and on a fresh machine a value taken
# earlier is empty. For the same reason KVER is not exported (that expands it
# for every recipe, deps' included): the commands that need it are given
# KVER=$(KVER), and what must run after deps runs in a make of its own.
ifeq ($(strip $(KVER)),)
override KVER = $(eval override KVER := $(shell $(TOP)/tools/kver))$(KVER)
endif
# SRX_KVER_ROOT: where tools/kver looks for kernels (a test's fake machine).
KDIR    ?= $(SRX_KVER_ROOT)/lib/modules/$(KVER)/build
# The command `make deps` runs (a test replaces it).
DEPS    ?= $(TOP)/tools/deps
PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc
V       ?= 0

ifeq ($(V),0)
Q := @
else
Q :=
endif

# ---------------------------------------------------------------------------
# Userspace flags: rdma-core's CI warnings; -Werror under CI.

CFLAGS    ?= -O2 -g
WARNINGS  := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
             -Wpointer-arith -Wformat=2 -Wno-unused-parameter
ifeq ($(CI),true)
WARNINGS  += -Werror
endif
SRX_CPPFLAGS := -I$(TOP)/include/uapi -I$(TOP)/userspace/libsrx -D_GNU_SOURCE
SRX_CFLAGS   := -std=gnu11 -pthread $(WARNINGS) $(CFLAGS)
SANITIZE     := -fsanitize=address,undefined -fno-omit-frame-pointer \
                -fno-sanitize-recover=undefined

# ---------------------------------------------------------------------------
# What gets built

PROVIDER     := $(BUILD)/libsrx-rdmav34.so
PROVIDER_SRC := $(wildcard $(TOP)/userspace/libsrx/*.c)
PROVIDER_HDR := $(wildcard $(TOP)/userspace/libsrx/*.h) \
                $(TOP)/include/uapi/rdma/srx-abi.h

TOOLS        := $(BUILD)/srx-cq-demo
BENCH        := $(BUILD)/cq_bench $(BUILD)/ring_bench $(BUILD)/pkt_bench $(BUILD)/udp_rtt

KSELFTEST    := $(BUILD)/kselftest/kselftest_harness.h
SELFTEST_SRC := $(wildcard $(TOP)/selftests/*_test.c)
SELFTESTS    := $(patsubst $(TOP)/selftests/%.c,$(BUILD)/selftests/%,$(SELFTEST_SRC))
SELFTEST_SH  := $(wildcard $(TOP)/selftests/*_test.sh)
# dkms_test.sh runs first, as DKMS will not replace make install's srx.ko;
# install_test.sh next: it installs srx and creates srx0 for the rest.
VM_TESTS     := $(TOP)/selftests/dkms_test.sh $(TOP)/selftests/install_test.sh $(SELFTESTS) \
                $(filter-out %/install_test.sh %/dkms_test.sh,$(SELFTEST_SH))
WARN_MODULE  := $(TOP)/selftests/warn_module/srx_warn_test.ko
KCQ_MODULE   := $(TOP)/selftests/kcq_module/srx_kcq_test.ko
KCONSUMER_MODULE := $(TOP)/selftests/kernel_consumer/srx_kconsumer_test.ko
KVERBS_MODULE := $(TOP)/selftests/kverbs_module/srx_kverbs_test.ko
MRACCESS_MODULE := $(TOP)/selftests/mraccess_module/srx_mraccess_test.ko

HELPER_SRC   := $(wildcard $(TOP)/selftests/helpers/*.c)
HELPERS      := $(patsubst $(TOP)/selftests/helpers/%.c,$(BUILD)/helpers/%,$(HELPER_SRC))

HOST_TEST_SRC := $(wildcard $(TOP)/selftests/host/*_test.c)
HOST_TESTS    := $(patsubst $(TOP)/selftests/host/%.c,$(BUILD)/host/%,$(HOST_TEST_SRC))
HOST_TEST_SH  := $(wildcard $(TOP)/selftests/host/*_test.sh)
# The fuzzer of the receive checks, which rx_fuzz_test.sh runs.
RX_FUZZ       := $(BUILD)/fuzz/rx_fuzz $(BUILD)/fuzz/rx_cov

.PHONY: FORCE all module provider tools selftests host-tests install uninstall install-dirs-known \
        deps check check-nodeps check-debug demo demo-nodeps clean help check-libibverbs \
        bench bench-build compare fuzz-wire fuzz netem soak dkms-install dkms-uninstall deb \
        install-userspace uninstall-userspace check-packages version-known libsrx-not-packaged

all: module provider tools selftests bench-build

help:
	@echo "make            build srx.ko, libsrx, tools and selftests"
	@echo "make deps       install the Debian packages the build and tests need"
	@echo "make check      deps, build, host unit tests, then the selftests in the VM"
	@echo "make check-debug the selftests on a KASAN/lockdep/kmemleak kernel built once"
	@echo "                from linux-source-6.1 into build/debug-kernel (first run: hours)"
	@echo "make demo       deps, build, then show srx working inside the VM"
	@echo "make check-nodeps, make demo-nodeps   the same without deps"
	@echo "make bench      measure the CQ and the data path against rdma_rxe (build/bench/)"
	@echo "make compare    the same tests on srx and rdma_rxe in one VM (build/compare/)"
	@echo "make fuzz       libFuzzer on the receive checks, FUZZ_SECONDS=600, with coverage"
	@echo "make fuzz-wire  libFuzzer on the RoCE v2 header parser, FUZZ_WIRE_SECONDS=30"
	@echo "make netem      the loss matrix at length, srx and rdma_rxe (build/netem.md)"
	@echo "make soak       an hour of pyverbs and mixed traffic on srx, SOAK_SECONDS=3600"
	@echo "make install    install module, provider and tools (DESTDIR-aware)"
	@echo "make uninstall  undo make install"
	@echo "make deb        the srx-dkms and libsrx Debian packages, linted (build/deb/)"
	@echo "make dkms-install, make dkms-uninstall   srx.ko through DKMS for every kernel"
	@echo "                with headers, and the provider and tools (as root)"
	@echo "make check-packages  the packages and make dkms-install in a guest per kernel"
	@echo "KVER=V          the kernel to build for and boot (default: Debian's default"
	@echo "                kernel, tools/kver); installed: $(patsubst $(SRX_KVER_ROOT)/lib/modules/%/build,%,$(wildcard $(SRX_KVER_ROOT)/lib/modules/*/build))"
	@echo "KVER=$(KVER) KDIR=$(KDIR) BUILD=$(BUILD)"

# ---------------------------------------------------------------------------
# Kernel module (Kbuild, out of tree; objects land next to the sources)

module:
	$(Q)test -d $(KDIR) || { echo "no kernel build tree at $(KDIR): make deps" >&2; exit 1; }
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/kernel W=1 modules

# Phony like module: Kbuild decides what is stale, and a module built for
# another KVER is (its command line named other headers).
$(WARN_MODULE): FORCE
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/warn_module modules

$(KCQ_MODULE): FORCE
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/kcq_module W=1 modules
$(KCONSUMER_MODULE): FORCE
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/kernel_consumer W=1 modules
$(KVERBS_MODULE): FORCE
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/kverbs_module W=1 modules
$(MRACCESS_MODULE): FORCE
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/mraccess_module W=1 modules

FORCE:

# ---------------------------------------------------------------------------
# Provider

check-libibverbs:
	$(Q)$(TOP)/userspace/check-libibverbs

$(BUILD)/.libibverbs-ok: $(TOP)/userspace/check-libibverbs
	$(Q)mkdir -p $(BUILD)
	$(Q)$(TOP)/userspace/check-libibverbs
	$(Q)touch $@

provider: $(PROVIDER)

$(PROVIDER): $(PROVIDER_SRC) $(PROVIDER_HDR) $(TOP)/userspace/libsrx/libsrx.map $(BUILD)/.libibverbs-ok
	@echo "  CC      $(notdir $@)"
	$(Q)$(CC) $(SRX_CPPFLAGS) $(CPPFLAGS) $(SRX_CFLAGS) -fPIC -shared \
		-Wl,--version-script=$(TOP)/userspace/libsrx/libsrx.map \
		-Wl,-z,defs $(LDFLAGS) -o $@ $(PROVIDER_SRC) -libverbs

# ---------------------------------------------------------------------------
# Tools

tools: $(TOOLS)

$(BUILD)/srx-cq-demo: $(TOP)/tools/srx-cq-demo.c
	@echo "  CC      $(notdir $@)"
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CC) $(SRX_CPPFLAGS) $(SRX_CFLAGS) -o $@ $< -libverbs

# ---------------------------------------------------------------------------
# Benchmarks (bench/, Documentation/performance.md)

bench-build: $(BENCH)

$(BUILD)/cq_bench: $(TOP)/bench/cq_bench.c
	@echo "  CC      $(notdir $@)"
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CC) $(SRX_CPPFLAGS) $(SRX_CFLAGS) -o $@ $< -libverbs

$(BUILD)/ring_bench: $(TOP)/bench/ring_bench.c $(PROVIDER_HDR)
	@echo "  CC      $(notdir $@)"
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CC) $(SRX_CPPFLAGS) $(SRX_CFLAGS) -o $@ $<

$(BUILD)/udp_rtt: $(TOP)/bench/udp_rtt.c
	@echo "  CC      $(notdir $@)"
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CC) $(SRX_CPPFLAGS) $(SRX_CFLAGS) -o $@ $<

# The packet-format layer compiled in, as wire_test.c has it.
$(BUILD)/pkt_bench: $(TOP)/bench/pkt_bench.c $(addprefix $(TOP)/kernel/,roce_hdr.h psn.h roce_opcode.c roce_pkt.c) \
		$(TOP)/selftests/host/wire_host.h
	@echo "  CC      $(notdir $@)"
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CC) $(SRX_CPPFLAGS) -I$(TOP)/kernel -I$(TOP)/selftests/host $(SRX_CFLAGS) \
		-Wno-missing-prototypes -o $@ $< -lz

# ---------------------------------------------------------------------------
# Selftests (run in the VM) and host unit tests (run here, sanitized)

# The kselftest harness comes from Debian's kernel source at build time and
# is never committed; selftests/kselftest-fixes makes it fail closed (a
# header it could not fix is removed, so no test builds with it).
$(KSELFTEST): $(TOP)/selftests/kselftest-fixes
	@echo "  EXTRACT kselftest harness"
	$(Q)rm -f $@
	$(Q)mkdir -p $(BUILD)/kselftest
	$(Q)tar -xJf /usr/src/linux-source-6.1.tar.xz -C $(BUILD)/kselftest \
		--strip-components=4 --wildcards \
		'linux-source-6.1/tools/testing/selftests/kselftest_harness.h' \
		'linux-source-6.1/tools/testing/selftests/kselftest.h'
	$(Q)$(TOP)/selftests/kselftest-fixes $@ || { rm -f $@; exit 1; }
	$(Q)touch $@

selftests: $(SELFTESTS) $(HELPERS) $(WARN_MODULE) $(KCQ_MODULE) $(KCONSUMER_MODULE) \
           $(KVERBS_MODULE) $(MRACCESS_MODULE)

# SRX_TEST_TIMEOUT_SCALE stretches every TEST_F's limit (make check-debug).
HARNESS_TIMEOUT := -include $(TOP)/selftests/harness_timeout.h

$(BUILD)/selftests/%: $(TOP)/selftests/%.c $(TOP)/selftests/srx_test.h $(TOP)/selftests/harness_timeout.h $(KSELFTEST) $(TOP)/include/uapi/rdma/srx-abi.h
	@echo "  CC      selftests/$(notdir $@)"
	$(Q)mkdir -p $(BUILD)/selftests
	$(Q)$(CC) $(SRX_CPPFLAGS) -I$(BUILD)/kselftest -I$(TOP)/selftests $(HARNESS_TIMEOUT) \
		$(SRX_CFLAGS) -Wno-missing-prototypes -o $@ $< -libverbs

# claims_test stands in for another srx.ko by defining a libibverbs function
# that libsrx must find in it first (the test's own comment says why).
$(BUILD)/selftests/claims_test: SRX_CFLAGS += -rdynamic

# A test that defines ibv_cmd_resize_cq() stands between libsrx and
# libibverbs (cq_test.c's resize.commit_response_lost): export it, so that
# the provider, which libibverbs loads later, binds to it.
$(BUILD)/selftests/cq_test: SRX_CFLAGS += -Wl,--export-dynamic-symbol=ibv_cmd_resize_cq

host-tests: $(HOST_TESTS) $(RX_FUZZ)

$(BUILD)/host/%: $(TOP)/selftests/host/%.c $(PROVIDER_HDR) $(PROVIDER_SRC) $(TOP)/kernel/ring.h \
		$(TOP)/kernel/mr_check.h $(TOP)/kernel/wqe.h $(TOP)/kernel/icrc.h \
		$(TOP)/kernel/cq_publish.h $(KSELFTEST) $(TOP)/selftests/harness_timeout.h
	@echo "  CC      host/$(notdir $@)"
	$(Q)mkdir -p $(BUILD)/host
	$(Q)$(CC) $(SRX_CPPFLAGS) -I$(BUILD)/kselftest -I$(TOP)/kernel -I$(TOP)/selftests \
		$(HARNESS_TIMEOUT) $(SRX_CFLAGS) $(SANITIZE) -Wno-missing-prototypes -o $@ $< -libverbs \
		$(HOST_LDLIBS)

# icrc_test judges kernel/icrc.h against zlib's crc32().
$(BUILD)/host/icrc_test: HOST_LDLIBS := -lz

# The packet-format layer is pure kernel code that wire_test.c compiles in.
WIRE_SRC := $(addprefix $(TOP)/kernel/,roce_hdr.h psn.h roce_opcode.c roce_pkt.c) \
            $(addprefix $(TOP)/selftests/host/,wire_host.h wire_check.h rng.h)
$(BUILD)/host/wire_test: $(WIRE_SRC)
# icrc.h takes the BTH and ICRC sizes from roce_hdr.h.
$(BUILD)/host/icrc_test: $(addprefix $(TOP)/kernel/,roce_hdr.h psn.h) \
	$(TOP)/selftests/host/wire_host.h

# The receive checks in the kernel's order (rx_check.h): frame, ICRC,
# parser. rx_test compares the committed corpus with what it builds.
RX_SRC := $(WIRE_SRC) $(TOP)/kernel/roce_frame.h $(TOP)/kernel/icrc.h \
          $(TOP)/selftests/host/rx_check.h
$(BUILD)/host/rx_test: $(RX_SRC)
$(BUILD)/host/rx_test: HOST_LDLIBS := -lz
$(BUILD)/host/rx_test: SRX_CPPFLAGS += -DRX_CORPUS_DIR='"$(TOP)/selftests/host/rx_corpus"'

# libFuzzer on the receive checks (rx_fuzz.c): built for host-tests, run
# for a bounded time by rx_fuzz_test.sh in check, longer by make fuzz.
# rx_cov is the same target with coverage instrumentation instead of the
# sanitizers, to replay the corpus a run leaves.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 600
FUZZ_CFLAGS  := -I$(TOP)/kernel -I$(TOP)/selftests/host -std=gnu11 -g -O1 $(WARNINGS)

$(BUILD)/fuzz/rx_fuzz: FUZZ_MODE := -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined
$(BUILD)/fuzz/rx_cov: FUZZ_MODE := -fsanitize=fuzzer -fprofile-instr-generate \
	-fcoverage-mapping
$(RX_FUZZ): $(TOP)/selftests/host/rx_fuzz.c $(RX_SRC)
	$(Q)command -v $(FUZZ_CC) >/dev/null || { \
		echo "fuzz: needs clang with libFuzzer ($(FUZZ_CC) not found: make deps)" >&2; exit 1; }
	@echo "  CC      fuzz/$(notdir $@)"
	$(Q)mkdir -p $(BUILD)/fuzz
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_MODE) -o $@ $< -lz

fuzz: $(RX_FUZZ)
	$(Q)SRX_BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) \
		$(TOP)/selftests/host/rx_fuzz_test.sh

# Not part of check: libFuzzer on the same parser and properties as
# wire_test.c's fixed loop (selftests/host/wire_fuzz.c). Needs clang.
FUZZ_CC           ?= clang
FUZZ_WIRE_SECONDS ?= 30

fuzz-wire: $(BUILD)/fuzz-wire/wire_fuzz
	$(Q)mkdir -p $(BUILD)/fuzz-wire/corpus
	$(Q)cd $(BUILD)/fuzz-wire && ./wire_fuzz -max_total_time=$(FUZZ_WIRE_SECONDS) \
		-max_len=9000 corpus

$(BUILD)/fuzz-wire/wire_fuzz: $(TOP)/selftests/host/wire_fuzz.c $(WIRE_SRC)
	$(Q)command -v $(FUZZ_CC) >/dev/null || { \
		echo "fuzz-wire: needs clang with libFuzzer ($(FUZZ_CC) not found)" >&2; exit 1; }
	@echo "  CC      fuzz-wire/wire_fuzz"
	$(Q)mkdir -p $(BUILD)/fuzz-wire
	$(Q)$(FUZZ_CC) -I$(TOP)/kernel -I$(TOP)/selftests/host -std=gnu11 -g -O1 $(WARNINGS) \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -o $@ $<

# Programs the shell tests use; not tests themselves.
$(BUILD)/helpers/%: $(TOP)/selftests/helpers/%.c $(TOP)/selftests/helpers/rc_qp.h
	@echo "  CC      helpers/$(notdir $@)"
	$(Q)mkdir -p $(BUILD)/helpers
	$(Q)$(CC) $(SRX_CPPFLAGS) $(SRX_CFLAGS) -o $@ $< -libverbs -lrdmacm

# ---------------------------------------------------------------------------
# Install (DESTDIR-aware). Installs what `make` built; never builds, so it
# also runs inside the VM against the host's build.

PROVIDER_DIR = $(shell $(TOP)/userspace/check-libibverbs --provider-dir)
CONFIG_DIR   = $(shell $(TOP)/userspace/check-libibverbs --config-dir)

INSTALLED = $(DESTDIR)/lib/modules/$(KVER)/extra/srx.ko \
            $(DESTDIR)$(PROVIDER_DIR)/libsrx-rdmav34.so \
            $(DESTDIR)$(CONFIG_DIR)/srx.driver \
            $(DESTDIR)$(PREFIX)/bin/srx-cq-demo \
            $(DESTDIR)$(PREFIX)/share/man/man7/srx.7

# An empty directory would install into /: refuse instead.
install-dirs-known:
	$(Q)test -n "$(PROVIDER_DIR)" && test -n "$(CONFIG_DIR)" || { \
		echo "install: check-libibverbs could not name libibverbs' directories" >&2; exit 1; }

install: install-userspace
	$(Q)test -f $(TOP)/kernel/srx.ko || { echo "install: $(TOP)/kernel/srx.ko is missing: run make first" >&2; exit 1; }
	install -D -m 644 $(TOP)/kernel/srx.ko $(DESTDIR)/lib/modules/$(KVER)/extra/srx.ko
ifeq ($(DESTDIR),)
	depmod -a $(KVER)
endif

# Everything but the module: make install's, and make dkms-install's beside
# DKMS's module. The libsrx package's files are dpkg's.
install-userspace uninstall-userspace: libsrx-not-packaged
libsrx-not-packaged: install-dirs-known
ifeq ($(DESTDIR),)
	$(Q)! dpkg-query -S $(PROVIDER_DIR)/libsrx-rdmav34.so >/dev/null 2>&1 || { \
		echo "the libsrx package is installed: apt remove srx-dkms libsrx first" >&2; exit 1; }
endif

install-userspace: install-dirs-known
	$(Q)for f in $(PROVIDER) $(TOOLS); do \
		test -f $$f || { echo "install: $$f is missing: run make first" >&2; exit 1; }; done
	install -D -m 644 $(PROVIDER) $(DESTDIR)$(PROVIDER_DIR)/libsrx-rdmav34.so
	install -D -m 644 $(TOP)/userspace/libsrx/srx.driver $(DESTDIR)$(CONFIG_DIR)/srx.driver
	install -D -m 755 $(BUILD)/srx-cq-demo $(DESTDIR)$(PREFIX)/bin/srx-cq-demo
	install -D -m 644 $(TOP)/Documentation/srx.7 $(DESTDIR)$(PREFIX)/share/man/man7/srx.7

uninstall: uninstall-userspace
	rm -f $(DESTDIR)/lib/modules/$(KVER)/extra/srx.ko
	-rmdir $(DESTDIR)/lib/modules/$(KVER)/extra 2>/dev/null
ifeq ($(DESTDIR),)
	depmod -a $(KVER)
endif

uninstall-userspace: install-dirs-known
	rm -f $(filter-out %/srx.ko,$(INSTALLED))

# ---------------------------------------------------------------------------
# DKMS and Debian packages (Documentation/packaging.md)

# tools/version's answer, asked once and only when a recipe needs it.
VERSION = $(eval override VERSION := $(shell $(TOP)/tools/version))$(VERSION)
DKMS_SRC = /usr/src/srx-$(VERSION)
# The module's sources as DKMS builds them: kernel/ beside include/uapi,
# which kernel/Kbuild includes; not Kbuild's own output (srx.mod.c).
DKMS_FILES = $(TOP)/kernel/Kbuild \
             $(filter-out %.mod.c,$(wildcard $(TOP)/kernel/*.c)) $(wildcard $(TOP)/kernel/*.h)
# Every kernel with headers, as DKMS's own kernel hooks would have it.
DKMS_KERNELS ?= $(patsubst /lib/modules/%/build/include,%,$(wildcard /lib/modules/*/build/include))

# make install's srx.ko would shadow DKMS's: DKMS refuses to replace a
# module of the same version, and srx has no MODULE_VERSION.
# The version names the packages and DKMS's tree: no git checkout, no version.
version-known:
	$(Q)test -n "$(VERSION)" || { echo "tools/version gave no version: a git checkout is needed" >&2; exit 1; }

dkms-install: install-dirs-known version-known
	$(Q)command -v dkms >/dev/null || { echo "dkms-install: dkms is missing (make deps installs it)" >&2; exit 1; }
	$(Q)for k in $(DKMS_KERNELS); do \
		test ! -e /lib/modules/$$k/extra/srx.ko || { \
			echo "dkms-install: make install's srx.ko is in /lib/modules/$$k/extra: make uninstall KVER=$$k first" >&2; exit 1; }; done
	$(Q)$(MAKE) --no-print-directory dkms-uninstall
	$(Q)$(MAKE) --no-print-directory install-userspace
	install -D -m 644 -t $(DKMS_SRC)/kernel $(DKMS_FILES)
	install -D -m 644 -t $(DKMS_SRC)/include/uapi/rdma $(TOP)/include/uapi/rdma/srx-abi.h
	sed 's/#MODULE_VERSION#/$(VERSION)/' $(TOP)/dkms.conf >$(DKMS_SRC)/dkms.conf
	dkms add -m srx -v $(VERSION)
	$(Q)for k in $(DKMS_KERNELS); do \
		echo "dkms install -m srx -v $(VERSION) -k $$k"; \
		dkms install -m srx -v $(VERSION) -k $$k || exit 1; done

# Every srx version DKMS knows, from make dkms-install, and the userspace
# files beside them; a package's are dpkg's to remove.
dkms-uninstall: install-dirs-known libsrx-not-packaged
	$(Q)command -v dkms >/dev/null || exit 0; \
	for v in $$(dkms status -m srx | sed -n 's|^srx/\([^,:]*\).*|\1|p' | sort -u); do \
		if dpkg-query -S /usr/src/srx-$$v/dkms.conf >/dev/null 2>&1; then \
			echo "dkms-uninstall: srx $$v is the srx-dkms package's: apt remove srx-dkms" >&2; exit 1; fi; \
		echo "dkms remove -m srx -v $$v --all"; \
		dkms remove -m srx -v $$v --all || exit 1; \
		rm -rf /usr/src/srx-$$v; done
	$(Q)$(MAKE) --no-print-directory uninstall-userspace

# Built from an export of the tracked files (dpkg-buildpackage writes its
# output beside the tree): build/deb/*.deb.
DEB_DIR = $(BUILD)/deb
deb: version-known
	$(Q)for t in dpkg-buildpackage dh dh_dkms lintian; do command -v $$t >/dev/null || { \
		echo "deb: $$t is missing (make deps installs it)" >&2; exit 1; }; done
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/srx-$(VERSION)
	$(Q)git -c safe.directory=$(TOP) -C $(TOP) ls-files -z >$(DEB_DIR)/files
	$(Q)cd $(TOP) && tar --null -T $(DEB_DIR)/files -cf $(DEB_DIR)/srx.tar
	$(Q)tar -xf $(DEB_DIR)/srx.tar -C $(DEB_DIR)/srx-$(VERSION) && rm $(DEB_DIR)/files $(DEB_DIR)/srx.tar
	$(Q)printf 'srx (%s) UNRELEASED; urgency=medium\n\n  * Built from commit %s.\n\n -- srx developers <srx@example.invalid>  %s\n' \
		"$(VERSION)" "$$(git -c safe.directory=$(TOP) -C $(TOP) rev-parse --short HEAD)" \
		"$$(git -c safe.directory=$(TOP) -C $(TOP) log -1 --format=%aD)" \
		>$(DEB_DIR)/srx-$(VERSION)/debian/changelog
	$(Q)cd $(DEB_DIR)/srx-$(VERSION) && dpkg-buildpackage -us -uc -b
	lintian --fail-on error,warning $(DEB_DIR)/*.changes

# ---------------------------------------------------------------------------
# The two README commands

# "+": also under make -n, as what make would do next depends on what deps
# installs.
deps:
	+$(Q)$(DEPS)

# Each README command runs deps, then the rest in a make of its own: make
# expands all of a recipe's lines before it runs the first, so a $(KVER) in
# check's own recipe would be taken before deps installs the kernel.
check:
	+$(Q)$(MAKE) --no-print-directory deps
	+$(Q)$(MAKE) --no-print-directory check-nodeps

# SRX_CHECK_STAGES=vm (tools/check) runs no host test: none to build.
check-nodeps: all deb $(if $(filter vm,$(SRX_CHECK_STAGES)),,host-tests)
	$(Q)KVER=$(KVER) $(TOP)/tools/check $(BUILD) "$(HOST_TESTS) $(HOST_TEST_SH)" "$(VM_TESTS)"

demo:
	+$(Q)$(MAKE) --no-print-directory deps
	+$(Q)$(MAKE) --no-print-directory demo-nodeps

demo-nodeps: all
	$(Q)KVER=$(KVER) $(TOP)/tools/vm/run -- $(TOP)/tools/demo

# Not part of check (nor CI): the first run builds a kernel.
# tools/debug-kernel builds it only when its inputs changed; libsrx, the tools
# and the selftests do not depend on the kernel, srx.ko does
# (tools/check-debug builds it, and removes it afterwards).
check-debug:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(TOP)/tools/debug-kernel deps
	$(Q)$(TOP)/tools/debug-kernel build
	$(Q)$(MAKE) --no-print-directory provider tools bench-build $(SELFTESTS) $(HELPERS)
	$(Q)$(TOP)/tools/check-debug $(BUILD) "$(VM_TESTS)"

# Only what the guests run: the selftests' build (a minute of a fresh
# clone's make bench) is not needed.
bench:
	$(Q)$(MAKE) --no-print-directory module provider tools bench-build
	$(Q)KVER=$(KVER) $(TOP)/bench/run

compare:
	$(Q)$(MAKE) --no-print-directory all
	$(Q)KVER=$(KVER) $(TOP)/tools/compare

# The loss matrix of make check's netem_test.sh at length: NETEM_SECONDS of
# ib_write_bw and NETEM_OPS requests per QP of rc_traffic in each cell, for
# srx and rdma_rxe in one guest. The table lands in build/netem.md.
NETEM_SECONDS ?= 10
NETEM_OPS ?= 1000
netem:
	$(Q)$(MAKE) --no-print-directory all
	$(Q)KVER=$(KVER) $(TOP)/tools/vm/run --timeout 7200 -- env \
		NETEM_SECONDS=$(NETEM_SECONDS) NETEM_OPS=$(NETEM_OPS) NETEM_RXE=all \
		NETEM_OUT=$(BUILD)/netem.md $(TOP)/selftests/run --timeout 6000 \
		$(TOP)/selftests/install_test.sh $(TOP)/selftests/netem_test.sh

# selftests/dkms_test.sh in full: the packages and make dkms-install, each
# built by DKMS in the guest for every kernel with headers, in a guest of
# each kernel make check tests (make check: the packages on the default
# kernel only). About 25 minutes a guest under TCG.
CHECK_PACKAGES_KVERS ?= $(patsubst /lib/modules/%/build,%,$(wildcard /lib/modules/*/build))
check-packages:
	$(Q)$(MAKE) --no-print-directory provider tools deb
	$(Q)for k in $(CHECK_PACKAGES_KVERS); do \
		echo "# ==== check-packages on $$k"; \
		KVER=$$k $(TOP)/tools/vm/run --timeout 4800 -- env SRX_DKMS_TEST=full \
			$(TOP)/selftests/run --timeout 4200 $(TOP)/selftests/dkms_test.sh || exit 1; done

# soak_test.sh for SOAK_SECONDS (make check runs it for a minute).
SOAK_SECONDS ?= 3600
soak:
	$(Q)$(MAKE) --no-print-directory all
	$(Q)KVER=$(KVER) $(TOP)/tools/vm/run --timeout $$(($(SOAK_SECONDS) + 3600)) -- \
		env SOAK_SECONDS=$(SOAK_SECONDS) $(TOP)/selftests/run \
		--timeout $$(($(SOAK_SECONDS) + 2400)) \
		$(TOP)/selftests/install_test.sh $(TOP)/selftests/soak_test.sh

# Everything but the debug kernel, which took hours to build: only
# `rm -rf build/debug-kernel` drops that.
clean:
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/kernel clean 2>/dev/null || true
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/warn_module clean 2>/dev/null || true
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/kcq_module clean 2>/dev/null || true
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/kernel_consumer clean 2>/dev/null || true
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/kverbs_module clean 2>/dev/null || true
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/mraccess_module clean 2>/dev/null || true
	$(Q)if [ -d $(BUILD) ]; then find $(BUILD) -mindepth 1 -maxdepth 1 ! -name debug-kernel -exec rm -rf {} +; fi
	$(Q)rmdir $(BUILD) 2>/dev/null || true
