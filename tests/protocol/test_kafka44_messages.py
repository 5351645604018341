"""MESSAGES against Kafka 4.4's message definitions, key by key (0-93).

``kafka44_messages.json`` is written by ``tools/kafka44_messages.py``: Kafka
4.2's table (``kafka42_messages.json``, written by ``tools/kafka42_messages.py``
from franz-go's ``generate/definitions``, commit in the file, which follows
apache/kafka's message JSON through 4.2) with the six keys Kafka 4.3 and 4.4
changed read from their message JSON in ``kafka_json/``.  For every API key it records the
version range of the request and the response, the first flexible version,
and a digest of each version's wire layout: the sequence of field types
(names aside), tagged fields by tag, the fields nullable at that version
marked.  Here the same layout is computed from our :class:`Schema` objects, so a missing field, a
wrong version bound or a misplaced tag at any version fails the test, naming
the version.

Keys other branches are still writing are in ``PENDING``, by branch: the lead
empties it at merge, and from then on a wrong range on a merged module fails
here.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.kafka_releases import APIS as KAFKA_RELEASE_APIS
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.schema import (
    BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, UINT16, UINT32, UUID,
    Array, Schema, Struct)

TABLE = json.loads((Path(__file__).parent / "kafka44_messages.json").read_text())
APIS = {api["key"]: api for api in TABLE["apis"]}

# Keys whose 4.4 modules are written on other branches, not yet merged into this one.
PENDING = {
}
# Where franz-go's shorthand (the 4.2 entries) says less than Kafka's message JSON,
# which our modules follow (checked against apache/kafka's
# clients/src/main/resources/common/message):
# (key, kind, version) -> why the digests differ.
DSL_GAPS = {
    # franz-go puts isKRaftController after ControllerEpoch; Kafka's JSON (and wire)
    # has it second, right after ControllerId.
    (ApiKey.STOP_REPLICA, "request", 4): "field order",
    # Kafka's v8 adds a tagged Type (tag 0, KIP-866); franz-go does not declare it.
    (ApiKey.UPDATE_METADATA, "request", 8): "tagged Type missing in franz-go",
    # Tagged fields Kafka adds at a later version, which franz-go declares without a
    # version: its layout has them in every flexible version.  Unknown tags are
    # skipped, so both read the same bytes.
    (ApiKey.VOTE, "response", 0): "tagged NodeEndpoints from v1",
    (ApiKey.FETCH_SNAPSHOT, "request", 0): "tagged ReplicaDirectoryId from v1",
    (ApiKey.FETCH_SNAPSHOT, "response", 0): "tagged NodeEndpoints from v1",
    (ApiKey.BROKER_HEARTBEAT, "request", 0): "tagged OfflineLogDirs from v1",
    # (found on main's Produce and Fetch modules, pending on branch "versions")
    (ApiKey.PRODUCE, "response", 9): "tagged CurrentLeader and NodeEndpoints from v10",
    **{(ApiKey.FETCH, "request", v): "tagged ReplicaState from v15, partitions' "
       "ReplicaDirectoryId from v17 and HighWatermark from v18" for v in range(12, 18)},
    **{(ApiKey.FETCH, "response", v): "tagged NodeEndpoints from v16"
       for v in range(12, 16)},
}

PENDING_KEYS = set().union(*PENDING.values())
CHECKED = sorted(set(APIS) - PENDING_KEYS)

_TOKENS = {BOOL: "bool", INT8: "int8", INT16: "int16", UINT16: "uint16", INT32: "int32",
           INT64: "int64", UINT32: "uint32", FLOAT64: "float64", UUID: "uuid",
           STRING: "string", BYTES: "bytes", RECORDS: "bytes"}


def layout(struct: Struct, version: int, flexible: bool) -> str:
    """The tool's layout string, from a Schema: regular fields, then | and the tags."""
    regular, tagged = [], []
    for f in struct.fields:
        if version not in f.versions:
            continue
        text = ("?" if version in f.nullable else "") + _type_layout(f.type, version, flexible)
        if f.tag is None:
            regular.append(text)
        elif flexible:
            tagged.append((f.tag, text))
    text = ",".join(regular)
    if flexible:
        text += "|" + ",".join(f"{tag}={t}" for tag, t in sorted(tagged))
    return text


