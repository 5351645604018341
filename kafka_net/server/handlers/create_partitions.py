"""CreatePartitions (API key 37): serves v0-v3.

Behaviour (per topic): the new count must be larger than the current one
(INVALID_PARTITIONS otherwise; Kafka cannot remove partitions); an unknown
topic gets UNKNOWN_TOPIC_OR_PARTITION; assignments may only name this broker
(INVALID_REPLICA_ASSIGNMENT).  The partitions added count against
``max.partitions.per.request`` (summed over the request's topics in order) and
``max.broker.partitions``: POLICY_VIOLATION past either, checked before
anything is allocated (:mod:`kafka_net.server.partition_limits`).
``validate_only`` checks all of this and changes nothing.

With an authorizer: ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED
(Kafka's handleCreatePartitionsRequest), whether it exists or not.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.partition_limits import (
    RequestBudget, TopicCreationError, broker_limit_error, not_growing_error)

API_KEY = ApiKey.CREATE_PARTITIONS


def handle(ctx, request: dict) -> dict:
    budget = RequestBudget(ctx.config.max_partitions_per_request)
    return {"throttle_time_ms": 0, "results": [
        _grow(ctx, t, request["validate_only"], budget) for t in request["topics"]]}


def _grow(ctx, wanted: dict, validate_only: bool, budget: RequestBudget) -> dict:
    name, count = wanted["name"], wanted["count"]
    if not ctx.authorize(AclOperation.ALTER, ResourceType.TOPIC, name):
        return _result(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                       "The topic authorization is failed.")
    topic = ctx.metadata_cache.topic(name)
    if topic is None:
        return _result(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       f"The topic '{name}' does not exist.")
    shrinking = not_growing_error(topic.num_partitions, count)
    if shrinking:
        return _result(name, shrinking.error_code, shrinking.message)
    node = ctx.metadata_cache.node_id
    for assignment in wanted["assignments"] or []:
        if any(b != node for b in assignment["broker_ids"]):
            return _result(name, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"Replica assignments may only name broker {node}")
    adding = count - topic.num_partitions
    limit = ctx.config.max_broker_partitions
    refused = budget.error(adding) or broker_limit_error(
        ctx.metadata_cache.total_partitions(), adding, limit)
    if refused:
        return _result(name, refused.error_code, refused.message)
    budget.spend(adding)
    if not validate_only:
        try:   # re-checked under the controller's lock: a concurrent change may have won
            grown = ctx.controller.create_partitions(name, count, limit)
        except TopicCreationError as exc:
            return _result(name, exc.error_code, exc.message)
        if grown is None:
            return _result(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                           f"The topic '{name}' does not exist.")
    return _result(name, ErrorCode.NONE, None)


def _result(name: str, error_code: int, message) -> dict:
    return {"name": name, "error_code": error_code, "error_message": message}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"results": [_result(t["name"], error_code, None) for t in request.get("topics", [])]}
