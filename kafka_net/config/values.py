"""Converters from a key's text to its value, with Kafka's ranges and messages.

Each takes ``(key as written, raw text)`` so that an error names the key the
user wrote (``broker.id``, not ``node.id``).
"""

from __future__ import annotations

import re
from typing import Callable

from kafka_net.config.errors import ConfigError
from kafka_net.config.listeners import EndPoint, NAME_RE, parse_listeners, parse_protocol_map
from kafka_net.protocol.kafka_releases import RELEASES

INT_MAX = 2**31 - 1          # Kafka's INT keys
LONG_MAX = 2**63 - 1         # Kafka's LONG keys
_INTEGER_RE = re.compile(r"[+-]?[0-9]+")


# Kafka 4's least segment.bytes / log.segment.bytes (KIP-1030): 1 MiB.
MIN_SEGMENT_BYTES = 1024 * 1024


def segment_bytes(key: str, raw: str) -> int:
    """``log.segment.bytes``: refused below 1 MiB in Kafka's words (its ConfigDef
    range), since a value Kafka 4 refuses must not pass here."""
    value = integer()(key, raw)
    if value < MIN_SEGMENT_BYTES:
        raise ConfigError(f"Invalid value {value} for configuration {key}: "
                          f"Value must be at least {MIN_SEGMENT_BYTES}")
    return value


def integer(lo: int | None = None, hi: int = INT_MAX) -> Callable[[str, str], int]:
    def convert(key: str, raw: str) -> int:
        text = raw.strip()
        # Java's Integer.parseInt: ASCII digits only (Python's int() would also
        # take "1_000" and non-ASCII digits).
        if not _INTEGER_RE.fullmatch(text):
            raise ConfigError(f"{key}: '{raw}' is not an integer")
        v = int(text)
        if lo is not None and v < lo:
            raise ConfigError(f"{key}: {v} is below the minimum {lo}")
        if v > hi:
            raise ConfigError(f"{key}: {v} is above the maximum {hi}")
        return v
    return convert


def optional_integer(lo: int | None = None, hi: int = INT_MAX
                     ) -> Callable[[str, str], int | None]:
    """An integer, or None for an empty value: a Kafka key whose default is null
    (``log.roll.ms``: unset, ``log.roll.hours`` applies)."""
    parse = integer(lo, hi)

    def convert(key: str, raw: str) -> int | None:
        return None if not raw.strip() else parse(key, raw)
    return convert


_DECIMAL_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def decimal(lo: float, hi: float) -> Callable[[str, str], float]:
    """A DOUBLE key (Java's Double.parseDouble, decimal forms only) within [lo, hi]."""
    def convert(key: str, raw: str) -> float:
        text = raw.strip()
        if not _DECIMAL_RE.fullmatch(text):
            raise ConfigError(f"{key}: '{raw}' is not a number")
        v = float(text)
        if not lo <= v <= hi:
            raise ConfigError(f"{key}: {v} is outside [{lo}, {hi}]")
        return v
    return convert


def boolean(key: str, raw: str) -> bool:
    v = raw.strip().lower()
    if v not in ("true", "false"):
        raise ConfigError(f"{key}: '{raw}' is not true or false")
    return v == "true"


def string(key: str, raw: str) -> str:
    return raw.strip()


# group.consumer.assignors: Kafka's short names, or its class names for the same two.
_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignor_list(key: str, raw: str) -> tuple[str, ...]:
    names = tuple(_ASSIGNOR_CLASSES.get(n.strip(), n.strip()) for n in raw.split(",")
                  if n.strip())
    unknown = [n for n in names if n not in ("uniform", "range")]
    if unknown or not names:
        raise ConfigError(f"{key}: {', '.join(unknown) or 'empty'}: the server-side "
                          "assignors are uniform and range")
    return names


_HTTP_ADDRESS_RE = re.compile(r"http://(\[[^\]]*\]|[^:/\[\]]*):([0-9]{1,5})/?")


def http_address(key: str, raw: str) -> str:
    """``http://HOST:PORT`` or empty (off); port 0 picks a free port."""
    text = raw.strip()
    if text and not split_http_address(text):
        raise ConfigError(f"{key}: '{raw}' is not http://HOST:PORT")
    return text


