"""DeleteRecords (API key 21): versions 0-2, flexible from v2.

Wire schema of ``DeleteRecordsRequest.json`` / ``DeleteRecordsResponse.json``
(KIP-107).

Version notes:

* v1: no wire change (responses sent before throttling).
* v2: flexible versions.

An offset of -1 means the high watermark.
"""

from kafka_net.protocol.schema import INT16, INT32, INT64, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "DeleteRecordsRequest", valid="0-2", flexible="2+",
    fields=[
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("offset", INT64),
            ))),
        ))),
        Field("timeout_ms", INT32),
    ])

RESPONSE = Schema(
    "DeleteRecordsResponse", valid="0-2", flexible="2+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("low_watermark", INT64),
                Field("error_code", INT16),
            ))),
        ))),
    ])
