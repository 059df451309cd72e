# PyTorch Labs: `make lab` for students, `make test` for everyone and CI.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
# Extra pip arguments for torch, e.g. TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"
TORCH_PIP_ARGS ?=
JOBS ?= 2
# labs hub's proxy, from npm into build/node (Debian has no package for it); tests/test_hub.py skips without it.
CHP_VERSION := 5.3.0
PROXY := build/node/node_modules/.bin/configurable-http-proxy

# nbgrader runs a bare `alembic`; caches stay inside build/, never in the shared system temp dir.
export PATH := $(BIN):$(PATH)
export TORCHINDUCTOR_CACHE_DIR := $(CURDIR)/build/cache/inductor
export TRITON_CACHE_DIR := $(CURDIR)/build/cache/triton
export MPLCONFIGDIR := $(CURDIR)/build/cache/matplotlib
export IPYTHONDIR := $(CURDIR)/build/cache/ipython
export JUPYTER_RUNTIME_DIR := $(CURDIR)/build/cache/jupyter-runtime
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Bytecode is written once (make bytecode) and read by every process; pytest keeps its rewritten test modules.
# An environment that forbids writing it (PYTHONDONTWRITEBYTECODE) made every stage rewrite them again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: bytecode lab lab-venv hub test venv system-deps proxy unit unit-quick unit-slow grading notebooks browser site selfcheck mutants lint style typecheck constraints clean

lab: lab-venv
	$(BIN)/labs lab

# A self-learner's lab graded with its hidden checks in the sandbox, as a class is graded (README, Students).
.PHONY: check-lab
check-lab: lab-venv
	@test -n "$(LAB)" || { echo "usage: make check-lab LAB=student/03_modules/lab_modules.ipynb"; exit 2; }
	$(BIN)/labs check-lab "$(LAB)"

# A class on JupyterHub (127.0.0.1:8000): an instructor and two students, nbgrader's exchange (docs/platform.md).
hub: venv proxy
	$(BIN)/labs hub

# The stages run in three lanes side by side (ci/lanes.py; a stage's log: build/logs/STAGE.log). The sandboxed
# grading tests never run beside the unit tests that start kernels and ranks (marker slow: the launcher's
# timing-sensitive ones among them), which follow them in their lane; the in-process unit tests follow the
# notebooks in lane 2, beside the browser test (which mostly waits on JupyterLab) in lane 3.
# `make unit grading ...` runs stages one after another instead.
# The full self-check is not a stage of make test: its unit test checks the verdicts `make selfcheck` committed
# are current, and .ci/run runs `make selfcheck` itself after make test (docs/testing.md).
LANES ?= grading,unit-slow notebooks,site,unit-quick typecheck,browser
# Where the lanes want more than the cores, these yield (nice): the grading lane is the longest, and latency-bound
# (its sandboxes wait on one another), so every other lane gives way to it.
BACKGROUND ?= notebooks,site,typecheck,browser,unit-quick

# The stages share the cores: each torch process computes on one intra-op thread. With two, every process
# beside another spin-waits its idle thread (digits.trained() costs several times the CPU on two threads under
# load: docs/benchmarks.md). OMP_NUM_THREADS=N make test overrides it; `make lab` keeps torch's default.
test unit unit-quick unit-slow grading notebooks browser site selfcheck mutants: export OMP_NUM_THREADS ?= 1

test: venv system-deps style bytecode
	$(BIN)/python ci/lanes.py $(LANES) --background $(BACKGROUND)
	@echo "make test: all passed"

# torch comes from pip (its configured index or TORCH_PIP_ARGS: a CPU build); the pinned rest from uv, which
# installs the same set in a fraction of pip's time (docs/benchmarks.md), keeping the torch it finds; else pip.
# --compile-bytecode, as pip does: the sandboxes see site-packages read-only, so without .pyc files every
# sandboxed process compiles what it imports (what it cost a fresh make test: docs/benchmarks.md, Installing).
# `venv`: everything (.[dev]: every extra, the test and lint tools), what make test and its stages use;
# `lab-venv`: the student's set (the package alone: torch, JupyterLab, nbgrader, labutils' needs), unless
# the whole set is there already (docs/benchmarks.md: what each costs to install).
venv: $(VENV)/.installed
lab-venv: $(VENV)/.installed-student

define install_venv
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0 $(TORCH_PIP_ARGS)
	$(BIN)/python -m pip install -q -c requirements/constraints.txt uv
	$(BIN)/uv pip install --python $(BIN)/python -q --compile-bytecode -c requirements/constraints.txt -e '$(1)' \
		|| { echo "uv could not install the pinned set: installing it with pip"; \
		     $(BIN)/python -m pip install -q -c requirements/constraints.txt -e '$(1)'; }
endef

$(VENV)/.installed: pyproject.toml requirements/constraints.txt
	$(call install_venv,.[dev])
	touch $@ $(VENV)/.installed-student

$(VENV)/.installed-student: pyproject.toml requirements/constraints.txt
	$(if $(wildcard $(VENV)/.installed),,$(call install_venv,.))
	touch $@

# graphviz's `dot` renders autograd graphs (labutils has a fallback, but the course and its tests use both);
# bubblewrap sandboxes every graded submission (labs grade, labs check); configurable-http-proxy (npm) runs labs hub.
system-deps: proxy
	@need=""; command -v dot >/dev/null || need="$$need graphviz"; command -v bwrap >/dev/null || need="$$need bubblewrap"; \
	[ -z "$$need" ] && exit 0; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$need; \
	else \
		echo "missing:$$need: run  sudo apt-get install -y$$need  (Debian/Ubuntu), then make test again"; \
		exit 1; \
	fi

proxy: $(PROXY)

