"""WriteTxnMarkers (API key 27): versions 0-1, flexible from v1.

Wire schema of ``WriteTxnMarkersRequest.json`` / ``WriteTxnMarkersResponse.json``.

The transaction coordinator sends it to partition leaders to write the COMMIT
or ABORT control batches of a transaction (KIP-98); broker to broker, clients
never send it.

Request history (from Kafka's JSON):

* Version 1 enables flexible versions.

Response history (from Kafka's JSON):

* Version 1 enables flexible versions.
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, INT64, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "WriteTxnMarkersRequest", valid="0-1", flexible="1+",
    fields=[
        Field("markers", Array(Struct(
            Field("producer_id", INT64),
            Field("producer_epoch", INT16),
            Field("transaction_result", BOOL),
            Field("topics", Array(Struct(
                Field("name", STRING),
                Field("partition_indexes", Array(INT32)),
            ))),
            Field("coordinator_epoch", INT32),
        ))),
    ])

RESPONSE = Schema(
    "WriteTxnMarkersResponse", valid="0-1", flexible="1+",
    fields=[
        Field("markers", Array(Struct(
            Field("producer_id", INT64),
            Field("topics", Array(Struct(
                Field("name", STRING),
                Field("partitions", Array(Struct(
                    Field("partition_index", INT32),
                    Field("error_code", INT16),
                ))),
            ))),
        ))),
    ])