def split_http_address(text: str) -> tuple[str, int] | None:
    """(host, port) of ``http://HOST:PORT``; None if it is not one."""
    m = _HTTP_ADDRESS_RE.fullmatch(text)
    if m is None or int(m.group(2)) > 65535:
        return None
    return m.group(1).strip("[]"), int(m.group(2))


def listener_names(key: str, raw: str) -> tuple[str, ...]:
    names = tuple(n.strip().upper() for n in raw.split(",") if n.strip())
    for n in names:
        if not NAME_RE.fullmatch(n):
            raise ConfigError(f"{key}: '{n}' is not a listener name")
    return names


def listener_name(key: str, raw: str) -> str:
    name = raw.strip().upper()   # Kafka's ListenerName.normalised
    if name and not NAME_RE.fullmatch(name):
        raise ConfigError(f"{key}: '{raw.strip()}' is not a listener name")
    return name


def protocol_map(key: str, raw: str) -> tuple[tuple[str, str], ...]:
    return tuple(parse_protocol_map(raw, key).items())


def listener_list(key: str, raw: str) -> tuple[EndPoint, ...]:
    # Used on its own only for help text; from_properties parses listeners
    # together with the protocol map and the controller listener names.
    return parse_listeners(raw, key)


def ip_overrides(key: str, raw: str) -> tuple[tuple[str, int], ...]:
    """``host:count,...`` (Kafka's max.connections.per.ip.overrides)."""
    pairs = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host or not _INTEGER_RE.fullmatch(count.strip()):
            raise ConfigError(f"{key}: '{item}' is not of the form host:count")
        if int(count) < 0:
            raise ConfigError(f"{key}: the count in '{item}' is negative")
        pairs.append((host.strip().strip("[]"), int(count)))
    return tuple(pairs)



def choice(*options: str, upper: bool = False) -> Callable[[str, str], str]:
    """One of ``options`` (Kafka's ValidString), compared case-insensitively."""
    def convert(key: str, raw: str) -> str:
        v = raw.strip().upper() if upper else raw.strip().lower()
        if v not in options:
            raise ConfigError(f"{key}: '{raw.strip()}' is not one of {', '.join(options)}")
        return v
    return convert


_RELEASE_RE = re.compile(r"v?([0-9]+)\.([0-9]+)(?:\.[0-9]+)?")


def kafka_release(key: str, raw: str) -> str | None:
    """as.version: a Kafka release of kafka_releases.RELEASES as X.Y (a patch
    number and a leading v are accepted and dropped, as franz-go's kversion takes
    them: patch releases did not change the protocol), or None when empty."""
    text = raw.strip()
    if not text:
        return None
    match = _RELEASE_RE.fullmatch(text)
    release = f"{int(match.group(1))}.{int(match.group(2))}" if match else None
    if release not in RELEASES:
        raise ConfigError(f"{key}: '{text}' is not a Kafka release kafka-net can play "
                          f"({RELEASES[0]} ... {RELEASES[-1]})")
    return release


def string_list(key: str, raw: str) -> tuple[str, ...]:
    """Kafka's LIST type: comma-separated, blanks dropped."""
    return tuple(item.strip() for item in raw.split(",") if item.strip())


# authorizer.class.name: the one authorizer kafka-net has, and the ones Kafka 4 removed.
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
REMOVED_AUTHORIZERS = ("kafka.security.authorizer.AclAuthorizer",
                       "kafka.security.auth.SimpleAclAuthorizer")


def authorizer_class(key: str, raw: str) -> str:
    """Empty (no authorizer, Kafka's default) or StandardAuthorizer; kafka-net
    loads no Java class, so any other name fails startup, saying why."""
    name = raw.strip()
    if name in ("", STANDARD_AUTHORIZER):
        return name
    if name in REMOVED_AUTHORIZERS:
        raise ConfigError(f"{key}: {name} was ZooKeeper's authorizer, removed in Kafka 4.0; "
                          f"use {STANDARD_AUTHORIZER}")
    raise ConfigError(f"{key}: unknown authorizer class '{name}'; kafka-net has "
                      f"{STANDARD_AUTHORIZER} (or none: leave the key empty)")


def principal_list(key: str, raw: str) -> tuple[str, ...]:
    """super.users: semicolon-separated principals (``User:alice;User:bob``)."""
    users = tuple(u.strip() for u in raw.split(";") if u.strip())
    for user in users:
        if ":" not in user:
            raise ConfigError(f"{key}: '{user}' is not a principal (Type:name, such as "
                              "User:alice)")
    return users
