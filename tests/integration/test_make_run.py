"""``make run`` as the README shows it: the broker on its default port, /metrics on
loopback where ``kafka-net top`` looks with no options.

These are the only tests on fixed ports (9092 and 9404, the defaults a user sees), so
they hold a machine-wide lock: two checkouts running ``make test`` at once take
turns here instead of failing on each other's port.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from kafka_net.top import DEFAULT_METRICS_URL
from tests.integration.test_cli import REPO, TIMEOUT, Broker, _env

pytestmark = pytest.mark.interop
DEFAULT_PORTS = (9092, 9404)
LOCK = "/tmp/kafka-net-default-ports.lock"


@contextlib.contextmanager
def default_ports():
    """Hold the machine-wide lock on the default ports; fail, naming the port, if
    something outside this project's tests holds one."""
    with open(LOCK, "w") as lock:
        deadline = time.monotonic() + 300
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, f"{LOCK} held for 300 s"
                time.sleep(0.2)
        for port in DEFAULT_PORTS:
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError as exc:
                    pytest.fail(f"port {port} is taken by something else ({exc}): "
                                "this test runs make run on its defaults")
        yield


@pytest.fixture
def make_run():
    log_dirs = tempfile.mkdtemp(prefix="kn-make-run-")
    with default_ports():
        broker = Broker(command=["make", "--no-print-directory", "run",
                                 f"SERVE_ARGS=--override log.dirs={log_dirs}",
                                 f"BIN={sys.prefix}/bin"])
        try:
            yield broker
        finally:
            broker.kill()
            shutil.rmtree(log_dirs, ignore_errors=True)


def test_make_run_listens_on_9092_and_top_finds_its_metrics(make_run):
    assert make_run.wait_started() == {"PLAINTEXT": 9092}
    make_run.wait_for(f"metrics on {DEFAULT_METRICS_URL}/metrics")
    top = subprocess.run([sys.executable, "-m", "kafka_net", "top", "--once"], cwd=REPO,
                         env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert top.returncode == 0, top.stderr
    assert f"kafka-net at {DEFAULT_METRICS_URL}" in top.stdout
    assert "1 Acceptor  PLAINTEXT :9092" in top.stdout


def test_top_with_no_broker_names_make_run_and_the_option():
    with default_ports():
        top = subprocess.run([sys.executable, "-m", "kafka_net", "top", "--once"], cwd=REPO,
                             env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert top.returncode == 1
    assert f"cannot read {DEFAULT_METRICS_URL}/requests" in top.stderr
    assert "make run" in top.stderr and "--metrics URL" in top.stderr
    assert "pip install 'kafka-net" not in top.stderr
