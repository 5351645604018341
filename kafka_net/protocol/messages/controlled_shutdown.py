"""ControlledShutdown (API key 7): versions 0-3, flexible from v3.

Wire schema of ``ControlledShutdownRequest.json`` / ``ControlledShutdownResponse.json``.

A ZooKeeper-mode broker asking the controller to move leadership away before
it stops.  Removed with ZooKeeper mode in Kafka 4.0 (KRaft brokers use
BrokerHeartbeat's want_shutdown); decode-only here.

Version notes:

* v1: no wire change.  v2: request gains broker_epoch.  v3: flexible.
"""

from kafka_net.protocol.schema import INT16, INT32, INT64, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "ControlledShutdownRequest", valid="0-3", flexible="3+",
    fields=[
        Field("broker_id", INT32),
        Field("broker_epoch", INT64, versions="2+", default=-1),
    ])

RESPONSE = Schema(
    "ControlledShutdownResponse", valid="0-3", flexible="3+",
    fields=[
        Field("error_code", INT16),
        Field("remaining_partitions", Array(Struct(
            Field("topic_name", STRING),
            Field("partition_index", INT32),
        ))),
    ])

