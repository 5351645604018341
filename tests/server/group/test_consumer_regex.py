"""Regular-expression subscriptions of consumer-protocol groups (KIP-848,
ConsumerGroupHeartbeat v1's ``subscribed_topic_regex``) through the API layer.

The coordinator resolves a group's regexes against the topic names (RE2
syntax, whole-name matches), shares a resolution among the members with the
same regex, resolves again when topics were created (at most every 10 s:
Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS, set to 0 here unless a test
is about it) and filters the topics by DESCRIBE.
"""

from __future__ import annotations

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import (
    AccessControlEntry, AclBinding, AclOperation, AclPermissionType, PatternType,
    ResourcePattern, ResourceType)
from kafka_net.server.group import consumer_coordinator
from kafka_net.server.group.topic_regex import compile_regex, resolve
from tests.server.conftest import LONG, Broker
from tests.server.group.test_consumer_protocol import assigned, describe as described
from tests.server.test_coordinator_restart import brokers, logs, restart  # noqa: F401

HB = ApiKey.CONSUMER_GROUP_HEARTBEAT
IDS = {}   # the ids of deleted topics a member still reports


@pytest.fixture(autouse=True)
def no_refresh_guard(monkeypatch):
    monkeypatch.setattr(consumer_coordinator, "REGEX_REFRESH_MIN_INTERVAL_S", 0.0)


@pytest.fixture
def b():
    broker = Broker().start()
    for name, partitions in (("orders-eu", 2), ("orders-us", 1), ("payments", 3)):
        broker.create_topic(name, partitions)
    try:
        yield broker
    finally:
        broker.stop()


def join(b, member_id, regex, names=(), group="cg", version=1) -> dict:
    return b.call(HB, version, group_id=group, member_id=member_id, member_epoch=0,
                  rebalance_timeout_ms=LONG, subscribed_topic_names=list(names),
                  subscribed_topic_regex=regex, topic_partitions=[])


def beat(b, member_id, epoch, owned=None, regex=None, group="cg") -> dict:
    """A heartbeat with nothing changed (or a new ``regex``); ``owned``:
    {topic: partitions}, None for "unchanged"."""
    if owned is not None:
        owned = [{"topic_id": IDS.get(t) or b.metadata_cache.topic(t).topic_id,
                  "partitions": sorted(ps)} for t, ps in owned.items()]
    return b.call(HB, 1, group_id=group, member_id=member_id, member_epoch=epoch,
                  rebalance_timeout_ms=-1, subscribed_topic_names=None,
                  subscribed_topic_regex=regex, topic_partitions=owned)


def test_a_regex_member_gets_the_partitions_of_every_matching_topic(b):
    a = join(b, "m-a", "orders-.*")
    assert a["error_code"] == ErrorCode.NONE, a
    assert assigned(b, a) == {"orders-eu": [0, 1], "orders-us": [0]}
    [member] = described(b)["members"]
    assert (member["subscribed_topic_regex"], member["subscribed_topic_names"]) == \
        ("orders-.*", [])


def test_the_whole_name_must_match_and_librdkafkas_joined_patterns_work(b):
    # "orders" alone matches no topic: Kafka's matches() is a whole-name match.
    assert assigned(b, join(b, "m-a", "orders", group="g1")) == {}
    # librdkafka joins its ^-subscriptions as (^a)|(^b).
    got = join(b, "m-b", "(^orders-us)|(^pay.*)", group="g2")
    assert assigned(b, got) == {"orders-us": [0], "payments": [0, 1, 2]}


def test_names_and_a_regex_together(b):
    got = join(b, "m-a", "orders-e.*", names=["payments"])
    assert assigned(b, got) == {"orders-eu": [0, 1], "payments": [0, 1, 2]}


def test_an_empty_regex_means_none(b):
    got = join(b, "m-a", "", names=["payments"])
    assert assigned(b, got) == {"payments": [0, 1, 2]}
    assert described(b)["members"][0]["subscribed_topic_regex"] is None


