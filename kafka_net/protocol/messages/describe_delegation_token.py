"""DescribeDelegationToken (API key 41): versions 0-3, flexible from v2.

Wire schema of ``DescribeDelegationTokenRequest.json`` /
``DescribeDelegationTokenResponse.json``.

Delegation tokens (KIP-48): ``owners`` null means every token the
requester may describe.

Request history (from Kafka's JSON):

* Version 1 is the same as version 0.
* Version 2 adds flexible version support
* Version 3 adds token requester into the response

Response history (from Kafka's JSON):

* Starting in version 1, on quota violation, brokers send out responses before
  throttling.
* Version 2 adds flexible version support
* Version 3 adds token requester details
"""

from kafka_net.protocol.schema import (
    BYTES, INT16, INT32, INT64, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "DescribeDelegationTokenRequest", valid="0-3", flexible="2+",
    fields=[
        Field("owners", Array(Struct(
            Field("principal_type", STRING),
            Field("principal_name", STRING),
        )), nullable="0+"),
    ])

RESPONSE = Schema(
    "DescribeDelegationTokenResponse", valid="0-3", flexible="2+",
    fields=[
        Field("error_code", INT16),
        Field("tokens", Array(Struct(
            Field("principal_type", STRING),
            Field("principal_name", STRING),
            Field("token_requester_principal_type", STRING, versions="3+"),
            Field("token_requester_principal_name", STRING, versions="3+"),
            Field("issue_timestamp", INT64),
            Field("expiry_timestamp", INT64),
            Field("max_timestamp", INT64),
            Field("token_id", STRING),
            Field("hmac", BYTES),
            Field("renewers", Array(Struct(
                Field("principal_type", STRING),
                Field("principal_name", STRING),
            ))),
        ))),
        Field("throttle_time_ms", INT32),
    ])
