"""Real clients held to the message formats before record batches, against kafka-net
playing Kafka 2.8 (``as.version``): what a Kafka 2.8 broker served them.

* kafka-python 3.0.12 with ``api_version=(0, 10, 1)``: Produce v2 with magic-1
  message sets (its kafka/record/legacy_records.py), Fetch v3, assign + seek.
* kcat (the Debian package, librdkafka 2.0.x) with ``api.version.request=false``
  and ``broker.version.fallback=0.9.0``: magic 0 (Produce v1, Fetch v1,
  ListOffsets v0), no ApiVersions.  At fallback 0.10.0 librdkafka asks
  ApiVersions all the same and negotiates record batches.

Each checks the versions the broker saw (the broker's request metrics), what it
stored (one magic-2 batch per produced message set, the client's codec) and
what the client read back.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.records import Compression
from tests.integration.client_support import bootstrap, stored_batches
from tests.support import make_config, running_server

pytestmark = pytest.mark.interop

N = 20
TIMEOUT_S = 30
CODECS = {"none": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY,
          "lz4": Compression.LZ4}


@pytest.fixture(scope="module")
def kafka_2_8():
    with running_server(make_config(as_version="2.8")) as server:
        yield server


def lines(tag: str) -> list[tuple[str, str]]:
    # values repeat text, so that a client's compression is worth it and applied
    return [(f"{tag}-key-{i}", f"{tag} value {i} " * 8) for i in range(N)]


def versions_seen(server, api_key: int) -> list[int]:
    return server.apis.metrics.requests_seen(api_key)


# --- kafka-python -------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CODECS))
def test_kafka_python_0_10_1_produces_and_consumes(kafka_2_8, codec):
    topic = f"kafka-python-legacy-{codec}"
    kafka_2_8.apis.create_topic(topic, 1)
    wanted = lines(codec)
    producer = KafkaProducer(bootstrap_servers=bootstrap(kafka_2_8), api_version=(0, 10, 1),
                             compression_type=None if codec == "none" else codec,
                             linger_ms=50, batch_size=1 << 20)
    try:
        futures = [producer.send(topic, key=k.encode(), value=v.encode(), partition=0)
                   for k, v in wanted]
        producer.flush(timeout=TIMEOUT_S)
        assert [f.get(timeout=TIMEOUT_S).offset for f in futures] == list(range(N))
    finally:
        producer.close(timeout=TIMEOUT_S)
    assert max(versions_seen(kafka_2_8, ApiKey.PRODUCE)) == 2
    assert {b.compression for b in stored_batches(kafka_2_8, topic)} == {CODECS[codec]}

    consumer = KafkaConsumer(bootstrap_servers=bootstrap(kafka_2_8), api_version=(0, 10, 1),
                             enable_auto_commit=False, group_id=None,
                             consumer_timeout_ms=TIMEOUT_S * 1000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got = []
        for message in consumer:
            got.append(message)
            if len(got) == N:
                break
    finally:
        consumer.close()
    assert [m.offset for m in got] == list(range(N))
    assert [(m.key.decode(), m.value.decode()) for m in got] == wanted
    assert all(m.timestamp > 0 and m.timestamp_type == 0 for m in got)   # magic 1 CreateTime
    assert max(versions_seen(kafka_2_8, ApiKey.FETCH)) == 3


# --- kcat ---------------------------------------------------------------------------------
# librdkafka sends ApiVersions whenever broker.version.fallback is 0.10.0 or later, even
# with api.version.request=false (librdkafka issue #1422): held to 0.10.0 it still
# negotiates record batches (Produce v7 at 2.8).  Only a fallback before 0.10 keeps it
# on the legacy formats: Produce v1 and Fetch v1, magic 0, and ListOffsets v0.


@pytest.fixture(scope="module")
def kcat_installed():
    assert shutil.which("kcat"), "kcat is not installed: run `make kcat` (apt-get install kcat)"


def kcat(server, fallback: str, *args: str, input: str | None = None) -> str:
    result = subprocess.run(["kcat", "-b", bootstrap(server), "-X", "api.version.request=false",
                             "-X", f"broker.version.fallback={fallback}", *args],
                            input=input, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return result.stdout


@pytest.fixture
def fresh_2_8():
    """A broker of its own, so that its request metrics are this test's."""
    with running_server(make_config(as_version="2.8")) as server:
        yield server


@pytest.mark.parametrize("codec", list(CODECS))
def test_kcat_0_9_0_produces_and_consumes_magic_0(fresh_2_8, kcat_installed, codec):
    topic = f"kcat-legacy-{codec}"
    fresh_2_8.apis.create_topic(topic, 1)
    wanted = lines(codec)
    kcat(fresh_2_8, "0.9.0", "-P", "-t", topic, "-p", "0", "-K", ":", "-X",
         f"compression.codec={codec}", input="".join(f"{k}:{v}\n" for k, v in wanted))
    assert {b.compression for b in stored_batches(fresh_2_8, topic)} == {CODECS[codec]}
    out = kcat(fresh_2_8, "0.9.0", "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
               "-c", str(N), "-J")
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [r["offset"] for r in records] == list(range(N))
    assert [(r["key"], r["payload"]) for r in records] == wanted
    assert all("ts" not in r for r in records)   # magic 0: no timestamps
    assert versions_seen(fresh_2_8, ApiKey.PRODUCE) == [1]
    assert versions_seen(fresh_2_8, ApiKey.FETCH) == [1]
    assert versions_seen(fresh_2_8, ApiKey.LIST_OFFSETS) == [0]
    assert versions_seen(fresh_2_8, ApiKey.API_VERSIONS) == []


def test_kcat_0_10_0_negotiates_record_batches(fresh_2_8, kcat_installed):
    topic = "kcat-fallback-0.10.0"
    fresh_2_8.apis.create_topic(topic, 1)
    wanted = lines("fallback")
    kcat(fresh_2_8, "0.10.0", "-P", "-t", topic, "-p", "0", "-K", ":",
         input="".join(f"{k}:{v}\n" for k, v in wanted))
    out = kcat(fresh_2_8, "0.10.0", "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
               "-c", str(N), "-J")
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [(r["key"], r["payload"]) for r in records] == wanted
    assert versions_seen(fresh_2_8, ApiKey.API_VERSIONS)
    assert min(versions_seen(fresh_2_8, ApiKey.PRODUCE)) >= 3
