"""Client metrics subscriptions (KIP-714): their keys, defaults and checks.

Kafka's ``ClientMetricsConfigs``: a CLIENT_METRICS config resource (type 16) has
three keys, ``metrics`` (LIST), ``interval.ms`` (INT, 100 to 3600000, default
300000) and ``match`` (LIST of ``name=regex`` selectors); :func:`validate` checks a
subscription's whole new set with Kafka's error codes and wording.  Subscriptions
are kept and matched to clients by :mod:`kafka_net.server.client_metrics`.
"""

from __future__ import annotations

import re

from kafka_net.protocol.error_codes import ErrorCode

METRICS_CONFIG = "metrics"
INTERVAL_MS_CONFIG = "interval.ms"
MATCH_CONFIG = "match"
INTERVAL_MS_DEFAULT = 5 * 60 * 1000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
CONFIG_DOCS = {
    METRICS_CONFIG: "Telemetry metric name prefix list",
    INTERVAL_MS_CONFIG: "Metrics push interval in milliseconds",
    MATCH_CONFIG: "Client match criteria",
}
LIST_CONFIGS = (METRICS_CONFIG, MATCH_CONFIG)   # the rest (interval.ms) is an INT
MATCH_PARAMS = ("client_instance_id", "client_id", "client_software_name",
                "client_software_version", "client_source_address", "client_source_port")
_LIST_SPLIT = re.compile(r"\s*,\s*")


class ClientMetricsConfigError(Exception):
    """A subscription's configs refused, with the error code Kafka answers
    (INVALID_REQUEST or INVALID_CONFIG) and its message."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code, self.message = error_code, message


def parse_list(text: str) -> list[str]:
    """A LIST config value as Kafka's ConfigDef parses it."""
    trimmed = text.strip()
    return _LIST_SPLIT.split(trimmed) if trimmed else []


def parse_matching_patterns(patterns: list[str]) -> dict[str, re.Pattern]:
    """``name=regex`` selectors; INVALID_CONFIG for a bad one (Kafka's wording)."""
    out = {}
    for pattern in patterns:
        parts = pattern.split("=")
        while parts and parts[-1] == "":   # Java's String.split drops trailing empties
            parts.pop()
        param = parts[0].strip() if len(parts) == 2 else ""
        if param not in MATCH_PARAMS:
            raise ClientMetricsConfigError(ErrorCode.INVALID_CONFIG,
                                           f"Illegal client matching pattern: {pattern}")
        try:
            out[param] = re.compile(parts[1].strip())
        except re.error:
            raise ClientMetricsConfigError(ErrorCode.INVALID_CONFIG,
                                           f"Illegal client matching pattern: {pattern}") from None
    return out


def validate(name: str, props: dict[str, str]) -> None:
    """Kafka's ``ClientMetricsConfigs.validate`` of a subscription's whole new config set."""
    if not name:
        raise ClientMetricsConfigError(ErrorCode.INVALID_REQUEST,
                                       "Subscription name can't be empty")
    for key in props:
        if key not in CONFIG_DOCS:
            raise ClientMetricsConfigError(ErrorCode.INVALID_REQUEST,
                                           f"Unknown client metrics configuration: {key}")
    if INTERVAL_MS_CONFIG in props:
        interval = _parse_int(props[INTERVAL_MS_CONFIG])
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise ClientMetricsConfigError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid value {interval} for {INTERVAL_MS_CONFIG}, interval must be between "
                f"{MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)")
    if MATCH_CONFIG in props:
        parse_matching_patterns(parse_list(props[MATCH_CONFIG]))


def _parse_int(raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        value = None
    if value is None or not -2**31 <= value < 2**31:
        raise ClientMetricsConfigError(
            ErrorCode.INVALID_CONFIG,
            f"Invalid value {raw} for configuration {INTERVAL_MS_CONFIG}: "
            "Not a number of type INT")
    return value
