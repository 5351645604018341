"""AlterUserScramCredentials (API key 51): version 0, flexible (KIP-554).

Wire schema of ``AlterUserScramCredentialsRequest.json`` /
``AlterUserScramCredentialsResponse.json``.  An upsertion carries the salt
and the *salted* password (the client ran PBKDF2), never the password.
"""

from kafka_net.protocol.schema import BYTES, INT8, INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "AlterUserScramCredentialsRequest", valid="0", flexible="0+",
    fields=[
        Field("deletions", Array(Struct(
            Field("name", STRING),
            Field("mechanism", INT8),
        ))),
        Field("upsertions", Array(Struct(
            Field("name", STRING),
            Field("mechanism", INT8),
            Field("iterations", INT32),
            Field("salt", BYTES),
            Field("salted_password", BYTES),
        ))),
    ])

RESPONSE = Schema(
    "AlterUserScramCredentialsResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("user", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
        ))),
    ])
