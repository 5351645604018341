"""ServerConfig: the broker's settings as typed values, built from string
key/values (a ``.properties`` file and overrides) and checked as a whole.

Every field default is its key's default in :data:`~kafka_net.config.broker_keys.KEYS`,
converted (:func:`~kafka_net.config.broker_keys.default_of`): the table is the one
place a default is written.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Mapping

from kafka_net.config import sasl
from kafka_net.config.broker_keys import (
    ALIASES, BY_NAME, IGNORED_KAFKA_KEYS, KEYS, SSL_KEYS, canonical_key, default_of)
from kafka_net.config.errors import ConfigError
from kafka_net.config.listeners import EndPoint, parse_listeners
from kafka_net.config.values import integer

# The per-listener forms (valuesWithPrefixOverride with the prefix
# listener.name.<listener name in lower case>.) of ConnectionQuotas' two keys
# and of the ssl.* keys; every other listener.name.* key is accepted and ignored.
_LISTENER_PREFIX_RE = re.compile(r"listener\.name\.(?P<listener>[^.]+)\.(?P<key>.+)")
_LISTENER_QUOTA_ATTRS = {"max.connections": "listener_max_connections",
                         "max.connection.creation.rate": "listener_max_connection_creation_rate"}
_LISTENER_KEYS = ("listeners", "advertised.listeners")
_SSL_KEY_NAMES = frozenset(k.name for k in SSL_KEYS)


# Why ``init=False, repr=False, eq=False``: a plain ``@dataclass(frozen=True)``
# writes the source of an ``__init__`` with one parameter per field, a
# ``__repr__``, ``__eq__`` and ``__hash__`` over all of them, and compiles each at
# import: for ~140 fields that was 8-14 ms of every ``kafka-net serve`` start
# (issue 28; the whole start-up's budget is 150 ms).  The four methods below do
# the same by looping over the field table once per call instead.  It is still a
# dataclass: ``fields()``, ``dataclasses.replace()`` and ``frozen`` work as before.
@dataclass(frozen=True, init=False, repr=False, eq=False)
class ServerConfig:
    """The broker's settings: one field per key, named after it (``node.id`` is
    ``node_id``); build one with :meth:`from_properties`, or with keywords."""

    # Each key's field; its default comes from KEYS (default_of), where it is documented.
    node_id: int = default_of("node_id")
    listeners: tuple[EndPoint, ...] = default_of("listeners")
    advertised_listeners: tuple[EndPoint, ...] = default_of("advertised_listeners")
    listener_security_protocol_map: tuple[tuple[str, str], ...] = default_of(
        "listener_security_protocol_map")
    controller_listener_names: tuple[str, ...] = default_of("controller_listener_names")
    num_network_threads: int = default_of("num_network_threads")
    num_io_threads: int = default_of("num_io_threads")
    queued_max_requests: int = default_of("queued_max_requests")
    socket_request_max_bytes: int = default_of("socket_request_max_bytes")
    socket_send_buffer_bytes: int = default_of("socket_send_buffer_bytes")
    socket_receive_buffer_bytes: int = default_of("socket_receive_buffer_bytes")
    socket_listen_backlog_size: int = default_of("socket_listen_backlog_size")
    connections_max_idle_ms: int = default_of("connections_max_idle_ms")
    auto_create_topics_enable: bool = default_of("auto_create_topics_enable")
    num_partitions: int = default_of("num_partitions")
    default_replication_factor: int = default_of("default_replication_factor")
    cluster_id: str = default_of("cluster_id")
    as_version: str | None = default_of("as_version")
    shutdown_timeout_ms: int = default_of("shutdown_timeout_ms")
    delete_topic_enable: bool = default_of("delete_topic_enable")
    message_max_bytes: int = default_of("message_max_bytes")
    log_store: str = default_of("log_store")
    log_dirs: tuple[str, ...] = default_of("log_dirs")
    log_dir: str = default_of("log_dir")
    log_segment_bytes: int = default_of("log_segment_bytes")
    log_roll_ms: int | None = default_of("log_roll_ms")
    log_roll_hours: int = default_of("log_roll_hours")
    log_retention_ms: int | None = default_of("log_retention_ms")
    log_retention_minutes: int | None = default_of("log_retention_minutes")
    log_retention_hours: int = default_of("log_retention_hours")
    log_retention_bytes: int = default_of("log_retention_bytes")
    log_index_interval_bytes: int = default_of("log_index_interval_bytes")
    log_index_size_max_bytes: int = default_of("log_index_size_max_bytes")
    log_flush_interval_messages: int = default_of("log_flush_interval_messages")
    log_flush_interval_ms: int | None = default_of("log_flush_interval_ms")
    log_flush_scheduler_interval_ms: int = default_of("log_flush_scheduler_interval_ms")
    log_flush_offset_checkpoint_interval_ms: int = default_of(
        "log_flush_offset_checkpoint_interval_ms")
    log_flush_start_offset_checkpoint_interval_ms: int = default_of(
        "log_flush_start_offset_checkpoint_interval_ms")
    log_segment_delete_delay_ms: int = default_of("log_segment_delete_delay_ms")
    log_retention_check_interval_ms: int = default_of("log_retention_check_interval_ms")
    log_initial_task_delay_ms: int = default_of("log_initial_task_delay_ms")
    log_cleaner_enable: bool = default_of("log_cleaner_enable")
    log_cleaner_threads: int = default_of("log_cleaner_threads")
    log_cleaner_backoff_ms: int = default_of("log_cleaner_backoff_ms")
    log_cleaner_dedupe_buffer_size: int = default_of("log_cleaner_dedupe_buffer_size")
    log_cleaner_min_cleanable_ratio: float = default_of("log_cleaner_min_cleanable_ratio")
    log_cleaner_delete_retention_ms: int = default_of("log_cleaner_delete_retention_ms")
    log_cleaner_min_compaction_lag_ms: int = default_of("log_cleaner_min_compaction_lag_ms")
    log_cleaner_max_compaction_lag_ms: int = default_of("log_cleaner_max_compaction_lag_ms")
    group_min_session_timeout_ms: int = default_of("group_min_session_timeout_ms")
    group_max_session_timeout_ms: int = default_of("group_max_session_timeout_ms")
    group_initial_rebalance_delay_ms: int = default_of("group_initial_rebalance_delay_ms")
    group_max_size: int = default_of("group_max_size")
    group_consumer_heartbeat_interval_ms: int = default_of("group_consumer_heartbeat_interval_ms")
    group_consumer_session_timeout_ms: int = default_of("group_consumer_session_timeout_ms")
    group_consumer_assignors: tuple = default_of("group_consumer_assignors")
    group_consumer_max_size: int = default_of("group_consumer_max_size")
    group_streams_heartbeat_interval_ms: int = default_of("group_streams_heartbeat_interval_ms")
    group_streams_session_timeout_ms: int = default_of("group_streams_session_timeout_ms")
    group_streams_num_standby_replicas: int = default_of("group_streams_num_standby_replicas")
    group_streams_max_size: int = default_of("group_streams_max_size")
    group_streams_initial_rebalance_delay_ms: int = default_of(
        "group_streams_initial_rebalance_delay_ms")
    group_streams_num_warmup_replicas: int = default_of("group_streams_num_warmup_replicas")
    errors_deadletterqueue_auto_create_topics_enable: bool = default_of(
        "errors_deadletterqueue_auto_create_topics_enable")
    group_streams_acceptable_recovery_lag: int = default_of(
        "group_streams_acceptable_recovery_lag")
    group_streams_task_offset_interval_ms: int = default_of(
        "group_streams_task_offset_interval_ms")
    group_consumer_regex_refresh_interval_ms: int = default_of(
        "group_consumer_regex_refresh_interval_ms")
    group_consumer_migration_policy: str = default_of("group_consumer_migration_policy")
    group_share_record_lock_duration_ms: int = default_of("group_share_record_lock_duration_ms")
    group_share_min_record_lock_duration_ms: int = default_of(
        "group_share_min_record_lock_duration_ms")
    group_share_max_record_lock_duration_ms: int = default_of(
        "group_share_max_record_lock_duration_ms")
    group_share_delivery_count_limit: int = default_of("group_share_delivery_count_limit")
    group_share_partition_max_record_locks: int = default_of(
        "group_share_partition_max_record_locks")
    group_share_session_timeout_ms: int = default_of("group_share_session_timeout_ms")
    group_share_heartbeat_interval_ms: int = default_of("group_share_heartbeat_interval_ms")
    group_share_max_size: int = default_of("group_share_max_size")
    group_share_max_share_sessions: int = default_of("group_share_max_share_sessions")
    share_coordinator_state_topic_num_partitions: int = default_of(
        "share_coordinator_state_topic_num_partitions")
    share_coordinator_state_topic_replication_factor: int = default_of(
        "share_coordinator_state_topic_replication_factor")
    share_coordinator_state_topic_segment_bytes: int = default_of(
        "share_coordinator_state_topic_segment_bytes")
    share_coordinator_snapshot_update_records_per_snapshot: int = default_of(
        "share_coordinator_snapshot_update_records_per_snapshot")
    offset_metadata_max_bytes: int = default_of("offset_metadata_max_bytes")
    offsets_retention_minutes: int = default_of("offsets_retention_minutes")
    offsets_retention_check_interval_ms: int = default_of("offsets_retention_check_interval_ms")
    offsets_topic_num_partitions: int = default_of("offsets_topic_num_partitions")
    offsets_topic_replication_factor: int = default_of("offsets_topic_replication_factor")
    offsets_topic_segment_bytes: int = default_of("offsets_topic_segment_bytes")
    transaction_state_log_num_partitions: int = default_of(
        "transaction_state_log_num_partitions")
    transaction_state_log_replication_factor: int = default_of(
        "transaction_state_log_replication_factor")
    transaction_state_log_segment_bytes: int = default_of("transaction_state_log_segment_bytes")
    transaction_max_timeout_ms: int = default_of("transaction_max_timeout_ms")
    transactional_id_expiration_ms: int = default_of("transactional_id_expiration_ms")
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = default_of(
        "transaction_abort_timed_out_transaction_cleanup_interval_ms")
    transaction_remove_expired_transaction_cleanup_interval_ms: int = default_of(
        "transaction_remove_expired_transaction_cleanup_interval_ms")
    max_connections: int = default_of("max_connections")
    max_connections_per_ip: int = default_of("max_connections_per_ip")
    max_connections_per_ip_overrides: tuple[tuple[str, int], ...] = default_of(
        "max_connections_per_ip_overrides")
    max_connection_creation_rate: int = default_of("max_connection_creation_rate")
    inter_broker_listener_name: str = default_of("inter_broker_listener_name")
    # listener.name.<l>.max.connections / .max.connection.creation.rate, as
    # (LISTENER, value) pairs; a listener without one falls back to the broker key.
    listener_max_connections: tuple[tuple[str, int], ...] = ()
    listener_max_connection_creation_rate: tuple[tuple[str, int], ...] = ()
    sasl_enabled_mechanisms: tuple[str, ...] = default_of("sasl_enabled_mechanisms")
    connections_max_reauth_ms: int = default_of("connections_max_reauth_ms")
    connection_failed_authentication_delay_ms: int = default_of(
        "connection_failed_authentication_delay_ms")
    socket_request_read_timeout_ms: int = default_of("socket_request_read_timeout_ms")
    socket_request_read_min_bytes_per_second: int = default_of(
        "socket_request_read_min_bytes_per_second")
    connection_authentication_timeout_ms: int = default_of(
        "connection_authentication_timeout_ms")
    sasl_server_max_receive_size: int = default_of("sasl_server_max_receive_size")
    scram_credentials: tuple[str, ...] = default_of("scram_credentials")
    delegation_token_secret_key: str = field(default=default_of("delegation_token_secret_key"),
                                             repr=False)
    delegation_token_max_lifetime_ms: int = default_of("delegation_token_max_lifetime_ms")
    delegation_token_expiry_time_ms: int = default_of("delegation_token_expiry_time_ms")
    delegation_token_expiry_check_interval_ms: int = default_of(
        "delegation_token_expiry_check_interval_ms")
    # listener.name.<l>.<mechanism>.sasl.jaas.config as (LISTENER, MECHANISM, text).
    listener_sasl_jaas_configs: tuple[tuple[str, str, str], ...] = ()
    authorizer_class_name: str = default_of("authorizer_class_name")
    super_users: tuple[str, ...] = default_of("super_users")
    allow_everyone_if_no_acl_found: bool = default_of("allow_everyone_if_no_acl_found")
    queued_max_request_bytes: int = default_of("queued_max_request_bytes")
    quota_window_num: int = default_of("quota_window_num")
    quota_window_size_seconds: int = default_of("quota_window_size_seconds")
    max_partitions_per_request: int = default_of("max_partitions_per_request")
    max_broker_partitions: int = default_of("max_broker_partitions")
    message_max_uncompressed_bytes: int = default_of("message_max_uncompressed_bytes")
    metadata_log_dir: str = default_of("metadata_log_dir")
    metadata_log_max_record_bytes_between_snapshots: int = default_of(
        "metadata_log_max_record_bytes_between_snapshots")
    metadata_log_max_snapshot_interval_ms: int = default_of(
        "metadata_log_max_snapshot_interval_ms")
    metadata_log_truncate_on_corruption: bool = default_of("metadata_log_truncate_on_corruption")
    ssl_keystore_type: str = default_of("ssl_keystore_type")
    ssl_keystore_location: str = default_of("ssl_keystore_location")
    ssl_keystore_certificate_chain: str = default_of("ssl_keystore_certificate_chain")
    ssl_keystore_key: str = field(default=default_of("ssl_keystore_key"), repr=False)
    ssl_key_password: str = field(default=default_of("ssl_key_password"), repr=False)
    ssl_truststore_type: str = default_of("ssl_truststore_type")
    ssl_truststore_location: str = default_of("ssl_truststore_location")
    ssl_truststore_certificates: str = default_of("ssl_truststore_certificates")
    ssl_client_auth: str = default_of("ssl_client_auth")
    ssl_enabled_protocols: tuple[str, ...] = default_of("ssl_enabled_protocols")
    ssl_protocol: str = default_of("ssl_protocol")
    ssl_cipher_suites: tuple[str, ...] = default_of("ssl_cipher_suites")
    ssl_principal_mapping_rules: str = default_of("ssl_principal_mapping_rules")
    # listener.name.<l>.ssl.* as (LISTENER, ((key, value), ...)) pairs, values
    # converted; a key a listener does not set falls back to the broker's ssl.* key.
    listener_ssl: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = field(
        default=(), repr=False)
    capture_dir: str = default_of("capture_dir")
    capture_segment_bytes: int = default_of("capture_segment_bytes")
    capture_max_frame_bytes: int = default_of("capture_max_frame_bytes")
    metrics_listener: str = default_of("metrics_listener")
    faults_control_allowed_hosts: tuple[str, ...] = default_of("faults_control_allowed_hosts")
    telemetry_max_bytes: int = default_of("telemetry_max_bytes")
    ignored: tuple[str, ...] = ()

    def __init__(self, **values: Any) -> None:
        for f in _FIELDS:
            if f.name in values:
                value = values.pop(f.name)
            elif f.default is not MISSING:
                value = f.default
            elif f.default_factory is not MISSING:
                value = f.default_factory()
            else:
                raise TypeError(f"ServerConfig() missing keyword argument: '{f.name}'")
            object.__setattr__(self, f.name, value)   # frozen: no plain assignment
        if values:
            raise TypeError(f"ServerConfig() got an unexpected keyword argument "
                            f"'{next(iter(values))}'")
        self.__post_init__()

    def _values(self) -> tuple:
        return tuple(getattr(self, f.name) for f in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in _FIELDS if f.repr)
        return f"{type(self).__qualname__}({shown})"

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
        jaas_keys: list[tuple[re.Match, str]] = []
        for raw_key, raw_value in props.items():
            written = raw_key.strip()
            key = canonical_key(written)
            if key not in BY_NAME:
                m = _LISTENER_PREFIX_RE.fullmatch(key)
                if m is not None and (m["key"] in _LISTENER_QUOTA_ATTRS
                                      or m["key"] in _SSL_KEY_NAMES):
                    per_listener.append((m, raw_value))
                    continue
                if (m := sasl.JAAS_KEY_RE.fullmatch(key)) is not None:
                    jaas_keys.append((m, raw_value))
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
                values[BY_NAME[key].attr] = BY_NAME[key].convert(written, raw_value)
        # Listeners last: they depend on the protocol map and the controller names.
        protocols = dict(values.get("listener_security_protocol_map",
                                    cls.listener_security_protocol_map))
        controller = values.get("controller_listener_names", ())
        for key in _LISTENER_KEYS:
            written, raw_value = given.get(key, (key, BY_NAME[key].default))
            endpoints = parse_listeners(raw_value, written, protocols, skip=controller)
            if key == "listeners" and not endpoints:
                raise ConfigError(
                    "listeners: at least one listener is required" + (
                        f" besides the controller listeners ({', '.join(controller)})"
                        if controller else ""))
            values[BY_NAME[key].attr] = endpoints
        _parse_listener_quotas(per_listener, values, controller, ignored)
        values["listener_sasl_jaas_configs"] = tuple(sorted(
            sasl.parse_jaas_key(m, raw_value) for m, raw_value in jaas_keys))
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
        for attr in (*_LISTENER_QUOTA_ATTRS.values(), "listener_ssl"):
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
        sasl.validate(self)
        self._validate_share_group_bounds()

    def _validate_share_group_bounds(self) -> None:
        # Kafka's ShareGroupConfig: the lock duration within its min and max keys.
        low, value, high = (self.group_share_min_record_lock_duration_ms,
                            self.group_share_record_lock_duration_ms,
                            self.group_share_max_record_lock_duration_ms)
        if value < low:
            raise ConfigError("group.share.record.lock.duration.ms must be greater than or "
                              "equal to group.share.min.record.lock.duration.ms")
        if value > high:
            raise ConfigError("group.share.record.lock.duration.ms must be less than or "
                              "equal to group.share.max.record.lock.duration.ms")

    def inter_broker_listener(self) -> str:
        """Kafka's interBrokerListenerName: inter.broker.listener.name, else the
        listener named after security.inter.broker.protocol (PLAINTEXT)."""
        return self.inter_broker_listener_name or "PLAINTEXT"

    def ssl_config(self, listener: str) -> dict[str, tuple[str, Any]]:
        """``listener``'s SSL settings: ``{ssl key: (key as to name it in an error,
        value)}``, each its listener.name.<l>. value, else the broker's."""
        own = dict(dict(self.listener_ssl).get(listener, ()))
        prefix = f"listener.name.{listener.lower()}."
        return {k.name: ((prefix + k.name, own[k.name]) if k.name in own
                         else (k.name, getattr(self, k.attr)))
                for k in SSL_KEYS}

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


