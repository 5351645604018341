"""ExpireDelegationToken (API key 40): versions 0-2, flexible from v2.

Wire schema of ``ExpireDelegationTokenRequest.json`` /
``ExpireDelegationTokenResponse.json``.

Delegation tokens (KIP-48): a negative period expires the token at once.

Request history (from Kafka's JSON):

* Version 1 is the same as version 0.
* Version 2 adds flexible version support

Response history (from Kafka's JSON):

* Starting in version 1, on quota violation, brokers send out responses before
  throttling.
* Version 2 adds flexible version support
"""

from kafka_net.protocol.schema import BYTES, INT16, INT32, INT64, Field, Schema

REQUEST = Schema(
    "ExpireDelegationTokenRequest", valid="0-2", flexible="2+",
    fields=[
        Field("hmac", BYTES),
        Field("expiry_time_period_ms", INT64),
    ])

RESPONSE = Schema(
    "ExpireDelegationTokenResponse", valid="0-2", flexible="2+",
    fields=[
        Field("error_code", INT16),
        Field("expiry_timestamp_ms", INT64),
        Field("throttle_time_ms", INT32),
    ])
