"""The table of Kafka releases (kafka_net/protocol/kafka_releases.py): facts each
release's broker is known by, and the generator's output is what is checked in."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.kafka_releases import APIS, FEATURES, RELEASES, SOURCE

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "docs" / "make_kafka_releases.py"


def test_every_release_from_2_1_to_4_4_has_a_row():
    assert RELEASES[0] == "2.1" and RELEASES[-1] == "4.4"
    assert "2.9" not in RELEASES and "3.0" in RELEASES
    assert set(APIS) == set(FEATURES) == set(RELEASES)
    assert "adb3a18abe14bdb230f1cd738d03623301013d42" in SOURCE


def test_consumer_group_heartbeat_arrives_with_3_7():
    assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in APIS["2.8"]
    assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in APIS["3.6"]
    assert APIS["3.7"][ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 0)
    assert APIS["4.0"][ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 1)   # KIP-848 GA


def test_describe_topic_partitions_arrives_with_3_8():
    assert ApiKey.DESCRIBE_TOPIC_PARTITIONS not in APIS["3.7"]
    assert all(ApiKey.DESCRIBE_TOPIC_PARTITIONS in APIS[r] for r in RELEASES if r >= "3.8")


def test_kip_896_removed_old_versions_in_4_0():
    for release in ("4.0", "4.1", "4.2", "4.3", "4.4"):
        assert APIS[release][ApiKey.FETCH][0] == 4
        assert APIS[release][ApiKey.LIST_OFFSETS][0] == 1
        assert APIS[release][ApiKey.OFFSET_COMMIT][0] == 2
        assert APIS[release][ApiKey.OFFSET_FETCH][0] == 1
        assert APIS[release][ApiKey.CREATE_TOPICS][0] == 2
        assert APIS[release][ApiKey.DESCRIBE_CONFIGS][0] == 1
        # Produce v0-v2 went too, but stay advertised so that librdkafka enables
        # record batches (KAFKA-18659): the handler refuses them.
        assert APIS[release][ApiKey.PRODUCE][0] == 0
    assert APIS["3.9"][ApiKey.FETCH] == (0, 17)
    assert APIS["4.0"][ApiKey.JOIN_GROUP][0] == 2
    assert APIS["4.1"][ApiKey.JOIN_GROUP][0] == 0   # KAFKA-19444 brought v0-v1 back


def test_maxima_follow_the_known_bumps():
    assert APIS["2.1"][ApiKey.PRODUCE] == (0, 7)      # zstd, KIP-110
    assert APIS["2.8"][ApiKey.PRODUCE] == (0, 9)      # flexible
    assert APIS["3.9"][ApiKey.API_VERSIONS] == (0, 4)
    assert APIS["3.8"][ApiKey.API_VERSIONS] == (0, 3)
    assert APIS["4.2"][ApiKey.PRODUCE] == (0, 13)     # topic ids, KIP-516
    assert APIS["4.2"][ApiKey.FETCH] == (4, 18)


def test_4_3_and_4_4_add_what_kafka_added_after_franz_go_s_table():
    assert APIS["4.2"][ApiKey.DESCRIBE_LOG_DIRS] == (1, 4)
    assert APIS["4.3"][ApiKey.DESCRIBE_LOG_DIRS] == (1, 5)          # IsCordoned, KIP-1066
    changed = {key: versions for key, versions in APIS["4.4"].items()
               if versions != APIS["4.3"].get(key)}
    assert changed == {
        ApiKey.TXN_OFFSET_COMMIT: (0, 6),                           # KIP-1319
        ApiKey.DELETE_GROUPS: (0, 3),                               # KIP-1331
        ApiKey.STREAMS_GROUP_HEARTBEAT: (0, 1),
        ApiKey.STREAMS_GROUP_DESCRIBE: (0, 1),
        ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: (0, 0),
    }
    assert FEATURES["4.3"]["metadata.version"] == (7, 30, 30)
    assert FEATURES["4.4"]["metadata.version"] == (7, 33, 33)
    assert FEATURES["4.4"]["share.version"] == (0, 2, 2)            # DLQ, KIP-1191
    assert FEATURES["4.3"]["share.version"] == (0, 1, 1)


def test_zookeeper_only_inter_broker_apis_end_with_3_9():
    assert ApiKey.LEADER_AND_ISR in APIS["3.9"]
    assert ApiKey.LEADER_AND_ISR not in APIS["4.0"]


def test_no_feature_before_kip_778_and_the_levels_after():
    assert all(FEATURES[r] == {} for r in RELEASES if r < "3.3")
    assert FEATURES["3.3"] == {"metadata.version": (1, 7, 7)}
    assert FEATURES["3.9"]["metadata.version"] == (1, 21, 21)
    assert FEATURES["3.9"]["kraft.version"] == (0, 1, 1)
    assert "group.version" not in FEATURES["3.9"]
    assert FEATURES["4.0"]["metadata.version"] == (7, 25, 25)
    assert FEATURES["4.0"]["group.version"] == (0, 1, 1)
    assert FEATURES["4.2"]["transaction.version"] == (0, 2, 2)
    assert FEATURES["4.2"]["metadata.version"] == (7, 29, 29)
    assert "share.version" not in FEATURES["4.1"]


def test_every_range_is_a_range():
    for release in RELEASES:
        for key, (low, high) in APIS[release].items():
            assert 0 <= low <= high, (release, key)
        for name, (low, high, level) in FEATURES[release].items():
            assert 0 <= low <= level <= high, (release, name)


def test_a_later_release_never_serves_less_than_an_earlier_one_except_where_kafka_removed():
    # Kafka raised maxima monotonically; what a release dropped (ZooKeeper-only
    # APIs in 4.0, DescribeQuorum after 2.8's KRaft preview, Envelope) is named.
    dropped = {ApiKey.DESCRIBE_QUORUM, ApiKey.ENVELOPE}
    for earlier, later in zip(RELEASES, RELEASES[1:]):
        for key, (_, high) in APIS[earlier].items():
            if key in APIS[later]:
                assert APIS[later][key][1] >= high, (earlier, later, key)
            elif later != "4.0":
                assert key in dropped, (earlier, later, key)


def _mirror() -> str:
    spec = importlib.util.spec_from_file_location("make_kafka_releases", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MIRROR


def test_the_checked_in_table_is_the_generators_output():
    """Only where franz-go's mirror is on this machine (the table is checked in
    so that tests and users never need it)."""
    mirror = _mirror()
    if not Path(mirror).is_dir():
        pytest.skip(f"franz-go's mirror is not at {mirror}")
    result = subprocess.run([sys.executable, str(GENERATOR), "--check"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
