"""DescribeProducers (API key 61): version 0, flexible.

Wire schema of ``DescribeProducersRequest.json`` / ``DescribeProducersResponse.json``
(KIP-664): the active idempotent/transactional producers of partitions.
"""

from kafka_net.protocol.schema import INT16, INT32, INT64, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "DescribeProducersRequest", valid="0", flexible="0+",
    fields=[
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partition_indexes", Array(INT32)),
        ))),
    ])

RESPONSE = Schema(
    "DescribeProducersResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
                Field("active_producers", Array(Struct(
                    Field("producer_id", INT64),
                    Field("producer_epoch", INT32),
                    Field("last_sequence", INT32, default=-1),
                    Field("last_timestamp", INT64, default=-1),
                    Field("coordinator_epoch", INT32),
                    Field("current_txn_start_offset", INT64, default=-1),
                ))),
            ))),
        ))),
    ])
