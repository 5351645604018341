"""AlterConfigs (API key 33): serves v0-v2.

Behaviour: each resource's config set is *replaced* by the one in the
request (keys left out return to their defaults); see
:mod:`kafka_net.server.config_admin` for the checks and their errors.
``validate_only`` checks and changes nothing.  Topic configs that act here:
``retention.ms``, ``retention.bytes``, ``max.message.bytes``,
``message.timestamp.type`` and ``cleanup.policy`` (compaction itself is not
done).  Broker configs cannot be changed (INVALID_REQUEST).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.server.config_admin import alter_resources

API_KEY = ApiKey.ALTER_CONFIGS


def handle(ctx, request: dict) -> dict:
    return {"throttle_time_ms": 0, "responses": alter_resources(
        ctx, request["resources"], request["validate_only"], incremental=False)}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "responses": [
        {"error_code": error_code, "error_message": None,
         "resource_type": r["resource_type"], "resource_name": r["resource_name"]}
        for r in request.get("resources", [])]}
