"""The Debian ``kcat`` tool (librdkafka's command-line client) against kafka-net.

``make test`` installs kcat (the Makefile's ``kcat`` target).  The Debian
package links its own librdkafka (2.0.x in bookworm), older than the one in
confluent-kafka, so this also covers librdkafka's pre-2.11 feature detection
(reference section 5.5, item 1).

Each kcat run is a subprocess with a timeout; its exit status, output and
the broker's stored batches are checked.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from kafka_net.protocol.records import Compression
from tests.integration.client_support import bootstrap, fast_group_config, stored_batches
from tests.support import LOOPBACK, as_version_fixture, server_fixture

pytestmark = pytest.mark.interop

KCAT_TIMEOUT_S = 30
N = 20
CODECS = {"none": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY,
          "lz4": Compression.LZ4, "zstd": Compression.ZSTD}


@pytest.fixture(scope="module", autouse=True)
def kcat_installed():
    assert shutil.which("kcat"), "kcat is not installed: run `make kcat` (apt-get install kcat)"


as_version = as_version_fixture()
server = server_fixture(fast_group_config, scope="module", as_version=True)


def kcat(server, *args: str, input: str | None = None) -> str:
    result = subprocess.run(["kcat", "-b", bootstrap(server), *args], input=input,
                            capture_output=True, text=True, timeout=KCAT_TIMEOUT_S)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return result.stdout


def kcat_produce(server, topic: str, lines: list[tuple[str, str]], *extra: str) -> None:
    """One message per ``key:value`` line, every message with two headers."""
    kcat(server, "-P", "-t", topic, "-K", ":", "-H", "origin=kcat", "-H", f"topic={topic}",
         *extra, input="".join(f"{k}:{v}\n" for k, v in lines))


def json_lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def check_consumed(records: list[dict], topic: str, lines) -> None:
    assert [r["offset"] for r in records] == list(range(len(lines)))
    assert [(r["key"], r["payload"]) for r in records] == lines
    assert all(r["headers"] == ["origin", "kcat", "topic", topic] for r in records)


@pytest.mark.parametrize("codec", list(CODECS))
def test_kcat_produces_and_consumes(server, codec):
    topic = f"kcat-{codec}"
    lines = [(f"key-{i}", f"{codec} value {i} " * 4) for i in range(N)]

    kcat_produce(server, topic, lines, "-X", f"compression.codec={codec}")

    assert {b.compression for b in stored_batches(server, topic)} == {CODECS[codec]}
    records = json_lines(kcat(server, "-C", "-t", topic, "-o", "beginning", "-e",
                              "-c", str(N), "-J"))
    check_consumed(records, topic, lines)


def test_kcat_consumes_as_a_group(server):
    topic = "kcat-group"
    lines = [(f"key-{i}", f"value {i}") for i in range(N)]
    kcat_produce(server, topic, lines)

    records = json_lines(kcat(server, "-G", "kcat-group", "-X", "auto.offset.reset=earliest",
                              "-e", "-c", str(N), "-J", topic))

    check_consumed(records, topic, lines)
    assert server.apis.metrics.requests_seen(11), "kcat never sent JoinGroup"
    assert server.apis.metrics.requests_seen(14), "kcat never sent SyncGroup"


def test_kcat_lists_the_broker_and_topics(server):
    kcat_produce(server, "kcat-listed", [("k", "v")])

    listing = json.loads(kcat(server, "-L", "-J"))

    port = server.bound_port()
    assert listing["brokers"] == [{"id": 1, "name": f"{LOOPBACK}:{port}"}]
    assert listing["controllerid"] == 1
    topics = {t["topic"]: t for t in listing["topics"]}
    assert topics["kcat-listed"]["partitions"] == [
        {"partition": 0, "leader": 1, "replicas": [{"id": 1}], "isrs": [{"id": 1}]}]
