"""Kafka 4.2's versions of the data-path APIs on a real server, over raw sockets:
Produce v13 and OffsetCommit / OffsetFetch v10 by topic id, Metadata v13's
top-level error code, Fetch v18, ListOffsets v11, DescribeGroups v6 and
ListTransactions v2."""

from __future__ import annotations

import uuid

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch, decode_records, iter_batches
from tests.support import API_VERSIONS_V3_BODY, RawClient, request_body, server_fixture

server = server_fixture(scope="module")
TOPIC = "v42"


@pytest.fixture(scope="module")
def topic_id(server) -> uuid.UUID:
    with RawClient(server.bound_port()) as c:
        body = c.call(ApiKey.CREATE_TOPICS, 7, request_body(
            ApiKey.CREATE_TOPICS, topics=[{"name": TOPIC, "num_partitions": 1,
                                           "replication_factor": 1}], timeout_ms=5000))
        assert body["topics"][0]["error_code"] == ErrorCode.NONE
        return body["topics"][0]["topic_id"]


@pytest.fixture
def client(server):
    with RawClient(server.bound_port()) as c:
        yield c


def test_api_versions_advertises_the_newest_maxima(client):
    """Kafka 4.2's maxima of these APIs, except TxnOffsetCommit, which Kafka 4.4 (the
    default release) moved to v6 (KIP-1319)."""
    body = client.call(ApiKey.API_VERSIONS, 3, API_VERSIONS_V3_BODY)
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    assert {key: ranges[key] for key in (
        ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA,
        ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS, ApiKey.END_TXN,
        ApiKey.TXN_OFFSET_COMMIT, ApiKey.LIST_TRANSACTIONS)} == {
        ApiKey.PRODUCE: (0, 13), ApiKey.FETCH: (4, 18), ApiKey.LIST_OFFSETS: (1, 11),
        ApiKey.METADATA: (0, 13), ApiKey.OFFSET_COMMIT: (2, 10),
        ApiKey.OFFSET_FETCH: (1, 10), ApiKey.DESCRIBE_GROUPS: (0, 6), ApiKey.END_TXN: (0, 5),
        ApiKey.TXN_OFFSET_COMMIT: (0, 6), ApiKey.LIST_TRANSACTIONS: (0, 2)}


def produce_v13(client, topic_id, value: bytes) -> dict:
    return client.call(ApiKey.PRODUCE, 13, request_body(
        ApiKey.PRODUCE, acks=-1, timeout_ms=5000, topic_data=[
            {"topic_id": topic_id, "partition_data": [
                {"index": 0, "records": build_batch([(None, value)])}]}]))


def test_produce_v13_by_topic_id_then_fetch_v18(client, topic_id):
    body = produce_v13(client, topic_id, b"by-id")
    [topic] = body["responses"]
    assert topic["topic_id"] == topic_id
    [p] = topic["partition_responses"]
    assert (p["error_code"], p["base_offset"]) == (ErrorCode.NONE, 0)
    fetched = client.call(ApiKey.FETCH, 18, request_body(
        ApiKey.FETCH, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
            {"topic_id": topic_id, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]))
    [answer] = fetched["responses"][0]["partitions"]
    assert answer["error_code"] == ErrorCode.NONE
    assert [r.value for b in iter_batches(answer["records"]) for r in decode_records(b)][:1] \
        == [b"by-id"]


def test_produce_v13_to_an_unknown_topic_id(client, topic_id):
    ghost = uuid.uuid4()
    body = produce_v13(client, ghost, b"nowhere")
    [topic] = body["responses"]
    assert topic["topic_id"] == ghost
    assert [p["error_code"] for p in topic["partition_responses"]] == \
        [ErrorCode.UNKNOWN_TOPIC_ID]


