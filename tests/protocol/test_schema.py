"""Messages declared as data: version ranges, nullability, flexible encoding, tags.

Small ad-hoc schemas pin down one rule each with hand-written bytes; the
Hypothesis tests then round-trip the real ApiVersions and Metadata schemas at
every version; the last section compares our declarations with the upstream
Kafka JSON files that kafka-python bundles.
"""

from __future__ import annotations

import importlib
import json

import re
import struct
import uuid
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.messages import MESSAGES, api_versions, metadata
from kafka_net.protocol.primitives import Reader
from kafka_net.protocol.schema import (
    BYTES, INT16, INT32, NO_VERSIONS, STRING, Array, Field, Schema,
    Struct, Versions, walk_fields)
from kafka_net.testing import message_values

FAST = settings(max_examples=200, deadline=None)


# --- Versions --------------------------------------------------------------------

@pytest.mark.parametrize("text, low, high, inside, outside", [
    ("3+", 3, None, [3, 4, 99, 2**15], [0, 2, -1]),
    ("0-4", 0, 4, [0, 2, 4], [-1, 5]),
    ("2", 2, 2, [2], [1, 3]),
    (" 1-1 ", 1, 1, [1], [0, 2]),
])
def test_versions_parse(text, low, high, inside, outside):
    v = Versions.parse(text)
    assert (v.low, v.high) == (low, high)
    assert all(x in v for x in inside)
    assert not any(x in v for x in outside)


def test_versions_none_contains_nothing():
    v = Versions.parse("none")
    assert v is NO_VERSIONS
    assert not any(x in v for x in range(-2, 50))
    assert str(v) == "none"


@pytest.mark.parametrize("text", ["3+", "0-4", "2-2", "none"])
def test_versions_str_round_trips(text):
    assert str(Versions.parse(text)) == text
    assert Versions.parse(str(Versions.parse(text))) == Versions.parse(text)


def test_versions_parse_accepts_versions():
    v = Versions(1, 5)
    assert Versions.parse(v) is v


# --- version-gated fields ----------------------------------------------------------

GATED = Schema("Gated", valid="0-2", flexible="none", fields=[
    Field("a", INT16),
    Field("b", INT32, versions="1+", default=7),
    Field("c", STRING, versions="0-1"),
])


def test_field_absent_at_version_is_not_written():
    value = {"a": 1, "b": 99, "c": "x"}
    assert GATED.encode(value, 0) == (
        b"\x00\x01"          # a: int16 1
        b"\x00\x01x"         # c: int16 length 1, "x"   (b does not exist in v0)
    )
    assert GATED.encode(value, 1) == (
        b"\x00\x01"          # a
        b"\x00\x00\x00\x63"  # b: int32 99
        b"\x00\x01x"         # c
    )
    assert GATED.encode(value, 2) == (
        b"\x00\x01"          # a
        b"\x00\x00\x00\x63"  # b            (c ended at v1)
    )


def test_field_absent_at_version_decodes_to_default():
    assert GATED.decode(b"\x00\x05\x00\x00", 0) == {"a": 5, "b": 7, "c": ""}
    assert GATED.decode(b"\x00\x05\x00\x00\x00\x09", 2) == {"a": 5, "b": 9, "c": ""}


def test_missing_field_in_value_is_written_as_default():
    assert GATED.encode({"a": 1}, 1) == b"\x00\x01" + b"\x00\x00\x00\x07" + b"\x00\x00"


def test_encode_outside_valid_versions_is_refused():
    with pytest.raises(ValueError):
        GATED.encode({"a": 1}, 3)


def test_absent_fields_of_real_schemas_default_as_kafka_says():
    # Metadata v0 has no allow_auto_topic_creation: Kafka's default is true.
    assert metadata.REQUEST.decode(b"\x00\x00\x00\x00", 0) == {
        "topics": [], "allow_auto_topic_creation": True,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False}
    # ApiVersions v0 response has no throttle time and no tagged features.
    body = api_versions.RESPONSE.decode(b"\x00\x00" + b"\x00\x00\x00\x00", 0)
    assert body["throttle_time_ms"] == 0
    assert body["finalized_features_epoch"] == -1


