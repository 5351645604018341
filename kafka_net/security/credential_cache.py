"""CredentialCache: the broker's SCRAM credentials (Kafka's CredentialCache of
ScramCredential per mechanism, kept in KRaft's ScramImage).

One instance per broker, shared: the network threads look credentials up
while authenticating (any Processor, any time), the handler threads change
them through AlterUserScramCredentials and list them through
DescribeUserScramCredentials.  A lock guards the dict; lookups return frozen
ScramCredential objects, so a credential replaced mid-exchange does not
change under the exchange that already read it.
"""

from __future__ import annotations

import re
import threading

from kafka_net.security import scram
from kafka_net.security.delegation_token import DelegationTokenCache
from kafka_net.security.scram import ScramCredential


class CredentialCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # mechanism name -> {user: ScramCredential}
        self._by_mechanism: dict[str, dict[str, ScramCredential]] = {
            name: {} for name in scram.MECHANISMS}
        # The delegation tokens' SCRAM credentials live beside the users' (Kafka's
        # CredentialProvider holds both caches).
        self.tokens = DelegationTokenCache()

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        with self._lock:
            return self._by_mechanism.get(mechanism, {}).get(user)

    def put(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        with self._lock:
            self._by_mechanism[mechanism][user] = credential

    def remove(self, user: str, mechanism: str) -> bool:
        with self._lock:
            return self._by_mechanism[mechanism].pop(user, None) is not None

    def users(self) -> list[str]:
        with self._lock:
            return sorted({u for creds in self._by_mechanism.values() for u in creds})

    def describe(self, user: str) -> list[tuple[str, int]]:
        """(mechanism name, iterations) of every credential ``user`` has."""
        with self._lock:
            return [(name, creds[user].iterations)
                    for name, creds in self._by_mechanism.items() if user in creds]

    def add_scram(self, spec: str) -> str:
        """Add a credential written as kafka-storage format's ``--add-scram`` takes it;
        return the user's name.  See :func:`parse_add_scram`."""
        mechanism, user, credential = parse_add_scram(spec)
        self.put(user, mechanism, credential)
        return user


# kafka-storage format --add-scram 'SCRAM-SHA-256=[name=alice,password=alice-secret]'
# (also iterations=N, salt=<hex or base64?>: Kafka takes salt and saltedpassword
# as base64; we accept name, password and iterations).
_ADD_SCRAM = re.compile(r"(?P<mechanism>[A-Z0-9-]+)=\[(?P<fields>.*)\]", re.S)


class AddScramError(ValueError):
    pass


def parse_add_scram(spec: str) -> tuple[str, str, ScramCredential]:
    """``SCRAM-SHA-256=[name=alice,password=secret,iterations=8192]`` ->
    (mechanism name, user, credential), salted now."""
    mechanism, name, password, iterations = read_add_scram(spec)
    credential = scram.ScramFormatter(scram.MECHANISMS[mechanism]).generate_credential(
        password, iterations)
    return mechanism, name, credential


def read_add_scram(spec: str) -> tuple[str, str, str, int]:
    """The fields of an --add-scram spec, checked: (mechanism name, user, password,
    iterations).  Values may be double-quoted (then they may hold ',' and ']');
    iterations default to 4096, Kafka's default."""
    m = _ADD_SCRAM.fullmatch(spec.strip())
    if m is None:
        raise AddScramError(f"'{spec}' is not of the form "
                            "SCRAM-SHA-256=[name=alice,password=alice-secret]")
    mechanism = scram.for_name(m["mechanism"])
    if mechanism is None:
        raise AddScramError(f"'{m['mechanism']}' is not a SCRAM mechanism "
                            f"(one of {', '.join(scram.MECHANISMS)})")
    fields = _fields(m["fields"], spec)
    unknown = set(fields) - {"name", "password", "iterations"}
    if unknown:
        raise AddScramError(f"'{spec}': unknown field(s) {', '.join(sorted(unknown))}")
    if not fields.get("name"):
        raise AddScramError(f"'{spec}': you must supply 'name' to add-scram")
    if "password" not in fields:
        raise AddScramError(f"'{spec}': you must supply 'password' to add-scram")
    try:
        iterations = int(fields.get("iterations", mechanism.min_iterations))
    except ValueError:
        raise AddScramError(f"'{spec}': iterations must be a number") from None
    if not mechanism.min_iterations <= iterations <= scram.MAX_ITERATIONS:
        raise AddScramError(f"'{spec}': iterations must be between "
                            f"{mechanism.min_iterations} and {scram.MAX_ITERATIONS}")
    return mechanism.mechanism_name, fields["name"], fields["password"], iterations


_FIELD = re.compile(r'\s*(?P<key>[a-z]+)=(?:"(?P<quoted>[^"]*)"|(?P<plain>[^,"]*?))\s*(?:,|$)')


def _fields(text: str, spec: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        m = _FIELD.match(text, pos)
        if m is None or m.end() == pos:
            raise AddScramError(f"'{spec}': cannot read a key=value field at '{text[pos:]}'")
        value = m["quoted"] if m["quoted"] is not None else m["plain"]
        if m["key"] in fields:
            raise AddScramError(f"'{spec}': '{m['key']}' given twice")
        fields[m["key"]] = value
        pos = m.end()
    return fields
