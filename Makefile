# Two commands on a fresh clone:  `make demo` (the main job) and `make test` (the test suite).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
DEMO    = --hardware gb300-nvl72 --model kimi-k2 --ep 16 --tokens 2048

.PHONY: demo test bench clean

$(BIN)/mok: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch is pinned (DEVELOPERS.md): 2.13.0 is the CPU build this machine and CI have on disk
	$(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q -e ".[kernels,cluster,dev]"
	touch $@

demo: $(BIN)/mok
	$(BIN)/mok tune $(DEMO) --top 5
	$(BIN)/mok predict $(DEMO)
	$(BIN)/mok predict $(DEMO) --system nccl-torch

test: $(BIN)/mok
	$(BIN)/python -m pytest -q

bench: $(BIN)/mok
	$(BIN)/python benchmarks/bench_tuner.py

clean:
	rm -rf $(VENV) *.egg-info
