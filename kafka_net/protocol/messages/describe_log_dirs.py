"""DescribeLogDirs (API key 35): versions 0-5, flexible from v2.

Wire schema of ``DescribeLogDirsRequest.json`` / ``DescribeLogDirsResponse.json``.

A broker's log directories and the size of each replica in them (KIP-113).

Request history (from Kafka's JSON):

* Version 1 is the same as version 0.
* Version 2 is the first flexible version.
* Version 3 is the same as version 2 (new field in response).
* Version 4 is the same as version 2 (new fields in response).
* Version 5 is the same as version 2 (new field in response; Kafka 4.3).

Response history (from Kafka's JSON):

* Starting in version 1, on quota violation, brokers send out responses before
  throttling.
* Version 2 is the first flexible version.
* Version 3 adds the top-level ErrorCode field
* Version 4 adds the TotalBytes and UsableBytes fields
* Version 5 adds IsCordoned (KIP-1066, Kafka 4.3: a cordoned log dir takes no
  new partitions)
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, INT64, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "DescribeLogDirsRequest", valid="0-5", flexible="2+",
    fields=[
        Field("topics", Array(Struct(
            Field("topic", STRING),
            Field("partitions", Array(INT32)),
        )), nullable="0+"),
    ])

RESPONSE = Schema(
    "DescribeLogDirsResponse", valid="0-5", flexible="2+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16, versions="3+"),
        Field("results", Array(Struct(
            Field("error_code", INT16),
            Field("log_dir", STRING),
            Field("topics", Array(Struct(
                Field("name", STRING),
                Field("partitions", Array(Struct(
                    Field("partition_index", INT32),
                    Field("partition_size", INT64),
                    Field("offset_lag", INT64),
                    Field("is_future_key", BOOL),
                ))),
            ))),
            Field("total_bytes", INT64, versions="4+", default=-1),
            Field("usable_bytes", INT64, versions="4+", default=-1),
            Field("is_cordoned", BOOL, versions="5+", default=False),
        ))),
    ])
