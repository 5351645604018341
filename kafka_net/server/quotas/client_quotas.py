"""The client quota configuration: what AlterClientQuotas changes and
DescribeClientQuotas reads (KIP-546).

In KRaft Kafka this is three classes: the controller's
``ClientQuotaControlManager`` validates an alteration and writes records,
the ``ClientQuotasImage`` answers describes, and the broker's
``ClientQuotaMetadataManager`` pushes each change to the enforcing side (the
quota managers, and ``ConnectionQuotas`` for ``ip`` entities).  A single node
does all three in :class:`ClientQuotas`.

An entity is a set of (entity type, name) pairs; a ``None`` name is the
default entity of that type.  Valid entities are a user and/or a client-id
(keys ``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``,
``controller_mutation_rate``), or an ip alone (``connection_creation_rate``).
``controller_mutation_rate`` is stored and described but not enforced: this
broker has no controller mutation quota.  The keys, their types and Kafka's
checks of a value are :mod:`kafka_net.config.quota_keys`.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading

from kafka_net.config.quota_keys import IP_KEYS, USER_AND_CLIENT_KEYS, validate_quota_value
from kafka_net.log_safety import escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.quotas.client_quota_manager import DEFAULT

log = logging.getLogger(__name__)

USER, CLIENT_ID, IP = "user", "client-id", "ip"
MATCH_TYPE_EXACT, MATCH_TYPE_DEFAULT, MATCH_TYPE_SPECIFIED = 0, 1, 2

EntityKey = tuple  # ((entity type, name or None), ...) sorted by type


class QuotaRequestError(Exception):
    """A request-level error: error code and Kafka's message."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code, self.message = error_code, message


def entity_text(entity: dict) -> str:
    """Kafka's ClientQuotaEntity.toString, for messages: ClientQuotaEntity(entries={user=a})."""
    inner = ", ".join(f"{t}={'null' if n is None else escape(n)}" for t, n in entity.items())
    return f"ClientQuotaEntity(entries={{{inner}}})"


