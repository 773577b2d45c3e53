# Two entry points for a fresh Debian 12 machine: `make demo` and `make test`.
# Both run `setup`, which installs only what is missing (LLVM/MLIR 22 packages, the Python
# virtualenv, the Rust build, the Python extension) and is quick when everything is there.

EMBER_HOME ?= $(HOME)/.cache/ember
VENV ?= $(EMBER_HOME)/venv
PY := $(VENV)/bin/python
LLVM_PKGS := llvm-22-dev libmlir-22-dev libpolly-22-dev libclang1-22 libclang-common-22-dev libzstd-dev zlib1g-dev mlir-22-tools graphviz
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export EMBER_PYTHON := $(PY)
export TMPDIR := $(EMBER_HOME)/tmp

.PHONY: setup setup-llvm setup-venv setup-python-ext build demo test test-rust test-python regen-models

setup: setup-llvm setup-venv setup-python-ext

setup-llvm:
	@if dpkg -s $(LLVM_PKGS) >/dev/null 2>&1; then echo "setup: LLVM/MLIR 22 present"; else \
	  echo "setup: installing LLVM/MLIR 22 from Debian"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y --no-install-recommends $(LLVM_PKGS); fi

setup-venv:
	@mkdir -p $(TMPDIR)
	@test -x $(PY) || python3 -m venv $(VENV)
	@if $(PY) -c "import torch, jax, transformers, expecttest, maturin, pytest, numpy" 2>/dev/null; then echo "setup: Python env present ($(VENV))"; else \
	  echo "setup: installing the Python env into $(VENV) (torch is ~3 GB)"; \
	  $(PY) -m pip install -q --upgrade pip && $(PY) -m pip install -q -r tools/python/requirements.txt; fi
	@echo "$(VENV)" > $(EMBER_HOME)/venv-path

build:
	cargo build -p ember-tools

# The extension shares cargo's target dir, so an unchanged tree rebuilds nothing.
setup-python-ext:
	@cd tools/python && VIRTUAL_ENV=$(VENV) $(VENV)/bin/maturin develop -q 2>&1 | grep -v "^📦\|^🔗\|^🐍\|^⚠️" || true
	@$(PY) -c "import ember; ember.version()" && echo "setup: Python package ember installed"

demo: setup build
	@echo "== ember import testdata/models/gpt2_block.pt2  (torch dialect, first lines)"
	@./target/debug/ember import testdata/models/gpt2_block.pt2 -o $(TMPDIR)/gpt2_block.mlir
	@head -c 1200 $(TMPDIR)/gpt2_block.mlir; echo " ..."
	@mlir-opt-22 --allow-unregistered-dialect $(TMPDIR)/gpt2_block.mlir -o /dev/null && echo "(mlir-opt-22 accepts it)"
	@echo "== ember compile --target cpu --report  (the e-graph optimizer's kernels, first rows)"
	@./target/debug/ember compile testdata/models/gpt2_block.pt2 --target cpu -o $(TMPDIR)/gpt2_block_cpu --report
	@sed -n '3p;9,14p' $(TMPDIR)/gpt2_block_cpu/report/fusion.md | cut -c1-160
	@echo "== ember run (20 timed runs), then compare with torch eager's outputs"
	@./target/debug/ember run $(TMPDIR)/gpt2_block_cpu --inputs testdata/models/gpt2_block.npz --outputs $(TMPDIR)/gpt2_block_got.npz --repeat 20
	@$(PY) -c "import numpy as np; g=np.load('$(TMPDIR)/gpt2_block_got.npz'); w=np.load('testdata/models/gpt2_block.npz'); print('out0', g['out0'].shape, 'max |ember - eager| =', float(np.abs(g['out0']-w['out0']).max()))"

test: setup test-rust test-python

test-rust:
	INSTA_UPDATE=no cargo test --workspace

test-python:
	cd tools/python && $(PY) -m pytest -q tests

regen-models: setup-venv
	$(PY) testdata/models/generate.py