def _type_layout(t, version: int, flexible: bool) -> str:
    if isinstance(t, Array):
        return "[" + _type_layout(t.item, version, flexible) + "]"
    if isinstance(t, Struct):
        return "{" + layout(t, version, flexible) + "}"
    return _TOKENS[t]


def digest(schema: Schema, version: int) -> str:
    text = layout(schema.struct, version, schema.is_flexible(version))
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def test_the_table_covers_every_key_kafka_defines():
    assert TABLE["source"]["base"]["commit"] == "adb3a18abe14bdb230f1cd738d03623301013d42"
    assert sorted(APIS) == sorted(ApiKey) == list(range(94))


def test_the_table_is_the_tool_s_output():
    """kafka44_messages.json is what tools/kafka44_messages.py writes from the checked-in
    4.2 table and kafka_json/ (no mirror needed)."""
    tool = Path(__file__).resolve().parents[2] / "tools" / "kafka44_messages.py"
    run = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_the_keys_read_after_4_2_are_those_4_3_and_4_4_changed():
    """The release table (kafka_releases, as.version) and this one agree on what moved:
    a key whose broker maximum differs between 4.2 and 4.4 is one read from Kafka's
    JSON, and its maximum here is 4.4's."""
    moved = {key for key, (_, high) in KAFKA_RELEASE_APIS["4.4"].items()
             if KAFKA_RELEASE_APIS["4.2"].get(key, (0, -1))[1] != high}
    assert moved == {int(key) for key in TABLE["source"]["after_4_2"]}
    for key in moved:
        assert APIS[key]["request"]["valid"][1] == KAFKA_RELEASE_APIS["4.4"][key][1]


def test_pending_keys_are_really_missing_or_behind():
    """A pending key whose module already matches belongs in CHECKED: move it."""
    for branch, keys in PENDING.items():
        for key in keys:
            message = MESSAGES.get(key)
            if message is not None:
                assert message.request.valid.high != APIS[key]["request"]["valid"][1], (
                    f"{ApiKey(key).name} is pending on branch {branch} but already at 4.4")


def test_dsl_gaps_are_still_gaps():
    """An entry whose digests now agree (franz-go caught up, or we changed) must go."""
    for key, kind, version in DSL_GAPS:
        schema = getattr(MESSAGES[key], kind)
        assert digest(schema, version) != APIS[key][kind]["layouts"][version], (key, kind)


@pytest.mark.parametrize("key", CHECKED, ids=lambda k: ApiKey(k).title)
def test_ranges_match_kafka_4_4(key):
    api = APIS[key]
    assert key in MESSAGES, f"no module for {ApiKey(key).name} ({api['source']})"
    message = MESSAGES[key]
    for kind in ("request", "response"):
        schema, want = getattr(message, kind), api[kind]
        assert (schema.valid.low, schema.valid.high) == tuple(want["valid"]), kind
        flexible = None if schema.flexible.high == -1 else schema.flexible.low
        assert flexible == want["flexible_from"], kind
        assert schema.flexible.high is None or schema.flexible.high == -1, kind


@pytest.mark.parametrize("key", CHECKED, ids=lambda k: ApiKey(k).title)
def test_wire_layout_matches_kafka_4_4_at_every_version(key):
    message, api = MESSAGES[key], APIS[key]
    for kind in ("request", "response"):
        schema = getattr(message, kind)
        ours = [digest(schema, v) for v in range(schema.valid.low, schema.valid.high + 1)]
        wrong = [v for v, (a, b) in enumerate(zip(ours, api[kind]["layouts"]))
                 if a != b and (key, kind, v) not in DSL_GAPS]
        assert not wrong, f"{schema.name} differs from {api['source']} at versions {wrong}"
