"""SASL/PLAIN with Kafka's PlainSaslServer messages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_net.security.errors import SaslAuthenticationError
from kafka_net.security.plain import PlainSaslServer, users_from_jaas_options

USERS = {"alice": "alice-secret"}


def evaluate(token: bytes) -> PlainSaslServer:
    server = PlainSaslServer(USERS)
    assert server.evaluate_response(token) == b""
    return server


def test_a_good_login():
    server = evaluate(b"\0alice\0alice-secret")
    assert server.is_complete() and server.authorization_id == "alice"
    assert evaluate(b"alice\0alice\0alice-secret").authorization_id == "alice"


@pytest.mark.parametrize("token, message", [
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0bob\0alice-secret", "Authentication failed: Invalid username or password"),
    (b"\0\0x", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"admin\0alice\0alice-secret", "Authentication failed: Client requested an "
                                    "authorization id that is different from username"),
    (b"alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\0a\0b\0c\0d", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
])
def test_kafkas_messages(token, message):
    server = PlainSaslServer(USERS)
    with pytest.raises(SaslAuthenticationError) as info:
        server.evaluate_response(token)
    assert str(info.value) == message
    assert not server.is_complete()


def test_users_come_from_user_options_only():
    assert users_from_jaas_options({"username": "admin", "password": "x",
                                    "user_admin": "x", "user_a_b": "y"}) == {
        "admin": "x", "a_b": "y"}


@given(st.binary(max_size=100))
def test_any_token_completes_only_with_the_right_password(token):
    server = PlainSaslServer(USERS)
    try:
        server.evaluate_response(token)
    except SaslAuthenticationError:
        assert not server.is_complete()
    else:
        assert token.split(b"\0")[1:] == [b"alice", b"alice-secret"]
