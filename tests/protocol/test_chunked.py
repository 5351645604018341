"""The codec's half of zero-copy Fetch: a records field holding a Region is written
as its length prefix, and the frame comes out as chunks around the region,
never read; joined, the chunks are byte for byte the frame the same body with
the records as bytes encodes to, at every Fetch version."""

from __future__ import annotations

import uuid

import pytest

from kafka_net.protocol.chunked import ChunkedFrame, Region
from kafka_net.protocol.codec import decode_response, encode_request, encode_response


class BytesRegion(Region):
    """A region whose bytes the test knows; the codec must never read them."""

    __slots__ = ("data", "size")

    def __init__(self, data: bytes) -> None:
        self.data, self.size = data, len(data)

    def __getattr__(self, name):   # __slots__ set: only unknown names get here
        raise AssertionError(f"the codec read {name} of a region")


def fetch_body(records: list) -> dict:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "t", "topic_id": uuid.UUID(int=7), "partitions": [
            {"partition_index": i, "error_code": 0, "high_watermark": 10,
             "last_stable_offset": 10, "log_start_offset": 0, "aborted_transactions": None,
             "preferred_read_replica": -1, "records": r} for i, r in enumerate(records)]}]}


def joined(frame: ChunkedFrame) -> bytes:
    return b"".join(c if isinstance(c, bytes) else c.data for c in frame.chunks)


@pytest.mark.parametrize("version", range(4, 18))   # what the broker serves of Fetch
def test_fetch_with_regions_is_the_same_frame_in_chunks(version):
    big, small = bytes(range(256)) * 600, b"\x01" * 5   # compact lengths of 1 and 3 bytes
    plain = encode_response(1, version, 99, fetch_body([big, b"", small, None]))
    chunked = encode_response(1, version, 99, fetch_body(
        [BytesRegion(big), BytesRegion(b""), BytesRegion(small), None]))
    assert isinstance(plain, bytes) and isinstance(chunked, ChunkedFrame)
    assert joined(chunked) == plain and len(chunked) == len(plain)
    # No empty chunk, and the empty region is not sent at all.
    assert all(c.size if isinstance(c, Region) else c for c in chunked.chunks)
    assert sum(isinstance(c, Region) for c in chunked.chunks) == 2
    correlation_id, body = decode_response(1, version, joined(chunked)[4:])
    assert correlation_id == 99
    assert [p["records"] for p in body["responses"][0]["partitions"]] == [
        big, b"", small, None]


def test_a_fetch_without_regions_stays_one_bytes():
    assert isinstance(encode_response(1, 12, 1, fetch_body([b"abc"])), bytes)


def test_a_region_cannot_go_where_no_chunk_list_is_kept():
    # A request is encoded into a plain bytearray: a region there is refused.
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 100, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": BytesRegion(b"x")}]}]}
    with pytest.raises(ValueError, match="ChunkBuffer"):
        encode_request(0, 8, 1, body)
