"""EndQuorumEpoch (API key 54): versions 0-1, flexible from v1.

Wire schema of ``EndQuorumEpochRequest.json`` / ``EndQuorumEpochResponse.json``.

KRaft: a resigning leader tells the voters to start an election
(KIP-595).  Controller to controller; decode-only here.

Version notes:

* v1: flexible; preferred_candidates with directory ids replace
  preferred_successors, plus leader_endpoints (KIP-853); the response gains
  tagged node_endpoints.
"""

from kafka_net.protocol.schema import (
    INT16, INT32, STRING, UINT16, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "EndQuorumEpochRequest", valid="0-1", flexible="1+",
    fields=[
        Field("cluster_id", STRING, nullable="0+", default=None),
        Field("topics", Array(Struct(
            Field("topic_name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32),
                Field("preferred_successors", Array(INT32), versions="0"),
                Field("preferred_candidates", Array(Struct(
                    Field("candidate_id", INT32, versions="1+"),
                    Field("candidate_directory_id", UUID, versions="1+"),
                )), versions="1+"),
            ))),
        ))),
        Field("leader_endpoints", Array(Struct(
            Field("name", STRING, versions="1+"),
            Field("host", STRING, versions="1+"),
            Field("port", UINT16, versions="1+"),
        )), versions="1+"),
    ])

RESPONSE = Schema(
    "EndQuorumEpochResponse", valid="0-1", flexible="1+",
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

