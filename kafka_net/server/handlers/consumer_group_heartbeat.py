"""ConsumerGroupHeartbeat (API key 68): serves v0-v1 (KIP-848).

Behaviour: the consumer group protocol's one request (see
:mod:`kafka_net.server.group.consumer_coordinator`): join with epoch 0, then
heartbeat with the member's epoch and the partitions it owns; the answer
carries the member's epoch, the heartbeat interval
(``group.consumer.heartbeat.interval.ms``) and its assignment when it
changed.  v1's ``subscribed_topic_regex`` subscribes the member to the
topics whose whole name matches an RE2 regular expression (resolved by the
coordinator for the group, see
:mod:`~kafka_net.server.group.topic_regex`); librdkafka sends its ``^``
subscriptions joined as one ``(^a.*)|(^b.*)``, and "" for none.  Errors
carry Kafka's message: INVALID_REQUEST, INVALID_REGULAR_EXPRESSION (v1),
UNSUPPORTED_ASSIGNOR, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID, GROUP_ID_NOT_FOUND (a classic
group of that id has members, or the id is a streams or share group's),
GROUP_MAX_SIZE_REACHED.  With the finalized
``group.version`` below 1 (UpdateFeatures) the protocol is off:
UNSUPPORTED_VERSION, as Kafka's ``isConsumerGroupProtocolEnabled``, checked
first.

With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED
(Kafka's handleConsumerGroupHeartbeat); DESCRIBE on every topic subscribed by
name, else TOPIC_AUTHORIZATION_FAILED for the whole heartbeat, so the client
reports the subscription's error instead of silently missing the topic
(Kafka 4.0, KAFKA-18813); a regex resolves only to the topics
the heartbeating member may DESCRIBE (Kafka's
filterTopicDescribeAuthorizedTopics; denials are not logged).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.group.consumer_coordinator import HeartbeatRequest

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT


def handle(ctx, request: dict) -> dict:
    if ctx.features.level("group.version") < 1:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    names = request["subscribed_topic_names"]
    if names and ctx.authorizer is not None and \
            len(ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, names)) \
            < len(set(names)):
        return error_response(request, ctx.api_version, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    owned = request["topic_partitions"]
    result = ctx.group_coordinator.consumer.heartbeat(HeartbeatRequest(
        group_id=request["group_id"], member_id=request["member_id"],
        member_epoch=request["member_epoch"], instance_id=request["instance_id"],
        rack_id=request["rack_id"], rebalance_timeout_ms=request["rebalance_timeout_ms"],
        subscribed_topic_names=request["subscribed_topic_names"],
        subscribed_topic_regex=request["subscribed_topic_regex"],
        api_version=ctx.api_version,
        authorize_topics=None if ctx.authorizer is None else _describable(ctx),
        server_assignor=request["server_assignor"],
        owned=None if owned is None else {t["topic_id"]: set(t["partitions"]) for t in owned},
        client_id=ctx.request.header.client_id or "",
        client_host=str(ctx.request.client_address[0])))
    return response_body(result)


def response_body(result) -> dict:
    """The answer to a heartbeat from the coordinator's result: ConsumerGroupHeartbeat's,
    and ShareGroupHeartbeat's, which has the same fields and Assignment (each topic
    id with its partitions)."""
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": [
            {"topic_id": topic, "partitions": sorted(parts)}
            for topic, parts in sorted(result.assignment.items(), key=lambda kv: str(kv[0]))]}
    return {"throttle_time_ms": 0, "error_code": result.error_code,
            "error_message": result.error_message, "member_id": result.member_id,
            "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms, "assignment": assignment}


def _describable(ctx):
    """The filter of a regex's topics: those this principal may DESCRIBE."""
    def allowed(counts: dict[str, int]) -> set[str]:
        return {name for name, count in counts.items()
                if ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name,
                                 log_if_denied=False, ref_count=count)}
    return allowed


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "member_epoch": 0, "heartbeat_interval_ms": 0}
