"""StreamsGroupTopologyDescriptionUpdate (API key 93): version 0, flexible
(KIP-1331, Kafka 4.4).

Wire schema of ``StreamsGroupTopologyDescriptionUpdateRequest.json`` /
``...Response.json`` as Kafka 4.4 released them (KAFKA-20620; apache/kafka
09ed70433d9abd5972f48503694ef34cdfae4b82 and
8022dc686d8b6946f87ec90337a055d5a8e6b6bd, after the RPC was marked stable).
A streams group member whose heartbeat response set
``topology_description_required`` sends its application's topology described
node by node: each sub-topology's nodes (1 SOURCE, 2 PROCESSOR, 3 SINK) with
the topics they read and write, the state stores they use and their
successors, plus the global stores, for the topology epoch it runs.  The
broker keeps it, and StreamsGroupDescribe v1 serves it back to an admin that
asks (``include_topology_description``).

The response is a top-level error: UNKNOWN_MEMBER_ID when the member (or its
group) is gone, so the client treats itself as fenced and rejoins.

Served by :mod:`kafka_net.server.handlers.streams_group_topology_description_update`.
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, Field, Schema
from kafka_net.protocol.streams_topology_description import TOPOLOGY_DESCRIPTION

REQUEST = Schema(
    "StreamsGroupTopologyDescriptionUpdateRequest", valid="0", flexible="0+",
    fields=[
        Field("group_id", STRING),
        Field("member_id", STRING),
        Field("topology_epoch", INT32),
        Field("topology_description", TOPOLOGY_DESCRIPTION),
    ])

RESPONSE = Schema(
    "StreamsGroupTopologyDescriptionUpdateResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
    ])
