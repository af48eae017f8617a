# ofbench: the README's two commands are `make suites` and `make test`; both run setup first.
PY      := .venv/bin/python
PYTEST  := $(PY) -m pytest
DUT     ?= local
# Unit and behaviour tests of every system, plus the quick subset of the suites on --dut=local
# and on the emulated SSH lab (--dut=lab-emu: switch, controller and generator hosts over SSH),
# whose smoke also runs with a real TRex server on the generator host (--dut=lab-emu-trex).
TEST_PATHS := tests harness dut drivers traces reports

.PHONY: setup test suites nightly bench clean-stale report-path help

help:
	@echo "make suites   set up, run pytest suites/ --dut=$(DUT), write reports/latest/index.html"
	@echo "make test     set up, run the tests (what CI runs)"
	@echo "make nightly  set up, fuzz the switch agent 1 h per target, run the long matrix and the trend check"
	@echo "make bench    set up, run the benchmarks only (classifier, generator, switch pipeline)"

setup:
	@bash scripts/setup.sh

test: setup
	$(PYTEST) $(TEST_PATHS) && $(PYTEST) suites/ --dut=local -m quick && \
	  $(PYTEST) suites/ --dut=lab-emu -m quick && \
	  if bash scripts/build_trex.sh --locate >/dev/null 2>&1; then \
	    $(PYTEST) suites/smoke/test_links.py --dut=lab-emu-trex; \
	  else echo "lab-emu-trex skipped: TRex is not built here (scripts/build_trex.sh says why)"; fi

suites: setup
	$(PYTEST) suites/ --dut=$(DUT) -v -m "not nightly"; rc=$$?; \
	  echo "report: $$(readlink -f reports/latest)/index.html"; exit $$rc

# The switch's fuzz targets (fuzz_agent, fuzz_datapath) run an hour each (OFBENCH_FUZZ_SECONDS)
# first; their corpora build up in /var/cache/ofbench/fuzz-agent* (dut/switch/README.md "Fuzzing").
nightly: setup
	OFBENCH_FUZZ_SECONDS=$${OFBENCH_FUZZ_SECONDS:-3600} $(PY) -m dut.switch.fuzz.fuzzer long; frc=$$?; \
	$(PYTEST) suites/ --dut=$(DUT) -v --nightly --influx-url=$${OFBENCH_INFLUX_URL:-local} --influx-token=$${OFBENCH_INFLUX_TOKEN:--}; rc=$$?; \
	  echo "report: $$(readlink -f reports/latest)/index.html"; [ $$frc -eq 0 ] || echo "fuzzer: findings (see above)"; \
	  [ $$rc -eq 0 ] && [ $$frc -eq 0 ]

bench: setup
	$(PYTEST) suites/ --dut=$(DUT) -m bench; rc=$$?; \
	  echo "report: $$(readlink -f reports/latest)/index.html"; exit $$rc

clean-stale: setup
	$(PY) -m drivers.lab.cleanup