# --- nullability: classic and compact ----------------------------------------------

def one_field(t, nullable="none", versions="0+"):
    """A schema whose v0 is classic and v1 flexible, holding one field ``f``."""
    return Schema("One", valid="0-1", flexible="1+",
                  fields=[Field("f", t, nullable=nullable, versions=versions)])


NULLABLE_STRING = one_field(STRING, nullable="0+")
PLAIN_STRING = one_field(STRING)
NULLABLE_BYTES = one_field(BYTES, nullable="0+")
PLAIN_BYTES = one_field(BYTES)
NULLABLE_ARRAY = one_field(Array(INT32), nullable="0+")
PLAIN_ARRAY = one_field(Array(INT32))

# Flexible v1 bodies end with b"\x00": the struct's empty tagged-field section.
ENCODINGS = [
    # schema, value, v0 (classic) bytes, v1 (flexible) bytes
    (NULLABLE_STRING, None, b"\xff\xff", b"\x00" b"\x00"),               # -1 / compact 0
    (NULLABLE_STRING, "", b"\x00\x00", b"\x01" b"\x00"),                 # 0 / compact 0+1
    (NULLABLE_STRING, "ab", b"\x00\x02ab", b"\x03ab" b"\x00"),           # 2 / compact 2+1
    (PLAIN_STRING, "é", b"\x00\x02\xc3\xa9", b"\x03\xc3\xa9" b"\x00"),   # UTF-8 byte count
    (NULLABLE_BYTES, None, b"\xff\xff\xff\xff", b"\x00" b"\x00"),        # int32 -1
    (PLAIN_BYTES, b"\x01", b"\x00\x00\x00\x01\x01", b"\x02\x01" b"\x00"),
    (NULLABLE_ARRAY, None, b"\xff\xff\xff\xff", b"\x00" b"\x00"),
    (PLAIN_ARRAY, [], b"\x00\x00\x00\x00", b"\x01" b"\x00"),
    (PLAIN_ARRAY, [1, -1],
     b"\x00\x00\x00\x02" b"\x00\x00\x00\x01" b"\xff\xff\xff\xff",        # count 2, 1, -1
     b"\x03" b"\x00\x00\x00\x01" b"\xff\xff\xff\xff" b"\x00"),           # compact count 2+1
]


@pytest.mark.parametrize("schema, value, classic, compact", ENCODINGS)
def test_classic_and_compact_encodings(schema, value, classic, compact):
    assert schema.encode({"f": value}, 0) == classic
    assert schema.encode({"f": value}, 1) == compact
    assert schema.decode(classic, 0) == {"f": value}
    assert schema.decode(compact, 1) == {"f": value}


@pytest.mark.parametrize("schema, classic_null", [
    (PLAIN_STRING, b"\xff\xff"),
    (PLAIN_BYTES, b"\xff\xff\xff\xff"),
    (PLAIN_ARRAY, b"\xff\xff\xff\xff"),
])
def test_null_for_non_nullable_is_invalid_request(schema, classic_null):
    with pytest.raises(InvalidRequestError):
        schema.decode(classic_null, 0)
    with pytest.raises(InvalidRequestError):
        schema.decode(b"\x00\x00", 1)          # compact null, then tagged section
    with pytest.raises(ValueError):
        schema.encode({"f": None}, 0)          # and we never write one


@pytest.mark.parametrize("schema, wire", [
    (NULLABLE_STRING, b"\xff\xfe"),            # -2 is neither null nor a length
    (NULLABLE_BYTES, b"\xff\xff\xff\xfe"),
    (NULLABLE_ARRAY, b"\x80\x00\x00\x00"),     # int32 min
])
def test_negative_length_other_than_minus_one_is_invalid(schema, wire):
    with pytest.raises(InvalidRequestError):
        schema.decode(wire, 0)


