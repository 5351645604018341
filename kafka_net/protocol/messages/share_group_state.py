"""Shapes shared by the share coordinator's state RPCs (API keys 83-87, KIP-932).

Wire schemas (franz-go's definitions at adb3a18, Kafka 4.2) of the requests a
share-partition leader sends to the share coordinator, which keeps each
share-partition's state in ``__share_group_state``:

* InitializeShareGroupState (83) v0: a partition's state epoch and start offset;
* ReadShareGroupState (84) v0: the state (start offset, state batches);
* WriteShareGroupState (85) v0-1: a new start offset and changed state
  batches; v1 (KIP-1226) adds ``delivery_complete_count``;
* DeleteShareGroupState (86) v0: the state of partitions is gone;
* ReadShareGroupStateSummary (87) v0-1: start offset and epochs only; v1 adds
  ``delivery_complete_count``.

kafka-net is one node, leader and share coordinator at once: these travel
between its own parts as calls (kafka_net.server.share.persister), never on
the wire, and the broker does not serve them (Kafka's listeners for them are
"broker" only, inter-broker).  The codec knows them so that captures of a
Kafka cluster decode.  None of their responses carries throttle_time_ms.
"""

from kafka_net.protocol.schema import (
    INT8, INT16, INT32, INT64, STRING, UUID, Array, Field, Schema, Struct)

_STATE_BATCHES = Array(Struct(
    Field("first_offset", INT64),
    Field("last_offset", INT64),
    Field("delivery_state", INT8),
    Field("delivery_count", INT16),
))


def _request(name: str, valid: str, partition_fields: list) -> Schema:
    return Schema(name, valid=valid, flexible="0+", fields=[
        Field("group_id", STRING),
        Field("topics", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition", INT32), *partition_fields))),
        ))),
    ])


def _response(name: str, valid: str, partition_fields: list) -> Schema:
    return Schema(name, valid=valid, flexible="0+", fields=[
        Field("results", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
                *partition_fields))),
        ))),
    ])
