"""Wire schemas of the APIs a broker needs to serve real clients.

Every new schema is round-tripped at every version with its defaults, with a
value that fills every field present at that version (tagged fields included),
and with every nullable field null.  Flexible versions must end with the
top-level tagged section (an unknown tag appended there is skipped).  The
version ranges are the ones in the reference table (kafka-network-layer.md
§5.3).  Finally each schema is cross-checked against kafka-python's own
JSON-driven codec at every version both support: what we encode, it decodes to
the same values and re-encodes to the same bytes.
"""

from __future__ import annotations

import importlib

import uuid

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.primitives import Reader, encode_uvarint
from kafka_net.protocol.schema import (
    BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, UINT16, UUID,
    Array, Schema, Struct)

# key: (valid versions, first flexible version), from the reference table §5.3
# (CreatePartitions and the client quota APIs are not in the table; their ranges
# are Kafka's at the snapshot).
EXPECTED_RANGES = {
    ApiKey.PRODUCE: ((0, 13), 9),
    ApiKey.FETCH: ((0, 18), 12),
    ApiKey.LIST_OFFSETS: ((0, 11), 6),
    ApiKey.OFFSET_COMMIT: ((0, 10), 8),
    ApiKey.OFFSET_FETCH: ((0, 10), 6),
    ApiKey.FIND_COORDINATOR: ((0, 6), 3),
    ApiKey.JOIN_GROUP: ((0, 9), 6),
    ApiKey.HEARTBEAT: ((0, 4), 4),
    ApiKey.LEAVE_GROUP: ((0, 5), 4),
    ApiKey.SYNC_GROUP: ((0, 5), 4),
    ApiKey.DESCRIBE_GROUPS: ((0, 6), 5),
    ApiKey.LIST_GROUPS: ((0, 5), 3),
    ApiKey.CREATE_TOPICS: ((0, 7), 5),
    ApiKey.DELETE_TOPICS: ((0, 6), 4),
    ApiKey.INIT_PRODUCER_ID: ((0, 5), 2),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ((0, 4), 4),
    ApiKey.CREATE_PARTITIONS: ((0, 3), 2),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: ((0, 1), 1),
    ApiKey.ALTER_CLIENT_QUOTAS: ((0, 1), 1),
    # Codec only (the broker does not serve them), so that the conformance checker
    # decodes every client-facing API: Kafka's ranges at the snapshot.
    ApiKey.WRITE_TXN_MARKERS: ((0, 2), 1),
    ApiKey.DESCRIBE_ACLS: ((0, 3), 2),
    ApiKey.CREATE_ACLS: ((0, 3), 2),
    ApiKey.DELETE_ACLS: ((0, 3), 2),
    ApiKey.ALTER_REPLICA_LOG_DIRS: ((0, 2), 2),
    ApiKey.DESCRIBE_LOG_DIRS: ((0, 5), 2),   # 4.3: v5
    ApiKey.CREATE_DELEGATION_TOKEN: ((0, 3), 2),
    ApiKey.RENEW_DELEGATION_TOKEN: ((0, 2), 2),
    ApiKey.EXPIRE_DELEGATION_TOKEN: ((0, 2), 2),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: ((0, 3), 2),
    ApiKey.ELECT_LEADERS: ((0, 2), 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ((0, 1), 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: ((0, 0), 0),
    ApiKey.DESCRIBE_QUORUM: ((0, 2), 0),
    ApiKey.UPDATE_FEATURES: ((0, 2), 0),
    ApiKey.UNREGISTER_BROKER: ((0, 0), 0),
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: ((0, 0), 0),
    ApiKey.PUSH_TELEMETRY: ((0, 0), 0),
    ApiKey.LIST_CLIENT_METRICS_RESOURCES: ((0, 1), 0),   # ListConfigResources (4.1: v1)
    ApiKey.ADD_RAFT_VOTER: ((0, 1), 0),
    ApiKey.REMOVE_RAFT_VOTER: ((0, 0), 0),
    # Inter-broker and KRaft RPCs, decode-only: Kafka 4.2's ranges
    # (tests/protocol/kafka42_messages.json).
    ApiKey.LEADER_AND_ISR: ((0, 7), 4),
    ApiKey.STOP_REPLICA: ((0, 4), 2),
    ApiKey.UPDATE_METADATA: ((0, 8), 6),
    ApiKey.CONTROLLED_SHUTDOWN: ((0, 3), 3),
    ApiKey.VOTE: ((0, 2), 0),
    ApiKey.BEGIN_QUORUM_EPOCH: ((0, 1), 1),
    ApiKey.END_QUORUM_EPOCH: ((0, 1), 1),
    ApiKey.ALTER_PARTITION: ((0, 3), 0),
    ApiKey.ENVELOPE: ((0, 0), 0),
    ApiKey.FETCH_SNAPSHOT: ((0, 1), 0),
    ApiKey.BROKER_REGISTRATION: ((0, 4), 0),
    ApiKey.BROKER_HEARTBEAT: ((0, 1), 0),
    ApiKey.ALLOCATE_PRODUCER_IDS: ((0, 0), 0),
    ApiKey.CONTROLLER_REGISTRATION: ((0, 0), 0),
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: ((0, 0), 0),
    ApiKey.UPDATE_RAFT_VOTER: ((0, 0), 0),
}
INTER_BROKER = set(list(EXPECTED_RANGES)[-16:])
NEW_KEYS = sorted(EXPECTED_RANGES)

SCHEMAS = [(key, kind, getattr(MESSAGES[key], kind))
           for key in NEW_KEYS for kind in ("request", "response")]
SCHEMA_IDS = [f"{ApiKey(key).title}{kind.capitalize()}" for key, kind, _ in SCHEMAS]


def versions(schema: Schema) -> range:
    return range(schema.valid.low, schema.valid.high + 1)


# --- building values ------------------------------------------------------------------


def _sample(t, version: int, flexible: bool, salt: int, nulls: bool):
    """A non-default value of type ``t``; ``salt`` varies it from field to field."""
    if isinstance(t, Struct):
        return _populate(t, version, flexible, salt * 7 + 1, nulls)
    if isinstance(t, Array):
        return [_sample(t.item, version, flexible, salt * 3 + i, nulls) for i in range(2)]
    if t is INT8:
        return 1 + salt % 100
    if t is INT16:
        return 2 + salt % 30000
    if t is UINT16:
        return 40000 + salt % 20000
    if t is INT32:
        return 100_000 + salt
    if t is INT64:
        return (1 << 40) + salt
    if t is BOOL:
        return True
    if t is UUID:
        return uuid.UUID(int=(salt + 1) * 0x1_0000_0001)
    if t is STRING:
        return f"s{salt}-\u00e9"
    if t is BYTES or t is RECORDS:
        return bytes([salt % 256, 0xFF, 0x00, 0x7F])
    if t is FLOAT64:
        return 1.5 + salt
    raise AssertionError(f"no sample for {t!r}")


def _populate(struct: Struct, version: int, flexible: bool, salt: int = 0,
              nulls: bool = False) -> dict:
    """Fill every field present at ``version``; absent ones keep their defaults.

    With ``nulls``, every field nullable at this version is None instead.
    """
    out = {}
    for i, f in enumerate(struct.fields):
        present = version in f.versions and (f.tag is None or flexible)
        if not present:
            out[f.name] = f.default_value()
        elif nulls and version in f.nullable:
            out[f.name] = None
        else:
            out[f.name] = _sample(f.type, version, flexible, salt + 11 * i, nulls)
    return out


def populated(schema: Schema, version: int, nulls: bool = False) -> dict:
    return _populate(schema.struct, version, schema.is_flexible(version), nulls=nulls)


# --- the registry ---------------------------------------------------------------------


def test_registry_is_in_key_order_and_keeps_existing_entries():
    keys = list(MESSAGES)
    assert keys == sorted(keys)
    assert set(NEW_KEYS) | {ApiKey.METADATA, ApiKey.API_VERSIONS} <= set(keys)
    for key, message in MESSAGES.items():
        assert message.key == key


@pytest.mark.parametrize("key", NEW_KEYS, ids=lambda k: ApiKey(k).title)
def test_version_ranges_match_the_reference_table(key):
    (low, high), flex = EXPECTED_RANGES[key]
    message = MESSAGES[key]
    name = ApiKey(key).title
    assert message.request.name == f"{name}Request"
    assert message.response.name == f"{name}Response"
    for schema in (message.request, message.response):
        assert (schema.valid.low, schema.valid.high) == (low, high)
        assert (schema.flexible.low, schema.flexible.high) == (flex, None)


@pytest.mark.parametrize("key,kind,schema", SCHEMAS, ids=SCHEMA_IDS)
def test_schema_is_well_formed(key, kind, schema):
    """Snake-case names, unique per struct and tag; tags only on fields of flexible versions."""
    def check(struct: Struct, path: str):
        names = [f.name for f in struct.fields]
        assert len(names) == len(set(names)), path
        tags = [f.tag for f in struct.fields if f.tag is not None]
        assert len(tags) == len(set(tags)), path
        for f in struct.fields:
            assert f.name == f.name.lower() and " " not in f.name, f.name
            if f.tag is not None:
                assert f.versions.low >= schema.flexible.low, f"{path}.{f.name}"
            inner = f.type.item if isinstance(f.type, Array) else f.type
            if isinstance(inner, Struct):
                check(inner, f"{path}.{f.name}")
    check(schema.struct, schema.name)


# --- round trips at every version -----------------------------------------------------


@pytest.mark.parametrize("key,kind,schema", SCHEMAS, ids=SCHEMA_IDS)
def test_round_trip_every_version(key, kind, schema):
    for version in versions(schema):
        for value in (schema.defaults(), populated(schema, version),
                      populated(schema, version, nulls=True)):
            data = schema.encode(value, version)
            r = Reader(data)
            assert schema.decode(r, version) == value, f"v{version}"
            assert r.remaining() == 0, f"v{version}"
            # Encoding is a function of the decoded value: same bytes again.
            assert schema.encode(schema.decode(data, version), version) == data, f"v{version}"


@pytest.mark.parametrize("key,kind,schema", SCHEMAS, ids=SCHEMA_IDS)
def test_flexible_versions_end_with_the_tagged_section(key, kind, schema):
    defaults = schema.defaults()
    unknown = encode_uvarint(1) + encode_uvarint(1000) + encode_uvarint(3) + b"xyz"
    for version in versions(schema):
        if not schema.is_flexible(version):
            continue
        data = schema.encode(defaults, version)
        assert data[-1] == 0, f"v{version}"  # no tagged field differs from its default
        # Put an unknown tag in that last section: a reader must skip it.
        assert schema.decode(data[:-1] + unknown, version) == defaults, f"v{version}"


@pytest.mark.parametrize("key,kind,schema", SCHEMAS, ids=SCHEMA_IDS)
def test_classic_versions_have_no_tagged_section(key, kind, schema):
    for version in versions(schema):
        if schema.is_flexible(version):
            continue
        value = populated(schema, version)
        # Tagged fields exist only in flexible versions, so populating them changes nothing.
        assert schema.encode(value, version) == \
            schema.encode(_strip_tagged(schema.struct, value), version), f"v{version}"


def _strip_tagged(struct: Struct, value: dict) -> dict:
    out = {}
    for f in struct.fields:
        if f.tag is not None:
            continue
        v = value[f.name]
        if isinstance(f.type, Array) and isinstance(f.type.item, Struct) and v is not None:
            v = [_strip_tagged(f.type.item, e) for e in v]
        elif isinstance(f.type, Struct) and v is not None:
            v = _strip_tagged(f.type, v)
        out[f.name] = v
    return out


# --- hand-checked bytes and Kafka's null defaults -------------------------------------


def test_heartbeat_request_bytes():
    schema = MESSAGES[ApiKey.HEARTBEAT].request
    value = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    assert schema.encode(value, 0) == b"\x00\x01g" + b"\x00\x00\x00\x01" + b"\x00\x01m"
    assert schema.encode(value, 3) == (
        b"\x00\x01g" + b"\x00\x00\x00\x01" + b"\x00\x01m" + b"\xff\xff")
    # v4: compact strings (length + 1), compact null (0), empty tagged section.
    assert schema.encode(value, 4) == b"\x02g" + b"\x00\x00\x00\x01" + b"\x02m" + b"\x00" + b"\x00"


def test_find_coordinator_batched_request_bytes():
    schema = MESSAGES[ApiKey.FIND_COORDINATOR].request
    value = {"key_type": 0, "coordinator_keys": ["g1", "g2"]}
    assert schema.encode(value, 4) == b"\x00" + b"\x03" + b"\x03g1" + b"\x03g2" + b"\x00"
    assert schema.decode(b"\x00\x01g" + b"\x01", 1)["key"] == "g"


def test_fetch_response_tagged_fields_are_written_only_when_set():
    schema = MESSAGES[ApiKey.FETCH].response
    partition = {"partition_index": 0, "records": None}
    value = {"responses": [{"topic_id": uuid.UUID(int=1), "partitions": [partition]}]}
    plain = schema.encode(value, 16)
    partition["current_leader"] = {"leader_id": 3, "leader_epoch": 9}
    tagged = schema.encode(value, 16)
    # The partition's tagged section goes from "0 fields" to: 1 field, tag 1, size 9 =
    # leader_id, leader_epoch and the struct's own (empty) tagged section.
    assert len(tagged) == len(plain) + 1 + 1 + 9
    assert b"\x01\x01\x09\x00\x00\x00\x03\x00\x00\x00\x09\x00" in tagged
    decoded = schema.decode(tagged, 16)["responses"][0]["partitions"][0]
    assert decoded["current_leader"] == {"leader_id": 3, "leader_epoch": 9}
    assert decoded["diverging_epoch"] == {"epoch": -1, "end_offset": -1}
    assert decoded["snapshot_id"] == {"end_offset": -1, "epoch": -1}


@pytest.mark.parametrize("key,kind,field,version", [
    (ApiKey.PRODUCE, "request", "transactional_id", 0),
    (ApiKey.JOIN_GROUP, "request", "group_instance_id", 4),
    (ApiKey.SYNC_GROUP, "response", "protocol_name", 4),
    (ApiKey.FETCH, "request", "cluster_id", 12),
])
def test_kafka_null_defaults(key, kind, field, version):
    """Fields Kafka declares with "default": "null" decode as None where absent."""
    schema = getattr(MESSAGES[key], kind)
    assert schema.defaults()[field] is None
    assert schema.decode(schema.encode({}, version), version)[field] is None


def test_fetch_cluster_id_tag_omitted_at_null_written_when_empty_string():
    schema = MESSAGES[ApiKey.FETCH].request
    base = schema.encode({}, 12)
    with_empty = schema.encode({"cluster_id": ""}, 12)
    assert len(with_empty) == len(base) + 3  # tag 0, size 1, compact "" (0x01)
    assert schema.decode(with_empty, 12)["cluster_id"] == ""


# --- cross-check with kafka-python ----------------------------------------------------

kp_api_message = importlib.import_module("kafka.protocol.api_message")


def _kafka_python_classes() -> dict:
    import importlib
    for module in ("kafka.protocol.producer.produce", "kafka.protocol.producer.transaction",
                   "kafka.protocol.consumer.fetch", "kafka.protocol.consumer.offsets",
                   "kafka.protocol.consumer.group", "kafka.protocol.metadata.find_coordinator",
                   "kafka.protocol.admin.groups", "kafka.protocol.admin.topics",
                   "kafka.protocol.admin.acl", "kafka.protocol.admin.cluster"):
        importlib.import_module(module)
    found = {}

    def walk(cls):
        for sub in cls.__subclasses__():
            if sub.__dict__.get("_class_version") is None and getattr(sub, "_json", None):
                found[(sub.API_KEY, sub.type)] = sub
            walk(sub)
    walk(kp_api_message.ApiMessage)
    return found


KP_CLASSES = _kafka_python_classes()

# kafka-python has no class for these.
NO_KAFKA_PYTHON_CLASS = {
    ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
    ApiKey.EXPIRE_DELEGATION_TOKEN, ApiKey.DESCRIBE_DELEGATION_TOKEN,
    ApiKey.UNREGISTER_BROKER, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY,
    ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER,
    *INTER_BROKER}
KP_SCHEMAS = [s for s in SCHEMAS if s[0] not in NO_KAFKA_PYTHON_CLASS]
KP_IDS = [i for s, i in zip(SCHEMAS, SCHEMA_IDS) if s[0] not in NO_KAFKA_PYTHON_CLASS]


def _kp_versions(key: int, kind: str, schema: Schema) -> range:
    cls = KP_CLASSES[(key, kind)]
    low, high = cls.valid_versions
    return range(max(low, schema.valid.low), min(high, schema.valid.high) + 1)


def _compare(struct: Struct, ours: dict, theirs, version: int, flexible: bool, path: str):
    for f in struct.fields:
        if version not in f.versions or (f.tag is not None and not flexible):
            continue
        mine, other = ours[f.name], getattr(theirs, f.name)
        where = f"{path}.{f.name}"
        inner = f.type.item if isinstance(f.type, Array) else f.type
        if mine is None or other is None:
            assert mine == other, where
        elif isinstance(inner, Struct) and isinstance(f.type, Array):
            assert len(mine) == len(other), where
            for i, (a, b) in enumerate(zip(mine, other)):
                _compare(inner, a, b, version, flexible, f"{where}[{i}]")
        elif isinstance(inner, Struct):
            _compare(inner, mine, other, version, flexible, where)
        else:
            if isinstance(other, (set, frozenset)):  # kafka-python turns ACL bit fields into sets
                other = sum(1 << bit for bit in other)
            assert mine == other, where


@pytest.mark.parametrize("key,kind,schema", KP_SCHEMAS, ids=KP_IDS)
def test_kafka_python_reads_what_we_write(key, kind, schema):
    cls = KP_CLASSES[(key, kind)]
    shared = _kp_versions(key, kind, schema)
    # The quota APIs have two versions; Kafka 4 (kafka-python's JSON) dropped v0 of
    # WriteTxnMarkers and AlterReplicaLogDirs.
    dropped = {ApiKey.WRITE_TXN_MARKERS: 1, ApiKey.ALTER_REPLICA_LOG_DIRS: 1}.get(key, 0)
    assert len(shared) >= min(3, len(versions(schema))) - dropped
    for version in shared:
        flexible = schema.is_flexible(version)
        assert cls.flexible_version_q(version) == flexible, f"v{version}"
        for value in (populated(schema, version), populated(schema, version, nulls=True)):
            data = schema.encode(value, version)
            theirs = cls.decode(data, version=version)
            _compare(schema.struct, value, theirs, version, flexible, f"{schema.name}v{version}")
            theirs._header = None  # kafka-python's encode() expects the attribute
            assert bytes(theirs.encode(version=version)) == data, f"v{version}"
