"""Broker configuration with Kafka's key names and defaults.

``kafka-net serve --config server.properties --override key=value`` reads a
Java ``.properties`` file (the format Kafka's ``server.properties`` uses) and
applies overrides on top.  Every key is Kafka's, with Kafka's default, except
the few marked "kafka-net" below.

Unknown keys are refused with a suggestion, so a typo such as
``num.network.thread`` never silently falls back to a default.  Keys that are
real Kafka broker settings but mean nothing here (``log.dirs``,
``zookeeper.connect``, ...) are accepted and reported once as ignored, so an
existing ``server.properties`` can be used as it is.  For the same reason
the listeners named in ``controller.listener.names`` (a KRaft controller's
port) are accepted and not opened: kafka-net has no controller.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from kafka_net.kafka_keys import KAFKA_BROKER_KEYS


class ConfigError(ValueError):
    """A bad configuration key or value; the message names the key."""


# --- listeners ------------------------------------------------------------------------


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
_NAME_RE = re.compile(r"[A-Z0-9_]+")


def parse_protocol_map(value: str, key: str = "listener.security.protocol.map"
                       ) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` -> ``{NAME: PROTOCOL}``, upper-cased as Kafka does."""
    mapping: dict[str, str] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, sep, protocol = (x.strip().upper() for x in item.partition(":"))
        if not sep or not _NAME_RE.fullmatch(name):
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
    SASL_PLAINTEXT and SASL_SSL name themselves).  Only PLAINTEXT is served.
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
        if protocol != "PLAINTEXT":
            raise ConfigError(
                f"{key}: listener '{name}' uses security protocol {protocol}, which "
                "kafka-net does not implement yet; only PLAINTEXT listeners are supported")
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


# --- the key table --------------------------------------------------------------------

INT_MAX = 2**31 - 1          # Kafka's INT keys
LONG_MAX = 2**63 - 1         # Kafka's LONG keys
_INTEGER_RE = re.compile(r"[+-]?[0-9]+")


def _int(lo: int | None = None, hi: int = INT_MAX) -> Callable[[str, str], int]:
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


def _bool(key: str, raw: str) -> bool:
    v = raw.strip().lower()
    if v not in ("true", "false"):
        raise ConfigError(f"{key}: '{raw}' is not true or false")
    return v == "true"


def _str(key: str, raw: str) -> str:
    return raw.strip()


def _names(key: str, raw: str) -> tuple[str, ...]:
    names = tuple(n.strip().upper() for n in raw.split(",") if n.strip())
    for n in names:
        if not _NAME_RE.fullmatch(n):
            raise ConfigError(f"{key}: '{n}' is not a listener name")
    return names


def _listener_name(key: str, raw: str) -> str:
    name = raw.strip().upper()   # Kafka's ListenerName.normalised
    if name and not _NAME_RE.fullmatch(name):
        raise ConfigError(f"{key}: '{raw.strip()}' is not a listener name")
    return name


def _protocol_map(key: str, raw: str) -> tuple[tuple[str, str], ...]:
    return tuple(parse_protocol_map(raw, key).items())


def _listeners(key: str, raw: str) -> tuple[EndPoint, ...]:
    # Used on its own only for help text; from_properties parses listeners
    # together with the protocol map and the controller listener names.
    return parse_listeners(raw, key)


def _ip_overrides(key: str, raw: str) -> tuple[tuple[str, int], ...]:
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


@dataclass(frozen=True)
class _Key:
    name: str
    attr: str
    convert: Callable[[str, str], Any]
    default: str
    doc: str


