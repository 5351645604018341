"""FindCoordinator (API key 10): serves v0-v6; batched keys from v4.

Behaviour: for a group key (key_type 0) and a transactional id (key_type 1)
this broker is the coordinator, in every version (v4+ answers each key of
the batch).  An empty key gets INVALID_REQUEST; so does any other key type
(share groups, key_type 2, are not served).

The coordinator's internal topic (``__consumer_offsets`` for a group,
``__transaction_state`` for a transactional id) is created here the first
time, as Kafka's FindCoordinator does through its AutoTopicCreationManager
(:mod:`kafka_net.server.internal_topics`).  Kafka answers
COORDINATOR_NOT_AVAILABLE while the new topic's leaders are elected; here
creation is synchronous, so the first answer already names the coordinator.
When the topic cannot be created (``max.broker.partitions``),
COORDINATOR_NOT_AVAILABLE.

With an authorizer: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or
the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), per key (Kafka's
handleFindCoordinatorRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.internal_topics import (
    GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME)

API_KEY = ApiKey.FIND_COORDINATOR

GROUP, TRANSACTION = 0, 1


def handle(ctx, request: dict) -> dict:
    if ctx.api_version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [
            {"key": key, **_find(ctx, key, request["key_type"])}
            for key in request["coordinator_keys"]]}
    return {"throttle_time_ms": 0, **_find(ctx, request["key"], request["key_type"])}


def _find(ctx, key: str, key_type: int) -> dict:
    if key_type not in (GROUP, TRANSACTION):
        return _error(ErrorCode.INVALID_REQUEST, f"invalid coordinator key type {key_type}")
    if not key:
        return _error(ErrorCode.INVALID_REQUEST, "group id is empty" if key_type == GROUP
                      else "transactional id is empty")
    if key_type == GROUP and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    if key_type == TRANSACTION and not ctx.authorize(AclOperation.DESCRIBE,
                                                     ResourceType.TRANSACTIONAL_ID, key):
        return _error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                      "Transactional Id authorization failed.")
    cache = ctx.metadata_cache
    endpoint = cache.endpoint_for(ctx.listener_name)
    if endpoint is None:
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no advertised listener")
    internal = ctx.internal_topics
    topic = GROUP_METADATA_TOPIC_NAME if key_type == GROUP else TRANSACTION_STATE_TOPIC_NAME
    if internal is not None and not internal.is_ready(topic) and not internal.try_ensure(topic):
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    return {"error_code": ErrorCode.NONE, "error_message": None, "node_id": cache.node_id,
            "host": endpoint.host, "port": endpoint.port}


def _error(code: int, message: str) -> dict:
    return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}


def error_response(request: dict, version: int, error_code: int) -> dict:
    if version >= 4:
        return {"coordinators": [{"key": k, **_error(error_code, None)}
                                 for k in request.get("coordinator_keys", [])]}
    return _error(error_code, None)
