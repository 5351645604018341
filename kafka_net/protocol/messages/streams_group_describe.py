"""StreamsGroupDescribe (API key 89): versions 0-1, flexible (KIP-1071, Kafka 4.2).

Wire schema of ``StreamsGroupDescribeRequest.json`` /
``StreamsGroupDescribeResponse.json`` (field facts from franz-go's
``89_streams_group_describe`` at adb3a18, Kafka 4.2's version 0): the state
of streams groups, the ConsumerGroupDescribe of the streams rebalance
protocol.  Each group carries its epochs, its initialized topology
(``topology`` null on a describe error; ``subtopologies`` null while the
topology is not configured: source topics missing or wrongly partitioned)
and its members, each with its process, endpoint, client tags, changelog
offsets, and current and target assignments of active, standby and warm-up
tasks.  ``is_classic`` is true for a member still on the classic protocol.

Version 1 (KIP-1331, Kafka 4.4): the request's ``include_topology_description``
asks for the description a member sent with StreamsGroupTopologyDescriptionUpdate
(key 93); each group then carries ``topology_description`` and
``topology_description_status`` (0 NOT_REQUESTED, 1 NOT_STORED, 2 ERROR,
3 AVAILABLE; the description is present exactly when AVAILABLE).  The
description's structs are key 93's
(:mod:`kafka_net.protocol.streams_topology_description`).  Each group also
names the task assignor its next assignment uses, ``assignor_name`` (KIP-1357,
broker-side streams assignors).

Served by :mod:`kafka_net.server.handlers.streams_group_describe`.
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, INT64, STRING, UINT16, Array, Field, Schema, Struct)
from kafka_net.protocol.streams_topology_description import TOPOLOGY_DESCRIPTION

REQUEST = Schema(
    "StreamsGroupDescribeRequest", valid="0-1", flexible="0+",
    fields=[
        Field("group_ids", Array(STRING)),
        Field("include_authorized_operations", BOOL),
        Field("include_topology_description", BOOL, versions="1+", default=False),
    ])

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

_TASK_IDS = Struct(
    Field("subtopology_id", STRING),
    Field("partitions", Array(INT32)),
)

_TASK_OFFSET = Struct(
    Field("subtopology_id", STRING),
    Field("partition", INT32),
    Field("offset", INT64),
)

_ASSIGNMENT = Struct(
    Field("active_tasks", Array(_TASK_IDS)),
    Field("standby_tasks", Array(_TASK_IDS)),
    Field("warmup_tasks", Array(_TASK_IDS)),
)

_TOPOLOGY = Struct(
    Field("epoch", INT32),
    Field("subtopologies", Array(Struct(
        Field("subtopology_id", STRING),
        Field("source_topics", Array(STRING)),
        Field("repartition_sink_topics", Array(STRING)),
        Field("state_changelog_topics", Array(_TOPIC_INFO)),
        Field("repartition_source_topics", Array(_TOPIC_INFO)),
    )), nullable="0+", default=None),
)

_MEMBER = Struct(
    Field("member_id", STRING),
    Field("member_epoch", INT32),
    Field("instance_id", STRING, nullable="0+", default=None),
    Field("rack_id", STRING, nullable="0+", default=None),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("topology_epoch", INT32),
    Field("process_id", STRING),
    Field("user_endpoint", Struct(
        Field("host", STRING),
        Field("port", UINT16),
    ), nullable="0+", default=None),
    Field("client_tags", Array(_KEY_VALUE)),
    Field("task_offsets", Array(_TASK_OFFSET)),
    Field("task_end_offsets", Array(_TASK_OFFSET)),
    Field("assignment", _ASSIGNMENT),
    Field("target_assignment", _ASSIGNMENT),
    Field("is_classic", BOOL),
)

RESPONSE = Schema(
    "StreamsGroupDescribeResponse", valid="0-1", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("groups", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
            Field("group_id", STRING),
            Field("group_state", STRING),
            Field("group_epoch", INT32),
            Field("assignment_epoch", INT32),
            Field("topology", _TOPOLOGY, nullable="0+", default=None),
            Field("members", Array(_MEMBER)),
            Field("authorized_operations", INT32, default=-2**31),
            Field("topology_description", TOPOLOGY_DESCRIPTION, versions="1+",
                  nullable="1+", default=None),
            Field("topology_description_status", INT8, versions="1+", default=0),
            Field("assignor_name", STRING, versions="1+", nullable="1+", default=None),
        ))),
    ])
