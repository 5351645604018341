"""Real clients over SSL listeners: confluent-kafka (SSL and mutual TLS),
kafka-python (SSL), aiokafka (SSL, with an ssl_context) and kcat
(``-X security.protocol=ssl``).  Each produces, then consumes what it produced
through a consumer group.

One broker for the module, with an SSL listener (no client certificate) and an
MTLS listener (``listener.name.mtls.ssl.client.auth=required``); the clients
check the broker's certificate against the test CA, for 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaProducer

from kafka_net.config import ServerConfig
from tests.integration.client_support import kafka_python_member, read_all
from tests.support import LOOPBACK, running_server
from tests.tls_support import pki  # noqa: F401 (pki: fixture)

pytestmark = pytest.mark.interop

N = 10
TIMEOUT_S = 30


@pytest.fixture(scope="module")
def server(pki):
    cfg = ServerConfig.from_properties({
        "log.store": "memory",
        "listeners": f"SSL://{LOOPBACK}:0,MTLS://{LOOPBACK}:0",
        "listener.security.protocol.map": "SSL:SSL,MTLS:SSL",
        **pki.broker_props(), "listener.name.mtls.ssl.client.auth": "required",
        "num.network.threads": "1", "num.io.threads": "4",
        "group.initial.rebalance.delay.ms": "0", "shutdown.timeout.ms": "5000"})
    with running_server(cfg) as running:
        yield running


def address(server, listener: str = "SSL") -> str:
    return f"{LOOPBACK}:{server.bound_port(listener)}"


def values(tag: str) -> list[bytes]:
    return [f"{tag} value {i}".encode() for i in range(N)]


# -- confluent-kafka (librdkafka) --------------------------------------------------------


def confluent_config(server, pki, mutual: bool) -> dict:
    cfg = {"bootstrap.servers": address(server, "MTLS" if mutual else "SSL"),
           "security.protocol": "SSL", "ssl.ca.location": pki.ca}
    if mutual:
        cfg.update({"ssl.certificate.location": pki.path("client.pem"),
                    "ssl.key.location": pki.path("client.key")})
    return cfg


def confluent_poll_once(consumer) -> list:
    msg = consumer.poll(0.1)
    if msg is None or (msg.error() and msg.error().code() == KafkaError._PARTITION_EOF):
        return []
    assert not msg.error(), msg.error()
    return [msg]


@pytest.mark.parametrize("mutual", [False, True], ids=["ssl", "mutual_tls"])
def test_confluent_kafka_produces_and_consumes_as_a_group(server, pki, mutual):
    topic = f"ssl-confluent-{mutual}"
    cfg = confluent_config(server, pki, mutual)
    producer = Producer(cfg)
    errors = []
    for v in values(topic):
        producer.produce(topic, value=v,
                         on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert producer.flush(TIMEOUT_S) == 0 and not errors, errors
    consumer = Consumer({**cfg, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        got = read_all(confluent_poll_once, consumer, N)
    finally:
        consumer.close()
    assert [m.value() for m in got] == values(topic)


# -- kafka-python ------------------------------------------------------------------------


def test_kafka_python_produces_and_consumes_as_a_group(server, pki):
    topic = "ssl-kafka-python"
    ssl_args = dict(bootstrap_servers=address(server), security_protocol="SSL",
                    ssl_cafile=pki.ca)
    producer = KafkaProducer(**ssl_args)
    try:
        futures = [producer.send(topic, value=v) for v in values(topic)]
        producer.flush(timeout=TIMEOUT_S)
        assert [f.get(timeout=TIMEOUT_S).offset for f in futures] == list(range(N))
    finally:
        producer.close(timeout=5)
    consumer = kafka_python_member(topic, group_id="g-kafka-python", auto_offset_reset="earliest",
                                   **ssl_args)
    try:
        got = read_all(lambda c: [r for rs in c.poll(timeout_ms=100).values() for r in rs],
                       consumer, N)
    finally:
        consumer.close()
    assert [r.value for r in got] == values(topic)


# -- aiokafka ----------------------------------------------------------------------------


async def aiokafka_round_trip(server, pki, topic: str) -> list[bytes]:
    ssl_args = dict(bootstrap_servers=address(server, "MTLS"), security_protocol="SSL",
                    ssl_context=pki.client_context("client"))
    producer = AIOKafkaProducer(**ssl_args)
    await producer.start()
    try:
        for v in values(topic):
            await producer.send_and_wait(topic, v)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, group_id="g-aiokafka", auto_offset_reset="earliest",
                                **ssl_args)
    await consumer.start()
    try:
        got = []
        while len(got) < N:   # bounded by wait_for
            for records in (await consumer.getmany(timeout_ms=500)).values():
                got.extend(r.value for r in records)
        return got
    finally:
        await consumer.stop()


def test_aiokafka_with_an_ssl_context_and_a_client_certificate(server, pki):
    topic = "ssl-aiokafka"
    got = asyncio.run(asyncio.wait_for(aiokafka_round_trip(server, pki, topic), TIMEOUT_S))
    assert got == values(topic)


# -- kcat --------------------------------------------------------------------------------


def kcat(server, pki, *args: str, input: str | None = None) -> str:
    result = subprocess.run(
        ["kcat", "-b", address(server), "-X", "security.protocol=ssl",
         "-X", f"ssl.ca.location={pki.ca}", *args],
        input=input, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return result.stdout


def test_kcat_over_ssl_produces_and_consumes_as_a_group(server, pki):
    topic = "ssl-kcat"
    lines = [f"kcat value {i}" for i in range(N)]
    kcat(server, pki, "-P", "-t", topic, input="".join(f"{line}\n" for line in lines))
    out = kcat(server, pki, "-G", "g-kcat", "-X", "auto.offset.reset=earliest",
               "-e", "-c", str(N), "-J", topic)
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [r["payload"] for r in records] == lines