def test_nullability_follows_the_version():
    # Metadata request topic names become nullable in v10 (flexible, compact).
    topic_null = {"topics": [{"topic_id": uuid.UUID(int=1), "name": None}]}
    wire = metadata.REQUEST.encode(topic_null, 10)
    assert metadata.REQUEST.decode(wire, 10)["topics"][0]["name"] is None
    with pytest.raises(ValueError):
        metadata.REQUEST.encode({"topics": [{"name": None}]}, 9)
    # A null name at v9 (no topic_id, name not yet nullable) is refused:
    v9 = (b"\x02"        # topics: compact array, 1 element
          b"\x00"        #   name: compact null
          b"\x00"        #   topic's tagged fields
          b"\x01"        # allow_auto_topic_creation
          b"\x00"        # include_cluster_authorized_operations (v8-v10)
          b"\x00"        # include_topic_authorized_operations
          b"\x00")       # tagged fields
    with pytest.raises(InvalidRequestError):
        metadata.REQUEST.decode(v9, 9)
    # ...and the same bytes with a one-byte name decode fine, so it is the null.
    ok = v9[:1] + b"\x02t" + v9[2:]
    assert metadata.REQUEST.decode(ok, 9)["topics"] == [
        {"topic_id": uuid.UUID(int=0), "name": "t"}]


def test_invalid_utf8_string_is_invalid_request():
    with pytest.raises(InvalidRequestError, match="UTF-8"):
        PLAIN_STRING.decode(b"\x00\x01\xff", 0)


def test_nullable_struct_uses_int8_marker():
    inner = Struct(Field("x", INT16))
    schema = Schema("S", valid="0", flexible="none",
                    fields=[Field("s", inner, nullable="0+")])
    assert schema.encode({"s": None}, 0) == b"\xff"                     # int8 -1: null
    assert schema.encode({"s": {"x": 3}}, 0) == b"\x01" b"\x00\x03"     # int8 1, then x
    assert schema.decode(b"\xff", 0) == {"s": None}
    assert schema.decode(b"\x01\x00\x03", 0) == {"s": {"x": 3}}


# --- flexible encoding and tagged fields ---------------------------------------------

def test_flexible_struct_and_nested_structs_end_with_tagged_section():
    body = {"error_code": 0, "throttle_time_ms": 0,
            "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    assert api_versions.RESPONSE.encode(body, 2) == (
        b"\x00\x00"                   # error_code
        b"\x00\x00\x00\x01"           # api_keys: int32 count 1
        b"\x00\x12\x00\x00\x00\x04"   #   api_key 18, min 0, max 4
        b"\x00\x00\x00\x00"           # throttle_time_ms
    )
    assert api_versions.RESPONSE.encode(body, 3) == (
        b"\x00\x00"                   # error_code
        b"\x02"                       # api_keys: compact count 1+1
        b"\x00\x12\x00\x00\x00\x04"   #   api_key 18, min 0, max 4
        b"\x00"                       #   element's tagged fields: none
        b"\x00\x00\x00\x00"           # throttle_time_ms
        b"\x00"                       # top-level tagged fields: none (all at default)
    )


V3_HEAD = (b"\x00\x00"   # error_code
           b"\x01"       # api_keys: compact empty
           b"\x00\x00\x00\x00")  # throttle_time_ms
V3_EMPTY = {"error_code": 0, "api_keys": [], "throttle_time_ms": 0}


def test_tagged_fields_written_only_when_not_default():
    r = api_versions.RESPONSE
    # All tagged fields at their defaults (epoch -1, False, []): an empty section.
    assert r.encode({**V3_EMPTY, "finalized_features_epoch": -1,
                     "zk_migration_ready": False}, 3) == V3_HEAD + b"\x00"
    wire = r.encode({**V3_EMPTY, "zk_migration_ready": True,
                     "finalized_features_epoch": 5}, 3)
    assert wire == V3_HEAD + (
        b"\x02"                                # two tagged fields, in tag order:
        b"\x01\x08" + struct.pack(">q", 5) +   #   tag 1 (epoch), 8 bytes, int64 5
        b"\x03\x01\x01"                        #   tag 3 (zk_migration_ready), 1 byte, true
    )
    back = r.decode(wire, 3)
    assert back["zk_migration_ready"] is True
    assert back["finalized_features_epoch"] == 5
    assert back["supported_features"] == [] and back["finalized_features"] == []