class ClientQuotas:
    """The quota configuration and where changes go.

    ``managers`` maps a user/client-id key to its :class:`ClientQuotaManager`;
    ``ip_quotas`` is the seam to ConnectionQuotas: any object with
    ``update_ip_connection_rate_quota(ip: str | None, rate: float | None)``.
    """

    def __init__(self, managers: dict, ip_quotas=None) -> None:
        self.managers = managers
        self.ip_quotas = ip_quotas
        self.on_change = lambda: None   # called after every applied alteration
        # Where an alteration's ClientQuotaRecords go: applied at once unless the
        # Controller routes them through the metadata log (which then applies them
        # with apply_record, as a restart's replay does).
        self.commit = self._apply_records
        # Held around a whole alteration, outside _lock: the Controller makes it the
        # metadata log's lock, so every metadata change takes that lock first (a
        # snapshot, under it, reads this class's state through _lock).
        self.change_lock = threading.RLock()
        # Re-entrant: alter holds it while the committed records are applied.
        self._lock = threading.RLock()
        self._entities: dict[EntityKey, dict[str, float]] = {}

    def set_ip_quotas(self, ip_quotas) -> None:
        """Attach ConnectionQuotas (the SocketServer is built after the quotas
        were replayed) and hand it every ``ip`` quota already set."""
        with self._lock:
            self.ip_quotas = ip_quotas
            for key, values in self._entities.items():
                entity = dict(key)
                if IP in entity:
                    for quota_key, value in values.items():
                        self._push(entity, quota_key, value)

    # -- AlterClientQuotas ---------------------------------------------------------

    def alter(self, entries: list[dict], validate_only: bool) -> list[dict]:
        """Validate and (unless ``validate_only``) apply; one result per entity:
        ``{"error_code", "error_message", "entity"}`` (the entity as sent)."""
        results: dict[EntityKey, dict] = {}
        changes: list[tuple[dict, str, float | None]] = []
        with self.change_lock, self._lock:
            for entry in entries:
                entity, error = _entity_of(entry["entity"])
                key = _key(entity) if entity is not None else ("invalid", len(results))
                if key in results:
                    error = (ErrorCode.INVALID_REQUEST,
                             f"Ignoring duplicate entity {entity_text(entity)}")
                elif error is None:
                    error = self._validate_ops(entity, key, entry["ops"], changes)
                code, message = error or (ErrorCode.NONE, None)
                results[key] = {"error_code": code, "error_message": message,
                                "entity": entry["entity"]}
            if not validate_only and changes:
                self.commit([client_quota_record(entity, quota_key, value)
                             for entity, quota_key, value in changes])
        return list(results.values())

    def apply_record(self, fields: dict) -> None:
        """Apply one ClientQuotaRecord (committed now, or replayed at startup)."""
        entity = {e["entityType"]: e["entityName"] for e in fields["entity"]}
        with self._lock:
            self._apply(entity, fields["key"], None if fields["remove"] else fields["value"])
            self.on_change()

    def records(self) -> list[tuple[str, dict]]:
        """Every quota set, as the ClientQuotaRecords that set it (a snapshot)."""
        with self._lock:
            return [client_quota_record(dict(key), quota_key, value)
                    for key, values in self._entities.items()
                    for quota_key, value in sorted(values.items())]

    def _apply_records(self, records: list[tuple[str, dict]]) -> None:
        for _, fields in records:
            self.apply_record(fields)

    def _validate_ops(self, entity: dict, key: EntityKey, ops: list[dict],
                      changes: list) -> tuple[int, str] | None:
        """ClientQuotaControlManager.alterClientQuotaEntity: all of an entity's
        changes or none of them."""
        alterations: dict[str, float | None] = {}
        for op in ops:
            if op["key"] in alterations:
                return (ErrorCode.INVALID_REQUEST,
                        f"Duplicate quota key {op['key']} not updating quota for this "
                        f"entity {entity_text(entity)}")
            alterations[op["key"]] = None if op["remove"] else op["value"]
        valid_keys, error = _config_keys_for(entity)
        if error:
            return error
        current = self._entities.get(key, {})
        mine = []
        for quota_key, value in alterations.items():
            if value is None:
                if quota_key in current:
                    mine.append((entity, quota_key, None))
                continue
            error = validate_quota_value(valid_keys, quota_key, value)
            if error:
                return ErrorCode.INVALID_REQUEST, error
            if current.get(quota_key) != value:
                mine.append((entity, quota_key, value))
        changes.extend(mine)
        return None

    def _apply(self, entity: dict, quota_key: str, value: float | None) -> None:
        key = _key(entity)
        values = self._entities.setdefault(key, {})
        if value is None:
            values.pop(quota_key, None)
            if not values:
                del self._entities[key]
        else:
            values[quota_key] = value
        log.info("%s %s for %s", "Removing" if value is None else "Setting",
                 quota_key if value is None else f"{quota_key} to {value}",
                 entity_text(entity))
        try:
            self._push(entity, quota_key, value)
        except Exception:
            log.exception("Failed to update quota %s for %s", quota_key, entity_text(entity))

    def _push(self, entity: dict, quota_key: str, value: float | None) -> None:
        """ClientQuotaMetadataManager: hand the change to whoever enforces it."""
        if IP in entity:
            if self.ip_quotas is not None:
                ip = entity[IP]
                self.ip_quotas.update_ip_connection_rate_quota(
                    None if ip is None else _resolve(ip), value)
            return
        manager = self.managers.get(quota_key)
        if manager is None:
            return   # controller_mutation_rate: stored, not enforced here
        manager.update_quota(_manager_name(entity, USER), _manager_name(entity, CLIENT_ID),
                             value)

    # -- DescribeClientQuotas -------------------------------------------------------

    def describe(self, components: list[dict], strict: bool) -> list[dict]:
        """ClientQuotasImage.describe: the entries matching the filter.  Raises
        :class:`QuotaRequestError` for a filter Kafka refuses."""
        exact, specified = _parse_filter(components)
        with self._lock:
            items = [(dict(key), dict(values)) for key, values in self._entities.items()]
        out = []
        for entity, values in items:
            if _matches(entity, exact, specified, strict):
                out.append({
                    "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
                    "values": [{"key": k, "value": v} for k, v in values.items()]})
        return out


