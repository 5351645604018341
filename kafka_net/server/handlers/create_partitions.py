"""CreatePartitions (API key 37): serves v0-v3.

Behaviour (per topic): the new count must be larger than the current one
(INVALID_PARTITIONS otherwise; Kafka cannot remove partitions); an unknown
topic gets UNKNOWN_TOPIC_OR_PARTITION; assignments may only name this broker
(INVALID_REPLICA_ASSIGNMENT); ``validate_only`` changes nothing.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import Versions

API_KEY = ApiKey.CREATE_PARTITIONS
VERSIONS = Versions(0, 3)


def handle(ctx, request: dict) -> dict:
    return {"throttle_time_ms": 0, "results": [
        _grow(ctx, t, request["validate_only"]) for t in request["topics"]]}


def _grow(ctx, wanted: dict, validate_only: bool) -> dict:
    name, count = wanted["name"], wanted["count"]
    topic = ctx.metadata_cache.topic(name)
    if topic is None:
        return _result(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       f"The topic '{name}' does not exist.")
    if count <= topic.num_partitions:
        return _result(name, ErrorCode.INVALID_PARTITIONS,
                       f"Topic currently has {topic.num_partitions} partitions, which is "
                       f"higher than or equal to the requested {count}.")
    node = ctx.metadata_cache.node_id
    for assignment in wanted["assignments"] or []:
        if any(b != node for b in assignment["broker_ids"]):
            return _result(name, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"Replica assignments may only name broker {node}")
    if not validate_only:
        ctx.apis.replica_manager.ensure_partitions(name, topic.topic_id, count)
        ctx.metadata_cache.set_partition_count(name, count)
    return _result(name, ErrorCode.NONE, None)


def _result(name: str, error_code: int, message) -> dict:
    return {"name": name, "error_code": error_code, "error_message": message}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"results": [_result(t["name"], error_code, None) for t in request.get("topics", [])]}
