"""AddRaftVoter (API key 80): versions 0-1, flexible in every version.

Wire schema of ``AddRaftVoterRequest.json`` / ``AddRaftVoterResponse.json``.

Adds a voter to the KRaft metadata quorum (KIP-853); brokers forward it to the
controller.

Version notes:

* v1: ack_when_committed (default true): false lets the leader answer once it
  has written the new voter set locally, before it is committed (KIP-1186,
  Kafka 4.2).
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, STRING, UINT16, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "AddRaftVoterRequest", valid="0-1", flexible="0+",
    fields=[
        Field("cluster_id", STRING, nullable="0+"),
        Field("timeout_ms", INT32),
        Field("voter_id", INT32),
        Field("voter_directory_id", UUID),
        Field("listeners", Array(Struct(
            Field("name", STRING),
            Field("host", STRING),
            Field("port", UINT16),
        ))),
        Field("ack_when_committed", BOOL, versions="1+", default=True),
    ])

RESPONSE = Schema(
    "AddRaftVoterResponse", valid="0-1", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
    ])
