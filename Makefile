# ofbench: the README's two commands are `make suites` and `make test`; both run setup first.
PY      := .venv/bin/python
DUT     ?= local
# Every make variable that reaches the shell goes through q: one shell word, quoted ('...' with
# each ' written as '\''), so `make nightly DUT='lab1; id #'` passes that string as the profile
# name and runs nothing (tests/test_makefile.py).
# A newline would end the recipe line, so a value with one stops make before any line runs.
define newline


endef
q        = $(if $(findstring $(newline),$(1)),$(error a make variable reaching the shell has a \
             newline: $(1)),'$(subst ','\'',$(1))')
PYTEST  := $(call q,$(PY)) -m pytest
# Unit and behaviour tests of every system, plus the quick subset of the suites on --dut=local
# and on the emulated SSH lab (--dut=lab-emu: switch, controller and generator hosts over SSH),
# whose smoke also runs with a real TRex server on the generator host (--dut=lab-emu-trex).
# The lab-emu run leases its place from a labgrid coordinator it starts on 127.0.0.1 itself
# (--lab-coordinator=local, drivers/lab/lease.py) and stops at its end.
TEST_PATHS := tests harness paths openflow redact dut drivers traces reports

.PHONY: setup test suites nightly bench clean-stale report-path help

help:
	@echo "make suites   set up, run pytest suites/ --dut="$(call q,$(DUT))", write reports/latest/index.html"
	@echo "make test     set up, run the tests (what CI runs)"
	@echo "make nightly  set up, fuzz the switch agent 1 h per target, run the long matrix and the trend check"
	@echo "make bench    set up, run the benchmarks only (classifier, generator, switch pipeline)"

setup:
	@bash scripts/setup.sh

test: setup
	$(PYTEST) $(foreach p,$(TEST_PATHS),$(call q,$(p))) && $(PYTEST) suites/ --dut=local -m quick && \
	  $(PYTEST) suites/ --dut=lab-emu -m quick --lab-coordinator=local && \
	  if bash scripts/build_trex.sh --locate >/dev/null 2>&1; then \
	    $(PYTEST) suites/smoke/test_links.py --dut=lab-emu-trex; \
	  else echo "lab-emu-trex skipped: TRex is not built here (scripts/build_trex.sh says why)"; fi

suites: setup
	$(PYTEST) suites/ $(call q,--dut=$(DUT)) -v -m "not nightly"; rc=$$?; \
	  echo "report: $$(readlink -f reports/latest)/index.html"; exit $$rc

# The switch's fuzz targets (fuzz_agent, fuzz_conn,
# fuzz_datapath) run an hour each (OFBENCH_FUZZ_SECONDS)
# first; their corpora build up in /var/cache/ofbench/fuzz-agent* (dut/switch/README.md
# "Fuzzing"). The InfluxDB token is read by the harness from OFBENCH_INFLUX_TOKEN (or the file
# OFBENCH_INFLUX_TOKEN_FILE names), never passed in argv; OFBENCH_INFLUX_URL must not carry
# credentials (the run refuses it).
nightly: setup
	OFBENCH_FUZZ_SECONDS=$${OFBENCH_FUZZ_SECONDS:-3600} $(call q,$(PY)) -m dut.switch.fuzz.fuzzer long; frc=$$?; \
	$(PYTEST) suites/ $(call q,--dut=$(DUT)) -v --nightly --influx-url="$${OFBENCH_INFLUX_URL:-local}" \
	  $${OFBENCH_INFLUX_TOKEN_FILE:+--influx-token-file="$$OFBENCH_INFLUX_TOKEN_FILE"}; rc=$$?; \
	  echo "report: $$(readlink -f reports/latest)/index.html"; [ $$frc -eq 0 ] || echo "fuzzer: findings (see above)"; \
	  [ $$rc -eq 0 ] && [ $$frc -eq 0 ]

bench: setup
	$(PYTEST) suites/ $(call q,--dut=$(DUT)) -m bench; rc=$$?; \
	  echo "report: $$(readlink -f reports/latest)/index.html"; exit $$rc

clean-stale: setup
	$(call q,$(PY)) -m drivers.lab.cleanup
