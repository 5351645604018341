"""The client-facing API versions Kafka 4.0 removed (KIP-896), on a real socket.

Playing a release before 4.0 (``as.version``), kafka-net serves them as that
release's broker did (each handler's ``LEGACY_LOW``); unset or playing 4.0 it
does not: ApiVersions leaves them out and a request at one closes the
connection, as for any version a broker lacks.  (Produce v0-v2, Fetch v0-v3
and ListOffsets v0, the legacy message formats, are in
test_legacy_formats_raw.py.)
"""

from __future__ import annotations

import pytest

from kafka_net.protocol import decode_response
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch
from kafka_net.server.group.zookeeper_offsets import FILE_NAME as ZOOKEEPER_OFFSETS_FILE
from tests.integration.as_version_support import advertised, new_topic, server_playing
from tests.support import RawClient, produce_body

OFFSET_COMMIT, OFFSET_FETCH = ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH
OFFSET_FOR_LEADER_EPOCH = ApiKey.OFFSET_FOR_LEADER_EPOCH
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = (
    ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS)
DESCRIBE_LOG_DIRS = ApiKey.DESCRIBE_LOG_DIRS
DESCRIBE_CONFIGS = ApiKey.DESCRIBE_CONFIGS
CREATE_TOPICS, DELETE_TOPICS = ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS


@pytest.fixture(scope="module")
def kafka_2_8():
    with server_playing("2.8", group_initial_rebalance_delay_ms=0) as server:
        yield server


@pytest.fixture(scope="module")
def kafka_3_9():
    with server_playing("3.9") as server:
        yield server


def produce(client, topic: str, n: int, partition: int = 0) -> None:
    batch = build_batch([(None, b"v%d" % i, (), 1_000 + i) for i in range(n)])
    body = client.call(ApiKey.PRODUCE, 3, produce_body(topic, partition, batch))
    assert body["responses"][0]["partition_responses"][0]["error_code"] == 0


# Each removed version, with a request body valid at it: refused unset and at 4.0.
TOPIC, GROUP = 2, 3   # resource types
LITERAL, PREFIXED = 3, 4   # pattern types
ANY, READ, WRITE, ALLOW = 1, 3, 4, 3   # ANY is every enum's code 1
ACL_FILTER_ALL = {"resource_type_filter": ANY, "resource_name_filter": None,
                  "pattern_type_filter": ANY, "principal_filter": None, "host_filter": None,
                  "operation": ANY, "permission_type": ANY}


def acl(name: str, rtype: int = TOPIC, pattern: int = LITERAL, op: int = READ) -> dict:
    return {"resource_type": rtype, "resource_name": name, "resource_pattern_type": pattern,
            "principal": "User:alice", "host": "*", "operation": op, "permission_type": ALLOW}


REMOVED = {
    (OFFSET_COMMIT, 0): lambda t: {"group_id": "g", "topics": [
        {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                    "committed_metadata": ""}]}]},
    (OFFSET_COMMIT, 1): lambda t: {"group_id": "g", "generation_id_or_member_epoch": -1,
                                   "member_id": "", "topics": [
        {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                    "commit_timestamp": -1, "committed_metadata": ""}]}]},
    (OFFSET_FETCH, 0): lambda t: {"group_id": "g", "topics": [
        {"name": t, "partition_indexes": [0]}]},
    (OFFSET_FOR_LEADER_EPOCH, 0): lambda t: {"topics": [
        {"topic": t, "partitions": [{"partition": 0, "leader_epoch": 0}]}]},
    (OFFSET_FOR_LEADER_EPOCH, 1): lambda t: {"topics": [
        {"topic": t, "partitions": [{"partition": 0, "leader_epoch": 0}]}]},
    (DESCRIBE_LOG_DIRS, 0): lambda t: {"topics": None},
    (DESCRIBE_ACLS, 0): lambda t: ACL_FILTER_ALL,
    (DESCRIBE_CONFIGS, 0): lambda t: {"resources": [
        {"resource_type": TOPIC, "resource_name": t, "configuration_keys": None}]},
    (CREATE_ACLS, 0): lambda t: {"creations": [acl(t)]},
    (DELETE_ACLS, 0): lambda t: {"filters": [ACL_FILTER_ALL]},
    (CREATE_TOPICS, 0): lambda t: {"topics": [
        {"name": t + "-new", "num_partitions": 1, "replication_factor": 1,
         "assignments": [], "configs": []}], "timeout_ms": 1000},
    (CREATE_TOPICS, 1): lambda t: {"topics": [
        {"name": t + "-new", "num_partitions": 1, "replication_factor": 1,
         "assignments": [], "configs": []}], "timeout_ms": 1000, "validate_only": True},
    (DELETE_TOPICS, 0): lambda t: {"topic_names": [t], "timeout_ms": 1000},
}