KEYS: tuple[_Key, ...] = (
    _Key("node.id", "node_id", _int(0), "1",
         "This broker's id, returned in Metadata (broker.id is accepted too)."),
    _Key("listeners", "listeners", _listeners, "PLAINTEXT://127.0.0.1:9092",
         "Comma-separated NAME://host:port; port 0 picks an ephemeral port."),
    _Key("advertised.listeners", "advertised_listeners", _listeners, "",
         "Addresses given to clients in Metadata; defaults to listeners."),
    _Key("listener.security.protocol.map", "listener_security_protocol_map",
         _protocol_map, DEFAULT_PROTOCOL_MAP,
         "Listener name -> security protocol; only PLAINTEXT listeners are served."),
    _Key("controller.listener.names", "controller_listener_names", _names, "",
         "Listeners of a KRaft controller; kafka-net has none and does not open them."),
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
    _Key("connections.max.idle.ms", "connections_max_idle_ms", _int(hi=LONG_MAX), "600000",
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
    _Key("delete.topic.enable", "delete_topic_enable", _bool, "true",
         "Whether DeleteTopics may delete topics."),
    _Key("message.max.bytes", "message_max_bytes", _int(0), "1048588",
         "Largest record batch a producer may send (per partition)."),
    _Key("group.min.session.timeout.ms", "group_min_session_timeout_ms", _int(), "6000",
         "Smallest session timeout a consumer group member may ask for."),
    _Key("group.max.session.timeout.ms", "group_max_session_timeout_ms", _int(), "1800000",
         "Largest session timeout a consumer group member may ask for."),
    _Key("group.initial.rebalance.delay.ms", "group_initial_rebalance_delay_ms", _int(0),
         "3000", "How long the first rebalance of an empty group waits for more members."),
    _Key("group.max.size", "group_max_size", _int(1), str(2**31 - 1),
         "Most members a consumer group may have."),
    _Key("offset.metadata.max.bytes", "offset_metadata_max_bytes", _int(0), "4096",
         "Largest metadata string an offset commit may carry."),
    # -- connection quotas (Kafka's ConnectionQuotas; listener.name.<l>. forms too) --
    _Key("max.connections", "max_connections", _int(0), str(INT_MAX),
         "Most connections the broker holds; at the limit the Acceptor waits for a slot."),
    _Key("max.connections.per.ip", "max_connections_per_ip", _int(0), str(INT_MAX),
         "Most connections from one IP address; more are closed at once."),
    _Key("max.connections.per.ip.overrides", "max_connections_per_ip_overrides",
         _ip_overrides, "",
         "Per-host or per-IP exceptions to max.connections.per.ip, as host:count,..."),
    _Key("max.connection.creation.rate", "max_connection_creation_rate", _int(0),
         str(INT_MAX),
         "Most new connections per second; faster accepts are delayed."),
    _Key("inter.broker.listener.name", "inter_broker_listener_name", _listener_name, "",
         "The inter-broker listener; with several listeners it is exempt from "
         "max.connections. Empty = PLAINTEXT (Kafka's default)."),
    # -- memory pool and quotas --------------------------------------------------------
    _Key("queued.max.request.bytes", "queued_max_request_bytes", _int(-(2**63), LONG_MAX),
         "-1",
         "Bytes of requests read and not yet handled before reading pauses; -1 = no bound."),
    _Key("quota.window.num", "quota_window_num", _int(1), "11",
         "Samples kept in memory for client and connection-rate quotas."),
    _Key("quota.window.size.seconds", "quota_window_size_seconds", _int(1), "1",
         "Time span of one quota sample; also the longest connection-rate delay."),
    # -- request limits a Python broker needs (kafka-net) ------------------------------
    _Key("max.partitions.per.request", "max_partitions_per_request", _int(1), "10000",
         "kafka-net: most partitions one CreateTopics or CreatePartitions may create "
         "(10000 empty ones take about 10 MiB)."),
    _Key("max.broker.partitions", "max_broker_partitions", _int(1), "100000",
         "kafka-net: most partitions the broker holds in all (KIP-578's name); 100000 take "
         "about 110 MiB, under 1 GiB even while 8 Metadata-for-all answers are built "
         "(bench/RESULTS.md)."),
    _Key("message.max.uncompressed.bytes", "message_max_uncompressed_bytes", _int(1),
         "4194304",
         "kafka-net: most bytes a compressed record batch may decompress to (a Produce "
         "request's batches together: 16x that, and a quarter of it in records and "
         "headers); 4 MiB keeps the worst request near 1 s of handler CPU "
         "(bench/records_worst_case.py)."),
    _Key("capture.dir", "capture_dir", _str, "",
         "kafka-net: write wire captures here (one file series per Processor); "
         "empty = off."),
    _Key("capture.segment.bytes", "capture_segment_bytes", _int(1024), "67108864",
         "kafka-net: start a new capture file once one reaches this size."),
    _Key("capture.max.frame.bytes", "capture_max_frame_bytes", _int(0), "1048576",
         "kafka-net: frames are cut to this many bytes in captures (the cut is recorded)."),
)

_BY_NAME = {k.name: k for k in KEYS}
# The per-listener forms Kafka's ConnectionQuotas reads (valuesWithPrefixOverride
# with the prefix listener.name.<listener name in lower case>.); every other
# listener.name.* key is accepted and ignored.
_LISTENER_QUOTA_RE = re.compile(r"listener\.name\.(?P<listener>[^.]+)\."
                                r"(?P<key>max\.connections|max\.connection\.creation\.rate)")
_LISTENER_QUOTA_ATTRS = {"max.connections": "listener_max_connections",
                         "max.connection.creation.rate": "listener_max_connection_creation_rate"}
_ALIASES = {"broker.id": "node.id"}
_LISTENER_KEYS = ("listeners", "advertised.listeners")

# Real Kafka broker keys that kafka-net does not use: accepted with a warning, as
# Kafka itself warns about keys it does not know (the list: kafka_keys.py).
IGNORED_KAFKA_KEYS = KAFKA_BROKER_KEYS - _BY_NAME.keys()


# The development profile (``kafka-net serve --dev``, ``kafka_net.Broker``, the
# pytest fixture): settings that make a broker quick for tests and local work
# without changing what any request means.  Kafka's quickstart, Testcontainers
# and Redpanda's dev mode make the same choice for the rebalance delay.
DEV_PROFILE: dict[str, str] = {
    # A first group join otherwise waits 3 s for more members to arrive.
    "group.initial.rebalance.delay.ms": "0",
    # On CPython threads share one GIL: 1 network and 2 handler threads answer
    # small requests faster than Kafka's 3 + 8 (README, "Thread counts").
    "num.network.threads": "1",
    "num.io.threads": "2",
}


def canonical_key(key: str) -> str:
    """The key's name in :data:`KEYS` (``broker.id`` -> ``node.id``), else ``key``."""
    key = key.strip()
    return _ALIASES.get(key, key)


@dataclass(frozen=True)
class ServerConfig:
    node_id: int = 1
    listeners: tuple[EndPoint, ...] = field(
        default_factory=lambda: parse_listeners("PLAINTEXT://127.0.0.1:9092"))
    advertised_listeners: tuple[EndPoint, ...] = ()
    listener_security_protocol_map: tuple[tuple[str, str], ...] = tuple(
        parse_protocol_map(DEFAULT_PROTOCOL_MAP).items())
    controller_listener_names: tuple[str, ...] = ()
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
    delete_topic_enable: bool = True
    message_max_bytes: int = 1048588
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    max_connections: int = INT_MAX
    max_connections_per_ip: int = INT_MAX
    max_connections_per_ip_overrides: tuple[tuple[str, int], ...] = ()
    max_connection_creation_rate: int = INT_MAX
    inter_broker_listener_name: str = ""
    # listener.name.<l>.max.connections / .max.connection.creation.rate, as
    # (LISTENER, value) pairs; a listener without one falls back to the broker key.
    listener_max_connections: tuple[tuple[str, int], ...] = ()
    listener_max_connection_creation_rate: tuple[tuple[str, int], ...] = ()
    queued_max_request_bytes: int = -1
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    max_partitions_per_request: int = 10000
    max_broker_partitions: int = 100000
    message_max_uncompressed_bytes: int = 4194304
    capture_dir: str = ""
    capture_segment_bytes: int = 67108864
    capture_max_frame_bytes: int = 1048576
    ignored: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # ServerConfig(listeners="PLAINTEXT://127.0.0.1:0") is the natural first
        # guess in Python; it used to fail only at startup with an AttributeError.
        for attr in ("listeners", "advertised_listeners"):
            value = getattr(self, attr)
            if isinstance(value, str):
                object.__setattr__(self, attr, parse_listeners(value, attr.replace("_", ".")))

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> "ServerConfig":
        """Build from string key/values, as read from a file or ``--override``.

        Error messages name the key as written (``broker.id``, not ``node.id``).
        """
        given: dict[str, tuple[str, str]] = {}   # canonical key -> (as written, value)
        ignored = []
        per_listener: list[tuple[re.Match, str]] = []
        for raw_key, raw_value in props.items():
            written = raw_key.strip()
            key = canonical_key(written)
            if key not in _BY_NAME:
                if (m := _LISTENER_QUOTA_RE.fullmatch(key)) is not None:
                    per_listener.append((m, raw_value))
                    continue
                if key in IGNORED_KAFKA_KEYS or key.startswith("listener.name."):
                    ignored.append(key)
                    continue
                raise ConfigError(_unknown_key_message(key))
            if key in given and given[key][1].strip() != raw_value.strip():
                raise ConfigError(f"{given[key][0]} and {written} name the same setting "
                                  f"but disagree ('{given[key][1]}' vs '{raw_value}')")
            given[key] = (written, raw_value)

        values: dict[str, Any] = {}
        for key, (written, raw_value) in given.items():
            if key not in _LISTENER_KEYS:
                values[_BY_NAME[key].attr] = _BY_NAME[key].convert(written, raw_value)
        # Listeners last: they depend on the protocol map and the controller names.
        protocols = dict(values.get("listener_security_protocol_map",
                                    cls.listener_security_protocol_map))
        controller = values.get("controller_listener_names", ())
        for key in _LISTENER_KEYS:
            written, raw_value = given.get(key, (key, _BY_NAME[key].default))
            endpoints = parse_listeners(raw_value, written, protocols, skip=controller)
            if key == "listeners" and not endpoints:
                raise ConfigError(
                    "listeners: at least one listener is required" + (
                        f" besides the controller listeners ({', '.join(controller)})"
                        if controller else ""))
            values[_BY_NAME[key].attr] = endpoints
        _parse_listener_quotas(per_listener, values, controller, ignored)
        cfg = cls(**values, ignored=tuple(sorted(ignored)))
        cfg.validate()
        return cfg

    def validate(self) -> None:
        if not self.listeners:
            raise ConfigError("listeners: at least one listener is required")
        if 0 < self.queued_max_request_bytes < self.socket_request_max_bytes:
            # Kafka's rule: the pool must hold at least one largest request.
            raise ConfigError(
                "queued.max.request.bytes: must be at least socket.request.max.bytes "
                f"({self.socket_request_max_bytes}), or -1 for no bound")
        if self.max_connections_per_ip == 0 and not self.max_connections_per_ip_overrides:
            raise ConfigError(
                "max.connections.per.ip: 0 is only allowed with "
                "max.connections.per.ip.overrides")
        names = {e.listener_name for e in self.listeners}
        if self.inter_broker_listener_name and self.inter_broker_listener_name not in names:
            raise ConfigError(
                "inter.broker.listener.name: must be a listener name defined in "
                "advertised.listeners. The valid options based on currently configured "
                f"listeners are {','.join(sorted(names))}")
        for attr in _LISTENER_QUOTA_ATTRS.values():
            for name, _ in getattr(self, attr):
                if name not in names:
                    raise ConfigError(f"listener.name.{name.lower()}: names a listener "
                                      "not in listeners")
        if self.advertised_listeners:
            for e in self.advertised_listeners:
                if e.listener_name not in names:
                    raise ConfigError(
                        f"advertised.listeners: '{e}' names a listener not in listeners")
                if e.port == 0:
                    raise ConfigError(f"advertised.listeners: '{e}' cannot advertise port 0")

    def inter_broker_listener(self) -> str:
        """Kafka's interBrokerListenerName: inter.broker.listener.name, else the
        listener named after security.inter.broker.protocol (PLAINTEXT)."""
        return self.inter_broker_listener_name or "PLAINTEXT"

    def listener_connection_limits(self, listener: str) -> tuple[int, int]:
        """(max.connections, max.connection.creation.rate) of ``listener``: its
        listener.name.<l>. values, else the broker's (valuesWithPrefixOverride)."""
        return (dict(self.listener_max_connections).get(listener, self.max_connections),
                dict(self.listener_max_connection_creation_rate).get(
                    listener, self.max_connection_creation_rate))

    def with_overrides(self, **changes: Any) -> "ServerConfig":
        """A copy with attributes replaced (tests use this)."""
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        data.update(changes)
        cfg = ServerConfig(**data)
        cfg.validate()
        return cfg


def _parse_listener_quotas(per_listener, values: dict, controller, ignored: list) -> None:
    """listener.name.<l>.max.connections and .max.connection.creation.rate into
    ``values``; a controller listener's are ignored (kafka-net opens none)."""
    found: dict[str, dict[str, int]] = {attr: {} for attr in _LISTENER_QUOTA_ATTRS.values()}
    for m, raw_value in per_listener:
        written, listener = m.group(0), m["listener"]
        if listener != listener.lower():
            raise ConfigError(f"{written}: Kafka reads listener settings under the listener "
                              f"name in lower case: listener.name.{listener.lower()}.{m['key']}")
        if listener.upper() in controller:
            ignored.append(written)
            continue
        found[_LISTENER_QUOTA_ATTRS[m["key"]]][listener.upper()] = _int(0)(written, raw_value)
    for attr, by_listener in found.items():
        values[attr] = tuple(sorted(by_listener.items()))


def _unknown_key_message(key: str) -> str:
    known = [k.name for k in KEYS] + list(_ALIASES) + sorted(IGNORED_KAFKA_KEYS)
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"unknown configuration key '{key}'{hint}"


# --- the .properties format -----------------------------------------------------------
#
# java.util.Properties.load, in brief:
# * lines end at \n, \r or \r\n (and nowhere else: \f is whitespace, \x85 is text);
# * leading whitespace (space, \t, \f) is skipped; a line whose first character
#   is then # or ! is a comment; a blank line is nothing;
# * a line ending in an odd number of backslashes continues on the next line,
#   whose leading whitespace is skipped;
# * the key ends at the first unescaped '=', ':' or whitespace; whitespace, then
#   one '=' or ':', then whitespace, separate it from the value;
# * escapes: \t \n \r \f, \uXXXX, and a backslash before any other character
#   stands for that character (so "\=" and "\ " put '=' and ' ' in a key).

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``#``/``!`` comments, ``=``/``:``/space
    separators, backslash line continuation and escapes (``\\uXXXX`` included).

    Never raises: malformed escapes are read leniently.  A later key wins.
    """
    props: dict[str, str] = {}
    for line in _logical_lines(_LINE_BREAK.split(text)):
        key, value = _split_key_value(line)
        props[_unescape(key)] = _unescape(value)
    return props


def _logical_lines(lines: Iterable[str]) -> Iterable[str]:
    pending: str | None = None     # a line continued with a backslash
    for raw in lines:
        line = raw.lstrip(_WHITESPACE)
        if pending is None and (not line or line[0] in "#!"):
            continue
        # An odd number of trailing backslashes continues the line.
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=:" or c in _WHITESPACE:
            break
        i += 1
    key, rest = line[:i], line[i:].lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt == "u" and _HEX4.fullmatch(s[i + 2:i + 6]):
                out.append(chr(int(s[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return _join_surrogates("".join(out))


def _join_surrogates(s: str) -> str:
    # Java strings are UTF-16, so a character outside the BMP is written as two
    # escapes (\uD83D\uDE00); join such pairs into one character.
    if not any("\ud800" <= c <= "\udfff" for c in s):
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def load_config(path: str | None, overrides: Iterable[str] = (),
                base: Mapping[str, str] | None = None) -> ServerConfig:
    """Read ``path`` (optional) and apply ``key=value`` overrides, in order.

    ``base`` (the --dev profile) lies under both: the file and the overrides win.

    An override replaces the file's value even when the two spell the key
    differently (``broker.id`` / ``node.id``).
    """
    props: dict[str, str] = {}
    if path is not None:
        try:
            with open(path, encoding="utf-8") as fh:
                props.update(parse_properties(fh.read()))
        except OSError as exc:
            raise ConfigError(
                f"cannot read config file {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"cannot read config file {path}: not UTF-8 ({exc.reason} "
                              f"at byte {exc.start})") from None
    written = {canonical_key(k) for k in props}
    for key, value in (base or {}).items():
        if canonical_key(key) not in written:
            props[key] = value
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--override '{item}' is not of the form key=value")
        _set(props, key, value)
    return ServerConfig.from_properties(props)


def _set(props: dict[str, str], key: str, value: str) -> None:
    """Set ``key``, replacing it under any other spelling (broker.id / node.id)."""
    for existing in [k for k in props if canonical_key(k) == canonical_key(key)]:
        del props[existing]
    props[key] = value
