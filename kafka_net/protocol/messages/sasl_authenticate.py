"""SaslAuthenticate (API key 36): versions 0-2, flexible from v2 (KIP-152).

Wire schema of ``SaslAuthenticateRequest.json`` / ``SaslAuthenticateResponse.json``:
one SASL token each way.

Version notes:

* v1: the response carries ``session_lifetime_ms`` (KIP-368 re-authentication).
* v2: flexible versions.
"""

from kafka_net.protocol.schema import BYTES, INT16, INT64, STRING, Field, Schema

REQUEST = Schema(
    "SaslAuthenticateRequest", valid="0-2", flexible="2+",
    fields=[Field("auth_bytes", BYTES)])

RESPONSE = Schema(
    "SaslAuthenticateResponse", valid="0-2", flexible="2+",
    fields=[
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("auth_bytes", BYTES),
        Field("session_lifetime_ms", INT64, versions="1+"),
    ])
