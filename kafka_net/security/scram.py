"""SCRAM (RFC 5802, RFC 7677) arithmetic and credentials: Kafka's ScramMechanism,
ScramFormatter and ScramCredential.

The broker never stores a password.  From ``password``, a random ``salt`` and
an ``iterations`` count it keeps (RFC 5802 section 3)::

    SaltedPassword = Hi(password, salt, iterations)      # PBKDF2 with HMAC-H
    ClientKey      = HMAC(SaltedPassword, "Client Key")
    StoredKey      = H(ClientKey)
    ServerKey      = HMAC(SaltedPassword, "Server Key")

and keeps (salt, StoredKey, ServerKey, iterations): enough to check a client's
proof and to prove itself, not enough to log in as the user.
AlterUserScramCredentials carries SaltedPassword, not the password
(``kafka-configs`` salts on the client side), so both entry points exist.
"""

from __future__ import annotations

from dataclasses import dataclass

# hashlib, hmac and secrets are imported where they are used: every start imports
# this module (the configuration's SASL users), and they load OpenSSL's libcrypto,
# about 3 ms, which only an authentication needs (issue 28: time to listen).


@dataclass(frozen=True)
class ScramMechanism:
    """A SCRAM mechanism (SCRAM-SHA-256 or -512): its hash and MAC, minimum iterations and
    wire code."""

    mechanism_name: str
    hash_algorithm: str       # hashlib's name
    mac_algorithm: str
    min_iterations: int = 4096   # Kafka's minimum for both mechanisms
    type: int = 0             # the wire code in Describe/AlterUserScramCredentials


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", "HmacSHA256", type=1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", "HmacSHA512", type=2)
MECHANISMS = {m.mechanism_name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
BY_TYPE = {m.type: m for m in MECHANISMS.values()}
# Kafka's ScramMechanism: iterations above this are refused (UNACCEPTABLE_CREDENTIAL).
MAX_ITERATIONS = 16384


def for_name(name: str) -> ScramMechanism | None:
    return MECHANISMS.get(name)


@dataclass(frozen=True)
class ScramCredential:
    """What a broker keeps of a SCRAM password (RFC 5802): salt, StoredKey, ServerKey,
    iterations."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class ScramFormatter:
    """The RFC 5802 functions for one mechanism's hash."""

    def __init__(self, mechanism: ScramMechanism) -> None:
        self.mechanism = mechanism
        self._hash = mechanism.hash_algorithm

    def hmac(self, key: bytes, data: bytes) -> bytes:
        import hmac
        return hmac.new(key, data, self._hash).digest()

    def hash(self, data: bytes) -> bytes:
        import hashlib
        return hashlib.new(self._hash, data).digest()

    def hi(self, password: bytes, salt: bytes, iterations: int) -> bytes:
        import hashlib
        return hashlib.pbkdf2_hmac(self._hash, password, salt, iterations)

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return self.hi(normalize(password), salt, iterations)

    def client_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Client Key")

    def stored_key(self, client_key: bytes) -> bytes:
        return self.hash(client_key)

    def server_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Server Key")

    def client_signature(self, stored_key: bytes, auth_message: bytes) -> bytes:
        return self.hmac(stored_key, auth_message)

    def client_proof(self, salted_password: bytes, auth_message: bytes) -> bytes:
        client_key = self.client_key(salted_password)
        signature = self.client_signature(self.stored_key(client_key), auth_message)
        return xor(client_key, signature)

    def server_signature(self, server_key: bytes, auth_message: bytes) -> bytes:
        return self.hmac(server_key, auth_message)

    def credential_from_salted_password(self, salted_password: bytes, salt: bytes,
                                        iterations: int) -> ScramCredential:
        return ScramCredential(salt, self.stored_key(self.client_key(salted_password)),
                               self.server_key(salted_password), iterations)

    def generate_credential(self, password: str, iterations: int,
                            salt: bytes | None = None) -> ScramCredential:
        salt = secure_random_bytes() if salt is None else salt
        return self.credential_from_salted_password(
            self.salted_password(password, salt, iterations), salt, iterations)


def xor(a: bytes, b: bytes) -> bytes:
    if len(a) != len(b):
        raise ValueError("Argument arrays must be of the same length")
    return bytes(x ^ y for x, y in zip(a, b))


def normalize(text: str) -> bytes:
    # Kafka's ScramFormatter.normalize: UTF-8, no SASLprep.
    return text.encode("utf-8")


def secure_random_bytes() -> bytes:
    import secrets
    return secrets.token_bytes(32)


def secure_random_string() -> str:
    """A nonce: 130 random bits in base 32, digits and a-v, as Kafka's
    ``new BigInteger(130, random).toString(32)`` (no '-' or '_': librdkafka 2.0
    mangles a server nonce holding them)."""
    import secrets
    value, digits = secrets.randbits(130), "0123456789abcdefghijklmnopqrstuv"
    text = ""
    while value:
        value, d = divmod(value, 32)
        text = digits[d] + text
    return text or "0"


def sasl_name(username: str) -> str:
    """username -> saslname (RFC 5802: ',' and '=' escaped)."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username(sasl_name_: str) -> str:
    """saslname -> username; Kafka's ScramFormatter.username."""
    return sasl_name_.replace("=2C", ",").replace("=3D", "=")
