# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# srx: a software RoCE v2 device for Linux. This Makefile is the toolbox;
# `make help` lists what it does.

TOP     := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD   ?= $(TOP)/build
KVER    ?= $(shell $(TOP)/tools/kver)
KDIR    ?= /lib/modules/$(KVER)/build
V       ?= 0

export KVER

ifeq ($(V),0)
Q := @
else
Q :=
endif

WARN_MODULE  := $(TOP)/selftests/warn_module/srx_warn_test.ko

.PHONY: all selftests deps check clean help

all: selftests

help:
	@echo "make            build what there is to build"
	@echo "make deps       install the Debian packages the build and tests need"
	@echo "make check      deps, build, then the tests; last line: N passed, N failed"
	@echo "KVER=$(KVER) KDIR=$(KDIR) BUILD=$(BUILD)"

selftests: $(WARN_MODULE)

$(WARN_MODULE): $(TOP)/selftests/warn_module/srx_warn_test.c
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/warn_module modules

deps:
	$(Q)$(TOP)/tools/deps

check:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(TOP)/tools/check $(BUILD) "" ""

clean:
	$(Q)$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP)/selftests/warn_module clean 2>/dev/null || true
	rm -rf $(BUILD)