def test_api_versions_advertises_the_removed_versions_before_4_0(kafka_2_8, kafka_3_9):
    with RawClient(kafka_2_8.bound_port()) as client:
        at_2_8 = advertised(client)
    with RawClient(kafka_3_9.bound_port()) as client:
        at_3_9 = advertised(client)
    assert at_2_8[OFFSET_COMMIT] == (0, 8) and at_3_9[OFFSET_COMMIT] == (0, 9)
    assert at_2_8[OFFSET_FETCH] == (0, 7) and at_3_9[OFFSET_FETCH] == (0, 9)
    for key in (DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS):
        assert at_2_8[key] == (0, 2) and at_3_9[key] == (0, 3)
    assert at_2_8[DESCRIBE_CONFIGS] == at_3_9[DESCRIBE_CONFIGS] == (0, 4)
    assert at_2_8[OFFSET_FOR_LEADER_EPOCH] == at_3_9[OFFSET_FOR_LEADER_EPOCH] == (0, 4)
    assert at_2_8[DESCRIBE_LOG_DIRS] == (0, 2) and at_3_9[DESCRIBE_LOG_DIRS] == (0, 4)
    assert at_2_8[CREATE_TOPICS] == at_3_9[CREATE_TOPICS] == (0, 7)
    assert at_2_8[DELETE_TOPICS] == at_3_9[DELETE_TOPICS] == (0, 6)


@pytest.mark.parametrize("version", [0, 1])
def test_create_topics_v0_v1_and_delete_topics_v0_work_before_4_0(kafka_3_9, version):
    name = f"made-at-v{version}"
    with RawClient(kafka_3_9.bound_port()) as client:
        created = client.call(CREATE_TOPICS, version, {"topics": [
            {"name": name, "num_partitions": 2, "replication_factor": 1,
             "assignments": [], "configs": []}], "timeout_ms": 1000})
        assert [(t["name"], t["error_code"]) for t in created["topics"]] == [(name, 0)]
        deleted = client.call(DELETE_TOPICS, 0, {"topic_names": [name], "timeout_ms": 1000})
        assert [(r["name"], r["error_code"]) for r in deleted["responses"]] == [(name, 0)]


@pytest.mark.parametrize("release", [None, "4.0"])
def test_the_removed_versions_are_not_served_from_4_0(release):
    with server_playing(release) as server:
        topic = new_topic(server)
        with RawClient(server.bound_port()) as client:
            ranges = advertised(client)
        for (key, version), body in REMOVED.items():
            assert ranges[key][0] > version
            with RawClient(server.bound_port()) as client:
                client.send(key, version, body(topic))
                assert client.is_closed_by_server(), (key, version)


# --- OffsetCommit v0-v1, OffsetFetch v0 ---------------------------------------------------


def commit(client, version: int, group: str, topic: str, offsets: dict[int, int],
           metadata: str = "m", **fields) -> dict[int, int]:
    """{partition: error code} of one OffsetCommit."""
    body = client.call(OFFSET_COMMIT, version, {"group_id": group, **fields, "topics": [
        {"name": topic, "partitions": [
            {"partition_index": p, "committed_offset": o, "committed_metadata": metadata,
             "commit_timestamp": fields.pop("commit_timestamp", -1)}
            for p, o in offsets.items()]}]})
    [answer] = body["topics"]
    return {p["partition_index"]: p["error_code"] for p in answer["partitions"]}


def fetch_committed(client, version: int, group: str, topic: str, partitions: list[int]
                    ) -> dict[int, tuple[int, str, int]]:
    """{partition: (offset, metadata, error code)} of one OffsetFetch."""
    body = client.call(OFFSET_FETCH, version, {"group_id": group, "topics": [
        {"name": topic, "partition_indexes": partitions}]})
    [answer] = body["topics"]
    return {p["partition_index"]: (p["committed_offset"], p["metadata"], p["error_code"])
            for p in answer["partitions"]}


