"""AlterUserScramCredentials (51): Kafka's ScramControlManager rules, and the
credential the SASL layer then checks proofs against."""

from __future__ import annotations

import hashlib

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.security import scram

SHA256, SHA512 = 1, 2


def upsert(name: str, mechanism: int = SHA256, iterations: int = 4096,
           password: bytes = b"secret", salt: bytes = b"salt") -> dict:
    h = "sha256" if mechanism == SHA256 else "sha512"
    salted = hashlib.pbkdf2_hmac(h, password, salt, max(1, min(iterations, 20000)))
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt,
            "salted_password": salted}


def alter(broker, deletions=(), upsertions=()) -> dict[str, tuple[int, str | None]]:
    body = broker.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, deletions=list(deletions),
                       upsertions=list(upsertions))
    return {r["user"]: (r["error_code"], r["error_message"]) for r in body["results"]}


def test_an_upsertion_stores_kafkas_keys_from_the_salted_password(broker):
    assert alter(broker, upsertions=[upsert("alice", SHA512, 8192)]) == {"alice": (0, None)}
    credential = broker.credential_cache.get("alice", "SCRAM-SHA-512")
    expected = scram.ScramFormatter(scram.SCRAM_SHA_512).generate_credential(
        "secret", 8192, b"salt")
    assert credential == expected
    assert broker.credential_cache.get("alice", "SCRAM-SHA-256") is None


def test_a_deletion_removes_one_mechanism(broker):
    alter(broker, upsertions=[upsert("alice", SHA256)])
    alter(broker, upsertions=[upsert("alice", SHA512)])
    assert alter(broker, deletions=[{"name": "alice", "mechanism": SHA256}]) == {
        "alice": (0, None)}
    assert broker.credential_cache.describe("alice") == [("SCRAM-SHA-512", 4096)]


def test_kafkas_errors(broker):
    results = alter(broker, deletions=[{"name": "nobody", "mechanism": SHA256},
                                       {"name": "twice", "mechanism": SHA256}],
                    upsertions=[upsert("", SHA256), upsert("odd", 3),
                                upsert("few", iterations=4095),
                                upsert("many", iterations=16385), upsert("twice")])
    assert results == {
        "nobody": (ErrorCode.RESOURCE_NOT_FOUND,
                   "Attempt to delete a user credential that does not exist"),
        "twice": (ErrorCode.DUPLICATE_RESOURCE,
                  "A user credential cannot be altered twice in the same request"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "odd": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
    }
    assert broker.credential_cache.users() == []


def test_a_duplicate_user_changes_nothing_for_that_user(broker):
    results = alter(broker, upsertions=[upsert("alice", SHA256), upsert("alice", SHA512),
                                        upsert("bob")])
    assert results["alice"][0] == ErrorCode.DUPLICATE_RESOURCE
    assert results["bob"] == (0, None)
    assert broker.credential_cache.users() == ["bob"]
