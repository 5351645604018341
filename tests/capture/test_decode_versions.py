"""``kafka-net decode`` shows a body's fields as they are at the frame's version: a
field the version does not have is not in the frame, so it is not shown (the
decoded dict holds it at its default, which looked like a value sent)."""

from __future__ import annotations

import pytest

from kafka_net.capture.decode import decode_file
from kafka_net.capture.format import encode_file_header, encode_record
from kafka_net.capture.model import REQUEST, RESPONSE
from kafka_net.protocol import ApiKey, encode_request, encode_response
from kafka_net.protocol.messages import MESSAGES
from tests.spark.conftest import kncap_record

CONN = "127.0.0.1:9092-127.0.0.1:40000-0-0"
TOP = " " * 8          # a body's top-level fields, under "Body:"


def decoded(*frames: tuple[int, bytes]) -> list[str]:
    """decode_file's lines for a .kncap of (direction, payload without size prefix)."""
    records = [encode_record(kncap_record(d, p, CONN, 10**18 + i))
               for i, (d, p) in enumerate(frames)]
    return list(decode_file(encode_file_header(0, 0, 1) + b"".join(records), "v.kncap"))


def top_level(lines: list[str]) -> list[str]:
    """The names of the first body's top-level fields."""
    body = lines.index("    Body:")
    out = []
    for line in lines[body + 1:]:
        if not line.startswith(TOP):
            break
        if not line.startswith(TOP + " "):
            out.append(line[len(TOP):].split(":")[0])
    return out


def present(schema, version: int) -> list[str]:
    flexible = schema.is_flexible(version)
    return [f.name for f in schema.struct.fields
            if version in f.versions and (f.tag is None or flexible)]


def produce(version: int) -> bytes:
    body = {"acks": 1, "timeout_ms": 1000, "transactional_id": None, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0, "records": None}]}]}
    return encode_request(ApiKey.PRODUCE, version, 7, body, client_id="v")[4:]


def test_a_field_of_later_versions_is_not_shown():
    """Produce v9 has no topic_id (v13+); v13 has no topic name (v0-12); a v9
    response no node_endpoints (a tagged field from v10)."""
    v9 = "\n".join(decoded((REQUEST, produce(9)),
                           (RESPONSE, encode_response(ApiKey.PRODUCE, 9, 7, {})[4:])))
    assert "topic_id" not in v9 and "node_endpoints" not in v9
    assert "name: 'orders'" in v9
    v13 = "\n".join(decoded((REQUEST, produce(13))))
    assert "topic_id: " in v13 and "name:" not in v13


@pytest.mark.parametrize("api_key,version", [
    (ApiKey.METADATA, 0), (ApiKey.METADATA, 4), (ApiKey.METADATA, 12),
    (ApiKey.FETCH, 3), (ApiKey.FETCH, 12), (ApiKey.FETCH, 17),
    (ApiKey.API_VERSIONS, 0), (ApiKey.API_VERSIONS, 3),
    (ApiKey.JOIN_GROUP, 0), (ApiKey.JOIN_GROUP, 9),
])
def test_top_level_fields_are_those_of_the_version(api_key, version):
    """Requests of every shape of versions (before and after flexible ones): the
    top-level fields shown are exactly the schema's at that version."""
    schema = MESSAGES[api_key].request
    payload = encode_request(api_key, version, 3, schema.defaults(), client_id="v")[4:]
    assert top_level(decoded((REQUEST, payload))) == present(schema, version)