$(PROXY):
	@if command -v npm >/dev/null; then \
		npm install --prefix build/node --no-audit --no-fund --loglevel=error configurable-http-proxy@$(CHP_VERSION); \
	else \
		echo "npm missing: labs hub needs configurable-http-proxy (apt-get install -y npm, then make proxy);" \
			"the hub test skips and says so"; \
	fi

# ruff (pyproject.toml: BLE, RUF100 among its rules), mypy over the packages (labutils, graders, labs, zygote),
# and the notebooks' conventions; .pre-commit-config.yaml runs the same before each commit. make test runs
# style before its lanes and typecheck in a lane (mypy from a cold cache, beside the browser tests; its cost:
# docs/benchmarks.md).
lint: style typecheck

# Commit subjects are checked from the commit after SUBJECTS_SINCE on (the rule's first enforced commit).
SUBJECTS_SINCE ?= 9198159
style: venv
	$(BIN)/python ci/commit_msg.py --since $(SUBJECTS_SINCE)
	$(BIN)/ruff check labutils graders labs zygote tests benchmarks ci
	$(BIN)/ruff format --check labutils graders labs zygote tests benchmarks ci
	$(BIN)/labs lint course

typecheck: venv
	$(BIN)/mypy

# The unit tests (not the browser's, not the sandboxed grading ones): `unit` all of them, as make test's two
# stages run them: `unit-quick` in-process, `unit-slow` those that start kernels, ranks or servers (marker slow).
unit: venv
	$(BIN)/python -m pytest -n $(JOBS) -q --durations=15 -m "not browser and not grading and not slurm"

unit-quick: venv
	$(BIN)/python -m pytest -n $(JOBS) -q --durations=15 -m "not browser and not grading and not slow and not slurm"

unit-slow: venv
	$(BIN)/python -m pytest -n $(JOBS) -q --durations=15 -m "slow and not browser and not grading and not slurm"

# Sandboxed grading (attacks, isolation, self-check, PostgreSQL, walkthrough): one at a time, so the fork
# bombs and sandboxes do not starve the launcher's timing-sensitive tests.
grading: venv
	$(BIN)/python -m pytest -q --durations=15 -m grading

# --answer-leaks: a lesson fails when an exercise's answer is on the page before it (docs/authoring.md).
notebooks: venv
	$(BIN)/labs run course --smoke --jobs $(JOBS) --report build/report --html --answer-leaks

# The student's path in headless Chromium (skips, saying how to install it, when Chromium is missing).
browser: venv
	$(BIN)/python -m pytest -q -m "browser and not hub"

# A class on JupyterHub: a unix user per person, their limits, sign-in, Chromium's round trip through nbgrader's
# exchange (tests/test_hub.py, tests/test_hub_class.py, marker hub). As root; without root they skip and say so.
.PHONY: hubclass
hubclass: export OMP_NUM_THREADS ?= 1
hubclass: venv proxy
	$(BIN)/python -m pytest -q -m "hub and not hubload"

# 20 students sign in to one labs hub and run a lesson's first cells at once (tests/test_hub_load.py, the work in
# benchmarks/bench_hub_load.py; figures in build/report/hub_load.json; its cost: docs/benchmarks.md). As root.
.PHONY: hubload
hubload: export OMP_NUM_THREADS ?= 1
hubload: venv
	$(BIN)/python -m pytest -q -m hubload

# A real Slurm cluster (ci/slurm.sh's one node; .ci/run starts it as root) grades a class of 200 with a job array,
# one task cancelled and retried alone, and runs one chapter of the course as an array (tests/test_slurm.py,
# docs/slurm.md); without the cluster the tests skip and say so.
.PHONY: slurm
slurm: export OMP_NUM_THREADS ?= 1
slurm: venv
	$(BIN)/python -m pytest -q --durations=10 -m slurm

# The stages that need root and live infrastructure (a Slurm cluster, classes of unix users on JupyterHub):
# .ci/run runs them after make test, not in its lanes; their CPU time (docs/benchmarks.md) would take make
# test's lanes past its budget (docs/testing.md). Run by hand as root, with ci/slurm.sh's cluster started for the first.
.PHONY: system
system: slurm hubclass hubload

# Every picture of the static course that `make notebooks` wrote, checked in Chromium.
site: venv
	$(BIN)/python -m tests.browser.site_check build/report/site/index.html --shots build/report/browser/site

# Every lab graded in the sandbox, each version as it must (labs check); the verdicts are recorded next to the
# probes (course/*/probes/*.selfcheck.json), which make test's tests/test_selfcheck_ledger.py checks are current.
selfcheck: venv
	$(BIN)/labs check --jobs $(JOBS) --record

# Mutation testing of the labs' reference solutions (docs/authoring.md): grades only the mutants whose
# committed results (course/*/probes/*.mutants.json) are stale, and fails below the target. Not part of
# make test, whose tests/test_mutants.py only checks that the committed results are current.
MUTANT_CHAPTERS ?= 01_autograd 02_tensors 03_modules 04_distributed 05_deployment
mutants: venv
	$(BIN)/labs check --mutants --jobs $(JOBS) $(MUTANT_CHAPTERS)

# The project's bytecode, written once: the sandboxes never write it (read-only binds, PYTHONDONTWRITEBYTECODE),
# nor does any process run with PYTHONDONTWRITEBYTECODE set; without it each one compiles what it imports.
bytecode: venv
	$(BIN)/python -m compileall -q -j $(JOBS) labs graders labutils zygote ci tests course

constraints: venv
	$(BIN)/python -m pip freeze --exclude-editable | sed 's/^torch==\(.*\)+cpu/torch==\1/' \
		| cat <(sed -n '1,3p' requirements/constraints.txt) - > requirements/constraints.new
	mv requirements/constraints.new requirements/constraints.txt

clean:
	rm -rf build
