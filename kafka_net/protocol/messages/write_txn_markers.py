"""WriteTxnMarkers (API key 27): versions 0-2, flexible from v1.

Wire schema of ``WriteTxnMarkersRequest.json`` / ``WriteTxnMarkersResponse.json``.

The transaction coordinator sends it to partition leaders to write the COMMIT
or ABORT control batches of a transaction (KIP-98); broker to broker, clients
never send it.

Version notes:

* v0: removed in Kafka 4.0 (v1 is the new baseline); kafka-net still reads it.
* v1: flexible versions.
* v2: markers gain transaction_version, the transaction version the marker
  was written under: 0/1 legacy, 2 = transactions v2 (KIP-1228).  No
  response change.
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, INT64, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "WriteTxnMarkersRequest", valid="0-2", flexible="1+",
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
            Field("transaction_version", INT8, versions="2+"),
        ))),
    ])

RESPONSE = Schema(
    "WriteTxnMarkersResponse", valid="0-2", flexible="1+",
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
