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

.PHONY: clippy setup setup-llvm setup-venv setup-python-ext build demo test test-rust test-python test-wheel wheel regen-models fuzz fuzz-ci fuzz-build

setup: setup-llvm setup-venv setup-python-ext

setup-llvm:
	@if dpkg -s $(LLVM_PKGS) >/dev/null 2>&1; then echo "setup: LLVM/MLIR 22 present"; else \
	  echo "setup: installing LLVM/MLIR 22 from Debian"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y --no-install-recommends $(LLVM_PKGS); fi

setup-venv:
	@mkdir -p $(TMPDIR)
	@test -x $(PY) || python3 -m venv $(VENV)
	@if $(PY) -c "import torch, jax, transformers, torchvision, expecttest, maturin, pytest, xdist, numpy, ml_dtypes, matplotlib" 2>/dev/null && test -e $(VENV)/lib/libdnnl.so.3; then echo "setup: Python env present ($(VENV))"; else \
	  echo "setup: installing the Python env into $(VENV) (torch is ~3 GB)"; \
	  $(PY) -m pip install -q --upgrade pip && $(PY) -m pip install -q -r tools/python/requirements.txt; fi
	@echo "$(VENV)" > $(EMBER_HOME)/venv-path

build:
	cargo build -p ember-tools

# The extension shares cargo's target dir, so an unchanged tree rebuilds nothing. Release, as the
# wheel ships it: `make wheel` then reuses these artifacts instead of compiling the crate again,
# and the Python tests run the compiler at the speed users get.
setup-python-ext:
	@cd tools/python && VIRTUAL_ENV=$(VENV) $(VENV)/bin/maturin develop -q --release 2>&1 | grep -v "^📦\|^🔗\|^🐍\|^⚠️" || true
	@$(PY) -c "import ember; ember.version()" && echo "setup: Python package ember installed"
	@$(PY) -m ember.deferred.native >/dev/null && echo "setup: native eager recorder built (ember.eager)"

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

clippy:
	cargo clippy --workspace --all-targets -q -- -D warnings

test-rust: clippy
	cargo fmt --all -- --check
	INSTA_UPDATE=no cargo test --workspace

# Two pytest workers (pytest-xdist): most tests are one Python thread tracing and compiling, so
# on 2 cores the suite takes 11 min instead of 20 (each test still runs in one process).
PYTEST_JOBS ?= 2
test-python:
	cd tools/python && $(PY) -m pytest -q -n $(PYTEST_JOBS) -m "not wheel" tests

# The user's install: an abi3 wheel (CPython >= 3.11) with the `ember` package, its extension (the
# compiler, LLVM linked in), the torch.compile entry point and the `ember` command. Release build,
# into target/wheels/ (or WHEEL_DIR); install with `pip install target/wheels/ember-*.whl`.
WHEEL_DIR ?= $(CURDIR)/target/wheels
wheel: setup-llvm setup-venv
	cd tools/python && $(VENV)/bin/maturin build --release --compatibility linux -i $(PY) -o $(WHEEL_DIR)

# Installs that wheel into a fresh venv (reusing this venv's torch, never downloading it) and runs
# `ember --help`, `ember compile`/`run` on a bundled model and a torch.compile call.
test-wheel: wheel
	cd tools/python && EMBER_WHEEL_DIR=$(WHEEL_DIR) $(PY) -m pytest -q -m wheel tests/test_wheel.py

regen-models: setup-venv
	$(PY) testdata/models/generate.py

# Fuzzing (cargo-fuzz, nightly; fuzz/ is its own workspace with its own target dir). Each target
# runs FUZZ_SECONDS from its committed seeds (fuzz/corpus/<t>) plus the inputs earlier runs found
# (fuzz/work/<t>, not committed); a crash stops `make` and leaves its input in fuzz/artifacts/<t>.
# No sanitizer: the code under test is safe Rust (ASan would halve the speed for nothing), and
# the kernels `run_inputs` calls are LLVM-generated, which ASan cannot instrument; debug
# assertions and overflow checks stay on (-a), so a wrapped size crashes instead of passing.
FUZZ_SECONDS ?= 300
FUZZ_TARGETS ?= json_import pt2_archive ir_parse npz_read run_inputs
FUZZ_FLAGS := --sanitizer none --debug-assertions
# -timeout: no input may take Ember longer than a few seconds; -rss_limit_mb: nor make it
# allocate more than its declared sizes justify (seeds and inputs are at most a few hundred KB).
FUZZ_ARGS := -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
FUZZ_WORK ?= work
# The file-based targets write a file per execution: on tmpfs they run 5-7x faster than on disk.
FUZZ_TMPDIR ?= $(if $(wildcard /dev/shm),/dev/shm/ember-fuzz,$(TMPDIR))

fuzz-build:
	@mkdir -p $(TMPDIR)
	@cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	cd fuzz && cargo +nightly fuzz build $(FUZZ_FLAGS)

fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  case $$t in ir_parse) d=mlir;; npz_read|run_inputs) d=npz;; *) d=json;; esac; \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s" && \
	  (cd fuzz && mkdir -p $(FUZZ_WORK)/$$t $(FUZZ_TMPDIR) && TMPDIR=$(FUZZ_TMPDIR) cargo +nightly fuzz run $(FUZZ_FLAGS) $$t $(FUZZ_WORK)/$$t corpus/$$t -- \
	    $(FUZZ_ARGS) -dict=$$d.dict -max_total_time=$(FUZZ_SECONDS)) || exit 1; done

# CI: each target 30 s from the committed corpus only; what it finds goes to a throwaway dir, so
# runs stay comparable and the tree stays clean.
fuzz-ci:
	rm -rf $(TMPDIR)/fuzz-work
	$(MAKE) fuzz FUZZ_SECONDS=30 FUZZ_WORK=$(TMPDIR)/fuzz-work
