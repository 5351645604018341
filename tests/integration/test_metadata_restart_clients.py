"""A KafkaServer restarted over the same metadata log, as real admin clients see it.

confluent-kafka's AdminClient creates, grows, deletes and configures topics
and adds a SCRAM user on one KafkaServer; the server is shut down and a new
one started over the same metadata log (on a new port): the durable one of
``log.store=disk`` under a tmp ``log.dirs``, and an in-memory store handed
to both servers.  A new client
finds the topics with the same ids and partition counts, the deleted one
gone, the configs back, and the SCRAM user logs in.  kafka-python's admin
client then reads the same topics.
"""

from __future__ import annotations

import contextlib

import pytest

from confluent_kafka import TopicCollection
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewPartitions,
    NewTopic, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion)
from kafka import KafkaAdminClient

from kafka_net.server.kafka_server import KafkaServer
from kafka_net.server.storage import InMemoryLog
from tests.integration.sasl_support import sasl_config
from tests.integration.test_sasl_clients import SaslListener, confluent_round_trip, values

pytestmark = pytest.mark.interop
TIMEOUT_S = 20


@contextlib.contextmanager
def broker_over(store: InMemoryLog | str):
    """A started KafkaServer (SASL_PLAINTEXT) whose metadata log is ``store``:
    an in-memory log, or the durable one under the log dir ``store``."""
    if isinstance(store, str):
        server = KafkaServer(sasl_config(**{"log.store": "disk", "log.dirs": store}))
    else:
        server = KafkaServer(sasl_config(), metadata_log_factory=lambda config: store)
    server.startup()
    try:
        yield SaslListener(server, "SASL_PLAINTEXT")
    finally:
        server.shutdown()


def admin_of(listener: SaslListener) -> AdminClient:
    return AdminClient({"bootstrap.servers": listener.bootstrap,
                        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                        "sasl.username": "admin", "sasl.password": "admin-secret"})


def done(futures: dict) -> None:
    for future in futures.values():
        assert future.result(TIMEOUT_S) is None


def topic_ids(admin: AdminClient, names: list[str]) -> dict[str, tuple[str, int]]:
    described = admin.describe_topics(TopicCollection(names))
    out = {}
    for name, future in described.items():
        d = future.result(TIMEOUT_S)
        out[name] = (str(d.topic_id), len(d.partitions))
    return out


@pytest.mark.parametrize("store", ["disk", "memory"])
def test_an_admin_client_finds_what_it_made_after_a_restart(store, tmp_path):
    store = str(tmp_path) if store == "disk" else InMemoryLog()
    with broker_over(store) as first:
        admin = admin_of(first)
        done(admin.create_topics([
            NewTopic("kept", 2, 1, config={"retention.ms": "60000"}),
            NewTopic("grown", 1, 1), NewTopic("gone", 1, 1)]))
        done(admin.create_partitions([NewPartitions("grown", 3)]))
        done(admin.delete_topics(["gone"]))
        done(admin.incremental_alter_configs([ConfigResource("topic", "kept", incremental_configs=[
            ConfigEntry("cleanup.policy", "compact",
                        incremental_operation=AlterConfigOpType.SET)])]))
        done(admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
            b"carol-secret")]))
        before = topic_ids(admin, ["kept", "grown"])
    assert [n for _, n in before.values()] == [2, 3]

    with broker_over(store) as second:
        admin = admin_of(second)
        assert topic_ids(admin, ["kept", "grown"]) == before
        listed = admin.list_topics(timeout=TIMEOUT_S).topics
        assert "gone" not in listed and {"kept", "grown"} <= set(listed)

        [future] = admin.describe_configs([ConfigResource("topic", "kept")]).values()
        configs = future.result(TIMEOUT_S)
        assert configs["retention.ms"].value == "60000"
        assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        assert configs["cleanup.policy"].value == "compact"

        [future] = admin.describe_user_scram_credentials(["carol"]).values()
        infos = future.result(TIMEOUT_S).scram_credential_infos
        assert [(i.mechanism, i.iterations) for i in infos] == [
            (ScramMechanism.SCRAM_SHA_256, 8192)]
        settings = {"bootstrap.servers": second.bootstrap,
                    "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                    "sasl.username": "carol", "sasl.password": "carol-secret"}
        assert confluent_round_trip(settings, "carol-topic") == values("carol-topic")

        python_admin = KafkaAdminClient(
            bootstrap_servers=second.bootstrap, security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="carol",
            sasl_plain_password="carol-secret", request_timeout_ms=TIMEOUT_S * 1000)
        try:
            described = {t["name"]: len(t["partitions"])
                         for t in python_admin.describe_topics(["kept", "grown"])}
        finally:
            python_admin.close()
        assert described == {"kept": 2, "grown": 3}
