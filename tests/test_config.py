"""kafka_net.config: Kafka's keys and defaults, bad and ignored keys, broker.id,
files and overrides, and the README's key table.  The .properties reader has
test_config_properties.py, the listeners test_config_listeners.py.

The rule under test everywhere: a bad configuration is a :class:`ConfigError`
whose message names the key, never a silent default and never another
exception.  (What the command line does with that error is in
tests/integration/test_cli.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_net.config import (
    DEFAULT_PROTOCOL_MAP, IGNORED_KAFKA_KEYS, KEYS, ConfigError, EndPoint, ServerConfig,
    default_of, load_config, parse_properties)
from kafka_net.config.broker_keys import BY_NAME, LONG_KEYS
from kafka_net.config.group_keys import GROUP_CONFIGS
from tests.support import config, config_error

REPO = Path(__file__).resolve().parents[1]


# --- defaults ------------------------------------------------------------------------


KAFKA_DEFAULTS = {
    "num_network_threads": 3,
    "num_io_threads": 8,
    "queued_max_requests": 500,
    "socket_request_max_bytes": 104857600,
    "socket_send_buffer_bytes": 102400,
    "socket_receive_buffer_bytes": 102400,
    "socket_listen_backlog_size": 50,
    "connections_max_idle_ms": 600000,
    "auto_create_topics_enable": True,
    "num_partitions": 1,
    "default_replication_factor": 1,
}


@pytest.mark.parametrize("cfg", [ServerConfig(), ServerConfig.from_properties({})],
                         ids=["dataclass", "from_properties"])
def test_defaults_are_kafkas(cfg):
    for attr, value in KAFKA_DEFAULTS.items():
        assert getattr(cfg, attr) == value, attr
    # Kafka's default is PLAINTEXT://:9092 (every interface); kafka-net binds only
    # loopback unless told otherwise.
    assert cfg.listeners == (EndPoint("PLAINTEXT", "127.0.0.1", 9092),)
    assert str(cfg.listeners[0]) == "PLAINTEXT://127.0.0.1:9092"
    assert cfg.advertised_listeners == ()
    assert cfg.node_id == 1
    assert cfg.shutdown_timeout_ms == 30000
    assert cfg.ignored == ()


@pytest.mark.parametrize("key", KEYS, ids=lambda k: k.name)
def test_each_documented_default_is_the_dataclass_default(key):
    # KEYS feeds --help and the README table; ServerConfig's field defaults are
    # what a test or library user gets.  They must say the same thing.
    assert config(**{key.name.replace(".", "_"): key.default}) == ServerConfig()


def test_every_key_is_a_field_and_every_other_field_is_derived():
    # ServerConfig's defaults come from KEYS by attribute name (default_of), so a
    # key without a field, or a field nobody can set from a file, is a mistake.
    fields = set(ServerConfig.__dataclass_fields__)
    keyed = {k.attr for k in KEYS}
    assert keyed <= fields
    assert fields - keyed == {"listener_max_connections",
                              "listener_max_connection_creation_rate", "listener_ssl",
                              "listener_sasl_jaas_configs", "ignored"}


# --- unknown keys, bad values, ignored keys -----------------------------------------


@pytest.mark.parametrize("typo, suggestion", [
    ("num.network.thread", "num.network.threads"),
    ("num.io.thread", "num.io.threads"),
    ("socket.request.max.byte", "socket.request.max.bytes"),
    ("listener", "listeners"),
    ("broker.idd", "broker.id"),
])
def test_unknown_key_names_the_key_and_suggests(typo, suggestion):
    message = config_error({typo: "1"})
    assert f"'{typo}'" in message
    assert f"did you mean '{suggestion}'?" in message


def test_unknown_key_far_from_any_known_key_has_no_suggestion():
    message = config_error({"completely.different": "1"})
    assert "'completely.different'" in message
    assert "did you mean" not in message


@pytest.mark.parametrize("key, value, fragment", [
    ("num.io.threads", "0", "below the minimum 1"),
    ("num.network.threads", "0", "below the minimum 1"),
    ("num.network.threads", "-3", "below the minimum 1"),
    ("queued.max.requests", "0", "below the minimum 1"),
    ("socket.request.max.bytes", "0", "below the minimum 1"),
    ("socket.send.buffer.bytes", "-2", "below the minimum -1"),
    ("socket.listen.backlog.size", "0", "below the minimum 1"),
    ("node.id", "-1", "below the minimum 0"),
    ("shutdown.timeout.ms", "-1", "below the minimum 0"),
    ("default.replication.factor", "3", "above the maximum 1"),
    ("socket.request.max.bytes", "2147483648", "above the maximum 2147483647"),
    ("num.io.threads", "eight", "is not an integer"),
    ("num.io.threads", "", "is not an integer"),
    ("num.io.threads", "8.0", "is not an integer"),
    ("num.io.threads", "1_000", "is not an integer"),
    ("num.io.threads", "٣", "is not an integer"),       # Arabic-Indic three
    ("auto.create.topics.enable", "yes", "is not true or false"),
    ("auto.create.topics.enable", "1", "is not true or false"),
])
def test_bad_values_name_the_key(key, value, fragment):
    message = config_error({key: value})
    assert message.startswith(f"{key}: ")
    assert fragment in message


def test_values_are_trimmed_and_bools_are_case_insensitive():
    cfg = config(num_io_threads=" 4 ", auto_create_topics_enable="FALSE")
    assert cfg.num_io_threads == 4
    assert cfg.auto_create_topics_enable is False
    assert config(num_io_threads="+4").num_io_threads == 4


def test_minus_one_keeps_the_os_socket_buffer_default():
    cfg = config(socket_send_buffer_bytes="-1", socket_receive_buffer_bytes="-1")
    assert (cfg.socket_send_buffer_bytes, cfg.socket_receive_buffer_bytes) == (-1, -1)


def test_negative_idle_timeout_disables_expiry_and_may_exceed_an_int():
    assert config(connections_max_idle_ms="-1").connections_max_idle_ms == -1
    assert config(connections_max_idle_ms="9999999999").connections_max_idle_ms == 9999999999


def test_real_kafka_keys_are_accepted_and_listed_as_ignored():
    cfg = ServerConfig.from_properties({
        "num.replica.fetchers": "2", "zookeeper.connect": "localhost:2181",
        "listener.name.plaintext.some.setting": "x", "num.io.threads": "2"})
    assert cfg.ignored == ("listener.name.plaintext.some.setting", "num.replica.fetchers",
                           "zookeeper.connect")
    assert cfg.num_io_threads == 2


def test_ignored_keys_are_not_also_served_keys():
    assert not IGNORED_KAFKA_KEYS & {k.name for k in KEYS}


# --- broker.id, files and overrides ----------------------------------------------------


def test_broker_id_is_an_alias_of_node_id():
    assert config(broker_id="7").node_id == 7
    assert ServerConfig.from_properties({"broker.id": "7", "node.id": "7"}).node_id == 7


def test_broker_id_and_node_id_must_agree():
    message = config_error({"broker.id": "1", "node.id": "2"})
    assert "broker.id and node.id name the same setting but disagree" in message


def test_a_bad_broker_id_is_reported_under_that_name():
    assert config_error({"broker.id": "x"}) == "broker.id: 'x' is not an integer"


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "server.properties"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_load_config_reads_a_file(tmp_path):
    path = write(tmp_path, "# test\nnum.io.threads = 2\nlisteners: PLAINTEXT://127.0.0.1:0\n")
    cfg = load_config(path)
    assert cfg.num_io_threads == 2
    assert cfg.listeners == (EndPoint("PLAINTEXT", "127.0.0.1", 0),)


def test_overrides_win_over_the_file_and_apply_in_order(tmp_path):
    path = write(tmp_path, "num.io.threads=2\nnum.network.threads=2\n")
    cfg = load_config(path, ["num.io.threads=5", "num.io.threads=6"])
    assert (cfg.num_io_threads, cfg.num_network_threads) == (6, 2)


def test_an_override_wins_whichever_spelling_of_node_id_each_side_uses(tmp_path):
    path = write(tmp_path, "node.id=1\nbroker.id=1\n")
    assert load_config(path, ["broker.id=5"]).node_id == 5
    assert load_config(path, ["node.id=6"]).node_id == 6


def test_an_override_value_may_contain_equals_signs():
    cfg = load_config(None, ["cluster.id=a=b"])
    assert cfg.cluster_id == "a=b"


@pytest.mark.parametrize("item", ["num.io.threads", "=5", " =5"])
def test_an_override_needs_key_equals_value(item):
    with pytest.raises(ConfigError, match="is not of the form key=value"):
        load_config(None, [item])


def test_an_override_is_checked_like_the_file():
    with pytest.raises(ConfigError, match="unknown configuration key 'num.io.thread'"):
        load_config(None, ["num.io.thread=5"])


def test_a_missing_file_is_a_config_error_naming_it(tmp_path):
    missing = tmp_path / "nope.properties"
    with pytest.raises(ConfigError) as info:
        load_config(str(missing))
    assert str(missing) in str(info.value)
    assert "No such file or directory" in str(info.value)


def test_a_file_that_is_not_utf8_is_a_config_error(tmp_path):
    path = tmp_path / "latin1.properties"
    path.write_bytes(b"cluster.id=caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(str(path))


# Kafka's own KRaft single-node server.properties, trimmed of comments: it must
# work unchanged (the controller listener is not opened; log.dirs is where the logs go).
STOCK_KRAFT_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,\\
    SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""


def test_kafkas_stock_kraft_server_properties_works_as_is(tmp_path):
    cfg = load_config(write(tmp_path, STOCK_KRAFT_PROPERTIES))
    assert cfg.listeners == (EndPoint("PLAINTEXT", "", 9092),)
    assert cfg.advertised_listeners == (EndPoint("PLAINTEXT", "localhost", 9092),)
    assert cfg.controller_listener_names == ("CONTROLLER",)
    assert "process.roles" in cfg.ignored
    assert cfg.log_dirs == ("/tmp/kraft-combined-logs",)   # the stock file's, now used
    assert cfg == ServerConfig.from_properties(parse_properties(STOCK_KRAFT_PROPERTIES))


# --- docs/operations.md documents the same keys -------------------------------------


def test_readme_key_table_matches_the_code():
    """docs/operations.md's configuration table is pasted from KEYS; keep it honest."""
    readme = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z.]+)` \| ([^|]*) \|", readme, flags=re.MULTILINE)
    documented = {key: default.strip().strip("`") for key, default in rows}
    expected = {k.name: (k.default or "(empty)") for k in KEYS}
    assert documented == expected
    assert DEFAULT_PROTOCOL_MAP in readme


