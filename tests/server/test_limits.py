"""Request limits a Python broker needs: partition counts, topic names, empty fetches,
nothing parked after a graceful stop began, client strings in log lines.

Each limit is checked before anything is allocated, so the tests look at what
the broker holds afterwards (MetadataCache and ReplicaManager), not only at
the error code.
"""

from __future__ import annotations

import logging
import re
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.metadata_cache import MetadataCache, topic_name_error
from kafka_net.server.partition_limits import TopicCreationError
from kafka_net.server.purgatory import Purgatory
from tests.server.conftest import FakeCtx, fetch, make_broker
from tests.server.group.support import (
    join, make_coordinator, new_member_id, sync_req)
from tests.server.handlers.conftest import create_topics
from tests.server.test_purgatory import Op

HUGE = 2**31 - 1


def held_partitions(broker) -> int:
    """Partition objects the ReplicaManager allocated."""
    return len(broker.replica_manager._partitions)


@pytest.fixture
def small():
    """A broker with limits small enough to reach in a unit test."""
    b = make_broker(max_partitions_per_request=10, max_broker_partitions=20).start()
    try:
        yield b
    finally:
        b.stop()


def grow(broker, version, *topics, validate_only=False):
    body = broker.call(ApiKey.CREATE_PARTITIONS, version, validate_only=validate_only,
                       topics=[{"name": n, "count": c, "assignments": None} for n, c in topics])
    return body["results"]


# -- CreateTopics -----------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 5, 7])
def test_create_topics_refuses_a_huge_count_before_allocating(version):
    # the defaults; v0-v1 only while playing a release before 4.0 (KIP-896)
    b = make_broker() if version >= 2 else make_broker(as_version="3.9")
    [t] = create_topics(b, version, ("huge", HUGE, 1))
    assert t["error_code"] == ErrorCode.POLICY_VIOLATION
    if version >= 1:   # error_message exists from v1
        assert "max.partitions.per.request" in t["error_message"]
        assert str(b.config.max_partitions_per_request) in t["error_message"]
    assert b.metadata_cache.topic("huge") is None and held_partitions(b) == 0


def test_per_request_limit_sums_the_request_topics_in_order(small):
    results = create_topics(small, 5, ("a", 6, 1), ("b", 6, 1), ("c", 4, 1))
    assert [(t["name"], t["error_code"]) for t in results] == [
        ("a", ErrorCode.NONE), ("b", ErrorCode.POLICY_VIOLATION), ("c", ErrorCode.NONE)]
    assert held_partitions(small) == 10
    # A new request has a fresh budget.
    [d] = create_topics(small, 5, ("d", 10, 1))
    assert d["error_code"] == ErrorCode.NONE


def test_broker_limit_counts_every_topic_and_deleting_frees_room(small):
    create_topics(small, 5, ("a", 10, 1))
    create_topics(small, 5, ("b", 8, 1))
    [c] = create_topics(small, 5, ("c", 3, 1))
    assert c["error_code"] == ErrorCode.POLICY_VIOLATION
    assert "max.broker.partitions" in c["error_message"] and "20" in c["error_message"]
    assert small.metadata_cache.topic("c") is None and held_partitions(small) == 18
    small.call(ApiKey.DELETE_TOPICS, 5, topic_names=["a"], timeout_ms=1000)
    [c] = create_topics(small, 5, ("c", 3, 1))
    assert c["error_code"] == ErrorCode.NONE
    assert small.metadata_cache.total_partitions() == 11


def test_validate_only_applies_the_limits_and_allocates_nothing(small):
    results = create_topics(small, 7, ("v", 8, 1), ("w", 8, 1), ("x", HUGE, 1),
                            validate_only=True)
    assert [t["error_code"] for t in results] == [
        ErrorCode.NONE, ErrorCode.POLICY_VIOLATION, ErrorCode.POLICY_VIOLATION]
    assert small.metadata_cache.topics() == [] and held_partitions(small) == 0


def test_counts_of_zero_or_less_stay_invalid_partitions(small):
    results = create_topics(small, 5, ("z", 0, 1), ("n", -5, 1), ("m", -HUGE - 1, 1))
    assert [t["error_code"] for t in results] == [ErrorCode.INVALID_PARTITIONS] * 3


def test_bad_replication_factor_is_answered_without_allocating():
    b = make_broker()
    [t] = create_topics(b, 5, ("rf", HUGE, 32767))
    assert t["error_code"] in (ErrorCode.INVALID_REPLICATION_FACTOR,
                               ErrorCode.POLICY_VIOLATION)
    assert held_partitions(b) == 0