def test_offset_commit_and_fetch_v10_by_topic_id(client, topic_id):
    ghost = uuid.uuid4()
    committed = client.call(ApiKey.OFFSET_COMMIT, 10, request_body(
        ApiKey.OFFSET_COMMIT, group_id="v42-group", generation_id_or_member_epoch=-1,
        topics=[{"topic_id": topic_id, "partitions": [
                    {"partition_index": 0, "committed_offset": 7, "committed_metadata": "m"}]},
                {"topic_id": ghost, "partitions": [
                    {"partition_index": 0, "committed_offset": 7,
                     "committed_metadata": None}]}]))
    assert {t["topic_id"]: [p["error_code"] for p in t["partitions"]]
            for t in committed["topics"]} == {topic_id: [ErrorCode.NONE],
                                              ghost: [ErrorCode.UNKNOWN_TOPIC_ID]}
    fetched = client.call(ApiKey.OFFSET_FETCH, 10, request_body(
        ApiKey.OFFSET_FETCH, groups=[
            {"group_id": "v42-group", "topics": [
                {"topic_id": topic_id, "partition_indexes": [0]},
                {"topic_id": ghost, "partition_indexes": [0]}]},
            {"group_id": "v42-group", "topics": None}]))
    named, everything = fetched["groups"]
    assert {t["topic_id"]: [(p["committed_offset"], p["metadata"], p["error_code"])
                            for p in t["partitions"]] for t in named["topics"]} == {
        topic_id: [(7, "m", ErrorCode.NONE)], ghost: [(-1, "", ErrorCode.UNKNOWN_TOPIC_ID)]}
    assert [t["topic_id"] for t in everything["topics"]] == [topic_id]


def test_metadata_v13_has_a_top_level_error_code(client, topic_id):
    body = client.call(ApiKey.METADATA, 13, request_body(
        ApiKey.METADATA, topics=[{"topic_id": topic_id, "name": None}]))
    assert body["error_code"] == ErrorCode.NONE
    [topic] = body["topics"]
    assert (topic["name"], topic["error_code"]) == (TOPIC, ErrorCode.NONE)


def test_list_offsets_v11_earliest_pending_upload_has_no_answer_without_tiered_storage(
        client, topic_id):
    produce_v13(client, topic_id, b"one more")

    def lookup(timestamp):
        body = client.call(ApiKey.LIST_OFFSETS, 11, request_body(
            ApiKey.LIST_OFFSETS, replica_id=-1, topics=[{"name": TOPIC, "partitions": [
                {"partition_index": 0, "current_leader_epoch": -1,
                 "timestamp": timestamp}]}]))
        p = body["topics"][0]["partitions"][0]
        assert p["error_code"] == ErrorCode.NONE
        return p["offset"]
    assert lookup(-6) == -1
    assert lookup(-2) == 0 and lookup(-1) >= 1


def test_describe_groups_v6_says_group_id_not_found(client):
    body = client.call(ApiKey.DESCRIBE_GROUPS, 6, request_body(
        ApiKey.DESCRIBE_GROUPS, groups=["nobody-here"]))
    [g] = body["groups"]
    assert (g["error_code"], g["error_message"], g["group_state"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group nobody-here not found.", "Dead")
    older = client.call(ApiKey.DESCRIBE_GROUPS, 5, request_body(
        ApiKey.DESCRIBE_GROUPS, groups=["nobody-here"]))
    assert older["groups"][0]["error_code"] == ErrorCode.NONE


def test_list_transactions_v2_filters_by_pattern(client):
    for txn_id in ("orders-1", "orders-2", "payments-1"):
        assert client.call(ApiKey.INIT_PRODUCER_ID, 5, request_body(
            ApiKey.INIT_PRODUCER_ID, transactional_id=txn_id,
            transaction_timeout_ms=60_000))["error_code"] == ErrorCode.NONE

    def listed(pattern):
        body = client.call(ApiKey.LIST_TRANSACTIONS, 2, request_body(
            ApiKey.LIST_TRANSACTIONS, transactional_id_pattern=pattern))
        return body["error_code"], sorted(t["transactional_id"]
                                          for t in body["transaction_states"])
    assert listed("orders-.*") == (ErrorCode.NONE, ["orders-1", "orders-2"])
    assert listed("orders") == (ErrorCode.NONE, [])   # the whole id must match
    assert listed(None)[1] == ["orders-1", "orders-2", "payments-1"]
    assert listed("orders-(") == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])
    # Java's regex, as Kafka 4.2 compiles it: look-ahead and \Q..\E read, a
    # brace that opens no repetition refused ("Illegal repetition").
    assert listed("(?!orders-).*") == (ErrorCode.NONE, ["payments-1"])
    assert listed("\\Qorders-\\E\\p{Digit}") == (ErrorCode.NONE, ["orders-1", "orders-2"])
    assert listed("orders-{n}") == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])
