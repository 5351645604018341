"""Produce (API key 0): versions 0-13, flexible from v9.

Wire schema of ``ProduceRequest.json`` / ``ProduceResponse.json``.

Version notes:

* v0-v2: legacy message sets (magic 0/1) in ``records``; v1 response gains
  throttle_time_ms, v2 response gains log_append_time_ms.
* v3: request gains transactional_id; record batches (magic 2,
  :mod:`kafka_net.protocol.records`) from here on.
* v4: no wire change (KAFKA_STORAGE_ERROR may be returned).
* v5: response gains log_start_offset.  v6: no wire change.
* v7: no wire change; ZStandard-compressed batches allowed (KIP-110).
* v8: response gains record_errors and error_message (KIP-467).
* v9: flexible versions.
* v10: response may carry tagged current_leader (per partition) and
  node_endpoints (top level) for NOT_LEADER_OR_FOLLOWER errors (KIP-951).
* v11: no wire change (TRANSACTION_ABORTABLE, KIP-890).
* v12: no wire change (transactions v2, KIP-890 part 2): inside a transaction
  a partition not yet added joins it implicitly, no AddPartitionsToTxn needed
  (only once the finalized ``transaction.version`` is 2 or more).
* v13: topic ids replace topic names, in request and response (KIP-516); an
  unknown id is answered UNKNOWN_TOPIC_ID.

Kafka deprecates v0-v6; Kafka 4.0 removes v0-v2 (but keeps advertising them,
KAFKA-18659).  ``acks=0`` requests get no response at all.
"""

from kafka_net.protocol.schema import (
    INT16, INT32, INT64, RECORDS, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "ProduceRequest", valid="0-13", flexible="9+",
    fields=[
        Field("transactional_id", STRING, versions="3+", nullable="3+", default=None),
        Field("acks", INT16),  # 0 none (no response is sent), 1 leader, -1 all ISR
        Field("timeout_ms", INT32),
        Field("topic_data", Array(Struct(
            Field("name", STRING, versions="0-12"),
            Field("topic_id", UUID, versions="13+"),
            Field("partition_data", Array(Struct(
                Field("index", INT32),
                # Record batches (magic 2 from v3), see kafka_net.protocol.records.
                Field("records", RECORDS, nullable="0+"),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "ProduceResponse", valid="0-13", flexible="9+",
    fields=[
        Field("responses", Array(Struct(
            Field("name", STRING, versions="0-12"),
            Field("topic_id", UUID, versions="13+"),
            Field("partition_responses", Array(Struct(
                Field("index", INT32),
                Field("error_code", INT16),
                Field("base_offset", INT64),
                Field("log_append_time_ms", INT64, versions="2+", default=-1),
                Field("log_start_offset", INT64, versions="5+", default=-1),
                Field("record_errors", Array(Struct(
                    Field("batch_index", INT32, versions="8+"),
                    Field("batch_index_error_message", STRING, versions="8+", nullable="8+",
                          default=None),
                )), versions="8+"),
                Field("error_message", STRING, versions="8+", nullable="8+", default=None),
                # v10+ tagged: where to go after NOT_LEADER_OR_FOLLOWER (KIP-951).
                Field("current_leader", Struct(
                    Field("leader_id", INT32, versions="10+", default=-1),
                    Field("leader_epoch", INT32, versions="10+", default=-1),
                ), versions="10+", tag=0),
            ))),
        ))),
        Field("throttle_time_ms", INT32, versions="1+"),
        Field("node_endpoints", Array(Struct(
            Field("node_id", INT32, versions="10+"),
            Field("host", STRING, versions="10+"),
            Field("port", INT32, versions="10+"),
            Field("rack", STRING, versions="10+", nullable="10+", default=None),
        )), versions="10+", tag=0),
    ])
