"""Errors on chosen partitions, on the wire: the selected partitions answer the
error, the request's others are served; Produce before the work appends
nothing for them.  Raw requests over a socket, so every API and version is
exact (the client tests show the clients' side)."""

from __future__ import annotations

import socket

import pytest

import kafka_net
from kafka_net.protocol import decode_response, encode_request
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records.building import build_batch
from kafka_net.server.faults.facts import request_facts
from tests.support import fetch_body, recv_frame

NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER


@pytest.fixture(scope="module")
def broker():
    with kafka_net.Broker() as b:
        b.create_topic("t", partitions=3)
        yield b


def _call(broker, key: int, version: int, body: dict) -> dict:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        sock.sendall(encode_request(key, version, 7, body, "raw"))
        corr, answer = decode_response(key, version, recv_frame(sock))
    assert corr == 7
    return answer


def _produce_all(broker, version: int = 9) -> dict:
    body = {"acks": -1, "timeout_ms": 5000, "transactional_id": None, "topic_data": [{
        "name": "t", "partition_data": [
            {"index": p, "records": build_batch([(None, b"v%d" % p)])} for p in range(3)]}]}
    answer = _call(broker, ApiKey.PRODUCE, version, body)
    return {p["index"]: p for p in answer["responses"][0]["partition_responses"]}


def _end_offsets(broker) -> dict[int, int]:
    body = {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "t", "partitions": [{"partition_index": p, "timestamp": -1,
                                       "current_leader_epoch": -1} for p in range(3)]}]}
    answer = _call(broker, ApiKey.LIST_OFFSETS, 7, body)
    return {p["partition_index"]: p["offset"] for p in answer["topics"][0]["partitions"]}


def test_produce_before_the_work_appends_nothing_for_the_selected_partition(broker):
    before = _end_offsets(broker)
    with broker.faults.add(api="Produce", topic="t", partitions=[1], error=NOT_LEADER,
                           once=True):
        answers = _produce_all(broker)
    assert answers[1]["error_code"] == NOT_LEADER and answers[1]["base_offset"] == -1
    assert answers[0]["error_code"] == answers[2]["error_code"] == 0
    after = _end_offsets(broker)
    assert after == {0: before[0] + 1, 1: before[1], 2: before[2] + 1}


def test_produce_after_the_work_appends_and_answers_the_error(broker):
    before = _end_offsets(broker)
    with broker.faults.add(api="Produce", topic="t", partitions=[2],
                           error="NOT_ENOUGH_REPLICAS_AFTER_APPEND", when="after", once=True):
        answers = _produce_all(broker)
    assert answers[2]["error_code"] == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert _end_offsets(broker) == {p: before[p] + 1 for p in range(3)}


def test_list_offsets_and_offset_for_leader_epoch_answer_it_on_the_partition(broker):
    with broker.faults.add(api=["ListOffsets", "OffsetForLeaderEpoch"], topic="t",
                           partitions=[0], error=NOT_LEADER, count=2) as fault:
        body = {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "t", "partitions": [{"partition_index": p, "timestamp": -1}
                                         for p in (0, 1)]}]}
        listed = _call(broker, ApiKey.LIST_OFFSETS, 7, body)["topics"][0]["partitions"]
        epochs = _call(broker, ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, {
            "replica_id": -1, "topics": [{"topic": "t", "partitions": [
                {"partition": p, "current_leader_epoch": -1, "leader_epoch": 0}
                for p in (0, 1)]}]})["topics"][0]["partitions"]
        assert fault.hits == 2
    assert {p["partition_index"]: p["error_code"] for p in listed} == {0: NOT_LEADER, 1: 0}
    assert {p["partition"]: p["error_code"] for p in epochs} == {0: NOT_LEADER, 1: 0}


def test_fetch_by_topic_id_answers_the_error_on_the_selected_partition(broker):
    topic_id = broker.server.metadata_cache.topic("t").topic_id
    body = fetch_body([("t", 0, 0), ("t", 1, 0)], topic_ids={"t": topic_id})
    with broker.faults.add(api="Fetch", topic="t", partitions=[1], error=NOT_LEADER,
                           once=True):
        answer = _call(broker, ApiKey.FETCH, 13, body)
    parts = {p["partition_index"]: p for p in answer["responses"][0]["partitions"]}
    assert parts[1]["error_code"] == NOT_LEADER and parts[1]["records"] in (None, b"")
    assert parts[0]["error_code"] == 0 and parts[0]["records"]


def test_a_top_level_error_on_any_api(broker):
    with broker.faults.add(api="DescribeCluster", error="CLUSTER_AUTHORIZATION_FAILED",
                           once=True):
        answer = _call(broker, ApiKey.DESCRIBE_CLUSTER, 0, {})
    assert answer["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert _call(broker, ApiKey.DESCRIBE_CLUSTER, 0, {})["error_code"] == 0


def test_the_selectors_read_group_and_transactional_ids_across_apis():
    find_txn = request_facts(ApiKey.FIND_COORDINATOR, 4,
                             {"key_type": 1, "coordinator_keys": ["tx"]}, "c", "L", "c1")
    assert find_txn.transactional_ids == ("tx",) and find_txn.groups == ()
    find_group = request_facts(ApiKey.FIND_COORDINATOR, 2, {"key_type": 0, "key": "g"},
                               "c", "L", "c1")
    assert find_group.groups == ("g",)
    fetch_offsets = request_facts(ApiKey.OFFSET_FETCH, 8, {"groups": [
        {"group_id": "g1", "topics": None}, {"group_id": "g2", "topics": None}]},
        "c", "L", "c1")
    assert fetch_offsets.groups == ("g1", "g2")
    add_txn = request_facts(ApiKey.ADD_PARTITIONS_TO_TXN, 4, {"transactions": [
        {"transactional_id": "tx", "topics": []}]}, "c", "L", "c1")
    assert add_txn.transactional_ids == ("tx",)
    commit = request_facts(ApiKey.OFFSET_COMMIT, 8, {"group_id": "g", "topics": [
        {"name": "t", "partitions": [{"partition_index": 3}]}]}, "c", "L", "c1")
    assert commit.partitions == {("t", ""): (3,)} and commit.groups == ("g",)


def test_throttle_drop_and_close_on_the_wire(broker):
    from tests.support import closed_by_peer

    with broker.faults.add(api="DescribeCluster", throttle_ms=250, once=True):
        assert _call(broker, ApiKey.DESCRIBE_CLUSTER, 0, {})["throttle_time_ms"] == 250
    with broker.faults.add(api="DescribeCluster", drop=True, once=True) as dropped:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
            sock.sendall(encode_request(ApiKey.DESCRIBE_CLUSTER, 0, 1, {}, "raw"))
            sock.sendall(encode_request(ApiKey.DESCRIBE_CLUSTER, 0, 2, {}, "raw"))
            corr, _ = decode_response(ApiKey.DESCRIBE_CLUSTER, 0, recv_frame(sock))
        assert corr == 2 and dropped.hits == 1     # the first never answered, still open
    with broker.faults.add(api="DescribeCluster", close="before", once=True):
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
            sock.sendall(encode_request(ApiKey.DESCRIBE_CLUSTER, 0, 1, {}, "raw"))
            assert closed_by_peer(sock)
    with broker.faults.add(api="DescribeCluster", close="after", once=True):
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
            sock.sendall(encode_request(ApiKey.DESCRIBE_CLUSTER, 0, 1, {}, "raw"))
            corr, _ = decode_response(ApiKey.DESCRIBE_CLUSTER, 0, recv_frame(sock))
            assert corr == 1 and closed_by_peer(sock)
