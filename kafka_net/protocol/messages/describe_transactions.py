"""DescribeTransactions (API key 65): version 0, flexible (KIP-664).

Wire schema of ``DescribeTransactionsRequest.json`` /
``DescribeTransactionsResponse.json``.  v0 is still the only version in
Kafka 4.2.
"""

from kafka_net.protocol.schema import INT16, INT32, INT64, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "DescribeTransactionsRequest", valid="0", flexible="0+",
    fields=[
        Field("transactional_ids", Array(STRING)),
    ])

RESPONSE = Schema(
    "DescribeTransactionsResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("transaction_states", Array(Struct(
            Field("error_code", INT16),
            Field("transactional_id", STRING),
            Field("transaction_state", STRING),
            Field("transaction_timeout_ms", INT32),
            Field("transaction_start_time_ms", INT64),
            Field("producer_id", INT64),
            Field("producer_epoch", INT16),
            Field("topics", Array(Struct(
                Field("topic", STRING),
                Field("partitions", Array(INT32)),
            ))),
        ))),
    ])
