"""StreamsGroupHeartbeat (API key 88): versions 0-1, flexible (KIP-1071, Kafka 4.2).

Wire schema of ``StreamsGroupHeartbeatRequest.json`` /
``StreamsGroupHeartbeatResponse.json`` (field facts from franz-go's
``88_streams_group_heartbeat`` at adb3a18, Kafka 4.2's version 0).  The
streams rebalance protocol's one request, the streams counterpart of
ConsumerGroupHeartbeat: a member joins with ``member_epoch`` 0 and its
application's **topology** (sub-topologies with their source, repartition
and changelog topics and co-partition groups), then heartbeats with the
**tasks** it owns (active, standby and warm-up, each a sub-topology id and
partitions) and the changelog offsets of its stores; the coordinator answers
with its member epoch, its assigned tasks and, for interactive queries, which
partitions each process endpoint hosts.  Fields unchanged since the previous
heartbeat are sent as null (-1 for ``rebalance_timeout_ms``).

``status`` codes in the response: 0 STALE_TOPOLOGY, 1 MISSING_SOURCE_TOPICS,
2 INCORRECTLY_PARTITIONED_TOPICS, 3 MISSING_INTERNAL_TOPICS,
4 SHUTDOWN_APPLICATION, 5 ASSIGNMENT_DELAYED.

Version 1 (KIP-1331, Kafka 4.4) leaves the request as it was; the response
widens the acceptable recovery lag to int64 (``acceptable_recovery_lag``, after
``task_offset_interval_ms``; v0's int32 is ``acceptable_recovery_lag_legacy``)
and adds ``topology_description_required``: the broker asks the member to send
its topology's description with StreamsGroupTopologyDescriptionUpdate (key 93).

Served by :mod:`kafka_net.server.handlers.streams_group_heartbeat` (the
streams group coordinator is :mod:`kafka_net.server.group.streams_coordinator`).
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, INT64, STRING, UINT16, Array, Field, Schema, Struct)

_TASK_IDS = Struct(
    Field("subtopology_id", STRING),
    Field("partitions", Array(INT32)),
)

_KEY_VALUE = Struct(
    Field("key", STRING),
    Field("value", STRING),
)

_TOPIC_INFO = Struct(
    Field("name", STRING),
    Field("partitions", INT32),
    Field("replication_factor", INT16),
    Field("topic_configs", Array(_KEY_VALUE)),
)

_ENDPOINT = Struct(
    Field("host", STRING),
    Field("port", UINT16),
)

_TASK_OFFSET = Struct(
    Field("subtopology_id", STRING),
    Field("partition", INT32),
    Field("offset", INT64),
)

_TOPOLOGY = Struct(
    Field("epoch", INT32),
    Field("subtopologies", Array(Struct(
        Field("subtopology_id", STRING),
        Field("source_topics", Array(STRING)),
        Field("source_topic_regex", Array(STRING)),
        Field("state_changelog_topics", Array(_TOPIC_INFO)),
        Field("repartition_sink_topics", Array(STRING)),
        Field("repartition_source_topics", Array(_TOPIC_INFO)),
        Field("copartition_groups", Array(Struct(
            Field("source_topics", Array(INT16)),
            Field("source_topic_regex", Array(INT16)),
            Field("repartition_source_topics", Array(INT16)),
        ))),
    ))),
)

REQUEST = Schema(
    "StreamsGroupHeartbeatRequest", valid="0-1", flexible="0+",
    fields=[
        Field("group_id", STRING),
        Field("member_id", STRING),
        Field("member_epoch", INT32),
        Field("endpoint_information_epoch", INT32),
        Field("instance_id", STRING, nullable="0+", default=None),
        Field("rack_id", STRING, nullable="0+", default=None),
        Field("rebalance_timeout_ms", INT32, default=-1),
        Field("topology", _TOPOLOGY, nullable="0+", default=None),
        Field("active_tasks", Array(_TASK_IDS), nullable="0+", default=None),
        Field("standby_tasks", Array(_TASK_IDS), nullable="0+", default=None),
        Field("warmup_tasks", Array(_TASK_IDS), nullable="0+", default=None),
        Field("process_id", STRING, nullable="0+", default=None),
        Field("user_endpoint", _ENDPOINT, nullable="0+", default=None),
        Field("client_tags", Array(_KEY_VALUE), nullable="0+", default=None),
        Field("task_offsets", Array(_TASK_OFFSET), nullable="0+", default=None),
        Field("task_end_offsets", Array(_TASK_OFFSET), nullable="0+", default=None),
        Field("shutdown_application", BOOL, default=False),
    ])

_TOPIC_PARTITIONS = Struct(
    Field("topic", STRING),
    Field("partitions", Array(INT32)),
)

RESPONSE = Schema(
    "StreamsGroupHeartbeatResponse", valid="0-1", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("member_id", STRING),
        Field("member_epoch", INT32),
        Field("heartbeat_interval_ms", INT32),
        Field("acceptable_recovery_lag_legacy", INT32, versions="0"),
        Field("task_offset_interval_ms", INT32),
        # Ignorable in Kafka: a v0 answer drops it; a v0 reader sees the default.
        Field("acceptable_recovery_lag", INT64, versions="1+", default=-1),
        Field("status", Array(Struct(
            Field("status_code", INT8),
            Field("status_detail", STRING),
        )), nullable="0+", default=None),
        Field("active_tasks", Array(_TASK_IDS), nullable="0+", default=None),
        Field("standby_tasks", Array(_TASK_IDS), nullable="0+", default=None),
        Field("warmup_tasks", Array(_TASK_IDS), nullable="0+", default=None),
        Field("topology_description_required", BOOL, versions="1+", default=False),
        Field("endpoint_information_epoch", INT32),
        Field("partitions_by_user_endpoint", Array(Struct(
            Field("user_endpoint", _ENDPOINT),
            Field("active_partitions", Array(_TOPIC_PARTITIONS)),
            Field("standby_partitions", Array(_TOPIC_PARTITIONS)),
        )), nullable="0+", default=None),
    ])
