"""``kafka-net serve`` seen from outside: OS thread names in ``ps -L``, the metrics
URL in the started line, and ``kafka-net top --once`` after a real-client workload."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter

import pytest
from confluent_kafka import Producer

from kafka_net.network.thread_name import os_thread_name
from tests.integration.test_cli import EPHEMERAL, REPO, TIMEOUT, _env, serve

pytestmark = pytest.mark.interop
METRICS_URL = re.compile(r"metrics on (?P<url>http://[^ ]+)/metrics")


def test_ps_shows_the_thread_kinds_apart():
    with serve(EPHEMERAL, "num.network.threads=2", "num.io.threads=3",
               "metrics.listener=http://127.0.0.1:0") as broker:
        port = broker.wait_started()["PLAINTEXT"]
        ps = subprocess.run(["ps", "-L", "-o", "comm=", "-p", str(broker.proc.pid)],
                            capture_output=True, text=True, timeout=TIMEOUT, check=True)
    names = Counter(line.strip() for line in ps.stdout.splitlines())
    assert names[f"kn-accept-{port}"] == 1
    assert names["kn-network-0"] == names["kn-network-1"] == 1
    assert [names[f"kn-handler-{i}"] for i in range(3)] == [1, 1, 1]
    assert names["kn-metrics"] == names["kn-reaper-Fetch"] == names["kn-reaper-Rebal"] == 1


def test_long_os_names_keep_their_start_and_their_number():
    assert os_thread_name("kn-handler-7") == b"kn-handler-7"
    assert os_thread_name("kn-reaper-Rebalance") == b"kn-reaper-Rebal"
    assert os_thread_name("data-plane-kafka-request-handler-12") == b"data-plane-k~12"


def test_top_once_draws_the_threads_with_numbers_after_a_workload():
    with serve(EPHEMERAL, "metrics.listener=http://127.0.0.1:0") as broker:
        port = broker.wait_started()["PLAINTEXT"]
        url = broker.wait_for(METRICS_URL)["url"]
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}"})
        for i in range(20):
            producer.produce("topped", value=b"%d" % i)
        assert producer.flush(TIMEOUT) == 0
        top = subprocess.run([sys.executable, "-m", "kafka_net", "top", "--metrics", url,
                              "--once"], cwd=REPO, env={**_env(), "COLUMNS": "80"},
                             capture_output=True, text=True, timeout=TIMEOUT)
    assert top.returncode == 0, top.stderr
    frame = top.stdout
    assert f"1 Acceptor  PLAINTEXT :{port}" in frame and "N = 3 Processors" in frame
    assert "request queue 0 / 500 (queued.max.requests)" in frame
    assert frame.count("data-plane-kafka-request-handler-") == 8
    # The Processor table: some Processor read requests.
    rows = re.findall(r"^\W*(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\W*$",
                      frame, flags=re.MULTILINE)
    assert len(rows) == 3 and sum(int(r[5]) for r in rows) > 0
    # The last requests with their six timings: the Produce among them.
    # (each timing in five characters: fewer decimals from 10 ms up, never cut)
    produce = re.search(r"^Produce v\d+ #\d+ .*?((?:\s+\d+(?:\.\d+)?){6})\s*$", frame,
                        flags=re.MULTILINE)
    assert produce, frame
    texts = produce[1].split()
    assert all(len(x) <= 5 for x in texts), frame
    *parts, total = (float(x) for x in texts)
    rounding = sum(0.5 * 10 ** -len(x.partition(".")[2]) for x in texts)
    # each timing is cut to whole microseconds before it is shown (request_metrics._ms):
    # the five parts can lose up to 1 µs each where the total loses it once
    truncated = 0.001 * len(parts)
    assert total > 0 and abs(sum(parts) - total) <= rounding + truncated + 1e-9
    # Per API: requests, errors and p99 of TotalTimeMs, the Produce among them.
    api = re.search(r"^Produce\s+\d+\s+\d+\s+(\d+)\s+(\d+)\s+([\d.]+)\s*$", frame,
                    flags=re.MULTILINE)
    assert api and int(api[1]) >= 1 and int(api[2]) == 0, frame
    # 80 columns hold every line, the clients' addresses whole.
    assert max(len(line) for line in frame.splitlines()) <= 80, frame
    assert re.search(r"127\.0\.0\.1:\d+\s", frame), frame


def test_top_without_a_broker_says_so():
    top = subprocess.run([sys.executable, "-m", "kafka_net", "top", "--metrics",
                          "http://127.0.0.1:9", "--once"], cwd=REPO, env=_env(),
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert top.returncode == 1 and "cannot read http://127.0.0.1:9/requests" in top.stderr


def test_top_redraws_until_q_is_pressed():
    import os
    import pty
    import select
    import time

    with serve(EPHEMERAL, "metrics.listener=http://127.0.0.1:0") as broker:
        broker.wait_started()
        url = broker.wait_for(METRICS_URL)["url"]
        master, slave = pty.openpty()
        top = subprocess.Popen([sys.executable, "-m", "kafka_net", "top", "--metrics", url],
                               cwd=REPO, env={**_env(), "COLUMNS": "100", "TERM": "xterm"},
                               stdin=slave, stdout=slave, stderr=slave)
        os.close(slave)
        output = b""
        try:
            deadline = time.monotonic() + TIMEOUT
            # Two frames drawn (a frame's title appears once per redraw), then q.
            while output.count(b"RequestChannel") < 2 and time.monotonic() < deadline:
                if select.select([master], [], [], 0.5)[0]:
                    output += os.read(master, 65536)
            os.write(master, b"q")
            assert top.wait(TIMEOUT) == 0
        finally:
            if top.poll() is None:
                top.kill()
                top.wait(TIMEOUT)
            os.close(master)
    assert output.count(b"RequestChannel") >= 2


def test_top_timings_keep_their_digits_in_five_characters():
    from kafka_net.top import timing_text
    assert [timing_text(ms) for ms in (0.0, 9.0684, 14.6249, 146.24, 1462.4, 99999.4)] == [
        "0.000", "9.068", "14.62", "146.2", "1462", "99999"]
