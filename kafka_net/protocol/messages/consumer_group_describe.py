"""ConsumerGroupDescribe (API key 69): versions 0-1, flexible (KIP-848).

Wire schema of ``ConsumerGroupDescribeRequest.json`` /
``ConsumerGroupDescribeResponse.json``: the state of consumer-protocol
groups, each member with its current assignment (what it owns now) and its
target assignment (what the assignor wants it to own once reconciled).
A group that does not exist, or is a classic group, is answered with
GROUP_ID_NOT_FOUND.

Version notes:

* v1: each member's member_type (KIP-1099): 0 classic (a JoinGroup member
  of a consumer-protocol group), 1 consumer, -1 unknown (the default).
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "ConsumerGroupDescribeRequest", valid="0-1", flexible="0+",
    fields=[
        Field("group_ids", Array(STRING)),
        Field("include_authorized_operations", BOOL),
    ])

_ASSIGNMENT = Struct(
    Field("topic_partitions", Array(Struct(
        Field("topic_id", UUID),
        Field("topic_name", STRING),
        Field("partitions", Array(INT32)),
    ))),
)

RESPONSE = Schema(
    "ConsumerGroupDescribeResponse", valid="0-1", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("groups", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
            Field("group_id", STRING),
            Field("group_state", STRING),
            Field("group_epoch", INT32),
            Field("assignment_epoch", INT32),
            Field("assignor_name", STRING),
            Field("members", Array(Struct(
                Field("member_id", STRING),
                Field("instance_id", STRING, nullable="0+", default=None),
                Field("rack_id", STRING, nullable="0+", default=None),
                Field("member_epoch", INT32),
                Field("client_id", STRING),
                Field("client_host", STRING),
                Field("subscribed_topic_names", Array(STRING)),
                Field("subscribed_topic_regex", STRING, nullable="0+", default=None),
                Field("assignment", _ASSIGNMENT),
                Field("target_assignment", _ASSIGNMENT),
                Field("member_type", INT8, versions="1+", default=-1),
            ))),
            Field("authorized_operations", INT32, default=-2147483648),
        ))),
    ])
