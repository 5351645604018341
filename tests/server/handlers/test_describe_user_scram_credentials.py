"""DescribeUserScramCredentials (50): Kafka's ScramImage.describe."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode


def describe(broker, users) -> dict[str, dict]:
    body = broker.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
                       users=None if users is None else [{"name": u} for u in users])
    assert body["error_code"] == 0
    return {r["user"]: r for r in body["results"]}


def seed(broker) -> None:
    broker.credential_cache.add_scram("SCRAM-SHA-256=[name=alice,password=a]")
    broker.credential_cache.add_scram("SCRAM-SHA-512=[name=alice,password=a,iterations=8192]")
    broker.credential_cache.add_scram("SCRAM-SHA-512=[name=bob,password=b]")


def test_null_or_empty_users_lists_everyone_without_keys(broker):
    seed(broker)
    for users in (None, []):
        results = describe(broker, users)
        assert set(results) == {"alice", "bob"}
        assert results["alice"]["credential_infos"] == [
            {"mechanism": 1, "iterations": 4096}, {"mechanism": 2, "iterations": 8192}]
        assert results["bob"]["credential_infos"] == [{"mechanism": 2, "iterations": 4096}]


def test_unknown_and_duplicate_users(broker):
    seed(broker)
    results = describe(broker, ["bob", "nobody", "alice", "alice"])
    assert results["bob"]["error_code"] == 0
    assert (results["nobody"]["error_code"], results["nobody"]["error_message"]) == (
        ErrorCode.RESOURCE_NOT_FOUND,
        "Attempt to describe a user credential that does not exist: nobody")
    assert (results["alice"]["error_code"], results["alice"]["error_message"]) == (
        ErrorCode.DUPLICATE_RESOURCE,
        "Cannot describe SCRAM credentials for the same user twice in a single request: alice")
    assert results["alice"]["credential_infos"] == []


def test_nothing_stored_lists_nothing(broker):
    assert describe(broker, None) == {}
