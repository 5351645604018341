"""SASL/PLAIN server side (RFC 4616; Kafka's PlainSaslServer).

The client sends one token ``authzid NUL authcid NUL passwd``.  The users
and passwords are the ``user_<name>="<password>"`` options of the listener's
PlainLoginModule JAAS entry (Kafka's PlainServerCallbackHandler).  Every
failure is a SaslAuthenticationError with Kafka's message, shown to the
client as is.
"""

from __future__ import annotations

from typing import Mapping

from kafka_net.security.errors import SaslAuthenticationError

MECHANISM = "PLAIN"
_USER_PREFIX = "user_"


def users_from_jaas_options(options: Mapping[str, str]) -> dict[str, str]:
    """{username: password} from PlainLoginModule options (``user_alice=...``)."""
    return {key[len(_USER_PREFIX):]: value for key, value in options.items()
            if key.startswith(_USER_PREFIX)}


class PlainSaslServer:
    mechanism = MECHANISM

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.authorization_id: str | None = None
        self._complete = False

    def is_complete(self) -> bool:
        return self._complete

    def evaluate_response(self, response: bytes) -> bytes:
        if self._complete:
            raise SaslAuthenticationError("Authentication exchange has already completed")
        authzid, username, password = _extract_tokens(response.decode("utf-8", "replace"))
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        # compare_digest: the time taken does not tell how much of the password matched.
        # (hmac imported here: it loads OpenSSL, which a start without a SASL PLAIN
        # login need not pay for; issue 28.)
        import hmac
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username")
        self.authorization_id = username
        self._complete = True
        return b""


def _extract_tokens(text: str) -> list[str]:
    # Kafka's extractTokens stops after the fourth token, hence "got 4" at most.
    tokens = text.split("\0", 3)
    if len(tokens) != 3:
        raise SaslAuthenticationError(
            f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    return tokens
