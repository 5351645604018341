"""kafkajs (the JavaScript Kafka client) against kafka-net.

``make test`` installs Node's kafkajs into ``tests/clients/js/node_modules``
(the Makefile's ``kafkajs`` target, ``npm ci`` from the checked-in lock file).
Each test runs one scenario of ``tests/clients/js/scenarios.js`` in a ``node``
subprocess with a timeout; the scenario prints what it observed as one JSON
line and the assertions here say exactly what a Kafka broker answers.

kafkajs 2.2.4 negotiates its own versions (ApiVersions v2, Produce v7, Fetch
v11, JoinGroup v5, DescribeConfigs v2 ...), so it exercises version ranges the
Python clients do not.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.client_support import bootstrap, fast_group_config
from tests.support import as_version_fixture, server_fixture

pytestmark = pytest.mark.interop

JS_DIR = Path(__file__).resolve().parents[1] / "clients" / "js"
NODE_TIMEOUT_S = 60

as_version = as_version_fixture()
server = server_fixture(fast_group_config, scope="module", as_version=True)


@pytest.fixture(scope="module", autouse=True)
def kafkajs_installed():
    assert shutil.which("node"), "node is not installed: run `make kafkajs`"
    assert (JS_DIR / "node_modules" / "kafkajs").is_dir(), \
        "kafkajs is not installed: run `make kafkajs` (npm ci in tests/clients/js)"


def run_scenario(server, scenario: str, prefix: str) -> dict:
    result = subprocess.run(
        ["node", str(JS_DIR / "scenarios.js"), scenario, bootstrap(server), prefix],
        capture_output=True, text=True, timeout=NODE_TIMEOUT_S, cwd=JS_DIR)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, result.stdout
    return json.loads(lines[0][len("RESULT "):])


def test_kafkajs_admin_topics_and_configs(server):
    out = run_scenario(server, "admin", "kjs")

    assert out["created"] is True
    assert out["partitions"] == 3
    # CreateTopics' config took effect; cleanup.policy is Kafka's default.
    assert out["before"] == {"retention.ms": "86400000", "cleanup.policy": "delete"}
    assert out["after"]["retention.ms"] == "3600000"
    assert out["invalid"] == "INVALID_CONFIG"
    assert out["brokers"] == 1
    assert out["controller"] == server.config.node_id
    assert out["stillListed"] is False


def test_kafkajs_offsets_by_timestamp_and_delete_records(server):
    out = run_scenario(server, "offsets", "kjs")

    # One batch of ten records: each timestamp finds its own record, not the batch's first.
    assert out["byTime"] == [0, 5, 9]
    # Past the last timestamp the broker answers offset -1, which kafkajs replaces
    # with the partition's end offset (its fetchTopicOffsetsByTimestamp does so).
    assert out["pastEnd"] == 10
    # deleteTopicRecords moved the log start offset to 4; the end stays at 10.
    assert (out["low"], out["high"]) == (4, 10)


def test_kafkajs_produces_consumes_and_deletes_its_group(server):
    out = run_scenario(server, "produceConsume", "kjs")

    assert out["sent"] == [{"partition": 0, "errorCode": 0}]
    seen = out["seen"]
    assert [m["offset"] for m in seen] == list(range(20))
    assert [m["key"] for m in seen] == [f"k{i}" for i in range(20)]
    assert [m["value"] for m in seen] == [f"kafkajs value {i} " * 4 for i in range(20)]
    assert [m["headers"] for m in seen] == [{"seq": str(i)} for i in range(20)]
    assert out["listed"] is True
    assert out["deleted"] == [{"groupId": "kjs-pc-group", "errorCode": 0}]
    # Deleting it again: the group is gone (GROUP_ID_NOT_FOUND).
    assert out["again"] == ["GROUP_ID_NOT_FOUND"]


def test_kafkajs_group_members_share_partitions(server):
    out = run_scenario(server, "group", "kjs")

    first, second = out["assigned"]
    assert sorted(first + second) == [0, 1, 2, 3]
    assert len(first) == len(second) == 2
    assert out["state"] == "Stable"
    assert out["members"] == 2


def test_kafkajs_transactions_commit_abort_and_offsets(server):
    out = run_scenario(server, "transactions", "kjs")

    # Offsets: c0-c4 at 0-4, COMMIT marker 5, a0-a2 at 6-8, ABORT marker 9,
    # c5-c9 at 10-14, COMMIT marker 15; the two offset-only transactions write
    # no markers in this partition.
    assert out["committed"] == [[i, f"c{i}"] for i in range(5)] + \
        [[10 + i, f"c{5 + i}"] for i in range(5)]
    assert out["uncommitted"] == [f"c{i}" for i in range(5)] + ["a0", "a1", "a2"] + \
        [f"c{i}" for i in range(5, 10)]
    assert out["high"] == 16
    # Offsets sent in an aborted transaction are not committed (-1: none); in a
    # committed one they are.
    assert out["afterAbort"] == -1
    assert out["afterCommit"] == 5
