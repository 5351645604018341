"""ShareGroupDescribe (API key 77): versions 0-1, flexible (KIP-932 share groups).

Wire schema of ``ShareGroupDescribeRequest.json`` /
``ShareGroupDescribeResponse.json`` (franz-go's definitions at adb3a18, Kafka
4.2): each share group's state, epochs, assignor and members with their
current assignment.  v0 (Kafka 4.0's early access, the same layout) was
removed from the broker in 4.1: the codec reads it, the broker serves v1.
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "ShareGroupDescribeRequest", valid="0-1", flexible="0+",
    fields=[
        Field("group_ids", Array(STRING)),
        Field("include_authorized_operations", BOOL),
    ])

RESPONSE = Schema(
    "ShareGroupDescribeResponse", valid="0-1", flexible="0+",
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
                Field("rack_id", STRING, nullable="0+", default=None),
                Field("member_epoch", INT32),
                Field("client_id", STRING),
                Field("client_host", STRING),
                Field("subscribed_topic_names", Array(STRING)),
                Field("assignment", Struct(
                    Field("topic_partitions", Array(Struct(
                        Field("topic_id", UUID),
                        Field("topic_name", STRING),
                        Field("partitions", Array(INT32)),
                    ))),
                )),
            ))),
            Field("authorized_operations", INT32, default=-2147483648),
        ))),
    ])
