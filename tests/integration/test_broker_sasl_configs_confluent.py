"""Per-broker SASL / Kerberos login-refresh configs, altered with confluent-kafka's
incremental_alter_configs as librdkafka's test 0081 does, on a broker with a
durable ``log.dirs``: Kafka accepts them as per-broker dynamic configs (not at
the cluster-default level), DescribeConfigs shows them as DYNAMIC_BROKER_CONFIG,
and they are kept across a restart (ConfigRecords in the metadata log).
Rules kept: loopback only, every wait bounded, no assertion on time.
"""

from __future__ import annotations

import contextlib

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource)

from kafka_net.server.kafka_server import KafkaServer
from tests.integration.client_support import bootstrap
from tests.support import make_config

pytestmark = pytest.mark.interop
TIMEOUT_S = 20

# librdkafka 0081's key and the other login / ticket refresh keys Kafka
# reconfigures per broker, with values inside Kafka's ranges.
SASL_KEYS = {
    "sasl.kerberos.min.time.before.relogin": "58000",
    "sasl.kerberos.kinit.cmd": "/usr/bin/kinit",
    "sasl.kerberos.ticket.renew.window.factor": "0.7",
    "sasl.kerberos.ticket.renew.jitter": "0.06",
    "sasl.kerberos.principal.to.local.rules": "DEFAULT",
    "sasl.kerberos.service.name": "kafka",
    "sasl.login.refresh.window.factor": "0.9",
    "sasl.login.refresh.window.jitter": "0.1",
    "sasl.login.refresh.min.period.seconds": "30",
    "sasl.login.refresh.buffer.seconds": "120",
}


@contextlib.contextmanager
def durable_server(log_dir: str):
    server = KafkaServer(make_config(log_store="disk", log_dirs=(log_dir,)))
    server.startup()
    try:
        yield server
    finally:
        server.shutdown()


def alter(admin, name: str, configs: dict[str, str]):
    resource = ConfigResource("broker", name, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
        for k, v in configs.items()])
    [future] = admin.incremental_alter_configs([resource]).values()
    return future


def dynamic_values(admin) -> dict[str, str]:
    [future] = admin.describe_configs([ConfigResource("broker", "1")]).values()
    return {name: entry.value for name, entry in future.result(TIMEOUT_S).items()
            if entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value}


def test_sasl_login_refresh_keys_are_per_broker_dynamic_and_kept(tmp_path):
    log_dir = str(tmp_path / "logs")
    with durable_server(log_dir) as server:
        admin = AdminClient({"bootstrap.servers": bootstrap(server)})
        alter(admin, "1", SASL_KEYS).result(TIMEOUT_S)
        assert {k: v for k, v in dynamic_values(admin).items() if k in SASL_KEYS} == SASL_KEYS
        # Kafka's ConfigDef ranges still hold.
        with pytest.raises(KafkaException) as refused:
            alter(admin, "1", {"sasl.login.refresh.buffer.seconds": "7200"}).result(TIMEOUT_S)
        assert refused.value.args[0].code() == KafkaError.INVALID_REQUEST
        assert "sasl.login.refresh.buffer.seconds" in refused.value.args[0].str()
    with durable_server(log_dir) as server:
        admin = AdminClient({"bootstrap.servers": bootstrap(server)})
        assert {k: v for k, v in dynamic_values(admin).items() if k in SASL_KEYS} == SASL_KEYS