def test_tagged_struct_array_round_trips():
    feats = [{"name": "metadata.version", "min_version": 1, "max_version": 20}]
    wire = api_versions.RESPONSE.encode({**V3_EMPTY, "supported_features": feats}, 4)
    assert wire.startswith(V3_HEAD + b"\x01\x00")  # one tagged field, tag 0
    assert api_versions.RESPONSE.decode(wire, 4)["supported_features"] == feats


def test_tagged_fields_not_written_at_classic_versions():
    body = {**V3_EMPTY, "zk_migration_ready": True}
    assert api_versions.RESPONSE.encode(body, 2) == (
        b"\x00\x00" b"\x00\x00\x00\x00" b"\x00\x00\x00\x00")


def test_unknown_tagged_fields_are_skipped():
    wire = V3_HEAD + (
        b"\x03"                 # three tagged fields
        b"\x03\x01\x01"         # tag 3: zk_migration_ready = true
        b"\x07\x02\xab\xcd"     # tag 7: unknown to us, 2 bytes: skipped
        b"\x2a\x00"             # tag 42: unknown, empty
    )
    back = api_versions.RESPONSE.decode(wire, 3)
    assert back["zk_migration_ready"] is True
    assert back["api_keys"] == [] and back["finalized_features_epoch"] == -1


@pytest.mark.parametrize("section", [
    b"\x02" b"\x03\x01\x01" b"\x01\x08" + b"\x00" * 8,   # tag 3, then tag 1
    b"\x02" b"\x03\x01\x01" b"\x03\x01\x00",             # tag 3 twice
    b"\x02" b"\x07\x00" b"\x05\x00",                     # unknown tags out of order too
])
def test_tags_out_of_order_rejected(section):
    with pytest.raises(InvalidRequestError, match="out of order"):
        api_versions.RESPONSE.decode(V3_HEAD + section, 3)


@pytest.mark.parametrize("section", [
    b"\x01",                      # one field announced, none follows
    b"\x01\x03",                  # tag, no size
    b"\x01\x03\x05\x01",          # size 5, one byte present
    b"\x01\x01\x02\x00\x00",      # tag 1 (int64) with only 2 bytes of data
])
def test_truncated_tagged_section_rejected(section):
    with pytest.raises(InvalidRequestError):
        api_versions.RESPONSE.decode(V3_HEAD + section, 3)


# --- hostile lengths ---------------------------------------------------------------------

@pytest.mark.parametrize("schema, version, wire", [
    (PLAIN_ARRAY, 0, b"\x00\x00\x03\xe8" + b"\x00" * 8),     # 1000 items in 8 bytes
    (PLAIN_ARRAY, 0, b"\x7f\xff\xff\xff"),                   # 2**31 - 1 items in 0 bytes
    (PLAIN_ARRAY, 1, b"\xe9\x07" + b"\x00" * 8),             # compact 1000 (+1)
    (PLAIN_STRING, 0, b"\x7f\xff" + b"a" * 10),              # 32767-byte string, 10 there
    (PLAIN_BYTES, 1, b"\xff\xff\xff\xff\x0f"),               # compact 2**32-2 bytes
])
def test_lengths_beyond_remaining_bytes_rejected(schema, version, wire):
    with pytest.raises(InvalidRequestError):
        schema.decode(wire, version)


def test_array_count_checked_before_allocating():
    # A count equal to the bytes left is allowed to try; one more is refused up front.
    with pytest.raises(InvalidRequestError, match="array of 5 elements in 4 bytes"):
        PLAIN_ARRAY.decode(b"\x00\x00\x00\x05" + b"\x00" * 4, 0)


@FAST
@given(data=st.data(), schema=st.sampled_from(
    [m.request for m in MESSAGES.values()] + [m.response for m in MESSAGES.values()]))
def test_arbitrary_bytes_decode_or_invalid_request(data, schema):
    version = data.draw(st.integers(schema.valid.low, schema.valid.high), label="version")
    wire = data.draw(st.binary(max_size=64), label="wire")
    try:
        body = schema.decode(wire, version)
    except InvalidRequestError:
        return
    assert set(body) == {f.name for f in schema.fields}


