"""as.version: the broker plays a Kafka release.  ApiVersions advertises, the
Processor accepts and the features are exactly the overlap of what kafka-net
serves and what that release's broker served (kafka_net/protocol/kafka_releases.py)."""

from __future__ import annotations

import pytest

from kafka_net.config import ConfigError, ServerConfig, load_config
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.errors import InvalidRequestError, UnsupportedVersionError
from kafka_net.protocol.kafka_releases import APIS, RELEASES
from kafka_net.server.apis import HANDLERS, served_versions
from kafka_net.server.features import DEFAULT_FINALIZED, SUPPORTED, FeatureControl
from tests.server.conftest import Broker
from tests.support import config_error

SOFTWARE = {"client_software_name": "x", "client_software_version": "1"}


@pytest.fixture
def playing():
    brokers = []

    def start(release: str | None) -> Broker:
        broker = Broker(ServerConfig(log_store="memory", as_version=release)).start()
        brokers.append(broker)
        return broker
    yield start
    for broker in brokers:
        broker.stop()


def advertised(broker, version: int = 4) -> dict:
    body = broker.call(ApiKey.API_VERSIONS, version, **SOFTWARE)
    assert body["error_code"] == ErrorCode.NONE
    return body


def ranges(body) -> dict[int, tuple[int, int]]:
    return {e["api_key"]: (e["min_version"], e["max_version"]) for e in body["api_keys"]}


# Listed only with a telemetry exporter (metrics.listener), which these brokers lack.
TELEMETRY = {ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY}


def overlap(release: str) -> dict[int, tuple[int, int]]:
    """Written out here, independently of served_versions: each handler's range
    cut to the release's, where they meet (less the telemetry APIs, unlisted
    without an exporter).  Before 4.0 a handler's legacy versions (LEGACY_LOW:
    the versions KIP-896 removed, such as Fetch v0-v3 and OffsetCommit v0-v1)
    count too."""
    legacy = RELEASES.index(release) < RELEASES.index("4.0")
    out = {}
    for key, module in HANDLERS.items():
        if key in APIS[release] and key not in TELEMETRY:
            own_low = module.VERSIONS.low
            if legacy and module.LEGACY_LOW is not None:
                own_low = module.LEGACY_LOW
            low = max(own_low, APIS[release][key][0])
            high = min(module.VERSIONS.high, APIS[release][key][1])
            if low <= high:
                out[int(key)] = (low, high)
    return out


def test_at_3_9_api_versions_advertises_exactly_the_overlap(playing):
    body = advertised(playing("3.9"))
    assert ranges(body) == overlap("3.9")
    got = ranges(body)
    assert got[ApiKey.FETCH] == (0, 17)            # legacy message sets: v0-v3 before 4.0
    assert got[ApiKey.PRODUCE] == (0, 11)          # 3.9's maximum
    assert got[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 0)
    assert ApiKey.CONSUMER_GROUP_DESCRIBE in got and ApiKey.DESCRIBE_TOPIC_PARTITIONS in got
    assert {f["name"]: (f["min_version"], f["max_version"])
            for f in body["supported_features"]} == {"kraft.version": (0, 1),
                                                     "metadata.version": (7, 21)}
    assert {f["name"]: f["max_version_level"] for f in body["finalized_features"]} == {
        "kraft.version": 1, "metadata.version": 21}


@pytest.mark.parametrize("release", RELEASES)
def test_every_release_advertises_its_overlap(playing, release):
    body = advertised(playing(release), 0)
    assert ranges(body) == overlap(release)


def test_at_2_8_the_newer_apis_are_not_advertised_nor_any_feature(playing):
    body = advertised(playing("2.8"), 3)
    got = ranges(body)
    for key in (ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE,
                ApiKey.DESCRIBE_TOPIC_PARTITIONS, ApiKey.DESCRIBE_TRANSACTIONS,
                ApiKey.LIST_TRANSACTIONS):
        assert key not in got
    assert got[ApiKey.API_VERSIONS] == (0, 3)
    assert got[ApiKey.METADATA] == (0, 11)
    assert body["supported_features"] == [] and body["finalized_features"] == []
    assert body["finalized_features_epoch"] == -1   # unknown, as a 2.8 broker says


def test_from_4_0_fetch_starts_at_v4(playing):
    """Kafka 4.0 removed Fetch v0-v3 (KIP-896), and so does kafka-net playing it."""
    assert ranges(advertised(playing("4.0")))[ApiKey.FETCH] == (4, 17)