# --- Kafka's own keys are tolerated, as Kafka tolerates keys it does not know ---------

TESTCONTAINERS_SETTINGS = {
    # What Testcontainers' KafkaContainer sets (KRaft mode), as properties.
    "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "controller.listener.names": "CONTROLLER",
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": "1@localhost:9094",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.replication.factor": "1",
    "log.flush.interval.messages": str(2**63 - 1),
    "group.initial.rebalance.delay.ms": "0",
}


def test_testcontainers_settings_start_a_broker():
    cfg = ServerConfig.from_properties(TESTCONTAINERS_SETTINGS)
    assert cfg.group_initial_rebalance_delay_ms == 0
    # Used now: Testcontainers' one-partition __consumer_offsets.
    assert cfg.offsets_topic_num_partitions == 1 and cfg.offsets_topic_replication_factor == 1
    assert "offsets.topic.num.partitions" not in cfg.ignored
    assert cfg.log_flush_interval_messages == 2**63 - 1   # Kafka's default, now a key


@pytest.mark.parametrize("key", [
    "sasl.kerberos.service.name", "transaction.state.log.min.isr",
    "group.coordinator.rebalance.protocols", "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol", "metric.reporters", "num.replica.fetchers",
    "auto.leader.rebalance.enable", "log.cleaner.io.buffer.size", "offsets.commit.timeout.ms",
    "replica.fetch.max.bytes"])
