"""StreamsGroupDescribe (API key 89): serves v0-v1 (KIP-1071, Kafka 4.2; v1 KIP-1331, 4.4).

Behaviour: each streams group with its state (Empty, NotReady, Assigning,
Reconciling, Stable), group and assignment epochs, its topology (the
sub-topologies with their source, repartition and changelog topics, the
internal topics with the partition counts configured for them; ``subtopologies``
null while the topology is not ready) and every member with its process,
endpoint, client tags, task offsets and current and target active, standby
and warm-up tasks.  An unknown group gets GROUP_ID_NOT_FOUND ("Group g not
found."), another kind of group "Group g is not a streams group.", as Kafka.
Authorized operations, when asked for, are the principal's (READ, DELETE,
DESCRIBE without an authorizer); else -2147483648, "not requested".

v1: with ``include_topology_description`` each group carries the description a
member sent with StreamsGroupTopologyDescriptionUpdate for the group's current
topology epoch (status AVAILABLE), or none (NOT_STORED: never sent, or sent for
an older topology); without it, NOT_REQUESTED.  Each described group names
its task assignor, ``assignor_name`` (KIP-1357): "sticky", Kafka's
StickyTaskAssignor, the one this broker runs.

With the finalized ``streams.version`` below 1: UNSUPPORTED_VERSION.  With an
authorizer (Kafka's handleStreamsGroupDescribe): DESCRIBE on each group, else
GROUP_AUTHORIZATION_FAILED; and DESCRIBE on every topic of a described
group's configured topology (none to check while it is not ready), else
TOPIC_AUTHORIZATION_FAILED ("The described group uses topics that the client
is not authorized to describe.").
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.group import streams_assignor
from kafka_net.server.handlers.describe_groups import described_groups

API_KEY = ApiKey.STREAMS_GROUP_DESCRIBE
NOT_REQUESTED = -2**31
# TopologyDescriptionStatus (KIP-1331); ERROR (2) is a plugin's failure, which
# kafka-net, keeping the descriptions itself, never has.
DESCRIPTION_NOT_REQUESTED, DESCRIPTION_NOT_STORED, DESCRIPTION_AVAILABLE = 0, 1, 3


def handle(ctx, request: dict) -> dict:
    if ctx.features.level("streams.version") < 1:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    return {"throttle_time_ms": 0, "groups": described_groups(
        ctx, request, lambda group_id: _describe(
            ctx, group_id, request.get("include_topology_description", False)))}


def _failed(group_id: str, error_code: int, message: str | None = None) -> dict:
    return {"error_code": error_code, "error_message": message, "group_id": group_id,
            "group_state": "", "group_epoch": -1, "assignment_epoch": -1, "topology": None,
            "members": [], "authorized_operations": NOT_REQUESTED}


def _describe(ctx, group_id: str, with_description: bool) -> dict:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return _failed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error, message, sg = ctx.group_coordinator.streams.describe(group_id)
    if sg is None:
        return _failed(group_id, error, message)
    topology = _topology(sg)
    if ctx.authorizer is not None and topology is not None:
        topics = {t for sub in topology["subtopologies"] or [] for t in _topics(sub)}
        if any(not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, t,
                                 log_if_denied=False) for t in topics):
            return _failed(group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                           "The described group uses topics that the client is not "
                           "authorized to describe.")
    return {"error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id,
            "group_state": sg.state(), "group_epoch": sg.group_epoch,
            "assignment_epoch": sg.assignment_epoch, "topology": topology,
            "members": [_member(m, sg.target.get(m.member_id))
                        for m in sorted(sg.members.values(), key=lambda m: m.member_id)],
            "authorized_operations": NOT_REQUESTED, "assignor_name": streams_assignor.NAME,
            **_description(sg, with_description)}


def _description(sg, requested: bool) -> dict:
    if not requested:
        return {"topology_description": None,
                "topology_description_status": DESCRIPTION_NOT_REQUESTED}
    stored = sg.stored_description()
    return {"topology_description": stored, "topology_description_status":
            DESCRIPTION_NOT_STORED if stored is None else DESCRIPTION_AVAILABLE}


def _topics(sub: dict):
    yield from sub["source_topics"]
    yield from sub["repartition_sink_topics"]
    yield from (t["name"] for t in sub["state_changelog_topics"])
    yield from (t["name"] for t in sub["repartition_source_topics"])


def _topology(sg) -> dict | None:
    if sg.topology is None:
        return {"epoch": -1, "subtopologies": None}
    configured = sg.configured
    if configured is None or not configured.is_ready():
        return {"epoch": sg.topology["epoch"], "subtopologies": None}
    counts = configured.partitions

    def info(t: dict) -> dict:
        return {"name": t["name"], "partitions": counts.get(t["name"], t["partitions"]),
                "replication_factor": t["replication_factor"],
                "topic_configs": list(t["topic_configs"])}
    return {"epoch": sg.topology["epoch"], "subtopologies": [
        {"subtopology_id": s["subtopology_id"], "source_topics": list(s["source_topics"]),
         "repartition_sink_topics": list(s["repartition_sink_topics"]),
         "state_changelog_topics": [info(t) for t in s["state_changelog_topics"]],
         "repartition_source_topics": [info(t) for t in s["repartition_source_topics"]]}
        for s in sg.topology["subtopologies"]]}


def _member(m, target) -> dict:
    return {"member_id": m.member_id, "member_epoch": m.member_epoch,
            "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "topology_epoch": m.topology_epoch,
            "process_id": m.process_id,
            "user_endpoint": None if m.user_endpoint is None else {
                "host": m.user_endpoint[0], "port": m.user_endpoint[1]},
            "client_tags": [{"key": k, "value": v} for k, v in sorted(m.client_tags.items())],
            "task_offsets": list(m.task_offsets), "task_end_offsets": list(m.task_end_offsets),
            "assignment": _assignment(m.assigned), "target_assignment": _assignment(target),
            "is_classic": False}


def _assignment(tasks) -> dict:
    def ids(kind: dict) -> list[dict]:
        return [{"subtopology_id": s, "partitions": sorted(p)}
                for s, p in sorted(kind.items()) if p]
    if tasks is None:
        return {"active_tasks": [], "standby_tasks": [], "warmup_tasks": []}
    return {"active_tasks": ids(tasks.active), "standby_tasks": ids(tasks.standby),
            "warmup_tasks": ids(tasks.warmup)}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"groups": [_failed(g, error_code) for g in request.get("group_ids") or []]}