# --- round trips of the real schemas at every version ---------------------------------

SCHEMAS = [
    (name, schema, version)
    for name, schema in [("ApiVersionsRequest", api_versions.REQUEST),
                         ("ApiVersionsResponse", api_versions.RESPONSE),
                         ("MetadataRequest", metadata.REQUEST),
                         ("MetadataResponse", metadata.RESPONSE)]
    for version in range(schema.valid.low, schema.valid.high + 1)
]


@pytest.mark.parametrize("name, schema, version", SCHEMAS,
                         ids=[f"{n}-v{v}" for n, _, v in SCHEMAS])
def test_round_trip_every_version(name, schema, version):
    @settings(max_examples=20, deadline=None)
    @given(value=message_values(schema, version))
    def check(value):
        wire = schema.encode(value, version)
        r = Reader(wire)
        assert schema.decode(r, version) == value
        assert r.remaining() == 0                    # decode consumed exactly the encoding
        assert schema.encode(schema.decode(wire, version), version) == wire
        # Decoding consumed every byte, so any strict prefix must run out.
        for cut in {0, len(wire) // 2, len(wire) - 1}:
            if 0 <= cut < len(wire):
                with pytest.raises(InvalidRequestError):
                    schema.decode(wire[:cut], version)
    check()


def test_round_trip_covers_every_version():
    assert {(n, v) for n, _, v in SCHEMAS} >= {("MetadataResponse", 12),
                                               ("ApiVersionsRequest", 4)}
    assert len(SCHEMAS) == 5 + 5 + 14 + 14  # ApiVersions 0-4, Metadata 0-13


def test_walk_fields_visits_nested_fields():
    seen = []
    walk_fields(metadata.RESPONSE.struct, lambda f, depth: seen.append((f.name, depth)))
    assert ("brokers", 0) in seen and ("rack", 1) in seen and ("isr_nodes", 2) in seen


# --- our declarations against upstream Kafka's JSON -------------------------------------

def _snake(name: str) -> str:
    # "KRaft" is one word (is_kraft_controller, kraft_version_feature).
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name.replace("KRaft", "Kraft")).lower()


def _json_type(t: str) -> str:
    if t.startswith("[]"):
        inner = t[2:]
        return "[struct]" if inner[:1].isupper() else f"[{inner}]"
    return "struct" if t[:1].isupper() else t


def _our_type(t) -> str:
    if isinstance(t, Struct):
        return "struct"
    if isinstance(t, Array):
        return "[struct]" if isinstance(t.item, Struct) else f"[{t.item.name}]"
    return t.name


def _describe_json(fields: list, version: int, flexible: bool, common: dict | None = None
                   ) -> list:
    """``common``: the message's commonStructs by name (fields typed by a shared
    struct's name carry no ``fields`` of their own)."""
    common = common or {}
    out = []
    for f in fields:
        if version not in Versions.parse(f["versions"]):
            continue
        tagged = "tag" in f and version in Versions.parse(f.get("taggedVersions", "none"))
        if tagged and not flexible:
            continue
        shared = common.get(f["type"].removeprefix("[]"), [])
        nested = _describe_json(f.get("fields", shared), version, flexible, common)
        out.append((_snake(f["name"]), _json_type(f["type"]),
                    version in Versions.parse(f.get("nullableVersions", "none")),
                    int(f["tag"]) if tagged else None, nested))  # some JSONs quote it
    return out


def _describe_ours(struct: Struct, version: int, flexible: bool) -> list:
    out = []
    for f in struct.fields:
        if version not in f.versions or (f.tag is not None and not flexible):
            continue
        inner = f.type.item if isinstance(f.type, Array) else f.type
        nested = _describe_ours(inner, version, flexible) if isinstance(inner, Struct) else []
        out.append((f.name, _our_type(f.type), version in f.nullable, f.tag, nested))
    return out


KAFKA_JSON = Path(__file__).parent / "kafka_json"


