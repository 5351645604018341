"""KAFKA_* environment variables, mapped as the apache/kafka Docker image maps them.

The image's rules (docker/resources/common-scripts/kafka-propertiesSpec.json and
its ``ub`` tool): drop the prefix, a single ``_`` becomes ``.``, ``___`` becomes
``-``, ``__`` becomes ``_``, lower-case; the JVM and log4j variables are left out.
The order of sources is the file, then the environment, then ``--override``.
"""

from __future__ import annotations

import logging

import pytest

from kafka_net.config import ConfigError, load_config
from kafka_net.config.properties import env_key, env_properties

# The environment of the image's single-node plaintext example
# (docker/examples/docker-compose-files/single-node/plaintext/docker-compose.yml).
SINGLE_NODE_EXAMPLE = {
    "KAFKA_NODE_ID": "1",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT_HOST://localhost:9092,PLAINTEXT://broker:19092",
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@broker:29093",
    "KAFKA_LISTENERS": "CONTROLLER://:29093,PLAINTEXT_HOST://:9092,PLAINTEXT://:19092",
    "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    "CLUSTER_ID": "4L6g3nShT-eMCtK--X86sw",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_LOG_DIRS": "/tmp/kraft-combined-logs",
}


@pytest.mark.parametrize("variable, key", [
    ("KAFKA_NODE_ID", "node.id"),
    ("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map"),
    ("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "group.initial.rebalance.delay.ms"),
    # __ is an underscore, ___ a dash (the image's documented escapes)
    ("KAFKA_LISTENER_NAME_SASL__SSL_SCRAM___SHA___256_SASL_JAAS_CONFIG",
     "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"),
    ("KAFKA_MAX_CONNECTIONS_PER_IP_OVERRIDES", "max.connections.per.ip.overrides"),
])
def test_a_variable_names_the_key_the_image_would_write(variable, key):
    assert env_key(variable) == key


def test_jvm_and_log4j_variables_and_others_are_not_keys():
    env = {"KAFKA_HEAP_OPTS": "-Xmx1G", "KAFKA_OPTS": "-Dx=y", "KAFKA_LOG4J_OPTS": "x",
           "KAFKA_JMX_OPTS": "x", "KAFKA_VERSION": "4.1.0", "KAFKA_": "", "PATH": "/bin",
           "KAFKA_NET_SHARED": "/work/shared",   # kafka-net's own tools' variable
           "KAFKA_NUM_IO_THREADS": "5"}
    assert env_properties(env) == {"num.io.threads": "5"}


def test_the_image_example_environment_configures_the_broker():
    config = load_config(None, environ=SINGLE_NODE_EXAMPLE)
    assert config.node_id == 1
    assert config.cluster_id == "4L6g3nShT-eMCtK--X86sw"   # from CLUSTER_ID
    assert config.group_initial_rebalance_delay_ms == 0
    assert [(e.listener_name, e.port) for e in config.listeners] == [
        ("PLAINTEXT_HOST", 9092), ("PLAINTEXT", 19092)]     # the controller's is not opened
    assert [(e.host, e.port) for e in config.advertised_listeners] == [
        ("localhost", 9092), ("broker", 19092)]


def test_the_environment_lies_over_the_file_and_under_the_overrides(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("num.io.threads=2\nnum.network.threads=2\nbroker.id=3\n")
    env = {"KAFKA_NUM_IO_THREADS": "5", "KAFKA_NUM_NETWORK_THREADS": "6", "KAFKA_NODE_ID": "4"}
    config = load_config(str(path), ["num.network.threads=7"], environ=env)
    assert config.num_io_threads == 5        # the environment over the file
    assert config.num_network_threads == 7   # the override over the environment
    assert config.node_id == 4               # node.id replaces the file's broker.id


def test_a_variable_for_an_unknown_key_is_logged_and_skipped(caplog):
    with caplog.at_level(logging.WARNING):
        config = load_config(None, environ={"KAFKA_HOME": "/opt/kafka", "KAFKA_NODE_ID": "2"})
    assert config.node_id == 2
    assert "Ignoring environment variable KAFKA_HOME: 'home' is not a configuration key" \
        in caplog.text


def test_a_bad_value_in_the_environment_is_a_configuration_error():
    with pytest.raises(ConfigError, match="num.io.threads"):
        load_config(None, environ={"KAFKA_NUM_IO_THREADS": "many"})
