"""Kafka's listeners: ``listeners`` / ``advertised.listeners`` entries
(``NAME://host:port``) and ``listener.security.protocol.map``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from kafka_net.config.errors import ConfigError


@dataclass(frozen=True)
class EndPoint:
    """One entry of ``listeners``: ``NAME://host:port``."""

    listener_name: str
    host: str          # "" binds every interface, as in Kafka
    port: int          # 0 = an ephemeral port, reported once bound
    security_protocol: str = "PLAINTEXT"   # from listener.security.protocol.map

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# Kafka's default listener.security.protocol.map: each protocol names itself.
DEFAULT_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)

_LISTENER_RE = re.compile(
    r"^(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[^\]]*\]|[^:/\[\]]*):(?P<port>-?[0-9]+)$")
NAME_RE = re.compile(r"[A-Z0-9_]+")   # a listener name, upper-cased


def parse_protocol_map(value: str, key: str = "listener.security.protocol.map"
                       ) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` -> ``{NAME: PROTOCOL}``, upper-cased as Kafka does."""
    mapping: dict[str, str] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, sep, protocol = (x.strip().upper() for x in item.partition(":"))
        if not sep or not NAME_RE.fullmatch(name):
            raise ConfigError(f"{key}: '{item}' is not of the form NAME:PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(f"{key}: '{protocol}' in '{item}' is not a security protocol "
                              f"(one of {', '.join(SECURITY_PROTOCOLS)})")
        if name in mapping:
            raise ConfigError(f"{key}: listener name '{name}' appears twice")
        mapping[name] = protocol
    return mapping


def parse_listeners(value: str, key: str = "listeners",
                    protocol_map: Mapping[str, str] | None = None,
                    skip: Iterable[str] = ()) -> tuple[EndPoint, ...]:
    """Parse ``NAME://host:port,...`` (IPv6 hosts in brackets).

    A listener's security protocol comes from ``protocol_map`` (Kafka's
    ``listener.security.protocol.map``; by default PLAINTEXT, SSL,
    SASL_PLAINTEXT and SASL_SSL name themselves); every one of them is served.
    Listeners named in ``skip`` (the controller listeners) are checked, then
    left out of the result.
    """
    protocols = (parse_protocol_map(DEFAULT_PROTOCOL_MAP) if protocol_map is None
                 else protocol_map)
    skipped = {name.upper() for name in skip}
    endpoints: list[EndPoint] = []
    names: set[str] = set()
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        m = _LISTENER_RE.match(item)
        if not m:
            raise ConfigError(f"{key}: '{item}' is not of the form NAME://host:port")
        name, host, port = m["name"].upper(), m["host"].strip("[]"), int(m["port"])
        if not 0 <= port <= 65535:
            raise ConfigError(f"{key}: port {port} in '{item}' is out of range")
        if name in names:
            raise ConfigError(f"{key}: each listener name must appear once; "
                              f"'{name}' appears twice in '{value}'")
        names.add(name)
        protocol = protocols.get(name)
        if protocol is None:
            raise ConfigError(
                f"{key}: listener '{name}' has no security protocol; map it in "
                f"listener.security.protocol.map (for example {name}:PLAINTEXT)")
        if name in skipped:
            continue
        endpoints.append(EndPoint(name, host, port, protocol))
    if key == "listeners":
        _check_distinct_ports(endpoints, key)
    return tuple(endpoints)


def _check_distinct_ports(endpoints: list[EndPoint], key: str) -> None:
    # As in Kafka: two listeners may share a port only if one is IPv4 and one IPv6.
    seen: dict[tuple[int, bool], EndPoint] = {}
    for e in endpoints:
        if e.port == 0:
            continue  # each port-0 listener gets its own ephemeral port
        slot = (e.port, ":" in e.host)
        if slot in seen:
            raise ConfigError(f"{key}: '{seen[slot]}' and '{e}' use the same port")
        seen[slot] = e

