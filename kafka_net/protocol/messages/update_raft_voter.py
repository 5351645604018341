"""UpdateRaftVoter (API key 82): version 0, flexible.

Wire schema of ``UpdateRaftVoterRequest.json`` / ``UpdateRaftVoterResponse.json``.

A KRaft voter telling the leader its current listeners and supported
kraft.version range (KIP-853).  Decode-only here.
"""

from kafka_net.protocol.schema import (
    INT16, INT32, STRING, UINT16, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "UpdateRaftVoterRequest", valid="0", flexible="0+",
    fields=[
        Field("cluster_id", STRING, nullable="0+"),
        Field("current_leader_epoch", INT32),
        Field("voter_id", INT32),
        Field("voter_directory_id", UUID),
        Field("listeners", Array(Struct(
            Field("name", STRING),
            Field("host", STRING),
            Field("port", UINT16),
        ))),
        Field("kraft_version_feature", Struct(
            Field("min_supported_version", INT16),
            Field("max_supported_version", INT16),
        )),
    ])

RESPONSE = Schema(
    "UpdateRaftVoterResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("current_leader", Struct(
            Field("leader_id", INT32, default=-1),
            Field("leader_epoch", INT32, default=-1),
            Field("host", STRING),
            Field("port", INT32),
        ), tag=0),
    ])

