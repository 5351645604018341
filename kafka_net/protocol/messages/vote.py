"""Vote (API key 52): versions 0-2, flexible in every version.

Wire schema of ``VoteRequest.json`` / ``VoteResponse.json``.

KRaft: a candidate asks the quorum's voters for their vote (KIP-595).
Controller to controller; decode-only here.

Version notes:

* v1: voter_id and directory ids (KIP-853); the response gains tagged
  node_endpoints.
* v2: pre_vote (KIP-996): a pre-vote asks without bumping the epoch.
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, INT64, STRING, UINT16, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "VoteRequest", valid="0-2", flexible="0+",
    fields=[
        Field("cluster_id", STRING, nullable="0+", default=None),
        Field("voter_id", INT32, versions="1+", default=-1),
        Field("topics", Array(Struct(
            Field("topic_name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("candidate_epoch", INT32),
                Field("candidate_id", INT32),
                Field("candidate_directory_id", UUID, versions="1+"),
                Field("voter_directory_id", UUID, versions="1+"),
                Field("last_offset_epoch", INT32),
                Field("last_offset", INT64),
                Field("pre_vote", BOOL, versions="2+"),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "VoteResponse", valid="0-2", flexible="0+",
    fields=[
        Field("error_code", INT16),
        Field("topics", Array(Struct(
            Field("topic_name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32),
                Field("vote_granted", BOOL),
            ))),
        ))),
        Field("node_endpoints", Array(Struct(
            Field("node_id", INT32, versions="1+"),
            Field("host", STRING, versions="1+"),
            Field("port", UINT16, versions="1+"),
        )), versions="1+", tag=0),
    ])

