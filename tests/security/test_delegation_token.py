"""The SCRAM server's delegation token login (the ``tokenauth`` extension) and
the DelegationTokenCache, without sockets."""

from __future__ import annotations

import base64

import pytest

from kafka_net.security import scram
from kafka_net.security.delegation_token import (
    DelegationToken, DelegationTokenCache, TokenInformation, create_hmac, hmac_text)
from kafka_net.security.errors import SaslError
from kafka_net.security.scram_server import ScramSaslServer

FAR = 1 << 62   # a timestamp no clock reaches


def token(token_id: str = "tok", expiry: int = FAR) -> DelegationToken:
    info = TokenInformation(token_id, "User:alice", "User:alice", ("User:bob",), 0, FAR, expiry)
    return DelegationToken(info, create_hmac(token_id, "secret"))


def login(server: ScramSaslServer, user: str, password: str, extensions: str) -> bytes:
    f = scram.ScramFormatter(scram.SCRAM_SHA_256)
    first_bare = f"n={user},r=clientnonce{extensions}"
    server_first = server.evaluate_response(f"n,,{first_bare}".encode()).decode()
    fields = dict(p.split("=", 1) for p in server_first.split(","))
    salted = f.salted_password(password, base64.b64decode(fields["s"]), int(fields["i"]))
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{first_bare},{server_first},{without_proof}".encode()
    proof = base64.b64encode(f.client_proof(salted, auth)).decode()
    return server.evaluate_response(f"{without_proof},p={proof}".encode())


def server_with(*tokens: DelegationToken) -> ScramSaslServer:
    cache = DelegationTokenCache()
    for t in tokens:
        cache.update(t)
    return ScramSaslServer(scram.SCRAM_SHA_256, lambda user, mech: None, cache)


@pytest.mark.parametrize("extensions", [",tokenauth=true", ",tokenauth=TRUE",
                                        ",other=x,tokenauth=true"])
def test_a_token_login_is_its_owner_and_token_authenticated(extensions):
    t = token()
    server = server_with(t)
    login(server, "tok", hmac_text(t.hmac), extensions)
    assert server.is_complete() and server.authorization_id == "alice"
    assert server.token_authenticated and server.token_expiry_timestamp == FAR


def test_without_the_extension_a_token_id_is_just_an_unknown_user():
    t = token()
    with pytest.raises(SaslError):
        login(server_with(t), "tok", hmac_text(t.hmac), "")


@pytest.mark.parametrize("case", ["unknown", "expired", "wrong password"])
def test_unknown_expired_or_wrongly_signed_tokens_fail(case):
    t = token(expiry=1 if case == "expired" else FAR)
    server = server_with(t)
    user = "other" if case == "unknown" else "tok"
    password = "nope" if case == "wrong password" else hmac_text(t.hmac)
    with pytest.raises(SaslError):
        login(server, user, password, ",tokenauth=true")
    assert not server.is_complete()


def test_the_cache_finds_tokens_by_hmac_and_forgets_removed_ones():
    cache = DelegationTokenCache()
    t = token()
    cache.update(t)
    credential = cache.credential("tok", "SCRAM-SHA-512")
    assert credential.iterations == scram.SCRAM_SHA_512.min_iterations
    renewed = DelegationToken(TokenInformation("tok", "User:alice", "User:alice", (), 0, FAR, 5),
                              t.hmac)
    cache.update(renewed)
    assert cache.token_for_hmac(t.hmac) == renewed
    assert cache.credential("tok", "SCRAM-SHA-512") is credential   # not salted again
    assert cache.remove("tok") == renewed
    assert cache.token_for_hmac(t.hmac) is None and cache.credential("tok", "SCRAM-SHA-256") is None
