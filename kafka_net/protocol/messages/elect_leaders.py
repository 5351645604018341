"""ElectLeaders (API key 43): versions 0-2, flexible from v2.

Wire schema of ``ElectLeadersRequest.json`` / ``ElectLeadersResponse.json``.

Preferred (KIP-183) or unclean (KIP-460) leader election; ``topic_partitions``
null means every partition.

Request history (from Kafka's JSON):

* Version 1 implements multiple leader election types, as described by KIP-460.
* Version 2 is the first flexible version.

Response history (from Kafka's JSON):

* Version 1 adds a top-level error code.
* Version 2 is the first flexible version.
"""

from kafka_net.protocol.schema import INT8, INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "ElectLeadersRequest", valid="0-2", flexible="2+",
    fields=[
        Field("election_type", INT8, versions="1+"),
        Field("topic_partitions", Array(Struct(
            Field("topic", STRING),
            Field("partitions", Array(INT32)),
        )), nullable="0+"),
        Field("timeout_ms", INT32, default=60000),
    ])

RESPONSE = Schema(
    "ElectLeadersResponse", valid="0-2", flexible="2+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16, versions="1+"),
        Field("replica_election_results", Array(Struct(
            Field("topic", STRING),
            Field("partition_result", Array(Struct(
                Field("partition_id", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
            ))),
        ))),
    ])
