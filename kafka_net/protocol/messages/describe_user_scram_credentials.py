"""DescribeUserScramCredentials (API key 50): version 0, flexible (KIP-554).

Wire schema of ``DescribeUserScramCredentialsRequest.json`` /
``DescribeUserScramCredentialsResponse.json``.  ``users`` null or empty
means every user; the answer gives each credential's mechanism (1 =
SCRAM-SHA-256, 2 = SCRAM-SHA-512) and iterations, never the keys.
"""

from kafka_net.protocol.schema import INT8, INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "DescribeUserScramCredentialsRequest", valid="0", flexible="0+",
    fields=[
        Field("users", Array(Struct(Field("name", STRING))), nullable="0+"),
    ])

RESPONSE = Schema(
    "DescribeUserScramCredentialsResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("results", Array(Struct(
            Field("user", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
            Field("credential_infos", Array(Struct(
                Field("mechanism", INT8),
                Field("iterations", INT32),
            ))),
        ))),
    ])
