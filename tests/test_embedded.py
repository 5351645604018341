"""kafka_net.Broker, the --dev profile and the kafka_broker pytest fixture."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import kafka_net
from kafka_net.config import DEV_PROFILE, ConfigError, EndPoint, ServerConfig, load_config
from kafka_net.embedded import SMALL_CAPTURE_SEGMENT_BYTES
from tests.support import wait_until

pytest_plugins = ["pytester"]


def test_a_broker_in_one_line_serves_a_real_client():
    from kafka import KafkaConsumer, KafkaProducer

    with kafka_net.Broker() as broker:
        broker.create_topic("orders", partitions=3)
        assert "orders" in broker.topics()
        assert broker.bootstrap_servers == f"127.0.0.1:{broker.port}"
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        for i in range(6):
            producer.send("orders", f"o{i}".encode(), partition=i % 3).get(timeout=30)
        producer.close()
        consumer = KafkaConsumer("orders", bootstrap_servers=broker.bootstrap_servers,
                                 group_id="g", auto_offset_reset="earliest",
                                 consumer_timeout_ms=10_000)
        # The topic's partitions before the first join: kafka-python 3.0.12 can lose
        # the assignment of a join it makes without them (tests/integration/
        # client_support.kafka_python_member), and the embedded broker's dev profile
        # has no initial rebalance delay to hide that.
        assert consumer.partitions_for_topic("orders") == {0, 1, 2}
        values = sorted(r.value for r in consumer)
        consumer.close()
    assert values == [f"o{i}".encode() for i in range(6)]


def test_the_broker_runs_the_dev_profile_under_given_settings():
    broker = kafka_net.Broker({"num.io.threads": 3})
    assert broker.config.group_initial_rebalance_delay_ms == 0
    assert broker.config.num_io_threads == 3
    assert broker.config.listeners == (EndPoint("PLAINTEXT", "127.0.0.1", 0),)


def test_bad_settings_fail_when_the_broker_is_made_not_when_it_starts():
    with pytest.raises(ConfigError, match="num.io.threads"):
        kafka_net.Broker({"num.io.threads": 0})
    with pytest.raises(ConfigError, match="did you mean"):
        kafka_net.Broker({"num.io.thread": 2})


def test_topic_helpers_refuse_what_kafka_refuses():
    with kafka_net.Broker() as broker:
        with pytest.raises(ValueError):
            broker.create_topic("bad name")
        with pytest.raises(ValueError):
            broker.create_topic("ok", partitions=0)
        broker.create_topic("gone")
        assert broker.delete_topic("gone") and "gone" not in broker.topics()


def test_a_broker_that_was_not_started_says_so():
    with pytest.raises(RuntimeError, match="not started"):
        kafka_net.Broker().bootstrap_servers


def test_captures_go_to_a_temporary_folder_that_is_removed_after(tmp_path):
    import os

    from kafka import KafkaAdminClient

    with kafka_net.Broker(captures=True) as broker:
        folder = broker.capture_dir
        KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers).close()
        assert os.listdir(folder)
        # small files: a test broker does not reserve a daemon's 64 MiB per file
        sizes = [os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder)]
        assert sizes and max(sizes) < 2 * SMALL_CAPTURE_SEGMENT_BYTES   # a file header over
    assert not os.path.exists(folder)


def test_server_config_takes_listeners_as_text():
    cfg = ServerConfig(listeners="PLAINTEXT://127.0.0.1:0")
    assert cfg.listeners == (EndPoint("PLAINTEXT", "127.0.0.1", 0),)


def test_the_dev_profile_lies_under_the_file_and_the_overrides(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("num.io.threads=5\n")
    cfg = load_config(str(path), ["num.network.threads=2"], base=DEV_PROFILE)
    assert cfg.num_io_threads == 5 and cfg.num_network_threads == 2
    assert cfg.group_initial_rebalance_delay_ms == 0
    assert load_config(None).group_initial_rebalance_delay_ms == 3000


def test_serve_dev_is_in_the_help():
    out = subprocess.run([sys.executable, "-m", "kafka_net", "serve", "--help"],
                         capture_output=True, text=True, timeout=60).stdout
    assert "--dev" in out and "group.initial.rebalance.delay.ms=0" in out


def test_the_pytest_fixture_is_installed_and_serves_a_client(pytester):
    pytester.makeconftest(textwrap.dedent("""
        import pytest

        @pytest.fixture(scope="session")
        def kafka_broker_config():
            return {"num.partitions": 2}
    """))
    pytester.makepyfile(textwrap.dedent("""
        from kafka import KafkaProducer

        def test_session_broker(kafka_broker):
            kafka_broker.create_topic("t1")
            p = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
            meta = p.send("t1", b"v").get(timeout=30)
            p.close()
            assert meta.offset == 0
            assert kafka_broker.server.config.num_partitions == 2

        def test_same_session_broker(kafka_broker):
            assert "t1" in kafka_broker.topics()

        def test_own_broker(kafka_broker_function, kafka_broker):
            assert kafka_broker_function.port != kafka_broker.port
            assert kafka_broker_function.topics() == []

        def test_no_captures_unless_asked(kafka_broker):
            assert kafka_broker.capture_dir is None
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_the_pytest_fixture_captures_when_asked(pytester):
    pytester.makeconftest(textwrap.dedent("""
        import pytest

        @pytest.fixture(scope="session")
        def kafka_broker_captures():
            return True
    """))
    pytester.makepyfile(textwrap.dedent("""
        import os
        from kafka import KafkaAdminClient

        def test_captured(kafka_broker_function):
            KafkaAdminClient(bootstrap_servers=kafka_broker_function.bootstrap_servers).close()
            folder = kafka_broker_function.capture_dir
            assert folder and os.listdir(folder)
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_metrics_url_names_the_metrics_listener():
    import urllib.request

    with kafka_net.Broker({"metrics.listener": "http://127.0.0.1:0"}) as broker:
        with urllib.request.urlopen(broker.metrics_url + "/health", timeout=10) as answer:
            assert answer.status == 200
    with kafka_net.Broker() as broker:
        assert broker.metrics_url is None


def test_create_topic_with_configs_and_periodic_retention():
    from kafka import KafkaProducer

    config = {"log.retention.check.interval.ms": 50, "log.initial.task.delay.ms": 0}
    with kafka_net.Broker(config) as broker:
        broker.create_topic("short-lived", configs={"retention.ms": 300,
                                                    "cleanup.policy": "delete"})
        repo = broker.server.apis.config_repository
        assert repo.topic_overrides("short-lived") == {"retention.ms": 300,
                                                       "cleanup.policy": ["delete"]}
        with pytest.raises(ValueError, match="Invalid value nonsense for configuration "
                                             "cleanup.policy"):
            broker.create_topic("refused", configs={"cleanup.policy": "nonsense"})
        assert "refused" not in broker.topics()
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        producer.send("short-lived", b"soon gone").get(timeout=10)
        producer.close()
        partition = broker.server.replica_manager.partition("short-lived", 0)
        # Nobody writes again: only the kafka-log-retention task can delete the record.
        assert wait_until(lambda: partition.log.log_start_offset == 1, timeout=10)