def test_manual_assignments_count_against_the_limits(small):
    body = small.call(ApiKey.CREATE_TOPICS, 5, topics=[
        {"name": "m", "num_partitions": -1, "replication_factor": -1, "configs": [],
         "assignments": [{"partition_index": i, "broker_ids": [1]} for i in range(11)]}])
    assert body["topics"][0]["error_code"] == ErrorCode.POLICY_VIOLATION
    assert held_partitions(small) == 0


def test_concurrent_creators_never_pass_the_broker_limit():
    cache = MetadataCache(1, "c")
    created = []

    def creator(i):
        try:
            cache.create_topic(f"t{i}", 3, max_total=20)
            created.append(i)
        except TopicCreationError as exc:
            assert exc.error_code == ErrorCode.POLICY_VIOLATION

    threads = [threading.Thread(target=creator, args=(i,)) for i in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(created) == 6 and cache.total_partitions() == 18


# -- CreatePartitions -------------------------------------------------------------------


def test_create_partitions_refuses_a_huge_count_before_allocating():
    b = make_broker()
    b.create_topic("t", 1)
    [r] = grow(b, 3, ("t", HUGE))
    assert r["error_code"] == ErrorCode.POLICY_VIOLATION
    assert "max.partitions.per.request" in r["error_message"]
    assert b.metadata_cache.topic("t").num_partitions == 1 and held_partitions(b) == 1


def test_create_partitions_limits_per_request_broker_and_validate_only(small):
    small.create_topic("a", 1)
    small.create_topic("b", 1)
    # 9 added to "a" leaves 1 in this request's budget.
    assert [r["error_code"] for r in grow(small, 3, ("a", 10), ("b", 3))] == [
        ErrorCode.NONE, ErrorCode.POLICY_VIOLATION]
    [r] = grow(small, 3, ("b", 12), validate_only=True)     # 11 > 10 per request
    assert r["error_code"] == ErrorCode.POLICY_VIOLATION
    [r] = grow(small, 3, ("b", 10))                         # 11 + 9 = 20: fits
    assert r["error_code"] == ErrorCode.NONE
    [r] = grow(small, 3, ("b", 11), validate_only=True)     # 21 > 20 in the broker
    assert r["error_code"] == ErrorCode.POLICY_VIOLATION
    assert "max.broker.partitions" in r["error_message"]
    assert held_partitions(small) == 20


def test_the_cache_refuses_to_shrink_a_topic_a_concurrent_grower_enlarged():
    cache = MetadataCache(1, "c")
    cache.create_topic("t", 1)
    cache.set_partition_count("t", 5)
    with pytest.raises(TopicCreationError) as err:
        cache.set_partition_count("t", 3)
    assert err.value.error_code == ErrorCode.INVALID_PARTITIONS
    assert cache.topic("t").num_partitions == 5 and cache.total_partitions() == 5


# -- auto-create ------------------------------------------------------------------------


def metadata_topic(broker, name):
    body = broker.call(ApiKey.METADATA, 9, topics=[{"name": name}],
                       allow_auto_topic_creation=True, include_cluster_authorized_operations=False,
                       include_topic_authorized_operations=False)
    return body["topics"][0]


def test_auto_create_respects_max_broker_partitions():
    b = make_broker(max_broker_partitions=3, num_partitions=2).start()
    try:
        assert metadata_topic(b, "first")["error_code"] == ErrorCode.NONE
        refused = metadata_topic(b, "second")
        assert refused["error_code"] == ErrorCode.POLICY_VIOLATION
        assert b.metadata_cache.topic("second") is None and held_partitions(b) == 2
    finally:
        b.stop()


# -- topic names ------------------------------------------------------------------------


@pytest.mark.parametrize("name, message", [
    ("", "Topic name is illegal, it can't be empty"),
    (".", 'Topic name cannot be "." or ".."'),
    ("..", 'Topic name cannot be "." or ".."'),
    ("a" * 250, "Topic name is illegal, it can't be longer than 249 characters, "
                "topic name: " + "a" * 250),
    ("t\n", 'Topic name "t\n" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"),
    ("a b", None), ("caf\u00e9", None), ("\u0661", None), ("x/y", None),
])
def test_illegal_topic_names_get_kafkas_messages(name, message):
    error = topic_name_error(name)
    assert error is not None
    if message is not None:
        assert error == message


@pytest.mark.parametrize("name", ["a", "a" * 249, "...", "a.b_c-D9", "_", "-"])
def test_legal_topic_names(name):
    assert topic_name_error(name) is None


@given(st.text(max_size=260))
def test_topic_name_rule_is_kafkas(name):
    legal = (0 < len(name) <= 249 and name not in (".", "..")
             and all(c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
                     for c in name))
    assert (topic_name_error(name) is None) == legal


def test_newline_topic_name_is_refused_everywhere(small):
    [t] = create_topics(small, 5, ("evil\n", 1, 1))
    assert t["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert metadata_topic(small, "evil\n")["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert small.metadata_cache.topics() == []


def test_dot_and_underscore_collide(small):
    [a] = create_topics(small, 5, ("dot.name", 1, 1))
    assert a["error_code"] == ErrorCode.NONE
    [b] = create_topics(small, 5, ("dot_name", 1, 1))
    assert b["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert b["error_message"] == "Topic 'dot_name' collides with existing topic: dot.name"
    [v] = create_topics(small, 5, ("dot_name", 1, 1), validate_only=True)
    assert v["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert metadata_topic(small, "dot_name")["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert [t.name for t in small.metadata_cache.topics()] == ["dot.name"]
    # The same name again is TOPIC_ALREADY_EXISTS, not a collision with itself.
    [again] = create_topics(small, 5, ("dot.name", 1, 1))
    assert again["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
    small.call(ApiKey.DELETE_TOPICS, 5, topic_names=["dot.name"], timeout_ms=1000)
    [b] = create_topics(small, 5, ("dot_name", 1, 1))
    assert b["error_code"] == ErrorCode.NONE


# -- Fetch and the graceful stop --------------------------------------------------------


def test_fetch_naming_no_partition_is_answered_at_once(small):
    body = fetch(small, partitions=(), max_wait_ms=60_000, min_bytes=1)
    assert isinstance(body, dict), "an empty fetch was parked"
    assert body["error_code"] == ErrorCode.NONE and body["responses"] == []
    assert small.replica_manager.fetch_purgatory.watched() == 0


def test_complete_all_also_completes_operations_only_on_the_timer():
    purgatory = Purgatory("test")
    purgatory.start()
    try:
        timed = Op()
        assert purgatory.try_complete_else_watch(timed, []) is False
        assert purgatory.complete_all() == 1 and timed.completions == 1
        # After complete_all nothing waits: a late operation completes at once.
        late = Op()
        assert purgatory.try_complete_else_watch(late, ["k"]) is True
        assert late.completions == 1 and purgatory.watched() == 0
    finally:
        purgatory.shutdown()


def test_nothing_parks_in_the_coordinator_after_complete_parked():
    coord = make_coordinator()
    coord.start()
    try:
        a = new_member_id(coord)
        jctx, _ = join(coord, 5, member_id=a)      # alone: the join completes at once
        joined = jctx.answer
        assert joined["error_code"] == ErrorCode.NONE
        coord.complete_parked()
        # A sync (it would wait for the leader) and a join (it would wait for the
        # others) handled after the stop began are answered, not parked.
        ctx = FakeCtx(5)
        answer = coord.sync_group(ctx, sync_req("g", joined["generation_id"], a))
        assert answer["error_code"] == ErrorCode.NOT_COORDINATOR
        _, late = join(coord, 5, member_id=a)
        assert late["error_code"] == ErrorCode.NOT_COORDINATOR
    finally:
        coord.shutdown()


# -- log lines ---------------------------------------------------------------------------


def test_request_describe_escapes_the_client_id(small):
    request = small.make_request(ApiKey.API_VERSIONS, 0, {}, client_id="x\n2026 ERROR forged")
    text = request.describe()
    assert "\n" not in text and "client_id='x\\n2026 ERROR forged'" in text


def test_group_log_lines_escape_group_and_member_ids(caplog):
    coord = make_coordinator()
    coord.start()
    try:
        with caplog.at_level(logging.INFO, logger="kafka_net.server.group"):
            member = new_member_id(coord, group="g\nFAKE", client_id="c\rX")
            join(coord, 5, group="g\nFAKE", member_id=member)
        lines = [r.getMessage() for r in caplog.records]
        assert lines and all(re.fullmatch(r"[^\n\r]*", line) for line in lines), lines
        assert any("g\\nFAKE" in line for line in lines)
    finally:
        coord.shutdown()
