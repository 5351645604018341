"""SCRAM server side: the two client messages in, the two server messages out
(Kafka's ScramSaslServer and ScramMessages).

::

    client-first  n,,n=alice,r=<cnonce>
    server-first  r=<cnonce><snonce>,s=<base64 salt>,i=<iterations>
    client-final  c=biws,r=<cnonce><snonce>,p=<base64 ClientProof>
    server-final  v=<base64 ServerSignature>

The server checks ClientProof by recomputing ClientKey = ClientProof XOR
HMAC(StoredKey, AuthMessage) and comparing H(ClientKey) with StoredKey.
As in Kafka, an unknown user, a wrong proof or a malformed message is a
SaslError (the client only learns that its credentials were invalid); a
different authorization id is a SaslAuthenticationError.  Kafka's GS2 header
is "n,," or "n,a=<authzid>,": no channel binding.

Delegation tokens (KIP-48): a client-first message with the extension
``tokenauth=true`` names a token id as its user; the credential checked is
the token's (the SCRAM form of its base64 HMAC), and the session's
authorization id is the token's owner, with :attr:`token_authenticated` set.
An unknown or expired token fails as an unknown user does.  Other extensions
are ignored, as Kafka ignores them.
"""

from __future__ import annotations

import base64
import binascii
import re
import time
from typing import Callable

from kafka_net.security import scram
from kafka_net.security.delegation_token import DelegationTokenCache, split_principal
from kafka_net.security.errors import SaslAuthenticationError, SaslError

# Kafka's ScramMessages patterns (RFC 5802 section 7).
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_BASE64 = r"[A-Za-z0-9+/]*={0,2}"
_EXTENSIONS = r"(?:,[A-Za-z]+=[\x01-\x2b\x2d-\x7f]+)*"
CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,"
    rf"(?P<bare>n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})"
    rf"(?P<extensions>{_EXTENSIONS}))")
CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE})"
    rf"{_EXTENSIONS}),p=(?P<proof>{_BASE64})")

# The credential lookup: (username, mechanism name) -> ScramCredential or None.
CredentialLookup = Callable[[str, str], "scram.ScramCredential | None"]


TOKEN_AUTH = "tokenauth"   # ScramLoginModule.TOKEN_AUTH_CONFIG


class ScramSaslServer:
    def __init__(self, mechanism: scram.ScramMechanism, credentials: CredentialLookup,
                 tokens: DelegationTokenCache | None = None) -> None:
        self.mechanism = mechanism.mechanism_name
        self._scram = mechanism
        self._formatter = scram.ScramFormatter(mechanism)
        self._credentials = credentials
        self._state = "RECEIVE_CLIENT_FIRST_MESSAGE"
        self.authorization_id: str | None = None
        self._credential: scram.ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._tokens = tokens
        # Set when the client logged in with a delegation token: the principal is
        # the token's owner, and the connection may not ask for tokens.
        self.token_authenticated = False
        self.token_expiry_timestamp: int | None = None

    def is_complete(self) -> bool:
        return self._state == "COMPLETE"

    def evaluate_response(self, response: bytes) -> bytes:
        try:
            if self._state == "RECEIVE_CLIENT_FIRST_MESSAGE":
                answer = self._client_first(response)
                self._state = "RECEIVE_CLIENT_FINAL_MESSAGE"
                return answer
            if self._state == "RECEIVE_CLIENT_FINAL_MESSAGE":
                answer = self._client_final(response)
                self._state = "COMPLETE"
                return answer
            raise SaslError(f"Unexpected challenge in Sasl server state {self._state}")
        except SaslError:
            self._state = "FAILED"
            raise

    def _client_first(self, response: bytes) -> bytes:
        m = CLIENT_FIRST.fullmatch(_text(response))
        if m is None:
            raise SaslError("Invalid SCRAM client first message format")
        user = scram.username(m["saslname"])
        if _extensions(m["extensions"]).get(TOKEN_AUTH, "").lower() == "true":
            credential, authorization_id = self._token_credential(user)
        else:
            credential, authorization_id = self._credentials(user, self.mechanism), user
        if credential is None:
            raise SaslError("Authentication failed: Invalid user credentials")
        if m["authzid"] and scram.username(m["authzid"]) != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username")
        if credential.iterations < self._scram.min_iterations:
            raise SaslError(f"Iterations {credential.iterations} is less than the minimum "
                            f"{self._scram.min_iterations} for {self.mechanism}")
        self.authorization_id, self._credential = authorization_id, credential
        self._client_first_bare = m["bare"]
        self._nonce = m["nonce"] + scram.secure_random_string()
        self._server_first = (f"r={self._nonce},s={_b64(credential.salt)},"
                              f"i={credential.iterations}")
        return self._server_first.encode()

    def _token_credential(self, token_id: str):
        """(the token's SCRAM credential, its owner's name) for a ``tokenauth`` login."""
        token = None if self._tokens is None else self._tokens.token(token_id)
        if token is None:
            raise SaslError(f"Token Authentication failed: Invalid tokenId : {token_id}")
        if token.info.expired(int(time.time() * 1000)):
            # Kafka's expiry task removes it within delegation.token.expiry.check.
            # interval.ms; until then it must not log in either.
            raise SaslError(f"Token Authentication failed: expired tokenId : {token_id}")
        self.token_authenticated = True
        self.token_expiry_timestamp = token.info.expiry_timestamp
        return (self._tokens.credential(token_id, self.mechanism),
                split_principal(token.info.owner)[1])

    def _client_final(self, response: bytes) -> bytes:
        m = CLIENT_FINAL.fullmatch(_text(response))
        if m is None:
            raise SaslError("Authentication failed: Invalid client final message")
        # Kafka checks only that the nonce ends with the server's (librdkafka 2.0
        # sends the client part twice), and does not check the channel binding.
        if not m["nonce"].endswith(self._nonce):
            raise SaslError("Invalid client nonce in the final client message.")
        auth_message = ",".join((self._client_first_bare, self._server_first,
                                 m["without_proof"])).encode()
        self._verify_client_proof(_unb64(m["proof"]), auth_message)
        signature = self._formatter.server_signature(self._credential.server_key, auth_message)
        return f"v={_b64(signature)}".encode()

    def _verify_client_proof(self, proof: bytes, auth_message: bytes) -> None:
        f, credential = self._formatter, self._credential
        signature = f.client_signature(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslError("Invalid client credentials")
        client_key = scram.xor(signature, proof)
        import hmac   # here: it loads OpenSSL, which only a SCRAM login needs (issue 28)
        if not hmac.compare_digest(f.hash(client_key), credential.stored_key):
            raise SaslError("Invalid client credentials")


def _extensions(text: str) -> dict[str, str]:
    """``,tokenauth=true,...`` -> {"tokenauth": "true", ...} (Kafka's ScramExtensions)."""
    return dict(part.split("=", 1) for part in text.split(",") if part)


def _text(response: bytes) -> str:
    try:
        return response.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslError("Invalid SCRAM message: not UTF-8") from None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SaslError("Invalid base64 in SCRAM message") from None
