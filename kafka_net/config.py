"""Broker configuration with Kafka's key names and defaults.

``kafka-net serve --config server.properties --override key=value`` reads a
Java ``.properties`` file (the format Kafka's ``server.properties`` uses) and
applies overrides on top.  Every key is Kafka's, with Kafka's default, except
the few marked "kafka-net" below.

Unknown keys are refused with a suggestion, so a typo such as
``num.network.thread`` never silently falls back to a default.  Keys that are
real Kafka broker settings but mean nothing here (``log.dirs``,
``zookeeper.connect``, ...) are accepted and reported once as ignored, so an
existing ``server.properties`` can be used as it is.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping


class ConfigError(ValueError):
    """A bad configuration key or value; the message names the key."""


@dataclass(frozen=True)
class EndPoint:
    """One entry of ``listeners``: ``NAME://host:port``."""

    listener_name: str
    host: str          # "" binds every interface, as in Kafka
    port: int          # 0 = an ephemeral port, reported once bound

    @property
    def security_protocol(self) -> str:
        return self.listener_name  # only PLAINTEXT://, see _parse_listeners

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


_LISTENER_RE = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[^\]]*\]|[^:/]*):(?P<port>-?\d+)$")


def parse_listeners(value: str, key: str = "listeners") -> tuple[EndPoint, ...]:
    endpoints = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        m = _LISTENER_RE.match(item)
        if not m:
            raise ConfigError(f"{key}: '{item}' is not of the form NAME://host:port")
        name, host, port = m["name"].upper(), m["host"].strip("[]"), int(m["port"])
        if not 0 <= port <= 65535:
            raise ConfigError(f"{key}: port {port} in '{item}' is out of range")
        if name != "PLAINTEXT":
            raise ConfigError(
                f"{key}: listener '{name}' needs a security protocol kafka-net does not "
                "implement yet; only PLAINTEXT:// listeners are supported")
        endpoints.append(EndPoint(name, host, port))
    names = [e.listener_name for e in endpoints]
    if len(set(names)) != len(names):
        # Kafka requires listener names to be unique; ports must be too.
        raise ConfigError(f"{key}: each listener name must appear once: {value}")
    if key == "listeners" and not endpoints:
        raise ConfigError("listeners: at least one listener is required")
    return tuple(endpoints)


# --- the key table -----------------------------------------------------------------


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[str, str], int]:
    def convert(key: str, raw: str) -> int:
        try:
            v = int(raw.strip())
        except ValueError:
            raise ConfigError(f"{key}: '{raw}' is not an integer") from None
        if lo is not None and v < lo:
            raise ConfigError(f"{key}: {v} is below the minimum {lo}")
        if hi is not None and v > hi:
            raise ConfigError(f"{key}: {v} is above the maximum {hi}")
        return v
    return convert


def _bool(key: str, raw: str) -> bool:
    v = raw.strip().lower()
    if v not in ("true", "false"):
        raise ConfigError(f"{key}: '{raw}' is not true or false")
    return v == "true"


def _str(key: str, raw: str) -> str:
    return raw.strip()


@dataclass(frozen=True)
class _Key:
    name: str
    attr: str
    convert: Callable[[str, str], Any]
    default: str
    doc: str


INT_MAX = 2**31 - 1

KEYS: tuple[_Key, ...] = (
    _Key("node.id", "node_id", _int(0), "1", "This broker's id, returned in Metadata."),
    _Key("listeners", "listeners", lambda k, v: parse_listeners(v, k),
         "PLAINTEXT://127.0.0.1:9092",
         "Comma-separated NAME://host:port; port 0 picks an ephemeral port."),
    _Key("advertised.listeners", "advertised_listeners",
         lambda k, v: parse_listeners(v, k), "",
         "Addresses given to clients in Metadata; defaults to listeners."),
    _Key("num.network.threads", "num_network_threads", _int(1), "3",
         "Processor threads per listener (N)."),
    _Key("num.io.threads", "num_io_threads", _int(1), "8",
         "Request handler threads (M)."),
    _Key("queued.max.requests", "queued_max_requests", _int(1), "500",
         "Requests the RequestChannel holds before Processors block."),
    _Key("socket.request.max.bytes", "socket_request_max_bytes", _int(1), "104857600",
         "Largest request frame accepted; larger ones close the connection."),
    _Key("socket.send.buffer.bytes", "socket_send_buffer_bytes", _int(-1), "102400",
         "SO_SNDBUF of accepted sockets; -1 keeps the OS default."),
    _Key("socket.receive.buffer.bytes", "socket_receive_buffer_bytes", _int(-1), "102400",
         "SO_RCVBUF of the listening and accepted sockets; -1 keeps the OS default."),
    _Key("socket.listen.backlog.size", "socket_listen_backlog_size", _int(1), "50",
         "listen() backlog of each listener."),
    _Key("connections.max.idle.ms", "connections_max_idle_ms", _int(), "600000",
         "Idle connections are closed after this long; negative disables."),
    _Key("auto.create.topics.enable", "auto_create_topics_enable", _bool, "true",
         "Create unknown topics named in Metadata requests."),
    _Key("num.partitions", "num_partitions", _int(1), "1",
         "Partitions of auto-created topics."),
    _Key("default.replication.factor", "default_replication_factor", _int(1, 1), "1",
         "Replication factor of auto-created topics (a single node: 1)."),
    _Key("cluster.id", "cluster_id", _str, "kafka-net-cluster",
         "kafka-net: the cluster id returned in Metadata (Kafka keeps it in meta.properties)."),
    _Key("shutdown.timeout.ms", "shutdown_timeout_ms", _int(0), "30000",
         "kafka-net: how long a graceful stop waits for requests already received."),
)

