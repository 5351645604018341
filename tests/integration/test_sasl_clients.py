"""Real clients over SASL_PLAINTEXT and SASL_SSL: confluent-kafka (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512, and SCRAM credentials created at run time through
AlterUserScramCredentials), kafka-python, aiokafka and kcat; each produces and
consumes through a consumer group.

Every test runs against both listener kinds (one broker per kind for the
module).  On SASL_SSL the clients check the broker's certificate against the
test CA (tests/tls_support.py) and log in inside TLS."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import time
from dataclasses import dataclass

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (
    AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion,
    UserScramCredentialUpsertion)
from kafka import KafkaProducer

from tests.integration.client_support import kafka_python_member
from tests.integration.sasl_support import USERS, counter, sasl_config, sasl_port
from tests.support import LOOPBACK, running_server
from tests.tls_support import pki  # noqa: F401 (pki: fixture)

pytestmark = pytest.mark.interop
N = 5
TIMEOUT_S = 30


@dataclass
class SaslListener:
    server: object
    protocol: str            # SASL_PLAINTEXT or SASL_SSL
    ca: str | None = None    # the CA file the clients trust (SASL_SSL)

    @property
    def bootstrap(self) -> str:
        return f"{LOOPBACK}:{sasl_port(self.server, self.protocol)}"


@pytest.fixture(scope="module", params=["SASL_PLAINTEXT", "SASL_SSL"])
def listener(request, pki):
    tls = request.param == "SASL_SSL"
    with running_server(sasl_config(request.param, pki if tls else None)) as running:
        yield SaslListener(running, request.param, pki.ca if tls else None)


def values(tag: str) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(N)]


# -- confluent-kafka ----------------------------------------------------------------------


def confluent_settings(listener: SaslListener, mechanism: str, user: str,
                       password: str) -> dict:
    settings = {"bootstrap.servers": listener.bootstrap,
                "security.protocol": listener.protocol, "sasl.mechanism": mechanism,
                "sasl.username": user, "sasl.password": password}
    if listener.ca:
        settings["ssl.ca.location"] = listener.ca
    return settings


def confluent_round_trip(settings: dict, topic: str) -> list[bytes]:
    producer = Producer(settings)
    for value in values(topic):
        producer.produce(topic, value)
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer({**settings, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(got) < N and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_produces_and_consumes_through_a_group(listener, mechanism):
    before = counter(listener.server, "successful-authentication-total")
    topic = f"confluent-{listener.protocol}-{mechanism}".lower()
    got = confluent_round_trip(confluent_settings(listener, mechanism, *USERS[mechanism]),
                               topic)
    assert got == values(topic)
    # producer, consumer (bootstrap, coordinator...): every connection authenticated
    assert counter(listener.server, "successful-authentication-total") >= before + 2


def test_scram_credentials_made_at_run_time_log_in(listener):
    server = listener.server
    admin = AdminClient(confluent_settings(listener, "PLAIN", "admin", "admin-secret"))
    futures = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("carol", ScramCredentialInfo(
            ScramMechanism.SCRAM_SHA_256, 8192), b"carol-secret"),
        UserScramCredentialUpsertion("dave", ScramCredentialInfo(
            ScramMechanism.SCRAM_SHA_512, 4096), b"dave-secret")])
    for future in futures.values():
        assert future.result(TIMEOUT_S) is None
    described = {user: future.result(TIMEOUT_S) for user, future in
                 admin.describe_user_scram_credentials(["carol", "dave"]).items()}
    carol = described["carol"].scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in carol] == [(ScramMechanism.SCRAM_SHA_256, 8192)]

    got = confluent_round_trip(
        confluent_settings(listener, "SCRAM-SHA-256", "carol", "carol-secret"), "carol-topic")
    assert got == values("carol-topic")
    got = confluent_round_trip(
        confluent_settings(listener, "SCRAM-SHA-512", "dave", "dave-secret"), "dave-topic")
    assert got == values("dave-topic")

    deleted = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("dave", ScramMechanism.SCRAM_SHA_512)])
    assert deleted["dave"].result(TIMEOUT_S) is None
    failed = counter(server, "failed-authentication-total")
    producer = Producer({**confluent_settings(listener, "SCRAM-SHA-512", "dave", "dave-secret"),
                         "message.timeout.ms": 2000})
    outcome = []
    producer.produce("dave-topic", b"refused", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(10)
    assert len(outcome) == 1 and outcome[0] is not None   # never delivered: dave is gone
    assert counter(server, "failed-authentication-total") > failed


def python_client_settings(listener: SaslListener, mechanism: str) -> dict:
    """kafka-python and aiokafka spell the SASL settings alike; for TLS,
    kafka-python takes a CA file and aiokafka an SSLContext."""
    user, password = USERS[mechanism]
    return dict(bootstrap_servers=listener.bootstrap, security_protocol=listener.protocol,
                sasl_mechanism=mechanism, sasl_plain_username=user,
                sasl_plain_password=password)


# -- kafka-python -------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_produces_and_consumes_through_a_group(listener, mechanism):
    settings = python_client_settings(listener, mechanism)
    if listener.ca:
        settings["ssl_cafile"] = listener.ca
    topic = f"kafka-python-{listener.protocol}-{mechanism}".lower()
    producer = KafkaProducer(**settings)
    for value in values(topic):
        producer.send(topic, value)
    producer.flush(TIMEOUT_S)
    producer.close()
    consumer = kafka_python_member(topic, group_id=f"g-{topic}", auto_offset_reset="earliest",
                                   consumer_timeout_ms=TIMEOUT_S * 1000, **settings)
    got = []
    for message in consumer:
        got.append(message.value)
        if len(got) == N:
            break
    consumer.close()
    assert got == values(topic)


# -- aiokafka -----------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_aiokafka_produces_and_consumes_through_a_group(listener, mechanism):
    settings = python_client_settings(listener, mechanism)
    if listener.ca:
        settings["ssl_context"] = ssl.create_default_context(cafile=listener.ca)
    topic = f"aiokafka-{listener.protocol}-{mechanism}".lower()

    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(**settings)
        await producer.start()
        try:
            for value in values(topic):
                await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=f"g-{topic}",
                                    auto_offset_reset="earliest", **settings)
        await consumer.start()
        got = []
        try:
            while len(got) < N:
                batch = await consumer.getmany(timeout_ms=500)
                got.extend(m.value for messages in batch.values() for m in messages)
        finally:
            await consumer.stop()
        return got

    got = asyncio.run(asyncio.wait_for(scenario(), TIMEOUT_S))
    assert got == values(topic)


# -- kcat ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kcat_produces_and_consumes_through_a_group(listener, mechanism):
    assert shutil.which("kcat"), "kcat is not installed: run `make kcat`"
    user, password = USERS[mechanism]
    sasl = ["-X", f"security.protocol={listener.protocol}",
            "-X", f"sasl.mechanisms={mechanism}",
            "-X", f"sasl.username={user}", "-X", f"sasl.password={password}"]
    if listener.ca:
        sasl += ["-X", f"ssl.ca.location={listener.ca}"]
    topic = f"kcat-{listener.protocol}-{mechanism}".lower()

    def kcat(*args: str, input: str | None = None) -> str:
        result = subprocess.run(["kcat", "-b", listener.bootstrap, *sasl, *args], input=input,
                                capture_output=True, text=True, timeout=TIMEOUT_S)
        assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
        return result.stdout

    kcat("-P", "-t", topic, input="".join(f"{v.decode()}\n" for v in values(topic)))
    out = kcat("-G", f"g-{topic}", "-X", "auto.offset.reset=earliest", "-c", str(N),
               "-f", "%s\n", "-e", topic)
    assert out.split() == [v.decode() for v in values(topic)]
