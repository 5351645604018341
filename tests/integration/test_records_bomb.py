"""A decompression bomb on a real socket: CORRUPT_MESSAGE for it, service for everyone else.

A few KB of gzip that inflate to megabytes of zeros, produced over a real
connection to a server on 127.0.0.1:0: that partition is answered with
CORRUPT_MESSAGE (2), the broker logs one warning naming the bound, the
producing connection stays open, and another connection's ApiVersions, sent
while the bomb is in flight, is answered.
"""

from __future__ import annotations

import logging

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.records import Compression, batch_from_payload, build_batch, compress
from tests.support import API_VERSIONS_V3_BODY, RawClient, make_config, server_fixture

PRODUCE, API_VERSIONS, CREATE_TOPICS = 0, 18, 19
BOUND = 256 * 1024


def body(api_key: int, **fields) -> dict:
    out = MESSAGES[api_key].request.defaults()
    out.update(fields)
    return out


def produce(topic: str, partitions: list[bytes]) -> dict:
    return body(PRODUCE, acks=1, timeout_ms=10_000, topic_data=[{"name": topic, "partition_data": [
        {"index": i, "records": records} for i, records in enumerate(partitions)]}])


server = server_fixture(lambda: make_config(message_max_uncompressed_bytes=BOUND))


def test_gzip_bomb_gets_corrupt_message_while_another_connection_is_served(server, caplog):
    caplog.set_level(logging.WARNING, logger="kafka_net.server.replica_manager")
    bomb = batch_from_payload(compress(Compression.GZIP, bytes(64 * BOUND)), 1,
                              compression=Compression.GZIP)
    good = build_batch([(b"k", b"v" * 1000)] * 20, compression=Compression.GZIP)
    assert len(bomb) < 32 * 1024  # 16 MiB of zeros on the wire as ~16 KB
    with RawClient(server.bound_port()) as producer, RawClient(server.bound_port()) as other:
        created = producer.call(CREATE_TOPICS, 7, body(CREATE_TOPICS, timeout_ms=10_000, topics=[
            {"name": "bombed", "num_partitions": 2, "replication_factor": 1,
             "assignments": [], "configs": []}]))
        assert created["topics"][0]["error_code"] == 0
        produce_id = producer.send(PRODUCE, 9, produce("bombed", [bomb, good]))
        versions_id = other.send(API_VERSIONS, 3, API_VERSIONS_V3_BODY)
        got, versions = other.receive(API_VERSIONS, 3)
        assert (got, versions["error_code"]) == (versions_id, 0) and versions["api_keys"]
        got, response = producer.receive(PRODUCE, 9)
        assert got == produce_id
        parts = response["responses"][0]["partition_responses"]
        assert [p["error_code"] for p in parts] == [ErrorCode.CORRUPT_MESSAGE, ErrorCode.NONE]
        # The producing connection is still served: the bomb was a per-partition answer.
        again = producer.call(PRODUCE, 9, produce("bombed", [build_batch([(None, b"x")])]))
        assert again["responses"][0]["partition_responses"][0]["error_code"] == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("bombed-0" in m and "message.max.uncompressed.bytes" in m for m in warnings), \
        warnings
