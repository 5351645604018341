"""CreateDelegationToken (API key 38): versions 0-3, flexible from v2.

Wire schema of ``CreateDelegationTokenRequest.json`` /
``CreateDelegationTokenResponse.json``.

Delegation tokens (KIP-48); v3 adds an owner other than the requester
(KIP-373).

Request history (from Kafka's JSON):

* Version 1 is the same as version 0.
* Version 2 is the first flexible version.
* Version 3 adds owner principal

Response history (from Kafka's JSON):

* Starting in version 1, on quota violation, brokers send out responses before
  throttling.
* Version 2 is the first flexible version.
* Version 3 adds token requester details
"""

from kafka_net.protocol.schema import (
    BYTES, INT16, INT32, INT64, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "CreateDelegationTokenRequest", valid="0-3", flexible="2+",
    fields=[
        Field("owner_principal_type", STRING, versions="3+", nullable="3+"),
        Field("owner_principal_name", STRING, versions="3+", nullable="3+"),
        Field("renewers", Array(Struct(
            Field("principal_type", STRING),
            Field("principal_name", STRING),
        ))),
        Field("max_lifetime_ms", INT64),
    ])

RESPONSE = Schema(
    "CreateDelegationTokenResponse", valid="0-3", flexible="2+",
    fields=[
        Field("error_code", INT16),
        Field("principal_type", STRING),
        Field("principal_name", STRING),
        Field("token_requester_principal_type", STRING, versions="3+"),
        Field("token_requester_principal_name", STRING, versions="3+"),
        Field("issue_timestamp_ms", INT64),
        Field("expiry_timestamp_ms", INT64),
        Field("max_timestamp_ms", INT64),
        Field("token_id", STRING),
        Field("hmac", BYTES),
        Field("throttle_time_ms", INT32),
    ])