# The client-facing versions KIP-896 removed: (API, first version Kafka 4.0 serves).
KIP_896_MINIMUMS = {ApiKey.OFFSET_COMMIT: 2, ApiKey.OFFSET_FETCH: 1,
                    ApiKey.OFFSET_FOR_LEADER_EPOCH: 2, ApiKey.DESCRIBE_ACLS: 1,
                    ApiKey.CREATE_ACLS: 1, ApiKey.DELETE_ACLS: 1,
                    ApiKey.DESCRIBE_CONFIGS: 1, ApiKey.DESCRIBE_LOG_DIRS: 1,
                    ApiKey.CREATE_TOPICS: 2, ApiKey.DELETE_TOPICS: 1,
                    ApiKey.ALTER_REPLICA_LOG_DIRS: 1}


@pytest.mark.parametrize("release", ["2.8", "3.9"])
def test_before_4_0_the_kip_896_versions_are_served_from_v0(playing, release):
    got = ranges(advertised(playing(release), 3))
    for key in KIP_896_MINIMUMS:
        assert got[key] == (0, APIS[release][key][1]), key


@pytest.mark.parametrize("release", [None, "4.0"])
def test_unset_and_from_4_0_the_kip_896_versions_are_not_served(playing, release):
    got = ranges(advertised(playing(release)))
    for key, low in KIP_896_MINIMUMS.items():
        assert got[key][0] == low, key


def test_unset_no_version_older_than_kafka_4_4_serves_is_served(playing):
    """Without as.version kafka-net plays Kafka 4.4: an API's oldest version is
    never one 4.4 refuses (Produce's advertised 0 is 4.4's own, KAFKA-18659)."""
    got = ranges(advertised(playing(None)))
    older = {key: (got[key], APIS["4.4"][key]) for key in got
             if key in APIS["4.4"] and got[key][0] < APIS["4.4"][key][0]}
    assert older == {}


def test_at_4_2_the_ranges_are_kafka_nets_where_it_serves_less(playing):
    got = ranges(advertised(playing("4.2")))
    assert got == overlap("4.2")
    for key, module in HANDLERS.items():
        if key in APIS["4.2"] and key not in TELEMETRY:
            assert got[key][1] == min(module.VERSIONS.high, APIS["4.2"][key][1])


@pytest.mark.parametrize("release", [None, "4.4", "4.3", "4.2"])
def test_api_versions_advertises_the_release_s_maxima(playing, release):
    """Unset and at 4.4, Kafka 4.4's broker maxima for every API both serve (key 93
    included); at 4.3 and 4.2 those releases' (DescribeLogDirs v5 from 4.3,
    TxnOffsetCommit v6 ... only from 4.4)."""
    got = ranges(advertised(playing(release)))
    kafka = APIS[release or "4.4"]
    assert {key: high for key, (_, high) in got.items()} == {
        key: high for key, (_, high) in kafka.items() if key in got}
    assert set(got) == set(kafka) & {int(k) for k in HANDLERS if k not in TELEMETRY}
    assert (ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE in got) == (release in (None, "4.4"))
    assert got[ApiKey.DESCRIBE_LOG_DIRS][1] == (4 if release == "4.2" else 5)
    assert got[ApiKey.TXN_OFFSET_COMMIT][1] == (6 if release in (None, "4.4") else 5)


def test_unset_serves_everything_the_handlers_serve(playing):
    got = ranges(advertised(playing(None)))
    assert got == {int(k): (m.VERSIONS.low, m.VERSIONS.high) for k, m in HANDLERS.items()
                   if k not in TELEMETRY}
    assert served_versions(HANDLERS, None) == {k: m.VERSIONS for k, m in HANDLERS.items()}


def test_a_version_the_release_did_not_serve_is_refused_by_the_parser(playing):
    broker = playing("2.8")
    # Metadata v12 (3.1), DescribeTopicPartitions (3.8): closed as Kafka closes them.
    with pytest.raises(UnsupportedVersionError, match="Metadata with version 12 which is not enabled"):
        broker.make_request(ApiKey.METADATA, 12, {"topics": []})
    with pytest.raises(InvalidRequestError, match="which is not enabled"):
        broker.make_request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0,
                            {"topics": [], "response_partition_limit": 10})
    assert broker.call(ApiKey.METADATA, 11, topics=[])["brokers"]


def test_the_consumer_group_protocol_is_off_before_4_0(playing):
    """3.7-3.9 brokers advertised ConsumerGroupHeartbeat but answered it with
    UNSUPPORTED_VERSION unless the new protocol was switched on; kafka-net has no
    group.version there, which its handler reads the same way."""
    body = playing("3.9").call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="g",
                               member_id="m", member_epoch=0, rebalance_timeout_ms=1000,
                               subscribed_topic_names=["t"], topic_partitions=[])
    assert body["error_code"] == ErrorCode.UNSUPPORTED_VERSION