def test_keys_kafka_knows_are_accepted_and_reported(key):
    cfg = config(**{key: "x"})
    assert key in cfg.ignored


def test_a_typo_of_a_kafka_key_is_still_an_error_with_a_hint():
    message = config_error({"offsets.topic.num.partition": "1"})
    assert "did you mean 'offsets.topic.num.partitions'" in message


def test_the_kafka_key_list_is_plausible():
    from kafka_net.config.kafka_broker_names import KAFKA_BROKER_KEYS

    assert len(KAFKA_BROKER_KEYS) > 300
    # super.users and allow.everyone.if.no.acl.found are StandardAuthorizer's own
    # keys (read by its configure(), from the same server.properties), not CONFIG_DEF's.
    assert {k.name for k in KEYS} - KAFKA_BROKER_KEYS == {
        "super.users", "allow.everyone.if.no.acl.found", "as.version", "capture.dir",
        "capture.max.frame.bytes", "capture.segment.bytes", "cluster.id",
        "connection.authentication.timeout.ms", "log.store", "max.broker.partitions",
        "max.partitions.per.request", "socket.request.read.timeout.ms",
        "socket.request.read.min.bytes.per.second",
        "message.max.uncompressed.bytes", "metadata.log.truncate.on.corruption",
        "metrics.listener", "scram.credentials",
        "shutdown.timeout.ms", "faults.control.allowed.hosts",
        # Kafka 4.1's (ShareGroupConfig), after the snapshot of KAFKA_BROKER_KEYS.
        "group.share.max.share.sessions"}


# --- connection quotas: the inter-broker listener and the per-listener forms ----------


TWO_LISTENERS = {"listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
                 "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"}


def test_inter_broker_listener_defaults_to_plaintext_and_is_normalised():
    assert ServerConfig().inter_broker_listener() == "PLAINTEXT"
    cfg = ServerConfig.from_properties({**TWO_LISTENERS, "inter.broker.listener.name": "internal"})
    assert cfg.inter_broker_listener() == "INTERNAL"
    assert "inter.broker.listener.name" not in cfg.ignored


