# Every target creates (or reuses) the project's own virtual environment first, so a fresh
# machine needs only python3, make and a C++ compiler.
.DEFAULT_GOAL := help
SHELL := /bin/bash

VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
JOBS    ?= auto
PYTEST_ARGS ?=

.PHONY: help venv run demo test test-long test-fast verilog synth lint clean formal mutate

help:
	@echo "make run      export + lint every hardware top, then the default network scenario"
	@echo "             (all six algorithms side by side; table on stdout, plots in out/default/)"
	@echo "make demo     the marker sweep and the DCTCP sawtooth against the paper's analysis"
	@echo "make test     the whole suite: unit, Amaranth-simulation and cocotb/Verilator tests"
	@echo "make test-long  the whole suite with soak-sized random runs (CC_LONG=1)"
	@echo "make test-fast  the suite without the cocotb/Verilator tests"
	@echo "make verilog  export every top to gateware/build/ and lint it with verilator -Wall"
	@echo "make synth    Yosys + nextpnr (ECP5, Nexus) for every top whose Verilog changed, in"
	@echo "             parallel; report in docs/synthesis.md"
	@echo "make lint     ruff on the Python, plus the Verilog lint"
	@echo "make formal   every formal property (SymbiYosys + Yices): proven/failed and the time;"
	@echo "             as many at a time as CPUs (FORMAL_ARGS='--jobs 1 marker')"
	@echo "make mutate   mutation report of hw/ (MUTATE_ARGS='--block cnp_gen --max 40')"
	@echo "make clean    remove build outputs (keeps the virtual environment)"

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

venv: $(STAMP)

run: $(STAMP)
	$(PY) -m gateware verilog
	$(PY) -m sim run default

demo: $(STAMP)
	$(PY) -m sim.demo

test: $(STAMP)
	PYTHONWARNINGS=error $(PY) -m pytest -n $(JOBS) --maxschedchunk=1 $(PYTEST_ARGS)

test-long: $(STAMP)
	CC_LONG=1 PYTHONWARNINGS=error $(PY) -m pytest -n $(JOBS) --maxschedchunk=1 $(PYTEST_ARGS)

test-fast: $(STAMP)
	PYTHONWARNINGS=error $(PY) -m pytest -n $(JOBS) --maxschedchunk=1 -m "not cocotb" $(PYTEST_ARGS)

verilog: $(STAMP)
	$(PY) -m gateware verilog

synth: $(STAMP)
	$(PY) -m gateware synth --write-docs

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m gateware verilog

FORMAL_ARGS ?=
formal: $(STAMP)
	$(PY) -m tests.formal $(FORMAL_ARGS)

MUTATE_ARGS ?=
mutate: $(STAMP)
	$(PY) -m tools.mutate $(MUTATE_ARGS)

clean:
	rm -rf build gateware/build out .pytest_cache
