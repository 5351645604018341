"""DeleteTopics (API key 20): serves v1-v6 (by name; by name or id from v6); v0
while playing a release before 4.0 (KIP-896 removed it; ``as.version``,
``legacy_low``).

Behaviour: with ``delete.topic.enable=false`` every topic gets
TOPIC_DELETION_DISABLED.  Otherwise the topic, its partitions, their data
and the consumer groups' committed offsets for it are removed; fetches
waiting on it complete with an error.  An unknown name gets
UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID.  The internal
topics (``__consumer_offsets``, ``__transaction_state``) hold the
coordinators' state and are never deleted: INVALID_REQUEST "Deletion of
internal topic ... is prohibited." (worded as the controller's refusal to
create ``__cluster_metadata``).

With an authorizer (Kafka's handleDeleteTopicsRequest): DELETE on each topic,
else TOPIC_AUTHORIZATION_FAILED whether it exists or not; a topic named by id
needs DESCRIBE too, else its name is left out of the answer.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.internal_topics import is_internal

API_KEY = ApiKey.DELETE_TOPICS


def handle(ctx, request: dict) -> dict:
    if not ctx.config.delete_topic_enable:
        return error_response(request, ctx.api_version, ErrorCode.TOPIC_DELETION_DISABLED)
    if ctx.api_version >= 6:
        wanted = [(t["name"], t["topic_id"]) for t in request["topics"]]
    else:
        wanted = [(name, ZERO_UUID) for name in request["topic_names"]]
    return {"throttle_time_ms": 0, "responses": [_delete(ctx, n, i) for n, i in wanted]}


def _delete(ctx, name, topic_id) -> dict:
    cache = ctx.metadata_cache
    topic = cache.topic(name) if name is not None else cache.topic_by_id(topic_id)
    if ctx.authorizer is not None:
        refused = _refusal(ctx, name, topic_id, topic)
        if refused is not None:
            return refused
    if topic is None:
        code = ErrorCode.UNKNOWN_TOPIC_ID if name is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return {"name": name, "topic_id": topic_id, "error_code": code, "error_message": None}
    if is_internal(topic.name):
        return {"name": topic.name, "topic_id": topic.topic_id,
                "error_code": ErrorCode.INVALID_REQUEST,
                "error_message": f"Deletion of internal topic {topic.name} is prohibited."}
    if not ctx.delete_topic(topic.name, topic.topic_id):   # a concurrent delete won
        return {"name": name, "topic_id": topic_id,
                "error_code": ErrorCode.UNKNOWN_TOPIC_ID if name is None
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "error_message": None}
    return {"name": topic.name, "topic_id": topic.topic_id, "error_code": ErrorCode.NONE,
            "error_message": None}


def _refusal(ctx, name, topic_id, topic) -> dict | None:
    """Kafka's order: an id names its topic only to who may DESCRIBE it; then
    DELETE is needed, before anyone learns whether a named topic exists."""
    if name is None and topic is not None:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
            return {"name": None, "topic_id": topic_id, "error_message": None,
                    "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    target = name if name is not None else (topic.name if topic is not None else None)
    if target is not None and not ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC,
                                                target):
        return {"name": target, "topic_id": topic_id, "error_message": None,
                "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    return None


def error_response(request: dict, version: int, error_code: int) -> dict:
    if version >= 6:
        return {"responses": [{"name": t.get("name"), "topic_id": t.get("topic_id", ZERO_UUID),
                               "error_code": error_code} for t in request.get("topics", [])]}
    return {"responses": [{"name": n, "error_code": error_code}
                          for n in request.get("topic_names", [])]}
