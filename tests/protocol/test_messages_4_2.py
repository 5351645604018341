"""The fields Kafka 4.2 added to the data-path and transaction APIs, byte by
byte: where each new field sits on the wire, and that the field it replaces
is gone (the round-trip tests cover every version; these pin the layout)."""

from __future__ import annotations

import struct
import uuid

from kafka_net.protocol.messages import (
    describe_groups, end_txn, fetch, list_transactions, metadata, offset_commit,
    offset_fetch, produce, write_txn_markers)

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")
NO_TAGS = b"\x00"


def compact_string(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    data = s.encode()
    return bytes([len(data) + 1]) + data


def compact_len(n: int) -> bytes:
    return bytes([n + 1])


def test_produce_v13_names_the_topic_by_id_in_request_and_response():
    records = b"\x01\x02\x03"
    value = {"transactional_id": "tx", "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": "ignored at v13", "topic_id": TOPIC_ID,
         "partition_data": [{"index": 2, "records": records}]}]}
    expected = (compact_string("tx") + struct.pack(">hi", -1, 5000)
                + compact_len(1) + TOPIC_ID.bytes
                + compact_len(1) + struct.pack(">i", 2) + compact_len(3) + records + NO_TAGS
                + NO_TAGS + NO_TAGS)
    assert produce.REQUEST.encode(value, 13) == expected
    decoded = produce.REQUEST.decode(expected, 13)
    assert decoded["topic_data"][0]["topic_id"] == TOPIC_ID
    assert decoded["topic_data"][0]["name"] == ""   # absent at v13: the default
    # v12 carries the name where v13 carries the id.
    v12 = produce.REQUEST.encode(value, 12)
    assert compact_string("ignored at v13") in v12 and TOPIC_ID.bytes not in v12
    response = {"responses": [{"topic_id": TOPIC_ID, "partition_responses": [
        {"index": 2, "error_code": 100, "base_offset": -1}]}], "throttle_time_ms": 0}
    body = produce.RESPONSE.encode(response, 13)
    assert body.startswith(compact_len(1) + TOPIC_ID.bytes + compact_len(1)
                           + struct.pack(">ihq", 2, 100, -1))
    assert produce.RESPONSE.decode(body, 13)["responses"][0]["topic_id"] == TOPIC_ID


def test_end_txn_v5_response_returns_the_producer_id_and_epoch():
    value = {"throttle_time_ms": 0, "error_code": 0, "producer_id": 4000,
             "producer_epoch": 7}
    assert end_txn.RESPONSE.encode(value, 5) == struct.pack(">ihqh", 0, 0, 4000, 7) + NO_TAGS
    assert end_txn.RESPONSE.encode(value, 4) == struct.pack(">ih", 0, 0) + NO_TAGS


def test_fetch_v18_high_watermark_is_tagged_and_left_out_at_its_default():
    def request(**partition):
        return {"max_wait_ms": 0, "min_bytes": 1, "topics": [
            {"topic_id": TOPIC_ID, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1, **partition}]}]}
    plain = fetch.REQUEST.encode(request(), 18)
    assert plain == fetch.REQUEST.encode(request(), 17)   # int64 max: "not supported"
    known = fetch.REQUEST.encode(request(high_watermark=42), 18)
    # The partition's tagged section: one field, tag 1, 8 bytes.
    assert known.replace(b"\x01\x01\x08" + struct.pack(">q", 42), NO_TAGS, 1) == plain
    assert fetch.REQUEST.decode(known, 18)["topics"][0]["partitions"][0]["high_watermark"] == 42


def test_metadata_v13_response_ends_with_the_top_level_error_code():
    value = {"brokers": [], "cluster_id": None, "controller_id": 1, "topics": [],
             "error_code": 129}
    v13, v12 = metadata.RESPONSE.encode(value, 13), metadata.RESPONSE.encode(value, 12)
    assert v13 == v12[:-1] + struct.pack(">h", 129) + NO_TAGS
    assert metadata.RESPONSE.decode(v13, 13)["error_code"] == 129


def test_offset_commit_and_fetch_v10_carry_topic_ids():
    commit = {"group_id": "g", "topics": [{"topic_id": TOPIC_ID, "partitions": [
        {"partition_index": 0, "committed_offset": 5, "committed_metadata": None}]}]}
    body = offset_commit.REQUEST.encode(commit, 10)
    assert compact_len(1) + TOPIC_ID.bytes + compact_len(1) in body
    assert offset_commit.REQUEST.decode(body, 10)["topics"][0]["topic_id"] == TOPIC_ID
    fetch_request = {"groups": [{"group_id": "g", "topics": [
        {"topic_id": TOPIC_ID, "partition_indexes": [0, 1]}]}]}
    body = offset_fetch.REQUEST.encode(fetch_request, 10)
    assert TOPIC_ID.bytes + compact_len(2) + struct.pack(">ii", 0, 1) in body
    assert offset_fetch.REQUEST.decode(body, 10)["groups"][0]["topics"][0]["topic_id"] \
        == TOPIC_ID


def test_describe_groups_v6_groups_carry_an_error_message():
    value = {"groups": [{"error_code": 69, "error_message": "Group g not found.",
                         "group_id": "g", "group_state": "Dead"}]}
    body = describe_groups.RESPONSE.encode(value, 6)
    assert body.startswith(struct.pack(">i", 0) + compact_len(1) + struct.pack(">h", 69)
                           + compact_string("Group g not found.") + compact_string("g"))
    assert len(describe_groups.RESPONSE.encode(value, 5)) == \
        len(body) - len(compact_string("Group g not found."))


def test_write_txn_markers_v2_markers_carry_the_transaction_version():
    value = {"markers": [{"producer_id": 1, "producer_epoch": 2, "transaction_result": True,
                          "topics": [], "coordinator_epoch": 3, "transaction_version": 2}]}
    marker = struct.pack(">qh?", 1, 2, True) + compact_len(0) + struct.pack(">i", 3)
    assert write_txn_markers.REQUEST.encode(value, 2) == \
        compact_len(1) + marker + b"\x02" + NO_TAGS + NO_TAGS
    assert write_txn_markers.REQUEST.encode(value, 1) == \
        compact_len(1) + marker + NO_TAGS + NO_TAGS


def test_list_transactions_v2_request_ends_with_the_id_pattern():
    value = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1,
             "transactional_id_pattern": "orders-.*"}
    assert list_transactions.REQUEST.encode(value, 2) == (
        compact_len(0) + compact_len(0) + struct.pack(">q", -1) + compact_string("orders-.*")
        + NO_TAGS)
    assert list_transactions.REQUEST.decode(
        list_transactions.REQUEST.encode({**value, "transactional_id_pattern": None}, 2),
        2)["transactional_id_pattern"] is None
