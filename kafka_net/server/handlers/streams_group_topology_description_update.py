"""StreamsGroupTopologyDescriptionUpdate (API key 93): serves v0-v0 (KIP-1331, Kafka 4.4).

Behaviour: a streams group member sends the description of its application's
topology (sub-topologies node by node, global stores) for the topology epoch
it runs, after its heartbeat response set ``topology_description_required``.
The broker keeps it with the group (Kafka hands it to the topology
description plugin and records the epoch stored in the group's
StreamsGroupMetadata record; kafka-net, playing the plugin, records the
description there too, so a durable broker still has it after a restart), and
StreamsGroupDescribe v1 serves it.  The heartbeat stops asking once one is kept
for the group's current topology epoch.

* a member that is not in the group, or a group that is gone or not a streams
  group: UNKNOWN_MEMBER_ID, so the client treats itself as fenced and rejoins;
* a description for another topology epoch than the group's:
  STREAMS_INVALID_TOPOLOGY_EPOCH;
* with the finalized ``streams.version`` below 1: UNSUPPORTED_VERSION.

With an authorizer: READ on the group (as StreamsGroupHeartbeat), else
GROUP_AUTHORIZATION_FAILED.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE


def handle(ctx, request: dict) -> dict:
    if ctx.features.level("streams.version") < 1:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error, message = ctx.group_coordinator.streams.update_topology_description(
        request["group_id"], request["member_id"], request["topology_epoch"],
        request["topology_description"])
    return {"throttle_time_ms": 0, "error_code": error, "error_message": message}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "error_message": None}