@pytest.mark.parametrize("release", ["2.8", "3.9"])
def test_offset_commit_v0_is_read_back_by_offset_fetch_v0_only(kafka_2_8, kafka_3_9, release):
    """The ZooKeeper broker's v0 offsets: kept apart from the group coordinator's."""
    server = kafka_2_8 if release == "2.8" else kafka_3_9
    topic, group = new_topic(server, partitions=2), f"zk-{release}"
    with RawClient(server.bound_port()) as client:
        assert commit(client, 0, group, topic, {0: 5, 1: 7, 2: 1}) == {
            0: 0, 1: 0, 2: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        # the offset alone is kept: no metadata
        assert fetch_committed(client, 0, group, topic, [0, 1]) == {0: (5, "", 0), 1: (7, "", 0)}
        # v1+ read the group coordinator, which has none
        assert fetch_committed(client, 1, group, topic, [0]) == {0: (-1, "", 0)}
        assert commit(client, 1, group, topic, {0: 9}, generation_id_or_member_epoch=-1,
                      member_id="") == {0: 0}
        assert fetch_committed(client, 1, group, topic, [0])[0][0] == 9
        assert fetch_committed(client, 0, group, topic, [0])[0][0] == 5   # still v0's
        # no v0 commit, unknown partition, unknown topic: -1 and UNKNOWN_TOPIC_OR_PARTITION
        unknown = (-1, "", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        assert fetch_committed(client, 0, "other", topic, [0, 9]) == {0: unknown, 9: unknown}
        assert fetch_committed(client, 0, group, "no-such-topic", [0]) == {0: unknown}
        assert commit(client, 0, group, "no-such-topic", {0: 1}) == {
            0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_offset_commit_v0_checks_no_group_but_the_metadata_size(kafka_2_8):
    topic = new_topic(kafka_2_8)
    with RawClient(kafka_2_8.bound_port()) as client:
        # a group mid-rebalance refuses a v1 commit, not a v0 one
        join = client.call(ApiKey.JOIN_GROUP, 2, {
            "group_id": "zk-live", "session_timeout_ms": 30_000,
            "rebalance_timeout_ms": 30_000, "member_id": "", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\0\0\0\0\0\0\0\0\0\0"}]})
        assert join["error_code"] == 0
        assert commit(client, 0, "zk-live", topic, {0: 3}) == {0: 0}
        assert commit(client, 1, "zk-live", topic, {0: 3}, generation_id_or_member_epoch=99,
                      member_id=join["member_id"]) == {0: ErrorCode.REBALANCE_IN_PROGRESS}
        assert commit(client, 0, "zk-big", topic, {0: 3}, metadata="x" * 4097) == {
            0: ErrorCode.OFFSET_METADATA_TOO_LARGE}
        assert fetch_committed(client, 0, "zk-big", topic, [0])[0][2] == \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert commit(client, 0, "", topic, {0: 3}) == {0: ErrorCode.UNKNOWN_SERVER_ERROR}


def test_offset_commit_v0_offsets_survive_a_restart_on_disk(tmp_path):
    """ZooKeeper kept them; with log.store=disk so does kafka-net."""
    config = dict(log_store="disk", log_dirs=(str(tmp_path),))
    with server_playing("2.8", **config) as server:
        topic = new_topic(server, partitions=2)
        with RawClient(server.bound_port()) as client:
            assert commit(client, 0, "durable", topic, {0: 11, 1: 12}) == {0: 0, 1: 0}
            assert commit(client, 0, "durable", topic, {1: 13}) == {1: 0}
    assert (tmp_path / ZOOKEEPER_OFFSETS_FILE).exists()
    with server_playing("2.8", **config) as server:
        with RawClient(server.bound_port()) as client:
            assert fetch_committed(client, 0, "durable", topic, [0, 1]) == {
                0: (11, "", 0), 1: (13, "", 0)}


def test_an_unreadable_offsets_file_is_reported_and_replaced(tmp_path, caplog):
    (tmp_path / ZOOKEEPER_OFFSETS_FILE).write_text("{not json")
    with server_playing("2.8", log_store="disk", log_dirs=(str(tmp_path),)) as server:
        assert "cannot be read" in caplog.text
        topic = new_topic(server)
        with RawClient(server.bound_port()) as client:
            assert fetch_committed(client, 0, "g", topic, [0])[0][2] == \
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert commit(client, 0, "g", topic, {0: 2}) == {0: 0}
            assert fetch_committed(client, 0, "g", topic, [0]) == {0: (2, "", 0)}


def test_offset_commit_v1_keeps_the_commit_timestamp(kafka_2_8):
    topic = new_topic(kafka_2_8, partitions=2)
    with RawClient(kafka_2_8.bound_port()) as client:
        assert commit(client, 1, "v1-ts", topic, {0: 4}, generation_id_or_member_epoch=-1,
                      member_id="", commit_timestamp=1_234) == {0: 0}
        assert commit(client, 1, "v1-ts", topic, {1: 6}, generation_id_or_member_epoch=-1,
                      member_id="") == {1: 0}
        assert fetch_committed(client, 1, "v1-ts", topic, [0, 1]) == {
            0: (4, "m", 0), 1: (6, "m", 0)}
    stored = kafka_2_8.apis.group_coordinator.fetch_offsets("v1-ts", [(topic, [0, 1])])
    [(_, [(_, given), (_, now)])] = stored
    assert given.commit_timestamp == 1_234   # the client's, from which retention counts
    assert now.commit_timestamp > 1_600_000_000_000   # the broker's clock


# --- DescribeAcls, CreateAcls, DeleteAcls v0 -----------------------------------------------


@pytest.fixture(scope="module")
def secured_3_9():
    """Kafka 3.9 with StandardAuthorizer; the raw client (User:ANONYMOUS) a super user."""
    with server_playing("3.9", authorizer_class_name=STANDARD,
                        super_users=("User:ANONYMOUS",)) as server:
        yield server


STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def described(client, version: int, **filters) -> set[tuple[str, int, int]]:
    """{(resource name, pattern type, operation)} a DescribeAcls lists."""
    body = client.call(DESCRIBE_ACLS, version, {**ACL_FILTER_ALL, **filters})
    assert body["error_code"] == 0
    return {(r["resource_name"], r["pattern_type"], a["operation"])
            for r in body["resources"] for a in r["acls"]}


def test_acls_v0_are_literal_only(secured_3_9):
    """v0 has no pattern type: it creates, lists and deletes LITERAL ACLs, and a
    PREFIXED ACL is neither listed nor deleted by a v0 filter."""
    with RawClient(secured_3_9.bound_port()) as client:
        created = client.call(CREATE_ACLS, 0, {"creations": [acl("orders"),
                                                             acl("orders", op=WRITE)]})
        assert [r["error_code"] for r in created["results"]] == [0, 0]
        assert client.call(CREATE_ACLS, 1, {"creations": [acl("orders-", pattern=PREFIXED),
                                                          acl("g", GROUP)]})["results"][0][
            "error_code"] == 0
        # v1 sees what v0 created as LITERAL
        assert described(client, 1) == {("orders", LITERAL, READ), ("orders", LITERAL, WRITE),
                                        ("orders-", PREFIXED, READ), ("g", LITERAL, READ)}
        # v0 (pattern type 3 on the wire, not sent) sees the LITERAL ones only
        assert described(client, 0) == {("orders", LITERAL, READ), ("orders", LITERAL, WRITE),
                                        ("g", LITERAL, READ)}
        assert described(client, 0, resource_type_filter=TOPIC,
                         resource_name_filter="orders-") == set()
        deleted = client.call(DELETE_ACLS, 0, {"filters": [
            {**ACL_FILTER_ALL, "resource_type_filter": TOPIC, "operation": WRITE},
            {**ACL_FILTER_ALL, "resource_type_filter": TOPIC}]})
        assert [[(m["resource_name"], m["operation"]) for m in r["matching_acls"]]
                for r in deleted["filter_results"]] == [
            [("orders", WRITE)], [("orders", READ), ("orders", WRITE)]]
        assert described(client, 1) == {("orders-", PREFIXED, READ), ("g", LITERAL, READ)}


def test_acls_v0_without_an_authorizer_answer_security_disabled(kafka_2_8):
    with RawClient(kafka_2_8.bound_port()) as client:
        body = client.call(DESCRIBE_ACLS, 0, ACL_FILTER_ALL)
        assert body["error_code"] == ErrorCode.SECURITY_DISABLED
        created = client.call(CREATE_ACLS, 0, {"creations": [acl("t")]})
        assert created["results"][0]["error_code"] == ErrorCode.SECURITY_DISABLED
        deleted = client.call(DELETE_ACLS, 0, {"filters": [ACL_FILTER_ALL]})
        assert deleted["filter_results"][0]["error_code"] == ErrorCode.SECURITY_DISABLED


# --- DescribeConfigs v0 --------------------------------------------------------------------

BROKER = 4   # config resource type


def configs(client, version: int, rtype: int, name: str, keys=None) -> dict[str, dict]:
    body = client.call(DESCRIBE_CONFIGS, version, {"resources": [
        {"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": True})
    [result] = body["results"]
    assert result["error_code"] == 0, result
    return {c["name"]: c for c in result["configs"]}


def test_describe_configs_v0_has_is_default_set_only_by_releases_before_2_7():
    """Kafka 2.1-2.6 set v0's is_default where the value is the default; 2.7-3.9's
    generated messages left it false everywhere."""
    for release, expected in (("2.6", (False, True)), ("2.7", (False, False))):
        with server_playing(release) as server:
            topic = new_topic(server, retention_ms="3600000")
            with RawClient(server.bound_port()) as client:
                at_v0 = configs(client, 0, TOPIC, topic, ["retention.ms", "cleanup.policy"])
        assert (at_v0["retention.ms"]["is_default"],
                at_v0["cleanup.policy"]["is_default"]) == expected, release


def test_describe_configs_v0_says_is_default_where_v1_says_the_source(kafka_2_8):
    topic = new_topic(kafka_2_8, retention_ms="3600000")
    with RawClient(kafka_2_8.bound_port()) as client:
        keys = ["retention.ms", "cleanup.policy"]
        at_v0 = configs(client, 0, TOPIC, topic, keys)
        at_v1 = configs(client, 1, TOPIC, topic, keys)
        broker_v0 = configs(client, 0, BROKER, str(kafka_2_8.config.node_id))
        unknown = client.call(DESCRIBE_CONFIGS, 0, {"resources": [
            {"resource_type": TOPIC, "resource_name": "no-such-topic",
             "configuration_keys": None}]})["results"][0]
    assert at_v1["retention.ms"]["config_source"] == 1    # DYNAMIC_TOPIC_CONFIG
    assert at_v1["cleanup.policy"]["config_source"] == 5  # DEFAULT_CONFIG
    assert at_v1["cleanup.policy"]["synonyms"]            # v1 asked for them
    assert (at_v0["retention.ms"]["value"], at_v0["retention.ms"]["is_default"]) == \
        ("3600000", False)
    assert (at_v0["cleanup.policy"]["value"], at_v0["cleanup.policy"]["is_default"]) == \
        ("delete", False)   # 2.8 set it on nothing
    assert all(c["synonyms"] == [] for c in at_v0.values())   # not on the wire at v0
    assert {c["is_default"] for c in broker_v0.values()} == {False}
    assert unknown["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# --- OffsetForLeaderEpoch v0-v1 -------------------------------------------------------------


def end_offset(client, version: int, topic: str, epoch: int, partition: int = 0
               ) -> tuple[dict, int]:
    """(the partition's answer, the response frame's size)."""
    client.send(OFFSET_FOR_LEADER_EPOCH, version, {"topics": [
        {"topic": topic, "partitions": [{"partition": partition, "leader_epoch": epoch}]}]})
    frame = client.recv_frame()
    _, body = decode_response(OFFSET_FOR_LEADER_EPOCH, version, frame)
    return body["topics"][0]["partitions"][0], len(frame)


@pytest.mark.parametrize("version", [0, 1])
def test_offset_for_leader_epoch_v0_v1_answer_the_epochs_end_offset(kafka_2_8, version):
    topic = new_topic(kafka_2_8)
    with RawClient(kafka_2_8.bound_port()) as client:
        produce(client, topic, 3)
        current, size = end_offset(client, version, topic, 0)
        newer, _ = end_offset(client, version, topic, 7)
        unknown, _ = end_offset(client, version, "no-such-topic", 0)
        _, size_at_v2 = end_offset(client, 2, topic, 0)
    assert (current["error_code"], current["end_offset"]) == (0, 3)
    assert (newer["error_code"], newer["end_offset"]) == (0, -1)   # UNDEFINED_EPOCH_OFFSET
    assert unknown["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # v2 added throttle_time_ms (4 bytes), v1 leader_epoch (4 bytes): v0 has neither
    assert size_at_v2 - size == (8 if version == 0 else 4)
    if version == 1:
        assert (current["leader_epoch"], newer["leader_epoch"]) == (0, -1)


# --- DescribeLogDirs v0 ---------------------------------------------------------------------


def test_describe_log_dirs_v0_lists_the_partitions_and_their_sizes(kafka_3_9):
    topic = new_topic(kafka_3_9, partitions=2)
    with RawClient(kafka_3_9.bound_port()) as client:
        produce(client, topic, 2, partition=1)
        everything = client.call(DESCRIBE_LOG_DIRS, 0, {"topics": None})
        one = client.call(DESCRIBE_LOG_DIRS, 0, {"topics": [
            {"topic": topic, "partitions": [1, 5]}]})
    [result] = everything["results"]
    assert result["error_code"] == 0 and topic in {t["name"] for t in result["topics"]}
    [only] = one["results"][0]["topics"]
    [partition] = only["partitions"]   # partition 5 does not exist: left out
    assert (only["name"], partition["partition_index"]) == (topic, 1)
    assert partition["partition_size"] > 0 and partition["is_future_key"] is False
