"""DescribeQuorum (API key 55): versions 0-2, flexible in every version.

Wire schema of ``DescribeQuorumRequest.json`` / ``DescribeQuorumResponse.json``.

The KRaft metadata quorum's state: leader, voters, observers (KIP-595); the
admin client's describeMetadataQuorum.

Request history (from Kafka's JSON):

* Version 1 adds additional fields in the response. The request is unchanged (KIP-836).
* Version 2 adds additional fields in the response. The request is unchanged (KIP-853).

Response history (from Kafka's JSON):

* Version 1 adds LastFetchTimeStamp and LastCaughtUpTimestamp in ReplicaState (KIP-836).
* Version 2 adds ErrorMessage, Nodes, ErrorMessage in ParitionData, ReplicaDirectoryId
  in ReplicaState (KIP-853).
"""

from kafka_net.protocol.schema import (
    INT16, INT32, INT64, STRING, UINT16, UUID, Array, Field, Schema, Struct)

_REPLICA_STATE = Struct(
    Field("replica_id", INT32),
    Field("replica_directory_id", UUID, versions="2+"),
    Field("log_end_offset", INT64),
    Field("last_fetch_timestamp", INT64, versions="1+", default=-1),
    Field("last_caught_up_timestamp", INT64, versions="1+", default=-1),
)

REQUEST = Schema(
    "DescribeQuorumRequest", valid="0-2", flexible="0+",
    fields=[
        Field("topics", Array(Struct(
            Field("topic_name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "DescribeQuorumResponse", valid="0-2", flexible="0+",
    fields=[
        Field("error_code", INT16),
        Field("error_message", STRING, versions="2+", nullable="2+"),
        Field("topics", Array(Struct(
            Field("topic_name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, versions="2+", nullable="2+"),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32),
                Field("high_watermark", INT64),
                Field("current_voters", Array(_REPLICA_STATE)),
                Field("observers", Array(_REPLICA_STATE)),
            ))),
        ))),
        Field("nodes", Array(Struct(
            Field("node_id", INT32, versions="2+"),
            Field("listeners", Array(Struct(
                Field("name", STRING, versions="2+"),
                Field("host", STRING, versions="2+"),
                Field("port", UINT16, versions="2+"),
            )), versions="2+"),
        )), versions="2+"),
    ])