def test_update_features_is_held_to_the_release(playing):
    broker = playing("3.9")

    def update(name, level):
        body = broker.call(ApiKey.UPDATE_FEATURES, 1, timeout_ms=1000, validate_only=True,
                           feature_updates=[{"feature": name, "max_version_level": level,
                                             "upgrade_type": 1}])
        return body["error_code"], body["error_message"]
    code, message = update("metadata.version", 22)
    assert code == ErrorCode.INVALID_UPDATE_VERSION and "only supports versions 7-21" in message
    code, message = update("group.version", 1)
    assert code == ErrorCode.INVALID_UPDATE_VERSION and "does not support this feature" in message


def test_release_features_cut_kafka_nets_to_the_release():
    assert FeatureControl().supported == SUPPORTED
    assert FeatureControl().defaults == DEFAULT_FINALIZED
    at_4_2 = FeatureControl(release="4.2")
    # 4.2 finalizes transaction.version 2 (transactions v2, which kafka-net runs too)
    # and metadata.version 29, where kafka-net runs at most 25; streams.version 1
    # (KIP-1071 streams groups), as kafka-net.
    assert at_4_2.finalized() == {"group.version": 1, "kraft.version": 1,
                                  "metadata.version": 25, "share.version": 1,
                                  "streams.version": 1, "transaction.version": 2}
    assert "streams.version" not in FeatureControl(release="4.1").supported
    # 4.4 finalizes share.version 2 (dead-letter queues, KIP-1191), as kafka-net.
    assert FeatureControl(release="4.4").finalized()["share.version"] == 2
    assert FeatureControl(release="4.3").finalized()["share.version"] == 1
    assert FeatureControl(release="3.3").finalized() == {"metadata.version": 7}
    assert FeatureControl(release="3.2").finalized() == {}
    assert FeatureControl(release="3.2").changed_levels() == {}


@pytest.mark.parametrize("raw, want", [("3.9", "3.9"), ("v2.8", "2.8"), ("3.9.1", "3.9"),
                                       (" 4.2 ", "4.2"), ("", None)])
def test_as_version_values(raw, want):
    assert ServerConfig.from_properties({"as.version": raw}).as_version == want


@pytest.mark.parametrize("raw", ["2.0", "2.9", "4.5", "latest", "3", "3.9.x"])
def test_as_version_outside_the_table_fails_startup(raw):
    message = config_error({"as.version": raw})
    assert "as.version" in message and "2.1 ... 4.4" in message


def test_as_version_from_the_environment_and_the_command_line():
    assert load_config(None, [], environ={"KAFKA_AS_VERSION": "3.9"}).as_version == "3.9"
    # The command line (--as-version is an override) wins over the environment.
    assert load_config(None, ["as.version=2.8"],
                       environ={"KAFKA_AS_VERSION": "3.9"}).as_version == "2.8"
    with pytest.raises(ConfigError, match="as.version"):
        load_config(None, [], environ={"KAFKA_AS_VERSION": "1.0"})


def test_levels_replayed_from_another_release_that_this_one_cannot_run_are_left_out(caplog):
    """A metadata log written at the default, replayed at 3.9: group.version and
    metadata.version 25 are not 3.9's; what 3.9 can run is applied."""
    features = FeatureControl(release="3.9")
    with caplog.at_level("WARNING", logger="kafka_net.server.features"):
        features.set_levels({"group.version": 1, "metadata.version": 25})
        features.set_levels({"metadata.version": 20})
    assert features.finalized() == {"kraft.version": 1, "metadata.version": 20}
    assert "feature group.version: this broker (as.version) supports no such feature" \
        in caplog.text
    assert "level 25 of feature metadata.version" in caplog.text
    assert "supports versions 7-21" in caplog.text


@pytest.mark.parametrize("release, refused", [("3.9", True), ("4.0", False), (None, False)])
def test_group_configs_exist_only_from_4_0(playing, release, refused):
    """GROUP config resources (type 32) came with Kafka 4.0: playing 3.9, Describe- and
    IncrementalAlterConfigs refuse them as an unknown resource type; the others still
    answer (the topic here: UNKNOWN_TOPIC_OR_PARTITION)."""
    broker = playing(release)
    described = broker.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=[
        {"resource_type": 32, "resource_name": "g", "configuration_keys": None},
        {"resource_type": 2, "resource_name": "nope", "configuration_keys": None}],
        include_synonyms=False, include_documentation=False)["results"]
    altered = broker.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, resources=[
        {"resource_type": 32, "resource_name": "g", "configs": [
            {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "50000"}]}],
        validate_only=False)["responses"]
    message = "Unexpected resource type UNKNOWN for resource g"
    want = (ErrorCode.INVALID_REQUEST, message) if refused else (ErrorCode.NONE, None)
    assert (described[0]["error_code"], described[0]["error_message"]) == want
    assert (altered[0]["error_code"], altered[0]["error_message"]) == want
    assert described[1]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
