"""Delegation tokens (KIP-48) over raw sockets: Create/Renew/Expire/Describe
DelegationToken, the SCRAM ``tokenauth=true`` login, the expiry check and a
restart over a durable metadata log.

No installed client library (confluent-kafka, kafka-python, aiokafka, kafkajs)
implements the delegation token APIs or the SCRAM token extension, so these raw
protocol tests stand in for real clients: they send what Kafka's AdminClient
and ScramSaslClient send (the SCRAM client here is tests/integration/
sasl_support.py's, with the extension appended to its client-first message).

The broker: a SASL_PLAINTEXT listener (PLAIN users admin, alice, carol; SCRAM
user bob) and a PLAINTEXT one, StandardAuthorizer with User:admin a super
user, and a token secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch
from tests.integration.sasl_support import plain_login, sasl_config, sasl_port, scram_login
from tests.support import RawClient, produce_body, request_body, running_server, wait_until

SECRET = "token-secret"
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "carol": "carol-secret"}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" '
        + " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items()) + ";")
CREATE, RENEW, EXPIRE, DESCRIBE = 38, 39, 40, 41
HOUR_MS = 3_600_000


def token_config(**overrides: str):
    props = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
             "authorizer.class.name": STANDARD, "super.users": "User:admin",
             "delegation.token.secret.key": SECRET,
             "delegation.token.expiry.check.interval.ms": "100"}
    props.update(overrides)
    return sasl_config(**props)


@pytest.fixture(scope="module")
def server():
    with running_server(token_config()) as s:
        yield s


def login(server, user: str) -> RawClient:
    client = RawClient(sasl_port(server))
    if user == "bob":
        answer = scram_login(client, "SCRAM-SHA-256", "bob", "bob-secret")
    else:
        answer = plain_login(client, user, PASSWORDS[user])
    assert answer["error_code"] == 0, answer
    return client


def token_login(server, token_id: str, token_hmac: bytes, mechanism="SCRAM-SHA-256"):
    """(the connection, the final SaslAuthenticate answer) of a token login."""
    client = RawClient(sasl_port(server))
    answer = scram_login(client, mechanism, token_id, base64.b64encode(token_hmac).decode(),
                         extensions=",tokenauth=true")
    return client, answer


def create(client, renewers=(), max_lifetime_ms=-1, owner=None, version=3) -> dict:
    body = {"owner_principal_type": None, "owner_principal_name": None,
            "renewers": [{"principal_type": t, "principal_name": n}
                         for t, n in (r.split(":", 1) for r in renewers)],
            "max_lifetime_ms": max_lifetime_ms}
    if owner is not None:
        body["owner_principal_type"], body["owner_principal_name"] = owner.split(":", 1)
    return client.call(CREATE, version, body)


def describe(client, owners=None, version=3) -> dict:
    if owners is not None:
        owners = [dict(zip(("principal_type", "principal_name"), o.split(":", 1)))
                  for o in owners]
    return client.call(DESCRIBE, version, {"owners": owners})


def described_ids(client, owners=None) -> set[str]:
    answer = describe(client, owners)
    assert answer["error_code"] == 0, answer
    return {t["token_id"] for t in answer["tokens"]}


def renew(client, token_hmac: bytes, period: int) -> dict:
    return client.call(RENEW, 2, {"hmac": token_hmac, "renew_period_ms": period})


def expire(client, token_hmac: bytes, period: int) -> dict:
    return client.call(EXPIRE, 2, {"hmac": token_hmac, "expiry_time_period_ms": period})


def create_acl(admin, resource_type: int, name: str, principal: str, operation: int) -> None:
    answer = admin.call(ApiKey.CREATE_ACLS, 3, {"creations": [{
        "resource_type": resource_type, "resource_name": name, "resource_pattern_type": 3,
        "principal": principal, "host": "*", "operation": operation, "permission_type": 3}]})
    assert answer["results"][0]["error_code"] == 0, answer


def created(client, **kwargs) -> dict:
    answer = create(client, **kwargs)
    assert answer["error_code"] == 0, answer
    return answer


# -- ApiVersions ------------------------------------------------------------------------


def test_the_token_apis_are_advertised_at_kafka_4_2s_versions(server):
    with RawClient(sasl_port(server)) as client:
        answer = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t",
                                                      "client_software_version": "1"})
    served = {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}
    assert [served[k] for k in (CREATE, RENEW, EXPIRE, DESCRIBE)] == \
        [(1, 3), (1, 2), (1, 2), (1, 3)]


# -- create and describe ------------------------------------------------------------------


def test_create_answers_a_token_signed_with_the_secret(server):
    with login(server, "alice") as alice:
        answer = created(alice, renewers=["User:bob"], max_lifetime_ms=HOUR_MS)
    assert (answer["principal_type"], answer["principal_name"]) == ("User", "alice")
    assert (answer["token_requester_principal_type"],
            answer["token_requester_principal_name"]) == ("User", "alice")
    assert answer["hmac"] == hmac.new(SECRET.encode(), answer["token_id"].encode(),
                                      hashlib.sha512).digest()
    # max_lifetime_ms below the broker's bound is taken; the expiry (a day by
    # default) is capped at the max timestamp.
    assert answer["max_timestamp_ms"] == answer["issue_timestamp_ms"] + HOUR_MS
    assert answer["expiry_timestamp_ms"] == answer["max_timestamp_ms"]


def test_the_max_lifetime_is_bounded_by_the_broker(server):
    with login(server, "alice") as alice:
        answer = created(alice, max_lifetime_ms=30 * 24 * HOUR_MS)
    assert answer["max_timestamp_ms"] == answer["issue_timestamp_ms"] + 604_800_000
    assert answer["expiry_timestamp_ms"] == answer["issue_timestamp_ms"] + 86_400_000


def test_describe_shows_owners_and_renewers_their_tokens_and_others_nothing(server):
    with login(server, "alice") as alice, login(server, "bob") as bob, \
            login(server, "carol") as carol, login(server, "admin") as admin:
        token = created(alice, renewers=["User:bob"])
        token_id = token["token_id"]
        assert token_id in described_ids(alice)
        assert token_id in described_ids(bob)            # a renewer
        assert token_id in described_ids(admin)          # a super user
        assert token_id not in described_ids(carol)
        # The owners filter: owner or renewer among them; an empty list: nothing.
        assert token_id in described_ids(alice, ["User:bob"])
        assert token_id not in described_ids(alice, ["User:carol"])
        assert described_ids(alice, []) == set()
        listed = next(t for t in describe(alice)["tokens"] if t["token_id"] == token_id)
        assert listed["hmac"] == token["hmac"]
        assert listed["renewers"] == [{"principal_type": "User", "principal_name": "bob"}]
        assert (listed["principal_name"], listed["token_requester_principal_name"]) == \
            ("alice", "alice")


def test_describe_tokens_acls_let_others_see_tokens(server):
    with login(server, "alice") as alice, login(server, "carol") as carol, \
            login(server, "admin") as admin:
        token_id = created(alice)["token_id"]
        other_id = created(admin)["token_id"]
        assert {token_id, other_id}.isdisjoint(described_ids(carol))
        # DESCRIBE (8) on the DelegationToken resource (6): that token only.
        create_acl(admin, 6, other_id, "User:carol", 8)
        assert other_id in described_ids(carol) and token_id not in described_ids(carol)
        # DESCRIBE_TOKENS (14) on the User resource (7) "User:alice": alice's tokens.
        create_acl(admin, 7, "User:alice", "User:carol", 14)
        assert {token_id, other_id} <= described_ids(carol)


def test_create_for_another_owner_needs_create_tokens_on_that_user(server):
    with login(server, "carol") as carol, login(server, "admin") as admin:
        refused = create(carol, owner="User:bob")
        assert refused["error_code"] == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
        assert (refused["principal_name"], refused["token_requester_principal_name"]) == \
            ("bob", "carol")
        create_acl(admin, 7, "User:bob", "User:carol", 13)   # CREATE_TOKENS
        answer = created(carol, owner="User:bob")
        assert (answer["principal_name"], answer["token_requester_principal_name"]) == \
            ("bob", "carol")
    with login(server, "bob") as bob:
        # The owner renews and sees it; the requester is in its description.
        listed = [t for t in describe(bob)["tokens"] if t["token_id"] == answer["token_id"]]
        assert listed[0]["token_requester_principal_name"] == "carol"
        assert renew(bob, answer["hmac"], HOUR_MS)["error_code"] == 0


def test_a_renewer_of_another_type_is_an_invalid_principal_type(server):
    with login(server, "alice") as alice:
        answer = create(alice, renewers=["User:bob", "Group:ops"])
        assert answer["error_code"] == ErrorCode.INVALID_PRINCIPAL_TYPE
        assert answer["token_id"] == "" and answer["expiry_timestamp_ms"] == -1
        nameless_type = alice.call(CREATE, 3, {
            "owner_principal_type": None, "owner_principal_name": "bob", "renewers": [],
            "max_lifetime_ms": -1})
        assert nameless_type["error_code"] == ErrorCode.INVALID_PRINCIPAL_TYPE


# -- renew and expire ---------------------------------------------------------------------


def test_renew_by_a_renewer_bounded_by_the_max_timestamp(server):
    with login(server, "alice") as alice, login(server, "bob") as bob, \
            login(server, "carol") as carol:
        token = created(alice, renewers=["User:bob"], max_lifetime_ms=HOUR_MS)
        before = int(time.time() * 1000)
        answer = renew(bob, token["hmac"], 60_000)
        assert answer["error_code"] == 0
        assert before + 60_000 <= answer["expiry_timestamp_ms"] <= int(time.time() * 1000) + 60_000
        # Beyond the max lifetime: capped at the max timestamp.
        answer = renew(alice, token["hmac"], 10 * HOUR_MS)
        assert answer == {"error_code": 0, "expiry_timestamp_ms": token["max_timestamp_ms"],
                          "throttle_time_ms": 0}
        listed = next(t for t in describe(alice)["tokens"]
                      if t["token_id"] == token["token_id"])
        assert listed["expiry_timestamp"] == token["max_timestamp_ms"]
        assert renew(carol, token["hmac"], 1000)["error_code"] == \
            ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
        assert renew(alice, b"not a token", 1000) == {
            "error_code": ErrorCode.DELEGATION_TOKEN_NOT_FOUND, "expiry_timestamp_ms": 0,
            "throttle_time_ms": 0}


def test_expire_now_removes_the_token(server):
    with login(server, "alice") as alice, login(server, "carol") as carol:
        token = created(alice)
        assert expire(carol, token["hmac"], -1)["error_code"] == \
            ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
        answer = expire(alice, token["hmac"], -1)
        assert answer["error_code"] == 0 and answer["expiry_timestamp_ms"] > 0
        assert token["token_id"] not in described_ids(alice)
        assert renew(alice, token["hmac"], 1000)["error_code"] == \
            ErrorCode.DELEGATION_TOKEN_NOT_FOUND
        assert expire(alice, token["hmac"], -1)["error_code"] == \
            ErrorCode.DELEGATION_TOKEN_NOT_FOUND


def test_an_expired_token_cannot_be_renewed_and_the_expiry_check_removes_it(server):
    with login(server, "alice") as alice:
        token = created(alice)
        answer = expire(alice, token["hmac"], 0)      # expires now, removed later
        assert answer["error_code"] == 0
        # The expiry check (every 100 ms here) removes it once its expiry passed.
        assert wait_until(lambda: token["token_id"] not in described_ids(alice))
        assert renew(alice, token["hmac"], 1000)["error_code"] == \
            ErrorCode.DELEGATION_TOKEN_NOT_FOUND


def test_expire_and_renew_of_an_expired_token_that_is_still_held():
    # A broker whose expiry check runs too rarely to remove it during this test.
    with running_server(token_config(**{"delegation.token.expiry.check.interval.ms":
                                        "3600000"})) as quiet, login(quiet, "alice") as alice:
        token = created(alice)
        expired = expire(alice, token["hmac"], 0)
        assert expired["error_code"] == 0
        # Expired once the clock is past its expiry (the controller's test: expiry < now).
        assert wait_until(lambda: int(time.time() * 1000) > expired["expiry_timestamp_ms"] + 1)
        assert renew(alice, token["hmac"], 1000)["error_code"] == \
            ErrorCode.DELEGATION_TOKEN_EXPIRED
        assert expire(alice, token["hmac"], 1000)["error_code"] == \
            ErrorCode.DELEGATION_TOKEN_EXPIRED
        failed_client, answer = token_login(quiet, token["token_id"], token["hmac"])
        failed_client.close()
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        # Expiring it at once still works: the token goes.
        assert expire(alice, token["hmac"], -1)["error_code"] == 0
        assert describe(alice)["tokens"] == []


# -- where token requests are refused -----------------------------------------------------


def all_four(client) -> list[int]:
    return [create(client)["error_code"], renew(client, b"x", 1)["error_code"],
            expire(client, b"x", 1)["error_code"], describe(client)["error_code"]]


def test_plaintext_connections_may_not_ask_for_tokens(server):
    with RawClient(server.bound_port("PLAINTEXT")) as client:
        assert all_four(client) == [ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED] * 4
        answer = renew(client, b"x", 1)
    assert answer["expiry_timestamp_ms"] == -1


def test_without_a_secret_tokens_are_disabled():
    config = sasl_config(**{"listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS})
    with running_server(config) as plain, login(plain, "alice") as alice:
        assert all_four(alice) == [ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED] * 4


# -- SCRAM login with a token -------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_login_acts_as_its_owner_and_may_not_ask_for_tokens(server, mechanism):
    topic = f"token-topic-{mechanism[-3:]}"
    with login(server, "admin") as admin, login(server, "alice") as alice, \
            login(server, "carol") as carol:
        answer = admin.call(ApiKey.CREATE_TOPICS, 7, request_body(
            ApiKey.CREATE_TOPICS, 7, topics=[{"name": topic, "num_partitions": 1,
                                              "replication_factor": 1, "assignments": [],
                                              "configs": []}], timeout_ms=10_000))
        assert answer["topics"][0]["error_code"] == 0, answer
        create_acl(admin, 2, topic, "User:alice", 4)     # WRITE on the topic for alice
        alices = created(alice)
        carols = created(carol)
    client, answer = token_login(server, alices["token_id"], alices["hmac"], mechanism)
    with client:
        assert answer["error_code"] == 0, answer
        # The session ends at the token's expiry at the latest (KIP-368's lifetime).
        assert 0 < answer["session_lifetime_ms"] <= \
            alices["expiry_timestamp_ms"] - alices["issue_timestamp_ms"]
        produced = client.call(ApiKey.PRODUCE, 9, produce_body(
            topic, 0, build_batch([(b"k", b"sent with a token")])))
        assert produced["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert all_four(client) == [ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED] * 4
    # carol's token acts as carol: no WRITE.
    client, answer = token_login(server, carols["token_id"], carols["hmac"], mechanism)
    with client:
        assert answer["error_code"] == 0, answer
        refused = client.call(ApiKey.PRODUCE, 9, produce_body(
            topic, 0, build_batch([(b"k", b"v")])))
        assert refused["responses"][0]["partition_responses"][0]["error_code"] == \
            ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_a_wrong_unknown_or_removed_token_fails_like_a_bad_password(server):
    with login(server, "alice") as alice:
        token = created(alice)
        attempts = [(token["token_id"], b"wrong hmac"), ("no-such-token", token["hmac"])]
        # Without the extension the token id is just an unknown user.
        client = RawClient(sasl_port(server))
        answer = scram_login(client, "SCRAM-SHA-256", token["token_id"],
                             base64.b64encode(token["hmac"]).decode())
        client.close()
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        for token_id, token_hmac in attempts:
            client, answer = token_login(server, token_id, token_hmac)
            client.close()
            assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert expire(alice, token["hmac"], -1)["error_code"] == 0
    client, answer = token_login(server, token["token_id"], token["hmac"])
    client.close()
    assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED


# -- persistence ----------------------------------------------------------------------------


def test_tokens_survive_a_restart_over_a_durable_metadata_log(tmp_path):
    config = token_config(**{"log.store": "disk", "log.dirs": str(tmp_path)})
    with running_server(config) as first, login(first, "alice") as alice:
        kept = created(alice, renewers=["User:bob"])
        gone = created(alice)
        assert renew(alice, kept["hmac"], 60_000)["error_code"] == 0
        renewed = next(t for t in describe(alice)["tokens"] if t["token_id"] == kept["token_id"])
        assert expire(alice, gone["hmac"], -1)["error_code"] == 0
    with running_server(config) as second, login(second, "alice") as alice:
        listed = describe(alice)["tokens"]
        assert [t["token_id"] for t in listed] == [kept["token_id"]]
        assert listed[0] == renewed
        client, answer = token_login(second, kept["token_id"], kept["hmac"])
        client.close()
        assert answer["error_code"] == 0, answer


def test_a_restart_with_another_secret_leaves_the_tokens_unusable(tmp_path):
    config = token_config(**{"log.store": "disk", "log.dirs": str(tmp_path)})
    with running_server(config) as first, login(first, "alice") as alice:
        token = created(alice)
    other = token_config(**{"log.store": "disk", "log.dirs": str(tmp_path),
                            "delegation.token.master.key": "another-secret",
                            "delegation.token.secret.key": "another-secret"})
    with running_server(other) as second, login(second, "alice") as alice:
        # Kafka writes no HMAC down: the broker recomputes it with its own secret.
        listed = describe(alice)["tokens"]
        assert [t["token_id"] for t in listed] == [token["token_id"]]
        assert listed[0]["hmac"] != token["hmac"]
        client, answer = token_login(second, token["token_id"], token["hmac"])
        client.close()
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
