"""DelegationTokenManager over the metadata log, without sockets: its records
across a (simulated) restart and a snapshot, the expiry sweep on a fake clock,
and the controller's checks (tests/integration/test_delegation_tokens.py has
the wire side)."""

from __future__ import annotations

import dataclasses

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.security.delegation_token import create_hmac, new_token_id
from kafka_net.server.storage import InMemoryLog
from tests.server.conftest import Broker

SECRET = "s3cret"


class Store:
    def __init__(self, **config) -> None:
        self.log = InMemoryLog()
        self.config = dataclasses.replace(
            ServerConfig(log_store="memory"), delegation_token_secret_key=SECRET, **config)

    def broker(self) -> Broker:
        return Broker(self.config, metadata_log_factory=lambda config: self.log).start()


def tokens_of(b: Broker) -> dict:
    return {t.info.token_id: t for t in b.apis.delegation_tokens.tokens()}


def test_tokens_come_back_after_a_restart_and_a_snapshot():
    store = Store()
    b = store.broker()
    manager = b.apis.delegation_tokens
    error, kept = manager.create("User:alice", "User:alice", ["User:bob"], -1)
    assert error == ErrorCode.NONE
    _, gone = manager.create("User:alice", "User:alice", [], -1)
    assert manager.renew("User:bob", kept.hmac, 1000)[0] == ErrorCode.NONE
    assert manager.expire("User:alice", gone.hmac, -1)[0] == ErrorCode.NONE
    before = tokens_of(b)
    assert b.metadata_log.snapshot() is not None
    records = [kind for kind, _ in b.metadata_log.records()]
    assert records.count("DelegationTokenRecord") == 1
    assert "RemoveDelegationTokenRecord" not in records
    b.stop()
    b.shutdown()
    b = store.broker()
    assert tokens_of(b) == before
    cache = b.credential_cache.tokens
    assert cache.token_for_hmac(kept.hmac).info.token_id == kept.info.token_id
    assert cache.credential(kept.info.token_id, "SCRAM-SHA-512") is not None
    b.stop()
    b.shutdown()


def test_the_sweep_removes_what_expired_and_keeps_the_rest():
    b = Store().broker()
    manager = b.apis.delegation_tokens
    now = [1_000_000]
    manager.clock_ms = lambda: now[0]
    _, short = manager.create("User:alice", "User:alice", [], 5000)   # max lifetime 5 s
    _, long = manager.create("User:alice", "User:alice", [], -1)
    assert manager.sweep_expired() == 0
    now[0] += 5001
    assert manager.renew("User:alice", short.hmac, 1000)[0] == ErrorCode.DELEGATION_TOKEN_EXPIRED
    assert manager.sweep_expired() == 1
    assert set(tokens_of(b)) == {long.info.token_id}
    assert manager.renew("User:alice", short.hmac, 1000)[0] == \
        ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    b.stop()
    b.shutdown()


def test_renew_and_expire_are_bounded_by_the_max_timestamp():
    b = Store(delegation_token_max_lifetime_ms=10_000,
              delegation_token_expiry_time_ms=4_000).broker()
    manager = b.apis.delegation_tokens
    now = [5_000_000]
    manager.clock_ms = lambda: now[0]
    _, token = manager.create("User:alice", "User:alice", [], 60_000)
    assert (token.info.max_timestamp, token.info.expiry_timestamp) == (now[0] + 10_000,
                                                                       now[0] + 4_000)
    # A renewal period above delegation.token.expiry.time.ms is cut to it.
    assert manager.renew("User:alice", token.hmac, 9_000) == (ErrorCode.NONE, now[0] + 4_000)
    start = now[0]
    now[0] += 3_000
    assert manager.renew("User:alice", token.hmac, -1) == (ErrorCode.NONE, start + 7_000)
    now[0] += 3_000   # renewed again: now + 4 s passes the max timestamp, so that
    assert manager.renew("User:alice", token.hmac, -1) == (ErrorCode.NONE,
                                                           token.info.max_timestamp)
    assert manager.expire("User:alice", token.hmac, 50_000) == (ErrorCode.NONE,
                                                                token.info.max_timestamp)
    assert manager.expire("User:bob", token.hmac, 1) == \
        (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
    b.stop()
    b.shutdown()


def test_without_a_secret_records_are_kept_but_no_token_is_usable():
    store = Store()
    b = store.broker()
    _, token = b.apis.delegation_tokens.create("User:alice", "User:alice", [], -1)
    b.stop()
    b.shutdown()
    store.config = dataclasses.replace(store.config, delegation_token_secret_key="")
    b = store.broker()
    manager = b.apis.delegation_tokens
    assert not manager.enabled and manager.tokens() == []
    assert manager.create("User:alice", "User:alice", [], -1) == \
        (ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, None)
    # Still in a snapshot: a later start with the secret finds it again.
    assert [r["tokenId"] for _, r in manager.snapshot_records()] == [token.info.token_id]
    b.stop()
    b.shutdown()


def test_the_hmac_is_hmac_sha512_of_the_id_under_the_secret():
    token_id = new_token_id()
    assert len(token_id) == 22 and not token_id.startswith("-")
    # RFC 4231 test case 2 (HMAC-SHA-512, key "Jefe").
    assert create_hmac("what do ya want for nothing?", "Jefe").hex() == (
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
        "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737")


# -- which connections may ask for tokens (KafkaApis.allowTokenRequests) ----------------


@pytest.mark.parametrize("protocol,principal,allowed", [
    ("PLAINTEXT", "User:ANONYMOUS", False),
    ("SSL", "User:ANONYMOUS", False),            # 1-way TLS: no client certificate
    ("SSL", "User:CN=alice,O=example", True),    # a client certificate
    ("SASL_PLAINTEXT", "User:alice", True),
    ("SASL_SSL", "User:alice", True),
])
def test_token_requests_need_an_authenticated_connection(protocol, principal, allowed):
    b = Store().broker()
    b.security_protocol, b.principal = protocol, principal
    created = b.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, renewers=[], max_lifetime_ms=-1)
    described = b.call(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, owners=None)
    expected = ErrorCode.NONE if allowed else ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    assert (created["error_code"], described["error_code"]) == (expected, expected)
    if allowed:
        assert created["principal_name"] == principal.split(":", 1)[1]
        assert [t["token_id"] for t in described["tokens"]] == [created["token_id"]]
    b.stop()
    b.shutdown()
