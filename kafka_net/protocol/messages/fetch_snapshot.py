"""FetchSnapshot (API key 59): versions 0-1, flexible in every version.

Wire schema of ``FetchSnapshotRequest.json`` / ``FetchSnapshotResponse.json``.

KRaft: a follower fetching a metadata-log snapshot from the leader
(KIP-630).  Decode-only here.

Version notes:

* v1: tagged replica_directory_id and node_endpoints (KIP-853).
"""

from kafka_net.protocol.schema import (
    INT16, INT32, INT64, RECORDS, STRING, UINT16, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "FetchSnapshotRequest", valid="0-1", flexible="0+",
    fields=[
        Field("cluster_id", STRING, nullable="0+", tag=0, default=None),
        Field("replica_id", INT32, default=-1),
        Field("max_bytes", INT32, default=2147483647),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition", INT32),
                Field("current_leader_epoch", INT32),
                Field("snapshot_id", Struct(
                    Field("end_offset", INT64),
                    Field("epoch", INT32),
                )),
                Field("position", INT64),
                Field("replica_directory_id", UUID, versions="1+", tag=0),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "FetchSnapshotResponse", valid="0-1", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("index", INT32),
                Field("error_code", INT16),
                Field("snapshot_id", Struct(
                    Field("end_offset", INT64),
                    Field("epoch", INT32),
                )),
                Field("current_leader", Struct(
                    Field("leader_id", INT32),
                    Field("leader_epoch", INT32),
                ), tag=0),
                Field("size", INT64),
                Field("position", INT64),
                Field("unaligned_records", RECORDS),
            ))),
        ))),
        Field("node_endpoints", Array(Struct(
            Field("node_id", INT32, versions="1+"),
            Field("host", STRING, versions="1+"),
            Field("port", UINT16, versions="1+"),
        )), versions="1+", tag=0),
    ])

