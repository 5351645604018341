"""SCRAM server side against RFC 7677's SCRAM-SHA-256 example, a client written
from RFC 5802, and Hypothesis-made messages."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_net.security import scram, scram_server
from kafka_net.security.errors import SaslAuthenticationError, SaslError
from kafka_net.security.scram_server import ScramSaslServer

# RFC 7677 section 3.
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SERVER_FIRST = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_server(monkeypatch, password: str = "pencil") -> ScramSaslServer:
    monkeypatch.setattr(scram_server.scram, "secure_random_string", lambda: SERVER_NONCE)
    credential = scram.ScramFormatter(scram.SCRAM_SHA_256).generate_credential(
        password, 4096, SALT)
    return ScramSaslServer(scram.SCRAM_SHA_256,
                           lambda user, mech: credential if user == "user" else None)


def test_rfc_7677_exchange(monkeypatch):
    server = rfc_server(monkeypatch)
    assert server.evaluate_response(CLIENT_FIRST) == SERVER_FIRST
    assert not server.is_complete()
    assert server.evaluate_response(CLIENT_FINAL) == SERVER_FINAL
    assert server.is_complete() and server.authorization_id == "user"


def test_a_wrong_password_fails_the_proof(monkeypatch):
    server = rfc_server(monkeypatch, password="not-pencil")
    server.evaluate_response(CLIENT_FIRST)
    with pytest.raises(SaslError, match="Invalid client credentials"):
        server.evaluate_response(CLIENT_FINAL)
    assert not server.is_complete()


def test_an_unknown_user_is_a_sasl_error_not_a_message_for_the_client(monkeypatch):
    server = rfc_server(monkeypatch)
    with pytest.raises(SaslError) as info:
        server.evaluate_response(b"n,,n=someone,r=abc")
    assert not isinstance(info.value, SaslAuthenticationError)


def test_a_different_authorization_id_is_refused(monkeypatch):
    server = rfc_server(monkeypatch)
    with pytest.raises(SaslAuthenticationError, match="authorization id that is different"):
        server.evaluate_response(b"n,a=admin,n=user,r=abc")


def test_a_nonce_that_does_not_end_with_the_servers_fails(monkeypatch):
    server = rfc_server(monkeypatch)
    server.evaluate_response(CLIENT_FIRST)
    with pytest.raises(SaslError, match="Invalid client nonce"):
        server.evaluate_response(CLIENT_FINAL.replace(b"k0,p=", b"k1,p="))


def test_nonces_are_kafkas_base_32():
    nonces = {scram.secure_random_string() for _ in range(50)}
    assert len(nonces) == 50
    assert all(set(n) <= set("0123456789abcdefghijklmnopqrstuv") for n in nonces)


@pytest.mark.parametrize("name, escaped", [("a,b", "a=2Cb"), ("a=b", "a=3Db"), ("ab", "ab")])
def test_sasl_names_escape_comma_and_equals(name, escaped):
    assert scram.sasl_name(name) == escaped and scram.username(escaped) == name


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_client_first_bytes_give_an_answer_or_a_sasl_error(data):
    server = ScramSaslServer(scram.SCRAM_SHA_512, lambda user, mech: None)
    try:
        server.evaluate_response(data)
    except SaslError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_client_final_bytes_give_an_answer_or_a_sasl_error(data):
    credential = scram.ScramFormatter(scram.SCRAM_SHA_256).generate_credential("p", 4096, b"s")
    server = ScramSaslServer(scram.SCRAM_SHA_256, lambda user, mech: credential)
    server.evaluate_response(b"n,,n=u,r=abc")
    with pytest.raises(SaslError):
        server.evaluate_response(data)    # a random proof never verifies
    assert not server.is_complete()


@settings(max_examples=50, deadline=None)
@given(user=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=1,
                    max_size=20),
       password=st.text(max_size=20))
def test_a_client_made_from_the_rfc_logs_in_with_any_name_and_password(user, password):
    mech = scram.SCRAM_SHA_512
    f = scram.ScramFormatter(mech)
    credential = f.generate_credential(password, 4096)
    server = ScramSaslServer(mech, lambda u, m: credential if u == user else None)
    first_bare = f"n={scram.sasl_name(user)},r=clientnonce"
    server_first = server.evaluate_response(f"n,,{first_bare}".encode()).decode()
    fields = dict(p.split("=", 1) for p in server_first.split(","))
    salted = f.salted_password(password, base64.b64decode(fields["s"]), int(fields["i"]))
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{first_bare},{server_first},{without_proof}".encode()
    proof = base64.b64encode(f.client_proof(salted, auth)).decode()
    final = server.evaluate_response(f"{without_proof},p={proof}".encode())
    assert final == b"v=" + base64.b64encode(f.server_signature(credential.server_key, auth))
    assert server.is_complete() and server.authorization_id == user
