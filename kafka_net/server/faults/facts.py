"""What a rule's selectors see in a request, sans-IO: a parsed request body in,
:class:`~kafka_net.server.faults.rules.RequestFacts` out.

Requests name topics, partitions, groups and transactional ids under a few
field names across Kafka's APIs; this reads them all the same way, so a new
API whose fields follow Kafka's naming is covered without a table:

* topics: the lists ``topics`` and ``topic_data`` (entries naming the topic
  by ``name`` or ``topic``, or by ``topic_id``, which ``topic_name_of`` turns
  into a name), and ``topic_names``; partitions under ``partitions``,
  ``partition_data`` or ``partition_indexes``, as numbers or entries with
  ``index``, ``partition`` or ``partition_index``;
* groups: ``group_id``, ``groups`` (names or entries with ``group_id``), and
  FindCoordinator's keys of type 0; transactional ids: ``transactional_id``,
  ``transactions[].transactional_id`` and FindCoordinator's keys of type 1.
"""

from __future__ import annotations

from typing import Callable

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.server.faults.rules import RequestFacts, TopicRef

_TOPIC_LISTS = ("topics", "topic_data")
_PARTITION_LISTS = ("partitions", "partition_data", "partition_indexes")
_PARTITION_KEYS = ("index", "partition", "partition_index")
_ZERO_ID = "00000000-0000-0000-0000-000000000000"

TopicNameOf = Callable[[object], str]   # topic id -> name ("" if unknown)


def request_facts(api_key: int, api_version: int, body: dict | None, client_id: str,
                  listener: str, connection: str,
                  topic_name_of: TopicNameOf = lambda _id: "") -> RequestFacts:
    body = body or {}
    groups, transactional_ids = _ids(api_key, body)
    return RequestFacts(api_key, api_version, client_id or "", listener, connection,
                        topic_partitions(body, topic_name_of), groups, transactional_ids)


def topic_partitions(body: dict, topic_name_of: TopicNameOf) -> dict[TopicRef, tuple[int, ...]]:
    out: dict[TopicRef, tuple[int, ...]] = {}
    for key in _TOPIC_LISTS:
        for entry in body.get(key) or ():
            if isinstance(entry, dict):
                ref = topic_ref(entry, topic_name_of)
                out[ref] = out.get(ref, ()) + _partitions(entry)
    for name in body.get("topic_names") or ():
        out.setdefault((name, ""), ())
    return out


def topic_ref(entry: dict, topic_name_of: TopicNameOf) -> TopicRef:
    """(name, id as text) of one topic entry of a request or response."""
    name = entry.get("name") or entry.get("topic") or ""
    topic_id = entry.get("topic_id")
    id_text = str(topic_id) if topic_id is not None else ""
    if id_text == _ZERO_ID:
        id_text = ""
    if not name and id_text:
        name = topic_name_of(topic_id) or ""
    return name, id_text


def _partitions(entry: dict) -> tuple[int, ...]:
    for key in _PARTITION_LISTS:
        items = entry.get(key)
        if items:
            return tuple(_index(p) for p in items)
    return ()


def _index(item) -> int:
    if isinstance(item, int):
        return item
    for key in _PARTITION_KEYS:
        if key in item:
            return item[key]
    return -1


def _ids(api_key: int, body: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    groups: list[str] = []
    txns: list[str] = []
    if isinstance(body.get("group_id"), str):
        groups.append(body["group_id"])
    for g in body.get("groups") or ():
        name = g if isinstance(g, str) else g.get("group_id") if isinstance(g, dict) else None
        if name:
            groups.append(name)
    if isinstance(body.get("transactional_id"), str):
        txns.append(body["transactional_id"])
    for t in body.get("transactions") or ():
        if isinstance(t, dict) and t.get("transactional_id"):
            txns.append(t["transactional_id"])
    if api_key == ApiKey.FIND_COORDINATOR:
        keys = body.get("coordinator_keys") or ([body["key"]] if body.get("key") else [])
        (txns if body.get("key_type") == 1 else groups).extend(keys)
    return tuple(groups), tuple(txns)