def client_quota_record(entity: dict, quota_key: str, value: float | None) -> tuple[str, dict]:
    """Kafka's ClientQuotaRecord: the entity's (type, name) pairs, a key, and the
    value or ``remove``."""
    return "ClientQuotaRecord", {
        "entity": [{"entityType": t, "entityName": n} for t, n in _key(entity)],
        "key": quota_key, "value": 0.0 if value is None else value, "remove": value is None}


def _entity_of(entity_data: list[dict]) -> tuple[dict | None, tuple[int, str] | None]:
    """ClientQuotaControlManager.validateEntity: the entity as a dict, or an error."""
    if not entity_data:
        return {}, (ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    entity: dict[str, str | None] = {}
    for e in entity_data:
        entity_type, name = e["entity_type"], e["entity_name"]
        if entity_type in entity:
            return None, (ErrorCode.INVALID_REQUEST,
                          f"Invalid client quota entity, duplicate entity entry "
                          f"{escape(entity_type)}")
        if entity_type not in (USER, CLIENT_ID, IP):
            return None, (ErrorCode.INVALID_REQUEST,
                          f"Unhandled client quota entity type: {escape(entity_type)}")
        if name == "":
            return None, (ErrorCode.INVALID_REQUEST, f"Empty {entity_type} not supported")
        entity[entity_type] = name
    return entity, None


def _config_keys_for(entity: dict) -> tuple[dict, tuple[int, str] | None]:
    """configKeysForEntityType: which keys an entity may have."""
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            # Kafka's message, missing space included.
            return {}, (ErrorCode.INVALID_REQUEST, "Invalid quota entity combination, IP "
                        "entity shouldnot be combined with User or ClientId")
        ip = entity[IP]
        if ip is not None and _resolve(ip) is None:
            return {}, (ErrorCode.INVALID_REQUEST,
                        f"{escape(ip)} is not a valid IP or resolvable host.")
        return IP_KEYS, None
    return USER_AND_CLIENT_KEYS, None


def _resolve(host: str) -> str | None:
    """The address of an ip entity: a literal IP, or a host name resolved as
    Kafka's InetAddress.getByName does; None if neither."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(host, None)[0][4][0]
    except (OSError, UnicodeError, ValueError, IndexError):
        return None


def _parse_filter(components: list[dict]) -> tuple[dict, set]:
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for c in components:
        entity_type, match = c["entity_type"], c["match"]
        if not entity_type:
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if entity_type in exact or entity_type in specified:
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                    f"Entity type {escape(entity_type)} cannot appear more "
                                    "than once in the filter.")
        if entity_type not in (IP, USER, CLIENT_ID):
            raise QuotaRequestError(ErrorCode.UNSUPPORTED_VERSION,
                                    f"Unsupported entity type {escape(entity_type)}")
        match_type = c["match_type"]
        if match_type == MATCH_TYPE_EXACT:
            if match is None:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Request specified "
                                        "MATCH_TYPE_EXACT, but set match string to null.")
            exact[entity_type] = match
        elif match_type == MATCH_TYPE_DEFAULT:
            if match is not None:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Request specified "
                                        "MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[entity_type] = None
        elif match_type == MATCH_TYPE_SPECIFIED:
            if match is not None:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Request specified "
                                        "MATCH_TYPE_SPECIFIED, but also specified a match "
                                        "string.")
            specified.add(entity_type)
        else:
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                    f"Unknown match type {match_type}")
    uses = exact.keys() | specified
    if IP in uses and (USER in uses or CLIENT_ID in uses):
        raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                "Invalid entity filter component combination. IP filter "
                                "component should not be used with user or clientId filter "
                                "component.")
    return exact, specified


def _matches(entity: dict, exact: dict, specified: set, strict: bool) -> bool:
    if strict and len(entity) != len(exact) + len(specified):
        return False
    return (all(t in entity and entity[t] == name for t, name in exact.items())
            and all(t in entity for t in specified))


def _key(entity: dict) -> EntityKey:
    return tuple(sorted(entity.items(), key=lambda item: item[0]))


def _manager_name(entity: dict, entity_type: str):
    """A quota manager's view of one part of an entity: absent, default, or a name."""
    if entity_type not in entity:
        return None
    name = entity[entity_type]
    return DEFAULT if name is None else name