_BY_NAME = {k.name: k for k in KEYS}
_ALIASES = {"broker.id": "node.id"}

# Real Kafka broker keys that have no meaning in kafka-net; accepted and reported.
IGNORED_KAFKA_KEYS = frozenset("""
    log.dirs log.dir log.retention.hours log.retention.ms log.retention.bytes
    log.segment.bytes log.retention.check.interval.ms log.cleaner.enable
    zookeeper.connect zookeeper.connection.timeout.ms process.roles controller.quorum.voters
    controller.listener.names inter.broker.listener.name listener.security.protocol.map
    offsets.topic.replication.factor transaction.state.log.replication.factor
    transaction.state.log.min.isr group.initial.rebalance.delay.ms num.recovery.threads.per.data.dir
    delete.topic.enable min.insync.replicas unclean.leader.election.enable
    controller.quorum.bootstrap.servers
""".split())


@dataclass(frozen=True)
class ServerConfig:
    node_id: int = 1
    listeners: tuple[EndPoint, ...] = field(
        default_factory=lambda: parse_listeners("PLAINTEXT://127.0.0.1:9092"))
    advertised_listeners: tuple[EndPoint, ...] = ()
    num_network_threads: int = 3
    num_io_threads: int = 8
    queued_max_requests: int = 500
    socket_request_max_bytes: int = 104857600
    socket_send_buffer_bytes: int = 102400
    socket_receive_buffer_bytes: int = 102400
    socket_listen_backlog_size: int = 50
    connections_max_idle_ms: int = 600000
    auto_create_topics_enable: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    cluster_id: str = "kafka-net-cluster"
    shutdown_timeout_ms: int = 30000
    ignored: tuple[str, ...] = ()

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> "ServerConfig":
        """Build from string key/values, as read from a file or ``--override``."""
        values: dict[str, Any] = {}
        ignored = []
        for raw_key, raw_value in props.items():
            key = _ALIASES.get(raw_key.strip(), raw_key.strip())
            spec = _BY_NAME.get(key)
            if spec is None:
                if key in IGNORED_KAFKA_KEYS or key.startswith("listener.name."):
                    ignored.append(key)
                    continue
                raise ConfigError(_unknown_key_message(key))
            values[spec.attr] = spec.convert(key, raw_value)
        cfg = cls(**values, ignored=tuple(sorted(ignored)))
        cfg.validate()
        return cfg

    def validate(self) -> None:
        if self.advertised_listeners:
            names = {e.listener_name for e in self.listeners}
            for e in self.advertised_listeners:
                if e.listener_name not in names:
                    raise ConfigError(
                        f"advertised.listeners: '{e}' names a listener not in listeners")
                if e.port == 0:
                    raise ConfigError(f"advertised.listeners: '{e}' cannot advertise port 0")

    def with_overrides(self, **changes: Any) -> "ServerConfig":
        """A copy with attributes replaced (tests use this)."""
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        data.update(changes)
        cfg = ServerConfig(**data)
        cfg.validate()
        return cfg


def _unknown_key_message(key: str) -> str:
    known = [k.name for k in KEYS] + list(_ALIASES)
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"unknown configuration key '{key}'{hint}"


# --- the .properties format -----------------------------------------------------------

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``#``/``!`` comments, ``=``/``:``/space
    separators, backslash line continuation and escapes (``\\uXXXX`` included)."""
    props: dict[str, str] = {}
    for line in _logical_lines(text.splitlines()):
        key, value = _split_key_value(line)
        props[_unescape(key)] = _unescape(value)
    return props


def _logical_lines(lines: Iterable[str]) -> Iterable[str]:
    pending = ""
    for raw in lines:
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        # An odd number of trailing backslashes continues the line.
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2:i + 6] or ""):
                out.append(chr(int(s[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def load_config(path: str | None, overrides: Iterable[str] = ()) -> ServerConfig:
    """Read ``path`` (optional) and apply ``key=value`` overrides, in order."""
    props: dict[str, str] = {}
    if path is not None:
        try:
            with open(path, encoding="utf-8") as fh:
                props.update(parse_properties(fh.read()))
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--override '{item}' is not of the form key=value")
        key, value = item.split("=", 1)
        props[key.strip()] = value
    return ServerConfig.from_properties(props)
