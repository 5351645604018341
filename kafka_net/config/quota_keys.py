"""Client quota keys (KIP-546): the keys AlterClientQuotas sets on an entity, their
types and Kafka's checks of a value.

Kafka's ``QuotaConfig``: a user and/or client-id entity takes
``producer_byte_rate`` and ``consumer_byte_rate`` (LONG, bytes per second),
``request_percentage`` and ``controller_mutation_rate`` (DOUBLE); an ip entity
takes ``connection_creation_rate`` (INT, connections per second).  The quotas set
are kept and enforced by :mod:`kafka_net.server.quotas`.
"""

from __future__ import annotations

from kafka_net.config.values import INT_MAX, LONG_MAX
from kafka_net.log_safety import escape

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
IP_CONNECTION_RATE = "connection_creation_rate"

_LONG, _INT, _DOUBLE = "LONG", "INT", "DOUBLE"
# QuotaConfig.userAndClientQuotaConfigs() and ipConfigs(): key -> ConfigDef type.
USER_AND_CLIENT_KEYS = {PRODUCER_BYTE_RATE: _LONG, CONSUMER_BYTE_RATE: _LONG,
                        REQUEST_PERCENTAGE: _DOUBLE, CONTROLLER_MUTATION_RATE: _DOUBLE}
IP_KEYS = {IP_CONNECTION_RATE: _INT}
_TYPE_MAX = {_INT: (INT_MAX, "an INT"), _LONG: (LONG_MAX, "a LONG")}


def validate_quota_value(valid_keys: dict, key: str, value: float) -> str | None:
    """validateQuotaKeyValue: None if fine, else Kafka's message."""
    config_type = valid_keys.get(key)
    if config_type is None:
        return f"Invalid configuration key {escape(key)}"
    if not value > 0.0:   # NaN fails this too
        return f"Quota {key} must be greater than 0"
    if config_type == _DOUBLE:
        return None
    limit, article = _TYPE_MAX[config_type]
    if value > limit:
        return f"Proposed value for {key} is too large for {article}."
    if abs(value % 1.0) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None
