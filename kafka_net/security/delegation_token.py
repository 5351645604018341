"""Delegation tokens (KIP-48): Kafka's TokenInformation, DelegationTokenCache
and the token HMAC.

A token is an id (a random Kafka ``Uuid`` string) and its HMAC-SHA512 under
the broker's ``delegation.token.secret.key``.  The client authenticates with
SASL/SCRAM as username = token id, password = base64(HMAC), adding the SCRAM
extension ``tokenauth=true`` to its client-first message; the session's
principal is then the token's owner.  So the broker keeps, per token, a SCRAM
credential of the base64 HMAC for each SCRAM mechanism (at the mechanism's
minimum iterations, as Kafka's ``DelegationTokenManager.updateCache`` does),
next to the token's information.

One :class:`DelegationTokenCache` per broker (it hangs off the CredentialCache,
as Kafka's CredentialProvider holds both): the network threads look tokens up
while authenticating, the handler threads and the expiry task change them
through the metadata log's replay.  A lock guards it; the objects handed out
are frozen.
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass

from kafka_net.security import scram

# hashlib, hmac and secrets are imported where they are used, as in scram.py: they
# load OpenSSL's libcrypto, which a start without delegation tokens need not pay for.

USER_TYPE = "User"   # KafkaPrincipal.USER_TYPE: the only type a token owner or renewer has


def create_hmac(token_id: str, secret_key: str) -> bytes:
    """HmacSHA512 of the id's UTF-8 bytes, keyed by the secret's UTF-8 bytes
    (``DelegationTokenManager.createHmac``)."""
    import hashlib
    import hmac
    return hmac.new(secret_key.encode("utf-8"), token_id.encode("utf-8"),
                    hashlib.sha512).digest()


def hmac_text(token_hmac: bytes) -> str:
    """The HMAC as the SCRAM password: standard base64 (``hmacAsBase64String``)."""
    return base64.b64encode(token_hmac).decode("ascii")


def new_token_id() -> str:
    """A random Kafka ``Uuid`` as text (URL-safe base64 of 16 bytes, unpadded);
    like ``Uuid.randomUuid`` never one that starts with '-' (a command line
    would take it for an option)."""
    import secrets
    while True:
        text = base64.urlsafe_b64encode(secrets.token_bytes(16)).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def split_principal(principal: str) -> tuple[str, str]:
    """``"User:alice"`` -> ("User", "alice") (KafkaPrincipal's type and name)."""
    kind, _, name = principal.partition(":")
    return kind, name


@dataclass(frozen=True)
class TokenInformation:
    """Kafka's TokenInformation; principals as ``"Type:name"`` text."""

    token_id: str
    owner: str
    token_requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int

    def owner_or_renewer(self, principal: str) -> bool:
        return principal == self.owner or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        """Past its expiry or its max timestamp (the controller's test: ``< now``)."""
        return self.max_timestamp < now_ms or self.expiry_timestamp < now_ms


@dataclass(frozen=True)
class DelegationToken:
    """A token's information and its HMAC, the password a client authenticates with."""

    info: TokenInformation
    hmac: bytes


class DelegationTokenCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, DelegationToken] = {}
        self._by_hmac: dict[bytes, str] = {}
        # token id -> {mechanism name: ScramCredential of the base64 HMAC}
        self._credentials: dict[str, dict[str, scram.ScramCredential]] = {}

    def update(self, token: DelegationToken) -> None:
        """Add or replace ``token`` (a renewal replaces its information only)."""
        token_id = token.info.token_id
        with self._lock:
            known = self._tokens.get(token_id)
            fresh = known is None or known.hmac != token.hmac
        credentials = self._scram_credentials(token.hmac) if fresh else None
        with self._lock:
            self._tokens[token_id] = token
            self._by_hmac[token.hmac] = token_id
            if credentials is not None:
                self._credentials[token_id] = credentials

    @staticmethod
    def _scram_credentials(token_hmac: bytes) -> dict[str, scram.ScramCredential]:
        password = hmac_text(token_hmac)
        return {name: scram.ScramFormatter(m).generate_credential(password, m.min_iterations)
                for name, m in scram.MECHANISMS.items()}

    def remove(self, token_id: str) -> DelegationToken | None:
        with self._lock:
            token = self._tokens.pop(token_id, None)
            self._credentials.pop(token_id, None)
            if token is not None:
                self._by_hmac.pop(token.hmac, None)
            return token

    def token(self, token_id: str) -> DelegationToken | None:
        with self._lock:
            return self._tokens.get(token_id)

    def token_for_hmac(self, token_hmac: bytes) -> DelegationToken | None:
        with self._lock:
            token_id = self._by_hmac.get(bytes(token_hmac))
            return None if token_id is None else self._tokens.get(token_id)

    def tokens(self) -> list[DelegationToken]:
        with self._lock:
            return list(self._tokens.values())

    def credential(self, token_id: str, mechanism: str) -> scram.ScramCredential | None:
        with self._lock:
            return self._credentials.get(token_id, {}).get(mechanism)
