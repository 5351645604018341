"""RemoveRaftVoter (API key 81): version 0, flexible in every version.

Wire schema of ``RemoveRaftVoterRequest.json`` / ``RemoveRaftVoterResponse.json``.

Removes a voter from the KRaft metadata quorum (KIP-853); brokers forward it
to the controller.
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, UUID, Field, Schema

REQUEST = Schema(
    "RemoveRaftVoterRequest", valid="0", flexible="0+",
    fields=[
        Field("cluster_id", STRING, nullable="0+"),
        Field("voter_id", INT32),
        Field("voter_directory_id", UUID),
    ])

RESPONSE = Schema(
    "RemoveRaftVoterResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
    ])