def test_inter_broker_listener_must_be_a_listener():
    message = config_error({**TWO_LISTENERS, "inter.broker.listener.name": "REPLICATION"})
    assert message.startswith("inter.broker.listener.name: must be a listener name defined "
                              "in advertised.listeners")
    assert "EXTERNAL,INTERNAL" in message


def test_listener_connection_limits_fall_back_to_the_broker_keys():
    cfg = ServerConfig.from_properties({
        **TWO_LISTENERS, "max.connections": "100", "max.connection.creation.rate": "30",
        "listener.name.internal.max.connections": "7",
        "listener.name.external.max.connection.creation.rate": "5",
        "listener.name.internal.ssl.engine.factory.class": "x"})
    assert cfg.listener_connection_limits("INTERNAL") == (7, 30)
    assert cfg.listener_connection_limits("EXTERNAL") == (100, 5)
    assert cfg.ignored == ("listener.name.internal.ssl.engine.factory.class",)


@pytest.mark.parametrize("key, value, fragment", [
    ("listener.name.internal.max.connections", "-1", "below the minimum 0"),
    ("listener.name.internal.max.connection.creation.rate", "x", "is not an integer"),
    ("listener.name.INTERNAL.max.connections", "5",
     "listener name in lower case: listener.name.internal.max.connections"),
    ("listener.name.other.max.connections", "5", "names a listener not in listeners"),
])
def test_bad_listener_connection_limits(key, value, fragment):
    message = config_error({**TWO_LISTENERS, key: value})
    assert message.split(":")[0] in (key, "listener.name.other")
    assert fragment in message


def test_a_controller_listeners_connection_limit_is_ignored():
    cfg = ServerConfig.from_properties({
        "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "listener.name.controller.max.connections": "5"})
    assert cfg.listener_max_connections == ()
    assert cfg.ignored == ("listener.name.controller.max.connections",)


@pytest.mark.parametrize("value, expected", [
    ("", ""), ("http://127.0.0.1:0", "http://127.0.0.1:0"),
    (" http://[::1]:9404/ ", "http://[::1]:9404/")])
def test_metrics_listener_is_off_or_an_http_address(value, expected):
    assert ServerConfig.from_properties({"metrics.listener": value}).metrics_listener == expected


@pytest.mark.parametrize("value", ["127.0.0.1:9404", "https://h:1", "http://h", "http://h:70000"])
def test_metrics_listener_that_is_not_http_host_port_is_an_error(value):
    assert config_error({"metrics.listener": value}) == (
        f"metrics.listener: '{value}' is not http://HOST:PORT")


# -- delegation tokens (KIP-48) ------------------------------------------------------------


def test_delegation_token_keys_have_kafkas_defaults_and_the_secret_is_hidden():
    cfg = ServerConfig.from_properties({"delegation.token.secret.key": "hush"})
    assert (cfg.delegation_token_max_lifetime_ms, cfg.delegation_token_expiry_time_ms,
            cfg.delegation_token_expiry_check_interval_ms) == (604800000, 86400000, 3600000)
    assert cfg.delegation_token_secret_key == "hush" and "hush" not in repr(cfg)
    assert ServerConfig.from_properties({}).delegation_token_secret_key == ""


def test_delegation_token_master_key_is_the_secret_keys_deprecated_synonym():
    cfg = ServerConfig.from_properties({"delegation.token.master.key": "old-name"})
    assert cfg.delegation_token_secret_key == "old-name"
    message = config_error({"delegation.token.master.key": "a",
                            "delegation.token.secret.key": "b"})
    assert "delegation.token.master.key" in message and "disagree" in message


def test_delegation_token_lifetimes_must_be_positive():
    assert "below the minimum 1" in config_error({"delegation.token.expiry.time.ms": "0"})



def test_keys_typed_long_are_integer_broker_keys():
    defaults = ServerConfig()
    assert [k for k in LONG_KEYS
            if k not in BY_NAME or type(getattr(defaults, BY_NAME[k].attr)) is not int] == []

# -- group configs (KIP-848's GROUP resource) ----------------------------------------------

_SYNONYMS = [d for d in GROUP_CONFIGS.values() if d.broker_default is not None]


@pytest.mark.parametrize("definition", _SYNONYMS, ids=lambda d: d.name)
def test_a_group_configs_broker_synonym_is_a_broker_key_with_the_same_default(definition):
    key = BY_NAME[definition.broker_default]
    assert default_of(key.attr) == definition.default


def test_a_group_without_overrides_follows_the_broker_keys():
    from kafka_net.server.group_config_repository import GroupConfigRepository
    repository = GroupConfigRepository(ServerConfig.from_properties({
        "group.streams.num.standby.replicas": "1",
        "group.share.record.lock.duration.ms": "20000"}))
    assert repository.value("g", "streams.num.standby.replicas") == 1
    assert repository.value("g", "share.record.lock.duration.ms") == 20000
    assert repository.value("g", "share.isolation.level") == "read_uncommitted"
