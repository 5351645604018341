"""StreamsGroupHeartbeat (API key 88): serves v0-v1 (KIP-1071, Kafka 4.2; v1 KIP-1331, 4.4).

Behaviour: the streams rebalance protocol's one request (see
:mod:`kafka_net.server.group.streams_coordinator`): a member joins with epoch
0, its process id and its application's topology, then heartbeats with the
tasks it owns; the answer carries its epoch, the heartbeat interval
(``group.streams.heartbeat.interval.ms``), its active / standby / warm-up
tasks when they changed, the ``status`` list (MISSING_SOURCE_TOPICS,
MISSING_INTERNAL_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, STALE_TOPOLOGY,
SHUTDOWN_APPLICATION) and, when the group's endpoint information epoch
differs from the member's ``endpoint_information_epoch``, the partitions each
user endpoint hosts.  Errors carry Kafka's message: INVALID_REQUEST (among
them "Topology updates are not supported yet."), STREAMS_INVALID_TOPOLOGY,
UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
GROUP_ID_NOT_FOUND (the id is another kind of group), GROUP_MAX_SIZE_REACHED.
With the finalized ``streams.version`` below 1 (UpdateFeatures) the protocol
is off: UNSUPPORTED_VERSION, checked first.

The acceptable recovery lag is the group's ``streams.acceptable.recovery.lag``
(a LONG; v0's int32 field gets it capped at 2**31 - 1).  v1 sends it as an
int64 and sets ``topology_description_required`` while the broker holds no
description of the group's current topology and the member runs that
topology: the member then sends it with StreamsGroupTopologyDescriptionUpdate
(key 93).

Static membership (``instance_id``, as KIP-848's): a member leaving with
epoch -2 keeps its place and tasks for one session, and the restarted instance
(same instance id, new member id) takes them back without a rebalance;
UNRELEASED_INSTANCE_ID for an instance still in the group, FENCED_INSTANCE_ID
for the member id it replaced.

Internal topics (repartition and changelog topics) the topology needs and
that do not exist are created here after the coordinator answered, as
Kafka's KafkaApis does with the heartbeat's creatable topics; the answer
still reports them missing, and a later heartbeat finds them.

With an authorizer (Kafka's handleStreamsGroupHeartbeat): READ on the group,
else GROUP_AUTHORIZATION_FAILED; a topology's topics need DESCRIBE, else
TOPIC_AUTHORIZATION_FAILED naming them; internal topics are created only
with CREATE on the cluster or on each topic, else a MISSING_INTERNAL_TOPICS
status says which were not.
"""

import logging

from kafka_net.config.errors import InvalidConfig
from kafka_net.log_safety import escape
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.group.streams_group import MISSING_INTERNAL_TOPICS
from kafka_net.server.partition_limits import TopicCreationError

log = logging.getLogger(__name__)
INT32_MAX = 2**31 - 1

API_KEY = ApiKey.STREAMS_GROUP_HEARTBEAT


def handle(ctx, request: dict) -> dict:
    if ctx.features.level("streams.version") < 1:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if request["topology"] is not None and ctx.authorizer is not None:
        denied = sorted(t for t in _topology_topics(request["topology"])
                        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, t))
        if denied:
            return {**error_response(request, ctx.api_version,
                                     ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                    "error_message": f"Unauthorized topics {', '.join(denied)}"}
    result = ctx.group_coordinator.streams.heartbeat(
        request, client_id=ctx.request.header.client_id or "",
        client_host=str(ctx.request.client_address[0]))
    if result.error_code:
        return {**error_response(request, ctx.api_version, result.error_code),
                "error_message": result.error_message}
    status = list(result.status or [])
    if result.to_create:
        status.extend(_create_internal_topics(ctx, request["group_id"], result.to_create))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "member_id": result.member_id, "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms,
            "acceptable_recovery_lag": result.acceptable_recovery_lag,
            # v0's int32: a LONG streams.acceptable.recovery.lag beyond it is capped.
            "acceptable_recovery_lag_legacy": min(result.acceptable_recovery_lag, INT32_MAX),
            "task_offset_interval_ms": result.task_offset_interval_ms,
            "status": [{"status_code": c, "status_detail": d} for c, d in status],
            "active_tasks": None if result.tasks is None else _task_ids(result.tasks.active),
            "standby_tasks": None if result.tasks is None else _task_ids(result.tasks.standby),
            "warmup_tasks": None if result.tasks is None else _task_ids(result.tasks.warmup),
            "topology_description_required": result.topology_description_required,
            "endpoint_information_epoch": result.endpoint_information_epoch,
            "partitions_by_user_endpoint": result.endpoints}


def _topology_topics(topology: dict) -> set[str]:
    topics = set()
    for sub in topology["subtopologies"]:
        topics.update(sub["source_topics"])
        topics.update(sub["repartition_sink_topics"])
        topics.update(t["name"] for t in sub["repartition_source_topics"])
        topics.update(t["name"] for t in sub["state_changelog_topics"])
    return topics


def _create_internal_topics(ctx, group_id: str, to_create: dict) -> list[tuple[int, str]]:
    """Create the topology's missing internal topics the principal may create; a
    status for those it may not (Kafka's KafkaApis, with the heartbeat's answer)."""
    names = sorted(to_create)
    if ctx.authorizer is None or ctx.authorize_cluster(AclOperation.CREATE, False):
        allowed = names
    else:
        allowed = [n for n in names
                   if ctx.authorize(AclOperation.CREATE, ResourceType.TOPIC, n)]
    for name in allowed:
        partitions, _replication, configs = to_create[name]
        try:
            overrides = ctx.config_repository.validate(name, configs)
            _, created = ctx.try_create_topic(name, partitions, overrides or None)
        except (TopicCreationError, InvalidConfig) as exc:
            log.warning("Cannot create internal topic %s of streams group %s: %s",
                        escape(name), escape(group_id), escape(str(exc)))
            continue
        if created:
            log.info("Created internal topic %s with %d partition(s) for streams group %s",
                     escape(name), partitions, escape(group_id))
    denied = [n for n in names if n not in allowed]
    if not denied:
        return []
    return [(MISSING_INTERNAL_TOPICS,
             f"Unauthorized to CREATE on topics {', '.join(denied)}.")]


def _task_ids(tasks: dict) -> list[dict]:
    return [{"subtopology_id": sid, "partitions": sorted(parts)}
            for sid, parts in sorted(tasks.items()) if parts]


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "member_id": request.get("member_id") or "",
            "member_epoch": -1, "heartbeat_interval_ms": 0, "acceptable_recovery_lag": 0,
            "acceptable_recovery_lag_legacy": 0,
            "task_offset_interval_ms": 0, "endpoint_information_epoch": 0}
