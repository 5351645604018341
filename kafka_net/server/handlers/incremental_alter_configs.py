"""IncrementalAlterConfigs (API key 44): serves v0-v1.

Behaviour: per key, SET (0) sets an override, DELETE (1) removes it (back to
the default), APPEND (2) / SUBTRACT (3) add or remove items of a list config
such as ``cleanup.policy`` (INVALID_CONFIG ``Can't APPEND to key retention.ms
because its type is not LIST.`` otherwise).  The resulting set is validated
as a whole; see :mod:`kafka_net.server.config_admin` for the checks and
errors.  ``validate_only`` checks and changes nothing.  Broker configs
cannot be changed (INVALID_REQUEST).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.server.config_admin import alter_resources
from kafka_net.server.handlers.alter_configs import error_response  # same response shape

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS


def handle(ctx, request: dict) -> dict:
    return {"throttle_time_ms": 0, "responses": alter_resources(
        ctx, request["resources"], request["validate_only"], incremental=True)}


__all__ = ["API_KEY", "error_response", "handle"]