# Kafka 4.1 renamed ListClientMetricsResources (API key 74) ListConfigResources
# (KIP-1142); kafka-python bundles it under the new name, with v1.
RENAMED = {"ListClientMetricsResourcesRequest": "ListConfigResourcesRequest",
           "ListClientMetricsResourcesResponse": "ListConfigResourcesResponse"}


def _upstream(name: str) -> dict:
    """Kafka's JSON for a message: kafka-python's bundled copy, or ours for the
    messages it does not bundle (tests/protocol/kafka_json/README.md)."""
    name = RENAMED.get(name, name)
    ours = KAFKA_JSON / f"{name}.json"
    if ours.exists():
        text = "\n".join(line for line in ours.read_text().splitlines()
                         if not line.lstrip().startswith("//"))
        return json.loads(text)
    importlib.import_module("kafka")
    from kafka.protocol.schemas.load_json import load_json
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # its importlib.resources use
        return load_json(name)


# Kafka 4.1/4.2's share-group APIs (76-79, 83-87, 90-92): neither kafka-python nor the
# 4.0 snapshot of kafka_json/ has their JSON; they were written from franz-go's
# definitions and tests/protocol/test_share_messages.py checks them (hand-encoded
# frames) instead.
SHARE_KEYS = frozenset((76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92))
ALL_SCHEMAS = [schema for key, m in MESSAGES.items() if key not in SHARE_KEYS
               for schema in (m.request, m.response)]


@pytest.mark.parametrize("schema", ALL_SCHEMAS, ids=lambda s: s.name)
def test_schema_matches_upstream_json(schema):
    # Field order, names, types, nullability and tags at every version both sides
    # define.  kafka-python bundles Kafka 4.x JSONs, which dropped some old versions
    # (Produce 0-2, ...) and added new ones (Metadata 13, ...): only the overlap counts.
    upstream = _upstream(schema.name)
    assert Versions.parse(upstream["flexibleVersions"]) == schema.flexible
    up_valid = Versions.parse(upstream["validVersions"])
    overlap = [v for v in range(schema.valid.low, schema.valid.high + 1) if v in up_valid]
    assert overlap, f"{schema.name}: no version in common with upstream {up_valid}"
    for version in overlap:
        flexible = schema.is_flexible(version)
        common = {c["name"]: c["fields"] for c in upstream.get("commonStructs", [])}
        assert (_describe_ours(schema.struct, version, flexible)
                == _describe_json(upstream["fields"], version, flexible, common)), f"v{version}"


def _json_default(text):
    if not isinstance(text, str):
        return text
    if text in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[text]
    try:
        return int(text, 0)
    except ValueError:
        return text


@pytest.mark.parametrize("schema", ALL_SCHEMAS, ids=lambda s: s.name)
def test_defaults_match_upstream_json(schema):
    # Upstream "default" values decide what an absent field decodes to, and what
    # we write when a handler leaves a field out (e.g. a null rack, not "").
    def check(json_fields, struct, path):
        ours = {f.name: f for f in struct.fields}
        for jf in json_fields:
            if Versions.parse(jf["versions"]).low > schema.valid.high:
                continue  # added after the versions we implement (Metadata v13, ...)
            f = ours[_snake(jf["name"])]
            if "default" in jf:
                assert f.default_value() == _json_default(jf["default"]), f"{path}.{f.name}"
            inner = f.type.item if isinstance(f.type, Array) else f.type
            if isinstance(inner, Struct):
                check(jf.get("fields", []), inner, f"{path}.{f.name}")
    check(_upstream(schema.name)["fields"], schema.struct, schema.name)


def test_metadata_null_defaults():
    # cluster_id and rack default to null upstream; absent (v0/v1) they decode as None.
    body = metadata.RESPONSE.decode(
        b"\x00\x00\x00\x01"            # brokers: 1
        b"\x00\x00\x00\x01"            #   node_id 1
        b"\x00\x01h"                     #   host "h"
        b"\x00\x00\x23\x84"            #   port 9092  (no rack in v0)
        b"\x00\x00\x00\x00", 0)        # topics: 0   (no cluster_id in v0)
    assert body["cluster_id"] is None
    assert body["brokers"][0]["rack"] is None