@pytest.mark.parametrize("regex, reason", [
    ("orders-(", "missing ): orders-("),   # RE2/J (Go's words): "missing closing )"
    ("(a)\\1", "invalid escape sequence: \\1"),
    ("(?=orders).*", "invalid perl operator: (?="),
    ("a**", "bad repetition operator: **"),
])
def test_a_bad_regex_is_invalid_regular_expression_and_leaves_nothing_behind(b, regex, reason):
    got = join(b, "m-a", regex)
    assert got["error_code"] == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert got["error_message"] == (
        f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {reason}.")
    assert described(b)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_member_switching_to_a_bad_regex_keeps_its_old_one(b):
    a = join(b, "m-a", "orders-.*")
    bad = beat(b, "m-a", a["member_epoch"], regex="[")
    assert bad["error_code"] == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert described(b)["members"][0]["subscribed_topic_regex"] == "orders-.*"


def test_v0_has_no_regex_and_still_needs_a_subscription(b):
    got = b.call(HB, 0, group_id="cg", member_id="", member_epoch=0, rebalance_timeout_ms=LONG,
                 subscribed_topic_names=None, topic_partitions=[])
    assert (got["error_code"], got["error_message"]) == (
        ErrorCode.INVALID_REQUEST,
        "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")


def test_members_with_the_same_regex_share_the_partitions(b):
    a = join(b, "m-a", "orders-.*")
    j = join(b, "m-b", "orders-.*")
    assert j["member_epoch"] == 2
    kept = assigned(b, beat(b, "m-a", a["member_epoch"], {"orders-eu": [0, 1],
                                                          "orders-us": [0]}))
    a2 = beat(b, "m-a", 1, kept)
    got = assigned(b, beat(b, "m-b", 2, {}))
    assert a2["member_epoch"] == 2
    owned = [(t, p) for part in (kept, got) for t, ps in part.items() for p in ps]
    assert sorted(owned) == [("orders-eu", 0), ("orders-eu", 1), ("orders-us", 0)]
    assert kept and got


def test_a_topic_created_later_is_assigned_at_the_next_heartbeat(b):
    a = join(b, "m-a", "orders-.*")
    b.create_topic("orders-apac", 2)
    got = beat(b, "m-a", a["member_epoch"], {"orders-eu": [0, 1], "orders-us": [0]})
    assert got["member_epoch"] == a["member_epoch"] + 1
    assert assigned(b, got) == {"orders-apac": [0, 1], "orders-eu": [0, 1], "orders-us": [0]}


def test_new_topics_wait_for_the_refresh_guard(b, monkeypatch):
    monkeypatch.setattr(consumer_coordinator, "REGEX_REFRESH_MIN_INTERVAL_S", 1e9)
    a = join(b, "m-a", "orders-.*")   # the first resolution is never held back
    assert assigned(b, a) == {"orders-eu": [0, 1], "orders-us": [0]}
    b.create_topic("orders-apac", 2)
    got = beat(b, "m-a", a["member_epoch"], {"orders-eu": [0, 1], "orders-us": [0]})
    assert (got["member_epoch"], assigned(b, got)) == (a["member_epoch"], None)


def test_a_deleted_topic_leaves_the_assignment_at_once(b, monkeypatch):
    monkeypatch.setattr(consumer_coordinator, "REGEX_REFRESH_MIN_INTERVAL_S", 1e9)
    a = join(b, "m-a", "orders-.*")
    monkeypatch.setitem(IDS, "orders-us", b.metadata_cache.topic("orders-us").topic_id)
    assert b.apis.delete_topic("orders-us")
    got = beat(b, "m-a", a["member_epoch"], {"orders-eu": [0, 1], "orders-us": [0]})
    # orders-us must be revoked first, then the new epoch comes.
    assert assigned(b, got) == {"orders-eu": [0, 1]}
    got = beat(b, "m-a", got["member_epoch"], {"orders-eu": [0, 1]})
    assert got["member_epoch"] == a["member_epoch"] + 1


def test_a_topic_subscribed_by_name_and_created_later_is_assigned(b):
    a = join(b, "m-a", None, names=["later"])
    assert assigned(b, a) == {}
    b.create_topic("later", 2)
    got = beat(b, "m-a", a["member_epoch"], {})
    assert assigned(b, got) == {"later": [0, 1]}


def test_changing_the_regex_moves_the_member(b):
    a = join(b, "m-a", "orders-.*")
    got = beat(b, "m-a", a["member_epoch"], {"orders-eu": [0, 1], "orders-us": [0]},
               regex="pay.*")
    assert assigned(b, got) == {}          # the orders partitions go first
    got = beat(b, "m-a", got["member_epoch"], {})
    assert assigned(b, got) == {"payments": [0, 1, 2]}


def test_the_regex_is_kept_across_a_coordinator_restart(brokers):
    b = brokers()   # with topic "t" (2 partitions)
    a = join(b, "m-a", "t|orders-.*")
    assert assigned(b, a) == {"t": [0, 1]}
    b = restart(b, brokers)
    [member] = described(b)["members"]
    assert member["subscribed_topic_regex"] == "t|orders-.*"
    # Resolved again at the first heartbeat: the same topics, no new epoch.
    got = beat(b, "m-a", a["member_epoch"], {"t": [0, 1]})
    assert (got["error_code"], got["member_epoch"]) == (ErrorCode.NONE, a["member_epoch"])


# -- authorization: DESCRIBE on each resolved topic -------------------------------------


def _grant(b, rtype, name, op, pattern=PatternType.LITERAL) -> None:
    [result] = b.authorizer.create_acls([AclBinding(
        ResourcePattern(rtype, name, pattern),
        AccessControlEntry("User:alice", "*", op, AclPermissionType.ALLOW))])
    assert result.error_code == 0


def test_a_regex_resolves_only_to_topics_the_member_may_describe():
    config = ServerConfig.from_properties({
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "log.store": "memory", "super.users": "User:admin"})
    b = Broker(config).start()
    try:
        b.create_topic("orders-eu", 2)
        b.create_topic("orders-us", 1)
        _grant(b, ResourceType.GROUP, "cg", AclOperation.READ)
        _grant(b, ResourceType.TOPIC, "orders-eu", AclOperation.DESCRIBE)
        b.principal = "User:alice"
        assert assigned(b, join(b, "m-a", "orders-.*")) == {"orders-eu": [0, 1]}
    finally:
        b.stop()


# -- the resolver itself ------------------------------------------------------------------


def test_resolve_counts_topics_once_per_regex_for_the_authorizer():
    asked = {}

    def authorized(counts):
        asked.update(counts)
        return {"a1"}
    got = resolve(["a.*", "a1|b1"], ["a1", "a2", "b1", "c"], authorized)
    assert asked == {"a1": 2, "a2": 1, "b1": 1}
    assert got == {"a.*": frozenset({"a1"}), "a1|b1": frozenset({"a1"})}


def test_re2_syntax_python_re_lacks_is_understood():
    assert compile_regex(r"\Qorders.eu\E").fullmatch("orders.eu")
    assert not compile_regex(r"\Qorders.eu\E").fullmatch("ordersXeu")
    assert compile_regex(r"[[:alpha:]]+-\pN+").fullmatch("orders-42")
    assert compile_regex(r"orders\z").fullmatch("orders")


def test_a_subscribed_topic_that_grows_is_assigned_its_new_partitions(b):
    a = join(b, "m-a", "pay.*")
    assert assigned(b, a) == {"payments": [0, 1, 2]}
    body = b.call(ApiKey.CREATE_PARTITIONS, 3, topics=[
        {"name": "payments", "count": 5, "assignments": None}], timeout_ms=5000,
        validate_only=False)
    assert body["results"][0]["error_code"] == ErrorCode.NONE, body
    got = beat(b, "m-a", a["member_epoch"], {"payments": [0, 1, 2]})
    assert (got["member_epoch"], assigned(b, got)) == (a["member_epoch"] + 1,
                                                        {"payments": [0, 1, 2, 3, 4]})


def test_a_plain_heartbeat_changes_nothing(b):
    a = join(b, "m-a", "orders-.*", names=["payments"])
    owned = {"orders-eu": [0, 1], "orders-us": [0], "payments": [0, 1, 2]}
    for _ in range(3):
        got = beat(b, "m-a", a["member_epoch"], owned)
        assert (got["error_code"], got["member_epoch"], got["assignment"]) == \
            (ErrorCode.NONE, a["member_epoch"], None)
    group = described(b)
    assert (group["group_epoch"], group["group_state"]) == (a["member_epoch"], "Stable")