_FIELDS = fields(ServerConfig)   # in declaration order, as the generated methods had them


def _parse_listener_quotas(per_listener, values: dict, controller, ignored: list) -> None:
    """listener.name.<l>.max.connections, .max.connection.creation.rate and .ssl.*
    into ``values``; a controller listener's are ignored (kafka-net opens none)."""
    found: dict[str, dict[str, int]] = {attr: {} for attr in _LISTENER_QUOTA_ATTRS.values()}
    ssl: dict[str, dict[str, Any]] = {}
    for m, raw_value in per_listener:
        written, listener = m.group(0), m["listener"]
        if listener != listener.lower():
            raise ConfigError(f"{written}: Kafka reads listener settings under the listener "
                              f"name in lower case: listener.name.{listener.lower()}.{m['key']}")
        if listener.upper() in controller:
            ignored.append(written)
        elif m["key"] in _SSL_KEY_NAMES:
            value = BY_NAME[m["key"]].convert(written, raw_value)
            ssl.setdefault(listener.upper(), {})[m["key"]] = value
        else:
            found[_LISTENER_QUOTA_ATTRS[m["key"]]][listener.upper()] = integer(0)(
                written, raw_value)
    for attr, by_listener in found.items():
        values[attr] = tuple(sorted(by_listener.items()))
    values["listener_ssl"] = tuple(sorted((name, tuple(sorted(keys.items())))
                                          for name, keys in ssl.items()))


def is_known_key(key: str) -> bool:
    """Whether :meth:`ServerConfig.from_properties` accepts ``key`` (used, read or
    knowingly ignored) instead of refusing it as unknown."""
    key = canonical_key(key.strip())
    return (key in BY_NAME or key in IGNORED_KAFKA_KEYS or key.startswith("listener.name.")
            or sasl.JAAS_KEY_RE.fullmatch(key) is not None)


def _unknown_key_message(key: str) -> str:
    known = [k.name for k in KEYS] + list(ALIASES) + sorted(IGNORED_KAFKA_KEYS)
    import difflib   # only a key nobody knows needs it: not imported by every start
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"unknown configuration key '{key}'{hint}"

