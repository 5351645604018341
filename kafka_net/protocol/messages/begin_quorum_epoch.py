"""BeginQuorumEpoch (API key 53): versions 0-1, flexible from v1.

Wire schema of ``BeginQuorumEpochRequest.json`` / ``BeginQuorumEpochResponse.json``.

KRaft: a newly elected leader announces its epoch to the voters (KIP-595).
Controller to controller; decode-only here.

Version notes:

* v1: flexible; voter_id, voter_directory_id and leader_endpoints (KIP-853);
  the response gains tagged node_endpoints.
"""

from kafka_net.protocol.schema import (
    INT16, INT32, STRING, UINT16, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "BeginQuorumEpochRequest", valid="0-1", flexible="1+",
    fields=[
        Field("cluster_id", STRING, nullable="0+", default=None),
        Field("voter_id", INT32, versions="1+", default=-1),
        Field("topics", Array(Struct(
            Field("topic_name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("voter_directory_id", UUID, versions="1+"),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32),
            ))),
        ))),
        Field("leader_endpoints", Array(Struct(
            Field("name", STRING, versions="1+"),
            Field("host", STRING, versions="1+"),
            Field("port", UINT16, versions="1+"),
        )), versions="1+"),
    ])

RESPONSE = Schema(
    "BeginQuorumEpochResponse", valid="0-1", flexible="1+",
    fields=[
        Field("error_code", INT16),
        Field("topics", Array(Struct(
            Field("topic_name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32),
            ))),
        ))),
        Field("node_endpoints", Array(Struct(
            Field("node_id", INT32, versions="1+"),
            Field("host", STRING, versions="1+"),
            Field("port", UINT16, versions="1+"),
        )), versions="1+", tag=0),
    ])

