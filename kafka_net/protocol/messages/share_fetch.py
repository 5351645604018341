"""ShareFetch (API key 78): versions 0-2, flexible (KIP-932 share groups).

Wire schema of ``ShareFetchRequest.json`` / ``ShareFetchResponse.json``
(franz-go's definitions at adb3a18, Kafka 4.2).  A share consumer fetches
records of a share group: the broker *acquires* records for the member and
answers them as ``records`` (whole batches) plus ``acquired_records`` (the
offset ranges this member holds, with their delivery count); the request
carries acknowledgements of earlier deliveries piggybacked
(``acknowledgement_batches``: types 0 gap, 1 accept, 2 release, 3 reject,
4 renew).  ``share_session_epoch`` 0 opens a share session, -1 closes it,
otherwise it is the session's next epoch.

Version notes:

* v0 was Kafka 4.0's early access (``partition_max_bytes``), removed from the
  broker in 4.1: the codec reads it, the broker serves v1-v2.
* v1: ``max_records``, ``batch_size``; the response's
  ``acquisition_lock_timeout_ms``.
* v2 (Kafka 4.2): ``share_acquire_mode`` (KIP-1206: 0 batch-optimized,
  1 record-limit) and ``is_renew_ack`` (KIP-1222: renew acknowledgements).
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, Array, Field, Schema, Struct)

_ACK_BATCH = Struct(
    Field("first_offset", INT64),
    Field("last_offset", INT64),
    Field("acknowledge_types", Array(INT8)),
)

_LEADER = Struct(Field("leader_id", INT32), Field("leader_epoch", INT32))

_NODE_ENDPOINTS = Array(Struct(
    Field("node_id", INT32),
    Field("host", STRING),
    Field("port", INT32),
    Field("rack", STRING, nullable="0+", default=None),
))

REQUEST = Schema(
    "ShareFetchRequest", valid="0-2", flexible="0+",
    fields=[
        Field("group_id", STRING, nullable="0+", default=None),
        Field("member_id", STRING, nullable="0+", default=None),
        Field("share_session_epoch", INT32),
        Field("max_wait_ms", INT32),
        Field("min_bytes", INT32),
        Field("max_bytes", INT32, default=0x7FFFFFFF),
        Field("max_records", INT32, versions="1+"),
        Field("batch_size", INT32, versions="1+"),
        Field("share_acquire_mode", INT8, versions="2+"),
        Field("is_renew_ack", BOOL, versions="2+"),
        Field("topics", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("partition_max_bytes", INT32, versions="0"),
                Field("acknowledgement_batches", Array(_ACK_BATCH)),
            ))),
        ))),
        Field("forgotten_topics_data", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(INT32)),
        ))),
    ])

RESPONSE = Schema(
    "ShareFetchResponse", valid="0-2", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("acquisition_lock_timeout_ms", INT32, versions="1+"),
        Field("responses", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
                Field("acknowledge_error_code", INT16),
                Field("acknowledge_error_message", STRING, nullable="0+", default=None),
                Field("current_leader", _LEADER),
                Field("records", RECORDS, nullable="0+", default=None),
                Field("acquired_records", Array(Struct(
                    Field("first_offset", INT64),
                    Field("last_offset", INT64),
                    Field("delivery_count", INT16),
                ))),
            ))),
        ))),
        Field("node_endpoints", _NODE_ENDPOINTS),
    ])
